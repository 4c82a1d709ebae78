import Foundation
import Till

/// A parameter value as PayFort signs it: JSON-shaped, with object keys kept **in order**, because
/// nested objects (Apple Pay's `apple_header`) are signed in insertion order, not sorted.
public enum PayFortValue: Sendable, Hashable {
    case string(String)
    /// A JSON number, kept as its text so `1000` signs as `1000`.
    case number(String)
    case bool(Bool)
    case null
    case object([(String, PayFortValue)])
    case array([PayFortValue])

    public static func == (lhs: PayFortValue, rhs: PayFortValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)), (.number(let a), .number(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let s), .number(let s): hasher.combine(s)
        case .bool(let b): hasher.combine(b)
        case .null: hasher.combine(0)
        case .object(let pairs): for (k, v) in pairs { hasher.combine(k); hasher.combine(v) }
        case .array(let items): hasher.combine(items)
        }
    }

    /// The value as PayFort renders it inside the string to sign.
    var signingText: String {
        switch self {
        case .string(let s), .number(let s): s
        case .bool(let b): b ? "true" : "false"
        case .null: ""
        case .object(let pairs): "{" + pairs.map { "\($0.0)=\($0.1.signingText)" }.joined(separator: ", ") + "}"
        case .array(let items): "[" + items.map(\.signingText).joined(separator: ", ") + "]"
        }
    }

    /// True for null and the empty string, which are left out at the top level.
    var isEmpty: Bool {
        switch self {
        case .null: true
        case .string(let s): s.isEmpty
        default: false
        }
    }

    /// The text of a scalar (string or number); nil for anything else.
    public var text: String? {
        switch self {
        case .string(let s), .number(let s): s
        case .bool(let b): b ? "true" : "false"
        default: nil
        }
    }
}

/// An ordered list of top-level parameters, as received or as to be sent.
public struct PayFortParameters: Sendable, Hashable, Sequence {
    public private(set) var pairs: [(String, PayFortValue)]

    public init(_ pairs: [(String, PayFortValue)] = []) { self.pairs = pairs }

    /// Parameters from plain strings, in the given order.
    public init(strings: [(String, String)]) { pairs = strings.map { ($0.0, .string($0.1)) } }

    public static func == (lhs: PayFortParameters, rhs: PayFortParameters) -> Bool { PayFortValue.object(lhs.pairs) == .object(rhs.pairs) }
    public func hash(into hasher: inout Hasher) { hasher.combine(PayFortValue.object(pairs)) }
    public func makeIterator() -> IndexingIterator<[(String, PayFortValue)]> { pairs.makeIterator() }

    /// The value of `key`, if present.
    public subscript(key: String) -> PayFortValue? {
        get { pairs.first { $0.0 == key }?.1 }
        set {
            if let index = pairs.firstIndex(where: { $0.0 == key }) {
                if let newValue { pairs[index].1 = newValue } else { pairs.remove(at: index) }
            } else if let newValue {
                pairs.append((key, newValue))
            }
        }
    }

    /// The text of `key` (string or number), if present.
    public func text(_ key: String) -> String? { self[key]?.text }

    /// Parses a JSON object, keeping key order at every level.
    /// - Throws: ``CheckoutError/Code/malformedBody`` naming the position.
    public static func json(_ data: Data) throws(CheckoutError) -> PayFortParameters {
        var parser = OrderedJSONParser(Array(data))
        let value = try parser.parseDocument()
        guard case .object(let pairs) = value else {
            throw CheckoutError(.malformedBody, field: "body", message: "expected a JSON object")
        }
        return PayFortParameters(pairs)
    }

    /// Parses `application/x-www-form-urlencoded` (`+` is a space; values are URL-decoded, which is
    /// what PayFort signs).
    public static func form(_ data: Data) throws(CheckoutError) -> PayFortParameters {
        guard let text = String(data: data, encoding: .utf8) else {
            throw CheckoutError(.malformedBody, field: "body", message: "the form body is not UTF-8")
        }
        var pairs: [(String, PayFortValue)] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String? { String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let key = decode(kv[0]), let value = kv.count > 1 ? decode(kv[1]) : "" else {
                throw CheckoutError(.malformedBody, field: "body", message: "invalid percent-encoding in the form body")
            }
            pairs.append((key, .string(value)))
        }
        return PayFortParameters(pairs)
    }

    /// The parameters as a JSON object, keys in order.
    public func jsonData() -> Data {
        Data(OrderedJSONWriter.write(.object(pairs)).utf8)
    }
}

/// A small JSON parser that keeps object key order (Foundation's does not).
struct OrderedJSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws(CheckoutError) -> PayFortValue {
        let value = try parseValue()
        skipSpace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ why: String) -> CheckoutError {
        CheckoutError(.malformedBody, field: "body", message: "invalid JSON at byte \(index): \(why)")
    }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func parseValue() throws(CheckoutError) -> PayFortValue {
        skipSpace()
        guard index < bytes.count else { throw fail("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try parseNumber())
        }
    }

    private mutating func literal(_ word: String) throws(CheckoutError) {
        let w = Array(word.utf8)
        guard index + w.count <= bytes.count, Array(bytes[index..<index + w.count]) == w else { throw fail("expected \(word)") }
        index += w.count
    }

    private mutating func parseObject() throws(CheckoutError) -> PayFortValue {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 32 else { throw fail("nested too deeply") }
        index += 1
        var pairs: [(String, PayFortValue)] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let key = try parseString()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            pairs.append((key, try parseValue()))
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func parseArray() throws(CheckoutError) -> PayFortValue {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 32 else { throw fail("nested too deeply") }
        index += 1
        var items: [PayFortValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            items.append(try parseValue())
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func parseString() throws(CheckoutError) -> String {
        index += 1
        var out: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
            if byte < 0x20 { throw fail("control character in a string") }
            guard byte == UInt8(ascii: "\\") else { out.append(byte); continue }
            guard index < bytes.count else { break }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                    index += 2
                    let low = try hex4()
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    private mutating func hex4() throws(CheckoutError) -> UInt32 {
        guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw fail("invalid \\u escape")
        }
        index += 4
        return value
    }

    private mutating func parseNumber() throws(CheckoutError) -> String {
        let start = index
        while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard !text.isEmpty, Double(text) != nil else { throw fail("invalid value") }
        return text
    }
}

/// Writes ordered JSON.
enum OrderedJSONWriter {
    static func write(_ value: PayFortValue) -> String {
        switch value {
        case .string(let s): quote(s)
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        case .object(let pairs): "{" + pairs.map { quote($0.0) + ":" + write($0.1) }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(write).joined(separator: ",") + "]"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}
