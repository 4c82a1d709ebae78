import Foundation
import Till

// Typed wire models of Citcon's UPI REST API (JSON, snake_case keys). See docs/gateways/citcon.md.

/// Citcon's answer envelope: `{"status", "app", "version", "data"}`.
struct CitconEnvelope<Payload: Decodable>: Decodable {
    var status: String
    var app: String?
    var version: String?
    var data: Payload
}

/// `data` of a failed answer.
struct CitconFailure: Decodable, Sendable {
    var code: String?
    var message: String?

    enum CodingKeys: String, CodingKey { case code, message }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decodeLossyString(forKey: .code)
        message = try container.decodeLossyString(forKey: .message)
    }
}

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
    public var transaction: Transaction
    public var consumer: Consumer?
    public var payment: Payment
    public var goods: Goods?
    public var installments: Installments?
    public var urls: URLs
    /// The app's URL scheme (required for Alipay).
    public var scheme: String?
    /// The app's universal link (required for WeChat Pay).
    public var universalLink: String?
    /// Whether a card payment asks for 3-D Secure.
    public var request3DSecureVerification: Bool?
    /// UnionPay: `"00"` production, `"01"` development.
    public var unionpayMode: String?

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
        public var currency: String
        public var country: String
        public var autoCapture: Bool?
        public var note: String?

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
        public var reference: String?
        public var firstName: String?
        public var lastName: String?
        public var phone: String?
        public var email: String?
        public var billingAddress: Address?

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
        public var street: String?
        public var street2: String?
        public var city: String?
        public var state: String?
        public var zip: String?
        public var country: String?

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
        public var indicator: String?
        public var requestToken: Bool?
        public var token: String?
        /// Always contains `mobile_native` for an app.
        public var client: [String]
        /// When the order times out, absolute (Unix milliseconds).
        public var expiry: Int64?
        /// Card data. Till never fills it: card details are typed on Citcon's page.
        public var data: PaymentData?
        public var billingAddress: Address?

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
        public var firstName: String?
        public var lastName: String?
        public var cvv: String?
        public var pan: String?
        /// `MM/YY`.
        public var expiry: String?

        public init(firstName: String? = nil, lastName: String? = nil, cvv: String? = nil, pan: String? = nil, expiry: String? = nil) {
            self.firstName = firstName
            self.lastName = lastName
            self.cvv = cvv
            self.pan = pan
            self.expiry = expiry
        }

        public var description: String { "PaymentData(<redacted>)" }

        enum CodingKeys: String, CodingKey { case firstName = "first_name", lastName = "last_name", cvv, pan, expiry }
    }

    /// `CPayGoods`: the products and where they ship.
    public struct Goods: Codable, Sendable, Hashable {
        public var data: [Product]
        public var shipping: Shipping?

        public init(data: [Product], shipping: Shipping? = nil) {
            self.data = data
            self.shipping = shipping
        }
    }

    /// `CPayProduct`; amounts in minor units.
    public struct Product: Codable, Sendable, Hashable {
        public var name: String?
        public var sku: String?
        public var url: String?
        public var quantity: Int?
        public var totalAmount: Int64?
        public var unitAmount: Int64?
        public var totalTaxRate: Int?
        public var totalTaxAmount: Int64?
        public var totalDiscountAmount: Int64?
        public var taxableAmount: Int64?
        public var taxExemptAmount: Int64?

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
        public var firstName: String?
        public var lastName: String?
        public var phone: String?
        public var email: String?
        public var street: String?
        public var street2: String?
        public var city: String?
        public var state: String?
        public var zip: String?
        public var country: String?

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
        public var id: String
        public init(id: String) { self.id = id }
    }

    /// `CPayUrls`.
    public struct URLs: Codable, Sendable, Hashable {
        public var ipn: String?
        public var success: String
        public var fail: String
        public var cancel: String

        public init(ipn: String? = nil, success: String, fail: String, cancel: String) {
            self.ipn = ipn
            self.success = success
            self.fail = fail
            self.cancel = cancel
        }
    }
}

