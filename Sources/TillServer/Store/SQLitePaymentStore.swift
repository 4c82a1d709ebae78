import Foundation
import GRDB
import Till
import TillOrchestration
import TillService

/// The embedded store: one SQLite file in WAL mode, with `synchronous = FULL` so a write that was
/// acknowledged survives a crash. All writes go through one writer, so one payment is never mutated
/// by two requests at once, and the writes that arrive together share one transaction and one sync
/// (``GroupCommitWriter``), each answered only after that commit.
public final class SQLitePaymentStore: PaymentStore {
    private let pool: DatabasePool
    /// Every durable write goes through it: one transaction and one sync for all that arrive together.
    private let writer: GroupCommitWriter
    /// Stored intents already decoded (an intent's text never changes once stored).
    private let intents = IntentCache()
    /// Whether status changes write events (the outbox); off only to measure what the outbox costs.
    private let recordsEvents: Bool

    /// Opens (and creates) the database at `path`. With `recordsEvents` false no event is written (a benchmark's
    /// yardstick; a server always records them).
    public init(path: String, recordsEvents: Bool = true) throws {
        self.recordsEvents = recordsEvents
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // 16 MiB of page cache per connection (SQLite's default is 2 MiB): the indexes a write walks stay in memory
            // as the tables grow, instead of being read back from the file on every write.
            try db.execute(sql: "PRAGMA cache_size = -16384")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        configuration.busyMode = .timeout(10)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw StoreError.unavailable("cannot open SQLite database at \(path): \(error)")
        }
        writer = GroupCommitWriter(pool: pool)
    }

    public func migrate() async throws {
        try await pool.write { db in
            try db.execute(sql: Schema.createMigrationsTable)
            let done = try Set(Int.fetchAll(db, sql: "SELECT version FROM till_schema_migrations"))
            for migration in Schema.migrations(.sqlite) where !done.contains(migration.version) {
                for statement in migration.statements { try db.execute(sql: statement) }
                try db.execute(sql: "INSERT INTO till_schema_migrations (version, applied_at) VALUES (?, ?)",
                               arguments: [migration.version, Date().storedMillis])
            }
        }
    }

    public func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool {
        try await pool.read { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM till_idempotency_keys WHERE merchant_id = ? AND idempotency_key = ?"),
                              arguments: [merchant, key]) != nil
        }
    }

    public func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?,
                       requestHash: String, clientSecretHash: String?) async throws -> CreateOutcome {
        let intentJSON = try Self.encode(intent)
        intents.remember(intentJSON, intent)
        // The payment and its event are made before the write: the single writer's transaction only inserts them.
        let now = Date().storedMillis
        let stamp = Date(storedMillis: now)
        let created = StoredPayment(id: id, merchantID: merchant, intent: intent, status: .created, attempts: [], createdAt: stamp, updatedAt: stamp)
        let events = recordsEvents ? try EventRules.events(before: nil, after: created, lastSequence: 0, now: stamp) : []
        return try await writer.write { db -> CreateOutcome in
            if let key = idempotencyKey,
               let row = try Row.fetchOne(db.cachedStatement(sql: """
                   SELECT request_hash, payment_id FROM till_idempotency_keys WHERE merchant_id = ? AND idempotency_key = ?
                   """), arguments: [merchant, key]) {
                guard row["request_hash"] as String == requestHash else { return .idempotencyConflict }
                guard let existing = try self.payment(db, id: row["payment_id"], merchant: merchant) else {
                    throw StoreError.unavailable("idempotency key points to a missing payment")
                }
                if let clientSecretHash {
                    try db.cachedStatement(sql: "UPDATE till_payments SET client_secret_hash = ? WHERE id = ?").execute(arguments: [clientSecretHash, existing.id])
                }
                return .replayed(existing)
            }
            let taken = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM till_payments WHERE merchant_id = ? AND merchant_reference = ?"),
                                          arguments: [merchant, intent.merchantReference]) ?? false
            if taken { return .duplicateReference }
            try db.cachedStatement(sql: """
                INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at,
                                           client_secret_hash, last_event_sequence)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [id, merchant, intent.merchantReference, intent.amount.minorUnits, intent.amount.currency.code,
                                 PaymentStatus.created.rawValue, intentJSON, now, now, clientSecretHash, events.count])
            if let key = idempotencyKey {
                try db.cachedStatement(sql: """
                    INSERT INTO till_idempotency_keys (merchant_id, idempotency_key, request_hash, payment_id, created_at) VALUES (?, ?, ?, ?, ?)
                    """).execute(arguments: [merchant, key, requestHash, id, now])
            }
            try self.insert(db, events)
            return .created(created)
        }
    }

    public func payment(id: String, merchant: String) async throws -> StoredPayment? {
        try await pool.read { db in try self.payment(db, id: id, merchant: merchant) }
    }

    public func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT merchant_id, client_secret_hash FROM till_payments WHERE id = ?"), arguments: [id]),
                  let hash = row["client_secret_hash"] as String? else { return nil }
            return (merchantID: row["merchant_id"], hash: hash)
        }
    }

    public func payment(attempt: AttemptReference) async throws -> StoredPayment? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT p.id, p.merchant_id FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id WHERE a.reference = ?
                """), arguments: [attempt.rawValue]) else { return nil }
            return try self.payment(db, id: row["id"], merchant: row["merchant_id"])
        }
    }

    public func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                           customerRequested: Bool, intent: PaymentIntent?) async throws {
        do {
            try await writer.write { db in
                guard let merchant = try String.fetchOne(db.cachedStatement(sql: "SELECT merchant_id FROM till_payments WHERE id = ?"), arguments: [payment]),
                      let current = try self.payment(db, id: payment, merchant: merchant),
                      StoreRules.unchanged(current.attempts, expected: expected), intent.map({ $0 == current.intent }) ?? true else {
                    throw StoreError.conflict("the attempts or the intent of payment \(payment) changed")
                }
                let now = Date().storedMillis
                try self.recordingEvents(db, payment: payment) {
                    try db.cachedStatement(sql: """
                        INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, customer_requested, created_at, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """).execute(arguments: [reference.rawValue, payment, expected.count + 1, gateway.rawValue, PaymentStatus.created.rawValue,
                                         customerRequested ? 1 : 0, now, now])
                    try Self.refreshPaymentStatus(db, payment: payment)
                }
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw StoreError.conflict("attempt \(expected.count + 1) of payment \(payment) already exists")
        }
    }

    public func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        let json = try Self.encode(intent)
        return try await writer.write { db in
            guard let current = try self.payment(db, id: payment, merchant: merchant) else { return nil }
            guard StoreRules.unchanged(current.attempts, expected: expected) else {
                throw StoreError.conflict("the attempts of payment \(payment) changed")
            }
            try db.cachedStatement(sql: "UPDATE till_payments SET intent_json = ?, updated_at = ? WHERE id = ? AND merchant_id = ?")
                .execute(arguments: [json, Date().storedMillis, payment, merchant])
            return try self.payment(db, id: payment, merchant: merchant)
        }
    }

    public func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        try await writer.write { db in
            guard let paymentID = try String.fetchOne(db.cachedStatement(sql: "SELECT payment_id FROM till_attempts WHERE reference = ?"),
                                                      arguments: [reference.rawValue]) else { return }
            try self.recordingEvents(db, payment: paymentID) {
                try db.cachedStatement(sql: """
                    UPDATE till_attempts SET gateway_reference = ?, return_url = COALESCE(?, return_url),
                    status = CASE WHEN status = 'created' THEN 'pending' ELSE status END, updated_at = ? WHERE reference = ?
                    """).execute(arguments: [gatewayReference, returnURL?.absoluteString, Date().storedMillis, reference.rawValue])
                try Self.refreshPaymentStatus(db, payment: paymentID)
            }
        }
    }

    public func markSubmitted(_ reference: AttemptReference) async throws -> Bool {
        try await writer.write { db in
            let now = Date().storedMillis
            try db.cachedStatement(sql: """
                UPDATE till_attempts SET submitted_at = ?, updated_at = ? WHERE reference = ? AND submitted_at IS NULL AND status = 'pending'
                """).execute(arguments: [now, now, reference.rawValue])
            return db.changesCount == 1
        }
    }

    public func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws {
        let json = try Self.encode(outcome)
        try await writer.write { db in
            try db.cachedStatement(sql: """
                UPDATE till_attempts SET client_outcome = ?, handed_off = MAX(handed_off, ?), updated_at = ? WHERE reference = ?
                """).execute(arguments: [json, outcome.handedOff == true ? 1 : 0, Date().storedMillis, attempt.rawValue])
        }
    }

    public func markHandedOff(_ reference: AttemptReference) async throws {
        try await writer.write { db in
            try db.cachedStatement(sql: "UPDATE till_attempts SET handed_off = 1, updated_at = ? WHERE reference = ?").execute(arguments: [Date().storedMillis, reference.rawValue])
        }
    }

    public func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT gateway, attempt_reference, event_id, reported_status, headers_json, body, received_at FROM till_quarantine
                WHERE merchant_id = ? ORDER BY id DESC LIMIT ?
                """), arguments: [merchant, limit]).map { row in
                QuarantinedNotification(gateway: GatewayID(rawValue: row["gateway"]), attempt: AttemptReference(rawValue: row["attempt_reference"]),
                                        eventID: row["event_id"], reportedStatus: PaymentStatus(rawValue: row["reported_status"]),
                                        headers: (try? Self.decode([String: String].self, row["headers_json"])) ?? [:],
                                        body: row["body"], receivedAt: Date(storedMillis: row["received_at"]))
            }
        }
    }

    public func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT a.reference, a.payment_id, p.merchant_id, a.gateway, a.status, a.gateway_reference, p.amount_minor, p.currency,
                       a.created_at, a.inquiry_count, a.next_inquiry_at, a.submitted_at
                FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                WHERE a.status IN ('created', 'pending') AND a.created_at < ? AND (a.next_inquiry_at IS NULL OR a.next_inquiry_at <= ?)
                ORDER BY a.created_at LIMIT ?
                """), arguments: [createdBefore.storedMillis, now.storedMillis, limit]).compactMap { row in
                guard let currency = Currency.lookup(row["currency"]) else { return nil }
                return DueAttempt(reference: AttemptReference(rawValue: row["reference"]), paymentID: row["payment_id"],
                                  merchantID: row["merchant_id"], gateway: GatewayID(rawValue: row["gateway"]),
                                  status: PaymentStatus(rawValue: row["status"]), gatewayReference: row["gateway_reference"],
                                  amount: Money(minorUnits: row["amount_minor"], currency: currency),
                                  createdAt: Date(storedMillis: row["created_at"]), inquiryCount: row["inquiry_count"],
                                  nextInquiryAt: (row["next_inquiry_at"] as Int64?).map(Date.init(storedMillis:)),
                                  submittedAt: (row["submitted_at"] as Int64?).map(Date.init(storedMillis:)))
            }
        }
    }

    public func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool {
        try await writer.write { db in
            if let expected {
                try db.cachedStatement(sql: """
                    UPDATE till_attempts SET next_inquiry_at = ?, inquiry_count = inquiry_count + 1 WHERE reference = ? AND next_inquiry_at = ?
                    """).execute(arguments: [next.storedMillis, reference.rawValue, expected.storedMillis])
            } else {
                try db.cachedStatement(sql: """
                    UPDATE till_attempts SET next_inquiry_at = ?, inquiry_count = inquiry_count + 1 WHERE reference = ? AND next_inquiry_at IS NULL
                    """).execute(arguments: [next.storedMillis, reference.rawValue])
            }
            return db.changesCount == 1
        }
    }

    public func logReconciliation(_ entry: ReconciliationEntry) async throws {
        try await writer.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO till_reconciliation_log (merchant_id, attempt_reference, gateway, action, reason, status_before, status_after, at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [entry.merchantID, entry.attempt.rawValue, entry.gateway.rawValue, entry.action, entry.reason,
                                 entry.statusBefore.rawValue, entry.statusAfter.rawValue, entry.at.storedMillis])
        }
    }

    public func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT merchant_id, attempt_reference, gateway, action, reason, status_before, status_after, at
                FROM till_reconciliation_log ORDER BY id DESC LIMIT ?
                """), arguments: [limit]).map(Self.reconciliationEntry)
        }
    }

    public func searchPayments(merchant: String, query: PaymentSearchQuery) async throws -> [StoredPayment] {
        let (sql, values) = PaymentSearchSQL.page(.sqlite, merchant: merchant, query: query)
        let arguments = Self.arguments(values)
        return try await pool.read { db in
            try String.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).compactMap { try self.payment(db, id: $0, merchant: merchant) }
        }
    }

    /// A reconciliation entry from a row of (merchant, attempt, gateway, action, reason, status before, status after, at).
    private static func reconciliationEntry(_ row: Row) -> ReconciliationEntry {
        ReconciliationEntry(merchantID: row[0], attempt: AttemptReference(rawValue: row[1]), gateway: GatewayID(rawValue: row[2]),
                            action: row[3], reason: row[4], statusBefore: PaymentStatus(rawValue: row[5]),
                            statusAfter: PaymentStatus(rawValue: row[6]), at: Date(storedMillis: row[7]))
    }

    public func reconciliationLog(payment id: String) async throws -> [ReconciliationEntry] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT r.merchant_id, r.attempt_reference, r.gateway, r.action, r.reason, r.status_before, r.status_after, r.at
                FROM till_attempts a JOIN till_reconciliation_log r ON r.attempt_reference = a.reference
                WHERE a.payment_id = ? ORDER BY r.id LIMIT 1000
                """), arguments: [id]).map(Self.reconciliationEntry)
        }
    }

    public func notifications(payment id: String) async throws -> [StoredNotification] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT n.gateway, n.attempt_reference, n.event_id, n.reported_status, n.outcome, n.received_at
                FROM till_attempts a JOIN till_notifications n ON n.attempt_reference = a.reference
                WHERE a.payment_id = ? ORDER BY n.id LIMIT 1000
                """), arguments: [id]).map { row in
                StoredNotification(gateway: GatewayID(rawValue: row[0]), attempt: AttemptReference(rawValue: row[1]), eventID: row[2],
                                   reportedStatus: PaymentStatus(rawValue: row[3]), verdict: row[4], receivedAt: Date(storedMillis: row[5]))
            }
        }
    }

    public func logAudit(_ entry: AuditEntry) async throws {
        try await writer.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO till_audit (operator_name, merchant_id, payment_id, action, target, outcome, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [entry.operatorName, entry.merchantID, entry.paymentID, entry.action, entry.target, entry.outcome,
                                         entry.detail, entry.at.storedMillis])
        }
    }

    public func auditLog(payment id: String?, limit: Int) async throws -> [AuditEntry] {
        try await pool.read { db in
            let columns = "SELECT operator_name, merchant_id, payment_id, action, target, outcome, detail, at FROM till_audit"
            let rows = if let id {
                try Row.fetchAll(db.cachedStatement(sql: "\(columns) WHERE payment_id = ? ORDER BY id DESC LIMIT ?"), arguments: [id, limit])
            } else {
                try Row.fetchAll(db.cachedStatement(sql: "\(columns) ORDER BY id DESC LIMIT ?"), arguments: [limit])
            }
            return rows.map { row in
                AuditEntry(operatorName: row[0], merchantID: row[1], paymentID: row[2], action: row[3], target: row[4], outcome: row[5],
                           detail: row[6], at: Date(storedMillis: row[7]))
            }
        }
    }

    public func attemptCounts(merchant: String, since: Date) async throws -> [AttemptCount] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT a.gateway, a.status, a.gateway_code, COUNT(*) FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                WHERE a.created_at >= ? AND p.merchant_id = ? GROUP BY a.gateway, a.status, a.gateway_code
                """), arguments: [since.storedMillis, merchant]).map { row in
                AttemptCount(gateway: GatewayID(rawValue: row[0]), status: PaymentStatus(rawValue: row[1]), gatewayCode: row[2], count: row[3])
            }
        }
    }

    public func routingOutcomes(merchant: String, since: Date) async throws -> [RoutingOutcomeCount] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT a.gateway, a.status, a.gateway_code, json_extract(p.intent_json, '$.method'), p.currency,
                       json_extract(p.intent_json, '$.country'), substr(json_extract(p.intent_json, '$.cardIIN'), 1, 6),
                       coalesce(json_extract(p.intent_json, '$.action'), 'sale'), a.created_at / \(RoutingOutcomeCount.bucketMillis), COUNT(*)
                FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                WHERE a.created_at >= ? AND p.merchant_id = ? AND a.status IN (\(RoutingOutcomeCount.sqlList))
                GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                """), arguments: [since.storedMillis, merchant]).map { row in
                RoutingOutcomeCount(gateway: GatewayID(rawValue: row[0]), status: PaymentStatus(rawValue: row[1]), gatewayCode: row[2],
                                    method: row[3], currency: row[4], country: row[5], cardIIN: row[6], action: row[7], bucket: row[8], count: row[9])
            }
        }
    }

    public func ingest(_ notification: RawNotification, report: StatusReport, operation: OperationReport?, merchant: String,
                       source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        let headers = try Self.encode(notification.headers)
        return try await writer.write { db -> ApplyOutcome in
            guard report.gateway == notification.gateway,
                  let attemptRow = try Row.fetchOne(db.cachedStatement(sql: """
                      SELECT a.payment_id FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                      WHERE a.reference = ? AND a.gateway = ? AND p.merchant_id = ?
                      """), arguments: [report.attempt.rawValue, notification.gateway.rawValue, merchant]) else {
                // Verified, but about no attempt of this merchant on this gateway: kept, applied to nothing.
                try db.cachedStatement(sql: """
                    INSERT INTO till_quarantine (merchant_id, gateway, attempt_reference, event_id, reported_status, headers_json, body, received_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """).execute(arguments: [merchant, notification.gateway.rawValue, report.attempt.rawValue, report.eventID, report.status.rawValue,
                                     headers, notification.body, notification.receivedAt.storedMillis])
                return .quarantined
            }
            let seen = try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT 1 FROM till_notifications WHERE attempt_reference = ? AND gateway = ? AND event_id = ?
                """), arguments: [report.attempt.rawValue, notification.gateway.rawValue, report.eventID]) ?? false
            if seen { return .duplicate }
            let paymentID: String = attemptRow["payment_id"]
            let outcome: ApplyOutcome
            if let operation, source != .notificationToConfirm,
               let match = StoreRules.match(operation, among: try Self.operations(db, payment: paymentID), attempt: report.attempt) {
                outcome = .operation(try self.recordingEvents(db, payment: paymentID) { try self.settle(db, match, report: operation) })
            } else {
                outcome = try self.apply(db, report: report, paymentID: paymentID, source: source, recordingEvents: true)
            }
            try db.cachedStatement(sql: """
                INSERT INTO till_notifications (gateway, event_id, attempt_reference, reported_status, outcome, headers_json, body, received_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [notification.gateway.rawValue, report.eventID, report.attempt.rawValue, report.status.rawValue,
                                 outcome.storedName, headers, notification.body, notification.receivedAt.storedMillis])
            return outcome
        }
    }

    public func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await writer.write { db -> ApplyOutcome in
            guard let paymentID = try String.fetchOne(db.cachedStatement(sql: "SELECT payment_id FROM till_attempts WHERE reference = ?"),
                                                      arguments: [report.attempt.rawValue]) else { return .unknownAttempt }
            return try self.apply(db, report: report, paymentID: paymentID, source: source, recordingEvents: true)
        }
    }

    public func close() async throws {
        try pool.close()
    }

    // MARK: Operations

    public func addOperation(payment id: String, merchant: String, idempotencyKey: String, requestHash: String,
                             decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome {
        do {
            return try await writer.write { db -> OperationCreateOutcome in
                if let known = try Row.fetchOne(db.cachedStatement(sql: """
                    SELECT \(Self.operationColumns) FROM till_operations WHERE merchant_id = ? AND idempotency_key = ?
                    """), arguments: [merchant, idempotencyKey]) {
                    let stored = try Self.operation(known)
                    return stored.requestHash == requestHash && stored.paymentID == id ? .replayed(stored) : .idempotencyConflict
                }
                // SQLite has one writer: the payment read here cannot change before this write commits.
                guard let payment = try self.payment(db, id: id, merchant: merchant) else { throw StoreError.conflict("no payment \(id)") }
                var operation = try decide(payment)
                let now = Date().storedMillis
                (operation.createdAt, operation.updatedAt) = (Date(storedMillis: now), Date(storedMillis: now))
                try self.recordingEvents(db, payment: id) {
                try db.cachedStatement(sql: """
                    INSERT INTO till_operations (reference, payment_id, attempt_reference, merchant_id, gateway, kind, amount_minor, currency, status,
                                                 is_final, idempotency_key, request_hash, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [operation.reference.rawValue, id, operation.attempt.rawValue, merchant, operation.gateway.rawValue,
                                     operation.kind.rawValue, operation.amount.minorUnits, operation.amount.currency.code, operation.status.rawValue,
                                     operation.isFinal ? 1 : 0, idempotencyKey, requestHash, now, now])
                }
                return .created(operation)
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw StoreError.conflict("a concurrent operation on payment \(id) was stored first")
        }
    }

    public func operation(_ reference: OperationReference) async throws -> StoredOperation? {
        try await pool.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.operationColumns) FROM till_operations WHERE reference = ?"),
                             arguments: [reference.rawValue]).map(Self.operation(_:))
        }
    }

    public func settleOperation(_ reference: OperationReference, report: OperationReport) async throws -> OperationSettleOutcome {
        try await writer.write { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.operationColumns) FROM till_operations WHERE reference = ?"),
                                             arguments: [reference.rawValue]) else { return .unknownOperation }
            let operation = try Self.operation(row)
            return try self.recordingEvents(db, payment: operation.paymentID) { try self.settle(db, operation, report: report) }
        }
    }

    public func dueOperations(createdBefore: Date, now: Date, limit: Int) async throws -> [StoredOperation] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.operationColumns) FROM till_operations
                WHERE status IN ('pending', 'unknown') AND created_at < ? AND (next_inquiry_at IS NULL OR next_inquiry_at <= ?)
                ORDER BY created_at, reference LIMIT ?
                """), arguments: [createdBefore.storedMillis, now.storedMillis, limit]).map(Self.operation(_:))
        }
    }

    public func claimOperationInquiry(_ reference: OperationReference, expected: Date?, next: Date) async throws -> Bool {
        try await writer.write { db in
            try db.cachedStatement(sql: """
                UPDATE till_operations SET next_inquiry_at = ?, inquiry_count = inquiry_count + 1
                WHERE reference = ? AND next_inquiry_at IS ?
                """).execute(arguments: [next.storedMillis, reference.rawValue, expected?.storedMillis])
            return db.changesCount == 1
        }
    }

    package func seedPendingAttempts(count: Int, merchant: String, gateway: GatewayID, amount: Money) async throws -> [AttemptReference] {
        let references = (0..<count).map { _ in AttemptReference.generate() }
        let now = Date().storedMillis
        try await pool.write { db in
            for reference in references {
                let id = "seed_\(reference.rawValue)"
                let intent = PaymentIntent(merchantReference: "seed-\(reference.rawValue)", amount: amount, method: .card)
                try db.cachedStatement(sql: """
                    INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)
                    """).execute(arguments: [id, merchant, intent.merchantReference, amount.minorUnits, amount.currency.code,
                                     try Self.encode(intent), now, now])
                try db.cachedStatement(sql: """
                    INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, created_at, updated_at)
                    VALUES (?, ?, 1, ?, 'pending', ?, ?)
                    """).execute(arguments: [reference.rawValue, id, gateway.rawValue, now, now])
            }
        }
        return references
    }

    package func seedSearchPayments(count: Int, merchant: String, newest: Date) async throws {
        let tag = SearchSeed.prefixes()
        let oldest = newest.storedMillis - Int64(count - 1) * 1_000
        for chunk in stride(from: 0, to: count, by: 100_000) {
            let last = min(chunk + 100_000, count) - 1
            try await pool.write { db in
                let rows = """
                    WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    SELECT i, \(SearchSeed.statusCase) AS status, \(SearchSeed.currencyCase) AS currency, \(SearchSeed.amount) AS amount,
                           \(SearchSeed.methodCase) AS method, \(SearchSeed.gatewayCase) AS gateway, ? + i * 1000 AS at FROM n
                    """
                try db.execute(sql: """
                    INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at)
                    SELECT ? || printf('%024d', i), ?, 's-' || i, amount, currency, status,
                           json_object('action', 'sale', 'amount', json_object('currency', currency, 'value', amount),
                                       'customer', json_object('email', 'customer' || (i % 50000) || '@example.com'),
                                       'merchantReference', 's-' || i, 'method', method), at, at
                    FROM (\(rows))
                    """, arguments: [tag.payment, merchant, chunk, last, oldest])
                try db.execute(sql: """
                    INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, created_at, updated_at)
                    SELECT ? || printf('%015d', i), ? || printf('%024d', i), 1, gateway, status, at, at FROM (\(rows)) WHERE status <> 'created'
                    """, arguments: [tag.attempt, tag.payment, chunk, last, oldest])
            }
        }
    }

    package func seedPendingEvents(count: Int, merchant: String) async throws {
        let rows = try seededEvents(count: count, merchant: merchant)
        for chunk in stride(from: 0, to: rows.count, by: 5_000) {
            try await pool.write { db in
                for (payment, json, event) in rows[chunk..<min(chunk + 5_000, rows.count)] {
                    let now = payment.createdAt.storedMillis
                    try db.cachedStatement(sql: """
                        INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at,
                                                   last_event_sequence)
                        VALUES (?, ?, ?, ?, ?, 'created', ?, ?, ?, 1)
                        """).execute(arguments: [payment.id, merchant, payment.intent.merchantReference, payment.intent.amount.minorUnits,
                                         payment.intent.amount.currency.code, json, now, now])
                    try db.cachedStatement(sql: """
                        INSERT INTO till_events (id, merchant_id, payment_id, sequence, type, body, created_at, state, next_attempt_at)
                        VALUES (?, ?, ?, 1, ?, ?, ?, 'pending', ?)
                        """).execute(arguments: [event.id, merchant, payment.id, event.type.rawValue, String(decoding: event.body, as: UTF8.self), now, now])
                }
            }
        }
    }

    public func notificationCount(attempt: AttemptReference) async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM till_notifications WHERE attempt_reference = ?"), arguments: [attempt.rawValue]) ?? 0
        }
    }

    public func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT headers_json, body, received_at FROM till_notifications
                WHERE attempt_reference = ? AND gateway = ? AND outcome = 'needs_inquiry' ORDER BY id DESC LIMIT ?
                """), arguments: [attempt.rawValue, gateway.rawValue, limit]).map { row in
                RawNotification(gateway: gateway, headers: (try? Self.decode([String: String].self, row["headers_json"])) ?? [:],
                                body: row["body"], receivedAt: Date(storedMillis: row["received_at"]))
            }
        }
    }

    /// How many write transactions committed and how many writes they held (tests and diagnostics).
    var groupCommitStatistics: (transactions: Int, writes: Int) { writer.statistics }

    /// Counts rows of a table (tests and diagnostics).
    func count(_ table: String, where condition: String = "1 = 1") async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE \(condition)") ?? 0 }
    }

    static func arguments(_ values: [PaymentSearchSQL.Value]) -> StatementArguments {
        StatementArguments(values.map { value -> any DatabaseValueConvertible in
            switch value {
            case .text(let text): text
            case .integer(let number): number
            }
        })
    }

    /// SQLite's plan for a search (tests of the indexes).
    func queryPlan(_ statement: (sql: String, values: [PaymentSearchSQL.Value])) async throws -> String {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: Self.arguments(statement.values))
                .map { String(describing: $0["detail"] as String? ?? "") }.joined(separator: "\n")
        }
    }

    /// Runs SQL as written, bypassing every rule in code (tests of the schema's own guards).
    func executeUnchecked(_ sql: String) async throws {
        try await pool.write { db in try db.execute(sql: sql) }
    }

    // MARK: Events

    private static let eventColumns = """
        position, id, merchant_id, payment_id, sequence, type, body, created_at, state, attempt_count, next_attempt_at, delivered_at
        """

    private static func event(_ row: Row) -> StoredEvent {
        StoredEvent(id: row[1], merchantID: row[2], paymentID: row[3], sequence: row[4], type: EventType(rawValue: row[5]),
                    body: Data((row[6] as String).utf8), createdAt: Date(storedMillis: row[7]), position: row[0],
                    state: EventDeliveryState(rawValue: row[8]) ?? .pending, attemptCount: row[9],
                    nextAttemptAt: (row[10] as Int64?).map(Date.init(storedMillis:)), deliveredAt: (row[11] as Int64?).map(Date.init(storedMillis:)))
    }

    public func events(merchant: String, query: EventQuery) async throws -> [StoredEvent] {
        try await pool.read { db in
            var conditions = ["merchant_id = ?", "position > ?"]
            var arguments: StatementArguments = [merchant, query.after]
            if let type = query.type { conditions.append("type = ?"); arguments += [type.rawValue] }
            if let payment = query.paymentID { conditions.append("payment_id = ?"); arguments += [payment] }
            if let state = query.state { conditions.append("state = ?"); arguments += [state.rawValue] }
            arguments += [query.limit]
            let sql = "SELECT \(Self.eventColumns) FROM till_events WHERE \(conditions.joined(separator: " AND ")) ORDER BY position LIMIT ?"
            return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(Self.event(_:))
        }
    }

    public func event(id: String, merchant: String) async throws -> StoredEvent? {
        try await pool.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.eventColumns) FROM till_events WHERE id = ? AND merchant_id = ?"),
                             arguments: [id, merchant]).map(Self.event(_:))
        }
    }

    public func deliveryAttempts(event id: String) async throws -> [StoredDeliveryAttempt] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT event_id, endpoint, at, status_code, latency_ms, error, excerpt FROM till_event_attempts WHERE event_id = ? ORDER BY id
                """), arguments: [id]).map { row in
                StoredDeliveryAttempt(eventID: row[0], endpoint: row[1], at: Date(storedMillis: row[2]), statusCode: row[3], latencyMillis: row[4],
                                      error: row[5], excerpt: row[6])
            }
        }
    }

    public func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchants: [String]?) async throws -> [StoredEvent] {
        let scope = try merchants.map { try Self.encode($0) }
        return try await writer.write { db in
            // One writer: nothing changes between this read and the claim below.
            let due = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.eventColumns) FROM till_events e
                WHERE e.state = 'pending' AND e.next_attempt_at <= ? AND (? IS NULL OR e.merchant_id IN (SELECT value FROM json_each(?)))
                  AND NOT EXISTS (SELECT 1 FROM till_events b WHERE b.payment_id = e.payment_id AND b.sequence < e.sequence AND b.state = 'pending')
                ORDER BY e.next_attempt_at, e.position LIMIT ?
                """), arguments: [now.storedMillis, scope, scope, limit]).map(Self.event(_:))
            let until = claimedUntil.storedMillis
            for event in due {
                try db.cachedStatement(sql: "UPDATE till_events SET next_attempt_at = ? WHERE id = ?").execute(arguments: [until, event.id])
            }
            return due.map { event in
                var event = event
                event.nextAttemptAt = Date(storedMillis: until)
                return event
            }
        }
    }

    @discardableResult
    public func recordDelivery(event id: String, claimedUntil: Date, attempts: [StoredDeliveryAttempt], result: DeliveryResult) async throws -> Bool {
        try await writer.write { db in
            for attempt in attempts {
                try db.cachedStatement(sql: """
                    INSERT INTO till_event_attempts (event_id, endpoint, at, status_code, latency_ms, error, excerpt) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [attempt.eventID, attempt.endpoint, attempt.at.storedMillis, attempt.statusCode, attempt.latencyMillis,
                                     attempt.error, attempt.excerpt])
            }
            let (state, next, delivered) = StoreRules.delivery(result, now: Date())
            try db.cachedStatement(sql: """
                UPDATE till_events SET state = ?, next_attempt_at = ?, delivered_at = ?, attempt_count = attempt_count + ?
                WHERE id = ? AND state = 'pending' AND next_attempt_at = ?
                """).execute(arguments: [state.rawValue, next?.storedMillis, delivered?.storedMillis, attempts.isEmpty ? 0 : 1, id,
                                 claimedUntil.storedMillis])
            return db.changesCount == 1
        }
    }

    public func redeliver(event id: String, merchant: String, now: Date) async throws -> StoredEvent? {
        try await writer.write { db in
            try db.cachedStatement(sql: """
                UPDATE till_events SET state = 'pending', next_attempt_at = ? WHERE id = ? AND merchant_id = ?
                """).execute(arguments: [now.storedMillis, id, merchant])
            return try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.eventColumns) FROM till_events WHERE id = ? AND merchant_id = ?"),
                                    arguments: [id, merchant]).map(Self.event(_:))
        }
    }

    public func eventBacklog() async throws -> EventBacklog {
        try await pool.read { db in
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*), MIN(created_at) FROM till_events WHERE state = 'pending'"))
            return EventBacklog(pending: row?[0] ?? 0, oldestCreatedAt: (row?[1] as Int64?).map(Date.init(storedMillis:)))
        }
    }

    /// Runs `change` on payment `id` in the caller's transaction and writes the events it made (``EventRules``): the
    /// payment read before and after, so an event exists exactly when its change commits.
    private func recordingEvents<T>(_ db: Database, payment id: String, _ change: () throws -> T) throws -> T {
        guard recordsEvents,
              let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT merchant_id, last_event_sequence FROM till_payments WHERE id = ?"),
                                         arguments: [id]),
              let before = try payment(db, id: id, merchant: row[0], allOperations: true) else { return try change() }
        let result = try change()
        if let after = try payment(db, id: id, merchant: row[0], allOperations: true) {
            try writeEvents(db, before: before, after: after, lastSequence: row[1])
        }
        return result
    }

    /// Inserts the events of a change (none when nothing changed) and the payment's last event sequence.
    private func writeEvents(_ db: Database, before: StoredPayment?, after: StoredPayment, lastSequence: Int) throws {
        guard let last = try insertEvents(db, before: before, after: after, lastSequence: lastSequence) else { return }
        try db.cachedStatement(sql: "UPDATE till_payments SET last_event_sequence = ? WHERE id = ?").execute(arguments: [last, after.id])
    }

    /// Inserts the events of a change and returns the last one's sequence (nil: the change made none); the caller
    /// writes that number on the payment.
    private func insertEvents(_ db: Database, before: StoredPayment?, after: StoredPayment, lastSequence: Int) throws -> Int? {
        guard recordsEvents else { return nil }
        let events = try EventRules.events(before: before, after: after, lastSequence: lastSequence, now: Date(storedMillis: Date().storedMillis))
        try insert(db, events)
        return events.last?.sequence
    }

    /// Inserts events, pending and due at once: one statement for all of a change's events.
    private func insert(_ db: Database, _ events: [StoredEvent]) throws {
        guard !events.isEmpty else { return }
        var arguments = StatementArguments()
        for event in events {
            arguments += [event.id, event.merchantID, event.paymentID, event.sequence, event.type.rawValue,
                          String(decoding: event.body, as: UTF8.self), event.createdAt.storedMillis, event.createdAt.storedMillis]
        }
        try db.cachedStatement(sql: """
            INSERT INTO till_events (id, merchant_id, payment_id, sequence, type, body, created_at, state, next_attempt_at)
            VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, 'pending', ?)", count: events.count).joined(separator: ", "))
            """).execute(arguments: arguments)
    }

    // MARK: Rows

    /// With `recordingEvents` (a report applied on its own, not an operation's money), the payment is read whole once,
    /// and the change's events come from the payment as the effect leaves it (``StoreRules/Effect/applied(to:report:now:)``).
    private func apply(_ db: Database, report: StatusReport, paymentID: String,
                       source: AttemptPolicy.ReportSource, recordingEvents: Bool = false) throws -> ApplyOutcome {
        var whole: (payment: StoredPayment, lastSequence: Int)?
        let payment: PaymentFacts
        if recordingEvents && recordsEvents {
            guard let read = try paymentForChange(db, id: paymentID, operations: report.status.isRefund) else { return .unknownAttempt }
            whole = read
            payment = PaymentFacts(read.payment)
        } else {
            // What a refund may take back depends on what Till captured; nothing else reads the operations.
            guard let facts = try facts(db, id: paymentID, operations: report.status.isRefund) else { return .unknownAttempt }
            payment = facts
        }
        guard let attempt = payment.attempts.first(where: { $0.reference == report.attempt }) else { return .unknownAttempt }
        let effect = StoreRules.apply(report, attempt: attempt, payment: payment, source: source)
        let now = Date().storedMillis
        var lastEventSequence: Int?
        if let whole {
            lastEventSequence = try insertEvents(db, before: whole.payment,
                                                 after: effect.applied(to: whole.payment, report: report, now: Date(storedMillis: now)),
                                                 lastSequence: whole.lastSequence)
        }
        try write(db, effect, report: report, paymentID: paymentID, now: now, lastEventSequence: lastEventSequence)
        return effect.outcome
    }

    /// Writes what ``StoreRules/apply(_:attempt:payment:source:)`` decided to the rows, stamped `now`.
    /// With `lastEventSequence`, the payment's last event number too (in the same statement as its status when that changes).
    private func write(_ db: Database, _ effect: StoreRules.Effect, report: StatusReport, paymentID: String, now: Int64,
                       lastEventSequence: Int? = nil) throws {
        if let status = effect.attemptStatus {
            try db.cachedStatement(sql: """
                UPDATE till_attempts SET status = ?, gateway_code = COALESCE(?, gateway_code),
                gateway_reference = COALESCE(gateway_reference, ?), updated_at = ? WHERE reference = ?
                """).execute(arguments: [status.rawValue, report.gatewayCode, report.gatewayReference, now, report.attempt.rawValue])
        }
        if let refunded = effect.refundedMinorUnits {
            try db.cachedStatement(sql: "UPDATE till_attempts SET refunded_minor = ?, updated_at = ? WHERE reference = ?").execute(arguments: [refunded, now, report.attempt.rawValue])
        }
        for reference in effect.settledOperations {
            try db.cachedStatement(sql: """
                UPDATE till_operations SET status = 'succeeded', updated_at = ? WHERE reference = ? AND status IN ('pending', 'unknown')
                """).execute(arguments: [now, reference.rawValue])
        }
        if let status = effect.paymentStatus {
            try db.cachedStatement(sql: """
                UPDATE till_payments SET status = ?, updated_at = ?, last_event_sequence = COALESCE(?, last_event_sequence) WHERE id = ?
                """).execute(arguments: [status.rawValue, now, lastEventSequence, paymentID])
        } else if let lastEventSequence {
            try db.cachedStatement(sql: "UPDATE till_payments SET last_event_sequence = ? WHERE id = ?").execute(arguments: [lastEventSequence, paymentID])
        }
    }

    private static func refreshPaymentStatus(_ db: Database, payment id: String) throws {
        guard let current = try String.fetchOne(db.cachedStatement(sql: "SELECT status FROM till_payments WHERE id = ?"), arguments: [id]) else { return }
        let statuses = try String.fetchAll(db.cachedStatement(sql: "SELECT status FROM till_attempts WHERE payment_id = ? ORDER BY sequence"),
                                           arguments: [id]).map(PaymentStatus.init(rawValue:))
        if let derived = StoreRules.derivedStatus(current: PaymentStatus(rawValue: current), attempts: statuses) {
            try db.cachedStatement(sql: "UPDATE till_payments SET status = ?, updated_at = ? WHERE id = ?").execute(arguments: [derived.rawValue, Date().storedMillis, id])
        }
    }

    /// A payment and its attempts: two cached statements, columns read by position (the hottest read of
    /// the server: every getPayment, every prepare).
    private func payment(_ db: Database, id: String, merchant: String, allOperations: Bool = false) throws -> StoredPayment? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT id, merchant_id, status, intent_json, created_at, updated_at FROM till_payments WHERE id = ? AND merchant_id = ?
            """), arguments: [id, merchant]) else { return nil }
        let attempts = try Self.attempts(db, payment: id)
        return StoredPayment(id: row[0], merchantID: row[1], intent: try intents.intent(row[3]),
                             status: PaymentStatus(rawValue: row[2]), attempts: attempts,
                             operations: allOperations || attempts.contains { $0.status.mayHaveOperations } ? try Self.operations(db, payment: id) : [],
                             createdAt: Date(storedMillis: row[4]), updatedAt: Date(storedMillis: row[5]))
    }

    /// A payment about to change, whole (its operations whenever an attempt may have some, or `operations`), and its last
    /// event's number: one read of its row, one of its attempts.
    private func paymentForChange(_ db: Database, id: String, operations: Bool) throws -> (payment: StoredPayment, lastSequence: Int)? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT merchant_id, status, intent_json, created_at, updated_at, last_event_sequence FROM till_payments WHERE id = ?
            """), arguments: [id]) else { return nil }
        let attempts = try Self.attempts(db, payment: id)
        let payment = StoredPayment(id: id, merchantID: row[0], intent: try intents.intent(row[2]), status: PaymentStatus(rawValue: row[1]),
                                    attempts: attempts,
                                    operations: operations || attempts.contains { $0.status.mayHaveOperations } ? try Self.operations(db, payment: id) : [],
                                    createdAt: Date(storedMillis: row[3]), updatedAt: Date(storedMillis: row[4]))
        return (payment, row[5])
    }

    /// What the rules need of payment `id` (amount from its columns, no intent decoded): every notification's write.
    private func facts(_ db: Database, id: String, operations: Bool = true) throws -> PaymentFacts? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT merchant_id, status, amount_minor, currency FROM till_payments WHERE id = ?
            """), arguments: [id]) else { return nil }
        return PaymentFacts(id: id, merchantID: row[0], status: PaymentStatus(rawValue: row[1]),
                            amount: try PaymentFacts.amount(minorUnits: row[2], currency: row[3]), attempts: try Self.attempts(db, payment: id),
                            operations: operations ? try Self.operations(db, payment: id) : [])
    }

    private static func attempts(_ db: Database, payment id: String) throws -> [StoredAttempt] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT reference, payment_id, sequence, gateway, status, gateway_reference, gateway_code, client_outcome, return_url,
                   submitted_at, handed_off, customer_requested, inquiry_count, next_inquiry_at, refunded_minor, created_at, updated_at
            FROM till_attempts WHERE payment_id = ? ORDER BY sequence
            """), arguments: [id]).map { row in
            StoredAttempt(reference: AttemptReference(rawValue: row[0]), paymentID: row[1],
                          sequence: row[2], gateway: GatewayID(rawValue: row[3]),
                          status: PaymentStatus(rawValue: row[4]), gatewayReference: row[5],
                          gatewayCode: row[6],
                          clientOutcome: (row[7] as String?).flatMap { try? decode(ClientOutcome.self, $0) },
                          returnURL: (row[8] as String?).flatMap(URL.init(string:)),
                          submittedAt: (row[9] as Int64?).map(Date.init(storedMillis:)),
                          handedOff: (row[10] as Int) != 0, customerRequested: (row[11] as Int) != 0,
                          inquiryCount: row[12], nextInquiryAt: (row[13] as Int64?).map(Date.init(storedMillis:)),
                          refundedMinorUnits: row[14],
                          createdAt: Date(storedMillis: row[15]), updatedAt: Date(storedMillis: row[16]))
        }
    }

    private static let operationColumns = """
        reference, payment_id, merchant_id, gateway, status, amount_minor, currency, is_final, gateway_reference, gateway_code,
        gateway_message, idempotency_key, request_hash, inquiry_count, next_inquiry_at, created_at, updated_at
        """

    private static func operations(_ db: Database, payment id: String) throws -> [StoredOperation] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(operationColumns) FROM till_operations WHERE payment_id = ? ORDER BY created_at, reference"),
                         arguments: [id]).map(operation(_:))
    }

    private static func operation(_ row: Row) throws -> StoredOperation {
        guard let reference = OperationReference(rawValue: row[0]) else { throw StoreError.unavailable("operation row holds a bad reference") }
        return StoredOperation(reference: reference, paymentID: row[1], merchantID: row[2], gateway: GatewayID(rawValue: row[3]),
                               status: OperationStatus(rawValue: row[4]) ?? .unknown,
                               amount: try PaymentFacts.amount(minorUnits: row[5], currency: row[6]), isFinal: (row[7] as Int) != 0,
                               gatewayReference: row[8], gatewayCode: row[9], gatewayMessage: row[10], idempotencyKey: row[11],
                               requestHash: row[12], inquiryCount: row[13], nextInquiryAt: (row[14] as Int64?).map(Date.init(storedMillis:)),
                               createdAt: Date(storedMillis: row[15]), updatedAt: Date(storedMillis: row[16]))
    }

    /// The stores' one operation rule applied to the rows, in the caller's transaction.
    private func settle(_ db: Database, _ operation: StoredOperation, report: OperationReport) throws -> OperationSettleOutcome {
        guard let facts = try facts(db, id: operation.paymentID, operations: false) else { return .unknownOperation }
        let effect = StoreRules.settle(operation, report: report, paymentAmount: facts.amount, now: Date(storedMillis: Date().storedMillis))
        if let changed = effect.operation {
            try db.cachedStatement(sql: """
                UPDATE till_operations SET status = ?, gateway_reference = ?, gateway_code = ?, gateway_message = ?, updated_at = ?
                WHERE reference = ?
                """).execute(arguments: [changed.status.rawValue, changed.gatewayReference, changed.gatewayCode, changed.gatewayMessage,
                                 changed.updatedAt.storedMillis, changed.reference.rawValue])
        }
        if let money = effect.money { _ = try apply(db, report: money, paymentID: operation.paymentID, source: .inquiry) }
        return effect.outcome
    }

    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(json.utf8))
    }
}
