import Foundation

// The Client API's payment product and product group answers (`GET /products`, `/products/{id}`,
// `/productgroups`, `/productgroups/{id}`).
//
// Keys follow the Swift client SDK's decoders (connect-sdk-client-swift 7.0.0,
// `WorldlineConnectKit/Models/PaymentProduct/*.swift`, `Models/PaymentProductGroup/*.swift`,
// `Models/AccountOnFile/*.swift`); `canBeIframed` and `isJavaScriptRequired` come from the JavaScript
// SDK's type (connect-sdk-client-js 6.0.5, `src/types/payment-product.ts`).
//
// Decoding rules, the same for every wire type of this module: a key the gateway adds is ignored; a
// key that is absent takes the default the Swift SDK gives it (`false`, an empty list, `nil`); a key
// that is present with the wrong type is an error naming its path. (The Swift SDK swallows a wrong
// type with `try?` and uses the default; a typed error is safer than silently reading `false`.)

/// A payment product or group's `displayHints`: where it goes in a list, its label and logo.
public struct WorldlineDisplayHints: Sendable, Hashable, Codable {
    /// Lower first.
    public var displayOrder: Int?
    /// The label in the locale the API was called with.
    public var label: String?
    /// The logo's path, relative to the session's asset URL (see ``WorldlineAssets/url(forPath:assetURL:)``).
    public var logo: String?

    /// Hints from their parts.
    public init(displayOrder: Int? = nil, label: String? = nil, logo: String? = nil) {
        self.displayOrder = displayOrder
        self.label = label
        self.logo = logo
    }
}

/// `authenticationIndicator` of a product: a name and value the gateway echoes.
public struct WorldlineAuthenticationIndicator: Sendable, Hashable, Codable {
    public var name: String
    public var value: String

    /// An indicator from its parts.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// `paymentProduct302SpecificData` (Apple Pay): the networks it accepts.
public struct WorldlineProduct302Data: Sendable, Hashable, Codable {
    public var networks: [String]

    /// Data from its parts.
    public init(networks: [String] = []) { self.networks = networks }

    private enum CodingKeys: String, CodingKey { case networks }

    /// Decodes, taking an absent `networks` as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        networks = try c.decodeIfPresent([String].self, forKey: .networks) ?? []
    }
}

/// `paymentProduct320SpecificData` (Google Pay): its gateway name and networks.
public struct WorldlineProduct320Data: Sendable, Hashable, Codable {
    public var gateway: String
    public var networks: [String]

    /// Data from its parts.
    public init(gateway: String = "", networks: [String] = []) {
        self.gateway = gateway
        self.networks = networks
    }

    private enum CodingKeys: String, CodingKey { case gateway, networks }

    /// Decodes, taking absent keys as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        gateway = try c.decodeIfPresent(String.self, forKey: .gateway) ?? ""
        networks = try c.decodeIfPresent([String].self, forKey: .networks) ?? []
    }
}

/// `paymentProduct863SpecificData` (WeChat Pay): its integration types.
public struct WorldlineProduct863Data: Sendable, Hashable, Codable {
    public var integrationTypes: [String]

    /// Data from its parts.
    public init(integrationTypes: [String] = []) { self.integrationTypes = integrationTypes }

    private enum CodingKeys: String, CodingKey { case integrationTypes }

    /// Decodes, taking an absent list as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        integrationTypes = try c.decodeIfPresent([String].self, forKey: .integrationTypes) ?? []
    }
}

/// A payment product as `GET /products` lists it (`hide=fields`): no fields.
public struct WorldlineBasicPaymentProduct: Sendable, Hashable, Codable, Identifiable {
    /// The product id (`1` is Visa); an integer on the wire.
    public var id: Int
    public var displayHints: WorldlineDisplayHints
    /// The customer's stored accounts for this product.
    public var accountsOnFile: [WorldlineAccountOnFile]
    public var acquirerCountry: String?
    public var allowsTokenization: Bool
    public var allowsRecurring: Bool
    public var autoTokenized: Bool
    public var allowsInstallments: Bool
    public var authenticationIndicator: WorldlineAuthenticationIndicator?
    public var deviceFingerprintEnabled: Bool
    /// The smallest amount the product takes, in hundredths of the currency whatever its decimals ("in cents
    /// (using 2 decimals, so 1 EUR becomes 100 cents)", `payment_product.py`; ``WorldlineAmount`` reads it).
    public var minAmount: Int?
    /// The largest amount the product takes, in hundredths of the currency (as ``minAmount``).
    public var maxAmount: Int?
    /// `card`, `redirect`, `mobile`, … (absent in some of the vendor's own samples).
    public var paymentMethod: String?
    public var mobileIntegrationLevel: String?
    public var usesRedirectionTo3rdParty: Bool
    /// The group this product belongs to (`"cards"`), if any.
    public var paymentProductGroup: String?
    public var supportsMandates: Bool
    public var paymentProduct302SpecificData: WorldlineProduct302Data?
    public var paymentProduct320SpecificData: WorldlineProduct320Data?
    public var paymentProduct863SpecificData: WorldlineProduct863Data?
    /// JavaScript SDK only: whether the product's pages may run in an iframe.
    public var canBeIframed: Bool?
    /// JavaScript SDK only: whether the product's pages need JavaScript.
    public var isJavaScriptRequired: Bool?

