import Foundation
import Till
import TillOrchestration
import TillGatewayKit

// The merchant server's configuration file and secret resolution. They live here, not in the module
// an app links: an app never reads secrets or server settings.

/// A Till configuration file: one or more merchants. See docs/configuration.md.
public struct TillConfiguration: Sendable, Hashable, Codable {
    public var merchants: [MerchantConfiguration]
    /// Settings of the merchant server (`till server`); absent in an app-side file.
    public var server: ServerSettings?

    public init(merchants: [MerchantConfiguration], server: ServerSettings? = nil) {
        self.merchants = merchants
        self.server = server
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case merchants, server
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        merchants = try c.decode([MerchantConfiguration].self, forKey: .merchants)
        server = try c.decodeIfPresent(ServerSettings.self, forKey: .server)
    }

    /// The merchant with `id`.
    public func merchant(_ id: String) -> MerchantConfiguration? { merchants.first { $0.id == id } }

    /// Every semantic problem, each with its path (`merchants[0].routing.rules[2].currency`).
    public func validate(modules: [String: GatewayCapabilities]) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        if merchants.isEmpty { issues.append(.init(field: "merchants", code: .missingField, message: "at least one merchant is required")) }
        var seen: Set<String> = []
        for (index, merchant) in merchants.enumerated() {
            let path = "merchants[\(index)]"
            if !seen.insert(merchant.id).inserted {
                issues.append(.init(field: "\(path).id", code: .invalidField, message: "duplicate merchant id \"\(merchant.id)\""))
            }
            issues += merchant.validate(path: path, modules: modules)
        }
        if let server { issues += server.validate(path: "server") }
        // A gateway told with each payment where to post (Citcon, iPayNow) hears nothing without the server's public URL.
        if server?.publicURL == nil {
            for (m, merchant) in merchants.enumerated() {
                for (g, gateway) in merchant.gateways.enumerated() where gateway.enabled && modules[gateway.module]?.notificationURLPerPayment == true {
                    issues.append(.init(field: "server.publicURL", code: .missingField,
                                        message: "merchants[\(m)].gateways[\(g)] (\(gateway.module)) is told with each payment where to post its notification: set the server's public URL, <publicURL>/v1/notifications/\(gateway.id)"))
                }
            }
        }
        return issues
    }
}

/// The merchant server's own settings.
public struct ServerSettings: Sendable, Hashable, Codable {
    /// `host:port` to listen on; port 0 picks a free one.
    public var listen: String
    /// `sqlite:PATH` (the default, `sqlite:till.sqlite`), `postgres://user:password@host:port/database`, or
    /// `postgres://user:password@/database?host=/socket/directory` (see ``PostgresPaymentStore/endpoint(_:)``).
    public var storage: String
    /// The externally reachable base URL, used to build notification URLs for gateways.
    public var publicURL: String?
    /// Request bodies larger than this are refused with 413.
    public var maxBodyBytes: Int
    /// The reconciler that settles attempts nobody settled (``Reconciler``); defaults when absent.
    public var reconciliation: ReconciliationSettings
    /// How the server delivers events to the merchants' webhooks.
    public var events: EventDeliverySettings
    /// `server.metrics`: the Prometheus endpoint's own listener (off by default).
    public var metrics: MetricsSettings
    /// `server.console`: the operator console's own listener and operators (off by default).
    public var console: ConsoleSettings
    /// `server.rateLimits`: the buckets by source address (failed authentication, refused notifications) and how many
    /// buckets are kept. Each merchant's own (per API key, per client secret) are in its `rateLimits`.
    public var rateLimits: ServerRateLimits
    /// A connection on which nothing arrives for this long is closed (between requests, or mid-request).
    public var idleTimeoutSeconds: Double
    /// A request's head and body must arrive within this long of its first byte, however slowly they
    /// trickle in; otherwise the connection is closed.
    public var requestReadTimeoutSeconds: Double
    /// At most this many connections are open at once; further ones wait in the accept queue.
    public var maxConnections: Int
    /// With PostgreSQL storage, the most connections this instance opens to the database (the pool's
    /// size; a request waits for a free one). Unused with SQLite, though still validated.
    public var postgresConnections: Int

