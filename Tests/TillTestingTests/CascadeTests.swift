import Foundation
import Testing
import Till
import TillTesting

/// Three fake gateways a → b → c, in that fallback order, on virtual time.
struct CascadeHarness {
    let clock = VirtualClock()
    let gateways: [FakeGateway]
    let engine: CascadeEngine
    let runner: FakeAttemptRunner

    init(_ scripts: [[FakeAttemptPlan]], retry: RetryPolicy = RetryPolicy(maxAttempts: 3, timeBudgetMillis: 60_000,
                                                                          inquiryAttempts: 3, inquiryIntervalMillis: 1_000),
         inquiry: Bool = true, wallet: PaymentStatus = .paid) throws {
        let ids: [GatewayID] = ["a", "b", "c"]
        gateways = ids.map { id in
            FakeGateway(id: id, capabilities: GatewayCapabilities(methods: [.card, .wechatPay], supportsInquiry: inquiry),
                        decisionTable: DecisionTable(["soft": .retryNext, "3ds": .stepUp]))
        }
        let merchant = MerchantConfiguration(
            id: "m", gateways: ids.map { GatewayConfiguration(id: $0, module: "fake") },
            routing: RoutingConfiguration(fallback: ids), retry: retry)
        let router = try GatewayRouter(merchant: merchant, modules: ["fake": GatewayCapabilities(methods: [.card, .wechatPay])])
        engine = CascadeEngine(router: router, gateways: gateways, clock: clock)
        runner = FakeAttemptRunner(clock: clock, walletResult: { _ in wallet })
        self.scripts = scripts
    }

    private let scripts: [[FakeAttemptPlan]]

    func run(_ method: PaymentMethod = .card) async -> CascadeResult {
        for (gateway, script) in zip(gateways, scripts) { await gateway.ledger.enqueue(script) }
        var generator = SeededGenerator(seed: 1)
        let intent = PaymentIntent(merchantReference: "o-1", amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!), method: method)
        return await engine.run(intent, runner: runner, generator: &generator)
    }

    func charges() async -> Int {
        var total = 0
        for gateway in gateways { total += await gateway.ledger.charges.count }
        return total
    }
}

extension CascadeOutcome {
    var isSucceeded: Bool { if case .succeeded = self { true } else { false } }
    var isFailed: Bool { if case .failed = self { true } else { false } }
    var isNeedsCustomer: Bool { if case .needsCustomer = self { true } else { false } }
    var isUnresolved: Bool { if case .unresolved = self { true } else { false } }
}

