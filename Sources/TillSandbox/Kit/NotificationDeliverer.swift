import Foundation
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A notification a gateway posts to a merchant's URL (an IPN, a callback, feedback, a webhook): the
/// gateway-specific part of a delivery. The ``NotificationDeliverer`` does the rest (tries, waits,
/// hold, drop, replays, the record of tries).
protocol MerchantNotification: Sendable {
    /// What a try is recorded as (the emulator's own attempt type, as its admin routes answer it).
    associatedtype Record: Sendable

    /// What the notification is about (a charge, an order, an event): replays and waits go by it,
    /// and the last notification queued for a key is the one a replay sends.
    var key: String { get }
    /// Where it is POSTed.
    var url: URL { get }
    /// The headers it is POSTed with (`Content-Type`, signatures).
    var headers: [(name: String, value: String)] { get }
    /// The body, exactly as sent.
    var body: [UInt8] { get }
    /// Log metadata naming it (never secrets).
    var logMetadata: Logger.Metadata { get }

    /// Whether the merchant's answer acknowledges it (no more tries).
    func isAcknowledged(by response: DeliveryResponse) -> Bool
    /// The record of one try.
    func record(_ delivery: DeliveryTry) -> Record
}

/// How many times a notification is tried, and the waits between tries.
struct RetrySchedule: Sendable, Hashable {
    /// How many tries at most (at least 1).
    var attempts: Int
    /// The wait before the second try.
    var interval: Duration
    /// What each wait is multiplied by for the next one: 1 for a fixed interval, 2 for doubling.
    var growth: Int

    /// A schedule of `attempts` tries (at least 1), `interval` apart, each wait `growth` times the one before.
    init(attempts: Int, interval: Duration, growth: Int = 1) {
        self.attempts = max(1, attempts)
        self.interval = interval
        self.growth = max(1, growth)
    }
}

/// What the merchant answered one try: the HTTP status and body, or nothing (connection error, timeout).
struct DeliveryResponse: Sendable {
    /// The HTTP status, or `nil` when no answer came.
    var status: Int?
    /// The body, or `nil` when no answer came.
    var body: Data?

    /// A 2xx status.
    var isSuccess: Bool { status.map { (200..<300).contains($0) } ?? false }

    /// The first 200 characters of the body, as attempt records keep them; `nil` when no answer came.
    var answerPrefix: String? { body.map { String(String(decoding: $0, as: UTF8.self).prefix(200)) } }
}

/// How a try came about.
enum DeliveryKind: Sendable, Hashable {
    /// A try of a queued notification: 1 for the first, then the retries.
    case scheduled
    /// A replay of the last notification of a key, once.
    case replay
    /// A notification built by hand for a test, sent once.
    case crafted
    /// A notification dropped by the test controls: recorded (attempt 0), never sent.
    case dropped
}

/// One try, as a ``MerchantNotification`` records it.
struct DeliveryTry: Sendable {
    /// 1 for the first try of a delivery, a replay or a crafted one; 0 when dropped.
    var attempt: Int
    /// How the try came about.
    var kind: DeliveryKind
    /// What the merchant answered; `nil` when dropped.
    var response: DeliveryResponse?
    /// Whether the answer acknowledged the notification.
    var acknowledged: Bool

    /// The status answered, if any.
    var status: Int? { response?.status }
}

/// What to do at one try of a delivery, as a ``NotificationDeliverer/Preparation`` decides it.
enum TryPlan<Message: Sendable>: Sendable {
    /// POST this (the queued message, or one with its URL read again).
    case post(Message)
    /// Skip this try: it counts as a failed one (the next waits as after a failure).
    case skip
    /// Stop delivering.
    case stop
}

/// Delivers an emulator's notifications to merchants: one `URLSession` that follows no redirects
/// (a gateway judges the answer it gets), tries on a ``RetrySchedule`` until the notification's own
/// rule says the merchant acknowledged it, and keeps the record of every try. Tests can delay new
/// notifications, hold them and release them, drop some, replay the last one of a key, and send
/// crafted ones once.
///
/// Each emulator holds one per kind of notification and supplies only its gateway part (a
/// ``MerchantNotification``: body, headers, acknowledgement, record). Methods are synchronous and
/// safe to call from the emulator's actor; deliveries run on their own tasks.
final class NotificationDeliverer<Message: MerchantNotification>: @unchecked Sendable {
    /// Runs before each scheduled try: what to POST, or to skip the try or stop (e.g. a URL read
    /// again at each try, or an endpoint verified first).
    typealias Preparation = @Sendable (_ message: Message, _ attempt: Int) async -> TryPlan<Message>

