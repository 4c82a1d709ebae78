import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillServer

private let fakeModules: [String: GatewayCapabilities] = [
    "fake": GatewayCapabilities(methods: [.card, .wechatPay, .alipay], actions: [.sale, .authorize]),
]

private func fixture(_ name: String) throws -> Data {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    return try Data(contentsOf: url)
}

@Suite("Merchant configuration")
struct ConfigurationTests {
    @Test("a valid file loads, with defaults where keys are omitted")
    func valid() throws {
        let configuration = try ConfigurationLoader.load(try fixture("valid-config.json"), modules: fakeModules).get()
        let merchant = try #require(configuration.merchant("acme"))
        #expect(merchant.gateways.count == 4)
        #expect(merchant.routing.rules.count == 4)
        #expect(merchant.retry.inquiryAttempts == RetryPolicy().inquiryAttempts)
        #expect(merchant.health.halfOpenProbes == 1)
        #expect(merchant.gateways[1].credentials["secret"] == CredentialReference(file: "/run/secrets/secondary"))
    }

    @Test("every problem is reported with its path, in one pass")
    func broken() throws {
        guard case .failure(let error) = ConfigurationLoader.load(try fixture("broken-config.json"), modules: fakeModules) else {
            Issue.record("the broken configuration loaded")
            return
        }
        let fields = Set(error.issues.map(\.field))
        let expected: Set<String> = [
            "merchants[0].routing.fallbak",                              // misspelt key
            "merchants[0].gateways[1].id",                               // duplicate id
            "merchants[0].gateways[1].module",                           // unknown module
            "merchants[0].gateways[1].credentials.key",                  // env and file
            "merchants[0].gateways[2].limits.currencies[0]",             // EURO
            "merchants[0].gateways[2].limits.countries[0]",              // XX
            "merchants[0].routing.rules[1].gateways[0].id",              // ghost
            "merchants[0].routing.rules[2].when.currencies[0]",          // USX
            "merchants[0].routing.rules[2].when.amount.min",             // 10.005 USD
            "merchants[0].routing.rules[3].when.cardIIN[0]",             // lengths differ
            "merchants[0].routing.rules[3].when.countries",              // empty list
            "merchants[0].routing.rules[3].gateways[1].weight",          // split without weight
            "merchants[0].routing.rules[3].gateways[1].id",              // disabled
            "merchants[0].routing.fallback[0]",                          // disabled
            "merchants[0].retry.maxAttempts",
            "merchants[0].retry.decisionOverrides.nobody",
            "merchants[0].health.minSamples",
            "merchants[0].health.minSuccessRate",
        ]
        #expect(expected.isSubset(of: fields), "missing: \(expected.subtracting(fields).sorted())")
        // The pasted secret is refused, and never echoed.
        #expect(!error.description.contains("sk_live_pasted_by_mistake"))
    }

    @Test("a gateway told with each payment where to post (Citcon, iPayNow) needs the server's public URL; one whose endpoint is set in its back office does not")
    func publicURLWhereNeeded() throws {
        let modules: [String: GatewayCapabilities] = [
            "perpayment": GatewayCapabilities(methods: [.card], notificationURLPerPayment: true),
            "backoffice": GatewayCapabilities(methods: [.card]),
        ]
        func issues(_ module: String, publicURL: String?) -> [String] {
            let merchant = MerchantConfiguration(id: "m", apiKey: CredentialReference(env: "K"),
                                                 gateways: [GatewayConfiguration(id: "g", module: module)], routing: RoutingConfiguration(fallback: ["g"]))
            return TillConfiguration(merchants: [merchant], server: ServerSettings(publicURL: publicURL)).validate(modules: modules).map(\.field)
        }
        #expect(issues("perpayment", publicURL: nil) == ["server.publicURL"])
        #expect(issues("perpayment", publicURL: "https://pay.example.com").isEmpty)
        #expect(issues("backoffice", publicURL: nil).isEmpty)
    }

    @Test("huge weights are refused, never overflowed")
    func hugeWeights() throws {
        let json = #"{"merchants":[{"id":"m","gateways":[{"id":"a","module":"fake"},{"id":"b","module":"fake"}],"routing":{"rules":[{"gateways":[{"id":"a","weight":9223372036854775807},{"id":"b","weight":1}]}]}}]}"#
        guard case .failure(let error) = ConfigurationLoader.load(Data(json.utf8), modules: fakeModules) else {
            Issue.record("accepted an overflowing weight"); return
        }
        #expect(error.issues.contains { $0.field == "merchants[0].routing.rules[0].gateways[0].weight" })
    }

    @Test("a pasted secret is refused without echoing it")
    func pastedSecret() throws {
        let json = #"{"merchants":[{"id":"m","gateways":[{"id":"g","module":"fake","credentials":{"secret":"hunter2"}}]}]}"#
        guard case .failure(let error) = ConfigurationLoader.load(Data(json.utf8), modules: fakeModules) else {
            Issue.record("accepted a secret value"); return
        }
        #expect(error.issues.first?.field == "merchants[0].gateways[0].credentials.secret")
        #expect(!error.description.contains("hunter2"))
    }

