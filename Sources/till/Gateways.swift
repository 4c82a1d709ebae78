import Foundation
import Till
import TillOrchestration
import TillCitconServer
import TillEcommpayServer
import TillGatewayKit
import TillIPayNowServer
import TillPayFortServer
import TillSandbox
import TillTesting
import TillWorldlineServer

/// The gateway modules and emulators this build of the tool knows. Adding a gateway adds one line to
/// each list; nothing else in the tool changes (docs/implementing-a-gateway.md).
enum Gateways {
    /// Every gateway module, by its server half's description.
    static let plugins: [GatewayPlugin] = [
        FakeGateway.plugin,
        PayFortPlugin.plugin,
        CitconPlugin.plugin,
        WorldlinePlugin.plugin,
        IPayNowPlugin.plugin,
        EcommpayPlugin.plugin,
    ]

    /// Every gateway emulator `till sandbox` hosts, each with its built-in sandbox account.
    /// - Parameters:
    ///   - retryInterval: time between a gateway's notification retries.
    ///   - notificationURL: where gateways that take a fixed notification URL post (others learn it per payment).
    /// The sandbox's emulators, one account each. Gateways that post to an endpoint configured for the account
    /// (PayFort's feedback, Worldline's webhooks, ecommpay's callbacks) post to the merchant server's
    /// `…/v1/notifications/<gateway id>`: the directory of `notificationURL` and the id the merchant's configuration
    /// gives that module's gateway (`gatewayIDs`, the module's own name when not given).
    static func sandboxEmulators(retryInterval: Duration, notificationURL: URL?, gatewayIDs: [String: String] = [:]) throws -> [any SandboxEmulator] {
        func endpoint(_ module: String) -> URL? {
            notificationURL.map { $0.deletingLastPathComponent().appendingPathComponent(gatewayIDs[module] ?? module) }
        }
        return [
            PayFortEmulator(merchants: [PayFortMerchant(accessCode: "TillSandboxAccess1", merchantIdentifier: "TillSandbox1",
                                                        requestPhrase: "sandbox-request-phrase", responsePhrase: "sandbox-response-phrase",
                                                        notificationURL: gatewayIDs["payfort"] == nil ? notificationURL : endpoint("payfort"))],
                            notificationRetry: (10, retryInterval)),
            CitconEmulator(merchants: [.init(apiKey: "till-sandbox-citcon-key", apiSecret: "till-sandbox-citcon-secret")],
                           ipnRetryInterval: retryInterval),
            // Worldline posts webhooks to the endpoint configured for the merchant (not per payment).
            try WorldlineEmulator(merchants: [.init(merchantId: "1234", apiKeyId: "till-sandbox-worldline-key",
                                                    secretApiKey: "till-sandbox-worldline-secret", webhookKeyId: "till-sandbox-webhook-key",
                                                    webhookSecretKey: "till-sandbox-webhook-secret",
                                                    webhookURL: endpoint("worldline"))],
                                  webhookRetryInterval: retryInterval),
            // iPayNow posts its N001 to the notifyUrl of each order.
            IPayNowEmulator(apps: [.init(appId: "1400000000000001", appKey: "till-sandbox-ipaynow-md5-key")], notifyRetryInterval: retryInterval),
            // ecommpay posts its callbacks to the URL configured for the project (not per payment).
            EcommpayEmulator(projects: [.init(projectId: 4242, secretKey: "till-sandbox-ecommpay-secret",
                                              callbackURL: endpoint("ecommpay"))],
                             callbackRetryInterval: retryInterval),
        ]
    }

    static func plugin(_ module: String) -> GatewayPlugin? { plugins.first { $0.module == module } }

    static var capabilities: [String: GatewayCapabilities] {
        Dictionary(plugins.map { ($0.module, $0.capabilities) }, uniquingKeysWith: { first, _ in first })
    }
}
