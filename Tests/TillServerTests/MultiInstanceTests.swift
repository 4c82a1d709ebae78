import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
@testable import TillServer
import TillChildProcess
import TillTesting

/// Till scales past one machine as stateless `till server` instances over one PostgreSQL: this suite
/// starts two real `till server` processes with one configuration file on one database and drives
/// both at once — concurrent prepares of the same payments, the same notifications delivered to both,
/// inquiries on both — then reads the database directly: no attempt was created twice, nothing was
/// applied twice, no status moved backwards.
///
/// What each instance keeps for itself (and may therefore differ between instances):
/// - each merchant's gateway health monitor and circuit breaker (a gateway one instance saw failing
///   is not known to be failing on the other);
/// - the coalescing of the inquiries the server starts by itself (at most one in flight per attempt
///   *per instance*; two instances may ask the gateway about the same attempt at the same time, and
///   the store applies the answers forward-only, so that costs a request, never a double apply);
/// - in this test, the gateways themselves: the `fake` module keeps its ledger in memory, so each
///   process has its own fake gateway, which only knows the attempts that process prepared (an
///   inquiry on the other instance is answered 502 `attempt_not_found`). Real gateways are shared.
///
/// What is shared, because it lives in the store: payments, attempts and their statuses,
/// notifications and their deduplication, idempotency keys, the quarantine, and the reconciler's
/// inquiry schedule (claimed with a compare-and-set, so one due attempt is inquired by one instance).
///
/// Needs `TILL_TEST_POSTGRES_URL` (SQLite is one instance only); without it the suite is skipped
/// with a note.
@Suite("More than one till server on one PostgreSQL", .serialized)
struct MultiInstanceTests {
    /// Payments prepared concurrently on both instances.
    static let preparedPayments = 20
    /// Concurrent prepares per payment, alternating between the two instances.
    static let preparesPerPayment = 4
    /// Deliveries of one notification per instance.
    static let deliveriesPerInstance = 3
    /// Payments left pending for the inquiry rounds.
    static let pendingPayments = 10
    /// Inquiries of one attempt per instance and round.
    static let inquiriesPerInstance = 3

    static let amount = Money(minorUnits: 2500, currency: Currency.lookup("USD")!)

    /// True with PostgreSQL; otherwise says why the suite is skipped.
    static var postgresAvailable: Bool {
        if StoreKind.postgresURL != nil { return true }
        FileHandle.standardError.write(Data(
            "note: TILL_TEST_POSTGRES_URL is not set; the multi-instance test is skipped (bash .ci/run starts PostgreSQL and sets it)\n".utf8))
        return false
    }

    @Test("two till server processes on one PostgreSQL: one attempt per payment, each notification applied once",
          .enabled(if: MultiInstanceTests.postgresAvailable, "needs TILL_TEST_POSTGRES_URL (SQLite is one instance only)"),
          .timeLimit(.minutes(5)))
    func twoInstances() async throws {
        let url = try #require(StoreKind.postgresURL)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-multi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // 1. One configuration, two processes. A merchant id of its own keeps this run's rows apart from
        //    other tests sharing the database.
        let merchant = "multi-\(UUID().uuidString.prefix(8).lowercased())"
        let apiKey = "multi-key-\(UUID().uuidString)"
        let secret = "multi-secret-\(UUID().uuidString)"
        let config = folder.appendingPathComponent("till.json")
        let fake: (String) -> [String: Any] = { id in
            ["id": id, "module": "fake", "credentials": ["notification_secret": ["env": "MULTI_NOTIFICATION_SECRET"]]]
        }
        let configuration: [String: Any] = [
            "server": ["listen": "127.0.0.1:0", "storage": url, "publicURL": "https://merchant.example"],
            "merchants": [["id": merchant, "apiKey": ["env": "MULTI_API_KEY"], "gateways": [fake("alpha"), fake("beta")],
                           // A 50/50 split seeded by the payment id: both gateways take attempts.
                           "routing": ["rules": [["gateways": [["id": "alpha", "weight": 1], ["id": "beta", "weight": 1]]]],
                                       "fallback": ["alpha", "beta"]]]],
        ]
        try JSONSerialization.data(withJSONObject: configuration, options: [.sortedKeys]).write(to: config)
        let environment = ["MULTI_API_KEY": apiKey, "MULTI_NOTIFICATION_SECRET": secret]

        let a = try TillInstance(name: "a", config: config, environment: environment, folder: folder)
        defer { a.stop() }
        let b = try TillInstance(name: "b", config: config, environment: environment, folder: folder)
        defer { b.stop() }
        // Both start (and migrate the same database) at once.
        let bases: [Side: URL] = [.a: try await a.waitUntilListening(), .b: try await b.waitUntilListening()]
        #expect(bases[.a] != bases[.b])

        let store = try PostgresPaymentStore(url: url)
        do {
            try await run(bases: bases, client: Client(apiKey: apiKey), store: store, merchant: merchant, secret: secret,
                          instances: [.a: a, .b: b])
        } catch {
            try? await store.close()
            throw error
        }
        try? await store.close()
        #expect(a.process.isRunning && b.process.isRunning, "an instance died during the test")
    }

