import Foundation
import Till

/// The merchant server's half of a gateway module: **Prepare**, **Submit** and **Confirm**. It holds the
/// merchant's credentials, so it lives in the module's server target, never in an app.
///
/// Steps a gateway does not have keep their default: ``submit(_:context:)`` refuses (the gateway has no
/// submit step), ``answerChallenge(_:)`` answers nothing, ``returnURL(from:for:)`` takes the first route the
/// app offered, ``claimedAttempt(in:)`` reads nothing, and the ``decisionTable`` never cascades.
public protocol GatewayServerHalf: Sendable {
    /// The gateway's identifier, unique among the gateways of a merchant.
    var gateway: GatewayID { get }
    /// What the gateway can do: methods, currencies, countries, actions.
    var capabilities: GatewayCapabilities { get }
    /// Which gateway codes may cascade to the next gateway. Defaults to "do not retry" for every code.
    var decisionTable: DecisionTable { get }

    /// **Prepare** (server): create whatever the app needs for this attempt.
    func prepare(_ context: AttemptContext) async throws -> Preparation

    /// **Submit** (server): the app sends what it collected (an encrypted payload, a card token), and
    /// the server calls the gateway with it. Money may move here, so a failure must say what is known:
    /// ``CheckoutError/Category/unavailable`` only when the request provably never left, a decline
    /// category for a definite decline, ``CheckoutError/Category/unknownOutcome`` otherwise (the
    /// attempt is then inquired about, never cascaded).
    func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult

    /// **Confirm** (server): authenticate and parse a notification the gateway sent.
    /// - Throws: ``CheckoutError`` in category ``CheckoutError/Category/verification`` when the
    ///   signature does not match; ``CheckoutError/Category/invalidInput`` for a malformed body.
    func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification

    /// **Confirm** (server): ask the gateway for the authoritative status of one attempt.
    func inquire(_ query: InquiryQuery) async throws -> StatusReport

    /// The attempt a notification *claims* to be about, read without verifying it. Used only to
    /// start an inquiry when verification fails; never to change a status. `nil` by default.
    func claimedAttempt(in notification: IncomingNotification) -> AttemptReference?

    /// The answer to a gateway's endpoint-verification request (a webhook challenge: a `GET` on the
    /// notification URL that must echo a header), or `nil` when `request` is not one. Answered before
    /// any notification is sent; nothing is stored and no status changes. `nil` by default.
    func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement?

    /// Which of the return URLs the app offered (one per route it registered, each carrying the
    /// attempt's state) this gateway sends the customer back to, chosen after the router picked the
    /// gateway: a universal link for one wallet, a custom scheme for another. `nil` when the flow never
    /// leaves the app. By default the first offered.
    /// - Throws: ``CheckoutError`` naming `returnURLs` when none of them can work for this payment.
    func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL?

    /// What this gateway needs of a payment beyond its capabilities (PayFort: the customer's e-mail), checked
    /// with no call to the gateway when the payment is created or changed and before an attempt starts, so
    /// that a payment the gateway would refuse is never sent to it: the router passes it to a gateway that
    /// can take it, or the merchant is told at once which field to fix. Each problem names the intent's field
    /// (`intent.customer.email`), as ``prepare(_:)`` would. Written from the same rules ``prepare(_:)``
    /// applies, never a copy of them. None by default.
    func requirementIssues(for intent: PaymentIntent) -> [CheckoutError]

    /// What this gateway needs of the app's ``PrepareRequest/appData`` (its own keys only, ``GatewayCapabilities/appDataKeys``),
    /// checked before an attempt is stored, each problem naming `appData.<key>` (PayFort's SDK: `device_id`). None by
    /// default.
    func appDataIssues(_ appData: [String: String]) -> [CheckoutError]

    /// Which operations (capture, void, refund) the gateway offers, from the vendor's sources. None by default:
    /// the service then refuses every operation with ``CheckoutError/Category/unsupported`` before anything is
    /// sent.
    var operationCapabilities: OperationCapabilities { get }

    /// **Operate** (server): send one capture, void or refund to the gateway. Called only for a kind the
    /// gateway declares in ``operationCapabilities``, after the money rules were checked and the operation was
    /// stored as `unknown` (so a crash here leaves it to inquiry, never to a second request).
    /// - Returns: what the gateway answered: `succeeded`, `pending` (it will say later) or `failed` with the
    ///   gateway's code (a definite refusal).
    /// - Throws: ``CheckoutError``: ``CheckoutError/Category/unavailable`` only when the request provably never
    ///   left; ``CheckoutError/Category/unknownOutcome`` when it may have reached the gateway (the operation is
    ///   then settled by ``inquireOperation(_:)``); a decline category for a definite refusal.
    func perform(_ operation: OperationRequest) async throws -> OperationReport

