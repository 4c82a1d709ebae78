import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillCitconServer
import TillGatewayKit
import TillSandbox
@testable import TillServer

@Suite("Citcon end to end: app → merchant server → sandbox → wallet / H5 → return URL → inquiry, and IPN → server", .serialized)
struct CitconEndToEndTests {
    static let apiKey = "citcon-e2e-key"
    static let apiSecret = "citcon-e2e-secret"

    struct World {
        let emulator: CitconEmulator
        let sandbox: RunningSandbox
        let server: Task<Void, any Error>
        let serverURL: URL
        let store: any PaymentStore
        let returns: ReturnURLHandler
        let backend: ClientSecretBackend
        let appGateway: CitconGateway
        let serverGateway: CitconServer
        /// What the server sent Citcon.
        var sent = SentRequests()
        /// The merchant's backend on the server's API.
        var merchant: MerchantHTTP { MerchantHTTP(baseURL: serverURL, apiKey: "e2e-app-key-0123456789") }

        func checkout(_ customer: SandboxCitconCustomer, returnTimeout: Duration = .seconds(5)) -> AppCheckout {
            AppCheckout(backend: backend, gateways: [appGateway], returns: returns, presenter: customer,
                        returnTimeout: returnTimeout, confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(25))
        }

        func customer(_ method: PaymentMethod, outcome: SandboxCitconCustomer.Choice = .complete, comesBack: Bool = true,
                      actsAfter: Duration? = nil) -> SandboxCitconCustomer {
            SandboxCitconCustomer(sandbox: sandbox.baseURL, method: method, returns: returns, choice: outcome, comesBack: comesBack,
                                  actsAfter: actsAfter)
        }

        /// Delivers every IPN still held or under way while the server still listens (a connection
        /// accepted by a server that is shutting down is torn down mid-write), then stops the
        /// sandbox, the server and the store.
        func stop() async {
            await emulator.releaseIPNs()
            await emulator.waitForNotifications()
            await sandbox.stop()
            server.cancel()
            _ = await server.result
            try? await store.close()
        }

        /// The server's stored notifications for an attempt.
        func storedNotifications(_ attempt: AttemptReference) async throws -> Int {
            try await store.notificationCount(attempt: attempt)
        }

        /// What the server has recorded as refunded on an attempt.
        func refundedMinorUnits(_ attempt: AttemptReference) async throws -> Int64? {
            try await store.payment(attempt: attempt)?.attempts.first { $0.reference == attempt }?.refundedMinorUnits
        }
    }

