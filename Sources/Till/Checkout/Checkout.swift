import Foundation

/// The app's half of a gateway module: **Present** and **Return**.
///
/// | step | runs on | requirement |
/// |---|---|---|
/// | Prepare | merchant server (holds secrets) | ``CheckoutServer/prepare(_:)`` |
/// | Present | app | ``present(_:input:)`` says what the app must do next: open a URL, launch a wallet or a vendor SDK, show a form, or submit what the customer entered to the merchant server |
/// | Submit (some gateways) | app → merchant server → gateway | ``CheckoutServer/submit(_:context:)`` |
/// | Return | app | ``interpretReturn(_:for:)`` reads a return URL or a vendor SDK's in-process result |
/// | Confirm | merchant server | ``CheckoutServer/verifyNotification(_:)`` and ``CheckoutServer/inquire(_:)`` |
///
/// The result of Present and Return is never final: the app may show it, but money has moved only
/// when Confirm says so. A gateway module ships this half in the module an app links (`TillPayFort`,
/// `TillCitcon`, …), built from non-secret settings only; the half that holds credentials conforms to
/// ``CheckoutServer`` and lives in the module's server target, which an app never links. A conforming
/// type is a value configured explicitly (no shared instances). Requirements throw ``CheckoutError``;
/// anything else that escapes is treated by Till as an unknown outcome.
///
/// See docs/implementing-a-gateway.md.
public protocol Checkout: Sendable {
    /// The gateway's identifier, unique among the gateways of a merchant.
    var gateway: GatewayID { get }
    /// What the gateway can do: methods, currencies, countries, actions.
    var capabilities: GatewayCapabilities { get }

    /// **Present** (app): the next step for the app, first with `.start`, then after each form submission.
    func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep

    /// **Return** (app): what a matched return URL or a vendor SDK's in-process result says. Informational only.
    func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome

    /// What only the app knows that the server half needs with an attempt (PayFort: the FORT SDK's
    /// `device_id`), sent with every prepare as ``PrepareRequest/appData``, keyed by the names the module
    /// declares in ``GatewayCapabilities/appDataKeys``. Nothing by default.
    func appData() async throws -> [String: String]
}

extension Checkout {
    public func appData() async throws -> [String: String] { [:] }
}

/// The merchant server's half of a gateway module: **Prepare**, **Submit** and **Confirm**. It holds the
/// merchant's credentials, so it lives in the module's server target, never in an app.
///
/// Steps a gateway does not have keep their default: ``submit(_:context:)`` refuses (the gateway has no
/// submit step), ``answerChallenge(_:)`` answers nothing, ``returnURL(from:for:)`` takes the first route the
/// app offered, ``claimedAttempt(in:)`` reads nothing, and the ``decisionTable`` never cascades.
public protocol CheckoutServer: Sendable {
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
}

