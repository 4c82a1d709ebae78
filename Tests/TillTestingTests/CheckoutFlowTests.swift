import Foundation
import Testing
import Till
import TillOrchestration
import TillTesting

/// Lets a fake gateway deliver to a backend created after it.
actor Relay {
    var backend: InMemoryMerchantBackend?
    func set(_ backend: InMemoryMerchantBackend) { self.backend = backend }
    func deliver(_ notification: IncomingNotification) async { await backend?.receive(notification) }
}

struct Harness {
    let gateway: FakeGateway
    let backend: InMemoryMerchantBackend
    let returns: ReturnURLHandler
    let app: AppCheckout

    init(_ behavior: FakeBehavior, choice: SimulatedCustomer.Choice = .pay, timing: FakeNotificationTiming = .immediate,
         returnTimeout: Duration = .seconds(2), flow: FakeFlow = .card,
         presenter: (@Sendable (FakeGateway, ReturnURLHandler) -> any CheckoutPresenter)? = nil) async throws {
        let relay = Relay()
        gateway = FakeGateway(script: [behavior], notificationTiming: timing, flow: flow) { await relay.deliver($0) }
        backend = try InMemoryMerchantBackend(gateway: gateway)
        await relay.set(backend)
        returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let ui = presenter?(gateway, returns) ?? SimulatedCustomer(gateway: gateway, returns: returns, choice: choice)
        app = AppCheckout(backend: backend, gateways: [gateway], returns: returns, presenter: ui,
                          returnTimeout: returnTimeout, confirmationTimeout: .milliseconds(600), confirmationInterval: .milliseconds(10))
    }

    static func intent(_ method: PaymentMethod = .card, reference: String = "order-1") -> PaymentIntent {
        PaymentIntent(merchantReference: reference, amount: Money(minorUnits: 2500, currency: Currency.lookup("USD")!), method: method)
    }
}

