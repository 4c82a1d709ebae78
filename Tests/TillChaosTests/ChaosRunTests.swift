import Foundation
import Testing
import Till
@testable import TillChaos
@testable import TillServer
import TillService
import TillWebhooks

@Suite("Chaos run over the production path")
struct ChaosRunTests {
    static var postgresURL: String? { ProcessInfo.processInfo.environment["TILL_TEST_POSTGRES_URL"] }

    static func expectClean(_ report: ChaosRun.Report, sourceLocation: SourceLocation = #_sourceLocation) {
        let violations = report.violations.prefix(10).joined(separator: "\n")
        #expect(report.doubleCharges == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.lostPayments == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.stuckPayments == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.unchargedPaid == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.doubleCaptures == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.overRefunds == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.lostOperations == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.stuckOperations == 0, "\(violations)", sourceLocation: sourceLocation)
        // Every event reached the receiver, each payment's in order, and the last one it took says what the payment became.
        #expect(report.events > report.checkouts, sourceLocation: sourceLocation)
        #expect(report.lostEvents == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.outOfOrderEvents == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.staleFinalViews == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.undeliveredEvents == 0, "\(violations)", sourceLocation: sourceLocation)
        #expect(report.eventPosts >= report.events, sourceLocation: sourceLocation)
        #expect(report.internalErrors.isEmpty, "\(report.internalErrors.prefix(5))", sourceLocation: sourceLocation)
        #expect(report.withoutPayment == 0, sourceLocation: sourceLocation)
        #expect(report.paid + report.failed + report.voided == report.checkouts, sourceLocation: sourceLocation)
    }

