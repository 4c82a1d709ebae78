import Foundation
import Till
import TillGatewayKit

/// A small, fast JSON coder for what the stores write and read on every change: event bodies and stored intents.
///
/// Foundation's `JSONEncoder` and `JSONDecoder` cost tens of microseconds for a payment, and on SQLite that time is
/// spent inside the single writer, so it bounds how many notifications a second the store takes. These coders do the
/// same work through the same `Codable` conformances (no type is described twice) in a fraction of the time.
///
/// - ``encode(_:)`` gives exactly the bytes of a `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` and ISO
///   8601 dates on Linux (a test holds it to that): keys in UTF-8 byte order, `"`, `\` and control characters escaped
///   as Foundation escapes them, nothing else. It refuses what it does not write the same way (floating-point numbers,
///   `Data`, `URL`, `Decimal`) with ``Unsupported``; its callers then use Foundation's encoder.
/// - ``decode(_:from:)`` reads a document (the stored intents) into a `Decodable`: `OrderedJSON`'s strict RFC 8259
///   parser reads the text, and this maps its tree onto the type. It leaves dates, `Data`, `URL` and `Decimal` to
///   Foundation; anything it cannot read throws, and its callers then use Foundation's decoder.
package enum CompactJSON {
    /// A value this encoder does not write byte for byte as Foundation does.
    package struct Unsupported: Error, CustomStringConvertible {
        package var type: String
        package var description: String { "CompactJSON does not encode \(type)" }
    }

    /// JSON text written as it is, in place of a value: a part encoded once and used in several documents (a change's
    /// payment, in each of its events). Only this encoder writes it; any other encoder gets ``Unsupported``.
    package struct Raw: Encodable, Sendable {
        package var bytes: [UInt8]
        package init(_ bytes: [UInt8]) { self.bytes = bytes }

        package func encode(to encoder: any Encoder) throws {
            guard let encoder = encoder as? NodeEncoder else { throw Unsupported(type: "CompactJSON.Raw") }
            encoder.node.kind = .raw
            encoder.node.raw = bytes
        }
    }

    package static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = Node()
        try root.set(value, path: [])
        var out: [UInt8] = []
        out.reserveCapacity(1_024)
        root.write(to: &out)
        return out
    }

    package static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        // The project's strict RFC 8259 parser reads the text; this decoder only maps its tree onto the types.
        let value = try OrderedJSON.parse(Data(bytes), field: "$", maxDepth: 256)
        return try ValueDecoder(value: value, codingPath: []).decode(T.self)
    }
}

// MARK: Encoding

extension CompactJSON {
    /// One value of the document being built: containers are filled in place by their `Encoder` containers.
    final class Node {
        enum Kind { case unset, object, array, string, literal, raw }
        var kind = Kind.unset
        var text = ""
        var raw: [UInt8] = []
        var keys: [String] = []
        var values: [Node] = []

        func set<T: Encodable>(_ value: T, path: [any CodingKey]) throws {
            if T.self == Date.self {
                kind = .string
                text = Self.iso8601(value as! Date)
                return
            }
            if T.self == Data.self || T.self == URL.self || T.self == Decimal.self || T.self == Double.self || T.self == Float.self {
                throw Unsupported(type: String(describing: T.self))
            }
            try value.encode(to: NodeEncoder(node: self, codingPath: path))
            // A value that asked for no container is an empty object to Foundation.
            if kind == .unset { kind = .object }
        }

        func literal(_ text: String) {
            kind = .literal
            self.text = text
        }

        func string(_ text: String) {
            kind = .string
            self.text = text
        }

        /// The child under `key` (a key written twice keeps its last value, as Foundation does).
        func child(_ key: String) -> Node {
            kind = .object
            let node = Node()
            if let index = keys.firstIndex(of: key) {
                values[index] = node
            } else {
                keys.append(key)
                values.append(node)
            }
            return node
        }

        func element() -> Node {
            kind = .array
            let node = Node()
            values.append(node)
            return node
        }

