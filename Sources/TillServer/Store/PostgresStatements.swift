import Foundation
import PostgresNIO
import Till
import TillService

/// A statement of the store's hot paths whose text never changes, only its values: PostgreSQL parses and
/// plans it once per connection (a named prepared statement) instead of on every request.
///
/// The text is the one ``query(_:)`` writes for any values, so the statement that is prepared and the
/// values that are bound come from one place. Every value is cast in the text (`::TEXT`, `::BIGINT`,
/// `::BYTEA`, `::BOOLEAN`): a statement prepared while a value was NULL keeps the type its text names.
protocol PreparedQuery {
    associatedtype Values
    /// The statement's name on every connection (unique among the store's statements).
    static var name: String { get }
    /// The statement's text: ``query(_:)``'s, computed once.
    static var sql: String { get }
    /// The statement with `values` bound.
    static func query(_ values: Values) throws -> PostgresQuery
}

/// A ``PreparedQuery`` with its values, to run with `PostgresConnection.execute(_:logger:)`.
struct Prepared<Query: PreparedQuery>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { Query.name }
    static var sql: String { Query.sql }

    let bindings: PostgresBindings

    init(_ values: Query.Values) throws { bindings = try Query.query(values).binds }

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

extension PostgresConnection {
    /// Runs a prepared hot-path statement (prepared on this connection the first time).
    func run<Query: PreparedQuery>(_ query: Query.Type, _ values: Query.Values, logger: Logger) async throws
        -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        try await execute(Prepared<Query>(values), logger: logger)
    }
}

/// Events bound as parallel arrays, for a statement that inserts them with `unnest` (any number in one round trip).
struct EventRows {
    var ids: [String] = [], sequences: [Int64] = [], types: [String] = [], bodies: [String] = []

    init() {}

    init(_ events: [StoredEvent]) {
        ids = events.map(\.id)
        sequences = events.map { Int64($0.sequence) }
        types = events.map(\.type.rawValue)
        bodies = events.map { String(decoding: $0.body, as: UTF8.self) }
    }
}

/// The store's prepared statements.
enum PostgresStatements {
    /// The columns of an attempt, in the order ``attempt(_:)`` reads them.
    static let attemptColumns = """
        a.reference, a.payment_id, a.sequence, a.gateway, a.status, a.gateway_reference, a.gateway_code, a.client_outcome, a.return_url,
        a.submitted_at, a.handed_off, a.customer_requested, a.inquiry_count, a.next_inquiry_at, a.refunded_minor, a.created_at, a.updated_at
        """

    /// An attempt from the 17 columns of ``attemptColumns`` starting at `offset` of `row`; nil when they are
    /// NULL (a payment without attempts, through a LEFT JOIN).
    static func attempt(_ row: PostgresRow, offset: Int = 0) throws -> StoredAttempt? {
        let cells = row.makeRandomAccess()
        guard let reference = try cells[offset].decode(String?.self) else { return nil }
        func value<T: PostgresDecodable>(_ index: Int, _ type: T.Type) throws -> T { try cells[offset + index].decode(T.self) }
        return StoredAttempt(
            reference: AttemptReference(rawValue: reference), paymentID: try value(1, String.self), sequence: try value(2, Int.self),
            gateway: GatewayID(rawValue: try value(3, String.self)), status: PaymentStatus(rawValue: try value(4, String.self)),
            gatewayReference: try value(5, String?.self), gatewayCode: try value(6, String?.self),
            clientOutcome: try value(7, String?.self).flatMap { try? SQLitePaymentStore.decode(ClientOutcome.self, $0) },
            returnURL: try value(8, String?.self).flatMap(URL.init(string:)),
            submittedAt: try value(9, Int64?.self).map(Date.init(storedMillis:)),
            handedOff: try value(10, Int.self) != 0, customerRequested: try value(11, Int.self) != 0,
            inquiryCount: try value(12, Int.self), nextInquiryAt: try value(13, Int64?.self).map(Date.init(storedMillis:)),
            refundedMinorUnits: try value(14, Int64.self),
            createdAt: Date(storedMillis: try value(15, Int64.self)), updatedAt: Date(storedMillis: try value(16, Int64.self)))
    }

