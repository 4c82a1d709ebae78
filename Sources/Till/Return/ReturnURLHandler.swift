import Foundation

/// Brings the customer's return from a wallet app, H5 page, browser or 3-D Secure page back to the
/// checkout that is waiting for it.
///
/// The app owns one instance (build it once, keep it where the app delegate and the checkout can both
/// reach it; there is no shared instance). For each attempt that leaves the app, the checkout asks for
/// an ``ExpectedReturn``: a return URL on one of the registered routes that carries a fresh,
/// unguessable state (256 random bits). ``handle(_:)`` accepts a URL only when its scheme, host and path
/// match a route exactly and its state belongs to a waiting attempt; it then resumes that attempt's
/// ``wait(for:timeout:)`` exactly once. Everything else — an unrelated scheme, a wrong host or path,
/// a missing, forged or already-used state — is ignored and `handle` returns `false`, so the app can
/// pass the URL on to whoever else handles URLs.
///
/// A return only wakes the waiting checkout; it never completes a payment. The checkout then asks
/// the merchant server, whose status comes from verified notifications and inquiries.
///
/// ```swift
/// let returns = try ReturnURLHandler(routes: [.customScheme("myshop"),
///                                             .universalLink(host: "shop.example.com", path: "/till/return")])
/// // AppDelegate / SceneDelegate:
/// func application(_ app: UIApplication, open url: URL, options: ...) -> Bool { returns.handle(url) }
/// ```
public final class ReturnURLHandler: Sendable {
    /// The routes this handler accepts.
    public let routes: [ReturnRoute]
    /// The query parameter that carries the state.
    public let stateParameter: String

    private struct Waiting {
        var expected: ExpectedReturn
        var result: ReturnResult?
        var continuation: CheckedContinuation<ReturnResult, Never>?
        /// After this, the state is forgotten: a URL that comes later is ignored.
        var deadline: ContinuousClock.Instant
    }

    private let waiting = Locked<[String: Waiting]>([:])

    /// - Parameters:
    ///   - routes: the custom schemes and universal links the app registered. At least one.
    ///   - stateParameter: the query parameter name carrying the per-attempt state.
    public init(routes: [ReturnRoute], stateParameter: String = "till_state") throws(CheckoutError) {
        guard !routes.isEmpty else {
            throw CheckoutError(.misconfigured, field: "routes", message: "register at least one return route")
        }
        guard !stateParameter.isEmpty else {
            throw CheckoutError(.misconfigured, field: "stateParameter", message: "must not be empty")
        }
        self.routes = routes
        self.stateParameter = stateParameter
    }

    /// Registers a return that an attempt about to leave the app will come back through, and returns
    /// its URL (to be given to the gateway, via the merchant server, as the attempt's return URL).
    ///
    /// - Parameter route: which registered route to use; the first by default.
    /// - Throws: ``CheckoutError/Code/misconfigured`` when `route` is not registered.
    /// - Parameter lifetime: how long the state stays valid if nobody waits for it or cancels it;
    ///   past it a URL carrying it is ignored and the entry is dropped.
    public func expectReturn(on route: ReturnRoute? = nil, lifetime: Duration = .seconds(3_600)) throws(CheckoutError) -> ExpectedReturn {
        let route = route ?? routes[0]
        guard routes.contains(route) else {
            throw CheckoutError(.misconfigured, field: "route", message: "route \(route) is not registered with this handler")
        }
        return try register(routes: [route], lifetime: lifetime)
    }

    /// Registers a return on every route this handler has, with one state: the merchant server and
    /// the gateway it picks choose the route that fits (a universal link for one wallet, a custom
    /// scheme for another), and ``restrict(_:to:)`` then narrows the expectation to that one route.
    public func expectReturnOnAnyRoute(lifetime: Duration = .seconds(3_600)) throws(CheckoutError) -> ExpectedReturn {
        try register(routes: routes, lifetime: lifetime)
    }

    /// Narrows an expectation to the one route whose URL the server chose (`url` must be one of
    /// ``ExpectedReturn/urls``). From then on a URL on any other route is ignored.
    /// - Throws: ``CheckoutError/Code/misconfigured`` naming `returnURL` when `url` is not one of the
    ///   offered URLs (the server or gateway picked a URL this app never offered).
    @discardableResult
    public func restrict(_ expected: ExpectedReturn, to url: URL) throws(CheckoutError) -> ExpectedReturn {
        guard let index = expected.urls.firstIndex(of: url) else {
            throw CheckoutError(.misconfigured, field: "returnURL", message: "the server chose a return URL this app did not offer")
        }
        let narrowed = ExpectedReturn(routes: [expected.routes[index]], state: expected.state, urls: [url])
        waiting.withLock { table in
            if var entry = table[expected.state] {
                entry.expected = narrowed
                table[expected.state] = entry
            }
        }
        return narrowed
    }

    private func register(routes chosen: [ReturnRoute], lifetime: Duration) throws(CheckoutError) -> ExpectedReturn {
        let state = Self.newState()
        var urls: [URL] = []
        for route in chosen { urls.append(try route.url(state: state, parameter: stateParameter)) }
        let expected = ExpectedReturn(routes: chosen, state: state, urls: urls)
        let now = ContinuousClock.now
        waiting.withLock { table in
            // Drop expectations nobody will ever resolve, so the table stays small.
            for (key, entry) in table where entry.continuation == nil && entry.deadline < now { table[key] = nil }
            table[state] = Waiting(expected: expected, deadline: now + lifetime)
        }
        return expected
    }

