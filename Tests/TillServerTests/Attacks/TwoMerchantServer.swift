import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
@testable import TillServer
import TillTesting

/// One merchant server on 127.0.0.1 serving two merchants, A and B, each with its own API key and a
/// gateway of the `fake` module with the same id (`fake`) but its own notification secret: the
/// configuration where one merchant's credentials could be turned against the other's payments.
final class TwoMerchantServer: @unchecked Sendable {
    struct Merchant: Sendable {
        let id: String
        let key: String
        let secret: String
        /// The gateway as it signs this merchant's notifications.
        var gateway: FakeGateway { FakeGateway(id: "fake", secret: secret) }
    }

    let a: Merchant
    let b: Merchant
    let store: any PaymentStore
    let baseURL: URL
    private let task: Task<Void, any Error>

    /// - Parameter sharedAccount: both merchants on one gateway account (B uses A's notification secret).
    init(_ kind: StoreKind, sharedAccount: Bool = false) async throws {
        let (a, b, state) = try Self.merchants(maxAttempts: RetryPolicy().maxAttempts, sharedAccount: sharedAccount)
        (self.a, self.b) = (a, b)
        store = try await kind.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        baseURL = URL(string: "http://127.0.0.1:\(await iterator.next() ?? 0)")!
    }

    /// Two fresh merchants, A and B, each with its own API key and its own `fake` notification secret,
    /// and the server state that serves both (custom return scheme `shop`).
    static func merchants(maxAttempts: Int, maxBodyBytes: Int = 65_536, sharedAccount: Bool = false) throws -> (Merchant, Merchant, ServerState) {
        func merchant(_ name: String, secret: String? = nil) -> Merchant {
            Merchant(id: "m\(name)-\(UUID().uuidString.prefix(8).lowercased())", key: "key-\(name)-\(UUID().uuidString)",
                     secret: secret ?? "secret-\(name)-\(UUID().uuidString)")
        }
        let a = merchant("a")
        let b = merchant("b", secret: sharedAccount ? a.secret : nil)
        func configuration(_ merchant: Merchant, _ prefix: String) -> MerchantConfiguration {
            MerchantConfiguration(id: merchant.id, apiKey: CredentialReference(env: "\(prefix)_KEY"),
                                  gateways: [GatewayConfiguration(id: "fake", module: "fake",
                                                                  credentials: ["notification_secret": CredentialReference(env: "\(prefix)_SECRET")])],
                                  routing: RoutingConfiguration(fallback: ["fake"]), retry: RetryPolicy(maxAttempts: maxAttempts),
                                  returnURLSchemes: ["shop"])
        }
        let state = try ServerState(
            configuration: TillConfiguration(merchants: [configuration(a, "A"), configuration(b, "B")],
                                             server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused",
                                                                    publicURL: "https://merchant.example", maxBodyBytes: maxBodyBytes)),
            plugins: [FakeGateway.plugin],
            environment: ["A_KEY": a.key, "A_SECRET": a.secret, "B_KEY": b.key, "B_SECRET": b.secret])
        return (a, b, state)
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        try? await store.close()
    }

    /// A request with `merchant`'s API key (none for `nil`).
    @discardableResult
    func send(_ method: String, _ path: String, json: String? = nil, body: Data? = nil, as merchant: Merchant?,
              headers: [String: String] = [:]) async throws -> ServerHarness.Answer {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body ?? json.map { Data($0.utf8) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let merchant { request.setValue("Bearer \(merchant.key)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        return ServerHarness.Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// Creates a payment for `merchant` and prepares its first attempt.
    func createAndPrepare(as merchant: Merchant, minor: Int = 2500) async throws -> (payment: String, attempt: AttemptReference) {
        let created = try await send("POST", "v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))", minor: minor),
                                     as: merchant)
        let id = try #require(created.json["id"] as? String)
        let prepared = try await send("POST", "v1/payments/\(id)/attempts", json: "{}", as: merchant)
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        return (id, AttemptReference(rawValue: try #require(prepared.json["attempt"] as? String)))
    }
}
