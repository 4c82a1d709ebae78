import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillSandbox
import TillWorldline
import TillWorldlineServer

extension WorldlineInteropTests {
    // MARK: b. The official SDK against the emulator

    @Test("the official SDK creates a session, Till's app half encrypts a card with its key, the SDK pays and reads the payment")
    func officialSDKAgainstEmulator() async throws {
        let python = try await PythonEnvironment.shared.value
        let emulator = try WorldlineEmulator(merchants: [EmulatorInterop.merchant()])
        try await EmulatorInterop.withSandbox(emulator) { sandbox in
            let account = EmulatorInterop.account(sandbox)
            let session = try await EmulatorInterop.session(account, python: python)
            let meta = EmulatorInterop.metaInfo
            let api = try WorldlineClientAPI(session: session, metaInfo: meta, transport: URLSessionTransport())
            let key = try await api.publicKey()
            #expect(key.keyId == emulator.publicKey.keyId)
            #expect(key.publicKey == emulator.publicKey.publicKey)

            // An approved card. Without an authorizationMode the emulator, like the SDK's own test resource
            // (tests/resources/communication/createPayment.json), answers an authorised PENDING_APPROVAL payment.
            let approved = try WorldlineEncryptor.encrypt(EmulatorInterop.card("4111111111111111", session: session), to: key)
            let paid = try await python.run("sdk_client.py", ["pay"], input: account.with(
                encryptedCustomerInput: approved, amount: 2345, currencyCode: "EUR", merchantReference: "order-interop-1",
                clientMetaInfo: try EmulatorInterop.decodedMetaInfo(meta), idempotenceKey: "idem-interop-1"), as: SDKAnswer.self)
            #expect(paid.ok, "\(paid)")
            let created = try #require(paid.created)
            let fetched = try #require(paid.fetched)
            #expect(created.status == "PENDING_APPROVAL")
            #expect(created.statusCategory == "PENDING_MERCHANT")
            #expect(created.isAuthorized == true)
            #expect(created.amount == 2345 && created.currencyCode == "EUR")
            #expect(created.merchantReference == "order-interop-1")
            #expect(paid.merchantAction == nil)
            #expect(fetched.id == created.id)
            #expect(fetched.status == created.status && fetched.amount == 2345 && fetched.currencyCode == "EUR")
            #expect(fetched.merchantReference == "order-interop-1")

            // A declined card: HTTP 402 with paymentResult, which the SDK raises as DeclinedPaymentException.
            let refused = try WorldlineEncryptor.encrypt(EmulatorInterop.card("4000000000000002", session: session), to: key)
            let declined = try await python.run("sdk_client.py", ["pay"], input: account.with(
                encryptedCustomerInput: refused, amount: 1000, currencyCode: "EUR", merchantReference: "order-interop-2",
                clientMetaInfo: try EmulatorInterop.decodedMetaInfo(meta), idempotenceKey: "idem-interop-2"), as: SDKAnswer.self)
            #expect(!declined.ok)
            #expect(declined.exception == "DeclinedPaymentException", "\(declined)")
            #expect(declined.payment?.status == "REJECTED")
            #expect(declined.payment?.merchantReference == "order-interop-2")
            #expect(declined.errors?.first?.code == "430330")
        }
    }

    @Test("the official SDK's errors for a wrong secret (401, ApiException) and for another merchant's path (403, AuthorizationException)")
    func officialSDKAuthorizationErrors() async throws {
        let python = try await PythonEnvironment.shared.value
        let emulator = try WorldlineEmulator(merchants: [EmulatorInterop.merchant()])
        try await EmulatorInterop.withSandbox(emulator) { sandbox in
            // The brief for these tests expected AuthorizationException for a wrong secret. The vendor source
            // says otherwise: its test resource for a bad signature (tests/resources/payment/invalid_authorization.json,
            // 9002 MISSING_OR_INVALID_AUTHORIZATION) is served with HTTP 401, and the SDK's exception_factory.py
            // maps only 403 to AuthorizationException; its test_create_invalid_authorization expects a plain
            // ApiException. The emulator follows that resource, so a wrong secret is an ApiException with 401.
            var wrongSecret = EmulatorInterop.account(sandbox)
            wrongSecret.secretApiKey = "not-the-secret"
            let refused = try await python.run("sdk_client.py", ["session"], input: wrongSecret, as: SDKAnswer.self)
            #expect(!refused.ok)
            #expect(refused.exception == "ApiException", "\(refused)")
            #expect(refused.statusCode == 401)
            #expect(refused.errors?.first?.code == "9002")

            // A valid key on another merchant's path is what the SDK reports as AuthorizationException (403).
            var otherMerchant = EmulatorInterop.account(sandbox)
            otherMerchant.merchantId = "9999"
            let forbidden = try await python.run("sdk_client.py", ["session"], input: otherMerchant, as: SDKAnswer.self)
            #expect(!forbidden.ok)
            #expect(forbidden.exception == "AuthorizationException", "\(forbidden)")
            #expect(forbidden.statusCode == 403)
        }
    }

