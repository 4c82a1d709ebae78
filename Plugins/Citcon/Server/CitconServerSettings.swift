import Foundation
import TillCitcon
import TillGatewayKit

/// The merchant's Citcon secrets. Server side only: an app never holds them, and never links the
/// module that reads them.
public struct CitconCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The merchant API key: authenticates `POST /v1/access-tokens`.
    public var apiKey: String
    /// The API secret: checks the IPN `sign`.
    public var apiSecret: String

    /// The merchant's key and secret, as Citcon issued them.
    public init(apiKey: String, apiSecret: String) {
        self.apiKey = apiKey
        self.apiSecret = apiSecret
    }

    /// `CitconCredentials(<redacted>)`: never the key or the secret.
    public var description: String { "CitconCredentials(<redacted>)" }
    /// The same as ``description``.
    public var debugDescription: String { description }
}

/// How the server fills the parts of a charge that are the merchant's choice, and what it hands the app.
public struct CitconSettings: Sendable, Hashable {
    /// The client a wallet charge (WeChat Pay, Alipay, UnionPay) is requested for.
    public enum WalletClient: String, Sendable, Hashable, CaseIterable {
        /// The app launches the wallet's SDK with the charge's native content (as Citcon's Android SDK does).
        case mobileNative = "mobile_native"
        /// The app opens the charge's mobile page.
        case mobileBrowser = "mobile_browser"
    }

    /// The client a wallet charge is requested for; other methods are always `mobile_browser`.
    public var walletClient: WalletClient
    /// `transaction.country_accelerator` for WeChat Pay and UnionPay charges (`CN`), or `nil`.
    public var countryAccelerator: String?
    /// The mode the app's UnionPay SDK is launched with (`"00"` production, `"01"` development): the
    /// iOS SDK's `unionpayMode`, handed to the app as the wallet parameter `mode`; never sent to Citcon.
    public var unionpayMode: String
    /// How long Till keeps a preparation payable (its `expiresAt`). Till's own bound: no source shows
    /// a charge lifetime field in a unit Till could send, so nothing is sent to Citcon.
    public var chargeLifetime: Duration?
    /// Minimum time left on a client token handed to an app.
    public var clientTokenMinimumLifetime: Duration

    /// Settings; the defaults are wallet SDK launches, no acceleration, UnionPay production,
    /// preparations payable for 30 minutes and client tokens good for at least 15.
    public init(walletClient: WalletClient = .mobileNative, countryAccelerator: String? = nil, unionpayMode: String = "00",
                chargeLifetime: Duration? = .seconds(1_800), clientTokenMinimumLifetime: Duration = .seconds(900)) {
        self.walletClient = walletClient
        self.countryAccelerator = countryAccelerator
        self.unionpayMode = unionpayMode
        self.chargeLifetime = chargeLifetime
        self.clientTokenMinimumLifetime = clientTokenMinimumLifetime
    }
}

/// Order details Till cannot read from a ``PaymentIntent``: the goods, shipping and billing address.
/// The server supplies them per attempt through the `orderDetails` closure of
/// ``CitconServer/init(id:environment:credentials:settings:transport:orderDetails:)``.
public struct CitconOrderDetails: Sendable, Hashable {
    /// The products and where they ship (`goods`).
    public var goods: CitconChargeRequest.Goods?
    /// The billing address (`payment.billing_address`).
    public var billingAddress: CitconChargeRequest.Address?
    /// `payment.indicator`.
    public var indicator: String?

    /// Details; every part is optional.
    public init(goods: CitconChargeRequest.Goods? = nil, billingAddress: CitconChargeRequest.Address? = nil, indicator: String? = nil) {
        self.goods = goods
        self.billingAddress = billingAddress
        self.indicator = indicator
    }
}
