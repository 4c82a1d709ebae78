import Testing
@testable import Till

@Suite("Payment status moves forward only")
struct PaymentStatusTests {
    @Test("a paid payment never goes back", arguments: [PaymentStatus.created, .pending, .authorized, .failed, .cancelled, .expired])
    func paidNeverGoesBack(target: PaymentStatus) {
        #expect(PaymentStatus.paid.transition(to: target) != .advance)
        #expect(PaymentStatus.refunded.transition(to: target) != .advance)
        #expect(PaymentStatus.partiallyRefunded.transition(to: target) != .advance)
    }

    @Test("the full transition table")
    func table() {
        let allowed: [PaymentStatus: Set<PaymentStatus>] = [
            .created: [.pending, .authorized, .paid, .failed, .cancelled, .expired, .partiallyRefunded, .refunded],
            .pending: [.authorized, .paid, .failed, .cancelled, .expired, .partiallyRefunded, .refunded],
            .failed: [.authorized, .paid], .cancelled: [.paid], .expired: [.paid],
            .authorized: [.paid, .cancelled, .expired],
            .paid: [.partiallyRefunded, .refunded],
            .partiallyRefunded: [.refunded],
            .refunded: [],
        ]
        for from in PaymentStatus.known {
            for to in PaymentStatus.known {
                let transition = from.transition(to: to)
                if from == to {
                    #expect(transition == .unchanged, "\(from) → \(to)")
                } else if allowed[from]!.contains(to) {
                    #expect(transition == .advance, "\(from) → \(to)")
                } else {
                    #expect(transition != .advance, "\(from) → \(to) must be rejected")
                }
            }
        }
    }

    @Test("an unknown status is never applied and never final")
    func unknown() {
        let future = PaymentStatus(rawValue: "settled_on_mars")
        #expect(!future.isKnown)
        #expect(!future.isFinal)
        for status in PaymentStatus.known where status != future {
            #expect(status.transition(to: future) != .advance)
        }
    }

    @Test("a voided authorisation cannot be reopened by a redelivered authorised report")
    func noCycle() {
        #expect(PaymentStatus.authorized.transition(to: .cancelled) == .advance)
        #expect(PaymentStatus.cancelled.transition(to: .authorized) != .advance)
        #expect(PaymentStatus.expired.transition(to: .authorized) != .advance)
    }

    @Test("a late success after a failure is kept: money that moved is never lost")
    func lateSuccess() {
        #expect(PaymentStatus.failed.transition(to: .paid) == .advance)
        #expect(PaymentStatus.expired.transition(to: .paid) == .advance)
    }
}
