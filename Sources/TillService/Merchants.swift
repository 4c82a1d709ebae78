import Crypto
import Foundation
import Logging
import Till
import TillOrchestration
import TillGatewayKit

/// One merchant, ready to serve: its API key, router, health and gateway instances.
public struct MerchantRuntime: Sendable {
    public let configuration: MerchantConfiguration
    /// The SHA-256 of the merchant's API key: what a presented key's digest is compared with (the key
    /// itself is not kept).
    let apiKeyDigest: [UInt8]
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
    public let settings: ServerSettings
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
        for (m, merchant) in configuration.merchants.enumerated() {
            let path = "merchants[\(m)]"
            var apiKey = ""
            if let reference = merchant.apiKey {
                do {
                    apiKey = try reference.resolve(field: "\(path).apiKey", environment: environment)
                    if apiKey.count < 16 { problems.append("\(path).apiKey: an API key needs at least 16 characters") }
                    if !keys.insert(apiKey).inserted { problems.append("\(path).apiKey: two merchants share one API key") }
                } catch { problems.append(error.description) }
            } else {
                problems.append("\(path).apiKey: the server needs an API key reference for every merchant")
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
                merchants.append(MerchantRuntime(configuration: merchant, apiKeyDigest: Array(SHA256.hash(data: Data(apiKey.utf8))), router: router,
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
    }

    /// URLSession, logging each exchange (redacted) under `till.gateway.<id>`.
    public static func defaultTransport(_ id: GatewayID) -> any HTTPTransport {
        LoggingTransport(URLSessionTransport(), logger: Logger(label: "till.gateway.\(id)"))
    }

    /// The merchant whose API key is `key`, compared in constant time per merchant.
    func merchant(apiKey key: String) -> MerchantRuntime? {
        // Digests have one length, so neither the comparison nor its timing reveals a key's length.
        let given = Array(SHA256.hash(data: Data(key.utf8)))
        var found: MerchantRuntime?
        for merchant in merchants where ConstantTime.equals(given, merchant.apiKeyDigest) { found = merchant }
        return found
    }

    /// The merchant with `id`.
    public func merchant(id: String) -> MerchantRuntime? { merchants.first { $0.configuration.id == id } }
}
