import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillChildProcess
import TillOrchestration
import TillService
import TillTesting
@testable import TillServer

/// Several API keys per merchant, each with an id, a scope and an expiry; reloaded without a restart (SIGHUP).
@Suite("API keys: ids, scopes, expiry, reload", .serialized)
struct APIKeyTests {
    static let environment = ["BACKEND_KEY": "backend-key-\(UUID().uuidString)", "SUPPORT_KEY": "support-key-\(UUID().uuidString)",
                              "OLD_KEY": "old-key-\(UUID().uuidString)", "NEXT_KEY": "next-key-\(UUID().uuidString)"]

    static func keys(_ keys: APIKeyConfiguration...) -> (inout MerchantConfiguration) -> Void {
        { merchant in
            merchant.apiKey = nil
            merchant.apiKeys = keys
        }
    }

    @Test("a read-only key reads and is refused every change with 403 read_only_key; a full key does both")
    func scopes() async throws {
        let h = try await ServerHarness(.sqlite, merchantSettings: Self.keys(
            APIKeyConfiguration(id: "backend", key: .init(env: "BACKEND_KEY")),
            APIKeyConfiguration(id: "support", key: .init(env: "SUPPORT_KEY"), scope: .readOnly)), environment: Self.environment)
        defer { Task { await h.stop() } }
        let backend = Self.environment["BACKEND_KEY"]!, support = Self.environment["SUPPORT_KEY"]!
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("scope-1"), key: .some(backend))
        #expect(created.status == 201)
        let id = try #require(created.json["id"] as? String)
        #expect(try await h.send("GET", "v1/payments/\(id)", key: .some(support)).status == 200)
        #expect(try await h.send("GET", "v1/events", key: .some(support)).status == 200)
        for (method, path, body) in [("POST", "v1/payments", ServerHarness.intentJSON("scope-2")), ("PATCH", "v1/payments/\(id)", #"{"metadata":{"a":"b"}}"#),
                                     ("POST", "v1/payments/\(id)/attempts", "{}"), ("POST", "v1/payments/\(id)/captures", "{}")] {
            let refused = try await h.send(method, path, json: body, key: .some(support))
            #expect(refused.status == 403, "\(method) \(path)")
            #expect(refused.errorCode == "read_only_key")
        }
        let search = try await h.send("GET", "v1/payments", key: .some(backend))
        #expect((search.json["payments"] as? [Any])?.count == 1, "nothing the read-only key asked for was made")
    }

    @Test("an expired key is refused like an unknown one (401); one expiring later works")
    func expiry() async throws {
        let h = try await ServerHarness(.sqlite, merchantSettings: Self.keys(
            APIKeyConfiguration(id: "old", key: .init(env: "OLD_KEY"), expiresAt: Date().addingTimeInterval(-1)),
            APIKeyConfiguration(id: "next", key: .init(env: "NEXT_KEY"), expiresAt: Date().addingTimeInterval(3_600))), environment: Self.environment)
        defer { Task { await h.stop() } }
        let old = try await h.send("GET", "v1/payments", key: .some(Self.environment["OLD_KEY"]!))
        #expect(old.status == 401)
        #expect(old.errorCode == "unauthorized")
        #expect(try await h.send("GET", "v1/payments", key: .some(Self.environment["NEXT_KEY"]!)).status == 200)
    }

