import Foundation
import TillCitcon
import TillGatewayKit

// Typed wire models of the requests only the server makes (JSON, snake_case keys). Each field is
// named by a vendor source (the fixtures in Tests/TillCitconTests/Fixtures/wire/ say which); see
// docs/gateways/citcon.md.

/// Which access token to ask for.
public enum CitconTokenType: String, Sendable, Hashable, Codable {
    /// Inquiry and charge permissions (Citcon's Phase 1 manual): the one an app gets.
    case client
    /// Every permission (refunds, cancels, …): never leaves the server.
    case server
}

/// `POST /v1/access-tokens` body: `{"token_type": "client" | "server"}`.
struct CitconTokenRequest: Encodable {
    var tokenType: CitconTokenType
    enum CodingKeys: String, CodingKey { case tokenType = "token_type" }
}

/// `POST /v1/access-tokens` answer `data`: `{"access_token", "token_type", "expiry", "permission"}`.
struct CitconAccessToken: Decodable, Sendable, Hashable {
    var accessToken: String
    /// `client` or `server` (kept as text: an unknown word is not a failure).
    var tokenType: String?
    /// The token's permissions (`inquiry`, `charge`, `refund`, …): `permission`, singular, in every source.
    var permission: [String]?
    /// The expiry as sent: epoch milliseconds in Citcon's 2022 manual (1658662133487), epoch seconds in
    /// the 2025 sandbox (1762681312). See ``expiryDate``.
    var expiry: Int64?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", permission, expiry
    }

    init(accessToken: String, tokenType: String? = nil, permission: [String]? = nil, expiry: Int64? = nil) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.permission = permission
        self.expiry = expiry
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decode(String.self, forKey: .accessToken)
        tokenType = try? container.decodeIfPresent(String.self, forKey: .tokenType)
        permission = try? container.decodeIfPresent([String].self, forKey: .permission)
        expiry = try? container.decodeLossyInt(forKey: .expiry)
    }

    /// The largest value read as seconds: anything above 10^11 (the year 5138 in seconds, 1973 in
    /// milliseconds) is milliseconds.
    static let millisecondsThreshold: Int64 = 100_000_000_000

    /// ``expiry`` as a date, whichever unit it came in; `nil` for none or a value not after 1970.
    var expiryDate: Date? {
        guard let expiry, expiry > 0 else { return nil }
        let seconds = expiry > Self.millisecondsThreshold ? Double(expiry) / 1_000 : Double(expiry)
        return Date(timeIntervalSince1970: seconds)
    }
}

/// The charge request, `POST /v1/charges`, as the REST sources show it: `transaction`, `payment`,
/// `urls`, and when known `consumer` and `goods`. The iOS SDK's `scheme`, `universalLink`,
/// `unionpayMode` and `request3DSecureVerification` are properties of its request object, not REST
/// fields, and are never sent.
public struct CitconChargeRequest: Codable, Sendable, Hashable {
    /// The order: reference, amount, currency, country.
    public var transaction: Transaction
    /// Who pays (required for PayPal, Venmo and card).
    public var consumer: Consumer?
    /// The method and the client the customer pays on.
    public var payment: Payment
    /// The products and where they ship.
    public var goods: Goods?
    /// Where Citcon posts its IPN and sends the customer back.
    public var urls: URLs

    /// A charge request; the optional parts are left out of the JSON when `nil`.
    public init(transaction: Transaction, consumer: Consumer? = nil, payment: Payment, goods: Goods? = nil, urls: URLs) {
        self.transaction = transaction
        self.consumer = consumer
        self.payment = payment
        self.goods = goods
        self.urls = urls
    }

    /// `transaction`.
    public struct Transaction: Codable, Sendable, Hashable {
        /// The merchant's unique reference: Till sends the attempt reference. A repeated one is
        /// refused (HTTP 400, code `4100`).
        public var reference: String
        /// Minor units.
        public var amount: Int64
        /// ISO 4217 code.
        public var currency: String
        /// ISO 3166 code of the country the payment is processed in.
        public var country: String
        /// `CN` to route WeChat Pay and UnionPay through Citcon's China acceleration (the sandbox
        /// accepted it; its pages are then on `proxy.citconpay.cn`).
        public var countryAccelerator: String?
        /// Capture at once (`true`) or authorise only (`false`); Citcon's default for PayPal is `false`.
        public var autoCapture: Bool?
        /// A note for the order.
        public var note: String?

        /// A transaction.
        public init(reference: String, amount: Int64, currency: String, country: String, countryAccelerator: String? = nil,
                    autoCapture: Bool? = nil, note: String? = nil) {
            self.reference = reference
            self.amount = amount
            self.currency = currency
            self.country = country
            self.countryAccelerator = countryAccelerator
            self.autoCapture = autoCapture
            self.note = note
        }

        enum CodingKeys: String, CodingKey {
            case reference, amount, currency, country, countryAccelerator = "country_accelerator", autoCapture = "auto_capture", note
        }
    }

    /// `consumer`.
    public struct Consumer: Codable, Sendable, Hashable {
        /// The merchant's customer reference (required for PayPal, Venmo and card).
        public var reference: String?
        /// Given name.
        public var firstName: String?
        /// Family name.
        public var lastName: String?
        /// Phone number.
        public var phone: String?
        /// E-mail address.
        public var email: String?

