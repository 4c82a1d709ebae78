import Foundation
import Testing
import Till
import TillSandbox
@testable import TillServer

/// Refunds through the merchant server's HTTP API, of a charge the app paid through the server with the Citcon
/// emulator: Citcon answers each at once (201). Citcon offers no capture or void to Till: the server refuses them
/// (422) before anything is stored or sent.
extension CitconEndToEndTests {
    @Test("a paid charge refunded in part then the rest through the server (201 each, once at Citcon, counted once after the refund IPNs); capture and void are 422 naming the capability, nothing sent")
    func refundsThroughServer() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(.alipay)).pay(try intent(.alipay, "e2e-ops"))
            #expect(result.status == .paid)
            await w.emulator.waitForNotifications()
            let attempt = result.preparation.attempt
            let charge = try #require(result.preparation.gatewayReference)
            let id = try #require(try await w.merchant.payment(attempt: attempt).json["id"] as? String)

            // Refused before anything is stored or sent.
            let before = w.sent.count
            let capture = try await w.merchant.operate(id, "captures", currency: "USD")
            #expect(capture.status == 422 && capture.errorCode == "unsupported_action" && capture.errorField == "operations.capture",
                    "\(capture.text)")
            let void = try await w.merchant.operate(id, "voids", currency: "USD")
            #expect(void.status == 422 && void.errorCode == "unsupported_action" && void.errorField == "operations.void", "\(void.text)")
            #expect(w.sent.count == before, "\(w.sent.all)")
            #expect((try await w.merchant.payment(id).json["operations"] as? [[String: Any]])?.isEmpty ?? true)

            let first = try await w.merchant.operate(id, "refunds", minor: 500, currency: "USD", key: "ref-1")
            #expect(first.status == 201, "\(first.text)")
            #expect(first.json["status"] as? String == "succeeded" && first.json["id"] as? String == "\(attempt.rawValue)-r1")
            #expect(first.json["gatewayReference"] as? String != nil && first.json["gatewayReference"] as? String != charge)
            let replay = try await w.merchant.operate(id, "refunds", minor: 500, currency: "USD", key: "ref-1")
            #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
            #expect(w.sent.count("POST /citcon/v1/refunds") == 1, "\(w.sent.all)")
            #expect(try await w.merchant.payment(id).json["status"] as? String == "partially_refunded")

            let over = try await w.merchant.operate(id, "refunds", minor: 1500, currency: "USD")
            #expect(over.status == 409 && over.errorCode == "amount_exceeds_captured")
            let rest = try await w.merchant.operate(id, "refunds", currency: "USD")
            #expect(rest.status == 201, "\(rest.text)")
            #expect(rest.minor("amount") == 1499)
            #expect(w.sent.count("POST /citcon/v1/refunds") == 2, "\(w.sent.all)")

            // Citcon's refund IPNs make the server inquire; its running total is what Till already counts.
            await w.emulator.waitForNotifications()
            try await Task.sleep(for: .milliseconds(300))
            let view = try await w.merchant.payment(id)
            #expect(view.json["status"] as? String == "refunded")
            #expect(view.minor("amountRefunded") == 1999, "\(view.text)")
            let operations = try #require(view.json["operations"] as? [[String: Any]])
            #expect(operations.map { $0["id"] as? String } == ["\(attempt.rawValue)-r1", "\(attempt.rawValue)-r2"])

            // Citcon's books: the charge, two refunds of those amounts; no cancel, no capture.
            let books = await w.emulator.ledger.filter { $0.transactionID == charge }
            #expect(books.map(\.operation) == [.charge, .refund, .refund])
            #expect(books.filter { $0.operation == .refund }.map(\.amountMinor) == [500, 1499])
            #expect(!w.sent.all.contains { $0.contains("cancel") || $0.contains("capture") }, "\(w.sent.all)")
        }
    }
}