    /// The default pool size. A handful of connections keeps the database busy: a larger pool adds
    /// backends contending for the same cores, not throughput (docs/server.md, "Sizing the PostgreSQL
    /// pool", has the measurement).
    public static let defaultPostgresConnections = 8

    public init(listen: String = "127.0.0.1:8080", storage: String = "sqlite:till.sqlite", publicURL: String? = nil,
                maxBodyBytes: Int = 65_536, reconciliation: ReconciliationSettings = ReconciliationSettings(),
                idleTimeoutSeconds: Double = 30, requestReadTimeoutSeconds: Double = 10, maxConnections: Int = 1_024,
                postgresConnections: Int = ServerSettings.defaultPostgresConnections) {
        self.listen = listen
        self.storage = storage
        self.publicURL = publicURL
        self.maxBodyBytes = maxBodyBytes
        self.reconciliation = reconciliation
        self.events = EventDeliverySettings()
        self.metrics = MetricsSettings()
        self.console = ConsoleSettings()
        self.rateLimits = ServerRateLimits()
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.requestReadTimeoutSeconds = requestReadTimeoutSeconds
        self.maxConnections = maxConnections
        self.postgresConnections = postgresConnections
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case listen, storage, publicURL, maxBodyBytes, reconciliation, events, metrics, console, idleTimeoutSeconds, requestReadTimeoutSeconds, maxConnections,
             postgresConnections, rateLimits
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ServerSettings()
        listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? d.listen
        storage = try c.decodeIfPresent(String.self, forKey: .storage) ?? d.storage
        publicURL = try c.decodeIfPresent(String.self, forKey: .publicURL)
        maxBodyBytes = try c.decodeIfPresent(Int.self, forKey: .maxBodyBytes) ?? d.maxBodyBytes
        reconciliation = try c.decodeIfPresent(ReconciliationSettings.self, forKey: .reconciliation) ?? d.reconciliation
        events = try c.decodeIfPresent(EventDeliverySettings.self, forKey: .events) ?? d.events
        metrics = try c.decodeIfPresent(MetricsSettings.self, forKey: .metrics) ?? d.metrics
        console = try c.decodeIfPresent(ConsoleSettings.self, forKey: .console) ?? d.console
        rateLimits = try c.decodeIfPresent(ServerRateLimits.self, forKey: .rateLimits) ?? d.rateLimits
        idleTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .idleTimeoutSeconds) ?? d.idleTimeoutSeconds
        requestReadTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .requestReadTimeoutSeconds) ?? d.requestReadTimeoutSeconds
        maxConnections = try c.decodeIfPresent(Int.self, forKey: .maxConnections) ?? d.maxConnections
        postgresConnections = try c.decodeIfPresent(Int.self, forKey: .postgresConnections) ?? d.postgresConnections
    }

    /// The listen address split into host and port.
    public var hostAndPort: (host: String, port: Int)? { Self.hostAndPort(listen) }

    /// `host:port` split (the port 0 to 65535, a host before it): the one reading of every listen address.
    public static func hostAndPort(_ address: String) -> (host: String, port: Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              (0...65_535).contains(port), colon != address.startIndex else { return nil }
        return (String(address[..<colon]), port)
    }

    /// Whether two listen addresses would take the same port: the same port on the same host, or on any host when
    /// either listens on all of them. Port 0 (pick a free one) never clashes.
    public static func samePort(_ a: String, _ b: String) -> Bool {
        guard let a = hostAndPort(a), let b = hostAndPort(b), a.port != 0, a.port == b.port else { return false }
        let wildcards: Set = ["0.0.0.0", "::", "[::]", "*", ""]
        return a.host == b.host || wildcards.contains(a.host) || wildcards.contains(b.host)
    }

    public func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        if hostAndPort == nil {
            issues.append(.init(field: "\(path).listen", code: .invalidField, message: "expected host:port, such as 127.0.0.1:8080"))
        }
        if storage.hasPrefix("postgres://") || storage.hasPrefix("postgresql://") {
            if case .failure(let problem) = PostgresEndpoint.read(storage) {
                issues.append(.init(field: "\(path).storage", code: .invalidField, message: problem.message))
            }
        } else if !(storage.hasPrefix("sqlite:") && storage.count > 7) {
            issues.append(.init(field: "\(path).storage", code: .invalidField, message: "expected sqlite:PATH or postgres://…"))
        }
        if let publicURL, URL(string: publicURL).map({ ($0.scheme == "https" || $0.scheme == "http") && $0.host != nil }) != true {
            issues.append(.init(field: "\(path).publicURL", code: .invalidField, message: "expected an absolute http(s) URL"))
        }
        if !(1_024...10_485_760).contains(maxBodyBytes) {
            issues.append(.init(field: "\(path).maxBodyBytes", code: .invalidField, message: "1024 to 10485760"))
        }
        if !(0.1...3_600).contains(idleTimeoutSeconds) {
            issues.append(.init(field: "\(path).idleTimeoutSeconds", code: .invalidField, message: "0.1 to 3600 seconds"))
        }
        if !(0.1...3_600).contains(requestReadTimeoutSeconds) {
            issues.append(.init(field: "\(path).requestReadTimeoutSeconds", code: .invalidField, message: "0.1 to 3600 seconds"))
        }
        if !(1...1_000_000).contains(maxConnections) {
            issues.append(.init(field: "\(path).maxConnections", code: .invalidField, message: "1 to 1000000"))
        }
        if !(1...1_000).contains(postgresConnections) {
            issues.append(.init(field: "\(path).postgresConnections", code: .invalidField, message: "1 to 1000"))
        }
        issues += reconciliation.validate(path: "\(path).reconciliation")
        issues += events.validate(path: "\(path).events")
        issues += rateLimits.validate(path: "\(path).rateLimits")
        issues += metrics.validate(path: "\(path).metrics", apiListen: listen)
        issues += console.validate(path: "\(path).console", apiListen: listen, metricsListen: metrics.listen)
        return issues
    }
}

