import TillGatewayKit

/// The string ecommpay signs, from a JSON object, as the GitHub master of its Python SDK builds it
/// (`paymentpage-sdk-python` `signature_handler.py`; the PHP, JS, Go and Java SDKs agree on the 27
/// official vectors, and differ in the corners listed in the gateway page).
///
/// 1. Every leaf becomes `path:value`. A nested key joins its parent's path with `:`; a literal `:` in a
///    key is written `::`; a list's items are keyed by their index; `frame_mode` is skipped at every level;
///    an empty list or object adds nothing.
/// 2. Values: `true` → `1`, `false` → `0`, `null` → empty, a number as its text, a string as is (never
///    escaped: a `;` inside a value stays).
/// 3. Sorted by path in code-point order, joined with `;`.
///
/// The PyPI release 1.0.6 differs from master in two ways Till does not follow: it renders `null` as
/// `None`, and it does not escape `:` in keys.
public enum EcommpaySignatureString {
    /// The keys skipped at every level (`IGNORE_KEYS`).
    public static let ignoredKeys: Set<String> = ["frame_mode"]

    /// The `path:value` leaves of `object`, sorted by path.
    public static func leaves(of object: OrderedJSON) -> [(path: String, value: String)] {
        var out: [(String, String)] = []
        collect(object, prefix: "", into: &out)
        return out.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
    }

    /// The string to sign: the sorted leaves joined with `;`.
    public static func string(of object: OrderedJSON) -> String {
        leaves(of: object).map { "\($0.path):\($0.value)" }.joined(separator: ";")
    }

    private static func collect(_ value: OrderedJSON, prefix: String, into out: inout [(String, String)]) {
        switch value {
        case .object(let members):
            for member in members where !ignoredKeys.contains(member.key) {
                let key = member.key.replacingOccurrences(of: ":", with: "::")
                collect(member.value, prefix: prefix.isEmpty ? key : "\(prefix):\(key)", into: &out)
            }
        case .array(let items):
            for (index, item) in items.enumerated() {
                collect(item, prefix: prefix.isEmpty ? String(index) : "\(prefix):\(index)", into: &out)
            }
        case .string(let text): out.append((prefix, text))
        case .number(let text): out.append((prefix, text))
        case .bool(let flag): out.append((prefix, flag ? "1" : "0"))
        case .null: out.append((prefix, ""))
        }
    }
}
