import Foundation
import Testing
import Till
import TillService
import TillTesting
@testable import TillServer

/// docs/openapi.yaml is the API's contract: its routes are the server's routes, and every exchange of every
/// server test (``ServerHarness/send(_:_:json:body:key:headers:)``) is checked against it. This suite walks
/// every documented operation once, with both credentials and the errors a merchant meets first.
@Suite("OpenAPI: docs/openapi.yaml is what the server does", .serialized)
struct OpenAPITests {
    @Test("the document's operations are exactly the server's routes")
    func routes() async throws {
        let contract = try OpenAPIContract.repository.get()
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let router = makeRouter(API(service: PaymentService(state: h.state, store: h.store)))
        let served = Set(router.routes.map { route in
            let path = "\(route.path)".split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
            return "\(route.method.rawValue) /" + path.joined(separator: "/")
        })
        #expect(served == contract.operations, "served, not documented: \(served.subtracting(contract.operations).sorted()); documented, not served: \(contract.operations.subtracting(served).sorted())")
    }

    @Test("the checker itself: an undocumented field, a wrong type, a missing required field and an undocumented status are caught")
    func checkerCatches() throws {
        let contract = try OpenAPIContract.repository.get()
        let good = #"{"status":"ok"}"#
        #expect(contract.violations(method: "GET", path: "/healthz", status: 200, contentType: "application/json", body: Data(good.utf8)).isEmpty)
        #expect(!contract.violations(method: "GET", path: "/healthz", status: 200, contentType: "application/json",
                                     body: Data(#"{"status":"ok","extra":1}"#.utf8)).isEmpty)
        #expect(!contract.violations(method: "GET", path: "/healthz", status: 200, contentType: "application/json", body: Data("{}".utf8)).isEmpty)
        #expect(!contract.violations(method: "GET", path: "/healthz", status: 299, contentType: "application/json", body: Data(good.utf8)).isEmpty)
        let error = #"{"error":{"code":"not_found","message":12}}"#
        #expect(!contract.violations(method: "GET", path: "/v1/payments/pay_x", status: 404, contentType: "application/json",
                                     body: Data(error.utf8)).isEmpty)
        #expect(contract.template(for: "/v1/quarantine") == "/v1/quarantine")
        #expect(contract.template(for: "/v1/payments/pay_1/attempts") == "/v1/payments/{id}/attempts")
        #expect(contract.template(for: "/v1/events/evt_1/redeliver") == "/v1/events/{id}/redeliver")
    }

    @Test("every documented operation, answered as documented, with both credentials and the first mistakes", arguments: StoreKind.available)
    func everyOperation(_ kind: StoreKind) async throws {
        let contract = try OpenAPIContract.repository.get()
        let h = try await ServerHarness(kind, gateways: ["cards-a", "cards-b"])
        defer { Task { await h.stop() } }
        var walked: Set<String> = []
        func call(_ method: String, _ path: String, json: String? = nil, key: String?? = .none, headers: [String: String] = [:],
                  template: String) async throws -> ServerHarness.Answer {
            walked.insert("\(method) \(template)")
            return try await h.send(method, path, json: json, key: key, headers: headers)
        }

        #expect(try await call("GET", "healthz", key: .some(nil), template: "/healthz").status == 200)
        #expect(try await call("GET", "readyz", key: .some(nil), template: "/readyz").status == 200)
        // Create, replay, and the mistakes a first request makes.
        let intent = #"{"merchantReference":"oa-1","amount":{"value":2500,"currency":"USD"},"method":"card","customer":{"email":"a@example.com"},"description":"Order 1","metadata":{"cart":"7"}}"#
        let created = try await call("POST", "v1/payments", json: intent, headers: ["Idempotency-Key": "oa-1"], template: "/v1/payments")
        #expect(created.status == 201)
        let id = try #require(created.json["id"] as? String)
        #expect((created.json["customer"] as? [String: Any])?["email"] as? String == "a@example.com")
        // A replay answers the stored payment with a new client secret (the earlier one stops working).
        let replayed = try await call("POST", "v1/payments", json: intent, headers: ["Idempotency-Key": "oa-1"], template: "/v1/payments")
        #expect(replayed.status == 200 && replayed.headers["idempotent-replayed"] == "true")
        let secret = try #require(replayed.json["clientSecret"] as? String)
        for (body, field) in [(#"{"merchantReference":"oa-2","amount":{"value":1,"currency":"USD"},"method":"card","action":"auth"}"#, "body.action"),
                              (#"{"merchantReference":"oa-2","amount":{"value":1,"currency":"USD"},"method":"wechat"}"#, "body.method"),
                              (#"{"merchantReference":"oa-2","amount":{"value":1,"currency":"USD"},"method":"card",}"#, "body")] {
            let refused = try await call("POST", "v1/payments", json: body, template: "/v1/payments")
            #expect((400...422).contains(refused.status) && refused.errorField == field, "\(body): \(refused.status) \(refused.errorField ?? "-")")
        }
        #expect(try await call("POST", "v1/payments", json: intent, key: .some("wrong-key"), template: "/v1/payments").status == 401)
        #expect(try await call("POST", "v1/payments", json: intent, key: .some(secret), template: "/v1/payments").status == 403)

        // Read with each credential: the customer, description and metadata only for the merchant.
        let merchantView = try await call("GET", "v1/payments/\(id)", template: "/v1/payments/{id}")
        #expect(merchantView.json["description"] as? String == "Order 1")
        let appView = try await call("GET", "v1/payments/\(id)", key: .some(secret), template: "/v1/payments/{id}")
        #expect(appView.status == 200 && appView.json["customer"] == nil && appView.json["metadata"] == nil)
        #expect(try await call("GET", "v1/payments/pay_nope", template: "/v1/payments/{id}").status == 404)

        // Change it before anything was sent; an empty change and an unknown key are refused by name.
        let patched = try await call("PATCH", "v1/payments/\(id)", json: #"{"description":"Order 1, gift wrapped","metadata":null}"#,
                                     template: "/v1/payments/{id}")
        #expect(patched.status == 200 && patched.json["description"] as? String == "Order 1, gift wrapped" && patched.json["metadata"] == nil)
        let empty = try await call("PATCH", "v1/payments/\(id)", json: "{}", template: "/v1/payments/{id}")
        #expect(empty.status == 400 && empty.errorField == "body" && empty.errorCode == "missing_field")
        #expect(try await call("PATCH", "v1/payments/\(id)", json: #"{"amount":{"value":1,"currency":"USD"}}"#,
                               template: "/v1/payments/{id}").errorField == "body.amount")
        #expect(try await call("PATCH", "v1/payments/\(id)", json: #"{"description":"x"}"#, key: .some(secret),
                               template: "/v1/payments/{id}").status == 403)

        // Prepare with the app's secret; the app's data must be a key some module reads.
        let unknownData = try await call("POST", "v1/payments/\(id)/attempts", json: #"{"appData":{"device-id":"x"}}"#, key: .some(secret),
                                         template: "/v1/payments/{id}/attempts")
        #expect(unknownData.status == 422 && unknownData.errorField == "body.appData.device-id")
        let prepared = try await call("POST", "v1/payments/\(id)/attempts", json: #"{"returnURLs":["shop://return?state=s1"]}"#,
                                      key: .some(secret), template: "/v1/payments/{id}/attempts")
        #expect(prepared.status == 201)
        let attempt = try #require(prepared.json["attempt"] as? String)
        let gateway = try #require(prepared.json["gateway"] as? String)
        // Once an attempt is open, nothing of the payment changes.
        let locked = try await call("PATCH", "v1/payments/\(id)", json: #"{"description":"late"}"#, template: "/v1/payments/{id}")
        #expect(locked.status == 409 && locked.errorCode == "payment_not_editable")

        #expect(try await call("GET", "v1/attempts/\(attempt)", key: .some(secret), template: "/v1/attempts/{reference}").status == 200)
        #expect(try await call("POST", "v1/attempts/\(attempt)/outcome", json: #"{"kind":"unknown"}"#, key: .some(secret),
                               template: "/v1/attempts/{reference}/outcome").status == 202)
        // The gateway's notification (verified, applied), a forged one, and the endpoint check.
        let report = StatusReport(gateway: GatewayID(rawValue: gateway), attempt: AttemptReference(rawValue: attempt), status: .paid,
                                  amount: ServerHarness.amount, eventID: "oa-paid")
        let note = h.gateway(GatewayID(rawValue: gateway)).signedNotification(for: report)
        walked.insert("POST /v1/notifications/{gateway}")
        #expect(try await h.notify(note, gateway: GatewayID(rawValue: gateway)).status == 200)
        #expect(try await call("POST", "v1/notifications/\(gateway)", json: #"{"attempt":"x"}"#, key: .some(nil),
                               template: "/v1/notifications/{gateway}").status == 401)
        let challenge = try await call("GET", "v1/notifications/\(gateway)", key: .some(nil), headers: [FakeGateway.challengeHeader: "echo-1"],
                                       template: "/v1/notifications/{gateway}")
        #expect(challenge.status == 200 && String(decoding: challenge.body, as: UTF8.self) == "echo-1")
        #expect(try await h.status(of: id) == "paid")
        let submitted = try await call("POST", "v1/attempts/\(attempt)/submit", json: #"{"kind":"fake_card","fields":{}}"#, key: .some(secret),
                                       template: "/v1/attempts/{reference}/submit")
        #expect(submitted.status == 409)   // the attempt is settled: nothing more is submitted

        #expect(try await call("POST", "v1/attempts/\(attempt)/inquire", key: .some(secret),
                               template: "/v1/attempts/{reference}/inquire").status == 200)
        let paidPatch = try await call("PATCH", "v1/payments/\(id)", json: #"{"description":"after"}"#, template: "/v1/payments/{id}")
        #expect(paidPatch.status == 409)

        // The merchant's operations on the paid payment: a refund, its reads, an inquiry; a capture and a void of a sale are
        // refused by the money rules; the key is required; the app's secret may not.
        await h.gateway(GatewayID(rawValue: gateway)).ledger.seed(AttemptReference(rawValue: attempt), amount: ServerHarness.amount, status: .paid)
        let refund = try await call("POST", "v1/payments/\(id)/refunds", json: #"{"amount":{"value":1000,"currency":"USD"}}"#,
                                    headers: ["Idempotency-Key": "oa-r1"], template: "/v1/payments/{id}/refunds")
        #expect(refund.status == 201 && refund.json["id"] as? String == "\(attempt)-r1")
        #expect(try await call("POST", "v1/payments/\(id)/refunds", json: "{}", template: "/v1/payments/{id}/refunds").errorField == "Idempotency-Key")
        #expect(try await call("POST", "v1/payments/\(id)/refunds", json: "{}", key: .some(secret), headers: ["Idempotency-Key": "oa-r2"],
                               template: "/v1/payments/{id}/refunds").status == 403)
        let tooMuch = try await call("POST", "v1/payments/\(id)/refunds", json: #"{"amount":{"value":1501,"currency":"USD"}}"#,
                                     headers: ["Idempotency-Key": "oa-r3"], template: "/v1/payments/{id}/refunds")
        #expect(tooMuch.status == 409 && tooMuch.errorCode == "amount_exceeds_captured")
        #expect(try await call("POST", "v1/payments/\(id)/captures", json: "{}", headers: ["Idempotency-Key": "oa-c1"],
                               template: "/v1/payments/{id}/captures").errorCode == "not_authorized")
        #expect(try await call("POST", "v1/payments/\(id)/voids", headers: ["Idempotency-Key": "oa-v1"],
                               template: "/v1/payments/{id}/voids").errorCode == "not_authorized")
        #expect(try await call("GET", "v1/refunds/\(attempt)-r1", template: "/v1/refunds/{id}").status == 200)
        #expect(try await call("GET", "v1/refunds/\(attempt)-c1", template: "/v1/refunds/{id}").status == 404)
        #expect(try await call("GET", "v1/operations/\(attempt)-r1", template: "/v1/operations/{id}").status == 200)
        #expect(try await call("POST", "v1/operations/\(attempt)-r1/inquire", template: "/v1/operations/{id}/inquire").status == 200)
        let withOperations = try await call("GET", "v1/payments/\(id)", template: "/v1/payments/{id}")
        #expect((withOperations.json["amountRefunded"] as? [String: Any])?["value"] as? Int == 1000)

        #expect(try await call("GET", "v1/quarantine", template: "/v1/quarantine").status == 200)
        // The payment's events: the list, one with its tries, a redelivery; a bad parameter, an unknown event, the app's secret.
        let events = try await call("GET", "v1/events", template: "/v1/events")
        let event = try #require(((events.json["events"] as? [[String: Any]])?.last?["event"] as? [String: Any])?["id"] as? String)
        #expect(events.status == 200)
        #expect(try await h.query("GET", "v1/events?payment=\(id)&limit=2").status == 200)
        #expect(try await h.query("GET", "v1/events?limit=0").errorField == "limit")
        #expect(try await call("GET", "v1/events/\(event)", template: "/v1/events/{id}").status == 200)
        #expect(try await call("GET", "v1/events/evt_nope", template: "/v1/events/{id}").status == 404)
        #expect(try await call("POST", "v1/events/\(event)/redeliver", template: "/v1/events/{id}/redeliver").status == 202)
        #expect(try await call("GET", "v1/events", key: .some(secret), template: "/v1/events").status == 403)
        // The search and its export: a page, a mistake, the app's secret.
        let page = try await call("GET", "v1/payments", template: "/v1/payments")
        #expect(page.status == 200 && (page.json["payments"] as? [[String: Any]])?.isEmpty == false)
        #expect(try await h.query("GET", "v1/payments?status=paid&limit=1").status == 200)
        #expect(try await h.query("GET", "v1/payments?limit=0").errorField == "limit")
        #expect(try await call("GET", "v1/payments", key: .some(secret), template: "/v1/payments").status == 403)
        #expect(try await h.query("GET", "v1/payments/export?format=csv").status == 200)
        #expect(try await h.query("GET", "v1/payments/export?format=ndjson&status=paid").status == 200)
        walked.insert("GET /v1/payments/export")
        #expect(try await h.query("GET", "v1/payments/export?format=xml").errorField == "format")
        #expect(try await call("GET", "v1/nothing-here", template: "-").status == 404)

        let missing = contract.operations.subtracting(walked)
        #expect(missing.isEmpty, "documented operations this walk did not call: \(missing.sorted())")
    }
}