    func run(bases: [Side: URL], client: Client, store: PostgresPaymentStore, merchant: String, secret: String,
             instances: [Side: TillInstance]) async throws {
        let gateways: [GatewayID: FakeGateway] = ["alpha": FakeGateway(id: "alpha", secret: secret),
                                                  "beta": FakeGateway(id: "beta", secret: secret)]
        let logs = { instances.values.map { $0.logTail() }.joined(separator: "\n") }

        // 2. Concurrent prepares: every payment prepared on both instances at the same time.
        let ids = try await createPayments(Self.preparedPayments, prefix: "prep", on: bases[.a]!, client: client)
        let prepares = try await concurrently(ids.flatMap { id in
            (0..<Self.preparesPerPayment).map { index in (id, index.isMultiple(of: 2) ? Side.a : Side.b) }
        }.shuffled()) { id, side in
            try await client.send(bases[side]!, "POST", "v1/payments/\(id)/attempts", body: Data("{}".utf8))
        }
        #expect(prepares.filter { $0.reply.status >= 500 }.isEmpty, "a prepare failed with 5xx\n\(logs())")
        var prepared: [String: Prepared] = [:]
        for id in ids {
            let answers = prepares.filter { $0.input.0 == id }
            let winners = answers.filter { $0.reply.status == 201 }
            #expect(winners.count == 1, "payment \(id): \(answers.map(\.reply.summary))")
            for loser in answers where loser.reply.status != 201 {
                #expect(loser.reply.status == 409 && loser.reply.errorCode == "attempt_in_progress",
                        "payment \(id): a losing prepare answered \(loser.reply.summary)")
            }
            guard let winner = winners.first else { continue }
            let json = winner.reply.json
            let attempt = AttemptReference(rawValue: try #require(json["attempt"] as? String))
            let gateway = GatewayID(rawValue: try #require(json["gateway"] as? String))
            prepared[id] = Prepared(payment: id, attempt: attempt, gateway: gateway, side: winner.input.1)
        }
        for (id, attempt) in prepared {
            // Read through the other instance than the one that prepared it.
            let view = try await client.payment(id, on: bases[attempt.side.other]!)
            #expect(view.attempts.map(\.reference) == [attempt.attempt], "payment \(id)")
            #expect(view.status == .pending, "payment \(id)")
            #expect(try await count(store, "till_attempts", where: "payment_id = '\(id)'") == 1, "payment \(id)")
        }
        #expect(try await count(store, "till_payments", where: "merchant_id = '\(merchant)'") == Self.preparedPayments)
        #expect(try await count(store, "till_attempts", where: "payment_id IN (\(sqlList(ids)))") == Self.preparedPayments)

        // 3. Duplicated notifications across both: one genuine "paid" event per attempt, delivered
        //    several times to each instance at once.
        let deliveries = prepared.values.flatMap { attempt in
            let notification = gateways[attempt.gateway]!.signedNotification(for: StatusReport(
                gateway: attempt.gateway, attempt: attempt.attempt, status: .paid, amount: Self.amount,
                eventID: "evt-paid-\(attempt.attempt.rawValue)"))
            return Self.spread(Self.deliveriesPerInstance).map { (attempt, $0, notification) }
        }.shuffled()
        let acknowledged = try await concurrently(deliveries) { attempt, side, notification in
            try await client.notify(notification, gateway: attempt.gateway, on: bases[side]!)
        }
        for delivery in acknowledged {
            #expect(delivery.reply.status == 200, "attempt \(delivery.input.0.attempt): \(delivery.reply.summary)\n\(logs())")
        }
        for (id, attempt) in prepared {
            let reference = attempt.attempt.rawValue
            #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(reference)'") == 1, "attempt \(reference)")
            #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(reference)' AND outcome = 'applied'") == 1,
                    "attempt \(reference)")
            let view = try await client.payment(id, on: bases[.b]!)
            #expect(view.status == .paid, "payment \(id)")
            #expect(view.attempts.map(\.status) == [.paid], "payment \(id)")
        }

        // A different, later event ("failed" after "paid") on both instances: stored once as stale,
        // never applied.
        let late = prepared.values.flatMap { attempt in
            let notification = gateways[attempt.gateway]!.signedNotification(for: StatusReport(
                gateway: attempt.gateway, attempt: attempt.attempt, status: .failed, gatewayCode: "hard",
                eventID: "evt-failed-\(attempt.attempt.rawValue)"))
            return Self.spread(2).map { (attempt, $0, notification) }
        }.shuffled()
        for delivery in try await concurrently(late, { attempt, side, notification in
            try await client.notify(notification, gateway: attempt.gateway, on: bases[side]!)
        }) {
            #expect(delivery.reply.status == 200, "attempt \(delivery.input.0.attempt): \(delivery.reply.summary)")
        }
        for (id, attempt) in prepared {
            let reference = attempt.attempt.rawValue
            #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(reference)'") == 2, "attempt \(reference)")
            #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(reference)' AND outcome = 'applied'") == 1)
            #expect(try await count(store, "till_notifications",
                                    where: "attempt_reference = '\(reference)' AND event_id = 'evt-failed-\(reference)' AND outcome = 'stale'") == 1)
            for side in [Side.a, .b] {
                let view = try await client.payment(id, on: bases[side]!)
                #expect(view.status == .paid && view.attempts.map(\.status) == [.paid], "payment \(id) on \(side)")
            }
        }
        #expect(try await count(store, "till_attempts", where: "payment_id IN (\(sqlList(ids))) AND status = 'paid'") == Self.preparedPayments)

        // 4. Inquiries across both. Each pending attempt is prepared on a known instance, whose fake
        //    gateway knows it (answers "pending"); the other instance's fake does not (502).
        let pendingIDs = try await createPayments(Self.pendingPayments, prefix: "inq", on: bases[.a]!, client: client)
        var pending: [String: Prepared] = [:]
        for (index, id) in pendingIDs.enumerated() {
            let side: Side = index.isMultiple(of: 2) ? .a : .b
            let answer = try await client.send(bases[side]!, "POST", "v1/payments/\(id)/attempts", body: Data("{}".utf8))
            #expect(answer.status == 201, "\(answer.summary)")
            let attempt = AttemptReference(rawValue: try #require(answer.json["attempt"] as? String))
            let gateway = GatewayID(rawValue: try #require(answer.json["gateway"] as? String))
            pending[id] = Prepared(payment: id, attempt: attempt, gateway: gateway, side: side)
        }
        let references = pending.values.map(\.attempt.rawValue)

        // 4a. Inquiries alone, on both instances at once: nothing changes.
        let inquiries = try await concurrently(pending.values.flatMap { attempt in
            Self.spread(Self.inquiriesPerInstance).map { (attempt, $0) }
        }.shuffled()) { attempt, side in
            try await client.send(bases[side]!, "POST", "v1/attempts/\(attempt.attempt.rawValue)/inquire")
        }
        for inquiry in inquiries {
            let (attempt, side) = inquiry.input
            if side == attempt.side {
                #expect(inquiry.reply.status == 200 && inquiry.reply.json["status"] as? String == "pending",
                        "inquiry of \(attempt.attempt) on the preparing instance: \(inquiry.reply.summary)")
            } else {
                #expect(inquiry.reply.status == 502 && inquiry.reply.errorCode == CheckoutError.Code.attemptNotFound.rawValue,
                        "inquiry of \(attempt.attempt) on the other instance: \(inquiry.reply.summary)")
            }
        }
        for (id, attempt) in pending {
            let view = try await client.payment(id, on: bases[attempt.side.other]!)
            #expect(view.status == .pending && view.attempts.map(\.reference) == [attempt.attempt], "payment \(id)")
        }
        #expect(try await count(store, "till_attempts", where: "payment_id IN (\(sqlList(pendingIDs)))") == Self.pendingPayments)
        #expect(try await count(store, "till_attempts",
                                where: "payment_id IN (\(sqlList(pendingIDs))) AND status = 'pending'") == Self.pendingPayments)
        #expect(try await count(store, "till_notifications", where: "attempt_reference IN (\(sqlList(references)))") == 0)

        // 4b. Inquiries racing the paid notification on both instances. The preparing instance's fake
        //     still answers "pending": applied after "paid", that would move the attempt backwards.
        enum Work: Sendable { case inquire, deliver(IncomingNotification) }
        let race = pending.values.flatMap { attempt in
            let notification = gateways[attempt.gateway]!.signedNotification(for: StatusReport(
                gateway: attempt.gateway, attempt: attempt.attempt, status: .paid, amount: Self.amount,
                eventID: "evt-paid-\(attempt.attempt.rawValue)"))
            return Self.spread(Self.inquiriesPerInstance).map { (attempt, $0, Work.inquire) }
                + Self.spread(2).map { (attempt, $0, Work.deliver(notification)) }
        }.shuffled()
        let raced = try await concurrently(race) { attempt, side, work in
            switch work {
            case .inquire: try await client.send(bases[side]!, "POST", "v1/attempts/\(attempt.attempt.rawValue)/inquire")
            case .deliver(let notification): try await client.notify(notification, gateway: attempt.gateway, on: bases[side]!)
            }
        }
        for answer in raced {
            let (attempt, side, work) = answer.input
            switch work {
            case .deliver:
                #expect(answer.reply.status == 200, "delivery for \(attempt.attempt): \(answer.reply.summary)")
            case .inquire where side == attempt.side:
                #expect(answer.reply.status == 200 && ["pending", "paid"].contains(answer.reply.json["status"] as? String),
                        "inquiry of \(attempt.attempt) on the preparing instance: \(answer.reply.summary)")
            case .inquire:
                // Paid already: answered from the store; still open: the gateway there has no such attempt.
                let fine = (answer.reply.status == 200 && answer.reply.json["status"] as? String == "paid")
                    || (answer.reply.status == 502 && answer.reply.errorCode == CheckoutError.Code.attemptNotFound.rawValue)
                #expect(fine, "inquiry of \(attempt.attempt) on the other instance: \(answer.reply.summary)")
            }
        }

        // Settled: paid, once, and it stays paid whatever either instance is asked afterwards.
        let after = try await concurrently(pending.values.flatMap { attempt in Self.spread(2).map { (attempt, $0) } }) { attempt, side in
            try await client.send(bases[side]!, "POST", "v1/attempts/\(attempt.attempt.rawValue)/inquire")
        }
        for answer in after {
            #expect(answer.reply.status == 200 && answer.reply.json["status"] as? String == "paid",
                    "inquiry of \(answer.input.0.attempt) after it was paid, on \(answer.input.1): \(answer.reply.summary)")
        }
        for (id, attempt) in pending {
            let reference = attempt.attempt.rawValue
            let view = try await client.payment(id, on: bases[attempt.side.other]!)
            #expect(view.status == .paid && view.attempts.map(\.status) == [.paid], "payment \(id)")
            #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(reference)'") == 1, "attempt \(reference)")
            #expect(try await count(store, "till_notifications", where: "attempt_reference = '\(reference)' AND outcome = 'applied'") == 1)
        }
        #expect(try await count(store, "till_attempts", where: "payment_id IN (\(sqlList(pendingIDs))) AND status = 'paid'") == Self.pendingPayments)
        #expect(try await count(store, "till_payments", where: "merchant_id = '\(merchant)' AND status = 'paid'")
                == Self.preparedPayments + Self.pendingPayments)
        #expect(try await count(store, "till_attempts", where: "payment_id IN (SELECT id FROM till_payments WHERE merchant_id = '\(merchant)')")
                == Self.preparedPayments + Self.pendingPayments)
        #expect(try await count(store, "till_quarantine", where: "merchant_id = '\(merchant)'") == 0)
    }

    // MARK: Helpers

    /// `count` targets alternating between the instances (a, b, a, b, …), `count` on each.
    static func spread(_ count: Int) -> [Side] { (0..<(2 * count)).map { $0.isMultiple(of: 2) ? .a : .b } }

    func sqlList(_ values: [String]) -> String { values.map { "'\($0)'" }.joined(separator: ", ") }

    func createPayments(_ number: Int, prefix: String, on base: URL, client: Client) async throws -> [String] {
        let run = UUID().uuidString.prefix(8).lowercased()
        let created = try await concurrently(Array(0..<number)) { index in
            try await client.send(base, "POST", "v1/payments", body: Data(
                #"{"merchantReference":"\#(prefix)-\#(run)-\#(index)","amount":{"value":2500,"currency":"USD"},"method":"card"}"#.utf8))
        }
        return try created.map { answer in
            #expect(answer.reply.status == 201, "\(answer.reply.summary)")
            return try #require(answer.reply.json["id"] as? String)
        }
    }

    /// Runs `work` for every input at once; answers in input order.
    func concurrently<Input: Sendable>(_ inputs: [Input], _ work: @escaping @Sendable (Input) async throws -> Reply)
        async throws -> [(input: Input, reply: Reply)] {
        try await withThrowingTaskGroup(of: (Int, Reply).self) { group in
            for (index, input) in inputs.enumerated() {
                group.addTask { (index, try await work(input)) }
            }
            var replies = [Reply?](repeating: nil, count: inputs.count)
            for try await (index, reply) in group { replies[index] = reply }
            return zip(inputs, replies).map { ($0, $1!) }
        }
    }
}

extension MultiInstanceTests {
    /// One of the two instances.
    enum Side: String, Sendable, Hashable, CustomStringConvertible {
        case a, b
        var other: Side { self == .a ? .b : .a }
        var description: String { "instance \(rawValue.uppercased())" }
    }

    /// A prepared attempt and the instance that prepared it (whose fake gateway knows it).
    struct Prepared: Sendable {
        let payment: String
        let attempt: AttemptReference
        let gateway: GatewayID
        let side: Side
    }

    /// An HTTP answer.
    struct Reply: Sendable {
        let status: Int
        let body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var summary: String { "\(status) \(String(decoding: body.prefix(300), as: UTF8.self))" }
    }

    /// The merchant's API client and a gateway's notification sender, over one session that allows many
    /// connections per host (so concurrent requests are concurrent).
    struct Client: Sendable {
        let apiKey: String
        let session: URLSession

        init(apiKey: String) {
            self.apiKey = apiKey
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 64
            configuration.timeoutIntervalForRequest = 60
            session = URLSession(configuration: configuration)
        }

        func send(_ base: URL, _ method: String, _ path: String, body: Data? = nil, headers: [String: String]? = nil) async throws -> Reply {
            var request = URLRequest(url: base.appendingPathComponent(path))
            request.httpMethod = method
            request.httpBody = body
            for (name, value) in headers ?? ["Authorization": "Bearer \(apiKey)", "Content-Type": "application/json"] {
                request.setValue(value, forHTTPHeaderField: name)
            }
            let (data, response) = try await session.data(for: request)
            return Reply(status: (response as! HTTPURLResponse).statusCode, body: data)
        }

        /// Posts a notification as the gateway would: no API key, the gateway's signature.
        func notify(_ notification: IncomingNotification, gateway: GatewayID, on base: URL) async throws -> Reply {
            try await send(base, "POST", "v1/notifications/\(gateway.rawValue)", body: notification.body, headers: notification.headers)
        }

        func payment(_ id: String, on base: URL) async throws -> PaymentView {
            let reply = try await send(base, "GET", "v1/payments/\(id)")
            try #require(reply.status == 200, "\(reply.summary)")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(PaymentView.self, from: reply.body)
        }
    }

    /// A real `till server` process, its output kept in files: started at once, waited for separately
    /// (so several start together), and stopped with SIGTERM, then SIGKILL after a timeout.
    final class TillInstance: Sendable {
        let process: ChildProcess
        let name: String
        private let output: URL
        private let errors: URL

        init(name: String, config: URL, environment: [String: String], folder: URL) throws {
            self.name = name
            output = folder.appendingPathComponent("\(name).out")
            errors = folder.appendingPathComponent("\(name).err")
            var overrides: [String: String?] = environment
            overrides["TILL_CRASH_POINT"] = .some(nil)
            process = try ChildProcess(ServerProcess.executable, arguments: ["server", "--config", config.path],
                                       environment: ChildProcess.inheritedEnvironment(overrides),
                                       stdout: .file(output), stderr: .file(errors))
        }

        /// Waits for "till server listening on http://HOST:PORT" and returns the URL.
        func waitUntilListening(timeout: TimeInterval = 60) async throws -> URL {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("till server listening on http://") }),
                   let url = URL(string: String(line.dropFirst("till server listening on ".count)).trimmingCharacters(in: .whitespaces)) {
                    return url
                }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw CheckoutError(.misconfigured, message: "till server \(name) did not start:\n\(logTail())")
        }

        /// The end of what the server wrote to its standard error (its log).
        func logTail(_ characters: Int = 2_000) -> String {
            let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            return "[\(name)] " + String(text.suffix(characters))
        }

        func stop(timeout: TimeInterval = 10) {
            guard process.isRunning else { return }
            process.terminate()
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning {
                process.send(SIGKILL)
                process.waitUntilExit()
            }
        }
    }
}
