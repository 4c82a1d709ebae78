import Foundation
import Testing
import Till
import TillOrchestration

@Suite("Attempt policy: the one set of rules for new attempts, cascades and reports")
struct AttemptPolicyTests {
    let usd = Currency.lookup("USD")!
    var amount: Money { Money(minorUnits: 1000, currency: usd) }
    let policy = AttemptPolicy(retry: RetryPolicy(maxAttempts: 3, timeBudgetMillis: 60_000),
                               tables: ["a": DecisionTable(["soft": .retryNext, "3ds": .stepUp]), "b": DecisionTable()])

    func attempt(_ gateway: GatewayID, _ status: PaymentStatus, code: String? = nil, handedOff: Bool = false) -> AttemptSummary {
        AttemptSummary(reference: .generate(), gateway: gateway, status: status, gatewayCode: code, handedOff: handedOff)
    }

    func refusal(_ result: Result<Set<GatewayID>, AttemptPolicy.Refusal>) -> String? {
        if case .failure(let refusal) = result { refusal.code } else { nil }
    }

    @Test("a first attempt is allowed; money held, an open attempt and exhaustion refuse")
    func basics() {
        #expect((try? policy.nextAttempt(payment: .created, attempts: []).get()) == [])
        #expect(refusal(policy.nextAttempt(payment: .paid, attempts: [attempt("a", .paid)])) == "already_paid")
        #expect(refusal(policy.nextAttempt(payment: .authorized, attempts: [attempt("a", .authorized)])) == "already_paid")
        #expect(refusal(policy.nextAttempt(payment: .pending, attempts: [attempt("a", .pending)])) == "attempt_in_progress")
        let three = [attempt("a", .failed, code: "soft"), attempt("b", .failed, code: "soft"), attempt("a", .failed, code: "soft")]
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: three)) == "attempts_exhausted")
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: three, customerRequested: true)) == "attempts_exhausted")
    }

    @Test("the decision table decides after a decline; never-sent always moves on; tried gateways are avoided")
    func declines() {
        #expect((try? policy.nextAttempt(payment: .failed, attempts: [attempt("a", .failed, code: "soft")]).get()) == ["a"])
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: [attempt("a", .failed, code: "hard")])) == "not_retryable")
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: [attempt("a", .failed, code: "3ds")])) == "needs_customer")
        #expect((try? policy.nextAttempt(payment: .failed, attempts: [attempt("b", .failed, code: AttemptFailure.notSentCode)]).get()) == ["b"])
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: [attempt("zzz", .failed, code: "soft")])) == "not_retryable")
    }

    @Test("after a hand-off or a cancel only the customer may ask again; the time budget stops automatic attempts")
    func handOffAndBudget() {
        let handedOff = [attempt("a", .failed, code: "soft", handedOff: true)]
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: handedOff)) == "needs_customer")
        #expect((try? policy.nextAttempt(payment: .failed, attempts: handedOff, customerRequested: true).get()) == ["a"])
        #expect(refusal(policy.nextAttempt(payment: .cancelled, attempts: [attempt("a", .cancelled)])) == "needs_customer")
        #expect(refusal(policy.nextAttempt(payment: .failed, attempts: [attempt("a", .failed, code: "soft")], elapsed: .seconds(61)))
                == "time_budget_spent")
        #expect(AppCheckout.mayAskAgain(after: .failed, handedOff: false, attemptsMade: 1, maxAttempts: 3))
        #expect(!AppCheckout.mayAskAgain(after: .failed, handedOff: true, attemptsMade: 1, maxAttempts: 3))
        #expect(!AppCheckout.mayAskAgain(after: .cancelled, handedOff: false, attemptsMade: 1, maxAttempts: 3))
        #expect(!AppCheckout.mayAskAgain(after: .failed, handedOff: false, attemptsMade: 3, maxAttempts: 3))
        #expect(policy.mayTryNext(after: .neverSent, on: "a", handedOff: false))
        #expect(!policy.mayTryNext(after: .neverSent, on: "a", handedOff: true))
        #expect(policy.mayTryNext(after: .declined(code: "soft"), on: "a", handedOff: false))
        #expect(!policy.mayTryNext(after: .declined(code: "soft"), on: "b", handedOff: false))
        #expect(!policy.mayTryNext(after: .unknown, on: "a", handedOff: false))
    }

    @Test("merchant overrides win over a module's table")
    func overrides() {
        let merchant = MerchantConfiguration(id: "m", gateways: [], retry: RetryPolicy(decisionOverrides: ["a": ["hard": .retryNext]]))
        let merged = AttemptPolicy(merchant: merchant, moduleTables: ["a": DecisionTable(["soft": .retryNext])])
        #expect(merged.table(for: "a").decision(for: "hard") == .retryNext)
        #expect(merged.table(for: "a").decision(for: "soft") == .retryNext)
        #expect(merged.table(for: "b").decision(for: "soft") == .doNotRetry)
    }

    func report(_ status: PaymentStatus, _ minor: Int64? = nil, currency: String = "USD") -> StatusReport {
        StatusReport(gateway: "a", attempt: AttemptReference(rawValue: "x"), status: status,
                     amount: minor.map { Money(minorUnits: $0, currency: Currency.lookup(currency)!) })
    }

    @Test("reports: forward only, amounts that match, refunds within what moved, failed → paid only by inquiry")
    func verdicts() {
        typealias P = AttemptPolicy
        #expect(P.verdict(for: report(.paid, 1000), on: .pending, amount: amount, source: .notification) == .apply)
        #expect(P.verdict(for: report(.paid, 1000), on: .paid, amount: amount, source: .notification) == .duplicate)
        if case .refuse = P.verdict(for: report(.pending), on: .paid, amount: amount, source: .notification) {} else { Issue.record("moved back") }
        if case .refuse = P.verdict(for: report(.paid), on: .pending, amount: amount, source: .notification) {} else { Issue.record("no amount") }
        if case .refuse = P.verdict(for: report(.paid, 1), on: .pending, amount: amount, source: .inquiry) {} else { Issue.record("0.01") }
        if case .refuse = P.verdict(for: report(.authorized, 1000, currency: "EUR"), on: .pending, amount: amount, source: .inquiry) {} else {
            Issue.record("another currency")
        }
        if case .confirmByInquiry = P.verdict(for: report(.paid, 1000), on: .failed, amount: amount, source: .notification) {} else {
            Issue.record("a notification turned a failed attempt paid")
        }
        #expect(P.verdict(for: report(.paid, 1000), on: .failed, amount: amount, source: .inquiry) == .apply)
        if case .refuse = P.verdict(for: report(.refunded, 1000), on: .failed, amount: amount, source: .notification) {} else {
            Issue.record("a refund of nothing")
        }
        if case .refuse = P.verdict(for: report(.refunded, 2000), on: .paid, amount: amount, source: .notification) {} else {
            Issue.record("a refund above the amount")
        }
        #expect(P.verdict(for: report(.failed), on: .pending, amount: amount, source: .answer) == .apply)
    }

    @Test("refunds: only of money that moved, with amount and currency, adding up to at most what was captured; the amounts decide partial or full")
    func refunds() {
        typealias P = AttemptPolicy
        func verdict(_ status: PaymentStatus, _ minor: Int64?, on current: PaymentStatus = .paid, refunded: Int64 = 0,
                     total: Int64? = nil, currency: String = "USD") -> P.Verdict {
            var report = report(status, minor, currency: currency)
            report.refundedTotal = total.map { Money(minorUnits: $0, currency: Currency.lookup(currency)!) }
            return P.verdict(for: report, on: current, amount: amount, refundedMinorUnits: refunded, source: .notification)
        }
        // Never of an attempt that moved no money, whatever it says.
        for current in [PaymentStatus.pending, .failed, .authorized, .cancelled, .expired, .created] {
            if case .refuse = verdict(.refunded, 1000, on: current) {} else { Issue.record("a refund of nothing on \(current)") }
            if case .refuse = verdict(.partiallyRefunded, 100, on: current) {} else { Issue.record("a partial refund of nothing on \(current)") }
        }
        // Amount and currency are required.
        if case .refuse = verdict(.refunded, nil) {} else { Issue.record("a refund without an amount") }
        if case .refuse = verdict(.refunded, 1000, currency: "EUR") {} else { Issue.record("a refund in another currency") }
        if case .refuse = verdict(.partiallyRefunded, 0) {} else { Issue.record("a refund of zero") }
        // The amounts decide: a "refunded" of part is a partial refund; a "partial" of everything is a full one.
        #expect(verdict(.refunded, 400) == .refund(status: .partiallyRefunded, refundedMinorUnits: 400))
        #expect(verdict(.partiallyRefunded, 1000) == .refund(status: .refunded, refundedMinorUnits: 1000))
        #expect(verdict(.partiallyRefunded, 400) == .refund(status: .partiallyRefunded, refundedMinorUnits: 400))
        // Refunds add up, and never beyond what was captured.
        #expect(verdict(.partiallyRefunded, 300, on: .partiallyRefunded, refunded: 400) == .refund(status: .partiallyRefunded, refundedMinorUnits: 700))
        #expect(verdict(.refunded, 600, on: .partiallyRefunded, refunded: 400) == .refund(status: .refunded, refundedMinorUnits: 1000))
        if case .refuse = verdict(.partiallyRefunded, 700, on: .partiallyRefunded, refunded: 400) {} else { Issue.record("refunds above the captured") }
        if case .refuse = verdict(.refunded, 2000) {} else { Issue.record("a refund above the amount") }
        if case .refuse = verdict(.partiallyRefunded, 1, on: .refunded, refunded: 1000) {} else { Issue.record("a refund after everything went back") }
        if case .refuse = verdict(.partiallyRefunded, Int64.max, on: .partiallyRefunded, refunded: 400) {} else { Issue.record("an overflowing sum") }
        // A gateway's running total replaces the sum; one that does not grow is a duplicate.
        #expect(verdict(.partiallyRefunded, 300, on: .partiallyRefunded, refunded: 400, total: 700) == .refund(status: .partiallyRefunded, refundedMinorUnits: 700))
        #expect(verdict(.refunded, nil, on: .partiallyRefunded, refunded: 400, total: 1000) == .refund(status: .refunded, refundedMinorUnits: 1000))
        #expect(verdict(.partiallyRefunded, 400, on: .partiallyRefunded, refunded: 400, total: 400) == .duplicate)
        if case .refuse = verdict(.refunded, nil, on: .paid, total: 1001) {} else { Issue.record("a running total above the captured") }
    }

    @Test("a notification its module asks to confirm never applies by itself: successes, declines and refunds wait for the server's inquiry")
    func confirmedNotifications() {
        typealias P = AttemptPolicy
        for status in [PaymentStatus.paid, .authorized, .failed, .cancelled] {
            let minor: Int64? = status == .paid || status == .authorized ? 1000 : nil
            if case .confirmByInquiry = P.verdict(for: report(status, minor), on: .pending, amount: amount, source: .notificationToConfirm) {} else {
                Issue.record("a \(status) notification applied without the server's inquiry")
            }
            #expect(P.verdict(for: report(status, minor), on: .pending, amount: amount, source: .inquiry) == .apply)
        }
        if case .confirmByInquiry = P.verdict(for: report(.refunded, 400), on: .paid, amount: amount, source: .notificationToConfirm) {} else {
            Issue.record("a refund notification applied without the server's inquiry")
        }
        // What could never apply is refused outright; a duplicate stays a duplicate.
        if case .refuse = P.verdict(for: report(.paid, 1), on: .pending, amount: amount, source: .notificationToConfirm) {} else {
            Issue.record("a wrong amount asked for an inquiry")
        }
        #expect(P.verdict(for: report(.paid, 1000), on: .paid, amount: amount, source: .notificationToConfirm) == .duplicate)
    }
}
