import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillPayFort
@testable import TillPayFortServer
import TillTesting

@Suite("PayFort plugin: settings, credentials and the signature debugger")
struct PayFortPluginTests {
    static let goodCredentials = ["access_code": "AC", "merchant_identifier": "MID", "request_phrase": "rq", "response_phrase": "rs"]

    func context(_ settings: [String: String], credentials: [String: String] = goodCredentials) -> GatewayPluginContext {
        GatewayPluginContext(id: "payfort-riyadh", settings: ModuleSettings(module: "payfort", settings: settings, credentials: credentials),
                             transport: RecordingTransport())
    }

    @Test("the module is described once, with the app half's capabilities")
    func description() {
        #expect(PayFortPlugin.plugin.module == "payfort")
        #expect(PayFortPlugin.plugin.capabilities == PayFortGateway.capabilities)
        #expect(PayFortPlugin.plugin.debugger != nil)
    }

    @Test("the server half is built from settings and credentials; the app half from settings only")
    func builds() throws {
        let server = try #require(try PayFortPlugin.plugin.makeServerHalf(context(["sha": "sha512", "language": "ar"])) as? PayFortServer)
        #expect(server.gateway == "payfort-riyadh" && server.environment == .sandbox && server.language == "ar")
        #expect(server.integration == .merchantPage)   // the default: nothing from PayFort needed in the app
        let sdk = try #require(try PayFortPlugin.plugin.makeServerHalf(context(["integration": "mobile_sdk"])) as? PayFortServer)
        #expect(sdk.integration == .mobileSDK)
        let custom = try #require(try PayFortPlugin.plugin.makeServerHalf(
            context(["base_url": "http://127.0.0.1:9000", "environment": "production"])) as? PayFortServer)
        #expect(custom.environment == .custom(URL(string: "http://127.0.0.1:9000")!))
        let production = try #require(try PayFortPlugin.plugin.makeServerHalf(context(["environment": "production"])) as? PayFortServer)
        #expect(production.environment == .production)

        // SHA-512 is used with the response phrase.
        var feedback = PayFortParameters(strings: [("access_code", "AC"), ("merchant_identifier", "MID"), ("merchant_reference", "att1"),
                                                   ("status", "14"), ("response_code", "14000")])
        feedback["signature"] = .string(PayFortSignature(.sha512).sign(feedback, phrase: "rs"))
        let notification = IncomingNotification(headers: ["Content-Type": "application/json"], body: feedback.jsonData())
        #expect(try server.verifyNotification(notification).report.status == .paid)

        let app = try #require(try PayFortPlugin.plugin.makeAppHalf(context(["environment": "production", "language": "ar"], credentials: [:]))
            as? PayFortGateway)
        #expect(app.gateway == "payfort-riyadh" && app.environment == .production && app.language == "ar")
    }

    @Test("a bad setting or a missing credential is refused, naming it", arguments: [
        (["environment": "staging"], goodCredentials, "settings.environment"),
        (["sha": "md5"], goodCredentials, "settings.sha"),
        (["language": "fr"], goodCredentials, "settings.language"),
        (["integration": "sdk"], goodCredentials, "settings.integration"),
        (["confirm_feedback": "no"], goodCredentials, "settings.confirm_feedback"),
        (["base_url": "ftp://sandbox.example"], goodCredentials, "settings.base_url"),
        (["base_url": "not a url"], goodCredentials, "settings.base_url"),
        ([:], goodCredentials.filter { $0.key != "request_phrase" }, "credentials.request_phrase"),
        ([:], goodCredentials.merging(["access_code": ""]) { _, empty in empty }, "credentials.access_code"),
        // A misspelt name used to be ignored: `base_ur` fell back to PayFort's real sandbox host with these credentials.
        (["base_ur": "http://127.0.0.1:8080"], goodCredentials, "settings.base_ur"),
        (["Integration": "mobile_sdk"], goodCredentials, "settings.Integration"),
        ([:], goodCredentials.merging(["request_phase": "x"]) { $1 }, "credentials.request_phase"),
    ])
    func refuses(settings: [String: String], credentials: [String: String], field: String) {
        let error = #expect(throws: CheckoutError.self) { try PayFortPlugin.plugin.makeServerHalf(context(settings, credentials: credentials)) }
        #expect(error?.field == field)
        #expect(error?.category == .configuration)
        if field == "credentials.request_phase" {
            #expect(error?.code == .misconfigured)
        } else if field.hasPrefix("credentials.") {
            #expect(error?.code == .missingSecret)
        } else {
            #expect(error?.code == .misconfigured)
            // The app half reads the same settings (but not `sha`) and refuses them the same way.
            if field != "settings.sha" {
                #expect(throws: CheckoutError.self) { try PayFortPlugin.plugin.makeAppHalf(context(settings, credentials: [:])) }
            }
        }
    }

    @Test("confirm_feedback: every verified feedback asks the server to confirm it with CHECK_STATUS, unless turned off explicitly",
          arguments: [([:], true), (["confirm_feedback": "true"], true), (["confirm_feedback": "false"], false)] as [([String: String], Bool)])
    func confirmFeedback(settings: [String: String], confirms: Bool) throws {
        let server = try #require(try PayFortPlugin.plugin.makeServerHalf(context(settings)) as? PayFortServer)
        #expect(server.confirmFeedback == confirms)
        for (status, code) in [("14", "14000"), ("02", "02000"), ("13", "13666"), ("06", "06000")] {
            var feedback = PayFortParameters(strings: [("access_code", "AC"), ("merchant_identifier", "MID"), ("merchant_reference", "att1"),
                                                       ("status", status), ("response_code", code)])
            feedback["signature"] = .string(PayFortSignature().sign(feedback, phrase: "rs"))
            let verified = try server.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/json"], body: feedback.jsonData()))
            // Set on every verified feedback; the server acts on it only for a report that would make the attempt paid or authorized.
            #expect(verified.confirmBeforeApplying == confirms, "\(code)")
        }
        // Built directly, the server half confirms by default too.
        #expect(PayFortServer(environment: .sandbox, credentials: PayFortCredentials(accessCode: "AC", merchantIdentifier: "MID",
                                                                                    requestPhrase: "rq", responsePhrase: "rs"),
                              transport: RecordingTransport()).confirmFeedback)
    }

    /// Writes `text` to a temporary file and returns its path.
    func file(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("payfort-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test("the debugger signs, verifies the round trip, and explains an invalid signature")
    func debugger() throws {
        let debugger = try #require(PayFortPlugin.plugin.debugger)
        #expect(debugger.signOptions.map(\.name) == ["phrase", "sha512", "params", "keep-empty"])
        #expect(debugger.verifyOptions.filter(\.required).map(\.name) == ["phrase", "params"])
        let params = #"{"merchant_identifier":"MID","access_code":"AC","amount":1000,"signature":"ignored","apple_header":{"b":"2","a":"1"}}"#
        let path = try file(params)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lines = try debugger.sign(DebuggerArguments(["phrase": ["PASS"], "params": [path]]))
        #expect(lines.count == 2)
        #expect(lines[0] == "PASSaccess_code=ACamount=1000apple_header={b=2, a=1}merchant_identifier=MIDPASS")
        let signature = lines[1]
        #expect(signature.count == 64)
        let sha512 = try debugger.sign(DebuggerArguments(["phrase": ["PASS"], "params": [path], "sha512": ["true"]]))
        #expect(sha512[0] == lines[0] && sha512[1].count == 128)

        let signed = try file(params.replacingOccurrences(of: "ignored", with: signature.uppercased()))
        defer { try? FileManager.default.removeItem(atPath: signed) }
        let valid = try debugger.verify(DebuggerArguments(["phrase": ["PASS"], "params": [signed]]))
        #expect(valid.valid && valid.lines == ["valid: the signature matches"])

        let tampered = try file(params.replacingOccurrences(of: "ignored", with: signature).replacingOccurrences(of: "1000", with: "1001"))
        defer { try? FileManager.default.removeItem(atPath: tampered) }
        let invalid = try debugger.verify(DebuggerArguments(["phrase": ["PASS"], "params": [tampered]]))
        #expect(!invalid.valid)
        #expect(invalid.lines.count == 3)
        #expect(invalid.lines.first == "invalid: the signature does not match the parameters")
        #expect(invalid.lines[1] == "string to sign: PASSaccess_code=ACamount=1001apple_header={b=2, a=1}merchant_identifier=MIDPASS")
        #expect(invalid.lines[2].hasPrefix("expected signature: ") && !invalid.lines[2].hasSuffix(signature))

        let unsigned = try debugger.verify(DebuggerArguments(["phrase": ["PASS"], "params": [try file(#"{"a":"1"}"#)]]))
        #expect(!unsigned.valid && unsigned.lines.first == "invalid: the parameters carry no signature")

        // Empty values: the .NET rule by default, the PHP rule on request; a verdict explains both.
        let empty = try file(#"{"a":"1","b":""}"#)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect(try debugger.sign(DebuggerArguments(["phrase": ["P"], "params": [empty]]))[0] == "Pa=1P")
        let php = try debugger.sign(DebuggerArguments(["phrase": ["P"], "params": [empty], "keep-empty": ["true"]]))
        #expect(php[0] == "Pa=1b=P")
        let phpSigned = try file(#"{"a":"1","b":"","signature":"\#(php[1])"}"#)
        defer { try? FileManager.default.removeItem(atPath: phpSigned) }
        let viaPHP = try debugger.verify(DebuggerArguments(["phrase": ["P"], "params": [phpSigned]]))
        #expect(viaPHP.valid && viaPHP.lines.first?.contains("PHP") == true)
        let wrong = try file(#"{"a":"1","b":"","signature":"00"}"#)
        defer { try? FileManager.default.removeItem(atPath: wrong) }
        let both = try debugger.verify(DebuggerArguments(["phrase": ["P"], "params": [wrong]]))
        #expect(!both.valid && both.lines.count == 5 && both.lines[3] == "string to sign with empty values (PHP SDK): Pa=1b=P")
    }

    @Test("the debugger names the option at fault")
    func debuggerErrors() throws {
        let debugger = try #require(PayFortPlugin.plugin.debugger)
        let missing = #expect(throws: CheckoutError.self) { try debugger.sign(DebuggerArguments(["params": ["-"]])) }
        #expect(missing?.field == "--phrase")
        let unreadable = #expect(throws: CheckoutError.self) {
            try debugger.sign(DebuggerArguments(["phrase": ["P"], "params": ["/nonexistent/params.json"]]))
        }
        #expect(unreadable?.field == "--params")
        let duplicate = try file(#"{"a":"1","a":"2"}"#)
        defer { try? FileManager.default.removeItem(atPath: duplicate) }
        let twice = #expect(throws: CheckoutError.self) { try debugger.sign(DebuggerArguments(["phrase": ["P"], "params": [duplicate]])) }
        #expect(twice?.field == "--params" && twice?.code == .duplicateField)
        #expect(twice?.message.contains("params.a") == true)
    }
}
