import Foundation
import Testing
import Yams

/// A JSON value, as a body or a schema holds it.
indirect enum JSONValue: Equatable, Sendable, Decodable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let value = try? c.decode(Bool.self) { self = .bool(value); return }
        if let value = try? c.decode(Int64.self) { self = .integer(value); return }
        if let value = try? c.decode(Double.self) { self = .number(value); return }
        if let value = try? c.decode(String.self) { self = .string(value); return }
        if let value = try? c.decode([JSONValue].self) { self = .array(value); return }
        self = .object(try c.decode([String: JSONValue].self))
    }

    /// A value Yams loaded (mappings with any hashable keys: a status code `200` is an integer key).
    init(yaml value: Any?) {
        switch value {
        case nil, is NSNull: self = .null
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Double: self = .number(value)
        case let value as String: self = .string(value)
        case let value as [Any]: self = .array(value.map { JSONValue(yaml: $0) })
        case let value as [String: Any]: self = .object(value.mapValues { JSONValue(yaml: $0) })
        case let value as [AnyHashable: Any]:
            self = .object(Dictionary(value.map { ("\($0.key.base)", JSONValue(yaml: $0.value)) }, uniquingKeysWith: { first, _ in first }))
        default: self = .string("\(value!)")
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }
    var string: String? { if case .string(let value) = self { value } else { nil } }
    var array: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    var object: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }
    var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }
    var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
}

/// docs/openapi.yaml as a contract: which routes exist, and whether a request or answer the server really
/// exchanged is what the document says. The schema subset it checks: `type` (one or a list), `properties`,
/// `required`, `additionalProperties`, `items`, `enum`, `const`, `$ref` to `#/components/schemas`, `oneOf`,
/// `anyOf`, `allOf`, `if`/`then`/`else`, `minimum`, `maximum`, `minLength`, `maxLength`, `pattern`, `minItems`, `maxItems`.
/// Any other keyword in a schema is itself a failure, so the document never says more than is checked.
struct OpenAPIContract: Sendable {
    let document: JSONValue

    /// The repository's docs/openapi.yaml.
    static let repository: Result<OpenAPIContract, any Error> = Result {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")
        return OpenAPIContract(document: JSONValue(yaml: try Yams.load(yaml: String(contentsOf: url, encoding: .utf8))))
    }

    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
    static let keywords: Set<String> = ["type", "properties", "required", "additionalProperties", "items", "enum", "const", "$ref", "oneOf",
                                        "anyOf", "allOf", "minimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
                                        "description", "title", "examples", "example", "format", "default", "deprecated", "readOnly",
                                        "writeOnly", "propertyNames", "if", "then", "else"]

    /// Every documented operation as `METHOD /path/{param}`.
    var operations: Set<String> {
        var out: Set<String> = []
        for (path, item) in document["paths"]?.object ?? [:] {
            for method in Self.methods where item[method] != nil { out.insert("\(method.uppercased()) \(path)") }
        }
        return out
    }

    /// The documented path template `path` (no query) matches, if any.
    func template(for path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let templates = (document["paths"]?.object ?? [:]).keys.sorted()
        // Literal segments win over parameters (`/v1/quarantine` over a `{x}`).
        var best: (String, Int)?
        for template in templates {
            let parts = template.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == segments.count else { continue }
            var literals = 0
            var matches = true
            for (part, segment) in zip(parts, segments) {
                if part.hasPrefix("{") && part.hasSuffix("}") { if segment.isEmpty { matches = false; break } } else if part == segment {
                    literals += 1
                } else { matches = false; break }
            }
            if matches, literals > best?.1 ?? -1 { best = (template, literals) }
        }
        return best?.0
    }

    /// What is wrong with one exchange, as the document tells it: an undocumented route, method or status; an
    /// answer body (JSON) that is not its schema; a request body the server accepted (2xx) that is not its schema.
    func violations(method: String, path: String, status: Int, contentType: String?, body: Data,
                    requestBody: Data? = nil) -> [String] {
        let route = "\(method) \(path)"
        guard let template = template(for: path) else {
            // Any other route is 404 in the API's error shape (the document says so once, for every path).
            guard status == 404, let value = try? JSONDecoder().decode(JSONValue.self, from: body) else {
                return ["\(route): no documented path (answered \(status))"]
            }
            return validate(value, .object(["$ref": .string("#/components/schemas/ErrorBody")]), at: "answer").map { "\(route) → 404: \($0)" }
        }
        guard let operation = document["paths"]?[template]?[method.lowercased()] else {
            return status == 404 ? [] : ["\(route): \(method) is not documented on \(template) (answered \(status))"]
        }
        let responses = operation["responses"]
        let key = "\(status)"
        guard let response = responses?[key] ?? responses?["\(status / 100)XX"] ?? responses?["default"] else {
            return ["\(route): status \(status) is not documented for \(method) \(template); body: \(String(decoding: body.prefix(300), as: UTF8.self))"]
        }
        var problems: [String] = []
        let resolved = resolve(response)
        if let type = contentType?.split(separator: ";").first.map({ $0.trimmingCharacters(in: .whitespaces) }), type == "application/json" {
            if let schema = resolved["content"]?["application/json"]?["schema"] {
                do {
                    let value = try JSONDecoder().decode(JSONValue.self, from: body)
                    problems += validate(value, schema, at: "answer").map { "\(route) → \(status): \($0)" }
                } catch {
                    problems.append("\(route) → \(status): the answer is not JSON")
                }
            } else {
                problems.append("\(route) → \(status): answered JSON, documented without a JSON body")
            }
        } else if let type = contentType?.split(separator: ";").first.map(String.init), !body.isEmpty,
                  resolved["content"]?.object.map({ $0.keys.contains(type) || $0.keys.contains("*/*") || $0.keys.contains("text/plain") }) == false {
            problems.append("\(route) → \(status): answered \(type), documented as \(resolved["content"]?.object?.keys.sorted() ?? [])")
        }
        if (200..<300).contains(status), let requestBody, !requestBody.isEmpty,
           let schema = resolve(operation["requestBody"] ?? .null)["content"]?["application/json"]?["schema"],
           let value = try? JSONDecoder().decode(JSONValue.self, from: requestBody) {
            problems += validate(value, schema, at: "request").map { "\(route) (accepted request): \($0)" }
        }
        return problems
    }

