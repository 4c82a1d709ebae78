import Foundation
import Till
import TillOrchestration

/// A payment as the merchant server stores it.
public struct StoredPayment: Sendable, Hashable, Codable {
    public var id: String
    public var merchantID: String
    public var intent: PaymentIntent
    /// The authoritative status: derived from the attempts' statuses, forward-only.
    public var status: PaymentStatus
    public var attempts: [StoredAttempt]
    /// Every capture, void and refund Till started, oldest first.
    public var operations: [StoredOperation]
    public var createdAt: Date
    public var updatedAt: Date

    package init(id: String, merchantID: String, intent: PaymentIntent, status: PaymentStatus, attempts: [StoredAttempt],
                 operations: [StoredOperation] = [], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.merchantID = merchantID
        self.intent = intent
        self.status = status
        self.attempts = attempts
        self.operations = operations
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One attempt at a payment, on one gateway.
public struct StoredAttempt: Sendable, Hashable, Codable {
    public var reference: AttemptReference
    public var paymentID: String
    /// 1 for the first attempt; unique per payment, so two concurrent prepares cannot both add the same one.
    public var sequence: Int
    public var gateway: GatewayID
    public var status: PaymentStatus
    public var gatewayReference: String?
    public var gatewayCode: String?
    /// What the app reported seeing. Informational only.
    public var clientOutcome: ClientOutcome?
    /// The return URL the gateway chose among those the app offered.
    public var returnURL: URL?
    /// When the app's submit was accepted (at most one per attempt).
    public var submittedAt: Date?
    /// The customer was handed off (wallet, 3-D Secure, redirect): no automatic next attempt after it.
    public var handedOff: Bool = false
    /// The attempt was started because the customer chose to try again.
    public var customerRequested: Bool = false
    /// Inquiries the reconciler made, and when the next one is due (`nil`: as soon as it is old enough).
    public var inquiryCount: Int = 0
    public var nextInquiryAt: Date?
    /// Everything refunded on this attempt so far, in minor units of the payment's currency.
    public var refundedMinorUnits: Int64 = 0
    public var createdAt: Date
    public var updatedAt: Date

    package init(reference: AttemptReference, paymentID: String, sequence: Int, gateway: GatewayID, status: PaymentStatus, gatewayReference: String? = nil, gatewayCode: String? = nil, clientOutcome: ClientOutcome? = nil, returnURL: URL? = nil, submittedAt: Date? = nil, handedOff: Bool = false, customerRequested: Bool = false, inquiryCount: Int = 0, nextInquiryAt: Date? = nil, refundedMinorUnits: Int64 = 0, createdAt: Date, updatedAt: Date) {
        self.reference = reference
        self.paymentID = paymentID
        self.sequence = sequence
        self.gateway = gateway
        self.status = status
        self.gatewayReference = gatewayReference
        self.gatewayCode = gatewayCode
        self.clientOutcome = clientOutcome
        self.returnURL = returnURL
        self.submittedAt = submittedAt
        self.handedOff = handedOff
        self.customerRequested = customerRequested
        self.inquiryCount = inquiryCount
        self.nextInquiryAt = nextInquiryAt
        self.refundedMinorUnits = refundedMinorUnits
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What creating a payment did.
public enum CreateOutcome: Sendable, Hashable {
    case created(StoredPayment)
    /// The same idempotency key with the same request: the payment it created before.
    case replayed(StoredPayment)
    /// The same idempotency key with a different request.
    case idempotencyConflict
    /// The merchant reference is already used by another payment.
    case duplicateReference
}

/// What applying a status report (from a notification or an inquiry) did.
public enum ApplyOutcome: Sendable, Hashable {
    /// The attempt moved; `payment` is the payment's status afterwards.
    case applied(attempt: PaymentStatus, payment: PaymentStatus)
    /// This event was seen before (same gateway and event id), or the status is unchanged.
    case duplicate
    /// Stored, not applied: it would have moved the attempt backwards, or broke the money rule.
    case stale(String)
    /// Stored, not applied: only the server's own inquiry may make this move (a notification that would
    /// turn a failed attempt paid). The caller inquires.
    case needsInquiry(String)
    /// No such attempt.
    case unknownAttempt
    /// A verified notification for an attempt this merchant does not have: kept in the quarantine
    /// (``PaymentStore/quarantined(merchant:limit:)``), acknowledged, applied to nothing.
    case quarantined
    /// The notification was about one of Till's operations, and this is what it did to it (its attempt-level
    /// report was not applied: the operation's settlement moved the money once).
    case operation(OperationSettleOutcome)
}

/// A notification exactly as it arrived, stored before it is acknowledged.
public struct RawNotification: Sendable, Hashable {
    public var gateway: GatewayID
    public var headers: [String: String]
    public var body: Data
    public var receivedAt: Date

    public init(gateway: GatewayID, headers: [String: String], body: Data, receivedAt: Date = Date()) {
        self.gateway = gateway
        self.headers = headers
        self.body = body
        self.receivedAt = receivedAt
    }
}

/// Where the merchant server keeps payments, attempts and notifications.
///
/// Two implementations share one test suite: ``SQLitePaymentStore`` (the embedded default, WAL) and
/// ``PostgresPaymentStore``. Both enforce the invariants in the schema too: unique merchant references,
/// unique idempotency keys, unique attempt references and sequence numbers, unique (attempt, gateway, event id)
/// notifications, and triggers that refuse to move a paid payment or attempt backwards.
public protocol PaymentStore: Sendable {
    /// Creates or upgrades the schema. Safe to call on every start.
    func migrate() async throws

    /// How many verified notifications are stored for an attempt (each delivery of the same event
    /// is stored once).
    func notificationCount(attempt: AttemptReference) async throws -> Int

    /// The verified notifications about `attempt` from `gateway` that were stored to be confirmed by the server's
    /// own inquiry (outcome `needs_inquiry`), newest first, at most `limit`: an inquiry hands them to the gateway
    /// module (``InquiryQuery/confirming``), which may take from them what its status answer lacks.
    func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification]

    /// Whether `merchant` has used the idempotency key `key` (a create with it would be a replay or a conflict,
    /// never a new payment).
    func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool

    /// Creates a payment, honouring an idempotency key.
    /// - Parameters:
    ///   - requestHash: a digest of the canonical request, compared on replay.
    ///   - clientSecretHash: the digest of the payment's new client secret (never the secret). Stored with a
    ///     new payment; on a replay it replaces the stored one, in the same transaction, so only the
    ///     latest secret issued for a payment works.
    func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?, requestHash: String,
                clientSecretHash: String?) async throws -> CreateOutcome

    /// The merchant and the client-secret digest of a payment, for authenticating an app's request;
    /// nil when there is no such payment or it has no secret.
    func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)?

    /// A merchant's payment with its attempts.
    func payment(id: String, merchant: String) async throws -> StoredPayment?

    /// The payment an attempt belongs to.
    func payment(attempt: AttemptReference) async throws -> StoredPayment?

    /// Adds the next attempt of a payment, with status `created`, if the payment's attempts are still
    /// exactly `expected` (their references and statuses) — a compare-and-set, checked under the
    /// payment's lock. Fails with ``StoreError/conflict`` when anything changed in between (another
    /// prepare, or a late notification for an earlier attempt).
    /// With `intent`, the payment's intent must still be exactly it too (a `PATCH` in between fails the prepare, so
    /// no attempt is prepared on an intent the store no longer holds).
    func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                    customerRequested: Bool, intent: PaymentIntent?) async throws

