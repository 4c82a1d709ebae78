import Foundation

/// One `name=value` pair of a form, decoded.
public struct FormPair: Sendable, Hashable {
    /// The field name.
    public var name: String
    /// The field value; empty for a field sent without `=`.
    public var value: String

    /// A pair.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The fields of an `application/x-www-form-urlencoded` body, in the order they came (or are to be
/// sent).
///
/// Decoding is strict: a field that appears twice is refused (never "first wins" or "last wins",
/// which would let a forged copy slip past a signature), and so is a bad percent escape or text that
/// is not UTF-8.
public struct FormFields: Sendable, Hashable, Sequence {
    /// The pairs, in order.
    public var pairs: [FormPair]

    /// Fields from `(name, value)` pairs, in the given order.
    ///
    /// Building in code does not check for repeated names; ``subscript(_:)`` reads the first.
    public init(_ pairs: [(String, String)]) {
        self.pairs = pairs.map { FormPair(name: $0.0, value: $0.1) }
    }

    /// Fields from pairs, in the given order.
    public init(pairs: [FormPair]) {
        self.pairs = pairs
    }

    /// The value of the field `name` (the first one, for fields built in code with a repeated name).
    public subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    /// The field names, in order.
    public var names: [String] { pairs.map(\.name) }

    /// Iterates over the pairs in order.
    public func makeIterator() -> IndexingIterator<[FormPair]> { pairs.makeIterator() }

    // MARK: Decoding

    /// Decodes an `application/x-www-form-urlencoded` body.
    ///
    /// The body is split on `&` (empty segments are skipped) and each segment on its first `=`; a
    /// segment without `=` is a field with an empty value. In names and values `+` is a space and
    /// `%XX` a byte; the decoded bytes must be UTF-8. An empty body gives no fields.
    ///
    /// Names are compared as Swift strings, so two canonically equivalent spellings of a name count
    /// as the same name.
    ///
    /// - Parameters:
    ///   - body: the raw body.
    ///   - field: the name of the body in errors (`"body"`, `"notification.body"`).
    /// - Throws: ``CheckoutError`` `malformed_body` naming `field` for a bad percent escape, text
    ///   that is not UTF-8 or a field without a name; `duplicate_field` naming `"<field>.<name>"` for a
    ///   name that appears twice.
    public static func decode(_ body: Data, field: String = "body") throws(CheckoutError) -> FormFields {
        let bytes = Array(body)
        var pairs: [FormPair] = []
        var seen: Set<String> = []
        var start = 0
        var segmentNumber = 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            defer { start = end + 1 }
            guard end > start else { continue }
            segmentNumber += 1
            let segment = bytes[start..<end]
            let equals = segment.firstIndex(of: UInt8(ascii: "="))
            let rawName = segment[segment.startIndex..<(equals ?? segment.endIndex)]
            let rawValue = equals.map { segment[($0 + 1)...] } ?? []
            guard let name = percentDecode(rawName), let value = percentDecode(rawValue) else {
                throw CheckoutError(.malformedBody, field: field,
                                    message: "field \(segmentNumber) of the form has a bad percent escape or is not UTF-8")
            }
            guard !name.isEmpty else {
                throw CheckoutError(.malformedBody, field: field, message: "field \(segmentNumber) of the form has no name")
            }
            guard seen.insert(name).inserted else {
                throw CheckoutError(.duplicateField, field: "\(field).\(name)",
                                    message: "appears twice in the form; each field is accepted once")
            }
            pairs.append(FormPair(name: name, value: value))
        }
        return FormFields(pairs: pairs)
    }

    /// `+` as a space, `%XX` as a byte, everything else as is; nil for a bad escape or bytes that are
    /// not UTF-8.
    static func percentDecode(_ raw: ArraySlice<UInt8>) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
                index += 1
            case UInt8(ascii: "%"):
                guard index + 2 < raw.endIndex, let high = Hex.value(of: raw[index + 1]), let low = Hex.value(of: raw[index + 2]) else {
                    return nil
                }
                bytes.append(high << 4 | low)
                index += 3
            default:
                bytes.append(byte)
                index += 1
            }
        }
        return UTF8Text.string(bytes)
    }

    // MARK: Encoding

    /// The fields as an `application/x-www-form-urlencoded` body, in order (see ``encode(_:)``).
    public func encoded() -> String {
        Self.encode(pairs.map { ($0.name, $0.value) })
    }

    /// `(name, value)` pairs as an `application/x-www-form-urlencoded` body, in order: ASCII letters,
    /// digits and `*-._` are kept, a space becomes `+`, and every other byte of the UTF-8 text is
    /// written `%XX` with upper-case hex digits.
    public static func encode(_ pairs: [(String, String)]) -> String {
        var out: [UInt8] = []
        for (offset, pair) in pairs.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: "&")) }
            append(pair.0, to: &out)
            out.append(UInt8(ascii: "="))
            append(pair.1, to: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func append(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                out.append(byte)
            case UInt8(ascii: " "):
                out.append(UInt8(ascii: "+"))
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }
}

/// Strict UTF-8 decoding.
enum UTF8Text {
    /// The text of `bytes`, or nil when they are not well-formed UTF-8 (overlong forms, encoded
    /// surrogates and truncated sequences included).
    static func string<C: Collection>(_ bytes: C) -> String? where C.Element == UInt8 {
        let text = String(decoding: bytes, as: UTF8.self)
        // Decoding replaces every ill-formed sequence with U+FFFD, so the bytes change unless they were valid.
        return text.utf8.elementsEqual(bytes) ? text : nil
    }
}