    /// Expects one more return on an expectation whose return already came: the same state and URLs.
    /// For gateways that send the customer back twice in one attempt (PayFort's merchant page returns
    /// the card token, then, after 3-D Secure, the result). A URL for the state that arrives from now on
    /// resolves the new wait; the return already taken is not delivered again.
    public func expectAgain(_ expected: ExpectedReturn, lifetime: Duration = .seconds(3_600)) {
        let now = ContinuousClock.now
        waiting.withLock { table in
            guard table[expected.state] == nil else { return }
            table[expected.state] = Waiting(expected: expected, deadline: now + lifetime)
        }
    }

    /// Offers a URL the app was opened with. Returns `true` only if it was the return of a waiting
    /// attempt, which it then resumes; `false` for anything else (which is otherwise ignored).
    @discardableResult
    public func handle(_ url: URL) -> Bool {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              routes.contains(where: { $0.matches(components) })
        else { return false }
        let states = (components.queryItems ?? []).filter { $0.name == stateParameter }
        guard states.count == 1, let state = states[0].value, !state.isEmpty else { return false }
        return resolve(state: state, with: .returned(url)) { $0.routes.contains { $0.matches(components) } }
    }

    /// Waits until the customer comes back, the attempt is cancelled, or `timeout` passes, whichever
    /// is first. Resumes exactly once. If the return arrived before the wait began, it is returned at
    /// once. One waiter per expectation: a second wait on a finished expectation returns `.cancelled`.
    public func wait(for expected: ExpectedReturn, timeout: Duration) async -> ReturnResult {
        let state = expected.state
        let timer = Task {
            try await Task.sleep(for: timeout)
            _ = self.resolve(state: state, with: .timedOut)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ReturnResult, Never>) in
                let immediate: ReturnResult? = waiting.withLock { table in
                    guard var entry = table[state] else { return .cancelled }
                    if let result = entry.result {
                        table[state] = nil
                        return result
                    }
                    // One waiter per expectation: a second one is answered at once, never left hanging.
                    guard entry.continuation == nil else { return .cancelled }
                    entry.continuation = continuation
                    table[state] = entry
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            _ = self.resolve(state: state, with: .cancelled)
        }
    }

    /// Gives up on an expected return (the customer closed the checkout). A waiter gets `.cancelled`,
    /// and a URL arriving later for it is ignored.
    public func cancel(_ expected: ExpectedReturn) {
        if !resolve(state: expected.state, with: .cancelled) {
            // Already returned but not yet collected: forget that too, so a later wait says cancelled.
            waiting.withLock { table in
                if table[expected.state]?.continuation == nil { table[expected.state] = nil }
            }
        }
    }

    /// The number of attempts still expecting a return (for diagnostics).
    public var pendingCount: Int { waiting.withLock { $0.count } }

    /// Resolves the entry for `state` once. A second resolution of the same state finds nothing (or a
    /// stored result) and returns false: that is how replays are refused.
    private func resolve(state: String, with result: ReturnResult, where accept: (ExpectedReturn) -> Bool = { _ in true }) -> Bool {
        let now = ContinuousClock.now
        let (accepted, waiter): (Bool, CheckedContinuation<ReturnResult, Never>?) = waiting.withLock { table in
            guard var entry = table[state], entry.result == nil, accept(entry.expected) else { return (false, nil) }
            if entry.continuation == nil, entry.deadline < now, case .returned = result {
                table[state] = nil   // expired: too late to count as this attempt's return
                return (false, nil)
            }
            if let waiter = entry.continuation {
                table[state] = nil
                return (true, waiter)
            }
            if result == .cancelled {
                // Cancelled before anyone waited: forget it; later URLs are ignored.
                table[state] = nil
            } else {
                // Nobody waits yet (the URL came first, or the timer beat the waiter by a hair):
                // keep the result for the wait that comes.
                entry.result = result
                table[state] = entry
            }
            return (true, nil)
        }
        waiter?.resume(returning: result)
        return accepted
    }

    private static func newState() -> String {
        var rng = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        for _ in 0..<4 {
            withUnsafeBytes(of: rng.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// One attempt's expected return: the URLs to offer the gateway and the state they carry.
public struct ExpectedReturn: Sendable, Hashable {
    /// The routes a return may come through (one after ``ReturnURLHandler/restrict(_:to:)``).
    public let routes: [ReturnRoute]
    /// The unguessable per-attempt state (base64url, 43 characters).
    public let state: String
    /// One full return URL per route, in the same order, to be offered to the merchant server.
    public let urls: [URL]

    /// The first route.
    public var route: ReturnRoute { routes[0] }
    /// The first route's URL, to be sent to the gateway as its success/cancel/return URL.
    public var url: URL { urls[0] }
}

/// How a wait for a return ended.
public enum ReturnResult: Sendable, Hashable {
    /// The customer came back through this URL.
    case returned(URL)
    /// The wait was cancelled (by ``ReturnURLHandler/cancel(_:)`` or task cancellation).
    case cancelled
    /// The customer did not come back in time.
    case timedOut
}
