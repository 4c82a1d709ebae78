import Foundation
import Testing
import Till
import TillOrchestration
import TillService
@testable import TillServer

/// The outbox in every store: the events a change writes, in its transaction, numbered per payment without gaps; the
/// claims that deliver a payment's events in order and never to two instances at once; redelivery; the list.
@Suite("Events: the outbox in every store")
struct EventStoreTests {
    static let usd = Currency.lookup("USD")!
    static let amount = Money(minorUnits: 1000, currency: usd)

    /// A payment taken through its whole life: created, an attempt prepared, paid by a notification (and the same
    /// notification again), half refunded by an operation of Till's.
    func paidAndRefunded(_ store: any PaymentStore, merchant: String) async throws -> (payment: String, attempt: AttemptReference) {
        let id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(PaymentIntent(merchantReference: "o-\(id)", amount: Self.amount, method: .card), merchant: merchant, id: id,
                                   idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        try await store.attemptPrepared(attempt, gatewayReference: "gw-1", returnURL: nil)
        let paid = StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: Self.amount, eventID: "n-1")
        let raw = RawNotification(gateway: "g", headers: [:], body: Data("{}".utf8))
        _ = try await store.ingest(raw, report: paid, merchant: merchant)
        #expect(try await store.ingest(raw, report: paid, merchant: merchant) == .duplicate)
        let half = Money(minorUnits: 500, currency: Self.usd)
        let created = try await store.addOperation(payment: id, merchant: merchant, idempotencyKey: "k-\(id)", requestHash: "r") { payment in
            StoredOperation(reference: OperationReference(attempt: attempt, kind: .refund, sequence: 1), paymentID: id, merchantID: merchant,
                            gateway: "g", status: .unknown, amount: half, isFinal: false, idempotencyKey: "k-\(id)", requestHash: "r",
                            createdAt: Date(), updatedAt: Date())
        }
        guard case .created(let operation) = created else { Issue.record("refund not stored"); return (id, attempt) }
        _ = try await store.settleOperation(operation.reference, report: OperationReport(reference: operation.reference, kind: .refund, status: .succeeded, amount: half))
        return (id, attempt)
    }

