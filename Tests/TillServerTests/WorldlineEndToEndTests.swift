import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillSandbox
import TillWorldline
import TillWorldlineServer
@testable import TillServer

@Suite("Worldline end to end: app (products → form → IIN → JWE) → merchant server → emulator → 3-D Secure → webhooks → server", .serialized)
struct WorldlineEndToEndTests {
    static let merchantId = "e2e-merchant"
    static let apiKeyId = "wl-e2e-key"
    static let secretApiKey = "wl-e2e-secret"
    static let webhookKeyId = "wl-e2e-webhook-key"
    static let webhookSecret = "wl-e2e-webhook-secret"

    struct World {
        let emulator: WorldlineEmulator
        let sandbox: RunningSandbox
        let server: Task<Void, any Error>
        let serverURL: URL
        let store: any PaymentStore
        let returns: ReturnURLHandler
        let backend: ClientSecretBackend
        let appGateway: WorldlineGateway

        func checkout(_ customer: SandboxWorldlineCustomer) -> AppCheckout {
            AppCheckout(backend: backend, gateways: [appGateway], returns: returns, presenter: customer,
                        returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(25))
        }

        func customer(_ card: String, approvesThreeDSecure: Bool = true) -> SandboxWorldlineCustomer {
            SandboxWorldlineCustomer(cardNumber: card, approvesThreeDSecure: approvesThreeDSecure, returns: returns)
        }

        func stop() async {
            await emulator.waitForWebhooks()
            await sandbox.stop()
            server.cancel()
            _ = await server.result
            try? await store.close()
        }
    }

