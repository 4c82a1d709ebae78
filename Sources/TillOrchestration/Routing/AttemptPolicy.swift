import Foundation
import Till

/// One attempt of a payment, as the attempt policy sees it.
public struct AttemptSummary: Sendable, Hashable {
    public var reference: AttemptReference
    public var gateway: GatewayID
    public var status: PaymentStatus
    /// The gateway's code for how it ended (a decline code, or ``AttemptFailure/notSentCode``).
    public var gatewayCode: String?
    /// The customer was handed to someone who may authenticate them (a wallet, 3-D Secure, a redirect).
    public var handedOff: Bool
    /// The attempt was started because the customer chose to try again.
    public var customerRequested: Bool

    public init(reference: AttemptReference, gateway: GatewayID, status: PaymentStatus, gatewayCode: String? = nil,
                handedOff: Bool = false, customerRequested: Bool = false) {
        self.reference = reference
        self.gateway = gateway
        self.status = status
        self.gatewayCode = gatewayCode
        self.handedOff = handedOff
        self.customerRequested = customerRequested
    }
}

/// The rules every part of Till applies to attempts — the merchant server, the app's checkout loop,
/// the in-memory backend, the cascade engine and the chaos run call this one type, so they cannot
/// drift apart. Pure: it reads what it is given and decides.
///
/// - **May a new attempt start, and where?** ``nextAttempt(payment:attempts:customerRequested:elapsed:)``
/// - **May the next gateway be tried after a failure?** ``mayTryNext(after:on:handedOff:)``
/// - **Does a report apply?** ``verdict(for:on:amount:refundedMinorUnits:source:)``: forward only, amount and currency
///   matching the attempt, refunds only of money that moved and within it, and a failed attempt becomes
///   paid only through the server's own inquiry.
public struct AttemptPolicy: Sendable, Hashable {
    /// Attempts, time budget and inquiries.
    public var retry: RetryPolicy
    /// Each gateway's decision table with the merchant's overrides applied.
    public var tables: [GatewayID: DecisionTable]

    public init(retry: RetryPolicy = RetryPolicy(), tables: [GatewayID: DecisionTable] = [:]) {
        self.retry = retry
        self.tables = tables
    }

    /// The policy of `merchant`: its retry settings, and each gateway's module table with the merchant's
    /// `decisionOverrides` on top.
    public init(merchant: MerchantConfiguration, moduleTables: [GatewayID: DecisionTable]) {
        var tables: [GatewayID: DecisionTable] = [:]
        for (gateway, table) in moduleTables {
            tables[gateway] = table.overriding(with: merchant.retry.decisionOverrides[gateway.rawValue] ?? [:])
        }
        self.init(retry: merchant.retry, tables: tables)
    }

    /// The decision table of `gateway` (never retry when the gateway is unknown).
    public func table(for gateway: GatewayID) -> DecisionTable { tables[gateway] ?? DecisionTable() }

    // MARK: New attempts

    /// Why no new attempt may start; `code` is the API's error code.
    public struct Refusal: Sendable, Hashable, Error {
        public var code: String
        public var reason: String
        public init(_ code: String, _ reason: String) {
            self.code = code
            self.reason = reason
        }
    }

    /// Whether a new attempt may start for a payment in `status` whose attempts so far are `attempts`
    /// (in order), and which gateways it must not use.
    ///
    /// The rules, in order:
    /// 1. a payment that holds money (paid, authorized, refunded) gets no new attempt (`already_paid`);
    /// 2. nor one with an attempt still open (`attempt_in_progress`): its outcome is not known yet;
    /// 3. at most `maxAttempts` attempts (`attempts_exhausted`);
    /// 4. no automatic attempt after the time budget (`time_budget_spent`);
    /// 5. after a failure on an attempt that handed the customer off (wallet, 3-D Secure, redirect), or a
    ///    cancel, only the customer may ask for another (`needs_customer`): never automatically;
    /// 6. otherwise the last failure decides: one that never reached its gateway may move on; a decline
    ///    moves on only when the gateway's decision table says `retry_next` (`step_up` and
    ///    `do_not_retry` are refused as `needs_customer` and `not_retryable`). A customer's explicit
    ///    choice to try again overrides the table and the budget, never rules 1–3.
    ///
    /// - Returns: the gateways already tried (which the next attempt avoids), or the refusal.
    /// How many attempts of one payment may be refused for their own input (``AttemptFailure/inputRefused``).
    public static let maxInputRefusals = 10