extension CheckoutServer {
    public func requirementIssues(for intent: PaymentIntent) -> [CheckoutError] { [] }
    public func appDataIssues(_ appData: [String: String]) -> [CheckoutError] { [] }
    public var decisionTable: DecisionTable { DecisionTable() }
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? { nil }
    public func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement? { nil }
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? { offered.first }
    public func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        throw CheckoutError(.unsupportedAction, field: "submission",
                            message: "gateway \(gateway) has no submit step", gateway: gateway)
    }
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
    /// The gateway's documented lifetime of an attempt, in seconds: past it, an attempt the gateway says
    /// it never saw can never be charged, and the reconciler expires it. `nil`: never expired that way.
    public var attemptLifetimeSeconds: Int?
    /// What only the app knows that this gateway needs with an attempt (``PrepareRequest/appData``): the keys
    /// its app half sends when it prepares (PayFort's FORT SDK: `device_id`). The server refuses a key no
    /// gateway module declares.
    public var appDataKeys: Set<String>
    /// How long, by the gateway's sources, a customer can take to finish what an attempt handed them (a 3-D
    /// Secure page, the gateway's SDK), counted from the attempt's submit (or its start, without one): past it,
    /// an attempt the gateway still reports waiting for the customer (``waitingForCustomerCodes``) can no longer
    /// be finished, and the reconciler closes it as expired so the customer may pay again. A later verified
    /// success still wins (an expired payment may become paid, never the reverse). `nil`: a pending attempt
    /// stays pending until the gateway says otherwise.
    public var abandonedAttemptSeconds: Int?
    /// The gateway codes that say an attempt waits for the customer (PayFort: `20064`, 3-D Secure requested): only
    /// an attempt the gateway reports pending with one of these is ever closed after ``abandonedAttemptSeconds``.
    /// Any other pending answer (uncertain, on hold, no status) stays open until the gateway says more.
    public var waitingForCustomerCodes: Set<String>
    /// The gateway is told with each payment where to post its notification (Citcon's `urls.ipn`, iPayNow's
    /// `notifyUrl`), so the server's `publicURL` must be set wherever it is configured; gateways whose endpoint is
    /// set once in their back office (PayFort, Worldline, ecommpay) do not need it.
    public var notificationURLPerPayment: Bool

    public init(methods: Set<PaymentMethod>, currencies: Set<Currency>? = nil, countries: Set<CountryCode>? = nil,
                actions: Set<PaymentAction> = [.sale], supportsInquiry: Bool = true, supportsNotifications: Bool = true,
                attemptLifetimeSeconds: Int? = nil, appDataKeys: Set<String> = [], abandonedAttemptSeconds: Int? = nil,
                waitingForCustomerCodes: Set<String> = [], notificationURLPerPayment: Bool = false) {
        self.notificationURLPerPayment = notificationURLPerPayment
        self.attemptLifetimeSeconds = attemptLifetimeSeconds
        self.abandonedAttemptSeconds = abandonedAttemptSeconds
        self.waitingForCustomerCodes = waitingForCustomerCodes
        self.appDataKeys = appDataKeys
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
    /// The customer came back through the return URL after a ``NextStep/postForm(_:)``: the gateway
    /// reads what its page put on the URL (a token name) and says what comes next (usually a submit).
    case returned(URL)
    /// What the app's SDK adapter produced for a previous ``NextStep/prepareSDK(_:)`` (ecommpay's
    /// `paramsForSignature`), verbatim.
    case sdkPrepared([String: String])
}

/// What the app must do next: the output of **Present** (and of a server's **Submit**).
///
/// Codable with a `type` discriminator (`open_url`, `launch_wallet`, `prepare_sdk`, `collect`,
/// `post_form`, `submit`, `completed`), because a submit's answer travels from the merchant server to the app. A `type` this
/// version does not know is decoded as ``unsupported(type:)``, which the app treats as an unknown
/// outcome for the server to confirm: never as success, never as a crash.
public enum NextStep: Sendable, Hashable {
    /// Open a URL: a wallet app, an H5 page, the browser or a 3-D Secure page. The customer comes
    /// back through the return URL.
    case openURL(URL, handoff: Handoff)
    /// Hand parameters to a vendor SDK embedded in the app: a wallet (WeChat Pay's prepay fields,
    /// Alipay's order string) or a gateway's own SDK (iPayNow's plug-in, ecommpay's payment form). The
    /// SDK reports back in-process (the presenter returns its ``SDKResult``), through the return URL,
    /// or both; the first to arrive is used.
    case launchWallet(WalletLaunch)
    /// Ask the vendor SDK embedded in the app for what it needs signed before it can be launched
    /// (ecommpay's SDK builds its own `paramsForSignature` from the options the app sets):
    /// ``CheckoutPresenter/prepareSDK(_:)`` returns it, and Present is called again with
    /// ``PresentInput/sdkPrepared(_:)``. Nothing is shown to the customer yet.
    case prepareSDK(WalletLaunch)
    /// Show a form described by fields, then call Present again with `.submit`.
    case collect(FormSpec)
    /// Post a form from the customer's device straight to the gateway, as a browser posts an HTML form
    /// (a web view loading ``FormPost/autoSubmittingHTML()``): what the customer typed goes to the
    /// gateway, never through the merchant server. The gateway answers on the return URL, and Present
    /// is called again with ``PresentInput/returned(_:)``.
    case postForm(FormPost)
    /// Send this payload to the merchant server, which calls the gateway with it
    /// (``CheckoutServer/submit(_:context:)``). The server answers with the next step.
    case submit(Submission)
    /// Nothing more to present; the client-side outcome is known (still to be confirmed).
    case completed(ClientOutcome)
    /// A step this version of Till does not know (decoded from a newer server).
    case unsupported(type: String)

