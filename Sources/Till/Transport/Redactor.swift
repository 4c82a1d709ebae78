import Foundation

/// Removes secrets and card data from anything that may reach a log line.
///
/// - Values of sensitive keys (secrets, passwords, signature phrases, access codes, tokens, CVVs,
///   card numbers) in JSON and form-encoded bodies and in headers become `<redacted>`; card numbers
///   under those keys are shown masked as first 6 / last 4.
/// - Anywhere in free text, a run of 13–19 digits (optionally grouped by single spaces or dashes)
///   that passes the Luhn check is masked to first 6 / last 4.
///
/// A `Redactor` is a plain value; build one with extra keys for a gateway's own field names.
public struct Redactor: Sendable, Hashable {
    /// Key fragments whose values are always removed. Keys are compared lower-cased with `-` and `_`
    /// removed, so `X-Api-Key`, `api_key` and `apiKey` all match `apikey`.
    public let secretKeys: Set<String>
    /// Key fragments whose values are card numbers (masked, not removed).
    public let cardNumberKeys: Set<String>
    /// The free-text patterns for these keys, compiled once.
    private let patterns: Patterns
    /// The same key fragments as bytes, for ``classify(_:)``.
    private let secretFragments: [[UInt8]]
    private let cardNumberFragments: [[UInt8]]

    public init(secretKeys: Set<String> = Redactor.defaultSecretKeys, cardNumberKeys: Set<String> = Redactor.defaultCardNumberKeys) {
        self.secretKeys = Set(secretKeys.map(Self.normalize))
        self.cardNumberKeys = Set(cardNumberKeys.map(Self.normalize))
        patterns = Patterns(fragments: self.secretKeys.union(self.cardNumberKeys))
        secretFragments = self.secretKeys.map { Array($0.utf8) }
        cardNumberFragments = self.cardNumberKeys.map { Array($0.utf8) }
    }

    public static func == (lhs: Redactor, rhs: Redactor) -> Bool {
        lhs.secretKeys == rhs.secretKeys && lhs.cardNumberKeys == rhs.cardNumberKeys
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(secretKeys)
        hasher.combine(cardNumberKeys)
    }

    /// Compiled regular expressions; matching with one `NSRegularExpression` from many threads is safe.
    private final class Patterns: @unchecked Sendable {
        let element: NSRegularExpression?
        let pair: NSRegularExpression?

        init(fragments: Set<String>) {
            // A key is letters, digits, '-' and '_' that contain a fragment once '-' and '_' are ignored;
            // the pattern allows a separator after each letter of the fragment for that reason.
            let loose = fragments.sorted().map { fragment in fragment.map { "\(NSRegularExpression.escapedPattern(for: String($0)))[-_]?" }.joined() }
                .joined(separator: "|")
            let key = "[A-Za-z0-9_-]*(?:\(loose))[A-Za-z0-9_-]*"
            element = try? NSRegularExpression(pattern: "(?i)(<(\(key))[^>]*>)[^<]*(</\\2>)")              // <cvv>123</cvv>
            pair = try? NSRegularExpression(pattern: "(?i)(\"?\(key)\"?\\s*[:=]\\s*\"?)([^\"&\\s,;}<]*)")  // "cvv": "123", cvv=123
        }
    }

    public static let defaultSecretKeys: Set<String> = [
        "secret", "password", "passwd", "phrase", "accesscode", "apikey", "authorization", "cookie", "token",
        "cvv", "cvc", "cvn", "securitycode", "private", "signkey", "signaturekey", "md5key", "hmac", "credential",
    ]
    public static let defaultCardNumberKeys: Set<String> = ["cardnumber", "pan", "cardno", "accountnumber"]

    static func normalize(_ key: String) -> String {
        String(key.lowercased().unicodeScalars.filter { $0 != "-" && $0 != "_" })
    }

    /// Masks a card number to its first 6 and last 4 digits (`411111******1111`). Anything that is not
    /// 13–19 digits is replaced entirely.
    public static func maskPAN(_ pan: String) -> String {
        let digits = pan.filter { $0.isASCII && $0.isNumber }
        guard (13...19).contains(digits.count), digits.count == pan.filter({ !$0.isWhitespace && $0 != "-" }).count else {
            return "<redacted>"
        }
        return String(digits.prefix(6)) + String(repeating: "*", count: digits.count - 10) + String(digits.suffix(4))
    }

