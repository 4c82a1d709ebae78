import Foundation
import Till
import TillOrchestration
import TillService

/// A ``PaymentStore`` that passes every call to a real store and tells an observer what it read and what applying
/// a report did: how the chaos run tallies production's own outcomes, and how a test sees which reads a request
/// made. Nothing is changed on the way.
public final class ObservedPaymentStore: PaymentStore {
    /// What the observer is told.
    public enum Event: Sendable, Hashable {
        /// A read of one payment (by `operation`) and whether it found one.
        case read(operation: String, found: Bool)
        /// A verified notification stored and applied (``PaymentStore/ingest(_:report:merchant:source:)``).
        case ingested(ApplyOutcome)
        /// A report the server applied itself (``PaymentStore/apply(_:source:)``).
        case applied(ApplyOutcome, source: AttemptPolicy.ReportSource)
        /// A gateway's statement about an operation the server applied itself (``PaymentStore/settleOperation(_:report:)``).
        case settled(OperationSettleOutcome)
    }

    /// The store every call goes to.
    public let inner: any PaymentStore
    private let observe: @Sendable (Event) -> Void

    public init(_ inner: any PaymentStore, observe: @escaping @Sendable (Event) -> Void) {
        self.inner = inner
        self.observe = observe
    }

    public func ingest(_ notification: RawNotification, report: StatusReport, operation: OperationReport?, merchant: String,
                       source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        let outcome = try await inner.ingest(notification, report: report, operation: operation, merchant: merchant, source: source)
        observe(.ingested(outcome))
        return outcome
    }

    public func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        let outcome = try await inner.apply(report, source: source)
        observe(.applied(outcome, source: source))
        return outcome
    }

    public func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? {
        let found = try await inner.clientSecretHash(payment: id)
        observe(.read(operation: "clientSecretHash", found: found != nil))
        return found
    }

    public func payment(id: String, merchant: String) async throws -> StoredPayment? {
        let found = try await inner.payment(id: id, merchant: merchant)
        observe(.read(operation: "payment(id:)", found: found != nil))
        return found
    }

    public func payment(attempt: AttemptReference) async throws -> StoredPayment? {
        let found = try await inner.payment(attempt: attempt)
        observe(.read(operation: "payment(attempt:)", found: found != nil))
        return found
    }

    public func settleOperation(_ reference: OperationReference, report: OperationReport) async throws -> OperationSettleOutcome {
        let outcome = try await inner.settleOperation(reference, report: report)
        observe(.settled(outcome))
        return outcome
    }

    // Everything else passes through unchanged.

    public func addOperation(payment: String, merchant: String, idempotencyKey: String, requestHash: String,
                             decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome {
        try await inner.addOperation(payment: payment, merchant: merchant, idempotencyKey: idempotencyKey, requestHash: requestHash, decide: decide)
    }
    public func operation(_ reference: OperationReference) async throws -> StoredOperation? { try await inner.operation(reference) }
    public func dueOperations(createdBefore: Date, now: Date, limit: Int) async throws -> [StoredOperation] {
        try await inner.dueOperations(createdBefore: createdBefore, now: now, limit: limit)
    }
    public func claimOperationInquiry(_ reference: OperationReference, expected: Date?, next: Date) async throws -> Bool {
        try await inner.claimOperationInquiry(reference, expected: expected, next: next)
    }

    public func migrate() async throws { try await inner.migrate() }
    public func notificationCount(attempt: AttemptReference) async throws -> Int { try await inner.notificationCount(attempt: attempt) }
    public func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool { try await inner.hasIdempotencyKey(key, merchant: merchant) }
    public func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        try await inner.notificationsAwaitingInquiry(attempt: attempt, gateway: gateway, limit: limit)
    }
    public func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?, requestHash: String,
                       clientSecretHash: String?) async throws -> CreateOutcome {
        try await inner.create(intent, merchant: merchant, id: id, idempotencyKey: idempotencyKey, requestHash: requestHash,
                               clientSecretHash: clientSecretHash)
    }
    public func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                           customerRequested: Bool, intent: PaymentIntent?) async throws {
        try await inner.addAttempt(reference, payment: payment, gateway: gateway, expected: expected, customerRequested: customerRequested,
                                   intent: intent)
    }
    public func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        try await inner.attemptPrepared(reference, gatewayReference: gatewayReference, returnURL: returnURL)
    }
    public func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        try await inner.replaceIntent(intent, payment: payment, merchant: merchant, expected: expected)
    }
    public func markSubmitted(_ reference: AttemptReference) async throws -> Bool { try await inner.markSubmitted(reference) }
    public func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws {
        try await inner.recordClientOutcome(outcome, attempt: attempt)
    }
    public func markHandedOff(_ reference: AttemptReference) async throws { try await inner.markHandedOff(reference) }
    public func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification] {
        try await inner.quarantined(merchant: merchant, limit: limit)
    }
    public func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt] {
        try await inner.dueAttempts(createdBefore: createdBefore, now: now, limit: limit)
    }
    public func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool {
        try await inner.claimInquiry(reference, expected: expected, next: next)
    }
    public func logReconciliation(_ entry: ReconciliationEntry) async throws { try await inner.logReconciliation(entry) }
    public func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry] { try await inner.reconciliationLog(limit: limit) }
    public func reconciliationLog(payment id: String) async throws -> [ReconciliationEntry] { try await inner.reconciliationLog(payment: id) }
    public func searchPayments(merchant: String, query: PaymentSearchQuery) async throws -> [StoredPayment] {
        try await inner.searchPayments(merchant: merchant, query: query)
    }
    public func notifications(payment id: String) async throws -> [StoredNotification] { try await inner.notifications(payment: id) }
    public func logAudit(_ entry: AuditEntry) async throws { try await inner.logAudit(entry) }
    public func auditLog(payment id: String?, limit: Int) async throws -> [AuditEntry] { try await inner.auditLog(payment: id, limit: limit) }
    public func attemptCounts(merchant: String, since: Date) async throws -> [AttemptCount] {
        try await inner.attemptCounts(merchant: merchant, since: since)
    }
    public func routingOutcomes(merchant: String, since: Date) async throws -> [RoutingOutcomeCount] {
        try await inner.routingOutcomes(merchant: merchant, since: since)
    }
    public func close() async throws { try await inner.close() }
    public func events(merchant: String, query: EventQuery) async throws -> [StoredEvent] { try await inner.events(merchant: merchant, query: query) }
    public func event(id: String, merchant: String) async throws -> StoredEvent? { try await inner.event(id: id, merchant: merchant) }
    public func deliveryAttempts(event id: String) async throws -> [StoredDeliveryAttempt] { try await inner.deliveryAttempts(event: id) }
    public func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchants: [String]?) async throws -> [StoredEvent] {
        try await inner.claimDueEvents(now: now, claimedUntil: claimedUntil, limit: limit, merchants: merchants)
    }
    @discardableResult
    public func recordDelivery(event id: String, claimedUntil: Date, attempts: [StoredDeliveryAttempt], result: DeliveryResult) async throws -> Bool {
        try await inner.recordDelivery(event: id, claimedUntil: claimedUntil, attempts: attempts, result: result)
    }
    public func redeliver(event id: String, merchant: String, now: Date) async throws -> StoredEvent? {
        try await inner.redeliver(event: id, merchant: merchant, now: now)
    }
    public func eventBacklog() async throws -> EventBacklog { try await inner.eventBacklog() }
}
