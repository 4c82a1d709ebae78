import Foundation
import TillGatewayKit
import TillOrchestration

/// The `ipaynow` module's description of itself, for the merchant server, the command-line tool and
/// the tests.
///
/// Credentials: `app_key` (the app's MD5 key). Settings:
///
/// | setting | values | default |
/// |---|---|---|
/// | `app_id` | the app's id from iPayNow (required) | — |
/// | `environment` | `production` (`https://gapi.ipaynow.cn`, where the iOS plugin sends every order), `test` (`https://dby.ipaynow.cn`) | `production` |
/// | `base_url` | an http(s) URL instead of the environment's (the local sandbox) | — |
/// | `settlement_currency` | an appendix C currency: takes CNY payments in RMB fen (`mhtAmtCurrFlag=0`) | — (CNY refused) |
/// | `order_timeout_seconds` | 60 … 3600 (`mhtOrderTimeOut`) | 3600 |
/// | `utc_offset_minutes` | −720 … 840: the clock `mhtOrderStartTime` is written in | 480 (China time) |
/// | `wechat_pay` | `true`: sign WeChat Pay orders (`80`); the iOS plugin 1.0.1 opens Alipay only | `false` |
///
/// Errors name the setting or credential at fault (`settings.app_id`, `credentials.app_key`).
public enum IPayNowPlugin {
    /// The `ipaynow` module: ``IPayNowServer`` on the server, ``IPayNowGateway`` in the app, and the
    /// signature debugger (`till sign ipaynow`, `till verify ipaynow`).
    public static let plugin = GatewayPlugin(
        module: "ipaynow",
        capabilities: IPayNowGateway.capabilities,
        makeServerHalf: { context in try server(context) },
        makeAppHalf: { context in IPayNowGateway(id: context.id) },
        debugger: debugger)

    /// The server half of one configured gateway, from its settings and credentials.
    static func server(_ context: GatewayPluginContext) throws(CheckoutError) -> IPayNowServer {
        let settings = context.settings
        try settings.rejectUnknown(settings: ["app_id", "environment", "base_url", "settlement_currency", "order_timeout_seconds",
                                              "utc_offset_minutes", "wechat_pay"],
                                   credentials: ["app_key"])
        guard let appId = settings.string("app_id"), !appId.isEmpty else {
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.app_id", message: "the app's id from iPayNow is required")
        }
        // The app id is signed into every order: what appendix A (String(1,40)) or the presign could not carry
        // is refused now, not at each payment.
        if appId.count > 40 || appId.contains(where: { $0 == "&" || $0 == "=" || $0.isWhitespace })
            || appId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw CheckoutError(.misconfigured, field: "\(settings.path)settings.app_id",
                                message: "at most 40 characters, without '&', '=', spaces or control characters (appendix A, the presign)")
        }
        let environment: IPayNowEnvironment
        switch (try settings.choice("environment", ["test", "production"], default: nil), try settings.url("base_url")) {
        case (_, let url?): environment = IPayNowEnvironment(baseURL: url)
        case ("test", nil): environment = .test
        default: environment = .production
        }
        let settlement = try settings.choice("settlement_currency", IPayNowCodes.settlementCurrencies, default: nil)
        let timeout = try settings.integer("order_timeout_seconds", in: 60...3600, default: 3600) ?? 3600
        let offset = try settings.integer("utc_offset_minutes", in: -720...840, default: 480) ?? 480
        let options = IPayNowSettings(appId: appId, settlementCurrency: settlement, orderTimeout: timeout, utcOffsetSeconds: offset * 60,
                                      wechatPay: try settings.bool("wechat_pay", default: false))
        return IPayNowServer(id: context.id, environment: environment, credentials: IPayNowCredentials(appKey: try settings.secret("app_key")),
                             settings: options, transport: context.transport)
    }

    // MARK: Signature debugger

    private static let keyOption = SignatureDebugger.Option("key", help: "The app's MD5 key (appKey).", required: true)

    /// `till sign ipaynow --key K --params FILE` prints the presign string, then `mhtSignature`;
    /// `till verify ipaynow --key K --body FILE` checks a message exactly as iPayNow sent it.
    static let debugger = SignatureDebugger(
        signSummary: "iPayNow cross-border WP001: MD5 over the fields but funcode, deviceType, mhtSignType, mhtSignature, detail, "
            + "version, non-empty, sorted, k=v&…, then &md5(appKey).",
        signOptions: [
            keyOption,
            .init("params", help: "The fields of a cross-border WP001 request as a JSON object of strings or numbers (`-` for standard input).",
                  required: true),
        ],
        verifyOptions: [
            keyOption,
            .init("body", help: "A message exactly as iPayNow sent it, form-encoded (`-` for standard input); its kind and version are read "
                      + "from its own fields.", required: true),
        ],
        sign: { arguments in
            let key = try arguments.required("key")
            let fields = try orderFields(try arguments.file("params"))
            let canonical = IPayNowSigning.canonical(fields, rule: .order)
            return [canonical, IPayNowSigning.sign(canonical: canonical, appKey: key)]
        },
        verify: { arguments in
            let key = try arguments.required("key")
            let fields = try FormFields.decode(try arguments.file("body"), field: "body")
            guard let rule = IPayNowSigning.rule(of: fields) else {
                return SignatureDebugger.Verdict(valid: false, lines: [
                    "invalid: body: carries neither signature (a message from iPayNow) nor mhtSignature (a merchant's request), or both",
                ])
            }
            let kind = describe(fields, rule: rule)
            do throws(CheckoutError) {
                try IPayNowSigning.verify(fields, rule: rule, appKey: key)
                return SignatureDebugger.Verdict(valid: true, lines: ["valid: \(kind), \(rule.rawValue) rule (leaves out \(rule.excluded.sorted().joined(separator: ", ")))"])
            } catch {
                let canonical = IPayNowSigning.canonical(fields, rule: rule)
                return SignatureDebugger.Verdict(valid: false, lines: [
                    "invalid: \(error.field.map { "\($0): " } ?? "")\(error.message)",
                    "message: \(kind), \(rule.rawValue) rule (leaves out \(rule.excluded.sorted().joined(separator: ", ")))",
                    "string to sign: \(canonical)&<md5(key)>",
                    "expected \(rule.signatureField): \(IPayNowSigning.sign(canonical: canonical, appKey: key))",
                ])
            }
        })

    /// The fields of a JSON object of strings or numbers, for `till sign`.
    static func orderFields(_ data: Data) throws(CheckoutError) -> FormFields {
        guard let members = try OrderedJSON.parse(data, field: "params").objectMembers else {
            throw CheckoutError(.malformedBody, field: "params", message: "a JSON object of the WP001 fields")
        }
        var pairs: [(String, String)] = []
        for member in members {
            guard let value = member.value.stringValue ?? member.value.numberText else {
                throw CheckoutError(.invalidField, field: "params.\(member.key)", message: "a string or a number")
            }
            pairs.append((member.key, value))
        }
        return FormFields(pairs)
    }

    /// "N001 notification (1.0.0)", "MQ001 query", … for the debugger.
    static func describe(_ fields: FormFields, rule: IPayNowSigning.Rule) -> String {
        let funcode = fields["funcode"].flatMap { $0.isEmpty ? nil : $0 }
        switch rule {
        case .order: return funcode.map { "\($0) request" } ?? "presign (payData)"
        case .query, .queryAllFields: return "MQ001 query"
        case .legacyMessage: return "\(funcode ?? "answer") from iPayNow (no version)"
        case .versionedMessage: return "\(funcode ?? "answer") from iPayNow (version \(fields["version"] ?? ""))"
        }
    }
}
