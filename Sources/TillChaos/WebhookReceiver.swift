import Foundation
import Till
import TillOrchestration
import TillService
import TillWebhooks

/// The merchant's webhook receiver in the chaos run: an in-process ``HTTPTransport`` the production ``EventDeliverer``
/// posts to (no sockets, so ten thousand checkouts stay fast), failing as real receivers fail and remembering
/// everything it took in.
///
/// Each post is checked as a receiver checks it (the `Till-Signature` over the raw body with the endpoint's secret,
/// `Till-Event-Id` naming the body's event), then, with probability `rate`, fails in one of the ways of
/// ``WebhookFault``: a 500 or a 503 before processing, a connection that never reached it (`notSent`), or a timeout
/// after it had processed the event (it recorded it, the answer was lost: the deliverer posts it again, a duplicate).
/// Otherwise it records the event and answers 200.
///
/// Whether a try fails, and how, is drawn from the seed keyed by the event's payment (its merchant reference), the
/// event's sequence and the try's number: never by arrival order, so the deliverer's concurrent posts give the same
/// figures every run, on every store. A receiver's outage ends: after ``maxFailuresPerEvent`` failed tries of one event
/// the next is accepted, so a run at a fault rate of 1 still ends with every event delivered.
final class WebhookReceiver: HTTPTransport, Sendable {
    /// How a post fails.
    enum WebhookFault: CaseIterable, Sendable {
        /// HTTP 500 before processing.
        case serverError
        /// HTTP 503 before processing.
        case unavailable
        /// The request never reached the receiver.
        case notSent
        /// Processed and recorded, then the answer was lost (a timeout): the event comes again.
        case timeoutAfterProcessing

        var chaosFault: ChaosFault {
            switch self {
            case .serverError: .webhookServerError
            case .unavailable: .webhookUnavailable
            case .notSent: .webhookNotSent
            case .timeoutAfterProcessing: .webhookTimeoutAfterProcessing
            }
        }
    }

    /// What the receiver took in, by payment id.
    struct Received: Sendable {
        /// The sequences accepted, in arrival order (a duplicate appears twice).
        var sequences: [Int] = []
        /// The distinct sequences accepted.
        var accepted: Set<Int> = []
        /// The data of the event accepted last.
        var last: PaymentView?
    }

    private struct State {
        var payments: [String: Received] = [:]
        var acceptedIDs: Set<String> = []
        /// Tries so far, by event id.
        var tries: [String: Int] = [:]
        var posts = 0
        var duplicates = 0
        var outOfOrder = 0
        /// Deliveries refused (a bad signature, a wrong header), each with its reason.
        var refusals: [String] = []
        /// Events accepted out of order, each with its story.
        var outOfOrderStories: [String] = []
    }

    /// After this many failed tries of one event, the receiver accepts the next.
    static let maxFailuresPerEvent = 5

    let url: URL
    let secrets: [String]
    let seed: UInt64
    let rate: Double
    let world: ChaosWorld
    private let state = Locked(State())

