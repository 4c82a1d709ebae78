import Foundation
import Till

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