    /// Replaces a merchant's payment's intent (`PATCH /v1/payments/{id}`: the customer, description and
    /// metadata; the reference, amount, method and action never change) if its attempts are still exactly
    /// `expected` — the same compare-and-set as ``addAttempt(_:payment:gateway:expected:customerRequested:intent:)``,
    /// so no attempt can start on the old intent while the new one is written. Returns the payment as
    /// changed, `nil` when the merchant has no such payment; ``StoreError/conflict`` when anything changed.
    func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment?

    /// Records what Prepare returned (the gateway's reference, the chosen return URL) and moves the
    /// attempt to `pending`.
    func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws

    /// Marks a pending attempt as submitted, once: true for the one caller that marked it, false when
    /// it was already submitted or is no longer pending (so a payload is never sent to the gateway twice).
    func markSubmitted(_ reference: AttemptReference) async throws -> Bool

    /// Records a client-side outcome. Never changes a status; a hand-off it reports is kept
    /// (``markHandedOff(_:)``).
    func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws

    /// Records that the attempt handed the customer off (a wallet, 3-D Secure, a redirect). Never undone.
    func markHandedOff(_ reference: AttemptReference) async throws

    /// In one transaction: stores the raw notification (deduplicated by attempt, gateway and event id) and
    /// applies its report by ``AttemptPolicy/verdict(for:on:amount:refundedMinorUnits:source:)`` (`source` is
    /// `notification`, or `notificationToConfirm` when the gateway module asks for an inquiry first) to
    /// the attempt and the payment. The attempt must belong to `merchant` and have been made on
    /// `notification.gateway`; otherwise the notification goes to the quarantine (`quarantined`) and
    /// touches nothing: a notification authenticated with one merchant's gateway secret can never touch
    /// another's payment.
    func ingest(_ notification: RawNotification, report: StatusReport, operation: OperationReport?, merchant: String,
                source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome

    /// Applies a report the server obtained itself (an inquiry, a gateway's answer) by the attempt policy.
    func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome

    /// Under the payment's lock, in one transaction: a known `idempotencyKey` of `merchant` is answered with the
    /// operation it created (`replayed`; `idempotencyConflict` when the request or the payment differs), else
    /// `decide` chooses the new operation from the payment as it is now — its attempts and operations, the
    /// money rules — or throws to refuse, and the operation is stored. Nothing is stored when `decide` throws,
    /// and two concurrent requests are decided one after the other.
    func addOperation(payment: String, merchant: String, idempotencyKey: String, requestHash: String,
                      decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome

    /// One operation, by its reference.
    func operation(_ reference: OperationReference) async throws -> StoredOperation?

    /// In one transaction: applies a gateway's statement about an operation (``StoreRules/settle(_:report:paymentAmount:now:)``)
    /// and, when it succeeded, its money to the attempt and the payment.
    func settleOperation(_ reference: OperationReference, report: OperationReport) async throws -> OperationSettleOutcome

    /// Open operations (pending or unknown) made before `createdBefore` whose next inquiry is due at `now`,
    /// oldest first, at most `limit`.
    func dueOperations(createdBefore: Date, now: Date, limit: Int) async throws -> [StoredOperation]

    /// Claims a due operation for one inquiry, as ``claimInquiry(_:expected:next:)`` does for attempts.
    func claimOperationInquiry(_ reference: OperationReference, expected: Date?, next: Date) async throws -> Bool

    // MARK: Events (the outbox)

    /// A merchant's events matching `query`, in the order they were stored, at most `query.limit`.
    func events(merchant: String, query: EventQuery) async throws -> [StoredEvent]

    /// One of a merchant's events.
    func event(id: String, merchant: String) async throws -> StoredEvent?

    /// Every try at delivering an event, oldest first.
    func deliveryAttempts(event id: String) async throws -> [StoredDeliveryAttempt]

    /// Claims events for delivery: pending, due at `now`, and with no earlier event of their payment still pending (a
    /// payment's events are delivered in order, so at most one of each payment is claimed). Each claimed event's next
    /// attempt becomes `claimedUntil`, so no other instance claims it while this one delivers; a claim that is never
    /// recorded (the instance died) falls due again then. Oldest first, at most `limit`. Several instances never claim
    /// the same event at once (PostgreSQL skips rows another transaction holds; SQLite has one writer). With `merchants`,
    /// only those merchants' events: an instance delivers for the merchants its configuration knows, never another's
    /// (an instance started with an older configuration must not take a newer merchant's events).
    func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchants: [String]?) async throws -> [StoredEvent]

    /// Records the tries of a claimed delivery and its result, if the claim still holds (the event is pending with the
    /// next attempt `claimedUntil`). False when it no longer does (a redelivery was asked for meanwhile): the tries
    /// are recorded anyway, the state is left to the newer claim.
    @discardableResult
    func recordDelivery(event id: String, claimedUntil: Date, attempts: [StoredDeliveryAttempt], result: DeliveryResult) async throws -> Bool

    /// Makes one of a merchant's events pending again, due at `now` (whatever its state). `nil` when there is no such event.
    func redeliver(event id: String, merchant: String, now: Date) async throws -> StoredEvent?

    /// How many events are pending, and the oldest one's creation time.
    func eventBacklog() async throws -> EventBacklog

    /// The merchant's quarantined notifications, newest first.
    func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification]

