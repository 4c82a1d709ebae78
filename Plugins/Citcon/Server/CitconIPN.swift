import Crypto
import Foundation
import TillCitcon
import TillGatewayKit

/// The fields of an IPN as Citcon sent them: names in the order received, values verbatim. Parsed
/// from a JSON object or a form-encoded body; a field sent twice is refused, never guessed.
///
/// JSON values are read as text the way they always have been: strings verbatim, integers in plain
/// decimal, other numbers as Swift prints them, `true`/`false`, and `null` as empty. A nested object
/// or array (the IPN document lists a `payment` field without describing it) is kept as its compact
/// JSON text for signing only: Till never reads what is inside it.
public struct CitconIPNFields: Sendable, Hashable {
    /// Field names in the order they were received.
    public private(set) var names: [String]
    private var values: [String: Value]

    enum Value: Sendable, Hashable {
        case text(String)
        /// A JSON object or array, as compact JSON text: signed over when listed, never read.
        case nested(String)
    }

    /// The value of `name` when present and a scalar.
    public subscript(name: String) -> String? {
        if case .text(let text)? = values[name] { return text }
        return nil
    }

    /// The compact JSON text of `name` when present and a nested object or array.
    public func nestedJSON(_ name: String) -> String? {
        if case .nested(let text)? = values[name] { return text }
        return nil
    }

    /// Whether the body carried `name` at all.
    public func contains(_ name: String) -> Bool { values[name] != nil }

    /// Fields built in code (tests, the signature debugger). A repeated name keeps its first value.
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
    ///   `duplicate_field` naming a field that appears twice (`status`; `payment.method` inside a
    ///   JSON object).
    public static func parse(_ body: Data, mediaType: String? = nil) throws(CheckoutError) -> CitconIPNFields {
        let trimmedFirst = body.first { ![UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")].contains($0) }
        do throws(CheckoutError) {
            if mediaType == "application/json" || (mediaType != "application/x-www-form-urlencoded" && trimmedFirst == UInt8(ascii: "{")) {
                return try json(body)
            }
            return try form(body)
        } catch where error.code == .duplicateField {
            // The kit names `body.<name>`; an IPN's errors name its fields as Citcon does.
            var renamed = error
            if let field = error.field, field.hasPrefix(bodyField + ".") { renamed.field = String(field.dropFirst(bodyField.count + 1)) }
            throw renamed
        }
    }

    /// The name of the body in errors.
    private static let bodyField = "body"

    static func json(_ body: Data) throws(CheckoutError) -> CitconIPNFields {
        guard let members = try OrderedJSON.parse(body, field: bodyField).objectMembers else {
            throw CheckoutError(.malformedBody, field: bodyField, message: "not a JSON object of fields")
        }
        var names: [String] = []
        var values: [String: Value] = [:]
        for member in members {
            names.append(member.key)
            values[member.key] = value(of: member.value)
        }
        return CitconIPNFields(names: names, values: values)
    }

    /// A JSON value as the IPN's text.
    private static func value(of json: OrderedJSON) -> Value {
        switch json {
        case .string(let text): .text(text)
        case .number(let text): .text(numberText(text))
        case .bool(let flag): .text(flag ? "true" : "false")
        case .null: .text("")
        case .object, .array: .nested(String(decoding: json.serialized(), as: UTF8.self))
        }
    }

    /// A JSON number as IPNs have always been read: an integer that fits 64 bits in plain decimal
    /// (`1999`, `1.0` → `1`), any other number as Swift prints the `Double` (`19.99`).
    static func numberText(_ text: String) -> String {
        if let integer = Int64(text) { return String(integer) }
        guard let double = Double(text) else { return text }
        if double.rounded(.towardZero) == double, let integer = Int64(exactly: double) { return String(integer) }
        return String(double)
    }

    static func form(_ body: Data) throws(CheckoutError) -> CitconIPNFields {
        let fields = try FormFields.decode(body, field: bodyField)
        guard !fields.pairs.isEmpty else {
            throw CheckoutError(.malformedBody, field: bodyField, message: "the body is empty")
        }
        return CitconIPNFields(names: fields.names, values: Dictionary(uniqueKeysWithValues: fields.pairs.map { ($0.name, .text($0.value)) }))
    }
}

/// Citcon's IPN signature: `hex(SHA-256("k1=v1&k2=v2…&secret=<API secret>"))` over the pairs whose
/// names are listed in `fields`, plus `fields` itself, sorted by name, values not URL-encoded.
///
/// Citcon's document lists a `payment` field without saying what it holds or how it signs when it is
/// a nested object. Till accepts two renderings of a listed nested value, and reads nothing inside
/// it either way: its compact JSON text (Till's choice), and `Array`, the text the one published
/// reader that lists `payment` (a third-party WooCommerce plugin interpolating a decoded JSON object
/// in PHP) signs.
public enum CitconSignature {
    /// How a listed nested value (a JSON object or array) is written into the string to sign.
    public enum NestedRendering: String, Sendable, CaseIterable {
        /// Its compact JSON text, members in the order sent.
        case json
        /// `Array`: what a PHP reader that decodes the IPN into arrays signs.
        case phpArray
    }

    /// The fields Till needs signed before it believes an IPN about money (`charge` and `refund`):
    /// anything unsigned could have been rewritten on the way.
    public static let requiredSignedFields = ["id", "transaction_type", "reference", "status", "amount", "currency"]

    /// The fields that must be signed for an IPN of `transactionType` (`nil`: `transaction_type`
    /// itself is not signed). `charge`, `refund` and any type that is not signed need
    /// ``requiredSignedFields``; a `chargeback` needs `id, transaction_type, reference, status`; a
    /// `vault` or any other type needs `transaction_type` (and, checked by ``verify(_:secret:)``, a
    /// signed `reference` or `id`). None but money IPNs needs an amount.
    public static func requiredSignedFields(for transactionType: String?) -> [String] {
        switch transactionType {
        case nil, "charge", "refund": requiredSignedFields
        case "chargeback": ["id", "transaction_type", "reference", "status"]
        default: ["transaction_type"]
        }
    }

    /// The names `fields` lists, checked: no empty or repeated names, never `sign`, and every one
    /// present in the body.
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
            names.append(name)
        }
        return names
    }