    public func nextAttempt(payment status: PaymentStatus, attempts: [AttemptSummary], customerRequested: Bool = false,
                            elapsed: Duration = .zero) -> Result<Set<GatewayID>, Refusal> {
        if status.moneyMoved || status == .authorized || status == .refunded {
            return .failure(Refusal("already_paid", "the payment is \(status)"))
        }
        if let open = attempts.first(where: { !$0.status.isNegative }) {
            return .failure(Refusal("attempt_in_progress", "attempt \(open.reference) is \(open.status); wait for its outcome"))
        }
        // An attempt refused for its own input before anything was sent is a mistake to fix, not a try: the
        // decision is the one before it, with the same gateways left. A bounded number, so an app that keeps
        // sending the same mistake cannot grow the payment without end.
        let refused = attempts.filter { $0.gatewayCode == AttemptFailure.inputRefusedCode }.count
        if refused >= Self.maxInputRefusals {
            return .failure(Refusal("attempts_exhausted", "\(refused) attempts were refused for their input; fix the payment or the app"))
        }
        let attempts = attempts.filter { $0.gatewayCode != AttemptFailure.inputRefusedCode }
        if attempts.count >= retry.maxAttempts {
            return .failure(Refusal("attempts_exhausted", "no attempts left for this payment (\(retry.maxAttempts))"))
        }
        let tried = Set(attempts.map(\.gateway))
        guard let last = attempts.last else { return .success(tried) }
        if customerRequested { return .success(tried) }
        if elapsed >= .milliseconds(retry.timeBudgetMillis) {
            return .failure(Refusal("time_budget_spent", "the retry time budget (\(retry.timeBudgetMillis) ms) is spent; the customer may try again"))
        }
        if last.status == .cancelled {
            return .failure(Refusal("needs_customer",
                                    "the customer cancelled; only the customer may choose to try again (prepare with \"customerRequested\": true)"))
        }
        if last.handedOff {
            return .failure(Refusal("needs_customer",
                                    "the last attempt handed the customer off and then \(last.status); only the customer may choose to try again (prepare with \"customerRequested\": true)"))
        }
        if last.gatewayCode == AttemptFailure.notSentCode { return .success(tried) }
        switch table(for: last.gateway).decision(for: last.gatewayCode) {
        case .retryNext:
            return .success(tried)
        case .stepUp:
            return .failure(Refusal("needs_customer", "the decline (\(last.gatewayCode ?? "no code")) asks the customer to step up"))
        case .doNotRetry:
            return .failure(Refusal("not_retryable",
                                    "the last attempt's decline (\(last.gatewayCode ?? "no code")) may not be retried on another gateway"))
        }
    }

    /// Whether the next gateway may be tried right after a failed call, in-process (the cascade engine):
    /// only when the failure is known not to have charged, the customer was never handed off, and the
    /// gateway's decision table allows it.
    public func mayTryNext(after failure: AttemptFailure, on gateway: GatewayID, handedOff: Bool) -> Bool {
        guard !handedOff else { return false }
        switch failure {
        case .neverSent, .inputRefused: return true
        case .declined(let code): return table(for: gateway).decision(for: code) == .retryNext
        case .unknown: return false
        }
    }

    // MARK: Reports

