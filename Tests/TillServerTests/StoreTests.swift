import Foundation
import Testing
import Till
import TillService
@testable import TillServer

@Suite("Payment stores: one suite, SQLite and PostgreSQL")
struct StoreTests {
    static let usd = Currency.lookup("USD")!
    static let amount = Money(minorUnits: 1000, currency: usd)

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
        #expect(try await count(store, "till_schema_migrations") == Schema.migrations(.sqlite).count)
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
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        // Deciding on a stale view of the attempts (here: none) is refused.
        await #expect(throws: StoreError.self) { try await store.addAttempt(.generate(), payment: id, gateway: "g", expected: []) }
        // And the same sequence number twice is refused by the schema itself.
        await #expect(throws: (any Error).self) {
            try await execute(store, """
                INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, created_at, updated_at)
                VALUES ('dup-\(attempt)', '\(id)', 1, 'g', 'created', 0, 0)
                """)
        }
        _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Self.amount))
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

    @Test("an attempt keeps its chosen return URL and is marked submitted exactly once", arguments: StoreKind.everyStore)
    func submittedOnce(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        #expect(try await store.markSubmitted(attempt) == false)   // not prepared yet: not pending
        let url = URL(string: "https://shop.example.com/till/return?till_state=abc")!
        try await store.attemptPrepared(attempt, gatewayReference: "gw-1", returnURL: url)
        let marks = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await store.markSubmitted(attempt) } }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(marks.filter { $0 }.count == 1)
        let stored = try #require(try await store.payment(attempt: attempt)?.attempts.first)
        #expect(stored.returnURL == url)
        #expect(stored.submittedAt != nil)
        try await store.close()
    }

    @Test("ingest: dedupe by event, forward-only, raw body kept", arguments: StoreKind.available)
    func ingest(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        try await store.attemptPrepared(attempt, gatewayReference: "gw-1", returnURL: URL(string: "shop://till/return?till_state=s"))
        let body = Data(#"{"raw":true}"#.utf8)
        let raw = RawNotification(gateway: "g", headers: ["x-sig": "abc"], body: body)
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Self.amount, eventID: "e1"),
                                       merchant: merchant) == .applied(attempt: .paid, payment: .paid))
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Self.amount, eventID: "e1"),
                                       merchant: merchant) == .duplicate)
        if case .stale = try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .failed, eventID: "e2"), merchant: merchant) {} else {
            Issue.record("a failure after paid was not stale")
        }
        // A verified report about an attempt this merchant does not have is quarantined, not applied.
        let stranger = AttemptReference.generate()
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: stranger, status: .paid, amount: Self.amount, eventID: "e3"),
                                       merchant: merchant) == .quarantined)
        #expect(try await store.quarantined(merchant: merchant, limit: 10).map(\.attempt) == [stranger])
        #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 2)
        #expect(try await store.notificationCount(attempt: attempt) == 2)
        #expect(try await store.notificationCount(attempt: AttemptReference(rawValue: "x' OR '1'='1")) == 0)
        let payment = try #require(try await store.payment(id: id, merchant: merchant))
        #expect(payment.status == .paid && payment.attempts.first?.gatewayReference == "gw-1")
        #expect(try await store.payment(id: id, merchant: "someone-else") == nil)
        // Another merchant, or another gateway, can never settle this attempt.
        #expect(try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: .refunded, eventID: "x1"),
                                       merchant: "someone-else") == .quarantined)
        let otherGateway = RawNotification(gateway: "h", headers: [:], body: body)
        #expect(try await store.ingest(otherGateway, report: StatusReport(gateway: "h", attempt: attempt, status: .refunded, eventID: "x2"),
                                       merchant: merchant) == .quarantined)
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .paid)
        try await store.close()
    }

    @Test("a paid report for another amount is stored as stale, never applied", arguments: StoreKind.everyStore)
    func amountMismatch(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        let cheap = StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Money(minorUnits: 1, currency: Self.usd), eventID: "e1")
        if case .stale = try await store.ingest(RawNotification(gateway: "g", headers: [:], body: Data()), report: cheap, merchant: merchant) {} else {
            Issue.record("a 0.01 payment settled a 10.00 one")
        }
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .pending)
        try await store.close()
    }

    @Test("refunds add up per attempt in the store: partial, then the rest, then nothing more; a refund of a never-paid attempt is stale; a confirmable paid notification waits for the inquiry",
          arguments: StoreKind.everyStore)
    func refunds(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))"
        func pay(_ reference: String) async throws -> (String, AttemptReference) {
            let id = "pay_\(UUID().uuidString.prefix(12))"
            _ = try await store.create(intent(reference), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
            let attempt = AttemptReference.generate()
            try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
            return (id, attempt)
        }
        let raw = RawNotification(gateway: "g", headers: [:], body: Data("{}".utf8))
        func refund(_ attempt: AttemptReference, _ minor: Int64?, _ status: PaymentStatus = .refunded, event: String) async throws -> ApplyOutcome {
            try await store.ingest(raw, report: StatusReport(gateway: "g", attempt: attempt, status: status,
                                                             amount: minor.map { Money(minorUnits: $0, currency: Self.usd) }, eventID: event),
                                   merchant: merchant)
        }
        // Never paid: a signed refund moves nothing.
        let (unpaid, unpaidAttempt) = try await pay("o-unpaid")
        if case .stale = try await refund(unpaidAttempt, 1000, event: "r0") {} else { Issue.record("a refund of a never-paid attempt applied") }
        #expect(try await store.payment(id: unpaid, merchant: merchant)?.status == .pending)

        let (id, attempt) = try await pay("o-paid")
        _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Self.amount))
        if case .stale = try await refund(attempt, nil, event: "r-none") {} else { Issue.record("a refund without an amount applied") }
        // The gateway calls it "refunded", but 4.00 of 10.00 is a partial refund.
        #expect(try await refund(attempt, 400, event: "r1") == .applied(attempt: .partiallyRefunded, payment: .partiallyRefunded))
        #expect(try await store.payment(id: id, merchant: merchant)?.attempts.first?.refundedMinorUnits == 400)
        // 7.00 more would exceed what was captured.
        if case .stale = try await refund(attempt, 700, .partiallyRefunded, event: "r2") {} else { Issue.record("refunds above the captured applied") }
        #expect(try await refund(attempt, 600, .partiallyRefunded, event: "r3") == .applied(attempt: .refunded, payment: .refunded))
        if case .stale = try await refund(attempt, 1, .partiallyRefunded, event: "r4") {} else { Issue.record("a refund after everything went back") }
        let stored = try #require(try await store.payment(id: id, merchant: merchant))
        #expect(stored.status == .refunded && stored.attempts.first?.refundedMinorUnits == 1000)

        // A paid notification its module asks to confirm is kept and waits for the server's own inquiry.
        let (confirmed, confirmedAttempt) = try await pay("o-confirm")
        let paid = StatusReport(gateway: "g", attempt: confirmedAttempt, status: .paid, amount: Self.amount, eventID: "p1")
        if case .needsInquiry = try await store.ingest(raw, report: paid, merchant: merchant, source: .notificationToConfirm) {} else {
            Issue.record("a confirmable notification applied by itself")
        }
        #expect(try await store.payment(id: confirmed, merchant: merchant)?.status == .pending)
        #expect(try await store.apply(paid) == .applied(attempt: .paid, payment: .paid))
        try await store.close()
    }

    @Test("a payment's status follows its attempts: a new attempt after a failure is pending, a later authorisation shows",
          arguments: StoreKind.everyStore)
    func derived(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let first = AttemptReference.generate(), second = AttemptReference.generate()
        try await store.addAttempt(first, payment: id, gateway: "g", expected: [])
        _ = try await store.apply(StatusReport(gateway: "g", attempt: first, status: .cancelled))
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .cancelled)
        let attempts = try #require(try await store.payment(id: id, merchant: merchant)).attempts
        try await store.addAttempt(second, payment: id, gateway: "h", expected: attempts)
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .pending)
        _ = try await store.apply(StatusReport(gateway: "h", attempt: second, status: .authorized, amount: Self.amount))
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .authorized)
        try await store.close()
    }

    @Test("concurrent reports for one payment serialise: exactly one applies", arguments: StoreKind.available)
    func concurrent(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(intent("o-1"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        let outcomes = try await withThrowingTaskGroup(of: ApplyOutcome.self) { group in
            for i in 0..<20 {
                group.addTask {
                    try await store.ingest(RawNotification(gateway: "g", headers: [:], body: Data()),
                                           report: StatusReport(gateway: "g", attempt: attempt, status: i % 2 == 0 ? .paid : .failed,
                                                                amount: Self.amount, eventID: "e\(i % 4)"), merchant: merchant)
                }
            }
            return try await group.reduce(into: [ApplyOutcome]()) { $0.append($1) }
        }
        // Each event is stored once. If a failure came first, the paid notification alone does not turn it
        // paid: it asks for the server's own inquiry, whose answer does (money that moved is never lost).
        let status = try #require(try await store.payment(id: id, merchant: merchant)?.status)
        if status == .failed {
            #expect(outcomes.contains { if case .needsInquiry = $0 { true } else { false } })
            _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Self.amount, eventID: "inquiry"),
                                      source: .inquiry)
        }
        #expect(try await store.payment(id: id, merchant: merchant)?.status == .paid)
        #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 4)
        #expect(outcomes.filter { if case .applied = $0 { true } else { false } }.count <= 2)
        try await store.close()
    }
}
