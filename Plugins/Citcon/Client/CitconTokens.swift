import Foundation
import Till

/// An access token and when it stops working.
struct CitconToken: Sendable, Hashable {
    var value: String
    var expiresAt: Date
}

/// Caches the merchant's access tokens (one per type) until shortly before they expire, so each
/// charge or inquiry does not cost a token request. Owned by one ``CitconGateway`` value and its
/// copies; never shared between merchants.
actor CitconTokenCache {
    private var tokens: [CitconTokenType: CitconToken] = [:]
    private var inFlight: [CitconTokenType: Task<CitconToken, any Error>] = [:]

    /// A cached token with at least `minimumLifetime` left, or a new one from `fetch` (one request
    /// at a time per type, shared by concurrent callers).
    func token(_ type: CitconTokenType, minimumLifetime: TimeInterval, now: Date = Date(),
               fetch: @escaping @Sendable () async throws -> CitconToken) async throws -> CitconToken {
        if let cached = tokens[type], cached.expiresAt.timeIntervalSince(now) > minimumLifetime { return cached }
        if let running = inFlight[type] { return try await running.value }
        let task = Task { try await fetch() }
        inFlight[type] = task
        defer { inFlight[type] = nil }
        let token = try await task.value
        tokens[type] = token
        return token
    }

    /// Forgets a token Citcon refused (HTTP 401), unless it was already replaced.
    func invalidate(_ type: CitconTokenType, value: String) {
        if tokens[type]?.value == value { tokens[type] = nil }
    }
}
