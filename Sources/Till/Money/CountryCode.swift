/// An ISO 3166-1 alpha-2 country code (`"US"`, `"AE"`), validated against the officially assigned list.
public struct CountryCode: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The two upper-case letters.
    public let code: String

    /// Validates `code` against ISO 3166-1 alpha-2.
    /// - Throws: ``CheckoutError`` ``CheckoutError/Code/invalidCountry`` naming `field`.
    public init(_ code: String, field: String = "country") throws(CheckoutError) {
        guard CountryCode.allISOCodes.contains(code) else {
            throw CheckoutError(
                .invalidCountry, field: field,
                message: "unknown country \"\(CheckoutError.printable(code))\" (expected an ISO 3166-1 alpha-2 code such as \"US\")")
        }
        self.code = code
    }

    public var description: String { code }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(raw, field: decoder.codingPath.fieldPath)
        } catch {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: error.message, underlyingError: error))
        }
    }
}
