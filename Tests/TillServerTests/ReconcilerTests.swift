import Foundation
import Logging
import Metrics
import MetricsTestKit
import Testing
import TillPayFort
import Till
import TillOrchestration
import TillService
import TillGatewayKit
@testable import TillServer
import TillTesting

/// A fake gateway that counts the inquiries it answers, per attempt; its capabilities may differ from
/// the fake's (no inquiry, another attempt lifetime).
private struct CountingGateway: GatewayServerHalf {
    let fake: FakeGateway
    let capabilities: GatewayCapabilities
    private let counts = Locked<[AttemptReference: Int]>([:])

    init(_ fake: FakeGateway, capabilities: GatewayCapabilities) {
        self.fake = fake
        self.capabilities = capabilities
    }

    var gateway: GatewayID { fake.gateway }
    var decisionTable: DecisionTable { fake.decisionTable }
    func prepare(_ context: AttemptContext) async throws -> Preparation { try await fake.prepare(context) }
    func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        try await fake.submit(submission, context: context)
    }
    func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        try fake.verifyNotification(notification)
    }
    func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? { fake.claimedAttempt(in: notification) }
    func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        counts.withLock { $0[query.attempt, default: 0] += 1 }
        return try await fake.inquire(query)
    }

    func inquiries(_ attempt: AttemptReference) -> Int { counts.withLock { $0[attempt] ?? 0 } }
    var totalInquiries: Int { counts.withLock { $0.values.reduce(0, +) } }
}

/// One merchant over fake gateways (notifications withheld) and a real store, without HTTP: the
/// reconciler is not HTTP.
private struct Fixture {
    static let amount = Money(minorUnits: 2500, currency: Currency.lookup("USD")!)
    /// The fake's documented attempt lifetime.
    static let lifetime: TimeInterval = 900

    let store: any PaymentStore
    let state: ServerState
    let merchantID: String
    let gateways: [GatewayID: CountingGateway]
    let service: PaymentService

    var merchant: MerchantRuntime { state.merchant(id: merchantID)! }

