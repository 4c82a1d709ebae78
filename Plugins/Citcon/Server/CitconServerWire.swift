import Foundation
import TillCitcon
import TillGatewayKit

// Typed wire models of the requests only the server makes (JSON, snake_case keys). See
// docs/gateways/citcon.md.

/// Which access token to ask for.
public enum CitconTokenType: String, Sendable, Hashable, Codable {
    /// May only charge and inquire: the one an app gets.
    case client
    /// May also refund, capture and cancel: never leaves the server.
    case server
}

/// `POST /v1/access-tokens` body.
struct CitconTokenRequest: Encodable {
    var tokenType: CitconTokenType
    enum CodingKeys: String, CodingKey { case tokenType = "token_type" }
}

/// `POST /v1/access-tokens` answer `data`.
struct CitconAccessToken: Decodable, Sendable, Hashable {
    var accessToken: String
    var tokenType: CitconTokenType?
    var permissions: [String]?
    /// Unix seconds.
    var expiry: Int64?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", permissions, expiry
    }
}

/// The charge request: the SDK's `CPayRequest` as the REST API takes it.
public struct CitconChargeRequest: Codable, Sendable, Hashable {
    /// The order: reference, amount, currency, country.
    public var transaction: Transaction
    /// Who pays, when known.
    public var consumer: Consumer?
    /// The method and how the app pays.
    public var payment: Payment
    /// The products and where they ship.
    public var goods: Goods?
    /// The maximum number of installments.
    public var installments: Installments?
    /// Where Citcon posts its IPN and sends the customer back.
    public var urls: URLs
    /// The app's URL scheme (required for Alipay).
    public var scheme: String?
    /// The app's universal link (required for WeChat Pay).
    public var universalLink: String?
    /// Whether a card payment asks for 3-D Secure.
    public var request3DSecureVerification: Bool?
    /// UnionPay: `"00"` production, `"01"` development.
    public var unionpayMode: String?

    /// A charge request; the optional parts are left out of the JSON when `nil`.
    public init(transaction: Transaction, consumer: Consumer? = nil, payment: Payment, goods: Goods? = nil,
                installments: Installments? = nil, urls: URLs, scheme: String? = nil, universalLink: String? = nil,
                request3DSecureVerification: Bool? = nil, unionpayMode: String? = nil) {
        self.transaction = transaction
        self.consumer = consumer
        self.payment = payment
        self.goods = goods
        self.installments = installments
        self.urls = urls
        self.scheme = scheme
        self.universalLink = universalLink
        self.request3DSecureVerification = request3DSecureVerification
        self.unionpayMode = unionpayMode
    }

    enum CodingKeys: String, CodingKey {
        case transaction, consumer, payment, goods, installments, urls, scheme
        case universalLink = "universal_link", request3DSecureVerification = "request_3ds_verification", unionpayMode = "unionpay_mode"
    }

    /// `CPayTransaction`.
    public struct Transaction: Codable, Sendable, Hashable {
        /// The merchant's unique reference: Till sends the attempt reference.
        public var reference: String
        /// Minor units, tax included.
        public var amount: Int64
        /// ISO 4217 code.
        public var currency: String
        /// ISO 3166 code of the country the payment is processed in.
        public var country: String
        /// For card, PayPal and Venmo: capture at once (`true`) or authorise only (`false`).
        public var autoCapture: Bool?
        /// A note for the order (at most 128 characters).
        public var note: String?

        /// A transaction.
        public init(reference: String, amount: Int64, currency: String, country: String, autoCapture: Bool? = nil, note: String? = nil) {
            self.reference = reference
            self.amount = amount
            self.currency = currency
            self.country = country
            self.autoCapture = autoCapture
            self.note = note
        }

        enum CodingKeys: String, CodingKey { case reference, amount, currency, country, autoCapture = "auto_capture", note }
    }

    /// `CPayConsumer`.
    public struct Consumer: Codable, Sendable, Hashable {
        /// The merchant's customer reference.
        public var reference: String?
        /// Given name.
        public var firstName: String?
        /// Family name.
        public var lastName: String?
        /// Phone number.
        public var phone: String?
        /// E-mail address.
        public var email: String?
        /// Billing address.
        public var billingAddress: Address?

        /// A consumer; every part is optional.
        public init(reference: String? = nil, firstName: String? = nil, lastName: String? = nil, phone: String? = nil,
                    email: String? = nil, billingAddress: Address? = nil) {
            self.reference = reference
            self.firstName = firstName
            self.lastName = lastName
            self.phone = phone
            self.email = email
            self.billingAddress = billingAddress
        }

