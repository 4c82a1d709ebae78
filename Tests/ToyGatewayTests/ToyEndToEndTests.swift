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
import TillServer

/// The customer's browser on Toy Pay's payment page: loads it, makes a choice, and is sent back to the app.
struct ToyCustomer: CheckoutPresenter {
    /// `pay`, `decline` or `cancel`.
    let choice: String
    let returns: ReturnURLHandler

    func open(_ url: URL, handoff: Handoff) async throws {
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let (_, shown) = try await session.data(from: url)
        guard (shown as? HTTPURLResponse)?.statusCode == 200 else { return }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("choice=\(choice)".utf8)
        let (_, answer) = try await session.data(for: request)
        if let location = (answer as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location"), let back = URL(string: location) {
            returns.handle(back)
        }
    }

    func launch(_ wallet: WalletLaunch) async throws -> SDKResult? { nil }

    func collect(_ form: FormSpec) async throws -> FormValues? { nil }
}

/// Leaves redirects to the caller: the page's 303 goes to the app's URL scheme.
final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// Toy Pay's emulator, a real merchant server on SQLite, and the app's half, on 127.0.0.1.
struct ToyWorld {
    static let apiKey = "toy-e2e-merchant-api-key"
    static let keyID = "toy_key_e2e"
    static let secret = "toy_sk_e2e_secret"

    let emulator: ToyEmulator
    let sandbox: RunningSandbox
    let server: Task<Void, any Error>
    let serverURL: URL
    let store: any PaymentStore
    let returns: ReturnURLHandler
    /// The app's backend: each payment created by the merchant's backend, then reached with its client secret only.
    let backend: ClientSecretBackend
    /// The app's half, built as an app builds it: from settings, without credentials.
    let app: any GatewayAppHalf

    /// Runs `body` in a new world, and stops the world whatever happens.
    static func with(notifications: ToyEmulator.NotificationMode = .immediate, _ body: (ToyWorld) async throws -> Void) async throws {
        let world = try await start(notifications: notifications)
        do {
            try await body(world)
        } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    static func start(notifications: ToyEmulator.NotificationMode) async throws -> ToyWorld {
        let emulator = ToyEmulator(accounts: [.init(keyID: keyID, secret: secret)], notifications: notifications)
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let account = try #require(await sandbox.accounts().first)

        // The merchant server, configured from the sandbox account; secrets come from its environment.
        var environment = ["API_KEY": apiKey]
        var credentials: [String: CredentialReference] = [:]
        for (name, value) in account.credentials {
            environment["TOY_\(name.uppercased())"] = value
            credentials[name] = CredentialReference(env: "TOY_\(name.uppercased())")
        }
        let storage = "sqlite:" + FileManager.default.temporaryDirectory.appendingPathComponent("toy-\(UUID().uuidString).sqlite").path
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "toy-shop", apiKey: CredentialReference(env: "API_KEY"),
                gateways: [GatewayConfiguration(id: "toy", module: "toy", credentials: credentials, settings: account.settings)],
                routing: RoutingConfiguration(fallback: ["toy"]), retry: RetryPolicy(maxAttempts: 1), returnURLSchemes: ["shop"])],
            server: ServerSettings(listen: "127.0.0.1:0", storage: storage))
        let state = try ServerState(configuration: configuration, plugins: [ToyPlugin.plugin], environment: environment)
        let store = try openStore(storage)
        try await store.migrate()
        let (ports, port) = AsyncStream<Int>.makeStream()
        let application = try buildApplication(state: state, store: store) { port.yield($0) }
        let server = Task { try await application.runService() }
        var iterator = ports.makeAsyncIterator()
        let serverURL = URL(string: "http://127.0.0.1:\(try #require(await iterator.next()))")!
        // Port 0: the server's address is known only now, so the account's webhook is set now.
        await emulator.setWebhookURL(serverURL.appendingPathComponent("v1/notifications/toy"), keyID: keyID)

        let app = try ToyPlugin.plugin.makeAppHalf(GatewayPluginContext(
            id: "toy", settings: ModuleSettings(module: "toy", settings: account.settings, credentials: [:]),
            transport: URLSessionTransport()))
        return ToyWorld(emulator: emulator, sandbox: sandbox, server: server, serverURL: serverURL, store: store,
                        returns: try ReturnURLHandler(routes: [try .customScheme("shop")]),
                        backend: ClientSecretBackend(merchant: MerchantAPIClient(baseURL: serverURL, apiKey: apiKey, transport: URLSessionTransport()),
                                                     transport: URLSessionTransport()),
                        app: app)
    }

    func checkout(choice: String) -> AppCheckout {
        AppCheckout(backend: backend, gateways: [app], returns: returns, presenter: ToyCustomer(choice: choice, returns: returns),
                    returnTimeout: .seconds(10), confirmationTimeout: .seconds(10), confirmationInterval: .milliseconds(25))
    }

    func stop() async {
        server.cancel()
        _ = await server.result
        await sandbox.stop()
        try? await store.close()
    }

    /// Posts a notification to the merchant server as Toy Pay would; answers the HTTP status.
    func notify(body: Data, signature: String?) async throws -> Int {
        var request = URLRequest(url: serverURL.appendingPathComponent("v1/notifications/toy"))
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let signature { request.setValue(signature, forHTTPHeaderField: "Toy-Signature") }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}

