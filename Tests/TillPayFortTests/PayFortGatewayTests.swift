import Foundation
import Testing
import Till
import TillGatewayKit
@testable import TillPayFort
@testable import TillPayFortServer
import TillTesting

let credentials = PayFortCredentials(accessCode: "zx0IPmPy5jp1vAz8Kpg7", merchantIdentifier: "CycHZxVj",
                                     requestPhrase: "req-phrase", responsePhrase: "resp-phrase")
let api = "/FortAPI/paymentApi"

/// A PayFort answer signed with the response phrase, as the gateway signs it.
func signedAnswer(_ pairs: [(String, String)], algorithm: PayFortSignature.Algorithm = .sha256) -> TransportResponse {
    var parameters = PayFortParameters(strings: pairs)
    parameters["signature"] = .string(PayFortSignature(algorithm).sign(parameters, phrase: credentials.responsePhrase))
    return TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: parameters.jsonData())
}

func intent(_ amount: String = "100.000", currency: String = "JOD", method: PaymentMethod = .card, action: PaymentAction = .sale,
            email: String? = "buyer@example.com", description: String? = "Order 42") throws -> PaymentIntent {
    PaymentIntent(merchantReference: "order-42", amount: try Money(decimal: amount, currency: Currency(code: currency)), method: method,
                  action: action, customer: Customer(email: email, ipAddress: "192.168.1.10"), description: description,
                  metadata: ["device_id": "ffffffff-a9fa-0b44-7b27-29e70033c587"])
}

@Suite("PayFort gateway")
struct PayFortGatewayTests {
    /// The server half, with credentials.
    func gateway(_ transport: RecordingTransport, credentials: PayFortCredentials = credentials) -> PayFortServer {
        PayFortServer(environment: .custom(URL(string: "https://payfort.test")!), credentials: credentials, transport: transport)
    }