    init(_ kind: StoreKind, gateways specs: [(GatewayID, GatewayCapabilities)] = [("fake", FakeGateway().capabilities)]) async throws {
        let merchantID = "m-\(UUID().uuidString.prefix(8).lowercased())"
        var made: [GatewayID: CountingGateway] = [:]
        for (id, capabilities) in specs {
            made[id] = CountingGateway(FakeGateway(id: id, capabilities: capabilities, notificationTiming: .never),
                                       capabilities: capabilities)
        }
        let gateways = made
        let plugin = GatewayPlugin(module: "fake", capabilities: FakeGateway().capabilities,
                                   makeServerHalf: { context in gateways[context.id]! },
                                   makeAppHalf: { context in gateways[context.id]!.fake })
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: merchantID, apiKey: CredentialReference(env: "API_KEY"),
                gateways: specs.map { GatewayConfiguration(id: $0.0, module: "fake") },
                routing: RoutingConfiguration(fallback: specs.map(\.0)))],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:injected-by-the-test"))
        state = try ServerState(configuration: configuration, plugins: [plugin], environment: ["API_KEY": "key-\(UUID().uuidString)"])
        store = try await kind.open()
        service = PaymentService(state: state, store: store, inquiriesInline: true)
        self.merchantID = merchantID
        self.gateways = gateways
    }

    /// A reconciler over this fixture. The batch is large: a PostgreSQL database is shared with other
    /// tests running at the same time, whose attempts are due too (and skipped: unknown merchants).
    func reconciler(_ settings: ReconciliationSettings = ReconciliationSettings(batch: 100_000),
                    metrics: any MetricsFactory = TestMetrics()) -> Reconciler {
        Reconciler(state: state, store: store, settings: settings,
                   logger: Logger(label: "till.reconciler.test", factory: { _ in SwiftLogNoOpLogHandler() }), metrics: metrics)
    }

    /// Creates a payment and its attempt on `gatewayID` as the server's prepare does (stored first, then
    /// the gateway's Prepare), with `plan` scripted at the gateway. With `charge`, the app's submit then
    /// reaches the gateway, and the app dies: nobody records the answer.
    /// The gateway charges `reference` after all and sends its notification, which the server takes.
    func chargeAfterAll(_ reference: AttemptReference, on gatewayID: GatewayID = "fake") async throws {
        let gateway = gateways[gatewayID]!
        let charge = try await gateway.fake.settle(reference, as: .paid)
        let notification = gateway.fake.signedNotification(for: charge)
        _ = try await service.receiveNotification(gateway: gatewayID, headers: notification.headers, body: notification.body)
    }

    func abandonedAttempt(on gatewayID: GatewayID = "fake", _ plan: FakeAttemptPlan, charge: Bool = true) async throws -> AttemptReference {
        let gateway = gateways[gatewayID]!
        await gateway.fake.ledger.enqueue([plan])
        let id = "pay_\(UUID().uuidString.prefix(12).lowercased())"
        let intent = PaymentIntent(merchantReference: "order-\(UUID().uuidString.prefix(8))", amount: Self.amount, method: .card)
        guard case .created = try await store.create(intent, merchant: merchantID, id: id, idempotencyKey: nil, requestHash: id) else {
            throw CheckoutError(.misconfigured, message: "payment not created")
        }
        let reference = AttemptReference.generate()
        try await store.addAttempt(reference, payment: id, gateway: gatewayID, expected: [])
        let preparation = try await gateway.prepare(AttemptContext(intent: intent, attempt: reference))
        try await store.attemptPrepared(reference, gatewayReference: preparation.gatewayReference, returnURL: nil)
        if charge { _ = try? await gateway.fake.charge(reference) }
        // Distinct creation times keep "oldest first" unambiguous.
        try await Task.sleep(for: .milliseconds(3))
        return reference
    }

    func attempt(_ reference: AttemptReference) async throws -> StoredAttempt {
        try #require(try await store.payment(attempt: reference)?.attempts.first { $0.reference == reference })
    }

    func paymentStatus(_ reference: AttemptReference) async throws -> PaymentStatus? {
        try await store.payment(attempt: reference)?.status
    }

    /// This merchant's entries of a pass (a shared database holds other tests' attempts too).
    func mine(_ entries: [ReconciliationEntry]) -> [ReconciliationEntry] { entries.filter { $0.merchantID == merchantID } }

    /// This merchant's entries in the reconciliation log, newest first. Other tests' reconcilers over a
    /// shared database skip this merchant's attempts (unknown to them); those entries are left out.
    func log() async throws -> [ReconciliationEntry] {
        mine(try await store.reconciliationLog(limit: 100_000)).filter {
            !($0.action == "skipped" && $0.reason.hasPrefix("merchant \(merchantID) is not in"))
        }
    }
}

