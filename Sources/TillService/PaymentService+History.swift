import Foundation
import Till
import TillOrchestration

/// One thing that happened to a payment, for a person reading its history (the operator console's timeline).
/// Plain text: whoever shows it escapes it.
public struct TimelineEntry: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case payment, attempt, exchange, submit, notification, inquiry, operation, event, delivery, audit
    }

    public var at: Date
    public var kind: Kind
    public var title: String
    public var detail: String
    /// What Till made of it, when that is a word (a notification's verdict, an inquiry's action, a delivery's result).
    public var verdict: String?
    /// Longer text shown on request (a gateway exchange's redacted bodies).
    public var more: String?

    public init(at: Date, kind: Kind, title: String, detail: String, verdict: String? = nil, more: String? = nil) {
        self.at = at
        self.kind = kind
        self.title = title
        self.detail = detail
        self.verdict = verdict
        self.more = more
    }
}

/// A payment with everything the store knows about it, in time order.
public struct PaymentHistory: Sendable {
    /// The payment as the merchant's key sees it (money totals included).
    public var view: PaymentView
    public var payment: StoredPayment
    /// The payment's events, oldest first (an operator may redeliver one).
    public var events: [StoredEvent]
    public var timeline: [TimelineEntry]
    /// What the money rules leave, in minor units of the payment's currency, over the attempt that holds the money
    /// (open operations counted against it): to capture, to refund; and whether a void is possible.
    public var leftToCapture: Int64 = 0
    public var leftToRefund: Int64 = 0
    public var voidable = false

    /// Whether `attempt` is one of the payment's attempts.
    public func has(attempt: String) -> Bool { payment.attempts.contains { $0.reference.rawValue == attempt } }
    /// Whether `event` is one of the payment's events.
    public func has(event: String) -> Bool { events.contains { $0.id == event } }
}

extension PaymentService {
    /// A payment's history: its attempts, the notifications about them with their verdicts, every inquiry (the
    /// reconciler's and those asked for), its operations, its events and each try at delivering them, and what
    /// operators did to it; ordered by time (ties in the order of ``TimelineEntry/Kind``). With `exchanges`, the requests
    /// this instance sent the gateways about its attempts, redacted, while they are still kept.
    public func history(paymentID id: String, merchant: MerchantRuntime, exchanges: GatewayExchanges? = nil) async throws -> PaymentHistory {
        guard let payment = try await store.payment(id: id, merchant: merchant.configuration.id) else { throw ServiceError.notFound("payment") }
        async let notifications = store.notifications(payment: id)
        async let inquiries = store.reconciliationLog(payment: id)
        async let events = store.events(merchant: merchant.configuration.id, query: EventQuery(paymentID: id, limit: 500))
        async let audit = store.auditLog(payment: id, limit: 200)
        let merchantID = merchant.configuration.id
        let stored = try await events
        var deliveries: [StoredDeliveryAttempt] = []
        for event in stored where event.attemptCount > 0 { deliveries += try await store.deliveryAttempts(event: event.id) }
        let timeline = Self.timeline(payment, notifications: try await notifications, inquiries: try await inquiries, events: stored,
                                     deliveries: deliveries, audit: try await audit.filter { $0.merchantID == merchantID },
                                     exchanges: exchanges?.exchanges(of: Set(payment.attempts.map(\.reference))) ?? [])
        var history = PaymentHistory(view: try await self.payment(id: id, merchant: merchant, forMerchant: true), payment: payment, events: stored,
                                     timeline: timeline)
        if let holding = payment.attempts.last(where: { $0.status == .authorized || $0.status.moneyMoved || $0.status == .cancelled }) {
            let totals = MoneyTotals(attempt: holding, operations: payment.operations, amount: payment.intent.amount)
            history.leftToCapture = totals.leftToCapture(status: holding.status)
            history.leftToRefund = totals.leftToRefund
            history.voidable = totals.voidable(status: holding.status)
        }
        return history
    }

