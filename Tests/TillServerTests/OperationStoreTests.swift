import Foundation
import Testing
import Till
import TillOrchestration
import TillService
@testable import TillServer

/// The stores' operation rules, on every store: one refund counted once whichever statement arrives first.
@Suite("Operations in the store")
struct OperationStoreTests {
    static let usd = Currency.lookup("USD")!
    static let amount = Money(minorUnits: 1000, currency: usd)

    /// A payment of 10.00 USD paid by one attempt, and one refund of `refund` stored as unknown (its answer lost).
    static func paidWithLostRefund(_ store: any PaymentStore, refund: Int64) async throws -> (String, AttemptReference, OperationReference) {
        let merchant = "m", id = "pay_\(UUID().uuidString.prefix(12))"
        _ = try await store.create(PaymentIntent(merchantReference: "o-\(id)", amount: amount, method: .card), merchant: merchant, id: id,
                                   idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: "g", expected: [])
        _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .paid, amount: amount))
        let reference = OperationReference(attempt: attempt, kind: .refund, sequence: 1)
        let outcome = try await store.addOperation(payment: id, merchant: merchant, idempotencyKey: "k-\(id)", requestHash: "r") { payment in
            StoredOperation(reference: reference, paymentID: payment.id, merchantID: merchant, gateway: "g", status: .unknown,
                            amount: Money(minorUnits: refund, currency: usd), isFinal: false, idempotencyKey: "k-\(id)", requestHash: "r",
                            createdAt: Date(), updatedAt: Date())
        }
        guard case .created = outcome else { throw StoreError.conflict("not created") }
        return (id, attempt, reference)
    }

    @Test("a running total that shows an open refund settles it; the refund's own answer then adds nothing", arguments: StoreKind.everyStore)
    func runningTotalFirst(kind: StoreKind) async throws {
        let store = try await kind.open()
        let (id, attempt, reference) = try await Self.paidWithLostRefund(store, refund: 400)
        // The gateway's inquiry of the attempt reports everything refunded so far: 4.00.
        _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .partiallyRefunded,
                                               refundedTotal: Money(minorUnits: 400, currency: Self.usd), eventID: "inquiry-1"))
        #expect(try await store.operation(reference)?.status == .succeeded)
        // The operation's own inquiry says succeeded too: nothing more is counted.
        let again = try await store.settleOperation(reference, report: OperationReport(reference: reference, kind: .refund, status: .succeeded,
                                                                                      amount: Money(minorUnits: 400, currency: Self.usd)))
        if case .unchanged = again {} else { Issue.record("expected unchanged, got \(again)") }
        let payment = try #require(try await store.payment(id: id, merchant: "m"))
        #expect(payment.attempts[0].refundedMinorUnits == 400)
        #expect(payment.status == .partiallyRefunded)
        try await store.close()
    }

    @Test("the refund's own answer first, then the running total: counted once", arguments: StoreKind.everyStore)
    func operationFirst(kind: StoreKind) async throws {
        let store = try await kind.open()
        let (id, attempt, reference) = try await Self.paidWithLostRefund(store, refund: 1000)
        let settled = try await store.settleOperation(reference, report: OperationReport(reference: reference, kind: .refund, status: .succeeded,
                                                                                        amount: Self.amount))
        if case .settled = settled {} else { Issue.record("expected settled, got \(settled)") }
        _ = try await store.apply(StatusReport(gateway: "g", attempt: attempt, status: .refunded, refundedTotal: Self.amount, eventID: "inquiry-2"))
        let payment = try #require(try await store.payment(id: id, merchant: "m"))
        #expect(payment.attempts[0].refundedMinorUnits == 1000)
        #expect(payment.status == .refunded)
        // An answer that contradicts a settled operation is refused, and changes nothing.
        let contradicting = try await store.settleOperation(reference, report: OperationReport(reference: reference, kind: .refund, status: .failed))
        if case .refused = contradicting {} else { Issue.record("expected refused, got \(contradicting)") }
        #expect(try await store.operation(reference)?.status == .succeeded)
        try await store.close()
    }

    @Test("a success reporting another amount than the operation's is refused and leaves it open", arguments: StoreKind.everyStore)
    func amountMismatch(kind: StoreKind) async throws {
        let store = try await kind.open()
        let (id, _, reference) = try await Self.paidWithLostRefund(store, refund: 300)
        let outcome = try await store.settleOperation(reference, report: OperationReport(reference: reference, kind: .refund, status: .succeeded,
                                                                                        amount: Money(minorUnits: 500, currency: Self.usd)))
        if case .refused = outcome {} else { Issue.record("expected refused, got \(outcome)") }
        #expect(try await store.operation(reference)?.status == .unknown)
        #expect(try await store.payment(id: id, merchant: "m")?.attempts[0].refundedMinorUnits == 0)
        try await store.close()
    }

    @Test("a decision that throws stores nothing; a known key answers its operation, another request with it is a conflict",
          arguments: StoreKind.everyStore)
    func idempotencyAndRefusal(kind: StoreKind) async throws {
        let store = try await kind.open()
        let (id, _, reference) = try await Self.paidWithLostRefund(store, refund: 300)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            _ = try await store.addOperation(payment: id, merchant: "m", idempotencyKey: "other", requestHash: "x") { _ in throw Refused() }
        }
        let replay = try await store.addOperation(payment: id, merchant: "m", idempotencyKey: "k-\(id)", requestHash: "r") { _ in throw Refused() }
        if case .replayed(let stored) = replay { #expect(stored.reference == reference) } else { Issue.record("expected a replay, got \(replay)") }
        let conflict = try await store.addOperation(payment: id, merchant: "m", idempotencyKey: "k-\(id)", requestHash: "s") { _ in throw Refused() }
        #expect(conflict == .idempotencyConflict)
        #expect(try await store.payment(id: id, merchant: "m")?.operations.count == 1)
        try await store.close()
    }
}
