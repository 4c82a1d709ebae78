import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillCitcon
@testable import TillCitconServer
import TillOrchestration

@Suite("Citcon: the return URL is chosen after the gateway")
struct CitconReturnURLTests {
    let server = Fixtures.server(RecordingTransport())
    let offered = [URL(string: "myshop://till/return?till_state=abc")!, URL(string: "https://shop.example.com/till/return?till_state=abc")!]

    @Test("WeChat Pay takes the universal link, wherever it is offered")
    func wechatTakesTheUniversalLink() throws {
        #expect(try server.returnURL(from: offered, for: Fixtures.intent(method: .wechatPay)) == offered[1])
        #expect(try server.returnURL(from: offered.reversed(), for: Fixtures.intent(method: .wechatPay)) == offered[1])
    }

    @Test("Alipay takes the app's scheme, wherever it is offered")
    func alipayTakesTheScheme() throws {
        #expect(try server.returnURL(from: offered, for: Fixtures.intent(method: .alipay)) == offered[0])
        #expect(try server.returnURL(from: offered.reversed(), for: Fixtures.intent(method: .alipay)) == offered[0])
    }

    @Test("the other methods prefer the scheme, else take the first offered")
    func othersPreferTheScheme() throws {
        #expect(try server.returnURL(from: offered.reversed(), for: Fixtures.intent(method: .card)) == offered[0])
        #expect(try server.returnURL(from: [offered[1]], for: Fixtures.intent(method: .paypal)) == offered[1])
        #expect(try server.returnURL(from: [], for: Fixtures.intent(method: .unionPay)) == nil)
    }

    @Test("WeChat Pay offered no https URL is refused, naming returnURLs")
    func wechatWithoutUniversalLink() throws {
        for urls in [[offered[0]], []] {
            let error = try #require(throws: CheckoutError.self) {
                try server.returnURL(from: urls, for: Fixtures.intent(method: .wechatPay))
            }
            #expect(error.field == "returnURLs")
            #expect(error.code == .missingField)
            #expect(error.gateway == "citcon")
        }
    }

    @Test("the chosen return URL is the only way back: no scheme or universal link is sent to Citcon")
    func nothingSentButURLs() throws {
        let chosen = try #require(try server.returnURL(from: offered, for: Fixtures.intent(method: .wechatPay)))
        let request = try server.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .wechatPay), returnURL: chosen))
        let body = try #require(JSONSerialization.jsonObject(with: try JSONEncoder().encode(request)) as? [String: Any])
        #expect(Set(body.keys).isSubset(of: ["transaction", "consumer", "payment", "goods", "urls"]))
        #expect(request.urls.fail.hasPrefix(chosen.absoluteString))
    }
}

@Suite("Citcon: the SDK's in-process result")
struct CitconSDKResultTests {
    let preparation = Preparation(gateway: "citcon", attempt: AttemptReference(rawValue: "attemptref0000000000000001"), method: .alipay,
                                  amount: Money(minorUnits: 1, currency: try! Currency(code: "USD")))

    @Test("SDK codes read as they do from a return URL", arguments: [
        ("6001", ClientOutcome.Kind.cancelled), ("-2", .cancelled), ("0", .succeeded), ("-1", .failed), ("4000", .failed),
    ])
    func callbackCodes(code: String, kind: ClientOutcome.Kind) {
        let outcome = Fixtures.app().interpretReturn(.callback(code: code, parameters: [:]), for: preparation)
        #expect(outcome.kind == kind)
        #expect(outcome.gatewayCode == code)
    }

    @Test("the SDK's message is made safe")
    func callbackMessage() {
        let outcome = Fixtures.app().interpretReturn(.callback(code: "-1", parameters: ["message": "card 4111111111111111\nrefused"]),
                                                     for: preparation)
        #expect(outcome.message?.contains("4111111111111111") == false)
        #expect(outcome.message?.contains("\n") == false)
    }
}

@Suite("Citcon plugin")
struct CitconPluginTests {
    let credentials = ["api_key": "merchant-key", "api_secret": Fixtures.secret]

    func context(_ settings: [String: String], credentials: [String: String]? = nil) -> GatewayPluginContext {
        GatewayPluginContext(id: "citcon-us",
                             settings: ModuleSettings(module: "citcon", settings: settings, credentials: credentials ?? self.credentials),
                             transport: RecordingTransport())
    }

    @Test("the module is citcon, with the gateway's capabilities and a debugger")
    func describes() {
        #expect(CitconPlugin.plugin.module == "citcon")
        #expect(CitconPlugin.plugin.capabilities == CitconGateway.capabilities)
        #expect(CitconPlugin.plugin.debugger != nil)
    }

