import Crypto
import Foundation
import Logging

/// A local stand-in for the Citcon UPI API: the other party of Till's Citcon module.
///
/// It is written from vendor material only, never from Till's own notes: the recorded sandbox traffic
/// and the Android SDK models kept as wire fixtures (`Tests/TillCitconTests/Fixtures/wire`), the
/// official demo servers and `How_to_verify_UPI_IPN_signature.pdf` (citcon-aoyansheng/upi_web_sdk_demo),
/// the Android UPI SDK (zhuanglm/cpay_upi) and the iOS SDK's demo and guide (Citcon/citcon_upi_sdk_ios).
///
/// It answers the JSON API under `/citcon/v1` (access tokens, charges, transaction inquiry, refunds,
/// cancels), serves the landing and QR pages a charge's `payment.client[]` points at, plays the wallet
/// apps (WeChat Pay, Alipay, UnionPay) that receive a `mobile_native` entry's content, sends signed IPNs
/// with retries, and keeps a ``ledger`` of what really moved money, so a test can tell "the app was
/// told" from "the money moved". Host it with ``Sandbox/start(payFort:citcon:host:port:logger:)``.
///
/// ```swift
/// let citcon = CitconEmulator(merchants: [.init(apiKey: "key", apiSecret: "secret")])
/// let sandbox = try await Sandbox.start(payFort: payFort, citcon: citcon)
/// // point the Citcon module at sandbox.citconBaseURL (…/citcon/v1)
/// ```
///
/// `POST /v1/captures` is answered "not supported" (`501` / `5200`): no source shows a capture request.
/// Where the sources are silent the choices are listed in `docs/sandbox.md` (Citcon).
public actor CitconEmulator {
    /// One merchant account: its API credentials and how it wants its IPNs.
    ///
    /// ``description`` leaves the secret and most of the key out, so a failing test can print it.
    public struct Merchant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// How IPNs are encoded.
        public enum IPNFormat: String, Sendable, Hashable, CaseIterable, Codable {
            /// `application/x-www-form-urlencoded`, every value a string. The IPN document does not
            /// state a content type, so a receiver should take both.
            case form
            /// `application/json`: the object the IPN document shows, `amount` a number and
            /// `amount_captured` / `amount_refunded` numbers or `""`.
            case json
        }

        /// The merchant API key: `Authorization: Bearer <apiKey>` on `POST /v1/access-tokens`.
        public var apiKey: String
        /// The API secret: IPNs are signed with it.
        public var apiSecret: String
        /// The WeChat Open Platform app id put in WeChat Pay launch content (`appid`).
        public var wechatAppID: String
        /// The WeChat Pay merchant number put in WeChat Pay launch content (`partnerid`).
        public var wechatPartnerID: String
        /// How this merchant's IPNs are encoded.
        public var ipnFormat: IPNFormat

        /// Creates a merchant account.
        /// - Parameters:
        ///   - apiKey: the key that obtains access tokens.
        ///   - apiSecret: the secret that signs IPNs.
        ///   - wechatAppID: the `appid` of WeChat Pay launch content.
        ///   - wechatPartnerID: the `partnerid` of WeChat Pay launch content.
        ///   - ipnFormat: JSON (default, as the IPN document shows it) or form-encoded IPNs.
        public init(apiKey: String, apiSecret: String, wechatAppID: String = "wxsandbox0001",
                    wechatPartnerID: String = "1900000109", ipnFormat: IPNFormat = .json) {
            self.apiKey = apiKey
            self.apiSecret = apiSecret
            self.wechatAppID = wechatAppID
            self.wechatPartnerID = wechatPartnerID
            self.ipnFormat = ipnFormat
        }

        /// The merchant without its secret, and with only the end of its key.
        public var description: String {
            "CitconEmulator.Merchant(key …\(apiKey.suffix(4)), wechat appid \(wechatAppID), IPN \(ipnFormat.rawValue))"
        }

        /// Same as ``description``: the secret is never printed.
        public var debugDescription: String { description }
    }

    /// The unit of the API's numeric times (`data.expiry` of a token, `time_created`, `time_completed`,
    /// `time_captured`, `time_canceled`). The sources disagree, so both are offered.
    public enum TimeUnit: String, Sendable, Hashable, CaseIterable {
        /// Unix seconds, as the sandbox answered in 2025 (`expiry: 1762681312`,
        /// `time_created: 1762597034`); the envelope's `version` is `v1.0.0`.
        case seconds
        /// Unix milliseconds, as the 2022 WebSDK manual and the iOS SDK guide show
        /// (`expiry: 1658662133487`, `time_created: 1647181576000`); `version` is `v0.1.1`.
        case milliseconds
    }

    /// What the emulator does with a request member that no source shows.
    public enum UnknownFields: String, Sendable, Hashable, CaseIterable {
        /// Ignore it, as the sandbox did with the members a third-party client chose
        /// (`transaction_reference` and `note` in refunds and cancels, `country_accelerator` in charges):
        /// the default.
        case ignore
        /// Refuse it `400` / `4000` naming the member: a test setting (not Citcon's behaviour) that
        /// catches a client sending members no source shows.
        case refuse
    }

    /// A failure to inject into the next matching API request (`/citcon/v1/…`).
    public enum Fault: String, Sendable, Hashable, CaseIterable {
        /// HTTP 500 with code `5100` at once; the request is not processed.
        case serverError = "server_error"
        /// The request is processed (money may move), but no answer comes for the emulator's
        /// `timeoutHold`; then HTTP 504. The caller must inquire.
        case timeout
        /// The request is processed, then the connection is closed without an answer.
        case dropConnection = "drop"
        /// Every access token issued so far expires before the request is handled, so a request
        /// made with one is refused `401` / `4010`.
        case expireTokens = "expire_tokens"
    }

    /// Something the gateway really did with money.
    public struct LedgerEntry: Sendable, Hashable, Codable {
        /// What happened.
        public enum Operation: String, Sendable, Hashable, Codable, CaseIterable {
            /// A charge was paid (`succeeded`) or authorized (`authorized`) by the customer.
            case charge
            /// Money was given back.
            case refund
            /// An authorization was released (cancelling an `initiated` charge moved no money and is absent).
            case cancel
        }

        /// What happened.
        public var operation: Operation
        /// The charge's `id`.
        public var transactionID: String
        /// The refund's own `id`; the charge `id` for ``Operation/charge`` and ``Operation/cancel``.
        public var id: String
        /// The charge's `transaction.reference`.
        public var reference: String
        /// The payment method (`wechatpay`, `upop`, …).
        public var method: String
        /// The amount in minor units of ``currency``.
        public var amountMinor: Int64
        /// ISO 4217 alphabetic code.
        public var currency: String
        /// `succeeded` or `authorized` for a charge; `succeeded` for a refund; `canceled` for a cancel.
        public var status: String

        /// Creates a ledger entry.
        public init(operation: Operation, transactionID: String, id: String, reference: String, method: String,
                    amountMinor: Int64, currency: String, status: String) {
            self.operation = operation
            self.transactionID = transactionID
            self.id = id
            self.reference = reference
            self.method = method
            self.amountMinor = amountMinor
            self.currency = currency
            self.status = status
        }

        enum CodingKeys: String, CodingKey {
            case operation, transactionID = "transaction_id", id, reference, method, amountMinor = "amount"
            case currency, status
        }
    }

    /// One try at delivering an IPN to a charge's IPN URL.
    public struct IPNAttempt: Sendable, Hashable, Codable {
        /// Where it was POSTed.
        public var url: URL
        /// The body exactly as sent (JSON or form-encoded text).
        public var body: String
        /// The `Content-Type` it was sent with.
        public var contentType: String
        /// The HTTP status the merchant answered, or `nil` when no answer came (connection error, timeout).
        public var status: Int?
        /// 1 for the first try of a delivery (and for a replay made with ``CitconEmulator/redeliver(ipnOf:)``).
        public var attempt: Int
        /// The charge the IPN is about.
        public var transactionID: String
        /// Whether this was a replay made with ``CitconEmulator/redeliver(ipnOf:)``.
        public var replay: Bool

        /// Whether the emulator counts the answer as an acknowledgement (any 2xx).
        public var acknowledged: Bool {
            guard let status else { return false }
            return (200..<300).contains(status)
        }

        enum CodingKeys: String, CodingKey {
            case url, body, contentType = "content_type", status, attempt, transactionID = "transaction_id", replay
        }
    }

    // MARK: Configuration

    let merchants: [Merchant]
    let tokenLifetime: Duration
    let timeUnit: TimeUnit
    let unknownFields: UnknownFields
    let timeoutHold: Duration
    let now: @Sendable () -> Date
    let logger: Logger
    /// Sends the IPNs, retried every `ipnRetryInterval` up to `ipnMaxAttempts` times, and records the tries.
    let deliverer: NotificationDeliverer<IPNMessage>
    /// Keys what this instance issues: access tokens, the WeChat `sign` and the Alipay `signedString`.
    let instanceKey = SymmetricKey(size: .bits256)

    // MARK: State

    struct AccessToken {
        var apiKey: String
        var type: String
        var permission: [String]
        /// Unix milliseconds.
        var expiresAt: Int64
        var revoked = false
    }

    /// A charge's state, in the words of the iOS guide's "Status Returned to Client end".
    enum State: String {
        case initiated, succeeded, authorized, failed, canceled
    }

    /// Where a charge sends the customer and its IPNs.
    struct ChargeURLs {
        var ipn: URL?
        var success: String?
        var fail: String?
        var cancel: String?
    }

    struct Refund {
        var id: String
        var reference: String
        var amount: Int64
        /// Unix milliseconds.
        var time: Int64
    }

    struct Charge {
        var merchant: Merchant
        /// `data.id`: 22 digits, as the sandbox's.
        var id: String
        /// `data.charge_token`: 32 hex digits.
        var chargeToken: String
        var reference: String
        var amount: Int64
        var currency: String
        var country: String
        /// `nil` for a pending charge created without a `payment` object (the WebSDK's first step).
        var method: String?
        var autoCapture: Bool
        var urls: ChargeURLs
        /// `payment.expiry`, Unix seconds, as sent.
        var expiry: Int64?
        /// Unix milliseconds.
        var created: Int64
        var state: State = .initiated
        var completed: Int64?
        var amountCaptured: Int64?
        var timeCaptured: Int64?
        var timeCanceled: Int64?
        var refunds: [Refund] = []
        /// The `mobile_native` launch content handed out, if any.
        var native: [String: String]?

        var amountRefunded: Int64 { refunds.reduce(0) { $0 + $1.amount } }
    }

    /// An IPN body ready to send, kept for replays.
    struct IPNMessage: MerchantNotification {
        var url: URL
        var body: [UInt8]
        var contentType: String
        var transactionID: String

        var key: String { transactionID }
        var headers: [(name: String, value: String)] { [("Content-Type", contentType)] }
        var logMetadata: Logger.Metadata { ["id": .string(transactionID)] }

        /// Any 2xx.
        func isAcknowledged(by response: DeliveryResponse) -> Bool { response.isSuccess }

        func record(_ delivery: DeliveryTry) -> IPNAttempt {
            IPNAttempt(url: url, body: String(decoding: body, as: UTF8.self), contentType: contentType, status: delivery.status,
                       attempt: delivery.attempt, transactionID: transactionID, replay: delivery.kind == .replay)
        }
    }

    var tokens: [String: AccessToken] = [:]
    var charges: [String: Charge] = [:]
    /// `apiKey \0 reference` of every charge reference used.
    var usedReferences: Set<String> = []
    /// `apiKey \0 reference` of every refund reference used.
    var usedRefundReferences: Set<String> = []
    /// Landing and QR page ids → charge id.
    var landings: [String: String] = [:]
    var chargeIDsByPrepayID: [String: String] = [:]
    var chargeIDsByTN: [String: String] = [:]
    /// Faults by normalized API path (``normalizedAPIPath(_:)``).
    var faults = FaultQueue<Fault>()

    /// What really moved money, oldest first: charges the customer paid or authorized, refunds, and
    /// cancels that released an authorization.
    public internal(set) var ledger: [LedgerEntry] = []

    /// Every IPN delivery try so far (replays included), oldest first.
    public var notifications: [IPNAttempt] { deliverer.attempts }

    /// Creates an emulator for some merchant accounts.
    /// - Parameters:
    ///   - merchants: the accounts requests may come from (the first one wins when two share a key).
    ///   - tokenLifetime: how long an access token stays valid (24 hours, as the 2022 manual's and
    ///     the 2025 sandbox's tokens did).
    ///   - timeUnit: seconds (default, the 2025 sandbox) or milliseconds (the 2022 documents) for the
    ///     API's numeric times, token `expiry` included.
    ///   - unknownFields: ignore (default, as the sandbox did) or refuse request members no source shows.
    ///   - ipnRetryInterval: the wait between IPN tries; tests compress it to milliseconds.
    ///   - ipnMaxAttempts: how many times an IPN is tried before giving up (at least 1).
    ///   - ipnTimeout: how long one IPN POST may take before it counts as unanswered.
    ///   - timeoutHold: how long a request hit by ``Fault/timeout`` is held before HTTP 504 (30 s).
    ///   - now: the wall clock, for token expiry, `payment.expiry` and timestamps.
    ///   - logger: where the emulator logs (never secrets, tokens or card data).
    public init(merchants: [Merchant],
                tokenLifetime: Duration = .seconds(86_400),
                timeUnit: TimeUnit = .seconds,
                unknownFields: UnknownFields = .ignore,
                ipnRetryInterval: Duration = .seconds(10),
                ipnMaxAttempts: Int = 10,
                ipnTimeout: Duration = .seconds(10),
                timeoutHold: Duration = .seconds(30),
                now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "till.sandbox.citcon")) {
        self.merchants = merchants
        self.tokenLifetime = tokenLifetime
        self.timeUnit = timeUnit
        self.unknownFields = unknownFields
        self.timeoutHold = timeoutHold
        self.now = now
        self.logger = logger
        self.deliverer = NotificationDeliverer(schedule: RetrySchedule(attempts: ipnMaxAttempts, interval: ipnRetryInterval),
                                               timeout: ipnTimeout, noun: "IPN", logger: logger)
    }

    // MARK: Test controls

    /// Makes the next API request (`/citcon/v1/…`) that matches `path` fail as `fault`. Faults queue
    /// up and are used in order.
    /// - Parameter path: the API path: `"/v1/charges"`, `"charges"` and `"/citcon/v1/charges"` are the
    ///   same; `"/v1/transactions"` matches every inquiry. `nil` matches any API request.
    public func inject(_ fault: Fault, path: String? = nil) {
        faults.append(fault, key: path.map(Self.normalizedAPIPath))
    }

    /// Expires every access token issued so far, now. Returns how many were still valid.
    @discardableResult
    public func expireTokens() -> Int {
        let nowMillis = Self.unixMillis(now())
        var count = 0
        for key in tokens.keys where tokens[key]?.revoked == false {
            if let expiry = tokens[key]?.expiresAt, expiry > nowMillis { count += 1 }
            tokens[key]?.revoked = true
        }
        logger.info("access tokens expired", metadata: ["count": .stringConvertible(count)])
        return count
    }

    /// Delays the first try of every IPN queued from now on by `delay` (zero by default), e.g. so
    /// a return URL reaches the app before the IPN reaches the server.
    public func setIPNDelay(_ delay: Duration) {
        deliverer.setDelay(delay)
    }

    /// Keeps IPNs queued instead of sending them, until ``releaseIPNs()``. Deliveries already under
    /// way go on.
    public func holdIPNs() {
        deliverer.hold()
    }

    /// Sends the IPNs queued since ``holdIPNs()`` (in order, each after the IPN delay it was queued
    /// with), and sends the next ones at once again.
    public func releaseIPNs() {
        deliverer.release()
    }

    /// Waits until every IPN under way has been acknowledged or has run out of tries. IPNs held by
    /// ``holdIPNs()`` are not waited for.
    public func waitForNotifications() async {
        await deliverer.waitForAll()
    }

    /// Takes the first queued fault that matches the API `path`.
    func takeFault(for path: String) -> Fault? {
        faults.take { wanted in path == wanted || path.hasPrefix(wanted + "/") }
    }

    /// How long held requests wait.
    nonisolated var holdDuration: Duration { timeoutHold }

    /// `/v1/…`, without `/citcon`, without a trailing slash.
    static func normalizedAPIPath(_ path: String) -> String {
        var trimmed = path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if trimmed.hasPrefix("citcon/") { trimmed.removeFirst("citcon/".count) }
        if trimmed != "v1", !trimmed.hasPrefix("v1/") { trimmed = "v1/" + trimmed }
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        return "/" + trimmed
    }
}