    /// A `$ref` followed to its target.
    func resolve(_ value: JSONValue) -> JSONValue {
        guard let reference = value["$ref"]?.string, reference.hasPrefix("#/") else { return value }
        var node = document
        for part in reference.dropFirst(2).split(separator: "/") { node = node[String(part)] ?? .null }
        return resolve(node)
    }

    /// Every way `value` breaks `schema`, each with the value's path.
    func validate(_ value: JSONValue, _ schema: JSONValue, at path: String) -> [String] {
        if case .bool(let allowed) = schema { return allowed ? [] : ["\(path): no value is allowed here"] }
        guard let keys = schema.object else { return ["\(path): the schema is not an object"] }
        var problems = keys.keys.filter { !Self.keywords.contains($0) }.sorted().map { "\(path): schema keyword \($0) is not checked" }
        if schema["$ref"] != nil { problems += validate(value, resolve(schema), at: path) }
        if let types = schema["type"] {
            let allowed = types.array?.compactMap(\.string) ?? [types.string].compactMap { $0 }
            if !allowed.contains(where: { Self.matches(value, type: $0) }) {
                return problems + ["\(path): expected \(allowed.joined(separator: " or ")), got \(Self.describe(value))"]
            }
        }
        if let choices = schema["enum"]?.array, !choices.contains(value) {
            problems.append("\(path): \(Self.describe(value)) is not one of the documented values")
        }
        if let constant = schema["const"], constant != value { problems.append("\(path): expected \(Self.describe(constant))") }
        for part in schema["allOf"]?.array ?? [] { problems += validate(value, part, at: path) }
        if let condition = schema["if"] {
            let branch = validate(value, condition, at: path).isEmpty ? schema["then"] : schema["else"]
            if let branch { problems += validate(value, branch, at: path) }
        }
        if let parts = schema["anyOf"]?.array, !parts.contains(where: { validate(value, $0, at: path).isEmpty }) {
            problems.append("\(path): matches none of anyOf")
        }
        if let parts = schema["oneOf"]?.array {
            let matching = parts.filter { validate(value, $0, at: path).isEmpty }.count
            if matching != 1 {
                let closest = parts.map { validate(value, $0, at: path) }.min { $0.count < $1.count } ?? []
                problems.append("\(path): matches \(matching) of oneOf" + (closest.isEmpty ? "" : " (closest: \(closest.prefix(3).joined(separator: "; ")))"))
            }
        }
        switch value {
        case .object(let members):
            let properties = schema["properties"]?.object ?? [:]
            for name in schema["required"]?.array?.compactMap(\.string) ?? [] where members[name] == nil {
                problems.append("\(path).\(name): required, absent")
            }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                if let property = properties[name] {
                    problems += validate(member, property, at: "\(path).\(name)")
                } else if let extra = schema["additionalProperties"] {
                    if case .bool(false) = extra {
                        problems.append("\(path).\(name): not documented")
                    } else if case .object = extra {
                        problems += validate(member, extra, at: "\(path).\(name)")
                    }
                }
            }
        case .array(let items):
            if let schemaItems = schema["items"] {
                for (index, item) in items.enumerated() { problems += validate(item, schemaItems, at: "\(path)[\(index)]") }
            }
            if let least = schema["minItems"]?.double, Double(items.count) < least { problems.append("\(path): fewer than \(Int(least)) items") }
            if let most = schema["maxItems"]?.double, Double(items.count) > most { problems.append("\(path): more than \(Int(most)) items") }
        case .string(let text):
            if let least = schema["minLength"]?.double, Double(text.count) < least { problems.append("\(path): shorter than \(Int(least))") }
            if let most = schema["maxLength"]?.double, Double(text.count) > most { problems.append("\(path): longer than \(Int(most))") }
            if let pattern = schema["pattern"]?.string {
                if let regex = try? NSRegularExpression(pattern: pattern) {
                    if regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil {
                        problems.append("\(path): \"\(text.prefix(60))\" does not match \(pattern)")
                    }
                } else {
                    problems.append("\(path): the pattern \(pattern) is not a regular expression")
                }
            }
        case .integer, .number:
            let number = value.double ?? 0
            if let least = schema["minimum"]?.double, number < least { problems.append("\(path): below \(least)") }
            if let most = schema["maximum"]?.double, number > most { problems.append("\(path): above \(most)") }
        default:
            break
        }
        return problems
    }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null), ("integer", .integer),
             ("number", .integer), ("number", .number): true
        case ("integer", .number(let number)): number.rounded() == number
        default: false
        }
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .object: "an object"
        case .array: "an array"
        case .string(let text): "\"\(text.prefix(60))\""
        case .integer(let number): "\(number)"
        case .number(let number): "\(number)"
        case .bool(let flag): "\(flag)"
        case .null: "null"
        }
    }
}
