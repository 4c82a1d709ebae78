import Foundation
import Logging
import PostgresNIO
import Till
import TillOrchestration
import TillService

/// The PostgreSQL store. Every mutation of a payment runs in a transaction that first locks the
/// payment's row (`SELECT … FOR UPDATE`), so one payment is never mutated by two requests at once.
public final class PostgresPaymentStore: PaymentStore {
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger
    /// Stored intents already decoded, keyed by their text (a changed intent is a new text).
    private let intents = IntentCache()
    /// Whether status changes write events (the outbox); off only to measure what the outbox costs.
    private let recordsEvents: Bool

    /// The pool's default size: see ``ServerSettings/postgresConnections`` for how it was measured.
    public static let defaultConnections = ServerSettings.defaultPostgresConnections

    /// Connects to `url` with a pool of at most `connections` connections. TLS is not used, so keep the
    /// database on loopback or a private network. `url` is read by ``PostgresEndpoint/read(_:)``.
    /// With `recordsEvents` false no event is written (a benchmark's yardstick; a server always records them).
    public init(url: String, connections: Int = PostgresPaymentStore.defaultConnections,
                logger: Logger = Logger(label: "till.store.postgres"), recordsEvents: Bool = true) throws {
        self.recordsEvents = recordsEvents
        guard connections >= 1 else { throw StoreError.unavailable("the PostgreSQL pool needs at least one connection") }
        let endpoint: PostgresEndpoint
        switch PostgresEndpoint.read(url) {
        case .success(let read): endpoint = read
        case .failure(let problem): throw StoreError.unavailable(problem.message)
        }
        let base: PostgresClient.Configuration
        switch endpoint.address {
        case .socket(let path):
            base = PostgresClient.Configuration(unixSocketPath: path, username: endpoint.user, password: endpoint.password,
                                                database: endpoint.database)
        case .tcp(let host, let port):
            base = PostgresClient.Configuration(host: host, port: port, username: endpoint.user, password: endpoint.password,
                                                database: endpoint.database, tls: .disable)
        }
        var configuration = base
        configuration.options.maximumConnections = connections
        // So an operator can tell Till's backends apart in pg_stat_activity.
        configuration.options.additionalStartupParameters = [("application_name", "till")]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        runner = Task { await client.run() }
    }