    /// Open attempts (created or pending) made before `createdBefore` whose next inquiry is due at `now`,
    /// oldest first, at most `limit`.
    func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt]

    /// Claims a due attempt for one inquiry: sets its next inquiry to `next` and counts it, only if its
    /// schedule is still `expected` (another server instance may have claimed it). True when this
    /// caller claimed it.
    func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool

    /// Appends to the reconciliation log.
    func logReconciliation(_ entry: ReconciliationEntry) async throws

    /// The reconciliation log, newest first.
    func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry]

    /// One page of a merchant's payments matching `query`, newest first by (creation time, id), at most `query.limit`.
    func searchPayments(merchant: String, query: PaymentSearchQuery) async throws -> [StoredPayment]

    /// The reconciliation entries (the reconciler's and on-demand inquiries) of a payment's attempts, oldest first.
    func reconciliationLog(payment id: String) async throws -> [ReconciliationEntry]

    /// The notifications stored for a payment's attempts, oldest first, with each one's verdict.
    func notifications(payment id: String) async throws -> [StoredNotification]

    /// Appends an operator's action to the audit log.
    func logAudit(_ entry: AuditEntry) async throws

    /// The audit log, newest first: every entry, or those about one payment.
    func auditLog(payment id: String?, limit: Int) async throws -> [AuditEntry]

    /// The merchant's attempts created at or after `since`, counted by gateway, status and gateway code.
    func attemptCounts(merchant: String, since: Date) async throws -> [AttemptCount]

    /// The merchant's attempts created at or after `since` that ended (paid, authorised, refunded or failed), counted by
    /// gateway, status, gateway code, the payment's segment values and action, and the 10 seconds they started in: what
    /// routing that learns reads (``RoutingScoresRefresher``).
    func routingOutcomes(merchant: String, since: Date) async throws -> [RoutingOutcomeCount]

    /// Releases connections.
    func close() async throws

    /// Throws when the store cannot answer a read now: what `GET /readyz` asks.
    func checkReady() async throws
}

