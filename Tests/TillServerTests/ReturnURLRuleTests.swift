import Foundation
import Testing
import Till
@testable import TillServer
import TillTesting

/// The return URLs an app offers at prepare, through the real server: only https with a host or the
/// merchant's own schemes (the harness's merchant configures `shop`) reach the store and the gateway.
@Suite("Merchant server: offered return URLs")
struct ReturnURLRuleServerTests {
    static let refused: [(body: String, field: String)] = [
        (#"{"returnURLs":["javascript:alert(1)"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["shop://till/return?till_state=s","data:text/html,x"]}"#, "body.returnURLs[1]"),
        (#"{"returnURLs":["https://shop.example.com/till/return","vbscript:msgbox(1)"]}"#, "body.returnURLs[1]"),
        (#"{"returnURLs":["file:///etc/passwd"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["http://shop.example.com/till/return"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["http://127.0.0.1:8080/till/return"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["otherapp://till/return"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["/till/return?till_state=s"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["https:///till/return"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["https://user:secret@shop.example.com/till/return"]}"#, "body.returnURLs[0]"),
        (#"{"returnURLs":["shop://someone@till/return"]}"#, "body.returnURLs[0]"),
        (#"{"returnURL":"javascript:alert(1)"}"#, "body.returnURL"),
    ]

    @Test("each refused return URL: 422 invalid_return_url naming the field; nothing stored, nothing sent to the gateway",
          arguments: StoreKind.available)
    func refused(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))"))
        let id = try #require(created.json["id"] as? String)
        for (body, field) in Self.refused {
            let answer = try await h.send("POST", "v1/payments/\(id)/attempts", json: body)
            #expect(answer.status == 422, "\(body): \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.errorCode == "invalid_return_url", "\(body)")
            #expect(answer.errorField == field, "\(body)")
            #expect((answer.json["error"] as? [String: Any])?["category"] as? String == "invalid_input", "\(body)")
        }
        // The PostgreSQL database is shared by every test: count this payment's attempts only.
        #expect(try await count(h.store, "till_attempts", where: "payment_id = '\(id)'") == 0)
        #expect(await h.gateway("fake").ledger.records.isEmpty)
        let payment = try await h.send("GET", "v1/payments/\(id)")
        #expect((payment.json["attempts"] as? [Any])?.isEmpty == true)
        #expect(payment.json["status"] as? String == "created")

        // A refusal costs the payment nothing: the first attempt that offers good URLs is its first.
        let good = #"{"returnURLs":["shop://till/return?till_state=s","https://shop.example.com/till/return?till_state=s"]}"#
        let prepared = try await h.send("POST", "v1/payments/\(id)/attempts", json: good)
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        let attempt = AttemptReference(rawValue: try #require(prepared.json["attempt"] as? String))
        let record = try #require(await h.gateway("fake").ledger.records[attempt])
        #expect(record.returnURL == URL(string: "shop://till/return?till_state=s"))
        #expect(try await count(h.store, "till_attempts", where: "payment_id = '\(id)'") == 1)
    }

    @Test("plain http to loopback only where the merchant allows it", arguments: StoreKind.available)
    func loopbackHTTP(kind: StoreKind) async throws {
        let body = #"{"returnURLs":["http://127.0.0.1:8080/till/return?till_state=s"]}"#
        let strict = try await ServerHarness(kind)
        let refused = try await strict.send("POST", "v1/payments/\(try await payment(strict))/attempts", json: body)
        #expect(refused.status == 422 && refused.errorField == "body.returnURLs[0]")
        await strict.stop()

        let sandbox = try await ServerHarness(kind, merchantSettings: { $0.allowLoopbackHTTPReturnURLs = true })
        defer { Task { await sandbox.stop() } }
        let accepted = try await sandbox.send("POST", "v1/payments/\(try await payment(sandbox))/attempts", json: body)
        #expect(accepted.status == 201, "\(String(decoding: accepted.body, as: UTF8.self))")
        let elsewhere = try await sandbox.send("POST", "v1/payments/\(try await payment(sandbox))/attempts",
                                               json: #"{"returnURLs":["http://shop.example.com/till/return"]}"#)
        #expect(elsewhere.status == 422 && elsewhere.errorField == "body.returnURLs[0]")
    }

    @Test("a merchant without custom schemes takes https only", arguments: StoreKind.available)
    func httpsOnly(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, merchantSettings: { $0.returnURLSchemes = [] })
        defer { Task { await h.stop() } }
        let refused = try await h.send("POST", "v1/payments/\(try await payment(h))/attempts",
                                       json: #"{"returnURLs":["https://shop.example.com/r","shop://till/return"]}"#)
        #expect(refused.status == 422 && refused.errorField == "body.returnURLs[1]")
        #expect(refused.errorCode == "invalid_return_url")
        #expect(await h.gateway("fake").ledger.records.isEmpty)
        let accepted = try await h.send("POST", "v1/payments/\(try await payment(h))/attempts",
                                        json: #"{"returnURLs":["https://shop.example.com/r"]}"#)
        #expect(accepted.status == 201)
    }

    private func payment(_ h: ServerHarness) async throws -> String {
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))"))
        return try #require(created.json["id"] as? String)
    }
}