    /// True when this step hands the customer to someone who may authenticate them (a wallet, a
    /// bank's 3-D Secure page, a redirect). After such a step Till never cascades automatically.
    public var customerMayAuthenticate: Bool {
        switch self {
        case .openURL, .launchWallet, .postForm: true
        case .prepareSDK, .collect, .submit, .completed, .unsupported: false
        }
    }
}

extension NextStep: Codable {
    private enum CodingKeys: String, CodingKey { case type, url, handoff, wallet, form, post, submission, outcome }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "open_url": self = .openURL(try c.decode(URL.self, forKey: .url), handoff: try c.decode(Handoff.self, forKey: .handoff))
        case "launch_wallet": self = .launchWallet(try c.decode(WalletLaunch.self, forKey: .wallet))
        case "prepare_sdk": self = .prepareSDK(try c.decode(WalletLaunch.self, forKey: .wallet))
        case "collect": self = .collect(try c.decode(FormSpec.self, forKey: .form))
        case "post_form": self = .postForm(try c.decode(FormPost.self, forKey: .post))
        case "submit": self = .submit(try c.decode(Submission.self, forKey: .submission))
        case "completed": self = .completed(try c.decode(ClientOutcome.self, forKey: .outcome))
        default: self = .unsupported(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .openURL(let url, let handoff):
            try c.encode("open_url", forKey: .type)
            try c.encode(url, forKey: .url)
            try c.encode(handoff, forKey: .handoff)
        case .launchWallet(let launch):
            try c.encode("launch_wallet", forKey: .type)
            try c.encode(launch, forKey: .wallet)
        case .prepareSDK(let launch):
            try c.encode("prepare_sdk", forKey: .type)
            try c.encode(launch, forKey: .wallet)
        case .collect(let form):
            try c.encode("collect", forKey: .type)
            try c.encode(form, forKey: .form)
        case .postForm(let post):
            try c.encode("post_form", forKey: .type)
            try c.encode(post, forKey: .post)
        case .submit(let submission):
            try c.encode("submit", forKey: .type)
            try c.encode(submission, forKey: .submission)
        case .completed(let outcome):
            try c.encode("completed", forKey: .type)
            try c.encode(outcome, forKey: .outcome)
        case .unsupported(let type):
            try c.encode(type, forKey: .type)
        }
    }
}

