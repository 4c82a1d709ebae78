import Foundation
import Logging

/// A local stand-in for Amazon Payment Services (PayFort FORT), written from the vendor's SDKs, their
/// tests and the vendor test application's sandbox logs, independent of Till's PayFort module: it is
/// the other party.
///
/// Under one base URL (`{sandbox}/payfort`) it serves:
/// - `POST /FortAPI/paymentApi` (JSON, signed): SDK_TOKEN, PURCHASE and AUTHORIZATION with a
///   `token_name`, CAPTURE, REFUND, VOID_AUTHORIZATION, CHECK_STATUS;
/// - `POST /FortAPI/paymentPage` (form): the custom merchant page's TOKENIZATION, answered with a
///   `302` to the `return_url` carrying the signed result;
/// - `GET`/`POST /secure3dsSimulator?FORTSESSIONID=…`: the customer's 3-D Secure page;
/// - `POST /sandbox-only/fort-sdk/pay`: a stand-in for the FORT mobile SDK (not an APS API).
///
/// It checks and produces signatures (``Signature``), sends signed transaction feedback with APS's
/// retry schedule, and keeps a ``ledger`` of what it really charged, so a test can tell "the app was
/// told" from "the money moved". Host it with ``Sandbox/start(payFort:citcon:host:port:logger:)``; the
/// card numbers with special outcomes are listed in ``PayFortEmulator/TestCard``.
///
/// Choices where the sources are silent (docs/sandbox.md lists them all):
/// - A PURCHASE or AUTHORIZATION whose `merchant_reference` the merchant already used is refused with
///   `00066` "Merchant reference already exists": nothing is charged twice; CHECK_STATUS tells the state.
/// - Requests that fail validation (status `00`) create no order and do not use up an SDK token.
/// - Answers never echo `card_security_code`, and carry `card_number` masked (first 6 / last 4).
/// - Messages are in English whatever the `language`.
public actor PayFortEmulator {
    /// A failure to inject into the next matching `paymentApi` request.
    public enum Fault: String, Sendable, Hashable, CaseIterable {
        /// The request is processed (money may move), but no answer comes for the emulator's
        /// `timeoutHold` (30 s by default); then HTTP 504. The caller must ask CHECK_STATUS.
        case timeout
        /// HTTP 503 at once; the request is not processed.
        case serverError = "server_error"
        /// The request is processed, then the connection is closed without an answer.
        case dropConnection = "drop"
        /// The next PURCHASE or AUTHORIZATION is declined with a technical problem at APS
        /// (`13006` / `03006`), or the next CAPTURE, REFUND or VOID_AUTHORIZATION fails with one (`05006`,
        /// `07006`, `09006`): answered and notified, nothing charged or moved (an acquirer outage). PayFort's
        /// WooCommerce plugin holds every `xx006` as an outcome not yet known.
        case technicalProblem = "technical_problem"
    }

    /// Something the gateway really did with money: a PURCHASE (status `14`) or AUTHORIZATION
    /// (`02`) in ``PayFortEmulator/ledger``, or a CAPTURE (`04`), REFUND (`06`) or
    /// VOID_AUTHORIZATION (`08`) in ``PayFortEmulator/operations``.
    public struct Charge: Sendable, Hashable, Codable {
        /// The merchant's order reference.
        public var merchantReference: String
        /// The gateway's order id.
        public var fortID: String
        /// The amount in minor units of ``currency``.
        public var amountMinor: Int64
        /// ISO 4217 alphabetic code.
        public var currency: String
        /// `PURCHASE`, `AUTHORIZATION`, `CAPTURE`, `REFUND` or `VOID_AUTHORIZATION`.
        public var command: String
        /// The two-digit status the operation ended with.
        public var status: String
        /// A REFUND's own reference, when the merchant sent one.
        public var maintenanceReference: String?

        /// Creates a ledger entry.
        public init(merchantReference: String, fortID: String, amountMinor: Int64, currency: String,
                    command: String, status: String, maintenanceReference: String? = nil) {
            self.merchantReference = merchantReference
            self.fortID = fortID
            self.amountMinor = amountMinor
            self.currency = currency
            self.command = command
            self.status = status
            self.maintenanceReference = maintenanceReference
        }

        enum CodingKeys: String, CodingKey {
            case merchantReference = "merchant_reference", fortID = "fort_id", amountMinor = "amount"
            case currency, command, status, maintenanceReference = "maintenance_reference"
        }
    }

    /// One try at delivering transaction feedback to a merchant's notification URL.
    public struct NotificationAttempt: Sendable, Hashable, Codable {
        /// Where it was POSTed.
        public var url: URL
        /// The HTTP status the merchant answered, or `nil` when no answer came (connection error, timeout).
        public var status: Int?
        /// 1 for the first try.
        public var attempt: Int
        /// The order the notification was about.
        public var merchantReference: String
        /// The gateway's order id.
        public var fortID: String
        /// The notified `response_code`.
        public var responseCode: String

        /// Whether APS counts the answer as an acknowledgement (2xx or 302).
        public var acknowledged: Bool {
            guard let status else { return false }
            return (200..<300).contains(status) || status == 302
        }

        enum CodingKeys: String, CodingKey {
            case url, status, attempt, merchantReference = "merchant_reference", fortID = "fort_id"
            case responseCode = "response_code"
        }
    }

    // MARK: Configuration

    private(set) var merchants: [PayFortMerchant]
    let tokenLifetime: Duration
    let timeoutHold: Duration
    let now: @Sendable () -> Date
    let logger: Logger
    /// Sends transaction feedback on APS's retry schedule and records the tries.
    let deliverer: NotificationDeliverer<Feedback>

    // MARK: State

    /// An SDK token, bound to the merchant and the device it was created for.
    struct SDKToken {
        var merchantIdentifier: String
        var accessCode: String
        var deviceID: String
        var created: Date
        var used = false
    }

    /// A card the custom merchant page (or the mobile SDK) tokenized, by `token_name`.
    struct CardToken {
        var number: String
        var expiry: String
        var holder: String?
    }

    /// One PURCHASE or AUTHORIZATION and what happened to it since.
    struct Order {
        var merchant: PayFortMerchant
        var reference: String
        var fortID: String
        var command: String
        var amountMinor: Int64
        var currency: String
        var card: CardToken
        /// The transaction's parameters as they stand (text values, `signature` not included):
        /// what a return, the feedback and the stand-in SDK's response carry.
        var current: [String: String]
        var returnURL: String?
        /// The `FORTSESSIONID` of its 3-D Secure page, while it waits for the customer.
        var threeDSSession: String?
        /// Whether the gateway charged or authorized it (it is in the ledger).
        var charged = false
        var captured: Int64 = 0
        var refunded: Int64 = 0
        var voided = false
        /// When it was made (an authorization is held for 7 days).
        var created = Date.distantPast
        /// The last operation on the order: CHECK_STATUS's `transaction_status`, `_code`, `_message`.
        var transaction: (status: String, code: String, message: String)

        var awaitingThreeDS: Bool { threeDSSession != nil }
    }

    var sdkTokens: [String: SDKToken] = [:]
    /// Card tokens by merchant identifier, then `token_name`.
    var cardTokens: [String: [String: CardToken]] = [:]
    var orders: [String: Order] = [:]
    var orderKeysByFortID: [String: String] = [:]
    var orderKeysBySession: [String: String] = [:]
    /// Faults by command.
    var faults = FaultQueue<Fault>()
    /// Whether CHECK_STATUS answers carry `authorized_amount`, `captured_amount` and `refunded_amount`. The
    /// docs' field table lists them (docs `incommon.md`), but the only published answer carries none of them.
    var checkStatusCarriesAmounts = true
    /// Set while processing a request that drew the `technicalProblem` fault.
    var declineWithTechnicalProblem = false

    /// What the gateway really charged or authorized: one entry per PURCHASE that reached status
    /// `14` and per AUTHORIZATION that reached `02`, including uncertain (`15`) answers that were
    /// in fact charged and 3-D Secure payments once approved. Declines and pending orders are absent.
    public internal(set) var ledger: [Charge] = []

    /// Follow-up operations that moved money: CAPTURE (`04`), REFUND (`06`), VOID_AUTHORIZATION (`08`).
    public internal(set) var operations: [Charge] = []

    /// Creates an emulator for some merchant accounts.
    /// - Parameters:
    ///   - merchants: the accounts requests may come from.
    ///   - notificationRetry: how many times feedback is tried, and the wait between tries
    ///     (APS: 10 tries, 10 seconds apart). Tests compress it to milliseconds.
    ///   - notificationTimeout: how long one feedback POST may take before it counts as failed.
    ///   - tokenLifetime: how long an SDK token stays valid (one hour).
    ///   - timeoutHold: how long a timed-out request is held before HTTP 504 (30 seconds).
    ///   - now: the wall clock, for token lifetimes and card expiry.
    ///   - logger: where the emulator logs (never phrases, card numbers or security codes).
    public init(merchants: [PayFortMerchant],
                notificationRetry: (tries: Int, interval: Duration) = (10, .seconds(10)),
                notificationTimeout: Duration = .seconds(10),
                tokenLifetime: Duration = .seconds(3600),
                timeoutHold: Duration = .seconds(30),
                now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "till.sandbox.payfort")) {
        self.merchants = merchants
        self.tokenLifetime = tokenLifetime
        self.timeoutHold = timeoutHold
        self.now = now
        self.logger = logger
        self.deliverer = NotificationDeliverer(
            schedule: RetrySchedule(attempts: notificationRetry.tries, interval: notificationRetry.interval),
            timeout: notificationTimeout, noun: "feedback", logger: logger)
    }

    // MARK: Test controls

    /// Makes the next `paymentApi` request fail as `fault`. Faults queue up and are used in order.
    /// - Parameter command: only a request with this command (`"PURCHASE"`, `"SDK_TOKEN"`,
    ///   `"CHECK_STATUS"`, …) matches; `nil` matches any request.
    public func injectFault(_ fault: Fault, matching command: String? = nil) {
        faults.append(fault, key: command)
    }

    /// Makes CHECK_STATUS answers carry the order's amounts (the docs' field table) or none of them (the only
    /// published CHECK_STATUS answer, docs `incommon.md` "Check Status Response Example").
    public func setCheckStatusCarriesAmounts(_ carries: Bool) {
        checkStatusCarriesAmounts = carries
    }

    /// Every feedback delivery attempt so far, oldest first.
    public func notificationLog() -> [NotificationAttempt] {
        deliverer.attempts
    }

    /// Waits until every notification under way has been acknowledged or has run out of tries.
    public func waitForNotifications() async {
        await deliverer.waitForAll()
    }

    /// Points a merchant's transaction feedback somewhere else (a server started after the sandbox).
    /// Orders already made keep the merchant they were made with.
    public func setNotificationURL(_ url: URL?, merchantIdentifier: String) {
        for index in merchants.indices where merchants[index].merchantIdentifier == merchantIdentifier {
            merchants[index].notificationURL = url
        }
    }

    /// Takes the first queued fault that matches `command`.
    func takeFault(for command: String?) -> Fault? {
        faults.take(for: command)
    }

    /// How long held requests wait.
    nonisolated var holdDuration: Duration { timeoutHold }

    /// The merchant with these credentials.
    func merchant(identifier: String, accessCode: String) -> PayFortMerchant? {
        merchants.first { $0.merchantIdentifier == identifier && $0.accessCode == accessCode }
    }
}
