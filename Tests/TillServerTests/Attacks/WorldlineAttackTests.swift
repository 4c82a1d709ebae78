import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillSandbox
import TillWorldline
import TillWorldlineServer
@testable import TillServer

/// Attacks on the Worldline endpoints of the real merchant server: the webhook endpoint anyone can
/// post to (forgeries, replays, another account's events, events about payments Till never made, wrong
/// amounts, currencies, statuses and versions), the endpoint verification echo, and the app's submit
/// (the customer holds the app, its client secret, its client session and every JWE it made).
///
/// Each attack runs against the server with the Worldline module and the emulator. Where the product
/// holds, the test asserts it; where it does not, the failing expectations sit in `withKnownIssue`
/// with the flaw described.
@Suite("Attacks: the Worldline webhook, endpoint verification and submit endpoints", .serialized)
struct WorldlineAttackTests {
    typealias World = WorldlineAttackWorld

    /// Every ledger entry (money Worldline moved) about `attempt`.
    func ledger(_ w: World, _ attempt: AttemptReference) async -> [WorldlineEmulator.LedgerEntry] {
        await w.emulator.ledger.filter { $0.merchantReference == attempt.rawValue }
    }

    func text(_ answer: ServerHarness.Answer) -> String { "HTTP \(answer.status) \(String(decoding: answer.body, as: UTF8.self))" }

    // MARK: Webhooks: anyone can post