    private struct Pending: Sendable {
        var message: Message
        var delay: Duration
        var prepare: Preparation?
    }

    private let schedule: RetrySchedule
    private let timeout: TimeInterval
    private let orderedByKey: Bool
    private let noun: String
    private let logger: Logger
    private let session: URLSession

    private let lock = NSLock()
    // Guarded by `lock`:
    private var records: [Message.Record] = []
    private var tasks: [Int: Task<Void, Never>] = [:]
    private var taskIDsByKey: [String: [Int]] = [:]
    private var nextTaskID = 0
    private var latest: [String: Message] = [:]
    private var delay: Duration = .zero
    private var held = false
    private var heldMessages: [Pending] = []
    private var toDrop = 0

    /// Creates a deliverer.
    /// - Parameters:
    ///   - schedule: how many tries, and the waits between them.
    ///   - timeout: how long one POST may take before it counts as unanswered.
    ///   - orderedByKey: whether deliveries of one key go one after another, in the order they were
    ///     queued (each waits for the earlier ones to finish).
    ///   - noun: what the notifications are called in logs (`"IPN"`, `"callback"`).
    ///   - logger: where deliveries are logged.
    init(schedule: RetrySchedule, timeout: Duration, orderedByKey: Bool = false, noun: String, logger: Logger) {
        self.schedule = schedule
        self.timeout = timeout.timeInterval
        self.orderedByKey = orderedByKey
        self.noun = noun
        self.logger = logger
        self.session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
    }

    deinit {
        for task in tasks.values { task.cancel() }
        session.invalidateAndCancel()
    }

    // MARK: Queueing

    /// Queues `message`: dropped (recorded, never sent) while drops are pending, kept while deliveries
    /// are held, else delivered on its own task after the current delay. It becomes the last message
    /// of its key either way.
    /// - Parameter prepare: runs before each try (none by default: the message is POSTed as it is).
    func queue(_ message: Message, prepare: Preparation? = nil) {
        lock.withLock {
            latest[message.key] = message
            if toDrop > 0 {
                toDrop -= 1
                records.append(message.record(DeliveryTry(attempt: 0, kind: .dropped, response: nil, acknowledged: false)))
                logger.debug("\(noun) dropped", metadata: message.logMetadata)
                return
            }
            let pending = Pending(message: message, delay: delay, prepare: prepare)
            if held {
                heldMessages.append(pending)
            } else {
                startLocked(pending)
            }
        }
    }

    /// Starts delivering `pending` on its own task. The caller holds `lock`.
    private func startLocked(_ pending: Pending) {
        let id = nextTaskID
        nextTaskID += 1
        let key = pending.message.key
        let before = orderedByKey ? (taskIDsByKey[key] ?? []).compactMap { tasks[$0] } : []
        taskIDsByKey[key, default: []].append(id)
        // Made under the lock: the task cannot finish (and forget itself) before it is registered.
        tasks[id] = Task {
            for task in before { await task.value }
            await self.deliver(pending)
            self.lock.withLock {
                self.tasks[id] = nil
                self.taskIDsByKey[key]?.removeAll { $0 == id }
                if self.taskIDsByKey[key]?.isEmpty == true { self.taskIDsByKey[key] = nil }
            }
        }
    }

    /// Tries on the schedule until acknowledged, told to stop, or out of tries.
    private func deliver(_ pending: Pending) async {
        if pending.delay > .zero {
            do { try await Task.sleep(for: pending.delay) } catch { return }
        }
        var wait = schedule.interval
        for attempt in 1...schedule.attempts {
            if attempt > 1 {
                do { try await Task.sleep(for: wait) } catch { return }
                wait = wait * schedule.growth
            }
            var message = pending.message
            if let prepare = pending.prepare {
                switch await prepare(message, attempt) {
                case .post(let prepared): message = prepared
                case .skip: continue
                case .stop: return
                }
            }
            if await post(message, attempt: attempt, kind: .scheduled).acknowledged { return }
        }
        logger.warning("\(noun) not acknowledged; giving up", metadata: pending.message.logMetadata)
    }

