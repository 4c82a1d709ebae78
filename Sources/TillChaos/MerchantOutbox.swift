import Foundation
import Till
import TillOrchestration
import TillService

/// A ``PaymentStore`` whose outbox is one merchant's: ``claimDueEvents(now:claimedUntil:limit:merchant:)`` claims only
/// that merchant's events; every other call passes through unchanged. The chaos run's ``EventDeliverer`` delivers
/// through it, so on a shared PostgreSQL database it never claims (and, finding no webhook for them, skips) the events
/// of other tests' merchants or of earlier runs.
final class MerchantOutbox: PaymentStore {
    let inner: any PaymentStore
    let merchant: String

    init(_ inner: any PaymentStore, merchant: String) {
        self.inner = inner
        self.merchant = merchant
    }

    func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchant: String?) async throws -> [StoredEvent] {
        try await inner.claimDueEvents(now: now, claimedUntil: claimedUntil, limit: limit, merchant: self.merchant)
    }

    // Everything else passes through unchanged.

    func migrate() async throws { try await inner.migrate() }
    func notificationCount(attempt: AttemptReference) async throws -> Int { try await inner.notificationCount(attempt: attempt) }
    func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        try await inner.notificationsAwaitingInquiry(attempt: attempt, gateway: gateway, limit: limit)
    }
    func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool { try await inner.hasIdempotencyKey(key, merchant: merchant) }
    func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?, requestHash: String,
                clientSecretHash: String?) async throws -> CreateOutcome {
        try await inner.create(intent, merchant: merchant, id: id, idempotencyKey: idempotencyKey, requestHash: requestHash,
                               clientSecretHash: clientSecretHash)
    }
    func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? { try await inner.clientSecretHash(payment: id) }
    func payment(id: String, merchant: String) async throws -> StoredPayment? { try await inner.payment(id: id, merchant: merchant) }
    func payment(attempt: AttemptReference) async throws -> StoredPayment? { try await inner.payment(attempt: attempt) }
    func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                    customerRequested: Bool, intent: PaymentIntent?) async throws {
        try await inner.addAttempt(reference, payment: payment, gateway: gateway, expected: expected, customerRequested: customerRequested,
                                   intent: intent)
    }
    func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        try await inner.replaceIntent(intent, payment: payment, merchant: merchant, expected: expected)
    }
    func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        try await inner.attemptPrepared(reference, gatewayReference: gatewayReference, returnURL: returnURL)
    }
    func markSubmitted(_ reference: AttemptReference) async throws -> Bool { try await inner.markSubmitted(reference) }
    func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws {
        try await inner.recordClientOutcome(outcome, attempt: attempt)
    }
    func markHandedOff(_ reference: AttemptReference) async throws { try await inner.markHandedOff(reference) }
    func ingest(_ notification: RawNotification, report: StatusReport, operation: OperationReport?, merchant: String,
                source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await inner.ingest(notification, report: report, operation: operation, merchant: merchant, source: source)
    }
    func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await inner.apply(report, source: source)
    }
    func addOperation(payment: String, merchant: String, idempotencyKey: String, requestHash: String,
                      decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome {
        try await inner.addOperation(payment: payment, merchant: merchant, idempotencyKey: idempotencyKey, requestHash: requestHash, decide: decide)
    }
    func operation(_ reference: OperationReference) async throws -> StoredOperation? { try await inner.operation(reference) }
    func settleOperation(_ reference: OperationReference, report: OperationReport) async throws -> OperationSettleOutcome {
        try await inner.settleOperation(reference, report: report)
    }
    func dueOperations(createdBefore: Date, now: Date, limit: Int) async throws -> [StoredOperation] {
        try await inner.dueOperations(createdBefore: createdBefore, now: now, limit: limit)
    }
    func claimOperationInquiry(_ reference: OperationReference, expected: Date?, next: Date) async throws -> Bool {
        try await inner.claimOperationInquiry(reference, expected: expected, next: next)
    }
    func events(merchant: String, query: EventQuery) async throws -> [StoredEvent] { try await inner.events(merchant: merchant, query: query) }
    func event(id: String, merchant: String) async throws -> StoredEvent? { try await inner.event(id: id, merchant: merchant) }
    func deliveryAttempts(event id: String) async throws -> [StoredDeliveryAttempt] { try await inner.deliveryAttempts(event: id) }
    @discardableResult
    func recordDelivery(event id: String, claimedUntil: Date, attempts: [StoredDeliveryAttempt], result: DeliveryResult) async throws -> Bool {
        try await inner.recordDelivery(event: id, claimedUntil: claimedUntil, attempts: attempts, result: result)
    }
    func redeliver(event id: String, merchant: String, now: Date) async throws -> StoredEvent? {
        try await inner.redeliver(event: id, merchant: merchant, now: now)
    }
    func eventBacklog() async throws -> EventBacklog { try await inner.eventBacklog() }
    func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification] {
        try await inner.quarantined(merchant: merchant, limit: limit)
    }
    func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt] {
        try await inner.dueAttempts(createdBefore: createdBefore, now: now, limit: limit)
    }
    func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool {
        try await inner.claimInquiry(reference, expected: expected, next: next)
    }
    func logReconciliation(_ entry: ReconciliationEntry) async throws { try await inner.logReconciliation(entry) }
    func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry] { try await inner.reconciliationLog(limit: limit) }
    func close() async throws { try await inner.close() }
}
