import Foundation
import Till
import TillOrchestration
import TillService
import TillGatewayKit

extension ServerState {
    /// Builds every enabled gateway's two halves from its settings and credential *references*, without reading
    /// one secret, and returns every problem the modules find, each with its path
    /// (`merchants[0].gateways[1].settings.base_ur: the payfort module has no such setting …`): a misspelt
    /// setting or credential name, a bad setting value, a credential the module needs that the configuration
    /// does not name. What `till config check` adds to the file's own validation.
    ///
    /// Each referenced credential stands in as a placeholder, so a module's checks of a secret's *value* are not
    /// made here; the server makes them at start.
    public static func moduleIssues(of configuration: TillConfiguration, plugins: [GatewayPlugin]) -> [ValidationIssue] {
        let catalog = Dictionary(plugins.map { ($0.module, $0) }, uniquingKeysWith: { first, _ in first })
        var issues: [ValidationIssue] = []
        for (m, merchant) in configuration.merchants.enumerated() {
            for (g, gateway) in merchant.gateways.enumerated() where gateway.enabled {
                guard let plugin = catalog[gateway.module] else { continue }   // the file's validation names it
                let path = "merchants[\(m)].gateways[\(g)]"
                let placeholders = gateway.credentials.mapValues { _ in Self.placeholderSecret }
                let server = GatewayPluginContext(id: gateway.id, settings: ModuleSettings(module: gateway.module, settings: gateway.settings,
                                                                                            credentials: placeholders),
                                                  transport: NeverSendingTransport())
                let app = GatewayPluginContext(id: gateway.id, settings: ModuleSettings(module: gateway.module, settings: gateway.settings,
                                                                                         credentials: [:]),
                                               transport: NeverSendingTransport())
                var seen: Set<String> = []
                for build in [{ _ = try plugin.makeServerHalf(server) }, { _ = try plugin.makeAppHalf(app) }] as [() throws -> Void] {
                    do { try build() } catch let error as CheckoutError {
                        let issue = ValidationIssue(field: "\(path).\(error.field ?? "module")", code: error.code, message: error.message)
                        if seen.insert(issue.field).inserted { issues.append(issue) }
                    } catch {
                        issues.append(ValidationIssue(field: path, code: .misconfigured, message: "the \(gateway.module) module could not be built"))
                    }
                }
            }
        }
        return issues
    }

    /// What stands in for a secret while checking: never sent anywhere.
    static let placeholderSecret = "till-config-check-placeholder-0123456789abcdef"
}

/// A transport that refuses every request: a module built only to be checked never reaches a gateway.
struct NeverSendingTransport: HTTPTransport {
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        throw TransportError(.notSent, "a configuration check sends nothing")
    }
}