    /// POSTs `message` once and records the try.
    private func post(_ message: Message, attempt: Int, kind: DeliveryKind) async -> (record: Message.Record, acknowledged: Bool) {
        var request = URLRequest(url: message.url, timeoutInterval: timeout)
        request.httpMethod = "POST"
        for header in message.headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        request.httpBody = Data(message.body)
        let response = await perform(request)
        let acknowledged = message.isAcknowledged(by: response)
        let record = message.record(DeliveryTry(attempt: attempt, kind: kind, response: response, acknowledged: acknowledged))
        append(record)
        var metadata = message.logMetadata
        metadata["attempt"] = .stringConvertible(attempt)
        metadata["status"] = .string(response.status.map(String.init) ?? "no answer")
        metadata["kind"] = .string("\(kind)")
        metadata["acknowledged"] = .stringConvertible(acknowledged)
        logger.debug("\(noun) delivery", metadata: metadata)
        return (record, acknowledged)
    }

    // MARK: One-off tries

    /// Sends `request` once on the deliverer's session (no redirects followed, nothing recorded): for
    /// a gateway's own requests around a delivery, such as an endpoint verification.
    func perform(_ request: URLRequest) async -> DeliveryResponse {
        do {
            let (data, response) = try await session.data(for: request)
            return DeliveryResponse(status: (response as? HTTPURLResponse)?.statusCode, body: data)
        } catch {
            return DeliveryResponse(status: nil, body: nil)
        }
    }

    /// Adds a record of the emulator's own (e.g. an endpoint verification) to ``attempts``.
    func append(_ record: Message.Record) {
        lock.withLock { records.append(record) }
    }

    /// POSTs `message` once, without retries, and returns the try (attempt 1, also in ``attempts``):
    /// a replay or a crafted notification.
    @discardableResult
    func send(_ message: Message, kind: DeliveryKind) async -> Message.Record {
        await post(message, attempt: 1, kind: kind).record
    }

    /// The last message queued for `key`, if any.
    func latest(for key: String) -> Message? {
        lock.withLock { latest[key] }
    }

    /// POSTs the last message queued for `key` again, byte for byte, once; `nil` when none was.
    @discardableResult
    func redeliver(key: String) async -> Message.Record? {
        guard let message = latest(for: key) else { return nil }
        return await send(message, kind: .replay)
    }

    // MARK: Test controls

    /// Every try so far (replays, crafted and dropped ones included), oldest first.
    var attempts: [Message.Record] {
        lock.withLock { records }
    }

    /// Delays the first try of every message queued from now on (zero by default).
    func setDelay(_ delay: Duration) {
        lock.withLock { self.delay = max(.zero, delay) }
    }

    /// Keeps messages queued instead of sending them, until ``release()``. Deliveries under way go on.
    func hold() {
        lock.withLock { held = true }
    }

    /// Sends the messages queued since ``hold()``, in order, each after the delay it was queued with,
    /// and the next ones at once again.
    func release() {
        lock.withLock {
            held = false
            let queued = heldMessages
            heldMessages = []
            for pending in queued { startLocked(pending) }
        }
    }

    /// Drops the next `count` messages: recorded (attempt 0) but never sent.
    func drop(_ count: Int) {
        lock.withLock { toDrop += max(0, count) }
    }

    /// Waits until every delivery under way has been acknowledged, stopped or has run out of tries
    /// (held messages are not waited for).
    func waitForAll() async {
        while let task = lock.withLock({ tasks.values.first }) {
            await task.value
        }
    }

    /// Waits until the deliveries under way for `key` are over.
    func waitForDeliveries(of key: String) async {
        while let task = lock.withLock({ taskIDsByKey[key]?.first.flatMap { tasks[$0] } }) {
            await task.value
        }
    }
}

/// Keeps the sandbox's own HTTP clients from following redirects: a gateway judges the answer it
/// gets (APS counts a 302 itself as an acknowledgement of feedback), and the sandbox's customer hands
/// a redirect to the app instead of loading it.
final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

extension Duration {
    /// The duration in seconds, for `URLRequest` timeouts and date arithmetic.
    var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
