import Foundation
import TillGatewayKit

/// Citcon's runtime environments (the SDK's `CPayENVMode`). Access tokens belong to one of them.
public enum CitconEnvironment: Sendable, Hashable {
    /// Citcon's development environment, at the base URL Citcon gives you.
    case dev(URL)
    /// User acceptance testing: `https://api.sandbox.citconpay.com/v1/`. Where integrations are tested.
    case uat
    /// Production: `https://api.citconpay.com/v1/`.
    case prod
    /// Citcon's QA environment, at the base URL Citcon gives you.
    case qa(URL)
    /// Any other base URL ending in `/v1`: the local sandbox (`{sandbox}/citcon/v1`) or a proxy.
    case custom(URL)

    /// The API base, `…/v1/`.
    public var baseURL: URL {
        switch self {
        case .uat: URL(string: "https://api.sandbox.citconpay.com/v1/")!
        case .prod: URL(string: "https://api.citconpay.com/v1/")!
        case .dev(let url), .qa(let url), .custom(let url): url
        }
    }

    /// `DEV`, `UAT`, `PROD`, `QA` or `CUSTOM`: sent to the app with each preparation, so an app
    /// built for one environment refuses a token made in another.
    public var name: String {
        switch self {
        case .dev: "DEV"
        case .uat: "UAT"
        case .prod: "PROD"
        case .qa: "QA"
        case .custom: "CUSTOM"
        }
    }

    /// Whether plain-HTTP page URLs are acceptable (only for a local or custom base URL).
    package var allowsPlainHTTP: Bool {
        if case .custom = self { return true }
        return false
    }

    /// The URL of `path` under the API base (`charges` → `…/v1/charges`).
    func endpoint(_ path: String) -> URL {
        var base = baseURL.absoluteString
        if !base.hasSuffix("/") { base += "/" }
        return URL(string: base + path) ?? baseURL.appendingPathComponent(path)
    }
}

/// What an app needs to offer Citcon's methods: the methods, their names on Citcon's wire, Info.plist
/// schemes and the way back.
public enum CitconMethods {
    /// The methods Citcon offers through Till. Each is named by a Citcon source (the Android SDK's
    /// vendor list, the iOS demo's payment list, the WebSDK guide's method lists).
    public static let all: Set<PaymentMethod> = [.wechatPay, .alipay, .alipayHK, .alipayPlus, .unionPay, .paypal, .venmo, .card,
                                                 .toss, .gcash, .dana, .kakaoPay]

    /// The methods whose charge can carry a wallet SDK's parameters (client `mobile_native`), with
    /// Citcon's name for each: the three whose native content Citcon's Android SDK reads.
    public static let nativeWallets: [PaymentMethod: String] = [.wechatPay: "wechatpay", .alipay: "alipay", .unionPay: "upop"]

    /// Citcon's name for `method` on the wire (`payment.method`): UnionPay is `upop` and Alipay+ is
    /// `alipay+`; the others are Till's own identifiers (`wechatpay`, `alipay_hk`, `kakaopay`).
    public static func wireName(of method: PaymentMethod) -> String {
        switch method {
        case .unionPay: "upop"
        case .alipayPlus: "alipay+"
        default: method.rawValue
        }
    }

    /// Registry information for Citcon's methods, with the `LSApplicationQueriesSchemes` the SDK guide
    /// lists (card and PayPal need `<bundle id>.payments`).
    public static func info(bundleIdentifier: String) -> [PaymentMethodInfo] {
        let payments = "\(bundleIdentifier).payments"
        return [
            PaymentMethodInfo(method: .wechatPay, switchesApp: true, queriesSchemes: ["weixin", "wechat", "weixinULAPI"],
                              needsForm: false, returnStyle: .universalLink),
            PaymentMethodInfo(method: .alipay, switchesApp: true, queriesSchemes: ["alipay", "safepay", "alipays"],
                              needsForm: false, returnStyle: .customScheme),
            PaymentMethodInfo(method: .unionPay, switchesApp: true, queriesSchemes: ["uppaywallet", "uppaysdk", "uppayx1", "uppayx2", "uppayx3"],
                              needsForm: false, returnStyle: .customScheme),
            PaymentMethodInfo(method: .card, switchesApp: true, queriesSchemes: [payments], needsForm: false, returnStyle: .customScheme),
            PaymentMethodInfo(method: .paypal, switchesApp: true, queriesSchemes: [payments], needsForm: false, returnStyle: .customScheme),
            PaymentMethodInfo(method: .venmo, switchesApp: true, queriesSchemes: ["com.venmo.touch.v2"], needsForm: false,
                              returnStyle: .customScheme),
        ]
    }

    /// Registers Citcon's method information in `registry`.
    public static func register(in registry: inout PaymentMethodRegistry, bundleIdentifier: String) {
        for item in info(bundleIdentifier: bundleIdentifier) { registry.register(item) }
    }
}