    init(url: URL, secrets: [String], seed: UInt64, rate: Double, world: ChaosWorld) {
        self.url = url
        self.secrets = secrets
        self.seed = seed
        self.rate = rate
        self.world = world
    }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let body = request.body ?? Data()
        let event: WebhookEvent
        do {
            guard request.method == .post, request.url == url else { throw Refusal("a \(request.method.rawValue) to \(request.url)") }
            guard let header = request.headers[WebhookSignature.headerName] else { throw Refusal("no \(WebhookSignature.headerName)") }
            do {
                _ = try WebhookSignature.verify(header: header, body: body, secrets: secrets)
            } catch {
                throw Refusal("the signature does not verify: \(error)")
            }
            event = try EventRules.decoder.decode(WebhookEvent.self, from: body)
            guard request.headers[WebhookSignature.eventIDHeaderName] == event.id else {
                throw Refusal("\(WebhookSignature.eventIDHeaderName) is not the body's id \(event.id)")
            }
        } catch {
            // A delivery a receiver must refuse is a finding: the deliverer never sends one.
            state.withLock { $0.refusals.append("the receiver refused a delivery: \(error)") }
            return TransportResponse(statusCode: 400, body: Data("refused".utf8))
        }
        let attempt = state.withLock { state -> Int in
            state.posts += 1
            state.tries[event.id, default: 0] += 1
            return state.tries[event.id]!
        }
        let fault = decide(event, try: attempt)
        if let fault { world.count(fault.chaosFault, checkout: nil) }
        switch fault {
        case .serverError?:
            return TransportResponse(statusCode: 500, body: Data("internal error".utf8))
        case .unavailable?:
            return TransportResponse(statusCode: 503, headers: ["Retry-After": "1"], body: Data("unavailable".utf8))
        case .notSent?:
            throw TransportError(.notSent, "connection refused")
        case .timeoutAfterProcessing?:
            accept(event)
            throw TransportError(.timedOut, "the receiver processed it, the answer was lost")
        case nil:
            accept(event)
            return TransportResponse(statusCode: 200, body: Data("ok".utf8))
        }
    }

    private struct Refusal: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The fault of try `attempt` (from 1) of `event`, or `nil` to accept it: drawn from the seed, the event's payment
    /// (its merchant reference: the server's payment ids are random), sequence and the try's number.
    func decide(_ event: WebhookEvent, try attempt: Int) -> WebhookFault? {
        guard attempt <= Self.maxFailuresPerEvent, rate > 0 else { return nil }
        var generator = SeededGenerator(seed: seed ^ Self.fnv1a("\(event.data.merchantReference)#\(event.sequence)#\(attempt)"))
        guard Double(generator.next() >> 11) / Double(UInt64(1) << 53) < rate else { return nil }
        return WebhookFault.allCases[Int(generator.next() % UInt64(WebhookFault.allCases.count))]
    }

    /// FNV-1a, 64 bits: a fixed hash of a key (Swift's `Hasher` is seeded per process).
    static func fnv1a(_ key: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// Records an event the receiver processed: a duplicate when its id came before; out of order when an earlier
    /// event of its payment has not been accepted yet.
    private func accept(_ event: WebhookEvent) {
        state.withLock { state in
            var received = state.payments[event.paymentId] ?? Received()
            received.sequences.append(event.sequence)
            if state.acceptedIDs.insert(event.id).inserted {
                if (1..<event.sequence).contains(where: { !received.accepted.contains($0) }) {
                    state.outOfOrder += 1
                    state.outOfOrderStories.append("event \(event.id) (\(event.type), sequence \(event.sequence) of payment \(event.paymentId)) arrived "
                                          + "before an earlier one; the receiver had \(received.sequences.dropLast())")
                }
                received.accepted.insert(event.sequence)
            } else {
                state.duplicates += 1
            }
            received.last = event.data
            state.payments[event.paymentId] = received
        }
    }

    // MARK: What it took in

    /// Whether the receiver ever accepted the event.
    func accepted(_ eventID: String) -> Bool { state.withLock { $0.acceptedIDs.contains(eventID) } }

    /// What the receiver took in for a payment.
    func received(payment id: String) -> Received? { state.withLock { $0.payments[id] } }

    /// Posts received, events accepted again, events accepted before an earlier one of their payment.
    var counts: (posts: Int, duplicates: Int, outOfOrder: Int) {
        state.withLock { ($0.posts, $0.duplicates, $0.outOfOrder) }
    }

    /// Deliveries refused, each with its reason (sorted: arrival order differs from run to run).
    var refusals: [String] { state.withLock { $0.refusals.sorted() } }

    /// Events accepted out of order, each with its story (sorted).
    var outOfOrderStories: [String] { state.withLock { $0.outOfOrderStories.sorted() } }
}
