import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillIPayNowServer
import TillOrchestration

/// ``IPayNowPlugin``: settings and credentials, errors naming the entry at fault; the signature debugger
/// (`till sign ipaynow`, `till verify ipaynow`) on the vendor vectors.
@Suite("iPayNow plugin")
struct PluginTests {
    static func context(_ settings: [String: String], credentials: [String: String] = ["app_key": Setup.appKey],
                        path: String = "") -> GatewayPluginContext {
        GatewayPluginContext(id: "ipaynow", settings: ModuleSettings(module: "ipaynow", settings: settings, credentials: credentials, path: path),
                             transport: RecordingTransport())
    }

    static func server(_ settings: [String: String], credentials: [String: String] = ["app_key": Setup.appKey]) throws -> IPayNowServer {
        try IPayNowPlugin.server(context(settings, credentials: credentials))
    }

    @Test("the plugin: module ipaynow, both halves, the debugger")
    func plugin() throws {
        let plugin = IPayNowPlugin.plugin
        #expect(plugin.module == "ipaynow")
        #expect(plugin.capabilities == IPayNowGateway.capabilities)
        #expect(try plugin.makeServerHalf(Self.context(["app_id": Setup.appId])) is IPayNowServer)
        #expect(try plugin.makeAppHalf(Self.context([:])) is IPayNowGateway)
        #expect(plugin.debugger != nil)
    }

