import Foundation
import Hummingbird
import Logging
import Till
import TillWebhooks

/// A merchant's backend on a loopback port, receiving the events Till posts: for tests of the delivery and for
/// demos ("the merchant's backend receiving the events of one payment").
///
/// It records every request — its headers (`Till-Signature`, `Till-Event-Id`, …), the exact body bytes, when it
/// arrived, whether its signature verifies under the receiver's secrets (``WebhookSignature``), and the
/// ``WebhookEvent`` when the body parses as one — and answers each as its script says: a status, after a delay,
/// with a body trickled a byte at a time, or never (it hangs until the sender gives up or the receiver stops). It
/// counts the requests in flight and remembers the most there ever were at once. ``stop()`` takes it off the
/// network (its port refuses connections) and ``restart()`` brings it back on the same port, keeping what it
/// recorded.
///
/// ```swift
/// // refuses each event's first try, then accepts
/// let receiver = try await WebhookReceiver.start(secrets: ["whsec_…"]) { $0.tryNumber == 1 ? .status(500) : .ok }
/// // point a webhook at receiver.url
/// …
/// print(await receiver.transcript())
/// await receiver.stop()
/// ```
public actor WebhookReceiver {
    /// How the receiver answers one request.
    public struct Behaviour: Sendable, Hashable, CustomStringConvertible {
        /// The HTTP status of the answer.
        public var status: Int
        /// The answer's body (UTF-8).
        public var body: String
        /// How long the receiver waits before it starts answering.
        public var delay: Duration
        /// When set, the body is written one byte at a time with this pause before each byte (the status and
        /// headers, announcing the whole length, go first).
        public var trickleInterval: Duration?
        /// Never answers: the request is held until the sender closes the connection or the receiver stops.
        public var hangs: Bool
        /// A `Location` header (for a redirect).
        public var location: String?

        /// - Parameters:
        ///   - status: the HTTP status.
        ///   - body: the answer's body.
        ///   - delay: the wait before answering.
        ///   - trickleInterval: when set, the pause before each byte of the body.
        ///   - hangs: never answer.
        ///   - location: a `Location` header.
        public init(status: Int = 200, body: String = "ok", delay: Duration = .zero, trickleInterval: Duration? = nil, hangs: Bool = false,
                    location: String? = nil) {
            self.status = status
            self.body = body
            self.delay = delay
            self.trickleInterval = trickleInterval
            self.hangs = hangs
            self.location = location
        }

        /// 200 at once.
        public static let ok = Behaviour()

        /// `status` at once, with `body` (by default `ok` for a 2xx, `error` otherwise).
        public static func status(_ status: Int, body: String? = nil) -> Behaviour {
            Behaviour(status: status, body: body ?? ((200..<300).contains(status) ? "ok" : "error"))
        }

        /// `status` after waiting `delay`.
        public static func delayed(_ delay: Duration, status: Int = 200) -> Behaviour {
            Behaviour(status: status, body: (200..<300).contains(status) ? "ok" : "error", delay: delay)
        }

        /// `status` at once, then `body` one byte every `interval`.
        public static func trickle(byteEvery interval: Duration, body: String = String(repeating: ".", count: 100), status: Int = 200) -> Behaviour {
            Behaviour(status: status, body: body, trickleInterval: interval)
        }

        /// No answer, ever.
        public static let hang = Behaviour(hangs: true)

        /// A redirect (`302` unless told) to `location`.
        public static func redirect(to location: String, status: Int = 302) -> Behaviour {
            Behaviour(status: status, body: "moved", location: location)
        }

        public var description: String {
            if hangs { return "hangs" }
            var text = "\(status)"
            if delay > .zero { text += " after \(delay)" }
            if let trickleInterval { text += ", body trickled 1 byte/\(trickleInterval)" }
            if let location { text += " → \(location)" }
            return text
        }
    }

    /// What the script knows of a request when it chooses the answer.
    public struct Incoming: Sendable {
        /// 1 for the first request the receiver got, counting across restarts.
        public var index: Int
        /// `POST`, `GET`, …
        public var method: String
        /// The path, with any query.
        public var path: String
        /// The `Till-Event-Id` header.
        public var eventID: String?
        /// The body as an event, when it parses as one.
        public var event: WebhookEvent?
        /// How many requests carried this `Till-Event-Id` so far, this one included (1 on the first try).
        public var tryNumber: Int
        /// Whether the signature verified.
        public var verified: Bool
    }

    /// Chooses each request's answer.
    public typealias Script = @Sendable (Incoming) -> Behaviour

    /// One request the receiver got.
    public struct Delivery: Sendable, Hashable, CustomStringConvertible {
        /// 1 for the first request, counting across restarts.
        public var index: Int
        /// `POST`, `GET`, …
        public var method: String
        /// The path, with any query.
        public var path: String
        /// Every header, names lowercased (repeated headers joined with `, `).
        public var headers: [String: String]
        /// The body exactly as received.
        public var body: Data
        /// When it arrived (the receiver's clock).
        public var receivedAt: Date
        /// Why the signature did not verify under the receiver's secrets at `receivedAt`; `nil` when it did.
        public var verificationFailure: String?
        /// The body as an event, when it parses as one.
        public var event: WebhookEvent?
        /// How the receiver answered.
        public var behaviour: Behaviour
        /// When the receiver was done with it (the answer written, the sender gone, or the receiver stopped); `nil`
        /// while in flight.
        public var finishedAt: Date?
        /// The answer `behaviour` describes was written in full.
        public var answered: Bool
        /// The sender closed the connection before the whole answer was written. Noticed when the receiver writes to
        /// the connection (a trickled body), or sees it closed; a receiver still waiting to answer may not notice.
        public var senderLeft: Bool

        /// The `Till-Signature` header.
        public var signature: String? { headers["till-signature"] }
        /// The `Till-Event-Id` header.
        public var eventID: String? { headers["till-event-id"] }
        /// The signature verified under the receiver's secrets when it arrived.
        public var verified: Bool { verificationFailure == nil }
        /// The receiver answered with a 2xx, in full: the sender was told the event was accepted.
        public var accepted: Bool { answered && (200..<300).contains(behaviour.status) }

        /// One line: `#3 12:00:01.234 pay_… #2 attempt.created  signature ok  → 500` (the time of day in UTC).
        public var description: String {
            let millis = Int64((receivedAt.timeIntervalSince1970 * 1000).rounded(.down))
            let ofDay = ((millis % 86_400_000) + 86_400_000) % 86_400_000
            let time = String(format: "%02lld:%02lld:%02lld.%03lld", ofDay / 3_600_000, ofDay / 60_000 % 60, ofDay / 1000 % 60, ofDay % 1000)
            let subject = event.map { "\($0.paymentId) #\($0.sequence) \($0.type.rawValue)" } ?? (eventID ?? "\(method) \(path)")
            let signature = verificationFailure == nil ? "signature ok" : "signature REFUSED"
            let answer = answered ? "\(behaviour)" : finishedAt == nil ? "\(behaviour) (in flight)"
                : senderLeft ? "\(behaviour) (the sender gave up)" : "\(behaviour) (not answered: the receiver stopped)"
            return "#\(index) \(time) \(subject)  \(signature)  → \(answer)"
        }
    }

    /// Where the events go: `http://127.0.0.1:<port>/events` (any path is accepted).
    public nonisolated let url: URL
    /// The port, the same after a ``restart()``.
    public nonisolated let port: Int
    /// The secrets signatures are checked with.
    public nonisolated let secrets: [String]

    private let journal: Journal
    private let host: String
    private let logger: Logger
    private var server: LoopbackServer?
    private var release: Release

    private init(url: URL, port: Int, secrets: [String], journal: Journal, host: String, logger: Logger, server: LoopbackServer, release: Release) {
        self.url = url
        self.port = port
        self.secrets = secrets
        self.journal = journal
        self.host = host
        self.logger = logger
        self.server = server
        self.release = release
    }

    /// Starts a receiver and returns once it listens.
    /// - Parameters:
    ///   - secrets: the secrets it verifies `Till-Signature` with (any `v1` matching any of them verifies).
    ///   - host: the address to bind; loopback by default.
    ///   - port: the port; 0 picks a free one.
    ///   - logger: where the HTTP server logs.
    ///   - script: each request's answer (200 at once unless told).
    /// - Throws: ``SandboxError/couldNotStart(_:)``.
    public static func start(secrets: [String], host: String = "127.0.0.1", port: Int = 0,
                             logger: Logger = Logger(label: "till.sandbox.webhooks"),
                             script: @escaping Script = { _ in .ok }) async throws(SandboxError) -> WebhookReceiver {
        let journal = Journal(secrets: secrets, script: script)
        let release = Release()
        let server = try await serve(journal: journal, release: release, host: host, port: port, logger: logger)
        let bound = server.baseURL.port ?? port
        return WebhookReceiver(url: server.baseURL.appendingPathComponent("events"), port: bound, secrets: secrets, journal: journal,
                               host: host, logger: logger, server: server, release: release)
    }

    /// Answers from now on as `script` says.
    public func answer(with script: @escaping Script) async {
        await journal.setScript(script)
    }

    /// Answers the next requests with `behaviours`, in order, and every later one with `otherwise`.
    public func answer(_ behaviours: [Behaviour], otherwise: Behaviour = .ok) async {
        let queue = BehaviourQueue(behaviours)
        await journal.setScript { _ in queue.next() ?? otherwise }
    }

    /// Stops listening (the port refuses connections), lets held requests go and closes every connection. What
    /// was recorded stays; ``restart()`` listens again on the same port.
    public func stop() async {
        guard let server else { return }
        self.server = nil
        release.fire()
        await server.stop()
        await journal.finishAll()
    }

    /// Listens again on the same port after ``stop()`` (nothing happens while it is running).
    /// - Throws: ``SandboxError/couldNotStart(_:)``, for one when another program took the port meanwhile.
    public func restart() async throws(SandboxError) {
        guard server == nil else { return }
        let release = Release()
        server = try await Self.serve(journal: journal, release: release, host: host, port: port, logger: logger)
        self.release = release
    }

    /// Whether it is listening.
    public var isRunning: Bool { server != nil }

    /// Every request so far, oldest first.
    public func deliveries() async -> [Delivery] {
        await journal.deliveries
    }

    /// The events of `payment` the receiver accepted (verified and answered with a 2xx), in the order they arrived,
    /// each once: what a merchant's backend would have applied.
    public func events(payment: String? = nil) async -> [WebhookEvent] {
        var seen: Set<String> = []
        return await journal.deliveries.compactMap { delivery in
            guard delivery.accepted, delivery.verified, let event = delivery.event,
                  payment.map({ $0 == event.paymentId }) ?? true, seen.insert(event.id).inserted else { return nil }
            return event
        }
    }

    /// How many requests carried each `Till-Event-Id`.
    public func postsPerEvent() async -> [String: Int] {
        await journal.deliveries.reduce(into: [:]) { counts, delivery in
            if let id = delivery.eventID { counts[id, default: 0] += 1 }
        }
    }

    /// The most requests that were in flight at once. A request counts from its arrival until the receiver is done
    /// with it (its answer written, or the receiver stopped), even when the sender gave up earlier.
    public func maxInFlight() async -> Int {
        await journal.maxInFlight
    }

    /// The requests in flight now.
    public func inFlight() async -> Int {
        await journal.inFlight
    }

    /// The requests so far (or `payment`'s), one line each (``Delivery/description``).
    public func transcript(payment: String? = nil) async -> String {
        await journal.deliveries.filter { delivery in payment.map { $0 == delivery.event?.paymentId } ?? true }
            .map(\.description).joined(separator: "\n")
    }

    /// Waits until `condition` holds for the deliveries so far, checking every 20 ms; false when `timeout` passed
    /// first.
    public func wait(atMost timeout: Duration, until condition: @Sendable ([Delivery]) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if condition(await journal.deliveries) { return true }
            if clock.now >= deadline || Task.isCancelled { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    // MARK: - The server

    /// Largest body recorded.
    static let maximumBodyBytes = 1 << 20

    private static func serve(journal: Journal, release: Release, host: String, port: Int, logger: Logger) async throws(SandboxError) -> LoopbackServer {
        let (router, connections) = LoopbackServer.makeRouter()
        let handler: @Sendable (Request, SandboxRequestContext) async throws -> Response = { request, context in
            let gone = Release()
            context.connection.whenClosed { gone.fire() }
            let body = (try? await request.body.collect(upTo: maximumBodyBytes)).map { Data($0.readableBytesView) } ?? Data()
            var headers: [String: String] = [:]
            for field in request.headers {
                let name = field.name.canonicalName.lowercased()
                headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
            }
            let (index, behaviour) = await journal.arrive(method: request.method.rawValue, path: request.uri.description, headers: headers,
                                                          body: body)
            let stop: @Sendable () -> Bool = { gone.fired || release.fired || Task.isCancelled }
            if behaviour.hangs {
                await Self.wait(.seconds(86_400 * 365), unless: stop)
                await journal.finish(index, answered: false, senderLeft: gone.fired)
                return Response(status: .serviceUnavailable)
            }
            if behaviour.delay > .zero {
                await Self.wait(behaviour.delay, unless: stop)
                if stop() {
                    await journal.finish(index, answered: false, senderLeft: gone.fired)
                    return Response(status: .serviceUnavailable)
                }
            }
            var fields = HTTPFields()
            fields[.contentType] = "text/plain; charset=utf-8"
            if let location = behaviour.location { fields[.location] = location }
            let bytes = Array(behaviour.body.utf8)
            guard let interval = behaviour.trickleInterval else {
                await journal.finish(index, answered: true, senderLeft: false)
                return Response(status: .init(code: behaviour.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            }
            return Response(status: .init(code: behaviour.status), headers: fields, body: ResponseBody(contentLength: bytes.count) { writer in
                var (complete, failed) = (false, false)
                do {
                    for byte in bytes {
                        await Self.wait(interval, unless: stop)
                        if stop() { break }
                        try await writer.write(ByteBuffer(bytes: [byte]))
                    }
                    if !stop() {
                        try await writer.finish(nil)
                        complete = true
                    }
                } catch {
                    failed = true
                }
                await journal.finish(index, answered: complete, senderLeft: failed || gone.fired)
                if !complete { throw CancellationError() }
            })
        }
        for path in ["/", "**"] {
            router.post(RouterPath(stringLiteral: path), use: handler)
            router.get(RouterPath(stringLiteral: path), use: handler)
            router.put(RouterPath(stringLiteral: path), use: handler)
        }
        return try await LoopbackServer.start(router: router, connections: connections, host: host, port: port, logger: logger)
    }

    /// Sleeps `duration` in steps of at most 20 ms, ending early once `stop` says so.
    private static func wait(_ duration: Duration, unless stop: @Sendable () -> Bool) async {
        let clock = ContinuousClock()
        let deadline = clock.now + duration
        while clock.now < deadline, !stop() {
            try? await Task.sleep(for: min(deadline - clock.now, .milliseconds(20)))
        }
    }

    /// What the receiver got, and its script.
    actor Journal {
        private(set) var deliveries: [Delivery] = []
        private(set) var inFlight = 0
        private(set) var maxInFlight = 0
        private var tries: [String: Int] = [:]
        private var script: Script
        let secrets: [String]

        init(secrets: [String], script: @escaping Script) {
            self.secrets = secrets
            self.script = script
        }

        func setScript(_ script: @escaping Script) {
            self.script = script
        }

        /// Records a request and chooses its answer.
        func arrive(method: String, path: String, headers: [String: String], body: Data) -> (index: Int, behaviour: Behaviour) {
            let now = Date()
            let failure: String?
            if let header = headers["till-signature"] {
                do {
                    _ = try WebhookSignature.verify(header: header, body: body, secrets: secrets, now: now)
                    failure = nil
                } catch {
                    failure = error.description
                }
            } else {
                failure = "no Till-Signature header"
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let event = try? decoder.decode(WebhookEvent.self, from: body)
            let eventID = headers["till-event-id"]
            var tryNumber = 1
            if let eventID {
                tries[eventID, default: 0] += 1
                tryNumber = tries[eventID]!
            }
            let index = deliveries.count + 1
            let behaviour = script(Incoming(index: index, method: method, path: path, eventID: eventID, event: event, tryNumber: tryNumber, verified: failure == nil))
            deliveries.append(Delivery(index: index, method: method, path: path, headers: headers, body: body, receivedAt: now,
                                       verificationFailure: failure, event: event, behaviour: behaviour, finishedAt: nil, answered: false,
                                       senderLeft: false))
            inFlight += 1
            maxInFlight = max(maxInFlight, inFlight)
            return (index, behaviour)
        }

        /// The receiver is done with request `index`.
        func finish(_ index: Int, answered: Bool, senderLeft: Bool) {
            guard deliveries.indices.contains(index - 1), deliveries[index - 1].finishedAt == nil else { return }
            deliveries[index - 1].finishedAt = Date()
            deliveries[index - 1].answered = answered
            deliveries[index - 1].senderLeft = senderLeft
            inFlight -= 1
        }

        /// Every request still open is over (the server stopped).
        func finishAll() {
            for index in deliveries.indices where deliveries[index].finishedAt == nil {
                deliveries[index].finishedAt = Date()
                inFlight -= 1
            }
        }
    }

    /// A flag set once, read from any thread: a connection closed, or the server stopping.
    final class Release: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var fired: Bool { lock.withLock { value } }
        func fire() { lock.withLock { value = true } }
    }

    /// Behaviours handed out in order.
    final class BehaviourQueue: @unchecked Sendable {
        private let lock = NSLock()
        private var remaining: [Behaviour]
        init(_ behaviours: [Behaviour]) { remaining = behaviours }
        func next() -> Behaviour? { lock.withLock { remaining.isEmpty ? nil : remaining.removeFirst() } }
    }
}
