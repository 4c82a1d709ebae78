import Foundation

/// Collects problems found while decoding a configuration, so that one pass reports them all.
package final class IssueCollector: Sendable {
    private let collected = Locked<[ValidationIssue]>([])
    package init() {}
    package func add(_ issue: ValidationIssue) { collected.withLock { $0.append(issue) } }
    package var issues: [ValidationIssue] { collected.withLock { $0 } }
}

extension CodingUserInfoKey {
    package static let tillIssueCollector = CodingUserInfoKey(rawValue: "till.issueCollector")!
}

/// A coding key for any string, to list the keys an object really has.
package struct AnyCodingKey: CodingKey {
    package var stringValue: String
    package var intValue: Int?
    package init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    package init?(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

extension Decoder {
    /// The keys of the current object that `Keys` does not list: the one check behind both strict modes below.
    private func unknownKeys<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws -> [AnyCodingKey] {
        // A key is known when the type's own keys can be made from it: no set built on every decode.
        try container(keyedBy: AnyCodingKey.self).allKeys.filter { Keys(stringValue: $0.stringValue) == nil }
    }

    /// Throws when the object being decoded holds a key `Keys` does not list: an error naming the key's
    /// full path (`body.customer.nickname`), so a misspelt optional field is never silently dropped.
    package func refuseUnknownKeys<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws {
        guard let unknown = try unknownKeys(keys).first else { return }
        let field = (codingPath + [unknown]).fieldPath
        throw DecodingError.dataCorrupted(.init(codingPath: codingPath + [unknown], debugDescription: "unknown key",
            underlyingError: CheckoutError(.invalidField, field: field, message: "unknown key \"\(CheckoutError.printable(unknown.stringValue))\"")))
    }

    /// Decodes one of a closed set of string values; any other is an error naming the path and listing the
    /// values there are (`body.action: "auth" is not one of: sale, authorize, verify`).
    package func decodeOneOf<Value: RawRepresentable & CaseIterable>(_ type: Value.Type) throws -> Value where Value.RawValue == String {
        let raw = try singleValueContainer().decode(String.self)
        guard let value = Value(rawValue: raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not one of the values",
                underlyingError: CheckoutError(.invalidField, field: codingPath.isEmpty ? nil : codingPath.fieldPath,
                                               message: "\"\(CheckoutError.printable(raw))\" is not one of: "
                                                + Value.allCases.map(\.rawValue).joined(separator: ", "))))
        }
        return value
    }

    /// Collects, while a configuration is loaded (``IssueCollector`` in the decoder's user info), every key of the
    /// current object that `Keys` does not list: a misspelt key would otherwise be silently ignored and its
    /// default used. Outside a configuration load it checks nothing.
    package func reportUnknownKeys<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws {
        guard let collector = userInfo[.tillIssueCollector] as? IssueCollector else { return }
        let unknown = try unknownKeys(keys)
        guard !unknown.isEmpty else { return }
        let allowed = Keys.allCases.map(\.stringValue).sorted().joined(separator: ", ")
        for key in unknown {
            collector.add(ValidationIssue(field: (codingPath + [key]).fieldPath, code: .invalidField,
                                          message: "unknown key \"\(CheckoutError.printable(key.stringValue))\" (allowed: \(allowed))"))
        }
    }
}
