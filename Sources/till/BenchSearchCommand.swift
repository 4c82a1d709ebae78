import ArgumentParser
import Foundation
import Logging
import Till
import TillService
import TillServer

/// `till bench search`: pages of 100 out of a million seeded payments, through the real server on SQLite and
/// PostgreSQL, against the trivial endpoint measured in the same run.
struct SearchBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "GET /v1/payments: p50 and p99 of a page of 100 over --payments seeded payments, per filter, on SQLite and PostgreSQL.",
        discussion: """
            Seeds --payments payments for one merchant in each store (SearchSeed: four currencies, amounts of 1.00 to \
            1,000.99, card or WeChat Pay, 60 % paid and the rest failed, pending, refunded or created, three gateways, \
            50,000 customers' e-mails, one second apart), then asks for pages of 100 over HTTP on loopback with \
            --connections connections for --seconds each: no filter, status, currency and an amount range, a customer's \
            e-mail, a gateway, an hour of creation times, and a page 900,000 payments deep by its cursor. One JSON object \
            per line: store, endpoint (seed, trivial or search), filter, payments (a page's count, checked once before \
            measuring), requestsPerSecond, ratioToTrivial, p50Millis, p99Millis, requests, failures. PostgreSQL rows need \
            TILL_BENCH_POSTGRES_URL (or TILL_TEST_POSTGRES_URL); use a database of its own: the seeded payments stay.
            """)

    @Option(help: "Payments to seed in each store.")
    var payments = 1_000_000

    @Option(help: "Seconds per measurement.")
    var seconds = 5

    @Option(help: "Concurrent keep-alive connections.")
    var connections = 4

    struct Line: Encodable {
        let store: String
        let endpoint = "search"
        let filter: String
        let payments: Int
        let requestsPerSecond: Int
        let ratioToTrivial: Double
        let p50Millis: Double
        let p99Millis: Double
        let requests: Int
        let failures: Int
        let connections: Int
    }

    struct Seed: Encodable {
        let store: String
        let endpoint = "seed"
        let payments: Int
        let seconds: Double
    }

    func validate() throws {
        guard (1_000...10_000_000).contains(payments) else { throw ValidationError("--payments must be 1000 to 10000000") }
        guard (1...120).contains(seconds) else { throw ValidationError("--seconds must be 1 to 120") }
        guard (1...256).contains(connections) else { throw ValidationError("--connections must be 1 to 256") }
    }

    func run() async throws {
        #if DEBUG
        printError("note: this is a debug build; run `swift run -c release till bench search` for real figures")
        #endif
        var logger = Logger(label: "till.bench")
        logger.logLevel = .critical
        let yardstick = try ServerBench.parse(["--seconds", "\(seconds)", "--connections", "\(connections)"])
        let trivial = try await yardstick.benchTrivial(logger: logger)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-search-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var stores = [("sqlite", "sqlite:\(folder.appendingPathComponent("search.sqlite").path)")]
        let environment = ProcessInfo.processInfo.environment
        if let postgres = environment["TILL_BENCH_POSTGRES_URL"] ?? environment["TILL_TEST_POSTGRES_URL"] {
            stores.append(("postgres", postgres))
        } else {
            printError("note: TILL_BENCH_POSTGRES_URL is not set; PostgreSQL rows skipped")
        }
        for (name, url) in stores {
            let server = try await yardstick.startServer(url: url, pool: nil, recordsEvents: false, logger: logger)
            guard let seeding = server.store as? any PaymentSeeding else { throw ValidationError("\(name): the store cannot be seeded") }
            let newest = Date(storedMillis: Date().storedMillis)
            let started = ContinuousClock.now
            try await seeding.seedSearchPayments(count: payments, merchant: server.merchant, newest: newest)
            let took = ContinuousClock.now - started
            try printJSONLine(Seed(store: name, payments: payments, seconds: (Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)))
            try await measure(name, server, newest: newest, trivial: trivial)
            try await server.stop()
        }
    }

    func measure(_ name: String, _ server: ServerBench.BenchServer, newest: Date, trivial: Double) async throws {
        let hour = { (hoursAgo: Double) in newest.addingTimeInterval(-hoursAgo * 3_600).formatted(Date.ISO8601FormatStyle()) }
        // The cursor of a page 900,000 payments deep: the payment 100,000 from the oldest.
        var probe = PaymentSearchQuery()
        probe.merchantReference = "s-\(payments / 10)"
        let deep = try await server.store.searchPayments(merchant: server.merchant, query: probe).first
        let cursor = deep.map { PaymentSearchQuery.Position(createdMillis: $0.createdAt.storedMillis, id: $0.id).cursor } ?? ""
        let filters: [(String, String)] = [
            ("none", ""), ("status", "status=failed"), ("currencyAmount", "currency=EUR&amountMin=20000&amountMax=40000"),
            ("customerEmail", "customerEmail=customer4242%40example.com"), ("gateway", "gateway=beta"),
            ("createdRange", "createdFrom=\(hour(49))&createdTo=\(hour(48))"), ("deepCursor", "cursor=\(cursor)"),
        ]
        for (filter, query) in filters {
            // Once, through the store, to say how many a page holds (a filter that matches fewer than 100 says so).
            var pairs: [(String, String)] = [("limit", "100")]
            for pair in query.split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                pairs.append((parts[0], parts.count > 1 ? parts[1] : ""))
            }
            let count = try await server.store.searchPayments(merchant: server.merchant, query: try PaymentSearchRequest(pairs).query()).count
            let request = LoadGenerator.request("GET", "/v1/payments?limit=100" + (query.isEmpty ? "" : "&" + query),
                                                headers: ["Authorization": "Bearer \(server.apiKey)"])
            let result = await LoadGenerator(port: server.port, connections: connections, duration: .seconds(seconds), maxRequests: .max)
                .run { _ in request }
            let sorted = result.latenciesNanos.sorted()
            let p50 = sorted.isEmpty ? 0 : Double(sorted[sorted.count / 2]) / 1e6
            try printJSONLine(Line(store: name, filter: filter, payments: count, requestsPerSecond: Int(result.requestsPerSecond.rounded()),
                                   ratioToTrivial: trivial > 0 ? (result.requestsPerSecond / trivial * 10_000).rounded() / 10_000 : 0,
                                   p50Millis: (p50 * 100).rounded() / 100, p99Millis: (result.p99Millis * 100).rounded() / 100,
                                   requests: result.requests, failures: result.failures, connections: connections))
        }
    }
}
