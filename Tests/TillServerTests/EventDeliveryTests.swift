import Foundation
import Testing
import Till
import TillOrchestration
import TillSandbox
import TillService
import TillWebhooks
@testable import TillServer

/// The production ``EventDeliverer`` over every store, posting to real HTTP receivers on loopback
/// (``WebhookReceiver``): order per payment, retries, a receiver that is down, slow, trickling or hanging, bounded
/// concurrency, the retry window and redelivery, redirects, two instances on one database, secret rotation and
/// several endpoints. Each test has its own merchant, and its deliverer claims only that merchant's events, so tests
/// sharing a PostgreSQL database leave each other's events alone.
///
/// Timing: the receivers' delays are far from the deadlines they are tested against, and elapsed times are only
/// bounded loosely (a 2-core machine running the whole suite is slow).
@Suite("Events: delivery to real receivers")
struct EventDeliveryTests {
    static let secret = "whsec_delivery_tests_0123456789"

    @Test("each payment's events arrive in order and complete; an event whose first try fails holds its payment's later ones back",
          arguments: StoreKind.everyStore)
    func ordering(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        // Some events fail their first try: 2, 5 and 9 of every payment.
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret]) { incoming in
            [2, 5, 9].contains(incoming.event?.sequence ?? 0) && incoming.tryNumber == 1 ? .status(500) : .ok
        }
        let payments = try await rig.payments(3)
        let deliverer = rig.deliverer([receiver], settings: Rig.settings(concurrency: 4))
        try await rig.drain(deliverer)

        let deliveries = await receiver.deliveries()
        #expect(deliveries.allSatisfy { $0.verified }, "\(deliveries.compactMap(\.verificationFailure))")
        for payment in payments {
            let posts = deliveries.compactMap(\.event).filter { $0.paymentId == payment }.map(\.sequence)
            // Every post of the payment, retries included, in order: a later event never before an earlier one.
            #expect(posts == [1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 9, 10], "\(payment): \(posts)")
            #expect(await receiver.events(payment: payment).map(\.sequence) == Array(1...10))
        }
        // The merchant's-backend view the demo prints: one line per post of the payment.
        let transcript = await receiver.transcript(payment: payments[0]).split(separator: "\n")
        #expect(transcript.count == 13)
        #expect(transcript.first?.contains("\(payments[0]) #1 payment.created  signature ok  → 200") == true, "\(transcript)")
        #expect(transcript.count > 2 && transcript[1].hasSuffix("#2 attempt.created  signature ok  → 500")
                && transcript[2].hasSuffix("#2 attempt.created  signature ok  → 200"), "\(transcript)")
        let events = try await rig.events()
        #expect(events.count == 30 && events.allSatisfy { $0.state == .delivered })
        #expect(events.allSatisfy { $0.attemptCount == ([2, 5, 9].contains($0.sequence) ? 2 : 1) })
        await receiver.stop()
        try await rig.close()
    }

    @Test("a 500 then a 200: delivered on the second try; both tries recorded with their status; the excerpt is at most 200 printable characters",
          arguments: StoreKind.everyStore)
    func retries(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let errorPage = "<html>\n<body>Erreur interne — réessayez</body>\n</html>\n" + String(repeating: "x", count: 300)
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret])
        await receiver.answer([.status(500, body: errorPage)], otherwise: .ok)
        _ = try await rig.createdPayment()
        let deliverer = rig.deliverer([receiver], settings: Rig.settings())

        let first = try await deliverer.runOnce()
        #expect(first.claimed == 1 && first.retried == 1)
        let pending = try #require(try await rig.events().first)
        #expect(pending.state == .pending && pending.attemptCount == 1)
        try await rig.drain(deliverer)

        let event = try #require(try await rig.events().first)
        #expect(event.state == .delivered && event.attemptCount == 2 && event.deliveredAt != nil)
        let tries = try await rig.store.deliveryAttempts(event: event.id)
        #expect(tries.map(\.statusCode) == [500, 200])
        #expect(tries.map(\.endpoint) == [receiver.url.absoluteString, receiver.url.absoluteString])
        #expect(tries[0].error == "status 500" && tries[1].error == nil)
        let excerpt = try #require(tries[0].excerpt)
        #expect(excerpt.count == 200 && excerpt.utf8.allSatisfy { (0x20..<0x7F).contains($0) })
        #expect(excerpt.hasPrefix("<html>?<body>Erreur interne ??? r??essayez</body>?</html>?xxx"))
        #expect(tries[1].excerpt == "ok")
        #expect(await receiver.postsPerEvent() == [event.id: 2])
        await receiver.stop()
        try await rig.close()
    }

    @Test("a receiver down for a while (its port refuses) and back: everything is delivered, in order, nothing lost",
          arguments: StoreKind.everyStore)
    func receiverDown(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let receiver = try await Self.receiverOnAFixedPort()
        await receiver.stop()
        let payments = try await rig.payments(2)
        let deliverer = rig.deliverer([receiver], settings: Rig.settings(retryBase: 0.05, retryMax: 0.2, poll: 0.02))
        let running = Task { try await deliverer.run() }
        defer { running.cancel() }

        // While it is down, the tries fail to connect and are recorded.
        let refused = try await rig.waitForAttempts(atLeast: 4)
        #expect(refused.allSatisfy { $0.statusCode == nil && $0.error?.hasPrefix("connection") == true }, "\(refused.map(\.error))")
        #expect(try await rig.events().allSatisfy { $0.state == .pending })

        try await receiver.restart()
        let all = try await rig.waitUntilNonePending()
        let transcript = await receiver.transcript()
        #expect(all, "\(transcript)")
        running.cancel()
        _ = await running.result
        for payment in payments {
            #expect(await receiver.events(payment: payment).map(\.sequence) == Array(1...10))
        }
        let events = try await rig.events()
        #expect(events.count == 20 && events.allSatisfy { $0.state == .delivered })
        await receiver.stop()
        try await rig.close()
    }

    @Test("a slow, a trickling and a hanging receiver: each post is cut off at the deadline, recorded as a timeout, and retried",
          arguments: StoreKind.everyStore)
    func deadlines(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let timeout = 1.5
        let slowReceivers: [(String, WebhookReceiver.Behaviour)] = [
            ("slow", .delayed(.seconds(20))),
            ("trickling", .trickle(byteEvery: .milliseconds(100), body: String(repeating: "t", count: 200))),
            ("hanging", .hang),
        ]
        for (name, behaviour) in slowReceivers {
            let receiver = try await WebhookReceiver.start(secrets: [Self.secret]) { $0.tryNumber == 1 ? behaviour : .ok }
            let payment = try await rig.createdPayment()
            let deliverer = rig.deliverer([receiver], settings: Rig.settings(timeout: timeout))

            let clock = ContinuousClock()
            let started = clock.now
            let pass = try await deliverer.runOnce()
            let elapsed = clock.now - started
            #expect(pass.claimed == 1 && pass.retried == 1, "\(name): \(pass)")
            // Cut off at the deadline (1.5 s), far sooner than the receiver would have finished (20 s).
            #expect(elapsed >= .seconds(timeout * 0.9) && elapsed < .seconds(timeout * 3), "\(name): the pass took \(elapsed)")
            let event = try #require(try await rig.events(payment: payment).first)
            let tries = try await rig.store.deliveryAttempts(event: event.id)
            #expect(tries.map(\.error) == ["timeout"] && tries.map(\.statusCode) == [nil], "\(name): \(tries)")
            #expect(tries[0].latencyMillis >= Int(timeout * 900) && tries[0].latencyMillis < Int(timeout * 3000), "\(name): \(tries)")

            try await rig.drain(deliverer)
            #expect(try await rig.events(payment: payment).first?.state == .delivered, "\(name)")
            #expect(await receiver.postsPerEvent() == [event.id: 2], "\(name)")
            if behaviour.trickleInterval != nil {
                // The trickling receiver finds the connection closed under it.
                let noticed = await receiver.wait(atMost: .seconds(10)) { $0.first?.senderLeft == true }
                let transcript = await receiver.transcript()
                #expect(noticed, "\(name): \(transcript)")
            }
            // A request still held (the slow and the hanging one's first) does not hold up stopping.
            let stopping = clock.now
            await receiver.stop()
            #expect(clock.now - stopping < .seconds(5), "\(name)")
        }
        try await rig.close()
    }

    @Test("a deadline under a second: a prompt receiver is delivered to, a slow one is cut off", arguments: StoreKind.everyStore)
    func subSecondDeadline(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let slowFrom = Flag()
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret]) { _ in slowFrom.isSet ? .delayed(.seconds(20)) : .ok }
        let deliverer = rig.deliverer([receiver], settings: Rig.settings(timeout: 0.5))
        let prompt = try await rig.createdPayment()
        // A limit under a second used to time out every post at once, before the receiver could answer.
        try await rig.drain(deliverer)
        #expect(try await rig.events(payment: prompt).first?.state == .delivered)

        slowFrom.set()
        let slow = try await rig.createdPayment()
        let clock = ContinuousClock()
        let started = clock.now
        #expect(try await deliverer.runOnce().retried == 1)
        let elapsed = clock.now - started
        #expect(elapsed >= .milliseconds(450) && elapsed < .seconds(5), "\(elapsed)")
        let event = try #require(try await rig.events(payment: slow).first)
        #expect(try await rig.store.deliveryAttempts(event: event.id).map(\.error) == ["timeout"])
        await receiver.stop()
        try await rig.close()
    }

    /// A receiver on a port outside the range the system hands out for port 0, so that while it is stopped no other
    /// test's receiver is given its port.
    static func receiverOnAFixedPort() async throws -> WebhookReceiver {
        var lastError: SandboxError?
        for _ in 0..<20 {
            do {
                return try await WebhookReceiver.start(secrets: [secret], port: Int.random(in: 20_000..<32_000))
            } catch {
                lastError = error
            }
        }
        throw lastError!
    }

    @Test("with concurrency 2, ten due events of ten payments reach a slow receiver at most two at a time",
          arguments: StoreKind.everyStore)
    func boundedConcurrency(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret]) { _ in .delayed(.milliseconds(300)) }
        for _ in 0..<10 { _ = try await rig.createdPayment() }
        let deliverer = rig.deliverer([receiver], settings: Rig.settings(timeout: 10, concurrency: 2))

        let clock = ContinuousClock()
        let started = clock.now
        let pass = try await deliverer.runOnce()
        let elapsed = clock.now - started
        #expect(pass.claimed == 10 && pass.delivered == 10)
        #expect(await receiver.maxInFlight() == 2)
        #expect(await receiver.deliveries().count == 10)
        // Ten posts of 0.3 s, two at a time: at least 1.5 s.
        #expect(elapsed >= .milliseconds(1_400), "\(elapsed)")
        await receiver.stop()
        try await rig.close()
    }

    @Test("while the API is busy the deliverer claims a second's worth and starts its posts at the busy pace; quiet again, it takes the rest at once",
          arguments: StoreKind.everyStore)
    func yieldsToABusyAPI(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret])
        for _ in 0..<14 { _ = try await rig.createdPayment() }
        var settings = Rig.settings(concurrency: 8)
        settings.busyRequestsInFlight = 2
        settings.busyEventsPerSecond = 10
        let load = APILoad()
        let deliverer = rig.deliverer([receiver], settings: settings, load: load)

        // Two requests in flight (held until cancelled): the API is busy.
        let held = (0..<2).map { _ in Task { await load.counting { try? await Task.sleep(for: .seconds(120)) } } }
        while load.requestsInFlight < 2 { try await Task.sleep(for: .milliseconds(5)) }
        let clock = ContinuousClock()
        let started = clock.now
        let busy = try await deliverer.runOnce()
        let elapsed = clock.now - started
        #expect(busy.claimed == 10 && busy.delivered == 10, "a second's worth at 10 a second: \(busy)")
        // Ten posts started 0.1 s apart: the last one at least 0.9 s after the first.
        #expect(elapsed >= .milliseconds(880), "\(elapsed)")
        #expect(await receiver.maxInFlight() == 1)

        for task in held { task.cancel() }
        while load.requestsInFlight > 0 { try await Task.sleep(for: .milliseconds(5)) }
        // Busy still for a second after it was last seen busy; then quiet.
        #expect(deliverer.apiIsBusy)
        try await Task.sleep(for: .milliseconds(1_100))
        #expect(!deliverer.apiIsBusy)
        let quiet = try await deliverer.runOnce()
        #expect(quiet.claimed == 4 && quiet.delivered == 4, "\(quiet)")
        #expect(await receiver.deliveries().count == 14)
        await receiver.stop()
        try await rig.close()
    }

    @Test("a receiver failing past the retry window leaves the event failed; redelivery then delivers it",
          arguments: StoreKind.everyStore)
    func retryWindowAndRedelivery(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret]) { _ in .status(503) }
        _ = try await rig.createdPayment()
        let deliverer = rig.deliverer([receiver], settings: Rig.settings(retryBase: 0.05, retryMax: 0.1, window: 1))
        try await rig.drain(deliverer)

        let failed = try #require(try await rig.events().first)
        #expect(failed.state == .failed && failed.attemptCount >= 1, "\(failed)")
        let tries = try await rig.store.deliveryAttempts(event: failed.id)
        #expect(tries.count == failed.attemptCount && tries.allSatisfy { $0.statusCode == 503 })
        // Nothing more is tried once it failed.
        #expect(try await deliverer.runOnce().claimed == 0)

        await receiver.answer { _ in .ok }
        let again = try #require(try await rig.store.redeliver(event: failed.id, merchant: rig.merchant, now: Date()))
        #expect(again.state == .pending)
        try await rig.drain(deliverer)
        let delivered = try #require(try await rig.events().first)
        #expect(delivered.state == .delivered && delivered.attemptCount == failed.attemptCount + 1)
        #expect(await receiver.postsPerEvent() == [failed.id: failed.attemptCount + 1])
        await receiver.stop()
        try await rig.close()
    }

    @Test("redelivering an event that was delivered posts it again", arguments: StoreKind.everyStore)
    func redeliveryOfADeliveredEvent(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret])
        _ = try await rig.createdPayment()
        let deliverer = rig.deliverer([receiver], settings: Rig.settings())
        try await rig.drain(deliverer)
        let event = try #require(try await rig.events().first)
        #expect(event.state == .delivered)

        _ = try await rig.store.redeliver(event: event.id, merchant: rig.merchant, now: Date())
        try await rig.drain(deliverer)
        #expect(await receiver.postsPerEvent() == [event.id: 2])
        #expect(try await rig.events().first?.state == .delivered)
        await receiver.stop()
        try await rig.close()
    }

    @Test("a redirect is not a delivery: it is not followed, and the event is retried", arguments: StoreKind.everyStore)
    func redirects(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        for status in [301, 302, 307, 308] {
            let receiver = try await WebhookReceiver.start(secrets: [Self.secret])
            let moved = receiver.url.appendingPathComponent("moved").absoluteString
            await receiver.answer { $0.path.hasSuffix("/moved") ? .ok : .redirect(to: moved, status: status) }
            let payment = try await rig.createdPayment()
            let deliverer = rig.deliverer([receiver], settings: Rig.settings(retryBase: 60, retryMax: 60))

            let pass = try await deliverer.runOnce()
            #expect(pass.retried == 1 && pass.delivered == 0, "\(status): \(pass)")
            let event = try #require(try await rig.events(payment: payment).first)
            #expect(event.state == .pending, "\(status)")
            let tries = try await rig.store.deliveryAttempts(event: event.id)
            #expect(tries.map(\.statusCode) == [status] && tries.map(\.error) == ["status \(status)"], "\(status): \(tries)")
            let transcript = await receiver.transcript()
            #expect(await receiver.deliveries().map(\.path) == ["/events"], "\(status): \(transcript)")
            await receiver.stop()
        }
        try await rig.close()
    }

    @Test("two instances on one database deliver every event exactly once", arguments: StoreKind.everyStore)
    func twoInstances(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        // SQLite and the in-memory store: one store object shared (the server never opens a file twice); PostgreSQL: a
        // second connection pool, as a second server would have.
        let second: any PaymentStore = kind == .postgres ? try await StoreKind.postgres.open() : rig.store
        let receiver = try await WebhookReceiver.start(secrets: [Self.secret])
        let payments = try await rig.payments(5)
        let settings = Rig.settings(concurrency: 3, batch: 4, poll: 0.01)
        let one = rig.deliverer([receiver], settings: settings)
        let other = rig.deliverer([receiver], settings: settings, store: second)
        let instances = [Task { try await one.run() }, Task { try await other.run() }]
        defer { instances.forEach { $0.cancel() } }

        #expect(try await rig.waitUntilNonePending())
        // A little longer, for a duplicate to show up if there were one.
        try await Task.sleep(for: .milliseconds(300))
        for instance in instances {
            instance.cancel()
            _ = await instance.result
        }
        let posts = await receiver.postsPerEvent()
        #expect(posts.count == 50 && posts.values.allSatisfy { $0 == 1 }, "\(posts.filter { $0.value != 1 })")
        for payment in payments {
            let sequences = await receiver.deliveries().compactMap(\.event).filter { $0.paymentId == payment }.map(\.sequence)
            #expect(sequences == Array(1...10), "\(payment): \(sequences)")
        }
        #expect(try await rig.events().allSatisfy { $0.state == .delivered })
        await receiver.stop()
        if kind == .postgres { try await second.close() }
        try await rig.close()
    }

    @Test("during a secret rotation the header carries two v1, and a receiver knowing only the old or only the new secret verifies every delivery",
          arguments: StoreKind.everyStore)
    func secretRotation(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let (new, old) = ("whsec_new_rotation_abcdefghij", "whsec_old_rotation_0123456789")
        let knowsOld = try await WebhookReceiver.start(secrets: [old])
        let knowsNew = try await WebhookReceiver.start(secrets: [new])
        let payment = try await rig.payment()
        let deliverer = EventDeliverer(store: rig.store, settings: Rig.settings(), endpoints: { [merchant = rig.merchant] in
            $0 == merchant ? [ResolvedWebhook(url: knowsOld.url, secrets: [new, old]), ResolvedWebhook(url: knowsNew.url, secrets: [new, old])] : []
        }, jitter: { 1 }, merchant: rig.merchant)
        try await rig.drain(deliverer)

        for (receiver, secret) in [(knowsOld, old), (knowsNew, new)] {
            let deliveries = await receiver.deliveries()
            #expect(deliveries.count == 10)
            #expect(await receiver.events(payment: payment).map(\.sequence) == Array(1...10))
            for delivery in deliveries {
                let header = try #require(delivery.signature)
                let parts = header.split(separator: ",").map(String.init)
                #expect(parts.count == 3 && parts[0].hasPrefix("t=") && parts[1].hasPrefix("v1=") && parts[2].hasPrefix("v1="), "\(header)")
                let t = try #require(Int64(parts[0].dropFirst(2)))
                // The new secret's signature first, then the old one's.
                #expect(header == WebhookSignature.header(timestamp: t, body: delivery.body, secrets: [new, old]))
                #expect(delivery.verified, "\(delivery.verificationFailure ?? "")")
                #expect(try WebhookSignature.verify(header: header, body: delivery.body, secrets: [secret], now: delivery.receivedAt) == t)
                #expect(throws: WebhookSignature.Failure.noMatchingSignature) {
                    try WebhookSignature.verify(header: header, body: delivery.body, secrets: ["whsec_neither_of_the_two"], now: delivery.receivedAt)
                }
            }
        }
        await knowsOld.stop()
        await knowsNew.stop()
        try await rig.close()
    }

    @Test("two endpoints of one merchant: one that accepted an event is not posted it again while the other's failure is retried",
          arguments: StoreKind.everyStore)
    func multipleEndpoints(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        let accepting = try await WebhookReceiver.start(secrets: [Self.secret])
        let failingOnce = try await WebhookReceiver.start(secrets: [Self.secret]) { $0.tryNumber == 1 ? .status(500) : .ok }
        let payment = try await rig.payment()
        let deliverer = rig.deliverer([accepting, failingOnce], settings: Rig.settings())
        try await rig.drain(deliverer)

        let events = try await rig.events()
        #expect(events.count == 10 && events.allSatisfy { $0.state == .delivered && $0.attemptCount == 2 })
        #expect(await accepting.postsPerEvent() == Dictionary(uniqueKeysWithValues: events.map { ($0.id, 1) }))
        #expect(await failingOnce.postsPerEvent() == Dictionary(uniqueKeysWithValues: events.map { ($0.id, 2) }))
        #expect(await accepting.events(payment: payment).map(\.sequence) == Array(1...10))
        #expect(await failingOnce.events(payment: payment).map(\.sequence) == Array(1...10))
        for event in events {
            let tries = try await rig.store.deliveryAttempts(event: event.id)
            #expect(tries.filter { $0.endpoint == accepting.url.absoluteString }.map(\.statusCode) == [200])
            #expect(tries.filter { $0.endpoint == failingOnce.url.absoluteString }.map(\.statusCode) == [500, 200])
        }
        await accepting.stop()
        await failingOnce.stop()
        try await rig.close()
    }
}

