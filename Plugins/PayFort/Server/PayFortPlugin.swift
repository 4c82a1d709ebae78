import Foundation
import TillGatewayKit
import TillPayFort
import TillOrchestration

/// The `payfort` gateway module, as the merchant server, the command-line tool and the tests use it.
///
/// Credentials: `access_code`, `merchant_identifier`, `request_phrase`, `response_phrase`.
/// Settings: `environment` (`sandbox` | `production`; `sandbox` when not set), `base_url` (any other
/// base URL, such as the local sandbox, used for both `FortAPI/paymentApi` and `FortAPI/paymentPage`;
/// it wins over `environment`), `sha` (`sha256` | `sha512`), `language` (`en` | `ar`), `integration`
/// (`merchant_page` | `mobile_sdk`; `merchant_page` when not set: it needs nothing from PayFort in the
/// app, see ``PayFortIntegration``), `confirm_feedback` (`true` | `false`; `true` when not set: feedback
/// that would make a payment paid or authorized is applied only after the server's own CHECK_STATUS
/// agrees, see ``PayFortServer/verifyNotification(_:)``; turning it off must be explicit). A bad value is
/// refused naming `settings.<name>`, a missing credential naming `credentials.<name>`.
public enum PayFortPlugin {
    /// The module's description: builds ``PayFortServer`` (with credentials) and `PayFortGateway`
    /// (settings only), and debugs signatures for `till sign payfort` and `till verify payfort`.
    /// Every setting and credential the module reads; any other name is refused (a misspelt `base_url` would
    /// otherwise fall back to PayFort's real host with the configured credentials).
    static let knownSettings: Set<String> = ["environment", "base_url", "sha", "language", "integration", "confirm_feedback"]
    static let knownCredentials: Set<String> = ["access_code", "merchant_identifier", "request_phrase", "response_phrase"]

    public static let plugin = GatewayPlugin(
        module: "payfort",
        capabilities: PayFortGateway.capabilities,
        makeServerHalf: { context in try server(context) },
        makeAppHalf: { context in try client(context) },
        debugger: debugger)

    /// The server half of one configured gateway, from its settings and credentials.
    static func server(_ context: GatewayPluginContext) throws(CheckoutError) -> PayFortServer {
        let settings = context.settings
        try settings.rejectUnknown(settings: knownSettings, credentials: knownCredentials)
        let environment = try environment(settings)
        let sha = try settings.choice("sha", ["sha256", "sha512"], default: "sha256") ?? "sha256"
        let algorithm = PayFortSignature.Algorithm(rawValue: sha) ?? .sha256
        let language = try language(settings)
        let credentials = PayFortCredentials(
            accessCode: try settings.secret("access_code"), merchantIdentifier: try settings.secret("merchant_identifier"),
            requestPhrase: try settings.secret("request_phrase"), responsePhrase: try settings.secret("response_phrase"),
            algorithm: algorithm)
        return PayFortServer(id: context.id, environment: environment, credentials: credentials, language: language,
                             integration: try integration(settings), confirmFeedback: try confirmFeedback(settings),
                             transport: context.transport)
    }

    /// `confirm_feedback`: `true` unless set to `false` exactly.
    static func confirmFeedback(_ settings: ModuleSettings) throws(CheckoutError) -> Bool {
        try settings.bool("confirm_feedback", default: true)
    }

    /// The app half of one configured gateway, from its settings only.
    static func client(_ context: GatewayPluginContext) throws(CheckoutError) -> PayFortGateway {
        try context.settings.rejectUnknown(settings: knownSettings, credentials: knownCredentials)
        _ = try integration(context.settings)   // refused the same way on both sides
        _ = try confirmFeedback(context.settings)
        return PayFortGateway(id: context.id, environment: try environment(context.settings), language: try language(context.settings))
    }

    /// `integration`: `merchant_page` (the default) or `mobile_sdk`.
    static func integration(_ settings: ModuleSettings) throws(CheckoutError) -> PayFortIntegration {
        let raw = try settings.choice("integration", PayFortIntegration.allCases.map(\.rawValue), default: PayFortIntegration.merchantPage.rawValue)
        return raw.flatMap(PayFortIntegration.init(rawValue:)) ?? .merchantPage
    }

