import Foundation

/// `application/x-www-form-urlencoded` and URL query encoding, done by hand so every reserved
/// character is escaped (Foundation's query encoding leaves `+`, `&`-adjacent and `=` ambiguities).
enum FormEncoding {
    /// RFC 3986 unreserved characters: the only ones written as they are.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// Percent-encodes everything but the unreserved characters (a space becomes `%20`).
    static func escape(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            if isUnreserved(byte) {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }

    /// `k=v&k=v`, keys sorted (byte order), keys and values escaped.
    static func encode(_ pairs: [String: String]) -> String {
        pairs.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { escape($0.key) + "=" + escape($0.value) }
            .joined(separator: "&")
    }

    /// Decodes a form body or query: `+` is a space, `%XX` a byte. Returns `nil` for malformed
    /// escapes or invalid UTF-8. A key without `=` has the empty value; the last duplicate wins.
    static func decode(_ text: String) -> [String: String]? {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = unescape(String(parts[0])) else { return nil }
            let value = parts.count > 1 ? unescape(String(parts[1])) : ""
            guard let value else { return nil }
            result[key] = value
        }
        return result
    }

    /// Undoes ``escape(_:)`` and form encoding (`+` → space).
    static func unescape(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            default:
                bytes.append(byte)
            }
        }
        return String(bytes: bytes, encoding: .utf8)
    }
}