    @Test("settings build the server half")
    func buildsServer() throws {
        let built = try CitconPlugin.plugin.makeServerHalf(context(["environment": "prod", "unionpay_mode": "01", "request_3ds": "false",
                                                                "charge_lifetime_seconds": "600", "wallet_client": "mobile_browser",
                                                                "country_accelerator": "CN"]))
        let server = try #require(built as? CitconServer)
        #expect(server.gateway == "citcon-us")
        #expect(server.environment == .prod)
        #expect(server.settings == CitconSettings(walletClient: .mobileBrowser, countryAccelerator: "CN", unionpayMode: "01",
                                                  chargeLifetime: .seconds(600)))

        let defaults = try #require(try CitconPlugin.plugin.makeServerHalf(context([:])) as? CitconServer)
        #expect(defaults.environment == .uat)
        #expect(defaults.settings == CitconSettings())

        let base = "http://127.0.0.1:8080/citcon/v1/"
        #expect((try CitconPlugin.plugin.makeServerHalf(context(["base_url": base])) as? CitconServer)?.environment == .custom(URL(string: base)!))
        #expect((try CitconPlugin.plugin.makeServerHalf(context(["environment": "dev", "base_url": base])) as? CitconServer)?.environment
                == .dev(URL(string: base)!))
        #expect((try CitconPlugin.plugin.makeServerHalf(context(["environment": "qa", "base_url": base])) as? CitconServer)?.environment
                == .qa(URL(string: base)!))
    }

    @Test("a misspelt setting or credential is refused by name on both halves, never ignored (a misspelt base_url fell back to Citcon's UAT host)",
          arguments: [(["base_ur": "http://127.0.0.1:8080/citcon/v1/"], [String: String]?.none, "settings.base_ur"),
                      (["unionpay-mode": "01"], nil, "settings.unionpay-mode"),
                      ([:], ["api_key": "k", "api_secret": "s", "apisecret": "s"], "credentials.apisecret")])
    func unknownNames(settings: [String: String], credentials: [String: String]?, field: String) {
        let server = #expect(throws: CheckoutError.self) { try CitconPlugin.plugin.makeServerHalf(context(settings, credentials: credentials)) }
        #expect(server?.field == field && server?.code == .misconfigured && server?.message.contains("no such") == true)
        if field.hasPrefix("settings.") {
            let app = #expect(throws: CheckoutError.self) { try CitconPlugin.plugin.makeAppHalf(context(settings, credentials: [:])) }
            #expect(app?.field == field)
        }
    }

    @Test("the app half is built from settings alone, without credentials")
    func buildsClient() throws {
        let built = try CitconPlugin.plugin.makeAppHalf(context(["environment": "prod"], credentials: [:]))
        let app = try #require(built as? CitconGateway)
        #expect(app.gateway == "citcon-us")
        #expect(app.environment == .prod)
        #expect(!((built as Any) is any GatewayServerHalf))
    }

    @Test("each bad setting is refused, naming it", arguments: [
        (["environment": "staging"], "settings.environment"),
        (["environment": "uat", "base_url": "https://citcon.example/v1/"], "settings.environment"),
        (["environment": "dev"], "settings.base_url"),
        (["environment": "qa"], "settings.base_url"),
        (["base_url": "ftp://citcon.example"], "settings.base_url"),
        (["unionpay_mode": "02"], "settings.unionpay_mode"),
        (["request_3ds": "yes"], "settings.request_3ds"),
        (["request_3ds": "true"], "settings.request_3ds"),
        (["wallet_client": "desktop"], "settings.wallet_client"),
        (["country_accelerator": "US"], "settings.country_accelerator"),
        (["charge_lifetime_seconds": "5"], "settings.charge_lifetime_seconds"),
        (["charge_lifetime_seconds": "86401"], "settings.charge_lifetime_seconds"),
        (["charge_lifetime_seconds": "ten"], "settings.charge_lifetime_seconds"),
    ])
    func badSetting(settings: [String: String], field: String) throws {
        let error = try #require(throws: CheckoutError.self) { try CitconPlugin.plugin.makeServerHalf(context(settings)) }
        #expect(error.field == field)
        #expect(error.code == .misconfigured)
    }

    @Test("a missing credential is refused, naming it", arguments: ["api_key", "api_secret"])
    func missingCredential(name: String) throws {
        var credentials = self.credentials
        credentials[name] = nil
        let error = try #require(throws: CheckoutError.self) { try CitconPlugin.plugin.makeServerHalf(context([:], credentials: credentials)) }
        #expect(error.field == "credentials.\(name)")
        #expect(error.code == .missingSecret)
        #expect(!error.message.contains(Fixtures.secret))
    }

    @Test("the app half refuses a bad environment too")
    func clientBadEnvironment() throws {
        let error = try #require(throws: CheckoutError.self) { try CitconPlugin.plugin.makeAppHalf(context(["environment": "staging"])) }
        #expect(error.field == "settings.environment")
    }
}

@Suite("Citcon signature debugger")
struct CitconDebuggerTests {
    let secret = "debugger-secret"

