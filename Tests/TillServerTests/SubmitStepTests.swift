import Foundation
import Testing
import Till
@testable import TillServer
import TillTesting

/// The submit step, SDK results and endpoint verification through the real server over loopback HTTP,
/// against the fake gateway: `POST /v1/attempts/{ref}/submit`, `GET /v1/notifications/{gateway}`.
@Suite("Merchant server: submit step, SDK results, endpoint verification")
struct SubmitStepTests {
    func app(_ h: ServerHarness, choice: SimulatedCustomer.Choice = .pay) throws -> AppCheckout {
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let backend = ClientSecretBackend(merchant: MerchantAPIClient(baseURL: h.baseURL, apiKey: h.apiKey, transport: URLSessionTransport()),
                                          transport: URLSessionTransport())
        return AppCheckout(backend: backend, gateways: h.gateways, returns: returns,
                           presenter: SimulatedCustomer(gateway: h.gateways[0], returns: returns, choice: choice),
                           // Generous: the SDK's in-process answer races the return wait, and on a loaded 2-core CI
                           // machine the fake SDK's notification to the server took longer than 2 s.
                           returnTimeout: .seconds(10), confirmationTimeout: .seconds(10), confirmationInterval: .milliseconds(20),
                           maxAttempts: 3)
    }

    static func intent(_ method: PaymentMethod = .card) -> PaymentIntent {
        PaymentIntent(merchantReference: "order-\(UUID().uuidString.prefix(8))", amount: Money(minorUnits: 2500, currency: Currency.lookup("USD")!),
                      method: method)
    }

