/// One problem found by a validator: where, what, and why.
public struct ValidationIssue: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The path of the field, as in `merchants[0].routing.rules[2].currency`.
    public var field: String
    public var code: CheckoutError.Code
    public var message: String

    public init(field: String, code: CheckoutError.Code, message: String) {
        self.field = field
        self.code = code
        self.message = message
    }

    /// `field: message`.
    public var description: String { "\(field): \(message)" }

    /// The issue as a throwable error.
    public var error: CheckoutError { CheckoutError(code, field: field, message: message) }
}

/// Pure validators shared by the core and the gateway modules: `(value) -> [ValidationIssue]`.
public enum Validators {
    /// A setting that must lie in `range` (and be a finite number): `field: 0.1 to 60` otherwise.
    public static func range<T: Comparable & Numeric>(_ value: T, _ range: ClosedRange<T>, field: String) -> [ValidationIssue] {
        let finite = (value as? Double)?.isFinite ?? true
        return finite && range.contains(value) ? [] : [.init(field: field, code: .invalidField, message: "\(range.lowerBound) to \(range.upperBound)")]
    }

    /// A reference: 1...maxLength characters of `A-Z a-z 0-9 - _ .`.
    public static func reference(_ value: String, field: String, maxLength: Int) -> [ValidationIssue] {
        if value.isEmpty { return [.init(field: field, code: .missingField, message: "must not be empty")] }
        if value.unicodeScalars.count > maxLength {
            return [.init(field: field, code: .fieldTooLong, message: "at most \(maxLength) characters, got \(value.unicodeScalars.count)")]
        }
        let allowed = value.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" || $0 == ".")
        }
        return allowed ? [] : [.init(field: field, code: .invalidField,
                                     message: "only letters, digits, '-', '_' and '.' are allowed")]
    }

    /// A plausible e-mail address: one `@`, a non-empty local part and a dotted domain, at most 254 characters.
    ///
    /// Read as Unicode scalars, as docs/openapi.yaml's pattern reads it: as `Character`s, an `@` followed by a combining
    /// mark or an emoji modifier is one character that is not `@`. No white space and no control character anywhere.
    public static func email(_ value: String, field: String) -> [ValidationIssue] {
        let scalars = Array(value.unicodeScalars)
        let parts = scalars.split(separator: "@", omittingEmptySubsequences: false)
        let ok = scalars.count <= 254 && parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && parts[1].first != "." && parts[1].last != "."
            && !scalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        return ok ? [] : [.init(field: field, code: .invalidField, message: "not a valid e-mail address")]
    }

    /// A string of at most `maxLength` characters, optionally required.
    public static func length(_ value: String?, field: String, maxLength: Int, required: Bool = false) -> [ValidationIssue] {
        guard let value, !value.isEmpty else {
            return required ? [.init(field: field, code: .missingField, message: "is required")] : []
        }
        // Characters are Unicode scalars (code points), as JSON Schema's maxLength counts them: a grapheme cluster
        // (an `a` with 3,000 combining accents is one) would let a value far past the limit through.
        let count = value.unicodeScalars.count
        return count > maxLength
            ? [.init(field: field, code: .fieldTooLong, message: "at most \(maxLength) characters, got \(count)")]
            : []
    }

    /// Every entry of `codes` that is not an active ISO 4217 currency with minor units.
    public static func currencyCodes(_ codes: [String]?, field: String) -> [ValidationIssue] {
        (codes ?? []).enumerated().compactMap { index, code in
            Currency.lookup(code) == nil
                ? .init(field: "\(field)[\(index)]", code: .invalidCurrency, message: "unknown currency \"\(CheckoutError.printable(code))\"")
                : nil
        }
    }

    /// Every entry of `codes` that is not an ISO 3166-1 alpha-2 country code.
    public static func countryCodes(_ codes: [String]?, field: String) -> [ValidationIssue] {
        (codes ?? []).enumerated().compactMap { index, code in
            CountryCode.allISOCodes.contains(code)
                ? nil
                : .init(field: "\(field)[\(index)]", code: .invalidCountry, message: "unknown country \"\(CheckoutError.printable(code))\"")
        }
    }

    /// Whether a string of ASCII digits passes the Luhn check (card numbers).
    public static func isLuhnValid(_ digits: String) -> Bool {
        let values = digits.compactMap { $0.isASCII ? $0.wholeNumberValue.map(UInt8.init) : nil }
        return values.count == digits.count && !values.isEmpty && Redactor.luhnValid(values[...])
    }
}
