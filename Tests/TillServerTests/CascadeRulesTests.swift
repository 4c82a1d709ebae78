import Foundation
import Testing
import Till
@testable import TillServer
import TillTesting

/// When production moves a payment to another gateway, and when it does not: the server over loopback
/// HTTP, fake gateways with ledgers, every rule of the attempt policy that a cascade depends on.
@Suite("Merchant server: cascade rules through production")
struct CascadeRulesTests {
    func prepare(_ h: ServerHarness, _ id: String) async throws -> ServerHarness.Answer {
        try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}")
    }

    @Test("a step-up decline goes back to the app; an unlisted code is never retried", arguments: StoreKind.everyStore)
    func stepUpAndUnlisted(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"])
        defer { Task { await h.stop() } }
        for (code, refusal) in [("3ds_required", "needs_customer"), ("do_not_honour", "not_retryable")] {
            let id = try await h.createPaymentID("order-\(code)")
            let first = try await prepare(h, id)
            let attempt = AttemptReference(rawValue: try #require(first.json["attempt"] as? String))
            _ = try await h.gateway("first").settle(attempt, as: .failed, code: code)
            #expect(try await h.status(of: id) == "failed")
            let next = try await prepare(h, id)
            #expect(next.status == 409)
            #expect(next.errorCode == refusal)
        }
    }

    @Test("a charge whose answer was lost is inquired, never cascaded: paid once", arguments: StoreKind.everyStore)
    func lostAnswer(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"], flow: .submit)
        defer { Task { await h.stop() } }
        await h.gateway("first").ledger.enqueue([FakeAttemptPlan(.timeoutAfterCharging, notification: .never)])
        let (id, attempt, _) = try await h.createAndPrepare()
        let submitted = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/submit",
                                         json: #"{"kind":"sealed_card","fields":{"sealed":"\#(String(repeating: "cd", count: 32))"}}"#)
        #expect(submitted.status == 502)
        #expect((submitted.json["error"] as? [String: Any])?["category"] as? String == "unknown_outcome")
        #expect(try await prepare(h, id).errorCode == "attempt_in_progress")
        #expect(try await h.send("POST", "v1/attempts/\(attempt.rawValue)/inquire").json["status"] as? String == "paid")
        #expect(try await prepare(h, id).errorCode == "already_paid")
        #expect(await h.gateway("first").ledger.charges.count == 1)
        #expect(await h.gateway("second").ledger.charges.isEmpty)
    }

    @Test("a request the gateway has not seen yet stays open: inquiry says not found, no cascade", arguments: StoreKind.everyStore)
    func delayedRequest(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"], flow: .submit)
        defer { Task { await h.stop() } }
        await h.gateway("first").ledger.enqueue([FakeAttemptPlan(.delayedCharge, notification: .never)])
        let (id, attempt, _) = try await h.createAndPrepare()
        _ = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/submit",
                             json: #"{"kind":"sealed_card","fields":{"sealed":"\#(String(repeating: "ef", count: 32))"}}"#)
        let inquired = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/inquire")
        #expect(inquired.status == 502)
        #expect(inquired.errorCode == CheckoutError.Code.attemptNotFound.rawValue)
        #expect(try await h.status(of: id) == "pending")
        #expect(try await prepare(h, id).errorCode == "attempt_in_progress")
        // The gateway processes the delayed request after all: the inquiry settles it paid.
        _ = try await h.gateway("first").settle(attempt, as: .paid)
        #expect(try await h.send("POST", "v1/attempts/\(attempt.rawValue)/inquire").json["status"] as? String == "paid")
    }

    @Test("a 5xx with or without a charge is never cascaded on", arguments: StoreKind.everyStore)
    func serverErrors(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"], flow: .submit)
        defer { Task { await h.stop() } }
        await h.gateway("first").ledger.enqueue([FakeAttemptPlan(.serverError(charged: false), notification: .never)])
        let (id, attempt, _) = try await h.createAndPrepare()
        let submitted = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/submit",
                                         json: #"{"kind":"sealed_card","fields":{"sealed":"\#(String(repeating: "01", count: 32))"}}"#)
        #expect(submitted.status == 502)
        #expect(try await prepare(h, id).errorCode == "attempt_in_progress")
        #expect(await h.gateway("second").ledger.charges.isEmpty)
    }

    @Test("at most maxAttempts attempts; then none is left", arguments: StoreKind.everyStore)
    func maxAttempts(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second", "third"], maxAttempts: 2)
        defer { Task { await h.stop() } }
        let id = try await h.createPaymentID("order-max")
        for gateway in ["first", "second"] {
            let answer = try await prepare(h, id)
            #expect(answer.json["gateway"] as? String == gateway)
            let attempt = AttemptReference(rawValue: try #require(answer.json["attempt"] as? String))
            _ = try await h.gateway(GatewayID(rawValue: gateway)).settle(attempt, as: .failed, code: "soft")
        }
        #expect(try await prepare(h, id).errorCode == "attempts_exhausted")
    }

    @Test("every gateway tried: nothing left, a clear refusal", arguments: StoreKind.everyStore)
    func noneLeft(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["only"])
        defer { Task { await h.stop() } }
        let (id, attempt, _) = try await h.createAndPrepare()
        _ = try await h.gateway("only").settle(attempt, as: .failed, code: "soft")
        #expect(try await prepare(h, id).errorCode == "no_gateway_left")
    }
}