    @Test("every status change writes its events with the change, numbered 1, 2, 3… per payment; a duplicate writes none",
          arguments: StoreKind.everyStore)
    func lifecycle(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))"
        let (id, attempt) = try await paidAndRefunded(store, merchant: merchant)
        let events = try await store.events(merchant: merchant, query: EventQuery(limit: 100))
        #expect(events.map(\.type.rawValue) == [
            "payment.created",
            "attempt.created", "payment.pending",
            "attempt.pending",
            "attempt.paid", "payment.paid",
            "refund.created",
            "refund.succeeded", "attempt.partially_refunded", "payment.partially_refunded",
        ])
        #expect(events.map(\.sequence) == Array(1...events.count))
        #expect(Set(events.map(\.paymentID)) == [id])
        #expect(events.map(\.position) == events.map(\.position).sorted())
        let bodies = try events.map { try $0.decoded() }
        #expect(bodies.map(\.sequence) == events.map(\.sequence))
        #expect(bodies.map(\.id) == events.map(\.id))
        #expect(bodies.map(\.merchant) == Array(repeating: merchant, count: events.count))
        // Each body shows the payment as its change left it.
        #expect(bodies.first?.data.status == .created)
        #expect(bodies[5].data.status == .paid)
        #expect(bodies[5].attempt == nil)
        #expect(bodies[4].attempt == attempt)
        #expect(bodies.last?.data.status == .partiallyRefunded)
        #expect(bodies.last?.data.amountRefunded == Money(minorUnits: 500, currency: Self.usd))
        #expect(bodies[7].operation == "\(attempt)-r1")
        #expect(events.allSatisfy { $0.state == .pending && $0.attemptCount == 0 })
        // The list filters and pages.
        #expect(try await store.events(merchant: merchant, query: EventQuery(type: .payment(.paid))).map(\.sequence) == [6])
        let firstPage = try await store.events(merchant: merchant, query: EventQuery(limit: 4))
        let secondPage = try await store.events(merchant: merchant, query: EventQuery(after: firstPage.last!.position, limit: 4))
        #expect((firstPage + secondPage).map(\.sequence) == Array(1...8))
        #expect(try await store.events(merchant: "someone-else", query: EventQuery(paymentID: id)).isEmpty)
        #expect(try await store.event(id: events[0].id, merchant: "someone-else") == nil)
        #expect(try await store.event(id: events[0].id, merchant: merchant)?.body == events[0].body)
        try await store.close()
    }

    @Test("a payment's events are claimed one at a time, in order; a claim holds until it runs out; a stale claim records nothing",
          arguments: StoreKind.everyStore)
    func claims(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))"
        let (first, _) = try await paidAndRefunded(store, merchant: merchant)
        let (second, _) = try await paidAndRefunded(store, merchant: merchant)
        let now = Date().addingTimeInterval(5)
        let claimed = try await store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 100, merchant: merchant)
        // The earliest event of each payment, and nothing else.
        #expect(Set(claimed.map(\.paymentID)) == [first, second])
        #expect(claimed.map(\.sequence) == [1, 1])
        // A second instance claims nothing while the claim holds...
        #expect(try await store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 100, merchant: merchant).isEmpty)
        // ...and everything that is still first in line once it runs out (the first instance died).
        let later = now.addingTimeInterval(61)
        let reclaimed = try await store.claimDueEvents(now: later, claimedUntil: later.addingTimeInterval(60), limit: 100, merchant: merchant)
        #expect(reclaimed.map(\.id).sorted() == claimed.map(\.id).sorted())
        // The first instance's late record is refused; the current claim's is taken.
        let event = try #require(claimed.first { $0.paymentID == first })
        let attempt = StoredDeliveryAttempt(eventID: event.id, endpoint: "https://x.example/hook", at: now, statusCode: 200, latencyMillis: 3)
        #expect(try await store.recordDelivery(event: event.id, claimedUntil: now.addingTimeInterval(60), attempts: [attempt], result: .delivered) == false)
        #expect(try await store.recordDelivery(event: event.id, claimedUntil: later.addingTimeInterval(60), attempts: [attempt], result: .delivered))
        let delivered = try #require(try await store.event(id: event.id, merchant: merchant))
        #expect(delivered.state == .delivered && delivered.attemptCount == 1 && delivered.deliveredAt != nil)
        #expect(try await store.deliveryAttempts(event: event.id).count == 2)
        // The payment's next event is first in line now.
        let after = later.addingTimeInterval(120)
        let next = try await store.claimDueEvents(now: after, claimedUntil: after.addingTimeInterval(60), limit: 100, merchant: merchant)
        #expect(next.first { $0.paymentID == first }?.sequence == 2)
        // A retry keeps it pending and holds the payment's later events back until it is due.
        let retryAt = after.addingTimeInterval(30)
        let retried = try #require(next.first { $0.paymentID == first })
        #expect(try await store.recordDelivery(event: retried.id, claimedUntil: after.addingTimeInterval(60), attempts: [], result: .retry(at: retryAt)))
        let blocked = try await store.claimDueEvents(now: after.addingTimeInterval(1), claimedUntil: after.addingTimeInterval(61), limit: 100,
                                                     merchant: merchant)
        #expect(!blocked.contains { $0.paymentID == first })
        try await store.close()
    }

    @Test("redelivery makes any event pending and due; the backlog counts pending events", arguments: StoreKind.everyStore)
    func redelivery(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))"
        _ = try await paidAndRefunded(store, merchant: merchant)
        let now = Date().addingTimeInterval(5)
        let claimed = try #require(try await store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 1, merchant: merchant).first)
        try await store.recordDelivery(event: claimed.id, claimedUntil: now.addingTimeInterval(60), attempts: [], result: .failed)
        #expect(try await store.event(id: claimed.id, merchant: merchant)?.state == .failed)
        #expect(try await store.redeliver(event: claimed.id, merchant: "someone-else", now: now) == nil)
        let again = try #require(try await store.redeliver(event: claimed.id, merchant: merchant, now: now))
        #expect(again.state == .pending)
        #expect(try await store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 1, merchant: merchant).first?.id == claimed.id)
        let backlog = try await store.eventBacklog()
        #expect(backlog.pending >= 10)
        #expect(backlog.oldestCreatedAt != nil)
        try await store.close()
    }

    @Test("a store opened without events writes none (the benchmark's yardstick)", arguments: StoreKind.available)
    func off(kind: StoreKind) async throws {
        let store: any PaymentStore = switch kind {
        case .sqlite: try SQLitePaymentStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("till-test-\(UUID()).sqlite").path,
                                             recordsEvents: false)
        default: try PostgresPaymentStore(url: StoreKind.postgresURL!, recordsEvents: false)
        }
        try await store.migrate()
        let merchant = "m-\(UUID().uuidString.prefix(8))"
        _ = try await paidAndRefunded(store, merchant: merchant)
        #expect(try await store.events(merchant: merchant, query: EventQuery()).isEmpty)
        try await store.close()
    }
}

@Suite("Events: the body")
struct EventBodyTests {
    @Test("an event's body is byte for byte what JSONEncoder gives for the whole WebhookEvent (sorted keys, ISO 8601 dates)")
    func bodyIsTheEncodedEvent() async throws {
        let store = InMemoryPaymentStore()
        let merchant = "m-body"
        _ = try await EventStoreTests().paidAndRefunded(store, merchant: merchant)
        let events = try await store.events(merchant: merchant, query: EventQuery(limit: 100))
        #expect(events.count == 10)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        for event in events {
            #expect(try encoder.encode(try event.decoded()) == event.body, "\(event.type)")
        }
    }
}
