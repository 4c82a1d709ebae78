import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillServer
import TillTesting

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

    // MARK: Webhooks and event delivery

    /// A one-merchant file with `webhooks` (a JSON array's text) and, when given, a `server` block.
    static func withWebhooks(_ webhooks: String, server: String? = nil) -> Data {
        let merchant: String = #"{"id": "m", "apiKey": {"env": "M_KEY"}, "gateways": [{"id": "g", "module": "fake", "credentials": {"notification_secret": {"env": "G_SECRET"}}}], "webhooks": "#
        let serverBlock: String = server.map { #", "server": "# + $0 } ?? ""
        let text: String = #"{"merchants": ["# + merchant + webhooks + "}]" + serverBlock + "}"
        return Data(text.utf8)
    }

    @Test("webhooks load: https anywhere, http only to 127.0.0.1, localhost or ::1, each secret a reference; none by default")
    func webhooksLoad() throws {
        let json = #"""
            [{"url": "https://shop.example.com/till/events", "secret": {"env": "HOOK_SECRET"}, "previousSecret": {"file": "/run/secrets/old"}},
             {"url": "http://127.0.0.1:9000/events", "secret": {"env": "LOCAL_SECRET"}},
             {"url": "http://localhost/events", "secret": {"env": "LOCAL_SECRET"}},
             {"url": "http://[::1]:9000/events", "secret": {"env": "LOCAL_SECRET"}}]
            """#
        let merchant = try #require(try ConfigurationLoader.load(Self.withWebhooks(json), modules: fakeModules).get().merchants.first)
        #expect(merchant.webhooks.map(\.url) == ["https://shop.example.com/till/events", "http://127.0.0.1:9000/events", "http://localhost/events",
                                                 "http://[::1]:9000/events"])
        #expect(merchant.webhooks[0].previousSecret == CredentialReference(file: "/run/secrets/old"))
        #expect(merchant.webhooks[1].previousSecret == nil)
        let bare = #"{"merchants":[{"id":"m","gateways":[{"id":"g","module":"fake"}]}]}"#
        #expect(try ConfigurationLoader.load(Data(bare.utf8), modules: fakeModules).get().merchants[0].webhooks.isEmpty)
    }

    @Test("a webhook URL that is not https (http off loopback), has no host, carries a user or password, or is given twice is refused naming it",
          arguments: [
              (#"[{"url": "http://shop.example.com/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "http://10.0.0.7/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "http://127.0.0.1.example.com/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "https://user:password@shop.example.com/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "https://user@shop.example.com/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "ftp://shop.example.com/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "/events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "https:///events", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "", "secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "https://a.example/e", "secret": {"env": "S"}}, {"url": "https://a.example/e", "secret": {"env": "T"}}]"#,
               "merchants[0].webhooks[1].url"),
              (#"[{"url": "https://a.example/e", "secret": {"env": "S", "file": "/f"}}]"#, "merchants[0].webhooks[0].secret"),
              (#"[{"url": "https://a.example/e", "secret": {}}]"#, "merchants[0].webhooks[0].secret"),
              (#"[{"url": "https://a.example/e", "secret": {"env": "S"}, "previousSecret": {"env": ""}}]"#, "merchants[0].webhooks[0].previousSecret"),
              (#"[{"url": "https://a.example/e"}]"#, "merchants[0].webhooks[0].secret"),
              (#"[{"secret": {"env": "S"}}]"#, "merchants[0].webhooks[0].url"),
              (#"[{"url": "https://a.example/e", "secret": {"env": "S"}, "secrets": {"env": "T"}}]"#, "merchants[0].webhooks[0].secrets"),
              (#"{"url": "https://a.example/e", "secret": {"env": "S"}}"#, "merchants[0].webhooks"),
          ])
    func badWebhooks(json: String, field: String) {
        guard case .failure(let error) = ConfigurationLoader.load(Self.withWebhooks(json), modules: fakeModules) else {
            Issue.record("loaded \(json)"); return
        }
        #expect(error.issues.contains { $0.field == field }, "\(json): \(error.issues)")
    }

    @Test("a webhook secret pasted into the file is refused by its path and never echoed")
    func pastedWebhookSecret() {
        let json = #"[{"url": "https://a.example/e", "secret": "whsec_pasted_by_mistake_0123456789", "previousSecret": "old_pasted_secret_0123456789"}]"#
        guard case .failure(let error) = ConfigurationLoader.load(Self.withWebhooks(json), modules: fakeModules) else {
            Issue.record("accepted a secret value"); return
        }
        #expect(Set(error.issues.map(\.field)) == ["merchants[0].webhooks[0].secret", "merchants[0].webhooks[0].previousSecret"], "\(error.issues)")
        #expect(!error.description.contains("pasted_by_mistake") && !error.description.contains("old_pasted_secret"))
    }

    @Test("the server refuses to start with a webhook secret shorter than 16 characters, or missing, naming the field and never the value")
    func shortWebhookSecret() throws {
        let json = #"[{"url": "https://a.example/e", "secret": {"env": "HOOK"}, "previousSecret": {"env": "OLD"}}]"#
        let configuration = try ConfigurationLoader.load(Self.withWebhooks(json), modules: ["fake": FakeGateway.plugin.capabilities]).get()
        func problems(_ environment: [String: String]) -> [String] {
            do {
                _ = try ServerState(configuration: configuration, plugins: [FakeGateway.plugin],
                                    environment: ["M_KEY": "merchant-key-0123456789", "G_SECRET": "g"].merging(environment) { _, new in new })
                return []
            } catch let error as StartupError {
                return error.problems
            } catch {
                return ["\(error)"]
            }
        }
        let short = problems(["HOOK": "fifteen-chars-x", "OLD": "an-old-secret-of-enough-length"])
        #expect(short == ["merchants[0].webhooks[0].secret: a signing secret needs at least 16 characters"], "\(short)")
        #expect(!short.joined().contains("fifteen-chars-x"))
        let oldShort = problems(["HOOK": "sixteen-chars-xy", "OLD": "short"])
        #expect(oldShort == ["merchants[0].webhooks[0].previousSecret: a signing secret needs at least 16 characters"], "\(oldShort)")
        let missing = problems(["OLD": "an-old-secret-of-enough-length"])
        #expect(missing.count == 1 && missing[0].contains("merchants[0].webhooks[0].secret") && missing[0].contains("HOOK"), "\(missing)")
        #expect(problems(["HOOK": "sixteen-chars-xy", "OLD": "an-old-secret-of-enough-length"]).isEmpty)
        // Resolved, the current secret signs first.
        let state = try ServerState(configuration: configuration, plugins: [FakeGateway.plugin],
                                    environment: ["M_KEY": "merchant-key-0123456789", "G_SECRET": "g", "HOOK": "sixteen-chars-xy",
                                                  "OLD": "an-old-secret-of-enough-length"])
        #expect(state.merchants[0].webhooks == [ResolvedWebhook(url: URL(string: "https://a.example/e")!,
                                                                 secrets: ["sixteen-chars-xy", "an-old-secret-of-enough-length"])])
    }

    @Test("server.events: every key optional with its default; each out of its range is refused naming it", arguments: [
        (#"{"timeoutSeconds": 0}"#, "server.events.timeoutSeconds"),
        (#"{"timeoutSeconds": 61}"#, "server.events.timeoutSeconds"),
        (#"{"concurrency": 0}"#, "server.events.concurrency"),
        (#"{"concurrency": 257}"#, "server.events.concurrency"),
        (#"{"batch": 0}"#, "server.events.batch"),
        (#"{"batch": 10001}"#, "server.events.batch"),
        (#"{"pollIntervalSeconds": 0}"#, "server.events.pollIntervalSeconds"),
        (#"{"pollIntervalSeconds": 3601}"#, "server.events.pollIntervalSeconds"),
        (#"{"retryBaseSeconds": 0}"#, "server.events.retryBaseSeconds"),
        (#"{"retryBaseSeconds": 86401}"#, "server.events.retryBaseSeconds"),
        (#"{"retryBaseSeconds": 120, "retryMaxSeconds": 60}"#, "server.events.retryMaxSeconds"),
        (#"{"retryMaxSeconds": 604801}"#, "server.events.retryMaxSeconds"),
        (#"{"retryWindowSeconds": 0}"#, "server.events.retryWindowSeconds"),
        (#"{"retryWindowSeconds": 2592001}"#, "server.events.retryWindowSeconds"),
        (#"{"enabled": "yes"}"#, "server.events.enabled"),
        (#"{"concurrency": "16"}"#, "server.events.concurrency"),
        (#"{"retries": 5}"#, "server.events.retries"),
        (#"{"timeout": 5}"#, "server.events.timeout"),
        (#"[]"#, "server.events"),
    ])
    func badEventSettings(events: String, field: String) {
        let data = Self.withWebhooks("[]", server: #"{"events": "# + events + "}")
        guard case .failure(let error) = ConfigurationLoader.load(data, modules: fakeModules) else {
            Issue.record("loaded \(events)"); return
        }
        #expect(error.issues.contains { $0.field == field }, "\(events): \(error.issues)")
    }

    @Test("server.events loads with its defaults where keys are omitted, and the edges of each range")
    func eventSettings() throws {
        let defaults = try #require(try ConfigurationLoader.load(Self.withWebhooks("[]", server: #"{"events": {}}"#), modules: fakeModules).get().server)
        #expect(defaults.events == EventDeliverySettings())
        let d = EventDeliverySettings()
        #expect(d.enabled && d.timeoutSeconds == 10 && d.concurrency == 16 && d.batch == 100 && d.pollIntervalSeconds == 1
                && d.retryBaseSeconds == 10 && d.retryMaxSeconds == 3_600 && d.retryWindowSeconds == 259_200)
        let edges = #"{"events": {"enabled": false, "timeoutSeconds": 60, "concurrency": 256, "batch": 10000, "pollIntervalSeconds": 0.01, "retryBaseSeconds": 86400, "retryMaxSeconds": 604800, "retryWindowSeconds": 2592000}}"#
        let server = try #require(try ConfigurationLoader.load(Self.withWebhooks("[]", server: edges), modules: fakeModules).get().server)
        #expect(server.events == EventDeliverySettings(enabled: false, timeoutSeconds: 60, concurrency: 256, batch: 10_000, pollIntervalSeconds: 0.01,
                                                       retryBaseSeconds: 86_400, retryMaxSeconds: 604_800, retryWindowSeconds: 2_592_000))
        let lows = #"{"events": {"timeoutSeconds": 0.1, "concurrency": 1, "batch": 1, "retryBaseSeconds": 0.01, "retryMaxSeconds": 0.01, "retryWindowSeconds": 1}}"#
        #expect((try? ConfigurationLoader.load(Self.withWebhooks("[]", server: lows), modules: fakeModules).get()) != nil)
    }
}
