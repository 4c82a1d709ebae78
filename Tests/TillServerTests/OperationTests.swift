import Foundation
import Testing
import Till
import TillOrchestration
import TillService
@testable import TillServer
import TillTesting

/// Captures, voids and refunds through the real server over HTTP, on every store, against the fake gateway (which
/// keeps its own money rules and counts every request per operation reference, so a request sent twice shows).
@Suite("Operations: capture, void, refund")
struct OperationTests {
    /// A payment of 25.00 USD authorized (or, with `action: nil`, paid) at the fake; returns the payment, its attempt
    /// and the fake.
    static func authorized(_ h: ServerHarness, action: String? = "authorize") async throws -> (String, AttemptReference, FakeGateway) {
        let (id, attempt, gateway) = try await h.createAndPrepare(action: action)
        let fake = h.gateway(gateway)
        _ = try await fake.settle(attempt, as: .paid)
        try await waitFor(h, id, status: action == "authorize" ? "authorized" : "paid")
        return (id, attempt, fake)
    }

    static func waitFor(_ h: ServerHarness, _ id: String, status: String) async throws {
        for _ in 0..<200 {
            if try await h.status(of: id) == status { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("payment \(id) never became \(status) (is \(try await h.status(of: id) ?? "?"))")
    }

    static func operate(_ h: ServerHarness, _ id: String, _ route: String, minor: Int? = nil, final: Bool? = nil,
                        key: String = UUID().uuidString) async throws -> ServerHarness.Answer {
        var fields: [String] = []
        if let minor { fields.append(#""amount":{"value":\#(minor),"currency":"USD"}"#) }
        if let final { fields.append(#""final":\#(final)"#) }
        return try await h.send("POST", "v1/payments/\(id)/\(route)", json: "{\(fields.joined(separator: ","))}", headers: ["Idempotency-Key": key])
    }

    @Test("an authorization captured in two parts, refunded in part then the rest; every limit is a 409", arguments: StoreKind.available)
    func captureTwiceRefundTwice(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, fake) = try await Self.authorized(h)

        let refundEarly = try await Self.operate(h, id, "refunds")
        #expect(refundEarly.status == 409 && refundEarly.errorCode == "nothing_captured")
        let first = try await Self.operate(h, id, "captures", minor: 1000)
        #expect(first.status == 201, "\(String(decoding: first.body, as: UTF8.self))")
        #expect(first.json["id"] as? String == "\(attempt.rawValue)-c1")
        #expect(first.json["status"] as? String == "succeeded")
        #expect(try await h.status(of: id) == "paid")
        let over = try await Self.operate(h, id, "captures", minor: 1501)
        #expect(over.status == 409 && over.errorCode == "amount_exceeds_authorized" && over.errorField == "body.amount.value")
        let void = try await Self.operate(h, id, "voids")
        #expect(void.status == 409 && void.errorCode == "already_captured")
        let rest = try await Self.operate(h, id, "captures", final: true)     // no amount: the rest, 15.00
        #expect(rest.status == 201)
        #expect((rest.json["amount"] as? [String: Any])?["value"] as? Int == 1500)
        #expect(try await Self.operate(h, id, "captures", minor: 1).errorCode == "capture_final")

        let partial = try await Self.operate(h, id, "refunds", minor: 700)
        #expect(partial.status == 201)
        #expect(try await h.status(of: id) == "partially_refunded")
        let tooMuch = try await Self.operate(h, id, "refunds", minor: 1801)
        #expect(tooMuch.status == 409 && tooMuch.errorCode == "amount_exceeds_captured")
        let remainder = try await Self.operate(h, id, "refunds")
        #expect(remainder.status == 201)
        #expect((remainder.json["amount"] as? [String: Any])?["value"] as? Int == 1800)
        #expect(try await h.status(of: id) == "refunded")
        #expect(try await Self.operate(h, id, "refunds", minor: 1).errorCode == "already_refunded")

        let view = try await h.send("GET", "v1/payments/\(id)")
        let operations = try #require(view.json["operations"] as? [[String: Any]])
        #expect(operations.map { $0["id"] as? String } == ["c1", "c2", "r1", "r2"].map { "\(attempt.rawValue)-\($0)" })
        #expect((view.json["amountCaptured"] as? [String: Any])?["value"] as? Int == 2500)
        #expect((view.json["amountRefunded"] as? [String: Any])?["value"] as? Int == 2500)
        let refund = try await h.send("GET", "v1/refunds/\(attempt.rawValue)-r1")
        #expect(refund.status == 200 && refund.json["status"] as? String == "succeeded")
        #expect(try await h.send("GET", "v1/refunds/\(attempt.rawValue)-c1").status == 404)
        // The gateway saw each operation once, and its own ledger agrees with Till's.
        let money = await fake.ledger.moneyOf(attempt)
        #expect(money.captured == 2500 && money.refunded == 2500)
        #expect(await fake.ledger.operations.values.allSatisfy { $0.requests == 1 })
    }

    @Test("a void releases an authorization; nothing can be captured or refunded after it", arguments: StoreKind.available)
    func void(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, _, _) = try await Self.authorized(h)
        let amount = try await h.send("POST", "v1/payments/\(id)/voids", json: #"{"amount":{"value":100,"currency":"USD"}}"#,
                                      headers: ["Idempotency-Key": "v"])
        #expect(amount.status == 400 && amount.errorField == "body.amount")
        let void = try await Self.operate(h, id, "voids")
        #expect(void.status == 201)
        #expect(try await h.status(of: id) == "cancelled")
        #expect(try await Self.operate(h, id, "captures").errorCode == "not_authorized")
        #expect(try await Self.operate(h, id, "refunds").errorCode == "nothing_captured")
        #expect(try await Self.operate(h, id, "voids").errorCode == "not_authorized")
    }

    @Test("a sale is refunded; a capture of a sale is refused", arguments: StoreKind.available)
    func saleRefund(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, _, _) = try await Self.authorized(h, action: nil)
        #expect(try await Self.operate(h, id, "captures").errorCode == "already_captured")
        #expect(try await Self.operate(h, id, "refunds", minor: 2500).status == 201)
        #expect(try await h.status(of: id) == "refunded")
    }

    @Test("a retry with the same Idempotency-Key never reaches the gateway twice; another body with it is a 409", arguments: StoreKind.available)
    func idempotency(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, fake) = try await Self.authorized(h)
        let first = try await Self.operate(h, id, "captures", minor: 1000, key: "cap-1")
        let again = try await Self.operate(h, id, "captures", minor: 1000, key: "cap-1")
        #expect(first.status == 201 && again.status == 201)
        #expect(again.headers["idempotent-replayed"] == "true")
        #expect(again.json["id"] as? String == first.json["id"] as? String)
        let other = try await Self.operate(h, id, "captures", minor: 900, key: "cap-1")
        #expect(other.status == 409 && other.errorCode == "idempotency_conflict")
        let missing = try await h.send("POST", "v1/payments/\(id)/captures", json: "{}")
        #expect(missing.status == 400 && missing.errorCode == "missing_field" && missing.errorField == "Idempotency-Key")
        #expect(await fake.ledger.operations.count == 1)
        #expect(await fake.ledger.operations["\(attempt.rawValue)-c1"]?.requests == 1)
        let secret = try #require(try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-\(UUID().uuidString.prefix(6))"))
            .json["clientSecret"] as? String)
        #expect(try await h.send("POST", "v1/payments/\(id)/refunds", json: "{}", key: .some(secret), headers: ["Idempotency-Key": "x"]).status
                != 201)
    }