    /// A merchant's payment with its attempts, in one statement (one snapshot, one round trip): columns 0–5
    /// are the payment's, 6–22 an attempt's (NULL when it has none).
    enum PaymentWithAttempts: PreparedQuery {
        static let name = "till_payment_with_attempts"
        static let sql = query((id: "", merchant: "")).sql
        static func query(_ values: (id: String, merchant: String)) -> PostgresQuery {
            """
            SELECT p.id, p.merchant_id, p.status, p.intent_json, p.created_at, p.updated_at, \(unescaped: attemptColumns)
            FROM till_payments p LEFT JOIN till_attempts a ON a.payment_id = p.id
            WHERE p.id = \(values.id)::TEXT AND p.merchant_id = \(values.merchant)::TEXT ORDER BY a.sequence
            """
        }
    }

    /// A payment's attempts in order.
    enum Attempts: PreparedQuery {
        static let name = "till_attempts_of_payment"
        static let sql = query("").sql
        static func query(_ payment: String) -> PostgresQuery {
            "SELECT \(unescaped: attemptColumns) FROM till_attempts a WHERE a.payment_id = \(payment)::TEXT ORDER BY a.sequence"
        }
    }

    /// The digest of a payment's client secret and its merchant.
    enum ClientSecretHash: PreparedQuery {
        static let name = "till_client_secret_hash"
        static let sql = query("").sql
        static func query(_ payment: String) -> PostgresQuery {
            "SELECT merchant_id, client_secret_hash FROM till_payments WHERE id = \(payment)::TEXT"
        }
    }

    /// Locks the payment an attempt belongs to and reads what the rules need of it (its attempts follow in a
    /// second statement, after the lock).
    enum LockPaymentOfAttempt: PreparedQuery {
        static let name = "till_lock_payment_of_attempt"
        static let sql = query("").sql
        static func query(_ attempt: String) -> PostgresQuery {
            """
            SELECT p.id, p.merchant_id, p.status, p.amount_minor, p.currency, p.intent_json, p.created_at, p.updated_at, p.last_event_sequence
            FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id WHERE a.reference = \(attempt)::TEXT FOR UPDATE OF p
            """
        }
    }

    /// Locks a payment's row (every mutation of a payment takes this lock first).
    enum LockPayment: PreparedQuery {
        static let name = "till_lock_payment"
        static let sql = query("").sql
        static func query(_ payment: String) -> PostgresQuery {
            "SELECT id FROM till_payments WHERE id = \(payment)::TEXT FOR UPDATE"
        }
    }

    /// A new attempt, `created`.
    enum InsertAttempt: PreparedQuery {
        struct Values {
            var reference: String, payment: String, sequence: Int, gateway: String, status: String, customerRequested: Bool, now: Int64
        }
        static let name = "till_insert_attempt"
        static let sql = query(Values(reference: "", payment: "", sequence: 1, gateway: "", status: "", customerRequested: false, now: 0)).sql
        static func query(_ v: Values) -> PostgresQuery {
            """
            INSERT INTO till_attempts (reference, payment_id, sequence, gateway, status, customer_requested, created_at, updated_at)
            VALUES (\(v.reference)::TEXT, \(v.payment)::TEXT, \(v.sequence)::BIGINT, \(v.gateway)::TEXT, \(v.status)::TEXT,
                    \(v.customerRequested ? 1 : 0)::BIGINT, \(v.now)::BIGINT, \(v.now)::BIGINT)
            """
        }
    }

    /// Locks the payment an attempt belongs to and answers its id only.
    enum LockPaymentIDOfAttempt: PreparedQuery {
        static let name = "till_lock_payment_id_of_attempt"
        static let sql = query("").sql
        static func query(_ attempt: String) -> PostgresQuery {
            "SELECT id FROM till_payments WHERE id = (SELECT payment_id FROM till_attempts WHERE reference = \(attempt)::TEXT) FOR UPDATE"
        }
    }

    /// What Prepare returned, on its attempt: the gateway's reference, the chosen return URL (kept when none),
    /// and `created` moved to `pending`.
    enum AttemptPrepared: PreparedQuery {
        struct Values {
            var attempt: String, gatewayReference: String?, returnURL: String?, now: Int64
        }
        static let name = "till_attempt_prepared"
        static let sql = query(Values(attempt: "", gatewayReference: nil, returnURL: nil, now: 0)).sql
        static func query(_ v: Values) -> PostgresQuery {
            """
            UPDATE till_attempts SET gateway_reference = \(v.gatewayReference)::TEXT, return_url = COALESCE(\(v.returnURL)::TEXT, return_url),
            status = CASE WHEN status = 'created' THEN 'pending' ELSE status END, updated_at = \(v.now)::BIGINT
            WHERE reference = \(v.attempt)::TEXT
            """
        }
    }