    @Test("400 checkouts at a fault rate of 0.3 on SQLite: no double charge, no lost or stuck payment, every fault injected")
    func sqlite() async throws {
        let report = try await ChaosRun.run(.init(checkouts: 400, seed: 2, faultRate: 0.3))
        Self.expectClean(report)
        #expect(report.store == "sqlite")
        #expect(report.checkouts == 400)
        #expect(report.attempts > 400)
        #expect(report.paid > 0 && report.failed > 0)
        for fault in ChaosFault.allCases {
            #expect((report.faults[fault.rawValue] ?? 0) > 0, "\(fault.rawValue) was never injected")
        }
        // Production's own outcomes, every kind of them.
        #expect(report.notificationsApplied > 0)
        #expect(report.notificationsDuplicate > 0)
        #expect(report.notificationsStale > 0)
        #expect(report.notificationsNeedingInquiry > 0)
        #expect(report.notificationsQuarantined > 0)
        #expect(report.notificationsRejected > 0)
        #expect(report.inquiriesApplied > 0)
        #expect(report.operations > 0)
        #expect(["succeeded", "pending", "unknown", "failed", "amount_exceeds_captured"].allSatisfy { (report.operationAnswers[$0] ?? 0) > 0 },
                "\(report.operationAnswers)")
        #expect(report.reconciled > 0)
        #expect((report.reconciliationActions["settled"] ?? 0) > 0)
        #expect((report.reconciliationActions["expired"] ?? 0) > 0)
        #expect((report.reconciliationActions["inquiry_failed"] ?? 0) > 0)
        // The receiver failed posts every way (the fault loop above), so events were retried and some came twice.
        #expect(report.eventPosts > report.events)
        #expect(report.duplicateDeliveries > 0)
        #expect(report.webhookFaultRate == 0.3)
        let line = report.jsonLine
        #expect(line.hasPrefix(#"{"checkouts":400,"doubleCharges":0,"lostPayments":0,"stuckPayments":0,"doubleCaptures":0,"overRefunds":0,"#
            + #""lostOperations":0,"stuckOperations":0,"lostEvents":0,"outOfOrderEvents":0,"staleFinalViews":0,"store":"sqlite","seconds":"#))
        #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any])
    }

    @Test("the same seed gives the same report (apart from the time it took), even with two runs at once")
    func repeatable() async throws {
        async let first = ChaosRun.run(.init(checkouts: 250, seed: 7, faultRate: 0.4))
        async let second = ChaosRun.run(.init(checkouts: 250, seed: 7, faultRate: 0.4))
        let (a, b) = try await (first, second)
        #expect(a.untimed == b.untimed)
        let other = try await ChaosRun.run(.init(checkouts: 250, seed: 8, faultRate: 0.4))
        #expect(other.untimed != a.untimed)
    }

    @Test("heavier faults, up to a fault at every step: still no double charge, no lost or stuck payment",
          arguments: [(UInt64(11), 0.6), (12, 1.0)])
    func heavy(seed: UInt64, faultRate: Double) async throws {
        let report = try await ChaosRun.run(.init(checkouts: 150, seed: seed, faultRate: faultRate))
        Self.expectClean(report)
        #expect(report.attempts >= 150)
        if faultRate == 1 {
            // The receiver fails every event as often as it may, then takes it.
            #expect(report.eventPosts == report.events * (WebhookReceiver.maxFailuresPerEvent + 1))
        }
    }

    @Test("cards routed by a rule that learns, its scores rebuilt from the store as the run goes: the attempt policy and the money rules hold as they do without it")
    func learning() async throws {
        let report = try await ChaosRun.run(.init(checkouts: 300, seed: 5, faultRate: 0.3, learning: true))
        Self.expectClean(report)
        #expect(report.checkouts == 300 && report.attempts >= 300)
    }

    @Test("no faults: every checkout is paid once")
    func noFaults() async throws {
        let report = try await ChaosRun.run(.init(checkouts: 60, seed: 3, faultRate: 0))
        Self.expectClean(report)
        #expect(report.paid + report.voided == 60)
        #expect(report.charges == report.paid)
        #expect(report.operations > 0 && report.operationAnswers.keys.sorted() == ["succeeded"], "\(report.operationAnswers)")
        #expect(report.attempts == 60)
        #expect(report.faults.values.allSatisfy { $0 == 0 })
        #expect(report.eventPosts == report.events && report.duplicateDeliveries == 0)
    }

    @Test("a receiver that never fails while the gateways do: each event posted once, none lost, none out of order")
    func reliableReceiver() async throws {
        let report = try await ChaosRun.run(.init(checkouts: 100, seed: 4, faultRate: 0.3, webhookFaultRate: 0))
        Self.expectClean(report)
        #expect(report.webhookFaultRate == 0)
        #expect(report.eventPosts == report.events && report.duplicateDeliveries == 0)
    }

    @Test("the in-memory store: no double charge, no lost or stuck payment, no lost or out-of-order event, and SQLite's figures")
    func memory() async throws {
        let report = try await ChaosRun.run(.init(checkouts: 200, seed: 2, faultRate: 0.3, store: "memory"))
        Self.expectClean(report)
        #expect(report.store == "memory")
        var onSQLite = try await ChaosRun.run(.init(checkouts: 200, seed: 2, faultRate: 0.3)).untimed
        onSQLite.store = "memory"
        #expect(onSQLite == report.untimed)
    }

    @Test("the run goes through the real store: its payments, attempts, notifications and reconciliation log are there")
    func storeHoldsTheRun() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-chaos-test-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let report = try await ChaosRun.run(.init(checkouts: 120, seed: 5, faultRate: 0.3, store: "sqlite:\(path)"))
        Self.expectClean(report)
        let store = try SQLitePaymentStore(path: path)
        #expect(try await store.count("till_payments") == 120)
        #expect(try await store.count("till_attempts") == report.attempts)
        #expect(try await store.count("till_payments", where: "status IN ('paid', 'authorized', 'partially_refunded', 'refunded')") == report.paid)
        #expect(try await store.count("till_operations") == report.operations)
        let notifications = try await store.count("till_notifications")
        #expect(notifications > 0)
        #expect(notifications <= report.notificationsApplied + report.notificationsDuplicate + report.notificationsStale
            + report.notificationsNeedingInquiry)
        #expect(try await store.count("till_quarantine") > 0)
        #expect(try await store.count("till_reconciliation_log") >= report.reconciled)
        #expect(try await store.count("till_attempts", where: "status IN ('created', 'pending')") == 0)
        // The outbox: every event delivered, every post recorded.
        #expect(try await store.count("till_events") == report.events)
        #expect(try await store.count("till_events", where: "state <> 'delivered'") == 0)
        #expect(try await store.count("till_event_attempts") == report.eventPosts)
        #expect(try await store.count("till_event_attempts", where: "status_code BETWEEN 200 AND 299") == report.events)
        try await store.close()
    }

    @Test("PostgreSQL: no double charge, no lost or stuck payment, and the figures SQLite gives")
    func postgres() async throws {
        guard let url = Self.postgresURL else {
            FileHandle.standardError.write(Data("note: TILL_TEST_POSTGRES_URL is not set; the chaos run on PostgreSQL is skipped (bash .ci/run starts PostgreSQL and sets it)\n".utf8))
            return
        }
        let report = try await ChaosRun.run(.init(checkouts: 200, seed: 2, faultRate: 0.3, store: url))
        Self.expectClean(report)
        #expect(report.store == "postgres")
        #expect(report.notificationsApplied > 0 && report.reconciled > 0)
        // Both stores apply the same rules: the same seed gives the same figures on SQLite.
        var onSQLite = try await ChaosRun.run(.init(checkouts: 200, seed: 2, faultRate: 0.3)).untimed
        onSQLite.store = "postgres"
        #expect(onSQLite == report.untimed)
    }
}