    /// **Operate** (server): ask the gateway for the authoritative status of one operation Till sent.
    /// - Throws: ``CheckoutError`` in category ``CheckoutError/Category/unsupported`` when the gateway offers
    ///   no way to ask (the operation then stays for the operator, listed by the reconciler).
    func inquireOperation(_ operation: OperationRequest) async throws -> OperationReport
}

extension GatewayServerHalf {
    public func requirementIssues(for intent: PaymentIntent) -> [CheckoutError] { [] }
    public func appDataIssues(_ appData: [String: String]) -> [CheckoutError] { [] }
    public var decisionTable: DecisionTable { DecisionTable() }
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? { nil }
    public func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement? { nil }
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? { offered.first }
    public var operationCapabilities: OperationCapabilities { .none }
    public func perform(_ operation: OperationRequest) async throws -> OperationReport {
        throw CheckoutError.unsupportedOperation(operation.kind, gateway: gateway)
    }
    public func inquireOperation(_ operation: OperationRequest) async throws -> OperationReport {
        throw CheckoutError.unsupportedOperation(operation.kind, aspect: "inquiry", gateway: gateway,
                                                 why: "gateway \(gateway) offers no inquiry of a \(operation.kind)")
    }
    public func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        throw CheckoutError(.unsupportedAction, field: "submission",
                            message: "gateway \(gateway) has no submit step", gateway: gateway)
    }
}

/// The input of **Prepare**: the intent, the attempt's own reference and the URLs of this attempt.
public struct AttemptContext: Sendable, Hashable {
    public var intent: PaymentIntent
    public var attempt: AttemptReference
    /// Where the customer comes back to (custom scheme or universal link with the per-attempt state).
    public var returnURL: URL?
    /// Where the gateway should send its server-to-server notification.
    public var notificationURL: URL?
    /// What only the app knows, sent with this attempt's prepare (``PrepareRequest/appData``): the keys the
    /// gateway declares in ``GatewayCapabilities/appDataKeys`` (PayFort: the FORT SDK's `device_id`).
    public var appData: [String: String]

    public init(intent: PaymentIntent, attempt: AttemptReference, returnURL: URL? = nil, notificationURL: URL? = nil,
                appData: [String: String] = [:]) {
        self.intent = intent
        self.attempt = attempt
        self.returnURL = returnURL
        self.notificationURL = notificationURL
        self.appData = appData
    }
}

/// The input of **Submit** on the server.
public struct SubmitContext: Sendable, Hashable {
    public var intent: PaymentIntent
    public var attempt: AttemptReference
    /// The gateway's reference from Prepare, when it made one (a session id).
    public var gatewayReference: String?
    /// The return URL chosen for this attempt (3-D Secure comes back here).
    public var returnURL: URL?
    /// Where the gateway should send its server-to-server notification.
    public var notificationURL: URL?
    /// The IP address the app's submit came from, when the server knows it (PayFort's `customer_ip`).
    public var customerIP: String?

    public init(intent: PaymentIntent, attempt: AttemptReference, gatewayReference: String? = nil, returnURL: URL? = nil,
                notificationURL: URL? = nil, customerIP: String? = nil) {
        self.intent = intent
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.returnURL = returnURL
        self.notificationURL = notificationURL
        self.customerIP = customerIP
    }
}

/// The output of **Submit** on the server: what the app does next, and what the gateway's answer
/// says about the money (applied forward-only, with the same amount check as a notification).
public struct SubmitResult: Sendable, Hashable {
    /// The app's next step: `.completed` with what the gateway answered, or `.openURL` for 3-D Secure.
    public var next: NextStep
    /// The gateway's status in its answer, when it gave one (a CreatePayment's payment status).
    public var report: StatusReport?
    /// The gateway's reference for what the submit created (a payment id), when it made one.
    public var gatewayReference: String?

    public init(next: NextStep, report: StatusReport? = nil, gatewayReference: String? = nil) {
        self.next = next
        self.report = report
        self.gatewayReference = gatewayReference
    }
}

/// Both halves of a gateway in one value: how in-process test doubles (TillTesting's fake gateway)
/// and the chaos run hold a gateway. A real module keeps the halves apart, the server half in a target
/// an app never links.
public typealias GatewayHalves = GatewayAppHalf & GatewayServerHalf
