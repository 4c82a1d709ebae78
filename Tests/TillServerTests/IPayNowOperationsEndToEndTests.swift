import Foundation
import Testing
import Till
import TillSandbox
@testable import TillServer

/// iPayNow offers Till no capture, void or refund: of a payment the app paid through the server with the iPayNow
/// emulator, each is refused by the server's HTTP API (422 naming the capability) before anything is stored or sent.
extension IPayNowEndToEndTests {
    @Test("a paid payment: capture, void and refund through the server are each 422 naming the capability; iPayNow hears of none, nothing is stored")
    func operationsRefused() async throws {
        try await withWorld { w in
            // The N001 held back: the app's confirmation makes the server query iPayNow (MQ001), so the recorder is
            // seen to catch what the server sends.
            await w.emulator.holdNotifications()
            let result = try await w.checkout(w.customer()).pay(try intent(.alipay))
            #expect(result.status == .paid)
            let attempt = result.preparation.attempt
            #expect(!w.sent.all.isEmpty)
            // Let the N001 and anything it makes the server do settle first: from here on the server must send nothing.
            await w.emulator.releaseNotifications()
            await w.emulator.waitForNotifications()
            try await Task.sleep(for: .milliseconds(200))
            let id = try #require(try await w.merchant.payment(attempt: attempt).json["id"] as? String)
            let before = w.sent.all
            let notified = await w.emulator.notifications.count

            for (route, capability) in [("captures", "operations.capture"), ("voids", "operations.void"), ("refunds", "operations.refund")] {
                let answer = try await w.merchant.operate(id, route, currency: "NZD", key: "\(route)-1")
                #expect(answer.status == 422 && answer.errorCode == "unsupported_action" && answer.errorField == capability, "\(answer.text)")
                // The same key again: refused again, as nothing was stored under it.
                let again = try await w.merchant.operate(id, route, currency: "NZD", key: "\(route)-1")
                #expect(again.status == 422 && again.errorField == capability && again.headers["idempotent-replayed"] == nil)
            }
            let partial = try await w.merchant.operate(id, "refunds", minor: 100, currency: "NZD")
            #expect(partial.status == 422 && partial.errorField == "operations.refund")

            #expect(w.sent.all == before, "\(w.sent.all)")
            let view = try await w.merchant.payment(id)
            #expect(view.json["status"] as? String == "paid")
            #expect((view.json["operations"] as? [[String: Any]])?.isEmpty ?? true)
            #expect(view.minor("amountRefunded") ?? 0 == 0)
            // iPayNow's books: the one payment, nothing else; no notification since.
            #expect(await w.emulator.ledger.map(\.mhtOrderNo) == [attempt.rawValue])
            #expect(await w.emulator.notifications.count == notified)
        }
    }
}
