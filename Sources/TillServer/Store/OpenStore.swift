import Foundation
import Till
import TillService

/// Opens the store a storage URL names: `sqlite:PATH` or `postgres://…` (with a pool of at most
/// `postgresConnections`).
public func openStore(_ url: String, postgresConnections: Int = PostgresPaymentStore.defaultConnections) throws -> any PaymentStore {
    if url.hasPrefix("sqlite:") { return try SQLitePaymentStore(path: String(url.dropFirst("sqlite:".count))) }
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
        return try PostgresPaymentStore(url: url, connections: postgresConnections)
    }
    throw StoreError.unavailable("unsupported storage URL (expected sqlite:PATH or postgres://…)")
}

/// Benchmark support, outside ``PaymentStore`` (no server path uses it): both database stores seed payments in bulk.
package protocol PaymentSeeding: PaymentStore {
    /// Creates `count` payments for `merchant`, each with one pending attempt on `gateway`, in one transaction.
    /// Returns the attempt references.
    func seedPendingAttempts(count: Int, merchant: String, gateway: GatewayID, amount: Money) async throws -> [AttemptReference]
}

extension SQLitePaymentStore: PaymentSeeding {}
extension PostgresPaymentStore: PaymentSeeding {}