    /// `base_url` when set (a custom environment), else `environment`.
    static func environment(_ settings: ModuleSettings) throws(CheckoutError) -> PayFortEnvironment {
        if let url = try settings.url("base_url") { return .custom(url) }
        switch try settings.choice("environment", ["sandbox", "production"], default: "sandbox") {
        case "production": return .production
        default: return .sandbox
        }
    }

    static func language(_ settings: ModuleSettings) throws(CheckoutError) -> String {
        try settings.choice("language", ["en", "ar"], default: "en") ?? "en"
    }

    // MARK: Signature debugger

    /// `till sign payfort` and `till verify payfort`.
    static let debugger = SignatureDebugger(
        signSummary: "SHA-256 (or SHA-512) over phrase + sorted key=value pairs + phrase (empty values skipped; `--keep-empty` signs them as key=, as the PHP SDK does).",
        signOptions: [
            .init("phrase", help: "The SHA request phrase (to sign a request) or response phrase (to check a response).", required: true),
            .init("sha512", help: "SHA-512 instead of SHA-256.", isFlag: true),
            .init("params", help: "A JSON object of the parameters (`-` for standard input). A `signature` key is ignored.", required: true),
            .init("keep-empty", help: "Sign empty values as key= (the PHP SDK's rule) instead of leaving them out (the .NET SDK's).", isFlag: true),
        ],
        verifyOptions: [
            .init("phrase", help: "The phrase the signer used (the response phrase for PayFort's responses and notifications).",
                  required: true),
            .init("sha512", help: "SHA-512 instead of SHA-256.", isFlag: true),
            .init("params", help: "A JSON object of the parameters, with `signature` (`-` for standard input).", required: true),
        ],
        sign: { arguments in
            let (signer, phrase, parameters) = try debuggerInput(arguments)
            let rule: PayFortSignature.EmptyValues = arguments.flag("keep-empty") ? .signed : .skipped
            return [signer.stringToSign(parameters, phrase: phrase, emptyValues: rule), signer.sign(parameters, phrase: phrase, emptyValues: rule)]
        },
        verify: { arguments in
            let (signer, phrase, parameters) = try debuggerInput(arguments)
            return verdict(signer, phrase: phrase, parameters: parameters)
        })

    /// Whether `parameters` carry the signature `phrase` gives, under either empty-value rule; when
    /// not, why, with the expected string to sign and signature (and, when the parameters hold an
    /// empty value, those of the PHP SDK's rule too).
    static func verdict(_ signer: PayFortSignature, phrase: String, parameters: PayFortParameters) -> SignatureDebugger.Verdict {
        do {
            let rule = try signer.verify(parameters, phrase: phrase)
            return SignatureDebugger.Verdict(valid: true, lines: [rule == .skipped ? "valid: the signature matches"
                : "valid: the signature matches with empty values signed as key= (the PHP SDK's rule)"])
        } catch {
            var lines = [
                "invalid: \(error.message)",
                "string to sign: \(signer.stringToSign(parameters, phrase: phrase))",
                "expected signature: \(signer.sign(parameters, phrase: phrase))",
            ]
            let keeping = signer.stringToSign(parameters, phrase: phrase, emptyValues: .signed)
            if keeping != lines[1].dropFirst("string to sign: ".count) {
                lines += ["string to sign with empty values (PHP SDK): \(keeping)",
                          "expected signature with empty values (PHP SDK): \(signer.sign(parameters, phrase: phrase, emptyValues: .signed))"]
            }
            return SignatureDebugger.Verdict(valid: false, lines: lines)
        }
    }

    /// The signer, the phrase and the parameters file the debugger's options name.
    /// - Throws: ``CheckoutError`` naming `--phrase` or `--params`.
    static func debuggerInput(_ arguments: DebuggerArguments) throws(CheckoutError) -> (PayFortSignature, String, PayFortParameters) {
        let phrase = try arguments.required("phrase")
        let path = try arguments.required("params")
        let data = try arguments.file("params")
        let parameters: PayFortParameters
        do {
            parameters = try PayFortParameters.json(data, field: "params")
        } catch {
            let at = error.code == .duplicateField ? (error.field.map { "\($0): " } ?? "") : ""
            throw CheckoutError(error.code, field: "--params", message: "\(path): \(at)\(error.message)")
        }
        return (PayFortSignature(arguments.flag("sha512") ? .sha512 : .sha256), phrase, parameters)
    }
}
