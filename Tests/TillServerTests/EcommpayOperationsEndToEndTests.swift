import Foundation
import Testing
import Till
import TillSandbox
@testable import TillServer

/// Captures and refunds through the merchant server's HTTP API, of payments the app made through the server with the
/// ecommpay emulator: Gate accepts each (202, pending, its `request_id` kept) and the emulator's callback about the
/// operation settles it.
extension EcommpayEndToEndTests {
    /// The payment an attempt belongs to: its id on the server.
    func paymentID(_ w: World, _ result: CheckoutResult) async throws -> String {
        try #require(try await w.merchant.payment(attempt: result.preparation.attempt).json["id"] as? String)
    }

    @Test("an authorization captured in part through the server: 202 pending, then the callback makes it succeeded; ecommpay charged the part once, the rest released")
    func captureThroughServer() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card, "19.99", action: .authorize))
            #expect(result.status == .authorized)
            let attempt = result.preparation.attempt
            let id = try await paymentID(w, result)

            // The callback is held until the server has answered: with it let go at once, it may settle the capture
            // before Gate's answer is stored, and the answer is then 201 (the capture as it is by then).
            await w.emulator.holdCallbacks()
            let capture = try await w.merchant.operate(id, "captures", minor: 1500, currency: "GBP", key: "cap-1")
            #expect(capture.status == 202, "\(capture.text)")
            #expect(capture.json["status"] as? String == "pending" && capture.json["id"] as? String == "\(attempt.rawValue)-c1")
            #expect(capture.json["gatewayReference"] as? String != nil)
            #expect(try await w.merchant.send("GET", "v1/operations/\(attempt.rawValue)-c1").json["status"] as? String == "pending")
            await w.emulator.releaseCallbacks()
            let settled = try await w.merchant.settled(operation: "\(attempt.rawValue)-c1")
            #expect(settled.json["status"] as? String == "succeeded", "\(settled.text)")
            await w.emulator.waitForCallbacks()

            // The retry with the same key: the stored operation, as it is now; Gate hears nothing more.
            let replay = try await w.merchant.operate(id, "captures", minor: 1500, currency: "GBP", key: "cap-1")
            #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
            #expect(replay.json["id"] as? String == "\(attempt.rawValue)-c1")
            // One capture per authorization at ecommpay, and it released the rest.
            let again = try await w.merchant.operate(id, "captures", minor: 1, currency: "GBP")
            #expect(again.status == 409 && again.errorCode == "capture_final", "\(again.text)")
            #expect(w.sent.count("/card/capture") == 1, "\(w.sent.all)")

            let view = try await w.merchant.payment(id)
            #expect(view.json["status"] as? String == "paid")
            #expect(view.minor("amountCaptured") == 1500)
            let charged = await w.emulator.ledger.filter { $0.paymentId == attempt.rawValue }
            #expect(charged.map(\.operation) == ["capture"] && charged.map(\.amount) == [1500])
            let summary = await w.emulator.payment(projectId: Self.projectId, paymentId: attempt.rawValue)
            #expect(summary?.operations == ["auth:success", "capture:success"], "\(String(describing: summary))")
        }
    }

    @Test("a sale refunded in two parts through the server: each 202 then succeeded by its callback; more than is left is a 409 before Gate hears of it")
    func refundsThroughServer() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card, "19.99"))
            #expect(result.status == .paid)
            let attempt = result.preparation.attempt
            let id = try await paymentID(w, result)

            // Callbacks held until the server has answered (see captureThroughServer).
            await w.emulator.holdCallbacks()
            let first = try await w.merchant.operate(id, "refunds", minor: 500, currency: "GBP", key: "ref-1")
            #expect(first.status == 202, "\(first.text)")
            #expect(first.json["status"] as? String == "pending" && first.json["id"] as? String == "\(attempt.rawValue)-r1")
            await w.emulator.releaseCallbacks()
            let firstSettled = try await w.merchant.settled(operation: "\(attempt.rawValue)-r1")
            #expect(firstSettled.json["status"] as? String == "succeeded", "\(firstSettled.text)")
            #expect(firstSettled.minor("amount") == 500)
            await w.emulator.waitForCallbacks()
            #expect(try await w.merchant.payment(id).json["status"] as? String == "partially_refunded")

            let replay = try await w.merchant.operate(id, "refunds", minor: 500, currency: "GBP", key: "ref-1")
            #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
            let over = try await w.merchant.operate(id, "refunds", minor: 1500, currency: "GBP")
            #expect(over.status == 409 && over.errorCode == "amount_exceeds_captured" && over.errorField == "body.amount.value")
            #expect(w.sent.count("/card/refund") == 1, "\(w.sent.all)")

            await w.emulator.holdCallbacks()
            let rest = try await w.merchant.operate(id, "refunds", currency: "GBP")
            #expect(rest.status == 202, "\(rest.text)")
            #expect(rest.minor("amount") == 1499)
            await w.emulator.releaseCallbacks()
            let restSettled = try await w.merchant.settled(operation: "\(attempt.rawValue)-r2")
            #expect(restSettled.json["status"] as? String == "succeeded", "\(restSettled.text)")
            await w.emulator.waitForCallbacks()

            let view = try await w.merchant.payment(id)
            #expect(view.json["status"] as? String == "refunded")
            #expect(view.minor("amountRefunded") == 1999)
            #expect(try await w.merchant.operate(id, "refunds", minor: 1, currency: "GBP").errorCode == "already_refunded")
            // ecommpay's books: the sale charged once, two refunds of those amounts, the payment refunded.
            #expect(await w.emulator.ledger.filter { $0.paymentId == attempt.rawValue }.map(\.operation) == ["sale"])
            let summary = await w.emulator.payment(projectId: Self.projectId, paymentId: attempt.rawValue)
            #expect(summary?.status == "refunded")
            #expect(summary?.operations == ["sale:success", "refund:success", "refund:success"], "\(String(describing: summary))")
            #expect(w.sent.count("/card/refund") == 2, "\(w.sent.all)")
        }
    }

    @Test("an authorization voided through the server: Gate's cancel answers 202, the callback makes it succeeded and the payment cancelled; nothing charged")
    func voidThroughServer() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card, "19.99", action: .authorize))
            #expect(result.status == .authorized)
            let attempt = result.preparation.attempt
            let id = try await paymentID(w, result)

            await w.emulator.holdCallbacks()
            let void = try await w.merchant.operate(id, "voids", currency: "GBP", key: "void-1")
            #expect(void.status == 202, "\(void.text)")
            #expect(void.json["status"] as? String == "pending" && void.json["id"] as? String == "\(attempt.rawValue)-v1")
            await w.emulator.releaseCallbacks()
            let settled = try await w.merchant.settled(operation: "\(attempt.rawValue)-v1")
            #expect(settled.json["status"] as? String == "succeeded", "\(settled.text)")
            await w.emulator.waitForCallbacks()

            let replay = try await w.merchant.operate(id, "voids", currency: "GBP", key: "void-1")
            #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
            #expect(try await w.merchant.operate(id, "captures", currency: "GBP").errorCode == "not_authorized")
            #expect(w.sent.count("/card/cancel") == 1 && w.sent.count("/card/capture") == 0, "\(w.sent.all)")
            #expect(try await w.merchant.payment(id).json["status"] as? String == "cancelled")
            #expect(await w.emulator.ledger.filter { $0.paymentId == attempt.rawValue }.isEmpty)
            let summary = await w.emulator.payment(projectId: Self.projectId, paymentId: attempt.rawValue)
            #expect(summary?.status == "cancelled" && summary?.operations == ["auth:success", "cancel:success"], "\(String(describing: summary))")
        }
    }

    @Test("a refund Gate accepts and then declines: 202, then failed by the callback; nothing refunded, and the same amount may be refunded again")
    func declinedRefundThroughServer() async throws {
        try await withWorld { w in
            let result = try await w.pay(try intent(.card, "19.99"))
            #expect(result.status == .paid)
            let attempt = result.preparation.attempt
            let id = try await paymentID(w, result)

            await w.emulator.inject(.decline, path: "refund")
            await w.emulator.holdCallbacks()
            let declined = try await w.merchant.operate(id, "refunds", minor: 800, currency: "GBP")
            #expect(declined.status == 202, "\(declined.text)")
            await w.emulator.releaseCallbacks()
            let settled = try await w.merchant.settled(operation: "\(attempt.rawValue)-r1")
            #expect(settled.json["status"] as? String == "failed", "\(settled.text)")
            await w.emulator.waitForCallbacks()
            let view = try await w.merchant.payment(id)
            #expect(view.json["status"] as? String == "paid")
            #expect(view.minor("amountRefunded") ?? 0 == 0, "\(view.text)")

            await w.emulator.holdCallbacks()
            let again = try await w.merchant.operate(id, "refunds", minor: 800, currency: "GBP")
            #expect(again.status == 202 && again.json["id"] as? String == "\(attempt.rawValue)-r2", "\(again.text)")
            await w.emulator.releaseCallbacks()
            #expect(try await w.merchant.settled(operation: "\(attempt.rawValue)-r2").json["status"] as? String == "succeeded")
            await w.emulator.waitForCallbacks()
            let after = try await w.merchant.payment(id)
            #expect(after.json["status"] as? String == "partially_refunded" && after.minor("amountRefunded") == 800, "\(after.text)")
            let summary = await w.emulator.payment(projectId: Self.projectId, paymentId: attempt.rawValue)
            #expect(summary?.operations == ["sale:success", "refund:decline", "refund:success"], "\(String(describing: summary))")
        }
    }
}
