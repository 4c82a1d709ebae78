import Foundation
import Testing
import Till
import TillGatewayKit
import TillPayFort
import TillSandbox
@testable import TillServer

/// Attacks on the PayFort notification endpoint that start from a message PayFort (the sandbox's
/// emulator, with the account's own response phrase) really signed: a small charge, or a decline.
/// Each forgery keeps the gateway's signature valid; the server must still not mark anything paid,
/// and the emulator's ledger shows that no money moved because of it.
@Suite("Attacks: forged PayFort feedback built from messages PayFort really signed", .serialized)
struct PayFortForgeryAttackTests {
    enum Encoding: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case form, json
        var testDescription: String { rawValue }
        var contentType: String { self == .form ? "application/x-www-form-urlencoded" : "application/json" }
        func body(_ pairs: [(String, String)]) -> Data { self == .form ? WireBody.form(pairs) : WireBody.json(pairs) }
    }

    /// A card number that fails PayFort's card check on the payment page: the tokenization is declined.
    static let refusedCard = "4000000000000001"

    /// The server refused `answer`'s message: at the door (4xx), or kept it and applied nothing
    /// (acknowledged so that the gateway stops retrying). Either way no notification about `attempts`
    /// was applied.
    func expectRefused(_ answer: ServerHarness.Answer, _ w: PayFortAttackWorld, _ attempts: [AttemptReference],
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let text = String(decoding: answer.body, as: UTF8.self)
        #expect((200..<300).contains(answer.status) || (400..<500).contains(answer.status), "HTTP \(answer.status): \(text)",
                sourceLocation: sourceLocation)
        for attempt in attempts {
            #expect(try await w.stored(attempt).applied == 0, "a forged message was applied to \(attempt): HTTP \(answer.status) \(text)",
                    sourceLocation: sourceLocation)
        }
    }

    /// A 1,000.00 SAR payment on the FORT SDK channel whose customer changed the amount in the SDK's
    /// request to 1.00 SAR (the app holds that request): PayFort charged 1.00 SAR and signed feedback
    /// saying so, naming the 1,000.00 SAR payment's attempt.
    func underpaid(_ w: PayFortAttackWorld) async throws -> (payment: String, attempt: AttemptReference, feedback: [String: String], body: Data) {
        let payment = try await w.createPayment(minor: 100_000)
        let (attempt, parameters) = try await w.prepare(payment)
        var request = parameters.filter { $0.key != PayFortGateway.integrationParameter }
        #expect(request["amount"] == "100000" && request["sdk_token"] != nil)
        request["amount"] = "100"
        let callback = try await PayFortDevice.payInSDK(payFortBaseURL: w.sandbox.payFortBaseURL, request: request,
                                                        deviceID: PayFortAttackWorld.deviceID,
                                                        card: PayFortDevice.Card(number: PayFortEmulator.TestCard.visa))
        #expect(callback.code == "success")
        let genuine = try #require(try await w.feedback(about: attempt).first)
        #expect(genuine.fields["amount"] == "100" && genuine.fields["status"] == "14" && genuine.fields["fort_id"] != nil)
        #expect(w.gatewayAccepts(genuine.fields))
        return (payment, attempt, genuine.fields, genuine.body)
    }

    /// What PayFort really charged: the one 1.00 SAR purchase.
    func expectOnlyTheSmallCharge(_ w: PayFortAttackWorld, sourceLocation: SourceLocation = #_sourceLocation) async {
        let ledger = await w.emulator.ledger
        #expect(ledger.count == 1 && ledger.first?.amountMinor == 100, "\(ledger)", sourceLocation: sourceLocation)
    }

    // MARK: Finding 1: a fraction of the amount

    @Test("finding 1: a genuine signed 1.00 SAR PURCHASE feedback re-posted with empty \"amount\" and \"fort_id\" repeated in front or behind: refused 4xx, nothing stored, the 1,000.00 SAR payment not paid, nothing more charged",
          arguments: StoreKind.available, Encoding.allCases)
    func emptyDuplicates(kind: StoreKind, encoding: Encoding) async throws {
        let w = try await PayFortAttackWorld(kind, integration: .mobileSDK)
        defer { Task { await w.stop() } }
        let (payment, attempt, genuine, _) = try await underpaid(w)
        let pairs = WireBody.sortedPairs(genuine)
        let empties = [("amount", ""), ("fort_id", "")]
        for forged in [empties + pairs, pairs + empties] {
            // PayFort's scheme cannot tell: under the rule that skips empty values the string to sign is the genuine one.
            #expect(throws: Never.self) {
                try PayFortSignature().verify(PayFortParameters(strings: forged), phrase: w.account.responsePhrase)
            }
            let answer = try await w.notify(encoding.body(forged), contentType: encoding.contentType)
            #expect((400..<500).contains(answer.status), "HTTP \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.errorCode == "duplicate_field")
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await w.status(of: payment) == "pending")
        #expect(try await w.stored(attempt).all == 0)
        await expectOnlyTheSmallCharge(w)
    }

    @Test("finding 1: the genuine 1.00 SAR feedback itself, on the 1,000.00 SAR attempt, is never applied: the payment is not paid",
          arguments: StoreKind.available)
    func genuineUnderpayment(kind: StoreKind) async throws {
        let w = try await PayFortAttackWorld(kind, integration: .mobileSDK)
        defer { Task { await w.stop() } }
        let (payment, attempt, _, body) = try await underpaid(w)
        let answer = try await w.notify(body, contentType: "application/x-www-form-urlencoded")
        try await expectRefused(answer, w, [attempt])
        // The server may ask PayFort (CHECK_STATUS answers 1.00 SAR captured): still not this payment's amount.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await w.status(of: payment) == "pending")
        #expect(try await w.stored(attempt).applied == 0)
        await expectOnlyTheSmallCharge(w)
    }

    // MARK: Finding 2: a decline re-cut into a success

    /// A declined tokenization return PayFort signed for a new attempt of a payment of `minor`,
    /// offering `returnURL` (which PayFort echoes inside the signed message).
    func declinedReturn(_ w: PayFortAttackWorld, minor: Int64, returnURL: String) async throws
        -> (payment: String, attempt: AttemptReference, genuine: [String: String]) {
        let payment = try await w.createPayment(minor: minor)
        let (attempt, form) = try await w.prepare(payment, returnURLs: [returnURL])
        #expect(form["return_url"] == returnURL)
        let back = try await w.tokenize(form, card: Self.refusedCard)
        let genuine = try PayFortParameters.query(of: back, returnURL: URL(string: returnURL)).strings
        #expect(genuine["merchant_reference"] == attempt.rawValue && genuine["return_url"] == returnURL)
        #expect(genuine["status"] != nil && genuine["status"] != "18" && genuine["amount"] == nil, "\(genuine)")
        #expect(w.gatewayAccepts(genuine))
        return (payment, attempt, genuine)
    }

    @Test("finding 2: a signed declined return re-cut into status=14 plus a junk key (the return URL the app offered carried the text): the attempt stays failed, nothing charged",
          arguments: StoreKind.available, Encoding.allCases)
    func recutDecline(kind: StoreKind, encoding: Encoding) async throws {
        let w = try await PayFortAttackWorld(kind, integration: .merchantPage)
        defer { Task { await w.stop() } }
        let (payment, attempt, genuine) = try await declinedReturn(w, minor: 2_500,
                                                                   returnURL: "https://shop.example/checkout/return?next=status=14status_x=done")
        // The app hands the declined return to its server, as it does: the attempt fails.
        let submission = try JSONSerialization.data(withJSONObject: ["kind": PayFortGateway.tokenizationSubmission, "fields": genuine])
        let submitted = try await w.send("POST", "v1/attempts/\(attempt.rawValue)/submit", body: submission)
        #expect((400..<500).contains(submitted.status), "\(String(decoding: submitted.body, as: UTF8.self))")
        #expect(try await w.status(of: payment) == "failed")

        let forged = try #require(Recut.cut(genuine, absorbing: "return_url", injected: [("status", "14")], junk: "status_x"),
                                  "the signed text does not carry the injected pairs: \(Recut.signedText(genuine))")
        #expect(forged["status"] == "14" && forged["merchant_reference"] == attempt.rawValue)
        #expect(w.gatewayAccepts(forged), "the re-cut must carry a signature PayFort accepts")
        let answer = try await w.notify(encoding.body(WireBody.sortedPairs(forged)), contentType: encoding.contentType)
        try await expectRefused(answer, w, [attempt])
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await w.status(of: payment) == "failed")
        #expect(await w.emulator.ledger.isEmpty)
    }

    @Test("finding 2: the re-cut naming a different, pending 9,999.00 SAR payment (its attempt reference and status=14 carried in the small attempt's return URL): it stays pending, nothing charged",
          arguments: StoreKind.available, Encoding.allCases)
    func recutOtherPayment(kind: StoreKind, encoding: Encoding) async throws {
        let w = try await PayFortAttackWorld(kind, integration: .merchantPage)
        defer { Task { await w.stop() } }
        let big = try await w.createPayment(minor: 999_900)
        let (bigAttempt, _) = try await w.prepare(big, returnURLs: ["https://shop.example/checkout/return"])
        let offered = "https://shop.example/checkout/return?next=merchant_reference=\(bigAttempt.rawValue)response_code=14000status=14status_x=done"
        let (_, attempt, genuine) = try await declinedReturn(w, minor: 100, returnURL: offered)

        let forged = try #require(Recut.cut(genuine, absorbing: "merchant_identifier",
                                            injected: [("merchant_reference", bigAttempt.rawValue), ("response_code", "14000"), ("status", "14")],
                                            junk: "status_x"),
                                  "the signed text does not carry the injected pairs: \(Recut.signedText(genuine))")
        #expect(forged["merchant_reference"] == bigAttempt.rawValue && forged["status"] == "14" && forged["response_code"] == "14000")
        #expect(w.gatewayAccepts(forged), "the re-cut must carry a signature PayFort accepts")
        let answer = try await w.notify(encoding.body(WireBody.sortedPairs(forged)), contentType: encoding.contentType)
        try await expectRefused(answer, w, [bigAttempt, attempt])
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await w.status(of: big) == "pending")
        #expect(await w.emulator.ledger.isEmpty)
    }

    @Test("finding 2: the re-cut naming a different, pending 9,999.00 SAR payment with its exact amount and currency (all carried in the small attempt's return URL, absorbed from access_code on): it stays pending, nothing charged",
          arguments: StoreKind.available, Encoding.allCases)
    func recutOtherPaymentWithAmount(kind: StoreKind, encoding: Encoding) async throws {
        // The whole attack: with the big payment's own amount and currency the forged report would pass the
        // money rule, so only the PayFort module (or the server's own inquiry) can refuse it.
        let w = try await PayFortAttackWorld(kind, integration: .merchantPage)
        defer { Task { await w.stop() } }
        let big = try await w.createPayment(minor: 999_900)
        let (bigAttempt, _) = try await w.prepare(big, returnURLs: ["https://shop.example/checkout/return"])
        let injected = [("amount", "999900"), ("currency", "SAR"), ("merchant_reference", bigAttempt.rawValue), ("response_code", "14000"),
                        ("status", "14")]
        let offered = "https://shop.example/checkout/return?next=" + injected.map { $0.0 + "=" + $0.1 }.joined() + "status_x=done"
        let (_, attempt, genuine) = try await declinedReturn(w, minor: 100, returnURL: offered)

        let forged = try #require(Recut.cut(genuine, absorbing: "access_code", injected: injected, junk: "status_x"),
                                  "the signed text does not carry the injected pairs: \(Recut.signedText(genuine))")
        #expect(forged["amount"] == "999900" && forged["currency"] == "SAR" && forged["merchant_reference"] == bigAttempt.rawValue)
        #expect(w.gatewayAccepts(forged), "the re-cut must carry a signature PayFort accepts")
        let answer = try await w.notify(encoding.body(WireBody.sortedPairs(forged)), contentType: encoding.contentType)
        try await expectRefused(answer, w, [bigAttempt, attempt])
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await w.status(of: big) == "pending")
        #expect(await w.emulator.ledger.isEmpty)
    }

    @Test("failed → paid: a success signed with PayFort's response phrase for an attempt PayFort declined is kept, never applied by itself; the payment stays failed",
          arguments: StoreKind.available)
    func failedToPaid(kind: StoreKind) async throws {
        let w = try await PayFortAttackWorld(kind, integration: .merchantPage)
        defer { Task { await w.stop() } }
        let returnURL = "https://shop.example/checkout/return"
        let payment = try await w.createPayment(minor: 2_500)
        let (attempt, form) = try await w.prepare(payment, returnURLs: [returnURL])
        let back = try await w.tokenize(form, card: PayFortEmulator.TestCard.declined)
        let token = try PayFortParameters.query(of: back, returnURL: URL(string: returnURL)).strings
        #expect(token["status"] == "18")
        let submission = try JSONSerialization.data(withJSONObject: ["kind": PayFortGateway.tokenizationSubmission, "fields": token])
        let submitted = try await w.send("POST", "v1/attempts/\(attempt.rawValue)/submit", body: submission)
        #expect(submitted.status == 402, "\(String(decoding: submitted.body, as: UTF8.self))")
        #expect(try await w.status(of: payment) == "failed")
        let decline = try #require(try await w.feedback(about: attempt).first).fields
        #expect(decline["response_code"] == "13666" && decline["amount"] == "2500")

        var success = decline
        success["status"] = "14"
        success["response_code"] = "14000"
        success["response_message"] = "Success"
        success["authorization_code"] = "123456"
        let signed = w.signedByGateway(success)
        let answer = try await w.notify(WireBody.form(WireBody.sortedPairs(signed)), contentType: "application/x-www-form-urlencoded")
        #expect(answer.status == 200, "a verified notification is acknowledged: \(String(decoding: answer.body, as: UTF8.self))")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await w.status(of: payment) == "failed")
        #expect(try await w.stored(attempt).applied == 0)
        #expect(try await count(w.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND outcome = 'needs_inquiry'") == 1)
        #expect(await w.emulator.ledger.isEmpty)
    }

    @Test("malformed, deeply nested and oversized PayFort feedback bodies are refused 4xx before any signature check; nothing stored; the server keeps answering",
          arguments: StoreKind.available)
    func hostileFeedbackBodies(kind: StoreKind) async throws {
        let w = try await PayFortAttackWorld(kind, integration: .merchantPage)
        defer { Task { await w.stop() } }
        let payment = try await w.createPayment(minor: 2_500)
        let (attempt, _) = try await w.prepare(payment, returnURLs: ["https://shop.example/checkout/return"])
        let reference = #""merchant_reference":"\#(attempt.rawValue)","status":"14""#
        let bodies: [(String, Data)] = [
            ("application/json", Data(("{" + reference + #","x":"# + String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000) + "}").utf8)),
            ("application/json", Data(("{" + reference + #","x":"# + String(repeating: #"{"a":"#, count: 2_000) + "1" + String(repeating: "}", count: 2_000) + "}").utf8)),
            ("application/json", Data(String(repeating: "[", count: 15_000).utf8)),
            ("application/json", Data(("{" + reference).utf8)),
            ("application/json", Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x22, 0x22, 0x7D])),
            ("application/x-www-form-urlencoded", Data("merchant_reference=\(attempt.rawValue)&status=14&%ZZ=1".utf8)),
            ("application/x-www-form-urlencoded", Data(("merchant_reference=\(attempt.rawValue)&status=14&x=" + String(repeating: "a", count: 2_000_000)).utf8)),
        ]
        for (contentType, body) in bodies {
            let answer = try await w.notify(body, contentType: contentType)
            #expect((400..<500).contains(answer.status), "\(body.prefix(40)): HTTP \(answer.status)")
        }
        #expect(try await w.send("GET", "healthz", authorized: false).status == 200)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await w.stored(attempt).all == 0)
        #expect(try await w.status(of: payment) == "pending")
        #expect(await w.emulator.ledger.isEmpty)
    }
}
