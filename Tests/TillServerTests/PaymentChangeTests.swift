import Foundation
import Testing
import Till
import TillService
import TillPayFort
import TillTesting
@testable import TillServer

/// PATCH /v1/payments/{id} and the checks around it, through the real server, as the review and the attack found
/// them: a change racing a prepare, a change after an attempt the gateway never closed, the app's data for a
/// gateway checked before an attempt is stored, a card number in a field's path.
@Suite("Changing a payment, and mistakes that cost nothing", .serialized)
struct PaymentChangeTests {
    @Test("a change between the prepare's read and its attempt makes the prepare fail: no attempt on an intent the store no longer holds",
          arguments: StoreKind.available)
    func changeRacingAPrepare(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8))", id = "pay_\(UUID().uuidString.prefix(12))"
        var intent = PaymentIntent(merchantReference: "race-1", amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!), method: .card,
                                   customer: Customer(email: "old@example.com"))
        guard case .created = try await store.create(intent, merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h") else {
            Issue.record("not created"); return
        }
        let read = try #require(try await store.payment(id: id, merchant: merchant))
        intent.customer.email = "new@example.com"
        _ = try await store.replaceIntent(intent, payment: id, merchant: merchant, expected: read.attempts)
        await #expect(throws: StoreError.self) {
            try await store.addAttempt(.generate(), payment: id, gateway: "g", expected: read.attempts, customerRequested: false, intent: read.intent)
        }
        // On the intent as it is now, the attempt is added.
        try await store.addAttempt(.generate(), payment: id, gateway: "g", expected: read.attempts, customerRequested: false, intent: intent)
        // And a change racing that attempt loses: the attempts it was decided on are no longer these.
        await #expect(throws: StoreError.self) {
            _ = try await store.replaceIntent(intent, payment: id, merchant: merchant, expected: read.attempts)
        }
        try await store.close()
    }

    @Test("a payment whose attempt the reconciler expired cannot be changed: that attempt's success may still come")
    func noChangeAfterExpiry() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        let report = StatusReport(gateway: gateway, attempt: attempt, status: .expired, gatewayCode: Reconciler.expiredAbandonedCode,
                                  eventID: "reconciler:\(attempt.rawValue):expired")
        _ = try await h.store.apply(report, source: .inquiry)
        let refused = try await h.send("PATCH", "v1/payments/\(id)", json: #"{"description":"later"}"#)
        #expect(refused.status == 409 && refused.errorCode == "payment_not_editable")
    }

    @Test("a card number typed as a metadata key is answered masked in the error's field, by create and by PATCH")
    func cardNumberInAFieldPath() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let long = String(repeating: "x", count: 3_000)
        let created = try await h.send("POST", "v1/payments", json: #"{"merchantReference":"m-1","amount":{"value":100,"currency":"USD"},"method":"card","metadata":{"4111111111111111":"\#(long)"}}"#)
        #expect(created.status >= 400 && created.errorField?.contains("4111111111111111") == false, "\(created.errorField ?? "-")")
        let id = try #require(try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("m-2")).json["id"] as? String)
        let patched = try await h.send("PATCH", "v1/payments/\(id)", json: #"{"metadata":{"4111111111111111":"\#(long)"}}"#)
        #expect(patched.status >= 400 && patched.errorField?.contains("4111111111111111") == false, "\(patched.errorField ?? "-")")
        #expect(patched.errorField?.contains("411111") == true)
    }

    @Test("the customer's IP address and locale are checked values, never free text")
    func ipAddressAndLocale() throws {
        func issues(ip: String? = nil, locale: String? = nil) -> [String] {
            PaymentIntent(merchantReference: "r", amount: Money(minorUnits: 1, currency: Currency.lookup("USD")!), method: .card,
                          customer: Customer(ipAddress: ip, locale: locale)).validate(path: "body").map(\.field)
        }
        for good in ["192.0.2.10", "2001:db8::1", "::1", "::ffff:192.0.2.1", "fe80::1:2:3:4"] { #expect(issues(ip: good).isEmpty, "\(good)") }
        for bad in ["4111111111111111", "256.1.1.1", "1.2.3", "hello", "1::2::3", "12345::1"] {
            #expect(issues(ip: bad) == ["body.customer.ipAddress"], "\(bad)")
        }
        for good in ["en", "ar-SA", "zh_Hans_CN"] { #expect(issues(locale: good).isEmpty, "\(good)") }
        for bad in ["4111 1111 1111 1111", "", String(repeating: "a", count: 36), "en;DROP"] {
            #expect(issues(locale: bad) == ["body.customer.locale"], "\(bad)")
        }
    }
}
