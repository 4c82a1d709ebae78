import Foundation

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
    /// (``GatewayServerHalf/submit(_:context:)``). The server answers with the next step.
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
/// ``CheckoutPresenter/launch(_:)``, and the gateway's ``GatewayAppHalf/interpretReturn(_:for:)`` reads
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
