import Foundation
import Testing
import Till
import TillService
@testable import TillServer
import TillTesting

/// `GET /v1/payments` and its export, on every store: each filter, their combinations, the cursor's promise, every
/// mistake refused by name, the merchant's own payments only, the CSV's quoting and formula guard.
@Suite("Payments search and export")
struct PaymentSearchTests {
    static func body(_ reference: String, minor: Int = 2500, currency: String = "USD", method: String = "card", email: String? = nil,
                     description: String? = nil) -> String {
        var fields = [#""merchantReference":"\#(reference)""#, #""amount":{"value":\#(minor),"currency":"\#(currency)"}"#, #""method":"\#(method)""#]
        if let email { fields.append(#""customer":{"email":"\#(email)"}"#) }
        if let description { fields.append(#""description":"\#(description)""#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @discardableResult
    static func create(_ h: ServerHarness, _ body: String) async throws -> String {
        let created = try await h.send("POST", "v1/payments", json: body)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        return try #require(created.json["id"] as? String)
    }

    static func ids(_ answer: ServerHarness.Answer) -> [String] {
        ((answer.json["payments"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
    }

    @Test("each filter and their combinations; newest first", arguments: StoreKind.everyStore)
    func filters(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let small = try await Self.create(h, Self.body("s-1", minor: 500, email: "Ann@Example.com"))
        let large = try await Self.create(h, Self.body("s-2", minor: 90_000, currency: "EUR", email: "bob@example.com"))
        let wallet = try await Self.create(h, Self.body("s-3", minor: 1_500, method: "wechatpay"))
        let (paid, attempt, gateway) = try await h.createAndPrepare("s-4")
        #expect(try await h.notifyPaid(attempt, gateway: gateway, eventID: "evt-search").status == 200)
        func search(_ query: String) async throws -> [String] {
            let answer = try await h.query("GET", "v1/payments?\(query)")
            #expect(answer.status == 200, "\(query): \(String(decoding: answer.body, as: UTF8.self))")
            return Self.ids(answer)
        }
        #expect(try await search("") == [paid, wallet, large, small], "newest first")
        #expect(try await search("status=paid") == [paid])
        #expect(try await search("status=created,paid") == [paid, wallet, large, small])
        #expect(try await search("gateway=fake") == [paid])
        #expect(try await search("gateway=elsewhere").isEmpty)
        #expect(try await search("method=wechatpay") == [wallet])
        #expect(try await search("currency=EUR") == [large])
        #expect(try await search("currency=usd") == [paid, wallet, small], "a currency in any case")
        #expect(try await search("amountMin=1000&amountMax=2500") == [paid, wallet])
        #expect(try await search("amountMin=2500&amountMax=2500") == [paid], "both ends inclusive")
        #expect(try await search("merchantReference=s-2") == [large])
        #expect(try await search("customerEmail=ann%40example.COM") == [small], "an e-mail without regard to case")
        #expect(try await search("currency=USD&amountMax=1000&customerEmail=ann@example.com") == [small])
        #expect(try await search("currency=USD&method=wechatpay&status=paid").isEmpty)
        let now = Date()
        let later = now.addingTimeInterval(3_600).formatted(Date.ISO8601FormatStyle())
        let earlier = now.addingTimeInterval(-3_600).formatted(Date.ISO8601FormatStyle())
        #expect(try await search("createdFrom=\(earlier)&createdTo=\(later)").count == 4)
        #expect(try await search("createdFrom=\(later)").isEmpty)
        #expect(try await search("createdTo=\(earlier)").isEmpty)
        // What a page shows is the merchant's view: the customer, the money totals.
        let first = try #require((try await h.query("GET", "v1/payments?status=paid").json["payments"] as? [[String: Any]])?.first)
        #expect((first["amountCaptured"] as? [String: Any])?["value"] as? Int == 2500)
    }

    @Test("the cursor: pages never repeat nor skip a payment older than the cursor, even while payments are created",
          arguments: StoreKind.everyStore)
    func paging(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        var made: [String] = []
        for index in 0..<7 { made.append(try await Self.create(h, Self.body("p-\(index)"))) }
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let answer = try await h.query("GET", "v1/payments?limit=3" + (cursor.map { "&cursor=\($0)" } ?? ""))
            #expect(answer.status == 200)
            seen += Self.ids(answer)
            cursor = answer.json["nextCursor"] as? String
            pages += 1
            // Created between pages: newer than every cursor, so on no later page.
            try await Self.create(h, Self.body("new-\(pages)"))
        } while cursor != nil && pages < 10
        #expect(seen == made.reversed(), "every payment once, newest first: \(seen)")
        #expect(pages == 3)
    }

    @Test("a mistake is 400 naming its parameter; a client secret is refused; another merchant's payments are never shown",
          arguments: StoreKind.everyStore)
    func refusals(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        for (query, field) in [("stauts=paid", "stauts"), ("status=paid&status=failed", "status"), ("status=bogus", "status"), ("status=", "status"),
                               ("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"), ("cursor=ev12", "cursor"),
                               ("cursor=p12.PAY%3Cx%3E", "cursor"), ("amountMin=-1", "amountMin"), ("amountMin=1.5", "amountMin"),
                               ("amountMin=10&amountMax=5", "amountMax"), ("currency=XYZ", "currency"), ("createdFrom=yesterday", "createdFrom"),
                               ("customerEmail=nobody", "customerEmail"), ("gateway=a%20b", "gateway"), ("method=c%3Bd", "method")] {
            let answer = try await h.query("GET", "v1/payments?\(query)")
            #expect(answer.status == 400 && answer.errorField == field, "\(query): \(answer.status) \(answer.errorField ?? "-")")
        }
        for (query, field) in [("format=xml", "format"), ("", "format"), ("format=csv&limit=5", "limit"), ("format=csv&format=ndjson", "format"),
                               ("format=csv&status=nope", "status")] {
            let answer = try await h.query("GET", "v1/payments/export?\(query)")
            #expect(answer.status == 400 && answer.errorField == field, "export \(query): \(answer.status) \(answer.errorField ?? "-")")
        }
        let created = try await h.send("POST", "v1/payments", json: Self.body("mine"))
        let secret = try #require(created.json["clientSecret"] as? String)
        #expect(try await h.query("GET", "v1/payments", key: secret).status == 403)
        #expect(try await h.query("GET", "v1/payments/export?format=csv", key: secret).status == 403)
        #expect(try await h.query("GET", "v1/payments", key: .some(nil)).status == 401)
        // Another merchant on the same store: its payments are not in this merchant's pages, nor the other way round.
        let other = try await ServerHarness(kind)
        defer { Task { await other.stop() } }
        try await Self.create(other, Self.body("mine"))
        #expect(Self.ids(try await h.query("GET", "v1/payments?merchantReference=mine")).count == 1)
        #expect(Self.ids(try await other.query("GET", "v1/payments")).count == 1)
    }

    @Test("the export: CSV with its columns, RFC 4180 quoting and the formula guard; NDJSON one payment a line; every page streamed",
          arguments: StoreKind.everyStore)
    func export(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        try await Self.create(h, Self.body("-HYPERLINK.1", email: "x@example.com"))
        try await Self.create(h, Self.body("plain"))
        let csv = try await h.query("GET", "v1/payments/export?format=csv")
        #expect(csv.status == 200 && csv.headers["content-type"]?.hasPrefix("text/csv") == true)
        let lines = String(decoding: csv.body, as: UTF8.self).components(separatedBy: "\r\n")
        #expect(lines.first == PaymentExport.columns.joined(separator: ","))
        #expect(lines.count == 4 && lines.last == "", "a header, two payments, CRLF after each: \(lines)")
        #expect(lines[2].contains(",'-HYPERLINK.1,created,2500,USD,card,,x@example.com,"), "the formula guard: \(lines[2])")
        #expect(PaymentExport.csvField("a,\"b\"\nc") == "\"a,\"\"b\"\"\nc\"")
        #expect(PaymentExport.csvField("-1") == "'-1" && PaymentExport.csvField("@x") == "'@x" && PaymentExport.csvField("\tx") == "'\tx")
        #expect(PaymentExport.csvField("=1,2") == "\"'=1,2\"")
        let ndjson = try await h.query("GET", "v1/payments/export?format=ndjson&merchantReference=plain")
        #expect(ndjson.headers["content-type"] == "application/x-ndjson")
        let objects = String(decoding: ndjson.body, as: UTF8.self).split(separator: "\n")
        #expect(objects.count == 1 && objects[0].contains(#""merchantReference":"plain""#))
        // Many payments: every one exported, read from the store 500 at a time.
        let service = PaymentService(state: h.state, store: h.store)
        let merchant = try #require(h.state.merchant(id: h.merchant))
        for index in 0..<1_050 { try await Self.create(h, Self.body("bulk-\(index)", minor: 100 + index)) }
        var pages: [Int] = []
        try await service.eachPayment(merchant: merchant, request: PaymentSearchRequest()) { pages.append($0.count) }
        #expect(pages == [500, 500, 52], "\(pages)")
        let all = try await h.query("GET", "v1/payments/export?format=csv&amountMin=100&amountMax=1149")
        #expect(String(decoding: all.body, as: UTF8.self).components(separatedBy: "\r\n").count == 1 + 1_050 + 1)
        // Streamed as it is read: sent in chunks, with no length known before the last page.
        #expect(all.headers["content-length"] == nil && all.headers["transfer-encoding"]?.lowercased() == "chunked", "\(all.headers)")
    }

    @Test("MerchantAPIClient searches, pages and exports; a bad filter comes back as the server's error naming it")
    func client() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        for index in 0..<3 { try await Self.create(h, Self.body("c-\(index)", email: "c\(index)@example.com")) }
        let api = MerchantAPIClient(baseURL: h.baseURL, apiKey: h.apiKey, transport: URLSessionTransport())
        let first = try await api.searchPayments(["limit": "2"])
        #expect(first.payments.map(\.merchantReference) == ["c-2", "c-1"])
        let next = try await api.searchPayments(["limit": "2", "cursor": try #require(first.nextCursor)])
        #expect(next.payments.map(\.merchantReference) == ["c-0"] && next.nextCursor == nil)
        #expect(try await api.searchPayments(["customerEmail": "C1@example.com"]).payments.map(\.merchantReference) == ["c-1"])
        let csv = String(decoding: try await api.exportPayments(format: "csv", filters: ["merchantReference": "c-0"]), as: UTF8.self)
        #expect(csv.hasPrefix("id,merchantReference,") && csv.contains(",c-0,created,2500,USD,card,,c0@example.com,"))
        await #expect(throws: CheckoutError.self) { try await api.searchPayments(["limit": "0"]) }
        do {
            _ = try await api.searchPayments(["stauts": "paid"])
        } catch let error as CheckoutError {
            #expect(error.field == "stauts" && error.code.rawValue == "invalid_field")
        }
    }

    @Test("SQLite answers each filtered page from an index, never by sorting the merchant's payments")
    func plans() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let store = try #require(h.store as? SQLitePaymentStore)
        var query = PaymentSearchQuery()
        for (change, index) in [({ (q: inout PaymentSearchQuery) in }, "till_payments_created"),
                                ({ (q: inout PaymentSearchQuery) in q.statuses = [.paid] }, "till_payments_status"),
                                ({ (q: inout PaymentSearchQuery) in q.customerEmail = "a@example.com" }, "till_payments_email"),
                                ({ (q: inout PaymentSearchQuery) in q.method = "wechatpay" }, "till_payments_method"),
                                ({ (q: inout PaymentSearchQuery) in q.after = .init(createdMillis: 5, id: "pay_x") }, "created_at<?")] {
            query = PaymentSearchQuery()
            change(&query)
            let plan = try await store.queryPlan(PaymentSearchSQL.page(.sqlite, merchant: "m", query: query))
            #expect(plan.contains(index) && !plan.contains("TEMP B-TREE"), "\(plan)")
        }
    }

    static func intent(_ reference: String, email: String?, minor: Int64 = 2500) -> PaymentIntent {
        PaymentIntent(merchantReference: reference, amount: Money(minorUnits: minor, currency: Currency.lookup("USD")!), method: .card,
                      customer: Customer(email: email))
    }

    @Test("the store: a merchant's search never returns another merchant's payment, and follows a changed customer's e-mail",
          arguments: StoreKind.everyStore)
    func storeScope(kind: StoreKind) async throws {
        let store = try await kind.open()
        let mine = "m-\(UUID().uuidString.prefix(8).lowercased())", theirs = "m-\(UUID().uuidString.prefix(8).lowercased())"
        var ids: [String: String] = [:]
        for (merchant, reference) in [(mine, "a"), (theirs, "a"), (mine, "b"), (theirs, "b")] {
            let id = "pay_\(UUID().uuidString.prefix(12).lowercased())"
            _ = try await store.create(Self.intent(reference, email: "Shared@Example.com"), merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
            ids[merchant + reference] = id
        }
        var query = PaymentSearchQuery()
        #expect(Set(try await store.searchPayments(merchant: mine, query: query).map(\.id)) == [ids[mine + "b"]!, ids[mine + "a"]!])
        query.customerEmail = "shared@example.com"
        #expect(Set(try await store.searchPayments(merchant: theirs, query: query).map(\.id)) == [ids[theirs + "b"]!, ids[theirs + "a"]!])
        query.merchantReference = "a"
        #expect(try await store.searchPayments(merchant: mine, query: query).map(\.id) == [ids[mine + "a"]!])
        // A PATCH that changes the customer: the new e-mail finds the payment, the old one no longer does.
        let changed = try #require(try await store.replaceIntent(Self.intent("a", email: "New@Example.com"), payment: ids[mine + "a"]!,
                                                                 merchant: mine, expected: []))
        #expect(changed.intent.customer.email == "New@Example.com")
        #expect(try await store.searchPayments(merchant: mine, query: query).isEmpty)
        query.customerEmail = "new@example.com"
        #expect(try await store.searchPayments(merchant: mine, query: query).map(\.id) == [ids[mine + "a"]!])
        #expect(try await store.searchPayments(merchant: theirs, query: query).isEmpty)
        try await store.close()
    }

    @Test("upgrading a v6 SQLite database: v7 indexes its payments as they are, and the search finds them through the indexes")
    func upgrade() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-test-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLitePaymentStore(path: path)
        try await store.migrate()
        // As a database that stopped at v6 (v8's console tables kept: they are independent of v7): no search indexes.
        for index in ["till_payments_created", "till_payments_status", "till_payments_email"] { try await store.executeUnchecked("DROP INDEX \(index)") }
        try await store.executeUnchecked("DELETE FROM till_schema_migrations WHERE version = 7")
        for (index, email) in ["Old@Example.com", "other@example.com", "old@example.COM"].enumerated() {
            _ = try await store.create(Self.intent("old-\(index)", email: email), merchant: "m-old", id: "pay_old\(index)", idempotencyKey: nil, requestHash: "h")
        }
        try await store.migrate()
        var query = PaymentSearchQuery()
        query.customerEmail = "old@example.com"
        #expect(try await store.searchPayments(merchant: "m-old", query: query).map(\.id) == ["pay_old2", "pay_old0"])
        let plan = try await store.queryPlan(PaymentSearchSQL.page(.sqlite, merchant: "m-old", query: query))
        #expect(plan.contains("till_payments_email"), "\(plan)")
        query = PaymentSearchQuery()
        query.statuses = [.created]
        query.limit = 2
        #expect(try await store.searchPayments(merchant: "m-old", query: query).map(\.id) == ["pay_old2", "pay_old1"])
        try await store.close()
    }

    @Test("PaymentSearchRequest: the filters by name, parsed by one rule, a mistake naming its field")
    func request() throws {
        var request = PaymentSearchRequest()
        request.status = "paid,failed"
        request.customerEmail = "Ann@Example.com"
        request.currency = "eur"
        request.amountMin = "100"
        request.amountMax = "200"
        request.createdFrom = "2026-01-31T12:00:00Z"
        request.limit = "100"
        let query = try request.query()
        #expect(query.statuses == [.failed, .paid] && query.customerEmail == "ann@example.com" && query.currency == "EUR")
        #expect(query.amountMin == 100 && query.amountMax == 200 && query.limit == 100 && query.createdFrom != nil)
        #expect(request["status"] == "paid,failed" && request.gateway == nil)
        request.status = nil
        #expect(try request.query().statuses.isEmpty)
        for (field, value) in [("limit", "0"), ("cursor", "nope"), ("createdTo", "tomorrow"), ("amountMax", "50")] {
            var bad = request
            bad[field] = value
            let error = #expect(throws: ServiceError.self) { try bad.query() }
            #expect(error?.field == field && error?.status == .badRequest, "\(field)=\(value)")
        }
    }
}