    func file(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("citcon-ipn-\(UUID().uuidString)")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    var unsigned: [(String, String)] {
        [("id", "ch1"), ("transaction_type", "charge"), ("reference", "ref1"), ("amount", "1999"), ("currency", "USD"), ("status", "success"),
         ("fields", "id,transaction_type,reference,amount,currency,status")]
    }

    @Test("sign prints the string to sign, then the sign; verify accepts what sign made")
    func roundTrip() throws {
        let debugger = try #require(CitconPlugin.plugin.debugger)
        #expect(debugger.signOptions.map(\.name) == ["secret", "body"])
        #expect(debugger.verifyOptions.map(\.name) == ["secret", "body"])
        #expect(debugger.signOptions.allSatisfy(\.required) && debugger.verifyOptions.allSatisfy(\.required))

        let body = unsigned.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let lines = try debugger.sign(DebuggerArguments(["secret": [secret], "body": [try file(body)]]))
        let fields = CitconIPNFields(unsigned)
        #expect(lines == [try CitconSignature.stringToSign(fields, secret: secret), try CitconSignature.sign(fields, secret: secret)])
        #expect(lines.first == "amount=1999&currency=USD&fields=id,transaction_type,reference,amount,currency,status&id=ch1&reference=ref1&status=success&transaction_type=charge&secret=\(secret)")

        let signed = try file(body + "&sign=\(lines[1])")
        let valid = try debugger.verify(DebuggerArguments(["secret": [secret], "body": [signed]]))
        #expect(valid == SignatureDebugger.Verdict(valid: true, lines: [
            "valid: the sign matches and covers id, transaction_type, reference, status, amount, currency",
        ]))

        // The same IPN as JSON verifies too.
        let json = "{" + (unsigned + [("sign", lines[1])]).map { #""\#($0.0)":"\#($0.1)""# }.joined(separator: ",") + "}"
        #expect(try debugger.verify(DebuggerArguments(["secret": [secret], "body": [try file(json)]])).valid)
    }

    @Test("verify explains a mismatch with the expected string and sign")
    func mismatch() throws {
        let debugger = try #require(CitconPlugin.plugin.debugger)
        let body = unsigned.map { "\($0.0)=\($0.1)" }.joined(separator: "&") + "&sign=00"
        let verdict = try debugger.verify(DebuggerArguments(["secret": [secret], "body": [try file(body)]]))
        let fields = CitconIPNFields(unsigned)
        #expect(!verdict.valid)
        #expect(verdict.lines == [
            "invalid: sign: the sign does not match the signed fields and the API secret",
            "string to sign: \(try CitconSignature.stringToSign(fields, secret: secret))",
            "expected sign: \(try CitconSignature.sign(fields, secret: secret))",
        ])
    }

    @Test("an unreadable or duplicated body is an error, not a verdict")
    func badBody() throws {
        let debugger = try #require(CitconPlugin.plugin.debugger)
        let missing = try #require(throws: CheckoutError.self) {
            try debugger.verify(DebuggerArguments(["secret": [secret], "body": ["/nonexistent/ipn.form"]]))
        }
        #expect(missing.field == "--body")
        let duplicated = try #require(throws: CheckoutError.self) {
            try debugger.sign(DebuggerArguments(["secret": [secret], "body": [try file("status=fail&status=success")]]))
        }
        #expect(duplicated.code == .duplicateField)
    }
}

@Suite("Citcon IPN: duplicated fields")
struct CitconDuplicateFieldTests {
    @Test("a form field sent twice is refused with duplicate_field, before any signature is checked")
    func duplicatedFormKey() throws {
        let server = Fixtures.server(RecordingTransport())
        let body = Data("id=ch1&reference=r&status=fail&status=success&sign=00".utf8)
        let error = try #require(throws: CheckoutError.self) {
            try server.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"], body: body))
        }
        #expect(error.code == .duplicateField)
        #expect(error.category == .invalidInput)
        #expect(error.field == "status")
        #expect(error.gateway == "citcon")
    }

    @Test("a JSON key sent twice is refused with duplicate_field")
    func duplicatedJSONKey() throws {
        let body = Data(#"{"id":"ch1","status":"fail","status":"success"}"#.utf8)
        let error = try #require(throws: CheckoutError.self) { try CitconIPNFields.parse(body, mediaType: "application/json") }
        #expect(error.code == .duplicateField)
        #expect(error.field == "status")
    }

    @Test("JSON fields keep the order they came in; nested values are never plain values")
    func jsonOrder() throws {
        let fields = try CitconIPNFields.parse(Data(#"{"status":"success","amount":19.990,"id":"a","extra":{"x":1},"ok":true}"#.utf8))
        #expect(fields.names == ["status", "amount", "id", "extra", "ok"])
        #expect(fields["amount"] == "19.99")
        #expect(fields["ok"] == "true")
        #expect(fields.contains("extra") && fields["extra"] == nil)
    }
}
