import Crypto
import Foundation
import Logging
import Till
import TillOrchestration
import TillGatewayKit

/// One merchant, ready to serve: its router, health and gateway instances. Its API keys and rate limits are in
/// ``ServerState/access``, which a reload replaces.
public struct MerchantRuntime: Sendable {
    /// The merchant as configured when the server started (a reload changes only its keys and rate limits, in
    /// ``ServerState/access``).
    public let configuration: MerchantConfiguration
    public let router: GatewayRouter
    public let health: HealthMonitor
    /// Recent approval rates for the routing rules that learn (`successRate`); nil when none does. Every instance
    /// rebuilds them from the store (``RoutingScoresRefresher``), so all route alike.
    public let scores: SuccessRateScores?
    public let gateways: [GatewayID: any GatewayServerHalf]
    /// The one attempt policy: the merchant's retry settings and each gateway's decision table with the
    /// merchant's overrides.
    public let policy: AttemptPolicy
    /// Where its events go, with their secrets resolved.
    public let webhooks: [ResolvedWebhook]
}

/// A webhook endpoint ready to post to: its URL and the secrets that sign (the current one first).
public struct ResolvedWebhook: Sendable, Hashable {
    public var url: URL
    public var secrets: [String]

    public init(url: URL, secrets: [String]) {
        self.url = url
        self.secrets = secrets
    }
}

