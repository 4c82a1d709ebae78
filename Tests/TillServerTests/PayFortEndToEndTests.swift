import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillGatewayKit
import TillPayFortServer
import TillSandbox
@testable import TillServer

/// A customer with a test card who, on the 3-D Secure page, approves or declines, then is sent back.
struct CardCustomer: CheckoutPresenter {
    let card: String
    let returns: ReturnURLHandler
    var threeDS = "approve"

    func collect(_ form: FormSpec) async throws -> FormValues? {
        FormValues(["card_number": card, "expiry": "12/30", "cvv": "123", "card_holder_name": "Test Customer"])
    }

    func launch(_ wallet: WalletLaunch) async throws -> SDKResult? { nil }

    func open(_ url: URL, handoff: Handoff) async throws {
        if let back = try await SandboxBrowser.completeThreeDSecure(at: url, approve: threeDS == "approve") { returns.handle(back) }
    }
}

@Suite("PayFort end to end: app → merchant server → sandbox → transaction feedback → merchant server", .serialized)
struct PayFortEndToEndTests {

    struct World {
        let emulator: PayFortEmulator
        let sandbox: RunningSandbox
        let server: Task<Void, any Error>
        let serverURL: URL
        let store: any PaymentStore
        let app: AppCheckout
        let returns: ReturnURLHandler

        func stop() async {
            server.cancel()
            _ = await server.result
            await sandbox.stop()
            try? await store.close()
        }
    }

    /// One PayFort merchant account per gateway id, each with its own phrases and feedback URL.
    static func account(_ id: GatewayID) -> PayFortMerchant {
        PayFortMerchant(accessCode: "AC\(id.rawValue.filter(\.isLetter))", merchantIdentifier: "MID\(id.rawValue.filter(\.isLetter))",
                        requestPhrase: "\(id)-request", responsePhrase: "\(id)-response")
    }

    func world(card: String, threeDS: String = "approve", gateways: [GatewayID] = ["payfort"], maxAttempts: Int = 1) async throws -> World {
        let accounts = gateways.map(Self.account)
        let emulator = PayFortEmulator(merchants: accounts, notificationRetry: (10, .milliseconds(50)))
        let sandbox = try await Sandbox.start(payFort: emulator)
        let base = sandbox.payFortBaseURL
        let apiKey = "e2e-api-key-\(UUID().uuidString)"
        var environment = ["KEY": apiKey]
        let names = ["access_code", "merchant_identifier", "request_phrase", "response_phrase"]
        for (id, account) in zip(gateways, accounts) {
            for (name, value) in zip(names, [account.accessCode, account.merchantIdentifier, account.requestPhrase, account.responsePhrase]) {
                environment["\(id.rawValue)_\(name)"] = value
            }
        }
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "e2e", apiKey: CredentialReference(env: "KEY"),
                gateways: gateways.map { id in
                    GatewayConfiguration(id: id, module: "payfort",
                                         credentials: Dictionary(uniqueKeysWithValues: names.map { ($0, CredentialReference(env: "\(id.rawValue)_\($0)")) }),
                                         settings: ["base_url": base.absoluteString])
                },
                routing: RoutingConfiguration(fallback: gateways))],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused", publicURL: "http://127.0.0.1"))
        // The merchant server builds each PayFort account's server half with the module's own plugin.
        let state = try ServerState(configuration: configuration, plugins: [PayFortPlugin.plugin], environment: environment)
        let store = try await StoreKind.sqlite.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        let serverURL = URL(string: "http://127.0.0.1:\(await iterator.next() ?? 0)")!
        for (id, account) in zip(gateways, accounts) {
            await emulator.setNotificationURL(serverURL.appendingPathComponent("v1/notifications/\(id.rawValue)"),
                                              merchantIdentifier: account.merchantIdentifier)
        }
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let checkout = AppCheckout(
            backend: HTTPMerchantBackend(baseURL: serverURL, apiKey: apiKey, transport: URLSessionTransport()),
            gateways: gateways.map { PayFortGateway(id: $0, environment: .custom(base), transport: URLSessionTransport()) },   // the app: no credentials
            returns: returns, presenter: CardCustomer(card: card, returns: returns, threeDS: threeDS),
            returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(25), maxAttempts: maxAttempts)
        return World(emulator: emulator, sandbox: sandbox, server: task, serverURL: serverURL, store: store, app: checkout, returns: returns)
    }

    func intent(_ reference: String, action: PaymentAction = .sale) throws -> PaymentIntent {
        PaymentIntent(merchantReference: reference, amount: try Money(decimal: "25.00", currency: Currency(code: "SAR")),
                      method: .card, action: action, customer: Customer(email: "buyer@example.com"),
                      metadata: ["device_id": "e2e-device"])
    }

    @Test("card purchase: the feedback settles it paid, charged once", arguments: [PaymentAction.sale, .authorize])
    func purchase(action: PaymentAction) async throws {
        let w = try await world(card: "4005550000000001")
        defer { Task { await w.stop() } }
        let result = try await w.app.pay(try intent("e2e-\(action.rawValue)", action: action))
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(result.status == (action == .sale ? .paid : .authorized))
        #expect(await w.emulator.ledger.count == 1)
        #expect(await w.emulator.ledger.first?.merchantReference == result.preparation.attempt.rawValue)
    }

    @Test("3-D Secure: the customer is sent to the bank page and back through the return URL")
    func threeDSecure() async throws {
        let w = try await world(card: "4000000000003220")
        defer { Task { await w.stop() } }
        let result = try await w.app.pay(try intent("e2e-3ds"))
        #expect(result.customerMayHaveAuthenticated)
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(result.status == .paid)
        #expect(w.returns.pendingCount == 0)
    }

    @Test("a declined card fails with PayFort's code; nothing charged")
    func declined() async throws {
        let w = try await world(card: "4000000000000002")
        defer { Task { await w.stop() } }
        let result = try await w.app.pay(try intent("e2e-decline"))
        #expect(result.clientOutcome.kind == .failed)
        #expect(result.status == .failed)
        #expect(result.confirmed?.gatewayCode == "13071")
        #expect(await w.emulator.ledger.isEmpty)
    }

    @Test("a technical problem at one PayFort account cascades to the next; a hard decline does not")
    func cascade() async throws {
        let w = try await world(card: "4005550000000001", gateways: ["payfort-a", "payfort-b"], maxAttempts: 3)
        defer { Task { await w.stop() } }
        await w.emulator.injectFault(.technicalProblem, matching: "PURCHASE")
        let result = try await w.app.pay(try intent("e2e-cascade"))
        #expect(result.status == .paid)
        #expect(result.attempts == 2)
        #expect(result.preparation.gateway == "payfort-b")
        #expect(await w.emulator.ledger.count == 1)

        let hard = try await world(card: "4000000000000002", gateways: ["payfort-a", "payfort-b"], maxAttempts: 3)
        defer { Task { await hard.stop() } }
        let declined = try await hard.app.pay(try intent("e2e-hard"))
        #expect(declined.status == .failed && declined.attempts == 1)
    }

    @Test("an uncertain answer that did charge is settled paid by the gateway's feedback")
    func uncertain() async throws {
        let w = try await world(card: "4000000000000010")
        defer { Task { await w.stop() } }
        let result = try await w.app.pay(try intent("e2e-uncertain"))
        #expect(result.clientOutcome.kind == .pending)
        #expect(result.status == .paid)
    }
}
