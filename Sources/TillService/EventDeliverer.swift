import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Metrics
import ServiceLifecycle
import Till
import TillOrchestration
import TillWebhooks

/// Posts the outbox's events to the merchants' webhooks.
///
/// Every `pollIntervalSeconds` (at once after a pass that found work) it claims due events
/// (``PaymentStore/claimDueEvents(now:claimedUntil:limit:)``: a payment's earliest pending event only, so a payment's
/// events reach a receiver in order), posts each to every endpoint of its merchant that has not yet accepted it, at
/// most `concurrency` posts at once, each cut off after `timeoutSeconds`, and records what came of it. A 2xx from every
/// endpoint delivers the event; anything else retries it with exponential backoff and jitter until `retryWindowSeconds`
/// after its creation. Several instances share the work through the claims; an instance that dies holding a claim
/// leaves its events to fall due again when the claim runs out, so every event is delivered at least once.
///
/// The body is the stored event, byte for byte; `Till-Signature: t=<unix>,v1=<hex>` signs `t`, a dot and the body
/// with HMAC-SHA256 under each of the endpoint's secrets (``WebhookSignature``).
///
/// Counters: `till_events_delivered_total`, `till_events_retried_total`, `till_events_failed_total`; gauges
/// `till_events_pending` and `till_events_oldest_pending_seconds`.
public struct EventDeliverer: Service, CustomStringConvertible {
    public var description: String { "EventDeliverer" }

    public let store: any PaymentStore
    public let settings: EventDeliverySettings
    let endpoints: @Sendable (String) -> [ResolvedWebhook]
    /// The merchants whose events this instance delivers; `nil`: every merchant's in the store.
    let merchants: [String]?
    let transport: any HTTPTransport
    let logger: Logger
    let metrics: any MetricsFactory
    let jitter: @Sendable () -> Double
    /// The API's requests in flight, to yield to while it is busy (nil: never yields).
    let load: APILoad?
    /// When the API was last seen busy.
    private let lastBusy = Locked<ContinuousClock.Instant?>(nil)