    @Test("settings: defaults (production host, no settlement currency, 3600 s, China time, Alipay only) and each one read")
    func settings() throws {
        let defaults = try Self.server(["app_id": Setup.appId])
        // Production by default: the iOS plugin sends every order there.
        #expect(defaults.environment == .production)
        #expect(defaults.environment.gatewayURL.absoluteString == "https://gapi.ipaynow.cn/global")
        let test = try Self.server(["app_id": Setup.appId, "environment": "test"])
        #expect(test.environment.gatewayURL.absoluteString == "https://dby.ipaynow.cn/global")
        #expect(defaults.settings == IPayNowSettings(appId: Setup.appId, settlementCurrency: nil, orderTimeout: 3600, utcOffsetSeconds: 8 * 3600))
        let production = try Self.server(["app_id": Setup.appId, "environment": "production"])
        #expect(production.environment.gatewayURL.absoluteString == "https://gapi.ipaynow.cn/global")
        let sandbox = try Self.server(["app_id": Setup.appId, "environment": "production", "base_url": "http://127.0.0.1:8080"])
        #expect(sandbox.environment.gatewayURL.absoluteString == "http://127.0.0.1:8080/global")
        let all = try Self.server(["app_id": Setup.appId, "settlement_currency": "HKD", "order_timeout_seconds": "60", "utc_offset_minutes": "-300",
                                   "wechat_pay": "true"])
        #expect(all.settings == IPayNowSettings(appId: Setup.appId, settlementCurrency: "HKD", orderTimeout: 60, utcOffsetSeconds: -300 * 60,
                                                wechatPay: true))
    }

    @Test("settings errors name settings.<name> or credentials.<name>",
          arguments: [
            ([:], [:], "settings.app_id"),
            (["app_id": ""], ["app_key": "k"], "settings.app_id"),
            (["app_id": String(repeating: "1", count: 41)], ["app_key": "k"], "settings.app_id"),
            (["app_id": "1"], [:], "credentials.app_key"),
            (["app_id": "1"], ["app_key": ""], "credentials.app_key"),
            (["app_id": "1", "order_timeout_seconds": "59"], ["app_key": "k"], "settings.order_timeout_seconds"),
            (["app_id": "1", "order_timeout_seconds": "3601"], ["app_key": "k"], "settings.order_timeout_seconds"),
            (["app_id": "1", "order_timeout_seconds": "1h"], ["app_key": "k"], "settings.order_timeout_seconds"),
            (["app_id": "1", "settlement_currency": "CNY"], ["app_key": "k"], "settings.settlement_currency"),
            (["app_id": "1", "settlement_currency": "KRW"], ["app_key": "k"], "settings.settlement_currency"),
            (["app_id": "1", "environment": "live"], ["app_key": "k"], "settings.environment"),
            (["app_id": "1", "base_url": "ftp://x"], ["app_key": "k"], "settings.base_url"),
            (["app_id": "1", "utc_offset_minutes": "900"], ["app_key": "k"], "settings.utc_offset_minutes"),
            (["app_id": "1", "app_key": "k"], ["app_key": "k"], "settings.app_key"),
            (["app_id": "1", "md5_key": "k"], ["app_key": "k"], "settings.md5_key"),
            (["app_id": "1"], ["app_key": "k", "appKey": "k"], "credentials.appKey"),
          ] as [([String: String], [String: String], String)])
    func settingsErrors(_ settings: [String: String], _ credentials: [String: String], _ field: String) {
        let error = #expect(throws: CheckoutError.self) { _ = try Self.server(settings, credentials: credentials) }
        #expect(error?.field == field)
        if error?.code != .fieldTooLong {
            #expect(error?.category == .configuration, "\(error?.code.rawValue ?? "")")
        }
    }

    /// Every other settings error is `misconfigured` or `missing_secret` (category configuration); a too
    /// long `app_id` comes from the shared length validator as `field_too_long`, category invalid_input,
    /// as if a payer's input were wrong.
    @Test("a too long app_id is a configuration error like the other settings errors")
    func appIdTooLongCategory() {
        let error = #expect(throws: CheckoutError.self) {
            _ = try Self.server(["app_id": String(repeating: "1", count: 41)], credentials: ["app_key": "k"])
        }
        #expect(error?.field == "settings.app_id")
        #expect(error?.category == .configuration)
    }

    /// An `app_id` holding `&` or `=` can never be signed into an order (``IPayNowOrder/validate(prefix:)``
    /// refuses it as `appId`); the settings accept it, and every prepare then fails naming `appId`.
    @Test("an app_id every order would refuse is a settings error at configuration time")
    func appIdUnusable() {
        for bad in ["1480321334800229&x=1", "1480321334800229=", "1480 321", "14803\u{0007}"] {
            let error = #expect(throws: CheckoutError.self) { _ = try Self.server(["app_id": bad]) }
            #expect(error?.field == "settings.app_id")
            #expect(error?.category == .configuration)
        }
    }

    @Test("errors carry the configuration's path")
    func settingsPath() {
        let error = #expect(throws: CheckoutError.self) {
            _ = try IPayNowPlugin.server(Self.context([:], path: "merchants[0].gateways[2]"))
        }
        #expect(error?.field == "merchants[0].gateways[2].settings.app_id")
        let key = #expect(throws: CheckoutError.self) {
            _ = try IPayNowPlugin.server(Self.context(["app_id": "1"], credentials: [:], path: "merchants[0].gateways[2]."))
        }
        #expect(key?.field == "merchants[0].gateways[2].credentials.app_key")
    }

    // MARK: Debugger

    /// Writes `text` to a file of its own and returns its path.
    static func file(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ipaynow-\(UUID().uuidString)")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    static var debugger: SignatureDebugger {
        get throws { try #require(IPayNowPlugin.plugin.debugger) }
    }

    @Test("till sign: the JSON fields of a WP001 request give the presign line and the signature line", arguments: PresignVectors.all)
    func sign(_ vector: PresignVectors.Case) throws {
        let key = try #require(PresignVectors.loaded).app_key
        var object: [String: Any] = vector.fields
        // Numbers are read as their text; the unsigned WP001 fields are left out of the string to sign.
        object["mhtOrderAmt"] = Int(try #require(vector.fields["mhtOrderAmt"]))
        object["funcode"] = "WP001"
        object["deviceType"] = "0600"
        object["mhtSignType"] = "MD5"
        object["version"] = "1.0"
        object["detail"] = #"{"goods_detail":[{"goods_name":"tea","quantity":1}]}"#
        let json = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        let path = try Self.file(json)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lines = try Self.debugger.sign(DebuggerArguments(["key": [key], "params": [path]]))
        #expect(lines == [vector.presign_string, vector.mhtSignature])
    }

    @Test("till sign: missing options and bad params name them")
    func signErrors() throws {
        let debugger = try Self.debugger
        let noKey = #expect(throws: CheckoutError.self) { _ = try debugger.sign(DebuggerArguments(["params": ["-"]])) }
        #expect(noKey?.field == "--key")
        for (json, field) in [("[1]", "params"), (#"{"appId": {"x": 1}}"#, "params.appId"), (#"{"appId": true}"#, "params.appId"),
                              (#"{"appId": "1", "appId": "2"}"#, "params.appId")] {
            let path = try Self.file(json)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let error = #expect(throws: CheckoutError.self, "\(json)") {
                _ = try debugger.sign(DebuggerArguments(["key": ["k"], "params": [path]]))
            }
            #expect(error?.field == field, "\(json)")
        }
    }

    @Test("till verify: every real message is valid with its key, under the rule its fields name", arguments: RealVector.all)
    func verifyValid(_ vector: RealVector) throws {
        let path = try Self.file(vector.raw_body)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try Self.debugger.verify(DebuggerArguments(["key": [vector.app_key], "body": [path]]))
        #expect(verdict.valid)
        let funcode = vector.fields_decoded["funcode"] ?? "answer"
        let expected = vector.expectedRule == .versionedMessage
            ? "valid: \(funcode) from iPayNow (version 1.0.0), versionedMessage rule (leaves out signature)"
            : "valid: \(funcode) from iPayNow (no version), legacyMessage rule (leaves out signType, signature)"
        #expect(verdict.lines == [expected])
    }

    @Test("till verify: with another key, invalid, with the string to sign and the signature expected", arguments: RealVector.all)
    func verifyInvalid(_ vector: RealVector) throws {
        let path = try Self.file(vector.raw_body)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let wrongKey = "not-" + vector.app_key
        let verdict = try Self.debugger.verify(DebuggerArguments(["key": [wrongKey], "body": [path]]))
        #expect(!verdict.valid)
        #expect(verdict.lines.count == 4)
        #expect(verdict.lines.first == "invalid: body.signature: the MD5 signature does not match (\(vector.expectedRule.rawValue) rule)")
        #expect(verdict.lines.contains("string to sign: \(vector.string_to_sign)&<md5(key)>"))
        let excluded = vector.expectedRule == .versionedMessage ? TestSigner.versioned : TestSigner.legacy
        #expect(verdict.lines.last == "expected signature: \(TestSigner.sign(vector.pairs, excluding: excluded, key: wrongKey))")
    }

    @Test("till verify: a tampered real message is invalid; its expected signature is the one the tests recompute")
    func verifyTampered() throws {
        let vector = try #require(RealVector.all.first { $0.id == "server_N001_notify_v1_0_0" })
        let tampered = vector.raw_body.replacingOccurrences(of: "mhtOrderAmt=1&", with: "mhtOrderAmt=100&")
        let path = try Self.file(tampered)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try Self.debugger.verify(DebuggerArguments(["key": [vector.app_key], "body": [path]]))
        #expect(!verdict.valid)
        let pairs = TestForm.decode(tampered)
        #expect(verdict.lines.contains("string to sign: \(TestSigner.canonical(pairs, excluding: TestSigner.versioned))&<md5(key)>"))
        #expect(verdict.lines.last == "expected signature: \(TestSigner.sign(pairs, excluding: TestSigner.versioned, key: vector.app_key))")
    }

    @Test("till verify: each computed payData is a valid order (mhtReserved decoded once before verifying)", arguments: PresignVectors.all)
    func verifyPayData(_ vector: PresignVectors.Case) throws {
        let key = try #require(PresignVectors.loaded).app_key
        let path = try Self.file(try #require(vector.payData))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try Self.debugger.verify(DebuggerArguments(["key": [key], "body": [path]]))
        #expect(verdict.valid)
        #expect(verdict.lines == ["valid: presign (payData), order rule (leaves out detail, deviceType, funcode, mhtSignType, mhtSignature, version)"])
    }

    @Test("till verify: a body with neither signature, or both, is invalid and says so; a merchant's MQ001 request verifies")
    func verifyOther() throws {
        let debugger = try Self.debugger
        for body in ["appId=1&mhtOrderNo=a", "signature=a&mhtSignature=b"] {
            let path = try Self.file(body)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let verdict = try debugger.verify(DebuggerArguments(["key": ["k"], "body": [path]]))
            #expect(!verdict.valid)
            #expect(verdict.lines.first?.hasPrefix("invalid: body: carries neither signature") == true)
        }
        let signature = TestSigner.md5Hex("appId=\(Setup.appId)&mhtCharset=UTF-8&mhtOrderNo=abc&" + TestSigner.md5Hex(Setup.appKey))
        let request = "funcode=MQ001&appId=\(Setup.appId)&mhtOrderNo=abc&mhtCharset=UTF-8&mhtSignType=MD5&mhtSignature=\(signature)"
        let path = try Self.file(request)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try debugger.verify(DebuggerArguments(["key": [Setup.appKey], "body": [path]]))
        #expect(verdict.valid)
        #expect(verdict.lines == ["valid: MQ001 query, query rule (leaves out funcode, mhtSignType, mhtSignature)"])
    }
}
