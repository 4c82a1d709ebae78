import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillChildProcess
import TillOrchestration
import TillService
@testable import TillServer
import TillTesting

extension ServerHarness {
    /// A request whose path carries a query string exactly as written (``send(_:_:json:body:key:headers:)`` appends a
    /// path component, which would escape the `?`), held to docs/openapi.yaml like every other exchange.
    @discardableResult
    func query(_ method: String, _ pathAndQuery: String, key: String?? = .none) async throws -> Answer {
        var request = URLRequest(url: URL(string: baseURL.absoluteString + "/" + pathAndQuery)!)
        request.httpMethod = method
        let bearer: String? = switch key { case .none: apiKey; case .some(let given): given }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        let contract = try OpenAPIContract.repository.get()
        let path = "/" + (pathAndQuery.split(separator: "?", maxSplits: 1).first.map(String.init) ?? pathAndQuery)
        let violations = contract.violations(method: method, path: path, status: http.statusCode, contentType: fields["content-type"], body: data)
        #expect(violations.isEmpty, "docs/openapi.yaml disagrees with the server:\n\(violations.joined(separator: "\n"))")
        return Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// A payment created, prepared and paid by the gateway's notification, as a merchant's first payment goes.
    func paidPayment() async throws -> (id: String, attempt: AttemptReference) {
        let (id, attempt, gateway) = try await createAndPrepare()
        let report = StatusReport(gateway: gateway, attempt: attempt, status: .paid, amount: Self.amount, eventID: "paid-\(attempt)")
        #expect(try await notify(self.gateway(gateway).signedNotification(for: report), gateway: gateway).status == 200)
        #expect(try await status(of: id) == "paid")
        return (id, attempt)
    }

    /// The events of the merchant's list, decoded (every page, `limit` at a time).
    func eventPage(_ query: String) async throws -> EventPage {
        let answer = try await self.query("GET", "v1/events" + (query.isEmpty ? "" : "?\(query)"))
        #expect(answer.status == 200, "\(query): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        return try EventRules.decoder.decode(EventPage.self, from: answer.body)
    }
}

/// `GET /v1/events`, `GET /v1/events/{id}` and `POST /v1/events/{id}/redeliver` over real HTTP, against the stores the
/// server runs on: what a payment's life records, paging, filters, every parameter's mistakes, who may see what, and
/// redelivery of events the delivery service settled.
@Suite("Events over HTTP: the merchant's list, one event, redelivery")
struct EventAPITests {
    /// What create → prepare → a `paid` notification records, in order.
    static let paidLife = ["payment.created", "attempt.created", "payment.pending", "attempt.pending", "attempt.paid", "payment.paid"]

    @Test("a payment's life lists its events in order, numbered 1…n, each with the payment as its change left it", arguments: StoreKind.available)
    func lifeInOrder(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await h.paidPayment()
        let answer = try await h.query("GET", "v1/events?payment=\(id)")
        #expect(answer.status == 200)
        // The list's items carry no tries (only one event's read does).
        let raw = try #require(answer.json["events"] as? [[String: Any]])
        #expect(raw.allSatisfy { $0["attempts"] == nil })
        let page = try EventRules.decoder.decode(EventPage.self, from: answer.body)
        #expect(page.next == nil)
        let events = page.events.map(\.event)
        #expect(events.map(\.type.rawValue) == Self.paidLife)
        #expect(events.map(\.sequence) == Array(1...events.count))
        #expect(events.allSatisfy { $0.paymentId == id && $0.merchant == h.merchant && $0.version == 1 && $0.id.hasPrefix("evt_") })
        #expect(Set(events.map(\.id)).count == events.count)
        #expect(events.first?.data.status == .created && events.first?.data.attempts.isEmpty == true)
        #expect(events.last?.data.status == .paid && events.last?.data.amount == ServerHarness.amount)
        #expect(events.filter { $0.type.rawValue.hasPrefix("attempt.") }.allSatisfy { $0.attempt == attempt })
        #expect(events.filter { $0.type.rawValue.hasPrefix("payment.") }.allSatisfy { $0.attempt == nil })
        // Nothing delivered them (no delivery service runs here): each is pending, due, untried.
        #expect(page.events.allSatisfy { $0.state == .pending && $0.attemptCount == 0 && $0.nextAttemptAt != nil && $0.deliveredAt == nil })
        // The list without a filter holds the same events, in the same order.
        #expect(try await h.eventPage("").events.map(\.event.id) == events.map(\.id))
    }