/// A form the customer's device posts straight to a gateway (`application/x-www-form-urlencoded`):
/// the gateway's signed hidden fields and what the customer typed, in order. Its description names the
/// fields only, because the values include card data.
public struct FormPost: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// One field of the form, posted as `name=value`.
    public struct Field: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Where the form goes (the gateway's page).
    public var url: URL
    /// The fields, in the order they are posted.
    public var fields: [Field]

    public init(url: URL, fields: [Field]) {
        self.url = url
        self.fields = fields
    }

    /// The value of the first field called `name`.
    public subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    /// The body a browser posts: `name=value` pairs joined by `&`, each part percent-encoded (spaces as `+`).
    public var encodedBody: Data {
        Data(fields.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&").utf8)
    }

    /// A complete HTML page that posts the form as soon as a web view loads it, for presenters that post
    /// through a web view. Every name and value is HTML-escaped.
    public func autoSubmittingHTML() -> String {
        let inputs = fields.map { "<input type=\"hidden\" name=\"\(Self.escapeHTML($0.name))\" value=\"\(Self.escapeHTML($0.value))\">" }
        return "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"></head>"
            + "<body onload=\"document.forms[0].submit()\"><form method=\"post\" action=\"\(Self.escapeHTML(url.absoluteString))\" accept-charset=\"utf-8\">\n"
            + inputs.joined(separator: "\n")
            + "\n<noscript><button type=\"submit\">Continue</button></noscript></form></body></html>\n"
    }

    public var description: String { "FormPost(\(url.host ?? "?"): \(fields.map(\.name).joined(separator: ", ")))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["url": url, "fields": fields.map(\.name)]) }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._* ")

    private static func encode(_ text: String) -> String {
        (text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "").replacingOccurrences(of: " ", with: "+")
    }

    /// `text` safe inside HTML text and attribute values (`& < > " '` as entities).
    package static func escapeHTML(_ text: String) -> String {
        var out = ""
        for ch in text {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(ch)
            }
        }
        return out
    }
}

/// Where an ``NextStep/openURL(_:handoff:)`` takes the customer.
public enum Handoff: String, Sendable, Hashable, Codable {
    case walletApp = "wallet_app"
    case webPage = "web_page"
    case browser
    case threeDSecure = "three_d_secure"
}

/// Parameters for a vendor SDK the app embeds: a wallet's, or a gateway's own payment SDK.
public struct WalletLaunch: Sendable, Hashable, Codable {
    /// The SDK (`"wechat"`, `"alipay"`, `"upop"`, `"ipaynow"`, `"ecommpay"`).
    public var wallet: String
    /// The SDK's own parameters, verbatim.
    public var parameters: [String: String]
    /// The URL scheme the SDK returns to, when it returns through one.
    public var returnScheme: String?
    /// This attempt's return URL (with its state), for SDKs that take a return or universal link.
    public var returnURL: URL?

    public init(wallet: String, parameters: [String: String], returnScheme: String? = nil, returnURL: URL? = nil) {
        self.wallet = wallet
        self.parameters = parameters
        self.returnScheme = returnScheme
        self.returnURL = returnURL
    }
}

/// What a vendor SDK reported in-process (a delegate call, a completion handler): its result code
/// and parameters, verbatim. The app's presenter hands it back from
/// ``CheckoutPresenter/launch(_:)``, and the gateway's ``Checkout/interpretReturn(_:for:)`` reads
/// it as ``ReturnEvent/callback(code:parameters:)``. Informational, like every client-side result.
public struct SDKResult: Sendable, Hashable, Codable {
    /// The SDK's code (`"0"`, `"-2"`, `"6001"`, `"PE001"`, `"100"` …).
    public var code: String
    /// Whatever else it reported (a message, an order id), verbatim.
    public var parameters: [String: String]

    public init(code: String, parameters: [String: String] = [:]) {
        self.code = code
        self.parameters = parameters
    }
}

/// What the app sends to the merchant server in a submit step: what the customer entered, in the
/// form the gateway's client half made safe to carry (an encrypted payload, a token name), never a
/// card number in clear. Its description shows the field names only.
public struct Submission: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What the payload is, in the gateway module's words (`"encrypted_customer_input"`, `"token"`).
    public var kind: String
    /// The payload's fields, keyed by the module's own names.
    public var fields: [String: String]

    public init(kind: String, fields: [String: String]) {
        self.kind = kind
        self.fields = fields
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case kind, fields }

    /// Decodes a submission; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(String.self, forKey: .kind)
        fields = try c.decode([String: String].self, forKey: .fields)
    }

    public var description: String { "Submission(\(kind): \(fields.keys.sorted().joined(separator: ", ")))" }
    public var debugDescription: String { description }
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