    @Test("concurrent refunds that together exceed what was captured: one is refused, the gateway refunds once", arguments: StoreKind.available)
    func concurrentRefunds(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt, fake) = try await Self.authorized(h, action: nil)
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 { group.addTask { try await Self.operate(h, id, "refunds", minor: 1500).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(answers.filter { $0 == 201 }.count == 1, "\(answers)")
        #expect(answers.filter { $0 == 409 }.count == 5, "\(answers)")
        #expect(await fake.ledger.moneyOf(attempt).refunded == 1500)
    }

    @Test("a refund whose answer is lost is 502 unknown, never sent again, and settled by the reconciler", arguments: StoreKind.available)
    func lostAnswer(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, notificationTiming: .deferred)
        defer { Task { await h.stop() } }
        let (id, attempt, fake) = try await Self.authorizedByNotification(h)
        await fake.ledger.enqueueOperations([FakeOperationPlan(.lostAnswer, notification: .never, failingInquiries: 1)])
        let lost = try await Self.operate(h, id, "refunds", minor: 1000, key: "r-lost")
        #expect(lost.status == 502 && lost.errorCode == "unknown_outcome")
        #expect((lost.json["operation"] as? [String: Any])?["status"] as? String == "unknown")
        // Unknown holds the money back: only 15.00 is left to refund.
        #expect(try await Self.operate(h, id, "refunds", minor: 1501).errorCode == "amount_exceeds_captured")
        // The retry is answered from the store.
        let retry = try await Self.operate(h, id, "refunds", minor: 1000, key: "r-lost")
        #expect(retry.status == 502 && retry.headers["idempotent-replayed"] == "true")
        // The reconciler asks (its first inquiry times out, by script) until the gateway's answer settles it. Passes far
        // in the future (100 days apart): a reconciler of another test sharing the database (30 days ahead) may have claimed
        // it for a while.
        let reconciler = Reconciler(state: h.state, store: h.store, settings: ReconciliationSettings(minimumAgeSeconds: 0, backoffBaseSeconds: 1))
        var entries: [ReconciliationEntry] = []
        for hour in 1...6 where try await h.send("GET", "v1/refunds/\(attempt.rawValue)-r1").json["status"] as? String != "succeeded" {
            entries += try await reconciler.runOnce(now: Date().addingTimeInterval(Double(hour) * 100 * 86_400))
        }
        #expect(entries.contains { $0.action == "settled" && $0.reason.contains("\(attempt.rawValue)-r1") }, "\(entries)")
        let refund = try await h.send("GET", "v1/refunds/\(attempt.rawValue)-r1")
        #expect(refund.json["status"] as? String == "succeeded")
        #expect(try await h.status(of: id) == "partially_refunded")
        #expect(await fake.ledger.operations["\(attempt.rawValue)-r1"]?.requests == 1)
        let view = try await h.send("GET", "v1/payments/\(id)")
        #expect((view.json["amountRefunded"] as? [String: Any])?["value"] as? Int == 1000)
    }