    public func migrate() async throws {
        try await transaction { connection in
            // One migrator at a time, across processes.
            try await connection.query("SELECT pg_advisory_xact_lock(7411029)", logger: self.logger)
            try await connection.query(PostgresQuery(unsafeSQL: Schema.createMigrationsTable), logger: self.logger)
            var done: Set<Int> = []
            for try await version in try await connection.query("SELECT version FROM till_schema_migrations", logger: self.logger)
                .decode(Int.self) {
                done.insert(version)
            }
            for migration in Schema.migrations(.postgres) where !done.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
                }
                try await connection.query("INSERT INTO till_schema_migrations (version, applied_at) VALUES (\(migration.version), \(Date().storedMillis))",
                                           logger: self.logger)
            }
        }
    }

    public func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?,
                       requestHash: String, clientSecretHash: String?) async throws -> CreateOutcome {
        let intentJSON = try SQLitePaymentStore.encode(intent)
        intents.remember(intentJSON, intent)
        // The common case in one round trip and one commit: a new reference with a new key. Anything else
        // (the reference or the key already there) falls to the transaction below, which tells a replay from
        // a conflict.
        if let created = try await createAtOnce(intent, intentJSON: intentJSON, merchant: merchant, id: id, idempotencyKey: idempotencyKey,
                                                requestHash: requestHash, clientSecretHash: clientSecretHash) {
            return created
        }
        // A concurrent request with the same key or reference may win the insert; then the second
        // pass reads what it created.
        for pass in 0..<2 {
            do {
                return try await transaction { connection -> CreateOutcome in
                    if let key = idempotencyKey {
                        if let (hash, paymentID) = try await self.idempotencyEntry(connection, merchant: merchant, key: key) {
                            guard hash == requestHash else { return .idempotencyConflict }
                            guard let existing = try await self.payment(connection, id: paymentID, merchant: merchant) else {
                                throw StoreError.unavailable("idempotency key points to a missing payment")
                            }
                            try await self.rotate(clientSecretHash, payment: existing.id, connection: connection)
                            return .replayed(existing)
                        }
                    }
                    let now = Date().storedMillis
                    let inserted = try await connection.query("""
                        INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at,
                                                   client_secret_hash)
                        VALUES (\(id), \(merchant), \(intent.merchantReference), \(intent.amount.minorUnits), \(intent.amount.currency.code),
                                \(PaymentStatus.created.rawValue), \(intentJSON), \(now), \(now), \(clientSecretHash))
                        ON CONFLICT (merchant_id, merchant_reference) DO NOTHING RETURNING id
                        """, logger: self.logger)
                    var created = false
                    for try await _ in inserted { created = true }
                    guard created else {
                        // A concurrent request with the same key may have just committed this payment.
                        if let key = idempotencyKey, let (hash, paymentID) = try await self.idempotencyEntry(connection, merchant: merchant, key: key) {
                            guard hash == requestHash else { return .idempotencyConflict }
                            if let existing = try await self.payment(connection, id: paymentID, merchant: merchant) {
                                try await self.rotate(clientSecretHash, payment: existing.id, connection: connection)
                                return .replayed(existing)
                            }
                        }
                        return .duplicateReference
                    }
                    if let key = idempotencyKey {
                        try await connection.query("""
                            INSERT INTO till_idempotency_keys (merchant_id, idempotency_key, request_hash, payment_id, created_at)
                            VALUES (\(merchant), \(key), \(requestHash), \(id), \(now))
                            """, logger: self.logger)
                    }
                    let stamp = Date(storedMillis: now)
                    let stored = StoredPayment(id: id, merchantID: merchant, intent: intent, status: .created, attempts: [],
                                               createdAt: stamp, updatedAt: stamp)
                    try await self.insertEvents(connection, try self.events(before: nil, after: stored, lastSequence: 0), payment: stored)
                    return .created(stored)
                }
            } catch let error as PSQLError where error.isUniqueViolation && pass == 0 {
                continue
            }
        }
        throw StoreError.conflict("concurrent create did not settle")
    }

    /// One statement, committed on its own: the payment, and its idempotency key when there is one, inserted
    /// together or not at all. `nil` when the reference is taken or the key exists (a unique violation undoes
    /// the whole statement).
    private func createAtOnce(_ intent: PaymentIntent, intentJSON: String, merchant: String, id: String, idempotencyKey: String?,
                              requestHash: String, clientSecretHash: String?) async throws -> CreateOutcome? {
        let now = Date().storedMillis
        let stamp = Date(storedMillis: now)
        let created = StoredPayment(id: id, merchantID: merchant, intent: intent, status: .created, attempts: [], createdAt: stamp, updatedAt: stamp)
        let events = try self.events(before: nil, after: created, lastSequence: 0)
        do {
            return try await client.withConnection { connection -> CreateOutcome? in
                let rows = try await connection.run(PostgresStatements.CreatePayment.self, .init(
                    id: id, merchant: merchant, reference: intent.merchantReference, amount: intent.amount.minorUnits,
                    currency: intent.amount.currency.code, status: PaymentStatus.created.rawValue, intentJSON: intentJSON, now: now,
                    clientSecretHash: clientSecretHash, idempotencyKey: idempotencyKey, requestHash: requestHash,
                    events: EventRows(events)), logger: self.logger)
                var inserted: (Int64, Int64) = (0, 0)
                for try await row in rows { inserted = try row.decode((Int64, Int64).self) }
                guard inserted.0 == 1 else { return nil }
                return .created(created)
            }
        } catch let error as PSQLError where error.isUniqueViolation {
            return nil
        }
    }

    public func payment(id: String, merchant: String) async throws -> StoredPayment? {
        try await client.withConnection { connection in try await self.paymentWithOperations(connection, id: id, merchant: merchant) }
    }

    public func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? {
        try await client.withConnection { connection in
            let rows = try await connection.run(PostgresStatements.ClientSecretHash.self, id, logger: self.logger)
            var found: (merchantID: String, hash: String)?
            for try await row in rows {
                let (merchant, hash) = try row.decode((String, String?).self)
                if let hash { found = (merchantID: merchant, hash: hash) }
            }
            return found
        }
    }

    /// Replaces a replayed payment's client-secret digest (only the latest secret works).
    private func rotate(_ hash: String?, payment id: String, connection: PostgresConnection) async throws {
        guard let hash else { return }
        try await connection.query("UPDATE till_payments SET client_secret_hash = \(hash) WHERE id = \(id)", logger: logger)
    }

    public func payment(attempt: AttemptReference) async throws -> StoredPayment? {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT p.id, p.merchant_id FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id WHERE a.reference = \(attempt.rawValue)
                """, logger: self.logger)
            var found: (String, String)?
            for try await row in rows.decode((String, String).self) { found = row }
            guard let (id, merchant) = found else { return nil }
            return try await self.paymentWithOperations(connection, id: id, merchant: merchant)
        }
    }

    /// The stored (request hash, payment id) of an idempotency key, read completely before returning.
    private func idempotencyEntry(_ connection: PostgresConnection, merchant: String, key: String) async throws -> (String, String)? {
        let rows = try await connection.query("""
            SELECT request_hash, payment_id FROM till_idempotency_keys WHERE merchant_id = \(merchant) AND idempotency_key = \(key)
            """, logger: logger)
        var found: (String, String)?
        for try await row in rows.decode((String, String).self) { found = row }
        return found
    }

    public func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                           customerRequested: Bool, intent: PaymentIntent?) async throws {
        do {
            try await transaction { connection in
                try await self.lock(connection, payment: payment)
                let current = try await self.attempts(connection, payment: payment)
                guard StoreRules.unchanged(current, expected: expected) else {
                    throw StoreError.conflict("the attempts of payment \(payment) changed")
                }
                if let intent {
                    var stored: String?
                    for try await json in try await connection.query("SELECT intent_json FROM till_payments WHERE id = \(payment)",
                                                                     logger: self.logger).decode(String.self) { stored = json }
                    guard let stored, try self.intents.intent(stored) == intent else {
                        throw StoreError.conflict("the intent of payment \(payment) changed")
                    }
                }
                let values = PostgresStatements.InsertAttempt.Values(
                    reference: reference.rawValue, payment: payment, sequence: expected.count + 1, gateway: gateway.rawValue,
                    status: PaymentStatus.created.rawValue, customerRequested: customerRequested, now: Date().storedMillis)
                try await self.recordingEvents(connection, payment: payment) {
                    for try await _ in try await connection.run(PostgresStatements.InsertAttempt.self, values, logger: self.logger) {}
                    try await self.refreshPaymentStatus(connection, payment: payment)
                }
            }
        } catch let error as PSQLError where error.isUniqueViolation {
            throw StoreError.conflict("attempt \(expected.count + 1) of payment \(payment) already exists")
        }
    }

    public func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        let json = try SQLitePaymentStore.encode(intent)
        return try await transaction { connection in
            try await self.lock(connection, payment: payment)
            guard let current = try await self.payment(connection, id: payment, merchant: merchant) else { return nil }
            guard StoreRules.unchanged(current.attempts, expected: expected) else {
                throw StoreError.conflict("the attempts of payment \(payment) changed")
            }
            let now = Date().storedMillis
            try await connection.query("""
                UPDATE till_payments SET intent_json = \(json), updated_at = \(now) WHERE id = \(payment) AND merchant_id = \(merchant)
                """, logger: self.logger)
            return try await self.payment(connection, id: payment, merchant: merchant)
        }
    }

    public func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        try await transaction { connection in
            // The payment of the attempt, locked, in one round trip.
            var found: String?
            for try await row in try await connection.run(PostgresStatements.LockPaymentIDOfAttempt.self, reference.rawValue, logger: self.logger) {
                found = try row.decode(String.self)
            }
            guard let paymentID = found else { return }
            let values = PostgresStatements.AttemptPrepared.Values(attempt: reference.rawValue, gatewayReference: gatewayReference,
                                                                   returnURL: returnURL?.absoluteString, now: Date().storedMillis)
            try await self.recordingEvents(connection, payment: paymentID) {
                for try await _ in try await connection.run(PostgresStatements.AttemptPrepared.self, values, logger: self.logger) {}
                try await self.refreshPaymentStatus(connection, payment: paymentID)
            }
        }
    }

    public func markSubmitted(_ reference: AttemptReference) async throws -> Bool {
        let now = Date().storedMillis
        return try await client.withConnection { connection in
            let rows = try await connection.query("""
                UPDATE till_attempts SET submitted_at = \(now), updated_at = \(now)
                WHERE reference = \(reference.rawValue) AND submitted_at IS NULL AND status = 'pending' RETURNING reference
                """, logger: self.logger)
            var count = 0
            for try await _ in rows { count += 1 }
            return count == 1
        }
    }

    public func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws {
        let json = try SQLitePaymentStore.encode(outcome)
        let handedOff = outcome.handedOff == true ? 1 : 0
        _ = try await client.withConnection { connection in
            try await connection.query("""
                UPDATE till_attempts SET client_outcome = \(json), handed_off = GREATEST(handed_off, \(handedOff)),
                updated_at = \(Date().storedMillis) WHERE reference = \(attempt.rawValue)
                """, logger: self.logger)
        }
    }

    public func markHandedOff(_ reference: AttemptReference) async throws {
        _ = try await client.withConnection { connection in
            try await connection.query("""
                UPDATE till_attempts SET handed_off = 1, updated_at = \(Date().storedMillis) WHERE reference = \(reference.rawValue)
                """, logger: self.logger)
        }
    }

    public func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT gateway, attempt_reference, event_id, reported_status, headers_json, body, received_at FROM till_quarantine
                WHERE merchant_id = \(merchant) ORDER BY id DESC LIMIT \(limit)
                """, logger: self.logger)
            var out: [QuarantinedNotification] = []
            for try await (gateway, attempt, event, status, headers, body, received) in rows.decode((String, String, String, String, String, ByteBuffer, Int64).self) {
                out.append(QuarantinedNotification(gateway: GatewayID(rawValue: gateway), attempt: AttemptReference(rawValue: attempt),
                                                   eventID: event, reportedStatus: PaymentStatus(rawValue: status),
                                                   headers: (try? SQLitePaymentStore.decode([String: String].self, headers)) ?? [:],
                                                   body: Data(buffer: body), receivedAt: Date(storedMillis: received)))
            }
            return out
        }
    }

    public func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT a.reference, a.payment_id, p.merchant_id, a.gateway, a.status, a.gateway_reference, p.amount_minor, p.currency,
                       a.created_at, a.inquiry_count, a.next_inquiry_at, a.submitted_at
                FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                WHERE a.status IN ('created', 'pending') AND a.created_at < \(createdBefore.storedMillis)
                  AND (a.next_inquiry_at IS NULL OR a.next_inquiry_at <= \(now.storedMillis))
                ORDER BY a.created_at LIMIT \(limit)
                """, logger: self.logger)
            var out: [DueAttempt] = []
            for try await (reference, payment, merchant, gateway, status, gatewayReference, minor, currency, created, count, next, submitted)
                in rows.decode((String, String, String, String, String, String?, Int64, String, Int64, Int, Int64?, Int64?).self) {
                guard let currency = Currency.lookup(currency) else { continue }
                out.append(DueAttempt(reference: AttemptReference(rawValue: reference), paymentID: payment, merchantID: merchant,
                                      gateway: GatewayID(rawValue: gateway), status: PaymentStatus(rawValue: status),
                                      gatewayReference: gatewayReference, amount: Money(minorUnits: minor, currency: currency),
                                      createdAt: Date(storedMillis: created), inquiryCount: count,
                                      nextInquiryAt: next.map(Date.init(storedMillis:)), submittedAt: submitted.map(Date.init(storedMillis:))))
            }
            return out
        }
    }

    public func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool {
        try await client.withConnection { connection in
            let rows = if let expected {
                try await connection.query("""
                    UPDATE till_attempts SET next_inquiry_at = \(next.storedMillis), inquiry_count = inquiry_count + 1
                    WHERE reference = \(reference.rawValue) AND next_inquiry_at = \(expected.storedMillis) RETURNING reference
                    """, logger: self.logger)
            } else {
                try await connection.query("""
                    UPDATE till_attempts SET next_inquiry_at = \(next.storedMillis), inquiry_count = inquiry_count + 1
                    WHERE reference = \(reference.rawValue) AND next_inquiry_at IS NULL RETURNING reference
                    """, logger: self.logger)
            }
            var claimed = false
            for try await _ in rows { claimed = true }
            return claimed
        }
    }

    public func logReconciliation(_ entry: ReconciliationEntry) async throws {
        _ = try await client.withConnection { connection in
            try await connection.query("""
                INSERT INTO till_reconciliation_log (merchant_id, attempt_reference, gateway, action, reason, status_before, status_after, at)
                VALUES (\(entry.merchantID), \(entry.attempt.rawValue), \(entry.gateway.rawValue), \(entry.action), \(entry.reason),
                        \(entry.statusBefore.rawValue), \(entry.statusAfter.rawValue), \(entry.at.storedMillis))
                """, logger: self.logger)
        }
    }

    public func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT merchant_id, attempt_reference, gateway, action, reason, status_before, status_after, at
                FROM till_reconciliation_log ORDER BY id DESC LIMIT \(limit)
                """, logger: self.logger)
            return try await Self.reconciliationEntries(rows)
        }
    }

    public func searchPayments(merchant: String, query: PaymentSearchQuery) async throws -> [StoredPayment] {
        try await client.withConnection { connection in
            var ids: [String] = []
            for try await id in try await connection.query(PaymentSearchSQL.postgres(merchant: merchant, query: query), logger: self.logger)
                .decode(String.self) { ids.append(id) }
            guard !ids.isEmpty else { return [] }
            // The page's payments with their attempts in one statement, then the operations of those that may have some.
            var found: [String: StoredPayment] = [:]
            let rows = try await connection.query("""
                SELECT p.id, p.merchant_id, p.status, p.intent_json, p.created_at, p.updated_at, \(unescaped: PostgresStatements.attemptColumns)
                FROM till_payments p LEFT JOIN till_attempts a ON a.payment_id = p.id
                WHERE p.id = ANY(\(ids)) AND p.merchant_id = \(merchant) ORDER BY a.sequence
                """, logger: self.logger)
            for try await row in rows {
                let (pid, mid, status, intentJSON, created, updated) = try row.decode((String, String, String, String, Int64, Int64).self)
                if found[pid] == nil {
                    found[pid] = StoredPayment(id: pid, merchantID: mid, intent: try self.intents.intent(intentJSON), status: PaymentStatus(rawValue: status),
                                               attempts: [], createdAt: Date(storedMillis: created), updatedAt: Date(storedMillis: updated))
                }
                if let attempt = try PostgresStatements.attempt(row, offset: 6) { found[pid]?.attempts.append(attempt) }
            }
            let holding = ids.filter { found[$0]?.attempts.contains { $0.status.mayHaveOperations } == true }
            if !holding.isEmpty {
                for operation in try await self.operations(connection, where: "payment_id = ANY(\(holding))", limit: 100_000) {
                    found[operation.paymentID]?.operations.append(operation)
                }
            }
            return ids.compactMap { found[$0] }
        }
    }

    /// Reconciliation entries from rows of (merchant, attempt, gateway, action, reason, status before, status after, at).
    private static func reconciliationEntries(_ rows: PostgresRowSequence) async throws -> [ReconciliationEntry] {
        var out: [ReconciliationEntry] = []
        for try await (merchant, attempt, gateway, action, reason, before, after, at)
            in rows.decode((String, String, String, String, String, String, String, Int64).self) {
            out.append(ReconciliationEntry(merchantID: merchant, attempt: AttemptReference(rawValue: attempt), gateway: GatewayID(rawValue: gateway),
                                           action: action, reason: reason, statusBefore: PaymentStatus(rawValue: before),
                                           statusAfter: PaymentStatus(rawValue: after), at: Date(storedMillis: at)))
        }
        return out
    }

    public func reconciliationLog(payment id: String) async throws -> [ReconciliationEntry] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT r.merchant_id, r.attempt_reference, r.gateway, r.action, r.reason, r.status_before, r.status_after, r.at
                FROM till_attempts a JOIN till_reconciliation_log r ON r.attempt_reference = a.reference
                WHERE a.payment_id = \(id) ORDER BY r.id LIMIT 1000
                """, logger: self.logger)
            return try await Self.reconciliationEntries(rows)
        }
    }

    public func notifications(payment id: String) async throws -> [StoredNotification] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT n.gateway, n.attempt_reference, n.event_id, n.reported_status, n.outcome, n.received_at
                FROM till_attempts a JOIN till_notifications n ON n.attempt_reference = a.reference
                WHERE a.payment_id = \(id) ORDER BY n.id LIMIT 1000
                """, logger: self.logger)
            var out: [StoredNotification] = []
            for try await (gateway, attempt, event, reported, verdict, at) in rows.decode((String, String, String, String, String, Int64).self) {
                out.append(StoredNotification(gateway: GatewayID(rawValue: gateway), attempt: AttemptReference(rawValue: attempt), eventID: event,
                                              reportedStatus: PaymentStatus(rawValue: reported), verdict: verdict, receivedAt: Date(storedMillis: at)))
            }
            return out
        }
    }

    public func logAudit(_ entry: AuditEntry) async throws {
        _ = try await client.withConnection { connection in
            try await connection.query("""
                INSERT INTO till_audit (operator_name, merchant_id, payment_id, action, target, outcome, detail, at)
                VALUES (\(entry.operatorName), \(entry.merchantID), \(entry.paymentID), \(entry.action), \(entry.target), \(entry.outcome),
                        \(entry.detail), \(entry.at.storedMillis))
                """, logger: self.logger)
        }
    }

    public func auditLog(payment id: String?, limit: Int) async throws -> [AuditEntry] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT operator_name, merchant_id, payment_id, action, target, outcome, detail, at FROM till_audit
                WHERE \(id)::text IS NULL OR payment_id = \(id) ORDER BY id DESC LIMIT \(limit)
                """, logger: self.logger)
            var out: [AuditEntry] = []
            for try await (name, merchant, payment, action, target, outcome, detail, at)
                in rows.decode((String, String, String?, String, String, String, String, Int64).self) {
                out.append(AuditEntry(operatorName: name, merchantID: merchant, paymentID: payment, action: action, target: target, outcome: outcome,
                                      detail: detail, at: Date(storedMillis: at)))
            }
            return out
        }
    }

    public func attemptCounts(merchant: String, since: Date) async throws -> [AttemptCount] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT a.gateway, a.status, a.gateway_code, COUNT(*) FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                WHERE a.created_at >= \(since.storedMillis) AND p.merchant_id = \(merchant) GROUP BY a.gateway, a.status, a.gateway_code
                """, logger: self.logger)
            var out: [AttemptCount] = []
            for try await (gateway, status, code, count) in rows.decode((String, String, String?, Int64).self) {
                out.append(AttemptCount(gateway: GatewayID(rawValue: gateway), status: PaymentStatus(rawValue: status), gatewayCode: code, count: Int(count)))
            }
            return out
        }
    }

    public func routingOutcomes(merchant: String, since: Date) async throws -> [RoutingOutcomeCount] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT a.gateway, a.status, a.gateway_code, (p.intent_json::jsonb) ->> 'method', p.currency,
                       (p.intent_json::jsonb) ->> 'country', left((p.intent_json::jsonb) ->> 'cardIIN', 6),
                       coalesce((p.intent_json::jsonb) ->> 'action', 'sale'), a.created_at / \(unescaped: String(RoutingOutcomeCount.bucketMillis)), COUNT(*)
                FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id
                WHERE a.created_at >= \(since.storedMillis) AND p.merchant_id = \(merchant)
                  AND a.status IN (\(unescaped: RoutingOutcomeCount.sqlList))
                GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                """, logger: self.logger)
            var out: [RoutingOutcomeCount] = []
            for try await (gateway, status, code, method, currency, country, iin, action, bucket, count)
                in rows.decode((String, String, String?, String?, String, String?, String?, String, Int64, Int64).self) {
                out.append(RoutingOutcomeCount(gateway: GatewayID(rawValue: gateway), status: PaymentStatus(rawValue: status), gatewayCode: code,
                                               method: method ?? "", currency: currency, country: country, cardIIN: iin, action: action,
                                               bucket: bucket, count: Int(count)))
            }
            return out
        }
    }

    public func ingest(_ notification: RawNotification, report: StatusReport, operation: OperationReport?, merchant: String,
                       source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        let headers = try SQLitePaymentStore.encode(notification.headers)
        return try await transaction { connection -> ApplyOutcome in
            guard report.gateway == notification.gateway,
                  let locked = try await self.lockedPayment(connection, attempt: report.attempt,
                                                            withOperations: operation != nil || report.status.isRefund),
                  case let payment = locked.facts, payment.merchantID == merchant,
                  let attempt = payment.attempts.first(where: { $0.reference == report.attempt }),
                  attempt.gateway == notification.gateway else {
                // Verified, but about no attempt of this merchant on this gateway: kept, applied to nothing.
                try await connection.query("""
                    INSERT INTO till_quarantine (merchant_id, gateway, attempt_reference, event_id, reported_status, headers_json, body, received_at)
                    VALUES (\(merchant), \(notification.gateway.rawValue), \(report.attempt.rawValue), \(report.eventID),
                            \(report.status.rawValue), \(headers), \(notification.body), \(notification.receivedAt.storedMillis))
                    ON CONFLICT DO NOTHING
                    """, logger: self.logger)
                return .quarantined
            }
            if let operation, source != .notificationToConfirm,
               let match = StoreRules.match(operation, among: payment.operations, attempt: report.attempt) {
                // About one of Till's operations: the notification is stored (its insert still the dedupe), then the
                // operation settled; the attempt-level report is not applied (the operation moves the money once).
                let settled = StoreRules.settle(match, report: operation, paymentAmount: payment.amount, now: Date(storedMillis: Date().storedMillis))
                let outcome = ApplyOutcome.operation(settled.outcome)
                let fresh = try await self.write(StoreRules.Effect(outcome: outcome), report: report, paymentID: payment.id, connection: connection,
                                                 notification: .init(raw: notification, headers: headers, outcome: outcome.storedName))
                guard fresh else { return .duplicate }
                try await self.write(settled, locked: locked, connection: connection)
                return outcome
            }
            let effect = StoreRules.apply(report, attempt: attempt, payment: payment, source: source)
            // The insert is the dedupe: a redelivery of a stored event inserts nothing and changes nothing. The
            // insert, the writes it allows and their events are one statement (one round trip).
            let fresh = try await self.write(effect, report: report, locked: locked, connection: connection,
                                             notification: .init(raw: notification, headers: headers, outcome: effect.outcome.storedName))
            return fresh ? effect.outcome : .duplicate
        }
    }

    public func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await transaction { connection -> ApplyOutcome in
            guard let locked = try await self.lockedPayment(connection, attempt: report.attempt, withOperations: report.status.isRefund),
                  let attempt = locked.facts.attempts.first(where: { $0.reference == report.attempt }) else { return .unknownAttempt }
            let effect = StoreRules.apply(report, attempt: attempt, payment: locked.facts, source: source)
            try await self.write(effect, report: report, locked: locked, connection: connection)
            return effect.outcome
        }
    }

    public func close() async throws {
        runner.cancel()
    }

    // MARK: Operations

    public func addOperation(payment id: String, merchant: String, idempotencyKey: String, requestHash: String,
                             decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome {
        do {
            return try await transaction { connection -> OperationCreateOutcome in
                // Under the payment's lock: two requests on one payment are decided one after the other.
                try await self.lock(connection, payment: id)
                if let stored = try await self.operations(connection, where: "merchant_id = \(merchant) AND idempotency_key = \(idempotencyKey)").first {
                    return stored.requestHash == requestHash && stored.paymentID == id ? .replayed(stored) : .idempotencyConflict
                }
                guard var payment = try await self.payment(connection, id: id, merchant: merchant) else {
                    throw StoreError.conflict("no payment \(id)")
                }
                payment.operations = try await self.operations(connection, payment: id)
                let before = payment
                var operation = try decide(payment)
                let now = Date().storedMillis
                (operation.createdAt, operation.updatedAt) = (Date(storedMillis: now), Date(storedMillis: now))
                try await connection.query("""
                    INSERT INTO till_operations (reference, payment_id, attempt_reference, merchant_id, gateway, kind, amount_minor, currency, status,
                                                 is_final, idempotency_key, request_hash, created_at, updated_at)
                    VALUES (\(operation.reference.rawValue), \(id), \(operation.attempt.rawValue), \(merchant), \(operation.gateway.rawValue),
                            \(operation.kind.rawValue), \(operation.amount.minorUnits), \(operation.amount.currency.code), \(operation.status.rawValue),
                            \(operation.isFinal ? 1 : 0), \(idempotencyKey), \(requestHash), \(now), \(now))
                    """, logger: self.logger)
                var after = before
                after.operations.append(operation)
                try await self.insertEvents(connection, try self.events(before: before, after: after,
                                                                        lastSequence: try await self.lastEventSequence(connection, payment: id)),
                                            payment: after)
                return .created(operation)
            }
        } catch let error as PSQLError where error.isUniqueViolation {
            throw StoreError.conflict("a concurrent operation on payment \(id) was stored first")
        }
    }

    public func operation(_ reference: OperationReference) async throws -> StoredOperation? {
        try await client.withConnection { connection in
            try await self.operations(connection, where: "reference = \(reference.rawValue)").first
        }
    }

    public func settleOperation(_ reference: OperationReference, report: OperationReport) async throws -> OperationSettleOutcome {
        try await transaction { connection -> OperationSettleOutcome in
            guard let locked = try await self.lockedPayment(connection, attempt: reference.attempt, withOperations: true),
                  let operation = locked.facts.operations.first(where: { $0.reference == reference }) else { return .unknownOperation }
            let settled = StoreRules.settle(operation, report: report, paymentAmount: locked.facts.amount, now: Date(storedMillis: Date().storedMillis))
            try await self.write(settled, locked: locked, connection: connection)
            return settled.outcome
        }
    }

    public func dueOperations(createdBefore: Date, now: Date, limit: Int) async throws -> [StoredOperation] {
        try await client.withConnection { connection in
            try await self.operations(connection, where: """
                status IN ('pending', 'unknown') AND created_at < \(createdBefore.storedMillis)
                AND (next_inquiry_at IS NULL OR next_inquiry_at <= \(now.storedMillis))
                """, limit: limit)
        }
    }

    public func claimOperationInquiry(_ reference: OperationReference, expected: Date?, next: Date) async throws -> Bool {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                UPDATE till_operations SET next_inquiry_at = \(next.storedMillis), inquiry_count = inquiry_count + 1
                WHERE reference = \(reference.rawValue) AND next_inquiry_at IS NOT DISTINCT FROM \(expected?.storedMillis) RETURNING reference
                """, logger: self.logger)
            var claimed = false
            for try await _ in rows { claimed = true }
            return claimed
        }
    }

    /// Writes what ``StoreRules/settle(_:report:paymentAmount:now:)`` decided: the operation's row, then its money through the
    /// stores' one rule, in the caller's transaction (the payment locked).
    private func write(_ settled: StoreRules.OperationEffect, locked: LockedPayment, connection: PostgresConnection) async throws {
        if let changed = settled.operation {
            try await connection.query("""
                UPDATE till_operations SET status = \(changed.status.rawValue), gateway_reference = \(changed.gatewayReference),
                       gateway_code = \(changed.gatewayCode), gateway_message = \(changed.gatewayMessage), updated_at = \(changed.updatedAt.storedMillis)
                WHERE reference = \(changed.reference.rawValue)
                """, logger: logger)
        }
        // The payment as the operation's new row leaves it; its money, when it moved, follows through the one rule.
        var changed = locked
        if let operation = settled.operation, let index = changed.facts.operations.firstIndex(where: { $0.reference == operation.reference }) {
            changed.facts.operations[index] = operation
            changed.payment.operations[index] = operation
        }
        guard let money = settled.money, let attempt = changed.facts.attempts.first(where: { $0.reference == money.attempt }) else {
            try await insertEvents(connection, try events(before: locked.payment, after: changed.payment, lastSequence: locked.lastSequence),
                                   payment: changed.payment)
            return
        }
        let effect = StoreRules.apply(money, attempt: attempt, payment: changed.facts, source: .inquiry)
        try await write(effect, report: money, locked: changed, connection: connection, eventsSince: locked.payment)
    }

    private func operations(_ connection: PostgresConnection, payment id: String) async throws -> [StoredOperation] {
        try await operations(connection, where: "payment_id = \(id)")
    }

    private func operations(_ connection: PostgresConnection, where condition: PostgresQuery, limit: Int = 10_000) async throws -> [StoredOperation] {
        var query = PostgresQuery(unsafeSQL: """
            SELECT reference, payment_id, merchant_id, gateway, status, amount_minor, currency, is_final, gateway_reference, gateway_code,
                   gateway_message, idempotency_key, request_hash, inquiry_count, next_inquiry_at, created_at, updated_at
            FROM till_operations WHERE
            """)
        query.sql += " " + condition.sql + " ORDER BY created_at, reference LIMIT \(limit)"
        query.binds = condition.binds
        var out: [StoredOperation] = []
        for try await row in try await connection.query(query, logger: logger) {
            let (reference, payment, merchant, gateway, status, minor, currency, isFinal) =
                try row.decode((String, String, String, String, String, Int64, String, Int).self)
            let columns = Array(row)
            guard let parsed = OperationReference(rawValue: reference) else { throw StoreError.unavailable("operation row holds a bad reference") }
            func text(_ index: Int) throws -> String? { try columns[index].decode(String?.self) }
            func number(_ index: Int) throws -> Int64? { try columns[index].decode(Int64?.self) }
            out.append(StoredOperation(reference: parsed, paymentID: payment, merchantID: merchant, gateway: GatewayID(rawValue: gateway),
                                       status: OperationStatus(rawValue: status) ?? .unknown,
                                       amount: try PaymentFacts.amount(minorUnits: minor, currency: currency), isFinal: isFinal != 0,
                                       gatewayReference: try text(8), gatewayCode: try text(9), gatewayMessage: try text(10),
                                       idempotencyKey: try text(11) ?? "", requestHash: try text(12) ?? "",
                                       inquiryCount: Int(try number(13) ?? 0), nextInquiryAt: try number(14).map(Date.init(storedMillis:)),
                                       createdAt: Date(storedMillis: try number(15) ?? 0), updatedAt: Date(storedMillis: try number(16) ?? 0)))
        }
        return out
    }

    /// The backend process id of the pooled connection that ran this call, which it holds for at least
    /// `holding`: lets a test count the connections the pool really opens.
    func backendProcessID(holding: Duration) async throws -> Int32 {
        let seconds = Double(holding.components.seconds) + Double(holding.components.attoseconds) / 1e18
        return try await client.withConnection { connection in
            let rows = try await connection.query("SELECT pg_backend_pid(), pg_sleep(\(seconds))::TEXT", logger: self.logger)
            for try await (pid, _) in rows.decode((Int32, String).self) { return pid }
            throw StoreError.unavailable("pg_backend_pid() returned no row")
        }
    }

    package func seedPendingAttempts(count: Int, merchant: String, gateway: GatewayID, amount: Money) async throws -> [AttemptReference] {
        let references = (0..<count).map { _ in AttemptReference.generate() }
        let now = Date().storedMillis
        for chunk in stride(from: 0, to: references.count, by: 1_000) {
            let slice = Array(references[chunk..<min(chunk + 1_000, references.count)])
            try await transaction { connection in
                for reference in slice {
                    let id = "seed_\(reference.rawValue)"
                    let intent = PaymentIntent(merchantReference: "seed-\(reference.rawValue)", amount: amount, method: .card)
                    let json = try SQLitePaymentStore.encode(intent)
                    try await connection.query("""
                        INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at)
                        VALUES (\(id), \(merchant), \(intent.merchantReference), \(amount.minorUnits), \(amount.currency.code), 'pending', \(json), \(now), \(now))
                        """, logger: self.logger)
                    try await connection.query("""
                        INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, created_at, updated_at)
                        VALUES (\(reference.rawValue), \(id), 1, \(gateway.rawValue), 'pending', \(now), \(now))
                        """, logger: self.logger)
                }
            }
        }
        return references
    }

    package func seedSearchPayments(count: Int, merchant: String, newest: Date) async throws {
        let tag = SearchSeed.prefixes()
        let oldest = newest.storedMillis - Int64(count - 1) * 1_000
        for chunk in stride(from: 0, to: count, by: 100_000) {
            let last = min(chunk + 100_000, count) - 1
            try await transaction { connection -> Void in
                try await connection.query("""
                    CREATE TEMPORARY TABLE seed ON COMMIT DROP AS
                    SELECT i, \(unescaped: SearchSeed.statusCase) AS status, \(unescaped: SearchSeed.currencyCase) AS currency,
                           \(unescaped: SearchSeed.amount)::BIGINT AS amount, \(unescaped: SearchSeed.methodCase) AS method,
                           \(unescaped: SearchSeed.gatewayCase) AS gateway, \(oldest)::BIGINT + i * 1000 AS at
                    FROM generate_series(\(Int64(chunk))::BIGINT, \(Int64(last))::BIGINT) AS i
                    """, logger: self.logger)
                try await connection.query("""
                    INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at, updated_at)
                    SELECT \(tag.payment)::TEXT || lpad(i::TEXT, 24, '0'), \(merchant)::TEXT, 's-' || i, amount, currency, status,
                           json_build_object('action', 'sale', 'amount', json_build_object('currency', currency, 'value', amount),
                                             'customer', json_build_object('email', 'customer' || (i % 50000) || '@example.com'),
                                             'merchantReference', 's-' || i, 'method', method)::TEXT, at, at
                    FROM seed
                    """, logger: self.logger)
                try await connection.query("""
                    INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, created_at, updated_at)
                    SELECT \(tag.attempt)::TEXT || lpad(i::TEXT, 15, '0'), \(tag.payment)::TEXT || lpad(i::TEXT, 24, '0'), 1, gateway, status, at, at FROM seed WHERE status <> 'created'
                    """, logger: self.logger)
            }
        }
        _ = try await client.withConnection { connection in try await connection.query("ANALYZE till_payments", logger: self.logger) }
        _ = try await client.withConnection { connection in try await connection.query("ANALYZE till_attempts", logger: self.logger) }
    }

    package func seedPendingEvents(count: Int, merchant: String) async throws {
        let rows = try seededEvents(count: count, merchant: merchant)
        for chunk in stride(from: 0, to: rows.count, by: 2_000) {
            let slice = Array(rows[chunk..<min(chunk + 2_000, rows.count)])
            let now = slice.first?.payment.createdAt.storedMillis ?? 0
            try await transaction { connection -> Void in
                _ = try await connection.query("""
                    WITH p AS (
                        INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at,
                                                   updated_at, last_event_sequence)
                        SELECT x.id, \(merchant)::TEXT, x.ref, 1000, 'USD', 'created', x.json, \(now)::BIGINT, \(now)::BIGINT, 1
                        FROM unnest(\(slice.map(\.payment.id))::TEXT[], \(slice.map(\.payment.intent.merchantReference))::TEXT[],
                                    \(slice.map(\.intentJSON))::TEXT[]) AS x(id, ref, json)
                        RETURNING id
                    )
                    INSERT INTO till_events (id, merchant_id, payment_id, sequence, type, body, created_at, state, next_attempt_at)
                    SELECT x.id, \(merchant)::TEXT, x.payment, 1, 'payment.created', x.body, \(now)::BIGINT, 'pending', \(now)::BIGINT
                    FROM unnest(\(slice.map(\.event.id))::TEXT[], \(slice.map(\.payment.id))::TEXT[],
                                \(slice.map { String(decoding: $0.event.body, as: UTF8.self) })::TEXT[]) AS x(id, payment, body)
                    JOIN p ON p.id = x.payment
                    """, logger: self.logger)
            }
        }
    }

    /// Counts rows of a table (tests and diagnostics).
    public func notificationCount(attempt: AttemptReference) async throws -> Int {
        try await client.withConnection { connection in
            var total = 0
            for try await value in try await connection.query("SELECT COUNT(*)::BIGINT FROM till_notifications WHERE attempt_reference = \(attempt.rawValue)",
                                                              logger: self.logger).decode(Int64.self) { total = Int(value) }
            return total
        }
    }

    public func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool {
        try await client.withConnection { connection in
            var found = false
            for try await _ in try await connection.query(
                "SELECT 1::INT FROM till_idempotency_keys WHERE merchant_id = \(merchant) AND idempotency_key = \(key)", logger: self.logger
            ).decode(Int32.self) { found = true }
            return found
        }
    }

    public func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        try await client.withConnection { connection in
            let rows = try await connection.query("""
                SELECT headers_json, body, received_at FROM till_notifications
                WHERE attempt_reference = \(attempt.rawValue) AND gateway = \(gateway.rawValue) AND outcome = 'needs_inquiry'
                ORDER BY id DESC LIMIT \(limit)
                """, logger: self.logger)
            var out: [RawNotification] = []
            for try await (headers, body, received) in rows.decode((String, ByteBuffer, Int64).self) {
                out.append(RawNotification(gateway: gateway, headers: (try? SQLitePaymentStore.decode([String: String].self, headers)) ?? [:],
                                           body: Data(buffer: body), receivedAt: Date(storedMillis: received)))
            }
            return out
        }
    }

    func count(_ table: String, where condition: String = "1 = 1") async throws -> Int {
        try await client.withConnection { connection in
            var total = 0
            for try await value in try await connection.query(PostgresQuery(unsafeSQL: "SELECT COUNT(*)::BIGINT FROM \(table) WHERE \(condition)"),
                                                              logger: self.logger).decode(Int64.self) { total = Int(value) }
            return total
        }
    }

    /// Runs SQL as written, bypassing every rule in code (tests of the schema's own guards).
    func executeUnchecked(_ sql: String) async throws {
        _ = try await transaction { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: self.logger)
        }
    }

    // MARK: Events

    private static let eventColumns = """
        position, id, merchant_id, payment_id, sequence, type, body, created_at, state, attempt_count, next_attempt_at, delivered_at
        """

    private func eventRows(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> [StoredEvent] {
        var out: [StoredEvent] = []
        for try await row in try await connection.query(query, logger: logger) {
            let (position, id, merchant, payment, sequence, type, body, created, state, count, next, delivered) =
                try row.decode((Int64, String, String, String, Int, String, String, Int64, String, Int, Int64?, Int64?).self)
            out.append(StoredEvent(id: id, merchantID: merchant, paymentID: payment, sequence: sequence, type: EventType(rawValue: type),
                                   body: Data(body.utf8), createdAt: Date(storedMillis: created), position: position,
                                   state: EventDeliveryState(rawValue: state) ?? .pending, attemptCount: count,
                                   nextAttemptAt: next.map(Date.init(storedMillis:)), deliveredAt: delivered.map(Date.init(storedMillis:))))
        }
        return out
    }

    public func events(merchant: String, query: EventQuery) async throws -> [StoredEvent] {
        try await client.withConnection { connection in
            try await self.eventRows(connection, """
                SELECT position, id, merchant_id, payment_id, sequence, type, body, created_at, state, attempt_count, next_attempt_at, delivered_at
                FROM till_events WHERE merchant_id = \(merchant) AND position > \(query.after)
                  AND (\(query.type?.rawValue)::TEXT IS NULL OR type = \(query.type?.rawValue))
                  AND (\(query.paymentID)::TEXT IS NULL OR payment_id = \(query.paymentID))
                  AND (\(query.state?.rawValue)::TEXT IS NULL OR state = \(query.state?.rawValue))
                ORDER BY position LIMIT \(query.limit)
                """)
        }
    }

    public func event(id: String, merchant: String) async throws -> StoredEvent? {
        try await client.withConnection { connection in
            try await self.eventRows(connection, """
                SELECT position, id, merchant_id, payment_id, sequence, type, body, created_at, state, attempt_count, next_attempt_at, delivered_at
                FROM till_events WHERE id = \(id) AND merchant_id = \(merchant)
                """).first
        }
    }

    public func deliveryAttempts(event id: String) async throws -> [StoredDeliveryAttempt] {
        try await client.withConnection { connection in
            var out: [StoredDeliveryAttempt] = []
            let rows = try await connection.query("""
                SELECT event_id, endpoint, at, status_code, latency_ms, error, excerpt FROM till_event_attempts WHERE event_id = \(id) ORDER BY id
                """, logger: self.logger)
            for try await (event, endpoint, at, code, latency, error, excerpt) in rows.decode((String, String, Int64, Int?, Int, String?, String?).self) {
                out.append(StoredDeliveryAttempt(eventID: event, endpoint: endpoint, at: Date(storedMillis: at), statusCode: code,
                                                 latencyMillis: latency, error: error, excerpt: excerpt))
            }
            return out
        }
    }

    public func claimDueEvents(now: Date, claimedUntil: Date, limit: Int, merchants: [String]?) async throws -> [StoredEvent] {
        try await transaction { connection in
            // Rows another instance is claiming are skipped, not waited for; an event whose payment has an earlier event
            // still pending waits for it (that earlier row is pending whether or not another instance holds it).
            let due = try await self.eventRows(connection, """
                SELECT position, id, merchant_id, payment_id, sequence, type, body, created_at, state, attempt_count, next_attempt_at, delivered_at
                FROM till_events e
                WHERE e.state = 'pending' AND e.next_attempt_at <= \(now.storedMillis)
                  AND (\(merchants == nil)::BOOLEAN OR e.merchant_id = ANY(\(merchants ?? [])::TEXT[]))
                  AND NOT EXISTS (SELECT 1 FROM till_events b WHERE b.payment_id = e.payment_id AND b.sequence < e.sequence AND b.state = 'pending')
                ORDER BY e.next_attempt_at, e.position LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """)
            guard !due.isEmpty else { return [] }
            let until = claimedUntil.storedMillis
            try await connection.query("UPDATE till_events SET next_attempt_at = \(until) WHERE id = ANY(\(due.map(\.id))::TEXT[])", logger: self.logger)
            return due.map { event in
                var event = event
                event.nextAttemptAt = Date(storedMillis: until)
                return event
            }
        }
    }

    @discardableResult
    public func recordDelivery(event id: String, claimedUntil: Date, attempts: [StoredDeliveryAttempt], result: DeliveryResult) async throws -> Bool {
        let (state, next, delivered) = StoreRules.delivery(result, now: Date())
        return try await transaction { connection in
            for attempt in attempts {
                try await connection.query("""
                    INSERT INTO till_event_attempts (event_id, endpoint, at, status_code, latency_ms, error, excerpt)
                    VALUES (\(attempt.eventID), \(attempt.endpoint), \(attempt.at.storedMillis), \(attempt.statusCode.map(Int64.init)),
                            \(Int64(attempt.latencyMillis)), \(attempt.error), \(attempt.excerpt))
                    """, logger: self.logger)
            }
            let rows = try await connection.query("""
                UPDATE till_events SET state = \(state.rawValue), next_attempt_at = \(next?.storedMillis), delivered_at = \(delivered?.storedMillis),
                       attempt_count = attempt_count + \(attempts.isEmpty ? 0 : 1)
                WHERE id = \(id) AND state = 'pending' AND next_attempt_at = \(claimedUntil.storedMillis) RETURNING 1
                """, logger: self.logger)
            var recorded = false
            for try await _ in rows { recorded = true }
            return recorded
        }
    }

    public func redeliver(event id: String, merchant: String, now: Date) async throws -> StoredEvent? {
        try await client.withConnection { connection in
            try await self.eventRows(connection, """
                UPDATE till_events SET state = 'pending', next_attempt_at = \(now.storedMillis) WHERE id = \(id) AND merchant_id = \(merchant)
                RETURNING position, id, merchant_id, payment_id, sequence, type, body, created_at, state, attempt_count, next_attempt_at, delivered_at
                """).first
        }
    }

    public func eventBacklog() async throws -> EventBacklog {
        try await client.withConnection { connection in
            let rows = try await connection.query("SELECT COUNT(*), MIN(created_at) FROM till_events WHERE state = 'pending'", logger: self.logger)
            for try await (count, oldest) in rows.decode((Int64, Int64?).self) {
                return EventBacklog(pending: Int(count), oldestCreatedAt: oldest.map(Date.init(storedMillis:)))
            }
            return EventBacklog(pending: 0, oldestCreatedAt: nil)
        }
    }

    /// The events of a change from `before` to `after` (none when the store records no events).
    private func events(before: StoredPayment?, after: StoredPayment, lastSequence: Int) throws -> [StoredEvent] {
        guard recordsEvents else { return [] }
        return try EventRules.events(before: before, after: after, lastSequence: lastSequence, now: Date(storedMillis: Date().storedMillis))
    }

    /// Inserts a change's events and the payment's last event number, in one statement, in the caller's transaction.
    private func insertEvents(_ connection: PostgresConnection, _ events: [StoredEvent], payment: StoredPayment) async throws {
        guard let last = events.last else { return }
        let rows = EventRows(events)
        try await connection.query("""
            WITH ev AS (
                INSERT INTO till_events (id, merchant_id, payment_id, sequence, type, body, created_at, state, next_attempt_at)
                SELECT x.id, \(payment.merchantID)::TEXT, \(payment.id)::TEXT, x.seq, x.type, x.body, \(last.createdAt.storedMillis)::BIGINT, 'pending',
                       \(last.createdAt.storedMillis)::BIGINT
                FROM unnest(\(rows.ids)::TEXT[], \(rows.sequences)::BIGINT[], \(rows.types)::TEXT[], \(rows.bodies)::TEXT[]) AS x(id, seq, type, body)
                RETURNING 1
            )
            UPDATE till_payments SET last_event_sequence = \(Int64(last.sequence)) WHERE id = \(payment.id)
            """, logger: logger)
    }

    private func lastEventSequence(_ connection: PostgresConnection, payment id: String) async throws -> Int {
        for try await last in try await connection.query("SELECT last_event_sequence FROM till_payments WHERE id = \(id)", logger: logger)
            .decode(Int64.self) { return Int(last) }
        return 0
    }

    /// Runs `change` on payment `id` (locked by the caller) and writes the events it made: the payment read before and
    /// after, in the caller's transaction.
    private func recordingEvents(_ connection: PostgresConnection, payment id: String, _ change: () async throws -> Void) async throws {
        guard recordsEvents else { return try await change() }
        var merchant: String?
        var last = 0
        for try await (found, sequence) in try await connection.query("SELECT merchant_id, last_event_sequence FROM till_payments WHERE id = \(id)",
                                                                      logger: logger).decode((String, Int64).self) {
            (merchant, last) = (found, Int(sequence))
        }
        guard let merchant, var before = try await payment(connection, id: id, merchant: merchant) else { return try await change() }
        before.operations = try await operations(connection, payment: id)
        try await change()
        guard var after = try await payment(connection, id: id, merchant: merchant) else { return }
        after.operations = before.operations
        try await insertEvents(connection, try events(before: before, after: after, lastSequence: last), payment: after)
    }

    // MARK: Rows

    /// Runs `body` in a transaction, rethrowing the body's own error rather than the wrapper.
    private func transaction<Result: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.commitError ?? error.beginError ?? error
        }
    }

    private func lock(_ connection: PostgresConnection, payment: String) async throws {
        for try await _ in try await connection.run(PostgresStatements.LockPayment.self, payment, logger: logger) {}
    }

    /// Locks the payment an attempt belongs to and loads it with its attempts: two round trips on purpose.
    /// One query that joined the attempts under `FOR UPDATE OF p` would, after waiting for the lock, return the
    /// payment's latest row beside the attempts as they were before the wait (PostgreSQL re-reads only the
    /// locked rows); the attempts read by a second statement, after the lock, are current.
    private func lockedPayment(_ connection: PostgresConnection, attempt: AttemptReference, withOperations: Bool = false) async throws -> LockedPayment? {
        let rows = try await connection.run(PostgresStatements.LockPaymentOfAttempt.self, attempt.rawValue, logger: logger)
        var found: LockedPayment?
        for try await row in rows {
            let (pid, mid, status, amount, currency, intentJSON, created, updated, last) =
                try row.decode((String, String, String, Int64, String, String, Int64, Int64, Int64).self)
            let money = try PaymentFacts.amount(minorUnits: amount, currency: currency)
            found = LockedPayment(facts: PaymentFacts(id: pid, merchantID: mid, status: PaymentStatus(rawValue: status), amount: money, attempts: []),
                                  payment: StoredPayment(id: pid, merchantID: mid, intent: try intents.intent(intentJSON),
                                                         status: PaymentStatus(rawValue: status), attempts: [],
                                                         createdAt: Date(storedMillis: created), updatedAt: Date(storedMillis: updated)),
                                  lastSequence: Int(last))
        }
        guard var locked = found else { return nil }
        let attempts = try await attempts(connection, payment: locked.facts.id)
        locked.facts.attempts = attempts
        locked.payment.attempts = attempts
        // What a refund may take back depends on what Till captured; the events' view shows the operations whenever an
        // attempt may have some (none can exist before an attempt held money).
        if withOperations || (recordsEvents && attempts.contains(where: { $0.status.mayHaveOperations })) {
            let operations = try await operations(connection, payment: locked.facts.id)
            locked.facts.operations = operations
            locked.payment.operations = operations
        }
        return locked
    }

    /// A payment locked in the caller's transaction: what the rules need of it, the whole payment as the events show
    /// it, and its last event's number.
    private struct LockedPayment: Sendable {
        var facts: PaymentFacts
        var payment: StoredPayment
        var lastSequence: Int
    }

    /// A notification to store with the writes it allows.
    private struct NotificationRow {
        let raw: RawNotification
        let headers: String
        let outcome: String
    }

    /// Writes what ``StoreRules/apply(_:attempt:payment:)`` decided, in one statement (one round trip). With a
    /// `notification`, its insert is the gate: the writes happen only if it was inserted (a redelivery inserts
    /// nothing), and the result says whether it was.
    /// The change's events (computed from the payment as `effect` leaves it, numbered after `locked`'s last) go in the
    /// same statement. `eventsSince` is the payment before the caller's earlier writes in this transaction (an operation's
    /// row), so their events are written here too.
    @discardableResult
    private func write(_ effect: StoreRules.Effect, report: StatusReport, locked: LockedPayment, connection: PostgresConnection,
                       notification: NotificationRow? = nil, eventsSince: StoredPayment? = nil) async throws -> Bool {
        let now = Date().storedMillis
        let after = effect.applied(to: locked.payment, report: report, now: Date(storedMillis: now))
        let events = try events(before: eventsSince ?? locked.payment, after: after, lastSequence: locked.lastSequence)
        return try await write(effect, report: report, paymentID: locked.facts.id, connection: connection, notification: notification,
                               events: events, merchant: locked.facts.merchantID, now: now)
    }

    @discardableResult
    private func write(_ effect: StoreRules.Effect, report: StatusReport, paymentID: String, connection: PostgresConnection,
                       notification: NotificationRow? = nil, events: [StoredEvent] = [], merchant: String = "",
                       now: Int64 = Date().storedMillis) async throws -> Bool {
        let values = PostgresStatements.WriteEffect.Values(
            store: notification != nil, gateway: notification?.raw.gateway.rawValue ?? "", eventID: report.eventID,
            attempt: report.attempt.rawValue, reportedStatus: report.status.rawValue, outcome: notification?.outcome ?? "",
            headers: notification?.headers ?? "", body: notification?.raw.body ?? Data(),
            receivedAt: notification?.raw.receivedAt.storedMillis ?? 0, attemptStatus: effect.attemptStatus?.rawValue,
            gatewayCode: report.gatewayCode, gatewayReference: report.gatewayReference, refunded: effect.refundedMinorUnits, now: now,
            paymentID: paymentID, paymentStatus: effect.paymentStatus?.rawValue, merchant: merchant, events: EventRows(events),
            lastEventSequence: events.last.map { Int64($0.sequence) })
        var gone: Int64 = 0
        for try await row in try await connection.run(PostgresStatements.WriteEffect.self, values, logger: logger) {
            gone = try row.decode(Int64.self)
        }
        if gone > 0 || notification == nil {
            for reference in effect.settledOperations {
                try await connection.query("""
                    UPDATE till_operations SET status = 'succeeded', updated_at = \(now)
                    WHERE reference = \(reference.rawValue) AND status IN ('pending', 'unknown')
                    """, logger: logger)
            }
        }
        return gone > 0
    }

    /// Derives the payment's status from its attempts (one round trip to read, one more only when it changes).
    private func refreshPaymentStatus(_ connection: PostgresConnection, payment id: String) async throws {
        var found: (String, [String])?
        for try await row in try await connection.run(PostgresStatements.PaymentStatuses.self, id, logger: logger) {
            found = try row.decode((String, [String]).self)
        }
        guard let (current, statuses) = found else { return }
        if let derived = StoreRules.derivedStatus(current: PaymentStatus(rawValue: current), attempts: statuses.map(PaymentStatus.init(rawValue:))) {
            let values = (payment: id, status: derived.rawValue, now: Date().storedMillis)
            for try await _ in try await connection.run(PostgresStatements.SetPaymentStatus.self, values, logger: logger) {}
        }
    }

    /// A payment with its attempts: one prepared statement, one snapshot.
    private func payment(_ connection: PostgresConnection, id: String, merchant: String) async throws -> StoredPayment? {
        var found: StoredPayment?
        for try await row in try await connection.run(PostgresStatements.PaymentWithAttempts.self, (id: id, merchant: merchant), logger: logger) {
            if found == nil {
                let (pid, mid, status, intentJSON, created, updated) = try row.decode((String, String, String, String, Int64, Int64).self)
                found = StoredPayment(id: pid, merchantID: mid, intent: try intents.intent(intentJSON),
                                      status: PaymentStatus(rawValue: status), attempts: [],
                                      createdAt: Date(storedMillis: created), updatedAt: Date(storedMillis: updated))
            }
            if let attempt = try PostgresStatements.attempt(row, offset: 6) { found?.attempts.append(attempt) }
        }
        return found
    }

    /// A payment with its attempts and its operations.
    private func paymentWithOperations(_ connection: PostgresConnection, id: String, merchant: String) async throws -> StoredPayment? {
        guard var payment = try await payment(connection, id: id, merchant: merchant) else { return nil }
        if payment.attempts.contains(where: { $0.status.mayHaveOperations }) {
            payment.operations = try await operations(connection, payment: id)
        }
        return payment
    }

    private func attempts(_ connection: PostgresConnection, payment id: String) async throws -> [StoredAttempt] {
        var attempts: [StoredAttempt] = []
        for try await row in try await connection.run(PostgresStatements.Attempts.self, id, logger: logger) {
            if let attempt = try PostgresStatements.attempt(row) { attempts.append(attempt) }
        }
        return attempts
    }
}

extension PSQLError {
    /// SQLSTATE 23505: a unique constraint refused the write.
    var isUniqueViolation: Bool { serverInfo?[.sqlState] == "23505" }
}