    func world(webhooks: Bool = true) async throws -> World {
        let port = try #require(LoopbackPort.reserve())
        let serverURL = URL(string: "http://127.0.0.1:\(port)")!
        let emulator = try WorldlineEmulator(
            merchants: [.init(merchantId: Self.merchantId, apiKeyId: Self.apiKeyId, secretApiKey: Self.secretApiKey,
                              webhookKeyId: Self.webhookKeyId, webhookSecretKey: Self.webhookSecret,
                              webhookURL: webhooks ? serverURL.appendingPathComponent("v1/notifications/worldline") : nil)],
            webhookRetryInterval: .milliseconds(50))
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "e2e", apiKey: CredentialReference(env: "KEY"),
                gateways: [GatewayConfiguration(id: "worldline", module: "worldline",
                                                credentials: ["api_key_id": CredentialReference(env: "WL_KEY"),
                                                              "secret_api_key": CredentialReference(env: "WL_SECRET"),
                                                              "webhook_key_id": CredentialReference(env: "WL_HOOK_KEY"),
                                                              "webhook_secret_key": CredentialReference(env: "WL_HOOK_SECRET")],
                                                settings: ["base_url": sandbox.baseURL(of: emulator).absoluteString,
                                                           "merchant_id": Self.merchantId])],
                routing: RoutingConfiguration(fallback: ["worldline"]), returnURLSchemes: ["shop"])],
            server: ServerSettings(listen: "127.0.0.1:\(port)", storage: "sqlite:unused", publicURL: serverURL.absoluteString))
        let state = try ServerState(configuration: configuration, plugins: [WorldlinePlugin.plugin],
                                    environment: ["KEY": "e2e-app-key-0123456789", "WL_KEY": Self.apiKeyId, "WL_SECRET": Self.secretApiKey,
                                                  "WL_HOOK_KEY": Self.webhookKeyId, "WL_HOOK_SECRET": Self.webhookSecret])
        let store = try await StoreKind.sqlite.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        #expect(await iterator.next() == port)
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        // The app half as an app builds it: from non-secret settings only.
        let appGateway = try #require(try WorldlinePlugin.plugin.makeAppHalf(GatewayPluginContext(
            id: "worldline", settings: ModuleSettings(module: "worldline", settings: [:], credentials: [:]),
            transport: URLSessionTransport())) as? WorldlineGateway)
        return World(emulator: emulator, sandbox: sandbox, server: task, serverURL: serverURL, store: store, returns: returns,
                     backend: ClientSecretBackend(merchant: MerchantAPIClient(baseURL: serverURL, apiKey: "e2e-app-key-0123456789",
                                                                              transport: URLSessionTransport()),
                                                  transport: URLSessionTransport()),
                     appGateway: appGateway)
    }

    func withWorld(webhooks: Bool = true, _ body: (World) async throws -> Void) async throws {
        let w = try await world(webhooks: webhooks)
        do { try await body(w) } catch {
            await w.stop()
            throw error
        }
        await w.stop()
    }

    func intent(_ reference: String, amount: String = "23.45", action: PaymentAction = .sale) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "\(reference)-\(UUID().uuidString.prefix(6))",
                      amount: try Money(decimal: amount, currency: Currency(code: "EUR")), country: try CountryCode("NL"),
                      method: .card, action: action, customer: Customer(email: "buyer@example.com", locale: "en_GB"),
                      description: "e2e worldline")
    }

    @Test("a Visa sale: the form, the IIN, the JWE the emulator decrypts, CAPTURED, confirmed by the webhook and the inquiry")
    func visaSale() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer("4111111111111111")).pay(try intent("wl-visa"))
            #expect(result.clientOutcome.kind == .succeeded)
            #expect(result.status == .paid)
            #expect(!result.customerMayHaveAuthenticated)
            let ledger = await w.emulator.ledger
            #expect(ledger.filter { $0.merchantReference == result.preparation.attempt.rawValue }.count >= 1)
            #expect(ledger.first?.amount == 2345)
            await w.emulator.waitForWebhooks()
            #expect(try await w.store.notificationCount(attempt: result.preparation.attempt) >= 1, "the payment's webhooks reached the server")
            #expect(try await w.backend.status(of: result.preparation.attempt)?.status == .paid)
        }
    }

    @Test("the app's own form bound to WorldlineForm: typed digit by digit, the IIN switches the product, the values are encrypted and paid; closing the form cancels")
    func headlessForm() async throws {
        try await withWorld { w in
            let seen = Locked<[Int?]>([])
            let typing: WorldlineGateway.FormPresenter = { form in
                seen.withLock { $0.append(nil) }
                var cursor = 0
                for digit in "4111111111111111" {
                    cursor = await form.edit("cardNumber", replacing: cursor..<cursor, with: String(digit)).cursor
                }
                await form.settle()
                let product = await form.productId
                seen.withLock { $0.append(product) }
                #expect(await form.field("cardNumber")?.value == "4111 1111 1111 1111 ")
                _ = await form.edit("expiryDate", replacing: 0..<0, with: "1230")
                _ = await form.edit("cvv", replacing: 0..<0, with: "123")
                #expect(await form.errors().isEmpty)
                return true
            }
            let gateway = WorldlineGateway(transport: URLSessionTransport(), formPresenter: typing)
            let checkout = AppCheckout(backend: w.backend, gateways: [gateway], returns: w.returns, presenter: w.customer("unused"),
                                       returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(25))
            let result = try await checkout.pay(try intent("wl-form"))
            #expect(result.status == .paid)
            #expect(seen.withLock { $0 } == [nil, 1], "Visa (1) after the IIN lookup")

            let closing = WorldlineGateway(transport: URLSessionTransport(), formPresenter: { _ in false })
            let closed = try await AppCheckout(backend: w.backend, gateways: [closing], returns: w.returns, presenter: w.customer("unused"),
                                               returnTimeout: .seconds(5), confirmationTimeout: .seconds(1), confirmationInterval: .milliseconds(25))
                .pay(try intent("wl-closed"))
            #expect(closed.clientOutcome.kind == .cancelled)
            #expect(await w.emulator.ledger.filter { $0.merchantReference == closed.preparation.attempt.rawValue }.isEmpty)
        }
    }

    @Test("an authorisation: PENDING_CAPTURE is authorized")
    func authorization() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer("5555555555554444")).pay(try intent("wl-auth", action: .authorize))
            #expect(result.status == .authorized)
            let payment = try #require(await w.emulator.ledger.first { $0.merchantReference == result.preparation.attempt.rawValue })
            #expect(await w.emulator.paymentStatus(payment.paymentId) == "PENDING_CAPTURE")
        }
    }

    /// The merchant's back office: the server's API with the merchant key.
    func merchant(_ w: World) -> MerchantAPIClient {
        MerchantAPIClient(baseURL: w.serverURL, apiKey: "e2e-app-key-0123456789", transport: URLSessionTransport())
    }

    /// Waits until the operation is settled (Worldline answers captures and refunds as requested; its webhook or the
    /// server's inquiry settles them).
    func settled(_ api: MerchantAPIClient, _ id: String) async throws -> OperationView {
        var operation = try await api.operation(id: id)
        for _ in 0..<100 where !operation.status.isFinal {
            try await Task.sleep(for: .milliseconds(50))
            operation = try await api.operation(id: id)
            if !operation.status.isFinal, operation.status == .pending { operation = (try? await api.inquireOperation(id: id)) ?? operation }
        }
        return operation
    }

    @Test("through the server: an authorization captured in part, refunded in part then the rest; another voided; a second capture refused 422")
    func operations() async throws {
        try await withWorld { w in
            let api = merchant(w)
            let result = try await w.checkout(w.customer("5555555555554444")).pay(try intent("wl-ops", amount: "40.00", action: .authorize))
            #expect(result.status == .authorized)
            let payment = try await api.payment(attempt: result.preparation.attempt)
            let eur = try Currency(code: "EUR")
            let capture = try await api.operate(.capture, paymentID: payment.id, command: OperationCommand(amount: Money(minorUnits: 3000, currency: eur)),
                                                idempotencyKey: "wl-c1-\(payment.id)")
            #expect(try await settled(api, capture.id).status == .succeeded)
            // Worldline takes one capture of an authorization (more is a pilot feature): refused before anything is sent.
            await #expect(throws: CheckoutError.self) {
                _ = try await api.operate(.capture, paymentID: payment.id, idempotencyKey: "wl-c2-\(payment.id)")
            }
            let first = try await api.operate(.refund, paymentID: payment.id, command: OperationCommand(amount: Money(minorUnits: 1000, currency: eur)),
                                              idempotencyKey: "wl-r1-\(payment.id)")
            #expect(try await settled(api, first.id).status == .succeeded)
            let again = try await api.operate(.refund, paymentID: payment.id, command: OperationCommand(amount: Money(minorUnits: 1000, currency: eur)),
                                              idempotencyKey: "wl-r1-\(payment.id)")
            #expect(again.id == first.id)
            let rest = try await api.operate(.refund, paymentID: payment.id, idempotencyKey: "wl-r2-\(payment.id)")
            #expect(rest.amount.minorUnits == 2000)
            #expect(try await settled(api, rest.id).status == .succeeded)
            let view = try await api.payment(id: payment.id)
            #expect(view.status == .refunded)
            #expect(view.amountCaptured?.minorUnits == 3000 && view.amountRefunded?.minorUnits == 3000)
            // The emulator refunded exactly what Till says, once each.
            let worldlinePayment = try #require(await w.emulator.ledger.first { $0.merchantReference == result.preparation.attempt.rawValue })
            #expect(await w.emulator.paymentStatus(worldlinePayment.paymentId) != nil)

            let other = try await w.checkout(w.customer("5555555555554444")).pay(try intent("wl-void", amount: "12.00", action: .authorize))
            let voidable = try await api.payment(attempt: other.preparation.attempt)
            let void = try await api.operate(.void, paymentID: voidable.id, idempotencyKey: "wl-v1-\(voidable.id)")
            #expect(try await settled(api, void.id).status == .succeeded)
            #expect(try await api.payment(id: voidable.id).status == .cancelled)
            let voidedAtWorldline = try #require(await w.emulator.ledger.first { $0.merchantReference == other.preparation.attempt.rawValue })
            #expect(await w.emulator.paymentStatus(voidedAtWorldline.paymentId) == "CANCELLED")
        }
    }

    @Test("3-D Secure: the redirect opens, the customer approves, comes back through the return URL, and the payment is paid")
    func threeDSecure() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer("4000000000003220")).pay(try intent("wl-3ds"))
            #expect(result.customerMayHaveAuthenticated)
            #expect(result.status == .paid)
            let failed = try await w.checkout(w.customer("4000000000003220", approvesThreeDSecure: false)).pay(try intent("wl-3ds-fail"))
            #expect(failed.status == .failed)
        }
    }

    @Test("a declined card fails the attempt with Worldline's code; nothing charged")
    func declined() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer("4000000000000002")).pay(try intent("wl-decline"))
            #expect(result.status == .failed)
            #expect(await w.emulator.ledger.filter { $0.merchantReference == result.preparation.attempt.rawValue && $0.operation == .capture }.isEmpty)
        }
    }

    @Test("a card not allowed in the context (JCB outside Japan) is refused on the device before anything is sent")
    func notAllowed() async throws {
        try await withWorld { w in
            await #expect(throws: CheckoutError.self) {
                _ = try await w.checkout(w.customer("3528000000000007")).pay(try intent("wl-jcb"))
            }
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("without webhooks the server's inquiry settles it; the endpoint verification is answered by the server")
    func inquiryAndEndpointVerification() async throws {
        try await withWorld(webhooks: false) { w in
            let result = try await w.checkout(w.customer("4111111111111111")).pay(try intent("wl-nohooks"))
            #expect(result.status == .paid)
            #expect(try await w.store.notificationCount(attempt: result.preparation.attempt) == 0)
            var request = URLRequest(url: w.serverURL.appendingPathComponent("v1/notifications/worldline"))
            request.setValue("challenge-123", forHTTPHeaderField: "X-GCS-Webhooks-Endpoint-Verification")
            let (body, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self) == "challenge-123")
        }
    }

    @Test("a webhook signed with another secret is refused (401) and changes nothing")
    func forgedWebhook() async throws {
        try await withWorld { w in
            let body = Data(#"{"apiVersion":"v1","id":"forged-1","created":"2026-11-22T10:00:00.000+0000","merchantId":"e2e-merchant","type":"payment.captured","payment":{"id":"1","paymentOutput":{"amountOfMoney":{"amount":100,"currencyCode":"EUR"},"references":{"merchantReference":"aaaaaaaaaaaaaaaaaaaaaaaa"}},"status":"CAPTURED"}}"#.utf8)
            var request = URLRequest(url: w.serverURL.appendingPathComponent("v1/notifications/worldline"))
            request.httpMethod = "POST"
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(Self.webhookKeyId, forHTTPHeaderField: "X-GCS-KeyId")
            request.setValue(WorldlineWebhookSignature.signature(body: body, secret: "not-the-secret"), forHTTPHeaderField: "X-GCS-Signature")
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 401)
        }
    }
}
