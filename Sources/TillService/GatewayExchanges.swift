import Foundation
import Till

/// The last few thousand requests this instance sent the gateways, each tied to the attempt it was about and redacted
/// as the gateway log is (secrets removed, card numbers masked, bodies cut at 2 KiB), for a payment's timeline in the
/// console. In memory and per instance: bounded, never stored, gone at restart.
public final class GatewayExchanges: Sendable {
    /// One request and what came of it.
    public struct Exchange: Sendable, Hashable {
        public var at: Date
        public var attempt: AttemptReference
        public var gateway: GatewayID
        public var method: String
        /// The URL with user, password and secret query values removed.
        public var url: String
        /// The answer's status, or nil when none came.
        public var statusCode: Int?
        /// Why no answer came (`timed_out`, `not_sent`, …).
        public var failure: String?
        public var milliseconds: Int
        public var request: String
        public var response: String
    }

    /// The attempt a gateway call is about, set around each call the server makes (prepare, submit, inquiries,
    /// operations); a request sent outside one is not kept.
    @TaskLocal public static var attempt: AttemptReference?

    private let capacity: Int
    private let ring = Locked<(items: [Exchange], next: Int)>(([], 0))

    public init(capacity: Int = 4_096) {
        self.capacity = max(1, capacity)
    }

    /// Keeps an exchange, in place of the oldest once full.
    public func record(_ exchange: Exchange) {
        ring.withLock { ring in
            if ring.items.count < capacity { ring.items.append(exchange) } else { ring.items[ring.next] = exchange }
            ring.next = (ring.next + 1) % capacity
        }
    }

    /// The exchanges kept about these attempts, oldest first.
    public func exchanges(of attempts: Set<AttemptReference>) -> [Exchange] {
        ring.withLock { ring in ring.items.filter { attempts.contains($0.attempt) } }.sorted { $0.at < $1.at }
    }

    /// Records `request` and its answer (or failure) when it was sent about an attempt.
    func record(_ request: TransportRequest, gateway: GatewayID, started: Date, milliseconds: Int, response: TransportResponse?,
                failure: TransportError?) {
        guard let attempt = Self.attempt else { return }
        let redactor = Redactor()
        record(Exchange(at: started, attempt: attempt, gateway: gateway, method: request.method.rawValue,
                        url: LoggingTransport<URLSessionTransport>.loggableURL(request.url, redactor: redactor),
                        statusCode: response?.statusCode, failure: failure?.kind.rawValue, milliseconds: milliseconds,
                        request: request.body.map { redactor.redact(body: $0, limit: 2_048) } ?? "",
                        response: response.map { redactor.redact(body: $0.body, limit: 2_048) } ?? ""))
    }
}
