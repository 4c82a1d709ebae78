import Foundation

/// The protocol every gateway module conforms to: one shape, Prepare → Present → Return → Confirm.
///
/// | step | runs on | requirement |
/// |---|---|---|
/// | Prepare | merchant server (holds secrets) | ``prepare(_:)`` creates the gateway session/token or signs the client's parameters |
/// | Present | app | ``present(_:input:)`` says what the app must do next: open a URL, launch a wallet, show a form, or nothing |
/// | Return | app | ``interpretReturn(_:for:)`` reads a return URL or an SDK-style callback |
/// | Confirm | merchant server | ``verifyNotification(_:)`` and ``inquire(_:)`` give the authoritative status |
///
/// The result of Present and Return is never final: the app may show it, but money has moved only
/// when Confirm says so. A conforming type is a value configured explicitly (no shared instances);
/// the server builds it with credentials, an app builds the same type without them and calls only
/// the client-side requirements. Requirements throw ``CheckoutError``; anything else that escapes is
/// treated by Till as an unknown outcome.
///
/// See docs/implementing-a-gateway.md.
public protocol Checkout: Sendable {
    /// The gateway's identifier, unique among the gateways of a merchant.
    var gateway: GatewayID { get }
    /// What the gateway can do: methods, currencies, countries, actions.
    var capabilities: GatewayCapabilities { get }
    /// Which gateway codes may cascade to the next gateway. Defaults to "do not retry" for every code.
    var decisionTable: DecisionTable { get }

    /// **Prepare** (server): create whatever the app needs for this attempt.
    func prepare(_ context: AttemptContext) async throws -> Preparation

    /// **Present** (app): the next step for the app, first with `.start`, then after each form submission.
    func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep

    /// **Return** (app): what a matched return URL or an SDK-style callback says. Informational only.
    func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome

    /// **Confirm** (server): authenticate and parse a notification the gateway sent.
    /// - Throws: ``CheckoutError`` in category ``CheckoutError/Category/verification`` when the
    ///   signature does not match; ``CheckoutError/Category/invalidInput`` for a malformed body.
    func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification

    /// **Confirm** (server): ask the gateway for the authoritative status of one attempt.
    func inquire(_ query: InquiryQuery) async throws -> StatusReport

    /// The attempt a notification *claims* to be about, read without verifying it. Used only to
    /// start an inquiry when verification fails; never to change a status. `nil` by default.
    func claimedAttempt(in notification: IncomingNotification) -> AttemptReference?
}

extension Checkout {
    public var decisionTable: DecisionTable { DecisionTable() }
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? { nil }
}

/// A unique reference for one attempt at a payment, sent to the gateway as its order reference so
/// that the attempt can always be inquired about, even when its response was lost.
///
/// Generated references are 24 characters of `[a-z0-9]`, which fits every supported gateway's
/// reference field (PayFort 40, iPayNow 40, Citcon 64 …) and carries ~124 bits of randomness.
public struct AttemptReference: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// A new random reference.
    public static func generate() -> AttemptReference {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    /// A new reference drawn from `generator` (seeded in tests and the chaos run).
    public static func generate<G: RandomNumberGenerator>(using generator: inout G) -> AttemptReference {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        for _ in 0..<24 { bytes.append(alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))]) }
        return AttemptReference(rawValue: String(decoding: bytes, as: UTF8.self))
    }
}

/// What the gateway supports, declared by the module and used by the router's eligibility filter.
public struct GatewayCapabilities: Hashable, Sendable, Codable {
    public var methods: Set<PaymentMethod>
    /// The accepted currencies; `nil` means any ISO 4217 currency.
    public var currencies: Set<Currency>?
    /// The accepted customer countries; `nil` means any.
    public var countries: Set<CountryCode>?
    public var actions: Set<PaymentAction>
    /// Whether ``Checkout/inquire(_:)`` works. Without it an unknown outcome stays unknown.
    public var supportsInquiry: Bool
    /// Whether the gateway sends server-to-server notifications.
    public var supportsNotifications: Bool