/// A flag a receiver's script reads.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// One test's store and merchant, and deliverers that claim only that merchant's events.
struct Rig {
    let kind: StoreKind
    let store: any PaymentStore
    let merchant = "m-\(UUID().uuidString.prefix(8))"

    init(_ kind: StoreKind) async throws {
        self.kind = kind
        store = try await kind.open()
    }

    /// Settings with tiny retry delays (the jitter is fixed at 1 by ``deliverer(_:settings:store:)``).
    static func settings(timeout: Double = 10, concurrency: Int = 4, batch: Int = 100, retryBase: Double = 0.01, retryMax: Double = 0.05,
                         window: Double = 3_600, poll: Double = 0.05) -> EventDeliverySettings {
        EventDeliverySettings(timeoutSeconds: timeout, concurrency: concurrency, batch: batch, pollIntervalSeconds: poll,
                              retryBaseSeconds: retryBase, retryMaxSeconds: retryMax, retryWindowSeconds: window)
    }

    /// A deliverer posting this merchant's events to `receivers` (each with its own secrets).
    func deliverer(_ receivers: [WebhookReceiver], settings: EventDeliverySettings, store: (any PaymentStore)? = nil,
                   load: APILoad? = nil) -> EventDeliverer {
        let webhooks = receivers.map { ResolvedWebhook(url: $0.url, secrets: $0.secrets) }
        return EventDeliverer(store: store ?? self.store, settings: settings, endpoints: { [merchant] in $0 == merchant ? webhooks : [] },
                              jitter: { 1 }, merchant: merchant, load: load)
    }