    @Test("the file: apiKeys load with their defaults; both forms at once, a duplicate id, a bad expiry and a pasted key are refused by path")
    func configuration() throws {
        let good = #"{"merchants":[{"id":"m","apiKeys":[{"id":"a","key":{"env":"A"}},{"id":"b","key":{"file":"/run/b"},"scope":"readOnly","expiresAt":"2027-01-31T00:00:00Z"}],"rateLimits":{"apiKey":{"perSecond":50,"burst":100},"clientSecret":null},"gateways":[{"id":"fake","module":"fake"}]}]}"#
        let loaded = try ConfigurationLoader.load(Data(good.utf8), modules: ["fake": FakeGateway().capabilities]).get()
        let merchant = loaded.merchants[0]
        #expect(merchant.keys.map(\.key.id) == ["a", "b"])
        #expect(merchant.apiKeys[0].scope == .full)
        #expect(merchant.apiKeys[1].scope == .readOnly)
        #expect(merchant.apiKeys[1].expiresAt == Date(timeIntervalSince1970: 1_801_353_600))
        #expect(merchant.rateLimits.apiKey == RateLimit(perSecond: 50, burst: 100))
        #expect(merchant.rateLimits.clientSecret == nil, "null: no limit")
        #expect(loaded.server == nil)
        #expect(ServerSettings().rateLimits.failedAuthenticationPerAddress == ServerRateLimits.defaultFailedAuthentication)
        func problems(_ merchant: String, server: String = "{}") -> [String] {
            let text = #"{"server":\#(server),"merchants":[{"id":"m","gateways":[{"id":"fake","module":"fake"}]\#(merchant.isEmpty ? "" : ",")\#(merchant)}]}"#
            guard case .failure(let error) = ConfigurationLoader.load(Data(text.utf8), modules: ["fake": FakeGateway().capabilities]) else { return [] }
            return error.issues.map(\.field)
        }
        #expect(problems(#""apiKey":{"env":"A"},"apiKeys":[{"id":"a","key":{"env":"B"}}]"#) == ["merchants[0].apiKeys"])
        #expect(problems(#""apiKeys":[{"id":"a","key":{"env":"A"}},{"id":"a","key":{"env":"B"}}]"#) == ["merchants[0].apiKeys[1].id"])
        #expect(problems(#""apiKeys":[{"id":"a","key":{"env":"A"},"expiresAt":"tomorrow"}]"#) == ["merchants[0].apiKeys[0].expiresAt"])
        #expect(problems(#""apiKeys":[{"id":"a","key":{"env":"A"},"scope":"admin"}]"#) == ["merchants[0].apiKeys[0].scope"])
        #expect(problems(#""apiKeys":[{"id":"a","key":"sk_live_pasted"}]"#) == ["merchants[0].apiKeys[0].key"])
        #expect(problems(#""apiKeys":[{"id":"a b","key":{"env":"A"}}]"#) == ["merchants[0].apiKeys[0].id"])
        #expect(problems(#""rateLimits":{"apiKey":{"perSecond":0,"burst":1}}"#) == ["merchants[0].rateLimits.apiKey.perSecond"])
        #expect(problems(#""rateLimits":{"clientSecret":{"perSecond":1}}"#) == ["merchants[0].rateLimits.clientSecret.burst"])
        #expect(problems("", server: #"{"rateLimits":{"maxTrackedClients":5}}"#) == ["server.rateLimits.maxTrackedClients"])
        #expect(problems("", server: #"{"rateLimits":{"perAddress":1}}"#) == ["server.rateLimits.perAddress"])
    }