extension PaymentStore {
    /// One indexed read (an idempotency key no merchant has): it needs the database file, or a connection and an
    /// answer from PostgreSQL, and costs nothing more.
    public func checkReady() async throws {
        _ = try await hasIdempotencyKey("till-readiness", merchant: "")
    }

    /// Creates a payment without a client secret (a payment only the merchant's key can reach).
    public func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?,
                       requestHash: String) async throws -> CreateOutcome {
        try await create(intent, merchant: merchant, id: id, idempotencyKey: idempotencyKey, requestHash: requestHash, clientSecretHash: nil)
    }

    /// Stores and applies a verified notification (source `notification`).
    public func ingest(_ notification: RawNotification, report: StatusReport, merchant: String) async throws -> ApplyOutcome {
        try await ingest(notification, report: report, operation: nil, merchant: merchant, source: .notification)
    }

    /// Stores and applies a verified notification without an operation.
    public func ingest(_ notification: RawNotification, report: StatusReport, merchant: String,
                       source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await ingest(notification, report: report, operation: nil, merchant: merchant, source: source)
    }

    /// Claims due events of every merchant.
    public func claimDueEvents(now: Date, claimedUntil: Date, limit: Int) async throws -> [StoredEvent] {
        try await claimDueEvents(now: now, claimedUntil: claimedUntil, limit: limit, merchants: nil)
    }

    /// Claims due events of one merchant.
    public func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchant: String?) async throws -> [StoredEvent] {
        try await claimDueEvents(now: now, claimedUntil: claimedUntil, limit: limit, merchants: merchant.map { [$0] })
    }

    /// Adds an attempt the server started by itself (not at the customer's request).
    public func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt]) async throws {
        try await addAttempt(reference, payment: payment, gateway: gateway, expected: expected, customerRequested: false, intent: nil)
    }

    /// Applies a report obtained by the server's own inquiry.
    public func apply(_ report: StatusReport) async throws -> ApplyOutcome {
        try await apply(report, source: .inquiry)
    }
}

/// A verified notification for an attempt its merchant does not have, kept for an operator.
public struct QuarantinedNotification: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var eventID: String
    public var reportedStatus: PaymentStatus
    public var headers: [String: String]
    public var body: Data
    public var receivedAt: Date

    package init(gateway: GatewayID, attempt: AttemptReference, eventID: String, reportedStatus: PaymentStatus, headers: [String: String], body: Data, receivedAt: Date) {
        self.gateway = gateway
        self.attempt = attempt
        self.eventID = eventID
        self.reportedStatus = reportedStatus
        self.headers = headers
        self.body = body
        self.receivedAt = receivedAt
    }
}

