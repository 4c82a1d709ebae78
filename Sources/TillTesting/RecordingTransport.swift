import Foundation
import Till

/// An ``HTTPTransport`` that answers from a script and records every request. A request that no
/// expectation matches is recorded as unexpected and fails with a transport error, so a test that
/// forgets to check still sees it in ``verify()``.
///
/// ```swift
/// let transport = RecordingTransport()
/// transport.expect(.post, path: "/FortAPI/paymentApi", respond: TransportResponse(statusCode: 200, body: json))
/// // … exercise the gateway module …
/// try transport.verify()   // throws if a request was unexpected or an expectation unused
/// ```
public final class RecordingTransport: HTTPTransport, Sendable {
    /// One scripted exchange.
    public struct Expectation: Sendable {
        public var method: TransportRequest.Method
        public var path: String
        public var reply: Result<TransportResponse, TransportError>
        /// How many times it may be used; `nil` for any number.
        public var times: Int?
    }

    private struct State {
        var expectations: [Expectation] = []
        var used: [Int] = []
        var recorded: [TransportRequest] = []
        var unexpected: [TransportRequest] = []
    }
    private let state = Locked(State())

    public init() {}

    /// Expects a request to `path` with `method` and answers `response`.
    public func expect(_ method: TransportRequest.Method, path: String, respond response: TransportResponse, times: Int? = 1) {
        add(Expectation(method: method, path: path, reply: .success(response), times: times))
    }

    /// Expects a request to `path` with `method` and fails it with `error`.
    public func expect(_ method: TransportRequest.Method, path: String, fail error: TransportError, times: Int? = 1) {
        add(Expectation(method: method, path: path, reply: .failure(error), times: times))
    }

    private func add(_ expectation: Expectation) {
        state.withLock { state in
            state.expectations.append(expectation)
            state.used.append(0)
        }
    }

    /// Every request sent, in order.
    public var requests: [TransportRequest] { state.withLock { $0.recorded } }
    /// Requests no expectation matched.
    public var unexpectedRequests: [TransportRequest] { state.withLock { $0.unexpected } }

    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let reply: Result<TransportResponse, TransportError>? = state.withLock { state in
            state.recorded.append(request)
            for (index, expectation) in state.expectations.enumerated()
            where expectation.method == request.method && expectation.path == request.url.path
                && (expectation.times.map { state.used[index] < $0 } ?? true) {
                state.used[index] += 1
                return expectation.reply
            }
            state.unexpected.append(request)
            return nil
        }
        guard let reply else {
            throw TransportError(.other, "unexpected request \(request.method.rawValue) \(request.url.path)")
        }
        return try reply.get()
    }

    /// Fails when a request was unexpected or an expectation with a count was not used up.
    public func verify() throws {
        let state = state.withLock { $0 }
        var problems: [String] = state.unexpected.map { "unexpected request \($0.method.rawValue) \($0.url.path)" }
        for (index, expectation) in state.expectations.enumerated() {
            if let times = expectation.times, state.used[index] < times {
                problems.append("expected \(expectation.method.rawValue) \(expectation.path) \(times)×, got \(state.used[index])×")
            }
        }
        if !problems.isEmpty { throw VerificationFailure(problems: problems) }
    }

    /// What ``verify()`` throws.
    public struct VerificationFailure: Error, CustomStringConvertible {
        public var problems: [String]
        public var description: String { problems.joined(separator: "\n") }
    }
}
