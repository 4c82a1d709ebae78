import Foundation
import Logging
import Metrics
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

/// Which store a test runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    /// TillService's ``InMemoryPaymentStore`` (the app's in-process mode and the tests' backend): held to the same
    /// behaviour as the database stores wherever a test needs no SQL.
    case memory
    var testDescription: String { rawValue }

    /// PostgreSQL tests need `TILL_TEST_POSTGRES_URL` (`.ci/run` starts a server and sets it).
    static var postgresURL: String? { ProcessInfo.processInfo.environment["TILL_TEST_POSTGRES_URL"] }

    /// The kinds available here. Without PostgreSQL the suite says so once, and runs on SQLite.
    static var available: [StoreKind] {
        if postgresURL == nil {
            TestRun.skipped("PostgreSQL test cases", because: "TILL_TEST_POSTGRES_URL is not set; bash .ci/run starts PostgreSQL and sets it")
            return [.sqlite]
        }
        return [.sqlite, .postgres]
    }

    /// The database stores available here and the in-memory store: for tests of behaviour that read no SQL.
    static var everyStore: [StoreKind] { available + [.memory] }

    func open() async throws -> any PaymentStore {
        let store: any PaymentStore
        switch self {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-test-\(UUID().uuidString).sqlite").path
            store = try SQLitePaymentStore(path: path)
        case .postgres:
            store = try PostgresPaymentStore(url: StoreKind.postgresURL!)
        case .memory:
            store = InMemoryPaymentStore()
        }
        try await store.migrate()
        return store
    }
}

/// Where the environment says PostgreSQL must be there (`.ci/run` sets `TILL_TEST_REQUIRE_POSTGRES=1` after
/// starting it), its store tests must not be skipped: a CI run that silently tested SQLite alone would pass.
@Suite("The store tests run where they must")
struct StoreKindRequirementTests {
    @Test("with TILL_TEST_REQUIRE_POSTGRES=1, TILL_TEST_POSTGRES_URL is set and PostgreSQL answers, so no PostgreSQL case is skipped")
    func postgresWhenRequired() async throws {
        guard ProcessInfo.processInfo.environment["TILL_TEST_REQUIRE_POSTGRES"] == "1" else { return }
        #expect(StoreKind.available.contains(.postgres), "TILL_TEST_POSTGRES_URL is not set: every PostgreSQL case would be skipped")
        if StoreKind.postgresURL != nil {
            let store = try await StoreKind.postgres.open()
            try await store.close()
        }
    }
}

func count(_ store: any PaymentStore, _ table: String, where condition: String = "1 = 1") async throws -> Int {
    if let sqlite = store as? SQLitePaymentStore { return try await sqlite.count(table, where: condition) }
    if let postgres = store as? PostgresPaymentStore { return try await postgres.count(table, where: condition) }
    return -1
}

/// A merchant server on 127.0.0.1 with an OS-assigned port, over fake gateways whose ledgers the
/// test can see.
final class ServerHarness: @unchecked Sendable {
    let store: any PaymentStore
    let gateways: [FakeGateway]
    let baseURL: URL
    let apiKey: String
    let merchant: String
    /// The secrets the test gave beside the merchant's key (more keys, by variable name).
    let environment: [String: String]
    private let task: Task<Void, any Error>

    static let secret = "harness-notification-secret"
    /// The amount of ``intentJSON(_:minor:method:)``'s default payment, 25.00 USD.
    static let amount = Money(minorUnits: 2500, currency: Currency.lookup("USD")!)

    /// The server's merchants, their health monitors and attempt policy.
    let state: ServerState

