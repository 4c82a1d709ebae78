import Foundation
import Till

/// Per-gateway table: for a gateway's decline code, may the router try the next gateway?
///
/// Every code not listed gets ``defaultDecision``, which is ``Decision/doNotRetry``: moving to
/// another gateway is opted into code by code, never assumed.
public struct DecisionTable: Sendable, Hashable, Codable {
    public enum Decision: String, Sendable, Hashable, Codable {
        /// Try the next gateway.
        case retryNext = "retry_next"
        /// Stop; report the failure.
        case doNotRetry = "do_not_retry"
        /// Ask the app to step the customer up (3-D Secure, another method); do not cascade.
        case stepUp = "step_up"
    }

    public var entries: [String: Decision]
    public var defaultDecision: Decision

    public init(_ entries: [String: Decision] = [:], defaultDecision: Decision = .doNotRetry) {
        self.entries = entries
        self.defaultDecision = defaultDecision
    }

    /// The decision for a gateway code; the default for `nil` or unlisted codes.
    public func decision(for code: String?) -> Decision {
        code.flatMap { entries[$0] } ?? defaultDecision
    }

    /// This table with `overrides` (a merchant's configuration) taking precedence.
    public func overriding(with overrides: [String: Decision]) -> DecisionTable {
        DecisionTable(entries.merging(overrides) { _, merchant in merchant }, defaultDecision: defaultDecision)
    }
}
