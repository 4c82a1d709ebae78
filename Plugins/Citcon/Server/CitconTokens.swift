import Foundation
import TillGatewayKit

/// An access token and when it stops working.
struct CitconToken: Sendable, Hashable {
    var value: String
    var expiresAt: Date
}

/// Caches the merchant's access tokens (one per type) until shortly before they expire, so each
/// charge or inquiry does not cost a token request. Shared by one ``CitconServer`` value and its
/// copies; never shared between merchants.
struct CitconTokenCache: Sendable {
    private struct State {
        var tokens: [CitconTokenType: CitconToken] = [:]
        /// The request under way for each type, which concurrent callers share.
        var inFlight: [CitconTokenType: Task<CitconToken, any Error>] = [:]
    }

    private let state = Locked(State())

    /// A cached token with at least `minimumLifetime` left, or a new one from `fetch` (one request
    /// at a time per type, shared by concurrent callers). A failed request is not cached.
    func token(_ type: CitconTokenType, minimumLifetime: TimeInterval, now: Date = Date(),
               fetch: @escaping @Sendable () async throws -> CitconToken) async throws -> CitconToken {
        enum Found {
            case cached(CitconToken)
            case requested(Task<CitconToken, any Error>)
        }
        let found: Found = state.withLock { state in
            if let cached = state.tokens[type], cached.expiresAt.timeIntervalSince(now) > minimumLifetime { return .cached(cached) }
            if let running = state.inFlight[type] { return .requested(running) }
            let task = Task { try await fetch() }
            state.inFlight[type] = task
            return .requested(task)
        }
        let request: Task<CitconToken, any Error>
        switch found {
        case .cached(let token): return token
        case .requested(let task): request = task
        }
        let result = await request.result
        state.withLock { state in
            // The first caller back stores the token; the others find the request already settled.
            guard state.inFlight[type] == request else { return }
            state.inFlight[type] = nil
            if case .success(let token) = result { state.tokens[type] = token }
        }
        return try result.get()
    }

    /// Forgets a token Citcon refused (HTTP 401), unless it was already replaced.
    func invalidate(_ type: CitconTokenType, value: String) {
        state.withLock { state in
            if state.tokens[type]?.value == value { state.tokens[type] = nil }
        }
    }
}