    public init(methods: Set<PaymentMethod>, currencies: Set<Currency>? = nil, countries: Set<CountryCode>? = nil,
                actions: Set<PaymentAction> = [.sale], supportsInquiry: Bool = true, supportsNotifications: Bool = true) {
        self.methods = methods
        self.currencies = currencies
        self.countries = countries
        self.actions = actions
        self.supportsInquiry = supportsInquiry
        self.supportsNotifications = supportsNotifications
    }

    /// Why this gateway cannot take `intent`, or an empty list when it can.
    public func ineligibility(for intent: PaymentIntent) -> [String] {
        var reasons: [String] = []
        if !methods.contains(intent.method) { reasons.append("method \(intent.method) not supported") }
        if let currencies, !currencies.contains(intent.amount.currency) {
            reasons.append("currency \(intent.amount.currency.code) not supported")
        }
        if let countries {
            if let country = intent.country {
                if !countries.contains(country) { reasons.append("country \(country.code) not supported") }
            } else {
                reasons.append("country required but not given")
            }
        }
        if !actions.contains(intent.action) { reasons.append("action \(intent.action.rawValue) not supported") }
        return reasons
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

    public init(intent: PaymentIntent, attempt: AttemptReference, returnURL: URL? = nil, notificationURL: URL? = nil) {
        self.intent = intent
        self.attempt = attempt
        self.returnURL = returnURL
        self.notificationURL = notificationURL
    }
}

/// The output of **Prepare**, sent from the merchant server to the app. It contains no secrets:
/// only what the gateway's client half needs (a token, a session id, a signed parameter string).
public struct Preparation: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var method: PaymentMethod
    public var amount: Money
    /// The gateway's own identifier when Prepare created one (charge id, session id).
    public var gatewayReference: String?
    /// Non-secret parameters for the client half, keyed by the module's own names.
    public var parameters: [String: String]
    /// The return URL registered for this attempt, if the flow leaves the app.
    public var returnURL: URL?
    /// When the prepared session or token stops being usable.
    public var expiresAt: Date?

    public init(gateway: GatewayID, attempt: AttemptReference, method: PaymentMethod, amount: Money,
                gatewayReference: String? = nil, parameters: [String: String] = [:], returnURL: URL? = nil,
                expiresAt: Date? = nil) {
        self.gateway = gateway
        self.attempt = attempt
        self.method = method
        self.amount = amount
        self.gatewayReference = gatewayReference
        self.parameters = parameters
        self.returnURL = returnURL
        self.expiresAt = expiresAt
    }
}

/// The input of **Present**.
public enum PresentInput: Sendable, Hashable {
    /// The first call after Prepare.
    case start
    /// The customer filled in the form of a previous ``NextStep/collect(_:)``.
    case submit(FormValues)
}

/// What the app must do next: the output of **Present**.
public enum NextStep: Sendable, Hashable {
    /// Open a URL: a wallet app, an H5 page, the browser or a 3-D Secure page. The customer comes
    /// back through the return URL.
    case openURL(URL, handoff: Handoff)
    /// Hand parameters to a wallet SDK embedded in the app (WeChat Pay's prepay fields, Alipay's
    /// order string, iPayNow's pay data). The customer comes back through the return URL.
    case launchWallet(WalletLaunch)
    /// Show a form described by fields, then call Present again with `.submit`.
    case collect(FormSpec)
    /// Nothing more to present; the client-side outcome is known (still to be confirmed).
    case completed(ClientOutcome)

    /// True when this step hands the customer to someone who may authenticate them (a wallet, a
    /// bank's 3-D Secure page, a redirect). After such a step Till never cascades automatically.
    public var customerMayAuthenticate: Bool {
        switch self {
        case .openURL, .launchWallet: true
        case .collect, .completed: false
        }
    }
}

/// Where an ``NextStep/openURL(_:handoff:)`` takes the customer.
public enum Handoff: String, Sendable, Hashable, Codable {
    case walletApp = "wallet_app"
    case webPage = "web_page"
    case browser
    case threeDSecure = "three_d_secure"
}

