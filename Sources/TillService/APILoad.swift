import Foundation
import Till

/// How busy the merchant API is: its requests in flight, counted by the server as they come and go. The event
/// deliverer reads it to yield to the API (``EventDeliverySettings/busyRequestsInFlight``): a backlog of events is
/// background work, a payment waiting for its answer is not.
public final class APILoad: Sendable {
    private let inFlight = Locked(0)

    public init() {}

    /// Requests the API is answering now.
    public var requestsInFlight: Int { inFlight.withLock { $0 } }

    /// Counts a request in for as long as `body` runs.
    public func counting<T>(_ body: () async throws -> T) async rethrows -> T {
        inFlight.withLock { $0 += 1 }
        defer { inFlight.withLock { $0 -= 1 } }
        return try await body()
    }
}