/// Why the server refuses to start.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    public var problems: [String]
    package init(problems: [String]) { self.problems = problems }
    public var description: String {
        "the server cannot start:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// Everything the server needs from its configuration, with every secret resolved.
public struct ServerState: Sendable {
    /// The configuration the server started with.
    public let configuration: TillConfiguration
    public let settings: ServerSettings
    /// The merchants' API keys and rate limits: what a reload (``adopt(_:)``) changes while the server runs. Every copy
    /// of this state shares it.
    public let access: AccessControl
    public let merchants: [MerchantRuntime]
    /// The server's clock for budgets and circuits (a virtual one in the chaos run).
    public let clock: any TillClock
    /// Every key of ``PrepareRequest/appData`` some gateway module reads (``GatewayCapabilities/appDataKeys``):
    /// an app linking a module this server's merchants no longer configure may still send its key, which is
    /// then ignored; any other key is a mistake, refused by name.
    public let appDataKeys: Set<String>

    /// Resolves every merchant's API key and every gateway's credentials from `environment` (or
    /// files), and builds each gateway's server half with its module's ``GatewayPlugin``. Refuses,
    /// listing every problem by its path (never a secret's value), when anything is missing.
    ///
    /// - Parameters:
    ///   - transport: how a gateway sends its requests; by default URLSession with logging and
    ///     redaction under `till.gateway.<id>`.
    ///   - clock: the health monitors' clock (circuit periods).
    public init(configuration: TillConfiguration, plugins: [GatewayPlugin],
                environment: [String: String] = ProcessInfo.processInfo.environment,
                transport: @Sendable (GatewayID) -> any HTTPTransport = ServerState.defaultTransport,
                clock: any TillClock = SystemClock()) throws {
        self.clock = clock
        let catalog = Dictionary(plugins.map { ($0.module, $0) }, uniquingKeysWith: { first, _ in first })
        appDataKeys = Set(plugins.flatMap(\.capabilities.appDataKeys))
        let issues = configuration.validate(modules: catalog.mapValues(\.capabilities))
        guard issues.isEmpty else { throw StartupError(problems: issues.map(\.description)) }
        var problems: [String] = []
        var merchants: [MerchantRuntime] = []
        var keys: Set<String> = []
        var resolvedKeys: [AccessControl.Key] = []
        for (m, merchant) in configuration.merchants.enumerated() {
            let path = "merchants[\(m)]"
            if merchant.keys.isEmpty {
                problems.append("\(path).apiKey: the server needs an API key (apiKey, or apiKeys) for every merchant")
            }
            for (key, keyPath) in merchant.keys {
                let field = "\(path).\(keyPath)\(keyPath == "apiKey" ? "" : ".key")"
                do {
                    let value = try key.key.resolve(field: field, environment: environment)
                    if value.count < 16 { problems.append("\(field): an API key needs at least 16 characters") }
                    if !keys.insert(value).inserted { problems.append("\(field): the same API key twice (two keys, or two merchants, share it)") }
                    resolvedKeys.append(.init(digest: Array(SHA256.hash(data: Data(value.utf8))), merchantID: merchant.id,
                                              identity: MerchantKey(id: key.id, scope: key.scope), expiresAt: key.expiresAt))
                } catch { problems.append(error.description) }
            }
            var gateways: [GatewayID: any GatewayServerHalf] = [:]
            for (g, gateway) in merchant.gateways.enumerated() where gateway.enabled {
                var credentials: [String: String] = [:]
                var complete = true
                for name in gateway.credentials.keys.sorted() {
                    do {
                        credentials[name] = try gateway.credentials[name]!.resolve(
                            field: "\(path).gateways[\(g)].credentials.\(name)", environment: environment)
                    } catch {
                        problems.append(error.description)
                        complete = false
                    }
                }
                guard complete, let plugin = catalog[gateway.module] else { continue }
                let context = GatewayPluginContext(
                    id: gateway.id,
                    settings: ModuleSettings(module: gateway.module, settings: gateway.settings, credentials: credentials),
                    transport: transport(gateway.id))
                do {
                    gateways[gateway.id] = try plugin.makeServerHalf(context)
                } catch let error as CheckoutError {
                    problems.append("\(path).gateways[\(g)].\(error.field ?? "module"): \(error.message)")
                } catch {
                    problems.append("\(path).gateways[\(g)]: the \(gateway.module) module could not be built")
                }
            }
            var webhooks: [ResolvedWebhook] = []
            for (w, webhook) in merchant.webhooks.enumerated() {
                var secrets: [String] = []
                for (name, reference) in [("secret", webhook.secret), ("previousSecret", webhook.previousSecret)] {
                    guard let reference else { continue }
                    do {
                        let secret = try reference.resolve(field: "\(path).webhooks[\(w)].\(name)", environment: environment)
                        if secret.utf8.count < 16 { problems.append("\(path).webhooks[\(w)].\(name): a signing secret needs at least 16 characters") }
                        secrets.append(secret)
                    } catch { problems.append(error.description) }
                }
                if let url = URL(string: webhook.url) { webhooks.append(ResolvedWebhook(url: url, secrets: secrets)) }
            }
            do {
                let router = try GatewayRouter(merchant: merchant, modules: catalog.mapValues(\.capabilities))
                let policy = AttemptPolicy(merchant: merchant, moduleTables: gateways.mapValues(\.decisionTable))
                merchants.append(MerchantRuntime(configuration: merchant, router: router,
                                                 health: HealthMonitor(settings: merchant.health, clock: clock),
                                                 scores: merchant.routing.rules.contains { $0.successRate != nil }
                                                    ? SuccessRateScores(rules: merchant.routing.rules, clock: clock) : nil,
                                                 gateways: gateways,
                                                 policy: policy, webhooks: webhooks))
            } catch {
                problems += error.issues.map(\.description)
            }
        }
        guard problems.isEmpty else { throw StartupError(problems: problems) }
        settings = configuration.server ?? ServerSettings()
        self.merchants = merchants
        self.configuration = configuration
        access = AccessControl(keys: resolvedKeys, limits: Dictionary(configuration.merchants.map { ($0.id, $0.rateLimits) }, uniquingKeysWith: { a, _ in a }),
                               server: settings.rateLimits)
    }

    /// URLSession, logging each exchange (redacted) under `till.gateway.<id>`.
    public static func defaultTransport(_ id: GatewayID) -> any HTTPTransport {
        LoggingTransport(URLSessionTransport(), logger: Logger(label: "till.gateway.\(id)"))
    }

    /// The merchant whose API key is `key` (one that has not expired), and which key it is.
    package func merchant(apiKey key: String, now: Date = Date()) -> (MerchantRuntime, MerchantKey)? {
        guard let found = access.key(key, now: now), let merchant = merchant(id: found.merchantID) else { return nil }
        return (merchant, found.identity)
    }

    /// Takes what a reload may change from `new` (the whole file, already resolved and validated by building it): every
    /// merchant's API keys and rate limits, and `server.rateLimits`. Returns what the log should say: each merchant's key
    /// ids now, and each change that needs a restart (a gateway, routing, a new merchant, another server setting).
    public func adopt(_ new: ServerState) -> [String] {
        var notes: [String] = []
        let running = Set(merchants.map(\.configuration.id))
        var limits: [String: MerchantRateLimits] = [:]
        for merchant in new.configuration.merchants {
            guard running.contains(merchant.id) else {
                notes.append("merchant \(merchant.id) is new: it is served after a restart")
                continue
            }
            limits[merchant.id] = merchant.rateLimits
            let ids = merchant.keys.map { key in
                key.key.id + (key.key.scope == .readOnly ? " (read-only)" : "") + (key.key.expiresAt.map { " (expires \($0.formatted(.iso8601)))" } ?? "")
            }
            notes.append("merchant \(merchant.id): keys \(ids.joined(separator: ", "))")
            if let old = self.merchant(id: merchant.id)?.configuration, Self.withoutAccess(old) != Self.withoutAccess(merchant) {
                notes.append("merchant \(merchant.id): changes other than apiKey, apiKeys and rateLimits take effect at the next start")
            }
        }
        for id in running.subtracting(new.configuration.merchants.map(\.id)).sorted() {
            notes.append("merchant \(id) is no longer in the file: its keys are refused; its payments are still settled until a restart")
        }
        // The two address limits are taken; the number of buckets kept is fixed at start (the tables are made then).
        var oldServer = settings, newServer = new.settings
        for limits in [\ServerSettings.rateLimits.failedAuthenticationPerAddress, \ServerSettings.rateLimits.rejectedNotificationsPerAddress] {
            oldServer[keyPath: limits] = nil
            newServer[keyPath: limits] = nil
        }
        if oldServer != newServer {
            notes.append("changes to server settings other than server.rateLimits' two address limits take effect at the next start")
        }
        access.replace(keys: new.access.keys.filter { running.contains($0.merchantID) }, limits: limits, server: new.settings.rateLimits)
        return notes
    }

    /// A merchant's configuration without what a reload changes.
    private static func withoutAccess(_ merchant: MerchantConfiguration) -> MerchantConfiguration {
        var merchant = merchant
        merchant.apiKey = nil
        merchant.apiKeys = []
        merchant.rateLimits = MerchantRateLimits()
        return merchant
    }

    /// The merchant with `id`.
    public func merchant(id: String) -> MerchantRuntime? { merchants.first { $0.configuration.id == id } }
}

/// The merchant API key a request authenticated with: its id (what the log names, never the key) and its scope.
public struct MerchantKey: Sendable, Hashable {
    public let id: String
    public let scope: APIKeyScope

    public init(id: String, scope: APIKeyScope) {
        self.id = id
        self.scope = scope
    }
}

/// The merchants' API keys (as digests) and rate limits: what a configuration reload replaces while the server runs,
/// shared by every copy of a ``ServerState``.
public final class AccessControl: Sendable {
    /// One API key as the server checks it: the SHA-256 of its value (the value is not kept).
    struct Key: Sendable {
        let digest: [UInt8]
        let merchantID: String
        let identity: MerchantKey
        let expiresAt: Date?
    }

    private struct Snapshot: Sendable {
        var keys: [Key]
        var limits: [String: MerchantRateLimits]
        var server: ServerRateLimits
    }

    private let current: Locked<Snapshot>

    init(keys: [Key], limits: [String: MerchantRateLimits], server: ServerRateLimits) {
        current = Locked(Snapshot(keys: keys, limits: limits, server: server))
    }

    var keys: [Key] { current.withLock { $0.keys } }

    /// The rate limits of merchant `id` now.
    public func limits(merchant id: String) -> MerchantRateLimits { current.withLock { $0.limits[id] ?? MerchantRateLimits() } }

    /// `server.rateLimits` now.
    public var server: ServerRateLimits { current.withLock { $0.server } }

    /// The key whose value is `value`, if it has not expired at `now`. Every key's digest is compared, in constant
    /// time, whether or not an earlier one matched.
    func key(_ value: String, now: Date) -> Key? {
        // Digests have one length, so neither the comparison nor its timing reveals a key's length.
        let given = Array(SHA256.hash(data: Data(value.utf8)))
        var found: Key?
        for key in keys where ConstantTime.equals(given, key.digest) { found = key }
        guard let found, found.expiresAt.map({ now < $0 }) ?? true else { return nil }
        return found
    }

    func replace(keys: [Key], limits: [String: MerchantRateLimits], server: ServerRateLimits) {
        current.withLock { $0 = Snapshot(keys: keys, limits: limits, server: server) }
    }
}