/// An open attempt whose inquiry is due.
public struct DueAttempt: Sendable, Hashable {
    public var reference: AttemptReference
    public var paymentID: String
    public var merchantID: String
    public var gateway: GatewayID
    public var status: PaymentStatus
    public var gatewayReference: String?
    public var amount: Money
    public var createdAt: Date
    public var inquiryCount: Int
    public var nextInquiryAt: Date?
    /// When the app submitted the attempt's payload (the card's token, say), after which the customer may have
    /// been handed to a 3-D Secure page; `nil` for an attempt without a submit step.
    public var submittedAt: Date?

    public init(reference: AttemptReference, paymentID: String, merchantID: String, gateway: GatewayID, status: PaymentStatus,
                gatewayReference: String?, amount: Money, createdAt: Date, inquiryCount: Int, nextInquiryAt: Date?, submittedAt: Date? = nil) {
        self.reference = reference
        self.paymentID = paymentID
        self.merchantID = merchantID
        self.gateway = gateway
        self.status = status
        self.gatewayReference = gatewayReference
        self.amount = amount
        self.createdAt = createdAt
        self.inquiryCount = inquiryCount
        self.nextInquiryAt = nextInquiryAt
        self.submittedAt = submittedAt
    }
}

/// One thing the reconciler did, and why.
public struct ReconciliationEntry: Sendable, Hashable, Codable {
    public var merchantID: String
    public var attempt: AttemptReference
    public var gateway: GatewayID
    /// `settled`, `expired`, `unchanged`, `inquiry_failed`, `skipped_budget`.
    public var action: String
    public var reason: String
    public var statusBefore: PaymentStatus
    public var statusAfter: PaymentStatus
    public var at: Date

    public init(merchantID: String, attempt: AttemptReference, gateway: GatewayID, action: String, reason: String,
                statusBefore: PaymentStatus, statusAfter: PaymentStatus, at: Date = Date()) {
        self.merchantID = merchantID
        self.attempt = attempt
        self.gateway = gateway
        self.action = action
        self.reason = reason
        self.statusBefore = statusBefore
        self.statusAfter = statusAfter
        self.at = at
    }
}

/// Store failures the server maps to HTTP answers.
public enum StoreError: Error, Sendable, Hashable {
    /// A uniqueness rule refused the write (a concurrent request won).
    case conflict(String)
    /// The storage URL or the database is unusable.
    case unavailable(String)
}

extension PaymentStatus {
    /// Whether an attempt in this status may have operations: only one that held money (an authorization, a
    /// payment, a refund) or was voided or expired after an authorization. A store reads a payment's operations only then, so a checkout's reads stay
    /// as cheap as before operations existed.
    package var mayHaveOperations: Bool { moneyMoved || self == .authorized || self == .cancelled || self == .expired }

    /// A refund report: the only one whose rule reads the operations (what Till captured).
    package var isRefund: Bool { self == .refunded || self == .partiallyRefunded }
}

/// What the rules need of a payment to apply a report to it: its status, amount and attempts, read from
/// their columns (a write does not decode the stored intent).
package struct PaymentFacts: Sendable, Equatable {
    package var id: String
    package var merchantID: String
    package var status: PaymentStatus
    package var amount: Money
    package var attempts: [StoredAttempt]
    /// The payment's operations (what a refund may take back depends on what Till captured).
    package var operations: [StoredOperation]

    package init(id: String, merchantID: String, status: PaymentStatus, amount: Money, attempts: [StoredAttempt],
                 operations: [StoredOperation] = []) {
        self.id = id
        self.merchantID = merchantID
        self.status = status
        self.amount = amount
        self.attempts = attempts
        self.operations = operations
    }

    /// What the rules need of a whole payment.
    package init(_ payment: StoredPayment) {
        self.init(id: payment.id, merchantID: payment.merchantID, status: payment.status, amount: payment.intent.amount,
                  attempts: payment.attempts, operations: payment.operations)
    }

    /// The amount as stored in the `amount_minor` and `currency` columns.
    /// - Throws: ``StoreError/unavailable(_:)`` for a currency code Till does not know (a damaged row).
    package static func amount(minorUnits: Int64, currency code: String) throws -> Money {
        guard let currency = Currency.lookup(code) else { throw StoreError.unavailable("payment row holds an unknown currency") }
        return Money(minorUnits: minorUnits, currency: currency)
    }
}