    func world(ipnFormat: CitconEmulator.Merchant.IPNFormat = .form) async throws -> World {
        let emulator = CitconEmulator(merchants: [.init(apiKey: Self.apiKey, apiSecret: Self.apiSecret, ipnFormat: ipnFormat)],
                                      ipnRetryInterval: .milliseconds(50))
        let sandbox = try await Sandbox.start(payFort: PayFortEmulator(merchants: []), citcon: emulator)
        let base = sandbox.citconBaseURL
        let port = try #require(LoopbackPort.reserve())
        let serverURL = URL(string: "http://127.0.0.1:\(port)")!
        // The module as the server loads it, pointed at the sandbox through its settings.
        let plugin = CitconPlugin.plugin
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "e2e", apiKey: CredentialReference(env: "KEY"),
                gateways: [GatewayConfiguration(id: "citcon", module: "citcon",
                                                credentials: ["api_key": CredentialReference(env: "CITCON_KEY"),
                                                              "api_secret": CredentialReference(env: "CITCON_SECRET")],
                                                settings: ["base_url": base.absoluteString])],
                routing: RoutingConfiguration(fallback: ["citcon"]), returnURLSchemes: ["shop"])],
            server: ServerSettings(listen: "127.0.0.1:\(port)", storage: "sqlite:unused", publicURL: serverURL.absoluteString))
        let sent = SentRequests()
        let state = try ServerState(configuration: configuration, plugins: [plugin],
                                    environment: ["KEY": "e2e-app-key-0123456789", "CITCON_KEY": Self.apiKey, "CITCON_SECRET": Self.apiSecret],
                                    transport: { sent.transport($0) })
        let store = try await StoreKind.sqlite.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        #expect(await iterator.next() == port)
        let returns = try ReturnURLHandler(routes: [.customScheme("shop"), .universalLink(host: "shop.example.com", path: "/till/return")])
        return World(emulator: emulator, sandbox: sandbox, server: task, serverURL: serverURL, store: store, returns: returns,
                     backend: ClientSecretBackend(merchant: MerchantAPIClient(baseURL: serverURL, apiKey: "e2e-app-key-0123456789",
                                                                              transport: URLSessionTransport()),
                                                  transport: URLSessionTransport()),
                     appGateway: CitconGateway(environment: .custom(base), transport: URLSessionTransport()),   // the app: no credentials
                     serverGateway: CitconServer(environment: .custom(base),
                                                 credentials: CitconCredentials(apiKey: Self.apiKey, apiSecret: Self.apiSecret),
                                                 transport: URLSessionTransport()),
                     sent: sent)
    }

    /// Runs `body` in a fresh world, and stops the world (awaited) whether `body` succeeds or throws,
    /// so no server outlives its test.
    func withWorld(ipnFormat: CitconEmulator.Merchant.IPNFormat = .form, _ body: (World) async throws -> Void) async throws {
        let w = try await world(ipnFormat: ipnFormat)
        do {
            try await body(w)
        } catch {
            await w.stop()
            throw error
        }
        await w.stop()
    }

    func intent(_ method: PaymentMethod, _ reference: String, action: PaymentAction = .sale) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "\(reference)-\(UUID().uuidString.prefix(6))",
                      amount: try Money(decimal: "19.99", currency: Currency(code: "USD")), country: try CountryCode("US"),
                      method: method, action: action,
                      // consumer.reference: Citcon requires it for PayPal, Venmo and card.
                      customer: Customer(reference: "buyer-1", email: "buyer@example.com", firstName: "Ada", lastName: "Lovelace"),
                      description: "e2e \(method)")
    }

    @Test("the return arrives before the IPN: the inquiry settles it paid, the IPN then changes nothing",
          arguments: [PaymentMethod.wechatPay, .alipay, .unionPay, .card])
    func returnBeforeIPN(method: PaymentMethod) async throws {
        try await withWorld { w in
            await w.emulator.holdIPNs()
            let result = try await w.checkout(w.customer(method)).pay(try intent(method, "e2e-\(method)"))
            #expect(result.customerMayHaveAuthenticated)
            #expect(result.clientOutcome.kind == .succeeded)
            #expect(result.status == .paid, "settled by the inquiry after the return, with no IPN yet")
            #expect(try await w.storedNotifications(result.preparation.attempt) == 0)
            let ledger = await w.emulator.ledger
            #expect(ledger.count == 1)
            #expect(ledger.first?.reference == result.preparation.attempt.rawValue)
            // WeChat Pay returned through the universal link, the others through the scheme.
            #expect(result.preparation.returnURL?.scheme == (method == .wechatPay ? "https" : "shop"))

            await w.emulator.releaseIPNs()
            await w.emulator.waitForNotifications()
            let delivered = await w.emulator.notifications
            #expect(delivered.last?.acknowledged == true)
            #expect(try await w.storedNotifications(result.preparation.attempt) == 1)
            #expect(try await w.backend.status(of: result.preparation.attempt)?.status == .paid)
        }
    }

    @Test("the return never arrives: the app's inquiry after the wait settles it, or, if the customer pays later, the IPN alone")
    func noReturn() async throws {
        try await withWorld(ipnFormat: .json) { w in
            await w.emulator.holdIPNs()
            // The customer pays at once and never comes back; the wait must outlast the payment even on a loaded
            // machine (300 ms did not), since the one inquiry after it is what settles this checkout.
            let gone = try await w.checkout(w.customer(.alipay, comesBack: false), returnTimeout: .seconds(2))
                .pay(try intent(.alipay, "e2e-noreturn"))
            #expect(gone.clientOutcome.kind == .unknown)
            #expect(gone.status == .paid, "the inquiry after the return timed out found it paid")
            await w.emulator.releaseIPNs()

            // The customer lingers in the wallet and pays after the app stopped waiting and inquired ("pending").
            let late = try await w.checkout(w.customer(.alipay, comesBack: false, actsAfter: .milliseconds(600)), returnTimeout: .milliseconds(200))
                .pay(try intent(.alipay, "e2e-late"))
            #expect(late.status == .paid, "settled by the IPN alone")
            #expect(try await w.storedNotifications(late.preparation.attempt) == 1)
        }
    }

    @Test("the customer cancels in Alipay (6001): cancelled, nothing charged")
    func cancelled() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(.alipay, outcome: .cancel)).pay(try intent(.alipay, "e2e-cancel"))
            #expect(result.clientOutcome.kind == .cancelled)
            #expect(result.clientOutcome.gatewayCode == "6001")
            #expect(result.status == .cancelled)
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("a failed H5 payment fails; nothing charged")
    func failed() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(.paypal, outcome: .fail)).pay(try intent(.paypal, "e2e-fail"))
            #expect(result.clientOutcome.kind == .failed)
            #expect(result.status == .failed)
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("a forged return URL never marks a payment paid")
    func forgedReturn() async throws {
        try await withWorld { w in
            // The customer opens the wallet and never pays. A "success" URL arrives: first with a made-up
            // state (ignored), then — as if another app learnt the real state — with the attempt's own.
            struct Forger: CheckoutPresenter {
                let returns: ReturnURLHandler
                let state: @Sendable () -> String?
                func collect(_ form: FormSpec) async throws -> FormValues? { nil }
                func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
                    forge()
                    return nil
                }
                func open(_ url: URL, handoff: Handoff) async throws { forge() }
                func forge() {
                    let made = URL(string: "shop://till/return?till_state=guessed&citcon_result=success&code=0")!
                    precondition(!returns.handle(made), "a made-up state was accepted")
                    if let state = state() { returns.handle(URL(string: "shop://till/return?till_state=\(state)&citcon_result=success&code=0")!) }
                }
            }
            let box = StateBox()
            let spy = SpyingBackend(inner: w.backend, box: box)
            let checkout = AppCheckout(backend: spy, gateways: [w.appGateway], returns: w.returns,
                                       presenter: Forger(returns: w.returns, state: { box.state }),
                                       returnTimeout: .seconds(5), confirmationTimeout: .milliseconds(300), confirmationInterval: .milliseconds(25))
            let result = try await checkout.pay(try intent(.alipay, "e2e-forged"))
            #expect(result.clientOutcome.kind == .succeeded, "the forged URL said success…")
            #expect(result.status != .paid, "…but only Citcon's answer counts")
            #expect(try await w.backend.status(of: result.preparation.attempt)?.status == .pending)
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("IPNs: a replay is acknowledged and applied once; a tampered one is refused; a refund IPN moves the payment on")
    func replayTamperRefund() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(.wechatPay)).pay(try intent(.wechatPay, "e2e-replay"))
            #expect(result.status == .paid)
            await w.emulator.waitForNotifications()
            let attempt = result.preparation.attempt
            let chargeID = try #require(result.preparation.gatewayReference)
            #expect(try await w.storedNotifications(attempt) == 1)

            // Replay, byte for byte.
            let replay = await w.emulator.redeliver(ipnOf: chargeID)
            #expect(replay?.status == 200)
            #expect(try await w.storedNotifications(attempt) == 1)

            // Tampered: the recorded IPN with another amount, posted to the server directly.
            let original = try #require(await w.emulator.notifications.last { $0.transactionID == chargeID })
            let tampered = original.body.replacingOccurrences(of: "amount=1999", with: "amount=1")
            #expect(tampered != original.body)
            var request = URLRequest(url: w.serverURL.appendingPathComponent("v1/notifications/citcon"))
            request.httpMethod = "POST"
            request.setValue(original.contentType, forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(tampered.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 401)
            #expect(try await w.backend.status(of: attempt)?.status == .paid)

            // A partial refund with the server token; its IPN makes the server inquire, and the inquiry's running
            // total makes the payment partially refunded: 5.00 of 19.99.
            let refund = try await w.serverGateway.refund(transactionID: chargeID, reference: CitconServer.refundReference(for: attempt, sequence: 1),
                                                          amount: try Money(decimal: "5.00", currency: Currency(code: "USD")))
            #expect(refund.status == "succeeded")
            await w.emulator.waitForNotifications()
            var status = try await w.backend.status(of: attempt)?.status
            for _ in 0..<100 where status != .partiallyRefunded {
                try await Task.sleep(for: .milliseconds(20))
                status = try await w.backend.status(of: attempt)?.status
            }
            #expect(status == .partiallyRefunded)
            #expect(try await w.refundedMinorUnits(attempt) == 500)
            // A second refund of the same amount is a second refund, not a repeat of the first.
            _ = try await w.serverGateway.refund(transactionID: chargeID, reference: CitconServer.refundReference(for: attempt, sequence: 2),
                                                 amount: try Money(decimal: "5.00", currency: Currency(code: "USD")))
            await w.emulator.waitForNotifications()
            var refunded = try await w.refundedMinorUnits(attempt)
            for _ in 0..<100 where refunded != 1000 {
                try await Task.sleep(for: .milliseconds(20))
                refunded = try await w.refundedMinorUnits(attempt)
            }
            #expect(refunded == 1000)
            // A third refund whose IPN leaves amount_refunded empty, as the IPN document's own example does: nothing
            // in it can be booked, but the server inquires, and Citcon's total (13.00) is booked.
            await w.emulator.holdIPNs()
            _ = try await w.serverGateway.refund(transactionID: chargeID, reference: CitconServer.refundReference(for: attempt, sequence: 3),
                                                 amount: try Money(decimal: "3.00", currency: Currency(code: "USD")))
            var ipn = CitconIPNFields([("id", chargeID), ("transaction_type", "refund"), ("reference", attempt.rawValue), ("amount", "1999"),
                                       ("currency", "USD"), ("status", "success"), ("time_completed", "2026-11-27T10:00:00Z"),
                                       ("amount_refunded", ""),
                                       ("fields", "id,transaction_type,reference,amount,currency,status,time_completed,amount_refunded")])
            ipn = CitconIPNFields(ipn.names.map { ($0, ipn[$0]!) } + [("sign", try CitconSignature.sign(ipn, secret: Self.apiSecret))])
            var post = URLRequest(url: w.serverURL.appendingPathComponent("v1/notifications/citcon"))
            post.httpMethod = "POST"
            post.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            post.httpBody = Data(ipn.names.map { "\($0)=\(ipn[$0]!)" }.joined(separator: "&").utf8)
            let (_, posted) = try await URLSession.shared.data(for: post)
            #expect((posted as? HTTPURLResponse)?.statusCode == 200)
            refunded = try await w.refundedMinorUnits(attempt)
            for _ in 0..<100 where refunded != 1300 {
                try await Task.sleep(for: .milliseconds(20))
                refunded = try await w.refundedMinorUnits(attempt)
            }
            #expect(refunded == 1300)
        }
    }

    @Test("an app token cannot refund; the status stream follows the charge to its confirmation")
    func clientTokenAndStatusStream() async throws {
        try await withWorld { w in
            await w.emulator.holdIPNs()
            let result = try await w.checkout(w.customer(.unionPay)).pay(try intent(.unionPay, "e2e-stream"))
            var updates: [CitconStatusUpdate] = []
            for await update in w.appGateway.statusUpdates(for: result.preparation, interval: .milliseconds(20), timeout: .seconds(3)) {
                updates.append(update)
            }
            guard case .confirmed(let status)? = updates.last else { Issue.record("no confirmation: \(updates)"); return }
            #expect(status.status == .paid)
            #expect(status.reference == result.preparation.attempt.rawValue)

            // The client token the app holds may inquire, never refund.
            let token = try #require(result.preparation.parameters["access_token"])
            var request = URLRequest(url: w.sandbox.citconBaseURL.appendingPathComponent("refunds"))
            request.httpMethod = "POST"
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            // The recorded refund body (Tests/TillCitconTests/Fixtures/wire/refund-request.json): the charge by id.
            request.httpBody = Data(#"{"id":"\#(result.preparation.gatewayReference ?? "")","reference":"e2e-refund-1","amount":100}"#.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            // Citcon documents which permissions a client token has (inquiry and charge), not the HTTP status
            // of a refusal: 401 or 403, never a refund.
            #expect([401, 403].contains((response as? HTTPURLResponse)?.statusCode ?? 0))
            await w.emulator.releaseIPNs()
        }
    }
}

/// Shares the state of the attempt being prepared with the forger.
struct StateBox: Sendable {
    private let value = Locked<String?>(nil)
    var state: String? {
        get { value.withLock { $0 } }
        nonmutating set { value.withLock { $0 = newValue } }
    }
}

/// A backend that remembers the return URL's state as the app hands it to the server.
struct SpyingBackend: MerchantBackend {
    let inner: ClientSecretBackend
    let box: StateBox
    func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        // Every offered URL carries the same per-attempt state.
        box.state = returnURLs.first.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "till_state" }?.value }
        return try await inner.prepare(intent, returnURLs: returnURLs)
    }
    func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws { try await inner.report(outcome, for: attempt) }
    func status(of attempt: AttemptReference) async throws -> StatusReport? { try await inner.status(of: attempt) }
    func inquire(_ attempt: AttemptReference) async throws -> StatusReport? { try await inner.inquire(attempt) }
}
