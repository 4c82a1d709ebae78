import Foundation
import Testing
import TillChaos
@testable import TillServer

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
        let line = report.jsonLine
        #expect(line.hasPrefix(#"{"checkouts":400,"doubleCharges":0,"lostPayments":0,"stuckPayments":0,"doubleCaptures":0,"overRefunds":0,"#
            + #""lostOperations":0,"stuckOperations":0,"store":"sqlite","seconds":"#))
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
