import Foundation
import Logging
import ServiceLifecycle
import Till
import TillOrchestration

/// Rebuilds the ``SuccessRateScores`` of every merchant whose routing learns from the store's attempts, every
/// `interval`: so every server instance sharing the store scores from the same outcomes (its own and the others'), and
/// no routing decision waits for a query (it reads the table in memory).
///
/// An outcome reaches the scores at most `interval` after its attempt ended. A failed refresh is logged and the scores
/// kept as they were.
public struct RoutingScoresRefresher: Service, CustomStringConvertible {
    public var description: String { "RoutingScoresRefresher" }

    let merchants: [(id: String, scores: SuccessRateScores)]
    let store: any PaymentStore
    let interval: Duration
    let logger: Logger

    /// Refreshes the merchants of `state` whose routing learns.
    public init(state: ServerState, store: any PaymentStore, interval: Duration = .seconds(10), logger: Logger = Logger(label: "till.routing")) {
        merchants = state.merchants.compactMap { merchant in merchant.scores.map { (merchant.configuration.id, $0) } }
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    /// Whether any merchant's routing learns (otherwise the service has nothing to do).
    public var isNeeded: Bool { !merchants.isEmpty }

    public func run() async throws {
        guard isNeeded else { return }
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                do {
                    try await refreshOnce()
                } catch {
                    if Task.isCancelled { break }
                    logger.error("routing scores not refreshed", metadata: ["error": .string(Reconciler.describe(error))])
                }
                do { try await Task.sleep(for: interval) } catch { break }
            }
        }
    }

    /// Reads each learning merchant's recent outcomes and replaces its scores with them. A merchant whose read fails
    /// keeps its scores (the others are refreshed); the first failure is thrown after.
    public func refreshOnce(now: Date = Date()) async throws {
        var failure: (any Error)?
        for (merchant, scores) in merchants {
            let window = scores.rules.values.map(\.window).max() ?? .zero
            let since = now.addingTimeInterval(-Double(window.components.seconds))
            do {
                let rows = try await store.routingOutcomes(merchant: merchant, since: since)
                scores.replace(with: Self.counts(rows, now: now))
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// The customers' answers among `rows` (``LearningOutcome``), each aged from the middle of its 10 seconds to `now`.
    public static func counts(_ rows: [RoutingOutcomeCount], now: Date) -> [SuccessRateScores.Count] {
        let nowMillis = now.storedMillis
        let bucket = RoutingOutcomeCount.bucketMillis
        return rows.compactMap { row in
            guard let approved = LearningOutcome.of(status: row.status, gatewayCode: row.gatewayCode),
                  let currency = Currency.lookup(row.currency), let action = PaymentAction(rawValue: row.action) else { return nil }
            return SuccessRateScores.Count(gateway: row.gateway, method: PaymentMethod(rawValue: row.method), currency: currency,
                                           country: row.country, cardIIN: row.cardIIN, action: action, approved: approved,
                                           age: .milliseconds(max(0, nowMillis - (row.bucket * bucket + bucket / 2))), count: row.count)
        }
    }
}