        /// A consumer; every part is optional.
        public init(reference: String? = nil, firstName: String? = nil, lastName: String? = nil, phone: String? = nil,
                    email: String? = nil) {
            self.reference = reference
            self.firstName = firstName
            self.lastName = lastName
            self.phone = phone
            self.email = email
        }

        enum CodingKeys: String, CodingKey {
            case reference, firstName = "first_name", lastName = "last_name", phone, email
        }
    }

    /// `payment.billing_address`.
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
    }

    /// `payment`.
    public struct Payment: Codable, Sendable, Hashable {
        /// Citcon's name of the method: `wechatpay`, `alipay`, `upop`, `card`, `paypal`, `venmo`, …
        /// (``CitconMethods/wireName(of:)``).
        public var method: String
        /// `payment.indicator`, as Citcon defines it (the Android SDK sends `non-authenticated`).
        public var indicator: String?
        /// The clients the customer may pay on: `mobile_native` (a wallet SDK in the app) or
        /// `mobile_browser` (a page).
        public var client: [String]
        /// The billing address (card, PayPal).
        public var billingAddress: Address?

        /// A payment part.
        public init(method: String, indicator: String? = nil, client: [String], billingAddress: Address? = nil) {
            self.method = method
            self.indicator = indicator
            self.client = client
            self.billingAddress = billingAddress
        }

        enum CodingKeys: String, CodingKey {
            case method, indicator, client, billingAddress = "billing_address"
        }
    }

    /// `goods`: the products (`goods.data`) and where they ship (`goods.shipping`).
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

    /// One of `goods.data`; amounts in minor units.
    public struct Product: Codable, Sendable, Hashable {
        /// Product name.
        public var name: String?
        /// Stock-keeping unit.
        public var sku: String?
        /// Product page.
        public var url: String?
        /// How many.
        public var quantity: Int?
        /// Price of one.
        public var unitAmount: Int64?
        /// `physical`, `digital` or `donation`.
        public var productType: String?
        /// The tax-exempt part of the line.
        public var taxExemptAmount: Int64?

        /// A product line; every part is optional.
        public init(name: String? = nil, sku: String? = nil, url: String? = nil, quantity: Int? = nil, unitAmount: Int64? = nil,
                    productType: String? = nil, taxExemptAmount: Int64? = nil) {
            self.name = name
            self.sku = sku
            self.url = url
            self.quantity = quantity
            self.unitAmount = unitAmount
            self.productType = productType
            self.taxExemptAmount = taxExemptAmount
        }

        enum CodingKeys: String, CodingKey {
            case name, sku, url, quantity, unitAmount = "unit_amount", productType = "product_type", taxExemptAmount = "tax_exempt_amount"
        }
    }

    /// `goods.shipping`.
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

    /// `urls`.
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

/// `POST /v1/refunds` body: the charge by `id`, the refund's own `reference`, the `amount` (minor
/// units) and a `note`.
public struct CitconRefundRequest: Codable, Sendable, Hashable {
    /// The charge's id (`data.id` of its answer).
    public var id: String
    /// The refund's own reference.
    public var reference: String
    /// Minor units.
    public var amount: Int64
    /// Why, for the merchant's records.
    public var note: String?

    /// A refund request.
    public init(id: String, reference: String, amount: Int64, note: String? = nil) {
        self.id = id
        self.reference = reference
        self.amount = amount
        self.note = note
    }
}

/// `POST /v1/cancels` body: the charge by `id`, the cancel's own `reference`, and optionally the
/// charge's merchant reference.
public struct CitconCancelRequest: Codable, Sendable, Hashable {
    /// The charge's id.
    public var id: String
    /// The cancel's own reference.
    public var reference: String
    /// The charge's merchant reference (the attempt reference).
    public var transactionReference: String?

    /// A cancel request.
    public init(id: String, reference: String, transactionReference: String? = nil) {
        self.id = id
        self.reference = reference
        self.transactionReference = transactionReference
    }

    enum CodingKeys: String, CodingKey { case id, reference, transactionReference = "transaction_reference" }
}

/// The answer to a refund or a cancel: an object like a charge with `object` set to the operation.
public struct CitconOperation: Decodable, Sendable, Hashable {
    /// `refund` or `cancel`.
    public var object: String?
    /// A refund's own id; for a cancel, the cancelled charge's id.
    public var id: String
    /// The operation's own reference, echoed.
    public var reference: String?
    /// Minor units.
    public var amount: Int64?
    /// A refund's answer: the charge's refunded total, minor units.
    public var amountRefunded: Int64?
    /// ISO 4217 code.
    public var currency: String?
    /// `succeeded` (a refund), `canceled` (a cancel), … (open).
    public var status: String?

    enum CodingKeys: String, CodingKey {
        case object, id, reference, amount, amountRefunded = "amount_refunded", currency, status
    }

    /// Decodes an operation; amounts may come as numbers, numeric strings, `""` or `null`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        object = try? container.decodeIfPresent(String.self, forKey: .object)
        guard let id = try container.decodeLossyString(forKey: .id) else {
            throw DecodingError.keyNotFound(CodingKeys.id, .init(codingPath: container.codingPath, debugDescription: "no id"))
        }
        self.id = id
        reference = try? container.decodeLossyString(forKey: .reference)
        amount = try container.decodeLossyInt(forKey: .amount)
        amountRefunded = try container.decodeLossyInt(forKey: .amountRefunded)
        currency = try? container.decodeIfPresent(String.self, forKey: .currency)
        status = try? container.decodeIfPresent(String.self, forKey: .status)
    }
}