    @Test("adopt: a rotated key works and the revoked one is refused at once; a change that needs a restart is named")
    func adopt() throws {
        let plugin = GatewayPlugin(module: "fake", capabilities: FakeGateway().capabilities,
                                   makeServerHalf: { _ in FakeGateway() }, makeAppHalf: { _ in FakeGateway() })
        func state(_ keys: [APIKeyConfiguration], gateways: [GatewayID] = ["fake"], merchants: [String] = ["m"]) throws -> ServerState {
            try ServerState(configuration: TillConfiguration(merchants: merchants.map { id in
                MerchantConfiguration(id: id, gateways: gateways.map { GatewayConfiguration(id: $0, module: "fake") },
                                      apiKeys: id == "m" ? keys : [APIKeyConfiguration(id: "own", key: .init(env: "SUPPORT_KEY"))])
            }), plugins: [plugin], environment: Self.environment)
        }
        let old = APIKeyConfiguration(id: "old", key: .init(env: "OLD_KEY")), next = APIKeyConfiguration(id: "next", key: .init(env: "NEXT_KEY"))
        let running = try state([old])
        #expect(running.merchant(apiKey: Self.environment["OLD_KEY"]!)?.1.id == "old")
        #expect(running.merchant(apiKey: Self.environment["NEXT_KEY"]!) == nil)
        // Rotation, step 1: both keys.
        var notes = running.adopt(try state([old, next]))
        #expect(notes == ["merchant m: keys old, next"])
        #expect(running.merchant(apiKey: Self.environment["OLD_KEY"]!) != nil)
        #expect(running.merchant(apiKey: Self.environment["NEXT_KEY"]!)?.1.id == "next")
        // Step 2: the old one revoked; a gateway added (not taken until a restart) and a merchant added (likewise).
        notes = running.adopt(try state([next], gateways: ["fake", "fake2"], merchants: ["m", "m2"]))
        #expect(running.merchant(apiKey: Self.environment["OLD_KEY"]!) == nil)
        #expect(running.merchant(apiKey: Self.environment["NEXT_KEY"]!) != nil)
        #expect(notes.contains("merchant m: changes other than apiKey, apiKeys and rateLimits take effect at the next start"))
        #expect(notes.contains("merchant m2 is new: it is served after a restart"))
        #expect(running.merchants.count == 1, "the running merchants are not rebuilt")
    }

    @Test("till server on SIGHUP: a revoked key is refused within one reload, the new one served; a bad file keeps the running keys and says why",
          .timeLimit(.minutes(3)))
    func hangup() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("till.json")
        func write(keys: [[String: Any]]) throws {
            let configuration: [String: Any] = [
                "server": ["listen": "127.0.0.1:0", "storage": "sqlite:\(folder.appendingPathComponent("till.sqlite").path)"],
                "merchants": [["id": "m", "apiKeys": keys, "gateways": [["id": "fake", "module": "fake", "credentials": ["notification_secret": ["env": "NEXT_KEY"]]]]]],
            ]
            try JSONSerialization.data(withJSONObject: configuration, options: [.sortedKeys]).write(to: config)
        }
        try write(keys: [["id": "old", "key": ["env": "OLD_KEY"]]])
        let server = try MultiInstanceTests.TillInstance(name: "reload", config: config, environment: Self.environment, folder: folder)
        defer { server.stop() }
        let base = try await server.waitUntilListening()
        func status(_ key: String) async throws -> Int {
            var request = URLRequest(url: base.appendingPathComponent("v1/payments"))
            request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as? HTTPURLResponse)?.statusCode ?? 0
        }
        let old = Self.environment["OLD_KEY"]!, next = Self.environment["NEXT_KEY"]!
        #expect(try await status(old) == 200)
        #expect(try await status(next) == 401)

        try write(keys: [["id": "next", "key": ["env": "NEXT_KEY"]]])
        server.process.send(SIGHUP)
        var waited = 0
        while try await status(next) != 200 && waited < 100 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        #expect(try await status(next) == 200)
        #expect(try await status(old) == 401, "revoked by the reload that took the new key")
        #expect(server.logTail(20_000).contains("reloaded: merchant m: keys next"))

        // A file that is not valid (a key whose secret is not set) changes nothing, and the log says why.
        try write(keys: [["id": "next", "key": ["env": "NEXT_KEY"]], ["id": "unset", "key": ["env": "UNSET_KEY_\(UUID().uuidString.prefix(4))"]]])
        server.process.send(SIGHUP)
        waited = 0
        while !server.logTail(20_000).contains("reload refused") && waited < 100 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        #expect(server.logTail(20_000).contains("reload refused, the running configuration stays"))
        #expect(try await status(next) == 200)
        #expect(server.process.isRunning)
        // Each request's log line names the key's id, never the key.
        let log = server.logTail(200_000)
        #expect(log.contains("key_id=next") || log.contains("key_id: next") || log.contains("\"key_id\":\"next\""))
        #expect(!log.contains(next))
        #expect(!log.contains(old))
    }
}
