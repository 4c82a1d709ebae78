import Foundation
import Testing
import Till
@testable import TillServer
import TillTesting

/// Two merchants on one server and one store: merchant A's credentials (its API key, its gateway's
/// notification secret) never reach merchant B's payments.
@Suite("Attacks: one merchant's credentials against another merchant's payments")
struct CrossMerchantAttackTests {
    @Test("merchant A's API key cannot read, prepare, submit, report on or inquire merchant B's payment or attempt: 404 every time, nothing of B's in the answer, B unchanged",
          arguments: StoreKind.available)
    func apiKeyAcrossMerchants(kind: StoreKind) async throws {
        let s = try await TwoMerchantServer(kind)
        defer { Task { await s.stop() } }
        let (payment, attempt) = try await s.createAndPrepare(as: s.b, minor: 4_200)
        let before = try await s.send("GET", "v1/payments/\(payment)", as: s.b)
        #expect(before.status == 200)

        let sealed = String(repeating: "ab", count: 32)
        let attacks: [(String, String, String?)] = [
            ("GET", "v1/payments/\(payment)", nil),
            ("POST", "v1/payments/\(payment)/attempts", "{}"),
            ("POST", "v1/payments/\(payment)/attempts", #"{"customerRequested":true}"#),
            ("GET", "v1/attempts/\(attempt.rawValue)", nil),
            ("POST", "v1/attempts/\(attempt.rawValue)/inquire", "{}"),
            ("POST", "v1/attempts/\(attempt.rawValue)/submit", #"{"kind":"sealed_card","fields":{"sealed":"\#(sealed)"}}"#),
            ("POST", "v1/attempts/\(attempt.rawValue)/outcome", #"{"kind":"succeeded","gatewayCode":"0"}"#),
        ]
        for (method, path, json) in attacks {
            let answer = try await s.send(method, path, json: json, as: s.a)
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(answer.status == 404, "\(method) \(path): HTTP \(answer.status) \(text)")
            #expect(!text.contains(payment) && !text.contains(attempt.rawValue) && !text.contains(s.b.id) && !text.contains("4200"),
                    "\(method) \(path) leaked B's data: \(text)")
        }
        // B sees its payment exactly as before: one attempt, still pending, no client outcome recorded.
        let after = try await s.send("GET", "v1/payments/\(payment)", as: s.b)
        #expect(after.json["status"] as? String == "pending")
        let attempts = try #require(after.json["attempts"] as? [[String: Any]])
        #expect(attempts.count == 1 && attempts.first?["clientOutcome"] == nil && attempts.first?["submittedAt"] == nil)
        #expect(try await count(s.store, "till_attempts", where: "payment_id = '\(payment)'") == 1)
    }

    @Test("a notification verified with merchant A's gateway secret naming merchant B's attempt is quarantined under A: acknowledged, B stays pending, nothing of B's stored",
          arguments: StoreKind.available)
    func notificationAcrossMerchants(kind: StoreKind) async throws {
        let s = try await TwoMerchantServer(kind)
        defer { Task { await s.stop() } }
        let (payment, attempt) = try await s.createAndPrepare(as: s.b)
        // Signed with A's secret (A's gateway account), about B's attempt, with B's exact amount.
        let forged = s.a.gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: attempt, status: .paid,
                                                                      amount: ServerHarness.amount, eventID: "cross-merchant"))
        let answer = try await s.send("POST", "v1/notifications/fake", body: forged.body, as: nil,
                                      headers: forged.headers.filter { $0.key != "content-type" })
        #expect(answer.status == 200)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await s.send("GET", "v1/payments/\(payment)", as: s.b).json["status"] as? String == "pending")
        #expect(try await count(s.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)'") == 0)
        func quarantine(_ merchant: TwoMerchantServer.Merchant) async throws -> [[String: Any]] {
            let listed = try await s.send("GET", "v1/quarantine", as: merchant)
            return try #require(try JSONSerialization.jsonObject(with: listed.body) as? [[String: Any]])
        }
        #expect(try await quarantine(s.a).contains { $0["attempt"] as? String == attempt.rawValue && $0["eventID"] as? String == "cross-merchant" })
        #expect(try await quarantine(s.b).isEmpty)
        // The same message signed with B's own secret is B's, and applies: the quarantine was about whose secret, not the content.
        let genuine = s.b.gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: attempt, status: .paid,
                                                                       amount: ServerHarness.amount, eventID: "own"))
        #expect(try await s.send("POST", "v1/notifications/fake", body: genuine.body, as: nil,
                                 headers: genuine.headers.filter { $0.key != "content-type" }).status == 200)
        #expect(try await s.send("GET", "v1/payments/\(payment)", as: s.b).json["status"] as? String == "paid")
    }

    @Test("two merchants on one gateway account: a genuine notification about B's attempt applies to B (not quarantined under A), and one about A's to A",
          arguments: StoreKind.available)
    func sharedGatewayAccount(kind: StoreKind) async throws {
        let s = try await TwoMerchantServer(kind, sharedAccount: true)
        defer { Task { await s.stop() } }
        func quarantine(_ merchant: TwoMerchantServer.Merchant) async throws -> [[String: Any]] {
            let listed = try await s.send("GET", "v1/quarantine", as: merchant)
            return try #require(try JSONSerialization.jsonObject(with: listed.body) as? [[String: Any]])
        }
        for (owner, name) in [(s.b, "b"), (s.a, "a")] {
            let (payment, attempt) = try await s.createAndPrepare(as: owner)
            // The account's one secret signs it: both merchants' gateways verify it.
            let genuine = s.a.gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: attempt, status: .paid,
                                                                           amount: ServerHarness.amount, eventID: "shared-\(name)"))
            let answer = try await s.send("POST", "v1/notifications/fake", body: genuine.body, as: nil,
                                          headers: genuine.headers.filter { $0.key != "content-type" })
            #expect(answer.status == 200)
            #expect(try await s.send("GET", "v1/payments/\(payment)", as: owner).json["status"] as? String == "paid", "\(name)")
        }
        let (quarantinedA, quarantinedB) = (try await quarantine(s.a), try await quarantine(s.b))
        #expect(quarantinedA.isEmpty && quarantinedB.isEmpty)
        // A verified notification about an attempt nobody has is still quarantined, once, under the first merchant.
        let unknown = s.a.gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: AttemptReference.generate(), status: .paid,
                                                                       amount: ServerHarness.amount, eventID: "nobody"))
        #expect(try await s.send("POST", "v1/notifications/fake", body: unknown.body, as: nil,
                                 headers: unknown.headers.filter { $0.key != "content-type" }).status == 200)
        let (afterA, afterB) = (try await quarantine(s.a), try await quarantine(s.b))
        #expect(afterA.count + afterB.count == 1)
    }

    @Test("merchant A sending merchant B's idempotency key and merchant reference gets a payment of its own, never a replay of B's",
          arguments: StoreKind.available)
    func idempotencyKeyAcrossMerchants(kind: StoreKind) async throws {
        let s = try await TwoMerchantServer(kind)
        defer { Task { await s.stop() } }
        let key = ["Idempotency-Key": "shared-\(UUID().uuidString)"]
        let ofB = try await s.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-shared", minor: 9_999), as: s.b, headers: key)
        #expect(ofB.status == 201)
        let idOfB = try #require(ofB.json["id"] as? String)
        // The same key with B's exact body: a new payment of A's own, not a replay of B's.
        let ofA = try await s.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-shared", minor: 9_999), as: s.a, headers: key)
        #expect(ofA.status == 201 && ofA.headers["idempotent-replayed"] == nil)
        #expect(ofA.json["id"] as? String != idOfB && !String(decoding: ofA.body, as: UTF8.self).contains(idOfB))
        // From now on the key is A's too, each merchant's bound to its own request.
        let conflict = try await s.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-shared", minor: 1), as: s.a, headers: key)
        #expect(conflict.status == 409 && conflict.errorCode == "idempotency_conflict")
        let replayOfB = try await s.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-shared", minor: 9_999), as: s.b, headers: key)
        #expect(replayOfB.status == 200 && replayOfB.json["id"] as? String == idOfB)
        #expect(try await count(s.store, "till_payments", where: "merchant_id = '\(s.b.id)'") == 1)
        #expect(try await count(s.store, "till_payments", where: "merchant_id = '\(s.a.id)'") == 1)
    }
}
