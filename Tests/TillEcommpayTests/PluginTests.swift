import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillEcommpayServer
import TillOrchestration

/// ``EcommpayPlugin``: settings and credentials, errors naming the entry at fault; the signature debugger
/// (`till sign ecommpay`, `till verify ecommpay`) checked against the official vectors and callbacks.
@Suite("ecommpay plugin")
struct PluginTests {
    static func context(_ settings: [String: String], credentials: [String: String] = ["secret_key": Setup.secret],
                        path: String = "") -> GatewayPluginContext {
        GatewayPluginContext(id: "ecommpay", settings: ModuleSettings(module: "ecommpay", settings: settings, credentials: credentials, path: path),
                             transport: RecordingTransport())
    }

    static func server(_ settings: [String: String], credentials: [String: String] = ["secret_key": Setup.secret]) throws -> EcommpayServer {
        try EcommpayPlugin.server(context(settings, credentials: credentials))
    }

    @Test("the plugin: module ecommpay, both halves, the debugger")
    func plugin() throws {
        let plugin = EcommpayPlugin.plugin
        #expect(plugin.module == "ecommpay")
        #expect(plugin.capabilities == EcommpayGateway.capabilities)
        #expect(try plugin.makeServerHalf(Self.context(["project_id": "12345"])) is EcommpayServer)
        #expect(try plugin.makeAppHalf(Self.context([:])) is EcommpayGateway)
        #expect(plugin.debugger != nil)
    }

    @Test("settings: production by default; base_url for both; payment_page_url and gate_url each; mock_mode")
    func settings() throws {
        let defaults = try Self.server(["project_id": "12345"])
        #expect(defaults.environment == .production)
        #expect(defaults.environment.paymentPage.absoluteString == "https://paymentpage.ecommpay.com")
        #expect(defaults.environment.gate.absoluteString == "https://api.ecommpay.com")
        #expect(defaults.settings == EcommpaySettings(projectId: 12345, mockMode: .disabled))
        let sandbox = try Self.server(["project_id": "1", "base_url": "http://127.0.0.1:8080"])
        #expect(sandbox.environment == EcommpayEnvironment(paymentPage: URL(string: "http://127.0.0.1:8080")!, gate: URL(string: "http://127.0.0.1:8080")!))
        let split = try Self.server(["project_id": "1", "base_url": "http://127.0.0.1:8080", "gate_url": "https://gate.test"])
        #expect(split.environment.gate.absoluteString == "https://gate.test")
        #expect(split.environment.paymentPage.absoluteString == "http://127.0.0.1:8080")
        let page = try Self.server(["project_id": "1", "payment_page_url": "https://page.test"])
        #expect(page.environment.paymentPage.absoluteString == "https://page.test")
        #expect(page.environment.gate.absoluteString == "https://api.ecommpay.com")
        for mode in EcommpayPaymentOptions.MockMode.allCases {
            #expect(try Self.server(["project_id": "1", "mock_mode": mode.rawValue]).settings.mockMode == mode)
        }
        #expect(try Self.server(["project_id": String(Int32.max)]).settings.projectId == Int(Int32.max))
    }

    @Test("settings errors name settings.<name> or credentials.<name>, category configuration",
          arguments: [
            ([:], ["secret_key": "k"], "settings.project_id"),
            (["project_id": ""], ["secret_key": "k"], "settings.project_id"),
            (["project_id": "0"], ["secret_key": "k"], "settings.project_id"),
            (["project_id": "-3"], ["secret_key": "k"], "settings.project_id"),
            (["project_id": "12a"], ["secret_key": "k"], "settings.project_id"),
            (["project_id": "2147483648"], ["secret_key": "k"], "settings.project_id"),
            (["project_id": "1"], [:], "credentials.secret_key"),
            (["project_id": "1"], ["secret_key": ""], "credentials.secret_key"),
            (["project_id": "1", "mock_mode": "on"], ["secret_key": "k"], "settings.mock_mode"),
            (["project_id": "1", "base_url": "ftp://x"], ["secret_key": "k"], "settings.base_url"),
            (["project_id": "1", "gate_url": "not a url"], ["secret_key": "k"], "settings.gate_url"),
            (["project_id": "1", "payment_page_url": "https://"], ["secret_key": "k"], "settings.payment_page_url"),
            (["project_id": "1", "secret_key": "k"], ["secret_key": "k"], "settings.secret_key"),
            (["project_id": "1", "projectId": "1"], ["secret_key": "k"], "settings.projectId"),
            (["project_id": "1"], ["secret_key": "k", "salt": "s"], "credentials.salt"),
          ] as [([String: String], [String: String], String)])
    func settingsErrors(_ settings: [String: String], _ credentials: [String: String], _ field: String) {
        let error = #expect(throws: CheckoutError.self) { _ = try Self.server(settings, credentials: credentials) }
        #expect(error?.field == field)
        #expect(error?.category == .configuration)
    }