/// A form the app shows: which fields, with which rules. Data-driven: a gateway that describes its
/// fields (Worldline's payment product fields) fills it from its own definitions, and the app binds its
/// UI to it without knowing the gateway.
public struct FormSpec: Sendable, Hashable, Codable {
    public var fields: [FormField]
    public init(fields: [FormField]) { self.fields = fields }

    /// The fields in the order to show them: by ``FormField/displayOrder``, then as listed.
    public var fieldsInDisplayOrder: [FormField] {
        fields.enumerated().sorted { ($0.element.displayOrder ?? Int.max, $0.offset) < ($1.element.displayOrder ?? Int.max, $1.offset) }
            .map(\.element)
    }

    /// The fields to show given what has been entered so far (a field with a ``FormField/visibleWhen``
    /// condition appears only while it holds), in display order.
    public func visibleFields(given values: [String: String]) -> [FormField] {
        fieldsInDisplayOrder.filter { $0.visibleWhen?.holds(for: values) ?? true }
    }
}

/// One field of a ``FormSpec``.
public struct FormField: Sendable, Hashable, Codable {
    /// What kind of value a field holds. Open: a gateway may name a kind this version does not know,
    /// which an app shows as plain text.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        public static let text: Kind = "text"
        public static let number: Kind = "number"
        public static let cardNumber: Kind = "card_number"
        public static let expiryDate: Kind = "expiry_date"
        public static let securityCode: Kind = "security_code"
        public static let email: Kind = "email"
        public static let phone: Kind = "phone"
        /// One of ``FormField/choices`` (a list, or a product choice with logos).
        public static let choice: Kind = "choice"
        /// A yes/no box (accept the terms and conditions).
        public static let boolean: Kind = "boolean"
        public static let date: Kind = "date"
    }

    public var id: String
    /// A localization key for the label (`"till.field.cardNumber"`).
    public var labelKey: String
    public var kind: Kind
    public var required: Bool
    public var maxLength: Int?
    /// For `.choice`: the allowed values (plain). See ``choices`` for labelled ones with logos.
    public var options: [String]
    /// Never logged, never echoed in an error (card number, CVV).
    public var sensitive: Bool
    /// A display mask in the `{{9999}} {{9999}}` notation (digits inside `{{ }}` are typed, the rest
    /// is shown as is), or `nil`.
    public var mask: String?
    /// The checks a value must pass, in order (all pure: see the gateway module's validators).
    public var validators: [FieldValidator]
    /// Shown obfuscated while typed (a CVV, a PIN).
    public var obfuscate: Bool
    /// Where to show the field: lower first; `nil` after those with an order.
    public var displayOrder: Int?
    /// Labelled choices, each with an optional logo (a payment product choice).
    public var choices: [FormChoice]
    /// Show the field only while this holds.
    public var visibleWhen: FieldCondition?
    /// A localization key for a placeholder or tooltip, if any.
    public var placeholderKey: String?

    public init(id: String, labelKey: String, kind: Kind, required: Bool = true, maxLength: Int? = nil,
                options: [String] = [], sensitive: Bool = false, mask: String? = nil, validators: [FieldValidator] = [],
                obfuscate: Bool = false, displayOrder: Int? = nil, choices: [FormChoice] = [],
                visibleWhen: FieldCondition? = nil, placeholderKey: String? = nil) {
        self.id = id
        self.labelKey = labelKey
        self.kind = kind
        self.required = required
        self.maxLength = maxLength
        self.options = options
        self.sensitive = sensitive
        self.mask = mask
        self.validators = validators
        self.obfuscate = obfuscate
        self.displayOrder = displayOrder
        self.choices = choices
        self.visibleWhen = visibleWhen
        self.placeholderKey = placeholderKey
    }

    private enum CodingKeys: String, CodingKey {
        case id, labelKey, kind, required, maxLength, options, sensitive, mask, validators, obfuscate, displayOrder, choices,
             visibleWhen, placeholderKey
    }

    /// Decodes with the defaults of ``init(id:labelKey:kind:required:maxLength:options:sensitive:mask:validators:obfuscate:displayOrder:choices:visibleWhen:placeholderKey:)``
    /// for absent keys, so a form from an older server still reads.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(String.self, forKey: .id), labelKey: try c.decode(String.self, forKey: .labelKey),
                  kind: try c.decode(Kind.self, forKey: .kind), required: try c.decodeIfPresent(Bool.self, forKey: .required) ?? true,
                  maxLength: try c.decodeIfPresent(Int.self, forKey: .maxLength),
                  options: try c.decodeIfPresent([String].self, forKey: .options) ?? [],
                  sensitive: try c.decodeIfPresent(Bool.self, forKey: .sensitive) ?? false,
                  mask: try c.decodeIfPresent(String.self, forKey: .mask),
                  validators: try c.decodeIfPresent([FieldValidator].self, forKey: .validators) ?? [],
                  obfuscate: try c.decodeIfPresent(Bool.self, forKey: .obfuscate) ?? false,
                  displayOrder: try c.decodeIfPresent(Int.self, forKey: .displayOrder),
                  choices: try c.decodeIfPresent([FormChoice].self, forKey: .choices) ?? [],
                  visibleWhen: try c.decodeIfPresent(FieldCondition.self, forKey: .visibleWhen),
                  placeholderKey: try c.decodeIfPresent(String.self, forKey: .placeholderKey))
    }
}