    init(_ kind: StoreKind, gateways ids: [GatewayID] = ["fake"], maxAttempts: Int = 3, maxBodyBytes: Int = 16_384,
         metrics: (any MetricsFactory)? = nil, logger: Logger = Logger(label: "till.server"), flow: FakeFlow = .card,
         health: HealthSettings = HealthSettings(),
         clock: any TillClock = SystemClock(), operations: OperationCapabilities = FakeGateway.allOperations,
         notificationTiming: FakeNotificationTiming = .immediate,
         settings: (inout ServerSettings) -> Void = { _ in },
         merchantSettings: (inout MerchantConfiguration) -> Void = { _ in }, environment: [String: String] = [:]) async throws {
        merchant = "m-\(UUID().uuidString.prefix(8).lowercased())"
        apiKey = "key-\(UUID().uuidString)"
        self.environment = environment
        // Gateways post their notifications to this server, as a real gateway would.
        let address = Mailbox()
        let gateways = ids.map { id in
            FakeGateway(id: id, operationCapabilities: operations, decisionTable: DecisionTable(["soft": .retryNext, "3ds_required": .stepUp]),
                        secret: Self.secret, notificationTiming: notificationTiming, flow: flow) { notification in
                guard let base = await address.url else { return }
                var request = URLRequest(url: base.appendingPathComponent("v1/notifications/\(id.rawValue)"))
                request.httpMethod = "POST"
                request.httpBody = notification.body
                for (name, value) in notification.headers { request.setValue(value, forHTTPHeaderField: name) }
                _ = try? await URLSession.shared.data(for: request)
            }
        }
        self.gateways = gateways
        // The fake module, handing out this harness's gateways (whose ledgers the test reads).
        let plugin = GatewayPlugin(module: "fake", capabilities: FakeGateway().capabilities,
                                   makeServerHalf: { context in gateways.first { $0.gateway == context.id }! },
                                   makeAppHalf: { context in gateways.first { $0.gateway == context.id }! })
        var merchantConfiguration = MerchantConfiguration(
            id: merchant, apiKey: CredentialReference(env: "API_KEY"),
            gateways: ids.map { GatewayConfiguration(id: $0, module: "fake") },
            routing: RoutingConfiguration(fallback: ids), retry: RetryPolicy(maxAttempts: maxAttempts), health: health,
            returnURLSchemes: ["shop"])   // the apps of these tests return on shop://
        merchantSettings(&merchantConfiguration)
        let configuration = TillConfiguration(
            merchants: [merchantConfiguration],
            server: {
                var server = ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:injected-by-the-test", publicURL: "https://merchant.example",
                                            maxBodyBytes: maxBodyBytes)
                settings(&server)
                return server
            }())
        let state = try ServerState(configuration: configuration, plugins: [plugin], environment: environment.merging(["API_KEY": apiKey]) { a, _ in a }, clock: clock)
        self.state = state
        store = try await kind.open()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store, logger: logger, metrics: metrics ?? MetricsSystem.factory) { port in
            continuation.yield(port)
        }
        task = Task { try await app.runService() }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CheckoutError(.misconfigured, message: "server did not start") }
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        await address.set(baseURL)
    }

    /// Where the gateways deliver, once the server has a port.
    actor Mailbox {
        var url: URL?
        func set(_ url: URL) { self.url = url }
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        try? await store.close()
    }

    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorField: String? { (json["error"] as? [String: Any])?["field"] as? String }
    }

    @discardableResult
    func send(_ method: String, _ path: String, json: String? = nil, body: Data? = nil, key: String?? = .none,
              headers: [String: String] = [:]) async throws -> Answer {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body ?? json.map { Data($0.utf8) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let bearer: String? = switch key { case .none: apiKey; case .some(let given): given }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        // Every exchange of every server test is held to docs/openapi.yaml.
        let contract = try OpenAPIContract.repository.get()
        let path = "/" + (path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path)
        let violations = contract.violations(method: method, path: path, status: http.statusCode, contentType: fields["content-type"],
                                             body: data, requestBody: request.httpBody)
        #expect(violations.isEmpty, "docs/openapi.yaml disagrees with the server:\n\(violations.joined(separator: "\n"))")
        return Answer(status: http.statusCode, headers: fields, body: data)
    }

    static func intentJSON(_ reference: String, minor: Int = 2500, method: String = "card", action: String? = nil) -> String {
        let action = action.map { #","action":"\#($0)""# } ?? ""
        return #"{"merchantReference":"\#(reference)","amount":{"value":\#(minor),"currency":"USD"},"method":"\#(method)"\#(action)}"#
    }

    /// Creates a payment and prepares its first attempt; returns (payment id, attempt reference, gateway).
    func createAndPrepare(_ reference: String = "order-\(UUID().uuidString.prefix(8))", action: String? = nil) async throws
        -> (String, AttemptReference, GatewayID) {
        let created = try await send("POST", "v1/payments", json: Self.intentJSON(reference, action: action))
        let id = try #require(created.json["id"] as? String)
        let prepared = try await send("POST", "v1/payments/\(id)/attempts", json: "{}")
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        let attempt = try #require(prepared.json["attempt"] as? String)
        let gateway = try #require(prepared.json["gateway"] as? String)
        return (id, AttemptReference(rawValue: attempt), GatewayID(rawValue: gateway))
    }

    func gateway(_ id: GatewayID) -> FakeGateway { gateways.first { $0.gateway == id }! }

    /// Posts a notification as the gateway would.
    func notify(_ notification: IncomingNotification, gateway: GatewayID) async throws -> Answer {
        try await send("POST", "v1/notifications/\(gateway.rawValue)", body: notification.body, key: .some(nil),
                       headers: notification.headers.filter { $0.key != "content-type" })
    }

    /// Posts the gateway's signed notification that `attempt` is paid (the harness's amount), as the gateway would.
    func notifyPaid(_ attempt: AttemptReference, gateway: GatewayID, eventID: String) async throws -> Answer {
        let report = StatusReport(gateway: gateway, attempt: attempt, status: .paid, amount: Self.amount, eventID: eventID)
        return try await notify(self.gateway(gateway).signedNotification(for: report), gateway: gateway)
    }

    func status(of payment: String) async throws -> String? {
        try await send("GET", "v1/payments/\(payment)").json["status"] as? String
    }
}

/// Opens a server's SQLite file after the server stopped, to count what it stored.
struct SQLiteInspection {
    let store: SQLitePaymentStore
    init(path: String) throws { store = try SQLitePaymentStore(path: path) }
    func count(_ table: String, where condition: String = "1 = 1") async throws -> Int { try await store.count(table, where: condition) }
}