@Suite("Reconciler: settles what nobody settled")
struct ReconcilerTests {
    @Test("an attempt abandoned after prepare, never notified, is settled by a pass once it is old enough",
          arguments: StoreKind.everyStore, [FakeBehavior.pending, .timeoutAfterCharging])
    func settlesAbandoned(kind: StoreKind, behavior: FakeBehavior) async throws {
        let f = try await Fixture(kind)
        let gateway = f.gateways["fake"]!
        await gateway.fake.ledger.enqueue([FakeAttemptPlan(behavior, notification: .never)])
        // The app creates the payment and prepares the attempt through the server, submits at the gateway, and dies.
        let intent = PaymentIntent(merchantReference: "order-\(UUID().uuidString.prefix(8))", amount: Fixture.amount, method: .card)
        let payment = try await f.service.createPayment(intent, merchant: f.merchant, idempotencyKey: nil).payment
        let preparation = try await f.service.prepare(paymentID: payment.id, merchant: f.merchant, request: PrepareRequest())
        let reference = preparation.attempt
        _ = try? await gateway.fake.charge(reference)
        if behavior == .pending { try await gateway.fake.settle(reference, as: .paid) }   // later, at the gateway only
        #expect(await gateway.fake.ledger.isCharged(reference))
        let created = try await f.attempt(reference).createdAt
        #expect(try await f.attempt(reference).status == .pending)

        let metrics = TestMetrics()
        let entries = f.mine(try await f.reconciler(metrics: metrics).runOnce(now: created.addingTimeInterval(601)))
        let entry = try #require(entries.first)
        #expect(entries.count == 1)
        #expect(entry.attempt == reference && entry.gateway == "fake")
        #expect(entry.action == "settled", "\(entry.reason)")
        #expect(entry.statusBefore == .pending && entry.statusAfter == .paid)
        #expect(try await f.attempt(reference).status == .paid)
        #expect(try await f.paymentStatus(reference) == .paid)
        #expect(try await f.attempt(reference).inquiryCount == 1)
        #expect(gateway.inquiries(reference) == 1)
        #expect(try await f.log().contains(entry))
        #expect(try metrics.expectCounter("till_reconciliation_total", [("action", "settled")]).totalValue == 1)
        try await f.store.close()
    }