/// The decisions every store makes the same way, as pure functions over the rows it loaded inside its
/// transaction.
package enum StoreRules {
    /// How a report changes an attempt and its payment.
    package struct Effect: Equatable {
        package var outcome: ApplyOutcome
        /// The attempt's new status, when it moves.
        package var attemptStatus: PaymentStatus?
        /// The payment's new status, when it moves.
        package var paymentStatus: PaymentStatus?
        /// The attempt's new refunded total, when a refund applies.
        package var refundedMinorUnits: Int64?
        /// Till's open refunds the report's running total shows done: they become `succeeded` (their money is in
        /// ``refundedMinorUnits`` already).
        package var settledOperations: [OperationReference] = []

        package init(outcome: ApplyOutcome, attemptStatus: PaymentStatus? = nil, paymentStatus: PaymentStatus? = nil,
                     refundedMinorUnits: Int64? = nil) {
            self.outcome = outcome
            self.attemptStatus = attemptStatus
            self.paymentStatus = paymentStatus
            self.refundedMinorUnits = refundedMinorUnits
        }
    }

    package static func apply(_ report: StatusReport, attempt: StoredAttempt, payment: PaymentFacts,
                      source: AttemptPolicy.ReportSource) -> Effect {
        // The one rule set: forward only, amounts that match, refunds only of moved money, failed → paid
        // only by the server's own inquiry.
        let captured = MoneyTotals(attempt: attempt, operations: payment.operations, amount: payment.amount)
            .capturedMoney(in: payment.amount.currency)
        switch AttemptPolicy.verdict(for: report, on: attempt.status, amount: payment.amount,
                                     refundedMinorUnits: attempt.refundedMinorUnits, captured: captured, source: source) {
        case .duplicate:
            return Effect(outcome: .duplicate)
        case .refuse(let reason):
            return Effect(outcome: .stale(reason))
        case .confirmByInquiry(let reason):
            return Effect(outcome: .needsInquiry(reason))
        case .apply:
            return moved(to: report.status, refunded: nil)
        case .refund(let status, let total):
            var effect = moved(to: status, refunded: total)
            // A running total that grew by exactly what Till's open refunds ask for says they happened: they settle
            // now, so their own later answer (an inquiry, a notification) finds them settled and adds nothing again.
            if report.refundedTotal != nil, report.eventID.hasPrefix("operation:") == false {
                let open = payment.operations.filter { $0.attempt == attempt.reference && $0.kind == .refund && !$0.status.isFinal }
                let grown = total - attempt.refundedMinorUnits
                let settled = grown > 0 && open.reduce(0, { $0 + $1.amount.minorUnits }) == grown ? open
                    : open.filter { $0.amount.minorUnits == grown }.prefix(1).map { $0 }
                effect.settledOperations = settled.map(\.reference)
            }
            return effect
        }
        func moved(to status: PaymentStatus, refunded: Int64?) -> Effect {
            let statuses = payment.attempts.map { $0.reference == attempt.reference ? status : $0.status }
            let paymentStatus = derivedStatus(current: payment.status, attempts: statuses)
            return Effect(outcome: .applied(attempt: status, payment: paymentStatus ?? payment.status),
                          attemptStatus: status == attempt.status ? nil : status, paymentStatus: paymentStatus,
                          refundedMinorUnits: refunded)
        }
    }

    /// The payment's status re-derived from its attempts (each forward-only on its own), or nil when
    /// unchanged. It may go from failed back to pending when a new attempt starts, or from cancelled
    /// to authorized when a later attempt holds funds; it never leaves a money-moved status except
    /// through refunds (the schema's triggers refuse it too).
    package static func derivedStatus(current: PaymentStatus, attempts: [PaymentStatus]) -> PaymentStatus? {
        let derived = PaymentStatus.aggregate(attempts)
        guard derived != current else { return nil }
        if current.moneyMoved && current.transition(to: derived) != .advance { return nil }
        return derived
    }

    /// Whether the attempts a prepare decided on are still exactly the stored ones.
    package static func unchanged(_ stored: [StoredAttempt], expected: [StoredAttempt]) -> Bool {
        stored.map(\.reference) == expected.map(\.reference) && stored.map(\.status) == expected.map(\.status)
    }
}

extension ApplyOutcome {
    /// How the outcome is recorded next to a stored notification.
    package var storedName: String {
        switch self {
        case .applied: "applied"
        case .duplicate: "duplicate"
        case .stale: "stale"
        case .needsInquiry: "needs_inquiry"
        case .unknownAttempt: "unknown_attempt"
        case .quarantined: "quarantined"
        case .operation(let outcome): outcome.storedName
        }
    }
}