@Suite("Checkout flow: Prepare → Present → Return → Confirm")
struct CheckoutFlowTests {
    @Test("card, approved: paid, charged once")
    func cardApproved() async throws {
        let h = try await Harness(.approve)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.status == .paid)
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(await h.gateway.ledger.charges.count == 1)
        #expect(!result.customerMayHaveAuthenticated)
    }

    @Test("card, declined: failed with the gateway's code, nothing charged")
    func cardDeclined() async throws {
        let h = try await Harness(.hardDecline(code: "14005"))
        let result = try await h.app.pay(Harness.intent())
        #expect(result.status == .failed)
        #expect(result.confirmed?.gatewayCode == "14005")
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("the customer closes the form: cancelled on the client, nothing charged")
    func formClosed() async throws {
        let h = try await Harness(.approve, choice: .closeForm)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.clientOutcome.kind == .cancelled)
        #expect(result.status == .pending)
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("wallet hand-off: the return wakes the checkout, the notification makes it paid")
    func walletReturn() async throws {
        let h = try await Harness(.walletHandoff)
        let result = try await h.app.pay(Harness.intent(.wechatPay))
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(result.status == .paid)
        #expect(result.customerMayHaveAuthenticated)
        #expect(h.returns.pendingCount == 0)
    }

    @Test("wallet hand-off, no return: the notification alone settles the payment")
    func walletNoReturn() async throws {
        let h = try await Harness(.walletHandoff, choice: .payAndVanish, returnTimeout: .milliseconds(100))
        let result = try await h.app.pay(Harness.intent(.wechatPay))
        #expect(result.clientOutcome.kind == .unknown)
        #expect(result.status == .paid)
    }

    @Test("a return that claims success never completes a payment by itself")
    func returnIsNotConfirmation() async throws {
        let h = try await Harness(.walletHandoff, timing: .never, presenter: { gateway, returns in
            SuccessClaimingWallet(gateway: gateway, returns: returns)
        })
        let result = try await h.app.pay(Harness.intent(.alipay))
        #expect(result.clientOutcome.kind == .succeeded)   // what the URL said
        #expect(result.status == .pending)                 // what the server knows
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("duplicate notifications are applied once")
    func duplicates() async throws {
        let h = try await Harness(.approve, timing: .duplicate(count: 4))
        let result = try await h.app.pay(Harness.intent())
        #expect(result.status == .paid)
        let receipts = h.backend.receipts
        #expect(receipts.filter { $0 == .applied(.paid) }.count == 1)
        #expect(receipts.filter { $0 == .duplicate }.count == 3)
    }

    @Test("a late failure notification never turns a paid payment back")
    func lateFailure() async throws {
        let h = try await Harness(.approve)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.status == .paid)
        let late = StatusReport(gateway: "fake", attempt: result.preparation.attempt, status: .failed, eventID: "late-fail")
        let ack = await h.backend.receive(h.gateway.signedNotification(for: late))
        #expect(ack != nil)   // acknowledged (stored), but not applied
        #expect(try await h.backend.status(of: result.preparation.attempt)?.status == .paid)
        if case .stale = h.backend.receipts.last {} else { Issue.record("expected a stale receipt") }
    }

    @Test("tampered and unsigned notifications are rejected and change nothing")
    func tampered() async throws {
        let h = try await Harness(.pending)
        let result = try await h.app.pay(Harness.intent())
        let attempt = result.preparation.attempt
        // A genuine "failed" notification whose body is edited to say "paid", signature kept.
        var forged = h.gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: attempt, status: .failed, eventID: "e1"))
        let edited = String(decoding: forged.body, as: UTF8.self).replacingOccurrences(of: #""status":"failed""#, with: #""status":"paid""#)
        #expect(edited.contains(#""status":"paid""#))
        forged.body = Data(edited.utf8)
        #expect(await h.backend.receive(forged) == nil)
        var unsigned = h.gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: attempt, status: .paid))
        unsigned.headers["x-fake-signature"] = nil
        #expect(await h.backend.receive(unsigned) == nil)
        var garbage = unsigned
        garbage.headers["x-fake-signature"] = "zz"
        #expect(await h.backend.receive(garbage) == nil)
        #expect(try await h.backend.status(of: attempt)?.status == .pending)
    }

    @Test("timeout before sending: unavailable, nothing charged")
    func timeoutBeforeSending() async throws {
        let h = try await Harness(.timeoutBeforeSending)
        let error = await #expect(throws: CheckoutError.self) { try await h.app.pay(Harness.intent()) }
        #expect(error?.category == .unavailable)
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("timeout after charging: the app is told the outcome is unknown (pending), and inquiry finds it paid")
    func timeoutAfterCharging() async throws {
        let h = try await Harness(.timeoutAfterCharging, timing: .never)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.clientOutcome.kind == .unknown)
        #expect(result.status == .pending)       // never failed: money may have moved
        let attempt = try #require(await h.gateway.ledger.records.keys.first)
        #expect(try await h.backend.inquire(attempt)?.status == .paid)
        #expect(await h.gateway.ledger.charges.count == 1)
    }

    @Test("late notification after the customer is back")
    func lateNotification() async throws {
        let h = try await Harness(.walletHandoff, timing: .late(.milliseconds(150)))
        let result = try await h.app.pay(Harness.intent(.wechatPay))
        #expect(result.status == .paid)
    }

    @Test("an invalid intent is refused before anything is sent")
    func invalidIntent() async throws {
        let h = try await Harness(.approve)
        var intent = Harness.intent()
        intent.merchantReference = ""
        let error = await #expect(throws: CheckoutError.self) { try await h.app.pay(intent) }
        #expect(error?.field == "intent.merchantReference")
        #expect(await h.gateway.ledger.records.isEmpty)
    }
}

/// A "wallet" that returns the customer to the app with `result=success` without paying.
struct SuccessClaimingWallet: CheckoutPresenter {
    let gateway: FakeGateway
    let returns: ReturnURLHandler
    func open(_ url: URL, handoff: Handoff) async throws {
        let attempt = AttemptReference(rawValue: URLComponents(url: url, resolvingAgainstBaseURL: false)!
            .queryItems!.first { $0.name == "attempt" }!.value!)
        let returnURL = try #require(await gateway.ledger.records[attempt]?.returnURL)
        let back = URL(string: returnURL.absoluteString + "&result=success")!
        Task {
            try await Task.sleep(for: .milliseconds(10))
            #expect(returns.handle(back))
        }
    }
    func launch(_ wallet: WalletLaunch) async throws -> SDKResult? { nil }
    func collect(_ form: FormSpec) async throws -> FormValues? { nil }
}

