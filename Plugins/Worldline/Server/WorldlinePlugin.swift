import Foundation
import TillGatewayKit
import TillWorldline
import TillOrchestration

/// The `worldline` module's description of itself, for the merchant server, the command-line tool and
/// the tests.
///
/// Credentials: `api_key_id`, `secret_api_key` (Configuration Center, "API keys"); `webhook_key_id`,
/// `webhook_secret_key` ("Webhook keys"; optional, without them every webhook is refused and only
/// inquiries confirm). Settings:
///
/// | setting | values | default |
/// |---|---|---|
/// | `merchant_id` | the merchant id of the Server API's paths | required |
/// | `environment` | `preprod` (pre-production, where sandbox accounts live too), `production`, `sandbox` (the older sandbox host) | `preprod` (unless `base_url`) |
/// | `base_url` | scheme, host and port of another endpoint (the local sandbox, a proxy) | — |
/// | `authorization_mode` | `SALE` (a sale's mode; `none` sends none, the account's default) | `SALE` |
/// | `integrator` | the `integrator` of `X-GCS-ServerMetaInfo` | `Till` |
///
/// Errors name the setting or credential at fault (`settings.merchant_id`, `credentials.secret_api_key`).
public enum WorldlinePlugin {
    /// The `worldline` module: ``WorldlineServer`` on the server, ``WorldlineGateway`` in the app, and the
    /// v1HMAC / webhook signature debugger (`till sign worldline`, `till verify worldline`).
    public static let plugin = GatewayPlugin(
        module: "worldline",
        capabilities: WorldlineGateway.capabilities,
        makeServerHalf: { context in try server(context) },
        makeAppHalf: { context in
            try context.settings.rejectUnknown(settings: knownSettings, credentials: knownCredentials)
            return WorldlineGateway(id: context.id, transport: context.transport)
        },
        debugger: WorldlineSigning.debugger)

    /// Every setting and credential the module reads; any other name is refused (a misspelt `base_url` would
    /// otherwise fall back to Worldline's pre-production host with the configured credentials).
    static let knownSettings: Set<String> = ["merchant_id", "authorization_mode", "integrator", "base_url", "environment"]
    static let knownCredentials: Set<String> = ["api_key_id", "secret_api_key", "webhook_key_id", "webhook_secret_key"]

    /// The server half of one configured gateway, from its settings and credentials.
    static func server(_ context: GatewayPluginContext) throws(CheckoutError) -> WorldlineServer {
        let settings = context.settings
        try settings.rejectUnknown(settings: knownSettings, credentials: knownCredentials)
        guard let merchantId = settings.string("merchant_id"), !merchantId.isEmpty,
              merchantId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.merchant_id",
                                message: "the Worldline merchant id (letters, digits, - and _)")
        }
        let environment = try environment(settings)
        var options = WorldlineServerSettings(merchantId: merchantId)
        if let mode = try settings.choice("authorization_mode", ["SALE", "none"], default: nil) {
            options.authorizationModeForSale = mode == "none" ? nil : mode
        }
        if let integrator = settings.string("integrator") {
            guard !integrator.trimmingCharacters(in: .whitespaces).isEmpty, integrator.count <= 100 else {
                throw CheckoutError(.misconfigured, field: "\(settings.path)settings.integrator", message: "1 to 100 characters")
            }
            options.integrator = integrator
        }
        var webhookKeys: [String: String] = [:]
        switch (settings.optionalSecret("webhook_key_id"), settings.optionalSecret("webhook_secret_key")) {
        case (let id?, let secret?): webhookKeys[id] = secret
        case (nil, nil): break
        case (nil, _?):
            throw CheckoutError(.missingSecret, field: "\(settings.path)credentials.webhook_key_id", message: "a webhook key needs its id")
        case (_?, nil):
            throw CheckoutError(.missingSecret, field: "\(settings.path)credentials.webhook_secret_key", message: "a webhook key id needs its secret")
        }
        let credentials = WorldlineCredentials(apiKeyId: try settings.secret("api_key_id"), secretApiKey: try settings.secret("secret_api_key"),
                                               webhookKeys: webhookKeys)
        return WorldlineServer(id: context.id, environment: environment, credentials: credentials, settings: options,
                               transport: context.transport)
    }

    /// `preprod` (the default), `production` or `sandbox`; or `base_url` alone.
    static func environment(_ settings: ModuleSettings) throws(CheckoutError) -> WorldlineEnvironment {
        let base = try settings.url("base_url")
        switch (settings.string("environment"), base) {
        case ("sandbox", nil): return .sandbox
        case (nil, nil), ("preprod", nil): return .preproduction
        case ("production", nil): return .production
        case (nil, let url?):
            // The Python SDK takes scheme, host and port only (communicator.py): so does Till.
            guard url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil, url.user == nil else {
                throw CheckoutError(.misconfigured, field: "\(settings.path)settings.base_url",
                                    message: "scheme, host and port only: the API's paths (/v1/…) go after it")
            }
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            components?.path = ""
            return .custom(components?.url ?? url)
        default:
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.environment",
                                message: "sandbox, preprod or production, or base_url alone (a sandbox)")
        }
    }
}