    /// A product from its parts; everything but `id` and `displayHints` defaults as an absent key does.
    public init(id: Int, displayHints: WorldlineDisplayHints, accountsOnFile: [WorldlineAccountOnFile] = [],
                acquirerCountry: String? = nil, allowsTokenization: Bool = false, allowsRecurring: Bool = false,
                autoTokenized: Bool = false, allowsInstallments: Bool = false,
                authenticationIndicator: WorldlineAuthenticationIndicator? = nil, deviceFingerprintEnabled: Bool = false,
                minAmount: Int? = nil, maxAmount: Int? = nil, paymentMethod: String? = nil,
                mobileIntegrationLevel: String? = nil, usesRedirectionTo3rdParty: Bool = false,
                paymentProductGroup: String? = nil, supportsMandates: Bool = false,
                paymentProduct302SpecificData: WorldlineProduct302Data? = nil,
                paymentProduct320SpecificData: WorldlineProduct320Data? = nil,
                paymentProduct863SpecificData: WorldlineProduct863Data? = nil,
                canBeIframed: Bool? = nil, isJavaScriptRequired: Bool? = nil) {
        self.id = id
        self.displayHints = displayHints
        self.accountsOnFile = accountsOnFile
        self.acquirerCountry = acquirerCountry
        self.allowsTokenization = allowsTokenization
        self.allowsRecurring = allowsRecurring
        self.autoTokenized = autoTokenized
        self.allowsInstallments = allowsInstallments
        self.authenticationIndicator = authenticationIndicator
        self.deviceFingerprintEnabled = deviceFingerprintEnabled
        self.minAmount = minAmount
        self.maxAmount = maxAmount
        self.paymentMethod = paymentMethod
        self.mobileIntegrationLevel = mobileIntegrationLevel
        self.usesRedirectionTo3rdParty = usesRedirectionTo3rdParty
        self.paymentProductGroup = paymentProductGroup
        self.supportsMandates = supportsMandates
        self.paymentProduct302SpecificData = paymentProduct302SpecificData
        self.paymentProduct320SpecificData = paymentProduct320SpecificData
        self.paymentProduct863SpecificData = paymentProduct863SpecificData
        self.canBeIframed = canBeIframed
        self.isJavaScriptRequired = isJavaScriptRequired
    }

    private enum CodingKeys: String, CodingKey {
        case id, displayHints, accountsOnFile, acquirerCountry, allowsTokenization, allowsRecurring, autoTokenized,
             allowsInstallments, authenticationIndicator, deviceFingerprintEnabled, minAmount, maxAmount, paymentMethod,
             mobileIntegrationLevel, usesRedirectionTo3rdParty, paymentProductGroup, supportsMandates,
             paymentProduct302SpecificData, paymentProduct320SpecificData, paymentProduct863SpecificData,
             canBeIframed, isJavaScriptRequired
    }

