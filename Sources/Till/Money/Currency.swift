/// An ISO 4217 currency: its alphabetic code, numeric code and number of minor units.
///
/// Two currencies are equal when their codes are equal. Build one with ``Currency/init(code:)``,
/// which accepts only active ISO 4217 codes that have a defined number of minor units; the full
/// table is ``Currency/allISO``.
///
/// ```swift
/// let usd = try Currency(code: "USD")   // minorUnits == 2
/// let kwd = try Currency(code: "KWD")   // minorUnits == 3
/// ```
public struct Currency: Hashable, Sendable, CustomStringConvertible {
    /// The three-letter alphabetic code, upper case (`"USD"`).
    public let code: String
    /// The three-digit numeric code (`840` for USD).
    public let numeric: Int
    /// The number of digits after the decimal separator (JPY 0, USD 2, KWD 3, CLF 4).
    public let minorUnits: Int
    /// The English name from the ISO table.
    public let name: String

    /// Table constructor used by the generated ISO list; it does not validate.
    init(code: String, numeric: Int, minorUnits: Int, name: String) {
        self.code = code
        self.numeric = numeric
        self.minorUnits = minorUnits
        self.name = name
    }

    /// Looks up an active ISO 4217 currency by its alphabetic code.
    ///
    /// The code must be exactly three upper-case letters; lower case is rejected rather than
    /// silently fixed, so a typo in a configuration file is reported where it was made.
    /// - Throws: ``CheckoutError`` with code ``CheckoutError/Code/invalidCurrency`` naming `field`.
    public init(code: String, field: String = "currency") throws(CheckoutError) {
        guard let found = Currency.byCode[code] else {
            let reason: String
            if Currency.isoCodesWithoutMinorUnits[code] != nil {
                reason = "\(code) has no minor units in ISO 4217 and cannot hold an amount"
            } else {
                reason = "unknown currency \"\(CheckoutError.printable(code))\""
            }
            throw CheckoutError(.invalidCurrency, field: field, message: reason)
        }
        self = found
    }

    /// Looks up a currency by its three-digit ISO numeric code (`"840"` or `840`).
    public static func withNumericCode(_ numeric: Int) -> Currency? {
        byNumeric[numeric]
    }

    /// Looks up a currency by code without throwing.
    public static func lookup(_ code: String) -> Currency? {
        byCode[code]
    }

    public var description: String { code }

    public static func == (lhs: Currency, rhs: Currency) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// 10^minorUnits, the number of minor units in one major unit.
    public var minorUnitScale: Int64 {
        var scale: Int64 = 1
        for _ in 0..<minorUnits { scale *= 10 }
        return scale
    }

    private static let byCode: [String: Currency] = Dictionary(
        uniqueKeysWithValues: allISO.map { ($0.code, $0) })
    private static let byNumeric: [Int: Currency] = Dictionary(
        uniqueKeysWithValues: allISO.map { ($0.numeric, $0) })
}

extension Currency: Codable {
    /// A currency encodes as its alphabetic code.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    /// Decodes an alphabetic code; an unknown code is a `DecodingError.dataCorrupted` whose
    /// underlying error is the ``CheckoutError`` naming the coding path.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let code = try container.decode(String.self)
        do {
            self = try Currency(code: code, field: decoder.codingPath.fieldPath)
        } catch {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: error.message, underlyingError: error))
        }
    }
}

extension Array where Element == any CodingKey {
    /// `a.b[2].c`, the path notation Till uses in every error that names a field.
    package var fieldPath: String {
        var out = ""
        for key in self {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                out += out.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return out.isEmpty ? "value" : out
    }
}
