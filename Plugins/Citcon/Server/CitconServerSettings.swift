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

/// How the server fills the parts of a charge that are the merchant's choice.
public struct CitconSettings: Sendable, Hashable {
    /// UnionPay mode: `"00"` production (default), `"01"` development.
    public var unionpayMode: String
    /// Ask for 3-D Secure on card payments. Needs the customer's names, phone, e-mail and billing address.
    public var request3DSecure: Bool
    /// How long a charge stays payable (`payment.expiry`). `nil` leaves it to Citcon.
    public var chargeLifetime: Duration?
    /// Minimum time left on a client token handed to an app.
    public var clientTokenMinimumLifetime: Duration

    /// Settings; the defaults are UnionPay production, no 3-D Secure, charges payable for 30 minutes and
    /// client tokens good for at least 15.
    public init(unionpayMode: String = "00", request3DSecure: Bool = false, chargeLifetime: Duration? = .seconds(1_800),
                clientTokenMinimumLifetime: Duration = .seconds(900)) {
        self.unionpayMode = unionpayMode
        self.request3DSecure = request3DSecure
        self.chargeLifetime = chargeLifetime
        self.clientTokenMinimumLifetime = clientTokenMinimumLifetime
    }
}

/// Order details Till cannot read from a ``PaymentIntent``: the goods, shipping, billing address and
/// installments. The server supplies them per attempt through the `orderDetails` closure of
/// ``CitconServer/init(id:environment:credentials:settings:transport:orderDetails:)``.
public struct CitconOrderDetails: Sendable, Hashable {
    /// The products and where they ship.
    public var goods: CitconChargeRequest.Goods?
    /// The billing address (card 3-D Secure needs it).
    public var billingAddress: CitconChargeRequest.Address?
    /// The maximum number of installments.
    public var installments: CitconChargeRequest.Installments?
    /// `payment.indicator`.
    public var indicator: String?

    /// Details; every part is optional.
    public init(goods: CitconChargeRequest.Goods? = nil, billingAddress: CitconChargeRequest.Address? = nil,
                installments: CitconChargeRequest.Installments? = nil, indicator: String? = nil) {
        self.goods = goods
        self.billingAddress = billingAddress
        self.installments = installments
        self.indicator = indicator
    }
}