    /// Decodes with the defaults of an absent key; `id` must be an integer.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decode(Int.self, forKey: .id),
            displayHints: try c.decode(WorldlineDisplayHints.self, forKey: .displayHints),
            accountsOnFile: try c.decodeIfPresent([WorldlineAccountOnFile].self, forKey: .accountsOnFile) ?? [],
            acquirerCountry: try c.decodeIfPresent(String.self, forKey: .acquirerCountry),
            allowsTokenization: try c.decodeIfPresent(Bool.self, forKey: .allowsTokenization) ?? false,
            allowsRecurring: try c.decodeIfPresent(Bool.self, forKey: .allowsRecurring) ?? false,
            autoTokenized: try c.decodeIfPresent(Bool.self, forKey: .autoTokenized) ?? false,
            allowsInstallments: try c.decodeIfPresent(Bool.self, forKey: .allowsInstallments) ?? false,
            authenticationIndicator: try c.decodeIfPresent(WorldlineAuthenticationIndicator.self, forKey: .authenticationIndicator),
            deviceFingerprintEnabled: try c.decodeIfPresent(Bool.self, forKey: .deviceFingerprintEnabled) ?? false,
            minAmount: try c.decodeIfPresent(Int.self, forKey: .minAmount),
            maxAmount: try c.decodeIfPresent(Int.self, forKey: .maxAmount),
            paymentMethod: try c.decodeIfPresent(String.self, forKey: .paymentMethod),
            mobileIntegrationLevel: try c.decodeIfPresent(String.self, forKey: .mobileIntegrationLevel),
            usesRedirectionTo3rdParty: try c.decodeIfPresent(Bool.self, forKey: .usesRedirectionTo3rdParty) ?? false,
            paymentProductGroup: try c.decodeIfPresent(String.self, forKey: .paymentProductGroup),
            supportsMandates: try c.decodeIfPresent(Bool.self, forKey: .supportsMandates) ?? false,
            paymentProduct302SpecificData: try c.decodeIfPresent(WorldlineProduct302Data.self, forKey: .paymentProduct302SpecificData),
            paymentProduct320SpecificData: try c.decodeIfPresent(WorldlineProduct320Data.self, forKey: .paymentProduct320SpecificData),
            paymentProduct863SpecificData: try c.decodeIfPresent(WorldlineProduct863Data.self, forKey: .paymentProduct863SpecificData),
            canBeIframed: try c.decodeIfPresent(Bool.self, forKey: .canBeIframed),
            isJavaScriptRequired: try c.decodeIfPresent(Bool.self, forKey: .isJavaScriptRequired))
    }

    /// The account on file with `id`, if this product has it.
    public func accountOnFile(id: Int) -> WorldlineAccountOnFile? {
        accountsOnFile.first { $0.id == id }
    }
}

/// A payment product with its fields (`GET /products/{id}`): everything of
/// ``WorldlineBasicPaymentProduct`` (reachable directly, `product.id`), plus `fields` and `fieldsWarning`.
@dynamicMemberLookup
public struct WorldlinePaymentProduct: Sendable, Hashable, Codable, Identifiable {
    /// The product's basic part.
    public var basic: WorldlineBasicPaymentProduct
    /// The fields the customer fills in, as listed (see ``fieldsInDisplayOrder``).
    public var fields: [WorldlinePaymentProductField]
    /// A warning the gateway adds when it left fields out.
    public var fieldsWarning: String?

    /// A product from its parts.
    public init(basic: WorldlineBasicPaymentProduct, fields: [WorldlinePaymentProductField], fieldsWarning: String? = nil) {
        self.basic = basic
        self.fields = fields
        self.fieldsWarning = fieldsWarning
    }

    /// The product id.
    public var id: Int { basic.id }

    /// The basic product's properties, read through (`product.displayHints.label`).
    public subscript<Value>(dynamicMember keyPath: KeyPath<WorldlineBasicPaymentProduct, Value>) -> Value {
        basic[keyPath: keyPath]
    }

    /// The field with `id`.
    public func field(id: String) -> WorldlinePaymentProductField? { fields.first { $0.id == id } }

    /// The fields ordered by `displayHints.displayOrder` (fields without one last), ties as listed.
    public var fieldsInDisplayOrder: [WorldlinePaymentProductField] { WorldlinePaymentProductField.displayOrdered(fields) }

    private enum CodingKeys: String, CodingKey { case fields, fieldsWarning }

    /// Decodes the basic part and the fields from one object.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(basic: try WorldlineBasicPaymentProduct(from: decoder),
                  fields: try c.decodeIfPresent([WorldlinePaymentProductField].self, forKey: .fields) ?? [],
                  fieldsWarning: try c.decodeIfPresent(String.self, forKey: .fieldsWarning))
    }

    /// Encodes the basic part and the fields into one object.
    public func encode(to encoder: any Encoder) throws {
        try basic.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(fields, forKey: .fields)
        try c.encodeIfPresent(fieldsWarning, forKey: .fieldsWarning)
    }
}

/// `GET /products`: `{paymentProducts: […]}`.
public struct WorldlinePaymentProducts: Sendable, Hashable, Codable {
    public var paymentProducts: [WorldlineBasicPaymentProduct]

