import Foundation

/// A JSON value that keeps what signing needs and `JSONSerialization` loses: the order of an
/// object's members and the exact text of every number (`1000` stays `"1000"`, `10.50` stays `"10.50"`).
///
/// PayFort signs nested objects in insertion order and numbers as written, so the emulator parses
/// request bodies with ``JSONValue/parse(_:)`` rather than with Foundation.
enum JSONValue: Sendable, Hashable {
    case string(String)
    /// A number, kept as its JSON text.
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([Member])

    /// One member of an object, in the order it was written.
    struct Member: Sendable, Hashable {
        var key: String
        var value: JSONValue
    }

    /// The member values of an object by key (the last one wins; the parser rejects duplicates).
    var objectMembers: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The value of a member of an object, or `nil`.
    subscript(key: String) -> JSONValue? {
        objectMembers?.last { $0.key == key }?.value
    }

    /// A string value, or `nil` for anything else.
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// Whether the value is a scalar (string, number, boolean or null).
    var isScalar: Bool {
        switch self {
        case .string, .number, .bool, .null: true
        case .array, .object: false
        }
    }

    /// The text a flat parameter carries: strings as they are, numbers as written,
    /// booleans as `true`/`false`, null as the empty string. Containers are rendered as in signatures.
    var parameterText: String {
        switch self {
        case .string(let text): text
        case .number(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .null: ""
        case .array(let items): "[" + items.map(\.parameterText).joined(separator: ", ") + "]"
        case .object(let members): "{" + members.map { "\($0.key)=\($0.value.parameterText)" }.joined(separator: ", ") + "}"
        }
    }
}

// MARK: - Parsing

/// Why a body is not JSON; `offset` is the byte where parsing stopped.
struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    var reason: String
    var offset: Int
    var description: String { "\(reason) at byte \(offset)" }
}

extension JSONValue {
    /// The deepest nesting accepted, so a hostile body cannot exhaust the stack.
    static let maximumDepth = 32

    /// Parses one RFC 8259 JSON text (UTF-8). Duplicate keys in an object are rejected, since two
    /// readers could disagree on which one counts; so are trailing bytes and invalid UTF-8.
    static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected trailing characters") }
        return value
    }

    /// Parses JSON text given as a string.
    static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func error(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: index) }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ literal: String) throws(JSONParseError) {
            for byte in literal.utf8 {
                guard current == byte else { throw error("invalid literal") }
                index += 1
            }
        }

        mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
            guard depth <= JSONValue.maximumDepth else { throw error("nested too deeply") }
            guard let byte = current else { throw error("unexpected end of input") }
            switch byte {
            case UInt8(ascii: "{"): return try parseObject(depth: depth)
            case UInt8(ascii: "["): return try parseArray(depth: depth)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            default: throw error("unexpected character")
            }
        }

        mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
            index += 1
            var members: [Member] = []
            var seen: Set<String> = []
            skipWhitespace()
            if current == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let key = try parseString()
                guard seen.insert(key).inserted else { throw error("duplicate member \"\(key)\"") }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
                members.append(Member(key: key, value: try parseValue(depth: depth + 1)))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return .object(members)
                default: throw error("expected ',' or '}'")
                }
            }
        }

        mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try parseValue(depth: depth + 1))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return .array(items)
                default: throw error("expected ',' or ']'")
                }
            }
        }

        mutating func parseNumber() throws(JSONParseError) -> String {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, isDigit(first) else { throw error("invalid number") }
            index += 1
            if first != UInt8(ascii: "0") { while let byte = current, isDigit(byte) { index += 1 } }
            if current == UInt8(ascii: ".") {
                index += 1
                guard let byte = current, isDigit(byte) else { throw error("invalid number") }
                while let byte = current, isDigit(byte) { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard let byte = current, isDigit(byte) else { throw error("invalid number") }
                while let byte = current, isDigit(byte) { index += 1 }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        mutating func parseString() throws(JSONParseError) -> String {
            index += 1
            var buffer: [UInt8] = []
            while true {
                guard let byte = current else { throw error("unterminated string") }
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    guard let text = String(bytes: buffer, encoding: .utf8) else { throw error("invalid UTF-8 in string") }
                    return text
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escape = current else { throw error("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): buffer.append(0x22)
                    case UInt8(ascii: "\\"): buffer.append(0x5C)
                    case UInt8(ascii: "/"): buffer.append(0x2F)
                    case UInt8(ascii: "b"): buffer.append(0x08)
                    case UInt8(ascii: "f"): buffer.append(0x0C)
                    case UInt8(ascii: "n"): buffer.append(0x0A)
                    case UInt8(ascii: "r"): buffer.append(0x0D)
                    case UInt8(ascii: "t"): buffer.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try parseHex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard current == UInt8(ascii: "\\") else { throw error("unpaired surrogate") }
                            index += 1
                            guard current == UInt8(ascii: "u") else { throw error("unpaired surrogate") }
                            index += 1
                            let low = try parseHex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw error("unpaired surrogate")
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
                        buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default:
                        throw error("invalid escape")
                    }
                default:
                    guard byte >= 0x20 else { throw error("control character in string") }
                    buffer.append(byte)
                    index += 1
                }
            }
        }

        mutating func parseHex4() throws(JSONParseError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = current else { throw error("unterminated escape") }
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw error("invalid \\u escape")
                }
                value = value * 16 + digit
                index += 1
            }
            return value
        }
    }
}

// MARK: - Writing

extension JSONValue {
    /// Compact JSON text; object members are written in their stored order.
    var serialized: String {
        var output = ""
        write(to: &output)
        return output
    }

    /// The serialized text as UTF-8 bytes.
    var serializedBytes: [UInt8] { Array(serialized.utf8) }

    private func write(to output: inout String) {
        switch self {
        case .string(let text): Self.writeString(text, to: &output)
        case .number(let text): output += text
        case .bool(let flag): output += flag ? "true" : "false"
        case .null: output += "null"
        case .array(let items):
            output += "["
            for (position, item) in items.enumerated() {
                if position > 0 { output += "," }
                item.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (position, member) in members.enumerated() {
                if position > 0 { output += "," }
                Self.writeString(member.key, to: &output)
                output += ":"
                member.value.write(to: &output)
            }
            output += "}"
        }
    }

    private static func writeString(_ text: String, to output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// An object whose members are sorted by key (byte order), for stable responses.
    static func sortedObject(_ values: [String: JSONValue]) -> JSONValue {
        .object(values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { Member(key: $0.key, value: $0.value) })
    }
}
