import Foundation
import Till

/// A JSON value that keeps what Foundation's parser loses: the order of object members and the exact
/// text of numbers.
///
/// Gateways sign JSON as they wrote it (`1.50` is not `1.5`, nested objects in the order sent), and a
/// key that appears twice in an object is an attack on whoever reads the other copy; so
/// ``parse(_:field:maxDepth:)`` refuses duplicate keys, and ``serialized()`` writes members and numbers
/// back exactly as they are held.
public indirect enum OrderedJSON: Sendable, Hashable {
    /// An object: its members in order.
    case object([OrderedJSON.Member])
    /// An array.
    case array([OrderedJSON])
    /// A string.
    case string(String)
    /// A number as its exact text (`1.50`, `1e2`, `-0`). Values built in code must hold a valid JSON
    /// number: ``serialized()`` writes the text as it is.
    case number(String)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    /// One member of an object.
    public struct Member: Sendable, Hashable {
        /// The member's key.
        public var key: String
        /// The member's value.
        public var value: OrderedJSON

        /// A member.
        public init(key: String, value: OrderedJSON) {
            self.key = key
            self.value = value
        }
    }

    // MARK: Accessors

    /// The value of the member `key` of an object (its first such member, for an object built in
    /// code with a repeated key); nil for a missing key or a value that is not an object.
    public subscript(key: String) -> OrderedJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The text of a string; nil for anything else.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The exact text of a number; nil for anything else.
    public var numberText: String? {
        if case .number(let text) = self { return text }
        return nil
    }

    /// The value of a boolean; nil for anything else.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The members of an object, in order; nil for anything else.
    public var objectMembers: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The items of an array; nil for anything else.
    public var arrayValue: [OrderedJSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    // MARK: Parsing

    /// Parses one JSON value (RFC 8259) from UTF-8 bytes, strictly.
    ///
    /// Refused: a byte order mark, trailing text after the value, trailing commas, leading zeros,
    /// `NaN`/`Infinity`, single quotes, comments, control characters inside strings, lone or
    /// mismatched surrogate escapes, invalid escapes and text that is not UTF-8. Any value may be the
    /// top-level one (an object, an array or a scalar).
    ///
    /// Keys are compared as Swift strings, so two canonically equivalent spellings of a key count as
    /// a duplicate.
    ///
    /// - Parameters:
    ///   - data: the UTF-8 JSON text.
    ///   - field: the name of the body in errors, and the root of the paths they name.
    ///   - maxDepth: how many objects and arrays may nest.
    /// - Throws: ``CheckoutError`` `duplicate_field` naming the path of a key that appears twice in
    ///   one object (`body.payment.amount`, `body.items[2].sku`); `malformed_body` naming `field`, with
    ///   the byte offset in the message, for anything else.
    public static func parse(_ data: Data, field: String = "body", maxDepth: Int = 64) throws(CheckoutError) -> OrderedJSON {
        var parser = OrderedJSONParser(bytes: Array(data), field: field, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    // MARK: Writing

    /// The value as compact JSON text in UTF-8: no whitespace, object members in order, numbers as
    /// their text, strings escaped minimally (`"`, `\` and control characters only: `\b \f \n \r \t`
    /// or `\u00XX`; `/` and non-ASCII text written as they are).
    ///
    /// For any value ``parse(_:field:maxDepth:)`` returns, parsing the result gives the same value.
    public func serialized() -> Data {
        var out: [UInt8] = []
        write(to: &out)
        return Data(out)
    }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (offset, member) in members.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (offset, item) in items.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .string(let text):
            Self.writeString(text, to: &out)
        case .number(let text):
            out.append(contentsOf: text.utf8)
        case .bool(let value):
            out.append(contentsOf: (value ? "true" : "false").utf8)
        case .null:
            out.append(contentsOf: "null".utf8)
        }
    }

    private static func writeString(_ text: String, to out: inout [UInt8]) {
        JSONText.quote(text, to: &out)
    }
}

/// The strict RFC 8259 parser behind ``OrderedJSON/parse(_:field:maxDepth:)``.
struct OrderedJSONParser {
    private let bytes: [UInt8]
    private let field: String
    private let maxDepth: Int
    private var index = 0
    private var depth = 0
    /// Where the parser is, for naming a duplicate key.
    private var path: [PathComponent] = []

    private enum PathComponent {
        case key(String)
        case item(Int)
    }

    init(bytes: [UInt8], field: String, maxDepth: Int) {
        self.bytes = bytes
        self.field = field
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(CheckoutError) -> OrderedJSON {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw malformed("unexpected text after the JSON value") }
        return value
    }

    // MARK: Errors

    private func malformed(_ why: String) -> CheckoutError {
        // Line and column (1-based; the column counts bytes) as an editor shows them, and the byte offset.
        var line = 1, column = 1
        for byte in bytes[..<min(index, bytes.count)] {
            if byte == 0x0A { line += 1; column = 1 } else { column += 1 }
        }
        return CheckoutError(.malformedBody, field: field, message: "invalid JSON at line \(line), column \(column) (byte \(index)): \(why)")
    }

    private func renderedPath(adding key: String) -> String {
        var text = field
        for component in path + [.key(key)] {
            switch component {
            case .key(let name): text += ".\(name)"
            case .item(let offset): text += "[\(offset)]"
            }
        }
        return text
    }

    // MARK: Grammar

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func parseValue() throws(CheckoutError) -> OrderedJSON {
        guard let byte = peek() else { throw malformed("unexpected end of the text") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw malformed("expected a JSON value")
        }
    }

    private mutating func expectLiteral(_ word: String) throws(CheckoutError) {
        let count = word.utf8.count
        guard index + count <= bytes.count, bytes[index..<(index + count)].elementsEqual(word.utf8) else {
            throw malformed("expected a JSON value")
        }
        index += count
    }

    private mutating func enterContainer() throws(CheckoutError) {
        depth += 1
        guard depth <= maxDepth else { throw malformed("nested deeper than \(maxDepth) levels") }
    }

    private mutating func parseObject() throws(CheckoutError) -> OrderedJSON {
        try enterContainer()
        defer { depth -= 1 }
        index += 1                                                   // {
        var members: [OrderedJSON.Member] = []
        var keys: Set<String> = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            guard peek() == UInt8(ascii: "\"") else { throw malformed("expected a key in double quotes") }
            let key = try parseString()
            guard keys.insert(key).inserted else {
                throw CheckoutError(.duplicateField, field: renderedPath(adding: key),
                                    message: "the key appears twice in one JSON object; each is accepted once")
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw malformed("expected ':' after a key") }
            index += 1
            skipWhitespace()
            path.append(.key(key))
            let value = try parseValue()
            path.removeLast()
            members.append(OrderedJSON.Member(key: key, value: value))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default:
                throw malformed("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray() throws(CheckoutError) -> OrderedJSON {
        try enterContainer()
        defer { depth -= 1 }
        index += 1                                                   // [
        var items: [OrderedJSON] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            path.append(.item(items.count))
            let item = try parseValue()
            path.removeLast()
            items.append(item)
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                return .array(items)
            default:
                throw malformed("expected ',' or ']' in an array")
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, returned as its text.
    private mutating func parseNumber() throws(CheckoutError) -> String {
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        switch peek() {
        case UInt8(ascii: "0"):
            index += 1
            if let next = peek(), isDigit(next) { throw malformed("a number has a leading zero") }
        case let digit? where isDigit(digit):
            skipDigits()
        default:
            throw malformed("expected a digit")
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard let digit = peek(), isDigit(digit) else { throw malformed("expected a digit after the decimal point") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let digit = peek(), isDigit(digit) else { throw malformed("expected a digit in the exponent") }
            skipDigits()
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { index += 1 }
    }

    private mutating func parseString() throws(CheckoutError) -> String {
        index += 1                                                   // "
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = UTF8Text.string(bytes[start..<index]) else { throw malformed("a string is not UTF-8") }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw malformed("a control character in a string must be escaped") }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = UTF8Text.string(out) else { throw malformed("a string is not UTF-8") }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                index += 1
                try parseEscape(into: &out)
            case 0x00..<0x20:
                throw malformed("a control character in a string must be escaped")
            default:
                out.append(byte)
                index += 1
            }
        }
        throw malformed("unterminated string")
    }

    /// Decodes the escape after a backslash.
    private mutating func parseEscape(into out: inout [UInt8]) throws(CheckoutError) {
        guard let escape = peek() else { throw malformed("unterminated string") }
        index += 1
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var value = try hex4()
            if (0xDC00...0xDFFF).contains(value) { throw malformed("a lone low surrogate escape") }
            if (0xD800...0xDBFF).contains(value) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw malformed("a high surrogate escape without its low surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw malformed("a high surrogate escape without its low surrogate") }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(value) else { throw malformed("an invalid \\u escape") }
            out.append(contentsOf: String(scalar).utf8)
        default:
            index -= 1
            throw malformed("an invalid escape in a string")
        }
    }

    private mutating func hex4() throws(CheckoutError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw malformed("an incomplete \\u escape") }
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard let digit = Hex.value(of: bytes[index + offset]) else { throw malformed("an invalid \\u escape") }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }
}
