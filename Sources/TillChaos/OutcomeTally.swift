import Foundation
import Till
import TillOrchestration
import TillService
import TillServer
import TillTesting

/// The chaos run's tally of what applying a report did (``ApplyOutcome``): per notification ingested, and per report
/// the server applied itself (a gateway's answer, an inquiry), observed on the real store by TillTesting's
/// ``ObservedPaymentStore``. The chaos run counts production's own outcomes this way, not a copy of its rules.
final class OutcomeTally: Sendable {
    /// Outcome tallies by their stored name (`applied`, `duplicate`, `stale`, `needs_inquiry`, `quarantined`, …).
    struct Tally: Sendable, Hashable {
        var notifications: [String: Int] = [:]
        var answers: [String: Int] = [:]
        var inquiries: [String: Int] = [:]
        /// Statements about operations the server applied itself (a gateway's answer or an inquiry).
        var operations: [String: Int] = [:]
    }

    private let tally = Locked(Tally())

    /// The tallies so far.
    var counts: Tally { tally.withLock { $0 } }

    /// `inner`, observed into this tally.
    func observing(_ inner: any PaymentStore) -> ObservedPaymentStore {
        ObservedPaymentStore(inner) { [self] event in
            switch event {
            case .ingested(let outcome): count(outcome, \.notifications)
            case .applied(let outcome, source: .inquiry): count(outcome, \.inquiries)
            case .applied(let outcome, source: _): count(outcome, \.answers)
            case .settled(let outcome): tally.withLock { $0.operations[outcome.storedName, default: 0] += 1 }
            case .read: break
            }
        }
    }

    private func count(_ outcome: ApplyOutcome, _ key: WritableKeyPath<Tally, [String: Int]>) {
        tally.withLock { $0[keyPath: key][outcome.storedName, default: 0] += 1 }
    }
}
