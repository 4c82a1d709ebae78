import Foundation
import PostgresNIO
import Till
import TillService

/// The payments search as SQL, for both stores: one rule for which condition each filter adds, the dialects differing
/// only in how a value is bound and how the intent's JSON is read. Every value is bound, never spliced into the text.
///
/// The order is (created_at, id) descending, served by `till_payments_created (merchant_id, created_at, id)`; a status
/// filter by `till_payments_status (merchant_id, status, created_at, id)`, an e-mail by `till_payments_email`, a method
/// by `till_payments_method`, a merchant reference by the unique (merchant_id, merchant_reference). A gateway is matched
/// through the payment's attempts (`till_attempts_payment`).
enum PaymentSearchSQL {
    enum Value: Sendable {
        case text(String)
        case integer(Int64)
    }

    /// The email expression its index is built on (the same text in the index and the query, so the planner uses it).
    static func emailExpression(_ dialect: Schema.Dialect) -> String {
        dialect == .sqlite ? "lower(json_extract(intent_json, '$.customer.email'))" : "lower((intent_json::jsonb) #>> '{customer,email}')"
    }

    /// The payment method's expression its index (schema v9) is built on, likewise.
    static func methodExpression(_ dialect: Schema.Dialect) -> String {
        dialect == .sqlite ? "json_extract(intent_json, '$.method')" : "((intent_json::jsonb) ->> 'method')"
    }

    /// The ids of one page, newest first: `SELECT id, created_at FROM till_payments WHERE …` with its values in order.
    static func page(_ dialect: Schema.Dialect, merchant: String, query: PaymentSearchQuery) -> (sql: String, values: [Value]) {
        var values: [Value] = []
        func bind(_ value: Value) -> String {
            values.append(value)
            return dialect == .sqlite ? "?" : "$\(values.count)"
        }
        var conditions = ["merchant_id = \(bind(.text(merchant)))"]
        if !query.statuses.isEmpty {
            conditions.append("status IN (\(query.statuses.map { bind(.text($0.rawValue)) }.joined(separator: ", ")))")
        }
        if let gateway = query.gateway {
            conditions.append("EXISTS (SELECT 1 FROM till_attempts a WHERE a.payment_id = till_payments.id AND a.gateway = \(bind(.text(gateway.rawValue))))")
        }
        if let method = query.method { conditions.append("\(methodExpression(dialect)) = \(bind(.text(method)))") }
        if let currency = query.currency { conditions.append("currency = \(bind(.text(currency)))") }
        if let minimum = query.amountMin { conditions.append("amount_minor >= \(bind(.integer(minimum)))") }
        if let maximum = query.amountMax { conditions.append("amount_minor <= \(bind(.integer(maximum)))") }
        if let reference = query.merchantReference { conditions.append("merchant_reference = \(bind(.text(reference)))") }
        if let email = query.customerEmail { conditions.append("\(emailExpression(dialect)) = \(bind(.text(email)))") }
        if let from = query.createdFrom { conditions.append("created_at >= \(bind(.integer(from.storedMillis)))") }
        if let to = query.createdTo { conditions.append("created_at < \(bind(.integer(to.storedMillis)))") }
        if let after = query.after {
            // (created_at, id) < (m, id), written so the first half is a range the order index seeks to: a page deep in
            // a million payments reads from the cursor on, not from the newest.
            let millis = bind(.integer(after.createdMillis))
            conditions.append("created_at <= \(millis) AND (created_at < \(bind(.integer(after.createdMillis))) OR id < \(bind(.text(after.id))))")
        }
        let sql = """
            SELECT id FROM till_payments WHERE \(conditions.joined(separator: " AND "))
            ORDER BY created_at DESC, id DESC LIMIT \(bind(.integer(Int64(query.limit))))
            """
        return (sql, values)
    }

    /// The page as a PostgreSQL query with its bindings.
    static func postgres(merchant: String, query: PaymentSearchQuery) -> PostgresQuery {
        let (sql, values) = page(.postgres, merchant: merchant, query: query)
        var bindings = PostgresBindings()
        for value in values {
            switch value {
            case .text(let text): bindings.append(text)
            case .integer(let number): bindings.append(number)
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }
}
