import Foundation
import Till
import TillOrchestration

/// The `server.console` block: the operator console's own listener and who may sign in. Off unless `listen` is set;
/// never on the public API's listener nor the metrics'.
public struct ConsoleSettings: Sendable, Hashable, Codable {
    /// One person (or role) who may sign in: a name for the audit log and a token only they hold.
    public struct Operator: Sendable, Hashable, Codable {
        /// Shown in the audit log and the server's log: letters, digits, `.`, `_` and `-`, at most 64.
        public var name: String
        /// Where the operator's sign-in token is (at least 32 characters; keep it out of the file, like any secret).
        public var token: CredentialReference

        public init(name: String, token: CredentialReference) {
            self.name = name
            self.token = token
        }

        private enum CodingKeys: String, CodingKey, CaseIterable { case name, token }

        public init(from decoder: any Decoder) throws {
            try decoder.reportUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            token = try c.decode(CredentialReference.self, forKey: .token)
        }
    }

    /// `host:port` of the console's listener (`127.0.0.1:9465`); absent, there is no console.
    public var listen: String?
    public var operators: [Operator]
    /// How long a sign-in lasts. Sessions are stateless: signing out clears the browser's cookie, and a copied cookie
    /// works until then; rotating the operator's token ends every session at once.
    public var sessionMinutes: Int

    /// A token shorter than this is refused at start.
    public static let minimumTokenLength = 32

    public init(listen: String? = nil, operators: [Operator] = [], sessionMinutes: Int = 120) {
        self.listen = listen
        self.operators = operators
        self.sessionMinutes = sessionMinutes
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case listen, operators, sessionMinutes }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ConsoleSettings()
        listen = try c.decodeIfPresent(String.self, forKey: .listen)
        operators = try c.decodeIfPresent([Operator].self, forKey: .operators) ?? d.operators
        sessionMinutes = try c.decodeIfPresent(Int.self, forKey: .sessionMinutes) ?? d.sessionMinutes
    }

    /// The listen address split into host and port.
    public var hostAndPort: (host: String, port: Int)? { listen.flatMap(ServerSettings.hostAndPort) }

    /// Problems with the block. The console may share no port with the API (`apiListen`) nor the metrics.
    public func validate(path: String, apiListen: String, metricsListen: String?) -> [ValidationIssue] {
        guard let listen else { return [] }
        var issues: [ValidationIssue] = []
        if hostAndPort == nil {
            issues.append(.init(field: "\(path).listen", code: .invalidField, message: "expected host:port, such as 127.0.0.1:9465"))
        } else if ServerSettings.samePort(listen, apiListen) {
            issues.append(.init(field: "\(path).listen", code: .invalidField, message: "must differ from server.listen: the console is never served on the public API"))
        } else if let metricsListen, ServerSettings.samePort(listen, metricsListen) {
            issues.append(.init(field: "\(path).listen", code: .invalidField, message: "must differ from server.metrics.listen"))
        }
        if operators.isEmpty {
            issues.append(.init(field: "\(path).operators", code: .missingField, message: "a console needs at least one operator who may sign in"))
        }
        var names: Set<String> = []
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        for (index, person) in operators.enumerated() {
            if person.name.isEmpty || person.name.count > 64 || !person.name.allSatisfy(allowed.contains) {
                issues.append(.init(field: "\(path).operators[\(index)].name", code: .invalidField,
                                    message: "1 to 64 letters, digits, '.', '_' or '-'"))
            } else if !names.insert(person.name).inserted {
                issues.append(.init(field: "\(path).operators[\(index)].name", code: .invalidField, message: "two operators share the name \"\(person.name)\""))
            }
        }
        if !(5...1_440).contains(sessionMinutes) {
            issues.append(.init(field: "\(path).sessionMinutes", code: .invalidField, message: "between 5 and 1440 (a day)"))
        }
        return issues
    }
}

/// An operator who may sign in, with the token resolved.
public struct ResolvedOperator: Sendable {
    public var name: String
    public var token: String

    public init(name: String, token: String) {
        self.name = name
        self.token = token
    }
}

extension ConsoleSettings {
    /// Each operator's token, read from where its reference points; every problem listed by path (never a token).
    public func resolveOperators(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> [ResolvedOperator] {
        var problems: [String] = []
        var resolved: [ResolvedOperator] = []
        for (index, person) in operators.enumerated() {
            let field = "server.console.operators[\(index)].token"
            do {
                let token = try person.token.resolve(field: field, environment: environment)
                if token.count < Self.minimumTokenLength {
                    problems.append("\(field): a sign-in token needs at least \(Self.minimumTokenLength) characters")
                } else if resolved.contains(where: { $0.token == token }) {
                    problems.append("\(field): two operators share one token")
                }
                resolved.append(ResolvedOperator(name: person.name, token: token))
            } catch {
                problems.append(error.description)
            }
        }
        guard problems.isEmpty else { throw StartupError(problems: problems) }
        return resolved
    }
}