@Suite("Recording transport")
struct RecordingTransportTests {
    @Test("answers from its script and fails on unexpected requests")
    func script() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/charges", respond: TransportResponse(statusCode: 200, body: Data("{}".utf8)))
        transport.expect(.get, path: "/v1/transactions/1", fail: TransportError(.timedOut, "scripted"))
        let ok = try await transport.send(TransportRequest(method: .post, url: URL(string: "https://gw.invalid/v1/charges")!))
        #expect(ok.statusCode == 200)
        await #expect(throws: TransportError.self) {
            try await transport.send(TransportRequest(url: URL(string: "https://gw.invalid/v1/transactions/1")!))
        }
        await #expect(throws: TransportError.self) {
            try await transport.send(TransportRequest(url: URL(string: "https://gw.invalid/v1/refunds")!))
        }
        #expect(transport.requests.count == 3)
        #expect(transport.unexpectedRequests.map(\.url.path) == ["/v1/refunds"])
        #expect(throws: RecordingTransport.VerificationFailure.self) { try transport.verify() }
    }

    @Test("verify fails when an expectation was not used")
    func unused() {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/x", respond: TransportResponse(statusCode: 200))
        #expect(throws: RecordingTransport.VerificationFailure.self) { try transport.verify() }
    }
}

/// Records what the app asks of the server, over an in-memory backend.
actor BackendCalls {
    var returnURLs: [[URL]] = []
    var inquiries: [AttemptReference] = []
    func prepared(_ urls: [URL]) { returnURLs.append(urls) }
    func inquired(_ attempt: AttemptReference) { inquiries.append(attempt) }
}

struct ObservedBackend: MerchantBackend {
    let inner: InMemoryMerchantBackend
    let calls: BackendCalls
    func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        await calls.prepared(returnURLs)
        return try await inner.prepare(intent, returnURLs: returnURLs)
    }
    func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws { try await inner.report(outcome, for: attempt) }
    func status(of attempt: AttemptReference) async throws -> StatusReport? { try await inner.status(of: attempt) }
    func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        await calls.inquired(attempt)
        return try await inner.status(of: attempt)
    }
}

@Suite("Return routes and the inquiry after a return")
struct ReturnRouteSelectionTests {
    func checkout(_ behavior: FakeBehavior, calls: BackendCalls) async throws -> (AppCheckout, ReturnURLHandler) {
        let relay = Relay()
        let gateway = FakeGateway(script: [behavior]) { await relay.deliver($0) }
        let backend = try InMemoryMerchantBackend(gateway: gateway)
        await relay.set(backend)
        let returns = try ReturnURLHandler(routes: [.customScheme("shop"), .universalLink(host: "shop.example.com", path: "/till/return")])
        let app = AppCheckout(backend: ObservedBackend(inner: backend, calls: calls), gateways: [gateway], returns: returns,
                              presenter: SimulatedCustomer(gateway: gateway, returns: returns, choice: .pay),
                              returnTimeout: .seconds(2), confirmationTimeout: .milliseconds(600), confirmationInterval: .milliseconds(10))
        return (app, returns)
    }

    @Test("the app offers one return URL per route, all with one state; the gateway (here: the first) picks")
    func everyRouteOffered() async throws {
        let calls = BackendCalls()
        let (wallet, _) = try await checkout(.walletHandoff, calls: calls)
        let result = try await wallet.pay(Harness.intent(.wechatPay))
        let offered = try #require(await calls.returnURLs.first)
        #expect(offered.map(\.scheme) == ["shop", "https"])
        #expect(Set(offered.map { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.query }).count == 1)
        #expect(result.preparation.returnURL == offered[0])
        #expect(result.status == .paid)
    }

    @Test("after the customer comes back from a wallet the app asks the server to inquire; a form checkout does not")
    func inquiryAfterReturn() async throws {
        let calls = BackendCalls()
        let (wallet, _) = try await checkout(.walletHandoff, calls: calls)
        let result = try await wallet.pay(Harness.intent(.alipay))
        #expect(await calls.inquiries == [result.preparation.attempt])

        let formCalls = BackendCalls()
        let (card, _) = try await checkout(.approve, calls: formCalls)
        _ = try await card.pay(Harness.intent(.card))
        #expect(await formCalls.inquiries.isEmpty)
    }
}
