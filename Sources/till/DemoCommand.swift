import ArgumentParser
import Foundation
import Till
import TillTesting

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run checkouts end to end on embedded defaults and narrate each step.",
        discussion: """
            Everything runs in this process: an app (AppCheckout with its return handler), a merchant \
            backend that verifies notifications, and a scriptable fake gateway that keeps a ledger of what \
            it charged. Nothing touches the network.
            """)

    func run() async throws {
        let usd = try Currency(code: "USD")
        var failures = 0

        func intent(_ reference: String, _ method: PaymentMethod, _ amount: String) throws -> PaymentIntent {
            PaymentIntent(merchantReference: reference, amount: try Money(decimal: amount, currency: usd),
                          country: try CountryCode("US"), method: method,
                          customer: Customer(email: "buyer@example.com"), description: "Till demo order")
        }

        func scenario(_ title: String, behavior: FakeBehavior, choice: SimulatedCustomer.Choice,
                      timing: FakeNotificationTiming = .immediate, expect: PaymentStatus,
                      intent: PaymentIntent) async throws {
            print("\n▶ \(title)")
            let returns = try ReturnURLHandler(routes: [.customScheme("tilldemo"),
                                                        .universalLink(host: "shop.example.com", path: "/till/return")])
            let box = BackendBox()
            let gateway = FakeGateway(script: [behavior], notificationTiming: timing) { notification in
                let ack = await box.backend?.receive(notification)
                print("  gateway → server: notification \(ack == nil ? "rejected" : "acknowledged (\(ack!.statusCode))")")
            }
            let backend = InMemoryMerchantBackend(gateway: gateway)
            await box.set(backend)
            let customer = NarratingCustomer(inner: SimulatedCustomer(gateway: gateway, returns: returns, choice: choice))
            let app = AppCheckout(backend: backend, gateways: [gateway], returns: returns, presenter: customer,
                                  returnTimeout: .milliseconds(300), confirmationTimeout: .seconds(2),
                                  confirmationInterval: .milliseconds(20))
            print("  app: pay \(intent.amount) by \(intent.method) for order \(intent.merchantReference)")
            let result = try await app.pay(intent)
            print("  server: prepared attempt \(result.preparation.attempt) on gateway \(result.preparation.gateway)")
            print("  app: client outcome \(result.clientOutcome.kind.rawValue) (informational)")
            let charged = await gateway.ledger.charges.count
            let verdict = result.status == expect ? "✓" : "✗ expected \(expect)"
            if result.status != expect { failures += 1 }
            print("  server: authoritative status \(result.status) — gateway ledger holds \(charged) charge(s) \(verdict)")
        }

        print("Till demo — Prepare → Present → Return → Confirm against the fake gateway")
        try await scenario("Card payment, approved", behavior: .approve, choice: .pay, expect: .paid,
                           intent: intent("order-1001", .card, "25.00"))
        try await scenario("Card payment, hard decline", behavior: .hardDecline(), choice: .pay, expect: .failed,
                           intent: intent("order-1002", .card, "25.00"))
        try await scenario("Wallet hand-off, customer returns through the URL scheme", behavior: .walletHandoff,
                           choice: .pay, expect: .paid, intent: intent("order-1003", .wechatPay, "9.99"))
        try await scenario("Wallet hand-off, customer cancels in the wallet", behavior: .walletHandoff,
                           choice: .cancel, expect: .cancelled, intent: intent("order-1004", .alipay, "9.99"))
        try await scenario("Wallet hand-off, customer never comes back; the notification alone settles it",
                           behavior: .walletHandoff, choice: .payAndVanish, expect: .paid,
                           intent: intent("order-1005", .wechatPay, "12.50"))
        try await scenario("Duplicate notifications are applied once", behavior: .approve, choice: .pay,
                           timing: .duplicate(count: 3), expect: .paid, intent: intent("order-1006", .card, "1.00"))

        try await cascadeScenarios(usd: usd, failures: &failures)

        print("\n▶ A forged return URL is ignored")
        let returns = try ReturnURLHandler(routes: [.customScheme("tilldemo")])
        let expected = try returns.expectReturn()
        let forged = URL(string: "tilldemo://till/return?till_state=forged")!
        print("  handle(\(forged)) → \(returns.handle(forged))")
        print("  handle(real return) → \(returns.handle(expected.url))")
        print("  handle(same URL again, a replay) → \(returns.handle(expected.url))")

        print(failures == 0 ? "\nAll demo checkouts ended as expected." : "\n\(failures) demo checkout(s) did not end as expected.")
        if failures > 0 { throw ExitCode.failure }
    }
}

