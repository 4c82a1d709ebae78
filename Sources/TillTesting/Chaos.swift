import Foundation
import Till

/// Drives many checkouts through the router and cascade against fake gateways that keep a ledger of
/// what they really charged, injecting faults, then reconciles and counts what went wrong.
///
/// Faults per attempt (each with probability `faultRate`, one drawn uniformly): soft decline, hard
/// decline, refused connection, timeout before charging, timeout after charging, lost response,
/// 5xx with or without a charge, a slow answer, a pending answer, a wallet-side decline or cancel
/// after the customer authenticated. Per notification: deferred (late), duplicated, or never sent.
/// Per attempt: inquiries that time out before one succeeds.
public enum ChaosRun {
    public struct Options: Sendable {
        public var checkouts: Int
        public var seed: UInt64
        public var faultRate: Double
        public init(checkouts: Int, seed: UInt64, faultRate: Double) {
            self.checkouts = checkouts
            self.seed = seed
            self.faultRate = faultRate
        }
    }

    /// The figures of a run. `doubleCharges` and `lostPayments` must be 0.
    public struct Report: Sendable, Codable, Hashable {
        public var checkouts = 0
        public var succeeded = 0
        public var failed = 0
        public var unresolved = 0
        /// Checkouts charged by more than one attempt.
        public var doubleCharges = 0
        /// Checkouts charged by a gateway but not reported paid.
        public var lostPayments = 0
        public var attempts = 0
        /// Cascades that ended asking the customer (decline after authentication, step-up).
        public var askedCustomer = 0
        /// Cascades that ended unresolved and were settled later by notifications or inquiry.
        public var settledByReconciliation = 0
        public var notificationsApplied = 0
        public var notificationsDuplicate = 0
        public var notificationsStale = 0
        public var seed: UInt64 = 0
        public var faultRate = 0.0
        /// The cascade said "paid" for an attempt no gateway charged.
        public var falseSuccesses = 0
        /// The cascade said "failed" (or handed back to the customer) while an attempt was charged;
        /// counted in `lostPayments` too.
        public var reportedFailedButCharged = 0
        /// One line per violation, with every attempt's scripted behavior.
        public var violations: [String] = []
    }

    public static let gatewayIDs: [GatewayID] = ["alpha", "beta", "gamma", "delta"]

    /// The merchant the chaos run routes for: cards split 60/40 between alpha and beta, wallets on
    /// gamma, everything falling back through all four.
    public static func merchant() -> MerchantConfiguration {
        MerchantConfiguration(
            id: "chaos",
            gateways: gatewayIDs.map { GatewayConfiguration(id: $0, module: "fake") },
            routing: RoutingConfiguration(rules: [
                RoutingRule(name: "cards", when: RuleConditions(methods: [.card]),
                            gateways: [RuleTarget("alpha", weight: 60), RuleTarget("beta", weight: 40)]),
                RoutingRule(name: "wallets", when: RuleConditions(methods: [.wechatPay]), gateways: [RuleTarget("gamma")]),
            ], fallback: gatewayIDs),
            retry: RetryPolicy(maxAttempts: 3, timeBudgetMillis: 60_000, inquiryAttempts: 3, inquiryIntervalMillis: 2_000),
            health: HealthSettings(window: 50, minSamples: 20, minSuccessRate: 0.3, failureThreshold: 8, openMillis: 20_000))
    }