@Suite("Cascade engine: fallbacks without double charges")
struct CascadeTests {
    @Test("a retryable soft decline moves to the next gateway, with a new attempt reference")
    func softDecline() async throws {
        let h = try CascadeHarness([[.init(.softDecline())], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isSucceeded)
        #expect(result.attempts.map(\.gateway) == ["a", "b"])
        #expect(Set(result.attempts.map(\.reference)).count == 2)
        #expect(result.events.contains { $0.decision == "next gateway" && $0.reason.contains("retry_next") })
        #expect(await h.charges() == 1)
    }

    @Test("a hard decline stops")
    func hardDecline() async throws {
        let h = try CascadeHarness([[.init(.hardDecline())], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isFailed)
        #expect(result.attempts.count == 1)
        #expect(await h.charges() == 0)
    }

    @Test("a decline error in the hard category never cascades, whatever the table says")
    func hardCategory() async throws {
        struct HardRunner: AttemptRunner {
            func run(_ context: AttemptContext, on gateway: any CheckoutGateway) async -> AttemptOutcome {
                .error(CheckoutError(.declined, category: .declinedHard, message: "stolen card", gateway: gateway.gateway, gatewayCode: "soft"))
            }
        }
        let h = try CascadeHarness([])
        var generator = SeededGenerator(seed: 1)
        let intent = PaymentIntent(merchantReference: "o", amount: Money(minorUnits: 1, currency: Currency.lookup("USD")!), method: .card)
        let result = await h.engine.run(intent, runner: HardRunner(), generator: &generator)
        #expect(result.outcome.isFailed)
        #expect(result.attempts.count == 1)
        #expect(result.events.last?.reason.contains("hard decline") == true)
    }

    @Test("an unlisted decline code defaults to do-not-retry")
    func defaultNoRetry() async throws {
        let h = try CascadeHarness([[.init(.softDecline(code: "05"))], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isFailed)
        #expect(result.attempts.count == 1)
    }

    @Test("a merchant override makes a code retryable")
    func override() async throws {
        let h = try CascadeHarness([[.init(.softDecline(code: "05"))], [.init(.approve)]],
                                   retry: RetryPolicy(decisionOverrides: ["a": ["05": .retryNext]]))
        #expect(await h.run().outcome.isSucceeded)
    }

    @Test("a step-up code goes back to the app")
    func stepUp() async throws {
        let h = try CascadeHarness([[.init(.softDecline(code: "3ds"))], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isNeedsCustomer)
        #expect(result.attempts.count == 1)
    }

    @Test("a request that never left moves on")
    func neverSent() async throws {
        let h = try CascadeHarness([[.init(.timeoutBeforeSending)], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isSucceeded)
        #expect(result.attempts.map(\.gateway) == ["a", "b"])
        #expect(await h.charges() == 1)
    }

    @Test("timeout after charging: resolved by inquiry as paid; never retried elsewhere",
          arguments: [FakeBehavior.timeoutAfterCharging, .lostResponse, .serverError(charged: true)])
    func unknownButCharged(behavior: FakeBehavior) async throws {
        let h = try CascadeHarness([[.init(behavior, failingInquiries: 1)], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isSucceeded)
        #expect(result.attempts.count == 1)
        #expect(result.attempts[0].inquiries == 2)
        #expect(await h.charges() == 1)
    }

    @Test("an unknown outcome that inquiry cannot settle is left unresolved: nothing else is tried")
    func unresolvedAfterInquiry() async throws {
        let h = try CascadeHarness([[.init(.timeoutAfterCharging, failingInquiries: 10)], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isUnresolved)
        #expect(result.attempts.count == 1)
        #expect(await h.charges() == 1)   // only the first, which the server will settle later
    }

    @Test("a pending answer or a 5xx without a charge is never cascaded on",
          arguments: [FakeBehavior.pending, .serverError(charged: false)])
    func pending(behavior: FakeBehavior) async throws {
        let h = try CascadeHarness([[.init(behavior)], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isUnresolved)
        #expect(result.attempts.count == 1)
        #expect(await h.charges() == 0)
    }

    @Test("without inquiry support an unknown outcome stays unresolved")
    func noInquiry() async throws {
        let h = try CascadeHarness([[.init(.timeoutAfterCharging)], [.init(.approve)]], inquiry: false)
        let result = await h.run()
        #expect(result.outcome.isUnresolved)
        #expect(result.attempts.count == 1)
    }

    @Test("after the customer authenticated, a failure goes back to the app, never to the next gateway",
          arguments: [PaymentStatus.failed, .cancelled])
    func authenticated(walletResult: PaymentStatus) async throws {
        let h = try CascadeHarness([[.init(.walletHandoff)], [.init(.approve)]], wallet: walletResult)
        let result = await h.run(.wechatPay)
        #expect(!result.outcome.isSucceeded)
        #expect(result.attempts.count == 1)
        #expect(result.attempts[0].customerAuthenticated)
        if walletResult == .failed { #expect(result.outcome.isNeedsCustomer) }
        #expect(await h.charges() == 0)
    }

    @Test("after the customer paid in the wallet, a failed follow-up call is inquired — never cascaded",
          arguments: [TransportError.Kind.notSent, .timedOut, .connectionLost])
    func authenticatedThenCallFails(kind: TransportError.Kind) async throws {
        let h = try CascadeHarness([[.init(.walletHandoff, afterReturn: kind)], [.init(.approve)]], wallet: .paid)
        let result = await h.run(.wechatPay)
        #expect(result.outcome.isSucceeded)          // the inquiry found the wallet payment
        #expect(result.attempts.count == 1)
        #expect(await h.charges() == 1)
    }

    @Test("after the customer was declined in the wallet, a failed follow-up call ends with the customer, not the next gateway")
    func authenticatedDeclinedThenCallFails() async throws {
        let h = try CascadeHarness([[.init(.walletHandoff, afterReturn: .notSent)], [.init(.approve)]], wallet: .failed)
        let result = await h.run(.wechatPay)
        #expect(result.outcome.isNeedsCustomer)
        #expect(result.attempts.count == 1)
        #expect(await h.charges() == 0)
    }

    @Test("a paid report about another attempt or another amount is not success")
    func mismatchedReport() async throws {
        struct Liar: AttemptRunner {
            let amount: Int64
            let sameAttempt: Bool
            func run(_ context: AttemptContext, on gateway: any CheckoutGateway) async -> AttemptOutcome {
                .report(StatusReport(gateway: gateway.gateway, attempt: sameAttempt ? context.attempt : AttemptReference(rawValue: "other"),
                                     status: .paid, amount: Money(minorUnits: amount, currency: Currency.lookup("USD")!)))
            }
        }
        let h = try CascadeHarness([], inquiry: false)
        let intent = PaymentIntent(merchantReference: "o", amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!), method: .card)
        for liar in [Liar(amount: 1, sameAttempt: true), Liar(amount: 1000, sameAttempt: false)] {
            var generator = SeededGenerator(seed: 1)
            let result = await h.engine.run(intent, runner: liar, generator: &generator)
            #expect(result.outcome.isUnresolved)
            #expect(result.attempts.count == 1)
        }
    }

    @Test("a delayed request that inquiry cannot find yet is left unresolved, not cascaded")
    func delayed() async throws {
        let h = try CascadeHarness([[.init(.delayedCharge)], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isUnresolved)
        #expect(result.attempts.count == 1)
    }

    @Test("max attempts is respected")
    func maxAttempts() async throws {
        let h = try CascadeHarness([[.init(.softDecline())], [.init(.softDecline())], [.init(.approve)]],
                                   retry: RetryPolicy(maxAttempts: 2))
        let result = await h.run()
        #expect(result.outcome.isFailed)
        #expect(result.attempts.count == 2)
        #expect(result.events.contains { $0.reason.contains("max attempts") })
    }

    @Test("no new attempt starts after the time budget")
    func budget() async throws {
        let h = try CascadeHarness([[.init(.softDecline(), latency: .seconds(40))], [.init(.approve)]],
                                   retry: RetryPolicy(maxAttempts: 3, timeBudgetMillis: 30_000))
        let result = await h.run()
        #expect(result.outcome.isFailed)
        #expect(result.attempts.count == 1)
        #expect(result.events.contains { $0.reason.contains("time budget") })
    }

    @Test("invalid input stops: another gateway would not help")
    func invalidInput() async throws {
        struct BadInputRunner: AttemptRunner {
            func run(_ context: AttemptContext, on gateway: any CheckoutGateway) async -> AttemptOutcome {
                .error(CheckoutError(.fieldTooLong, field: "intent.description", message: "too long", gateway: gateway.gateway))
            }
        }
        let h = try CascadeHarness([])
        var generator = SeededGenerator(seed: 1)
        let intent = PaymentIntent(merchantReference: "o", amount: Money(minorUnits: 1, currency: Currency.lookup("USD")!), method: .card)
        let result = await h.engine.run(intent, runner: BadInputRunner(), generator: &generator)
        #expect(result.outcome.isFailed)
        #expect(result.attempts.count == 1)
    }

    @Test("no eligible gateway: a clear failure, nothing attempted")
    func noGateway() async throws {
        let h = try CascadeHarness([])
        let result = await h.run("toss")
        #expect(result.outcome == .failed(CheckoutError(.unsupportedMethod, message: "no configured gateway can take this payment")))
        #expect(result.attempts.isEmpty)
    }

    @Test("every attempt and decision is recorded; overhead is reported apart from gateway time")
    func recorded() async throws {
        let h = try CascadeHarness([[.init(.timeoutBeforeSending)], [.init(.softDecline())], [.init(.approve)]])
        let result = await h.run()
        #expect(result.outcome.isSucceeded)
        #expect(result.attempts.map(\.gateway) == ["a", "b", "c"])
        #expect(result.events.filter { $0.decision == "attempt" }.count == 3)
        #expect(result.events.allSatisfy { !$0.reason.isEmpty })
        #expect(result.orchestratorTime >= .zero && result.gatewayTime >= .zero)
    }
}

@Suite("Chaos run")
struct ChaosTests {
    @Test("no double charges and no lost payments", arguments: [(UInt64(1), 0.3), (2, 0.6), (3, 1.0), (4, 0.0)])
    func chaos(seed: UInt64, faultRate: Double) async throws {
        let report = try await ChaosRun.run(.init(checkouts: 400, seed: seed, faultRate: faultRate))
        #expect(report.doubleCharges == 0, "\(report.violations)")
        #expect(report.lostPayments == 0, "\(report.violations)")
        #expect(report.falseSuccesses == 0, "\(report.violations)")
        #expect(report.succeeded + report.failed + report.unresolved == 400)
        #expect(report.attempts >= 400)
        if faultRate == 0 { #expect(report.succeeded == 400) }
    }

    @Test("the same seed replays the same run")
    func deterministic() async throws {
        let first = try await ChaosRun.run(.init(checkouts: 200, seed: 9, faultRate: 0.5))
        let second = try await ChaosRun.run(.init(checkouts: 200, seed: 9, faultRate: 0.5))
        #expect(first == second)
    }
}
