import Foundation
import Testing
import Till
@testable import TillServer

/// ecommpay refund callbacks through the real merchant server. Which field holds which money is ecommpay's
/// own WooCommerce plugin's reading (ITECOMMPAY/woocommerce-ecommpay@7241b86a753ded3e7a618727fd21ba411a76b246,
/// v5.0.0): one refund's amount is `operation.sum_initial.amount` (`common/modules/EcpModuleRefund.php`
/// `handle()`, through `EcpGatewayInfoCallback::get_operation_sum_initial_amount()`), `payment.sum` is the
/// payment's balance after it (`common/includes/EcpGatewayPayment.php` `get_balance()`, the note
/// "Refunded %1$s. Payment balance: %2$s"); `operation.type` is `refund` or `reversal`
/// (`common/helpers/EcpGatewayOperationType.php`). No source holds a real refund callback: these are the
/// documented fields (`paymentpage-sdk-php` `tests/data/callbackFormats.php`) with made-up values.
@Suite("ecommpay refunds through the real merchant server: each refund's own amount, the balance checked")
struct EcommpayRefundTests {
    typealias V = EcommpayWire.Value

    /// A refund callback: `payment.status` and `payment.sum` (the balance) as after the refund, the refund as
    /// the operation, with its own `sum_initial`.
    static func refund(_ w: EcommpayAttackWorld, _ started: EcommpayAttackWorld.Started, status: String, operationID: Int, type: String = "refund",
                       operationStatus: String = "success", amount: Int64, balance: Int64) -> V {
        w.callback(started, status: status, operationID: operationID, changes: [
            (["payment", "sum", "amount"], .number(String(balance))),
            (["operation", "type"], .string(type)),
            (["operation", "status"], .string(operationStatus)),
            (["operation", "sum_initial", "amount"], .number(String(amount))),
            (["operation", "sum_converted", "amount"], .number(String(amount))),
        ])
    }

    func paid(_ w: EcommpayAttackWorld, minor: Int64) async throws -> EcommpayAttackWorld.Started {
        let started = try await w.start(w.a, minor: minor)
        #expect(try await w.notify(w.callback(started)).status == 200)
        #expect(try await w.paymentStatus(started.attempt) == .paid)
        return started
    }

    @Test("a partial refund of 30.00 of 100.00 is booked as 30.00 (balance 70.00); a second of 70.00 (balance 0) refunds the payment in full",
          arguments: StoreKind.available)
    func partialThenFull(kind: StoreKind) async throws {
        try await EcommpayAttackWorld.with(kind) { w in
            let started = try await paid(w, minor: 10_000)
            #expect(try await w.notify(Self.refund(w, started, status: "partially refunded", operationID: 201, amount: 3_000, balance: 7_000)).status == 200)
            var attempt = try await w.attempt(started.attempt)
            #expect(attempt.status == .partiallyRefunded && attempt.refundedMinorUnits == 3_000)
            #expect(try await w.notify(Self.refund(w, started, status: "refunded", operationID: 202, amount: 7_000, balance: 0)).status == 200)
            attempt = try await w.attempt(started.attempt)
            #expect(attempt.status == .refunded && attempt.refundedMinorUnits == 10_000)
            #expect(try await w.paymentStatus(started.attempt) == .refunded)
        }
    }

    @Test("a full reversal of 100.00 (balance 0) refunds the payment in full", arguments: StoreKind.available)
    func fullReversal(kind: StoreKind) async throws {
        try await EcommpayAttackWorld.with(kind) { w in
            let started = try await paid(w, minor: 10_000)
            #expect(try await w.notify(Self.refund(w, started, status: "reversed", operationID: 301, type: "reversal", amount: 10_000, balance: 0)).status == 200)
            let attempt = try await w.attempt(started.attempt)
            #expect(attempt.status == .refunded && attempt.refundedMinorUnits == 10_000)
        }
    }

    @Test("two refunds of the same amount are two refunds; a declined refund books nothing", arguments: StoreKind.available)
    func sameAmountTwiceAndDeclined(kind: StoreKind) async throws {
        try await EcommpayAttackWorld.with(kind) { w in
            let started = try await paid(w, minor: 10_000)
            #expect(try await w.notify(Self.refund(w, started, status: "partially refunded", operationID: 401, amount: 2_000, balance: 8_000)).status == 200)
            #expect(try await w.notify(Self.refund(w, started, status: "partially refunded", operationID: 402, amount: 2_000, balance: 6_000)).status == 200)
            // The same delivery again: a duplicate, nothing added.
            #expect(try await w.notify(Self.refund(w, started, status: "partially refunded", operationID: 402, amount: 2_000, balance: 6_000)).status == 200)
            // A refund ecommpay declined: the payment stays as it was, its balance 60.00.
            #expect(try await w.notify(Self.refund(w, started, status: "partially refunded", operationID: 403, operationStatus: "decline",
                                                   amount: 5_000, balance: 6_000)).status == 200)
            let attempt = try await w.attempt(started.attempt)
            #expect(attempt.status == .partiallyRefunded && attempt.refundedMinorUnits == 4_000)
        }
    }

    @Test("a refund whose balance does not agree with what was refunded is not booked: the server asks Gate, whose answer is refused too while it disagrees",
          arguments: StoreKind.available)
    func balanceDisagrees(kind: StoreKind) async throws {
        try await EcommpayAttackWorld.with(kind) { w in
            let started = try await paid(w, minor: 10_000)
            // 30.00 refunded, but a balance of 100.00: one of the two is not what it says.
            #expect(try await w.notify(Self.refund(w, started, status: "partially refunded", operationID: 501, amount: 3_000, balance: 10_000)).status == 200)
            await w.settle()
            let attempt = try await w.attempt(started.attempt)
            #expect(attempt.status == .paid && attempt.refundedMinorUnits == 0)
            #expect(try await count(w.store, "till_notifications", where: "attempt_reference = '\(started.attempt.rawValue)' AND outcome = 'needs_inquiry'") == 1)
        }
    }
}
