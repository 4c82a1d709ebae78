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
    /// Lower-cased key fragments whose values are always removed.
    public var secretKeys: Set<String>
    /// Lower-cased key fragments whose values are card numbers (masked, not removed).
    public var cardNumberKeys: Set<String>

    public init(secretKeys: Set<String> = Redactor.defaultSecretKeys, cardNumberKeys: Set<String> = Redactor.defaultCardNumberKeys) {
        self.secretKeys = secretKeys
        self.cardNumberKeys = cardNumberKeys
    }

    public static let defaultSecretKeys: Set<String> = [
        "secret", "password", "passwd", "phrase", "access_code", "accesscode", "api_key", "apikey", "authorization",
        "cookie", "token", "cvv", "cvc", "cvn", "security_code", "securitycode", "card_security_code", "pin",
        "private", "signature_key", "sign_key", "md5_key", "hmac",
    ]
    public static let defaultCardNumberKeys: Set<String> = ["card_number", "cardnumber", "pan", "card_no", "cardno"]

    /// Masks a card number to its first 6 and last 4 digits (`411111******1111`). Anything that is not
    /// 13–19 digits is replaced entirely.
    public static func maskPAN(_ pan: String) -> String {
        let digits = pan.filter { $0.isASCII && $0.isNumber }
        guard (13...19).contains(digits.count), digits.count == pan.filter({ !$0.isWhitespace && $0 != "-" }).count else {
            return "<redacted>"
        }
        return String(digits.prefix(6)) + String(repeating: "*", count: digits.count - 10) + String(digits.suffix(4))
    }

    /// Masks every Luhn-valid run of 13–19 digits in `text` (digits may be grouped by one space or dash).
    public static func maskCardNumbers(in text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        func isDigit(_ s: Unicode.Scalar) -> Bool { ("0"..."9").contains(s) }
        while index < scalars.count {
            guard isDigit(scalars[index]), index == 0 || !isDigit(scalars[index - 1]) else {
                out.append(scalars[index]); index += 1; continue
            }
            // Collect a run of digits with single separators.
            var end = index
            var digits: [UInt8] = []
            var lastDigitEnd = index
            while end < scalars.count {
                let s = scalars[end]
                if isDigit(s) {
                    digits.append(UInt8(s.value - 48)); end += 1; lastDigitEnd = end
                } else if (s == " " || s == "-"), end + 1 < scalars.count, isDigit(scalars[end + 1]), !digits.isEmpty {
                    end += 1
                } else { break }
            }
            if (13...19).contains(digits.count), luhnValid(digits) {
                let masked = digits.prefix(6).map(String.init).joined()
                    + String(repeating: "*", count: digits.count - 10) + digits.suffix(4).map(String.init).joined()
                out.append(contentsOf: masked.unicodeScalars)
                index = lastDigitEnd
            } else {
                // Not a card number: copy the first digit run untouched and go on after it.
                var copyEnd = index
                while copyEnd < scalars.count, isDigit(scalars[copyEnd]) { out.append(scalars[copyEnd]); copyEnd += 1 }
                index = copyEnd
            }
        }
        return String(out)
    }

    static func luhnValid(_ digits: [UInt8]) -> Bool {
        var sum = 0
        for (offset, digit) in digits.reversed().enumerated() {
            var value = Int(digit)
            if offset % 2 == 1 { value *= 2; if value > 9 { value -= 9 } }
            sum += value
        }
        return sum % 10 == 0
    }

    func classify(_ key: String) -> KeyClass {
        let lower = key.lowercased()
        if cardNumberKeys.contains(where: { lower.contains($0) }) { return .cardNumber }
        if secretKeys.contains(where: { lower.contains($0) }) { return .secret }
        return .plain
    }

    enum KeyClass { case plain, secret, cardNumber }

    func redactValue(_ value: String, key: String) -> String {
        switch classify(key) {
        case .plain: Self.maskCardNumbers(in: value)
        case .secret: "<redacted>"
        case .cardNumber: Self.maskPAN(value)
        }
    }

    /// Header fields with sensitive values removed.
    public func redact(headers: [String: String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: headers.map { ($0.key, redactValue($0.value, key: $0.key)) })
    }

    /// A loggable rendering of a body: JSON and form bodies are redacted field by field; anything
    /// else is shown with card numbers masked, cut to `limit` characters.
    public func redact(body: Data, limit: Int = 4096) -> String {
        guard !body.isEmpty else { return "" }
        let text: String
        if let json = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
           json is [String: Any] || json is [Any],
           let cleaned = try? JSONSerialization.data(withJSONObject: redactJSON(json, key: ""), options: [.sortedKeys]) {
            text = String(decoding: cleaned, as: UTF8.self)
        } else if let raw = String(data: body, encoding: .utf8) {
            text = looksFormEncoded(raw) ? redact(form: raw) : Self.maskCardNumbers(in: raw)
        } else {
            return "<\(body.count) bytes of binary>"
        }
        return text.count > limit ? String(text.prefix(limit)) + "…(\(text.count) chars)" : text
    }

    /// `a=1&card_number=4111…` with sensitive values redacted.
    public func redact(form: String) -> String {
        form.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return Self.maskCardNumbers(in: String(pair)) }
            let key = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = String(parts[1]).removingPercentEncoding ?? String(parts[1])
            return "\(parts[0])=\(redactValue(value, key: key))"
        }.joined(separator: "&")
    }

    private func looksFormEncoded(_ text: String) -> Bool {
        !text.contains(" ") && !text.contains("\n") && text.contains("=")
    }

    private func redactJSON(_ value: Any, key: String) -> Any {
        switch value {
        case let object as [String: Any]:
            var out: [String: Any] = [:]
            for (k, v) in object {
                switch classify(k) {
                case .secret where !(v is [String: Any]) && !(v is [Any]): out[k] = "<redacted>"
                case .cardNumber where v is String: out[k] = Self.maskPAN(v as! String)
                default: out[k] = redactJSON(v, key: k)
                }
            }
            return out
        case let array as [Any]:
            return array.map { redactJSON($0, key: key) }
        case let string as String:
            return Self.maskCardNumbers(in: string)
        case let number as NSNumber where !(number is Bool) && classify(key) == .plain:
            // A card number sent as a JSON number.
            let text = number.stringValue
            return text.allSatisfy(\.isNumber) && Self.maskCardNumbers(in: text) != text ? Self.maskCardNumbers(in: text) : number
        default:
            return value
        }
    }
}
