import Foundation
import Testing
import Till
@testable import TillServer

@Suite("Payment stores: one suite, SQLite and PostgreSQL")
struct StoreTests {
    static let usd = Currency.lookup("USD")!

    func intent(_ reference: String) -> PaymentIntent {
        PaymentIntent(merchantReference: reference, amount: Money(minorUnits: 1000, currency: Self.usd), method: .card)
    }

    func execute(_ store: any PaymentStore, _ sql: String) async throws {
        if let sqlite = store as? SQLitePaymentStore { try await sqlite.executeUnchecked(sql) }
        if let postgres = store as? PostgresPaymentStore { try await postgres.executeUnchecked(sql) }
    }

    @Test("migrations are idempotent", arguments: StoreKind.available)
    func migrations(kind: StoreKind) async throws {
        let store = try await kind.open()
        try await store.migrate()
        try await store.migrate()
        #expect(try await count(store, "till_schema_migrations") == 1)
        try await store.close()
    }

    @Test("the schema refuses what the code must never do, even when the code is bypassed", arguments: StoreKind.available)
    func guards(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        guard case .created = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h") else {
            Issue.record("not created"); return
        }
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, sequence: 1, gateway: "g")
        // The same sequence number twice: refused by the schema.
        await #expect(throws: StoreError.self) { try await store.addAttempt(.generate(), payment: id, sequence: 1, gateway: "g") }
        _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .paid))
        // Raw SQL that would un-pay the payment or the attempt: refused by the triggers.
        await #expect(throws: (any Error).self) { try await execute(store, "UPDATE till_payments SET status = 'failed' WHERE id = '\(id)'") }
        await #expect(throws: (any Error).self) {
            try await execute(store, "UPDATE till_attempts SET status = 'pending' WHERE reference = '\(attempt)'")
        }
        // A second payment with the same merchant reference: refused by the schema.
        await #expect(throws: (any Error).self) {
            try await execute(store, """
                INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at)
                VALUES ('dup-\(id)', '\(merchant)', 'o-1', 1, 'USD', 'created', '{}', 0, 0)
                """)
        }
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .paid)
        try await store.close()
    }

    @Test("ingest: dedupe by event, forward-only, raw body kept", arguments: StoreKind.available)
    func ingest(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, sequence: 1, gateway: "g")
        try await store.attemptPrepared(attempt, gatewayReference: "gw-1")
        let body = Data(#"{"raw":true}"#.utf8)
        let raw = RawNotification(gateway: "g", headers: ["x-sig": "abc"], body: body)
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .paid, eventID: "e1"))
                == .applied(attempt: .paid, payment: .paid))
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .paid, eventID: "e1")) == .duplicate)
        if case .stale = try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .failed, eventID: "e2")) {} else {
            Issue.record("a failure after paid was not stale")
        }
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: .generate(), status: .paid, eventID: "e3")) == .unknownAttempt)
        #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 2)
        let payment = try #require(try await store.payment(id: id, merchant: merchant))
        #expect(payment.status == .paid && payment.attempts.first?.gatewayReference == "gw-1")
        #expect(try await store.payment(id: id, merchant: "someone-else") == nil)
        try await store.close()
    }

    @Test("concurrent reports for one payment serialise: exactly one applies", arguments: StoreKind.available)
    func concurrent(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, sequence: 1, gateway: "g")
        let outcomes = try await withThrowingTaskGroup(of: ApplyOutcome.self) { group in
            for i in 0..<20 {
                group.addTask {
                    try await store.ingest(RawNotification(gateway: "g", headers: [:], body: Data()),
                                           report: StatusReport(gateway: "g", attempt: attempt, status: i % 2 == 0 ? .paid : .failed,
                                                                eventID: "e\(i % 4)"))
                }
            }
            return try await group.reduce(into: [ApplyOutcome]()) { $0.append($1) }
        }
        // Whatever the order, the payment ends paid (a failure before the payment may be applied,
        // then paid overrides it: money that moved is never lost) and each event is stored once.
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .paid)
        #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 4)
        #expect(outcomes.filter { if case .applied = $0 { true } else { false } }.count <= 2)
        try await store.close()
    }
}
