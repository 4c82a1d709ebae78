import Foundation
import TillGatewayKit
import TillOrchestration

/// The `ecommpay` module's description of itself.
///
/// Credentials: `secret_key` (the project's secret). Settings:
///
/// | setting | values | default |
/// |---|---|---|
/// | `project_id` | the project's id from ecommpay (required) | — |
/// | `payment_page_url` | the Payment Page's base | `https://paymentpage.ecommpay.com` |
/// | `gate_url` | Gate's base | `https://api.ecommpay.com` |
/// | `base_url` | both at once (the local sandbox) | — |
/// | `mock_mode` | `disabled`, `success`, `decline`: the SDK's `mockModeType` | `disabled` |
public enum EcommpayPlugin {
    /// The `ecommpay` module: ``EcommpayServer``, ``EcommpayGateway`` and the signature debugger.
    public static let plugin = GatewayPlugin(
        module: "ecommpay",
        capabilities: EcommpayGateway.capabilities,
        makeServerHalf: { context in try server(context) },
        makeAppHalf: { context in EcommpayGateway(id: context.id) },
        debugger: debugger)

    static func server(_ context: GatewayPluginContext) throws(CheckoutError) -> EcommpayServer {
        let settings = context.settings
        try settings.rejectUnknown(settings: ["project_id", "payment_page_url", "gate_url", "base_url", "mock_mode"], credentials: ["secret_key"])
        guard let project = try settings.integer("project_id", in: 1...Int(Int32.max)) else {
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.project_id", message: "the project's id from ecommpay is required")
        }
        var environment = EcommpayEnvironment.production
        if let base = try settings.url("base_url") { environment = EcommpayEnvironment(paymentPage: base, gate: base) }
        if let page = try settings.url("payment_page_url") { environment.paymentPage = page }
        if let gate = try settings.url("gate_url") { environment.gate = gate }
        let mock = try settings.choice("mock_mode", EcommpayPaymentOptions.MockMode.allCases.map(\.rawValue), default: "disabled")
            .flatMap(EcommpayPaymentOptions.MockMode.init(rawValue:)) ?? .disabled
        return EcommpayServer(id: context.id, environment: environment, secret: try settings.secret("secret_key"),
                              settings: EcommpaySettings(projectId: project, mockMode: mock), transport: context.transport)
    }

    private static let secretOption = SignatureDebugger.Option("secret", help: "The project's secret key.", required: true)

    /// `till sign ecommpay --secret S --params FILE` prints the string to sign, then the signature;
    /// `till verify ecommpay --secret S --body FILE` checks a callback as posted.
    static let debugger = SignatureDebugger(
        signSummary: "ecommpay: the JSON flattened to path:value (':' nesting, list indexes, '::' escaping, frame_mode skipped), sorted, "
            + "joined with ';', then Base64(HMAC-SHA512(secret)).",
        signOptions: [secretOption, .init("params", help: "The parameters as a JSON object (`-` for standard input).", required: true)],
        verifyOptions: [secretOption, .init("body", help: "A callback exactly as ecommpay posted it (`-` for standard input).", required: true)],
        sign: { arguments in
            let secret = try arguments.required("secret")
            let object = try OrderedJSON.parse(try arguments.file("params"), field: "params")
            guard object.objectMembers != nil else { throw CheckoutError(.malformedBody, field: "params", message: "a JSON object") }
            let string = EcommpaySignatureString.string(of: EcommpaySigner.removingSignatures(object))
            return [string, EcommpaySigner.sign(string: string, secret: secret)]
        },
        verify: { arguments in
            let secret = try arguments.required("secret")
            let data = try arguments.file("body")
            do throws(CheckoutError) {
                let callback = try EcommpayCallback(data, secret: secret)
                return SignatureDebugger.Verdict(valid: true, lines: [
                    "valid: payment \(callback.paymentId ?? "?") \(callback.paymentStatus ?? "?")"
                        + (callback.cascadingWithRedirect ? " (cascading_with_redirect)" : ""),
                ])
            } catch {
                var lines = ["invalid: \(error.field.map { "\($0): " } ?? "")\(error.message)"]
                if let body = try? OrderedJSON.parse(data) {
                    let string = EcommpaySignatureString.string(of: EcommpaySigner.removingSignatures(body))
                    lines.append("string to sign: \(string)")
                    lines.append("expected signature: \(EcommpaySigner.sign(string: string, secret: secret))")
                }
                return SignatureDebugger.Verdict(valid: false, lines: lines)
            }
        })
}