extension DemoCommand {
    /// The router and cascade over three fake gateways.
    func cascadeScenarios(usd: Currency, failures: inout Int) async throws {
        let ids: [GatewayID] = ["primary", "backup", "spare"]
        let merchant = MerchantConfiguration(
            id: "demo", gateways: ids.map { GatewayConfiguration(id: $0, module: "fake") },
            routing: RoutingConfiguration(fallback: ids),
            retry: RetryPolicy(maxAttempts: 3, inquiryAttempts: 2, inquiryIntervalMillis: 500))
        let router = try Router(merchant: merchant, modules: ["fake": FakeGateway().capabilities])

        func run(_ title: String, _ scripts: [[FakeBehavior]], expect: String) async throws {
            print("\n▶ \(title)")
            let clock = VirtualClock()
            let gateways = zip(ids, scripts).map { FakeGateway(id: $0, script: $1) }
            let engine = CascadeEngine(router: router, gateways: gateways, clock: clock)
            var generator = SeededGenerator(seed: 7)
            let intent = PaymentIntent(merchantReference: "order-2001", amount: Money(minorUnits: 4200, currency: usd), method: .card)
            let result = await engine.run(intent, runner: FakeAttemptRunner(clock: clock), generator: &generator)
            for event in result.events { print("  \(event)") }
            var charged = 0
            for gateway in gateways { charged += await gateway.ledger.charges.count }
            let outcome: String = switch result.outcome {
            case .succeeded(let report): "paid on \(report.gateway)"
            case .failed(let error): "failed (\(error.code))"
            case .needsCustomer: "back to the customer"
            case .unresolved: "unresolved"
            }
            let ok = outcome == expect && charged <= 1
            if !ok { failures += 1 }
            print("  result: \(outcome), \(charged) charge(s) across all gateways \(ok ? "✓" : "✗ expected \(expect)")")
        }

        try await run("Router: a retryable decline on the primary cascades to the backup",
                      [[.softDecline()], [.approve], [.approve]], expect: "paid on backup")
        try await run("Router: the primary is unreachable (never sent), so the backup is tried",
                      [[.timeoutBeforeSending], [.approve], [.approve]], expect: "paid on backup")
        try await run("Router: a timeout after charging is inquired, never retried elsewhere",
                      [[.timeoutAfterCharging], [.approve], [.approve]], expect: "paid on primary")
        try await run("Router: a hard decline stops the cascade",
                      [[.hardDecline()], [.approve], [.approve]], expect: "failed (declined)")
    }
}

/// Lets the fake gateway deliver to a backend created after it.
actor BackendBox {
    private(set) var backend: InMemoryMerchantBackend?
    func set(_ backend: InMemoryMerchantBackend) { self.backend = backend }
}

/// Prints what the customer is asked to do, then lets the simulated customer do it.
struct NarratingCustomer: CheckoutPresenter {
    let inner: SimulatedCustomer

    func open(_ url: URL, handoff: Handoff) async throws {
        print("  app: open \(handoff.rawValue) \(url.host ?? "")\(url.path); waiting for the return")
        try await inner.open(url, handoff: handoff)
    }

    func launch(_ wallet: WalletLaunch) async throws {
        print("  app: launch \(wallet.wallet)")
        try await inner.launch(wallet)
    }

    func collect(_ form: FormSpec) async throws -> FormValues? {
        let values = try await inner.collect(form)
        print("  app: card form [\(form.fields.map(\.id).joined(separator: ", "))] → \(values.map { String(describing: $0) } ?? "closed")")
        return values
    }
}