    /// The exact string Citcon hashes, secret included (for the signature debugger), with listed
    /// nested values written as `nested` says.
    public static func stringToSign(_ ipn: CitconIPNFields, secret: String, nested: NestedRendering = .json) throws(CheckoutError) -> String {
        var names = try signedNames(in: ipn)
        if !names.contains("fields") { names.append("fields") }
        let pairs = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { name -> String in
            if let text = ipn[name] { return "\(name)=\(text)" }
            switch nested {
            case .json: return "\(name)=\(ipn.nestedJSON(name) ?? "")"
            case .phpArray: return "\(name)=Array"
            }
        }
        return pairs.joined(separator: "&") + "&secret=" + secret
    }

    /// The lower-case hex `sign` for `ipn`.
    public static func sign(_ ipn: CitconIPNFields, secret: String, nested: NestedRendering = .json) throws(CheckoutError) -> String {
        Hex.encode(SHA256.hash(data: Data(try stringToSign(ipn, secret: secret, nested: nested).utf8)))
    }

    /// Whether `fields` lists a nested value (so more than one rendering is tried).
    public static func listsNestedValue(_ ipn: CitconIPNFields) -> Bool {
        ((try? signedNames(in: ipn)) ?? []).contains { ipn.nestedJSON($0) != nil }
    }

    /// The fields that must be signed for this IPN, by its signed `transaction_type`.
    public static func requiredSignedFields(for ipn: CitconIPNFields, signed names: [String]) -> [String] {
        requiredSignedFields(for: names.contains("transaction_type") ? (ipn["transaction_type"] ?? "") : nil)
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
        for required in requiredSignedFields(for: ipn, signed: names) where !names.contains(required) {
            throw CheckoutError(.invalidField, category: .verification, field: "fields",
                                message: "does not cover \(required); Till reads only signed fields")
        }
        for name in ["reference", "id", "transaction_type", "status", "amount", "currency", "amount_refunded", "amount_captured"]
        where names.contains(name) && ipn[name] == nil {
            throw CheckoutError(.invalidField, category: .verification, field: name, message: "is not a plain value")
        }
        if !names.contains("reference") && !names.contains("id") {
            throw CheckoutError(.invalidField, category: .verification, field: "fields",
                                message: "covers neither reference nor id; Till cannot tell what the IPN is about")
        }
        let renderings: [NestedRendering] = names.contains { ipn.nestedJSON($0) != nil } ? NestedRendering.allCases : [.json]
        var matched = false
        for rendering in renderings {
            let expected = try sign(ipn, secret: secret, nested: rendering)
            if ConstantTime.equals(expected, sent.lowercased()) { matched = true }
        }
        guard matched else {
            throw CheckoutError(.signatureMismatch, field: "sign", message: "the sign does not match the signed fields and the API secret")
        }
        return Set(names + ["fields"])
    }
}
