/// The schema, as ordered migrations. Each store runs the ones it has not run yet, recording them in
/// `till_schema_migrations`. The statements are written in the SQL both SQLite and PostgreSQL accept,
/// except where a dialect hook says otherwise.
enum Schema {
    enum Dialect { case sqlite, postgres }

    static func migrations(_ dialect: Dialect) -> [(version: Int, statements: [String])] {
        let serial = dialect == .sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"
        let blob = dialect == .sqlite ? "BLOB" : "BYTEA"
        let moneyMoved = "('paid', 'partially_refunded', 'refunded')"
        var v1 = [
            """
            CREATE TABLE till_payments (
                id TEXT PRIMARY KEY,
                merchant_id TEXT NOT NULL,
                merchant_reference TEXT NOT NULL,
                amount_minor BIGINT NOT NULL CHECK (amount_minor >= 0),
                currency TEXT NOT NULL CHECK (length(currency) = 3),
                status TEXT NOT NULL,
                intent_json TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (merchant_id, merchant_reference)
            )
            """,
            """
            CREATE TABLE till_idempotency_keys (
                merchant_id TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                request_hash TEXT NOT NULL,
                payment_id TEXT NOT NULL REFERENCES till_payments (id),
                created_at BIGINT NOT NULL,
                PRIMARY KEY (merchant_id, idempotency_key)
            )
            """,
            """
            CREATE TABLE till_attempts (
                reference TEXT PRIMARY KEY,
                payment_id TEXT NOT NULL REFERENCES till_payments (id),
                sequence INTEGER NOT NULL CHECK (sequence >= 1),
                gateway TEXT NOT NULL,
                status TEXT NOT NULL,
                gateway_reference TEXT,
                gateway_code TEXT,
                client_outcome TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (payment_id, sequence)
            )
            """,
            """
            CREATE TABLE till_notifications (
                id \(serial),
                gateway TEXT NOT NULL,
                event_id TEXT NOT NULL,
                attempt_reference TEXT NOT NULL REFERENCES till_attempts (reference),
                reported_status TEXT NOT NULL,
                outcome TEXT NOT NULL,
                headers_json TEXT NOT NULL,
                body \(blob) NOT NULL,
                received_at BIGINT NOT NULL,
                UNIQUE (attempt_reference, gateway, event_id)
            )
            """,
            "CREATE INDEX till_attempts_payment ON till_attempts (payment_id)",
        ]
        // Money that moved never un-moves, whatever the application code does.
        switch dialect {
        case .sqlite:
            for table in ["till_payments", "till_attempts"] {
                v1.append("""
                    CREATE TRIGGER \(table)_forward_only BEFORE UPDATE OF status ON \(table)
                    WHEN OLD.status IN \(moneyMoved) AND NEW.status NOT IN \(moneyMoved)
                    BEGIN SELECT RAISE(ABORT, 'till: status may not move back from money moved'); END
                    """)
            }
        case .postgres:
            v1.append("""
                CREATE FUNCTION till_forward_only() RETURNS trigger AS $$
                BEGIN
                    IF OLD.status IN \(moneyMoved) AND NEW.status NOT IN \(moneyMoved) THEN
                        RAISE EXCEPTION 'till: status may not move back from money moved';
                    END IF;
                    RETURN NEW;
                END $$ LANGUAGE plpgsql
                """)
            for table in ["till_payments", "till_attempts"] {
                v1.append("""
                    CREATE TRIGGER \(table)_forward_only BEFORE UPDATE OF status ON \(table)
                    FOR EACH ROW EXECUTE FUNCTION till_forward_only()
                    """)
            }
        }
        // v2: the return URL the gateway chose for an attempt (3-D Secure after a submit comes back
        // there), when the app's one submit was accepted, whether the customer was handed off (no
        // automatic cascade after it) or asked for the attempt, the reconciler's inquiry schedule, the
        // quarantine of verified notifications for unknown attempts, and the reconciler's log.
        let v2 = [
            "ALTER TABLE till_attempts ADD COLUMN return_url TEXT",
            "ALTER TABLE till_attempts ADD COLUMN submitted_at BIGINT",
            "ALTER TABLE till_attempts ADD COLUMN handed_off INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE till_attempts ADD COLUMN customer_requested INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE till_attempts ADD COLUMN inquiry_count INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE till_attempts ADD COLUMN next_inquiry_at BIGINT",
            "CREATE INDEX till_attempts_open ON till_attempts (status, created_at)",
            """
            CREATE TABLE till_quarantine (
                id \(serial),
                merchant_id TEXT NOT NULL,
                gateway TEXT NOT NULL,
                attempt_reference TEXT NOT NULL,
                event_id TEXT NOT NULL,
                reported_status TEXT NOT NULL,
                headers_json TEXT NOT NULL,
                body \(blob) NOT NULL,
                received_at BIGINT NOT NULL,
                UNIQUE (merchant_id, gateway, attempt_reference, event_id)
            )
            """,
            """
            CREATE TABLE till_reconciliation_log (
                id \(serial),
                merchant_id TEXT NOT NULL,
                attempt_reference TEXT NOT NULL,
                gateway TEXT NOT NULL,
                action TEXT NOT NULL,
                reason TEXT NOT NULL,
                status_before TEXT NOT NULL,
                status_after TEXT NOT NULL,
                at BIGINT NOT NULL
            )
            """,
        ]
        // v3: what was refunded on each attempt (refunds add up and never exceed what was captured;
        // attempts already refunded in full count as refunded in full), and the digest of each payment's
        // client secret (never the secret itself).
        let v3 = [
            "ALTER TABLE till_attempts ADD COLUMN refunded_minor BIGINT NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0)",
            """
            UPDATE till_attempts SET refunded_minor = (SELECT amount_minor FROM till_payments p WHERE p.id = till_attempts.payment_id)
            WHERE status = 'refunded'
            """,
            "ALTER TABLE till_payments ADD COLUMN client_secret_hash TEXT",
        ]
        // v4: the captures, voids and refunds Till started. An operation is stored (as `unknown`) before it is
        // sent; its reference is derived from its attempt, kind and sequence, so two concurrent requests cannot
        // store the same one; an idempotency key belongs to one operation of a merchant.
        let v4 = [
            """
            CREATE TABLE till_operations (
                reference TEXT PRIMARY KEY,
                payment_id TEXT NOT NULL REFERENCES till_payments (id),
                attempt_reference TEXT NOT NULL REFERENCES till_attempts (reference),
                merchant_id TEXT NOT NULL,
                gateway TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('capture', 'void', 'refund')),
                amount_minor BIGINT NOT NULL CHECK (amount_minor > 0),
                currency TEXT NOT NULL CHECK (length(currency) = 3),
                status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'unknown')),
                is_final INTEGER NOT NULL DEFAULT 0,
                gateway_reference TEXT,
                gateway_code TEXT,
                gateway_message TEXT,
                idempotency_key TEXT NOT NULL,
                request_hash TEXT NOT NULL,
                inquiry_count INTEGER NOT NULL DEFAULT 0,
                next_inquiry_at BIGINT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (merchant_id, idempotency_key)
            )
            """,
            "CREATE INDEX till_operations_payment ON till_operations (payment_id)",
            "CREATE INDEX till_operations_open ON till_operations (status, created_at)",
        ]
        // v5: the outbox. Every change of a payment's, an attempt's or an operation's status writes its events in the
        // change's own transaction; a payment's events are numbered without gaps (its last number kept on the payment,
        // under its lock); each event's delivery state and every try at delivering it.
        let v5 = [
            "ALTER TABLE till_payments ADD COLUMN last_event_sequence BIGINT NOT NULL DEFAULT 0",
            """
            CREATE TABLE till_events (
                position \(serial),
                id TEXT NOT NULL UNIQUE,
                merchant_id TEXT NOT NULL,
                payment_id TEXT NOT NULL REFERENCES till_payments (id),
                sequence INTEGER NOT NULL CHECK (sequence >= 1),
                type TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'skipped')),
                attempt_count INTEGER NOT NULL DEFAULT 0,
                next_attempt_at BIGINT,
                delivered_at BIGINT,
                UNIQUE (payment_id, sequence)
            )
            """,
            "CREATE INDEX till_events_due ON till_events (next_attempt_at) WHERE state = 'pending'",
            """
            CREATE TABLE till_event_attempts (
                id \(serial),
                event_id TEXT NOT NULL REFERENCES till_events (id),
                endpoint TEXT NOT NULL,
                at BIGINT NOT NULL,
                status_code INTEGER,
                latency_ms INTEGER NOT NULL,
                error TEXT,
                excerpt TEXT
            )
            """,
            "CREATE INDEX till_event_attempts_event ON till_event_attempts (event_id)",
        ]
        // v6: the delivery service takes due events in (due time, position) order. PostgreSQL's index on the due time
        // alone made it sort every event due at the same millisecond (a burst, a backlog) on each claim; SQLite's index
        // already ends with the row's position (its rowid), so it needs nothing.
        let v6 = dialect == .sqlite ? [] : [
            // IF NOT EXISTS: on a large table an operator builds it first, CONCURRENTLY (docs/events.md), and the
            // migration, which holds the table's write lock while it builds, then finds it done.
            "CREATE INDEX IF NOT EXISTS till_events_due_order ON till_events (next_attempt_at, position) WHERE state = 'pending'",
            "DROP INDEX IF EXISTS till_events_due",
        ]
        // v7: the payments search (GET /v1/payments, PaymentSearchSQL): newest first per merchant, by status, by the
        // customer's e-mail (lower-cased, read from the stored intent, so creates and changes keep it without a column of
        // its own). IF NOT EXISTS: on a large table an operator may build them first, CONCURRENTLY (docs/server.md).
        let v7 = [
            "CREATE INDEX IF NOT EXISTS till_payments_created ON till_payments (merchant_id, created_at, id)",
            "CREATE INDEX IF NOT EXISTS till_payments_status ON till_payments (merchant_id, status, created_at, id)",
            "CREATE INDEX IF NOT EXISTS till_payments_email ON till_payments (merchant_id, \(PaymentSearchSQL.emailExpression(dialect)), created_at, id)",
        ]
        // v8: what the operator console reads: a payment's inquiries (the reconciliation log by attempt), recent attempts
        // by gateway (the gateways page's windows), and the audit log of operators' actions.
        let v8 = [
            "CREATE INDEX till_reconciliation_log_attempt ON till_reconciliation_log (attempt_reference)",
            "CREATE INDEX till_attempts_created ON till_attempts (created_at)",
            """
            CREATE TABLE till_audit (
                id \(serial),
                operator_name TEXT NOT NULL,
                merchant_id TEXT NOT NULL,
                payment_id TEXT,
                action TEXT NOT NULL,
                target TEXT NOT NULL,
                outcome TEXT NOT NULL,
                detail TEXT NOT NULL,
                at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX till_audit_payment ON till_audit (payment_id)",
        ]
        // v9: the search's method filter, indexed as the e-mail is (an expression on the stored intent, the same text as
        // PaymentSearchSQL's). Without it a method few payments have made the search read every payment of the merchant
        // and parse each one's intent: for no match out of a million, 2.3 s on PostgreSQL and 951 ms on SQLite, under
        // a millisecond with it.
        let v9 = [
            "CREATE INDEX IF NOT EXISTS till_payments_method ON till_payments (merchant_id, \(PaymentSearchSQL.methodExpression(dialect)), created_at, id)",
        ]
        return [(1, v1), (2, v2), (3, v3), (4, v4), (5, v5), (6, v6), (7, v7), (8, v8), (9, v9)]
    }

    static let createMigrationsTable = """
        CREATE TABLE IF NOT EXISTS till_schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)
        """
}