/// A charge as Citcon answers it (create and inquiry).
public struct CitconCharge: Decodable, Sendable, Hashable {
    public var object: String?
    /// Citcon's transaction id.
    public var id: String
    public var reference: String?
    public var amount: Int64?
    public var currency: String?
    public var country: String?
    public var autoCapture: Bool?
    /// `pending`, `succeeded`, `authorized`, `failed`, `canceled`, `expired`, … (open).
    public var status: String?
    public var amountCaptured: Int64?
    public var amountRefunded: Int64?
    public var chargeToken: String?
    public var payment: Payment?

    /// `payment` of a charge.
    public struct Payment: Decodable, Sendable, Hashable {
        public var method: String?
        public var client: [ClientEntry]?
    }

    /// One `payment.client[]` entry: a wallet SDK's parameters (`native`) or a page (`url`).
    public struct ClientEntry: Decodable, Sendable, Hashable {
        public var type: String
        public var content: [String: String]

        enum CodingKeys: String, CodingKey { case type, content }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try container.decode(String.self, forKey: .type)
            let raw = try container.decodeIfPresent([String: CitconScalar].self, forKey: .content) ?? [:]
            content = raw.mapValues(\.text)
        }
    }

    enum CodingKeys: String, CodingKey {
        case object, id, reference, amount, currency, country, autoCapture = "auto_capture", status
        case amountCaptured = "amount_captured", amountRefunded = "amount_refunded", chargeToken = "charge_token", payment
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        object = try container.decodeIfPresent(String.self, forKey: .object)
        id = try container.decode(String.self, forKey: .id)
        reference = try container.decodeIfPresent(String.self, forKey: .reference)
        amount = try container.decodeLossyInt(forKey: .amount)
        currency = try container.decodeIfPresent(String.self, forKey: .currency)
        country = try container.decodeIfPresent(String.self, forKey: .country)
        autoCapture = try? container.decodeIfPresent(Bool.self, forKey: .autoCapture)
        status = try container.decodeIfPresent(String.self, forKey: .status)
        amountCaptured = try container.decodeLossyInt(forKey: .amountCaptured)
        amountRefunded = try container.decodeLossyInt(forKey: .amountRefunded)
        chargeToken = try container.decodeIfPresent(String.self, forKey: .chargeToken)
        payment = try container.decodeIfPresent(Payment.self, forKey: .payment)
    }
}

/// The answer to a capture, refund or cancel.
public struct CitconOperation: Decodable, Sendable, Hashable {
    /// `capture`, `refund` or `cancel`.
    public var object: String?
    public var id: String
    public var transactionID: String?
    public var amount: Int64?
    public var currency: String?
    public var status: String?

    enum CodingKeys: String, CodingKey {
        case object, id, transactionID = "transaction_id", amount, currency, status
    }

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

/// A JSON scalar read as text: strings verbatim, numbers and booleans as written, null as "".
struct CitconScalar: Decodable, Sendable {
    var text: String
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { text = ""; return }
        if let string = try? container.decode(String.self) { text = string; return }
        if let bool = try? container.decode(Bool.self) { text = bool ? "true" : "false"; return }
        if let int = try? container.decode(Int64.self) { text = String(int); return }
        if let double = try? container.decode(Double.self) { text = String(double); return }
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a string, number, boolean or null")
    }
}

extension KeyedDecodingContainer {
    /// An integer sent as a number, a numeric string, `""` or `null` (Citcon uses all four).
    func decodeLossyInt(forKey key: Key) throws -> Int64? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let value = try? decode(Int64.self, forKey: key) { return value }
        let text = try decode(String.self, forKey: key)
        if text.isEmpty { return nil }
        guard let value = Int64(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an integer")
        }
        return value
    }

    /// A string sent as a string or a number.
    func decodeLossyString(forKey key: Key) throws -> String? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let text = try? decode(String.self, forKey: key) { return text }
        return String(try decode(Int64.self, forKey: key))
    }
}
