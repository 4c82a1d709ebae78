import Crypto
import Foundation
import Till

/// The fields of an IPN as Citcon sent them: names in the order received, values verbatim (JSON
/// integers in plain decimal, other numbers as Swift prints them, `null` as empty). Parsed from a JSON object or a form-encoded body.
public struct CitconIPNFields: Sendable, Hashable {
    /// Field names in the order they were received.
    public private(set) var names: [String]
    private var values: [String: Value]

    enum Value: Sendable, Hashable {
        case text(String)
        /// A JSON object or array: never signed by Citcon, so never read.
        case nested
    }

    /// The value of `name` when present and a scalar.
    public subscript(name: String) -> String? {
        if case .text(let text)? = values[name] { return text }
        return nil
    }

    /// Whether the body carried `name` at all.
    public func contains(_ name: String) -> Bool { values[name] != nil }

    /// Fields built in code (tests, the `till sign` command).
    public init(_ pairs: [(String, String)]) {
        names = []
        values = [:]
        for (name, value) in pairs where values[name] == nil {
            names.append(name)
            values[name] = .text(value)
        }
    }

    private init(names: [String], values: [String: Value]) {
        self.names = names
        self.values = values
    }

    /// Parses a body as the gateway sent it: JSON when the media type says so (or the body starts
    /// with `{`), form-encoded otherwise.
    /// - Throws: ``CheckoutError`` `malformed_body` (field `body`) for an unreadable body, or
    ///   `invalid_field` naming a field that appears twice.
    public static func parse(_ body: Data, mediaType: String? = nil) throws(CheckoutError) -> CitconIPNFields {
        let trimmedFirst = body.first { ![UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")].contains($0) }
        if mediaType == "application/json" || (mediaType != "application/x-www-form-urlencoded" && trimmedFirst == UInt8(ascii: "{")) {
            return try json(body)
        }
        return try form(body)
    }

    static func json(_ body: Data) throws(CheckoutError) -> CitconIPNFields {
        let object: [String: JSONField]
        do {
            object = try JSONDecoder().decode([String: JSONField].self, from: body)
        } catch {
            throw CheckoutError(.malformedBody, category: .invalidInput, field: "body", message: "not a JSON object of fields")
        }
        // JSON objects are unordered; keep the names sorted so the order is at least stable.
        let names = object.keys.sorted()
        return CitconIPNFields(names: names, values: object.mapValues { $0.value })
    }

    static func form(_ body: Data) throws(CheckoutError) -> CitconIPNFields {
        guard let text = String(data: body, encoding: .utf8) else {
            throw CheckoutError(.malformedBody, category: .invalidInput, field: "body", message: "the body is not UTF-8")
        }
        var names: [String] = []
        var values: [String: Value] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") , !name.isEmpty else {
                throw CheckoutError(.malformedBody, category: .invalidInput, field: "body", message: "not a form-encoded body")
            }
            guard values[name] == nil else {
                throw CheckoutError(.invalidField, category: .invalidInput, field: name,
                                    message: "appears twice; an IPN carries each field once")
            }
            names.append(name)
            values[name] = .text(value)
        }
        guard !names.isEmpty else {
            throw CheckoutError(.malformedBody, category: .invalidInput, field: "body", message: "the body is empty")
        }
        return CitconIPNFields(names: names, values: values)
    }

    private static func decode(_ part: Substring) -> String? {
        String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// One JSON value of an IPN.
    private struct JSONField: Decodable {
        var value: Value
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let scalar = try? container.decode(CitconScalar.self) {
                value = .text(scalar.text)
            } else {
                value = .nested
            }
        }
    }
}

/// Citcon's IPN signature: `hex(SHA-256("k1=v1&k2=v2…&secret=<API secret>"))` over the pairs whose
/// names are listed in `fields`, plus `fields` itself, sorted by name, values not URL-encoded.
public enum CitconSignature {
    /// The fields Till needs signed before it believes an IPN: anything unsigned could have been
    /// rewritten on the way.
    public static let requiredSignedFields = ["id", "transaction_type", "reference", "status", "amount", "currency"]

    /// The names `fields` lists, checked: no empty or repeated names, never `sign`, and every one
    /// present in the body as a scalar.
    /// - Throws: ``CheckoutError`` in category `verification`, naming the field.
    public static func signedNames(in ipn: CitconIPNFields) throws(CheckoutError) -> [String] {
        guard let list = ipn["fields"], !list.isEmpty else {
            throw CheckoutError(.missingField, category: .verification, field: "fields",
                                message: "the IPN does not say which fields are signed")
        }
        var names: [String] = []
        for raw in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = raw.trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else {
                throw CheckoutError(.invalidField, category: .verification, field: "fields", message: "lists an empty name")
            }
            guard name != "sign" else {
                throw CheckoutError(.invalidField, category: .verification, field: "fields", message: "lists sign itself")
            }
            guard !names.contains(name) else {
                throw CheckoutError(.invalidField, category: .verification, field: "fields",
                                    message: "lists \(CheckoutError.printable(name)) twice")
            }
            guard ipn.contains(name) else {
                throw CheckoutError(.missingField, category: .verification, field: name,
                                    message: "is listed in fields but missing from the IPN")
            }
            guard ipn[name] != nil else {
                throw CheckoutError(.invalidField, category: .verification, field: name, message: "is not a plain value")
            }
            names.append(name)
        }
        return names
    }

    /// The exact string Citcon hashes, secret included (for the signature debugger).
    public static func stringToSign(_ ipn: CitconIPNFields, secret: String) throws(CheckoutError) -> String {
        var names = try signedNames(in: ipn)
        if !names.contains("fields") { names.append("fields") }
        let pairs = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { "\($0)=\(ipn[$0] ?? "")" }
        return pairs.joined(separator: "&") + "&secret=" + secret
    }

    /// The lower-case hex `sign` for `ipn`.
    public static func sign(_ ipn: CitconIPNFields, secret: String) throws(CheckoutError) -> String {
        hex(SHA256.hash(data: Data(try stringToSign(ipn, secret: secret).utf8)))
    }

    /// Checks `sign`, and that the fields Till relies on are among the signed ones.
    /// - Returns: the names of the signed fields (the only ones to read).
    /// - Throws: ``CheckoutError`` in category `verification` naming what is wrong.
    @discardableResult
    public static func verify(_ ipn: CitconIPNFields, secret: String) throws(CheckoutError) -> Set<String> {
        guard let sent = ipn["sign"], !sent.isEmpty else {
            throw CheckoutError(.missingField, category: .verification, field: "sign", message: "the IPN is not signed")
        }
        let names = try signedNames(in: ipn)
        for required in requiredSignedFields where !names.contains(required) {
            throw CheckoutError(.invalidField, category: .verification, field: "fields",
                                message: "does not cover \(required); Till reads only signed fields")
        }
        let expected = try sign(ipn, secret: secret)
        guard constantTimeEqual(Array(expected.utf8), Array(sent.lowercased().utf8)) else {
            throw CheckoutError(.signatureMismatch, field: "sign", message: "the sign does not match the signed fields and the API secret")
        }
        return Set(names + ["fields"])
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
