import Foundation
import Till
import TillServer

/// A ``PaymentStore`` that passes every call to the real store and tallies what applying a report did
/// (``ApplyOutcome``): per notification ingested, and per report the server applied itself (a gateway's
/// answer, an inquiry). The chaos run counts production's own outcomes this way, not a copy of its rules.
final class ObservedStore: PaymentStore {
    /// Outcome tallies by their stored name (`applied`, `duplicate`, `stale`, `needs_inquiry`, `quarantined`, …).
    struct Tally: Sendable, Hashable {
        var notifications: [String: Int] = [:]
        var answers: [String: Int] = [:]
        var inquiries: [String: Int] = [:]
    }

    let inner: any PaymentStore
    private let tally = Locked(Tally())

    init(_ inner: any PaymentStore) { self.inner = inner }

    /// The tallies so far.
    var counts: Tally { tally.withLock { $0 } }

    private func count(_ outcome: ApplyOutcome, _ key: WritableKeyPath<Tally, [String: Int]>) {
        let name = Self.name(outcome)
        tally.withLock { $0[keyPath: key][name, default: 0] += 1 }
    }

    static func name(_ outcome: ApplyOutcome) -> String {
        switch outcome {
        case .applied: "applied"
        case .duplicate: "duplicate"
        case .stale: "stale"
        case .needsInquiry: "needs_inquiry"
        case .unknownAttempt: "unknown_attempt"
        case .quarantined: "quarantined"
        }
    }

    func ingest(_ notification: RawNotification, report: StatusReport, merchant: String,
                source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        let outcome = try await inner.ingest(notification, report: report, merchant: merchant, source: source)
        count(outcome, \.notifications)
        return outcome
    }

    func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        let outcome = try await inner.apply(report, source: source)
        switch source {
        case .inquiry: count(outcome, \.inquiries)
        case .answer, .notification, .notificationToConfirm: count(outcome, \.answers)
        }
        return outcome
    }

    // Everything else passes through unchanged.

    func migrate() async throws { try await inner.migrate() }
    func notificationCount(attempt: AttemptReference) async throws -> Int { try await inner.notificationCount(attempt: attempt) }
    func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool { try await inner.hasIdempotencyKey(key, merchant: merchant) }
    func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        try await inner.notificationsAwaitingInquiry(attempt: attempt, gateway: gateway, limit: limit)
    }
    func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?, requestHash: String,
                clientSecretHash: String?) async throws -> CreateOutcome {
        try await inner.create(intent, merchant: merchant, id: id, idempotencyKey: idempotencyKey, requestHash: requestHash,
                               clientSecretHash: clientSecretHash)
    }
    func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? {
        try await inner.clientSecretHash(payment: id)
    }
    func payment(id: String, merchant: String) async throws -> StoredPayment? { try await inner.payment(id: id, merchant: merchant) }
    func payment(attempt: AttemptReference) async throws -> StoredPayment? { try await inner.payment(attempt: attempt) }
    func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                    customerRequested: Bool, intent: PaymentIntent?) async throws {
        try await inner.addAttempt(reference, payment: payment, gateway: gateway, expected: expected, customerRequested: customerRequested,
                                   intent: intent)
    }
    func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        try await inner.attemptPrepared(reference, gatewayReference: gatewayReference, returnURL: returnURL)
    }
    func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        try await inner.replaceIntent(intent, payment: payment, merchant: merchant, expected: expected)
    }
    func markSubmitted(_ reference: AttemptReference) async throws -> Bool { try await inner.markSubmitted(reference) }
    func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws {
        try await inner.recordClientOutcome(outcome, attempt: attempt)
    }
    func markHandedOff(_ reference: AttemptReference) async throws { try await inner.markHandedOff(reference) }
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
    func seedPendingAttempts(count: Int, merchant: String, gateway: GatewayID, amount: Money) async throws -> [AttemptReference] {
        try await inner.seedPendingAttempts(count: count, merchant: merchant, gateway: gateway, amount: amount)
    }
}
