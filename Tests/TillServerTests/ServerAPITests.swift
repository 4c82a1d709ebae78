import Foundation
import MetricsTestKit
import Testing
import Till
import TillOrchestration
import TillService
@testable import TillServer
import TillTesting

@Suite("Merchant server API over real HTTP")
struct ServerAPITests {
    @Test("health check", arguments: StoreKind.available)
    func health(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let answer = try await h.send("GET", "healthz", key: .some(nil))
        #expect(answer.status == 200)
        #expect(answer.headers["x-request-id"] != nil)
        let echoed = try await h.send("GET", "healthz", key: .some(nil), headers: ["X-Request-Id": "abc-123"])
        #expect(echoed.headers["x-request-id"] == "abc-123")
    }

    @Test("a missing or wrong API key is 401 without detail", arguments: StoreKind.available)
    func auth(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        for key: String? in [nil, "wrong", h.apiKey + "x", ""] {
            let answer = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-auth"), key: .some(key))
            #expect(answer.status == 401)
            #expect(answer.errorCode == "unauthorized")
            #expect(!String(decoding: answer.body, as: UTF8.self).contains(h.merchant))
        }
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 0)
    }

    @Test("idempotency: same key and body replays; same key, different body is 409", arguments: StoreKind.available)
    func idempotency(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let body = ServerHarness.intentJSON("o-idem")
        let first = try await h.send("POST", "v1/payments", json: body, headers: ["Idempotency-Key": "k-1"])
        #expect(first.status == 201)
        // The same request, spelled differently (key order, spacing), is the same request.
        let respelled = #"{ "method": "card", "amount": {"currency": "USD", "value": 2500}, "merchantReference": "o-idem" }"#
        let again = try await h.send("POST", "v1/payments", json: respelled, headers: ["Idempotency-Key": "k-1"])
        #expect(again.status == 200)
        #expect(again.headers["idempotent-replayed"] == "true")
        #expect(again.json["id"] as? String == first.json["id"] as? String)
        let different = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-idem", minor: 2600),
                                         headers: ["Idempotency-Key": "k-1"])
        #expect(different.status == 409)
        #expect(different.errorCode == "idempotency_conflict")
        let duplicate = try await h.send("POST", "v1/payments", json: body)
        #expect(duplicate.status == 409)
        #expect(duplicate.errorCode == "duplicate_reference")
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 1)
    }

    @Test("concurrent retries with one idempotency key create one payment", arguments: StoreKind.available)
    func concurrentIdempotency(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let ids = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<12 {
                group.addTask { try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-race"),
                                                 headers: ["Idempotency-Key": "race"]).json["id"] as? String }
            }
            return try await group.reduce(into: Set<String>()) { if let id = $1 { $0.insert(id) } }
        }
        #expect(ids.count == 1)
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 1)
    }

    @Test("malformed JSON, wrong types, bad values and oversized bodies are clear 4xx; nothing is stored",
          arguments: StoreKind.available)
    func badInput(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, maxBodyBytes: 2_048)
        defer { Task { await h.stop() } }
        let cases: [(String, Int, String?, String?)] = [
            (#"{"merchantReference": "o-1", "amount": {"value": 1"#, 400, "malformed_json", "body"),
            (#"{"merchantReference":"o-1","amount":{"value":"1050","currency":"USD"},"method":"card"}"#, 400, "invalid_field", "body.amount.value"),
            (#"{"merchantReference":"o-1","amount":{"value":1050,"currency":"USX"},"method":"card"}"#, 400, "invalid_currency", "body.amount.currency"),
            (#"{"merchantReference":"o-1","amount":{"value":0,"currency":"USD"},"method":"card"}"#, 400, "invalid_amount", "body.amount"),
            (#"{"merchantReference":"o 1","amount":{"value":5,"currency":"USD"},"method":"card"}"#, 400, "invalid_field", "body.merchantReference"),
            (#"{"amount":{"value":5,"currency":"USD"},"method":"card"}"#, 400, "missing_field", "body.merchantReference"),
            (#"{"merchantReference":"o-1","amount":{"value":5,"currency":"USD"},"method":"card","colour":"red"}"#, 400, "invalid_field", "body.colour"),
            ("[]", 400, "invalid_field", "body"),
            (#"{"merchantReference":"o-1","amount":{"value":5,"currency":"USD"},"method":"card","description":""# + String(repeating: "x", count: 4_000) + #""}"#,
             413, "body_too_large", "body"),
        ]
        for (body, status, code, field) in cases {
            let answer = try await h.send("POST", "v1/payments", json: body)
            #expect(answer.status == status, "\(body.prefix(60))")
            #expect(answer.errorCode == code, "\(body.prefix(60)) → \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.errorField == field, "\(body.prefix(60))")
        }
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 0)
        let badKey = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-2"),
                                      headers: ["Idempotency-Key": String(repeating: "k", count: 300)])
        #expect(badKey.status == 400 && badKey.errorField == "Idempotency-Key")
        #expect(try await h.send("GET", "v1/payments/nope").status == 404)
    }

    @Test("prepare picks the gateway, stores the attempt first, and refuses a second one while it is open",
          arguments: StoreKind.available)
    func prepare(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        #expect(gateway == "fake")
        #expect(await h.gateway("fake").ledger.records[attempt] != nil)
        let payment = try await h.send("GET", "v1/payments/\(id)")
        #expect(payment.json["status"] as? String == "pending")
        #expect((payment.json["attempts"] as? [[String: Any]])?.first?["status"] as? String == "pending")
        let second = try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        #expect(second.status == 409)
        #expect(second.errorCode == "attempt_in_progress")
    }

    @Test("a client-reported success is informational: the payment stays pending", arguments: StoreKind.available)
    func clientOutcome(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, _) = try await h.createAndPrepare()
        let answer = try await h.send("POST", "v1/attempts/\(attempt)/outcome", json: #"{"kind":"succeeded","gatewayCode":"0"}"#)
        #expect(answer.status == 202)
        #expect(try await h.status(of: id) == "pending")
        let payment = try await h.send("GET", "v1/payments/\(id)")
        let outcome = (payment.json["attempts"] as? [[String: Any]])?.first?["clientOutcome"] as? [String: Any]
        #expect(outcome?["kind"] as? String == "succeeded")
        #expect(try await h.send("POST", "v1/attempts/nope/outcome", json: #"{"kind":"succeeded"}"#).status == 404)
    }

    @Test("a verified notification is stored, applied and acknowledged; the payment is paid", arguments: StoreKind.available)
    func notification(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        let report = StatusReport(gateway: gateway, attempt: attempt, status: .paid,
                                  amount: Money(minorUnits: 2500, currency: Currency.lookup("USD")!), eventID: "evt-paid")
        let answer = try await h.notify(h.gateway(gateway).signedNotification(for: report), gateway: gateway)
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "OK")
        #expect(try await h.status(of: id) == "paid")
        #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 1)
    }

    @Test("concurrent duplicate notifications are applied once; a late failure never un-pays", arguments: StoreKind.available)
    func duplicates(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        let paid = h.gateway(gateway).signedNotification(for: StatusReport(gateway: gateway, attempt: attempt, status: .paid, amount: ServerHarness.amount, eventID: "evt-dup"))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 { group.addTask { try await h.notify(paid, gateway: gateway).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 1)
        #expect(try await h.status(of: id) == "paid")
        let late = h.gateway(gateway).signedNotification(for: StatusReport(gateway: gateway, attempt: attempt, status: .failed, eventID: "evt-late"))
        #expect(try await h.notify(late, gateway: gateway).status == 200)       // stored and acknowledged …
        #expect(try await h.status(of: id) == "paid")                         // … but never applied
        #expect(try await count(h.store, "till_notifications", where: "outcome = 'stale' AND attempt_reference = '\(attempt)'") == 1)
    }

    @Test("tampered and unsigned notifications are rejected and store nothing; the claimed attempt is inquired",
          arguments: StoreKind.available)
    func tampered(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        let fake = h.gateway(gateway)
        var forged = fake.signedNotification(for: StatusReport(gateway: gateway, attempt: attempt, status: .failed, eventID: "evt-x"))
        forged.body = Data(String(decoding: forged.body, as: UTF8.self).replacingOccurrences(of: "failed", with: "paid").utf8)
        let rejected = try await h.notify(forged, gateway: gateway)
        #expect(rejected.status == 401)
        #expect(rejected.errorCode == "signature_mismatch")
        var unsigned = forged
        unsigned.headers["x-fake-signature"] = nil
        #expect(try await h.notify(unsigned, gateway: gateway).status == 401)
        #expect(try await h.send("POST", "v1/notifications/fake", body: Data("not json".utf8), key: .some(nil)).status == 401)
        #expect(try await h.send("POST", "v1/notifications/nosuch", body: Data("{}".utf8), key: .some(nil)).status == 404)
        #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt)'") == 0)
        #expect(try await h.status(of: id) == "pending")

        // The gateway really did charge, silently: the rejected notification makes the server ask.
        await fake.ledger.enqueue([FakeAttemptPlan(.approve, notification: .never)])
        _ = try await fake.settle(attempt, as: .paid)
        #expect(try await h.notify(forged, gateway: gateway).status == 401)
        var settled = false
        for _ in 0..<100 where !settled {
            settled = try await h.status(of: id) == "paid"
            if !settled { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(settled, "the inquiry after a rejected notification should have found the payment paid")
    }

    @Test("a retryable decline lets the next prepare cascade; a final one does not", arguments: StoreKind.available)
    func cascadeAcrossPrepares(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"])
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        #expect(gateway == "first")
        let soft = h.gateway(gateway).signedNotification(for: StatusReport(gateway: gateway, attempt: attempt, status: .failed,
                                                                            gatewayCode: "soft", eventID: "e-soft"))
        #expect(try await h.notify(soft, gateway: gateway).status == 200)
        #expect(try await h.status(of: id) == "failed")
        let next = try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        #expect(next.status == 201)
        #expect(next.json["gateway"] as? String == "second")

        let (other, otherAttempt, otherGateway) = try await h.createAndPrepare()
        let hard = h.gateway(otherGateway).signedNotification(for: StatusReport(gateway: otherGateway, attempt: otherAttempt,
                                                                                 status: .failed, gatewayCode: "05", eventID: "e-hard"))
        #expect(try await h.notify(hard, gateway: otherGateway).status == 200)
        let refused = try await h.send("POST", "v1/payments/\(other)/attempts", json: "{}")
        #expect(refused.status == 409)
        #expect(refused.errorCode == "not_retryable")
    }

    @Test("an app checks out through the real server: card and wallet, each confirmed by the gateway's notification",
          arguments: StoreKind.available)
    func endToEnd(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let gateway = h.gateway("fake")
        let backend = ClientSecretBackend(merchant: MerchantAPIClient(baseURL: h.baseURL, apiKey: h.apiKey, transport: URLSessionTransport()),
                                          transport: URLSessionTransport())
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let app = AppCheckout(backend: backend, gateways: [gateway], returns: returns,
                              presenter: SimulatedCustomer(gateway: gateway, returns: returns),
                              returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(20))
        let usd = Currency.lookup("USD")!

        let card = try await app.pay(PaymentIntent(merchantReference: "e2e-card-\(UUID().uuidString.prefix(6))",
                                                   amount: Money(minorUnits: 1999, currency: usd), method: .card))
        #expect(card.status == .paid)
        #expect(card.clientOutcome.kind == .succeeded)

        await gateway.ledger.enqueue([.walletHandoff])
        let wallet = try await app.pay(PaymentIntent(merchantReference: "e2e-wallet-\(UUID().uuidString.prefix(6))",
                                                     amount: Money(minorUnits: 888, currency: usd), method: .wechatPay))
        #expect(wallet.status == .paid)
        #expect(wallet.customerMayHaveAuthenticated)
        let payment = try await backend.status(of: wallet.preparation.attempt)
        #expect(payment?.status == .paid)
        #expect(await gateway.ledger.charges.count == 2)

        // A wrong secret is a configuration error for the app, with the server's code.
        let forged = try ClientSecret("\(try await backend.payment(of: wallet.preparation.attempt).id)_secret_\(String(repeating: "A", count: 43))")
        let stranger = HTTPMerchantBackend(baseURL: h.baseURL, clientSecret: forged, transport: URLSessionTransport())
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await stranger.prepare(PaymentIntent(merchantReference: "x", amount: Money(minorUnits: 1, currency: usd), method: .card),
                                           returnURL: nil)
        }
        #expect(error?.code.rawValue == "unauthorized")
        #expect(error?.category == .configuration)
    }

    @Test("metrics: payments created, notifications verified and rejected, payments by status, prepare latency")
    func metrics() async throws {
        let metrics = TestMetrics()
        let h = try await ServerHarness(.sqlite, metrics: metrics)
        defer { Task { await h.stop() } }
        let (_, attempt, gateway) = try await h.createAndPrepare()
        let good = h.gateway(gateway).signedNotification(for: StatusReport(gateway: gateway, attempt: attempt, status: .paid, amount: ServerHarness.amount, eventID: "m1"))
        var bad = good
        bad.headers["x-fake-signature"] = "00"
        #expect(try await h.notify(good, gateway: gateway).status == 200)
        #expect(try await h.notify(bad, gateway: gateway).status == 401)
        #expect(try metrics.expectCounter("till_payments_created_total", [("merchant", h.merchant)]).totalValue == 1)
        #expect(try metrics.expectCounter("till_notifications_total", [("gateway", "fake"), ("result", "verified")]).totalValue == 1)
        #expect(try metrics.expectCounter("till_notifications_total", [("gateway", "fake"), ("result", "rejected")]).totalValue == 1)
        #expect(try metrics.expectCounter("till_payment_status_total", [("status", "paid")]).totalValue == 1)
        #expect(try metrics.expectTimer("till_prepare_duration", [("gateway", "fake")]).values.count == 1)
    }

    @Test("a notification signed for one gateway cannot settle another gateway's attempt", arguments: StoreKind.available)
    func crossGateway(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"])
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        #expect(gateway == "first")
        // Genuinely signed by "second" (same secret in this harness), naming first's attempt.
        let other = h.gateway("second").signedNotification(for: StatusReport(gateway: "second", attempt: attempt, status: .paid,
                                                                             amount: ServerHarness.amount, eventID: "cross"))
        // Verified, but about no attempt of this merchant on that gateway: quarantined (acknowledged so the
        // gateway stops retrying), visible through the API, applied to nothing.
        #expect(try await h.notify(other, gateway: "second").status == 200)
        #expect(try await h.status(of: id) == "pending")
        let quarantine = try await h.send("GET", "v1/quarantine")
        let kept = try #require(try JSONSerialization.jsonObject(with: quarantine.body) as? [[String: Any]])
        #expect(kept.contains { $0["attempt"] as? String == attempt.rawValue && $0["eventID"] as? String == "cross" })
    }

    @Test("a stuck attempt is settled on demand by inquiry", arguments: StoreKind.available)
    func inquireEndpoint(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        await h.gateway("fake").ledger.enqueue([FakeAttemptPlan(.approve, notification: .never)])
        let (id, attempt, gateway) = try await h.createAndPrepare()
        _ = try await h.gateway(gateway).settle(attempt, as: .paid)     // charged, notification lost
        #expect(try await h.status(of: id) == "pending")
        let answer = try await h.send("POST", "v1/attempts/\(attempt)/inquire", json: "{}")
        #expect(answer.status == 200)
        #expect(answer.json["status"] as? String == "paid")
    }

    @Test("a gateway timeout during prepare leaves the attempt open and says the outcome is unknown; a refused one moves on",
          arguments: StoreKind.available)
    func prepareFailures(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"])
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-timeout"))
        let id = try #require(created.json["id"] as? String)
        await h.gateway("first").ledger.enqueue([FakeAttemptPlan(.failPrepare(.timedOut))])
        let timedOut = try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        #expect(timedOut.status == 502)
        #expect((timedOut.json["error"] as? [String: Any])?["category"] as? String == "unknown_outcome")
        #expect(try await h.status(of: id) == "pending")
        #expect(try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}").errorCode == "attempt_in_progress")

        let other = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-refused"))
        let otherID = try #require(other.json["id"] as? String)
        await h.gateway("first").ledger.enqueue([FakeAttemptPlan(.failPrepare(.notSent))])
        let refused = try await h.send("POST", "v1/payments/\(otherID)/attempts", json: "{}")
        #expect((refused.json["error"] as? [String: Any])?["category"] as? String == "unavailable")
        let next = try await h.send("POST", "v1/payments/\(otherID)/attempts", json: "{}")
        #expect(next.status == 201)
        #expect(next.json["gateway"] as? String == "second")
    }

    @Test("a missing secret stops the server from starting, naming the field and never a value")
    func missingSecrets() throws {
        let configuration = TillConfiguration(merchants: [MerchantConfiguration(
            id: "m", apiKey: CredentialReference(env: "NOPE_KEY"),
            gateways: [GatewayConfiguration(id: "g", module: "fake", credentials: ["notification_secret": CredentialReference(env: "NOPE_SECRET")])])])
        do {
            _ = try ServerState(configuration: configuration, plugins: [FakeGateway.plugin], environment: ["OTHER": "value-not-to-leak"])
            Issue.record("started without secrets")
        } catch let error as StartupError {
            #expect(error.problems.contains { $0.contains("merchants[0].apiKey") && $0.contains("NOPE_KEY") })
            #expect(error.problems.contains { $0.contains("merchants[0].gateways[0].credentials.notification_secret") })
            #expect(!error.description.contains("value-not-to-leak"))
        }
    }
}
