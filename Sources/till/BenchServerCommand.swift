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
            (or TILL_TEST_POSTGRES_URL). \
            The outbox rows measure createPayment and notification on a store that records events and on one that \
            does not, alternately, --outbox-rounds times each ("events": true/false), then an outboxCost line (1 − on/off \
            over all rounds, per row, and each round's own in createPaymentRounds and notificationRounds). \
            The eventBacklog rows seed --backlog pending events, measure createPayment while the delivery service \
            drains them to a receiver on loopback and before it starts, and say how long the drain took.
            """)

    @Option(help: "Seconds per measurement.")
    var seconds = 5

    @Option(help: "Concurrent keep-alive connections.")
    var connections = 16

    @Option(help: "Only these rows, comma-separated (trivial, createPayment, getPayment, getPaymentClientSecret, prepare, notification, capture, refund, outbox, eventBacklog); all by default. The trivial row is always measured: it is the yardstick.")
    var only: String?

    @Option(help: "The outbox rows: rounds of createPayment and notification, each with events and without.")
    var outboxRounds = 2

    @Option(help: "Pending events the eventBacklog rows seed.")
    var backlog = 100_000

    @Option(help: "The eventBacklog rows: events a second the delivery service starts while the API is busy (server.events.busyEventsPerSecond); 0 never yields to the API.")
    var drainPace = EventDeliverySettings().busyEventsPerSecond

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
        /// The outbox and eventBacklog rows: whether the store records events.
        var events: Bool? = nil
        /// The eventBacklog rows: whether the delivery service was draining the backlog meanwhile.
        var draining: Bool? = nil
    }

    func validate() throws {
        guard (1...120).contains(seconds) else { throw ValidationError("--seconds must be 1 to 120") }
        guard (1...256).contains(connections) else { throw ValidationError("--connections must be 1 to 256") }
        guard (0...10_000_000).contains(backlog) else { throw ValidationError("--backlog must be 0 to 10000000") }
        guard (1...20).contains(outboxRounds) else { throw ValidationError("--outbox-rounds must be 1 to 20") }
        let known: Set = ["trivial", "createPayment", "getPayment", "getPaymentClientSecret", "prepare", "notification", "capture", "refund", "outbox", "eventBacklog"]
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
        for store in stores {
            try await benchStore(name: store.name, url: store.url, pool: store.pool, trivial: trivial, logger: logger)
            let url = store.name == "sqlite" ? "sqlite:\(folder.appendingPathComponent("outbox").path)" : store.url
            if wanted("outbox") { try await benchOutbox(name: store.name, url: url, pool: store.pool, trivial: trivial, logger: logger) }
            if wanted("eventBacklog") { try await benchBacklog(name: store.name, url: url, pool: store.pool, trivial: trivial, logger: logger) }
        }
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
                                                credentials: ["notification_secret": CredentialReference(env: "BENCH_SECRET")])],
                // The load generator is one client with one key and one client secret, far past any sensible limit.
                rateLimits: .none)],
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

    /// A server of its own on `url` (`-on`/`-off` and the like appended to a SQLite path), with one merchant on the fake
    /// gateway: what the outbox and backlog rows measure.
    struct BenchServer {
        let port: UInt16
        let store: any PaymentStore
        let merchant: String
        let apiKey: String
        let secret: String
        /// The API's requests in flight, which the delivery service yields to.
        let load: APILoad
        let task: Task<Void, any Error>

        func stop() async throws {
            task.cancel()
            _ = await task.result
            try await store.close()
        }

        /// createPayment for `seconds`, a new order per request.
        func create(_ bench: ServerBench, tag: String) async -> LoadGenerator.Result {
            let apiKey = apiKey
            return await LoadGenerator(port: port, connections: bench.connections, duration: .seconds(bench.seconds), maxRequests: .max).run { i in
                let body = Data(#"{"merchantReference":"b-\#(tag)-\#(i)","amount":{"value":\#(1000 + i % 5000),"currency":"USD"},"method":"card"}"#.utf8)
                return LoadGenerator.request("POST", "/v1/payments", headers: [
                    "Authorization": "Bearer \(apiKey)", "Content-Type": "application/json", "Idempotency-Key": "bk-\(tag)-\(i)",
                ], body: body)
            }
        }

        /// notification for `seconds`, each settling one of `budget` attempts seeded pending.
        func notify(_ bench: ServerBench, budget: Int) async throws -> LoadGenerator.Result {
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
            return await LoadGenerator(port: port, connections: bench.connections, duration: .seconds(bench.seconds), maxRequests: requests.count)
                .run { requests[$0] }
        }
    }

    func startServer(url: String, pool: Int?, recordsEvents: Bool, logger: Logger,
                     rateLimits: MerchantRateLimits = .none) async throws -> BenchServer {
        let apiKey = "bench-api-key-\(UUID().uuidString)"
        let secret = "bench-notification-secret"
        let merchant = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: merchant, apiKey: CredentialReference(env: "BENCH_API_KEY"),
                gateways: [GatewayConfiguration(id: "fake", module: "fake",
                                                credentials: ["notification_secret": CredentialReference(env: "BENCH_SECRET")])],
                // The load generator is one client with one key and one client secret, far past any sensible limit (the flood
                // bench passes the defaults).
                rateLimits: rateLimits)],
            server: ServerSettings(listen: "127.0.0.1:0", storage: url, postgresConnections: pool ?? ServerSettings.defaultPostgresConnections))
        let fake = FakeGateway(id: "fake", secret: secret)
        let plugin = GatewayPlugin(module: "fake", capabilities: fake.capabilities, makeServerHalf: { _ in fake }, makeAppHalf: { _ in fake })
        let state = try ServerState(configuration: configuration, plugins: Gateways.plugins.filter { $0.module != "fake" } + [plugin],
                                    environment: ["BENCH_API_KEY": apiKey, "BENCH_SECRET": secret])
        let store = try openStore(url, postgresConnections: pool ?? ServerSettings.defaultPostgresConnections, recordsEvents: recordsEvents)
        try await store.migrate()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let load = APILoad()
        let app = try buildApplication(state: state, store: store, logger: logger, load: load) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var ports = stream.makeAsyncIterator()
        let port = UInt16(await ports.next() ?? 0)
        return BenchServer(port: port, store: store, merchant: merchant, apiKey: apiKey, secret: secret, load: load, task: task)
    }

    /// What making a change's events costs on its own (the payment's JSON and each event's head), in microseconds: a paid
    /// notification's change (two events) on a payment with one attempt.
    func eventCost() throws -> Double {
        let now = Date(storedMillis: Date().storedMillis)
        let attempt = AttemptReference.generate()
        let intent = PaymentIntent(merchantReference: "bench-order-1", amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!), method: .card,
                                   customer: Customer(email: "buyer@example.com"), description: "Bench order")
        let before = StoredPayment(id: "pay_bench", merchantID: "bench", intent: intent, status: .pending,
                                   attempts: [StoredAttempt(reference: attempt, paymentID: "pay_bench", sequence: 1, gateway: "fake", status: .pending,
                                                            gatewayReference: "gw-1", createdAt: now, updatedAt: now)], createdAt: now, updatedAt: now)
        var after = before
        after.attempts[0].status = .paid
        after.status = .paid
        let rounds = 2_000
        let started = ContinuousClock.now
        for _ in 0..<rounds { _ = try EventRules.events(before: before, after: after, lastSequence: 3, now: now) }
        let elapsed = ContinuousClock.now - started
        return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(rounds)
    }

    /// createPayment and notification on a store with the outbox and on one without, alternately, `outboxRounds` times each.
    func benchOutbox(name: String, url: String, pool: Int?, trivial: Double, logger: Logger) async throws {
        struct Encoding: Encodable { let endpoint = "eventEncoding"; let microsecondsPerChange: Double }
        try printJSONLine(Encoding(microsecondsPerChange: (try eventCost() * 10).rounded() / 10))
        let on = try await startServer(url: url.hasPrefix("sqlite:") ? url + "-on.sqlite" : url, pool: pool, recordsEvents: true, logger: logger)
        let off = try await startServer(url: url.hasPrefix("sqlite:") ? url + "-off.sqlite" : url, pool: pool, recordsEvents: false, logger: logger)
        var rates: [String: [Bool: [Double]]] = [:]
        let run = UUID().uuidString.prefix(8)
        for round in 0..<outboxRounds {
            for (server, events) in [(on, true), (off, false)] {
                let create = await server.create(self, tag: "\(run)-\(events)-\(round)")
                var row = line(name, "createPayment", create, trivial: trivial, pool: pool)
                row.events = events
                try printJSONLine(row)
                rates["createPayment", default: [:]][events, default: []].append(create.requestsPerSecond)
            }
            for (server, events) in [(on, true), (off, false)] {
                let ingest = try await server.notify(self, budget: min(60_000, max(4_000, Int((rates["createPayment"]?[events]?.last ?? 2_000) * Double(seconds) * 2))))
                var row = line(name, "notification", ingest, trivial: trivial, pool: pool)
                row.events = events
                try printJSONLine(row)
                rates["notification", default: [:]][events, default: []].append(ingest.requestsPerSecond)
            }
        }
        struct Cost: Encodable {
            let store: String; let endpoint = "outboxCost"; let createPayment: Double; let notification: Double
            /// Each round's own cost: how far one pair of rows may stray from the pooled figure on this machine.
            let createPaymentRounds: [Double]; let notificationRounds: [Double]
        }
        func cost(with: [Double], without: [Double]) -> Double {
            let with = with.reduce(0, +), without = without.reduce(0, +)
            return without > 0 ? ((1 - with / without) * 1000).rounded() / 1000 : 0
        }
        func cost(_ row: String) -> Double { cost(with: rates[row]?[true] ?? [], without: rates[row]?[false] ?? []) }
        func rounds(_ row: String) -> [Double] {
            zip(rates[row]?[true] ?? [], rates[row]?[false] ?? []).map { cost(with: [$0], without: [$1]) }
        }
        try printJSONLine(Cost(store: name, createPayment: cost("createPayment"), notification: cost("notification"),
                               createPaymentRounds: rounds("createPayment"), notificationRounds: rounds("notification")))
        try await on.stop()
        try await off.stop()
    }

    /// createPayment before and while the delivery service drains a backlog of `backlog` events to a receiver on
    /// loopback that accepts everything, and how long the drain took.
    func benchBacklog(name: String, url: String, pool: Int?, trivial: Double, logger: Logger) async throws {
        let server = try await startServer(url: url.hasPrefix("sqlite:") ? url + "-backlog.sqlite" : url, pool: pool, recordsEvents: true,
                                           logger: logger)
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let router = Hummingbird.Router()
        router.post("hook") { _, _ in "ok" }
        let receiver = Application(router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                                   onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let receiverTask = Task { try await receiver.runService() }
        defer { receiverTask.cancel() }
        var ports = stream.makeAsyncIterator()
        let hook = URL(string: "http://127.0.0.1:\(await ports.next() ?? 0)/hook")!
        let run = UUID().uuidString.prefix(8)

        guard let seeding = server.store as? any PaymentSeeding else { throw ValidationError("the eventBacklog rows need a database store") }
        try await seeding.seedPendingEvents(count: backlog, merchant: server.merchant)
        // The yardstick: the same database with the backlog in it, nothing delivering. So the slowdown below is the
        // drain's, not that of a larger database (or of the seed's pages still being checkpointed).
        let before = await server.create(self, tag: "\(run)-before")
        var quiet = line(name, "createPayment", before, trivial: trivial, pool: pool)
        (quiet.events, quiet.draining) = (true, false)
        try printJSONLine(quiet)
        let merchant = server.merchant
        // This merchant's events only (a shared database may hold others' that no deliverer here takes): one
        // payment.created per create above, and the backlog.
        let pending = backlog + Int(before.requests)
        func left() async throws -> Int {
            var count = 0, after: Int64 = 0
            while true {
                let page = try await server.store.events(merchant: merchant, query: EventQuery(state: .pending, after: after, limit: 1_000))
                count += page.count
                guard page.count == 1_000, let last = page.last else { return count }
                after = last.position
            }
        }
        let deliverer = EventDeliverer(store: server.store, settings: EventDeliverySettings(pollIntervalSeconds: 0.05, busyRequestsInFlight: drainPace > 0 ? EventDeliverySettings().busyRequestsInFlight : 0,
                                                                             busyEventsPerSecond: max(drainPace, 1)),
                                       endpoints: { $0 == merchant ? [ResolvedWebhook(url: hook, secrets: ["bench-webhook-secret-0123456789"])] : [] },
                                       merchants: [merchant], logger: logger, load: server.load)
        let started = ContinuousClock.now
        let delivering = Task { try await deliverer.run() }
        let during = await server.create(self, tag: "\(run)-during")
        var busy = line(name, "createPayment", during, trivial: trivial, pool: pool)
        (busy.events, busy.draining) = (true, true)
        try printJSONLine(busy)
        while try await !server.store.events(merchant: merchant, query: EventQuery(state: .pending, limit: 1)).isEmpty,
              ContinuousClock.now - started < .seconds(900) {
            try await Task.sleep(for: .milliseconds(250))
        }
        let left = try await left()
        let elapsed = ContinuousClock.now - started
        delivering.cancel()
        _ = await delivering.result
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        struct Drain: Encodable {
            let store: String; let endpoint = "eventDrain"; let events: Int; let left: Int; let seconds: Double; let eventsPerSecond: Int
            let createPaymentSlowdown: Double; let busyEventsPerSecond: Double
        }
        try printJSONLine(Drain(store: name, events: pending + Int(during.requests), left: left, seconds: (seconds * 10).rounded() / 10,
                                eventsPerSecond: Int(Double(pending + during.requests - left) / max(seconds, 0.001)),
                                createPaymentSlowdown: before.requestsPerSecond > 0
                                    ? ((1 - during.requestsPerSecond / before.requestsPerSecond) * 1000).rounded() / 1000 : 0,
                                busyEventsPerSecond: drainPace))
        try await server.stop()
    }
}