    // MARK: c. The SDK's webhook helper accepts the emulator's webhooks

    @Test("the SDK's webhook helper accepts every webhook the emulator sends (and refuses each with one byte changed); the endpoint is verified first")
    func sdkWebhookHelperAcceptsEmulatorWebhooks() async throws {
        let python = try await PythonEnvironment.shared.value
        let receiver = try python.start("webhooks.py", ["receive"])
        let receiverURL: URL
        do {
            receiverURL = try #require(URL(string: try await receiver.firstLine()))
        } catch {
            receiver.cancel()
            throw error
        }
        let merchant = EmulatorInterop.merchant(webhookURL: receiverURL)
        let emulator = try WorldlineEmulator(merchants: [merchant], webhookRetryInterval: .milliseconds(50), webhookMaxAttempts: 3,
                                             webhookTimeout: .seconds(5))
        do {
            try await EmulatorInterop.withSandbox(emulator) { sandbox in
                let account = EmulatorInterop.account(sandbox)
                let session = try await EmulatorInterop.session(account, python: python)
                let api = try WorldlineClientAPI(session: session, metaInfo: EmulatorInterop.metaInfo, transport: URLSessionTransport())
                let key = try await api.publicKey()
                let input = try WorldlineEncryptor.encrypt(EmulatorInterop.card("5555555555554444", session: session), to: key)
                let paid = try await python.run("sdk_client.py", ["pay"], input: account.with(
                    encryptedCustomerInput: input, amount: 4200, currencyCode: "EUR", merchantReference: "order-webhooks",
                    clientMetaInfo: try EmulatorInterop.decodedMetaInfo(EmulatorInterop.metaInfo), idempotenceKey: "idem-webhooks"),
                    as: SDKAnswer.self)
                let id = try #require(paid.created?.id, "\(paid)")
                // Approving the pending payment makes the emulator announce the next status too.
                var approve = account
                approve.paymentId = id
                approve.amount = 4200
                let approved = try await python.run("sdk_client.py", ["approve"], input: approve, as: SDKAnswer.self)
                #expect(approved.ok, "\(approved)")
                await emulator.waitForWebhooks()
            }
        } catch {
            receiver.cancel()
            throw error
        }
        let captured = try JSONDecoder().decode(ReceivedRequests.self, from: Data(try await receiver.finish().utf8)).requests

        // The endpoint verification comes first: a GET carrying the value, which the endpoint echoed.
        let first = try #require(captured.first)
        #expect(first.method == "GET")
        let challenge = try #require(first.header("X-GCS-Webhooks-Endpoint-Verification"))
        let deliveries = await emulator.webhookDeliveries
        #expect(deliveries.first?.kind == .verification && deliveries.first?.accepted == true && deliveries.first?.body == challenge)
        // Till's server half answers the same GET with the same echo.
        let server = WorldlineServer(environment: .custom(receiverURL), credentials: EmulatorInterop.credentials(merchant),
                                     settings: WorldlineServerSettings(merchantId: merchant.merchantId), transport: URLSessionTransport())
        let echo = server.answerChallenge(IncomingNotification(headers: first.headerDictionary, body: Data()))
        #expect(echo?.statusCode == 200 && echo?.body == Data(challenge.utf8))

        let events = captured.filter { $0.method == "POST" }
        try #require(events.count >= 2, "expected the created and the approved payment's webhooks, got \(captured.map(\.method))")
        var sent: [WebhookHelper.Delivery] = []
        for event in events {
            let body = try event.body()
            sent.append(.init(body: body, headers: event.headerList))
            sent.append(.init(body: WebhookHelper.flippedByte(body), headers: event.headerList))
            // Till's own check agrees on the captured bytes.
            let verifier = WorldlineWebhookSignature(secrets: [merchant.webhookKeyId: merchant.webhookSecretKey])
            #expect(throws: Never.self) { try verifier.verify(body: body, headers: event.headerList) }
            #expect(throws: CheckoutError.self) { try verifier.verify(body: WebhookHelper.flippedByte(body), headers: event.headerList) }
            #expect(throws: Never.self) { try server.verifyNotification(IncomingNotification(headers: event.headerDictionary, body: body)) }
        }
        let verdicts = try await WebhookHelper.unmarshal(sent, secrets: [merchant.webhookKeyId: merchant.webhookSecretKey], python: python)
        for (index, event) in events.enumerated() {
            let original = verdicts[2 * index]
            let flipped = verdicts[2 * index + 1]
            let text = String(decoding: try event.body(), as: UTF8.self)
            #expect(original.ok, "the SDK refused the emulator's webhook: \(original.error ?? "")\n\(text)")
            #expect(original.apiVersion == "v1" && original.merchantId == merchant.merchantId)
            #expect(original.type?.hasPrefix("payment.") == true)
            #expect(!flipped.ok, "the SDK accepted a webhook with one byte changed")
            #expect(flipped.error?.hasPrefix("SignatureValidationException") == true, "\(flipped.error ?? "")")
        }
        let eventIds = deliveries.filter { $0.kind == .event }.compactMap(\.eventId)
        #expect(Set(verdicts.enumerated().filter { $0.offset % 2 == 0 }.compactMap(\.element.eventId)) == Set(eventIds))
    }
}