    /// Where a report comes from.
    public enum ReportSource: String, Sendable, Hashable {
        /// A verified notification the gateway sent.
        case notification
        /// A verified notification whose gateway module asks for the server's own inquiry before it
        /// applies (``VerifiedNotification/confirmBeforeApplying``): anything it would change is kept and
        /// answered by an inquiry.
        case notificationToConfirm = "notification_to_confirm"
        /// An inquiry the server itself made.
        case inquiry
        /// The gateway's answer to a call the server made (a submit, a prepare's failure).
        case answer
    }

    /// What to do with a report.
    public enum Verdict: Sendable, Hashable {
        /// Apply it: the attempt moves to the report's status.
        case apply
        /// Apply a refund: the attempt moves to `status` (`partially_refunded` or `refunded`, decided by
        /// the amounts, not by the gateway's word) with `refundedMinorUnits` refunded in all.
        case refund(status: PaymentStatus, refundedMinorUnits: Int64)
        /// Nothing to do: the attempt is already there.
        case duplicate
        /// Keep it, do not apply it, with the reason.
        case refuse(String)
        /// Keep it, do not apply it, and ask the gateway (a notification that would turn a failed attempt
        /// into a paid one: only the server's own inquiry may do that).
        case confirmByInquiry(String)
    }

    /// Whether `report` applies to an attempt now in `current`, made for `amount`, of which
    /// `refundedMinorUnits` were already refunded.
    ///
    /// - A report that says money moved or is held (`paid`, `authorized`) must carry an amount in the
    ///   attempt's currency equal to the attempt's amount; without one it is not applied.
    /// - A refund (`refunded`, `partially_refunded`) applies only to an attempt that moved money (or, from the
    ///   server's own inquiry, a refund of the whole amount of one Till never saw paid), and must
    ///   carry its amount in the attempt's currency. Refunds add up (or the gateway's running total,
    ///   ``StatusReport/refundedTotal``, replaces the sum) and never exceed what was captured (`captured`
    ///   when captures Till made decided it, else the attempt's amount). The amounts decide the status: `refunded` when everything captured went
    ///   back, `partially_refunded` otherwise, whatever the gateway called it.
    /// - Otherwise a report never moves an attempt backwards (``PaymentStatus/transition(to:)``).
    /// - A failed, cancelled or expired attempt becomes paid or authorized only through an inquiry the
    ///   server made; a notification alone is kept and answered by one.
    /// - A report from a ``ReportSource/notificationToConfirm`` never applies by itself: whatever it
    ///   would change (a success, a decline, a refund) is kept and answered by the server's own inquiry.
    public static func verdict(for report: StatusReport, on current: PaymentStatus, amount: Money,
                               refundedMinorUnits: Int64 = 0, captured: Money? = nil, source: ReportSource) -> Verdict {
        let verdict = ruling(for: report, on: current, amount: amount, refundedMinorUnits: refundedMinorUnits, captured: captured,
                             source: source)
        switch verdict {
        case .apply, .refund:
            guard source == .notificationToConfirm else { return verdict }
            return .confirmByInquiry("the gateway's \(report.status) notification is confirmed by the server's own inquiry before it applies")
        case .refuse(let why) where source == .notificationToConfirm && current.moneyMoved
            && (report.status == .refunded || report.status == .partiallyRefunded):
            // A refund notification that only triggers (Citcon's, whose amounts may be empty) asks the inquiry even
            // when its own amounts could not be applied: otherwise a paid attempt, which the reconciler never
            // revisits, would never learn of the refund.
            return .confirmByInquiry("the gateway's refund notification is confirmed by the server's own inquiry (\(why))")
        case .duplicate, .refuse, .confirmByInquiry:
            return verdict
        }
    }