    public static func run(_ options: Options) async throws -> Report {
        let clock = VirtualClock()
        let store = ChaosStore()
        let gateways = gatewayIDs.map { id in
            FakeGateway(id: id, capabilities: GatewayCapabilities(methods: [.card, .wechatPay], actions: [.sale]),
                        decisionTable: DecisionTable(["soft": .retryNext]),
                        deliver: { await store.receive($0) })
        }
        await store.register(gateways)
        let router = try GatewayRouter(merchant: merchant(), modules: ["fake": GatewayCapabilities(methods: [.card, .wechatPay])])
        let engine = CascadeEngine(router: router, gateways: gateways, clock: clock)
        let faults = FaultDrawer(seed: options.seed &+ 1, rate: options.faultRate)
        let runner = ChaosRunner(inner: FakeAttemptRunner(clock: clock, walletResult: { faults.walletResult(for: $0) }),
                                 faults: faults, store: store)
        var generator = SeededGenerator(seed: options.seed)
        let usd = Currency.lookup("USD")!
        var report = Report()
        report.seed = options.seed
        report.faultRate = options.faultRate
        var unresolvedCheckouts: [Int] = []

        for index in 0..<options.checkouts {
            let method: PaymentMethod = generator.roll(5) == 0 ? .wechatPay : .card
            let amount = Money(minorUnits: Int64(generator.roll(100_000)) + 1, currency: usd)
            let intent = PaymentIntent(merchantReference: "chaos-\(index)", amount: amount, method: method)
            await store.open(index)
            let result = await engine.run(intent, runner: runner, generator: &generator)
            report.attempts += result.attempts.count
            // What the gateways answered during the cascade counts like any authoritative report.
            for attempt in result.attempts {
                if let status = attempt.status { await store.apply(status, to: attempt.reference) }
            }
            // What the cascade told the app must agree with what the gateways charged, right now.
            var chargedNow = 0
            for attempt in result.attempts {
                let gateway = gateways.first { $0.gateway == attempt.gateway }
                if await gateway?.ledger.isCharged(attempt.reference) == true { chargedNow += 1 }
            }
            switch result.outcome {
            case .succeeded(let paid):
                let gateway = gateways.first { $0.gateway == paid.gateway }
                if await gateway?.ledger.isCharged(paid.attempt) != true {
                    report.falseSuccesses += 1
                    report.violations.append("checkout \(index): the cascade reported \(paid.attempt) paid, but no gateway charged it")
                }
            case .failed, .needsCustomer:
                if case .needsCustomer = result.outcome { report.askedCustomer += 1 }
                if chargedNow > 0 {
                    report.reportedFailedButCharged += 1
                    report.violations.append("checkout \(index): the cascade reported failure while \(chargedNow) attempt(s) were charged")
                }
            case .unresolved: unresolvedCheckouts.append(index)
            }
            // Time passes between checkouts; late notifications trickle in.
            clock.advance(by: .milliseconds(Int64(generator.roll(2_000))))
            if index % 97 == 0 { await deliverOutboxes(gateways, store: store, generator: &generator) }
        }

        // Reconciliation, as the server's background job would do it: the gateways settle what they
        // still hold as pending, every withheld notification is finally delivered, and whatever is
        // still not final is inquired about until it answers.
        for gateway in gateways {
            let records = await gateway.ledger.records.sorted { $0.key.rawValue < $1.key.rawValue }
            // Pending attempts settle as paid: the worst case for a cascade that moved on too early.
            for (attempt, record) in records where record.status == .pending {
                _ = try? await gateway.settle(attempt, as: .paid, code: "settled")
            }
        }
        await deliverOutboxes(gateways, store: store, generator: &generator)
        for (attempt, gatewayID) in await store.openAttempts() {
            guard let gateway = gateways.first(where: { $0.gateway == gatewayID }) else { continue }
            for _ in 0..<10 {
                if let answer = try? await gateway.inquire(InquiryQuery(attempt: attempt)) {
                    await store.apply(answer.status, to: attempt)
                    break
                }
            }
        }
        for index in unresolvedCheckouts where await store.status(of: index).isFinal { report.settledByReconciliation += 1 }

        // Count against the ledgers: what the gateways really charged.
        var chargedAttempts: [Int: Int] = [:]
        for gateway in gateways {
            for attempt in await gateway.ledger.charges.keys {
                if let index = await store.checkout(of: attempt) { chargedAttempts[index, default: 0] += 1 }
            }
        }
        report.checkouts = options.checkouts
        for index in 0..<options.checkouts {
            let status = await store.status(of: index)
            let charges = chargedAttempts[index] ?? 0
            if charges > 1 { report.doubleCharges += 1 }
            if charges > 0 && status != .paid { report.lostPayments += 1 }
            if charges > 1 || (charges > 0 && status != .paid) {
                var story = "checkout \(index) ended \(status) with \(charges) charge(s):"
                for (attempt, gatewayID) in await store.attempts(of: index) {
                    let record = await gateways.first { $0.gateway == gatewayID }?.ledger.records[attempt]
                    story += " [\(gatewayID) \(attempt): \(record.map { "\($0.plan.behavior), gateway says \($0.status)" } ?? "unknown")]"
                }
                report.violations.append(story)
            }
            if status == .paid { report.succeeded += 1 } else if status.isNegative { report.failed += 1 } else { report.unresolved += 1 }
        }
        let counters = await store.counters
        report.notificationsApplied = counters.applied
        report.notificationsDuplicate = counters.duplicate
        report.notificationsStale = counters.stale
        // A failure told to the app while money had moved is a lost payment from the customer's side.
        report.lostPayments += report.reportedFailedButCharged
        return report
    }