    @Test("an attempt younger than minimumAgeSeconds is left to the app and the notification", arguments: StoreKind.everyStore)
    func youngLeftAlone(kind: StoreKind) async throws {
        let f = try await Fixture(kind)
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.timeoutAfterCharging, notification: .never))
        let created = try await f.attempt(reference).createdAt
        let reconciler = f.reconciler()

        #expect(f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(599))).isEmpty)
        #expect(f.gateways["fake"]!.inquiries(reference) == 0)
        let untouched = try await f.attempt(reference)
        #expect(untouched.status == .pending && untouched.inquiryCount == 0 && untouched.nextInquiryAt == nil)

        // Once old enough, it is.
        #expect(f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(601))).map(\.action) == ["settled"])
        try await f.store.close()
    }

    @Test("a failed inquiry is not repeated before its backoff, which doubles; inquiry_count grows", arguments: StoreKind.everyStore)
    func backoff(kind: StoreKind) async throws {
        let f = try await Fixture(kind)
        let gateway = f.gateways["fake"]!
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.timeoutAfterCharging, notification: .never, failingInquiries: 2))
        let created = try await f.attempt(reference).createdAt
        let reconciler = f.reconciler()   // base 60 s, max 3600 s

        let t1 = created.addingTimeInterval(601)
        let first = f.mine(try await reconciler.runOnce(now: t1))
        #expect(first.map(\.action) == ["inquiry_failed"])
        #expect(first.first?.reason.isEmpty == false)
        var stored = try await f.attempt(reference)
        #expect(stored.inquiryCount == 1)
        #expect(abs((stored.nextInquiryAt ?? .distantPast).timeIntervalSince(t1.addingTimeInterval(60))) < 0.01)

        // Not again before its time.
        #expect(f.mine(try await reconciler.runOnce(now: t1.addingTimeInterval(59))).isEmpty)
        #expect(gateway.inquiries(reference) == 1)

        let t2 = t1.addingTimeInterval(60)
        #expect(f.mine(try await reconciler.runOnce(now: t2)).map(\.action) == ["inquiry_failed"])
        stored = try await f.attempt(reference)
        #expect(stored.inquiryCount == 2)
        #expect(abs((stored.nextInquiryAt ?? .distantPast).timeIntervalSince(t2.addingTimeInterval(120))) < 0.01)

        #expect(f.mine(try await reconciler.runOnce(now: t2.addingTimeInterval(119))).isEmpty)
        #expect(gateway.inquiries(reference) == 2)

        let settled = f.mine(try await reconciler.runOnce(now: t2.addingTimeInterval(120)))
        #expect(settled.map(\.action) == ["settled"])
        #expect(try await f.attempt(reference).inquiryCount == 3)
        #expect(try await f.attempt(reference).status == .paid)
        #expect(gateway.inquiries(reference) == 3)
        #expect(try await f.log().filter { $0.attempt == reference }.map(\.action) == ["settled", "inquiry_failed", "inquiry_failed"])
        try await f.store.close()
    }

    @Test("the backoff doubles from its base and stops at its cap")
    func backoffSchedule() {
        let settings = ReconciliationSettings(backoffBaseSeconds: 60, backoffMaxSeconds: 3_600)
        #expect((0...7).map { settings.backoff(afterInquiries: $0) } == [60, 120, 240, 480, 960, 1_920, 3_600, 3_600])
        #expect(settings.backoff(afterInquiries: 10_000) == 3_600)
    }

    @Test("each gateway has its own budget per pass; over it, attempts wait unclaimed for the next pass",
          arguments: StoreKind.everyStore)
    func budget(kind: StoreKind) async throws {
        let capabilities = FakeGateway().capabilities
        let f = try await Fixture(kind, gateways: [("busy", capabilities), ("quiet", capabilities)])
        var busy: [AttemptReference] = []
        for _ in 0..<5 { busy.append(try await f.abandonedAttempt(on: "busy", FakeAttemptPlan(.timeoutAfterCharging, notification: .never))) }
        let quiet = try await f.abandonedAttempt(on: "quiet", FakeAttemptPlan(.timeoutAfterCharging, notification: .never))
        let reconciler = f.reconciler(ReconciliationSettings(batch: 100_000, maxInquiriesPerGatewayPerPass: 2))
        let start = try await f.attempt(quiet).createdAt.addingTimeInterval(601)

        let first = f.mine(try await reconciler.runOnce(now: start))
        #expect(first.filter { $0.gateway == "busy" }.map(\.action) == ["settled", "settled", "skipped_budget", "skipped_budget", "skipped_budget"])
        #expect(first.filter { $0.gateway == "quiet" }.map(\.action) == ["settled"])
        // Oldest first; the ones over budget were not claimed.
        #expect(first.filter { $0.gateway == "busy" }.map(\.attempt) == busy)
        #expect(f.gateways["busy"]!.totalInquiries == 2)
        for reference in busy.suffix(3) {
            let stored = try await f.attempt(reference)
            #expect(stored.inquiryCount == 0 && stored.nextInquiryAt == nil && stored.status == .pending)
        }

        let second = f.mine(try await reconciler.runOnce(now: start.addingTimeInterval(1)))
        #expect(second.map(\.action) == ["settled", "settled", "skipped_budget"])
        let third = f.mine(try await reconciler.runOnce(now: start.addingTimeInterval(2)))
        #expect(third.map(\.action) == ["settled"])
        #expect(f.gateways["busy"]!.totalInquiries == 5)
        for reference in busy { #expect(try await f.attempt(reference).status == .paid) }
        try await f.store.close()
    }

    @Test("an attempt the gateway never saw expires only after its lifetime; a charge that comes later still makes it paid",
          arguments: StoreKind.everyStore)
    func expiresUnseen(kind: StoreKind) async throws {
        let f = try await Fixture(kind)
        let gateway = f.gateways["fake"]!
        // The submit timed out before the gateway processed it; the gateway answers "no such attempt".
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.delayedCharge, notification: .never))
        let created = try await f.attempt(reference).createdAt
        let reconciler = f.reconciler()

        let early = f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(601)))
        #expect(early.map(\.action) == ["unchanged"])
        #expect(early.first?.statusAfter == .pending)
        #expect(try await f.attempt(reference).status == .pending)

        // Past the gateway's documented lifetime (900 s): expired, with the reason.
        let late = f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(Fixture.lifetime + 1)))
        let expired = try #require(late.first)
        #expect(late.count == 1)
        #expect(expired.action == "expired")
        #expect(expired.statusBefore == .pending && expired.statusAfter == .expired)
        #expect(expired.reason.contains("900"))
        let stored = try await f.attempt(reference)
        #expect(stored.status == .expired)
        #expect(stored.gatewayCode == Reconciler.expiredUnseenCode)
        #expect(try await f.paymentStatus(reference) == .expired)
        #expect(gateway.inquiries(reference) == 2)
        // An expired attempt is no longer due.
        #expect(f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(3 * 3_600))).isEmpty)

        // The gateway processes the delayed request after all, and its notification arrives: the server
        // confirms it by its own inquiry, and the money is not lost.
        try await f.chargeAfterAll(reference)
        #expect(await gateway.fake.ledger.isCharged(reference))
        #expect(gateway.inquiries(reference) == 3)
        #expect(try await f.attempt(reference).status == .paid)
        #expect(try await f.paymentStatus(reference) == .paid)
        try await f.store.close()
    }

    /// The fake's capabilities with an hour for the customer, for a pending answer with one of `codes`.
    static func waiting(codes: Set<String>) -> GatewayCapabilities {
        var capabilities = FakeGateway().capabilities
        capabilities.abandonedAttemptSeconds = 3_600
        capabilities.waitingForCustomerCodes = codes
        return capabilities
    }

    @Test("an attempt the gateway still reports waiting for the customer expires after the time the gateway gives (PayFort's hour at 3-D Secure); a late charge still makes it paid",
          arguments: StoreKind.everyStore)
    func expiresAbandoned(kind: StoreKind) async throws {
        let f = try await Fixture(kind, gateways: [("fake", Self.waiting(codes: [FakeGateway.waitingForCustomerCode]))])
        // The gateway took the attempt and waits for the customer (a 3-D Secure page nobody finished).
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.pending, notification: .never))
        let created = try await f.attempt(reference).createdAt
        let reconciler = f.reconciler()
        let early = f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(601)))
        #expect(early.map(\.action) == ["unchanged"] && early.first?.statusAfter == .pending)

        let late = f.mine(try await reconciler.runOnce(now: created.addingTimeInterval(3_601 + 3_600)))
        let expired = try #require(late.first)
        #expect(expired.action == "expired" && expired.statusAfter == .expired && expired.reason.contains("3600"), "\(expired.reason)")
        #expect(try await f.attempt(reference).gatewayCode == Reconciler.expiredAbandonedCode)
        #expect(try await f.paymentStatus(reference) == .expired)

        // The customer finishes after all and the gateway charges: its notification, confirmed by the server's
        // own inquiry, makes the attempt paid; the money is not lost.
        try await f.chargeAfterAll(reference)
        #expect(try await f.attempt(reference).status == .paid)
        #expect(try await f.paymentStatus(reference) == .paid)
        try await f.store.close()
    }

    @Test("a pending attempt stays open however old: without an abandonment time, or when the gateway's pending is not a wait for the customer (uncertain, on hold)",
          arguments: StoreKind.everyStore)
    func pendingStaysWithoutAbandonmentTime(kind: StoreKind) async throws {
        for capabilities in [FakeGateway().capabilities, Self.waiting(codes: ["another_code"])] {
            let f = try await Fixture(kind, gateways: [("fake", capabilities)])
            let reference = try await f.abandonedAttempt(FakeAttemptPlan(.pending, notification: .never))
            let created = try await f.attempt(reference).createdAt
            let entries = f.mine(try await f.reconciler().runOnce(now: created.addingTimeInterval(30 * 86_400)))
            #expect(entries.map(\.action) == ["unchanged"])
            #expect(try await f.attempt(reference).status == .pending)
            try await f.store.close()
        }
    }

    @Test("the time a customer has is counted from the attempt's submit (the card's token, then 3-D Secure), not its start",
          arguments: StoreKind.everyStore)
    func abandonmentCountsFromSubmit(kind: StoreKind) async throws {
        let f = try await Fixture(kind, gateways: [("fake", Self.waiting(codes: [FakeGateway.waitingForCustomerCode]))])
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.pending, notification: .never))
        // Started two hours ago; the customer typed the card and went to 3-D Secure just now.
        let sql = "UPDATE till_attempts SET created_at = created_at - 7200000 WHERE reference = '\(reference.rawValue)'"
        if let sqlite = f.store as? SQLitePaymentStore { try await sqlite.executeUnchecked(sql) }
        if let postgres = f.store as? PostgresPaymentStore { try await postgres.executeUnchecked(sql) }
        #expect(try await f.store.markSubmitted(reference))
        let submitted = Date()
        let soon = f.mine(try await f.reconciler().runOnce(now: submitted.addingTimeInterval(600)))
        #expect(soon.map(\.action) == ["unchanged"], "\(soon.map(\.reason))")
        let later = f.mine(try await f.reconciler().runOnce(now: submitted.addingTimeInterval(3_600 + 3_700)))
        #expect(later.map(\.action) == ["expired"])
        try await f.store.close()
    }

    @Test("PayFort declares its hour: an attempt never seen, or still waiting at 3-D Secure, ends after it")
    func payFortDeclaresItsHour() {
        #expect(PayFortGateway.capabilities.attemptLifetimeSeconds == 3_600)
        #expect(PayFortGateway.capabilities.abandonedAttemptSeconds == 3_600)
    }

    @Test("a gateway without a documented attempt lifetime never expires an attempt it has not seen", arguments: StoreKind.everyStore)
    func noLifetimeNoExpiry(kind: StoreKind) async throws {
        var capabilities = FakeGateway().capabilities
        capabilities.attemptLifetimeSeconds = nil
        let f = try await Fixture(kind, gateways: [("fake", capabilities)])
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.delayedCharge, notification: .never))
        let created = try await f.attempt(reference).createdAt
        let entries = f.mine(try await f.reconciler().runOnce(now: created.addingTimeInterval(30 * 86_400)))
        #expect(entries.map(\.action) == ["unchanged"])
        #expect(try await f.attempt(reference).status == .pending)
        try await f.store.close()
    }

    @Test("two reconcilers over one store inquire each attempt once per round", arguments: StoreKind.everyStore)
    func twoInstances(kind: StoreKind) async throws {
        let f = try await Fixture(kind)
        var references: [AttemptReference] = []
        for _ in 0..<8 { references.append(try await f.abandonedAttempt(FakeAttemptPlan(.timeoutAfterCharging, notification: .never))) }
        let now = try await f.attempt(references.last!).createdAt.addingTimeInterval(601)
        let (one, two) = (f.reconciler(), f.reconciler())

        async let a = one.runOnce(now: now)
        async let b = two.runOnce(now: now)
        let entries = f.mine(try await a) + f.mine(try await b)
        #expect(entries.count == references.count)
        #expect(Set(entries.map(\.attempt)) == Set(references))
        #expect(entries.allSatisfy { $0.action == "settled" })
        for reference in references {
            #expect(f.gateways["fake"]!.inquiries(reference) == 1)
            #expect(try await f.attempt(reference).inquiryCount == 1)
            #expect(try await f.attempt(reference).status == .paid)
        }
        #expect(try await f.log().count == references.count)
        try await f.store.close()
    }

    @Test("two reconcilers racing on attempts that stay open claim each once per round", arguments: StoreKind.everyStore)
    func twoInstancesOpen(kind: StoreKind) async throws {
        let f = try await Fixture(kind)
        var references: [AttemptReference] = []
        // Accepted, not settled: each inquiry answers pending, so the attempts stay due round after round.
        for _ in 0..<6 { references.append(try await f.abandonedAttempt(FakeAttemptPlan(.pending, notification: .never))) }
        let start = try await f.attempt(references.last!).createdAt.addingTimeInterval(601)
        let (one, two) = (f.reconciler(), f.reconciler())
        for (round, offset) in [0.0, 60, 180].enumerated() {
            async let a = one.runOnce(now: start.addingTimeInterval(offset))
            async let b = two.runOnce(now: start.addingTimeInterval(offset))
            let entries = f.mine(try await a) + f.mine(try await b)
            #expect(entries.count == references.count, "round \(round)")
            #expect(Set(entries.map(\.attempt)) == Set(references))
            #expect(entries.allSatisfy { $0.action == "unchanged" })
            for reference in references {
                #expect(f.gateways["fake"]!.inquiries(reference) == round + 1)
                #expect(try await f.attempt(reference).inquiryCount == round + 1)
            }
        }
        try await f.store.close()
    }

    @Test("every action is logged, counted, and recorded in the reconciliation log", arguments: StoreKind.everyStore)
    func everyActionLogged(kind: StoreKind) async throws {
        var withoutInquiry = FakeGateway().capabilities
        withoutInquiry.supportsInquiry = false
        let f = try await Fixture(kind, gateways: [("fake", FakeGateway().capabilities), ("silent", withoutInquiry)])
        // The reconciler takes the oldest first and the budget (4) runs out on the fifth: each attempt is
        // created a few milliseconds after the last, so their order is their creation order (stored in ms).
        func next(_ plan: FakeAttemptPlan) async throws -> AttemptReference {
            try await Task.sleep(for: .milliseconds(3))
            return try await f.abandonedAttempt(plan)
        }
        let settled = try await next(FakeAttemptPlan(.timeoutAfterCharging, notification: .never))
        let unchanged = try await next(FakeAttemptPlan(.pending, notification: .never))
        let failed = try await next(FakeAttemptPlan(.timeoutAfterCharging, notification: .never, failingInquiries: 1))
        let expired = try await next(FakeAttemptPlan(.delayedCharge, notification: .never))
        let overBudget = try await next(FakeAttemptPlan(.timeoutAfterCharging, notification: .never))
        let skipped = try await f.abandonedAttempt(on: "silent", FakeAttemptPlan(.timeoutAfterCharging, notification: .never))
        let metrics = TestMetrics()
        let reconciler = f.reconciler(ReconciliationSettings(batch: 100_000, maxInquiriesPerGatewayPerPass: 4), metrics: metrics)
        // Past the lifetime of the last one created (on a loaded machine creating six can take seconds).
        let now = try await f.attempt(skipped).createdAt.addingTimeInterval(Fixture.lifetime + 10)

        let entries = f.mine(try await reconciler.runOnce(now: now))
        let actions = Dictionary(uniqueKeysWithValues: entries.map { ($0.attempt, $0.action) })
        #expect(actions == [settled: "settled", unchanged: "unchanged", failed: "inquiry_failed", expired: "expired",
                            overBudget: "skipped_budget", skipped: "skipped"])
        #expect(entries.allSatisfy { !$0.reason.isEmpty && abs($0.at.timeIntervalSince(now)) < 0.001 })
        let log = try await f.log()
        for entry in entries { #expect(log.contains(entry), "\(entry.action) is not in the log") }
        for action in ReconciliationAction.allCases {
            #expect(try metrics.expectCounter("till_reconciliation_total", [("action", action.rawValue)]).totalValue >= 1,
                    "\(action.rawValue) not counted")
        }
        #expect(try metrics.expectCounter("till_reconciliation_total", [("action", "settled")]).totalValue == 1)
        try await f.store.close()
    }

    @Test("an attempt of a merchant this server does not know is skipped with the reason, never claimed",
          arguments: StoreKind.everyStore)
    func unknownMerchant(kind: StoreKind) async throws {
        let f = try await Fixture(kind)
        let stranger = "m-unknown-\(UUID().uuidString.prefix(8).lowercased())"
        let id = "pay_\(UUID().uuidString.prefix(12).lowercased())"
        let intent = PaymentIntent(merchantReference: "order-1", amount: Fixture.amount, method: .card)
        _ = try await f.store.create(intent, merchant: stranger, id: id, idempotencyKey: nil, requestHash: id)
        let reference = AttemptReference.generate()
        try await f.store.addAttempt(reference, payment: id, gateway: "fake", expected: [])
        try await f.store.attemptPrepared(reference, gatewayReference: nil, returnURL: nil)
        let created = try await f.attempt(reference).createdAt

        let entries = try await f.reconciler().runOnce(now: created.addingTimeInterval(601)).filter { $0.attempt == reference }
        #expect(entries.map(\.action) == ["skipped"])
        #expect(entries.first?.reason.contains(stranger) == true)
        #expect(try await f.attempt(reference).inquiryCount == 0)
        #expect(try await f.store.reconciliationLog(limit: 100_000).contains { $0.attempt == reference && $0.action == "skipped" })
        try await f.store.close()
    }

    @Test("run() passes at once and stops when cancelled")
    func runLoop() async throws {
        let f = try await Fixture(.sqlite)
        let reference = try await f.abandonedAttempt(FakeAttemptPlan(.timeoutAfterCharging, notification: .never))
        // Everything is old enough at once.
        let reconciler = f.reconciler(ReconciliationSettings(minimumAgeSeconds: 0, intervalSeconds: 3_600, batch: 100_000))
        let task = Task { try await reconciler.run() }
        let deadline = ContinuousClock.now + .seconds(20)
        while try await f.attempt(reference).status != .paid, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await f.attempt(reference).status == .paid)
        task.cancel()
        try await task.value
        try await f.store.close()
    }

    @Test("server.reconciliation: defaults when absent, unknown keys and bad values reported by path")
    func settings() throws {
        let modules = ["fake": FakeGateway().capabilities]
        func load(_ server: String) -> Result<TillConfiguration, ConfigurationError> {
            ConfigurationLoader.load(Data("""
                {"merchants": [{"id": "acme", "apiKey": {"env": "K"}, "gateways": [{"id": "fake", "module": "fake"}]}],
                 "server": \(server)}
                """.utf8), modules: modules)
        }
        let absent = try load(#"{"listen": "127.0.0.1:0"}"#).get()
        #expect(absent.server?.reconciliation == ReconciliationSettings())
        let defaults = ReconciliationSettings()
        #expect(defaults.enabled && defaults.minimumAgeSeconds == 600 && defaults.intervalSeconds == 60 && defaults.batch == 200
                && defaults.maxInquiriesPerGatewayPerPass == 20 && defaults.backoffBaseSeconds == 60 && defaults.backoffMaxSeconds == 3_600)

        let partial = try load(#"{"reconciliation": {"enabled": false, "batch": 50}}"#).get().server?.reconciliation
        #expect(partial == ReconciliationSettings(enabled: false, batch: 50))

        guard case .failure(let error) = load("""
            {"reconciliation": {"batchSize": 5, "intervalSeconds": 0, "batch": 0, "minimumAgeSeconds": -1,
                                "maxInquiriesPerGatewayPerPass": 0, "backoffBaseSeconds": 600, "backoffMaxSeconds": 60}}
            """) else {
            Issue.record("a broken reconciliation block loaded")
            return
        }
        let fields = Set(error.issues.map(\.field))
        let expected: Set<String> = ["server.reconciliation.batchSize", "server.reconciliation.intervalSeconds",
                                     "server.reconciliation.batch", "server.reconciliation.minimumAgeSeconds",
                                     "server.reconciliation.maxInquiriesPerGatewayPerPass", "server.reconciliation.backoffMaxSeconds"]
        #expect(expected.isSubset(of: fields), "missing: \(expected.subtracting(fields).sorted())")
    }
}
