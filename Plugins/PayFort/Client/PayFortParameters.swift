import Foundation
import TillGatewayKit

/// A parameter value as PayFort signs it: a JSON value whose object members keep their order
/// (nested objects such as Apple Pay's `apple_header` are signed in insertion order, not sorted) and
/// whose numbers keep their exact text (`1000` signs as `1000`, `1.50` as `1.50`).
public typealias PayFortValue = OrderedJSON

extension OrderedJSON {
    /// The value as PayFort renders it inside the string to sign: scalars as their text, `null` as
    /// nothing, objects as `{k=v, k=v}` in insertion order (empty values kept), arrays as `[a, b]`.
    var payFortSigningText: String {
        switch self {
        case .string(let text), .number(let text): text
        case .bool(let value): value ? "true" : "false"
        case .null: ""
        case .object(let members): "{" + members.map { "\($0.key)=\($0.value.payFortSigningText)" }.joined(separator: ", ") + "}"
        case .array(let items): "[" + items.map(\.payFortSigningText).joined(separator: ", ") + "]"
        }
    }

    /// The text of a scalar (a string, a number's exact text, `true` or `false`); nil for anything else.
    var payFortText: String? {
        switch self {
        case .string(let text), .number(let text): text
        case .bool(let value): value ? "true" : "false"
        default: nil
        }
    }
}

/// PayFort's top-level parameters, in order, as received or as to be sent.
///
/// Parsed strictly: a JSON body through ``OrderedJSON/parse(_:field:maxDepth:)`` and a form body
/// through ``FormFields/decode(_:field:)``, so a key that appears twice (at any level) is refused with
/// ``CheckoutError/Code/duplicateField`` rather than read one way by the signature and another by
/// the code that acts on it.
public struct PayFortParameters: Sendable, Hashable, Sequence {
    /// The parameters, in order.
    public private(set) var members: [OrderedJSON.Member]

    /// Parameters from members, in the given order.
    public init(_ members: [OrderedJSON.Member] = []) { self.members = members }

    /// Parameters from plain strings, in the given order.
    public init(strings: [(String, String)]) {
        members = strings.map { OrderedJSON.Member(key: $0.0, value: .string($0.1)) }
    }

    /// Iterates over the parameters in order.
    public func makeIterator() -> IndexingIterator<[OrderedJSON.Member]> { members.makeIterator() }

    /// The value of `key`, if present. Setting a present key replaces its value in place; setting a
    /// new one appends it; setting `nil` removes it.
    public subscript(key: String) -> PayFortValue? {
        get { members.first { $0.key == key }?.value }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append(OrderedJSON.Member(key: key, value: newValue))
            }
        }
    }

    /// The text of `key` (a string, a number's exact text, or a boolean), if present.
    public func text(_ key: String) -> String? { self[key]?.payFortText }

    /// The text of `key` when it is present and not empty. A verified message is read only through
    /// this: under the .NET rule an empty value is not signed (``PayFortSignature/EmptyValues``), so
    /// it must read as absent.
    public func signedText(_ key: String) -> String? {
        guard let text = text(key), !text.isEmpty else { return nil }
        return text
    }

    /// The names of the parameters, in order.
    public var keys: [String] { members.map(\.key) }

    /// The parameters as one JSON object.
    public var object: PayFortValue { .object(members) }

    /// Parses a JSON object, keeping member order and number text at every level.
    /// - Parameter field: the name of the body in errors.
    /// - Throws: ``CheckoutError/Code/malformedBody`` naming `field` (the byte offset in the message),
    ///   also for a JSON value that is not an object; ``CheckoutError/Code/duplicateField`` naming the
    ///   path of a repeated key (`body.amount`).
    public static func json(_ data: Data, field: String = "body") throws(CheckoutError) -> PayFortParameters {
        guard case .object(let members) = try OrderedJSON.parse(data, field: field) else {
            throw CheckoutError(.malformedBody, field: field, message: "expected a JSON object")
        }
        return PayFortParameters(members)
    }

    /// Parses `application/x-www-form-urlencoded`: `+` is a space and values are URL-decoded, which is
    /// what PayFort signs.
    /// - Parameter field: the name of the body in errors.
    /// - Throws: ``CheckoutError/Code/malformedBody`` naming `field` for a bad escape, text that is
    ///   not UTF-8 or a field without a name; ``CheckoutError/Code/duplicateField`` naming
    ///   `<field>.<name>` for a field that appears twice.
    public static func form(_ data: Data, field: String = "body") throws(CheckoutError) -> PayFortParameters {
        PayFortParameters(try FormFields.decode(data, field: field).pairs.map { OrderedJSON.Member(key: $0.name, value: .string($0.value)) })
    }

    /// The query of a URL PayFort sent the customer back to, decoded as a form (`+` is a space,
    /// `%XX` a byte), without the items the merchant's own `returnURL` carried (Till's state; the PHP
    /// SDK likewise drops its own `discriminator` before it verifies): those are the merchant's, not
    /// PayFort's, and are not signed.
    /// - Throws: ``CheckoutError/Code/duplicateField`` naming `<field>.<name>` for a name that appears
    ///   twice; ``CheckoutError/Code/malformedBody`` for a bad escape.
    public static func query(of url: URL, returnURL: URL?, field: String = "return") throws(CheckoutError) -> PayFortParameters {
        let raw = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? ""
        let own = returnURL.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
        let fields = try FormFields.decode(Data(raw.utf8), field: field)
        return PayFortParameters(fields.pairs.filter { pair in !own.contains { $0.name == pair.name && ($0.value ?? "") == pair.value } }
            .map { OrderedJSON.Member(key: $0.name, value: .string($0.value)) })
    }

    /// Parameters from a flat dictionary (a ``Submission``'s fields, an SDK's response), sorted by key
    /// so that the order never depends on hashing.
    public init(dictionary: [String: String]) {
        self.init(strings: dictionary.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// The parameters as a compact JSON object, members in order.
    public func jsonData() -> Data { object.serialized() }

    /// Scalar parameters as plain strings (nested values are left out).
    public var strings: [String: String] {
        var out: [String: String] = [:]
        for member in members { if let text = member.value.payFortText { out[member.key] = text } }
        return out
    }
}
