import Crypto
import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
@testable import TillServer
import TillTesting

/// What an app (or anyone holding its credentials) can send the merchant server, and what it gets back:
/// every refusal names the exact field, nothing is stored half-done, nothing unknown is silently dropped.
@Suite("Hostile input to the app-facing API, over loopback")
struct HostileInputTests {
    static let card = "4111111111111111"

    @Test("unknown keys are refused, each named by its path: in the intent, the customer, the amount, the prepare body, an outcome and a submission")
    func unknownKeys() async throws {
        let server = try await ServerHarness(.sqlite)
        let intent = #"{"merchantReference":"o-1","amount":{"value":100,"currency":"USD"},"method":"card""#
        let cases: [(String, String, String)] = [
            ("v1/payments", intent + #","amountt":5}"#, "body.amountt"),
            ("v1/payments", intent + #","customer":{"email":"a@b.example","nickname":"x"}}"#, "body.customer.nickname"),
            ("v1/payments", #"{"merchantReference":"o-1","amount":{"value":100,"currency":"USD","fee":1},"method":"card"}"#, "body.amount.fee"),
        ]
        for (path, body, field) in cases {
            let answer = try await server.send("POST", path, json: body)
            #expect(answer.status == 400 && answer.errorCode == "invalid_field" && answer.errorField == field,
                    "\(field): \(String(decoding: answer.body, as: UTF8.self))")
        }
        let (_, attempt, _) = try await server.createAndPrepare()
        let created = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-2"))
        let id = try #require(created.json["id"] as? String)
        let prepare = try await server.send("POST", "v1/payments/\(id)/attempts", json: #"{"returnURLs":[],"gateway":"other"}"#)
        #expect(prepare.status == 400 && prepare.errorField == "body.gateway")
        let outcome = try await server.send("POST", "v1/attempts/\(attempt.rawValue)/outcome", json: #"{"kind":"succeeded","status":"paid"}"#)
        #expect(outcome.status == 400 && outcome.errorField == "body.status")
        let submission = try await server.send("POST", "v1/attempts/\(attempt.rawValue)/submit", json: #"{"kind":"x","fields":{},"amount":1}"#)
        #expect(submission.status == 400 && submission.errorField == "body.amount")
        #expect(try await count(server.store, "till_payments") == 2)
        await server.stop()
    }

    @Test("amounts that are not integer minor units, and enum values Till does not know, name the field, not the body")
    func unreadableValues() async throws {
        let server = try await ServerHarness(.sqlite)
        let cases: [(String, String, String)] = [
            (#""amount":{"value":10.5,"currency":"USD"},"method":"card""#, "body.amount.value", "invalid_amount"),
            (#""amount":{"value":-0.01,"currency":"USD"},"method":"card""#, "body.amount.value", "invalid_amount"),
            (#""amount":{"value":92233720368547758070,"currency":"USD"},"method":"card""#, "body.amount.value", "invalid_amount"),
            (#""amount":{"value":"100","currency":"USD"},"method":"card""#, "body.amount.value", "invalid_field"),
            (#""amount":{"value":100,"currency":"USD"},"method":"card","action":"steal""#, "body.action", "invalid_field"),
        ]
        for (fields, field, code) in cases {
            let answer = try await server.send("POST", "v1/payments", json: #"{"merchantReference":"o-1","# + fields + "}")
            #expect(answer.status == 400 && answer.errorField == field && answer.errorCode == code,
                    "\(fields): \(String(decoding: answer.body, as: UTF8.self))")
        }
        let notJSON = try await server.send("POST", "v1/payments", json: "{nope")
        #expect(notJSON.errorCode == "malformed_json" && notJSON.errorField == "body")
        // An enum value Till does not know lists the ones it does.
        let action = try await server.send("POST", "v1/payments", json: #"{"merchantReference":"o-1","amount":{"value":100,"currency":"USD"},"method":"card","action":"auth"}"#)
        #expect(action.errorField == "body.action" && (action.json["error"] as? [String: Any])?["message"] as? String
                == #""auth" is not one of: sale, authorize, verify"#, "\(String(decoding: action.body, as: UTF8.self))")
        // An unknown route answers in the API's error shape, not an empty body.
        let nowhere = try await server.send("GET", "v1/paymnts")
        #expect(nowhere.status == 404 && nowhere.errorCode == "not_found" && nowhere.headers["content-type"] == "application/json")
        #expect(try await count(server.store, "till_payments") == 0)
        await server.stop()
    }

    @Test("a key given twice in any API body is refused, named by its path, before anything is stored or sent")
    func duplicateKeys() async throws {
        let server = try await ServerHarness(.sqlite)
        let cases: [(String, String)] = [
            (#"{"merchantReference":"o-1","amount":{"value":100,"currency":"USD"},"amount":{"value":1,"currency":"USD"},"method":"card"}"#, "body.amount"),
            (#"{"merchantReference":"o-1","amount":{"value":100,"value":1,"currency":"USD"},"method":"card"}"#, "body.amount.value"),
            (#"{"merchantReference":"o-1","amount":{"value":100,"currency":"USD"},"method":"card","customer":{"email":"a@b.example","email":"c@d.example"}}"#,
             "body.customer.email"),
            (#"{"merchantReference":"o-1","merchantReference":"o-2","amount":{"value":100,"currency":"USD"},"method":"card"}"#, "body.merchantReference"),
        ]
        for (body, field) in cases {
            let answer = try await server.send("POST", "v1/payments", json: body)
            #expect(answer.status == 400 && answer.errorCode == "duplicate_field" && answer.errorField == field,
                    "\(field): \(String(decoding: answer.body, as: UTF8.self))")
        }
        // Bodies JSONDecoder would take but RFC 8259 does not: each hides a second amount behind something the strict
        // reader refuses, so it is refused whole instead of read past the duplicate check.
        let twice = #"{"merchantReference":"o-1","method":"card","amount":{"value":10000,"currency":"USD"},"amount":{"value":1,"currency":"USD"}}"#
        var utf16 = Data([0xFF, 0xFE])
        utf16.append(twice.data(using: .utf16LittleEndian)!)
        let sneaky: [(String, Data)] = [
            ("a byte-order mark", Data([0xEF, 0xBB, 0xBF]) + Data(twice.utf8)),
            ("a trailing comma", Data(twice.replacingOccurrences(of: #""method":"card","#, with: #""customer":{"email":"a@b.example",},"method":"card","#).utf8)),
            ("UTF-16", utf16),
            ("a leading zero", Data(#"{"merchantReference":"o-1","method":"card","amount":{"value":010000,"currency":"USD"}}"#.utf8)),
        ]
        for (what, body) in sneaky {
            let answer = try await server.send("POST", "v1/payments", body: body)
            #expect(answer.status == 400 && answer.errorCode == "malformed_json" && answer.errorField == "body",
                    "\(what): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        #expect(try await count(server.store, "till_payments") == 0)
        let created = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-dup"))
        let id = try #require(created.json["id"] as? String)
        let prepare = try await server.send("POST", "v1/payments/\(id)/attempts", json: #"{"customerRequested":true,"customerRequested":false}"#)
        #expect(prepare.status == 400 && prepare.errorCode == "duplicate_field" && prepare.errorField == "body.customerRequested")
        #expect(try await count(server.store, "till_attempts") == 0)
        let (_, attempt, _) = try await server.createAndPrepare()
        let outcome = try await server.send("POST", "v1/attempts/\(attempt.rawValue)/outcome",
                                            json: #"{"kind":"failed","kind":"succeeded"}"#)
        #expect(outcome.status == 400 && outcome.errorField == "body.kind")
        let submission = try await server.send("POST", "v1/attempts/\(attempt.rawValue)/submit",
                                               json: #"{"kind":"sealed_card","fields":{"sealed":"a","sealed":"b"}}"#)
        #expect(submission.status == 400 && submission.errorField == "body.fields.sealed")
        #expect(try await count(server.store, "till_attempts", where: "submitted_at IS NOT NULL OR client_outcome IS NOT NULL") == 0)
        await server.stop()
    }

    @Test("every answer says X-Content-Type-Options: nosniff, errors and notification acknowledgements included")
    func noSniff() async throws {
        let server = try await ServerHarness(.sqlite)
        let (_, attempt, gateway) = try await server.createAndPrepare()
        let answers = [
            try await server.send("GET", "healthz"),
            try await server.send("POST", "v1/payments", json: "{nope"),
            try await server.send("GET", "v1/attempts/\(attempt.rawValue)"),
            try await server.notify(server.gateway(gateway).signedNotification(
                for: StatusReport(gateway: gateway, attempt: attempt, status: .pending, eventID: "n1")), gateway: gateway),
        ]
        for answer in answers { #expect(answer.headers["x-content-type-options"] == "nosniff", "HTTP \(answer.status)") }
        await server.stop()
    }

    @Test("a payment no gateway of the merchant could ever take is refused at create, naming the field and what the gateways do take, before it is stored")
    func noEligibleGateway() async throws {
        let server = try await ServerHarness(.sqlite)
        let methods = FakeGateway().capabilities.methods.map(\.rawValue).sorted().joined(separator: ", ")
        let wechat = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-wechat", method: "wechat"))
        #expect(wechat.status == 422 && wechat.errorCode == "unsupported_method" && wechat.errorField == "body.method")
        #expect(((wechat.json["error"] as? [String: Any])?["message"] as? String)?.hasSuffix("they take: \(methods)") == true,
                "\(String(decoding: wechat.body, as: UTF8.self))")
        #expect(try await count(server.store, "till_payments") == 0)
        // The same merchant reference is still free: nothing was spent.
        #expect(try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-wechat")).status == 201)
        // A replay of a create that was stored answers as the first time, even if no gateway could take it now: with
        // the key, the store decides (replay), not the check.
        let key = ["Idempotency-Key": "replay-\(UUID().uuidString)"]
        let first = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-replay"), headers: key)
        #expect(first.status == 201)
        #expect(try await server.store.hasIdempotencyKey(key["Idempotency-Key"]!, merchant: server.merchant))
        #expect(!(try await server.store.hasIdempotencyKey("never-used", merchant: server.merchant)))
        // The configuration changes: the merchant's gateway now takes only WeChat Pay. The replay still gets its payment;
        // a new card payment is refused.
        var narrowed = MerchantConfiguration(id: server.merchant, apiKey: CredentialReference(env: "API_KEY"),
                                             gateways: [GatewayConfiguration(id: "fake", module: "fake",
                                                                                         credentials: ["notification_secret": CredentialReference(env: "SECRET")],
                                                                                         limits: CapabilityLimits(methods: [.wechatPay]))],
                                             routing: RoutingConfiguration(fallback: ["fake"]), returnURLSchemes: ["shop"])
        narrowed.retry = RetryPolicy(maxAttempts: 3)
        let state = try ServerState(configuration: TillConfiguration(merchants: [narrowed],
                                                                     server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused")),
                                    plugins: [FakeGateway.plugin], environment: ["API_KEY": server.apiKey, "SECRET": "s"])
        let service = PaymentService(state: state, store: server.store)
        let merchant = try #require(state.merchants.first)
        let intent = try JSONDecoder().decode(PaymentIntent.self, from: Data(ServerHarness.intentJSON("o-replay").utf8))
        let replayed = try await service.createPayment(intent, merchant: merchant, idempotencyKey: key["Idempotency-Key"])
        #expect(replayed.replayed && replayed.payment.id == first.json["id"] as? String)
        await #expect(throws: ServiceError.self) {
            _ = try await service.createPayment(try JSONDecoder().decode(PaymentIntent.self, from: Data(ServerHarness.intentJSON("o-new").utf8)),
                                                merchant: merchant, idempotencyKey: nil)
        }
        await server.stop()
    }

    @Test("a prepare the gateway refuses for its own input is a mistake, not a try: 422 naming the field, the attempt closed as input refused, the same gateway may be tried again; ten such refusals end it")
    func prepareRefusedInputDoesNotSpendThePayment() async throws {
        let server = try await ServerHarness(.sqlite, gateways: ["needs-email", "other"])
        await server.gateway("needs-email").ledger.enqueue([.refuseInput(field: "customer.email")])
        let created = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-email"))
        let id = try #require(created.json["id"] as? String)
        var answer = try await server.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        // The fallback list puts the gateway that needs the e-mail first.
        #expect(answer.status == 422)
        if answer.status == 422 {
            #expect(answer.status == 422 && answer.errorCode == "missing_field" && answer.errorField == "intent.customer.email",
                    "\(String(decoding: answer.body, as: UTF8.self))")
            let stored = try #require(try await server.store.payment(id: id, merchant: server.merchant))
            #expect(stored.attempts.count == 1 && stored.attempts[0].gatewayCode == AttemptFailure.inputRefusedCode)
            // Not `not_retryable`, and not a try: once the input is right, the same gateway takes the attempt.
            answer = try await server.send("POST", "v1/payments/\(id)/attempts", json: "{}")
            #expect(answer.status == 201 && answer.json["gateway"] as? String == "needs-email", "\(String(decoding: answer.body, as: UTF8.self))")
        }
        // An app that keeps making the same mistake cannot grow a payment without end.
        let other = try #require(try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-loop")).json["id"] as? String)
        await server.gateway("needs-email").ledger.enqueue(Array(repeating: .refuseInput(field: "customer.email"), count: AttemptPolicy.maxInputRefusals))
        for _ in 0..<AttemptPolicy.maxInputRefusals {
            #expect(try await server.send("POST", "v1/payments/\(other)/attempts", json: "{}").status == 422)
        }
        let exhausted = try await server.send("POST", "v1/payments/\(other)/attempts", json: "{}")
        #expect(exhausted.status == 409 && exhausted.errorCode == "attempts_exhausted")
        await server.stop()
    }

    @Test("a merchant's amount ceiling: a payment above it is refused before anything is stored")
    func amountCeiling() async throws {
        let server = try await ServerHarness(.sqlite, merchantSettings: { $0.maxAmounts = ["USD": 100_000] })
        let over = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("big", minor: 100_001))
        #expect(over.status == 422 && over.errorCode == "invalid_amount" && over.errorField == "body.amount.value")
        let at = try await server.send("POST", "v1/payments", json: ServerHarness.intentJSON("ok", minor: 100_000))
        #expect(at.status == 201)
        #expect(try await count(server.store, "till_payments") == 1)
        var configuration = MerchantConfiguration(id: "m", gateways: [GatewayConfiguration(id: "fake", module: "fake")],
                                                  maxAmounts: ["XXQ": 1, "EUR": 0])
        configuration.routing = RoutingConfiguration(fallback: ["fake"])
        let fields = configuration.validate(path: "merchants[0]", modules: ["fake": FakeGateway().capabilities]).map(\.field)
        #expect(fields.contains("merchants[0].maxAmounts.XXQ") && fields.contains("merchants[0].maxAmounts.EUR"))
        await server.stop()
    }

    @Test("a card number typed into free text is stored masked: an outcome message, a description, metadata")
    func cardNumbersMasked() async throws {
        let server = try await ServerHarness(.sqlite)
        let body = #"{"merchantReference":"o-pan","amount":{"value":2500,"currency":"USD"},"method":"card","description":"card \#(Self.card)","metadata":{"note":"\#(Self.card)"}}"#
        let created = try await server.send("POST", "v1/payments", json: body)
        #expect(created.status == 201)
        #expect(!String(decoding: created.body, as: UTF8.self).contains(Self.card))
        let id = try #require(created.json["id"] as? String)
        let prepared = try await server.send("POST", "v1/payments/\(id)/attempts", json: "{}")
        let attempt = try #require(prepared.json["attempt"] as? String)
        let outcome = try await server.send("POST", "v1/attempts/\(attempt)/outcome",
                                            json: #"{"kind":"failed","message":"my card \#(Self.card) was refused"}"#)
        #expect(outcome.status == 202)
        let read = try await server.send("GET", "v1/attempts/\(attempt)")
        let text = String(decoding: read.body, as: UTF8.self)
        #expect(!text.contains(Self.card) && text.contains("411111******1111"))
        #expect(try await count(server.store, "till_attempts", where: "client_outcome LIKE '%\(Self.card)%'") == 0)
        #expect(try await count(server.store, "till_payments", where: "intent_json LIKE '%\(Self.card)%'") == 0)
        await server.stop()
    }

    @Test("a card number in the customer's names, e-mail, a phone field too long for a phone, or a metadata key is stored masked; identifiers, phone numbers and order numbers are kept")
    func cardNumbersInCustomerFieldsMasked() async throws {
        let server = try await ServerHarness(.sqlite)
        let card = Self.card
        let body = #"{"merchantReference":"o-pan-2","amount":{"value":2500,"currency":"USD"},"method":"card","# +
            #""customer":{"reference":"1311768467294899695","firstName":"Ann \#(card)","lastName":"\#(card)","phone":"\#(card)","email":"\#(card)@mail.example"},"# +
            #""metadata":{"card \#(card)":"x","order":"100200300","phone":"+1 415 555 0100"}}"#
        let created = try await server.send("POST", "v1/payments", json: body)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        #expect(!String(decoding: created.body, as: UTF8.self).contains(card))
        #expect(try await count(server.store, "till_payments", where: "intent_json LIKE '%\(card)%'") == 0)
        for kept in ["card 411111******1111", "Ann 411111******1111", "411111******1111@mail.example", "100200300", "+1 415 555 0100",
                     // A numeric customer id that happens to pass the Luhn check is an identifier: kept, never merged with another.
                     "1311768467294899695"] {
            #expect(try await count(server.store, "till_payments", where: "intent_json LIKE '%\(kept)%'") == 1, "\(kept)")
        }
        // A phone of 15 digits or fewer is a phone number, even one that passes the Luhn check.
        let phone = #"{"merchantReference":"o-pan-4","amount":{"value":2500,"currency":"USD"},"method":"card","customer":{"phone":"+86 138 1234 5678"}}"#
        #expect(try await server.send("POST", "v1/payments", json: phone).status == 201)
        #expect(try await count(server.store, "till_payments", where: "intent_json LIKE '%+86 138 1234 5678%'") == 1)
        // Two keys that become one once masked are refused, the key named masked.
        let clash = #"{"merchantReference":"o-pan-3","amount":{"value":2500,"currency":"USD"},"method":"card","metadata":{"\#(card)":"a","4111 1111 1111 1111":"b"}}"#
        let refused = try await server.send("POST", "v1/payments", json: clash)
        #expect(refused.status == 400 && refused.errorField == "body.metadata.411111******1111" && !String(decoding: refused.body, as: UTF8.self).contains(card))
        await server.stop()
    }

    @Test("a gateway notification carrying a clear card number is stored with it masked; one without is stored byte for byte")
    func rawBodiesMasked() async throws {
        let server = try await ServerHarness(.sqlite)
        let (_, attempt, gateway) = try await server.createAndPrepare()
        func signed(_ object: [String: Any]) throws -> IncomingNotification {
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            let mac = HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: Data(ServerHarness.secret.utf8)))
            return IncomingNotification(headers: ["content-type": "application/json", "x-fake-signature": Hex.encode(mac)], body: data)
        }
        let pending = try signed(["attempt": attempt.rawValue, "status": "pending", "eventId": "e1", "card_number": Self.card])
        #expect(try await server.notify(pending, gateway: gateway).status == 200)
        #expect(try await count(server.store, "till_notifications", where: "CAST(body AS TEXT) LIKE '%\(Self.card)%'") == 0)
        #expect(try await count(server.store, "till_notifications", where: "CAST(body AS TEXT) LIKE '%411111******1111%'") == 1)
        let plain = try signed(["attempt": attempt.rawValue, "status": "pending", "eventId": "e2", "card_number": "411111******1111"])
        #expect(try await server.notify(plain, gateway: gateway).status == 200)
        #expect(Redactor().maskingCardFields(in: plain.body) == plain.body)
        #expect(Redactor().maskingCardFields(in: Data("a=1&card_number=4111+1111+1111+1111&b=2".utf8))
            == Data("a=1&card_number=411111%2A%2A%2A%2A%2A%2A1111&b=2".utf8))
        await server.stop()
    }
}

@Suite("Forged notifications cannot make the server call gateways")
struct ForgedNotificationTests {
    @Test("100 bad-signature notifications naming one pending attempt cause one inquiry; naming 40 attempts, at most the burst")
    func inquiriesBounded() async throws {
        // Time stands still (a virtual clock), so the budget does not refill while the test runs, however slow the machine.
        // The per-address limit on refused notifications is a layer of its own (RateLimitTests), off here: this is the
        // inquiry budget behind it, which holds for forgeries spread over many addresses.
        let server = try await ServerHarness(.sqlite, clock: VirtualClock(), settings: { $0.rateLimits.rejectedNotificationsPerAddress = nil })
        let (payment, attempt, gateway) = try await server.createAndPrepare()
        func forged(_ reference: AttemptReference, _ n: Int) -> IncomingNotification {
            IncomingNotification(headers: ["content-type": "application/json", "x-fake-signature": String(repeating: "0", count: 64)],
                                 body: Data(#"{"attempt":"\#(reference.rawValue)","eventId":"f\#(n)","status":"paid","amount":{"value":2500,"currency":"USD"}}"#.utf8))
        }
        for n in 0..<100 { #expect(try await server.notify(forged(attempt, n), gateway: gateway).status == 401) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(await server.gateway(gateway).ledger.inquiries <= 1)
        #expect(try await server.status(of: payment) == "pending")
        var others: [AttemptReference] = []
        for _ in 0..<40 { others.append(try await server.createAndPrepare().1) }
        let before = await server.gateway(gateway).ledger.inquiries
        for (n, other) in others.enumerated() { _ = try await server.notify(forged(other, n), gateway: gateway) }
        try await Task.sleep(for: .milliseconds(200))
        let caused = await server.gateway(gateway).ledger.inquiries - before
        #expect(caused >= 1 && caused <= 10, "\(caused) inquiries")
        await server.stop()
    }
}
