import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillEcommpayServer
import TillGatewayKit
import TillSandbox
@testable import TillServer

/// The production path end to end: the app's checkout → the merchant server (Prepare signs the payment
/// options) → the SDK stand-in or the Payment Page → ecommpay's signed callback → the server.
@Suite("ecommpay end to end: signed options → SDK or Payment Page → callback → server", .serialized)
struct EcommpayEndToEndTests {
    static let projectId = 7007
    static let secret = "ecommpay-e2e-secret"

    struct World {
        let emulator: EcommpayEmulator
        let sandbox: RunningSandbox
        let server: Task<Void, any Error>
        let store: any PaymentStore
        let returns: ReturnURLHandler
        let backend: ClientSecretBackend
        /// The merchant's backend on the server's API.
        let merchant: MerchantHTTP
        /// What the server sent ecommpay.
        let sent: SentRequests

        func pay(_ intent: PaymentIntent, choice: SandboxEcommpayCustomer.Choice = .complete) async throws -> CheckoutResult {
            let customer = SandboxEcommpayCustomer(baseURL: sandbox.baseURL(of: emulator), returns: returns, choice: choice)
            let checkout = AppCheckout(backend: backend, gateways: [EcommpayGateway()], returns: returns, presenter: customer,
                                       returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(25))
            return try await checkout.pay(intent)
        }
    }

    func withWorld(_ body: (World) async throws -> Void) async throws {
        let emulator = EcommpayEmulator(projects: [.init(projectId: Self.projectId, secretKey: Self.secret)],
                                        callbackRetryInterval: .milliseconds(50))
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let port = try #require(LoopbackPort.reserve())
        let serverURL = URL(string: "http://127.0.0.1:\(port)")!
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "e2e", apiKey: CredentialReference(env: "KEY"),
                gateways: [GatewayConfiguration(id: "ecommpay", module: "ecommpay", credentials: ["secret_key": CredentialReference(env: "ECP")],
                                                settings: ["base_url": sandbox.baseURL(of: emulator).absoluteString,
                                                           "project_id": String(Self.projectId)])],
                routing: RoutingConfiguration(fallback: ["ecommpay"]), returnURLSchemes: ["shopecp"])],
            server: ServerSettings(listen: "127.0.0.1:\(port)", storage: "sqlite:unused", publicURL: serverURL.absoluteString))
        let sent = SentRequests()
        let state = try ServerState(configuration: configuration, plugins: [EcommpayPlugin.plugin],
                                    environment: ["KEY": "e2e-app-key-0123456789", "ECP": Self.secret], transport: { sent.transport($0) })
        let store = try await StoreKind.sqlite.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        #expect(await iterator.next() == port)
        _ = await emulator.setCallbackURL(serverURL.appendingPathComponent("v1/notifications/ecommpay"), for: Self.projectId)
        let returns = try ReturnURLHandler(routes: [.customScheme("shopecp")])
        let world = World(emulator: emulator, sandbox: sandbox, server: task, store: store, returns: returns,
                          backend: ClientSecretBackend(merchant: MerchantAPIClient(baseURL: serverURL, apiKey: "e2e-app-key-0123456789",
                                                                                   transport: URLSessionTransport()),
                                                       transport: URLSessionTransport()),
                          merchant: MerchantHTTP(baseURL: serverURL, apiKey: "e2e-app-key-0123456789"), sent: sent)
        func stop() async {
            await emulator.releaseCallbacks()
            await emulator.waitForCallbacks()
            await sandbox.stop()
            task.cancel()
            _ = await task.result
            try? await store.close()
        }
        do { try await body(world) } catch {
            await stop()
            throw error
        }
        await stop()
    }

    func intent(_ method: PaymentMethod, _ amount: String = "19.99", action: PaymentAction = .sale) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "ecp-\(UUID().uuidString.prefix(8).lowercased())",
                      amount: try Money(decimal: amount, currency: Currency(code: "GBP")), method: method, action: action,
                      customer: Customer(email: "buyer@example.com"), description: "e2e \(method)")
    }

    @Test("a card Sale through the SDK: the callback pays it once, for the payment's amount")
    func cardSale() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card))
            #expect(result.clientOutcome.kind == .succeeded)
            #expect(result.status == .paid)
            await w.emulator.waitForCallbacks()
            #expect(await w.emulator.ledger.filter { $0.paymentId == result.preparation.attempt.rawValue }.count == 1)
            #expect(try await w.backend.status(of: result.preparation.attempt)?.amount == result.preparation.amount)
        }
    }

    @Test("ecommpay's own cascade: the decline with cascading_with_redirect keeps the one attempt pending; the success pays it")
    func cascade() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card, "30.00"), choice: .cascade)
            await w.emulator.waitForCallbacks()
            #expect(result.attempts == 1)
            #expect(try await w.backend.status(of: result.preparation.attempt)?.status == .paid)
            #expect(try await w.store.notificationCount(attempt: result.preparation.attempt) == 2)
        }
    }

    @Test("a decline is final: failed, nothing charged")
    func decline() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card), choice: .decline)
            #expect(result.clientOutcome.kind == .failed)
            #expect(result.status == .failed)
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("PayPal on the signed Payment Page: back on the return URL, the callback pays it")
    func paymentPage() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.paypal, "12.50"))
            #expect(result.preparation.parameters["payment_page_url"] != nil)
            #expect(result.status == .paid)
        }
    }
}