    @Test("malformed JSON and wrong types are typed problems naming the field", arguments: [
        (#"{"merchants": [ {"id": "m", "gateways": "#, "$"),
        (#"{"merchants": {}}"#, "merchants"),
        (#"{"merchants": [{"id": 5, "gateways": []}]}"#, "merchants[0].id"),
        (#"{"merchants": [{"id": "m"}]}"#, "merchants[0].gateways"),
        (#"{"merchants": [{"id": "m", "gateways": [{"id": "g", "module": "fake"}], "retry": {"maxAttempts": "3"}}]}"#, "merchants[0].retry.maxAttempts"),
        (#"{"merchants": []}"#, "merchants"),
    ])
    func malformed(json: String, field: String) {
        guard case .failure(let error) = ConfigurationLoader.load(Data(json.utf8), modules: fakeModules) else {
            Issue.record("loaded \(json)"); return
        }
        #expect(error.issues.contains { $0.field == field }, "\(error.issues)")
    }

    @Test("a syntax error names its line and column; a key given twice names its path")
    func syntaxErrors() {
        let missingColon = "{\n  \"merchants\": [\n    {\"id\" \"m\"}\n  ]\n}"
        guard case .failure(let error) = ConfigurationLoader.load(Data(missingColon.utf8), modules: fakeModules) else {
            Issue.record("loaded"); return
        }
        #expect(error.issues.count == 1 && error.issues[0].field == "$" && error.issues[0].message.contains("line 3, column 11"), "\(error.issues)")
        let twice = #"{"merchants": [{"id": "m", "id": "n", "gateways": [{"id": "g", "module": "fake"}]}]}"#
        guard case .failure(let duplicate) = ConfigurationLoader.load(Data(twice.utf8), modules: fakeModules) else {
            Issue.record("loaded"); return
        }
        #expect(duplicate.issues.first?.field == "merchants[0].id" && duplicate.issues.first?.code == .duplicateField, "\(duplicate.issues)")
        // A file saved with a UTF-8 byte-order mark loads (RFC 8259 lets a parser ignore it).
        let marked = Data([0xEF, 0xBB, 0xBF]) + Data(#"{"merchants": [{"id": "m", "gateways": [{"id": "g", "module": "fake"}]}]}"#.utf8)
        #expect((try? ConfigurationLoader.load(marked, modules: fakeModules).get()) != nil)
    }

    @Test("returnURLSchemes load lower-cased; allowLoopbackHTTPReturnURLs defaults to false")
    func returnURLSchemes() throws {
        let json = #"{"merchants":[{"id":"m","gateways":[{"id":"g","module":"fake"}],"returnURLSchemes":["TillShop","com.example.app+pay"]}]}"#
        let merchant = try #require(try ConfigurationLoader.load(Data(json.utf8), modules: fakeModules).get().merchants.first)
        #expect(merchant.returnURLSchemes == ["tillshop", "com.example.app+pay"])
        #expect(merchant.allowLoopbackHTTPReturnURLs == false)
        #expect(merchant.returnURLRule.problem(with: URL(string: "TILLSHOP://till/return")!) == nil)
        let bare = #"{"merchants":[{"id":"m","gateways":[{"id":"g","module":"fake"}]}]}"#
        #expect(try ConfigurationLoader.load(Data(bare.utf8), modules: fakeModules).get().merchants[0].returnURLSchemes == [])
    }

    @Test("a bad return URL scheme is refused at load, naming its index", arguments: [
        (#""returnURLSchemes":["shop","javascript"]"#, "merchants[0].returnURLSchemes[1]"),
        (#""returnURLSchemes":["HTTPS"]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":["http"]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":["data","file","vbscript"]"#, "merchants[0].returnURLSchemes[2]"),
        (#""returnURLSchemes":["1shop"]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":["my shop"]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":["shop:"]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":[""]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":["shöp"]"#, "merchants[0].returnURLSchemes[0]"),
        (#""returnURLSchemes":["shop","SHOP"]"#, "merchants[0].returnURLSchemes[1]"),
        (#""returnURLSchemes":"shop""#, "merchants[0].returnURLSchemes"),
        (#""allowLoopbackHTTPReturnURLs":"yes""#, "merchants[0].allowLoopbackHTTPReturnURLs"),
        (#""returnUrlSchemes":["shop"]"#, "merchants[0].returnUrlSchemes"),
    ])
    func badReturnURLSchemes(fragment: String, field: String) {
        let json = #"{"merchants":[{"id":"m","gateways":[{"id":"g","module":"fake"}],"# + fragment + "}]}"
        guard case .failure(let error) = ConfigurationLoader.load(Data(json.utf8), modules: fakeModules) else {
            Issue.record("loaded \(fragment)"); return
        }
        #expect(error.issues.contains { $0.field == field && $0.code == .invalidField }, "\(error.issues)")
    }

    @Test("credentials resolve from the environment or a file, and missing ones name the field, not the value")
    func credentials() throws {
        let env = CredentialReference(env: "TILL_TEST_SECRET")
        #expect(try env.resolve(field: "g.secret", environment: ["TILL_TEST_SECRET": "s3"]) == "s3")
        let missing = #expect(throws: CheckoutError.self) { try env.resolve(field: "g.secret", environment: [:]) }
        #expect(missing?.code == .missingSecret && missing?.field == "g.secret")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-secret-\(UUID().uuidString)")
        try Data("from-file\n".utf8).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        #expect(try CredentialReference(file: path.path).resolve(field: "g.secret") == "from-file")
        #expect(throws: CheckoutError.self) { try CredentialReference(file: "/nonexistent/till").resolve(field: "x") }
    }
}
