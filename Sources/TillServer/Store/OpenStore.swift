import Foundation
import Till
import TillService

/// Opens the store a storage URL names: `sqlite:PATH` or `postgres://…` (with a pool of at most
/// `postgresConnections`). `recordsEvents` false writes no events (only a benchmark's yardstick does that).
public func openStore(_ url: String, postgresConnections: Int = PostgresPaymentStore.defaultConnections,
                      recordsEvents: Bool = true) throws -> any PaymentStore {
    if url.hasPrefix("sqlite:") { return try SQLitePaymentStore(path: String(url.dropFirst("sqlite:".count)), recordsEvents: recordsEvents) }
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
        return try PostgresPaymentStore(url: url, connections: postgresConnections, recordsEvents: recordsEvents)
    }
    throw StoreError.unavailable("unsupported storage URL (expected sqlite:PATH or postgres://…)")
}

/// Benchmark support, outside ``PaymentStore`` (no server path uses it): both database stores seed payments in bulk.
package protocol PaymentSeeding: PaymentStore {
    /// Creates `count` payments for `merchant`, each with one pending attempt on `gateway`, in one transaction.
    /// Returns the attempt references.
    func seedPendingAttempts(count: Int, merchant: String, gateway: GatewayID, amount: Money) async throws -> [AttemptReference]

    /// Creates `count` payments for `merchant`, each with its `payment.created` event pending delivery, in bulk.
    func seedPendingEvents(count: Int, merchant: String) async throws
}

extension PaymentSeeding {
    /// The payments and events ``seedPendingEvents(count:merchant:)`` writes: (payment, intent JSON, event).
    func seededEvents(count: Int, merchant: String) throws -> [(payment: StoredPayment, intentJSON: String, event: StoredEvent)] {
        let now = Date(storedMillis: Date().storedMillis)
        let amount = Money(minorUnits: 1000, currency: Currency.lookup("USD")!)
        return try (0..<count).map { i in
            let id = "seed_ev_\(UUID().uuidString.prefix(13).lowercased())_\(i)"
            let intent = PaymentIntent(merchantReference: "seed-ev-\(id)", amount: amount, method: .card)
            let payment = StoredPayment(id: id, merchantID: merchant, intent: intent, status: .created, attempts: [], createdAt: now, updatedAt: now)
            guard let event = try EventRules.events(before: nil, after: payment, lastSequence: 0, now: now).first else {
                throw StoreError.unavailable("a new payment writes no event")
            }
            return (payment, try SQLitePaymentStore.encode(intent), event)
        }
    }
}

extension SQLitePaymentStore: PaymentSeeding {}
extension PostgresPaymentStore: PaymentSeeding {}
