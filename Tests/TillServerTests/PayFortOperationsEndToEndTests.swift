import Foundation
import Testing
import Till
import TillSandbox
@testable import TillServer

/// Captures, voids and refunds through the merchant server's HTTP API, of payments the app made through the server with
/// the PayFort emulator: PayFort answers each at once (201), and its own ledger shows each exactly once.
extension PayFortEndToEndTests {
    @Test("an authorization captured in two parts, then refunded in two parts, through the server: each once at PayFort, the payment paid, partially refunded, refunded")
    func captureAndRefundThroughServer() async throws {
        let w = try await world(card: PayFortEmulator.TestCard.visa)
        defer { Task { await w.stop() } }
        let api = w.merchant
        let result = try await w.app.pay(try intent("e2e-ops-\(UUID().uuidString.prefix(6))", action: .authorize))
        #expect(result.status == .authorized)
        let attempt = result.preparation.attempt
        let id = try #require(try await api.payment(attempt: attempt).json["id"] as? String)

        let first = try await api.operate(id, "captures", minor: 1000, currency: "SAR", key: "cap-1")
        #expect(first.status == 201, "\(first.text)")
        #expect(first.json["id"] as? String == "\(attempt.rawValue)-c1" && first.json["status"] as? String == "succeeded")
        #expect(try await api.payment(id).json["status"] as? String == "paid")
        // The retry with the same key is answered from the store: PayFort hears of it once.
        let replay = try await api.operate(id, "captures", minor: 1000, currency: "SAR", key: "cap-1")
        #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
        #expect(replay.json["id"] as? String == first.json["id"] as? String)
        #expect(w.sent.count(#""CAPTURE""#) == 1)

        let rest = try await api.operate(id, "captures", currency: "SAR")
        #expect(rest.status == 201, "\(rest.text)")
        #expect(rest.minor("amount") == 1500)
        let more = try await api.operate(id, "captures", minor: 1, currency: "SAR")
        #expect(more.status == 409 && more.errorCode == "already_captured")
        #expect(w.sent.count(#""CAPTURE""#) == 2)

        let tooMuch = try await api.operate(id, "refunds", minor: 2501, currency: "SAR")
        #expect(tooMuch.status == 409 && tooMuch.errorCode == "amount_exceeds_captured")
        let partial = try await api.operate(id, "refunds", minor: 700, currency: "SAR")
        #expect(partial.status == 201, "\(partial.text)")
        #expect(partial.json["id"] as? String == "\(attempt.rawValue)-r1")
        #expect(try await api.payment(id).json["status"] as? String == "partially_refunded")
        let remainder = try await api.operate(id, "refunds", currency: "SAR")
        #expect(remainder.status == 201, "\(remainder.text)")
        #expect(remainder.minor("amount") == 1800)
        #expect(try await api.send("GET", "v1/refunds/\(attempt.rawValue)-r2").json["status"] as? String == "succeeded")
        #expect(try await api.operate(id, "refunds", minor: 1, currency: "SAR").errorCode == "already_refunded")
        #expect(w.sent.count(#""REFUND""#) == 2)

        let view = try await api.payment(id)
        #expect(view.json["status"] as? String == "refunded")
        #expect(view.minor("amountCaptured") == 2500 && view.minor("amountRefunded") == 2500)
        let operations = try #require(view.json["operations"] as? [[String: Any]])
        #expect(operations.map { $0["id"] as? String } == ["c1", "c2", "r1", "r2"].map { "\(attempt.rawValue)-\($0)" })
        #expect(operations.allSatisfy { $0["status"] as? String == "succeeded" })
        // PayFort's own books: one authorization; two captures and two refunds of those amounts, each once, the
        // refunds under Till's references.
        #expect(await w.emulator.ledger.map(\.command) == ["AUTHORIZATION"])
        let moved = await w.emulator.operations.filter { $0.merchantReference == attempt.rawValue }
        #expect(moved.map(\.command) == ["CAPTURE", "CAPTURE", "REFUND", "REFUND"])
        #expect(moved.map(\.amountMinor) == [1000, 1500, 700, 1800])
        #expect(moved.map(\.maintenanceReference) == [nil, nil, "\(attempt.rawValue)-r1", "\(attempt.rawValue)-r2"])

        // PayFort's feedback about each operation, sent once PayFort answered it (and confirmed by the CHECK_STATUS it
        // makes the server send): acknowledged, and changing nothing. A capture's feedback can reach the server before
        // the server has applied the capture's own answer: read then against the authorization, its partial amount is
        // `stale` (stored, applied to nothing), which is as harmless and is allowed; nothing else may be refused.
        await w.emulator.waitForNotifications()
        try await Task.sleep(for: .milliseconds(300))
        let after = try await api.payment(id)
        #expect(after.json["status"] as? String == "refunded")
        #expect(after.minor("amountCaptured") == 2500 && after.minor("amountRefunded") == 2500, "\(after.text)")
        let seen = try await w.store.notifications(payment: id).map { "\($0.reportedStatus.rawValue) \($0.verdict) \($0.eventID)" }
        let misfits = try await w.store.notifications(payment: id).filter { notification in
            ["stale", "unknown_operation", "quarantined"].contains(notification.verdict)
                && !(notification.verdict == "stale" && notification.eventID.contains(":CAPTURE:"))
        }
        #expect(misfits.isEmpty, "\(seen)")
        #expect(await w.emulator.notificationLog().allSatisfy(\.acknowledged))
    }

