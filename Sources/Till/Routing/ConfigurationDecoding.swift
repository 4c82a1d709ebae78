import Foundation

/// Collects problems found while decoding a configuration, so that one pass reports them all.
final class IssueCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [ValidationIssue] = []
    func add(_ issue: ValidationIssue) { lock.lock(); collected.append(issue); lock.unlock() }
    var issues: [ValidationIssue] { lock.lock(); defer { lock.unlock() }; return collected }
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
    func reportUnknownKeys(allowed: Set<String>) throws {
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
    /// Decodes `data` and validates it. Returns the configuration only if there is no problem;
    /// otherwise every problem found, each with its path.
    ///
    /// - Parameter modules: the gateway modules this build knows, by module name, with their
    ///   declared capabilities.
    public static func load(_ data: Data, modules: [String: GatewayCapabilities]) -> Result<TillConfiguration, ConfigurationError> {
        let collector = IssueCollector()
        let decoder = JSONDecoder()
        decoder.userInfo[.tillIssueCollector] = collector
        let configuration: TillConfiguration
        do {
            configuration = try decoder.decode(TillConfiguration.self, from: data)
        } catch let error as DecodingError {
            return .failure(ConfigurationError(issues: collector.issues + [issue(from: error)]))
        } catch {
            return .failure(ConfigurationError(issues: [ValidationIssue(field: "$", code: .malformedBody, message: "unreadable configuration")]))
        }
        let issues = collector.issues + configuration.validate(modules: modules)
        return issues.isEmpty ? .success(configuration) : .failure(ConfigurationError(issues: issues))
    }

    /// Reads and loads a file.
    public static func load(contentsOf url: URL, modules: [String: GatewayCapabilities]) -> Result<TillConfiguration, ConfigurationError> {
        do {
            return load(try Data(contentsOf: url), modules: modules)
        } catch {
            return .failure(ConfigurationError(issues: [ValidationIssue(field: "$", code: .missingField,
                                                                        message: "cannot read \(url.path)")]))
        }
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
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