        enum CodingKeys: String, CodingKey {
            case reference, firstName = "first_name", lastName = "last_name", phone, email, billingAddress = "billing_address"
        }
    }

    /// `CPayBillingAddr`.
    public struct Address: Codable, Sendable, Hashable {
        /// Street and number.
        public var street: String?
        /// A second address line.
        public var street2: String?
        /// City.
        public var city: String?
        /// State or province.
        public var state: String?
        /// Postal code.
        public var zip: String?
        /// ISO 3166 country code.
        public var country: String?

        /// An address; every part is optional.
        public init(street: String? = nil, street2: String? = nil, city: String? = nil, state: String? = nil, zip: String? = nil,
                    country: String? = nil) {
            self.street = street
            self.street2 = street2
            self.city = city
            self.state = state
            self.zip = zip
            self.country = country
        }

        /// True when every part 3-D Secure needs is there.
        var isComplete: Bool {
            [street, city, state, zip, country].allSatisfy { !($0 ?? "").isEmpty }
        }
    }

    /// `CPayPayment`.
    public struct Payment: Codable, Sendable, Hashable {
        /// Lower case: `wechatpay`, `alipay`, `unionpay`, `card`, `paypal`, `venmo`, …
        public var method: String
        /// `payment.indicator`, as Citcon defines it.
        public var indicator: String?
        /// Ask Citcon for a reusable payment token. Till never does.
        public var requestToken: Bool?
        /// A vaulted payment token. Till never sends one.
        public var token: String?
        /// Always contains `mobile_native` for an app.
        public var client: [String]
        /// When the order times out, absolute (Unix milliseconds).
        public var expiry: Int64?
        /// Card data. Till never fills it: card details are typed on Citcon's page.
        public var data: PaymentData?
        /// The card's billing address.
        public var billingAddress: Address?

        /// A payment part.
        public init(method: String, indicator: String? = nil, requestToken: Bool? = nil, token: String? = nil,
                    client: [String] = ["mobile_native"], expiry: Int64? = nil, data: PaymentData? = nil, billingAddress: Address? = nil) {
            self.method = method
            self.indicator = indicator
            self.requestToken = requestToken
            self.token = token
            self.client = client
            self.expiry = expiry
            self.data = data
            self.billingAddress = billingAddress
        }

        enum CodingKeys: String, CodingKey {
            case method, indicator, requestToken = "request_token", token, client, expiry, data, billingAddress = "billing_address"
        }
    }

    /// `CPayPaymentData`. Its description never shows the card number or CVV.
    public struct PaymentData: Codable, Sendable, Hashable, CustomStringConvertible {
        /// Cardholder's given name.
        public var firstName: String?
        /// Cardholder's family name.
        public var lastName: String?
        /// Card security code.
        public var cvv: String?
        /// Card number.
        public var pan: String?
        /// `MM/YY`.
        public var expiry: String?

        /// Card data.
        public init(firstName: String? = nil, lastName: String? = nil, cvv: String? = nil, pan: String? = nil, expiry: String? = nil) {
            self.firstName = firstName
            self.lastName = lastName
            self.cvv = cvv
            self.pan = pan
            self.expiry = expiry
        }

        /// `PaymentData(<redacted>)`: never the card number or CVV.
        public var description: String { "PaymentData(<redacted>)" }

        enum CodingKeys: String, CodingKey { case firstName = "first_name", lastName = "last_name", cvv, pan, expiry }
    }

    /// `CPayGoods`: the products and where they ship.
    public struct Goods: Codable, Sendable, Hashable {
        /// The products.
        public var data: [Product]
        /// Where they ship.
        public var shipping: Shipping?

        /// Goods.
        public init(data: [Product], shipping: Shipping? = nil) {
            self.data = data
            self.shipping = shipping
        }
    }

    /// `CPayProduct`; amounts in minor units.
    public struct Product: Codable, Sendable, Hashable {
        /// Product name.
        public var name: String?
        /// Stock-keeping unit.
        public var sku: String?
        /// Product page.
        public var url: String?
        /// How many.
        public var quantity: Int?
        /// Total for the line.
        public var totalAmount: Int64?
        /// Price of one.
        public var unitAmount: Int64?
        /// Tax rate, as Citcon defines it.
        public var totalTaxRate: Int?
        /// Tax for the line.
        public var totalTaxAmount: Int64?
        /// Discount for the line.
        public var totalDiscountAmount: Int64?
        /// The taxable part of the line.
        public var taxableAmount: Int64?
        /// The tax-exempt part of the line.
        public var taxExemptAmount: Int64?

