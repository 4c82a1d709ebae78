/// A payment method: open and forward-compatible, so a method Till has never heard of still decodes.
///
/// Raw values are lower-case identifiers (`"wechatpay"`). The well-known ones are static members.
public struct PaymentMethod: RawRepresentable, Hashable, Sendable, Codable, Comparable,
    ExpressibleByStringLiteral, CustomStringConvertible
{
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public static let card: PaymentMethod = "card"
    public static let applePay: PaymentMethod = "applepay"
    public static let googlePay: PaymentMethod = "googlepay"
    public static let wechatPay: PaymentMethod = "wechatpay"
    public static let alipay: PaymentMethod = "alipay"
    public static let alipayHK: PaymentMethod = "alipay_hk"
    public static let alipayPlus: PaymentMethod = "alipayplus"
    public static let unionPay: PaymentMethod = "unionpay"
    public static let paypal: PaymentMethod = "paypal"
    public static let venmo: PaymentMethod = "venmo"
    public static let toss: PaymentMethod = "toss"
    public static let fomo: PaymentMethod = "fomo"
    public static let gcash: PaymentMethod = "gcash"
    public static let dana: PaymentMethod = "dana"
    public static let kakaoPay: PaymentMethod = "kakaopay"
    public static let mada: PaymentMethod = "mada"
    public static let stcPay: PaymentMethod = "stcpay"
    public static let bankTransfer: PaymentMethod = "bank_transfer"
}

/// Identifies a gateway module (`"payfort"`, `"citcon"`). Open: adding a gateway adds an identifier
/// without touching the core.
public struct GatewayID: RawRepresentable, Hashable, Sendable, Codable, Comparable,
    ExpressibleByStringLiteral, CustomStringConvertible
{
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What the merchant asks the gateway to do with the money.
public enum PaymentAction: String, Sendable, Codable, CaseIterable {
    /// Authorise and capture in one step (PayFort PURCHASE, ecommpay Sale).
    case sale
    /// Authorise only; capture later (PayFort AUTHORIZATION, ecommpay Auth).
    case authorize
    /// Check the payment instrument without moving money (ecommpay Verify, zero-amount auth).
    case verify

    /// Decodes an action; another value is an error naming the field and listing the actions.
    public init(from decoder: any Decoder) throws { self = try decoder.decodeOneOf(Self.self) }
}