    /// - Parameters:
    ///   - endpoints: a merchant's webhooks (by merchant id).
    ///   - merchants: claim only these merchants' events (`nil`: every merchant's). A server passes its own: another
    ///     instance sharing the store may serve merchants this one does not know (a rolling deploy that adds one), and
    ///     this one, finding no webhook for them, would mark their events skipped.
    ///   - transport: how posts are sent (URLSession by default, never following a redirect: a `3xx` is a failed try,
    ///     as the receiver at the configured URL did not take the event).
    ///   - merchant: only this merchant's events (a delivery worker of one merchant; tests sharing a database).
    ///   - jitter: a number from 0.5 to 1 scaling each retry delay (random by default).
    ///   - load: the API's requests in flight, to yield to while it is busy (``EventDeliverySettings/busyRequestsInFlight``).
    public init(store: any PaymentStore, settings: EventDeliverySettings, endpoints: @escaping @Sendable (String) -> [ResolvedWebhook],
                merchants: [String]? = nil,
                transport: any HTTPTransport = EventDeliverer.defaultTransport(), logger: Logger = Logger(label: "till.events"),
                metrics: any MetricsFactory = MetricsSystem.factory, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0.5...1) },
                merchant: String? = nil, load: APILoad? = nil) {
        self.store = store
        self.settings = settings
        self.endpoints = endpoints
        self.merchants = merchant.map { [$0] } ?? merchants
        self.transport = transport
        self.logger = logger
        self.metrics = metrics
        self.jitter = jitter
        self.load = load
    }

    /// Delivers to the webhooks of `state`'s merchants.
    ///   - load: the API's requests in flight (the server's ``APILoad``), to yield to while it is busy.
    public init(state: ServerState, store: any PaymentStore, transport: any HTTPTransport = EventDeliverer.defaultTransport(),
                logger: Logger = Logger(label: "till.events"), metrics: any MetricsFactory = MetricsSystem.factory, load: APILoad? = nil) {
        let webhooks = Dictionary(state.merchants.map { ($0.configuration.id, $0.webhooks) }, uniquingKeysWith: { first, _ in first })
        self.init(store: store, settings: state.settings.events, endpoints: { webhooks[$0] ?? [] },
                  merchants: state.merchants.map(\.configuration.id), transport: transport, logger: logger, metrics: metrics, load: load)
    }

    /// URLSession without cookies, caches or redirects: a 3xx is the receiver's answer (a failed try), never followed
    /// to wherever its `Location` points.
    public static func defaultTransport() -> any HTTPTransport {
        URLSessionTransport(followingRedirects: false)
    }

    /// What one pass did.
    public struct Pass: Sendable, Hashable {
        public var claimed = 0
        public var delivered = 0
        public var retried = 0
        public var failed = 0
        public var skipped = 0
    }

    /// Passes until graceful shutdown or cancellation; a failed pass is logged and the next runs on time.
    public func run() async throws {
        guard settings.enabled else {
            try? await gracefulShutdown()
            return
        }
        logger.info("event delivery started", metadata: ["concurrency": .stringConvertible(settings.concurrency)])
        await cancelWhenGracefulShutdown { [self] in
            // The backlog gauges count every pending event: read at most every 5 s, not after every pass (a pass takes
            // a fraction of a second while a backlog drains, and the count over a large backlog costs more than the pass).
            var gauged: ContinuousClock.Instant?
            while !Task.isCancelled {
                var busy = false
                do {
                    busy = try await runOnce().claimed > 0
                    if gauged.map({ ContinuousClock.now - $0 >= .seconds(5) }) ?? true {
                        gauged = ContinuousClock.now
                        try await recordBacklog()
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.error("event delivery pass failed", metadata: ["error": .string(Reconciler.describe(error))])
                }
                if !busy {
                    do { try await Task.sleep(for: .seconds(settings.pollIntervalSeconds)) } catch { break }
                }
            }
        }
        logger.info("event delivery stopped")
    }

    /// One pass at `now`: claims due events and delivers them, yielding to the API while it is busy
    /// (``EventDeliverySettings/busyRequestsInFlight``).
    /// - Throws: only when the due events cannot be claimed.
    @discardableResult
    public func runOnce(now: Date = Date()) async throws -> Pass {
        let claimedUntil = now.addingTimeInterval(settings.leaseSeconds)
        // Busy: a second's worth of posts at most, so a batch claimed now is not held while the API keeps the pace slow.
        let limit = apiIsBusy ? min(settings.batch, max(1, Int(settings.busyEventsPerSecond.rounded(.up)))) : settings.batch
        let due = try await claim(now: now, claimedUntil: claimedUntil, limit: limit)
        var pass = Pass(claimed: due.count)
        guard !due.isEmpty else { return pass }
        let interval = Duration.seconds(1 / settings.busyEventsPerSecond)
        // Events not started before this are left to fall due again when their claim runs out (a long busy spell).
        let lastStart = claimedUntil.addingTimeInterval(-2 * settings.timeoutSeconds)
        await withTaskGroup(of: DeliveryResult?.self) { group in
            var next = due.makeIterator()
            var running = 0
            var slot = ContinuousClock.now
            /// Starts the next post if there is one and it may start now: at once while the API is quiet, at the busy
            /// pace while it is not. False when none was started.
            func startNext() async -> Bool {
                // Shutting down: the rest of the batch is left to fall due again when its claim runs out.
                guard !Task.isCancelled, running < max(settings.concurrency, 1) else { return false }
                if apiIsBusy {
                    let wait = slot - ContinuousClock.now
                    if wait > .zero { try? await Task.sleep(for: wait) }
                    slot = max(slot, ContinuousClock.now) + interval
                    guard !Task.isCancelled, Date() < lastStart else { return false }
                }
                guard let event = next.next() else { return false }
                group.addTask { await self.deliver(event, claimedUntil: claimedUntil) }
                running += 1
                return true
            }
            while await startNext() {}
            for await result in group {
                running -= 1
                switch result {
                case .delivered: pass.delivered += 1
                case .retry: pass.retried += 1
                case .failed: pass.failed += 1
                case .skipped: pass.skipped += 1
                case nil: break
                }
                while await startNext() {}
            }
        }
        return pass
    }

    /// Whether the API has had ``EventDeliverySettings/busyRequestsInFlight`` requests in flight at any reading in the last
    /// second (never without a load to read): a moment's dip between two requests of a steady load does not let a full
    /// batch through at full speed.
    package var apiIsBusy: Bool {
        guard let load, settings.busyRequestsInFlight > 0 else { return false }
        let now = ContinuousClock.now
        if load.requestsInFlight >= settings.busyRequestsInFlight {
            lastBusy.withLock { $0 = now }
            return true
        }
        return lastBusy.withLock { $0.map { now - $0 < .seconds(1) } ?? false }
    }

    /// Claims due events: of every merchant, or of ``merchants`` only, each given an equal share of the batch in turn
    /// (from a different merchant each second, so none always goes last). With one merchant, the whole batch is its.
    func claim(now: Date, claimedUntil: Date, limit: Int) async throws -> [StoredEvent] {
        guard let merchants else { return try await store.claimDueEvents(now: now, claimedUntil: claimedUntil, limit: limit) }
        guard !merchants.isEmpty else { return [] }
        let share = max(1, (limit + merchants.count - 1) / merchants.count)
        let start = Int(now.timeIntervalSince1970.magnitude.rounded(.down).truncatingRemainder(dividingBy: Double(merchants.count)))
        var due: [StoredEvent] = []
        for offset in 0..<merchants.count where due.count < limit {
            due += try await store.claimDueEvents(now: now, claimedUntil: claimedUntil, limit: min(share, limit - due.count),
                                                  merchant: merchants[(start + offset) % merchants.count])
        }
        return due
    }

    /// Posts one claimed event to every endpoint of its merchant that has not accepted it yet, and records the result.
    /// `nil` when the result could not be recorded (the claim runs out and the event falls due again).
    func deliver(_ event: StoredEvent, claimedUntil: Date) async -> DeliveryResult? {
        let webhooks = endpoints(event.merchantID)
        var attempts: [StoredDeliveryAttempt] = []
        let result: DeliveryResult
        if webhooks.isEmpty {
            result = .skipped
        } else {
            // An endpoint that accepted this event on an earlier try is not posted to again, unless every endpoint
            // has: then the event is pending again because it was redelivered, and goes to all of them.
            let earlier = event.attemptCount == 0 ? [] : Set(((try? await store.deliveryAttempts(event: event.id)) ?? [])
                .filter(\.delivered).map(\.endpoint))
            let accepted = webhooks.allSatisfy { earlier.contains($0.url.absoluteString) } ? [] : earlier
            // The endpoints at once: one event takes at most one timeout, however many endpoints its merchant has.
            attempts = await withTaskGroup(of: (Int, StoredDeliveryAttempt).self) { group in
                for (index, webhook) in webhooks.enumerated() where !accepted.contains(webhook.url.absoluteString) {
                    group.addTask { (index, await self.post(event, to: webhook)) }
                }
                return await group.reduce(into: [(Int, StoredDeliveryAttempt)]()) { $0.append($1) }.sorted { $0.0 < $1.0 }.map(\.1)
            }
            if attempts.allSatisfy(\.delivered) {
                result = .delivered
            } else {
                let now = Date()
                let retryAt = now.addingTimeInterval(settings.retryDelay(afterFailures: event.attemptCount + 1, jitter: jitter()))
                result = retryAt.timeIntervalSince(event.createdAt) > settings.retryWindowSeconds ? .failed : .retry(at: retryAt)
            }
        }
        // A post cut short by shutdown says nothing about the receiver: nothing is recorded, and the event falls due again
        // when its claim runs out (a rolling deploy must not count as failed tries).
        if Task.isCancelled && !attempts.allSatisfy(\.delivered) { return nil }
        do {
            try await store.recordDelivery(event: event.id, claimedUntil: claimedUntil, attempts: attempts, result: result)
        } catch {
            logger.error("event delivery not recorded", metadata: ["event": .string(event.id), "error": .string(Reconciler.describe(error))])
            return nil
        }
        let name: String = switch result {
        case .delivered: "till_events_delivered_total"
        case .retry: "till_events_retried_total"
        case .failed: "till_events_failed_total"
        case .skipped: "till_events_skipped_total"
        }
        Counter(label: name, dimensions: [("merchant", event.merchantID)], factory: metrics).increment()
        if case .failed = result {
            logger.warning("event not delivered within the retry window", metadata: ["event": .string(event.id), "merchant": .string(event.merchantID)])
        }
        return result
    }

    /// One post, signed, cut off after the timeout however the receiver behaves.
    func post(_ event: StoredEvent, to webhook: ResolvedWebhook) async -> StoredDeliveryAttempt {
        let started = ContinuousClock.now
        let at = Date()
        let timestamp = Int64(at.timeIntervalSince1970)
        let request = TransportRequest(method: .post, url: webhook.url, headers: [
            "Content-Type": "application/json",
            "User-Agent": "Till-Webhooks/1",
            "Till-Event-Id": event.id,
            "Till-Signature": WebhookSignature.header(timestamp: timestamp, body: event.body, secrets: webhook.secrets),
        ], body: event.body, timeout: .seconds(settings.timeoutSeconds))
        let outcome = await Self.withDeadline(.seconds(settings.timeoutSeconds)) { [transport] () async -> Result<TransportResponse, TransportError> in
            do throws(TransportError) { return .success(try await transport.send(request)) } catch { return .failure(error) }
        }
        let elapsed = ContinuousClock.now - started
        let millis = Int(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        let endpoint = webhook.url.absoluteString
        switch outcome {
        case .success(let response)?:
            let accepted = (200..<300).contains(response.statusCode)
            return StoredDeliveryAttempt(eventID: event.id, endpoint: endpoint, at: at, statusCode: response.statusCode, latencyMillis: millis,
                                         error: accepted ? nil : "status \(response.statusCode)", excerpt: Self.excerpt(response.body))
        case .failure(let error)?:
            return StoredDeliveryAttempt(eventID: event.id, endpoint: endpoint, at: at, statusCode: nil, latencyMillis: millis,
                                         error: error.kind == .timedOut ? "timeout" : "connection: \(error.kind.rawValue)")
        case nil:
            return StoredDeliveryAttempt(eventID: event.id, endpoint: endpoint, at: at, statusCode: nil, latencyMillis: millis, error: "timeout")
        }
    }

    /// At most 200 printable ASCII characters of a receiver's answer (anything else becomes `?`): enough to tell an
    /// error page from an acknowledgement, never the receiver's data.
    static func excerpt(_ body: Data) -> String? {
        guard !body.isEmpty else { return nil }
        return String(decoding: body.prefix(200).map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// `work`'s result, or `nil` when it did not finish within `limit` (it is cancelled then).
    static func withDeadline<T: Sendable>(_ limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await work() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Sets the backlog gauges from the store.
    func recordBacklog(now: Date = Date()) async throws {
        let backlog = try await store.eventBacklog()
        Gauge(label: "till_events_pending", factory: metrics).record(Double(backlog.pending))
        Gauge(label: "till_events_oldest_pending_seconds", factory: metrics)
            .record(backlog.oldestCreatedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
    }
}