/// Parameters for a wallet SDK the app embeds.
public struct WalletLaunch: Sendable, Hashable, Codable {
    /// The wallet (`"wechat"`, `"alipay"`, `"unionpay"`, `"ipaynow"`).
    public var wallet: String
    /// The wallet's own parameters, verbatim.
    public var parameters: [String: String]
    /// The URL scheme the wallet returns to.
    public var returnScheme: String?
    /// This attempt's return URL, with its state. A wallet SDK reports back in-process (WeChat's
    /// `onResp`, Alipay's callback) through URLs that carry no Till state, so the app's wallet
    /// delegate hands the result over with ``returnURL(code:)`` instead.
    public var returnURL: URL?

    public init(wallet: String, parameters: [String: String], returnScheme: String? = nil, returnURL: URL? = nil) {
        self.wallet = wallet
        self.parameters = parameters
        self.returnScheme = returnScheme
        self.returnURL = returnURL
    }

    /// The attempt's return URL carrying the wallet SDK's result `code` (and `message`), to pass to
    /// ``ReturnURLHandler/handle(_:)`` when the wallet reports back.
    public func returnURL(code: String, message: String? = nil) -> URL? {
        guard let returnURL, var components = URLComponents(url: returnURL, resolvingAgainstBaseURL: false) else { return nil }
        var items = components.queryItems ?? []
        items.append(URLQueryItem(name: "code", value: code))
        if let message { items.append(URLQueryItem(name: "message", value: message)) }
        components.queryItems = items
        return components.url
    }
}

/// A form the app shows: which fields, with which rules.
public struct FormSpec: Sendable, Hashable, Codable {
    public var fields: [FormField]
    public init(fields: [FormField]) { self.fields = fields }
}

/// One field of a ``FormSpec``.
public struct FormField: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable {
        case text, number, cardNumber = "card_number", expiryDate = "expiry_date", securityCode = "security_code"
        case email, phone, choice
    }
    public var id: String
    /// A localization key for the label (`"till.field.cardNumber"`).
    public var labelKey: String
    public var kind: Kind
    public var required: Bool
    public var maxLength: Int?
    /// For `.choice`: the allowed values.
    public var options: [String]
    /// Never logged, never echoed in an error (card number, CVV).
    public var sensitive: Bool

    public init(id: String, labelKey: String, kind: Kind, required: Bool = true, maxLength: Int? = nil,
                options: [String] = [], sensitive: Bool = false) {
        self.id = id
        self.labelKey = labelKey
        self.kind = kind
        self.required = required
        self.maxLength = maxLength
        self.options = options
        self.sensitive = sensitive
    }
}

/// Values the customer entered. Its description never shows the values, so printing or logging it
/// cannot leak a card number or CVV.
public struct FormValues: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var values: [String: String]
    public init(_ values: [String: String]) { self.values = values }
    public subscript(id: String) -> String? { values[id] }
    public var description: String { "FormValues(\(values.keys.sorted().joined(separator: ", ")): <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["fields": values.keys.sorted()]) }
}

/// The input of **Return**.
public enum ReturnEvent: Sendable, Hashable {
    /// A return URL that the ``ReturnURLHandler`` matched to this attempt.
    case url(URL)
    /// An SDK-style in-process callback: a result code and its parameters
    /// (Citcon `0`/`-2`/`6001`, iPayNow `PE001`, ecommpay `0`/`100`/`200`/`500`).
    case callback(code: String, parameters: [String: String])
    /// The customer never came back within the time allowed.
    case timedOut
    /// The app abandoned the wait (the customer closed the checkout).
    case abandoned
}

/// What the app may show after Present/Return. Never final: only Confirm is.
public struct ClientOutcome: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable {
        /// The client side believes the customer paid. Awaiting confirmation.
        case succeeded
        /// Still in progress.
        case pending
        /// The customer cancelled.
        case cancelled
        /// The client side saw a failure.
        case failed
        /// Nothing can be concluded (no return, unreadable callback).
        case unknown
    }
    public var kind: Kind
    /// The gateway's raw client-side code, verbatim.
    public var gatewayCode: String?
    /// A safe message.
    public var message: String?

    public init(_ kind: Kind, gatewayCode: String? = nil, message: String? = nil) {
        self.kind = kind
        self.gatewayCode = gatewayCode
        self.message = message
    }
}

