import Foundation

// The Client API's other answers, and its error body. Keys from the Swift client SDK 7.0.0:
// `Models/IINDetails/{IINDetailsResponse,IINDetail}.swift`, `Models/PublicKey/PublicKeyResponse.swift`,
// `Models/PaymentProductNetworks/PaymentProductNetworks.swift`, `Models/DirectoryEntries/*.swift`,
// `Models/ConvertAmount/ConvertedAmount.swift`, `Models/PrivacyPolicy/PrivacyPolicyResponse.swift`,
// `Models/ThirdPartyStatus/*.swift`, `API errors/{ApiErrorResponse,ApiErrorItem}.swift`.

/// One brand of a co-branded card in an IIN answer.
public struct WorldlineIINCoBrand: Sendable, Hashable, Codable {
    public var paymentProductId: Int
    /// Absent reads as `false`, as in the Swift SDK's `IINDetail`.
    public var isAllowedInContext: Bool?

    /// A co-brand from its parts.
    public init(paymentProductId: Int, isAllowedInContext: Bool? = nil) {
        self.paymentProductId = paymentProductId
        self.isAllowedInContext = isAllowedInContext
    }
}

/// `POST /services/getIINdetails`: the product the card's first digits belong to. Every key may be
/// absent (a 404 answer carries none of them); see ``WorldlineIINStatus`` for how it is read.
public struct WorldlineIINDetailsResponse: Sendable, Hashable, Codable {
    public var paymentProductId: Int?
    public var countryCode: String?
    public var isAllowedInContext: Bool?
    /// Every brand of a co-branded card, the top-level one included; empty or absent for one brand.
    public var coBrands: [WorldlineIINCoBrand]?

    /// An answer from its parts.
    public init(paymentProductId: Int? = nil, countryCode: String? = nil, isAllowedInContext: Bool? = nil,
                coBrands: [WorldlineIINCoBrand]? = nil) {
        self.paymentProductId = paymentProductId
        self.countryCode = countryCode
        self.isAllowedInContext = isAllowedInContext
        self.coBrands = coBrands
    }
}

/// `GET /crypto/publickey` as sent (see ``WorldlineClientAPI/publicKey()`` for the checked key).
public struct WorldlinePublicKeyResponse: Sendable, Hashable, Codable {
    public var keyId: String
    /// Standard Base64 of a DER SubjectPublicKeyInfo.
    public var publicKey: String

    /// A response from its parts.
    public init(keyId: String, publicKey: String) {
        self.keyId = keyId
        self.publicKey = publicKey
    }
}

/// `GET /products/{id}/networks`: the card networks of a wallet product (`["Visa", "MasterCard"]`).
public struct WorldlineNetworks: Sendable, Hashable, Codable {
    public var networks: [String]

    /// A list from its networks.
    public init(networks: [String]) { self.networks = networks }

    private enum CodingKeys: String, CodingKey { case networks }

    /// Decodes, taking an absent list as empty.
    public init(from decoder: any Decoder) throws {
        networks = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([String].self, forKey: .networks) ?? []
    }
}

/// One issuer of a product's directory (an iDEAL bank).
public struct WorldlineDirectoryEntry: Sendable, Hashable, Codable {
    public var issuerId: String
    /// `short` (the common issuers) or `long`.
    public var issuerList: String
    public var issuerName: String
    public var countryNames: [String]

    /// An entry from its parts.
    public init(issuerId: String, issuerList: String, issuerName: String, countryNames: [String] = []) {
        self.issuerId = issuerId
        self.issuerList = issuerList
        self.issuerName = issuerName
        self.countryNames = countryNames
    }

    private enum CodingKeys: String, CodingKey { case issuerId, issuerList, issuerName, countryNames }

    /// Decodes, taking absent country names as none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(issuerId: try c.decode(String.self, forKey: .issuerId),
                  issuerList: try c.decode(String.self, forKey: .issuerList),
                  issuerName: try c.decode(String.self, forKey: .issuerName),
                  countryNames: try c.decodeIfPresent([String].self, forKey: .countryNames) ?? [])
    }
}

/// `GET /products/{id}/directory`: `{entries: […]}`.
public struct WorldlineDirectory: Sendable, Hashable, Codable {
    public var entries: [WorldlineDirectoryEntry]

    /// A directory from its entries.
    public init(entries: [WorldlineDirectoryEntry]) { self.entries = entries }

    private enum CodingKeys: String, CodingKey { case entries }

    /// Decodes, taking an absent list as empty.
    public init(from decoder: any Decoder) throws {
        entries = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([WorldlineDirectoryEntry].self, forKey: .entries) ?? []
    }
}

/// `GET /services/convert/amount`: the converted amount, in hundredths of the target currency (``WorldlineAmount``).
public struct WorldlineConvertedAmount: Sendable, Hashable, Codable {
    public var convertedAmount: Int

    /// An answer from its amount.
    public init(convertedAmount: Int) { self.convertedAmount = convertedAmount }
}

/// `GET /services/privacypolicy`: the policy as HTML.
public struct WorldlinePrivacyPolicy: Sendable, Hashable, Codable {
    public var htmlContent: String?

    /// A policy from its HTML.
    public init(htmlContent: String?) { self.htmlContent = htmlContent }
}

/// A third party's progress on a payment: `WAITING`, `INITIALIZED`, `AUTHORIZED`, `COMPLETED`. Open.
public struct WorldlineThirdPartyStatus: WorldlineOpenValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let waiting: Self = "WAITING"
    public static let initialized: Self = "INITIALIZED"
    public static let authorized: Self = "AUTHORIZED"
    public static let completed: Self = "COMPLETED"
}

/// `GET /payments/{paymentId}/thirdpartystatus`.
public struct WorldlineThirdPartyStatusResponse: Sendable, Hashable, Codable {
    public var thirdPartyStatus: WorldlineThirdPartyStatus

    /// An answer from its status.
    public init(thirdPartyStatus: WorldlineThirdPartyStatus) { self.thirdPartyStatus = thirdPartyStatus }
}

/// One error of the Client API's error body.
public struct WorldlineAPIError: Sendable, Hashable, Codable {
    /// The gateway's error code (`"1007"`).
    public var code: String
    public var message: String
    public var httpStatusCode: Int
    public var category: String?
    public var id: String?
    /// The request property at fault (`"productId"`).
    public var propertyName: String?
    public var requestId: String?

    /// An error from its parts.
    public init(code: String, message: String, httpStatusCode: Int, category: String? = nil, id: String? = nil,
                propertyName: String? = nil, requestId: String? = nil) {
        self.code = code
        self.message = message
        self.httpStatusCode = httpStatusCode
        self.category = category
        self.id = id
        self.propertyName = propertyName
        self.requestId = requestId
    }
}

/// The Client API's error body: `{errorId, errors: […]}`.
public struct WorldlineAPIErrorResponse: Sendable, Hashable, Codable {
    public var errorId: String
    public var errors: [WorldlineAPIError]

    /// A body from its parts.
    public init(errorId: String, errors: [WorldlineAPIError]) {
        self.errorId = errorId
        self.errors = errors
    }
}
