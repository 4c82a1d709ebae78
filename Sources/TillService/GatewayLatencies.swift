import Foundation
import Till

/// The last few hundred request durations of each gateway in this instance, for the console's percentiles (the
/// Prometheus histogram keeps buckets; a person wants p50, p90 and p99). Bounded: `capacity` samples per gateway.
public final class GatewayLatencies: Sendable {
    /// Percentiles of the samples kept, in milliseconds.
    public struct Summary: Sendable, Hashable {
        public var count: Int
        public var p50: Double
        public var p90: Double
        public var p99: Double
    }

    private struct Ring {
        var samples: [Double] = []
        var next = 0
    }

    private let capacity: Int
    private let rings = Locked<[GatewayID: Ring]>([:])

    public init(capacity: Int = 512) {
        self.capacity = max(1, capacity)
    }

    /// Keeps one request's duration, in place of the oldest once full.
    public func record(_ gateway: GatewayID, milliseconds: Double) {
        rings.withLock { table in
            var ring = table[gateway] ?? Ring()
            if ring.samples.count < capacity { ring.samples.append(milliseconds) } else { ring.samples[ring.next] = milliseconds }
            ring.next = (ring.next + 1) % capacity
            table[gateway] = ring
        }
    }

    /// The gateway's percentiles (nearest rank), or nil before its first request.
    public func summary(of gateway: GatewayID) -> Summary? {
        guard let samples = rings.withLock({ $0[gateway]?.samples }), !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        func rank(_ p: Double) -> Double { sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))] }
        return Summary(count: sorted.count, p50: rank(0.5), p90: rank(0.9), p99: rank(0.99))
    }
}
