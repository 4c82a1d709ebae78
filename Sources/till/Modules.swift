import Foundation
import Logging
import Till
import TillCitcon
import TillPayFort
import TillServer
import TillTesting

/// The gateway modules this build of the tool knows, by module name. Gateway modules add themselves
/// here as they land.
enum Modules {
    /// The `fake` module: ``FakeGateway`` with an HMAC-SHA256 notification secret read from the
    /// `notification_secret` credential.
    static let fake = GatewayModule(name: "fake", capabilities: FakeGateway().capabilities) { gateway, credentials in
        guard let secret = credentials["notification_secret"] else {
            throw CheckoutError(.missingSecret, field: "credentials.notification_secret",
                                message: "the fake module needs a notification_secret credential")
        }
        return FakeGateway(id: gateway.id, secret: secret)
    }

    /// The `payfort` module. Credentials: `access_code`, `merchant_identifier`, `request_phrase`,
    /// `response_phrase`. Settings: `environment` (`sandbox` | `production`), `base_url` (any other,
    /// such as the local sandbox), `sha` (`sha256` | `sha512`), `language` (`en` | `ar`).
    static let payfort = GatewayModule(
        name: "payfort",
        capabilities: PayFortGateway(environment: .sandbox, transport: URLSessionTransport()).capabilities
    ) { gateway, credentials in
        func secret(_ name: String) throws -> String { try requiredSecret(name, in: credentials, module: "payfort") }
        let settings = gateway.settings
        let environment: PayFortEnvironment
        if let url = try baseURL(in: settings) {
            environment = .custom(url)
        } else {
            switch settings["environment"] ?? "sandbox" {
            case "sandbox": environment = .sandbox
            case "production": environment = .production
            default: throw CheckoutError(.misconfigured, field: "settings.environment", message: "sandbox or production")
            }
        }
        guard let algorithm = PayFortSignature.Algorithm(rawValue: settings["sha"] ?? "sha256") else {
            throw CheckoutError(.misconfigured, field: "settings.sha", message: "sha256 or sha512")
        }
        let language = settings["language"] ?? "en"
        guard ["en", "ar"].contains(language) else {
            throw CheckoutError(.misconfigured, field: "settings.language", message: "en or ar")
        }
        return PayFortGateway(
            id: gateway.id, environment: environment,
            credentials: PayFortCredentials(accessCode: try secret("access_code"), merchantIdentifier: try secret("merchant_identifier"),
                                            requestPhrase: try secret("request_phrase"), responsePhrase: try secret("response_phrase"),
                                            algorithm: algorithm),
            language: language,
            transport: LoggingTransport(URLSessionTransport(), logger: Logger(label: "till.gateway.\(gateway.id)")))
    }

    /// The `citcon` module. Credentials: `api_key`, `api_secret`. Settings: `environment` (`uat` |
    /// `prod`, or `dev` | `qa` with `base_url`), `base_url` alone for the local sandbox, `unionpay_mode` (`00` | `01`),
    /// `request_3ds` (`true` | `false`), `charge_lifetime_seconds`.
    static let citcon = GatewayModule(
        name: "citcon",
        capabilities: CitconGateway(environment: .uat, transport: URLSessionTransport()).capabilities
    ) { gateway, credentials in
        func secret(_ name: String) throws -> String { try requiredSecret(name, in: credentials, module: "citcon") }
        let settings = gateway.settings
        let base = try baseURL(in: settings)
        let environment: CitconEnvironment
        switch (settings["environment"], base) {
        case ("uat", nil), (nil, nil): environment = .uat
        case ("prod", nil): environment = .prod
        case ("dev", let url?): environment = .dev(url)
        case ("qa", let url?): environment = .qa(url)
        case (nil, let url?): environment = .custom(url)
        case ("dev", nil), ("qa", nil):
            throw CheckoutError(.misconfigured, field: "settings.base_url", message: "DEV and QA need the base URL Citcon gives you")
        default:
            throw CheckoutError(.misconfigured, field: "settings.environment",
                                message: "uat or prod, dev or qa with base_url, or base_url alone (a sandbox)")
        }
        var options = CitconSettings()
        if let mode = settings["unionpay_mode"] {
            guard ["00", "01"].contains(mode) else {
                throw CheckoutError(.misconfigured, field: "settings.unionpay_mode", message: "00 or 01")
            }
            options.unionpayMode = mode
        }
        if let flag = settings["request_3ds"] {
            guard let value = Bool(flag) else { throw CheckoutError(.misconfigured, field: "settings.request_3ds", message: "true or false") }
            options.request3DSecure = value
        }
        if let text = settings["charge_lifetime_seconds"] {
            guard let seconds = Int(text), (60...86_400).contains(seconds) else {
                throw CheckoutError(.misconfigured, field: "settings.charge_lifetime_seconds", message: "60 to 86400")
            }
            options.chargeLifetime = .seconds(seconds)
        }
        return CitconGateway(
            id: gateway.id, environment: environment,
            credentials: CitconCredentials(apiKey: try secret("api_key"), apiSecret: try secret("api_secret")),
            settings: options,
            transport: LoggingTransport(URLSessionTransport(), logger: Logger(label: "till.gateway.\(gateway.id)")))
    }

    static let all: [GatewayModule] = [fake, payfort, citcon]

    /// A credential a module cannot work without.
    static func requiredSecret(_ name: String, in credentials: [String: String], module: String) throws -> String {
        guard let value = credentials[name], !value.isEmpty else {
            throw CheckoutError(.missingSecret, field: "credentials.\(name)", message: "the \(module) module needs \(name)")
        }
        return value
    }

    /// The `base_url` setting, when given: an http(s) URL.
    static func baseURL(in settings: [String: String]) throws -> URL? {
        guard let text = settings["base_url"] else { return nil }
        guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http" else {
            throw CheckoutError(.misconfigured, field: "settings.base_url", message: "not an http(s) URL")
        }
        return url
    }

    static var capabilities: [String: GatewayCapabilities] {
        Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0.capabilities) })
    }
}
