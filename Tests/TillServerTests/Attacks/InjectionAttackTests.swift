import Crypto
import Foundation
import Testing
import Till
import TillGatewayKit
@testable import TillServer
import TillTesting

/// SQL in every string an app or a gateway controls reaches the store as data: ids and references in
/// paths, the merchant reference, the idempotency key, free text, a notification's attempt field.
@Suite("Attacks: SQL injection through ids, references, idempotency keys and notifications")
struct InjectionAttackTests {
    static let payloads = [
        "' OR '1'='1",
        "x'; DROP TABLE till_payments; --",
        "\" OR \"\"=\"",
        "1; DELETE FROM till_attempts",
        "%' OR 1=1 --",
        "x' UNION SELECT merchant_id, id FROM till_payments --",
        "'); UPDATE till_payments SET status = 'paid'; --",
    ]

    @Test("SQL in payment ids, attempt references, merchant references, idempotency keys, free text and a signed notification's attempt field is data: nothing read, nothing changed",
          arguments: StoreKind.available)
    func sqlIsData(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (payment, attempt, gateway) = try await h.createAndPrepare()
        let sealed = String(repeating: "ab", count: 32)
        for (n, payload) in Self.payloads.enumerated() {
            // In paths: no such payment or attempt.
            for (method, path, json) in [
                ("GET", "v1/payments/\(payload)", nil), ("POST", "v1/payments/\(payload)/attempts", "{}"),
                ("GET", "v1/attempts/\(payload)", nil), ("POST", "v1/attempts/\(payload)/inquire", "{}"),
                ("POST", "v1/attempts/\(payload)/outcome", #"{"kind":"succeeded"}"#),
                ("POST", "v1/attempts/\(payload)/submit", #"{"kind":"sealed_card","fields":{"sealed":"\#(sealed)"}}"#),
            ] as [(String, String, String?)] {
                let answer = try await h.send(method, path, json: json)
                #expect(answer.status == 404, "\(method) \(path): HTTP \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            }
            // As a merchant reference: refused by its format before any query.
            let reference = try JSONSerialization.data(withJSONObject: ["merchantReference": payload, "method": "card",
                                                                        "amount": ["value": 100, "currency": "USD"]])
            let refused = try await h.send("POST", "v1/payments", body: reference)
            #expect(refused.status == 400 && refused.errorField == "body.merchantReference")
            // As an idempotency key and as free text: stored and replayed as the exact text.
            let body = try JSONSerialization.data(withJSONObject: [
                "merchantReference": "inj-\(n)", "method": "card", "amount": ["value": 100, "currency": "USD"],
                "description": payload, "metadata": ["note": payload],
            ] as [String: Any])
            let created = try await h.send("POST", "v1/payments", body: body, headers: ["Idempotency-Key": payload])
            #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
            let replayed = try await h.send("POST", "v1/payments", body: body, headers: ["Idempotency-Key": payload])
            #expect(replayed.status == 200 && replayed.json["id"] as? String == created.json["id"] as? String)
            #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)' AND merchant_reference = 'inj-\(n)'") == 1)
            // In a notification genuinely signed by the gateway: about no attempt of this merchant, so quarantined.
            let signed = h.gateway(gateway).signedNotification(for: StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: payload),
                                                                                 status: .paid, amount: ServerHarness.amount, eventID: payload))
            #expect(try await h.notify(signed, gateway: gateway).status == 200)
        }
        // Everything is where it was: the first payment pending with its one attempt, one payment per
        // created request, every table still there.
        #expect(try await h.status(of: payment) == "pending")
        #expect(try await count(h.store, "till_attempts", where: "reference = '\(attempt.rawValue)' AND status = 'pending'") == 1)
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 1 + Self.payloads.count)
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)' AND status = 'paid'") == 0)
        for table in ["till_payments", "till_attempts", "till_notifications", "till_idempotency_keys"] {
            #expect(try await count(h.store, table) >= 0, "\(table) is gone")
        }
        let quarantine = try await h.send("GET", "v1/quarantine")
        let kept = try #require(try JSONSerialization.jsonObject(with: quarantine.body) as? [[String: Any]])
        #expect(Set(kept.compactMap { $0["attempt"] as? String }).isSuperset(of: Self.payloads))
    }
}