    @Test("paging two at a time with the cursor walks every event once, in order, filters kept", arguments: StoreKind.available)
    func paging(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (first, _) = try await h.paidPayment()
        _ = try await h.paidPayment()
        let (third, _, _) = try await h.createAndPrepare()
        let all = try await h.eventPage("limit=200").events.map(\.event.id)
        #expect(all.count == 2 * Self.paidLife.count + 4)
        func walk(_ filter: String) async throws -> (ids: [String], pages: Int) {
            var ids: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await h.eventPage(filter + "limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
                #expect(page.events.count <= 2)
                #expect(page.next == nil || page.events.count == 2)
                ids += page.events.map(\.event.id)
                cursor = page.next
                pages += 1
            } while cursor != nil && pages < 100
            return (ids, pages)
        }
        let walked = try await walk("")
        #expect(walked.ids == all, "no gap, no repeat, the same order")
        #expect(walked.pages == all.count / 2 + 1)   // an even count: the last full page says `next`, the one after is empty
        // A filter holds on every page.
        let firstOnly = try await walk("payment=\(first)&")
        #expect(firstOnly.ids == (try await h.eventPage("payment=\(first)").events.map(\.event.id)))
        #expect(firstOnly.ids.count == Self.paidLife.count)
        let thirdOnly = try await h.eventPage("payment=\(third)&limit=200").events
        #expect(thirdOnly.map(\.event.sequence) == [1, 2, 3, 4])
    }