func toyIntent(_ reference: String, minor: Int64 = 2500) throws -> PaymentIntent {
    PaymentIntent(merchantReference: reference, amount: Money(minorUnits: minor, currency: try Currency(code: "USD")), method: .card)
}

@Suite("Toy gateway end to end: app → merchant server → Toy Pay emulator → notification → merchant server", .serialized)
struct ToyEndToEndTests {

    @Test("Prepare → Present (web page) → Return → Confirm: the verified notification makes the payment paid")
    func paidByNotification() async throws {
        try await ToyWorld.with(notifications: .immediate) { world in
            let result = try await world.checkout(choice: "pay").pay(try toyIntent("toy-paid"))
            let attempt = result.preparation.attempt
            #expect(result.preparation.gateway == "toy")
            #expect(result.customerMayHaveAuthenticated)
            #expect(result.clientOutcome == ClientOutcome(.succeeded, gatewayCode: "paid"))
            #expect(result.status == .paid)
            #expect(result.confirmed?.amount == (try toyIntent("x")).amount)
            // The notification was verified and stored; the server needed no inquiry.
            #expect(try await world.store.notificationCount(attempt: attempt) == 1)
            #expect(await world.emulator.deliveries == [.init(order: "ord_1", status: "paid", httpStatus: 200)])
            #expect(await world.emulator.inquiries == 0)
            #expect(await world.emulator.ledger.map(\.reference) == [attempt.rawValue])
            #expect(world.returns.pendingCount == 0)
        }
    }

    @Test("Confirm by inquiry: with the notification held back, the server's inquiry makes it paid; the late notification changes nothing")
    func paidByInquiry() async throws {
        try await ToyWorld.with(notifications: .held) { world in
            let result = try await world.checkout(choice: "pay").pay(try toyIntent("toy-inquiry"))
            let attempt = result.preparation.attempt
            #expect(result.status == .paid)
            #expect(try await world.store.notificationCount(attempt: attempt) == 0)
            #expect(await world.emulator.inquiries >= 1)
            #expect(await world.emulator.deliveries.isEmpty)

            await world.emulator.releaseNotifications()
            #expect(await world.emulator.deliveries == [.init(order: "ord_1", status: "paid", httpStatus: 200)])
            #expect(try await world.store.notificationCount(attempt: attempt) == 1)
            #expect(try await world.backend.status(of: attempt)?.status == .paid)
        }
    }

    @Test("a decline on the page fails the payment; nothing is charged")
    func declined() async throws {
        try await ToyWorld.with { world in
            let result = try await world.checkout(choice: "decline").pay(try toyIntent("toy-declined"))
            #expect(result.clientOutcome.kind == .failed)
            #expect(result.status == .failed)
            #expect(await world.emulator.deliveries == [.init(order: "ord_1", status: "declined", httpStatus: 200)])
            #expect(await world.emulator.ledger.isEmpty)
        }
    }

    @Test("a forged, unsigned or tampered notification is refused with 401 and changes nothing")
    func forgedNotification() async throws {
        try await ToyWorld.with { world in
            let preparation = try await world.backend.prepare(try toyIntent("toy-forged"),
                                                              returnURLs: [URL(string: "shop://till/return?till_state=s")!])
            let attempt = preparation.attempt
            let body = Data(#"{"amount":2500,"currency":"USD","event":"evt_forged","order":"ord_1","reference":"\#(attempt.rawValue)","status":"paid"}"#.utf8)
            let forger = ToySignature(secret: "not-the-merchant-secret")
            #expect(try await world.notify(body: body, signature: forger.sign(body)) == 401)
            #expect(try await world.notify(body: body, signature: nil) == 401)
            // Signed by Toy Pay's key, then altered on the way.
            let genuine = Data(#"{"amount":2500,"currency":"USD","event":"evt_ord_1_cancelled","order":"ord_1","reference":"\#(attempt.rawValue)","status":"cancelled"}"#.utf8)
            let tampered = Data(String(decoding: genuine, as: UTF8.self).replacingOccurrences(of: "cancelled", with: "paid").utf8)
            #expect(try await world.notify(body: tampered, signature: ToySignature(secret: ToyWorld.secret).sign(genuine)) == 401)

            #expect(try await world.store.notificationCount(attempt: attempt) == 0)
            #expect(try await world.backend.status(of: attempt)?.status == .pending)
            #expect(await world.emulator.ledger.isEmpty)
        }
    }
}