    @Test("errors carry the configuration's path")
    func settingsPath() {
        let error = #expect(throws: CheckoutError.self) { _ = try EcommpayPlugin.server(Self.context([:], path: "merchants[0].gateways[3]")) }
        #expect(error?.field == "merchants[0].gateways[3].settings.project_id")
        let key = #expect(throws: CheckoutError.self) {
            _ = try EcommpayPlugin.server(Self.context(["project_id": "1"], credentials: [:], path: "merchants[0].gateways[3]."))
        }
        #expect(key?.field == "merchants[0].gateways[3].credentials.secret_key")
        #expect(key?.code == .missingSecret)
    }

    // MARK: Debugger

    /// Writes `data` to a file of its own and returns its path.
    static func file(_ data: Data) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ecommpay-\(UUID().uuidString)")
        try data.write(to: url)
        return url.path
    }

    static var debugger: SignatureDebugger {
        get throws { try #require(EcommpayPlugin.plugin.debugger) }
    }

    @Test("till sign: the string line, then the signature line, for every signed official vector", arguments: SignatureVector.signed)
    func sign(_ vector: SignatureVector) throws {
        let path = try Self.file(vector.params.serialized())
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lines = try Self.debugger.sign(DebuggerArguments(["secret": [try #require(vector.secret)], "params": [path]]))
        #expect(lines == [vector.expectedString, try #require(vector.expectedSignature)])
    }

    @Test("till sign: a signature member in the parameters is left out, as a callback's would be")
    func signWithoutSignature() throws {
        let vector = try #require(SignatureVector.all.first { $0.id == "py_callback_basic" })
        guard case .object(let members) = vector.params else { Issue.record("not an object"); return }
        let path = try Self.file(OrderedJSON.object(members + [.init(key: "signature", value: .string("old"))]).serialized())
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lines = try Self.debugger.sign(DebuggerArguments(["secret": ["qwerty"], "params": [path]]))
        #expect(lines == [vector.expectedString, try #require(vector.expectedSignature)])
    }

    @Test("till sign: missing options and params that are not an object name them")
    func signErrors() throws {
        let debugger = try Self.debugger
        let noSecret = #expect(throws: CheckoutError.self) { _ = try debugger.sign(DebuggerArguments(["params": ["-"]])) }
        #expect(noSecret?.field == "--secret")
        let noParams = #expect(throws: CheckoutError.self) { _ = try debugger.sign(DebuggerArguments(["secret": ["k"]])) }
        #expect(noParams?.field == "--params")
        for (json, field) in [("[1]", "params"), ("\"x\"", "params"), ("{nope", "params"), (#"{"a": 1, "a": 2}"#, "params.a")] {
            let path = try Self.file(Data(json.utf8))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let error = #expect(throws: CheckoutError.self, "\(json)") { _ = try debugger.sign(DebuggerArguments(["secret": ["k"], "params": [path]])) }
            #expect(error?.field == field, "\(json)")
        }
    }

    @Test("till verify: every valid SDK-test callback is valid with its secret", arguments: CallbackCase.all.filter { $0.expected == .valid })
    func verifyValid(_ item: CallbackCase) throws {
        let path = try Self.file(Data(item.body.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try Self.debugger.verify(DebuggerArguments(["secret": [item.secret], "body": [path]]))
        #expect(verdict.valid)
        #expect(verdict.lines.count == 1)
        #expect(verdict.lines.first?.hasPrefix("valid: payment ") == true)
    }

    @Test("till verify: the callback line names payment, status and a cascading decline")
    func verifyLine() throws {
        let body = TestSigner.signedBody(ServerTests.callbackMembers(status: "decline", cascading: true), secret: "k")
        let path = try Self.file(body)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try Self.debugger.verify(DebuggerArguments(["secret": ["k"], "body": [path]]))
        #expect(verdict.lines == ["valid: payment \(Setup.attempt.rawValue) decline (cascading_with_redirect)"])
    }

    @Test("till verify: under another secret, invalid, with the string to sign and the signature expected (the tests' own)",
          arguments: CallbackCase.all.filter { $0.expected == .valid })
    func verifyInvalid(_ item: CallbackCase) throws {
        let path = try Self.file(Data(item.body.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let wrong = "not-" + item.secret
        let verdict = try Self.debugger.verify(DebuggerArguments(["secret": [wrong], "body": [path]]))
        #expect(!verdict.valid)
        let unsigned = TestSigner.unsigned(try OrderedJSON.parse(Data(item.body.utf8)))
        #expect(verdict.lines == [
            "invalid: body.signature: the HMAC-SHA512 signature does not match",
            "string to sign: \(TestSigner.string(unsigned))",
            "expected signature: \(TestSigner.sign(unsigned, secret: wrong))",
        ])
    }

    @Test("till verify: the official callback vectors' expected signature is what the debugger prints for their body under the right secret")
    func verifyAgainstVector() throws {
        let vector = try #require(SignatureVector.all.first { $0.id == "php_callback_format_6" })
        let item = try #require(CallbackCase.all.first { $0.id == "php_cb_format_6" })
        // Signed with another secret, the debugger prints the vector's string and, for the right secret, the vector's signature.
        let path = try Self.file(Data(item.body.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verdict = try Self.debugger.verify(DebuggerArguments(["secret": ["wrong"], "body": [path]]))
        #expect(verdict.lines.contains("string to sign: \(vector.expectedString)"))
        #expect(TestSigner.hmac(vector.expectedString, secret: item.secret) == vector.expectedSignature)
    }

    @Test("till verify: an unsigned or unreadable body is invalid and says why")
    func verifyOther() throws {
        for (body, prefix) in [(#"{"payment":{"id":"a"}}"#, "invalid: body.signature: neither signature nor general.signature"),
                               ("nope", "invalid: body: ")] {
            let path = try Self.file(Data(body.utf8))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let verdict = try Self.debugger.verify(DebuggerArguments(["secret": ["k"], "body": [path]]))
            #expect(!verdict.valid)
            #expect(verdict.lines.first?.hasPrefix(prefix) == true, "\(verdict.lines)")
        }
    }
}