    @Test("filters by type, payment and delivery state, alone and together", arguments: StoreKind.available)
    func filters(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (first, _) = try await h.paidPayment()
        let (second, _) = try await h.paidPayment()
        let paid = try await h.eventPage("type=payment.paid").events
        #expect(paid.map(\.event.paymentId) == [first, second])
        #expect(paid.allSatisfy { $0.event.type == .payment(.paid) && $0.event.data.status == .paid })
        #expect(try await h.eventPage("type=payment.paid&payment=\(second)").events.map(\.event.paymentId) == [second])
        #expect(try await h.eventPage("type=refund.succeeded").events.isEmpty)
        #expect(try await h.eventPage("payment=pay_nobody").events.isEmpty)
        #expect(try await h.eventPage("state=pending").events.count == 2 * Self.paidLife.count)
        #expect(try await h.eventPage("state=delivered").events.isEmpty)
        // The delivery service's result, as the store records it: the first event of each payment settled.
        let now = Date().addingTimeInterval(5)
        let claimed = try await h.store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 10, merchant: h.merchant)
        #expect(claimed.count == 2)
        for event in claimed {
            let ok = event.paymentID == first
            let attempt = StoredDeliveryAttempt(eventID: event.id, endpoint: "https://shop.example/hook", at: now, statusCode: ok ? 200 : 500,
                                                latencyMillis: 12, error: ok ? nil : "status 500", excerpt: ok ? "ok" : "oops")
            #expect(try await h.store.recordDelivery(event: event.id, claimedUntil: now.addingTimeInterval(60), attempts: [attempt],
                                                     result: ok ? .delivered : .failed))
        }
        #expect(try await h.eventPage("state=delivered").events.map(\.event.paymentId) == [first])
        #expect(try await h.eventPage("state=failed").events.map(\.event.paymentId) == [second])
        #expect(try await h.eventPage("state=failed&payment=\(first)").events.isEmpty)
        #expect(try await h.eventPage("state=delivered&type=payment.created").events.map(\.event.sequence) == [1])
        #expect(try await h.eventPage("state=skipped").events.isEmpty)
    }

    @Test("every mistake in the query is 400 naming its parameter: a bad value, an unknown name, a name given twice", arguments: StoreKind.available)
    func badParameters(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        _ = try await h.paidPayment()
        let cases: [(String, String, String)] = [
            ("limit=0", "limit", "invalid_field"), ("limit=201", "limit", "invalid_field"), ("limit=x", "limit", "invalid_field"),
            ("limit=", "limit", "invalid_field"), ("limit=-1", "limit", "invalid_field"), ("limit=1.5", "limit", "invalid_field"),
            ("state=nope", "state", "invalid_field"), ("state=Pending", "state", "invalid_field"),
            ("cursor=garbage", "cursor", "invalid_field"), ("cursor=ev-1", "cursor", "invalid_field"), ("cursor=ev01", "cursor", "invalid_field"),
            ("cursor=", "cursor", "invalid_field"),
            ("type=PAYMENT.PAID!", "type", "invalid_field"), ("type=payment%20paid", "type", "invalid_field"), ("type=", "type", "invalid_field"),
            ("payment=", "payment", "invalid_field"),
            ("stat=failed", "stat", "invalid_field"), ("limit=2&Limit=2", "Limit", "invalid_field"), ("paymentId=pay_1", "paymentId", "invalid_field"),
            ("limit=2&limit=3", "limit", "duplicate_field"), ("state=failed&state=pending", "state", "duplicate_field"),
        ]
        for (query, field, code) in cases {
            let answer = try await h.query("GET", "v1/events?\(query)")
            #expect(answer.status == 400 && answer.errorField == field && answer.errorCode == code,
                    "\(query): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        // The edges that are right: 1 and 200, a cursor the server could have given, an empty query.
        for query in ["limit=1", "limit=200", "cursor=ev0", "", "&"] {
            #expect(try await h.query("GET", "v1/events?\(query)").status == 200, "\(query)")
        }
    }

    @Test("another merchant's event and an unknown one are not found; no key is 401; a client secret is forbidden", arguments: StoreKind.available)
    func whoSeesWhat(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-\(UUID().uuidString.prefix(8))"))
        let secret = try #require(created.json["clientSecret"] as? String)
        let mine = try #require(try await h.eventPage("").events.first?.event.id)
        // Another merchant's payment in the same store: its events exist, and are nobody else's.
        let other = "other-\(UUID().uuidString.prefix(8))"
        let theirs = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await h.store.create(PaymentIntent(merchantReference: "o-\(theirs)", amount: ServerHarness.amount, method: .card), merchant: other,
                                     id: theirs, idempotencyKey: nil, requestHash: "h")
        let foreign = try #require(try await h.store.events(merchant: other, query: EventQuery()).first?.id)
        for id in [foreign, "evt_00000000-0000-0000-0000-000000000000", "nope"] {
            let read = try await h.query("GET", "v1/events/\(id)")
            #expect(read.status == 404 && read.errorCode == "not_found", "\(id): \(read.status)")
            let redeliver = try await h.query("POST", "v1/events/\(id)/redeliver")
            #expect(redeliver.status == 404 && redeliver.errorCode == "not_found", "\(id): \(redeliver.status)")
        }
        #expect(try await h.eventPage("payment=\(theirs)").events.isEmpty)
        #expect(!(try await h.eventPage("limit=200").events.contains { $0.event.id == foreign }))
        // The foreign event was left as it was.
        #expect(try await h.store.event(id: foreign, merchant: other)?.state == .pending)

        for (method, path) in [("GET", "v1/events"), ("GET", "v1/events?limit=nope"), ("GET", "v1/events/\(mine)"), ("POST", "v1/events/\(mine)/redeliver")] {
            for key: String? in [nil, "wrong-key", ""] {
                let answer = try await h.query(method, path, key: .some(key))
                #expect(answer.status == 401 && answer.errorCode == "unauthorized", "\(method) \(path) with \(key ?? "no key"): \(answer.status)")
            }
            let app = try await h.query(method, path, key: .some(secret))
            #expect(app.status == 403 && app.errorCode == "forbidden", "\(method) \(path) with a client secret: \(app.status)")
        }
    }

    @Test("one event shows every try (endpoint, time, status or error, latency, excerpt); redelivery makes a delivered or failed event pending and due",
          arguments: StoreKind.available)
    func showAndRedeliver(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (first, _) = try await h.paidPayment()
        _ = try await h.paidPayment()
        let now = Date().addingTimeInterval(5)
        let claimed = try await h.store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 10, merchant: h.merchant)
        #expect(claimed.count == 2)
        var delivered = "", failed = ""
        for event in claimed {
            let ok = event.paymentID == first
            if ok { delivered = event.id } else { failed = event.id }
            let tries = ok
                ? [StoredDeliveryAttempt(eventID: event.id, endpoint: "https://shop.example/hook", at: now, statusCode: 503, latencyMillis: 40,
                                         error: "status 503", excerpt: "Service Unavailable"),
                   StoredDeliveryAttempt(eventID: event.id, endpoint: "https://backup.example/hook", at: now, statusCode: 200, latencyMillis: 7,
                                         excerpt: "ok")]
                : [StoredDeliveryAttempt(eventID: event.id, endpoint: "https://shop.example/hook", at: now, statusCode: nil, latencyMillis: 10_000,
                                         error: "timeout")]
            #expect(try await h.store.recordDelivery(event: event.id, claimedUntil: now.addingTimeInterval(60), attempts: tries,
                                                     result: ok ? .delivered : .failed))
        }

        let shown = try await h.query("GET", "v1/events/\(delivered)")
        #expect(shown.status == 200)
        let view = try EventRules.decoder.decode(EventView.self, from: shown.body)
        #expect(view.event.id == delivered && view.event.sequence == 1 && view.event.type == .paymentCreated && view.event.paymentId == first)
        #expect(view.state == .delivered && view.attemptCount == 1 && view.deliveredAt != nil && view.nextAttemptAt == nil)
        let attempts = try #require(view.attempts)
        #expect(attempts.map(\.endpoint) == ["https://shop.example/hook", "https://backup.example/hook"])
        #expect(attempts.map(\.statusCode) == [503, 200])
        #expect(attempts.map(\.excerpt) == ["Service Unavailable", "ok"])
        #expect(attempts.map(\.error) == ["status 503", nil])
        #expect(attempts.map(\.latencyMillis) == [40, 7])
        #expect(attempts.allSatisfy { abs($0.at.timeIntervalSince(now)) < 1 })
        let timedOut = try EventRules.decoder.decode(EventView.self, from: try await h.query("GET", "v1/events/\(failed)").body)
        #expect(timedOut.state == .failed && timedOut.nextAttemptAt == nil)
        #expect(timedOut.attempts == [EventDeliveryAttemptView(endpoint: "https://shop.example/hook", at: timedOut.attempts![0].at, statusCode: nil,
                                                                latencyMillis: 10_000, error: "timeout")])

        for id in [delivered, failed] {
            let before = Date()
            let answer = try await h.query("POST", "v1/events/\(id)/redeliver")
            #expect(answer.status == 202)
            let again = try EventRules.decoder.decode(EventView.self, from: answer.body)
            #expect(again.event.id == id && again.state == .pending)
            #expect(try #require(again.nextAttemptAt) <= Date().addingTimeInterval(1) && again.nextAttemptAt! >= before.addingTimeInterval(-1))
            // Its tries stay; the body is the same bytes' event.
            #expect(again.attemptCount == 1 && again.attempts?.count == (id == delivered ? 2 : 1))
            #expect(again.event == (id == delivered ? view.event : timedOut.event))
        }
        #expect(try await h.eventPage("state=failed").events.isEmpty)
        #expect(try await h.eventPage("state=delivered").events.isEmpty)
        // Pending and due again: the delivery service's next claim hands both out, first in line of their payments.
        let later = Date().addingTimeInterval(1)
        let reclaimed = try await h.store.claimDueEvents(now: later, claimedUntil: later.addingTimeInterval(60), limit: 10, merchant: h.merchant)
        #expect(Set(reclaimed.map(\.id)) == [delivered, failed])
        // Redelivering twice is harmless: still one pending event.
        #expect(try await h.query("POST", "v1/events/\(failed)/redeliver").status == 202)
        #expect(try await h.query("POST", "v1/events/\(failed)/redeliver").status == 202)
        #expect(try await h.eventPage("state=pending&type=payment.created").events.count == 2)
    }

    @Test("MerchantAPIClient's events, event and redeliver: filters and a cursor reach the server exactly, its refusals name the parameter")
    func client() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let (id, _) = try await h.paidPayment()
        let api = MerchantAPIClient(baseURL: h.baseURL, apiKey: h.apiKey, transport: URLSessionTransport())
        let all = try await api.events(payment: id)
        #expect(all.events.map(\.event.type.rawValue) == Self.paidLife)
        var walked: [String] = []
        var page = try await api.events(limit: 4)
        walked += page.events.map(\.event.id)
        while let next = page.next {
            page = try await api.events(cursor: next, limit: 4)
            walked += page.events.map(\.event.id)
        }
        #expect(walked == all.events.map(\.event.id))
        #expect(try await api.events(type: .payment(.paid), payment: id, state: .pending).events.map(\.event.sequence) == [Self.paidLife.count])
        // A value with the query's own characters arrives as one value (no payment has that id), never as more parameters.
        #expect(try await api.events(payment: "pay_x&limit=0#y=1 +z").events.isEmpty)
        let shown = try await api.event(all.events[2].event.id)
        #expect(shown.event == all.events[2].event && shown.attempts == [])
        let again = try await api.redeliver(all.events[2].event.id)
        #expect(again.state == .pending && again.event.id == shown.event.id)
        let refused = await #expect(throws: CheckoutError.self) { try await api.events(limit: 201) }
        #expect(refused?.code.rawValue == "invalid_field" && refused?.field == "limit")
        let missing = await #expect(throws: CheckoutError.self) { try await api.event("evt_nobody") }
        #expect(missing?.code.rawValue == "not_found")
        let noRedelivery = await #expect(throws: CheckoutError.self) { try await api.redeliver("evt_nobody") }
        #expect(noRedelivery?.code.rawValue == "not_found")
    }
}

