import Foundation
import Till

/// Where a gateway stands for routing.
public enum HealthTier: Int, Sendable, Comparable {
    /// Closed circuit, good success rate — or a half-open circuit with a probe slot free.
    case healthy = 0
    /// Closed circuit, but the recent success rate is below the merchant's minimum.
    case degraded = 1
    /// Open circuit (or half-open with every probe slot taken): tried last, never dropped.
    case open = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Live health of one merchant's gateways: a sliding-window success rate and a consecutive-failure
/// circuit breaker with half-open probing.
///
/// A *failure* here is the gateway not working (unreachable, timed out, 5xx, unverifiable answer),
/// not a customer's decline. Time comes from the injected clock, so tests and chaos runs control it.
public final class HealthMonitor: Sendable {
    public let settings: HealthSettings
    private let clock: any TillClock

    private struct State {
        var outcomes: [Bool]
        var next = 0
        var count = 0
        var successes = 0
        var consecutiveFailures = 0
        var openedAt: Duration?
        var probesInFlight = 0

        init(window: Int) { outcomes = Array(repeating: false, count: window) }

        mutating func push(_ success: Bool) {
            if count == outcomes.count {
                if outcomes[next] { successes -= 1 }
            } else {
                count += 1
            }
            outcomes[next] = success
            if success { successes += 1 }
            next = (next + 1) % outcomes.count
        }
    }

    private let states = Locked<[GatewayID: State]>([:])
    /// How many gateways have an open circuit or a full-enough window with failures; while zero,
    /// every gateway is healthy and routing needs neither the clock nor the table.
    private let watch = Locked<Int>(0)

    public init(settings: HealthSettings = HealthSettings(), clock: any TillClock = SystemClock()) {
        self.settings = settings
        self.clock = clock
    }

    /// The tiers of several gateways, read under one lock with one clock reading.
    public func tiers(of gateways: [GatewayID]) -> [HealthTier] {
        if watch.withLock({ $0 }) == 0 { return Array(repeating: .healthy, count: gateways.count) }
        let now = clock.now
        return states.withLock { table in
            gateways.map { table[$0].map { tier($0, now: now) } ?? .healthy }
        }
    }

    /// The gateway's tier now.
    public func tier(of gateway: GatewayID) -> HealthTier {
        let now = clock.now
        return states.withLock { table in
            guard let state = table[gateway] else { return .healthy }
            return tier(state, now: now)
        }
    }

    private func tier(_ state: State, now: Duration) -> HealthTier {
        if let openedAt = state.openedAt {
            let halfOpen = now - openedAt >= .milliseconds(settings.openMillis)
            return halfOpen && state.probesInFlight < settings.halfOpenProbes ? .healthy : .open
        }
        if state.count >= settings.minSamples,
           Double(state.successes) < settings.minSuccessRate * Double(state.count) {
            return .degraded
        }
        return .healthy
    }

    /// Call when an attempt on `gateway` starts. Returns true when it took a half-open probe slot;
    /// pass that to ``record(_:success:releasingProbe:)``.
    @discardableResult
    public func attemptStarted(on gateway: GatewayID) -> Bool {
        let now = clock.now
        return states.withLock { table in
            guard var state = table[gateway], let openedAt = state.openedAt,
                  now - openedAt >= .milliseconds(settings.openMillis),
                  state.probesInFlight < settings.halfOpenProbes else { return false }
            state.probesInFlight += 1
            table[gateway] = state
            return true
        }
    }

    /// Records whether the gateway worked. A success closes a half-open circuit; a failure while
    /// half-open re-opens it; `failureThreshold` consecutive failures open a closed one.
    public func record(_ gateway: GatewayID, success: Bool, releasingProbe: Bool = false) {
        let now = clock.now
        states.withLock { table in
            var state = table[gateway] ?? State(window: settings.window)
            state.push(success)
            if releasingProbe, state.probesInFlight > 0 { state.probesInFlight -= 1 }
            if success {
                state.consecutiveFailures = 0
                state.openedAt = nil
                state.probesInFlight = 0
            } else {
                state.consecutiveFailures += 1
                if state.openedAt != nil {
                    state.openedAt = now           // a failed probe re-opens for another full period
                } else if state.consecutiveFailures >= settings.failureThreshold {
                    state.openedAt = now
                }
            }
            let before = table[gateway].map(Self.mayBeUnhealthy) ?? false
            let after = Self.mayBeUnhealthy(state)
            table[gateway] = state
            if before != after { watch.withLock { $0 += after ? 1 : -1 } }
        }
    }

    /// Whether a state can yield a tier other than healthy (an open circuit, or failures in the window).
    private static func mayBeUnhealthy(_ state: State) -> Bool {
        state.openedAt != nil || state.successes < state.count
    }

    /// A readable summary of one gateway (for the explainer).
    public func summary(of gateway: GatewayID) -> String {
        let now = clock.now
        return states.withLock { table in
            guard let state = table[gateway] else { return "no samples" }
            let rate = state.count == 0 ? 1 : Double(state.successes) / Double(state.count)
            var text = "success \(Int((rate * 100).rounded()))% of \(state.count), \(state.consecutiveFailures) consecutive failures"
            if let openedAt = state.openedAt {
                let open = now - openedAt < .milliseconds(settings.openMillis)
                text += open ? ", circuit open" : ", circuit half-open (\(state.probesInFlight)/\(settings.halfOpenProbes) probes)"
            }
            return text
        }
    }
}

/// Till's notion of time: elapsed time since an arbitrary origin, and sleeping. Injected so tests
/// and chaos runs can use virtual time.
public protocol TillClock: Sendable {
    var now: Duration { get }
    func sleep(for duration: Duration) async throws
}

/// Real time, from `ContinuousClock`.
public struct SystemClock: TillClock {
    private let origin = ContinuousClock.now
    public init() {}
    public var now: Duration { ContinuousClock.now - origin }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

/// Virtual time that moves only when someone sleeps or advances it. For tests and chaos runs.
package final class VirtualClock: TillClock {
    private let current = Locked<Duration>(.zero)
    package init() {}
    package var now: Duration { current.withLock { $0 } }
    package func sleep(for duration: Duration) async throws { advance(by: duration) }
    package func advance(by duration: Duration) { current.withLock { $0 += duration } }
}