    /// A list from its products.
    public init(paymentProducts: [WorldlineBasicPaymentProduct]) { self.paymentProducts = paymentProducts }

    private enum CodingKeys: String, CodingKey { case paymentProducts }

    /// Decodes, taking an absent list as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        paymentProducts = try c.decodeIfPresent([WorldlineBasicPaymentProduct].self, forKey: .paymentProducts) ?? []
    }
}

/// A payment product group as `GET /productgroups` lists it (`"cards"`).
public struct WorldlineBasicPaymentProductGroup: Sendable, Hashable, Codable, Identifiable {
    /// The group id, a string on the wire (`"cards"`).
    public var id: String
    public var displayHints: WorldlineDisplayHints
    public var accountsOnFile: [WorldlineAccountOnFile]
    public var acquirerCountry: String?
    public var deviceFingerprintEnabled: Bool
    public var allowsInstallments: Bool

    /// A group from its parts.
    public init(id: String, displayHints: WorldlineDisplayHints, accountsOnFile: [WorldlineAccountOnFile] = [],
                acquirerCountry: String? = nil, deviceFingerprintEnabled: Bool = false, allowsInstallments: Bool = false) {
        self.id = id
        self.displayHints = displayHints
        self.accountsOnFile = accountsOnFile
        self.acquirerCountry = acquirerCountry
        self.deviceFingerprintEnabled = deviceFingerprintEnabled
        self.allowsInstallments = allowsInstallments
    }

    private enum CodingKeys: String, CodingKey {
        case id, displayHints, accountsOnFile, acquirerCountry, deviceFingerprintEnabled, allowsInstallments
    }

    /// Decodes with the defaults of an absent key; `id` must be a string.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(String.self, forKey: .id),
                  displayHints: try c.decode(WorldlineDisplayHints.self, forKey: .displayHints),
                  accountsOnFile: try c.decodeIfPresent([WorldlineAccountOnFile].self, forKey: .accountsOnFile) ?? [],
                  acquirerCountry: try c.decodeIfPresent(String.self, forKey: .acquirerCountry),
                  deviceFingerprintEnabled: try c.decodeIfPresent(Bool.self, forKey: .deviceFingerprintEnabled) ?? false,
                  allowsInstallments: try c.decodeIfPresent(Bool.self, forKey: .allowsInstallments) ?? false)
    }
}

/// A payment product group with its fields (`GET /productgroups/{id}`): the fields common to its
/// products (the card number first), until the IIN lookup names the product.
@dynamicMemberLookup
public struct WorldlinePaymentProductGroup: Sendable, Hashable, Codable, Identifiable {
    /// The group's basic part.
    public var basic: WorldlineBasicPaymentProductGroup
    /// The fields, as listed.
    public var fields: [WorldlinePaymentProductField]

    /// A group from its parts.
    public init(basic: WorldlineBasicPaymentProductGroup, fields: [WorldlinePaymentProductField]) {
        self.basic = basic
        self.fields = fields
    }

    /// The group id.
    public var id: String { basic.id }

    /// The basic group's properties, read through.
    public subscript<Value>(dynamicMember keyPath: KeyPath<WorldlineBasicPaymentProductGroup, Value>) -> Value {
        basic[keyPath: keyPath]
    }

    private enum CodingKeys: String, CodingKey { case fields }

    /// Decodes the basic part and the fields from one object.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(basic: try WorldlineBasicPaymentProductGroup(from: decoder),
                  fields: try c.decodeIfPresent([WorldlinePaymentProductField].self, forKey: .fields) ?? [])
    }

    /// Encodes the basic part and the fields into one object.
    public func encode(to encoder: any Encoder) throws {
        try basic.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(fields, forKey: .fields)
    }
}

/// `GET /productgroups`: `{paymentProductGroups: […]}`.
public struct WorldlinePaymentProductGroups: Sendable, Hashable, Codable {
    public var paymentProductGroups: [WorldlineBasicPaymentProductGroup]

    /// A list from its groups.
    public init(paymentProductGroups: [WorldlineBasicPaymentProductGroup]) { self.paymentProductGroups = paymentProductGroups }

    private enum CodingKeys: String, CodingKey { case paymentProductGroups }

    /// Decodes, taking an absent list as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        paymentProductGroups = try c.decodeIfPresent([WorldlineBasicPaymentProductGroup].self, forKey: .paymentProductGroups) ?? []
    }
}