        /// A product line; every part is optional.
        public init(name: String? = nil, sku: String? = nil, url: String? = nil, quantity: Int? = nil, totalAmount: Int64? = nil,
                    unitAmount: Int64? = nil, totalTaxRate: Int? = nil, totalTaxAmount: Int64? = nil, totalDiscountAmount: Int64? = nil,
                    taxableAmount: Int64? = nil, taxExemptAmount: Int64? = nil) {
            self.name = name
            self.sku = sku
            self.url = url
            self.quantity = quantity
            self.totalAmount = totalAmount
            self.unitAmount = unitAmount
            self.totalTaxRate = totalTaxRate
            self.totalTaxAmount = totalTaxAmount
            self.totalDiscountAmount = totalDiscountAmount
            self.taxableAmount = taxableAmount
            self.taxExemptAmount = taxExemptAmount
        }

        enum CodingKeys: String, CodingKey {
            case name, sku, url, quantity, totalAmount = "total_amount", unitAmount = "unit_amount", totalTaxRate = "total_tax_rate"
            case totalTaxAmount = "total_tax_amount", totalDiscountAmount = "total_discount_amount"
            case taxableAmount = "taxable_amount", taxExemptAmount = "tax_exempt_amount"
        }
    }

    /// `CPayShipping`.
    public struct Shipping: Codable, Sendable, Hashable {
        /// Recipient's given name.
        public var firstName: String?
        /// Recipient's family name.
        public var lastName: String?
        /// Recipient's phone number.
        public var phone: String?
        /// Recipient's e-mail address.
        public var email: String?
        /// Street and number.
        public var street: String?
        /// A second address line.
        public var street2: String?
        /// City.
        public var city: String?
        /// State or province.
        public var state: String?
        /// Postal code.
        public var zip: String?
        /// ISO 3166 country code.
        public var country: String?

        /// Shipping details; every part is optional.
        public init(firstName: String? = nil, lastName: String? = nil, phone: String? = nil, email: String? = nil, street: String? = nil,
                    street2: String? = nil, city: String? = nil, state: String? = nil, zip: String? = nil, country: String? = nil) {
            self.firstName = firstName
            self.lastName = lastName
            self.phone = phone
            self.email = email
            self.street = street
            self.street2 = street2
            self.city = city
            self.state = state
            self.zip = zip
            self.country = country
        }

        enum CodingKeys: String, CodingKey {
            case firstName = "first_name", lastName = "last_name", phone, email, street, street2, city, state, zip, country
        }
    }

    /// `CPayInstallments`: the maximum number of installments.
    public struct Installments: Codable, Sendable, Hashable {
        /// The maximum number of installments, as text.
        public var id: String
        /// Installments up to `id`.
        public init(id: String) { self.id = id }
    }

    /// `CPayUrls`.
    public struct URLs: Codable, Sendable, Hashable {
        /// Where Citcon posts its IPN (the server's notification URL).
        public var ipn: String?
        /// Where the customer goes after paying.
        public var success: String
        /// Where the customer goes after a failure.
        public var fail: String
        /// Where the customer goes after cancelling.
        public var cancel: String

        /// The URLs of one charge.
        public init(ipn: String? = nil, success: String, fail: String, cancel: String) {
            self.ipn = ipn
            self.success = success
            self.fail = fail
            self.cancel = cancel
        }
    }
}

/// The answer to a capture, refund or cancel.
public struct CitconOperation: Decodable, Sendable, Hashable {
    /// `capture`, `refund` or `cancel`.
    public var object: String?
    /// Citcon's id of the operation.
    public var id: String
    /// The charge it applies to.
    public var transactionID: String?
    /// Minor units.
    public var amount: Int64?
    /// ISO 4217 code.
    public var currency: String?
    /// Citcon's status of the operation (`succeeded`, …).
    public var status: String?

    enum CodingKeys: String, CodingKey {
        case object, id, transactionID = "transaction_id", amount, currency, status
    }

    /// Decodes an operation; the amount may come as a number, a numeric string, `""` or `null`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        object = try container.decodeIfPresent(String.self, forKey: .object)
        id = try container.decode(String.self, forKey: .id)
        transactionID = try container.decodeIfPresent(String.self, forKey: .transactionID)
        amount = try container.decodeLossyInt(forKey: .amount)
        currency = try container.decodeIfPresent(String.self, forKey: .currency)
        status = try container.decodeIfPresent(String.self, forKey: .status)
    }
}

/// Capture / refund / cancel bodies.
struct CitconOperationRequest: Encodable {
    var transactionID: String
    var amount: Int64?
    var reason: String?
    enum CodingKeys: String, CodingKey { case transactionID = "transaction_id", amount, reason }
}