    /// A payment through its whole life (``EventStoreTests/paidAndRefunded(_:merchant:)``): ten events.
    func payment() async throws -> String {
        try await EventStoreTests().paidAndRefunded(store, merchant: merchant).payment
    }

    func payments(_ count: Int) async throws -> [String] {
        var ids: [String] = []
        for _ in 0..<count { ids.append(try await payment()) }
        return ids
    }

    /// A payment just created: one event, `payment.created`.
    func createdPayment() async throws -> String {
        let id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(PaymentIntent(merchantReference: "o-\(id)", amount: EventStoreTests.amount, method: .card), merchant: merchant,
                                   id: id, idempotencyKey: nil, requestHash: "h")
        return id
    }

    /// The merchant's events (or `payment`'s), in the order they were stored.
    func events(payment: String? = nil) async throws -> [StoredEvent] {
        try await store.events(merchant: merchant, query: EventQuery(paymentID: payment, limit: 1_000))
    }

    /// Passes of `deliverer` until none of the merchant's events is pending (a short pause when a pass found nothing
    /// due), at most `limit`.
    func drain(_ deliverer: EventDeliverer, limit: Duration = .seconds(60)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while try await events().contains(where: { $0.state == .pending }) {
            guard clock.now < deadline else {
                Issue.record("events still pending after \(limit): \(try await events().filter { $0.state == .pending }.map(\.sequence))")
                return
            }
            if try await deliverer.runOnce().claimed == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
    }

    /// Waits until none of the merchant's events is pending (a deliverer runs elsewhere); false after `limit`.
    func waitUntilNonePending(limit: Duration = .seconds(60)) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while try await events().contains(where: { $0.state == .pending }) {
            guard clock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Waits until the merchant's events have at least `count` recorded tries, and returns them.
    func waitForAttempts(atLeast count: Int, limit: Duration = .seconds(30)) async throws -> [StoredDeliveryAttempt] {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while true {
            var tries: [StoredDeliveryAttempt] = []
            for event in try await events() { tries += try await store.deliveryAttempts(event: event.id) }
            if tries.count >= count || clock.now >= deadline { return tries }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func close() async throws {
        try await store.close()
    }
}
