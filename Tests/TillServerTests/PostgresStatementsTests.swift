import Foundation
import PostgresNIO
import Testing
@testable import TillServer

/// The PostgreSQL store's prepared statements: the text that is prepared once per connection is the text
/// every execution binds against, whatever the values (a NULL must not change it), and every value in it
/// carries its type, so a statement prepared while a value was NULL keeps the type the later values have.
@Suite("PostgreSQL prepared statements")
struct PostgresStatementsTests {
    /// Every `$n` in `sql` followed by a cast (`$3::TEXT`).
    static func everyValueCast(_ sql: String) -> Bool {
        let pattern = try! Regex(#"\$[0-9]+(?![0-9]|::)"#)
        return sql.firstMatch(of: pattern) == nil
    }

    @Test("the write of a report: one text with and without a notification, with and without each optional value")
    func writeEffect() throws {
        typealias W = PostgresStatements.WriteEffect
        let full = W.Values(store: true, gateway: "fake", eventID: "e", attempt: "att_1", reportedStatus: "paid", outcome: "applied",
                            headers: "{}", body: Data("{}".utf8), receivedAt: 1, attemptStatus: "paid", gatewayCode: "00",
                            gatewayReference: "g-1", refunded: 100, now: 2, paymentID: "pay_1", paymentStatus: "paid")
        let bare = W.Values(store: false, gateway: "", eventID: "e", attempt: "att_1", reportedStatus: "paid", outcome: "", headers: "",
                            body: Data(), receivedAt: 0, attemptStatus: nil, gatewayCode: nil, gatewayReference: nil, refunded: nil, now: 2,
                            paymentID: "pay_1", paymentStatus: nil)
        #expect(try W.query(full).sql == W.sql)
        #expect(try W.query(bare).sql == W.sql)
        #expect(try W.query(full).binds.count == W.query(bare).binds.count)
        #expect(Self.everyValueCast(W.sql))
    }

    @Test("the create: one text with and without an idempotency key and a client secret")
    func create() throws {
        typealias C = PostgresStatements.CreatePayment
        let with = C.Values(id: "pay_1", merchant: "m", reference: "o-1", amount: 1000, currency: "USD", status: "created", intentJSON: "{}",
                            now: 1, clientSecretHash: "ab", idempotencyKey: "k", requestHash: "h")
        var without = with
        without.clientSecretHash = nil
        without.idempotencyKey = nil
        #expect(C.query(with).sql == C.sql)
        #expect(C.query(without).sql == C.sql)
        #expect(Self.everyValueCast(C.sql))
    }

    @Test("prepare's statements: one text with and without a gateway reference and a return URL")
    func prepare() {
        typealias P = PostgresStatements.AttemptPrepared
        #expect(P.query(P.Values(attempt: "a", gatewayReference: "g", returnURL: "https://x", now: 1)).sql == P.sql)
        #expect(P.query(P.Values(attempt: "a", gatewayReference: nil, returnURL: nil, now: 1)).sql == P.sql)
        typealias I = PostgresStatements.InsertAttempt
        #expect(I.query(I.Values(reference: "a", payment: "p", sequence: 3, gateway: "g", status: "created", customerRequested: true, now: 1)).sql
                == I.sql)
    }

    @Test("the reads and the lock: every value cast, every name distinct")
    func reads() throws {
        #expect(PostgresStatements.PaymentWithAttempts.query((id: "a", merchant: "b")).sql == PostgresStatements.PaymentWithAttempts.sql)
        typealias S = PostgresStatements
        for sql in [S.PaymentWithAttempts.sql, S.Attempts.sql, S.ClientSecretHash.sql, S.LockPaymentOfAttempt.sql, S.LockPayment.sql,
                    S.InsertAttempt.sql, S.LockPaymentIDOfAttempt.sql, S.AttemptPrepared.sql, S.PaymentStatuses.sql, S.SetPaymentStatus.sql] {
            #expect(!sql.isEmpty)
            #expect(Self.everyValueCast(sql))
        }
        let names = [S.PaymentWithAttempts.name, S.Attempts.name, S.ClientSecretHash.name, S.LockPaymentOfAttempt.name, S.CreatePayment.name,
                     S.WriteEffect.name, S.LockPayment.name, S.InsertAttempt.name, S.LockPaymentIDOfAttempt.name, S.AttemptPrepared.name,
                     S.PaymentStatuses.name, S.SetPaymentStatus.name]
        #expect(Set(names).count == names.count)
    }
}
