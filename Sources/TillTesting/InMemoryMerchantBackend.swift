import Foundation
import Till

/// A merchant backend in memory, over one gateway: the stand-in for TillServer in tests and the
/// demo. It applies the same rules as the real server: notifications are verified, deduplicated by
/// event id, and applied forward-only; a client report never changes the status.
public actor InMemoryMerchantBackend: MerchantBackend {
    public let gateway: any CheckoutServer
    public let notificationURL: URL?

    /// What happened to each notification offered with ``receive(_:)``.
    public enum Receipt: Sendable, Equatable {
        case applied(PaymentStatus)
        case duplicate
        /// Verified, but it would have moved the status backwards: stored, not applied.
        case stale(String)
        case rejected(CheckoutError)
    }

    private var reports: [AttemptReference: StatusReport] = [:]
    /// Everything refunded on each attempt, in minor units.
    private var refunded: [AttemptReference: Int64] = [:]
    private var clientOutcomes: [AttemptReference: ClientOutcome] = [:]
    private var seenEvents: Set<String> = []
    private var contexts: [AttemptReference: SubmitContext] = [:]
    private var submitted: Set<AttemptReference> = []
    /// Every notification receipt, in order.
    public private(set) var receipts: [Receipt] = []

    public init(gateway: any CheckoutServer, notificationURL: URL? = URL(string: "https://merchant.invalid/v1/notifications/fake")) {
        self.gateway = gateway
        self.notificationURL = notificationURL
    }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        _ = try intent.validated()
        let attempt = AttemptReference.generate()
        // As the server does: the gateway picks the return URL that fits among those the app offered.
        let returnURL = try gateway.returnURL(from: returnURLs, for: intent)
        var preparation = try await gateway.prepare(AttemptContext(intent: intent, attempt: attempt, returnURL: returnURL,
                                                                   notificationURL: notificationURL))
        preparation.returnURL = preparation.returnURL ?? returnURL
        if reports[attempt] == nil {
            reports[attempt] = StatusReport(gateway: gateway.gateway, attempt: attempt, status: .pending, eventID: "prepare:\(attempt)")
        }
        contexts[attempt] = SubmitContext(intent: intent, attempt: attempt, gatewayReference: preparation.gatewayReference,
                                          returnURL: returnURL, notificationURL: notificationURL)
        return preparation
    }

    /// Runs the gateway's **Submit** once per attempt, as the server does, and applies the status
    /// its answer carries.
    public func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        guard let context = contexts[attempt] else {
            throw CheckoutError(.invalidField, field: "attempt", message: "no such attempt")
        }
        guard submitted.insert(attempt).inserted else {
            throw CheckoutError(.invalidTransition, field: "attempt", message: "this attempt was already submitted")
        }
        let result = try await gateway.submit(submission, context: context)
        if let report = result.report, report.attempt == attempt { _ = apply(report, source: .answer) }
        return result.next
    }

    public func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws {
        clientOutcomes[attempt] = outcome
    }

    /// The client outcome the app reported for `attempt`.
    public func clientOutcome(for attempt: AttemptReference) -> ClientOutcome? { clientOutcomes[attempt] }

    public func status(of attempt: AttemptReference) async throws -> StatusReport? { reports[attempt] }

    /// Verifies and applies a notification; returns the acknowledgement to send, or nil to reject it
    /// (so the gateway retries).
    @discardableResult
    public func receive(_ notification: IncomingNotification) -> NotificationAcknowledgement? {
        let verified: VerifiedNotification
        do {
            verified = try gateway.verifyNotification(notification)
        } catch let error as CheckoutError {
            receipts.append(.rejected(error))
            return nil
        } catch {
            receipts.append(.rejected(CheckoutError(.malformedBody, message: "unverifiable notification")))
            return nil
        }
        let report = verified.report
        guard seenEvents.insert(report.eventID).inserted else {
            receipts.append(.duplicate)
            return verified.acknowledgement
        }
        switch apply(report, source: verified.confirmBeforeApplying ? .notificationToConfirm : .notification) {
        case .apply: receipts.append(.applied(report.status))
        case .refund(let status, _): receipts.append(.applied(status))
        case .duplicate: receipts.append(.duplicate)
        case .refuse(let reason): receipts.append(.stale(reason))
        case .confirmByInquiry(let reason):
            receipts.append(.stale(reason))
            Task { _ = try? await self.inquire(report.attempt) }
        }
        return verified.acknowledgement
    }

    /// Asks the gateway and applies the answer, as the server does for unknown outcomes.
    @discardableResult
    public func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        let report = try await gateway.inquire(InquiryQuery(attempt: attempt))
        _ = apply(report, source: .inquiry)
        return reports[attempt]
    }

    /// The server's rule set (``AttemptPolicy/verdict(for:on:amount:refundedMinorUnits:source:)``), not a copy of it.
    private func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) -> AttemptPolicy.Verdict {
        // Only attempts this backend prepared can change; a report about anything else is refused.
        guard let current = reports[report.attempt], let context = contexts[report.attempt] else { return .refuse("unknown attempt") }
        let verdict = AttemptPolicy.verdict(for: report, on: current.status, amount: context.intent.amount,
                                            refundedMinorUnits: refunded[report.attempt] ?? 0, source: source)
        switch verdict {
        case .apply:
            reports[report.attempt] = report
        case .refund(let status, let total):
            var applied = report
            applied.status = status
            reports[report.attempt] = applied
            refunded[report.attempt] = total
        case .duplicate, .refuse, .confirmByInquiry:
            break
        }
        return verdict
    }
}