    /// Masks every run of digits (optionally grouped by single spaces or dashes) that holds a
    /// Luhn-valid 13–19-digit card number anywhere inside it: the whole run is shown as its first 6
    /// and last 4 digits. Digit runs with no such window (timestamps, order numbers) are left alone.
    ///
    /// - Parameter minimumRunDigits: a run with fewer digits is left alone whatever it holds (a phone number
    ///   has at most 15 digits under E.164, so a phone field masks only runs of 16 and more).
    public static func maskCardNumbers(in text: String, minimumRunDigits: Int = 13) -> String {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        func isDigit(_ s: Unicode.Scalar) -> Bool { ("0"..."9").contains(s) }
        while index < scalars.count {
            guard isDigit(scalars[index]) else {
                out.append(scalars[index]); index += 1; continue
            }
            // Collect a run of digits with single separators between them.
            var end = index
            var digits: [UInt8] = []
            var lastDigitEnd = index
            while end < scalars.count {
                let s = scalars[end]
                if isDigit(s) {
                    digits.append(UInt8(s.value - 48)); end += 1; lastDigitEnd = end
                } else if s == " " || s == "-", end + 1 < scalars.count, isDigit(scalars[end + 1]) {
                    end += 1
                } else { break }
            }
            if digits.count >= max(13, minimumRunDigits), containsCardNumber(digits) {
                let masked = digits.prefix(6).map(String.init).joined()
                    + String(repeating: "*", count: digits.count - 10) + digits.suffix(4).map(String.init).joined()
                out.append(contentsOf: masked.unicodeScalars)
            } else {
                out.append(contentsOf: scalars[index..<lastDigitEnd])
            }
            index = lastDigitEnd
        }
        return String(out)
    }

    /// Whether any 13–19-digit window of `digits` passes the Luhn check.
    static func containsCardNumber(_ digits: [UInt8]) -> Bool {
        for length in 13...min(19, digits.count) {
            for start in 0...(digits.count - length) where luhnValid(digits[start..<(start + length)]) { return true }
        }
        return false
    }

    static func luhnValid(_ digits: ArraySlice<UInt8>) -> Bool {
        var sum = 0
        for (offset, digit) in digits.reversed().enumerated() {
            var value = Int(digit)
            if offset % 2 == 1 { value *= 2; if value > 9 { value -= 9 } }
            sum += value
        }
        return sum % 10 == 0
    }

    func classify(_ key: String) -> KeyClass {
        let normalized = Array(Self.normalize(key).utf8)
        if cardNumberFragments.contains(where: { Self.bytes(normalized, contain: $0) }) { return .cardNumber }
        if secretFragments.contains(where: { Self.bytes(normalized, contain: $0) }) { return .secret }
        return .plain
    }

    /// Whether `fragment` occurs in `bytes`: a plain byte search over these short lower-cased keys, where
    /// Foundation's string search (through NSString) cost more than the rest of a notification's handling.
    static func bytes(_ bytes: [UInt8], contain fragment: [UInt8]) -> Bool {
        // An empty fragment matches nothing (as Foundation's `contains` answered): a key configured as "" or
        // "-" must not make every key a secret.
        guard !fragment.isEmpty, fragment.count <= bytes.count else { return false }
        for start in 0...(bytes.count - fragment.count) where bytes[start] == fragment[0] {
            var offset = 1
            while offset < fragment.count, bytes[start + offset] == fragment[offset] { offset += 1 }
            if offset == fragment.count { return true }
        }
        return false
    }

    enum KeyClass { case plain, secret, cardNumber }

    func redactValue(_ value: String, key: String) -> String {
        switch classify(key) {
        case .plain: redactText(value)
        case .secret: "<redacted>"
        case .cardNumber: Self.maskPAN(value)
        }
    }

    /// Header fields with sensitive values removed.
    public func redact(headers: [String: String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: headers.map { ($0.key, redactValue($0.value, key: $0.key)) })
    }

    /// A loggable rendering of a body: JSON and form bodies are redacted field by field; any other
    /// text has `key=value`, `"key": "value"` and `<key>value</key>` pairs with sensitive keys
    /// redacted and card numbers masked; the result is cut to `limit` characters.
    public func redact(body: Data, limit: Int = 4096) -> String {
        guard !body.isEmpty else { return "" }
        let text: String
        if let json = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
           json is [String: Any] || json is [Any],
           let cleaned = try? JSONSerialization.data(withJSONObject: redactJSON(json), options: [.sortedKeys]) {
            text = String(decoding: cleaned, as: UTF8.self)
        } else if let raw = String(data: body, encoding: .utf8) {
            text = looksFormEncoded(raw) ? redact(form: raw) : redactText(raw)
        } else {
            return "<\(body.count) bytes of binary>"
        }
        return text.count > limit ? String(text.prefix(limit)) + "…(\(text.count) chars)" : text
    }

