/// An amount of money: an integer count of the currency's minor units.
///
/// There is no floating point anywhere in Till's money path. Amounts are parsed from and formatted
/// to decimal strings exactly; a string with more fraction digits than the currency has minor units
/// is an error, never a rounding.
///
/// ```swift
/// let price = try Money(decimal: "10.5", currency: try Currency(code: "USD"))  // 1050 minor units
/// price.decimalString                                                            // "10.50"
/// try Money(decimal: "10.005", currency: usd)                                    // throws .invalidAmount
/// ```
///
/// JSON form: `{"value": 1050, "currency": "USD"}` with `value` in minor units.
public struct Money: Hashable, Sendable, CustomStringConvertible {
    /// The amount in minor units (cents for USD, yen for JPY, fils for KWD).
    public let minorUnits: Int64
    /// The currency the amount is in.
    public let currency: Currency

    /// Creates an amount from minor units.
    public init(minorUnits: Int64, currency: Currency) {
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// Parses a plain decimal string (`"10"`, `"10.5"`, `"-0.05"`, `"1000.250"`) in `currency`.
    ///
    /// Accepted: an optional leading `-`, one or more ASCII digits, and optionally `.` followed by
    /// one to `currency.minorUnits` digits. Rejected with ``CheckoutError/Code/invalidAmount``:
    /// empty strings, grouping separators (`"1,000"`), exponents, spaces, a leading `+` or `.`,
    /// a trailing `.`, more fraction digits than the currency allows, and values that do not fit
    /// in 64-bit minor units.
    /// - Parameter field: the field path named in the error.
    public init(decimal text: String, currency: Currency, field: String = "amount") throws(CheckoutError) {
        func fail(_ why: String) -> CheckoutError {
            CheckoutError(.invalidAmount, field: field,
                          message: "\"\(CheckoutError.printable(text))\" is not a valid \(currency.code) amount: \(why)")
        }
        var bytes = Substring(text).utf8[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        let dot = bytes.firstIndex(of: UInt8(ascii: "."))
        let integerPart = dot.map { bytes[..<$0] } ?? bytes
        let fractionPart = dot.map { bytes[bytes.index(after: $0)...] } ?? bytes[bytes.endIndex...]

        func isDigits(_ s: Substring.UTF8View.SubSequence) -> Bool {
            s.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
        guard !integerPart.isEmpty else { throw fail("expected digits before the decimal point") }
        guard isDigits(integerPart) else { throw fail("only digits and one '.' are allowed") }
        if dot != nil {
            guard !fractionPart.isEmpty else { throw fail("expected digits after the decimal point") }
            guard isDigits(fractionPart) else { throw fail("only digits and one '.' are allowed") }
        }
        guard fractionPart.count <= currency.minorUnits else {
            throw fail(currency.minorUnits == 0
                ? "\(currency.code) has no minor units"
                : "\(currency.code) allows at most \(currency.minorUnits) decimal places")
        }

        var value: Int64 = 0
        func push(_ digit: UInt8) throws(CheckoutError) {
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (added, o2) = shifted.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !o1, !o2 else { throw fail("too large") }
            value = added
        }
        for digit in integerPart { try push(digit) }
        for digit in fractionPart { try push(digit) }
        for _ in fractionPart.count..<currency.minorUnits { try push(UInt8(ascii: "0")) }
        self.init(minorUnits: negative ? -value : value, currency: currency)
    }

    /// Parses `"<decimal> <CODE>"`, for example `"10.50 USD"` or `"1000 JPY"`.
    public init(_ text: String, field: String = "amount") throws(CheckoutError) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw CheckoutError(.invalidAmount, field: field,
                                message: "\"\(CheckoutError.printable(text))\" is not of the form \"10.50 USD\"")
        }
        let currency = try Currency(code: String(parts[1]), field: field)
        try self.init(decimal: String(parts[0]), currency: currency, field: field)
    }

    /// The exact decimal form with exactly `currency.minorUnits` fraction digits: `"10.50"`, `"100"`, `"1.005"`.
    public var decimalString: String {
        let magnitude = minorUnits.magnitude
        let digits = String(magnitude)
        let sign = minorUnits < 0 ? "-" : ""
        let scale = currency.minorUnits
        guard scale > 0 else { return sign + digits }
        let padded = String(repeating: "0", count: max(0, scale + 1 - digits.count)) + digits
        let split = padded.index(padded.endIndex, offsetBy: -scale)
        return sign + padded[..<split] + "." + padded[split...]
    }

    /// `"10.50 USD"`.
    public var description: String { "\(decimalString) \(currency.code)" }

    /// True when the amount is greater than zero.
    public var isPositive: Bool { minorUnits > 0 }

    /// Adds two amounts of the same currency.
    /// - Throws: ``CheckoutError/Code/invalidAmount`` on a currency mismatch or overflow.
    public func adding(_ other: Money) throws(CheckoutError) -> Money {
        guard other.currency == currency else {
            throw CheckoutError(.invalidAmount, field: "amount.currency",
                                message: "cannot add \(other.currency.code) to \(currency.code)")
        }
        let (sum, overflow) = minorUnits.addingReportingOverflow(other.minorUnits)
        guard !overflow else { throw CheckoutError(.invalidAmount, field: "amount", message: "sum is too large") }
        return Money(minorUnits: sum, currency: currency)
    }
}

extension Money: Comparable {
    /// Orders amounts of one currency; amounts in different currencies order by currency code first.
    public static func < (lhs: Money, rhs: Money) -> Bool {
        lhs.currency.code == rhs.currency.code
            ? lhs.minorUnits < rhs.minorUnits
            : lhs.currency.code < rhs.currency.code
    }
}

extension Money: Codable {
    private enum CodingKeys: String, CodingKey, CaseIterable { case value, currency }

    /// Decodes `{"value": <integer minor units>, "currency": "<ISO 4217>"}`. A number that is exactly an
    /// integer is read as that integer however JSON writes it (`1e3` and `1000.0` are 1000, as JSON
    /// numbers denote values, not spellings); a fraction (`10.5`), a number beyond 64 bits, a string or
    /// an unknown key is an error naming `….value` (or the key).
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let currency = try container.decode(Currency.self, forKey: .currency)
        let value: Int64
        do {
            value = try container.decode(Int64.self, forKey: .value)
        } catch {
            // A number that is not a 64-bit integer (a fraction, too large) is named as the amount; anything
            // else (a string, null) keeps its own error.
            _ = try container.decode(Double.self, forKey: .value)
            let path = decoder.codingPath + [CodingKeys.value]
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "not a 64-bit integer",
                underlyingError: CheckoutError(.invalidAmount, field: path.fieldPath,
                                               message: "an integer number of minor units, without a fraction, that fits in 64 bits")))
        }
        self.init(minorUnits: value, currency: currency)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(minorUnits, forKey: .value)
        try container.encode(currency, forKey: .currency)
    }
}
