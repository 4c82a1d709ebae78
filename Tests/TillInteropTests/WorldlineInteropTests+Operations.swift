import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillSandbox
import TillWorldline
import TillWorldlineServer

/// What `Python/sdk_client.py` is given for the operation commands (`capture`, `refund`, `cancel`, `models`).
struct SDKOperationRequest: Encodable {
    struct Model: Encodable {
        var model: String
        var body: InteropJSON
    }
    var endpoint: String
    var apiKeyId: String
    var secretApiKey: String
    var merchantId: String
    var paymentId: String?
    var amount: Int?
    var currencyCode: String?
    var isFinal: Bool?
    var captureReference: String?
    var merchantReference: String?
    var idempotenceKey: String?
    var models: [Model]?

    init(_ account: SDKRequest) {
        endpoint = account.endpoint
        apiKeyId = account.apiKeyId
        secretApiKey = account.secretApiKey
        merchantId = account.merchantId
    }
}

/// Any JSON value, read and written as itself (to hand a body to the SDK and compare what it gives back).
indirect enum InteropJSON: Codable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([InteropJSON])
    case object([String: InteropJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null } else if let bool = try? container.decode(Bool.self) { self = .bool(bool) }
        else if let int = try? container.decode(Int64.self) { self = .integer(int) }
        else if let double = try? container.decode(Double.self) { self = .number(double) }
        else if let text = try? container.decode(String.self) { self = .string(text) }
        else if let array = try? container.decode([InteropJSON].self) { self = .array(array) }
        else { self = .object(try container.decode([String: InteropJSON].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// What `Python/sdk_client.py` answers to the operation commands.
struct SDKOperationAnswer: Decodable, CustomStringConvertible {
    struct Capture: Decodable {
        var id: String?
        var status: String?
        var amount: Int?
        var currencyCode: String?
        var merchantCaptureReference: String?
        var isFinal: Bool?
    }
    struct Refund: Decodable {
        var id: String?
        var status: String?
        var amount: Int?
        var currencyCode: String?
        var merchantReference: String?
    }
    var ok: Bool
    var capture: Capture?
    var refund: Refund?
    var payment: SDKAnswer.Payment?
    var fetchedCapture: Capture?
    var exception: String?
    var statusCode: Int?
    var errors: [SDKAnswer.APIError]?
    var timestamp: Int64?

    var description: String {
        ok ? "ok" : "\(exception ?? "?") HTTP \(statusCode.map(String.init) ?? "-") \(errors?.map { "\($0.code ?? "?") \($0.message ?? "")" } ?? [])"
    }
}

/// The capture command's answer: the capture, the payment's captures and the capture read back.
struct SDKCaptureAnswer: Decodable {
    var ok: Bool
    var capture: SDKOperationAnswer.Capture?
    var listed: [SDKOperationAnswer.Capture]?
    var fetched: SDKOperationAnswer.Capture?
    var exception: String?
}

/// The refund command's answer: the refund, the payment's refunds and the refund read back.
struct SDKRefundAnswer: Decodable {
    var ok: Bool
    var refund: SDKOperationAnswer.Refund?
    var listed: [SDKOperationAnswer.Refund]?
    var fetched: SDKOperationAnswer.Refund?
    var timestamp: Int64?
    var exception: String?
    var statusCode: Int?
    var errors: [SDKAnswer.APIError]?
}

extension WorldlineInteropTests {
    // MARK: f. The SDK captures, refunds and cancels against the emulator

    @Test("the official SDK captures (partial, then final), refunds (idempotently, declined, too much) and cancels on the emulator; Till reads its refund webhooks as operations")
    func officialSDKOperationsAgainstEmulator() async throws {
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
        let refundReference = "wl-sdk-ops-attempt-0001-r1"
        var paymentId = ""
        do {
            try await EmulatorInterop.withSandbox(emulator) { sandbox in
                let account = EmulatorInterop.account(sandbox)
                let session = try await EmulatorInterop.session(account, python: python)
                let key = try await WorldlineClientAPI(session: session, metaInfo: EmulatorInterop.metaInfo, transport: URLSessionTransport()).publicKey()
                func pay(_ reference: String, mode: String?) async throws -> String {
                    var request = account.with(
                        encryptedCustomerInput: try WorldlineEncryptor.encrypt(EmulatorInterop.card("4111111111111111", session: session), to: key),
                        amount: 2345, currencyCode: "EUR", merchantReference: reference,
                        clientMetaInfo: try EmulatorInterop.decodedMetaInfo(EmulatorInterop.metaInfo), idempotenceKey: "idem-\(reference)")
                    request.authorizationMode = mode
                    let paid = try await python.run("sdk_client.py", ["pay"], input: request, as: SDKAnswer.self)
                    return try #require(paid.created?.id, "\(paid)")
                }

                // An authorisation (FINAL_AUTHORIZATION: PENDING_CAPTURE in the emulator), captured in two parts.
                paymentId = try await pay("wl-sdk-ops-attempt-0001", mode: "FINAL_AUTHORIZATION")
                var capture = SDKOperationRequest(account)
                capture.paymentId = paymentId
                capture.amount = 1000
                capture.isFinal = false
                capture.captureReference = "wl-sdk-ops-attempt-0001-c1"
                capture.idempotenceKey = "wl-sdk-ops-attempt-0001-c1"
                let first = try await python.run("sdk_client.py", ["capture"], input: capture, as: SDKCaptureAnswer.self)
                #expect(first.ok, "\(first.exception ?? "")")
                #expect(first.capture?.status == "CAPTURED" && first.capture?.amount == 1000 && first.capture?.currencyCode == "EUR")
                #expect(first.capture?.merchantCaptureReference == "wl-sdk-ops-attempt-0001-c1")
                #expect(first.capture?.isFinal == false)
                #expect(first.listed?.count == 1 && first.fetched?.id == first.capture?.id)
                capture.amount = 1345
                capture.isFinal = true
                capture.captureReference = "wl-sdk-ops-attempt-0001-c2"
                capture.idempotenceKey = "wl-sdk-ops-attempt-0001-c2"
                let second = try await python.run("sdk_client.py", ["capture"], input: capture, as: SDKCaptureAnswer.self)
                #expect(second.ok && second.capture?.isFinal == true && second.listed?.count == 2)
                #expect(await emulator.paymentStatus(paymentId) == "CAPTURED")

                // A refund, and the same refund again with its key: the first answer, with the first request's timestamp.
                var refund = SDKOperationRequest(account)
                refund.paymentId = paymentId
                refund.amount = 500
                refund.currencyCode = "EUR"
                refund.merchantReference = refundReference
                refund.idempotenceKey = refundReference
                let refunded = try await python.run("sdk_client.py", ["refund"], input: refund, as: SDKRefundAnswer.self)
                #expect(refunded.ok, "\(refunded.exception ?? "") \(refunded.errors ?? [])")
                #expect(refunded.refund?.status == "REFUND_REQUESTED" && refunded.refund?.amount == 500)
                #expect(refunded.refund?.merchantReference == refundReference)
                #expect(refunded.fetched?.status == "REFUNDED" && refunded.listed?.count == 1)
                #expect(refunded.timestamp == nil, "a first request has no X-GCS-Idempotence-Request-Timestamp")
                let repeated = try await python.run("sdk_client.py", ["refund"], input: refund, as: SDKRefundAnswer.self)
                #expect(repeated.ok && repeated.refund?.id == refunded.refund?.id && repeated.listed?.count == 1)
                #expect(repeated.timestamp != nil, "a repeat carries the first request's timestamp")

                // Declined: DeclinedRefundException with the refund's result.
                await emulator.declineNextRefund(of: paymentId)
                refund.merchantReference = "wl-sdk-ops-attempt-0001-r2"
                refund.idempotenceKey = "wl-sdk-ops-attempt-0001-r2"
                let declined = try await python.run("sdk_client.py", ["refund"], input: refund, as: SDKRefundAnswer.self)
                #expect(!declined.ok && declined.exception == "DeclinedRefundException", "\(declined.exception ?? "")")
                #expect(declined.refund?.status == "REJECTED" && declined.statusCode == 402)

                // More than is left: ValidationException (400).
                refund.amount = 5000
                refund.merchantReference = "wl-sdk-ops-attempt-0001-r3"
                refund.idempotenceKey = "wl-sdk-ops-attempt-0001-r3"
                let tooMuch = try await python.run("sdk_client.py", ["refund"], input: refund, as: SDKRefundAnswer.self)
                #expect(!tooMuch.ok && tooMuch.exception == "ValidationException" && tooMuch.statusCode == 400)

                // Finalize: one partial capture, then no more; the rest of the authorisation is released.
                let partial = try await pay("wl-sdk-ops-attempt-0003", mode: "FINAL_AUTHORIZATION")
                capture.paymentId = partial
                capture.amount = 345
                capture.isFinal = false
                capture.captureReference = "wl-sdk-ops-attempt-0003-c1"
                capture.idempotenceKey = "wl-sdk-ops-attempt-0003-c1"
                #expect(try await python.run("sdk_client.py", ["capture"], input: capture, as: SDKCaptureAnswer.self).ok)
                var finalize = SDKOperationRequest(account)
                finalize.paymentId = partial
                let finalized = try await python.run("sdk_client.py", ["finalize"], input: finalize, as: SDKOperationAnswer.self)
                #expect(finalized.ok && finalized.payment?.status == "CAPTURED" && finalized.payment?.amountCaptured == 345, "\(finalized)")
                #expect(await emulator.ledger.filter { $0.paymentId == partial }.map(\.operation) == [.authorization, .capture, .cancel])

                // A payment waiting for approval is cancelled; a captured one cannot be (the emulator's 409: ReferenceException).
                let toCancel = try await pay("wl-sdk-ops-attempt-0002", mode: nil)
                var cancel = SDKOperationRequest(account)
                cancel.paymentId = toCancel
                cancel.idempotenceKey = "wl-sdk-ops-attempt-0002-v1"
                let cancelled = try await python.run("sdk_client.py", ["cancel"], input: cancel, as: SDKOperationAnswer.self)
                #expect(cancelled.ok && cancelled.payment?.status == "CANCELLED", "\(cancelled)")
                cancel.paymentId = paymentId
                cancel.idempotenceKey = "wl-sdk-ops-attempt-0001-v1"
                let late = try await python.run("sdk_client.py", ["cancel"], input: cancel, as: SDKOperationAnswer.self)
                #expect(!late.ok && late.exception == "ReferenceException" && late.statusCode == 409, "\(late)")
                await emulator.waitForWebhooks()
            }
        } catch {
            receiver.cancel()
            throw error
        }
        let captured = try JSONDecoder().decode(ReceivedRequests.self, from: Data(try await receiver.finish().utf8)).requests
        let server = WorldlineServer(environment: .custom(receiverURL), credentials: EmulatorInterop.credentials(merchant),
                                     settings: WorldlineServerSettings(merchantId: merchant.merchantId), transport: URLSessionTransport())
        var refundOperations: [OperationReport] = []
        for event in captured where event.method == "POST" {
            let body = try event.body()
            let notification = try server.verifyNotification(IncomingNotification(headers: event.headerDictionary, body: body))
            let type = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["type"] as? String
            if type?.hasPrefix("payment.") == true {
                #expect(notification.operation == nil, "a payment event names no operation")
            }
            if let operation = notification.operation {
                #expect(operation.kind == .refund)
                refundOperations.append(operation)
            }
        }
        // refund_requested and refunded of r1, rejected of r2: each names Till's reference, the refund id and its own amount.
        let mine = refundOperations.filter { $0.reference?.rawValue == refundReference }
        #expect(mine.count == 2 && Set(mine.map(\.status)) == [.pending, .succeeded], "\(refundOperations)")
        let fiveEuros = Money(minorUnits: 500, currency: try Currency(code: "EUR"))
        #expect(mine.allSatisfy { $0.amount == fiveEuros && $0.gatewayReference != nil && $0.gatewayReference == mine.first?.gatewayReference })
        #expect(refundOperations.contains { $0.reference?.rawValue == "wl-sdk-ops-attempt-0001-r2" && $0.status == .failed })
        #expect(!paymentId.isEmpty)
    }

    // MARK: g. The plugin's operation requests read by the SDK's own models

    @Test("the SDK's models read the plugin's approve, capture and refund bodies and write them back unchanged (every member is the SDK's)")
    func pluginOperationBodiesAreTheSDKModels() async throws {
        let python = try await PythonEnvironment.shared.value
        var bodies: [(model: String, body: Data)] = []
        for mode in ["SALE", "FINAL_AUTHORIZATION"] {
            try await WorldlineOperationsTests.withWorld(mode: mode) { world in
                let payment = try await world.authorize("wl-sdk-models-\(mode.lowercased())".replacingOccurrences(of: "_", with: "-"))
                _ = try await world.server.perform(WorldlineOperationsTests.request(payment, .capture, amount: 2000))
                _ = try await world.server.perform(WorldlineOperationsTests.request(payment, .refund, amount: 700))
                for request in world.transport.requests where request.method == .post {
                    let path = request.url.path
                    let model = path.hasSuffix("/approve") ? "ApprovePaymentRequest" : path.hasSuffix("/capture") ? "CapturePaymentRequest"
                        : path.hasSuffix("/refund") ? "RefundRequest" : nil
                    if let model, let body = request.body { bodies.append((model, body)) }
                }
            }
        }
        #expect(Set(bodies.map(\.model)) == ["ApprovePaymentRequest", "CapturePaymentRequest", "RefundRequest"])
        var request = SDKOperationRequest(SDKRequest(endpoint: "http://127.0.0.1:1", apiKeyId: "k", secretApiKey: "s", merchantId: "1234"))
        request.models = try bodies.map { .init(model: $0.model, body: try JSONDecoder().decode(InteropJSON.self, from: $0.body)) }
        struct Answer: Decodable {
            var ok: Bool
            var models: [InteropJSON]?
        }
        let answer = try await python.run("sdk_client.py", ["models"], input: request, as: Answer.self)
        let written = try #require(answer.models)
        try #require(written.count == bodies.count)
        for (sent, back) in zip(bodies, written) {
            #expect(try JSONDecoder().decode(InteropJSON.self, from: sent.body) == back,
                    "\(sent.model): the plugin sent \(String(decoding: sent.body, as: UTF8.self)), the SDK's model kept \(back)")
        }
    }
}