    /// A body to keep (a gateway's raw notification): byte for byte as received, unless a card-number
    /// field (JSON at any depth, or a form field) holds a clear card number, which is then masked to its
    /// first 6 and last 4 digits. Values already masked by the gateway (`400555******0001`) are left alone,
    /// as is everything else, so a body without a clear card number keeps its signature checkable.
    public func maskingCardFields(in body: Data) -> Data {
        func clearPAN(_ value: String) -> Bool {
            let compact = value.filter { $0 != " " && $0 != "-" }
            return (13...19).contains(compact.count) && compact.allSatisfy { $0.isASCII && $0.isNumber }
        }
        if let json = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]), json is [String: Any] || json is [Any] {
            var changed = false
            func walk(_ value: Any) -> Any {
                switch value {
                case let object as [String: Any]:
                    var out: [String: Any] = [:]
                    for (key, child) in object {
                        if classify(key) == .cardNumber {
                            if let text = child as? String, clearPAN(text) { out[key] = Self.maskPAN(text); changed = true; continue }
                            if let number = child as? NSNumber, !(number is Bool), clearPAN(number.stringValue) {
                                out[key] = Self.maskPAN(number.stringValue); changed = true; continue
                            }
                        }
                        out[key] = walk(child)
                    }
                    return out
                case let array as [Any]:
                    return array.map(walk)
                default:
                    return value
                }
            }
            let cleaned = walk(json)
            guard changed, let data = try? JSONSerialization.data(withJSONObject: cleaned, options: [.sortedKeys]) else { return body }
            return data
        }
        guard let text = String(data: body, encoding: .utf8), looksFormEncoded(text) else { return body }
        var changed = false
        let pairs = text.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return String(pair) }
            let key = String(parts[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[0])
            let value = String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[1])
            guard classify(key) == .cardNumber, clearPAN(value) else { return String(pair) }
            changed = true
            return "\(parts[0])=\(Self.maskPAN(value).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }
        return changed ? Data(pairs.joined(separator: "&").utf8) : body
    }

    /// `a=1&card_number=4111…` with sensitive values redacted.
    public func redact(form: String) -> String {
        form.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return redactText(String(pair)) }
            let key = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = String(parts[1]).removingPercentEncoding ?? String(parts[1])
            return "\(parts[0])=\(redactValue(value, key: key))"
        }.joined(separator: "&")
    }

    /// Free text: sensitive `key=value`, `"key": "value"` and `<key>…</key>` pairs redacted, card numbers masked.
    public func redactText(_ text: String) -> String {
        var result = text
        // Cheap pre-checks keep plain values (most header values) off the regular expressions.
        if result.utf8.contains(UInt8(ascii: "<")), let element = patterns.element {
            result = element.stringByReplacingMatches(in: result, range: NSRange(result.startIndex..., in: result), withTemplate: "$1<redacted>$3")
        }
        if result.utf8.contains(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: ":") }), let pair = patterns.pair {
            result = pair.stringByReplacingMatches(in: result, range: NSRange(result.startIndex..., in: result), withTemplate: "$1<redacted>")
        }
        return result.contains(where: \.isNumber) ? Self.maskCardNumbers(in: result) : result
    }

    private func looksFormEncoded(_ text: String) -> Bool {
        !text.utf8.contains(UInt8(ascii: " ")) && !text.utf8.contains(UInt8(ascii: "\n")) && text.utf8.contains(UInt8(ascii: "="))
    }

    private func redactJSON(_ value: Any) -> Any {
        switch value {
        case let object as [String: Any]:
            var out: [String: Any] = [:]
            for (key, child) in object {
                switch classify(key) {
                case .secret:
                    out[key] = "<redacted>"                                 // the whole subtree, whatever it is
                case .cardNumber:
                    if let text = child as? String { out[key] = Self.maskPAN(text) }
                    else if let number = child as? NSNumber, !(number is Bool) { out[key] = Self.maskPAN(number.stringValue) }
                    else { out[key] = "<redacted>" }
                case .plain:
                    out[key] = redactJSON(child)
                }
            }
            return out
        case let array as [Any]:
            return array.map(redactJSON)
        case let string as String:
            return redactText(string)
        case let number as NSNumber where !(number is Bool):
            // A card number sent as a bare JSON number.
            let text = number.stringValue
            return text.allSatisfy(\.isNumber) && Self.maskCardNumbers(in: text) != text ? Self.maskCardNumbers(in: text) : number
        default:
            return value
        }
    }
}