    @Test("forged webhooks (no headers, a wrong or empty secret, an unknown key id, another merchant's real key, a genuine signature over another body, hex instead of Base64) claiming CAPTURED: 401, nothing stored, the attempt still pending",
          arguments: StoreKind.available)
    func forgedWebhooks(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let paid = try await w.start(w.a)
            #expect(try await w.pay(paid).status == 200)
            await w.settle()
            let genuine = try #require(await w.emulator.webhookDeliveries.last { $0.kind == .event && $0.accepted })
            let victim = try await w.start(w.a)
            let forged = try World.event(w.a.account, type: "payment.captured",
                                         payment: World.payment(status: "CAPTURED", merchantReference: victim.attempt.rawValue))
            let account = w.a.account
            let signed = World.signature(forged, secret: account.webhookSecret)
            let hex = Data(base64Encoded: signed)!.map { String(format: "%02x", $0) }.joined()
            let attempts: [(String, [String: String])] = [
                ("no headers", [:]),
                ("no signature", ["X-GCS-KeyId": account.webhookKeyId]),
                ("no key id", ["X-GCS-Signature": signed]),
                ("a wrong secret", ["X-GCS-KeyId": account.webhookKeyId, "X-GCS-Signature": World.signature(forged, secret: "guess")]),
                ("an empty signature", ["X-GCS-KeyId": account.webhookKeyId, "X-GCS-Signature": ""]),
                ("an unknown key id with its own secret", ["X-GCS-KeyId": "attacker-key", "X-GCS-Signature": World.signature(forged, secret: "attacker")]),
                ("merchant B's real key id and secret", ["X-GCS-KeyId": w.b.account.webhookKeyId,
                                                        "X-GCS-Signature": World.signature(forged, secret: w.b.account.webhookSecret)]),
                ("a genuine signature of another body", ["X-GCS-KeyId": account.webhookKeyId, "X-GCS-Signature": genuine.signature ?? ""]),
                ("the right HMAC in hex", ["X-GCS-KeyId": account.webhookKeyId, "X-GCS-Signature": hex]),
                ("the right signature under a key id in another case", ["X-GCS-KeyId": account.webhookKeyId.uppercased(), "X-GCS-Signature": signed]),
            ]
            for (name, headers) in attempts {
                let answer = try await w.post(forged, headers: headers)
                #expect(answer.status == 401, "\(name): \(text(answer))")
            }
            // One byte changed after signing.
            var changed = forged
            changed[changed.count - 2] ^= 0x01
            #expect(try await w.post(changed, headers: ["X-GCS-KeyId": account.webhookKeyId, "X-GCS-Signature": signed]).status == 401)
            await w.settle()
            #expect(try await w.notifications(victim.attempt).all == 0)
            #expect(try await w.attempt(victim.attempt).status == .pending)
            #expect(try await w.paymentStatus(victim.attempt) == .pending)
            #expect(try await w.quarantine(w.a).allSatisfy { $0.attempt != victim.attempt })
            #expect(try await w.quarantine(w.b).isEmpty)
        }
    }

    @Test("every genuine event replayed byte for byte (in order and reversed) after a capture and a partial refund: acknowledged, nothing moves back, the refund is not counted twice",
          arguments: StoreKind.available)
    func replayedWebhooks(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s, card: World.pendingCard).status == 200)
            let id = try await w.worldlinePaymentId(w.a.account, s.attempt)
            await w.settle()
            #expect(await w.emulator.settlePendingPayment(id, approve: true) == "CAPTURED")
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
            let refund = try await w.serverAPI(w.a.account, "POST", "/payments/\(id)/refund", json: [
                "amountOfMoney": ["amount": 500, "currencyCode": "EUR"], "refundReferences": ["merchantReference": "\(s.attempt.rawValue)-1"],
            ])
            #expect(refund.status == 201)
            #expect(try await w.settle { try await w.attempt(s.attempt).refundedMinorUnits == 500 })
            #expect(try await w.attempt(s.attempt).status == .partiallyRefunded)
            let applied = try await w.notifications(s.attempt).applied
            let events = await w.emulator.webhookDeliveries.filter { $0.kind == .event && !$0.crafted && !$0.replay }.compactMap(\.eventId)
            #expect(events.count >= 4, "\(events)")
            for eventId in events + events.reversed() {
                let replay = await w.emulator.redeliver(eventId: eventId)
                #expect(replay.map { (200..<300).contains($0.status ?? 0) } == true, "replay of \(eventId): \(String(describing: replay?.status))")
            }
            await w.settle()
            let after = try await w.attempt(s.attempt)
            #expect(after.status == .partiallyRefunded)
            #expect(after.refundedMinorUnits == 500)
            #expect(try await w.paymentStatus(s.attempt) == .partiallyRefunded)
            #expect(try await w.notifications(s.attempt).applied == applied)
            let money = await ledger(w, s.attempt)
            #expect(money.filter { $0.operation == .capture }.map(\.amount) == [World.amount])
            #expect(money.filter { $0.operation == .refund }.map(\.amount) == [500])
        }
    }

    // MARK: Webhooks: events about other merchants, gateways and payments

    @Test("merchant A's genuine CAPTURED event naming merchant B's attempt: acknowledged, quarantined under A, B's attempt untouched; an event naming B's account signed with A's key: 401",
          arguments: StoreKind.available)
    func crossMerchant(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let victim = try await w.start(w.b)
            _ = try await w.outsidePayment(w.a.account, merchantReference: victim.attempt.rawValue, amount: World.amount)
            await w.settle()
            let events = await w.emulator.webhookDeliveries.filter { $0.kind == .event && $0.body.contains(victim.attempt.rawValue) }
            #expect(!events.isEmpty && events.allSatisfy(\.accepted), "\(events.map(\.status))")
            #expect(try await w.quarantine(w.a).contains { $0.attempt == victim.attempt })
            #expect(try await w.quarantine(w.b).isEmpty)
            #expect(try await w.notifications(victim.attempt).all == 0)
            #expect(try await w.attempt(victim.attempt).status == .pending)

            let claimingB = try World.event(w.b.account, type: "payment.captured",
                                            payment: World.payment(status: "CAPTURED", merchantReference: victim.attempt.rawValue))
            #expect(await w.gatewaySigned(w.a.account, body: claimingB) == 401)
            await w.settle()
            #expect(try await w.notifications(victim.attempt).all == 0)
            #expect(try await w.attempt(victim.attempt).status == .pending)
            #expect(try await w.paymentStatus(victim.attempt) == .pending)
        }
    }

    @Test("a genuine Worldline event naming an attempt of the same merchant on another gateway (fake): quarantined, that attempt untouched",
          arguments: StoreKind.available)
    func otherGateway(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let other = try await w.start(w.a, route: "fake")
            let before = try await w.attempt(other.attempt)
            #expect(before.gateway == "fake")
            _ = try await w.outsidePayment(w.a.account, merchantReference: other.attempt.rawValue, amount: World.amount)
            await w.settle()
            #expect(try await w.quarantine(w.a).contains { $0.attempt == other.attempt && $0.gateway == World.gateway })
            #expect(try await w.notifications(other.attempt).all == 0)
            #expect(try await w.attempt(other.attempt).status == before.status)
            #expect(try await w.paymentStatus(other.attempt) != .paid)
        }
    }

    @Test("genuine events of payments created outside Till (no merchantReference, or one that is no attempt): acknowledged so Worldline stops retrying, quarantined, nothing applied",
          arguments: StoreKind.available)
    func paymentsOutsideTill(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let bystander = try await w.start(w.a)
            let unnamed = try await w.outsidePayment(w.a.account, merchantReference: nil, amount: 999)
            let named = try await w.outsidePayment(w.a.account, merchantReference: "shop-order-12345", amount: 999)
            await w.settle()
            let deliveries = await w.emulator.webhookDeliveries.filter { $0.kind == .event && ($0.body.contains(unnamed) || $0.body.contains(named)) }
            #expect(deliveries.count >= 2 && deliveries.allSatisfy(\.accepted), "\(deliveries.map(\.status))")
            let quarantined = try await w.quarantine(w.a)
            #expect(quarantined.contains { $0.attempt.rawValue == "shop-order-12345" })
            #expect(quarantined.contains { $0.attempt.rawValue.hasPrefix("worldline-event-") })
            // An event naming no attempt is kept under a status Till does not know: it can never be applied.
            #expect(quarantined.filter { $0.attempt.rawValue.hasPrefix("worldline-event-") }.allSatisfy { !$0.reportedStatus.isKnown })
            #expect(try await w.attempt(bystander.attempt).status == .pending)
            #expect(try await w.notifications(bystander.attempt).all == 0)
        }
    }

    // MARK: Webhooks: Worldline-signed events with the wrong money, status or version

    @Test("Worldline-signed payment events for a real attempt with another amount (less or more) or currency: CAPTURED and PENDING_CAPTURE not applied; a REFUNDED in another currency not applied",
          arguments: StoreKind.available)
    func amountOrCurrencyMismatch(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s, card: World.pendingCard).status == 200)
            let id = try await w.worldlinePaymentId(w.a.account, s.attempt)
            await w.settle()
            let reference = s.attempt.rawValue
            let claims: [(String, [String: Any])] = [
                ("CAPTURED 0.01 EUR", World.payment(id: id, status: "CAPTURED", amount: 1, merchantReference: reference)),
                ("CAPTURED 23.46 EUR", World.payment(id: id, status: "CAPTURED", amount: World.amount + 1, merchantReference: reference)),
                ("CAPTURED 23.45 USD", World.payment(id: id, status: "CAPTURED", currency: "USD", merchantReference: reference)),
                ("CAPTURED 2345 JPY", World.payment(id: id, status: "CAPTURED", currency: "JPY", merchantReference: reference)),
                ("PENDING_CAPTURE 0.01 EUR", World.payment(id: id, status: "PENDING_CAPTURE", amount: 1, merchantReference: reference)),
                ("PAID without an amount", ["id": id, "status": "PAID", "paymentOutput": ["references": ["merchantReference": reference]]]),
            ]
            for (name, payment) in claims {
                let status = await w.gatewaySigned(w.a.account, body: try World.event(w.a.account, type: "payment.captured", payment: payment))
                #expect(status.map { (200..<300).contains($0) || (400..<500).contains($0) } == true, "\(name): \(String(describing: status))")
            }
            await w.settle()
            #expect(try await w.attempt(s.attempt).status == .pending)
            #expect(try await w.paymentStatus(s.attempt) == .pending)
            #expect(try await w.notifications(s.attempt).applied == 0)

            // Paid for real, then a refund claimed in another currency.
            #expect(await w.emulator.settlePendingPayment(id, approve: true) == "CAPTURED")
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
            let refund = World.payment(id: id, status: "REFUNDED", currency: "USD", merchantReference: reference, amountRefunded: World.amount)
            #expect(await w.gatewaySigned(w.a.account, body: try World.event(w.a.account, type: "payment.refunded", payment: refund)) == 200)
            await w.settle()
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.attempt(s.attempt).refundedMinorUnits == 0)
        }
    }

    @Test("Worldline-signed refund events claiming more than was captured (23.46 of 23.45, 100,000.00), another currency, or a refund of an unpaid attempt: not applied, no refund recorded",
          arguments: StoreKind.available)
    func refundLargerThanCapture(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s).status == 200)
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
            let reference = s.attempt.rawValue
            for refund in [World.refund(amount: World.amount + 1, merchantReference: "\(reference)-1"),
                           World.refund(amount: 10_000_000, merchantReference: "\(reference)-2"),
                           World.refund(amount: 100, currency: "USD", merchantReference: "\(reference)-3"),
                           World.refund(amount: -100, merchantReference: "\(reference)-1")] {
                let status = await w.gatewaySigned(w.a.account, body: try World.event(w.a.account, type: "refund.refunded", refund: refund))
                #expect(status == 200)
            }
            await w.settle()
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.attempt(s.attempt).refundedMinorUnits == 0)
            #expect(try await w.paymentStatus(s.attempt) == .paid)

            let unpaid = try await w.start(w.a)
            let claim = World.refund(amount: 100, merchantReference: "\(unpaid.attempt.rawValue)-1")
            #expect(await w.gatewaySigned(w.a.account, body: try World.event(w.a.account, type: "refund.refunded", refund: claim)) == 200)
            await w.settle()
            #expect(try await w.attempt(unpaid.attempt).status == .pending)
            #expect(try await w.attempt(unpaid.attempt).refundedMinorUnits == 0)
            #expect(await ledger(w, s.attempt).filter { $0.operation == .refund }.isEmpty)
        }
    }

    @Test("Worldline-signed events with a status Till does not know, or a type that is no payment event: stored or quarantined, never applied",
          arguments: StoreKind.available)
    func unknownStatus(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s, card: World.pendingCard).status == 200)
            let id = try await w.worldlinePaymentId(w.a.account, s.attempt)
            await w.settle()
            let reference = s.attempt.rawValue
            let before = try await w.notifications(s.attempt)
            for (type, status) in [("payment.captured", "SETTLEMENT_PENDING_NEW"), ("payment.some_future_event", "SOMETHING_ELSE"),
                                   ("payment.captured", "")] {
                let body = try World.event(w.a.account, type: type, payment: World.payment(id: id, status: status, merchantReference: reference))
                #expect(await w.gatewaySigned(w.a.account, body: body) == 200, "\(type) \(status)")
            }
            // A dispute or token event carrying a CAPTURED payment: not a payment event, so never applied.
            let dispute = try World.event(w.a.account, type: "dispute.created",
                                          payment: World.payment(id: id, status: "CAPTURED", merchantReference: reference))
            #expect(await w.gatewaySigned(w.a.account, body: dispute) == 200)
            await w.settle()
            let after = try await w.notifications(s.attempt)
            #expect(after.all == before.all + 3)
            #expect(after.applied == before.applied)
            #expect(try await w.attempt(s.attempt).status == .pending)
            #expect(try await w.quarantine(w.a).contains { $0.attempt.rawValue.hasPrefix("worldline-event-") && $0.reportedStatus.rawValue == "worldline.dispute.created" })
        }
    }

    @Test("a Worldline-signed event whose id repeats an applied one, with other content (REFUNDED after CAPTURED): a duplicate, not applied",
          arguments: StoreKind.available)
    func duplicateEventIds(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s, card: World.pendingCard).status == 200)
            let id = try await w.worldlinePaymentId(w.a.account, s.attempt)
            await w.settle()
            // Events trigger the server's inquiry: the payment really is captured at Worldline.
            #expect(await w.emulator.settlePendingPayment(id, approve: true) == "CAPTURED")
            let eventId = "event-\(UUID().uuidString.lowercased())"
            let reference = s.attempt.rawValue
            let captured = try World.event(w.a.account, type: "payment.captured", id: eventId,
                                           payment: World.payment(id: id, status: "CAPTURED", merchantReference: reference))
            #expect(await w.gatewaySigned(w.a.account, body: captured) == 200)
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
            let applied = try await w.notifications(s.attempt).applied
            let refunded = try World.event(w.a.account, type: "payment.refunded", id: eventId,
                                           payment: World.payment(id: id, status: "REFUNDED", merchantReference: reference,
                                                                  amountRefunded: World.amount))
            #expect(await w.gatewaySigned(w.a.account, body: refunded) == 200)
            #expect(await w.gatewaySigned(w.a.account, body: captured) == 200)
            await w.settle()
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.attempt(s.attempt).refundedMinorUnits == 0)
            #expect(try await w.notifications(s.attempt).applied == applied)
        }
    }

    @Test("a Worldline-signed event with apiVersion v2, V1, none or a number: refused 4xx, nothing stored, the attempt still pending",
          arguments: StoreKind.available)
    func otherAPIVersions(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s, card: World.pendingCard).status == 200)
            let id = try await w.worldlinePaymentId(w.a.account, s.attempt)
            await w.settle()
            let before = try await w.notifications(s.attempt)
            let payment = World.payment(id: id, status: "CAPTURED", merchantReference: s.attempt.rawValue)
            for version in ["v2", "V1", "v1 ", nil] {
                let status = await w.gatewaySigned(w.a.account, body: try World.event(w.a.account, type: "payment.captured", apiVersion: version,
                                                                                      payment: payment))
                #expect(status.map { (400..<500).contains($0) } == true, "\(String(describing: version)): \(String(describing: status))")
            }
            let numeric = try JSONSerialization.data(withJSONObject: ["apiVersion": 1, "id": "n-1", "merchantId": w.a.account.merchantId,
                                                                      "type": "payment.captured", "payment": payment])
            #expect(await w.gatewaySigned(w.a.account, body: numeric).map { (400..<500).contains($0) } == true)
            await w.settle()
            #expect(try await w.notifications(s.attempt).all == before.all)
            #expect(try await w.attempt(s.attempt).status == .pending)
        }
    }

    @Test("a webhook body over the server's body limit: 413 before any verification; the server keeps serving")
    func oversizedWebhook() async throws {
        try await World.with(.sqlite, maxBodyBytes: 16_384) { w in
            let body = Data(("{\"apiVersion\":\"v1\",\"pad\":\"" + String(repeating: "a", count: 20_000) + "\"}").utf8)
            let answer = try await w.post(body, headers: ["X-GCS-KeyId": w.a.account.webhookKeyId,
                                                          "X-GCS-Signature": World.signature(body, secret: w.a.account.webhookSecret)])
            #expect(answer.status == 413, "\(text(answer))")
            #expect(try await w.call("GET", "healthz", bearer: nil).status == 200)
            #expect(try await count(w.store, "till_notifications") == 0)
        }
    }

    // MARK: Webhooks: payments made outside Till naming a real attempt
    // Every payment.* event triggers the server's inquiry (WorldlineServer.verifyNotification,
    // confirmBeforeApplying), which asks about the attempt's own payment, or all payments of its reference.

    @Test("a payment created outside Till, REJECTED, naming a pending attempt (another payment id, another amount) does not fail it; the attempt's own payment, CAPTURED later, makes it paid")
    func outsideRejectionFailsAttempt() async throws {
        try await World.with(.sqlite) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s, card: World.pendingCard).status == 200)
            let own = try await w.worldlinePaymentId(w.a.account, s.attempt)
            await w.settle()
            #expect(try await w.attempt(s.attempt).status == .pending)
            let outside = try await w.outsidePayment(w.a.account, merchantReference: s.attempt.rawValue, amount: 100, card: World.declinedCard)
            #expect(outside != own)
            await w.settle()
            let afterOutside = try await w.attempt(s.attempt).status
            #expect(await w.emulator.settlePendingPayment(own, approve: true) == "CAPTURED")
            try await w.settle { try await w.attempt(s.attempt).status == .paid }
            // The merchant asks too: the inquiry goes to the payment id the outside event left behind.
            _ = try await w.call("POST", "v1/attempts/\(s.attempt.rawValue)/inquire", bearer: w.a.key)
            let final = try await w.attempt(s.attempt)
            // What holds: the money really moved for this attempt, exactly once.
            #expect(await ledger(w, s.attempt).filter { $0.operation == .capture && $0.paymentId == own }.map(\.amount) == [World.amount])
            #expect(afterOutside == .pending, "the outside payment's REJECTED does not fail the attempt")
            #expect(final.status == .paid, "the attempt's own captured payment is lost (gateway reference \(final.gatewayReference ?? "nil"), own \(own))")
        }
    }

    @Test("a payment created outside Till naming a paid attempt, then refunded in full at Worldline: its payment.refunded is not recorded as a refund of the attempt")
    func outsideRefundRecordedOnAttempt() async throws {
        try await World.with(.sqlite) { w in
            let s = try await w.start(w.a)
            #expect(try await w.pay(s).status == 200)
            let own = try await w.worldlinePaymentId(w.a.account, s.attempt)
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
            let outside = try await w.outsidePayment(w.a.account, merchantReference: s.attempt.rawValue, amount: 100)
            await w.settle()
            // What holds: its CAPTURED (another amount) is not applied.
            #expect(try await w.attempt(s.attempt).status == .paid)
            let refund = try await w.serverAPI(w.a.account, "POST", "/payments/\(outside)/refund", json: [
                "amountOfMoney": ["amount": 100, "currencyCode": "EUR"],
            ])
            #expect(refund.status == 201)
            await w.settle()
            try? await Task.sleep(for: .milliseconds(200))
            await w.settle()
            let after = try await w.attempt(s.attempt)
            #expect(await w.emulator.ledger.filter { $0.operation == .refund && $0.paymentId == own }.isEmpty)
            #expect(after.status == .paid)
            #expect(after.refundedMinorUnits == 0)
        }
    }

    // MARK: Endpoint verification (GET echo)

    @Test("the endpoint verification echoes only into a text/plain body: HTML stays text, no header carries the value, no CORS grant lets a page read it; another gateway's or a missing header gets 404")
    func verificationEcho() async throws {
        try await World.with(.sqlite) { w in
            for value in ["3f2b7c9e-1d2a-4b1c-9e8f-0a1b2c3d4e5f", "<script>alert(document.domain)</script>", "a\"b'c;d=e, f"] {
                let answer = try await w.call("GET", "v1/notifications/worldline", bearer: nil, headers: [
                    "X-GCS-Webhooks-Endpoint-Verification": value, "Origin": "https://evil.example",
                ])
                #expect(answer.status == 200)
                #expect(String(decoding: answer.body, as: UTF8.self) == value)
                #expect(answer.headers["content-type"]?.hasPrefix("text/plain") == true)
                #expect(answer.headers["access-control-allow-origin"] == nil)
                #expect(!answer.headers.values.contains { $0.contains(value) })
            }
            // A browser page cannot set the header cross-origin without a preflight, which gets no grant.
            let preflight = try await w.raw(Array(("OPTIONS /v1/notifications/worldline HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\n"
                + "Access-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: x-gcs-webhooks-endpoint-verification\r\n"
                + "Connection: close\r\n\r\n").utf8))
            #expect(!preflight.head.lowercased().contains("access-control-allow"))
            #expect(preflight.status.map { $0 >= 400 } ?? true, "\(preflight.head)")
            // Header injection: a bare CR, an obs-fold continuation, a NUL: refused or echoed as body bytes only.
            for value: [UInt8] in [Array("abc\rX-Injected: 1".utf8), Array("abc\r\n X-Injected: 1".utf8), [0x61, 0x00, 0x62]] {
                let head = Array("GET /v1/notifications/worldline HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-GCS-Webhooks-Endpoint-Verification: ".utf8)
                    + value + Array("\r\n\r\n".utf8)
                let answer = try await w.raw(head)
                #expect(!answer.head.lowercased().contains("x-injected"), "\(answer.head)")
                if answer.status == 200 { #expect(answer.head.lowercased().contains("content-type: text/plain")) }
            }
            for (path, headers) in [("v1/notifications/fake", ["X-GCS-Webhooks-Endpoint-Verification": "v"]),
                                    ("v1/notifications/nosuchgateway", ["X-GCS-Webhooks-Endpoint-Verification": "v"]),
                                    ("v1/notifications/worldline", ["X-GCS-Webhooks-Endpoint-Verification-X": "v"])] {
                let answer = try await w.call("GET", path, bearer: nil, headers: headers)
                #expect(answer.status == 404, "\(path): \(text(answer))")
                #expect(!String(decoding: answer.body, as: UTF8.self).contains("\"v\""))
            }
        }
    }

    @Test("huge endpoint verification values: a value over 512 characters is not echoed (404), one beyond the header limit is refused; the server keeps serving")
    func verificationEchoHuge() async throws {
        try await World.with(.sqlite) { w in
            let big = String(repeating: "A", count: 16_000)
            let answer = try await w.call("GET", "v1/notifications/worldline", bearer: nil, headers: ["X-GCS-Webhooks-Endpoint-Verification": big])
            #expect(answer.status == 404)
            #expect(try await w.call("GET", "v1/notifications/worldline", bearer: nil,
                                     headers: ["X-GCS-Webhooks-Endpoint-Verification": String(repeating: "C", count: 512)]).status == 200)
            for size in [200_000, 2_000_000] {
                let head = "GET /v1/notifications/worldline HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-GCS-Webhooks-Endpoint-Verification: "
                    + String(repeating: "B", count: size) + "\r\n\r\n"
                let huge = try await w.raw(Array(head.utf8))
                #expect(huge.status != 200, "\(size) bytes echoed: \(huge.head)")
                #expect(huge.body.count < 1_000)
            }
            #expect(try await w.call("GET", "healthz", bearer: nil).status == 200)
        }
    }

    // MARK: Submit: the customer holds the app

    @Test("a JWE made for another attempt: Worldline charges the attempt it is submitted to, for the server's amount; resubmitted it is refused; under another merchant's attempt it is refused; nothing else charged",
          arguments: StoreKind.available)
    func anotherAttemptsJWE(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let small = try await w.start(w.a, minor: 100)
            let large = try await w.start(w.a, minor: 234_500)
            let jwe = try w.jwe(small.session)
            let fields = [WorldlineGateway.encryptedInputField: jwe, WorldlineGateway.clientMetaInfoField: World.metaInfo]
            let moved = try await w.submit(large.attempt, bearer: large.secret, fields: fields)
            #expect(moved.status == 200, "\(text(moved))")
            #expect(await ledger(w, large.attempt).filter { $0.operation == .capture }.map(\.amount) == [234_500])
            #expect(try await w.settle { try await w.attempt(large.attempt).status == .paid })
            let again = try await w.submit(small.attempt, bearer: small.secret, fields: fields)
            #expect((400..<500).contains(again.status), "\(text(again))")
            #expect(await ledger(w, small.attempt).isEmpty)
            #expect(try await w.attempt(small.attempt).status != .paid)

            let mine = try await w.start(w.a)
            let theirs = try await w.start(w.b)
            let cross = try await w.submit(theirs.attempt, bearer: theirs.secret, fields: [
                WorldlineGateway.encryptedInputField: try w.jwe(mine.session), WorldlineGateway.clientMetaInfoField: World.metaInfo,
            ])
            #expect((400..<500).contains(cross.status), "\(text(cross))")
            #expect(await ledger(w, theirs.attempt).isEmpty)
            #expect(await w.emulator.ledger.filter { $0.operation == .capture }.count == 1)
        }
    }

    @Test("a submit replayed after the attempt is paid (same JWE, a fresh one, with the merchant key): 409 already_submitted, charged once",
          arguments: StoreKind.available)
    func replayedSubmit(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let fields = [WorldlineGateway.encryptedInputField: try w.jwe(s.session), WorldlineGateway.clientMetaInfoField: World.metaInfo]
            #expect(try await w.submit(s.attempt, bearer: s.secret, fields: fields).status == 200)
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
            for (bearer, replay) in [(s.secret, fields), (s.secret, [WorldlineGateway.encryptedInputField: try w.jwe(s.session)]),
                                     (w.a.key, [WorldlineGateway.encryptedInputField: try w.jwe(s.session)])] {
                let answer = try await w.submit(s.attempt, bearer: bearer, fields: replay)
                #expect(answer.status == 409 && answer.errorCode == "already_submitted", "\(text(answer))")
            }
            #expect(await ledger(w, s.attempt).filter { $0.operation == .capture }.count == 1)
            #expect(try await w.worldlinePayments(w.a.account, merchantReference: s.attempt.rawValue).count == 1)
        }
    }

    @Test("a giant JWE (40 KB) is refused before the attempt is marked submitted; a body over the limit is 413; the honest submit after both still pays",
          arguments: StoreKind.available)
    func giantPayload(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let segment = String(repeating: "A", count: 8_000)
            let giant = try await w.submit(s.attempt, bearer: s.secret, fields: [
                WorldlineGateway.encryptedInputField: Array(repeating: segment, count: 5).joined(separator: "."),
            ])
            #expect(giant.status == 400 && giant.errorField == "body.fields.\(WorldlineGateway.encryptedInputField)", "\(text(giant))")
            let body = Data(("{\"kind\":\"encrypted_customer_input\",\"fields\":{\"encryptedCustomerInput\":\"" + String(repeating: "A", count: 70_000)
                + "\"}}").utf8)
            let oversized = try await w.call("POST", "v1/attempts/\(s.attempt.rawValue)/submit", body: body, bearer: s.secret)
            #expect(oversized.status == 413, "\(text(oversized))")
            #expect(try await w.attempt(s.attempt).submittedAt == nil)
            #expect(try await w.worldlinePayments(w.a.account, merchantReference: s.attempt.rawValue).isEmpty)
            #expect(try await w.pay(s).status == 200)
            #expect(try await w.settle { try await w.attempt(s.attempt).status == .paid })
        }
    }

    @Test("extra fields beside the JWE, and extra top-level keys (an amount, a currency): refused naming the field; nothing reaches Worldline; the amount charged is never the app's",
          arguments: StoreKind.available)
    func extraFields(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            for extra in ["amount", "merchantReference", "cardNumber"] {
                let s = try await w.start(w.a)
                let answer = try await w.submit(s.attempt, bearer: s.secret, fields: [
                    WorldlineGateway.encryptedInputField: try w.jwe(s.session), WorldlineGateway.clientMetaInfoField: World.metaInfo, extra: "1",
                ])
                #expect((400..<500).contains(answer.status) && answer.errorField == "submission.fields.\(extra)", "\(extra): \(text(answer))")
                #expect(try await w.worldlinePayments(w.a.account, merchantReference: s.attempt.rawValue).isEmpty)
                #expect(try await w.attempt(s.attempt).status != .paid)
            }
            let s = try await w.start(w.a)
            let jwe = try w.jwe(s.session)
            for key in ["amount", "currency", "attempt"] {
                let body = try JSONSerialization.data(withJSONObject: [
                    "kind": WorldlineGateway.submissionKind, "fields": [WorldlineGateway.encryptedInputField: jwe], key: key == "amount" ? 1 : "USD",
                ] as [String: Any])
                let answer = try await w.call("POST", "v1/attempts/\(s.attempt.rawValue)/submit", body: body, bearer: s.secret)
                #expect(answer.status == 400 && answer.errorField == "body.\(key)", "\(key): \(text(answer))")
            }
            #expect(try await w.attempt(s.attempt).submittedAt == nil)
            #expect(try await w.worldlinePayments(w.a.account, merchantReference: s.attempt.rawValue).isEmpty)
        }
    }

    @Test("client meta info that is not Base64, not JSON, a JSON array or string, or over 8 KB: refused naming encodedClientMetaInfo, nothing sent; one with line breaks and header text inside its JSON pays normally",
          arguments: StoreKind.available)
    func hostileMetaInfo(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let hostile = ["%%% not base64 %%%", Data("not json".utf8).base64EncodedString(), Data("[1,2,3]".utf8).base64EncodedString(),
                           Data("\"a string\"".utf8).base64EncodedString(), Data("{\"a\":".utf8).base64EncodedString(),
                           Data(("{\"pad\":\"" + String(repeating: "x", count: 9_000) + "\"}").utf8).base64EncodedString()]
            for meta in hostile {
                let s = try await w.start(w.a)
                let answer = try await w.submit(s.attempt, bearer: s.secret, fields: [
                    WorldlineGateway.encryptedInputField: try w.jwe(s.session), WorldlineGateway.clientMetaInfoField: meta,
                ])
                #expect((400..<500).contains(answer.status) && answer.errorField == "submission.fields.\(WorldlineGateway.clientMetaInfoField)",
                        "\(meta.prefix(40)): \(text(answer))")
                #expect(try await w.worldlinePayments(w.a.account, merchantReference: s.attempt.rawValue).isEmpty)
            }
            let s = try await w.start(w.a)
            let tricky = Data("{\r\n\"sdkIdentifier\":\"x\\r\\nAuthorization: GCS v1HMAC:evil:AAAA\",\r\n\"platformIdentifier\":\"iOS\"\r\n}".utf8)
            let answer = try await w.submit(s.attempt, bearer: s.secret, fields: [
                WorldlineGateway.encryptedInputField: try w.jwe(s.session), WorldlineGateway.clientMetaInfoField: tricky.base64EncodedString(),
            ])
            #expect(answer.status == 200, "\(text(answer))")
            #expect(await ledger(w, s.attempt).filter { $0.operation == .capture }.map(\.amount) == [World.amount])
        }
    }

    @Test("the module forwards client meta info only Base64-encoded in X-GCS-ClientMetaInfo: line breaks and header text inside the app's JSON never reach another header")
    func metaInfoStaysInItsHeader() async throws {
        try await World.with(.sqlite) { w in
            let transport = WorldlineForwardingRecorder()
            let account = w.a.account
            let server = WorldlineServer(environment: .custom(w.sandbox.baseURL(of: w.emulator)),
                                         credentials: WorldlineCredentials(apiKeyId: account.apiKeyId, secretApiKey: account.secretApiKey),
                                         settings: WorldlineServerSettings(merchantId: account.merchantId), transport: transport)
            let intent = PaymentIntent(merchantReference: "meta-1", amount: Money(minorUnits: World.amount, currency: try Currency(code: "EUR")),
                                       country: try CountryCode("NL"), method: .card)
            let attempt = AttemptReference.generate()
            let preparation = try await server.prepare(AttemptContext(intent: intent, attempt: attempt))
            let session = try WorldlinePreparation(parameters: preparation.parameters)
            let json = "{\r\n\"sdkIdentifier\":\"x\\r\\nX-Injected: 1\",\n\"platformIdentifier\":\"iOS\"}"
            _ = try await server.submit(Submission(kind: WorldlineGateway.submissionKind, fields: [
                WorldlineGateway.encryptedInputField: try w.jwe(session),
                WorldlineGateway.clientMetaInfoField: Data(json.utf8).base64EncodedString(),
            ]), context: SubmitContext(intent: intent, attempt: attempt))
            let create = try #require(transport.requests.first { $0.method == .post && $0.url.path.hasSuffix("/payments") })
            #expect(create.headers["X-GCS-ClientMetaInfo"].flatMap { Data(base64Encoded: $0) } == Data(json.utf8))
            for (name, value) in create.headers {
                #expect(!value.contains("\r") && !value.contains("\n"), "\(name)")
                #expect(name.lowercased() != "x-injected")
            }
        }
    }

    @Test("a submit that is not an encrypted input (another kind; 4 or 6 segments; '+', '/', '=' or a line break in a segment; an empty segment): refused naming the field, nothing sent",
          arguments: StoreKind.available)
    func notAJWE(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let wrongKind = try await w.start(w.a)
            let answer = try await w.submit(wrongKind.attempt, bearer: wrongKind.secret,
                                            fields: [WorldlineGateway.encryptedInputField: try w.jwe(wrongKind.session)], kind: "card")
            #expect((400..<500).contains(answer.status) && answer.errorField == "submission.kind", "\(text(answer))")
            for shape in ["aaaa.bbbb.cccc.dddd", "aaaa.bbbb.cccc.dddd.eeee.ffff", "aa+a.bbbb.cccc.dddd.eeee", "aa/a.bbbb.cccc.dddd.eeee",
                          "aaa=.bbbb.cccc.dddd.eeee", "aaaa.bb\nbb.cccc.dddd.eeee", "aaaa..cccc.dddd.eeee"] {
                let s = try await w.start(w.a)
                let refused = try await w.submit(s.attempt, bearer: s.secret, fields: [WorldlineGateway.encryptedInputField: shape])
                #expect((400..<500).contains(refused.status) && refused.errorField == "submission.fields.\(WorldlineGateway.encryptedInputField)",
                        "\(shape): \(text(refused))")
                #expect(try await w.worldlinePayments(w.a.account, merchantReference: s.attempt.rawValue).isEmpty)
            }
        }
    }

    @Test("one payment's client secret submitting another payment's attempt: 404, that attempt not submitted and still payable by its own app",
          arguments: StoreKind.available)
    func anotherPaymentsSecret(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let mine = try await w.start(w.a)
            let victim = try await w.start(w.a)
            let answer = try await w.submit(victim.attempt, bearer: mine.secret, fields: [
                WorldlineGateway.encryptedInputField: try w.jwe(mine.session), WorldlineGateway.clientMetaInfoField: World.metaInfo,
            ])
            #expect(answer.status == 404, "\(text(answer))")
            #expect(try await w.attempt(victim.attempt).submittedAt == nil)
            #expect(try await w.pay(victim).status == 200)
            #expect(try await w.settle { try await w.attempt(victim.attempt).status == .paid })
        }
    }
}

/// A transport that keeps every request it forwards.
final class WorldlineForwardingRecorder: HTTPTransport, @unchecked Sendable {
    private let inner = URLSessionTransport()
    private let lock = NSLock()
    private var kept: [TransportRequest] = []

    var requests: [TransportRequest] { lock.withLock { kept } }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        lock.withLock { kept.append(request) }
        return try await inner.send(request)
    }
}
