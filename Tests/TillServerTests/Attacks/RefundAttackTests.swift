import Crypto
import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
@testable import TillServer
import TillTesting

/// Attacks on the refund money rule with genuine signed fake-gateway notifications (HMAC-SHA256 over
/// the body with the gateway's notification secret, exactly as ``FakeGateway`` signs them), posted to
/// the real server over loopback: what a refund notification may do to an attempt's status and to
/// its `refunded_minor`, on both stores.
@Suite("Attack: refund notifications against the money rule")
struct RefundAttackTests {
    // MARK: Helpers

    /// A notification body signed exactly as the harness's fake gateway signs one.
    static func signed(_ body: String, secret: String = ServerHarness.secret) -> IncomingNotification {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(body.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return IncomingNotification(headers: ["content-type": "application/json", "x-fake-signature": Hex.encode(mac)], body: Data(body.utf8))
    }

    /// The fake's notification body; `amount` is the raw JSON of the `amount` field (nil: none).
    static func body(_ attempt: AttemptReference, _ status: String, amount: String?, event: String) -> String {
        let money = amount.map { #","amount":\#($0)"# } ?? ""
        return #"{"attempt":"\#(attempt.rawValue)","eventId":"\#(event)"\#(money),"status":"\#(status)"}"#
    }

    static func usd(_ minor: Int64) -> String { #"{"currency":"USD","value":\#(minor)}"# }

    /// Posts a signed notification to `gateway`.
    @discardableResult
    static func post(_ h: ServerHarness, _ attempt: AttemptReference, _ status: String, amount: String?, event: String,
                     gateway: GatewayID = "fake") async throws -> ServerHarness.Answer {
        try await h.notify(signed(body(attempt, status, amount: amount, event: event)), gateway: gateway)
    }

    /// A payment of 25.00 USD, prepared and paid by a genuine signed notification.
    static func paid(_ h: ServerHarness) async throws -> (id: String, attempt: AttemptReference) {
        let (id, attempt, _) = try await h.createAndPrepare()
        let answer = try await post(h, attempt, "paid", amount: usd(2500), event: "paid-\(attempt.rawValue)")
        #expect(answer.status == 200)
        #expect(try await h.status(of: id) == "paid")
        return (id, attempt)
    }

    /// The attempt's status and refunded total as stored, and the payment's status as the API shows it.
    static func state(_ h: ServerHarness, _ id: String, _ attempt: AttemptReference) async throws
        -> (payment: String?, attempt: PaymentStatus?, refunded: Int64?) {
        let stored = try await h.store.payment(attempt: attempt)
        let row = stored?.attempts.first { $0.reference == attempt }
        return (try await h.status(of: id), row?.status, row?.refundedMinorUnits)
    }

    /// How the server recorded one event of an attempt (`stale`, `applied`, …), by counting rows.
    static func recorded(_ h: ServerHarness, _ attempt: AttemptReference, event: String, as outcome: String) async throws -> Bool {
        try await count(h.store, "till_notifications",
                        where: "attempt_reference = '\(attempt.rawValue)' AND event_id = '\(event)' AND outcome = '\(outcome)'") == 1
    }

    // MARK: Never-paid attempts

    @Test("a signed refund (full, partial, or 'partially_refunded') of an attempt that never moved money — pending, failed, cancelled, expired, authorized — is acknowledged, kept as stale, and moves nothing: status unchanged, refunded_minor 0",
          arguments: StoreKind.available)
    func neverPaid(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let starts: [(String, String?)] = [("pending", nil), ("failed", nil), ("cancelled", nil), ("expired", nil), ("authorized", Self.usd(2500))]
        for (start, amount) in starts {
            let (id, attempt, _) = try await h.createAndPrepare()
            if start != "pending" {
                #expect(try await Self.post(h, attempt, start, amount: amount, event: "to-\(start)").status == 200)
            }
            #expect(try await Self.state(h, id, attempt).attempt == PaymentStatus(rawValue: start))
            for (status, minor, event) in [("refunded", Int64(2500), "r-full"), ("refunded", 1000, "r-part"), ("partially_refunded", 1000, "r-pr")] {
                let answer = try await Self.post(h, attempt, status, amount: Self.usd(minor), event: event)
                #expect(answer.status == 200, "\(start) ← \(status) \(minor): \(answer.status)")
                #expect(try await Self.recorded(h, attempt, event: event, as: "stale"), "\(start) ← \(status) \(minor) was not kept as stale")
                let now = try await Self.state(h, id, attempt)
                #expect(now.attempt == PaymentStatus(rawValue: start) && now.refunded == 0 && now.payment == start,
                        "\(start) ← \(status) \(minor): \(now)")
            }
        }
    }

    @Test("an attempt still pending whose order the gateway paid and refunded in full before any notification: the server's own inquiry moves it to refunded; a partial refund of it is not applied (what was captured is not known); a notification saying either does nothing",
          arguments: StoreKind.available)
    func paidAndRefundedBehindTheScenes(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        for (status, refunded, expected) in [(PaymentStatus.refunded, Int64(2500), "refunded"), (.partiallyRefunded, 1000, "pending")] {
            let (id, attempt, gateway) = try await h.createAndPrepare()
            // The same news as a notification first: kept, never applied.
            #expect(try await Self.post(h, attempt, status.rawValue, amount: Self.usd(refunded), event: "n-\(status.rawValue)").status == 200)
            #expect(try await Self.state(h, id, attempt).attempt == .pending)
            await h.gateway(gateway).ledger.setBehindTheScenes(attempt, status: status,
                                                               amount: Money(minorUnits: refunded, currency: ServerHarness.amount.currency))
            let inquired = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/inquire")
            #expect(inquired.status == 200, "\(String(decoding: inquired.body, as: UTF8.self))")
            let now = try await Self.state(h, id, attempt)
            #expect(now.payment == expected && now.attempt == PaymentStatus(rawValue: expected) && now.refunded == (expected == "pending" ? 0 : refunded),
                    "\(now)")
        }
        // More refunded than the attempt's amount: refused even from the inquiry.
        let (id, attempt, gateway) = try await h.createAndPrepare()
        await h.gateway(gateway).ledger.setBehindTheScenes(attempt, status: .refunded, amount: Money(minorUnits: 2501, currency: ServerHarness.amount.currency))
        _ = try await h.send("POST", "v1/attempts/\(attempt.rawValue)/inquire")
        #expect(try await Self.state(h, id, attempt).attempt == .pending)
    }

    // MARK: Paid attempts, refunds the rule refuses

    @Test("on a paid attempt, a signed refund without an amount, in EUR or JPY, above the captured 25.00, of zero, negative, or Int64.max is acknowledged, kept as stale, and moves nothing: paid, refunded_minor 0",
          arguments: StoreKind.available)
    func refusedAmounts(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        let refused: [(String, String?)] = [
            ("no-amount", nil),
            ("eur", #"{"currency":"EUR","value":2500}"#),
            ("eur-small", #"{"currency":"EUR","value":1}"#),
            ("jpy", #"{"currency":"JPY","value":25}"#),
            ("above", Self.usd(2501)),
            ("far-above", Self.usd(250_000)),
            ("zero", Self.usd(0)),
            ("negative", Self.usd(-500)),
            ("negative-full", Self.usd(-2500)),
            ("int64-max", Self.usd(Int64.max)),
            ("int64-min", Self.usd(Int64.min)),
        ]
        for (event, amount) in refused {
            for status in ["refunded", "partially_refunded"] {
                let answer = try await Self.post(h, attempt, status, amount: amount, event: "\(event)-\(status)")
                #expect(answer.status == 200, "\(event) \(status): \(answer.status)")
                #expect(try await Self.recorded(h, attempt, event: "\(event)-\(status)", as: "stale"), "\(event) \(status) was not kept as stale")
                let now = try await Self.state(h, id, attempt)
                #expect(now.payment == "paid" && now.attempt == .paid && now.refunded == 0, "\(event) \(status): \(now)")
            }
        }
    }

    @Test("a signed refund whose amount cannot be read — beyond 64 bits, a fraction, a string, null, lower-case or unknown currency, an extra key — is refused 400 and stores nothing: paid, refunded_minor 0",
          arguments: StoreKind.available)
    func unreadableAmounts(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        let unreadable: [(String, String)] = [
            ("beyond-64-bits", #"{"currency":"USD","value":99999999999999999999}"#),
            ("fraction", #"{"currency":"USD","value":10.5}"#),
            ("string", #"{"currency":"USD","value":"1000"}"#),
            ("lower-case", #"{"currency":"usd","value":1000}"#),
            ("unknown-currency", #"{"currency":"XYZ","value":1000}"#),
            ("extra-key", #"{"currency":"USD","value":1000,"refundedTotal":0}"#),
            ("null-value", #"{"currency":"USD","value":null}"#),
        ]
        for (event, amount) in unreadable {
            let answer = try await Self.post(h, attempt, "refunded", amount: amount, event: event)
            #expect(answer.status == 400, "\(event): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND event_id = '\(event)'") == 0)
            let now = try await Self.state(h, id, attempt)
            #expect(now.payment == "paid" && now.attempt == .paid && now.refunded == 0, "\(event): \(now)")
        }
    }

    @Test("a signed refund whose amount is written with an exponent or a zero fraction (1e3, 2.5e3, 1000.0) is read as the exact integer it denotes, and the money rule applies to that value",
          arguments: StoreKind.available)
    func exponentAmounts(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        for (event, value, refunded, status) in [("exp", "1e3", Int64(1000), "partially_refunded"), ("exp-full", "2.5e3", 2500, "refunded"),
                                                 ("zero-fraction", "1000.0", 1000, "partially_refunded")] {
            let (id, attempt) = try await Self.paid(h)
            let answer = try await Self.post(h, attempt, "partially_refunded", amount: #"{"currency":"USD","value":\#(value)}"#, event: event)
            #expect(answer.status == 200, "\(value): \(answer.status)")
            let now = try await Self.state(h, id, attempt)
            #expect(now.payment == status && now.refunded == refunded, "\(value): \(now)")
        }
        // A true fraction is not an amount.
        let (id, attempt) = try await Self.paid(h)
        let fraction = try await Self.post(h, attempt, "partially_refunded", amount: #"{"currency":"USD","value":2.5}"#, event: "fraction")
        #expect(fraction.status == 400)
        #expect(try await Self.state(h, id, attempt).refunded == 0)
        // The same decoder reads the merchant's create body: 2.5e3 is 2500.
        let created = try await h.send("POST", "v1/payments",
                                       json: #"{"merchantReference":"exp-\#(UUID().uuidString.prefix(8))","amount":{"value":2.5e3,"currency":"USD"},"method":"card"}"#)
        #expect(created.status == 201 && (created.json["amount"] as? [String: Any])?["value"] as? Int == 2500)
    }

    // MARK: Refunds that add up

    @Test("the amounts decide, not the gateway's word: 10.00 called 'refunded' is partially_refunded with refunded_minor 1000; 15.00 called 'partially_refunded' completes it (refunded, 2500); one more cent is refused; so is a zero",
          arguments: StoreKind.available)
    func amountsDecide(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        try await Self.post(h, attempt, "refunded", amount: Self.usd(1000), event: "r1")
        var now = try await Self.state(h, id, attempt)
        #expect(now.payment == "partially_refunded" && now.attempt == .partiallyRefunded && now.refunded == 1000, "\(now)")
        try await Self.post(h, attempt, "partially_refunded", amount: Self.usd(1500), event: "r2")
        now = try await Self.state(h, id, attempt)
        #expect(now.payment == "refunded" && now.attempt == .refunded && now.refunded == 2500, "\(now)")
        for (status, minor, event) in [("refunded", Int64(1), "r3"), ("partially_refunded", 1, "r4"), ("refunded", 0, "r5"), ("refunded", 2500, "r6")] {
            #expect(try await Self.post(h, attempt, status, amount: Self.usd(minor), event: event).status == 200)
            #expect(try await Self.recorded(h, attempt, event: event, as: "stale"), "\(event) was not refused")
        }
        now = try await Self.state(h, id, attempt)
        #expect(now.payment == "refunded" && now.attempt == .refunded && now.refunded == 2500, "\(now)")
    }

    @Test("two partial refunds adding up beyond the captured amount: the second (15.00 after 15.00 of 25.00) is refused whole, never clamped; partially_refunded with refunded_minor 1500",
          arguments: StoreKind.available)
    func twoPartialsBeyond(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        try await Self.post(h, attempt, "partially_refunded", amount: Self.usd(1500), event: "p1")
        #expect(try await Self.post(h, attempt, "partially_refunded", amount: Self.usd(1500), event: "p2").status == 200)
        #expect(try await Self.recorded(h, attempt, event: "p2", as: "stale"))
        let now = try await Self.state(h, id, attempt)
        #expect(now.payment == "partially_refunded" && now.attempt == .partiallyRefunded && now.refunded == 1500, "\(now)")
        // After a partial, Int64.max would overflow the sum: refused, nothing wraps.
        #expect(try await Self.post(h, attempt, "refunded", amount: Self.usd(Int64.max), event: "p3").status == 200)
        #expect(try await Self.recorded(h, attempt, event: "p3", as: "stale"))
        #expect(try await Self.state(h, id, attempt).refunded == 1500)
    }

    @Test("the same refund event delivered twice, and again re-signed with another amount under the same event id, is applied once: refunded_minor 1000, one stored notification",
          arguments: StoreKind.available)
    func sameEventTwice(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        for amount in [Int64(1000), 1000, 1500] {
            #expect(try await Self.post(h, attempt, "partially_refunded", amount: Self.usd(amount), event: "refund-once").status == 200)
        }
        let now = try await Self.state(h, id, attempt)
        #expect(now.payment == "partially_refunded" && now.refunded == 1000, "\(now)")
        #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND event_id = 'refund-once'") == 1)
    }

    @Test("ten concurrent signed partial refunds of 5.00 against 25.00 never exceed what was captured: exactly five apply, refunded_minor 2500, refunded",
          arguments: StoreKind.available)
    func concurrentPartials(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10 {
                group.addTask { try await Self.post(h, attempt, "partially_refunded", amount: Self.usd(500), event: "c\(index)").status }
            }
            for try await status in group { #expect(status == 200) }
        }
        let now = try await Self.state(h, id, attempt)
        #expect(now.payment == "refunded" && now.attempt == .refunded && now.refunded == 2500, "\(now)")
        #expect(try await count(h.store, "till_notifications",
                                where: "attempt_reference = '\(attempt.rawValue)' AND event_id LIKE 'c%' AND outcome = 'applied'") == 5)
    }

    @Test("after a refund, a redelivered 'paid' (same or new event id) or an 'authorized' does not undo it: partially_refunded stays with refunded_minor 1000",
          arguments: StoreKind.available)
    func noUndo(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, attempt) = try await Self.paid(h)
        try await Self.post(h, attempt, "partially_refunded", amount: Self.usd(1000), event: "r1")
        try await Self.post(h, attempt, "paid", amount: Self.usd(2500), event: "paid-\(attempt.rawValue)")
        try await Self.post(h, attempt, "paid", amount: Self.usd(2500), event: "paid-again")
        try await Self.post(h, attempt, "authorized", amount: Self.usd(2500), event: "auth-again")
        let now = try await Self.state(h, id, attempt)
        #expect(now.payment == "partially_refunded" && now.attempt == .partiallyRefunded && now.refunded == 1000, "\(now)")
    }

    // MARK: Someone else's attempt

    @Test("a refund signed with merchant A's gateway secret naming merchant B's paid attempt is quarantined under A: acknowledged, B stays paid with refunded_minor 0, nothing stored against B's attempt",
          arguments: StoreKind.available)
    func otherMerchant(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let ofB = try await s.create(as: s.b)
        let attempt = AttemptReference(rawValue: try await s.prepare(ofB.id, bearer: s.b.key))
        let amount = Money(minorUnits: 2500, currency: Currency.lookup("USD")!)
        #expect(try await s.notify(StatusReport(gateway: "fake", attempt: attempt, status: .paid, amount: amount, eventID: "paid"), signedBy: s.b).status == 200)
        #expect(try await s.store.payment(id: ofB.id, merchant: s.b.id)?.status == .paid)
        for (status, event) in [(PaymentStatus.refunded, "cross-full"), (.partiallyRefunded, "cross-part")] {
            let answer = try await s.notify(StatusReport(gateway: "fake", attempt: attempt, status: status, amount: amount, eventID: event), signedBy: s.a)
            #expect(answer.status == 200)
        }
        let stored = try #require(try await s.store.payment(id: ofB.id, merchant: s.b.id))
        #expect(stored.status == .paid && stored.attempts.first?.status == .paid && stored.attempts.first?.refundedMinorUnits == 0)
        #expect(try await count(s.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND event_id LIKE 'cross-%'") == 0)
        #expect(try await count(s.store, "till_quarantine",
                                where: "merchant_id = '\(s.a.id)' AND attempt_reference = '\(attempt.rawValue)' AND reported_status IN ('refunded', 'partially_refunded')") == 2)
        let listedForB = try await s.call("GET", "/v1/quarantine", bearer: s.b.key)
        #expect(!listedForB.text.contains(attempt.rawValue))
    }

    @Test("a refund posted to another gateway of the same merchant (same signing secret) than the one the attempt was made on is quarantined: paid, refunded_minor 0",
          arguments: StoreKind.available)
    func otherGateway(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["fake", "spare"])
        defer { Task { await h.stop() } }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        #expect(try await Self.post(h, attempt, "paid", amount: Self.usd(2500), event: "paid", gateway: gateway).status == 200)
        let other: GatewayID = gateway == "fake" ? "spare" : "fake"
        #expect(try await Self.post(h, attempt, "refunded", amount: Self.usd(2500), event: "elsewhere", gateway: other).status == 200)
        let now = try await Self.state(h, id, attempt)
        #expect(now.payment == "paid" && now.attempt == .paid && now.refunded == 0, "\(now)")
        #expect(try await count(h.store, "till_quarantine", where: "attempt_reference = '\(attempt.rawValue)' AND event_id = 'elsewhere'") == 1)
    }

    @Test("a refund naming the declined first attempt of a payment paid on its second is refused: the payment stays paid, neither attempt has anything refunded",
          arguments: StoreKind.available)
    func declinedSibling(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, gateways: ["fake", "spare"])
        defer { Task { await h.stop() } }
        let (id, first, firstGateway) = try await h.createAndPrepare()
        #expect(try await Self.post(h, first, "failed", amount: nil, event: "declined", gateway: firstGateway).status == 200)
        // The signed failure carries no code (not retryable by itself): the customer asks to try again.
        let next = try await h.send("POST", "v1/payments/\(id)/attempts", json: #"{"customerRequested":true}"#)
        #expect(next.status == 201, "\(String(decoding: next.body, as: UTF8.self))")
        let second = AttemptReference(rawValue: try #require(next.json["attempt"] as? String))
        let secondGateway = GatewayID(rawValue: try #require(next.json["gateway"] as? String))
        #expect(try await Self.post(h, second, "paid", amount: Self.usd(2500), event: "paid", gateway: secondGateway).status == 200)
        #expect(try await h.status(of: id) == "paid")
        #expect(try await Self.post(h, first, "refunded", amount: Self.usd(2500), event: "refund-first", gateway: firstGateway).status == 200)
        #expect(try await Self.recorded(h, first, event: "refund-first", as: "stale"))
        let stored = try #require(try await h.store.payment(attempt: second))
        #expect(stored.status == .paid)
        #expect(stored.attempts.map(\.status) == [.failed, .paid] && stored.attempts.map(\.refundedMinorUnits) == [0, 0])
    }
}