/// A check on a field's value, by kind with parameters (`length` with `minLength`/`maxLength`,
/// `range`, `regularExpression` with `pattern`, `luhn`, `expirationDate`, `fixedList` with
/// `allowedValues`, `emailAddress`, `iban`, `termsAndConditions`, …). Open: a kind this version does not
/// know is kept and reported by the module that defined it.
public struct FieldValidator: Sendable, Hashable, Codable {
    public var kind: String
    /// The validator's parameters, verbatim (`"minLength": "12"`, `"pattern": "^[0-9]+$"`). Lists are
    /// joined with `,`.
    public var parameters: [String: String]

    public init(_ kind: String, parameters: [String: String] = [:]) {
        self.kind = kind
        self.parameters = parameters
    }
}

/// A labelled choice of a `.choice` field, such as a payment product with its logo.
public struct FormChoice: Sendable, Hashable, Codable {
    public var value: String
    /// A localization key, or the display text when the gateway gives one.
    public var label: String
    /// A logo to show beside the label.
    public var logo: URL?

    public init(value: String, label: String, logo: URL? = nil) {
        self.value = value
        self.label = label
        self.logo = logo
    }
}

/// When a field appears: while another field's value is one of `values` (or, with no values, while
/// that field is filled in).
public struct FieldCondition: Sendable, Hashable, Codable {
    public var field: String
    public var values: [String]

    public init(field: String, values: [String] = []) {
        self.field = field
        self.values = values
    }

    /// Whether the condition holds for the values entered so far.
    public func holds(for entered: [String: String]) -> Bool {
        guard let value = entered[field], !value.isEmpty else { return false }
        return values.isEmpty || values.contains(value)
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
    /// A vendor SDK's in-process result (``SDKResult``): its code and parameters
    /// (Citcon `0`/`-2`/`6001`, iPayNow `PE001`, ecommpay `0`/`100`/`200`/`500`).
    case callback(code: String, parameters: [String: String])
    /// The customer never came back within the time allowed.
    case timedOut
    /// The app abandoned the wait (the customer closed the checkout).
    case abandoned
}

/// What the app may show after Present/Return. Never final: only Confirm is.
public struct ClientOutcome: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// Decodes a kind; another value is an error naming the field and listing the kinds.
        public init(from decoder: any Decoder) throws { self = try decoder.decodeOneOf(Self.self) }

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
    /// Set by the app when it reports the outcome: the customer was handed to a wallet, 3-D Secure or a
    /// redirect during the attempt. The server then never starts another attempt by itself.
    public var handedOff: Bool?

