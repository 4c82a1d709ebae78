/// What an app needs to know about a payment method to offer it.
public struct PaymentMethodInfo: Hashable, Sendable, Codable {
    public var method: PaymentMethod
    /// Localization key for the display name (`"till.method.wechatpay"`).
    public var displayNameKey: String
    /// Whether paying switches the customer to another app (a wallet).
    public var switchesApp: Bool
    /// The schemes the app must list under `LSApplicationQueriesSchemes` in Info.plist for
    /// `canOpenURL` to see that wallet.
    public var queriesSchemes: [String]
    /// Whether the app must show a form (card details) before paying.
    public var needsForm: Bool
    /// How the customer comes back: through a custom scheme, a universal link, or in-process.
    public var returnStyle: ReturnStyle

    public enum ReturnStyle: String, Hashable, Sendable, Codable {
        case customScheme = "custom_scheme"
        case universalLink = "universal_link"
        case inProcess = "in_process"
    }

    public init(method: PaymentMethod, displayNameKey: String? = nil, switchesApp: Bool, queriesSchemes: [String] = [],
                needsForm: Bool, returnStyle: ReturnStyle) {
        self.method = method
        self.displayNameKey = displayNameKey ?? "till.method.\(method.rawValue)"
        self.switchesApp = switchesApp
        self.queriesSchemes = queriesSchemes
        self.needsForm = needsForm
        self.returnStyle = returnStyle
    }

    /// Till's built-in knowledge of well-known methods. Gateway modules may register their own
    /// information for a method, which takes precedence.
    public static let wellKnown: [PaymentMethod: PaymentMethodInfo] = {
        let list: [PaymentMethodInfo] = [
            .init(method: .card, switchesApp: false, needsForm: true, returnStyle: .inProcess),
            .init(method: .applePay, switchesApp: false, needsForm: false, returnStyle: .inProcess),
            .init(method: .googlePay, switchesApp: false, needsForm: false, returnStyle: .inProcess),
            .init(method: .wechatPay, switchesApp: true, queriesSchemes: ["weixin", "wechat", "weixinULAPI"],
                  needsForm: false, returnStyle: .universalLink),
            .init(method: .alipay, switchesApp: true, queriesSchemes: ["alipay", "safepay", "alipays"],
                  needsForm: false, returnStyle: .customScheme),
            .init(method: .alipayHK, switchesApp: true, queriesSchemes: ["alipayhk"], needsForm: false, returnStyle: .customScheme),
            .init(method: .alipayPlus, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .unionPay, switchesApp: true,
                  queriesSchemes: ["uppaywallet", "uppaysdk", "uppayx1", "uppayx2", "uppayx3"],
                  needsForm: false, returnStyle: .customScheme),
            .init(method: .paypal, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .venmo, switchesApp: true, queriesSchemes: ["com.venmo.touch.v2"], needsForm: false,
                  returnStyle: .customScheme),
            .init(method: .toss, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .fomo, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .gcash, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .dana, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .kakaoPay, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .mada, switchesApp: false, needsForm: true, returnStyle: .inProcess),
            .init(method: .stcPay, switchesApp: true, needsForm: false, returnStyle: .customScheme),
            .init(method: .bankTransfer, switchesApp: false, needsForm: true, returnStyle: .inProcess),
        ]
        return Dictionary(uniqueKeysWithValues: list.map { ($0.method, $0) })
    }()
}

/// Which gateways offer which payment method, and what the app needs per method.
///
/// A plain value built from the merchant's gateways, never a shared registry: the app builds one from
/// the gateways it configured.
///
/// ```swift
/// let registry = PaymentMethodRegistry(gateways: [payfort, citcon])
/// registry.gateways(offering: .wechatPay)       // ["citcon"]
/// registry.requiredQueriesSchemes()             // every scheme to list in Info.plist
/// ```
public struct PaymentMethodRegistry: Sendable {
    private var offers: [PaymentMethod: [GatewayID]] = [:]
    private var info: [PaymentMethod: PaymentMethodInfo] = [:]

    /// An empty registry.
    public init() {}

    /// A registry of the methods `gateways` declare in their capabilities, in the given order.
    public init(gateways: [any GatewayAppHalf]) {
        for gateway in gateways {
            register(gateway.gateway, methods: gateway.capabilities.methods)
        }
    }

    /// Declares that `gateway` offers `methods`. A gateway is listed once per method.
    public mutating func register(_ gateway: GatewayID, methods: Set<PaymentMethod>) {
        for method in methods.sorted() {
            if !(offers[method, default: []].contains(gateway)) { offers[method, default: []].append(gateway) }
        }
    }

    /// Replaces Till's built-in information for a method (a gateway module's own knowledge).
    public mutating func register(_ methodInfo: PaymentMethodInfo) {
        info[methodInfo.method] = methodInfo
    }

    /// Every method at least one gateway offers, sorted.
    public var methods: [PaymentMethod] { offers.keys.sorted() }

    /// The gateways offering `method`, in registration order.
    public func gateways(offering method: PaymentMethod) -> [GatewayID] { offers[method] ?? [] }

    /// What the app needs to know about `method`. For a method neither registered nor well known,
    /// a conservative default: it needs a form, does not switch apps, returns in-process.
    public func info(for method: PaymentMethod) -> PaymentMethodInfo {
        info[method] ?? PaymentMethodInfo.wellKnown[method]
            ?? PaymentMethodInfo(method: method, switchesApp: false, needsForm: true, returnStyle: .inProcess)
    }

    /// The de-duplicated, sorted `LSApplicationQueriesSchemes` for the offered methods (or `methods`).
    public func requiredQueriesSchemes(for methods: [PaymentMethod]? = nil) -> [String] {
        Array(Set((methods ?? self.methods).flatMap { info(for: $0).queriesSchemes })).sorted()
    }
}
