import Foundation
import Testing
import Till
import TillOrchestration
@testable import TillServer
import TillTesting

/// The attempt policy as the real server applies it, over loopback HTTP.
@Suite("Merchant server: hand-offs, health probes and inquiry before a failed attempt turns paid")
struct AttemptPolicyServerTests {
    /// Creates a payment and prepares it; returns (payment id, attempt).
    func start(_ h: ServerHarness, reference: String = "order-\(UUID().uuidString.prefix(8))") async throws -> (String, AttemptReference) {
        let (id, attempt, _) = try await h.createAndPrepare(reference)
        return (id, attempt)
    }

    @Test("after a hand-off, a failed attempt is not followed automatically; only the customer's request starts another",
          arguments: StoreKind.everyStore)
    func handOffNeedsTheCustomer(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"])
        defer { Task { await h.stop() } }
        let (id, attempt) = try await start(h)
        // The app reports what it saw: the customer went to the wallet and it failed there.
        let report = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/outcome",
                                      json: #"{"kind":"failed","gatewayCode":"soft","handedOff":true}"#)
        #expect(report.status == 202)
        // The wallet's decline arrives, with a code the decision table would cascade on.
        let declined = h.gateway("first").signedNotification(for: StatusReport(gateway: "first", attempt: attempt, status: .failed,
                                                                                gatewayCode: "soft", eventID: "wallet-decline"))
        #expect(try await h.notify(declined, gateway: "first").status == 200)
        #expect(try await h.status(of: id) == "failed")

        let automatic = try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        #expect(automatic.status == 409)
        #expect(automatic.errorCode == "needs_customer")

        let chosen = try await h.send("POST", "v1/payments/\(id)/attempts", json: #"{"customerRequested":true}"#)
        #expect(chosen.status == 201, "\(String(decoding: chosen.body, as: UTF8.self))")
        let payment = try await h.send("GET", "v1/payments/\(id)")
        let attempts = try #require(payment.json["attempts"] as? [[String: Any]])
        #expect(attempts.count == 2)
        #expect(attempts[0]["handedOff"] as? Bool == true)
        #expect(attempts[1]["customerRequested"] as? Bool == true)
    }

    @Test("without a hand-off the same decline cascades automatically, as the decision table says", arguments: StoreKind.everyStore)
    func noHandOffCascades(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["first", "second"])
        defer { Task { await h.stop() } }
        let (id, attempt) = try await start(h)
        let declined = h.gateway("first").signedNotification(for: StatusReport(gateway: "first", attempt: attempt, status: .failed,
                                                                                gatewayCode: "soft", eventID: "decline"))
        #expect(try await h.notify(declined, gateway: "first").status == 200)
        let next = try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        #expect(next.status == 201)
        #expect(next.json["gateway"] as? String == "second")
    }

    @Test("a half-open probe that fails is released: the next period probes again, and a success closes the circuit",
          arguments: StoreKind.everyStore)
    func probeReleased(kind: StoreKind) async throws {
        let clock = VirtualClock()
        let h = try await ServerHarness(kind, gateways: ["solo"],
                                        health: HealthSettings(failureThreshold: 1, openMillis: 1_000, halfOpenProbes: 1), clock: clock)
        defer { Task { await h.stop() } }
        let health = try #require(h.state.merchants.first?.health)
        await h.gateway("solo").ledger.enqueue([FakeAttemptPlan(.failPrepare(.notSent)), FakeAttemptPlan(.failPrepare(.notSent)),
                                               FakeAttemptPlan(.approve)])
        // One failure opens the circuit.
        _ = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("probe-1"))
        let first = try await h.createPaymentID("probe-a")
        #expect(try await h.send("POST", "v1/payments/\(first)/attempts", json: "{}").status == 502)
        #expect(health.tier(of: "solo") == .open)
        // Half-open: the probe slot is free; the probe fails and re-opens the circuit for a period.
        clock.advance(by: .milliseconds(1_001))
        #expect(health.tier(of: "solo") == .healthy)
        let second = try await h.createPaymentID("probe-b")
        #expect(try await h.send("POST", "v1/payments/\(second)/attempts", json: "{}").status == 502)
        #expect(health.tier(of: "solo") == .open)
        // The failed probe gave its slot back: after the next period another probe may go (with the slot
        // leaked, the gateway would stay in the open tier until some attempt happened to succeed).
        clock.advance(by: .milliseconds(1_001))
        #expect(health.tier(of: "solo") == .healthy)
        #expect(health.attemptStarted(on: "solo"))
        health.record("solo", success: false, releasingProbe: true)
        clock.advance(by: .milliseconds(1_001))
        let third = try await h.createPaymentID("probe-c")
        #expect(try await h.send("POST", "v1/payments/\(third)/attempts", json: "{}").status == 201)
        #expect(health.tier(of: "solo") == .healthy)
        #expect(!health.summary(of: "solo").contains("open"))
    }

    @Test("a notification alone never turns a failed attempt paid: it is stored and the server asks the gateway",
          arguments: StoreKind.available)
    func failedToPaidNeedsInquiry(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["solo"])
        defer { Task { await h.stop() } }
        let (id, attempt) = try await start(h)
        let gateway = h.gateway("solo")
        // The gateway declines the attempt (and says so).
        _ = try await gateway.settle(attempt, as: .failed, code: "hard")
        #expect(try await h.status(of: id) == "failed")
        // A genuinely signed "paid" for the same attempt (a replayed or mistaken message): stored, not applied;
        // the server's own inquiry finds it failed, so it stays failed.
        let paid = gateway.signedNotification(for: StatusReport(gateway: "solo", attempt: attempt, status: .paid,
                                                                amount: ServerHarness.amount, eventID: "late-paid"))
        #expect(try await h.notify(paid, gateway: "solo").status == 200)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await h.status(of: id) == "failed")
        #expect(try await count(h.store, "till_notifications", where: "outcome = 'needs_inquiry' AND attempt_reference = '\(attempt)'") == 1)
    }
}

extension ServerHarness {
    /// Creates a payment and returns its id (no attempt).
    func createPaymentID(_ reference: String) async throws -> String {
        let created = try await send("POST", "v1/payments", json: Self.intentJSON(reference))
        return try #require(created.json["id"] as? String)
    }
}