    @Test("another authorization voided through the server: once at PayFort, for the whole amount; the payment cancelled, nothing left to capture")
    func voidThroughServer() async throws {
        let w = try await world(card: PayFortEmulator.TestCard.visa)
        defer { Task { await w.stop() } }
        let api = w.merchant
        let held = try await w.app.pay(try intent("e2e-void-\(UUID().uuidString.prefix(6))", action: .authorize))
        #expect(held.status == .authorized)
        let attempt = held.preparation.attempt
        let id = try #require(try await api.payment(attempt: attempt).json["id"] as? String)

        let void = try await api.operate(id, "voids", currency: "SAR", key: "void-1")
        #expect(void.status == 201, "\(void.text)")
        #expect(void.json["status"] as? String == "succeeded" && void.minor("amount") == 2500)
        let replay = try await api.operate(id, "voids", currency: "SAR", key: "void-1")
        #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
        #expect(try await api.payment(id).json["status"] as? String == "cancelled")
        #expect(try await api.operate(id, "captures", currency: "SAR").errorCode == "not_authorized")
        #expect(w.sent.count(#""VOID_AUTHORIZATION""#) == 1 && w.sent.count(#""CAPTURE""#) == 0)
        let moved = await w.emulator.operations.filter { $0.merchantReference == attempt.rawValue }
        #expect(moved.map(\.command) == ["VOID_AUTHORIZATION"])
        #expect(moved.map(\.amountMinor) == [2500])
    }

    @Test("with feedback applied as it comes (confirm_feedback false), a lost answer is settled by PayFort's feedback: a refund's, and a second partial capture's of another amount")
    func lostAnswerSettledByFeedback() async throws {
        let w = try await world(card: PayFortEmulator.TestCard.visa, settings: ["confirm_feedback": "false"], timeoutHold: .milliseconds(200))
        defer { Task { await w.stop() } }
        let api = w.merchant
        let result = try await w.app.pay(try intent("e2e-lost-\(UUID().uuidString.prefix(6))", action: .authorize))
        #expect(result.status == .authorized)
        let attempt = result.preparation.attempt
        let id = try #require(try await api.payment(attempt: attempt).json["id"] as? String)

        // PayFort does each second one, and its answer is lost (held, then HTTP 504); its feedback about it still
        // comes, and may come before the 504 (then the answer is already 201).
        #expect(try await api.operate(id, "captures", minor: 1000, currency: "SAR").status == 201)
        await w.emulator.waitForNotifications()
        await w.emulator.injectFault(.timeout, matching: "CAPTURE")
        let capture = try await api.operate(id, "captures", minor: 1200, currency: "SAR")
        #expect([201, 502].contains(capture.status), "\(capture.text)")
        await w.emulator.waitForNotifications()
        #expect(try await api.operate(id, "refunds", minor: 500, currency: "SAR").status == 201)
        await w.emulator.waitForNotifications()
        await w.emulator.injectFault(.timeout, matching: "REFUND")
        let refund = try await api.operate(id, "refunds", minor: 500, currency: "SAR")
        #expect([201, 502].contains(refund.status), "\(refund.text)")
        await w.emulator.waitForNotifications()
        try await Task.sleep(for: .milliseconds(300))
        #expect(await w.emulator.operations.filter { $0.merchantReference == attempt.rawValue }.map(\.command)
                == ["CAPTURE", "CAPTURE", "REFUND", "REFUND"])

        #expect(try await api.send("GET", "v1/operations/\(attempt.rawValue)-r2").json["status"] as? String == "succeeded")
        // The second capture's feedback is its own event (a capture's amount is part of its event id), so it settles it.
        #expect(try await api.send("GET", "v1/operations/\(attempt.rawValue)-c2").json["status"] as? String == "succeeded")
        let inquired = try await api.send("POST", "v1/operations/\(attempt.rawValue)-c2/inquire")
        #expect(inquired.json["status"] as? String == "succeeded", "\(inquired.text)")
        let view = try await api.payment(id)
        #expect(view.minor("amountCaptured") == 2200 && view.minor("amountRefunded") == 1000, "\(view.text)")
    }
}
