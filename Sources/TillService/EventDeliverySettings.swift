import Foundation
import Till
import TillOrchestration

/// The `server.events` block: how the server delivers events to the merchants' webhooks. Every key is optional.
public struct EventDeliverySettings: Sendable, Hashable, Codable {
    /// Whether `till server` delivers events (they are recorded either way, and listed by `GET /v1/events`).
    public var enabled: Bool
    /// The whole of one post, from connecting to the last byte of the answer: a receiver that hangs or trickles is
    /// cut off then, and the event retried.
    public var timeoutSeconds: Double
    /// Posts in flight at once, across all merchants.
    public var concurrency: Int
    /// Events claimed per pass.
    public var batch: Int
    /// Time between two passes when there was nothing to deliver (a pass that delivered something is followed at once).
    public var pollIntervalSeconds: Double
    /// After an event's `n`-th failed delivery (from 1) the next is due `retryBaseSeconds × 2ⁿ⁻¹` later, at most
    /// `retryMaxSeconds`, less a random part of up to half (so receivers coming back are not all hit at once).
    public var retryBaseSeconds: Double
    public var retryMaxSeconds: Double
    /// How long after its creation an event is retried; then it is `failed` (`POST /v1/events/{id}/redeliver` tries again).
    public var retryWindowSeconds: Double
    /// The API is busy while it has at least this many requests in flight (0: never). Then the deliverer yields to it:
    /// it starts at most `busyEventsPerSecond` posts a second, and claims no more than a second's worth at a time, so a
    /// backlog of events does not take the CPU and the store's writer from the payments waiting for their answers. It
    /// goes back to `concurrency` posts at once when the API has been below the mark for a second.
    public var busyRequestsInFlight: Int
    public var busyEventsPerSecond: Double

    public init(enabled: Bool = true, timeoutSeconds: Double = 10, concurrency: Int = 16, batch: Int = 100, pollIntervalSeconds: Double = 1,
                retryBaseSeconds: Double = 10, retryMaxSeconds: Double = 3_600, retryWindowSeconds: Double = 259_200,
                busyRequestsInFlight: Int = 8, busyEventsPerSecond: Double = 25) {
        self.enabled = enabled
        self.timeoutSeconds = timeoutSeconds
        self.concurrency = concurrency
        self.batch = batch
        self.pollIntervalSeconds = pollIntervalSeconds
        self.retryBaseSeconds = retryBaseSeconds
        self.retryMaxSeconds = retryMaxSeconds
        self.retryWindowSeconds = retryWindowSeconds
        self.busyRequestsInFlight = busyRequestsInFlight
        self.busyEventsPerSecond = busyEventsPerSecond
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled, timeoutSeconds, concurrency, batch, pollIntervalSeconds, retryBaseSeconds, retryMaxSeconds, retryWindowSeconds
        case busyRequestsInFlight, busyEventsPerSecond
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = EventDeliverySettings()
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
        timeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? d.timeoutSeconds
        concurrency = try c.decodeIfPresent(Int.self, forKey: .concurrency) ?? d.concurrency
        batch = try c.decodeIfPresent(Int.self, forKey: .batch) ?? d.batch
        pollIntervalSeconds = try c.decodeIfPresent(Double.self, forKey: .pollIntervalSeconds) ?? d.pollIntervalSeconds
        retryBaseSeconds = try c.decodeIfPresent(Double.self, forKey: .retryBaseSeconds) ?? d.retryBaseSeconds
        retryMaxSeconds = try c.decodeIfPresent(Double.self, forKey: .retryMaxSeconds) ?? d.retryMaxSeconds
        retryWindowSeconds = try c.decodeIfPresent(Double.self, forKey: .retryWindowSeconds) ?? d.retryWindowSeconds
        busyRequestsInFlight = try c.decodeIfPresent(Int.self, forKey: .busyRequestsInFlight) ?? d.busyRequestsInFlight
        busyEventsPerSecond = try c.decodeIfPresent(Double.self, forKey: .busyEventsPerSecond) ?? d.busyEventsPerSecond
    }

    /// Every problem, each with its path (`server.events.timeoutSeconds`).
    public func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        func check(_ value: Double, _ range: ClosedRange<Double>, _ key: String) {
            issues += Validators.range(value, range, field: "\(path).\(key)")
        }
        check(timeoutSeconds, 0.1...60, "timeoutSeconds")
        check(Double(concurrency), 1...256, "concurrency")
        check(Double(batch), 1...10_000, "batch")
        check(pollIntervalSeconds, 0.01...3_600, "pollIntervalSeconds")
        check(retryBaseSeconds, 0.01...86_400, "retryBaseSeconds")
        check(retryMaxSeconds, max(retryBaseSeconds, 0.01)...604_800, "retryMaxSeconds")
        check(retryWindowSeconds, 1...2_592_000, "retryWindowSeconds")
        check(Double(busyRequestsInFlight), 0...100_000, "busyRequestsInFlight")
        check(busyEventsPerSecond, 1...100_000, "busyEventsPerSecond")
        return issues
    }

    /// How long after its `failures`-th failed delivery (from 1) an event is tried again: `retryBaseSeconds × 2ⁿ⁻¹`
    /// at most `retryMaxSeconds`, scaled by `jitter` (from 0.5 to 1).
    public func retryDelay(afterFailures failures: Int, jitter: Double) -> TimeInterval {
        let exponent = Double(min(max(failures - 1, 0), 62))
        return min(retryBaseSeconds * pow(2, exponent), retryMaxSeconds) * min(max(jitter, 0.5), 1)
    }

    /// The claim on a batch: twice the time its posts take if every one times out (an event's endpoints are posted to at
    /// once, `concurrency` events at a time), and 10 s more for the store. An instance that dies holding a claim delays
    /// its events by this much.
    var leaseSeconds: Double {
        timeoutSeconds * (Double(batch) / Double(max(concurrency, 1))).rounded(.up) * 2 + 10
    }
}