    public init(_ kind: Kind, gatewayCode: String? = nil, message: String? = nil, handedOff: Bool? = nil) {
        self.kind = kind
        self.gatewayCode = gatewayCode
        self.message = message
        self.handedOff = handedOff
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case kind, gatewayCode, message, handedOff }

    /// Decodes an outcome; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(Kind.self, forKey: .kind)
        gatewayCode = try c.decodeIfPresent(String.self, forKey: .gatewayCode)
        message = try c.decodeIfPresent(String.self, forKey: .message)
        handedOff = try c.decodeIfPresent(Bool.self, forKey: .handedOff)
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
    /// When true, a report that would change the attempt (a success, a decline, a refund) is stored but
    /// not applied: the server asks the gateway itself (``CheckoutServer/inquire(_:)``) and the
    /// inquiry's report decides. For gateways whose signed notifications a third party can re-cut or
    /// replay (the notification triggers, the inquiry decides).
    public var confirmBeforeApplying: Bool

    public init(report: StatusReport, acknowledgement: NotificationAcknowledgement = .ok, confirmBeforeApplying: Bool = false) {
        self.report = report
        self.acknowledgement = acknowledgement
        self.confirmBeforeApplying = confirmBeforeApplying
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
    /// Verified notifications about this attempt that wait for this inquiry to confirm them (re-verified from
    /// the store, newest first). A gateway whose status answer may lack what its signed notification carried
    /// (PayFort's `CHECK_STATUS` and the amount) may take it from the notification whose status the answer
    /// confirms; the answer's status always decides.
    public var confirming: [StatusReport]

    public init(attempt: AttemptReference, gatewayReference: String? = nil, amount: Money? = nil, confirming: [StatusReport] = []) {
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.amount = amount
        self.confirming = confirming
    }
}

/// An authoritative statement by a gateway about one attempt: from a verified notification or an inquiry.
public struct StatusReport: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var gatewayReference: String?
    public var status: PaymentStatus
    /// The amount the gateway says it processed, when it says. For a refund: the amount of this one
    /// refund (see ``refundedTotal`` for a gateway that reports the running total).
    public var amount: Money?
    /// For a refund, when the gateway reports it: everything refunded on the attempt so far (an
    /// inquiry's `refunded_amount`). Preferred over adding ``amount`` to what was already recorded.
    public var refundedTotal: Money?
    /// For a refund, when the gateway reports it: what remains of the attempt's money after it (ecommpay's
    /// `payment.sum`, the payment's balance). The money rule checks that it agrees with what was captured
    /// less everything refunded; one that does not is confirmed by inquiry (or, from an inquiry, refused).
    /// Alone, it decides the refunded total (captured less remaining).
    public var remaining: Money?
    /// The gateway's raw status, code and message, verbatim.
    public var gatewayStatus: String?
    public var gatewayCode: String?
    public var gatewayMessage: String?
    /// A key that is equal for two deliveries of the same event, for deduplication.
    public var eventID: String

    public init(gateway: GatewayID, attempt: AttemptReference, gatewayReference: String? = nil, status: PaymentStatus,
                amount: Money? = nil, refundedTotal: Money? = nil, remaining: Money? = nil, gatewayStatus: String? = nil,
                gatewayCode: String? = nil, gatewayMessage: String? = nil, eventID: String? = nil) {
        self.gateway = gateway
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.status = status
        self.amount = amount
        self.refundedTotal = refundedTotal
        self.remaining = remaining
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

/// Both halves of a gateway in one value: how in-process test doubles (TillTesting's fake gateway)
/// and the chaos run hold a gateway. A real module keeps the halves apart, the server half in a target
/// an app never links.
public typealias CheckoutGateway = Checkout & CheckoutServer