    private static func deliverOutboxes(_ gateways: [FakeGateway], store: ChaosStore, generator: inout SeededGenerator) async {
        var pending: [IncomingNotification] = []
        for gateway in gateways { pending += await gateway.drainOutbox() }
        pending.shuffle(using: &generator)
        for notification in pending {
            await store.receive(notification)
            if generator.roll(4) == 0 { await store.receive(notification) }   // a gateway retry
        }
    }
}

/// Draws faults from a seeded generator (shared by the runner and the wallet simulation).
final class FaultDrawer: @unchecked Sendable {
    private let lock = NSLock()
    private var generator: SeededGenerator
    private let rate: Double
    private var walletResults: [AttemptReference: PaymentStatus] = [:]

    init(seed: UInt64, rate: Double) {
        generator = SeededGenerator(seed: seed)
        self.rate = rate
    }

    private func chance(_ p: Double) -> Bool { Double(generator.next() >> 11) / Double(1 << 53) < p }

    func plan(for attempt: AttemptReference, method: PaymentMethod) -> FakeAttemptPlan {
        lock.lock(); defer { lock.unlock() }
        var behavior: FakeBehavior = method == .wechatPay ? .walletHandoff : .approve
        var latency = Duration.milliseconds(Int64(generator.roll(800)) + 50)
        var afterReturn: TransportError.Kind?
        if method == .wechatPay {
            walletResults[attempt] = !chance(rate) ? .paid : (generator.roll(2) == 0 ? .failed : .cancelled)
            if chance(rate) { afterReturn = [.notSent, .timedOut, .connectionLost][generator.roll(3)] }
        } else if chance(rate) {
            switch generator.roll(10) {
            case 0: behavior = .softDecline()
            case 1: behavior = .hardDecline()
            case 2: behavior = .timeoutBeforeSending
            case 3: behavior = .timeoutAfterCharging
            case 4: behavior = .lostResponse
            case 5: behavior = .serverError(charged: false)
            case 6: behavior = .serverError(charged: true)
            case 7: latency = .seconds(Int64(generator.roll(50)) + 10)   // slow, then approved
            case 8: behavior = .delayedCharge
            default: behavior = .pending
            }
        }
        var notification: FakeNotificationTiming = .immediate
        if chance(rate) {
            switch generator.roll(3) {
            case 0: notification = .deferred
            case 1: notification = .duplicate(count: Int(generator.roll(3)) + 2)
            default: notification = .never
            }
        }
        let failingInquiries = chance(rate) ? Int(generator.roll(5)) + 1 : 0
        return FakeAttemptPlan(behavior, notification: notification, failingInquiries: failingInquiries, latency: latency,
                               afterReturn: afterReturn)
    }