    @Test("Prepare → form → submit → server calls the gateway → paid, charged once", arguments: StoreKind.available)
    func submitPaid(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, flow: .submit)
        defer { Task { await h.stop() } }
        let result = try await app(h).pay(Self.intent())
        #expect(result.status == .paid)
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(await h.gateway("fake").ledger.charges.count == 1)
        let attempt = try await h.send("GET", "v1/attempts/\(result.preparation.attempt.rawValue)")
        let view = try #require((attempt.json["attempts"] as? [[String: Any]])?.first)
        #expect(view["submitted"] as? Bool == true)
    }

    @Test("a declined submit: 402 with the decline's category, the attempt failed with the gateway's code", arguments: StoreKind.available)
    func submitDeclined(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, flow: .submit)
        defer { Task { await h.stop() } }
        await h.gateway("fake").ledger.enqueue([.hardDecline(code: "hard")])
        let result = try await app(h).pay(Self.intent())
        #expect(result.status == .failed)
        #expect(result.confirmed?.gatewayCode == "hard")
        #expect(await h.gateway("fake").ledger.charges.isEmpty)
    }

    @Test("submitted once: a replayed submit is 409 and never reaches the gateway", arguments: StoreKind.available)
    func submitOnce(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, flow: .submit)
        defer { Task { await h.stop() } }
        let (_, attempt, _) = try await h.createAndPrepare()
        let sealed = String(repeating: "ab", count: 32)
        let body = #"{"kind":"sealed_card","fields":{"sealed":"\#(sealed)"}}"#
        let first = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/submit", json: body)
        #expect(first.status == 200, "\(String(decoding: first.body, as: UTF8.self))")
        #expect((first.json["next"] as? [String: Any])?["type"] as? String == "completed")
        let again = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/submit", json: body)
        #expect(again.status == 409)
        #expect(again.errorCode == "already_submitted")
        #expect(await h.gateway("fake").ledger.charges.count == 1)
    }

    @Test("a submit that never reached the gateway closes the attempt, so the next one may cascade", arguments: StoreKind.available)
    func submitNeverSentCascades(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"], flow: .submit)
        defer { Task { await h.stop() } }
        await h.gateway("first").ledger.enqueue([.timeoutBeforeSending])
        let result = try await app(h).pay(Self.intent())
        #expect(result.status == .paid)
        #expect(result.attempts == 2)
        #expect(result.preparation.gateway == "second")
        #expect(await h.gateway("first").ledger.charges.isEmpty)
    }

    @Test("a submit whose answer was lost stays pending (no cascade); the inquiry settles it paid", arguments: StoreKind.available)
    func submitUnknownInquired(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"], flow: .submit)
        defer { Task { await h.stop() } }
        await h.gateway("first").ledger.enqueue([FakeAttemptPlan(.timeoutAfterCharging, notification: .never)])
        let result = try await app(h).pay(Self.intent())
        #expect(result.clientOutcome.kind == .unknown)
        #expect(result.attempts == 1)
        let inquired = try await h.send("POST", "v1/attempts/\(result.preparation.attempt.rawValue)/inquire")
        #expect(inquired.json["status"] as? String == "paid")
        #expect(await h.gateway("first").ledger.charges.count == 1)
        #expect(await h.gateway("second").ledger.charges.isEmpty)
    }

    @Test("bad submissions are refused naming the field; unknown attempts are 404", arguments: StoreKind.available)
    func badSubmissions(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, flow: .submit)
        defer { Task { await h.stop() } }
        let (_, attempt, _) = try await h.createAndPrepare()
        let path = "v1/attempts/\(attempt.rawValue)/submit"
        let noKind = try await h.send("POST", path, json: #"{"kind":"","fields":{}}"#)
        #expect(noKind.status == 400)
        #expect(noKind.errorField == "body.kind")
        let wrongType = try await h.send("POST", path, json: #"{"kind":"sealed_card","fields":{"sealed":5}}"#)
        #expect(wrongType.status == 400)
        #expect(wrongType.errorField?.hasPrefix("body.fields") == true)
        let huge = try await h.send("POST", path, json: #"{"kind":"sealed_card","fields":{"sealed":"\#(String(repeating: "a", count: 40_000))"}}"#)
        #expect([400, 413].contains(huge.status))
        let junk = try await h.send("POST", path, json: #"{"kind":"sealed_card","fields":{"sealed":"not-hex"}}"#)
        #expect(junk.status == 422)
        #expect(junk.errorField == "submission.fields.sealed")
        let unknown = try await h.send("POST", "v1/attempts/nosuchattempt000000000000/submit",
                                       json: #"{"kind":"sealed_card","fields":{"sealed":"x"}}"#)
        #expect(unknown.status == 404)
        let anonymous = try await h.send("POST", path, json: #"{"kind":"sealed_card","fields":{}}"#, key: .some(nil))
        #expect(anonymous.status == 401)
    }

    @Test("an SDK's in-process result, through the real server: paid", arguments: StoreKind.available)
    func sdkFlow(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, flow: .sdk)
        defer { Task { await h.stop() } }
        let result = try await app(h).pay(Self.intent(.alipay))
        #expect(result.clientOutcome.gatewayCode == "0")
        #expect(result.status == .paid)
        #expect(result.customerMayHaveAuthenticated)
    }

    @Test("endpoint verification: the gateway's challenge is echoed; anything else is 404; nothing is stored", arguments: StoreKind.available)
    func endpointVerification(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let challenge = "challenge-\(UUID().uuidString)"
        let answered = try await h.send("GET", "v1/notifications/fake", key: .some(nil), headers: ["X-Fake-Challenge": challenge])
        #expect(answered.status == 200)
        #expect(String(decoding: answered.body, as: UTF8.self) == challenge)
        let plain = try await h.send("GET", "v1/notifications/fake", key: .some(nil))
        #expect(plain.status == 404)
        let other = try await h.send("GET", "v1/notifications/nosuchgateway", key: .some(nil), headers: ["X-Fake-Challenge": "x"])
        #expect(other.status == 404)
        #expect(try await count(h.store, "till_notifications", where: "headers_json LIKE '%\(challenge)%'") == 0)
    }
}
