import Foundation

/// Collects problems found while decoding a configuration, so that one pass reports them all.
final class IssueCollector: Sendable {
    private let collected = Locked<[ValidationIssue]>([])
    func add(_ issue: ValidationIssue) { collected.withLock { $0.append(issue) } }
    var issues: [ValidationIssue] { collected.withLock { $0 } }
}

extension CodingUserInfoKey {
    static let tillIssueCollector = CodingUserInfoKey(rawValue: "till.issueCollector")!
}

/// A coding key for any string, to list the keys an object really has.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    init?(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

extension Decoder {
    /// Reports keys of the current object that `allowed` does not list: a misspelt key would
    /// otherwise be silently ignored and its default used.
    /// Throws when the object being decoded holds a key `Keys` does not list: an error naming the key's
    /// full path (`body.customer.nickname`), so a misspelt optional field is never silently dropped.
    package func refuseUnknownKeys<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws {
        // A key is known when the type's own keys can be made from it: no set built on every decode.
        guard let unknown = try container(keyedBy: AnyCodingKey.self).allKeys.first(where: { Keys(stringValue: $0.stringValue) == nil }) else {
            return
        }
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

    package func reportUnknownKeys(allowed: Set<String>) throws {
        guard let collector = userInfo[.tillIssueCollector] as? IssueCollector else { return }
        let container = try self.container(keyedBy: AnyCodingKey.self)
        for key in container.allKeys where !allowed.contains(key.stringValue) {
            let path = (codingPath + [key]).fieldPath
            collector.add(ValidationIssue(field: path, code: .invalidField,
                                          message: "unknown key \"\(CheckoutError.printable(key.stringValue))\" (allowed: \(allowed.sorted().joined(separator: ", ")))"))
        }
    }
}

/// Loads and validates Till configuration files.
public enum ConfigurationLoader {
    /// Decodes `data` as `type` and validates it with `validate`, collecting every problem in one
    /// pass (unknown keys, pasted secrets, wrong types, then the semantic checks). Returns the value only
    /// if there is no problem; otherwise every problem found, each with its path.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data,
                                            validate: (T) -> [ValidationIssue] = { _ in [] }) -> Result<T, ConfigurationError> {
        let collector = IssueCollector()
        let decoder = JSONDecoder()
        decoder.userInfo[.tillIssueCollector] = collector
        let value: T
        do {
            value = try decoder.decode(type, from: data)
        } catch let error as DecodingError {
            return .failure(ConfigurationError(issues: collector.issues + [issue(from: error)]))
        } catch {
            return .failure(ConfigurationError(issues: [ValidationIssue(field: "$", code: .malformedBody, message: "unreadable configuration")]))
        }
        let issues = collector.issues + validate(value)
        return issues.isEmpty ? .success(value) : .failure(ConfigurationError(issues: issues))
    }

    /// A decoding error as a ``ValidationIssue`` with the path of the offending field.
    public static func issue(from error: DecodingError) -> ValidationIssue {
        func path(_ codingPath: [any CodingKey]) -> String { codingPath.isEmpty ? "$" : codingPath.fieldPath }
        switch error {
        case .typeMismatch(let type, let context):
            return ValidationIssue(field: path(context.codingPath), code: .invalidField, message: "expected \(describe(type))")
        case .valueNotFound(let type, let context):
            return ValidationIssue(field: path(context.codingPath), code: .missingField, message: "expected \(describe(type)), found null")
        case .keyNotFound(let key, let context):
            return ValidationIssue(field: (context.codingPath + [key]).fieldPath, code: .missingField, message: "is required")
        case .dataCorrupted(let context):
            if let underlying = context.underlyingError as? CheckoutError {
                return ValidationIssue(field: underlying.field ?? context.codingPath.fieldPath, code: underlying.code, message: underlying.message)
            }
            let path = context.codingPath.isEmpty ? "$" : context.codingPath.fieldPath
            return ValidationIssue(field: path, code: .malformedBody,
                                   message: context.codingPath.isEmpty ? "not valid JSON" : context.debugDescription)
        @unknown default:
            return ValidationIssue(field: "$", code: .malformedBody, message: "unreadable configuration")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "\(type)".contains("Array") ? "an array" : "an object"
        }
    }
}

/// Every problem found in a configuration.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var issues: [ValidationIssue]
    public init(issues: [ValidationIssue]) { self.issues = issues }
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
