import Foundation
import Testing
import Till
import TillService
@testable import TillServer

/// SQLite's group commit (``GroupCommitWriter``): concurrent durable writes share transactions and syncs,
/// each caller answered only after its own write committed, and a failing write fails only itself.
@Suite("SQLite group commit")
struct GroupCommitTests {
    static let usd = Currency.lookup("USD")!

    static func open() async throws -> (SQLitePaymentStore, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-group-\(UUID().uuidString).sqlite").path
        let store = try SQLitePaymentStore(path: path)
        try await store.migrate()
        return (store, path)
    }

    static func intent(_ reference: String) -> PaymentIntent {
        PaymentIntent(merchantReference: reference, amount: Money(minorUnits: 1000, currency: usd), method: .card)
    }

    @Test("400 concurrent creates: every one committed and readable from another connection the moment it is answered, in fewer transactions than writes")
    func concurrentCreates() async throws {
        let (store, path) = try await Self.open()
        let before = store.groupCommitStatistics
        let reader = try SQLiteInspection(path: path)
        let missing = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<400 {
                group.addTask {
                    guard case .created(let payment) = try await store.create(Self.intent("o-\(i)"), merchant: "m", id: "pay_\(i)",
                                                                              idempotencyKey: "k-\(i)", requestHash: "h-\(i)") else { return 1 }
                    // Answered only after the commit: another connection sees it already.
                    return try await reader.count("till_payments", where: "id = '\(payment.id)'") == 1 ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(missing == 0)
        #expect(try await reader.count("till_payments") == 400)
        #expect(try await reader.count("till_idempotency_keys") == 400)
        let after = store.groupCommitStatistics
        #expect(after.writes - before.writes == 400)
        #expect(after.transactions - before.transactions < 400, "no two writes ever shared a transaction: \(after)")
        try await store.close()
    }

    @Test("a write that fails in a batch fails alone: of 30 concurrent first attempts on one payment one is added, the rest conflict; 60 creates beside them all commit")
    func failuresStayAlone() async throws {
        let (store, path) = try await Self.open()
        guard case .created = try await store.create(Self.intent("shared"), merchant: "m", id: "pay_shared", idempotencyKey: nil,
                                                     requestHash: "h") else { Issue.record("not created"); return }
        enum Result: Sendable { case added, conflict, created, other(String) }
        let results = try await withThrowingTaskGroup(of: Result.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    do {
                        try await store.addAttempt(.generate(), payment: "pay_shared", gateway: "g", expected: [])
                        return .added
                    } catch is StoreError { return .conflict }
                }
            }
            for i in 0..<60 {
                group.addTask {
                    if case .created = try await store.create(Self.intent("beside-\(i)"), merchant: "m", id: "pay_b\(i)", idempotencyKey: nil,
                                                              requestHash: "h") { return .created }
                    return .other("create \(i)")
                }
            }
            return try await group.reduce(into: [Result]()) { $0.append($1) }
        }
        #expect(results.filter { if case .added = $0 { true } else { false } }.count == 1)
        #expect(results.filter { if case .conflict = $0 { true } else { false } }.count == 29)
        #expect(results.filter { if case .created = $0 { true } else { false } }.count == 60)
        let reader = try SQLiteInspection(path: path)
        #expect(try await reader.count("till_attempts") == 1)
        #expect(try await reader.count("till_payments") == 61)
        try await store.close()
    }

    @Test("the same notification twice in one batch is stored once; a create that replays its idempotency key in the same batch finds the first")
    func orderWithinABatch() async throws {
        let (store, path) = try await Self.open()
        guard case .created = try await store.create(Self.intent("n"), merchant: "m", id: "pay_n", idempotencyKey: nil, requestHash: "h") else {
            Issue.record("not created"); return
        }
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: "pay_n", gateway: "g", expected: [])
        try await store.attemptPrepared(attempt, gatewayReference: nil, returnURL: nil)
        let raw = RawNotification(gateway: "g", headers: [:], body: Data("{}".utf8))
        let report = StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Money(minorUnits: 1000, currency: Self.usd), eventID: "e1")
        let outcomes = try await withThrowingTaskGroup(of: ApplyOutcome.self) { group in
            for _ in 0..<20 { group.addTask { try await store.ingest(raw, report: report, merchant: "m") } }
            return try await group.reduce(into: [ApplyOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .duplicate }.count == 19)
        let creates = try await withThrowingTaskGroup(of: CreateOutcome.self) { group in
            for _ in 0..<20 {
                group.addTask { try await store.create(Self.intent("same"), merchant: "m", id: "pay_\(UUID().uuidString.prefix(8))",
                                                       idempotencyKey: "same-key", requestHash: "same-hash") }
            }
            return try await group.reduce(into: [CreateOutcome]()) { $0.append($1) }
        }
        #expect(creates.filter { if case .created = $0 { true } else { false } }.count == 1)
        #expect(creates.filter { if case .replayed = $0 { true } else { false } }.count == 19)
        let reader = try SQLiteInspection(path: path)
        #expect(try await reader.count("till_notifications") == 1)
        #expect(try await reader.count("till_payments", where: "merchant_reference = 'same'") == 1)
        try await store.close()
    }
}
