import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Till
import TillOrchestration
import TillService
import TillServer
import TillTesting

/// `till bench server`: create-payment and notification ingestion through the real server on
/// SQLite and PostgreSQL, and a trivial Hummingbird endpoint in the same run, all on loopback.
struct ServerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Server throughput and p99 latency: createPayment, getPayment, prepare, notification, capture and refund on SQLite and PostgreSQL, and a trivial endpoint.",
        discussion: """
            One JSON object per line: store (sqlite, postgres or none), endpoint (createPayment, getPayment with \
            the merchant key, getPaymentClientSecret with the payment's client secret, prepare against the \
            fake gateway, notification, capture or refund of a seeded payment, or trivial), requestsPerSecond, ratioToTrivial (to the trivial \
            endpoint measured first in the same run), p99Millis, plus requests, failures, connections and, on \
            PostgreSQL rows, poolConnections (--postgres-connections). \
            Every write is committed before its response (SQLite WAL with synchronous=FULL, group commit; \
            PostgreSQL with its default synchronous_commit). PostgreSQL rows need TILL_BENCH_POSTGRES_URL \
            (or TILL_TEST_POSTGRES_URL).
            """)

    @Option(help: "Seconds per measurement.")
    var seconds = 5

    @Option(help: "Concurrent keep-alive connections.")
    var connections = 16

    @Option(help: "Only these rows, comma-separated (trivial, createPayment, getPayment, getPaymentClientSecret, prepare, notification, capture, refund); all by default. The trivial row is always measured: it is the yardstick.")
    var only: String?

    @Option(help: "PostgreSQL pool sizes to measure, comma-separated (each runs the PostgreSQL rows once); the server's default pool size by default.")
    var postgresConnections: String?

    /// The pool sizes of --postgres-connections.
    var poolSizes: [Int] {
        guard let postgresConnections else { return [ServerSettings.defaultPostgresConnections] }
        return postgresConnections.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// Whether the row `endpoint` is to be measured.
    func wanted(_ endpoint: String) -> Bool {
        guard let only else { return true }
        return only.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == endpoint }
    }

    struct Line: Encodable {
        let store: String
        let endpoint: String
        let requestsPerSecond: Int
        /// requestsPerSecond over the trivial endpoint's, measured in the same run.
        let ratioToTrivial: Double
        let p99Millis: Double
        let requests: Int
        let failures: Int
        let connections: Int
        /// PostgreSQL rows: the pool's configured size (the most connections the server may open to the database).
        let poolConnections: Int?
    }

    func validate() throws {
        guard (1...120).contains(seconds) else { throw ValidationError("--seconds must be 1 to 120") }
        guard (1...256).contains(connections) else { throw ValidationError("--connections must be 1 to 256") }
        let known: Set = ["trivial", "createPayment", "getPayment", "getPaymentClientSecret", "prepare", "notification", "capture", "refund"]
        if let only, let unknown = only.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).first(where: { !known.contains($0) }) {
            throw ValidationError("--only: unknown row \(unknown)")
        }
        if let postgresConnections {
            let sizes = postgresConnections.split(separator: ",", omittingEmptySubsequences: false)
            guard !sizes.isEmpty, sizes.allSatisfy({ Int($0.trimmingCharacters(in: .whitespaces)).map { (1...1_000).contains($0) } == true }) else {
                throw ValidationError("--postgres-connections: expected pool sizes of 1 to 1000, comma-separated")
            }
        }
    }

    func run() async throws {
        #if DEBUG
        printError("note: this is a debug build; run `swift run -c release till bench server` for real figures")
        #endif
        var logger = Logger(label: "till.bench")
        logger.logLevel = .critical   // shutdown chatter when the run ends is not a finding

        // The trivial endpoint first: what Hummingbird alone costs on this machine.
        let trivial = try await benchTrivial(logger: logger)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var stores: [(name: String, url: String, pool: Int?)] = [("sqlite", "sqlite:\(folder.appendingPathComponent("bench.sqlite").path)", nil)]
        let environment = ProcessInfo.processInfo.environment
        if let postgres = environment["TILL_BENCH_POSTGRES_URL"] ?? environment["TILL_TEST_POSTGRES_URL"] {
            stores += poolSizes.map { ("postgres", postgres, $0) }
        } else {
            printError("note: TILL_BENCH_POSTGRES_URL is not set; PostgreSQL rows skipped (eval \"$(bash .ci/postgres.sh start)\" sets one up)")
        }
        for store in stores { try await benchStore(name: store.name, url: store.url, pool: store.pool, trivial: trivial, logger: logger) }
    }

    func line(_ store: String, _ endpoint: String, _ result: LoadGenerator.Result, trivial: Double, pool: Int? = nil) -> Line {
        Line(store: store, endpoint: endpoint, requestsPerSecond: Int(result.requestsPerSecond.rounded()),
             ratioToTrivial: trivial > 0 ? (result.requestsPerSecond / trivial * 1000).rounded() / 1000 : 0,
             p99Millis: (result.p99Millis * 100).rounded() / 100, requests: result.requests, failures: result.failures,
             connections: connections, poolConnections: pool)
    }

    /// Measures the trivial endpoint and returns its requests per second.
    func benchTrivial(logger: Logger) async throws -> Double {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let router = Hummingbird.Router()
        router.get("trivial") { _, _ in "ok" }
        let app = Application(router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.runService() }
        defer { task.cancel() }
        var ports = stream.makeAsyncIterator()
        let port = await ports.next() ?? 0
        let request = LoadGenerator.request("GET", "/trivial")
        let result = await LoadGenerator(port: UInt16(port), connections: connections, duration: .seconds(seconds), maxRequests: .max)
            .run { _ in request }
        try printJSONLine(line("none", "trivial", result, trivial: result.requestsPerSecond))
        return result.requestsPerSecond
    }

    func benchStore(name: String, url: String, pool: Int?, trivial: Double, logger: Logger) async throws {
        let apiKey = "bench-api-key-\(UUID().uuidString)"
        let secret = "bench-notification-secret"
        let merchant = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: merchant, apiKey: CredentialReference(env: "BENCH_API_KEY"),
                gateways: [GatewayConfiguration(id: "fake", module: "fake",
                                                credentials: ["notification_secret": CredentialReference(env: "BENCH_SECRET")])])],
            server: ServerSettings(listen: "127.0.0.1:0", storage: url, postgresConnections: pool ?? ServerSettings.defaultPostgresConnections))
        // The fake module hands out one gateway, whose ledger the capture and refund rows seed.
        let fake = FakeGateway(id: "fake", secret: secret)
        let plugin = GatewayPlugin(module: "fake", capabilities: fake.capabilities, makeServerHalf: { _ in fake }, makeAppHalf: { _ in fake })
        let state = try ServerState(configuration: configuration, plugins: Gateways.plugins.filter { $0.module != "fake" } + [plugin],
                                    environment: ["BENCH_API_KEY": apiKey, "BENCH_SECRET": secret])
        let store = try openStore(url, postgresConnections: pool ?? ServerSettings.defaultPostgresConnections)
        try await store.migrate()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store, logger: logger) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var ports = stream.makeAsyncIterator()
        let port = UInt16(await ports.next() ?? 0)

        // createPayment: a new order per request, each with its own idempotency key.
        let run = UUID().uuidString.prefix(8)
        // Rows left out by --only still size the later rows' budgets, at a modest assumed pace.
        var createRate = 2_000.0
        if wanted("createPayment") {
            let create = await LoadGenerator(port: port, connections: connections, duration: .seconds(seconds), maxRequests: .max).run { i in
                let body = Data(#"{"merchantReference":"b-\#(run)-\#(i)","amount":{"value":\#(1000 + i % 5000),"currency":"USD"},"method":"card"}"#.utf8)
                return LoadGenerator.request("POST", "/v1/payments", headers: [
                    "Authorization": "Bearer \(apiKey)", "Content-Type": "application/json", "Idempotency-Key": "bk-\(run)-\(i)",
                ], body: body)
            }
            try printJSONLine(line(name, "createPayment", create, trivial: trivial, pool: pool))
            createRate = create.requestsPerSecond
        }

        // getPayment: one payment read again and again, with the merchant key and with the payment's client
        // secret (which the server authenticates by a digest looked up in the store before the read).
        let created = try await MerchantAPIClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, apiKey: apiKey,
                                                  transport: URLSessionTransport())
            .createPayment(PaymentIntent(merchantReference: "b-\(run)-read", amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!),
                                         method: .card))
        for (endpoint, bearer) in [("getPayment", apiKey), ("getPaymentClientSecret", created.clientSecret?.rawValue ?? "")] where wanted(endpoint) {
            let read = await LoadGenerator(port: port, connections: connections, duration: .seconds(seconds), maxRequests: .max).run { _ in
                LoadGenerator.request("GET", "/v1/payments/\(created.id)", headers: ["Authorization": "Bearer \(bearer)"])
            }
            try printJSONLine(line(name, endpoint, read, trivial: trivial, pool: pool))
        }

        if wanted("prepare") {
            // prepare: the first attempt of a payment created beforehand, against the fake gateway (routing, the
            // gateway's prepare, the attempt stored and marked prepared: two durable writes).
            let preparable = min(40_000, max(2_000, Int(createRate * Double(seconds) * 1.5)))
            let payments = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        var ids: [String] = []
                        for i in stride(from: worker, to: preparable, by: 16) {
                            let id = "pay_bp\(run)\(i)"
                            _ = try await store.create(PaymentIntent(merchantReference: "bp-\(run)-\(i)", amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!),
                                                                     method: .card), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "bench")
                            ids.append(id)
                        }
                        return ids
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            let prepareRequests = payments.map { id in
                LoadGenerator.request("POST", "/v1/payments/\(id)/attempts", headers: ["Authorization": "Bearer \(apiKey)", "Content-Type": "application/json"],
                                      body: Data("{}".utf8))
            }
            let prepare = await LoadGenerator(port: port, connections: connections, duration: .seconds(seconds), maxRequests: prepareRequests.count)
                .run { prepareRequests[$0] }
            try printJSONLine(line(name, "prepare", prepare, trivial: trivial, pool: pool))
            if prepare.requests >= prepareRequests.count {
                printError("note: \(name) prepare run used every payment created for it (\(prepareRequests.count)); the figure is a lower bound")
            }
        }

        if wanted("notification") {
            // notification: each settles one pending attempt, signed as the gateway signs.
            let budget = min(60_000, max(2_000, Int(createRate * Double(seconds) * 1.5)))
            let amount = Money(minorUnits: 1000, currency: Currency.lookup("USD")!)
            guard let seeding = store as? any PaymentSeeding else { throw ValidationError("the notification row needs a database store") }
            let attempts = try await seeding.seedPendingAttempts(count: budget, merchant: merchant, gateway: "fake", amount: amount)
            let gateway = FakeGateway(id: "fake", secret: secret)
            let requests = attempts.map { attempt in
                let notification = gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: attempt, status: .paid,
                                                                                amount: amount, eventID: "evt-\(attempt)"))
                return LoadGenerator.request("POST", "/v1/notifications/fake", headers: [
                    "Content-Type": "application/json", "X-Fake-Signature": notification.headers["x-fake-signature"] ?? "",
                ], body: notification.body)
            }
            let ingest = await LoadGenerator(port: port, connections: connections, duration: .seconds(seconds), maxRequests: requests.count)
                .run { requests[$0] }
            try printJSONLine(line(name, "notification", ingest, trivial: trivial, pool: pool))
            if ingest.requests >= requests.count {
                printError("note: \(name) notification run used every seeded attempt (\(requests.count)); the figure is a lower bound")
            }
        }
        for (endpoint, status, route) in [("capture", PaymentStatus.authorized, "captures"), ("refund", .paid, "refunds")] where wanted(endpoint) {
            // capture / refund: each takes the whole amount of one payment seeded authorized (or paid) in the store
            // and at the fake gateway: the money rules under the payment's lock, the operation stored before it is
            // sent, the gateway's answer, the operation settled with its money (three durable writes).
            let budget = min(30_000, max(2_000, Int(createRate * Double(seconds))))
            let amount = Money(minorUnits: 1000, currency: Currency.lookup("USD")!)
            guard let seeding = store as? any PaymentSeeding else { throw ValidationError("the \(endpoint) row needs a database store") }
            let attempts = try await seeding.seedPendingAttempts(count: budget, merchant: merchant, gateway: "fake", amount: amount)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        for attempt in stride(from: worker, to: attempts.count, by: 16).map({ attempts[$0] }) {
                            _ = try await store.apply(StatusReport(gateway: "fake", attempt: attempt, status: status, amount: amount,
                                                                   eventID: "seed-\(attempt)"))
                            await fake.ledger.seed(attempt, amount: amount, status: status)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let requests = attempts.map { attempt in
                LoadGenerator.request("POST", "/v1/payments/seed_\(attempt.rawValue)/\(route)", headers: [
                    "Authorization": "Bearer \(apiKey)", "Content-Type": "application/json", "Idempotency-Key": "bo-\(attempt.rawValue)",
                ], body: Data("{}".utf8))
            }
            let operated = await LoadGenerator(port: port, connections: connections, duration: .seconds(seconds), maxRequests: requests.count)
                .run { requests[$0] }
            try printJSONLine(line(name, endpoint, operated, trivial: trivial, pool: pool))
            if operated.requests >= requests.count {
                printError("note: \(name) \(endpoint) run used every seeded payment (\(requests.count)); the figure is a lower bound")
            }
        }
        task.cancel()
        _ = await task.result
        try await store.close()
    }
}
