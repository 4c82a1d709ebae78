import Foundation
import TillCitcon
import TillGatewayKit
import TillOrchestration

/// The `citcon` module's description of itself, for the merchant server, the command-line tool and
/// the tests.
///
/// Credentials: `api_key`, `api_secret`. Settings:
///
/// | setting | values | default |
/// |---|---|---|
/// | `environment` | `uat`, `prod`; `dev` or `qa` with `base_url` | `uat` |
/// | `base_url` | an http(s) URL: with `dev` or `qa`, or alone for any other base (the local sandbox) | — |
/// | `wallet_client` | `mobile_native` (wallet SDK launch), `mobile_browser` (page) | `mobile_native` |
/// | `country_accelerator` | `CN` | — |
/// | `unionpay_mode` | `00` (production), `01` (development): the app's UnionPay SDK mode | `00` |
/// | `request_3ds` | only `false`: Citcon documents no REST field for it | `false` |
/// | `charge_lifetime_seconds` | 60 … 86400: Till's own bound on a preparation | 1800 |
///
/// Errors name the setting or credential at fault (`settings.unionpay_mode`, `credentials.api_key`).
public enum CitconPlugin {
    /// The `citcon` module: ``CitconServer`` on the server, ``CitconGateway`` in the app, and the IPN
    /// signature debugger (`till sign citcon`, `till verify citcon`).
    /// Every setting and credential the module reads; any other name is refused (a misspelt `base_url` would
    /// otherwise fall back to Citcon's UAT host with the configured credentials).
    static let knownSettings: Set<String> = ["environment", "base_url", "wallet_client", "country_accelerator", "unionpay_mode",
                                             "request_3ds", "charge_lifetime_seconds"]
    static let knownCredentials: Set<String> = ["api_key", "api_secret"]

    public static let plugin = GatewayPlugin(
        module: "citcon",
        capabilities: CitconGateway.capabilities,
        makeServerHalf: { context in try server(context) },
        makeAppHalf: { context in
            try context.settings.rejectUnknown(settings: knownSettings, credentials: knownCredentials)
            return CitconGateway(id: context.id, environment: try environment(context.settings), transport: context.transport)
        },
        debugger: debugger)

    /// The server half of one configured gateway, from its settings and credentials.
    static func server(_ context: GatewayPluginContext) throws(CheckoutError) -> CitconServer {
        let settings = context.settings
        try settings.rejectUnknown(settings: knownSettings, credentials: knownCredentials)
        let environment = try environment(settings)
        var options = CitconSettings()
        let clients = CitconSettings.WalletClient.allCases.map(\.rawValue)
        if let client = try settings.choice("wallet_client", clients, default: nil), let value = CitconSettings.WalletClient(rawValue: client) {
            options.walletClient = value
        }
        options.countryAccelerator = try settings.choice("country_accelerator", ["CN"], default: nil)
        options.unionpayMode = try settings.choice("unionpay_mode", ["00", "01"], default: options.unionpayMode) ?? options.unionpayMode
        if try settings.bool("request_3ds", default: false) {
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.request_3ds",
                                message: "Citcon documents no REST field that asks for 3-D Secure; card 3-D Secure happens on Citcon's page")
        }
        if let seconds = try settings.integer("charge_lifetime_seconds", in: 60...86_400) {
            options.chargeLifetime = .seconds(seconds)
        }
        let credentials = CitconCredentials(apiKey: try settings.secret("api_key"), apiSecret: try settings.secret("api_secret"))
        return CitconServer(id: context.id, environment: environment, credentials: credentials, settings: options,
                            transport: context.transport)
    }

    /// The environment the settings name: `uat` (the default) or `prod`; `dev` or `qa` with the
    /// `base_url` Citcon gives; or `base_url` alone (a sandbox or proxy).
    static func environment(_ settings: ModuleSettings) throws(CheckoutError) -> CitconEnvironment {
        let base = try settings.url("base_url")
        switch (settings.string("environment"), base) {
        case ("uat", nil), (nil, nil): return .uat
        case ("prod", nil): return .prod
        case ("dev", let url?): return .dev(url)
        case ("qa", let url?): return .qa(url)
        case (nil, let url?): return .custom(url)
        case ("dev", nil), ("qa", nil):
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.base_url",
                                message: "DEV and QA need the base URL Citcon gives you")
        default:
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.environment",
                                message: "uat or prod, dev or qa with base_url, or base_url alone (a sandbox)")
        }
    }

    // MARK: Signature debugger

    private static let secretOption = SignatureDebugger.Option("secret", help: "The merchant's Citcon API secret.", required: true)

    /// `till sign citcon --secret S --body FILE` prints the string to sign, then the `sign`;
    /// `till verify citcon --secret S --body FILE` checks an IPN's `sign`.
    static let debugger = SignatureDebugger(
        signSummary: "Citcon IPN: SHA-256 over the fields listed in `fields` (and `fields`), sorted, k=v&…, then &secret=.",
        signOptions: [
            secretOption,
            .init("body", help: "The IPN body as sent, JSON or form-encoded (`-` for standard input). A `sign` field is ignored.",
                  required: true),
        ],
        verifyOptions: [
            secretOption,
            .init("body", help: "The IPN body exactly as Citcon sent it, JSON or form-encoded (`-` for standard input).", required: true),
        ],
        sign: { arguments in
            let secret = try arguments.required("secret")
            let fields = try CitconIPNFields.parse(try arguments.file("body"))
            return [try CitconSignature.stringToSign(fields, secret: secret), try CitconSignature.sign(fields, secret: secret)]
        },
        verify: { arguments in
            let secret = try arguments.required("secret")
            let fields = try CitconIPNFields.parse(try arguments.file("body"))
            do throws(CheckoutError) {
                let signed = try CitconSignature.verify(fields, secret: secret)
                let required = CitconSignature.requiredSignedFields(for: fields, signed: Array(signed))
                return SignatureDebugger.Verdict(valid: true, lines: [
                    "valid: the sign matches and covers \(required.joined(separator: ", "))",
                ])
            } catch {
                var lines = ["invalid: \(error.field.map { "\($0): " } ?? "")\(error.message)"]
                let renderings: [CitconSignature.NestedRendering] = CitconSignature.listsNestedValue(fields)
                    ? CitconSignature.NestedRendering.allCases : [.json]
                for rendering in renderings {
                    guard let expected = try? CitconSignature.stringToSign(fields, secret: secret, nested: rendering) else { continue }
                    let label = renderings.count > 1 ? " (nested values as \(rendering == .json ? "JSON" : "Array"))" : ""
                    lines.append("string to sign\(label): \(expected)")
                    lines.append("expected sign\(label): \((try? CitconSignature.sign(fields, secret: secret, nested: rendering)) ?? "?")")
                }
                return SignatureDebugger.Verdict(valid: false, lines: lines)
            }
        })
}