/// A notification as received over HTTP, before verification.
public struct IncomingNotification: Sendable, Hashable {
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: Data
    public var receivedAt: Date

    public init(headers: [String: String] = [:], body: Data, receivedAt: Date = Date()) {
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
        self.receivedAt = receivedAt
    }

    /// The media type of the body without parameters (`"application/json"`).
    public var mediaType: String? {
        headers["content-type"]?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
}

/// A verified notification: the status it reports and how to acknowledge it.
public struct VerifiedNotification: Sendable, Hashable {
    public var report: StatusReport
    /// Sent back only after the report is durably stored.
    public var acknowledgement: NotificationAcknowledgement

    public init(report: StatusReport, acknowledgement: NotificationAcknowledgement = .ok) {
        self.report = report
        self.acknowledgement = acknowledgement
    }
}

/// The HTTP answer a gateway expects for a notification it may stop retrying.
public struct NotificationAcknowledgement: Sendable, Hashable {
    public var statusCode: Int
    public var contentType: String
    public var body: Data

    public init(statusCode: Int = 200, contentType: String = "text/plain", body: Data = Data("OK".utf8)) {
        self.statusCode = statusCode
        self.contentType = contentType
        self.body = body
    }

    /// `200 OK`, text/plain.
    public static let ok = NotificationAcknowledgement()
}

/// The input of an inquiry.
public struct InquiryQuery: Sendable, Hashable {
    public var attempt: AttemptReference
    /// The gateway's own id, when known.
    public var gatewayReference: String?
    public var amount: Money?

    public init(attempt: AttemptReference, gatewayReference: String? = nil, amount: Money? = nil) {
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.amount = amount
    }
}

/// An authoritative statement by a gateway about one attempt: from a verified notification or an inquiry.
public struct StatusReport: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var gatewayReference: String?
    public var status: PaymentStatus
    /// The amount the gateway says it processed, when it says.
    public var amount: Money?
    /// The gateway's raw status, code and message, verbatim.
    public var gatewayStatus: String?
    public var gatewayCode: String?
    public var gatewayMessage: String?
    /// A key that is equal for two deliveries of the same event, for deduplication.
    public var eventID: String

    public init(gateway: GatewayID, attempt: AttemptReference, gatewayReference: String? = nil, status: PaymentStatus,
                amount: Money? = nil, gatewayStatus: String? = nil, gatewayCode: String? = nil,
                gatewayMessage: String? = nil, eventID: String? = nil) {
        self.gateway = gateway
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.status = status
        self.amount = amount
        self.gatewayStatus = gatewayStatus
        self.gatewayCode = gatewayCode
        self.gatewayMessage = gatewayMessage
        self.eventID = eventID ?? "\(gateway.rawValue):\(attempt.rawValue):\(status.rawValue)"
    }
}

/// Per-gateway table: for a gateway's decline code, may the router try the next gateway?
///
/// Every code not listed gets ``defaultDecision``, which is ``Decision/doNotRetry``: moving to
/// another gateway is opted into code by code, never assumed.
public struct DecisionTable: Sendable, Hashable, Codable {
    public enum Decision: String, Sendable, Hashable, Codable {
        /// Try the next gateway.
        case retryNext = "retry_next"
        /// Stop; report the failure.
        case doNotRetry = "do_not_retry"
        /// Ask the app to step the customer up (3-D Secure, another method); do not cascade.
        case stepUp = "step_up"
    }

    public var entries: [String: Decision]
    public var defaultDecision: Decision

    public init(_ entries: [String: Decision] = [:], defaultDecision: Decision = .doNotRetry) {
        self.entries = entries
        self.defaultDecision = defaultDecision
    }

    /// The decision for a gateway code; the default for `nil` or unlisted codes.
    public func decision(for code: String?) -> Decision {
        code.flatMap { entries[$0] } ?? defaultDecision
    }

    /// This table with `overrides` (a merchant's configuration) taking precedence.
    public func overriding(with overrides: [String: Decision]) -> DecisionTable {
        DecisionTable(entries.merging(overrides) { _, merchant in merchant }, defaultDecision: defaultDecision)
    }
}