    @Test("prepare: a signed SDK_TOKEN request; the token and the operation parameters go to the app")
    func prepare() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([
            ("service_command", "SDK_TOKEN"), ("access_code", credentials.accessCode), ("merchant_identifier", credentials.merchantIdentifier),
            ("language", "en"), ("device_id", "ffffffff-a9fa-0b44-7b27-29e70033c587"), ("sdk_token", "Dwp78q3"),
            ("response_code", "22000"), ("response_message", "Success"), ("status", "22"),
        ]))
        let attempt = AttemptReference.generate()
        let preparation = try await gateway(transport).prepare(AttemptContext(intent: try intent(), attempt: attempt,
                                                                              returnURL: URL(string: "shop://till/return?till_state=s")))
        let sent = try PayFortParameters.json(try #require(transport.requests.first?.body))
        #expect(sent.text("service_command") == "SDK_TOKEN")
        try PayFortSignature().verify(sent, phrase: credentials.requestPhrase)
        #expect(preparation.parameters["sdk_token"] == "Dwp78q3")
        #expect(preparation.parameters["merchant_reference"] == attempt.rawValue)
        #expect(preparation.parameters["amount"] == "100000")          // 100 JOD, three decimals
        #expect(preparation.parameters["command"] == "PURCHASE")
        #expect(preparation.parameters["access_code"] == nil && preparation.parameters["signature"] == nil)
        try transport.verify()
    }

    @Test("prepare refuses a response whose signature does not match, and reports PayFort's refusal as configuration")
    func prepareSignatures() async throws {
        let forged = RecordingTransport()
        var answer = signedAnswer([("status", "22"), ("sdk_token", "x"), ("response_code", "22000")])
        answer.body = Data(String(decoding: answer.body, as: UTF8.self).replacingOccurrences(of: "\"x\"", with: "\"y\"").utf8)
        forged.expect(.post, path: api, respond: answer)
        let error = await #expect(throws: CheckoutError.self) {
            try await gateway(forged).prepare(AttemptContext(intent: try intent(), attempt: .generate()))
        }
        #expect(error?.category == .configuration && error?.field == "signature")

        let refused = RecordingTransport()
        refused.expect(.post, path: api, respond: signedAnswer([("status", "00"), ("response_code", "00008"), ("response_message", "Signature mismatch")]))
        let mismatch = await #expect(throws: CheckoutError.self) {
            try await gateway(refused).prepare(AttemptContext(intent: try intent(), attempt: .generate()))
        }
        #expect(mismatch?.gatewayCode == "00008" && mismatch?.category == .configuration)

        let unreachable = RecordingTransport()
        unreachable.expect(.post, path: api, fail: TransportError(.timedOut, "slow"))
        let timeout = await #expect(throws: CheckoutError.self) {
            try await gateway(unreachable).prepare(AttemptContext(intent: try intent(), attempt: .generate()))
        }
        #expect(timeout?.category == .unavailable)   // an SDK token cannot move money
    }

    @Test("bad operation fields are refused before anything is sent, naming the field", arguments: [
        (try! intent(email: nil), "intent.customer.email"),
        (try! intent(email: "not an email"), "payfort.customer_email"),
        (try! intent(description: "Order <script>"), "payfort.order_description"),
        (try! intent(method: .mada, action: .authorize), "payfort.payment_option"),
        (try! intent(description: String(repeating: "a", count: 151)), "payfort.order_description"),
    ])
    func badFields(intent: PaymentIntent, field: String) async throws {
        let transport = RecordingTransport()
        let error = await #expect(throws: CheckoutError.self) {
            try await gateway(transport).prepare(AttemptContext(intent: intent, attempt: .generate()))
        }
        #expect(error?.field == field)
        #expect(transport.requests.isEmpty)
    }

    @Test("the seed's field rules", arguments: [
        ("merchant_reference", "XYZ9239-yu898", true), ("merchant_reference", "XYZ 9239", false),
        ("merchant_reference", String(repeating: "a", count: 41), false), ("amount", "10000", true), ("amount", "100.00", false),
        ("amount", "12345678901", false), ("customer_email", "customer+1@domain.com", true), ("token_name", "Op9Vmp@x_-.", true),
        ("phone_number", "+962 (79) 721-9966", true), ("phone_number", "0096279721996612345", true), ("phone_number", "00962797219966123456", false),
        ("merchant_extra1", "John;Smith/@,'", true), ("merchant_extra1", "John#", false), ("customer_ip", "192.178.1.10", true),
        ("order_description", "iPhone 6-S $10: #1, a/b", true), ("customer_name", "John Smith", true), ("currency", "AE1", false),
    ])
    func fieldRules(name: String, value: String, valid: Bool) {
        #expect(PayFortFields.check(name, value).isEmpty == valid, "\(name)=\(value)")
    }

    @Test("card entry is validated without echoing the number or the code")
    func card() {
        func issue(_ values: [String: String]) -> CheckoutError? {
            if case .failure(let error) = PayFortFields.card(FormValues(values)) { return error }
            return nil
        }
        #expect(issue(["card_number": "4005550000000001", "expiry": "12/30", "cvv": "123"]) == nil)
        #expect(issue(["card_number": "4005550000000002", "expiry": "12/30", "cvv": "123"])?.field == "card.card_number")
        #expect(issue(["card_number": "4005550000000001", "expiry": "12/19", "cvv": "123"])?.field == "card.expiry_date")
        #expect(issue(["card_number": "4005550000000001", "expiry": "13/30", "cvv": "123"])?.field == "card.expiry_date")
        #expect(issue(["card_number": "4005550000000001", "expiry": "12/30", "cvv": "12"])?.field == "card.card_security_code")
        let text = "\(String(describing: issue(["card_number": "4005550000000002", "expiry": "12/30", "cvv": "987"])))"
        #expect(!text.contains("4005550000000002") && !text.contains("987"))
        if case .success(let values) = PayFortFields.card(FormValues(["card_number": "4005 5500 0000 0001", "expiry": "07/31", "cvv": "123"])) {
            #expect(values["expiry_date"] == "3107" && values["card_number"] == "4005550000000001")
        }
    }

    func preparation() throws -> Preparation {
        try Preparation(gateway: "payfort", attempt: AttemptReference(rawValue: "att1"), method: .card, amount: intent().amount,
                        parameters: ["command": "PURCHASE", "merchant_reference": "att1", "amount": "100000", "currency": "JOD",
                                     "language": "en", "customer_email": "buyer@example.com", "sdk_token": "Dwp78q3", "eci": "ECOMMERCE"])
    }

    @Test("present: a card form, then the operation request with the token; answers become steps", arguments: [
        ("14", "14000", nil, "succeeded"), ("13", "13071", nil, "failed"), ("15", "15006", nil, "pending"),
        ("20", "20064", "https://payfort.test/3ds/1", "3ds"),
    ])
    func present(status: String, code: String, threeDS: String?, expected: String) async throws {
        let transport = RecordingTransport()
        var pairs = [("status", status), ("response_code", code), ("merchant_reference", "att1")]
        if let threeDS { pairs.append(("3ds_url", threeDS)) }
        transport.expect(.post, path: api, respond: signedAnswer(pairs))
        let gateway = PayFortGateway(environment: .custom(URL(string: "https://payfort.test")!), transport: transport)   // app: no credentials
        guard case .collect(let form) = try await gateway.present(try preparation(), input: .start) else { Issue.record("no form"); return }
        #expect(form.fields.filter(\.sensitive).map(\.id) == ["card_number", "cvv"])
        #expect(form.fieldsInDisplayOrder.map(\.id) == ["card_number", "expiry", "cvv", "card_holder_name"])
        #expect(form.fields.filter(\.obfuscate).map(\.id) == ["cvv"])
        #expect(form.fields.first?.mask == "{{9999}} {{9999}} {{9999}} {{9999}}{{999}}")
        #expect(form.fields.first?.validators.contains(FieldValidator("luhn")) == true)
        #expect(form.fields[1].validators == [FieldValidator("expirationDate")])
        #expect(form.fields[2].validators == [FieldValidator("length", parameters: ["minLength": "3", "maxLength": "4"])])
        let step = try await gateway.present(try preparation(), input: .submit(FormValues(["card_number": "4005550000000001", "expiry": "05/30", "cvv": "123"])))
        let sent = try PayFortParameters.json(try #require(transport.requests.first?.body))
        #expect(sent.text("sdk_token") == "Dwp78q3" && sent.text("signature") == nil && sent.text("access_code") == nil)
        #expect(sent.text("expiry_date") == "3005")
        switch (step, expected) {
        case (.completed(let outcome), let kind) where kind != "3ds": #expect(outcome.kind.rawValue == kind && outcome.gatewayCode == code)
        case (.openURL(let url, .threeDSecure), "3ds"): #expect(url.absoluteString == threeDS)
        default: Issue.record("unexpected step \(step)")
        }
    }

    @Test("return: the 3-D Secure redirect and the SDK callbacks")
    func returns() throws {
        let gateway = PayFortGateway(environment: .sandbox, transport: RecordingTransport())
        let back = URL(string: "shop://till/return?till_state=s&status=14&response_code=14000&merchant_reference=att1")!
        #expect(gateway.interpretReturn(.url(back), for: try preparation()).kind == .succeeded)
        let other = URL(string: "shop://till/return?till_state=s&status=14&merchant_reference=someone-else")!
        #expect(gateway.interpretReturn(.url(other), for: try preparation()).kind == .unknown)
        #expect(gateway.interpretReturn(.callback(code: "canceled", parameters: [:]), for: try preparation()).kind == .cancelled)
        #expect(gateway.interpretReturn(.callback(code: "failed", parameters: ["response_code": "13071"]), for: try preparation()).gatewayCode == "13071")
    }

    @Test("transaction feedback: the official notification vector verifies; tampered or unsigned ones do not")
    func feedback() throws {
        let phrase = PayFortCredentials(accessCode: "TestAccessCode", merchantIdentifier: "TestMerchantIdentifier",
                                        requestPhrase: "x", responsePhrase: "PASS")
        let gateway = PayFortServer(environment: .sandbox, credentials: phrase, transport: RecordingTransport())
        let body = "amount=243&response_code=00006&merchant_identifier=TestMerchantIdentifier&access_code=TestAccessCode&language=en"
            + "&command=PURCHASE&response_message=Technical+problem&merchant_reference=merchant_reference&customer_email=test%40test.com"
            + "&return_url=http%3A%2F%2Ftest.com&currency=USD&status=00&signature=b1869e119965f0b56be7d6401964003ce9ab65ed02b6ec2110eb3f94d136bd79"
        let verified = try gateway.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                                                           body: Data(body.utf8)))
        #expect(verified.report.attempt.rawValue == "merchant_reference")
        #expect(verified.report.status == .failed && verified.report.gatewayCode == "00006")
        #expect(verified.report.amount == Money(minorUnits: 243, currency: Currency.lookup("USD")!))
        #expect(verified.acknowledgement.statusCode == 200)
        for tampered in [body.replacingOccurrences(of: "amount=243", with: "amount=244"),
                         body.replacingOccurrences(of: "status=00", with: "status=14"),
                         String(body[..<body.range(of: "&signature=")!.lowerBound])] {
            #expect(throws: CheckoutError.self) {
                try gateway.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(tampered.utf8)))
            }
        }
        #expect(gateway.claimedAttempt(in: IncomingNotification(body: Data(body.utf8)))?.rawValue == "merchant_reference")
        // The app half has no Confirm step at all: it cannot verify (it holds no phrase).
        let app: any Checkout = PayFortGateway(environment: .sandbox, transport: RecordingTransport())
        #expect(!(app is any CheckoutServer))
    }

    @Test("feedback that repeats a key is refused, form or JSON, before its signature is even checked")
    func duplicateKeys() throws {
        let gateway = gateway(RecordingTransport())
        var parameters = PayFortParameters(strings: [("merchant_reference", "att1"), ("status", "00"), ("response_code", "13071")])
        parameters["signature"] = .string(PayFortSignature().sign(parameters, phrase: credentials.responsePhrase))
        let signed = "merchant_reference=att1&status=00&response_code=13071&signature=\(parameters.text("signature")!)"
        let form = ["Content-Type": "application/x-www-form-urlencoded"]
        #expect(try gateway.verifyNotification(IncomingNotification(headers: form, body: Data(signed.utf8))).report.status == .failed)
        // A second `status` the signature does not cover must never be read by whoever takes the last one.
        let error = #expect(throws: CheckoutError.self) {
            try gateway.verifyNotification(IncomingNotification(headers: form, body: Data((signed + "&status=14").utf8)))
        }
        #expect(error?.code == .duplicateField && error?.field == "body.status")
        let json = #"{"merchant_reference":"att1","status":"00","status":"14","signature":"x"}"#
        let jsonError = #expect(throws: CheckoutError.self) {
            try gateway.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/json"], body: Data(json.utf8)))
        }
        #expect(jsonError?.code == .duplicateField && jsonError?.field == "body.status")
        #expect(gateway.claimedAttempt(in: IncomingNotification(headers: form, body: Data((signed + "&status=14").utf8))) == nil)
    }

    @Test("parameters keep their order and number text, and sign nested objects in insertion order")
    func orderedParameters() throws {
        let body = #"{"b":1.50,"a":{"z":"1","y":""},"c":null,"d":[1,true]}"#
        let parameters = try PayFortParameters.json(Data(body.utf8))
        #expect(parameters.members.map(\.key) == ["b", "a", "c", "d"])
        #expect(parameters.text("b") == "1.50")
        #expect(String(decoding: parameters.jsonData(), as: UTF8.self) == body)
        #expect(PayFortSignature().stringToSign(parameters, phrase: "P") == "Pa={z=1, y=}b=1.50d=[1, true]P")
        #expect(throws: CheckoutError.self) { try PayFortParameters.json(Data("[1]".utf8)) }
    }

    @Test("CHECK_STATUS: a signed query; the transaction's status is the answer")
    func inquiry() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([
            ("query_command", "CHECK_STATUS"), ("merchant_reference", "att1"), ("status", "12"), ("response_code", "12000"),
            ("transaction_status", "14"), ("transaction_code", "14000"), ("fort_id", "1443796866848"), ("amount", "100000"), ("currency", "JOD"),
        ]))
        transport.expect(.post, path: api, respond: signedAnswer([("status", "00"), ("response_code", "00002"), ("merchant_reference", "nope")]))
        let report = try await gateway(transport).inquire(InquiryQuery(attempt: AttemptReference(rawValue: "att1")))
        #expect(report.status == .paid && report.gatewayReference == "1443796866848")
        #expect(report.amount == Money(minorUnits: 100_000, currency: Currency.lookup("JOD")!))
        let sent = try PayFortParameters.json(try #require(transport.requests.first?.body))
        #expect(sent.text("query_command") == "CHECK_STATUS")
        try PayFortSignature().verify(sent, phrase: credentials.requestPhrase)
        await #expect(throws: CheckoutError.self) { try await gateway(transport).inquire(InquiryQuery(attempt: AttemptReference(rawValue: "nope"))) }
    }

    @Test("statuses: success, failure, uncertain, and unknown codes that are never success")
    func statuses() {
        #expect(PayFortServer.status("14") == .paid)
        #expect(PayFortServer.status("02") == .authorized)
        #expect(PayFortServer.status("13") == .failed && PayFortServer.status("03") == .failed)
        for uncertain in ["15", "19", "20"] { #expect(PayFortServer.status(uncertain) == .pending) }
        #expect(!PayFortServer.status("77").isKnown && !PayFortServer.status("77").isFinal)
        let table = gateway(RecordingTransport()).decisionTable
        #expect(table.decision(for: "13006") == .retryNext)
        #expect(table.decision(for: "13071") == .doNotRetry && table.decision(for: "13064") == .doNotRetry)
        #expect(table.decision(for: "15006") == .doNotRetry)
    }
}