    /// A payment's status and its attempts' statuses in sequence order, for deriving the payment's status.
    enum PaymentStatuses: PreparedQuery {
        static let name = "till_payment_statuses"
        static let sql = query("").sql
        static func query(_ payment: String) -> PostgresQuery {
            """
            SELECT p.status, COALESCE(ARRAY(SELECT a.status FROM till_attempts a WHERE a.payment_id = p.id ORDER BY a.sequence), '{}')
            FROM till_payments p WHERE p.id = \(payment)::TEXT
            """
        }
    }

    /// Sets a payment's derived status.
    enum SetPaymentStatus: PreparedQuery {
        static let name = "till_set_payment_status"
        static let sql = query((payment: "", status: "", now: 0)).sql
        static func query(_ v: (payment: String, status: String, now: Int64)) -> PostgresQuery {
            "UPDATE till_payments SET status = \(v.status)::TEXT, updated_at = \(v.now)::BIGINT WHERE id = \(v.payment)::TEXT"
        }
    }

    /// A new payment, and its idempotency key when there is one, inserted together or not at all; answers how
    /// many of each were inserted (0 payments: the reference was taken).
    enum CreatePayment: PreparedQuery {
        struct Values {
            var id: String, merchant: String, reference: String, amount: Int64, currency: String, status: String, intentJSON: String
            var now: Int64, clientSecretHash: String?, idempotencyKey: String?, requestHash: String
            /// The `payment.created` event, inserted with the payment (none when the store records no events).
            var events = EventRows()
        }
        static let name = "till_create_payment"
        static let sql = query(Values(id: "", merchant: "", reference: "", amount: 0, currency: "", status: "", intentJSON: "", now: 0,
                                      clientSecretHash: nil, idempotencyKey: nil, requestHash: "")).sql
        static func query(_ v: Values) -> PostgresQuery {
            """
            WITH ins AS (
                INSERT INTO till_payments (id, merchant_id, merchant_reference, amount_minor, currency, status, intent_json, created_at,
                                           updated_at, client_secret_hash, last_event_sequence)
                VALUES (\(v.id)::TEXT, \(v.merchant)::TEXT, \(v.reference)::TEXT, \(v.amount)::BIGINT, \(v.currency)::TEXT, \(v.status)::TEXT,
                        \(v.intentJSON)::TEXT, \(v.now)::BIGINT, \(v.now)::BIGINT, \(v.clientSecretHash)::TEXT,
                        COALESCE(array_length(\(v.events.sequences)::BIGINT[], 1), 0))
                ON CONFLICT (merchant_id, merchant_reference) DO NOTHING RETURNING id
            ), ev AS (
                INSERT INTO till_events (id, merchant_id, payment_id, sequence, type, body, created_at, state, next_attempt_at)
                SELECT x.id, \(v.merchant)::TEXT, ins.id, x.seq, x.type, x.body, \(v.now)::BIGINT, 'pending', \(v.now)::BIGINT
                FROM ins, unnest(\(v.events.ids)::TEXT[], \(v.events.sequences)::BIGINT[], \(v.events.types)::TEXT[],
                                 \(v.events.bodies)::TEXT[]) AS x(id, seq, type, body)
                RETURNING 1
            ), key AS (
                INSERT INTO till_idempotency_keys (merchant_id, idempotency_key, request_hash, payment_id, created_at)
                SELECT \(v.merchant)::TEXT, \(v.idempotencyKey)::TEXT, \(v.requestHash)::TEXT, id, \(v.now)::BIGINT FROM ins
                WHERE \(v.idempotencyKey)::TEXT IS NOT NULL
                RETURNING payment_id
            )
            SELECT (SELECT COUNT(*) FROM ins)::BIGINT, (SELECT COUNT(*) FROM key)::BIGINT
            """
        }
    }

