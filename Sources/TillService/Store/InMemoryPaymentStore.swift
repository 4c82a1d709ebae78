import Foundation
import Till
import TillOrchestration

/// A ``PaymentStore`` in memory, for the app's in-process mode, tests and demos: the same decisions as the
/// database stores (``StoreRules``, the one attempt policy), the same compare-and-set checks and uniqueness
/// rules, kept in one actor instead of a schema. Nothing survives the process; a server that must keep payments
/// uses SQLite or PostgreSQL.
public actor InMemoryPaymentStore: PaymentStore {
    private struct Notification {
        var gateway: GatewayID
        var eventID: String
        var attempt: AttemptReference
        var reported: PaymentStatus
        var outcome: String
        var raw: RawNotification
    }

    private var payments: [String: StoredPayment] = [:]
    private var paymentOfAttempt: [AttemptReference: String] = [:]
    private var references: Set<[String]> = []
    private var idempotency: [[String]: (requestHash: String, paymentID: String)] = [:]
    private var secrets: [String: String] = [:]
    private var notifications: [Notification] = []
    private var seenEvents: Set<[String]> = []
    private var quarantine: [(merchant: String, notification: QuarantinedNotification)] = []
    private var log: [ReconciliationEntry] = []
    private var audit: [AuditEntry] = []
    private var operationOfKey: [[String]: OperationReference] = [:]
    /// The outbox: every event in the order it was written (its position is its index plus one).
    private var outbox: [StoredEvent] = []
    private var eventIndex: [String: Int] = [:]
    private var lastEventSequence: [String: Int] = [:]
    private var deliveryLog: [StoredDeliveryAttempt] = []

    public init() {}

    public func migrate() async throws {}
    public func close() async throws {}

    public func notificationCount(attempt: AttemptReference) async throws -> Int {
        notifications.count { $0.attempt == attempt }
    }

    public func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        Array(notifications.reversed().filter { $0.attempt == attempt && $0.gateway == gateway && $0.outcome == "needs_inquiry" }
            .prefix(limit).map(\.raw))
    }

    public func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool { idempotency[[merchant, key]] != nil }

    public func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?, requestHash: String,
                       clientSecretHash: String?) async throws -> CreateOutcome {
        if let key = idempotencyKey, let known = idempotency[[merchant, key]] {
            guard known.requestHash == requestHash else { return .idempotencyConflict }
            guard let existing = payments[known.paymentID] else { throw StoreError.unavailable("idempotency key points to a missing payment") }
            if let clientSecretHash { secrets[existing.id] = clientSecretHash }
            return .replayed(existing)
        }
        guard !references.contains([merchant, intent.merchantReference]) else { return .duplicateReference }
        guard payments[id] == nil else { throw StoreError.conflict("payment \(id) already exists") }
        let now = Self.now()
        let payment = StoredPayment(id: id, merchantID: merchant, intent: intent, status: .created, attempts: [], createdAt: now, updatedAt: now)
        commit(payment)
        references.insert([merchant, intent.merchantReference])
        if let key = idempotencyKey { idempotency[[merchant, key]] = (requestHash, id) }
        if let clientSecretHash { secrets[id] = clientSecretHash }
        return .created(payment)
    }

    public func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? {
        guard let payment = payments[id], let hash = secrets[id] else { return nil }
        return (payment.merchantID, hash)
    }

    public func payment(id: String, merchant: String) async throws -> StoredPayment? {
        payments[id].flatMap { $0.merchantID == merchant ? $0 : nil }
    }

    public func payment(attempt: AttemptReference) async throws -> StoredPayment? {
        paymentOfAttempt[attempt].flatMap { payments[$0] }
    }

    public func addAttempt(_ reference: AttemptReference, payment id: String, gateway: GatewayID, expected: [StoredAttempt],
                           customerRequested: Bool, intent: PaymentIntent?) async throws {
        guard var payment = payments[id], StoreRules.unchanged(payment.attempts, expected: expected),
              intent.map({ $0 == payment.intent }) ?? true else {
            throw StoreError.conflict("the attempts or the intent of payment \(id) changed")
        }
        guard paymentOfAttempt[reference] == nil else { throw StoreError.conflict("attempt \(reference) already exists") }
        let now = Self.now()
        payment.attempts.append(StoredAttempt(reference: reference, paymentID: id, sequence: expected.count + 1, gateway: gateway,
                                              status: .created, customerRequested: customerRequested, createdAt: now, updatedAt: now))
        paymentOfAttempt[reference] = id
        commit(Self.refreshed(payment, at: now))
    }

    public func replaceIntent(_ intent: PaymentIntent, payment id: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        guard var payment = payments[id], payment.merchantID == merchant else { return nil }
        guard StoreRules.unchanged(payment.attempts, expected: expected) else { throw StoreError.conflict("the attempts of payment \(id) changed") }
        payment.intent = intent
        payment.updatedAt = Self.now()
        commit(payment)
        return payment
    }

    public func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        update(reference) { attempt in
            attempt.gatewayReference = gatewayReference
            attempt.returnURL = returnURL ?? attempt.returnURL
            if attempt.status == .created { attempt.status = .pending }
            return true
        }
    }

    public func markSubmitted(_ reference: AttemptReference) async throws -> Bool {
        update(reference) { attempt in
            guard attempt.submittedAt == nil, attempt.status == .pending else { return false }
            attempt.submittedAt = Self.now()
            return true
        }
    }

    public func recordClientOutcome(_ outcome: ClientOutcome, attempt reference: AttemptReference) async throws {
        update(reference) { attempt in
            attempt.clientOutcome = outcome
            attempt.handedOff = attempt.handedOff || outcome.handedOff == true
            return true
        }
    }

    public func markHandedOff(_ reference: AttemptReference) async throws {
        update(reference) { attempt in
            attempt.handedOff = true
            return true
        }
    }

    public func ingest(_ notification: RawNotification, report: StatusReport, operation: OperationReport?, merchant: String,
                       source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        guard report.gateway == notification.gateway, let id = paymentOfAttempt[report.attempt], let payment = payments[id],
              payment.merchantID == merchant,
              payment.attempts.contains(where: { $0.reference == report.attempt && $0.gateway == notification.gateway }) else {
            // Verified, but about no attempt of this merchant on this gateway: kept, applied to nothing.
            if !quarantine.contains(where: { $0.merchant == merchant && $0.notification.gateway == notification.gateway
                                             && $0.notification.attempt == report.attempt && $0.notification.eventID == report.eventID }) {
                quarantine.append((merchant, QuarantinedNotification(gateway: notification.gateway, attempt: report.attempt, eventID: report.eventID,
                                                                     reportedStatus: report.status, headers: notification.headers,
                                                                     body: notification.body, receivedAt: Self.millis(notification.receivedAt))))
            }
            return .quarantined
        }
        guard seenEvents.insert([report.attempt.rawValue, notification.gateway.rawValue, report.eventID]).inserted else { return .duplicate }
        let outcome: ApplyOutcome
        if let operation, source != .notificationToConfirm,
           let match = StoreRules.match(operation, among: payment.operations, attempt: report.attempt) {
            outcome = .operation(settle(match.reference, report: operation))
        } else {
            outcome = apply(report, to: id, source: source)
        }
        var raw = notification
        raw.receivedAt = Self.millis(notification.receivedAt)
        notifications.append(Notification(gateway: notification.gateway, eventID: report.eventID, attempt: report.attempt,
                                          reported: report.status, outcome: outcome.storedName, raw: raw))
        return outcome
    }

    public func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        guard let id = paymentOfAttempt[report.attempt] else { return .unknownAttempt }
        return apply(report, to: id, source: source)
    }

    // MARK: Operations

    public func addOperation(payment id: String, merchant: String, idempotencyKey: String, requestHash: String,
                             decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome {
        if let known = operationOfKey[[merchant, idempotencyKey]], let stored = stored(known) {
            return stored.requestHash == requestHash && stored.paymentID == id ? .replayed(stored) : .idempotencyConflict
        }
        guard var payment = payments[id], payment.merchantID == merchant else { throw StoreError.conflict("no payment \(id)") }
        var operation = try decide(payment)
        guard !payment.operations.contains(where: { $0.reference == operation.reference }) else {
            throw StoreError.conflict("operation \(operation.reference) already exists")
        }
        let now = Self.now()
        (operation.createdAt, operation.updatedAt) = (now, now)
        operation.nextInquiryAt = operation.nextInquiryAt.map(Self.millis)
        payment.operations.append(operation)
        commit(payment)
        operationOfKey[[merchant, idempotencyKey]] = operation.reference
        return .created(operation)
    }

    public func operation(_ reference: OperationReference) async throws -> StoredOperation? { stored(reference) }

    public func settleOperation(_ reference: OperationReference, report: OperationReport) async throws -> OperationSettleOutcome {
        settle(reference, report: report)
    }

    public func dueOperations(createdBefore: Date, now: Date, limit: Int) async throws -> [StoredOperation] {
        let (createdBefore, now) = (Self.millis(createdBefore), Self.millis(now))
        let due = payments.values.flatMap(\.operations).filter { operation in
            !operation.status.isFinal && operation.createdAt < createdBefore && (operation.nextInquiryAt.map { $0 <= now } ?? true)
        }
        return Array(due.sorted { ($0.createdAt, $0.reference.rawValue) < ($1.createdAt, $1.reference.rawValue) }.prefix(limit))
    }

    public func claimOperationInquiry(_ reference: OperationReference, expected: Date?, next: Date) async throws -> Bool {
        guard let id = paymentOfAttempt[reference.attempt], var payment = payments[id],
              let index = payment.operations.firstIndex(where: { $0.reference == reference }),
              payment.operations[index].nextInquiryAt == expected.map(Self.millis) else { return false }
        payment.operations[index].nextInquiryAt = Self.millis(next)
        payment.operations[index].inquiryCount += 1
        commit(payment)
        return true
    }

    private func stored(_ reference: OperationReference) -> StoredOperation? {
        paymentOfAttempt[reference.attempt].flatMap { payments[$0] }?.operations.first { $0.reference == reference }
    }

    /// The stores' one operation rule (``StoreRules/settle(_:report:paymentAmount:now:)``) applied to the rows.
    private func settle(_ reference: OperationReference, report: OperationReport) -> OperationSettleOutcome {
        guard let id = paymentOfAttempt[reference.attempt], var payment = payments[id],
              let index = payment.operations.firstIndex(where: { $0.reference == reference }) else { return .unknownOperation }
        let effect = StoreRules.settle(payment.operations[index], report: report, paymentAmount: payment.intent.amount, now: Self.now())
        if let changed = effect.operation {
            payment.operations[index] = changed
            commit(payment)
        }
        if let money = effect.money { _ = apply(money, to: id, source: .inquiry) }
        return effect.outcome
    }

    public func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification] {
        Array(quarantine.reversed().filter { $0.merchant == merchant }.prefix(limit).map(\.notification))
    }

    public func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt] {
        let (createdBefore, now) = (Self.millis(createdBefore), Self.millis(now))
        let due = payments.values.flatMap { payment in
            payment.attempts.filter { attempt in
                (attempt.status == .created || attempt.status == .pending) && attempt.createdAt < createdBefore
                    && (attempt.nextInquiryAt.map { $0 <= now } ?? true)
            }.map { attempt in
                DueAttempt(reference: attempt.reference, paymentID: payment.id, merchantID: payment.merchantID, gateway: attempt.gateway,
                           status: attempt.status, gatewayReference: attempt.gatewayReference, amount: payment.intent.amount,
                           createdAt: attempt.createdAt, inquiryCount: attempt.inquiryCount, nextInquiryAt: attempt.nextInquiryAt,
                           submittedAt: attempt.submittedAt)
            }
        }
        return Array(due.sorted { ($0.createdAt, $0.reference.rawValue) < ($1.createdAt, $1.reference.rawValue) }.prefix(limit))
    }

    public func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool {
        // As the database stores: compared and kept in milliseconds, and the attempt's `updatedAt` left alone.
        guard let id = paymentOfAttempt[reference], var payment = payments[id],
              let index = payment.attempts.firstIndex(where: { $0.reference == reference }),
              payment.attempts[index].nextInquiryAt == expected.map(Self.millis) else { return false }
        payment.attempts[index].nextInquiryAt = Self.millis(next)
        payment.attempts[index].inquiryCount += 1
        commit(payment)
        return true
    }

    public func logReconciliation(_ entry: ReconciliationEntry) async throws {
        var entry = entry
        entry.at = Self.millis(entry.at)
        log.append(entry)
    }

    public func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry] { Array(log.reversed().prefix(limit)) }

    public func searchPayments(merchant: String, query: PaymentSearchQuery) async throws -> [StoredPayment] {
        let matching = payments.values.filter { $0.merchantID == merchant && query.matches($0) }
        return Array(matching.sorted { ($0.createdAt.storedMillis, $0.id) > ($1.createdAt.storedMillis, $1.id) }.prefix(query.limit))
    }

    public func reconciliationLog(payment id: String) async throws -> [ReconciliationEntry] {
        log.filter { paymentOfAttempt[$0.attempt] == id }
    }

    public func notifications(payment id: String) async throws -> [StoredNotification] {
        notifications.filter { paymentOfAttempt[$0.attempt] == id }.map {
            StoredNotification(gateway: $0.gateway, attempt: $0.attempt, eventID: $0.eventID, reportedStatus: $0.reported,
                               verdict: $0.outcome, receivedAt: $0.raw.receivedAt)
        }
    }

    public func logAudit(_ entry: AuditEntry) async throws {
        var entry = entry
        entry.at = Self.millis(entry.at)
        audit.append(entry)
    }

    public func auditLog(payment id: String?, limit: Int) async throws -> [AuditEntry] {
        Array(audit.reversed().filter { id == nil || $0.paymentID == id }.prefix(limit))
    }

    public func attemptCounts(merchant: String, since: Date) async throws -> [AttemptCount] {
        var counts: [AttemptCount: Int] = [:]
        for payment in payments.values where payment.merchantID == merchant {
            for attempt in payment.attempts where attempt.createdAt >= since {
                counts[AttemptCount(gateway: attempt.gateway, status: attempt.status, gatewayCode: attempt.gatewayCode, count: 0), default: 0] += 1
            }
        }
        return counts.map { key, count in var key = key; key.count = count; return key }
    }

    public func routingOutcomes(merchant: String, since: Date) async throws -> [RoutingOutcomeCount] {
        var counts: [RoutingOutcomeCount: Int] = [:]
        for payment in payments.values where payment.merchantID == merchant {
            for attempt in payment.attempts where attempt.createdAt >= since && RoutingOutcomeCount.endedStatuses.contains(attempt.status) {
                let key = RoutingOutcomeCount(gateway: attempt.gateway, status: attempt.status, gatewayCode: attempt.gatewayCode,
                                              method: payment.intent.method.rawValue, currency: payment.intent.amount.currency.code,
                                              country: payment.intent.country?.code, cardIIN: payment.intent.cardIIN.map { String($0.prefix(6)) },
                                              action: payment.intent.action.rawValue,
                                              bucket: attempt.createdAt.storedMillis / RoutingOutcomeCount.bucketMillis, count: 0)
                counts[key, default: 0] += 1
            }
        }
        return counts.map { key, count in var key = key; key.count = count; return key }
    }

    // MARK: Rows

    /// Changes one attempt when `change` says so, and re-derives its payment's status. False when there is no
    /// such attempt or `change` changed nothing.
    @discardableResult
    private func update(_ reference: AttemptReference, _ change: (inout StoredAttempt) -> Bool) -> Bool {
        guard let id = paymentOfAttempt[reference], var payment = payments[id],
              let index = payment.attempts.firstIndex(where: { $0.reference == reference }) else { return false }
        let now = Self.now()
        guard change(&payment.attempts[index]) else { return false }
        payment.attempts[index].updatedAt = now
        commit(Self.refreshed(payment, at: now))
        return true
    }

    /// The stores' one rule (``StoreRules/apply(_:attempt:payment:source:)``) applied to the rows.
    private func apply(_ report: StatusReport, to id: String, source: AttemptPolicy.ReportSource) -> ApplyOutcome {
        guard let payment = payments[id], let index = payment.attempts.firstIndex(where: { $0.reference == report.attempt }) else {
            return .unknownAttempt
        }
        let effect = StoreRules.apply(report, attempt: payment.attempts[index], payment: PaymentFacts(payment), source: source)
        commit(effect.applied(to: payment, report: report, now: Self.now()))
        return effect.outcome
    }

    /// Keeps `payment` as it now is and writes the events its change makes (``EventRules``), as a database store does
    /// in the change's transaction.
    private func commit(_ payment: StoredPayment) {
        let before = payments[payment.id]
        payments[payment.id] = payment
        let last = lastEventSequence[payment.id] ?? 0
        guard let events = try? EventRules.events(before: before, after: payment, lastSequence: last, now: Self.now()),
              !events.isEmpty else { return }
        for var event in events {
            event.position = Int64(outbox.count + 1)
            eventIndex[event.id] = outbox.count
            outbox.append(event)
        }
        lastEventSequence[payment.id] = last + events.count
    }

    // MARK: Events

    public func events(merchant: String, query: EventQuery) async throws -> [StoredEvent] {
        let start = Int(max(0, min(query.after, Int64(outbox.count))))
        return Array(outbox[start...].lazy.filter { event in
            event.merchantID == merchant && query.type.map { $0 == event.type } ?? true
                && query.paymentID.map { $0 == event.paymentID } ?? true && query.state.map { $0 == event.state } ?? true
        }.prefix(query.limit))
    }

    public func event(id: String, merchant: String) async throws -> StoredEvent? {
        eventIndex[id].map { outbox[$0] }.flatMap { $0.merchantID == merchant ? $0 : nil }
    }

    public func deliveryAttempts(event id: String) async throws -> [StoredDeliveryAttempt] {
        deliveryLog.filter { $0.eventID == id }
    }

    public func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchants: [String]?) async throws -> [StoredEvent] {
        let (now, until) = (Self.millis(now), Self.millis(claimedUntil))
        var blocked: Set<String> = []
        var claimed: [StoredEvent] = []
        for index in outbox.indices where outbox[index].state == .pending && merchants.map({ $0.contains(outbox[index].merchantID) }) ?? true {
            let event = outbox[index]
            // The payment's earliest pending event is the only one that may go; it blocks the rest.
            guard blocked.insert(event.paymentID).inserted else { continue }
            guard claimed.count < limit, event.nextAttemptAt.map({ $0 <= now }) ?? true else { continue }
            outbox[index].nextAttemptAt = until
            claimed.append(outbox[index])
        }
        return claimed
    }

    @discardableResult
    public func recordDelivery(event id: String, claimedUntil: Date, attempts: [StoredDeliveryAttempt], result: DeliveryResult) async throws -> Bool {
        deliveryLog += attempts.map { attempt in
            var attempt = attempt
            attempt.at = Self.millis(attempt.at)
            return attempt
        }
        guard let index = eventIndex[id], outbox[index].state == .pending,
              outbox[index].nextAttemptAt == Self.millis(claimedUntil) else { return false }
        outbox[index].attemptCount += attempts.isEmpty ? 0 : 1
        switch result {
        case .delivered:
            outbox[index].state = .delivered
            outbox[index].deliveredAt = Self.now()
            outbox[index].nextAttemptAt = nil
        case .retry(let at):
            outbox[index].nextAttemptAt = Self.millis(at)
        case .failed:
            outbox[index].state = .failed
            outbox[index].nextAttemptAt = nil
        case .skipped:
            outbox[index].state = .skipped
            outbox[index].nextAttemptAt = nil
        }
        return true
    }

    public func redeliver(event id: String, merchant: String, now: Date) async throws -> StoredEvent? {
        guard let index = eventIndex[id], outbox[index].merchantID == merchant else { return nil }
        outbox[index].state = .pending
        outbox[index].nextAttemptAt = Self.millis(now)
        return outbox[index]
    }

    public func eventBacklog() async throws -> EventBacklog {
        let pending = outbox.filter { $0.state == .pending }
        return EventBacklog(pending: pending.count, oldestCreatedAt: pending.first?.createdAt)
    }

    /// `payment` with its status re-derived from its attempts (``StoreRules/derivedStatus(current:attempts:)``).
    private static func refreshed(_ payment: StoredPayment, at now: Date) -> StoredPayment {
        var payment = payment
        if let derived = StoreRules.derivedStatus(current: payment.status, attempts: payment.attempts.map(\.status)) {
            payment.status = derived
            payment.updatedAt = now
        }
        return payment
    }

    /// Now, at the stores' precision (milliseconds).
    private static func now() -> Date { millis(Date()) }

    /// `date` at the stores' precision: what a database store would read back.
    private static func millis(_ date: Date) -> Date { Date(storedMillis: date.storedMillis) }
}
