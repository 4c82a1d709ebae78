/// Base 64 (RFC 4648 §4) and base64url (RFC 4648 §5), with strict decoders: what a gateway signs
/// must decode one way only.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardTable = table(for: standardAlphabet)
    private static let urlTable = table(for: urlAlphabet)
    private static let pad = UInt8(ascii: "=")
    /// Marks a byte outside the alphabet in a decoding table.
    private static let invalid: UInt8 = 0xFF

    /// The bytes in standard base 64 with `=` padding (`Zm9vYg==`).
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        encode(Array(bytes), alphabet: standardAlphabet, padded: true)
    }

    /// The bytes of standard, padded base 64 text.
    /// - Returns: `nil` unless `text` is exactly what ``encode(_:)`` writes for some bytes: only the
    ///   standard alphabet, a length that is a multiple of four, `=` only as the final one or two
    ///   characters, zero padding bits, and no whitespace or line breaks.
    public static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        return decode(input, table: standardTable)
    }

    /// The bytes in base64url (`-` and `_` instead of `+` and `/`) without padding, as JSON Web
    /// Tokens and URL parameters carry them.
    public static func urlEncode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        encode(Array(bytes), alphabet: urlAlphabet, padded: false)
    }

    /// The bytes of base64url text, with or without its `=` padding.
    /// - Returns: `nil` for characters outside the base64url alphabet (`+` and `/` included),
    ///   padding that is present but wrong, an impossible length, non-zero padding bits, or whitespace.
    public static func urlDecode(_ text: String) -> [UInt8]? {
        var input = Array(text.utf8)
        if input.last == pad {
            // Padding given: it must be complete and correct.
            guard input.count % 4 == 0 else { return nil }
        } else {
            switch input.count % 4 {
            case 0: break
            case 1: return nil
            case let remainder: input.append(contentsOf: repeatElement(pad, count: 4 - remainder))
            }
        }
        return decode(input, table: urlTable)
    }

    // MARK: Implementation

    private static func table(for alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (value, char) in alphabet.enumerated() { table[Int(char)] = UInt8(value) }
        return table
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
            out.append(alphabet[Int(chunk >> 6 & 0x3F)])
            out.append(alphabet[Int(chunk & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
            if padded { out.append(pad); out.append(pad) }
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
            out.append(alphabet[Int(chunk >> 6 & 0x3F)])
            if padded { out.append(pad) }
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded input whose length is a multiple of four.
    private static func decode(_ input: [UInt8], table: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let isLast = index + 4 == input.count
            let c0 = input[index], c1 = input[index + 1], c2 = input[index + 2], c3 = input[index + 3]
            let v0 = table[Int(c0)], v1 = table[Int(c1)]
            guard v0 != invalid, v1 != invalid else { return nil }
            if isLast, c2 == pad {
                // "xx==": one byte; the low four bits of the second character are padding and must be zero.
                guard c3 == pad, v1 & 0x0F == 0 else { return nil }
                out.append(v0 << 2 | v1 >> 4)
            } else if isLast, c3 == pad {
                // "xxx=": two bytes; the low two bits of the third character must be zero.
                let v2 = table[Int(c2)]
                guard v2 != invalid, v2 & 0x03 == 0 else { return nil }
                out.append(v0 << 2 | v1 >> 4)
                out.append(v1 << 4 | v2 >> 2)
            } else {
                let v2 = table[Int(c2)], v3 = table[Int(c3)]
                guard v2 != invalid, v3 != invalid else { return nil }
                out.append(v0 << 2 | v1 >> 4)
                out.append(v1 << 4 | v2 >> 2)
                out.append(v2 << 6 | v3)
            }
            index += 4
        }
        return out
    }
}