        func write(to out: inout [UInt8]) {
            switch kind {
            case .unset, .object:
                out.append(UInt8(ascii: "{"))
                var order = Array(keys.indices)
                // Insertion sort: objects are small, and a type's keys often come nearly in order.
                for i in order.indices.dropFirst() {
                    var j = i
                    while j > 0, Self.precedes(keys[order[j]], keys[order[j - 1]]) {
                        order.swapAt(j, j - 1)
                        j -= 1
                    }
                }
                for (n, index) in order.enumerated() {
                    if n > 0 { out.append(UInt8(ascii: ",")) }
                    Self.quote(keys[index], to: &out)
                    out.append(UInt8(ascii: ":"))
                    values[index].write(to: &out)
                }
                out.append(UInt8(ascii: "}"))
            case .array:
                out.append(UInt8(ascii: "["))
                for (n, value) in values.enumerated() {
                    if n > 0 { out.append(UInt8(ascii: ",")) }
                    value.write(to: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .string:
                Self.quote(text, to: &out)
            case .literal:
                out.append(contentsOf: text.utf8)
            case .raw:
                out.append(contentsOf: raw)
            }
        }

        /// Whether `a` sorts before `b` in UTF-8 byte order (Foundation's `sortedKeys` on Linux).
        static func precedes(_ a: String, _ b: String) -> Bool {
            var a = a, b = b
            return a.withUTF8 { x in
                b.withUTF8 { y in
                    let common = min(x.count, y.count)
                    if common > 0, let xs = x.baseAddress, let ys = y.baseAddress {
                        let order = memcmp(xs, ys, common)
                        if order != 0 { return order < 0 }
                    }
                    return x.count < y.count
                }
            }
        }

        static func quote(_ text: String, to out: inout [UInt8]) {
            JSONText.quote(text, to: &out)
        }

        /// `JSONEncoder.DateEncodingStrategy.iso8601`'s text: UTC, whole seconds (the fraction dropped, towards the past).
        static func iso8601(_ date: Date) -> String {
            let seconds = Int64((date.timeIntervalSince1970).rounded(.down))
            let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
            let secondOfDay = seconds - days * 86_400
            // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let mp = (5 * dayOfYear + 2) / 153
            let day = dayOfYear - (153 * mp + 2) / 5 + 1
            let month = mp < 10 ? mp + 3 : mp - 9
            let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
            func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
            let yearText = year < 0 ? "-" + String(repeating: "0", count: max(0, 4 - String(-year).count)) + String(-year)
                : String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
            return "\(yearText)-\(two(month))-\(two(day))T\(two(secondOfDay / 3_600))"
                + ":\(two(secondOfDay % 3_600 / 60)):\(two(secondOfDay % 60))Z"
        }
    }

    struct NodeEncoder: Encoder {
        let node: Node
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if node.kind == .unset { node.kind = .object }
            return KeyedEncodingContainer(KeyedNodeContainer(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if node.kind == .unset { node.kind = .array }
            return UnkeyedNodeContainer(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            SingleNodeContainer(node: node, codingPath: codingPath)
        }
    }

    struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws { node.child(key.stringValue).literal("null") }
        mutating func encode(_ value: Bool, forKey key: Key) throws { node.child(key.stringValue).literal(value ? "true" : "false") }
        mutating func encode(_ value: String, forKey key: Key) throws { node.child(key.stringValue).string(value) }
        mutating func encode(_ value: Int, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { node.child(key.stringValue).literal(String(value)) }
        mutating func encode(_ value: Double, forKey key: Key) throws { throw Unsupported(type: "Double") }
        mutating func encode(_ value: Float, forKey key: Key) throws { throw Unsupported(type: "Float") }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try node.child(key.stringValue).set(value, path: codingPath + [key])
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let child = node.child(key.stringValue)
            child.kind = .object
            return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let child = node.child(key.stringValue)
            child.kind = .array
            return UnkeyedNodeContainer(node: child, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.child("super"), codingPath: codingPath) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { NodeEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]) }
    }

    struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]
        var count: Int { node.values.count }