    func walletResult(for attempt: AttemptReference) -> PaymentStatus {
        lock.lock(); defer { lock.unlock() }
        return walletResults[attempt] ?? .paid
    }
}

/// Scripts each attempt's faults just before it runs, and tells the store which checkout it belongs to.
struct ChaosRunner: AttemptRunner {
    let inner: FakeAttemptRunner
    let faults: FaultDrawer
    let store: ChaosStore

    func run(_ context: AttemptContext, on gateway: any CheckoutGateway) async -> AttemptOutcome {
        if let fake = gateway as? FakeGateway, let index = Int(context.intent.merchantReference.dropFirst("chaos-".count)) {
            await store.link(context.attempt, to: index, gateway: fake.gateway)
            await fake.ledger.enqueue([faults.plan(for: context.attempt, method: context.intent.method)])
        }
        return await inner.run(context, on: gateway)
    }
}

/// The merchant's side of the chaos run: verified notifications applied forward-only to each
/// attempt, and each payment's status derived from its attempts (as the merchant server does).
actor ChaosStore {
    struct Counters { var applied = 0, duplicate = 0, stale = 0, rejected = 0 }
    private var gateways: [GatewayID: FakeGateway] = [:]
    private var attemptStatus: [AttemptReference: PaymentStatus] = [:]
    private var attemptCheckout: [AttemptReference: Int] = [:]
    private var attemptGateway: [AttemptReference: GatewayID] = [:]
    private var checkoutAttempts: [Int: [AttemptReference]] = [:]
    private var seen: Set<String> = []
    private(set) var counters = Counters()

    func register(_ list: [FakeGateway]) { for g in list { gateways[g.gateway] = g } }
    func open(_ index: Int) { checkoutAttempts[index] = [] }
    func link(_ attempt: AttemptReference, to index: Int, gateway: GatewayID) {
        attemptCheckout[attempt] = index
        attemptGateway[attempt] = gateway
        attemptStatus[attempt] = .pending
        checkoutAttempts[index, default: []].append(attempt)
    }
    func checkout(of attempt: AttemptReference) -> Int? { attemptCheckout[attempt] }
    func attempts(of index: Int) -> [(AttemptReference, GatewayID)] {
        (checkoutAttempts[index] ?? []).map { ($0, attemptGateway[$0]!) }
    }
    /// The payment's status, derived from its attempts.
    func status(of index: Int) -> PaymentStatus {
        PaymentStatus.aggregate((checkoutAttempts[index] ?? []).map { attemptStatus[$0] ?? .pending })
    }
    /// Attempts whose status is not final yet, in a stable order.
    func openAttempts() -> [(AttemptReference, GatewayID)] {
        attemptStatus.filter { !$0.value.isFinal }.keys.sorted { $0.rawValue < $1.rawValue }.map { ($0, attemptGateway[$0]!) }
    }

    @discardableResult
    func apply(_ status: PaymentStatus, to attempt: AttemptReference) -> PaymentStatus.Transition {
        let current = attemptStatus[attempt] ?? .created
        let transition = current.transition(to: status)
        if transition == .advance { attemptStatus[attempt] = status }
        return transition
    }

    func receive(_ notification: IncomingNotification) {
        guard let id = try? JSONDecoder().decode(FakeGateway.NotificationBody.self, from: notification.body).attempt,
              let gatewayID = attemptGateway[AttemptReference(rawValue: id)],
              let verified = try? gateways[gatewayID]?.verifyNotification(notification)
        else {
            counters.rejected += 1
            return
        }
        guard seen.insert(verified.report.eventID).inserted else {
            counters.duplicate += 1
            return
        }
        switch apply(verified.report.status, to: verified.report.attempt) {
        case .advance: counters.applied += 1
        case .unchanged: counters.duplicate += 1
        case .rejected: counters.stale += 1
        }
    }
}
extension RandomNumberGenerator {
    /// A uniform integer in `0..<bound`.
    mutating func roll(_ bound: Int) -> Int { Int(next(upperBound: UInt64(bound))) }
}
