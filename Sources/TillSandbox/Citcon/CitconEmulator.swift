import Crypto
import Foundation
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A local stand-in for the Citcon UPI API, written from Citcon's UPI SDK guide and IPN signature
/// document and independent of Till's Citcon module: it is the other party.
///
/// It answers the JSON API under `/citcon/v1` (access tokens, charges, transaction inquiry,
/// captures, refunds, cancels), serves a per-charge H5 payment page, plays the wallet apps
/// (WeChat Pay, Alipay, UnionPay) that receive a charge's native launch content, sends signed IPNs
/// with retries, and keeps a ``ledger`` of what really moved money, so a test can tell "the app was
/// told" from "the money moved". Host it with ``Sandbox/start(payFort:citcon:host:port:logger:)``.
///
/// ```swift
/// let citcon = CitconEmulator(merchants: [.init(apiKey: "key", apiSecret: "secret")])
/// let sandbox = try await Sandbox.start(payFort: payFort, citcon: citcon)
/// // point the Citcon module at sandbox.citconBaseURL (…/citcon/v1)
/// ```
///
/// Choices where the documentation is silent:
/// - A charge succeeds, fails or is cancelled only when the customer acts: on the H5 page
///   (`outcome=complete|fail|cancel`) or in the simulated wallet app. Creating it moves no money.
/// - `transaction.auto_capture` defaults to `false` (the SDK guide's default); only `card`, `paypal`
///   and `venmo` can stop at `authorized`, every other method is captured when paid.
/// - A `payment.expiry` that is already past is refused (`4001`): it catches seconds sent for
///   milliseconds. A pending charge whose expiry passes reads `expired`; no IPN is sent for it.
/// - Captures, refunds and cancels that the charge's state does not allow are `400` / `4001` naming
///   the field (`transaction_id` for the state, `amount` for a too-large amount). One capture per
///   authorization; what it leaves uncaptured is released.
/// - A refund IPN carries the charge's `id`, `reference` and `amount`, with `amount_refunded` the total
///   refunded so far, so the receiver can tell a full refund from a partial one.
/// - The wallet's `sign` / `signedString` are keyed with a secret of this emulator instance, not
///   the merchant's: neither the app nor the merchant can forge launch content.
public actor CitconEmulator {
    /// One merchant account: its API credentials and how it wants its IPNs.
    ///
    /// ``description`` leaves the secret and most of the key out, so a failing test can print it.
    public struct Merchant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// How IPNs are encoded.
        public enum IPNFormat: String, Sendable, Hashable, CaseIterable, Codable {
            /// `application/x-www-form-urlencoded`, every value a string.
            case form
            /// `application/json`, with `amount` (and captured/refunded amounts, when any) as numbers.
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
        ///   - ipnFormat: form-encoded (default) or JSON IPNs.
        public init(apiKey: String, apiSecret: String, wechatAppID: String = "wxsandbox0001",
                    wechatPartnerID: String = "1900000109", ipnFormat: IPNFormat = .form) {
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

    /// A failure to inject into the next matching API request (`/citcon/v1/…`).
    public enum Fault: String, Sendable, Hashable, CaseIterable {
        /// HTTP 503 with code `5000` at once; the request is not processed.
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
            /// An authorization was captured.
            case capture
            /// Money was given back.
            case refund
            /// An authorization was released (a pending charge cancelled moved no money and is absent).
            case cancel
        }

        /// What happened.
        public var operation: Operation
        /// The charge's id (`transaction_id`).
        public var transactionID: String
        /// The capture, refund or cancel id; the charge id for ``Operation/charge``.
        public var id: String
        /// The merchant's `transaction.reference`.
        public var reference: String
        /// The payment method (`wechatpay`, `card`, …).
        public var method: String
        /// The amount in minor units of ``currency``.
        public var amountMinor: Int64
        /// ISO 4217 alphabetic code.
        public var currency: String
        /// `succeeded` or `authorized` for a charge; `succeeded` for the others.
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

    /// One try at delivering an IPN to a charge's `urls.ipn`.
    public struct IPNAttempt: Sendable, Hashable, Codable {
        /// Where it was POSTed.
        public var url: URL
        /// The body exactly as sent (form-encoded or JSON text).
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

        /// Whether Citcon counts the answer as an acknowledgement (any 2xx).
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
    let ipnRetryInterval: Duration
    let ipnMaxAttempts: Int
    let ipnTimeout: Duration
    let timeoutHold: Duration
    let now: @Sendable () -> Date
    let logger: Logger
    let session: URLSession
    /// Keys the wallet launch content this instance issues (WeChat `sign`, Alipay `signedString`).
    let walletKey = SymmetricKey(size: .bits256)

    // MARK: State

    struct AccessToken {
        var apiKey: String
        var type: String
        var permissions: [String]
        /// Unix seconds.
        var expiry: Int64
        var revoked = false
    }

    enum State: String {
        case pending, succeeded, authorized, failed, canceled
    }

    struct Charge {
        var merchant: Merchant
        var id: String
        var reference: String
        var chargeToken: String
        var amount: Int64
        var currency: String
        var country: String
        var method: String
        var autoCapture: Bool
        var successURL: String
        var failURL: String
        var cancelURL: String
        var ipnURL: URL?
        /// `payment.expiry`, absolute milliseconds.
        var expiry: Int64?
        var timeCreated: Int64
        var state: State = .pending
        var timeCompleted: Int64?
        var amountCaptured: Int64?
        var amountRefunded: Int64 = 0
        var timeCaptured: Int64?
        var timeCanceled: Int64?
        /// The native launch content handed out, if the method has one.
        var native: [String: String]?
        /// `payment.client[]` as created.
        var client: [JSONValue]
    }

    /// An IPN body ready to send, kept for replays.
    struct IPNMessage: Sendable {
        var url: URL
        var body: [UInt8]
        var contentType: String
        var transactionID: String
    }

    var tokens: [String: AccessToken] = [:]
    var charges: [String: Charge] = [:]
    /// `apiKey \0 reference` of every reference used.
    var usedReferences: Set<String> = []
    var chargeIDsByPrepayID: [String: String] = [:]
    var chargeIDsByTN: [String: String] = [:]
    var pendingFaults: [(fault: Fault, path: String?)] = []
    var lastIPN: [String: IPNMessage] = [:]
    var deliveries: [Int: Task<Void, Never>] = [:]
    var nextDeliveryID = 0
    var ipnDelay: Duration = .zero
    var ipnsHeld = false
    var heldIPNs: [(message: IPNMessage, delay: Duration)] = []

    /// What really moved money, oldest first: charges the customer paid or authorized, captures,
    /// refunds, and cancels that released an authorization.
    public internal(set) var ledger: [LedgerEntry] = []

    /// Every IPN delivery try so far (replays included), oldest first.
    public internal(set) var notifications: [IPNAttempt] = []

    /// Creates an emulator for some merchant accounts.
    /// - Parameters:
    ///   - merchants: the accounts requests may come from (the first one wins when two share a key).
    ///   - tokenLifetime: how long an access token stays valid (one hour).
    ///   - ipnRetryInterval: the wait between IPN tries; tests compress it to milliseconds.
    ///   - ipnMaxAttempts: how many times an IPN is tried before giving up (at least 1).
    ///   - ipnTimeout: how long one IPN POST may take before it counts as unanswered.
    ///   - timeoutHold: how long a request hit by ``Fault/timeout`` is held before HTTP 504 (30 s).
    ///   - now: the wall clock, for token expiry, `payment.expiry` and timestamps.
    ///   - logger: where the emulator logs (never secrets, tokens or card data).
    public init(merchants: [Merchant],
                tokenLifetime: Duration = .seconds(3600),
                ipnRetryInterval: Duration = .seconds(10),
                ipnMaxAttempts: Int = 10,
                ipnTimeout: Duration = .seconds(10),
                timeoutHold: Duration = .seconds(30),
                now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "till.sandbox.citcon")) {
        self.merchants = merchants
        self.tokenLifetime = tokenLifetime
        self.ipnRetryInterval = ipnRetryInterval
        self.ipnMaxAttempts = max(1, ipnMaxAttempts)
        self.ipnTimeout = ipnTimeout
        self.timeoutHold = timeoutHold
        self.now = now
        self.logger = logger
        self.session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
    }

    deinit {
        for task in deliveries.values { task.cancel() }
        session.invalidateAndCancel()
    }

    // MARK: Test controls

    /// Makes the next API request (`/citcon/v1/…`) that matches `path` fail as `fault`. Faults queue
    /// up and are used in order.
    /// - Parameter path: the API path as Till speaks it: `"/v1/charges"`, `"charges"` and
    ///   `"/citcon/v1/charges"` are the same; `"/v1/transactions"` matches every inquiry. `nil`
    ///   matches any API request.
    public func inject(_ fault: Fault, path: String? = nil) {
        pendingFaults.append((fault, path.map(Self.normalizedAPIPath)))
    }

    /// Expires every access token issued so far, now. Returns how many were still valid.
    @discardableResult
    public func expireTokens() -> Int {
        let nowSeconds = Self.unixSeconds(now())
        var count = 0
        for key in tokens.keys where tokens[key]?.revoked == false {
            if let expiry = tokens[key]?.expiry, expiry > nowSeconds { count += 1 }
            tokens[key]?.revoked = true
        }
        logger.info("access tokens expired", metadata: ["count": .stringConvertible(count)])
        return count
    }

    /// Delays the first try of every IPN queued from now on by `delay` (zero by default), e.g. so
    /// a return URL reaches the app before the IPN reaches the server.
    public func setIPNDelay(_ delay: Duration) {
        ipnDelay = max(.zero, delay)
    }

    /// Keeps IPNs queued instead of sending them, until ``releaseIPNs()``. Deliveries already under
    /// way go on.
    public func holdIPNs() {
        ipnsHeld = true
    }

    /// Sends the IPNs queued since ``holdIPNs()`` (in order, each after the IPN delay it was queued
    /// with), and sends the next ones at once again.
    public func releaseIPNs() {
        ipnsHeld = false
        let queued = heldIPNs
        heldIPNs = []
        for item in queued { startDelivery(item.message, delay: item.delay) }
    }

    /// Waits until every IPN under way has been acknowledged or has run out of tries. IPNs held by
    /// ``holdIPNs()`` are not waited for.
    public func waitForNotifications() async {
        while let task = deliveries.values.first {
            await task.value
        }
    }

    /// Takes the first queued fault that matches the API `path`.
    func takeFault(for path: String) -> Fault? {
        guard let index = pendingFaults.firstIndex(where: { fault in
            guard let wanted = fault.path else { return true }
            return path == wanted || path.hasPrefix(wanted + "/")
        }) else { return nil }
        return pendingFaults.remove(at: index).fault
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