    /// The verdict before a confirmable notification is turned into a request for the server's inquiry.
    private static func ruling(for report: StatusReport, on current: PaymentStatus, amount: Money,
                               refundedMinorUnits: Int64, captured: Money?, source: ReportSource) -> Verdict {
        let status = report.status
        if status == .refunded || status == .partiallyRefunded {
            return refundVerdict(for: report, on: current, captured: captured ?? amount, refunded: refundedMinorUnits, source: source)
        }
        switch current.transition(to: status) {
        case .unchanged: return .duplicate
        case .rejected(let reason): return .refuse(reason)
        case .advance: break
        }
        if status == .paid || status == .authorized {
            guard let reported = report.amount else {
                return .refuse("a \(status) report without an amount is not applied")
            }
            guard reported == amount else {
                return .refuse("amount mismatch: the gateway reports \(reported), the attempt is \(amount)")
            }
            if current.isNegative && source != .inquiry {
                return .confirmByInquiry("a \(current) attempt becomes \(status) only through the server's own inquiry")
            }
        }
        return .apply
    }

    /// The refund half of ``verdict(for:on:amount:refundedMinorUnits:source:)``. The refunded total is the
    /// gateway's running total when it reports one, else what was refunded plus this refund's amount, else
    /// (a gateway that reports only the balance) what was captured less what remains. A reported balance
    /// (``StatusReport/remaining``) must agree with the total: one that does not is confirmed by the
    /// server's own inquiry, and from an inquiry it is refused.
    private static func refundVerdict(for report: StatusReport, on current: PaymentStatus, captured: Money,
                                      refunded: Int64, source: ReportSource) -> Verdict {
        // Only the server's own inquiry may say that money moved on an attempt Till never saw paid (an order paid
        // and refunded before any notification arrived), and only a refund of the attempt's whole amount: then
        // nothing is held whatever was captured, and the attempt is `refunded` instead of pending for ever. A
        // partial refund of it is not applied: what was captured is not known (a partial capture, then a refund of
        // it, would show money held that is not). Only an attempt that is still open or holds an authorisation:
        // after a failed, cancelled or expired one another attempt may exist, and a refunded attempt would then
        // hide the money that one holds. A notification alone never does any of this.
        let mayTakeFromInquiry = source == .inquiry && (current == .created || current == .pending || current == .authorized)
        guard current.moneyMoved || mayTakeFromInquiry else {
            return .refuse("a refund of an attempt that never moved money (\(current)) is not applied")
        }
        for money in [report.amount, report.refundedTotal, report.remaining].compactMap({ $0 }) where money.currency != captured.currency {
            return .refuse("refund currency \(money.currency.code) is not the attempt's \(captured.currency.code)")
        }
        let total: Int64
        if let reported = report.amount ?? report.refundedTotal {
            guard reported.minorUnits > 0 else {
                return .refuse("a refund of \(reported) is not a refund")
            }
            if let running = report.refundedTotal {
                total = running.minorUnits
            } else {
                let (sum, overflow) = refunded.addingReportingOverflow(reported.minorUnits)
                guard !overflow else { return .refuse("refund of \(reported) overflows") }
                total = sum
            }
        } else if let remaining = report.remaining {
            guard (0...captured.minorUnits).contains(remaining.minorUnits) else {
                return .refuse("a balance of \(remaining) is outside the captured \(captured)")
            }
            total = captured.minorUnits - remaining.minorUnits
        } else {
            return .refuse("a refund report without an amount is not applied")
        }
        guard total <= captured.minorUnits else {
            return .refuse("refunds of \(Money(minorUnits: total, currency: captured.currency)) would exceed the captured \(captured)")
        }
        guard current.moneyMoved || total == captured.minorUnits else {
            return .refuse("a partial refund of an attempt Till never saw paid (\(current)) is not applied: what was captured is not known")
        }
        if let remaining = report.remaining, captured.minorUnits - total != remaining.minorUnits {
            let why = "the gateway's balance of \(remaining) does not agree with \(captured) captured less "
                + "\(Money(minorUnits: total, currency: captured.currency)) refunded"
            return source == .inquiry ? .refuse(why) : .confirmByInquiry(why)
        }
        guard total > refunded else {
            // A running total that does not grow: this refund is already recorded.
            return .duplicate
        }
        return .refund(status: total == captured.minorUnits ? .refunded : .partiallyRefunded, refundedMinorUnits: total)
    }
}
