import Foundation
import Logging

/// A local stand-in for ecommpay: the other party of Till's `ecommpay` module.
///
/// It is written from vendor material only: the official Payment Page SDKs and their tests
/// (ITECOMMPAY/paymentpage-sdk-python@35ed5ec, -php@cf81e39, -js@b53f674, -go@db11425, -java@0faf4eb),
/// the iOS SDK UI 4.0.8 (ITECOMMPAY/mobile-sdk-ios-ui@7662184: `PaymentResult.swift`, `Payment.swift`,
/// `PaymentOptions.swift`, the public header of MsdkCore), the vendor's article "SDK UI & Core for iOS"
/// ("the seed"), the official WooCommerce plugin (ITECOMMPAY/woocommerce-ecommpay@7241b86, for the Gate
/// paths, body shapes and callback acknowledgement) and excerpts of developers.ecommpay.com.
///
/// It serves:
/// - the mobile SDK through a clearly named stand-in, `POST {base}/sandbox-only/sdk/pay` (not an
///   ecommpay API: the SDK's traffic goes through its closed MsdkCore);
/// - the Payment Page, `GET {base}/payment?…&signature=…`, with sandbox card and 3-D Secure pages;
/// - the Gate, `POST {base}/v2/payment/status`, and `…/v2/payment/{card|applepay}/{capture|cancel|refund}`;
/// - signed callbacks to the project's callback URL (or a Gate request's `merchant_callback_url`),
///   retried until HTTP 200;
/// - admin routes under `/admin/ecommpay` (faults, ledger, payments, callbacks).
///
/// Host it with ``Sandbox/start(emulators:host:port:logger:)``; the module's `base_url` is
/// `{sandbox}/ecommpay`.
///
/// ```swift
/// let ecommpay = EcommpayEmulator(projects: [.init(projectId: 1234, secretKey: "sandbox-secret")])
/// let sandbox = try await Sandbox.start(emulators: [payFort, ecommpay])
/// await ecommpay.setCallbackURL(merchantCallbacks, for: 1234)
/// ```
///
/// Where the sources are silent the choices are listed in `docs/sandbox.md` (ecommpay) and named in
/// the code as *emulator choices*.
public actor EcommpayEmulator {
    /// One ecommpay project: its id and secret key, and where its callbacks go.
    ///
    /// ``description`` leaves the key out, so a failing test can print it.
    public struct Project: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// `project_id`, an integer assigned by ecommpay (seed "Opening payment form" step 3).
        public var projectId: Int
        /// The project's secret key, which signs everything both ways (facts §1).
        public var secretKey: String
        /// Where the project's callbacks go, unless a Gate request names a `merchant_callback_url`.
        /// Change it later with ``EcommpayEmulator/setCallbackURL(_:for:)``.
        public var callbackURL: URL?

        /// Creates a project.
        public init(projectId: Int, secretKey: String, callbackURL: URL? = nil) {
            self.projectId = projectId
            self.secretKey = secretKey
            self.callbackURL = callbackURL
        }

        /// The project id only.
        public var description: String { "EcommpayEmulator.Project(\(projectId))" }
        /// Same as ``description``: the key is never printed.
        public var debugDescription: String { description }
    }

    /// A failure to inject into the next matching Gate request.
    public enum Fault: String, Sendable, Hashable, CaseIterable, Codable {
        /// HTTP 500 at once; the request is not processed.
        case serverError = "server_error"
        /// The request is processed, but no answer comes for `timeoutHold`; then HTTP 504.
        case timeout
        /// The request is processed, then the connection is closed without an answer.
        case dropConnection = "drop"
        /// The request is processed, and the answer is HTTP 200 with a body that is not JSON.
        case garbage
        /// The request is processed, and the answer's signature is wrong.
        case badSignature = "bad_signature"
        /// A capture, cancel or refund is accepted (`status: success`, a `request_id`) and then declined: its
        /// callback's `operation.status` is `decline` and the payment is unchanged (woo `EcpOrderManager`:
        /// "%s operation was declined: %s"; `EcpModuleRefund`: a refund callback in another status fails).
        /// Other requests are answered as usual.
        case decline
    }

    /// Something that really moved money: a sale, or the capture of a hold. Never twice for one payment.
    public struct LedgerEntry: Sendable, Hashable, Codable {
        /// The project.
        public var projectId: Int
        /// The merchant's payment id.
        public var paymentId: String
        /// `sale` or `capture`.
        public var operation: String
        /// The operation's id.
        public var operationId: Int64
        /// Minor units of `currency`.
        public var amount: Int64
        /// ISO 4217 alpha-3.
        public var currency: String
        /// When, `yyyy-MM-dd'T'HH:mm:ssZ` in UTC.
        public var date: String
    }

    /// One payment as the admin route lists it.
    public struct PaymentSummary: Sendable, Hashable, Codable {
        /// The project.
        public var projectId: Int
        /// The merchant's payment id.
        public var paymentId: String
        /// The payment's status (`success`, `decline`, `awaiting capture`, `cancelled`, `awaiting 3ds result`…).
        public var status: String
        /// `sdk` (the SDK stand-in) or `payment_page`.
        public var via: String
        /// `card` or `apple_pay`.
        public var method: String
        /// `sale`, `auth`, `verify` or `tokenize`.
        public var operationType: String
        /// The payment's amount, minor units.
        public var amount: Int64
        /// ISO 4217 alpha-3.
        public var currency: String
        /// The operations, oldest first, as `type:status`.
        public var operations: [String]
    }

    /// One try at delivering a callback.
    public struct CallbackAttempt: Sendable, Hashable, Codable {
        /// Where it was POSTed.
        public var url: String
        /// The body exactly as sent.
        public var body: String
        /// The HTTP status the merchant answered, or `nil` (no answer, or dropped).
        public var status: Int?
        /// The merchant's answer body (at most 200 characters), or `nil`.
        public var answer: String?
        /// 1 for the first try of a delivery (and for a replay or a crafted one); 0 when dropped.
        public var attempt: Int
        /// The project.
        public var projectId: Int
        /// The payment it is about.
        public var paymentId: String
        /// A replay made with ``EcommpayEmulator/redeliver(projectId:paymentId:)``.
        public var replay: Bool
        /// A crafted one made with ``EcommpayEmulator/sendCrafted(_:)``.
        public var crafted: Bool
        /// Dropped by ``EcommpayEmulator/dropCallbacks(_:)``: never sent.
        public var dropped: Bool
        /// Whether the merchant acknowledged it: HTTP 200.
        public var acknowledged: Bool
    }

    /// A callback built by hand, for receivers' tests: the payment's last callback body, changed as
    /// asked. Sent once, without retries; moves no money.
    public struct CraftedCallback: Sendable, Hashable, Codable {
        /// The payment's project; may be left out when only one project has a payment `paymentId`.
        public var projectId: Int?
        /// The payment the callback is about.
        public var paymentId: String
        /// `payment.status` to announce (the payment's own by default).
        public var paymentStatus: String?
        /// `operation.status` to announce (the last operation's by default).
        public var operationStatus: String?
        /// Members set before signing, by dot path (`"payment.sum.amount"`), as JSON text (`"1"`, `"\"x\""`).
        public var set: [String: String]?
        /// Members changed after signing (a tampered message), by dot path, as JSON text.
        public var tamper: [String: String]?
        /// Sign with this secret instead of the project's (a forgery).
        public var secretKey: String?
        /// Send this `signature` as it is.
        public var signature: String?
        /// Send it without any signature.
        public var unsigned: Bool?
        /// Send it here instead of the payment's callback URL.
        public var url: String?

        /// A crafted callback about `paymentId`; everything else is optional.
        public init(projectId: Int? = nil, paymentId: String, paymentStatus: String? = nil, operationStatus: String? = nil,
                    set: [String: String]? = nil, tamper: [String: String]? = nil, secretKey: String? = nil,
                    signature: String? = nil, unsigned: Bool? = nil, url: String? = nil) {
            self.projectId = projectId
            self.paymentId = paymentId
            self.paymentStatus = paymentStatus
            self.operationStatus = operationStatus
            self.set = set
            self.tamper = tamper
            self.secretKey = secretKey
            self.signature = signature
            self.unsigned = unsigned
            self.url = url
        }
    }

    /// The SDK languages of the seed ("Payment interface language support": en, de, hu, it, es, fr).
    public static let sdkLanguages: Set<String> = ["en", "de", "hu", "it", "es", "fr"]

    // MARK: Configuration

    let projects: [Project]
    var callbackURLs: [Int: URL] = [:]
    let timeoutHold: Duration
    let languages: Set<String>
    let now: @Sendable () -> Date
    let logger: Logger
    /// Sends the callbacks, retried every `callbackRetryInterval` up to `callbackMaxAttempts` times
    /// (*emulator choice*: no source gives ecommpay's schedule), and records the tries. Callbacks of
    /// one payment go one after another, in the order they were queued (a cascade's first callback
    /// before its second).
    let deliverer: NotificationDeliverer<Callback>

    // MARK: State

    struct Operation: Sendable {
        var id: Int64
        var type: String
        var status: String
        /// `"0"` for success (js `callbackFormats.js`: `code: '0'`, `message: 'Success'`).
        var code: String
        var message: String
        var amount: Int64
        var currency: String
        var date: Date
        var requestId: String
        /// The provider that processed it (cascading: the first declines, the second succeeds).
        var providerId: Int
        var eci: String?
        var authCode: String?
    }

    struct Payment: Sendable {
        var project: Project
        var id: String
        /// `sdk` or `payment_page`.
        var via: String
        var operationType: String
        var method: String
        var amount: Int64
        var currency: String
        var description: String?
        var customerId: String?
        var status: String
        var created: Date
        var card: CardDetails?
        var token: String?
        var operations: [Operation] = []
        /// A Gate request's `merchant_callback_url`, once given; else the project's URL.
        var callbackURL: URL?
        var cascadingWithRedirect = false

        var key: String { EcommpayEmulator.key(project.projectId, id) }
    }

    struct CardDetails: Sendable, Hashable {
        var masked: String
        var holder: String
        var expiryMonth: String
        var expiryYear: String
        var brand: String
    }

    /// A callback ready to send, kept for replays.
    struct Callback: MerchantNotification {
        var url: URL
        var body: [UInt8]
        var projectId: Int
        var paymentId: String

        var key: String { EcommpayEmulator.key(projectId, paymentId) }
        var headers: [(name: String, value: String)] { [("Content-Type", "application/json")] }
        var logMetadata: Logger.Metadata { ["payment_id": .string(paymentId)] }

        /// HTTP 200 (the official WooCommerce plugin answers a processed callback `200` `OK`, a bad
        /// signature `400`, an unknown order `404`: `common/includes/EcpCallbacksHandler.php`); the body
        /// is not read.
        func isAcknowledged(by response: DeliveryResponse) -> Bool { response.status == 200 }

        func record(_ delivery: DeliveryTry) -> CallbackAttempt {
            CallbackAttempt(url: url.absoluteString, body: String(decoding: body, as: UTF8.self), status: delivery.status,
                            answer: delivery.response?.answerPrefix, attempt: delivery.attempt, projectId: projectId,
                            paymentId: paymentId, replay: delivery.kind == .replay, crafted: delivery.kind == .crafted,
                            dropped: delivery.kind == .dropped, acknowledged: delivery.acknowledged)
        }
    }

    /// `projectId \0 paymentId` → payment.
    var payments: [String: Payment] = [:]
    var paymentKeys: [String] = []
    /// Payment Page sessions by id.
    var pageSessions: [String: PageSession] = [:]
    /// Faults by the end of a Gate path.
    var faults = FaultQueue<Fault>()
    var lastCallbackValue: [String: JSONValue] = [:]
    var nextOperationID: Int64 = 1_000_001

    /// What really moved money, oldest first (never twice for one payment).
    public internal(set) var ledger: [LedgerEntry] = []

    /// Every callback try so far (replays, crafted and dropped ones included), oldest first.
    public var callbacks: [CallbackAttempt] { deliverer.attempts }

    /// Creates an emulator for some projects.
    /// - Parameters:
    ///   - projects: the projects requests may come from (the first wins when two share a `projectId`).
    ///   - callbackRetryInterval: the wait between callback tries (*emulator choice*: no source gives
    ///     ecommpay's schedule); tests compress it to milliseconds.
    ///   - callbackMaxAttempts: how many times a callback is tried before giving up (at least 1).
    ///   - callbackTimeout: how long one callback POST may take before it counts as unanswered.
    ///   - timeoutHold: how long a Gate request hit by ``Fault/timeout`` is held before HTTP 504.
    ///   - languages: the `language_code`s the projects support (the seed's six SDK languages by default).
    ///   - now: the wall clock (dates, `best_before`).
    ///   - logger: where the emulator logs (never keys).
    public init(projects: [Project],
                callbackRetryInterval: Duration = .seconds(10),
                callbackMaxAttempts: Int = 10,
                callbackTimeout: Duration = .seconds(10),
                timeoutHold: Duration = .seconds(30),
                languages: Set<String> = EcommpayEmulator.sdkLanguages,
                now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "till.sandbox.ecommpay")) {
        self.projects = projects
        var urls: [Int: URL] = [:]
        for project in projects.reversed() { urls[project.projectId] = project.callbackURL }
        self.callbackURLs = urls
        self.timeoutHold = timeoutHold
        self.languages = languages
        self.now = now
        self.logger = logger
        self.deliverer = NotificationDeliverer(schedule: RetrySchedule(attempts: callbackMaxAttempts, interval: callbackRetryInterval),
                                               timeout: callbackTimeout, orderedByKey: true, noun: "callback", logger: logger)
    }

    // MARK: Test controls

    /// Sets (or clears, with `nil`) where project `projectId`'s callbacks go from now on.
    /// - Returns: false when there is no such project.
    @discardableResult
    public func setCallbackURL(_ url: URL?, for projectId: Int) -> Bool {
        guard project(projectId) != nil else { return false }
        callbackURLs[projectId] = url
        return true
    }

    /// Where project `projectId`'s callbacks go, if anywhere.
    public func callbackURL(for projectId: Int) -> URL? { callbackURLs[projectId] }

    /// Makes the next Gate request whose path ends with `path` (`"status"`, `"card/capture"`, `"refund"`; any when
    /// `nil`) fail as `fault`. Faults queue up and are used in order.
    public func inject(_ fault: Fault, path: String? = nil) {
        faults.append(fault, key: path)
    }

    /// Keeps callbacks queued instead of sending them, until ``releaseCallbacks()``.
    public func holdCallbacks() { deliverer.hold() }

    /// Sends the callbacks queued since ``holdCallbacks()``, and the next ones at once again.
    public func releaseCallbacks() {
        deliverer.release()
    }

    /// Drops the next `count` callbacks: recorded (``CallbackAttempt/dropped``) but never sent, so
    /// only a status request can tell the merchant.
    public func dropCallbacks(_ count: Int = 1) {
        deliverer.drop(count)
    }

    /// Waits until every callback under way has been acknowledged or has run out of tries (held ones
    /// are not waited for).
    public func waitForCallbacks() async {
        await deliverer.waitForAll()
    }

    /// Every payment, oldest first.
    public func paymentSummaries() -> [PaymentSummary] {
        paymentKeys.compactMap { payments[$0] }.map(summary)
    }

    /// One payment, or `nil`.
    public func payment(projectId: Int, paymentId: String) -> PaymentSummary? {
        payments[Self.key(projectId, paymentId)].map(summary)
    }

    // MARK: Helpers

    func project(_ id: Int?) -> Project? {
        guard let id else { return nil }
        return projects.first { $0.projectId == id }
    }

    static func key(_ projectId: Int, _ paymentId: String) -> String { String(projectId) + "\u{0}" + paymentId }

    /// The key of payment `paymentId` of `projectId`, or of the only project that has one when `projectId` is `nil`.
    func paymentKey(projectId: Int?, paymentId: String) -> String? {
        if let projectId { return payments[Self.key(projectId, paymentId)] == nil ? nil : Self.key(projectId, paymentId) }
        let matches = paymentKeys.filter { payments[$0]?.id == paymentId }
        return matches.count == 1 ? matches[0] : nil
    }

    func summary(_ payment: Payment) -> PaymentSummary {
        PaymentSummary(projectId: payment.project.projectId, paymentId: payment.id, status: payment.status, via: payment.via,
                       method: payment.method, operationType: payment.operationType, amount: payment.amount,
                       currency: payment.currency, operations: payment.operations.map { $0.type + ":" + $0.status })
    }

    /// Records a new payment. The caller has checked that the id is new for the project.
    func record(_ payment: Payment) {
        payments[payment.key] = payment
        paymentKeys.append(payment.key)
        logger.debug("payment recorded", metadata: ["payment_id": .string(payment.id), "via": .string(payment.via)])
    }

    func newOperationID() -> Int64 {
        defer { nextOperationID += 1 }
        return nextOperationID
    }

    /// Adds an operation to payment `key`, and charges the ledger for a successful `sale` or `capture`
    /// (once per payment: a second charge of the same payment is refused and logged).
    func addOperation(_ type: String, status: String, amount: Int64, to key: String, providerId: Int = 1,
                      code: String? = nil, message: String? = nil, eci: String? = nil) {
        guard var payment = payments[key] else { return }
        let success = status == "success"
        let operation = Operation(id: newOperationID(), type: type, status: status,
                                  code: code ?? (success ? Self.successCode : Self.declineCode),
                                  message: message ?? (success ? Self.successMessage : Self.declineMessage),
                                  amount: amount, currency: payment.currency, date: now(),
                                  requestId: Self.randomHex(count: 10) + "-" + Self.randomHex(count: 8),
                                  providerId: providerId, eci: eci, authCode: success ? Self.randomDigits(count: 6) : nil)
        payment.operations.append(operation)
        payments[key] = payment
        if success, type == "sale" || type == "capture" {
            guard !ledger.contains(where: { $0.projectId == payment.project.projectId && $0.paymentId == payment.id }) else {
                logger.warning("second charge of one payment refused", metadata: ["payment_id": .string(payment.id)])
                return
            }
            ledger.append(LedgerEntry(projectId: payment.project.projectId, paymentId: payment.id, operation: type,
                                      operationId: operation.id, amount: amount, currency: payment.currency,
                                      date: Self.dateText(operation.date)))
        }
    }

    /// The operation code and message of a success: `"0"`, `"Success"` (js `__tests__/data/callbackFormats.js`).
    static let successCode = "0"
    static let successMessage = "Success"
    /// A decline's code and message. *Emulator choice*: no vendor sample of a declined operation's
    /// code was found.
    static let declineCode = "20000"
    static let declineMessage = "General decline"
    /// A failed 3-D Secure authentication. *Emulator choice*, as ``declineCode``.
    static let threeDSecureFailedCode = "20105"
    static let threeDSecureFailedMessage = "3-D Secure authentication failed"

    /// `2020-08-24T07:44:44+0000`, the date format of the js callback samples (`callbackFormats.js`), in UTC.
    static func dateText(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        return formatter.string(from: date)
    }

    /// Takes the first queued fault for a Gate request to `path`.
    func takeFault(for path: String) -> Fault? {
        faults.take { path.hasSuffix($0) }
    }

    /// How long held requests wait.
    nonisolated var holdDuration: Duration { timeoutHold }
}