@Suite("The chaos run's webhook receiver")
struct WebhookReceiverTests {
    static let url = URL(string: ChaosRun.webhookURL)!
    static let secret = "a-receiver-test-secret"

    static func post(_ receiver: WebhookReceiver, sequence: Int, id: String? = nil, status: PaymentStatus = .pending,
                     secret: String = secret) async -> Result<Int, TransportError> {
        let usd = Currency.lookup("USD")!
        let view = PaymentView(id: "pay_1", merchantReference: "chaos-0", amount: Money(minorUnits: 100, currency: usd), method: .card,
                               status: status, attempts: [], createdAt: Date(), updatedAt: Date())
        let eventID = id ?? "evt_\(sequence)"
        let event = WebhookEvent(id: eventID, type: .paymentCreated, merchant: "chaos", paymentId: "pay_1", sequence: sequence,
                                 createdAt: Date(), data: view)
        let body = try! EventRules.encoder.encode(event)
        let header = WebhookSignature.header(timestamp: Int64(Date().timeIntervalSince1970), body: body, secrets: [secret])
        let request = TransportRequest(method: .post, url: url, headers: ["Till-Signature": header, "Till-Event-Id": eventID], body: body)
        do throws(TransportError) {
            return .success(try await receiver.send(request).statusCode)
        } catch {
            return .failure(error)
        }
    }

    @Test("counts an event taken before an earlier one of its payment, and one taken twice; keeps the last data")
    func outOfOrderAndDuplicates() async throws {
        let receiver = WebhookReceiver(url: Self.url, secrets: [Self.secret], seed: 1, rate: 0, world: ChaosWorld(seed: 1, rate: 0))
        #expect(await Self.post(receiver, sequence: 2, status: .paid) == .success(200))
        #expect(await Self.post(receiver, sequence: 1) == .success(200))
        #expect(await Self.post(receiver, sequence: 1) == .success(200))
        #expect(await Self.post(receiver, sequence: 3, status: .refunded) == .success(200))
        let counts = receiver.counts
        #expect(counts.posts == 4 && counts.outOfOrder == 1 && counts.duplicates == 1)
        #expect(receiver.received(payment: "pay_1")?.sequences == [2, 1, 1, 3])
        #expect(receiver.received(payment: "pay_1")?.last?.status == .refunded)
        #expect(receiver.accepted("evt_2") && !receiver.accepted("evt_4"))
        #expect(receiver.outOfOrderStories.count == 1)
    }

    @Test("refuses a delivery whose signature does not verify, and records nothing of it")
    func refusesBadSignature() async throws {
        let receiver = WebhookReceiver(url: Self.url, secrets: [Self.secret], seed: 1, rate: 0, world: ChaosWorld(seed: 1, rate: 0))
        #expect(await Self.post(receiver, sequence: 1, secret: "not-the-receiver-secret") == .success(400))
        #expect(!receiver.accepted("evt_1"))
        #expect(receiver.refusals.count == 1)
    }

    @Test("fails the same tries of the same events whatever the order they come in, and takes an event after its fifth failure")
    func failuresAreKeyedNotOrdered() async throws {
        let first = WebhookReceiver(url: Self.url, secrets: [Self.secret], seed: 9, rate: 0.5, world: ChaosWorld(seed: 1, rate: 0))
        let second = WebhookReceiver(url: Self.url, secrets: [Self.secret], seed: 9, rate: 0.5, world: ChaosWorld(seed: 1, rate: 0))
        var a: [Int: [String]] = [:]
        var b: [Int: [String]] = [:]
        for sequence in 1...20 {
            for _ in 1...3 { a[sequence, default: []].append("\(await Self.post(first, sequence: sequence))") }
        }
        for sequence in (1...20).reversed() {
            for _ in 1...3 { b[sequence, default: []].append("\(await Self.post(second, sequence: sequence))") }
        }
        #expect(a == b)
        let always = WebhookReceiver(url: Self.url, secrets: [Self.secret], seed: 9, rate: 1, world: ChaosWorld(seed: 1, rate: 0))
        for _ in 0..<WebhookReceiver.maxFailuresPerEvent {
            if case .success(let code) = await Self.post(always, sequence: 1) { #expect(code >= 500) }
        }
        #expect(await Self.post(always, sequence: 1) == .success(200))
    }
}