    static func timeline(_ payment: StoredPayment, notifications: [StoredNotification], inquiries: [ReconciliationEntry], events: [StoredEvent],
                         deliveries: [StoredDeliveryAttempt], audit: [AuditEntry], exchanges: [GatewayExchanges.Exchange] = []) -> [TimelineEntry] {
        let amount = payment.intent.amount
        var entries = [TimelineEntry(at: payment.createdAt, kind: .payment, title: "Payment created",
                                     detail: "\(amount) for \(payment.intent.merchantReference), \(payment.intent.method.rawValue)")]
        let sequence = Dictionary(payment.attempts.map { ($0.reference, $0.sequence) }, uniquingKeysWith: { first, _ in first })
        func attemptName(_ reference: AttemptReference) -> String { sequence[reference].map { "attempt \($0)" } ?? reference.rawValue }
        for attempt in payment.attempts {
            var detail = "\(attempt.reference.rawValue), now \(attempt.status.rawValue)"
            if let code = attempt.gatewayCode { detail += ", gateway code \(code)" }
            if let reference = attempt.gatewayReference { detail += ", gateway reference \(reference)" }
            if attempt.handedOff { detail += ", customer handed off" }
            if attempt.customerRequested { detail += ", the customer chose to try again" }
            if let outcome = attempt.clientOutcome { detail += ", the app saw \(outcome.kind.rawValue)" }
            entries.append(TimelineEntry(at: attempt.createdAt, kind: .attempt, title: "Attempt \(attempt.sequence) on \(attempt.gateway.rawValue)", detail: detail))
            if let submitted = attempt.submittedAt {
                entries.append(TimelineEntry(at: submitted, kind: .submit, title: "App submitted \(attemptName(attempt.reference))", detail: attempt.reference.rawValue))
            }
        }
        for exchange in exchanges {
            let answer = exchange.statusCode.map { "HTTP \($0)" } ?? (exchange.failure ?? "no answer")
            let ok = exchange.statusCode.map { (200..<400).contains($0) } ?? false
            entries.append(TimelineEntry(at: exchange.at, kind: .exchange, title: "\(exchange.gateway.rawValue) request about \(attemptName(exchange.attempt))",
                                         detail: "\(exchange.method) \(exchange.url): \(answer) in \(exchange.milliseconds) ms",
                                         verdict: ok ? "answered" : "failed",
                                         more: "request: \(exchange.request.isEmpty ? "(no body)" : exchange.request)\nanswer: \(exchange.response.isEmpty ? "(no body)" : exchange.response)"))
        }
        for notification in notifications {
            entries.append(TimelineEntry(at: notification.receivedAt, kind: .notification,
                                         title: "Notification from \(notification.gateway.rawValue) about \(attemptName(notification.attempt))",
                                         detail: "reported \(notification.reportedStatus.rawValue), event \(notification.eventID)", verdict: notification.verdict))
        }
        for inquiry in inquiries {
            entries.append(TimelineEntry(at: inquiry.at, kind: .inquiry, title: "Inquiry of \(attemptName(inquiry.attempt)) at \(inquiry.gateway.rawValue)",
                                         detail: "\(inquiry.statusBefore.rawValue) → \(inquiry.statusAfter.rawValue): \(inquiry.reason)", verdict: inquiry.action))
        }
        for operation in payment.operations {
            var detail = "\(operation.amount), \(operation.reference.rawValue)"
            if let code = operation.gatewayCode { detail += ", gateway code \(code)" }
            entries.append(TimelineEntry(at: operation.createdAt, kind: .operation, title: "\(operation.reference.kind.rawValue.capitalized) on \(operation.gateway.rawValue)",
                                         detail: detail, verdict: operation.status.rawValue))
        }
        let eventType = Dictionary(events.map { ($0.id, $0.type.rawValue) }, uniquingKeysWith: { first, _ in first })
        for event in events {
            entries.append(TimelineEntry(at: event.createdAt, kind: .event, title: "Event \(event.sequence): \(event.type.rawValue)",
                                         detail: "\(event.id), \(event.attemptCount) tries", verdict: event.state.rawValue))
        }
        for delivery in deliveries {
            let answer = delivery.statusCode.map { "HTTP \($0)" } ?? (delivery.error ?? "no answer")
            let delivered = delivery.statusCode.map { (200..<300).contains($0) } ?? false
            entries.append(TimelineEntry(at: delivery.at, kind: .delivery, title: "Delivery of \(eventType[delivery.eventID] ?? delivery.eventID)",
                                         detail: "\(URL(string: delivery.endpoint).map { LoggingTransport<URLSessionTransport>.loggableURL($0, redactor: Redactor()) } ?? "an endpoint"): \(answer) in \(delivery.latencyMillis) ms", verdict: delivered ? "delivered" : "retry"))
        }
        for entry in audit {
            entries.append(TimelineEntry(at: entry.at, kind: .audit, title: "Operator \(entry.operatorName): \(entry.action) \(entry.target)",
                                         detail: entry.detail, verdict: entry.outcome))
        }
        let order = Dictionary(uniqueKeysWithValues: TimelineEntry.Kind.allCases.enumerated().map { ($1, $0) })
        return entries.enumerated().sorted { a, b in
            if a.element.at != b.element.at { return a.element.at < b.element.at }
            if a.element.kind != b.element.kind { return order[a.element.kind]! < order[b.element.kind]! }
            return a.offset < b.offset
        }.map(\.element)
    }
}
