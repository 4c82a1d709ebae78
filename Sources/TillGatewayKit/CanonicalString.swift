/// Builds the strings gateways sign: `key=value` pairs joined in a given order with given
/// separators.
///
/// ```swift
/// let pairs = CanonicalString(pairs: [("merchant_identifier", "abc"), ("amount", "1000")])
/// pairs.render(order: .sortedByKey, pairSeparator: "", keyValueSeparator: "=")   // PayFort
/// pairs.render(order: .sortedByKey, pairSeparator: "&", keyValueSeparator: "=",
///              omitEmptyValues: true, excluding: ["signature"])                    // iPayNow
/// pairs.render(pairSeparator: ";", keyValueSeparator: ":")                         // ecommpay
/// ```
///
/// Keys and values are written as they are: nothing is encoded or trimmed.
public struct CanonicalString: Sendable {
    /// The pairs, in the order given.
    public let pairs: [FormPair]

    /// The order pairs are written in.
    public enum Order: Sendable, Hashable {
        /// The order the pairs were given in.
        case asGiven
        /// By key, in Unicode code point order (the byte order of the keys' UTF-8, so `Z` before `a`
        /// and `a` before `é`, whatever the locale). Pairs with the same key keep their given order.
        case sortedByKey
    }

    /// A builder over `(key, value)` pairs.
    public init(pairs: [(String, String)]) {
        self.pairs = pairs.map { FormPair(name: $0.0, value: $0.1) }
    }

    /// A builder over the fields of a form, in their order.
    public init(fields: FormFields) {
        self.pairs = fields.pairs
    }

    /// The string to sign.
    /// - Parameters:
    ///   - order: the order of the pairs.
    ///   - pairSeparator: written between two pairs (`""`, `"&"`, `";"`).
    ///   - keyValueSeparator: written between a key and its value (`"="`, `":"`).
    ///   - omitEmptyValues: leave out pairs whose value is the empty string.
    ///   - excluding: keys left out (the signature field itself).
    public func render(order: Order = .asGiven, pairSeparator: String, keyValueSeparator: String,
                       omitEmptyValues: Bool = false, excluding: Set<String> = []) -> String {
        var chosen = pairs.enumerated().filter { _, pair in
            !(omitEmptyValues && pair.value.isEmpty) && !excluding.contains(pair.name)
        }
        if order == .sortedByKey {
            chosen.sort { left, right in
                if left.element.name.utf8.elementsEqual(right.element.name.utf8) { return left.offset < right.offset }
                return left.element.name.utf8.lexicographicallyPrecedes(right.element.name.utf8)
            }
        }
        return chosen.map { $0.element.name + keyValueSeparator + $0.element.value }.joined(separator: pairSeparator)
    }
}
