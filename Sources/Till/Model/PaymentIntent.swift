#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The customer paying.
public struct Customer: Hashable, Sendable, Codable {
    /// The merchant's own identifier for the customer.
    public var reference: String?
    public var email: String?
    public var firstName: String?
    public var lastName: String?
    public var phone: String?
    /// The customer's IP address, which some gateways require for fraud screening.
    public var ipAddress: String?
    /// Preferred language for gateway pages (`"en"`, `"ar"`, `"zh"`).
    public var locale: String?

    public init(reference: String? = nil, email: String? = nil, firstName: String? = nil, lastName: String? = nil,
                phone: String? = nil, ipAddress: String? = nil, locale: String? = nil) {
        self.reference = reference
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
        self.phone = phone
        self.ipAddress = ipAddress
        self.locale = locale
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case reference, email, firstName, lastName, phone, ipAddress, locale
    }

    /// Decodes a customer; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        reference = try c.decodeIfPresent(String.self, forKey: .reference)
        email = try c.decodeIfPresent(String.self, forKey: .email)
        firstName = try c.decodeIfPresent(String.self, forKey: .firstName)
        lastName = try c.decodeIfPresent(String.self, forKey: .lastName)
        phone = try c.decodeIfPresent(String.self, forKey: .phone)
        ipAddress = try c.decodeIfPresent(String.self, forKey: .ipAddress)
        locale = try c.decodeIfPresent(String.self, forKey: .locale)
    }
}

/// What the merchant wants to be paid: the input of every checkout.
public struct PaymentIntent: Hashable, Sendable, Codable {
    /// The merchant's order reference; unique per merchant. Attempts get their own references.
    public var merchantReference: String
    /// How much, in which currency.
    public var amount: Money
    /// The customer's country, used for routing and by gateways that need it.
    public var country: CountryCode?
    /// The chosen payment method.
    public var method: PaymentMethod
    public var action: PaymentAction
    public var customer: Customer
    /// Shown on statements or gateway pages where the gateway supports it.
    public var description: String?
    /// The first 6 to 8 digits of the card, for routing by IIN; never more.
    public var cardIIN: String?
    /// Free-form merchant data, available to routing rules and passed through where gateways allow.
    public var metadata: [String: String]

    public init(merchantReference: String, amount: Money, country: CountryCode? = nil, method: PaymentMethod,
                action: PaymentAction = .sale, customer: Customer = Customer(), description: String? = nil,
                cardIIN: String? = nil, metadata: [String: String] = [:]) {
        self.merchantReference = merchantReference
        self.amount = amount
        self.country = country
        self.method = method
        self.action = action
        self.customer = customer
        self.description = description
        self.cardIIN = cardIIN
        self.metadata = metadata
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case merchantReference, amount, country, method, action, customer, description, cardIIN, metadata
    }

    /// Decodes an intent; `action` defaults to `sale`, `customer` and `metadata` to empty. A key Till
    /// does not know is an error naming it (a misspelt optional field must not be silently dropped).
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        merchantReference = try c.decode(String.self, forKey: .merchantReference)
        amount = try c.decode(Money.self, forKey: .amount)
        country = try c.decodeIfPresent(CountryCode.self, forKey: .country)
        method = try c.decode(PaymentMethod.self, forKey: .method)
        action = try c.decodeIfPresent(PaymentAction.self, forKey: .action) ?? .sale
        customer = try c.decodeIfPresent(Customer.self, forKey: .customer) ?? Customer()
        description = try c.decodeIfPresent(String.self, forKey: .description)
        cardIIN = try c.decodeIfPresent(String.self, forKey: .cardIIN)
        metadata = try c.decodeIfPresent([String: String].self, forKey: .metadata) ?? [:]
    }

    /// Limits that apply to every intent, whatever the gateway.
    public static let maxReferenceLength = 64
    public static let maxMetadataEntries = 50
    public static let maxMetadataValueLength = 500

    /// Checks the intent on its own and returns every problem found, each with its field path.
    ///
    /// Gateway modules apply their own stricter limits on top of these.
    public func validate(path: String = "intent") -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        issues += Validators.reference(merchantReference, field: "\(path).merchantReference",
                                       maxLength: Self.maxReferenceLength)
        if action == .verify {
            if amount.minorUnits != 0 {
                issues.append(.init(field: "\(path).amount", code: .invalidAmount,
                                    message: "a verify payment must have a zero amount"))
            }
        } else if !amount.isPositive {
            issues.append(.init(field: "\(path).amount", code: .invalidAmount, message: "amount must be greater than zero"))
        }
        if let iin = cardIIN, !(6...8).contains(iin.count) || !iin.allSatisfy(\.isASCIIDigit) {
            issues.append(.init(field: "\(path).cardIIN", code: .invalidField,
                                message: "card IIN must be 6 to 8 digits (never the full card number)"))
        }
        if let email = customer.email {
            issues += Validators.email(email, field: "\(path).customer.email")
        }
        // The customer's IP address goes to gateways as a checked value (PayFort's `customer_ip`): an IPv4 or IPv6
        // address, never free text. The locale is a language tag (`en`, `ar-SA`, `zh_Hans_CN`).
        if let ip = customer.ipAddress, !Self.isIPAddress(ip) {
            issues.append(.init(field: "\(path).customer.ipAddress", code: .invalidField, message: "an IPv4 or IPv6 address"))
        }
        if let locale = customer.locale,
           !(1...35).contains(locale.count) || !locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            issues.append(.init(field: "\(path).customer.locale", code: .invalidField,
                                message: "a language tag of at most 35 letters, digits, - and _ (en, ar-SA)"))
        }
        if metadata.count > Self.maxMetadataEntries {
            issues.append(.init(field: "\(path).metadata", code: .fieldTooLong,
                                message: "at most \(Self.maxMetadataEntries) metadata entries"))
        }
        for key in metadata.keys.sorted() where metadata[key]!.unicodeScalars.count > Self.maxMetadataValueLength {
            issues.append(.init(field: "\(path).metadata.\(key)", code: .fieldTooLong,
                                message: "at most \(Self.maxMetadataValueLength) characters"))
        }
        return issues
    }

    /// Whether `text` is an IPv4 address (four decimal octets) or an IPv6 address (RFC 4291's text forms, an embedded
    /// IPv4 allowed), at most 45 characters: what the system's own `inet_pton` reads, so `:::` or `1:2:3` is not one.
    package static func isIPAddress(_ text: String) -> Bool {
        // Printable ASCII only: the C string inet_pton reads would end at a NUL, and take what came before it.
        guard (2...45).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return false }
        if text.contains(":") {
            var address = in6_addr()
            return inet_pton(AF_INET6, text, &address) == 1
        }
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    /// Throws the first problem ``validate(path:)`` finds, as a ``CheckoutError``.
    public func validated(path: String = "intent") throws(CheckoutError) -> PaymentIntent {
        if let first = validate(path: path).first { throw first.error }
        return self
    }
}

extension Character {
    package var isASCIIDigit: Bool { isASCII && isNumber }
}