    @Test("a pending refund (202) is settled by the gateway's notification, and counted once", arguments: StoreKind.available)
    func pendingThenNotification(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, notificationTiming: .deferred)
        defer { Task { await h.stop() } }
        let (id, attempt, fake) = try await Self.authorizedByNotification(h)
        await fake.ledger.enqueueOperations([FakeOperationPlan(.pending, notification: .deferred)])
        let pending = try await Self.operate(h, id, "refunds", minor: 1000)
        #expect(pending.status == 202 && pending.json["status"] as? String == "pending")
        try await fake.completePendingOperations()
        // Delivered twice: the refund is counted once.
        for notification in await fake.drainOutbox() {
            for _ in 0..<2 { #expect(try await h.notify(notification, gateway: fake.gateway).status == 200) }
        }
        for _ in 0..<200 where try await h.send("GET", "v1/refunds/\(attempt.rawValue)-r1").json["status"] as? String != "succeeded" {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await h.send("GET", "v1/refunds/\(attempt.rawValue)-r1").json["status"] as? String == "succeeded")
        let view = try await h.send("GET", "v1/payments/\(id)")
        #expect((view.json["amountRefunded"] as? [String: Any])?["value"] as? Int == 1000)
        #expect(view.json["status"] as? String == "partially_refunded")
    }

    /// A sale paid through a notification delivered by hand (the harness's gateway holds them with `.deferred`).
    static func authorizedByNotification(_ h: ServerHarness) async throws -> (String, AttemptReference, FakeGateway) {
        let (id, attempt, gateway) = try await h.createAndPrepare()
        let fake = h.gateway(gateway)
        let report = try await fake.settle(attempt, as: .paid)
        _ = try await h.notify(fake.signedNotification(for: report), gateway: gateway)
        _ = await fake.drainOutbox()
        try await waitFor(h, id, status: "paid")
        return (id, attempt, fake)
    }

    @Test("a refusal by the gateway is 402 with its code and holds nothing back; a request that never left is 502 and failed",
          arguments: StoreKind.available)
    func declinedAndNotSent(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, _, fake) = try await Self.authorized(h)
        await fake.ledger.enqueueOperations([FakeOperationPlan(.decline(code: "05")), FakeOperationPlan(.notSent)])
        let declined = try await Self.operate(h, id, "captures")
        #expect(declined.status == 402 && declined.errorCode == "operation_declined")
        #expect((declined.json["operation"] as? [String: Any])?["gatewayCode"] as? String == "05")
        let notSent = try await Self.operate(h, id, "captures")
        #expect(notSent.status == 402)
        #expect((notSent.json["operation"] as? [String: Any])?["status"] as? String == "failed")
        #expect(try await Self.operate(h, id, "captures").status == 201)
    }

    @Test("an operation the gateway does not offer is 422 naming the capability, before anything is stored or sent",
          arguments: StoreKind.available)
    func unsupported(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, operations: OperationCapabilities(capture: .init(partial: false, multiple: false)))
        defer { Task { await h.stop() } }
        let (id, _, fake) = try await Self.authorized(h)
        let void = try await Self.operate(h, id, "voids")
        #expect(void.status == 422 && void.errorField == "operations.void")
        #expect(void.json["error"].flatMap { ($0 as? [String: Any])?["category"] as? String } == "unsupported")
        let partial = try await Self.operate(h, id, "captures", minor: 100)
        #expect(partial.status == 422 && partial.errorField == "operations.capture.partial")
        #expect(await fake.ledger.operations.isEmpty)
        #expect(try await Self.operate(h, id, "captures").status == 201)
        let second = try await Self.operate(h, id, "refunds")
        #expect(second.status == 422 && second.errorField == "operations.refund")
    }
}