/// One request the Python receiver got (`Python/webhooks.py receive`).
struct ReceivedRequest: Decodable {
    var method: String
    var path: String
    /// Name and value, in the order received.
    var headers: [[String]]
    var bodyBase64: String

    func body() throws -> Data {
        guard let data = Data(base64Encoded: bodyBase64) else { throw InteropError("the receiver's body is not Base64") }
        return data
    }

    var headerList: [(name: String, value: String)] {
        headers.compactMap { $0.count == 2 ? (name: $0[0], value: $0[1]) : nil }
    }

    /// Names lower-cased, as a server hands them to ``IncomingNotification``.
    var headerDictionary: [String: String] {
        Dictionary(headerList.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    func header(_ name: String) -> String? {
        headerList.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

struct ReceivedRequests: Decodable {
    var requests: [ReceivedRequest]
}

/// What `Python/sdk_client.py` is given: the SDK's configuration, and the call's members.
struct SDKRequest: Encodable {
    var endpoint: String
    var apiKeyId: String
    var secretApiKey: String
    var merchantId: String
    var encryptedCustomerInput: String?
    var amount: Int?
    var currencyCode: String?
    var merchantReference: String?
    var clientMetaInfo: String?
    var idempotenceKey: String?
    var authorizationMode: String?
    var paymentId: String?

    func with(encryptedCustomerInput: String, amount: Int, currencyCode: String, merchantReference: String,
              clientMetaInfo: String, idempotenceKey: String) -> SDKRequest {
        var copy = self
        copy.encryptedCustomerInput = encryptedCustomerInput
        copy.amount = amount
        copy.currencyCode = currencyCode
        copy.merchantReference = merchantReference
        copy.clientMetaInfo = clientMetaInfo
        copy.idempotenceKey = idempotenceKey
        return copy
    }
}

/// What `Python/sdk_client.py` answers.
struct SDKAnswer: Decodable, CustomStringConvertible {
    struct Session: Decodable {
        var clientSessionId: String?
        var customerId: String?
        var clientApiUrl: String?
        var assetUrl: String?
        var region: String?
        var invalidTokens: [String]?
    }
    struct Payment: Decodable {
        var id: String?
        var status: String?
        var statusCategory: String?
        var statusCode: Int?
        var isAuthorized: Bool?
        var amount: Int?
        var currencyCode: String?
        var merchantReference: String?
        var amountCaptured: Int?
        var amountRefunded: Int?
    }
    struct APIError: Decodable {
        var code: String?
        var message: String?
        var propertyName: String?
    }
    var ok: Bool
    var session: Session?
    var created: Payment?
    var fetched: Payment?
    var merchantAction: String?
    var payment: Payment?
    var exception: String?
    var statusCode: Int?
    var errorId: String?
    var errors: [APIError]?

    var description: String {
        if ok { return "ok: created \(created?.status ?? "-"), fetched \(fetched?.status ?? "-"), payment \(payment?.status ?? "-")" }
        return "\(exception ?? "?") HTTP \(statusCode.map(String.init) ?? "-") \(errors?.map { "\($0.code ?? "?") \($0.message ?? "")" } ?? [])"
    }
}

/// The emulator side of the SDK tests.
enum EmulatorInterop {
    static let merchantId = "1234"

    static func merchant(webhookURL: URL? = nil) -> WorldlineEmulator.Merchant {
        .init(merchantId: merchantId, apiKeyId: "interop-key-id", secretApiKey: "interop-secret-api-key",
              webhookKeyId: "interop-webhook-key", webhookSecretKey: "interop-webhook-secret", webhookURL: webhookURL)
    }

    static func credentials(_ merchant: WorldlineEmulator.Merchant) -> WorldlineCredentials {
        WorldlineCredentials(apiKeyId: merchant.apiKeyId, secretApiKey: merchant.secretApiKey,
                             webhookKeys: [merchant.webhookKeyId: merchant.webhookSecretKey])
    }

    /// The SDK's configuration for the sandbox: its endpoint is scheme, host and port only.
    static func account(_ sandbox: RunningSandbox) -> SDKRequest {
        var components = URLComponents(url: sandbox.baseURL, resolvingAgainstBaseURL: false)
        components?.path = ""
        let merchant = merchant()
        return SDKRequest(endpoint: components?.url?.absoluteString ?? sandbox.baseURL.absoluteString, apiKeyId: merchant.apiKeyId,
                          secretApiKey: merchant.secretApiKey, merchantId: merchant.merchantId)
    }

    static let metaInfo = WorldlineClientMetaInfo(platformIdentifier: "iOS/18.2", screenSize: "11702532", deviceType: "iPhone15,2",
                                                  appIdentifier: "com.example.shop", ipAddress: "192.0.2.10")

    /// The meta info as the SDK's `with_client_meta_info` takes it: the JSON text, not its Base64.
    static func decodedMetaInfo(_ meta: WorldlineClientMetaInfo) throws -> String {
        guard let data = Data(base64Encoded: meta.encoded) else { throw InteropError("encodedClientMetaInfo is not Base64") }
        return String(decoding: data, as: UTF8.self)
    }

    /// A card product's fields as the app half collects them (Visa/MasterCard: 1/3 by the IIN).
    static func card(_ number: String, session: WorldlineClientSession) -> WorldlineCustomerInput {
        let product = number.hasPrefix("5") ? 3 : 1
        return WorldlineCustomerInput(clientSessionId: session.clientSessionId, paymentProductId: product, values: [
            .init(key: "cardNumber", value: number), .init(key: "expiryDate", value: "1230"), .init(key: "cvv", value: "123"),
            .init(key: "cardholderName", value: "Zoë Interop"),
        ])
    }

    /// A client session created by the SDK, as the app half receives it.
    static func session(_ account: SDKRequest, python: PythonEnvironment) async throws -> WorldlineClientSession {
        let answer = try await python.run("sdk_client.py", ["session"], input: account, as: SDKAnswer.self)
        guard answer.ok, let session = answer.session, let id = session.clientSessionId, let customer = session.customerId,
              let api = session.clientApiUrl.flatMap(URL.init(string:)), let assets = session.assetUrl.flatMap(URL.init(string:)) else {
            throw InteropError("the SDK got no usable session: \(answer)")
        }
        return WorldlineClientSession(clientSessionId: id, customerId: customer, clientApiURL: api, assetURL: assets)
    }

    /// Runs `body` with a sandbox hosting `emulator`, and stops the sandbox whatever happens.
    static func withSandbox(_ emulator: WorldlineEmulator, _ body: (RunningSandbox) async throws -> Void) async throws {
        let sandbox = try await Sandbox.start(emulators: [emulator])
        do {
            try await body(sandbox)
        } catch {
            await sandbox.stop()
            throw error
        }
        await sandbox.stop()
    }
}