extension CredentialReference {
    /// Reads the secret. Trailing newlines of a file are removed.
    /// - Throws: ``CheckoutError/Code/missingSecret`` naming `field`, never the value.
    public func resolve(field: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(CheckoutError) -> String {
        if let env {
            guard let value = environment[env], !value.isEmpty else {
                throw CheckoutError(.missingSecret, field: field, message: "environment variable \(env) is not set")
            }
            return value
        }
        if let file {
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
                throw CheckoutError(.missingSecret, field: field, message: "cannot read secret file \(file)")
            }
            let value = text.trimmingCharacters(in: .newlines)
            guard !value.isEmpty else { throw CheckoutError(.missingSecret, field: field, message: "secret file \(file) is empty") }
            return value
        }
        throw CheckoutError(.missingSecret, field: field, message: "no source given")
    }
}

extension ConfigurationLoader {
    /// Decodes a configuration file and validates it. Returns the configuration only if there is no
    /// problem; otherwise every problem found, each with its path.
    ///
    /// - Parameter modules: the gateway modules this build knows, by module name, with their
    ///   declared capabilities.
    ///
    /// The text is read strictly first (RFC 8259): a syntax error names its line and column, and a key given
    /// twice names its path (JSONDecoder would keep one of the two silently).
    public static func load(_ data: Data, modules: [String: GatewayCapabilities]) -> Result<TillConfiguration, ConfigurationError> {
        // A file an editor saved with a UTF-8 byte-order mark: RFC 8259 lets a parser ignore it, and a file is not an
        // API body (where a mark is refused, as it could hide a duplicate key from one reader and not the other).
        let data = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data
        do {
            _ = try OrderedJSON.parse(data, field: "$")
        } catch {
            let field = error.field.map { $0.hasPrefix("$.") ? String($0.dropFirst(2)) : $0 } ?? "$"
            return .failure(ConfigurationError(issues: [ValidationIssue(field: field, code: error.code, message: error.message)]))
        }
        return decode(TillConfiguration.self, from: data) { $0.validate(modules: modules) }
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
}