/// `till events list / show / redeliver` as a merchant's back office runs them against a running server.
@Suite("till events, the command")
struct EventsCommandTests {
    /// Runs `till events <arguments>` against `h` (a `--server` among `arguments` overrides it) with the merchant's key in
    /// `TILL_TEST_EVENTS_KEY`; its exit, standard output and standard error.
    func till(_ h: ServerHarness, _ arguments: [String], key: String? = nil) async throws -> (ChildProcess.Termination, String, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-events-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out"), err = folder.appendingPathComponent("err")
        let process = try ChildProcess(ServerProcess.executable,
                                       arguments: ["events", arguments[0], "--server", h.baseURL.absoluteString, "--api-key-env", "TILL_TEST_EVENTS_KEY"]
                                           + arguments.dropFirst(),
                                       environment: ChildProcess.inheritedEnvironment(["TILL_TEST_EVENTS_KEY": key ?? h.apiKey]),
                                       stdout: .file(out), stderr: .file(err))
        let ended = await process.exit()
        return (ended, (try? String(contentsOf: out, encoding: .utf8)) ?? "", (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }

    @Test("list prints one line per event, pages with --cursor, filters; show prints the tries; redeliver makes it pending; refusals exit 1 naming the parameter")
    func listShowRedeliver() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let (id, _) = try await h.paidPayment()
        let events = try await h.eventPage("payment=\(id)").events

        let (listed, out, _) = try await till(h, ["list", "--payment", id])
        #expect(listed == .exited(0))
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == EventAPITests.paidLife.count, "\(out)")
        #expect(lines.first == "\(events[0].event.id)  #1  payment.created  \(id)  pending  0 tries", "\(out)")
        #expect(lines.last?.hasPrefix("\(events.last!.event.id)  #\(events.count)  payment.paid  \(id)  pending") == true, "\(out)")
        #expect(lines.allSatisfy { $0.components(separatedBy: "  ").count == 6 }, "id, sequence, type, payment, state, tries: \(out)")

        // Two at a time: standard error says how to ask for the next page; following it walks every event.
        var seen: [String] = []
        var cursor: String?
        repeat {
            let (ended, page, err) = try await till(h, ["list", "--limit", "2"] + (cursor.map { ["--cursor", $0] } ?? []))
            #expect(ended == .exited(0), "\(err)")
            seen += page.split(separator: "\n").map { String($0.split(separator: " ").first!) }
            cursor = err.split(separator: "\n").first { $0.hasPrefix("more: till events list --cursor ") }
                .map { String($0.dropFirst("more: till events list --cursor ".count)) }
        } while cursor != nil && seen.count < 100
        #expect(seen == events.map(\.event.id))

        let (_, paidOnly, _) = try await till(h, ["list", "--type", "payment.paid", "--state", "pending"])
        #expect(paidOnly.split(separator: "\n").count == 1 && paidOnly.contains("  payment.paid  "), "\(paidOnly)")
        let (_, json, _) = try await till(h, ["list", "--payment", id, "--json"])
        #expect(try EventRules.decoder.decode(EventPage.self, from: Data(json.utf8)).events.map(\.event.id) == events.map(\.event.id))

        // A try recorded by the delivery service, then shown.
        let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 5).rounded(.down))
        let claimed = try #require(try await h.store.claimDueEvents(now: now, claimedUntil: now.addingTimeInterval(60), limit: 1, merchant: h.merchant).first)
        try await h.store.recordDelivery(event: claimed.id, claimedUntil: now.addingTimeInterval(60),
                                         attempts: [StoredDeliveryAttempt(eventID: claimed.id, endpoint: "https://shop.example/hook", at: now,
                                                                          statusCode: 500, latencyMillis: 23, error: "status 500", excerpt: "oops")],
                                         result: .failed)
        let (shown, details, _) = try await till(h, ["show", claimed.id])
        #expect(shown == .exited(0))
        #expect(details.contains("event     \(claimed.id)") && details.contains("type      payment.created") && details.contains("state     failed"), "\(details)")
        #expect(details.contains("tries     1:"), "\(details)")
        #expect(details.contains("  \(ISO8601DateFormatter().string(from: now))  https://shop.example/hook  status 500  23 ms  \"oops\""), "\(details)")
        let (_, shownJSON, _) = try await till(h, ["show", claimed.id, "--json"])
        #expect(try EventRules.decoder.decode(EventView.self, from: Data(shownJSON.utf8)).attempts?.first?.excerpt == "oops")

        let (redelivered, line, _) = try await till(h, ["redeliver", claimed.id])
        #expect(redelivered == .exited(0))
        #expect(line == "\(claimed.id)  #1  payment.created  \(id)  pending  1 try\n", "\(line)")
        #expect(try await h.store.event(id: claimed.id, merchant: h.merchant)?.state == .pending)

        // Refusals: the server's code and parameter on standard error, exit 1.
        let (refused, _, why) = try await till(h, ["list", "--limit", "0"])
        #expect(refused == .exited(1) && why.contains("refused: invalid_field (limit)"), "\(refused) \(why)")
        let (missing, _, notFound) = try await till(h, ["show", "evt_nobody"])
        #expect(missing == .exited(1) && notFound.contains("refused: not_found"), "\(notFound)")
        let (badKey, _, unauthorized) = try await till(h, ["redeliver", claimed.id], key: "wrong-key")
        #expect(badKey == .exited(1) && unauthorized.contains("refused: unauthorized"), "\(unauthorized)")
        let (down, _, unreachable) = try await till(h, ["list", "--server", "http://127.0.0.1:\(try #require(LoopbackPort.reserve()))"])
        #expect(down == .exited(1) && unreachable.hasPrefix("failed: "), "\(unreachable)")
        let (badState, _, usage) = try await till(h, ["list", "--state", "nope"])
        #expect(badState != .exited(0) && usage.contains("--state"), "\(usage)")
    }
}