    /// What the rules decided about a report, written in one statement; with a notification, its insert is
    /// the gate (a redelivery inserts nothing and changes nothing). Answers 1 when the writes were allowed.
    enum WriteEffect: PreparedQuery {
        struct Values {
            var store: Bool, gateway: String, eventID: String, attempt: String, reportedStatus: String, outcome: String
            var headers: String, body: Data, receivedAt: Int64
            var attemptStatus: String?, gatewayCode: String?, gatewayReference: String?, refunded: Int64?, now: Int64
            var paymentID: String, paymentStatus: String?
            /// The change's events and the payment's last event number afterwards (none: the change writes no event).
            var merchant = "", events = EventRows(), lastEventSequence: Int64? = nil
        }
        static let name = "till_write_effect"
        static let sql: String = {
            do {
                return try query(Values(store: false, gateway: "", eventID: "", attempt: "", reportedStatus: "", outcome: "", headers: "",
                                        body: Data(), receivedAt: 0, attemptStatus: nil, gatewayCode: nil, gatewayReference: nil,
                                        refunded: nil, now: 0, paymentID: "", paymentStatus: nil)).sql
            } catch {
                // Binding a string, an integer, a flag or bytes cannot fail; if it ever did, no write may run silently.
                preconditionFailure("the notification write statement could not be built")
            }
        }()
        static func query(_ v: Values) throws -> PostgresQuery {
            try """
            WITH n AS (
                INSERT INTO till_notifications (gateway, event_id, attempt_reference, reported_status, outcome, headers_json, body, received_at)
                SELECT \(v.gateway)::TEXT, \(v.eventID)::TEXT, \(v.attempt)::TEXT, \(v.reportedStatus)::TEXT, \(v.outcome)::TEXT,
                       \(v.headers)::TEXT, \(v.body)::BYTEA, \(v.receivedAt)::BIGINT
                WHERE \(v.store)::BOOLEAN
                ON CONFLICT (attempt_reference, gateway, event_id) DO NOTHING RETURNING id
            ), go AS (SELECT 1 AS ok WHERE NOT \(v.store)::BOOLEAN UNION ALL SELECT 1 FROM n),
            a AS (UPDATE till_attempts SET status = COALESCE(\(v.attemptStatus)::TEXT, status),
                  gateway_code = CASE WHEN \(v.attemptStatus)::TEXT IS NULL THEN gateway_code ELSE COALESCE(\(v.gatewayCode)::TEXT, gateway_code) END,
                  gateway_reference = CASE WHEN \(v.attemptStatus)::TEXT IS NULL THEN gateway_reference
                                           ELSE COALESCE(gateway_reference, \(v.gatewayReference)::TEXT) END,
                  refunded_minor = COALESCE(\(v.refunded)::BIGINT, refunded_minor), updated_at = \(v.now)::BIGINT
                  WHERE reference = \(v.attempt)::TEXT
                    AND (\(v.attemptStatus)::TEXT IS NOT NULL OR \(v.refunded)::BIGINT IS NOT NULL)
                    AND EXISTS (SELECT 1 FROM go) RETURNING 1),
            p AS (UPDATE till_payments SET status = COALESCE(\(v.paymentStatus)::TEXT, status),
                  updated_at = CASE WHEN \(v.paymentStatus)::TEXT IS NULL THEN updated_at ELSE \(v.now)::BIGINT END,
                  last_event_sequence = COALESCE(\(v.lastEventSequence)::BIGINT, last_event_sequence)
                  WHERE id = \(v.paymentID)::TEXT AND (\(v.paymentStatus)::TEXT IS NOT NULL OR \(v.lastEventSequence)::BIGINT IS NOT NULL)
                    AND EXISTS (SELECT 1 FROM go) RETURNING 1),
            ev AS (INSERT INTO till_events (id, merchant_id, payment_id, sequence, type, body, created_at, state, next_attempt_at)
                  SELECT x.id, \(v.merchant)::TEXT, \(v.paymentID)::TEXT, x.seq, x.type, x.body, \(v.now)::BIGINT, 'pending', \(v.now)::BIGINT
                  FROM unnest(\(v.events.ids)::TEXT[], \(v.events.sequences)::BIGINT[], \(v.events.types)::TEXT[],
                              \(v.events.bodies)::TEXT[]) AS x(id, seq, type, body)
                  WHERE EXISTS (SELECT 1 FROM go) RETURNING 1)
            SELECT (SELECT COUNT(*) FROM go)::BIGINT
            """
        }
    }
}