        mutating func encodeNil() throws { node.element().literal("null") }
        mutating func encode(_ value: Bool) throws { node.element().literal(value ? "true" : "false") }
        mutating func encode(_ value: String) throws { node.element().string(value) }
        mutating func encode(_ value: Int) throws { node.element().literal(String(value)) }
        mutating func encode(_ value: Int64) throws { node.element().literal(String(value)) }
        mutating func encode(_ value: Double) throws { throw Unsupported(type: "Double") }
        mutating func encode(_ value: Float) throws { throw Unsupported(type: "Float") }
        mutating func encode<T: Encodable>(_ value: T) throws { try node.element().set(value, path: codingPath) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let child = node.element()
            child.kind = .object
            return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let child = node.element()
            child.kind = .array
            return UnkeyedNodeContainer(node: child, codingPath: codingPath)
        }

        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.element(), codingPath: codingPath) }
    }

    struct SingleNodeContainer: SingleValueEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { node.literal("null") }
        mutating func encode(_ value: Bool) throws { node.literal(value ? "true" : "false") }
        mutating func encode(_ value: String) throws { node.string(value) }
        mutating func encode(_ value: Int) throws { node.literal(String(value)) }
        mutating func encode(_ value: Int8) throws { node.literal(String(value)) }
        mutating func encode(_ value: Int16) throws { node.literal(String(value)) }
        mutating func encode(_ value: Int32) throws { node.literal(String(value)) }
        mutating func encode(_ value: Int64) throws { node.literal(String(value)) }
        mutating func encode(_ value: UInt) throws { node.literal(String(value)) }
        mutating func encode(_ value: UInt8) throws { node.literal(String(value)) }
        mutating func encode(_ value: UInt16) throws { node.literal(String(value)) }
        mutating func encode(_ value: UInt32) throws { node.literal(String(value)) }
        mutating func encode(_ value: UInt64) throws { node.literal(String(value)) }
        mutating func encode(_ value: Double) throws { throw Unsupported(type: "Double") }
        mutating func encode(_ value: Float) throws { throw Unsupported(type: "Float") }
        mutating func encode<T: Encodable>(_ value: T) throws { try node.set(value, path: codingPath) }
    }
}

// MARK: Decoding

extension CompactJSON {
    struct ValueDecoder: Decoder {
        let value: OrderedJSON
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if T.self == Date.self || T.self == Data.self || T.self == URL.self || T.self == Decimal.self {
                // Foundation's decoder has its own readings of these; the callers fall back to it.
                throw DecodingError.typeMismatch(T.self, .init(codingPath: codingPath, debugDescription: "left to Foundation"))
            }
            return try T(from: self)
        }

        func mismatch(_ type: Any.Type) -> DecodingError {
            .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value)"))
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let members) = value else { throw mismatch([String: Any].self) }
            let object = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            return KeyedDecodingContainer(KeyedValueContainer<Key>(object: object, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let array) = value else { throw mismatch([Any].self) }
            return UnkeyedValueContainer(array: array, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

        func string() throws -> String {
            guard case .string(let text) = value else { throw mismatch(String.self) }
            return text
        }

        func bool() throws -> Bool {
            guard case .bool(let flag) = value else { throw mismatch(Bool.self) }
            return flag
        }

        func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
            guard case .number(let text) = value, let number = T(text) else { throw mismatch(T.self) }
            return number
        }

        func floating<T: LosslessStringConvertible>(_ type: T.Type) throws -> T {
            guard case .number(let text) = value, let number = T(text) else { throw mismatch(T.self) }
            return number
        }
    }

    struct KeyedValueContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let object: [String: OrderedJSON]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }
        func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

        func child(_ key: Key) throws -> ValueDecoder {
            guard let value = object[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
            }
            return ValueDecoder(value: value, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            guard let value = object[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
            }
            if case .null = value { return true }
            return false
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).bool() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).string() }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).integer(Int.self) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).integer(Int64.self) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).floating(Double.self) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decode(T.self) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try child(key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder { ValueDecoder(value: object["super"] ?? .null, codingPath: codingPath) }
        func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
    }

    struct UnkeyedValueContainer: UnkeyedDecodingContainer {
        let array: [OrderedJSON]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }

        init(array: [OrderedJSON], codingPath: [any CodingKey]) {
            self.array = array
            self.codingPath = codingPath
        }

        mutating func next() throws -> ValueDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the array has no more elements"))
            }
            defer { currentIndex += 1 }
            return ValueDecoder(value: array[currentIndex], codingPath: codingPath + [AnyCodingKey(intValue: currentIndex)!])
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else { return false }
            if case .null = array[currentIndex] { currentIndex += 1; return true }
            return false
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try next().bool() }
        mutating func decode(_ type: String.Type) throws -> String { try next().string() }
        mutating func decode(_ type: Int.Type) throws -> Int { try next().integer(Int.self) }
        mutating func decode(_ type: Double.Type) throws -> Double { try next().floating(Double.self) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(T.self) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next() }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let decoder: ValueDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }

        func decodeNil() -> Bool {
            if case .null = decoder.value { return true }
            return false
        }

        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool() }
        func decode(_ type: String.Type) throws -> String { try decoder.string() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.floating(Double.self) }
        func decode(_ type: Float.Type) throws -> Float { try decoder.floating(Float.self) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(Int.self) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(Int8.self) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(Int16.self) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(Int32.self) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(Int64.self) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(UInt.self) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(UInt8.self) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(UInt16.self) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(UInt32.self) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(UInt64.self) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(T.self) }
    }
}
