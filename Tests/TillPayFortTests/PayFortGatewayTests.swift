import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillPayFort
@testable import TillPayFortServer
import TillTesting

let credentials = PayFortCredentials(accessCode: "zx0IPmPy5jp1vAz8Kpg7", merchantIdentifier: "CycHZxVj",
                                     requestPhrase: "req-phrase", responsePhrase: "resp-phrase")
let api = "/FortAPI/paymentApi"
let testBase = URL(string: "https://payfort.test")!
let returnURL = URL(string: "shop://till/return?till_state=AbC-d_9")!

/// Parameters signed with `phrase` (the response phrase by default), as PayFort signs them. PayFort
/// echoes the account's `access_code` and `merchant_identifier` in every message: they are added
/// (after `pairs`) unless given or `account` is false.
func signedParameters(_ pairs: [(String, String)], phrase: String = credentials.responsePhrase,
                      algorithm: PayFortSignature.Algorithm = .sha256, account: Bool = true) -> PayFortParameters {
    var parameters = PayFortParameters(strings: pairs)
    if account {
        for (key, value) in [("access_code", credentials.accessCode), ("merchant_identifier", credentials.merchantIdentifier)]
            where parameters[key] == nil {
            parameters[key] = .string(value)
        }
    }
    parameters["signature"] = .string(PayFortSignature(algorithm).sign(parameters, phrase: phrase))
    return parameters
}

/// A PayFort answer signed with the response phrase, as the gateway signs it.
func signedAnswer(_ pairs: [(String, String)], algorithm: PayFortSignature.Algorithm = .sha256) -> TransportResponse {
    TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"],
                      body: signedParameters(pairs, algorithm: algorithm).jsonData())
}

func intent(_ amount: String = "100.000", currency: String = "JOD", method: PaymentMethod = .card, action: PaymentAction = .sale,
            email: String? = "buyer@example.com", description: String? = "Order 42", firstName: String? = nil,
            metadata: [String: String] = [:]) throws -> PaymentIntent {
    PaymentIntent(merchantReference: "order-42", amount: try Money(decimal: amount, currency: Currency(code: currency)), method: method,
                  action: action, customer: Customer(email: email, firstName: firstName, ipAddress: "192.168.1.10"),
                  description: description, metadata: metadata)
}

/// The server half, with credentials.
func server(_ transport: RecordingTransport, integration: PayFortIntegration = .merchantPage,
            credentials: PayFortCredentials = credentials, environment: PayFortEnvironment = .custom(testBase)) -> PayFortServer {
    PayFortServer(environment: environment, credentials: credentials, integration: integration, transport: transport)
}

/// The app half: no credentials, no transport.
let app = PayFortGateway(environment: .custom(testBase))
/// What the app's FORT SDK sends with an attempt.
let device = ["device_id": "ffffffff-a9fa-0b44-7b27-29e70033c587"]

/// An attempt reference from a literal.
func ref(_ raw: String) -> AttemptReference { AttemptReference(rawValue: raw) }

func body(_ request: TransportRequest?) throws -> PayFortParameters {
    try PayFortParameters.json(try #require(request?.body))
}

@Suite("PayFort: the FORT mobile SDK channel")
struct PayFortMobileSDKTests {
    @Test("prepare: a signed SDK_TOKEN for the app's device id; the operation request and the token go to the app")
    func prepare() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([
            ("service_command", "SDK_TOKEN"), ("access_code", credentials.accessCode), ("merchant_identifier", credentials.merchantIdentifier),
            ("language", "en"), ("device_id", "ffffffff-a9fa-0b44-7b27-29e70033c587"), ("sdk_token", "Dwp78q3"),
            ("response_code", "22000"), ("response_message", "Success"), ("status", "22"),
        ]))
        let attempt = AttemptReference.generate()
        let preparation = try await server(transport, integration: .mobileSDK).prepare(AttemptContext(intent: try intent(), attempt: attempt, appData: device))
        let sent = try body(transport.requests.first)
        #expect(sent.keys == ["service_command", "access_code", "merchant_identifier", "language", "device_id", "signature"])
        #expect(sent.text("device_id") == "ffffffff-a9fa-0b44-7b27-29e70033c587")
        try PayFortSignature().verify(sent, phrase: credentials.requestPhrase)
        #expect(preparation.parameters == [
            "integration": "mobile_sdk", "command": "PURCHASE", "merchant_reference": attempt.rawValue, "amount": "100000",
            "currency": "JOD", "language": "en", "customer_email": "buyer@example.com", "sdk_token": "Dwp78q3",
            "order_description": "Order 42", "customer_ip": "192.168.1.10",
        ])
        try transport.verify()
    }

    @Test("prepare refuses without the SDK's device id sent with the attempt (never read from the payment's metadata); nothing is sent")
    func deviceIDRequired() async throws {
        for (appData, metadata) in [([:], [:]), (["device_id": ""], [:]), (["device_id": "has space"], [:]), ([:], device)] {
            let transport = RecordingTransport()
            let error = await #expect(throws: CheckoutError.self) {
                try await server(transport, integration: .mobileSDK).prepare(AttemptContext(intent: try intent(metadata: metadata), attempt: .generate(),
                                                                                           appData: appData))
            }
            #expect(error?.field == "appData.device_id")
            #expect(transport.requests.isEmpty)
        }
    }

    @Test("the app half sends the FORT SDK's device id under the key the module declares; the merchant page sends nothing")
    func appHalfSendsDevice() async throws {
        #expect(PayFortGateway.capabilities.appDataKeys == ["device_id"])
        #expect(try await PayFortGateway(environment: .sandbox, deviceID: "dev-1").appData() == ["device_id": "dev-1"])
        #expect(try await PayFortGateway(environment: .sandbox).appData().isEmpty)
    }

    @Test("requirements checked before anything is stored: the e-mail, the currency and each operation field, named by the intent's field")
    func requirements() throws {
        let payFort = server(RecordingTransport())
        #expect(payFort.requirementIssues(for: try intent()).isEmpty)
        var noEmail = try intent()
        noEmail.customer.email = nil
        #expect(payFort.requirementIssues(for: noEmail).map(\.field) == ["intent.customer.email"])
        var badMetadata = try intent(metadata: ["merchant_extra1": String(repeating: "x", count: 300)])
        #expect(payFort.requirementIssues(for: badMetadata).map(\.field) == ["intent.metadata.merchant_extra1"])
        badMetadata.amount = Money(minorUnits: 100, currency: try Currency(code: "JPY"))
        #expect(payFort.requirementIssues(for: badMetadata).map(\.field) == ["intent.amount.currency"])
    }

    @Test("prepare: a forged answer and a refusal are configuration problems; a lost token request is unavailable")
    func prepareFailures() async throws {
        let forged = RecordingTransport()
        var answer = signedAnswer([("status", "22"), ("sdk_token", "x"), ("response_code", "22000")])
        answer.body = Data(String(decoding: answer.body, as: UTF8.self).replacingOccurrences(of: "\"x\"", with: "\"y\"").utf8)
        forged.expect(.post, path: api, respond: answer)
        let error = await #expect(throws: CheckoutError.self) {
            try await server(forged, integration: .mobileSDK).prepare(AttemptContext(intent: try intent(), attempt: .generate(), appData: device))
        }
        #expect(error?.category == .configuration && error?.code == .signatureMismatch)

        let refused = RecordingTransport()
        refused.expect(.post, path: api, respond: signedAnswer([("status", "00"), ("response_code", "00008"), ("response_message", "Signature mismatch")]))
        let mismatch = await #expect(throws: CheckoutError.self) {
            try await server(refused, integration: .mobileSDK).prepare(AttemptContext(intent: try intent(), attempt: .generate(), appData: device))
        }
        #expect(mismatch?.gatewayCode == "00008" && mismatch?.category == .configuration)

        let otherDevice = RecordingTransport()
        otherDevice.expect(.post, path: api, respond: signedAnswer([("status", "22"), ("sdk_token", "tok"), ("device_id", "another")]))
        await #expect(throws: CheckoutError.self) {
            try await server(otherDevice, integration: .mobileSDK).prepare(AttemptContext(intent: try intent(), attempt: .generate(), appData: device))
        }

        let unreachable = RecordingTransport()
        unreachable.expect(.post, path: api, fail: TransportError(.timedOut, "slow"))
        let timeout = await #expect(throws: CheckoutError.self) {
            try await server(unreachable, integration: .mobileSDK).prepare(AttemptContext(intent: try intent(), attempt: .generate(), appData: device))
        }
        #expect(timeout?.category == .unavailable)   // an SDK token cannot move money
    }

    func sdkPreparation(_ extra: [String: String] = [:]) throws -> Preparation {
        try Preparation(gateway: "payfort", attempt: AttemptReference(rawValue: "att1"), method: .card, amount: intent().amount,
                        parameters: ["integration": "mobile_sdk", "command": "PURCHASE", "merchant_reference": "att1", "amount": "100000",
                                     "currency": "JOD", "language": "en", "customer_email": "buyer@example.com",
                                     "sdk_token": "Dwp78q3"].merging(extra) { _, new in new })
    }

    @Test("present: the operation request as the FORT SDK takes it; Arabic names and descriptions are valid")
    func launch() async throws {
        let arabic = ["customer_name": "محمد عبدالله", "order_description": "طلب رقم ٤٢ - هاتف"]
        guard case .launchWallet(let launch) = try await app.present(try sdkPreparation(arabic), input: .start) else {
            Issue.record("no launch"); return
        }
        #expect(launch.wallet == "payfort")
        #expect(launch.parameters == ["command": "PURCHASE", "merchant_reference": "att1", "amount": "100000", "currency": "JOD",
                                      "language": "en", "customer_email": "buyer@example.com", "sdk_token": "Dwp78q3",
                                      "customer_name": "محمد عبدالله", "order_description": "طلب رقم ٤٢ - هاتف"])
        #expect(launch.parameters["integration"] == nil)
        for (field, value) in [("customer_name", "John <b>"), ("amount", "100.00"), ("order_description", String(repeating: "a", count: 151))] {
            let error = await #expect(throws: CheckoutError.self) { try await app.present(try sdkPreparation([field: value]), input: .start) }
            #expect(error?.field == "preparation.parameters.\(field)")
        }
        await #expect(throws: CheckoutError.self) {
            try await app.present(try sdkPreparation(["merchant_reference": "someone-else"]), input: .start)
        }
        await #expect(throws: CheckoutError.self) { try await app.present(try sdkPreparation(), input: .submit(FormValues([:]))) }
    }

    @Test("return: the SDK's success, canceled and faild callbacks; a response naming another order is not believed", arguments: [
        ("success", ["status": "14", "response_code": "14000", "merchant_reference": "att1"], ClientOutcome.Kind.succeeded),
        ("success", ["status": "02", "response_code": "02000"], .succeeded),
        ("success", ["status": "20", "response_code": "20064"], .pending),
        ("success", [:], .succeeded),
        ("success", ["status": "14", "merchant_reference": "other"], .unknown),
        ("canceled", ["response_code": "00072"], .cancelled),
        ("failed", ["status": "13", "response_code": "13666"], .failed),
        ("faild", ["status": "13", "response_code": "13029"], .failed),
        ("success", ["status": "14x"], .unknown),
        ("SUCCESS", [:], .unknown),
    ])
    func callbacks(code: String, parameters: [String: String], kind: ClientOutcome.Kind) throws {
        let outcome = app.interpretReturn(.callback(code: code, parameters: parameters), for: try sdkPreparation())
        #expect(outcome.kind == kind)
        if kind != .unknown { #expect(outcome.gatewayCode == parameters["response_code"]) }
    }

    @Test("the SDK channel has no submit step")
    func noSubmit() async throws {
        await #expect(throws: CheckoutError.self) {
            try await server(RecordingTransport(), integration: .mobileSDK).submit(Submission(kind: "payfort_tokenization", fields: [:]),
                                                                                   context: SubmitContext(intent: try intent(), attempt: ref("a")))
        }
    }
}

@Suite("PayFort: the custom merchant page channel")
struct PayFortMerchantPageTests {
    @Test("prepare: the TOKENIZATION hidden fields signed with the request phrase; no network call")
    func prepare() async throws {
        let transport = RecordingTransport()
        let attempt = AttemptReference(rawValue: "att1")
        let preparation = try await server(transport).prepare(AttemptContext(intent: try intent(), attempt: attempt, returnURL: returnURL))
        #expect(transport.requests.isEmpty)
        #expect(Set(preparation.parameters.keys) == Set(PayFortTokenizationForm.fieldNames + ["integration"]))
        #expect(preparation.parameters["return_url"] == returnURL.absoluteString)
        #expect(preparation.parameters["merchant_reference"] == "att1" && preparation.parameters["service_command"] == "TOKENIZATION")
        var form = PayFortParameters(dictionary: preparation.parameters)
        form["integration"] = nil
        try PayFortSignature().verify(form, phrase: credentials.requestPhrase)
        #expect(preparation.parameters.values.allSatisfy { !$0.contains(credentials.requestPhrase) && !$0.contains(credentials.responsePhrase) })
    }

    @Test("prepare needs a usable return URL and the fields the payment will need", arguments: [
        (nil, "returnURL"), (URL(string: "shop://till/return?till_state=a%20b")!, "returnURL"),
    ] as [(URL?, String)])
    func prepareRefusals(url: URL?, field: String) async throws {
        let error = await #expect(throws: CheckoutError.self) {
            try await server(RecordingTransport()).prepare(AttemptContext(intent: try intent(), attempt: .generate(), returnURL: url))
        }
        #expect(error?.field == field)
        let offered = #expect(throws: CheckoutError.self) { try server(RecordingTransport()).returnURL(from: [], for: try intent()) }
        #expect(offered?.field == "returnURLs")
        #expect(try server(RecordingTransport(), integration: .mobileSDK).returnURL(from: [returnURL], for: try intent()) == nil)
    }

    @Test("bad operation fields are refused before anything is sent, naming the field", arguments: [
        (try! intent(email: nil), "intent.customer.email"),
        (try! intent(email: "not an email"), "payfort.customer_email"),
        (try! intent(description: "Order <script>"), "payfort.order_description"),
        (try! intent(method: .mada, action: .authorize), "payfort.payment_option"),
        (try! intent(description: String(repeating: "a", count: 151)), "payfort.order_description"),
        (try! intent(action: .verify), "intent.action"),
    ])
    func badFields(intent: PaymentIntent, field: String) async throws {
        for integration in PayFortIntegration.allCases {
            let transport = RecordingTransport()
            let error = await #expect(throws: CheckoutError.self) {
                try await server(transport, integration: integration).prepare(AttemptContext(intent: intent, attempt: .generate(), returnURL: returnURL))
            }
            #expect(error?.field == field)
            #expect(transport.requests.isEmpty)
        }
    }

    func preparation() async throws -> Preparation {
        try await server(RecordingTransport()).prepare(AttemptContext(intent: try intent(), attempt: ref("att1"), returnURL: returnURL))
    }

    @Test("present: the card form, then a form posted from the device to paymentPage: signed hidden fields, then the card")
    func postForm() async throws {
        let preparation = try await preparation()
        guard case .collect(let form) = try await app.present(preparation, input: .start) else { Issue.record("no form"); return }
        #expect(form.fieldsInDisplayOrder.map(\.id) == ["card_number", "expiry_date", "card_security_code", "card_holder_name"])
        #expect(form.fields.filter(\.sensitive).map(\.id) == ["card_number", "card_security_code"])
        #expect(form.fields.filter(\.obfuscate).map(\.id) == ["card_security_code"])
        #expect(form.fields.first?.validators.contains(FieldValidator("luhn")) == true)
        let card = FormValues(["card_number": "4005 5500 0000 0001", "expiry_date": "05/30", "card_security_code": "123",
                               "card_holder_name": "عبدالله Smith"])
        guard case .postForm(let post) = try await app.present(preparation, input: .submit(card)) else { Issue.record("no post"); return }
        #expect(post.url == URL(string: "https://payfort.test/FortAPI/paymentPage"))
        #expect(post.fields.map(\.name) == PayFortTokenizationForm.fieldNames + PayFortTokenizationForm.cardFieldNames)
        #expect(post["card_number"] == "4005550000000001" && post["expiry_date"] == "3005" && post["card_security_code"] == "123")
        #expect(post["signature"] == preparation.parameters["signature"])
        #expect(!post.description.contains("4005550000000001") && !post.description.contains("123,"))
        // A bad card never leaves the device.
        let bad = await #expect(throws: CheckoutError.self) {
            try await app.present(preparation, input: .submit(FormValues(["card_number": "4005550000000002", "expiry_date": "05/30",
                                                                          "card_security_code": "123"])))
        }
        #expect(bad?.field == "card.card_number")
    }

    @Test("the sandbox and production pages are APS's checkout hosts; a custom base serves both paths")
    func environments() {
        #expect(PayFortEnvironment.sandbox.paymentPage.absoluteString == "https://sbcheckout.payfort.com/FortAPI/paymentPage")
        #expect(PayFortEnvironment.sandbox.paymentAPI.absoluteString == "https://sbpaymentservices.payfort.com/FortAPI/paymentApi")
        #expect(PayFortEnvironment.production.paymentPage.absoluteString == "https://checkout.payfort.com/FortAPI/paymentPage")
        #expect(PayFortEnvironment.production.paymentAPI.absoluteString == "https://paymentservices.payfort.com/FortAPI/paymentApi")
        let custom = PayFortEnvironment.custom(URL(string: "http://127.0.0.1:9/payfort")!)
        #expect(custom.paymentPage.absoluteString == "http://127.0.0.1:9/payfort/FortAPI/paymentPage")
        #expect(custom.paymentAPI.absoluteString == "http://127.0.0.1:9/payfort/FortAPI/paymentApi")
    }

    /// A tokenization return as PayFort puts it on the return URL, signed with the response phrase.
    func tokenizationReturn(_ overrides: [(String, String)] = [], phrase: String = credentials.responsePhrase) -> PayFortParameters {
        var pairs: [(String, String)] = [
            ("response_code", "18000"), ("card_number", "400555******0001"), ("card_holder_name", "Test"),
            ("merchant_identifier", credentials.merchantIdentifier), ("expiry_date", "****"), ("access_code", credentials.accessCode),
            ("language", "en"), ("service_command", "TOKENIZATION"), ("response_message", "Success"), ("merchant_reference", "att1"),
            ("token_name", "a957aca99d314a8eb5ba9e1fbd8e6dae"), ("return_url", returnURL.absoluteString), ("card_bin", "400555"),
            ("status", "18"),
        ]
        for (key, value) in overrides {
            if let index = pairs.firstIndex(where: { $0.0 == key }) { pairs[index].1 = value } else { pairs.append((key, value)) }
        }
        return signedParameters(pairs, phrase: phrase)
    }

    func url(_ parameters: PayFortParameters, extra: String = "") -> URL {
        URL(string: returnURL.absoluteString + "&" + FormFields.encode(parameters.members.map { ($0.key, $0.value.payFortText ?? "") }) + extra)!
    }

    @Test("present: the tokenization return becomes a submission of every field PayFort sent, without Till's state")
    func returned() async throws {
        let preparation = try await preparation()
        let signed = tokenizationReturn()
        guard case .submit(let submission) = try await app.present(preparation, input: .returned(url(signed))) else {
            Issue.record("no submit"); return
        }
        #expect(submission.kind == "payfort_tokenization")
        #expect(submission.fields == signed.strings)
        #expect(submission.fields["till_state"] == nil)
        // A refused tokenization goes to the server too, which verifies it and closes the attempt.
        let refused = tokenizationReturn([("status", "17"), ("response_code", "17016"), ("token_name", "")])
        guard case .submit = try await app.present(preparation, input: .returned(url(refused))) else { Issue.record("no submit"); return }
        // What the app cannot read, or is not this attempt's, or carries a card number, is not passed on.
        for (bad, why) in [(url(signed, extra: "&status=14"), "duplicate"),
                           (url(tokenizationReturn([("merchant_reference", "other")])), "other order"),
                           (url(tokenizationReturn([("card_number", "4005550000000001")])), "unmasked"),
                           (url(tokenizationReturn([("service_command", "PURCHASE")])), "not a tokenization")] {
            guard case .completed(let outcome) = try await app.present(preparation, input: .returned(bad)) else {
                Issue.record("\(why): passed on"); continue
            }
            #expect(outcome.kind == .unknown, "\(why)")
        }
    }

    func submitContext(action: PaymentAction = .sale, ip: String? = "203.0.113.7") throws -> SubmitContext {
        SubmitContext(intent: try intent("243.00", currency: "AED", action: action, firstName: "سارة"), attempt: ref("att1"),
                      returnURL: returnURL, customerIP: ip)
    }

    func submission(_ parameters: PayFortParameters) -> Submission {
        Submission(kind: "payfort_tokenization", fields: parameters.strings)
    }

    @Test("submit: the verified token goes into a signed PURCHASE or AUTHORIZATION with the app's IP", arguments: [
        (PaymentAction.sale, "PURCHASE", "14", "14000", PaymentStatus.paid),
        (.authorize, "AUTHORIZATION", "02", "02000", .authorized),
    ])
    func submit(action: PaymentAction, command: String, status: String, code: String, expected: PaymentStatus) async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([
            ("command", command), ("amount", "24300"), ("currency", "AED"), ("merchant_reference", "att1"), ("fort_id", "169996200007825545"),
            ("response_code", code), ("response_message", "Success"), ("status", status),
        ]))
        let result = try await server(transport).submit(submission(tokenizationReturn()), context: try submitContext(action: action))
        let sent = try body(transport.requests.first)
        #expect(sent.keys == ["command", "amount", "currency", "customer_email", "token_name", "order_description", "customer_ip",
                              "customer_name", "return_url", "access_code", "merchant_identifier", "merchant_reference", "language",
                              "signature"])
        #expect(sent["amount"] == .number("24300") && sent.text("command") == command && sent.text("customer_ip") == "203.0.113.7")
        #expect(sent.text("token_name") == "a957aca99d314a8eb5ba9e1fbd8e6dae" && sent.text("return_url") == returnURL.absoluteString)
        #expect(sent.text("customer_name") == "سارة")
        try PayFortSignature().verify(sent, phrase: credentials.requestPhrase)
        guard case .completed(let outcome) = result.next else { Issue.record("not completed"); return }
        #expect(outcome.kind == .succeeded && outcome.gatewayCode == code)
        #expect(result.report?.status == expected)
        #expect(result.report?.amount == Money(minorUnits: 24300, currency: Currency.lookup("AED")!))
        #expect(result.gatewayReference == "169996200007825545" && result.report?.gatewayReference == "169996200007825545")
    }

    @Test("submit: 3-D Secure requested opens its page; on hold is pending; declines are classified by PayFort's message code")
    func answers() async throws {
        func run(_ pairs: [(String, String)]) async throws -> SubmitResult {
            let transport = RecordingTransport()
            transport.expect(.post, path: api, respond: signedAnswer([("command", "PURCHASE"), ("merchant_reference", "att1")] + pairs))
            return try await server(transport).submit(submission(tokenizationReturn()), context: try submitContext())
        }
        let threeDS = try await run([("status", "20"), ("response_code", "20064"), ("3ds_url", "https://sbsimulator.payfort.com/secure3dsSimulator?x=1")])
        #expect(threeDS.next == .openURL(URL(string: "https://sbsimulator.payfort.com/secure3dsSimulator?x=1")!, handoff: .threeDSecure))
        #expect(threeDS.report == nil)
        for held in [[("status", "03"), ("response_code", "03006")], [("status", "15"), ("response_code", "15777")]] {
            guard case .completed(let outcome) = try await run(held).next else { Issue.record("not completed"); continue }
            #expect(outcome.kind == .pending)
        }
        for (code, category, ourCode) in [("13666", CheckoutError.Category.declinedHard, CheckoutError.Code.declined),
                                          ("13029", .declinedSoft, .insufficientFunds), ("13071", .declinedHard, .declined),
                                          ("00072", .cancelled, .cancelledByCustomer), ("00008", .configuration, .signatureMismatch)] {
            let error = await #expect(throws: CheckoutError.self) {
                try await run([("status", String(code.prefix(2))), ("response_code", code)])
            }
            #expect(error?.category == category && error?.code == ourCode && error?.gatewayCode == code)
        }
        // An answer that cannot be trusted leaves the outcome unknown.
        let forged = RecordingTransport()
        var answer = signedAnswer([("command", "PURCHASE"), ("status", "14"), ("response_code", "14000")])
        answer.body = Data(String(decoding: answer.body, as: UTF8.self).replacingOccurrences(of: "14000", with: "14001").utf8)
        forged.expect(.post, path: api, respond: answer)
        let error = await #expect(throws: CheckoutError.self) {
            try await server(forged).submit(submission(tokenizationReturn()), context: try submitContext())
        }
        #expect(AttemptFailure(try #require(error)) == .unknown)
        let plain = await #expect(throws: CheckoutError.self) {
            try await run([("status", "20"), ("response_code", "20064"), ("3ds_url", "http://evil.example/3ds")])
        }
        #expect(plain?.field == "answer.3ds_url")
    }

    @Test("submit refuses, before any payment is sent, a return that does not verify or is not this attempt's, and a missing IP")
    func submitRefusals() async throws {
        let cases: [(Submission, SubmitContext, String, CheckoutError.Category)] = [
            (submission(tokenizationReturn(phrase: "someone else's")), try submitContext(), "submission.fields.signature", .invalidInput),
            (submission(tokenizationReturn([("merchant_reference", "att2")])), try submitContext(), "submission.fields.merchant_reference", .invalidInput),
            (submission(tokenizationReturn([("status", "17"), ("response_code", "17016")])), try submitContext(), "submission.fields.status", .declinedHard),
            (submission(tokenizationReturn([("token_name", "")])), try submitContext(), "submission.fields.token_name", .invalidInput),
            (Submission(kind: "token", fields: tokenizationReturn().strings), try submitContext(), "submission.kind", .invalidInput),
            (submission(tokenizationReturn()), try submitContext(ip: nil), "customer_ip", .configuration),
        ]
        for (submission, context, field, category) in cases {
            let transport = RecordingTransport()
            let error = await #expect(throws: CheckoutError.self) { try await server(transport).submit(submission, context: context) }
            #expect(error?.field == field, "\(field)")
            #expect(error?.category == category, "\(field)")
            #expect(transport.requests.isEmpty, "\(field)")
        }
        // A field added to a signed return, even an empty one that the .NET rule would not sign, is
        // never read; one that changes a signed field breaks the signature.
        var added = tokenizationReturn().strings
        added["status"] = "14"
        let transport = RecordingTransport()
        await #expect(throws: CheckoutError.self) {
            try await server(transport).submit(Submission(kind: "payfort_tokenization", fields: added), context: try submitContext())
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("return: the final result PayFort sends to the return URL after 3-D Secure is shown, never believed for another order")
    func finalReturn() async throws {
        let preparation = try await preparation()
        let paid = URL(string: returnURL.absoluteString + "&command=PURCHASE&status=14&response_code=14000&merchant_reference=att1&amount=10000")!
        #expect(app.interpretReturn(.url(paid), for: preparation).kind == .succeeded)
        let declined = URL(string: returnURL.absoluteString + "&status=13&response_code=13666&merchant_reference=att1")!
        #expect(app.interpretReturn(.url(declined), for: preparation).gatewayCode == "13666")
        let other = URL(string: returnURL.absoluteString + "&status=14&merchant_reference=someone-else")!
        #expect(app.interpretReturn(.url(other), for: preparation).kind == .unknown)
        #expect(app.interpretReturn(.url(returnURL), for: preparation).kind == .pending)
        #expect(app.interpretReturn(.timedOut, for: preparation).kind == .unknown)
    }
}

@Suite("PayFort: fields, signatures, feedback, inquiry, maintenance")
struct PayFortGatewayTests {
    @Test("field rules: the union of the 2019 guide and the docs; letters of any script in free text", arguments: [
        ("merchant_reference", "XYZ9239-yu898", true), ("merchant_reference", "XYZ 9239", false),
        ("merchant_reference", String(repeating: "a", count: 41), false), ("amount", "10000", true), ("amount", "100.00", false),
        ("amount", "12345678901", false), ("customer_email", "customer_1+x@domain.com", true), ("token_name", "Op9Vmp@x_-.", true),
        ("phone_number", "+962 (79) 721-9966", true), ("phone_number", "0096279721996612345", true), ("phone_number", "00962797219966123456", false),
        ("merchant_extra1", "John;Smith/@,'", true), ("merchant_extra1", "John#", false), ("customer_ip", "192.178.1.10", true),
        ("customer_ip", "2001:0db8:3042:0002:5a55:caff:fef6:bdbf", true),
        ("order_description", "iPhone 6-S $10: #1, a/b", true), ("order_description", "test' with #'", true),
        ("order_description", "طلب رقم ٤٢", true), ("order_description", "<script>", false),
        ("customer_name", "John Smith", true), ("customer_name", "test customer's name", true), ("customer_name", "محمد بن سلمان", true),
        ("customer_name", "مُحَمَّد", true), ("customer_name", "John; DROP", false), ("currency", "AE1", false),
        ("device_id", "68F33432-58FD-47DA-A91B-285DD7D86D20", true), ("device_id", "dev.ice_1@x+y", true), ("device_id", "a b", false),
        ("card_holder_name", "O'Neil-Smith Jr.", true),
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
        let good = ["card_number": "4005550000000001", "expiry_date": "12/30", "card_security_code": "123"]
        #expect(issue(good) == nil)
        #expect(issue(good.merging(["card_number": "4005550000000002"]) { $1 })?.field == "card.card_number")
        #expect(issue(good.merging(["expiry_date": "12/19"]) { $1 })?.field == "card.expiry_date")
        #expect(issue(good.merging(["expiry_date": "13/30"]) { $1 })?.field == "card.expiry_date")
        #expect(issue(good.merging(["expiry_date": "1/30"]) { $1 })?.field == "card.expiry_date")
        #expect(issue(good.merging(["card_security_code": "12"]) { $1 })?.field == "card.card_security_code")
        #expect(issue(good.merging(["card_holder_name": "<x>"]) { $1 })?.field == "card.card_holder_name")
        let text = "\(String(describing: issue(good.merging(["card_number": "4005550000000002", "card_security_code": "987"]) { $1 })))"
        #expect(!text.contains("4005550000000002") && !text.contains("987"))
        if case .success(let values) = PayFortFields.card(FormValues(good.merging(["card_number": "4005 5500 0000 0001", "expiry_date": "0731"]) { $1 })) {
            #expect(values["expiry_date"] == "3107" && values["card_number"] == "4005550000000001")
        } else {
            Issue.record("MMYY refused")
        }
    }

    @Test("a signature verifies under either empty-value rule; the debugger explains both")
    func emptyValueRules() throws {
        let parameters = PayFortParameters(strings: [("merchant_reference", "att1"), ("status", "14"), ("app_ver", "")])
        let skipped = PayFortSignature().sign(parameters, phrase: "P")
        let kept = PayFortSignature().sign(parameters, phrase: "P", emptyValues: .signed)
        #expect(skipped != kept)
        #expect(PayFortSignature().stringToSign(parameters, phrase: "P", emptyValues: .signed) == "Papp_ver=merchant_reference=att1status=14P")
        for (signature, rule) in [(skipped, PayFortSignature.EmptyValues.skipped), (kept, .signed)] {
            var signed = parameters
            signed["signature"] = .string(signature)
            #expect(try PayFortSignature().verify(signed, phrase: "P") == rule)
        }
    }

    func feedbackServer() -> PayFortServer { server(RecordingTransport()) }

    func notification(_ parameters: PayFortParameters, json: Bool = false, extra: String = "") -> IncomingNotification {
        if json { return IncomingNotification(headers: ["Content-Type": "application/json"], body: parameters.jsonData()) }
        let form = FormFields.encode(parameters.members.map { ($0.key, $0.value.payFortText ?? "") }) + extra
        return IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(form.utf8))
    }

    @Test("feedback: statuses, amounts and the on-hold codes", arguments: [
        ("PURCHASE", "14", "14000", PaymentStatus.paid), ("AUTHORIZATION", "02", "02000", .authorized),
        ("PURCHASE", "13", "13666", .failed), ("PURCHASE", "13", "13029", .failed), ("AUTHORIZATION", "03", "03006", .pending),
        ("PURCHASE", "00", "00006", .pending), ("PURCHASE", "20", "20064", .pending), ("CAPTURE", "04", "04000", .paid),
        ("REFUND", "06", "06000", .partiallyRefunded), ("VOID_AUTHORIZATION", "08", "08000", .cancelled),
        ("CAPTURE", "05", "05042", PaymentStatus(rawValue: "payfort_status_05")),
    ])
    func feedback(command: String, status: String, code: String, expected: PaymentStatus) throws {
        let parameters = signedParameters([("command", command), ("merchant_reference", "att1"), ("amount", "24300"), ("currency", "AED"),
                                           ("status", status), ("response_code", code), ("fort_id", "1234")])
        for json in [false, true] {
            let report = try feedbackServer().verifyNotification(notification(parameters, json: json)).report
            #expect(report.status == expected && report.gatewayCode == code && report.attempt == ref("att1"))
            #expect(report.amount == Money(minorUnits: 24300, currency: Currency.lookup("AED")!))
            #expect(!report.status.isKnown || expected.isKnown)
        }
    }

    @Test("two REFUND feedbacks of one order are two events (their amounts and maintenance references differ); a redelivery is the same event")
    func refundEvents() throws {
        func refund(_ amount: String, maintenance: String? = nil) throws -> StatusReport {
            var pairs = [("command", "REFUND"), ("merchant_reference", "att1"), ("amount", amount), ("currency", "AED"),
                         ("status", "06"), ("response_code", "06000"), ("fort_id", "1234")]
            if let maintenance { pairs.append(("maintenance_reference", maintenance)) }
            return try feedbackServer().verifyNotification(notification(signedParameters(pairs))).report
        }
        let first = try refund("10000"), second = try refund("5000"), again = try refund("10000")
        #expect(first.eventID != second.eventID && first.eventID == again.eventID)
        #expect(try refund("10000", maintenance: "r-1").eventID != (try refund("10000", maintenance: "r-2")).eventID)
        #expect(first.status == .partiallyRefunded && first.amount?.minorUnits == 10000 && first.refundedTotal == nil)
    }

    @Test("feedback that repeats a key is refused, form or JSON, before its signature is even checked")
    func duplicateKeys() throws {
        let gateway = feedbackServer()
        let parameters = signedParameters([("merchant_reference", "att1"), ("status", "13"), ("response_code", "13666")])
        #expect(try gateway.verifyNotification(notification(parameters)).report.status == .failed)
        let error = #expect(throws: CheckoutError.self) { try gateway.verifyNotification(notification(parameters, extra: "&status=14")) }
        #expect(error?.code == .duplicateField && error?.field == "body.status")
        let json = #"{"merchant_reference":"att1","status":"13","status":"14","signature":"x"}"#
        let jsonError = #expect(throws: CheckoutError.self) {
            try gateway.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/json"], body: Data(json.utf8)))
        }
        #expect(jsonError?.code == .duplicateField && jsonError?.field == "body.status")
        #expect(gateway.claimedAttempt(in: notification(parameters, extra: "&status=14")) == nil)
    }

    @Test("an empty key added to a signed message verifies under the .NET rule but is never read")
    func emptyKeyInjection() throws {
        // A signed message that says nothing about the outcome (a capture result as the .NET test has it).
        let parameters = signedParameters([("command", "CAPTURE"), ("merchant_reference", "att1"), ("amount", "243"), ("currency", "USD")])
        let gateway = feedbackServer()
        let error = #expect(throws: CheckoutError.self) { try gateway.verifyNotification(notification(parameters, extra: "&status=")) }
        #expect(error?.field == "body.status" && error?.code == .missingField)
    }

    @Test("a signed message re-cut across keys (same string to sign) never reads as another field")
    func recut() throws {
        // merchant_reference=att1response_code=13666response_message=Declinedstatus=13token_name=tok
        let account = [("access_code", credentials.accessCode), ("merchant_identifier", credentials.merchantIdentifier)]
        let original = signedParameters(account + [("merchant_reference", "att1"), ("response_code", "13666"), ("response_message", "Declined"),
                                                   ("status", "13"), ("token_name", "tok")])
        let signature = try #require(original.text("signature"))
        let recuts: [[(String, String)]] = [
            [("merchant_reference", "att1response_code=13666response_message=Declined"), ("status", "13"), ("token_name", "tok")],
            [("merchant_reference", "att1"), ("response_code", "13666"), ("response_message", "Declined"), ("status", "13token_name=tok")],
            [("merchant_reference", "att1"), ("response_code", "13666response_message=Declinedstatus=13"), ("token_name", "tok")],
        ]
        for pairs in recuts {
            var forged = PayFortParameters(strings: account + pairs)
            forged["signature"] = .string(signature)
            try PayFortSignature().verify(forged, phrase: credentials.responsePhrase)   // the scheme cannot tell…
            #expect(throws: CheckoutError.self) { try self.feedbackServer().verifyNotification(self.notification(forged)) }   // …Till can
        }
    }

    @Test("CHECK_STATUS: transaction_status and the documented amounts; the currency is the attempt's", arguments: [
        (["transaction_status": "14", "transaction_code": "14000", "captured_amount": "100000", "authorized_amount": "100000"],
         PaymentStatus.paid, Int64?(100_000)),
        (["transaction_status": "02", "transaction_code": "02000", "authorized_amount": "100000"], .authorized, 100_000),
        (["transaction_status": "04", "transaction_code": "04000", "captured_amount": "100000", "authorized_amount": "100000"], .paid, 100_000),
        (["transaction_status": "06", "transaction_code": "06000", "captured_amount": "100000", "refunded_amount": "40000"],
         .partiallyRefunded, 40_000),
        (["transaction_status": "06", "transaction_code": "06000", "captured_amount": "100000", "refunded_amount": "100000"], .refunded, 100_000),
        (["transaction_status": "13", "transaction_code": "13666"], .failed, nil),
        (["transaction_status": "03", "transaction_code": "03006"], .pending, nil),
        (["transaction_status": "12", "transaction_code": "12000"], PaymentStatus(rawValue: "payfort_status_12"), nil),
        ([:], .pending, nil),
    ] as [([String: String], PaymentStatus, Int64?)])
    func inquiry(fields: [String: String], status: PaymentStatus, minor: Int64?) async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([
            ("query_command", "CHECK_STATUS"), ("merchant_reference", "att1"), ("status", "12"), ("response_code", "12000"),
            ("fort_id", "1443796866848"),
        ] + fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        let jod = Currency.lookup("JOD")!
        let report = try await server(transport).inquire(InquiryQuery(attempt: ref("att1"), gatewayReference: "1443796866848",
                                                                      amount: Money(minorUnits: 100_000, currency: jod)))
        #expect(report.status == status)
        #expect(report.amount == minor.map { Money(minorUnits: $0, currency: jod) })
        // refunded_amount is PayFort's running total: reported as such, so refunds are not added up twice.
        #expect(report.refundedTotal == (status == .refunded || status == .partiallyRefunded ? report.amount : nil))
        #expect(report.gatewayReference == "1443796866848")
        let sent = try body(transport.requests.first)
        #expect(sent.keys == ["query_command", "access_code", "merchant_identifier", "merchant_reference", "language", "fort_id", "signature"])
        try PayFortSignature().verify(sent, phrase: credentials.requestPhrase)
    }

    @Test("CHECK_STATUS confirms a success but carries no amounts (as the only published answer): the amount is the one the confirmed feedback signed, for the same order and the same success only")
    func checkStatusWithoutAmounts() async throws {
        let jod = Currency.lookup("JOD")!
        let answer = [("status", "12"), ("response_code", "12000"), ("merchant_reference", "att1"), ("fort_id", "1443796866848"),
                      ("transaction_status", "14"), ("transaction_code", "14000"), ("transaction_message", "Success")]
        func inquire(_ confirming: [StatusReport]) async throws -> StatusReport {
            let transport = RecordingTransport()
            transport.expect(.post, path: api, respond: signedAnswer(answer))
            return try await server(transport).inquire(InquiryQuery(attempt: ref("att1"), gatewayReference: "1443796866848",
                                                                    amount: Money(minorUnits: 100_000, currency: jod), confirming: confirming))
        }
        let feedback = StatusReport(gateway: "payfort", attempt: ref("att1"), gatewayReference: "1443796866848", status: .paid,
                                    amount: Money(minorUnits: 100_000, currency: jod), eventID: "f")
        // Alone, the answer says paid without an amount: the money rule would not apply it.
        let alone = try await inquire([])
        #expect(alone.status == .paid && alone.amount == nil)
        #expect(AttemptPolicy.verdict(for: alone, on: .pending, amount: Money(minorUnits: 100_000, currency: jod), source: .inquiry) != .apply)
        // With the feedback it confirms: paid for the feedback's signed amount, and the money rule applies it.
        let confirmed = try await inquire([feedback])
        #expect(confirmed.status == .paid && confirmed.amount == Money(minorUnits: 100_000, currency: jod))
        #expect(AttemptPolicy.verdict(for: confirmed, on: .pending, amount: Money(minorUnits: 100_000, currency: jod), source: .inquiry) == .apply)
        // Feedback of another order, or of another status, lends nothing.
        var otherOrder = feedback
        otherOrder.gatewayReference = "999"
        var declined = feedback
        declined.status = .failed
        var unnamed = feedback
        unnamed.gatewayReference = nil
        #expect(try await inquire([otherOrder, declined, unnamed]).amount == nil)
    }

    @Test("CHECK_STATUS of an order at 3-D Secure (status 20, 20064): pending with the code the reconciler closes after PayFort's hour; an on-hold or uncertain one is not that code")
    func checkStatusAtThreeDSecure() async throws {
        func inquire(_ status: String, _ code: String) async throws -> StatusReport {
            let transport = RecordingTransport()
            transport.expect(.post, path: api, respond: signedAnswer([("status", "12"), ("response_code", "12000"), ("merchant_reference", "att1"),
                                                                     ("fort_id", "1443796866848"), ("transaction_status", status),
                                                                     ("transaction_code", code)]))
            return try await server(transport).inquire(InquiryQuery(attempt: ref("att1"), gatewayReference: "1443796866848",
                                                                    amount: Money(minorUnits: 1_000, currency: Currency.lookup("SAR")!)))
        }
        let waiting = try await inquire("20", PayFortCodes.threeDSecureRequested)
        #expect(waiting.status == .pending && waiting.gatewayCode == "20064")
        #expect(PayFortGateway.capabilities.waitingForCustomerCodes == ["20064"])
        for (status, code) in [("20", "20777"), ("15", "15777"), ("19", "19000")] {
            let other = try await inquire(status, code)
            #expect(other.status == .pending && !PayFortGateway.capabilities.waitingForCustomerCodes.contains(other.gatewayCode ?? ""), "\(code)")
        }
    }

    @Test("Fixtures/wire/aps-currencies-and-check-status.json: the attempt's hour and the code that means waiting at 3-D Secure are the sources' facts")
    func attemptLifeFixture() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/wire/aps-currencies-and-check-status.json")
        let facts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let life = try #require(facts["attempt_life"] as? [String: Any])
        #expect(life["sdk_token_lifetime_seconds"] as? Int == PayFortGateway.attemptHour)
        let plugins = try #require(life["plugin_cancellation"] as? [[String: Any]])
        #expect(plugins.allSatisfy { ($0["choices_minutes"] as? [Int])?.contains(PayFortGateway.attemptHour / 60) == true && $0["cancels_20064"] as? Bool == true })
        #expect(PayFortGateway.capabilities.waitingForCustomerCodes == [try #require(life["three_d_secure_requested_code"] as? String)])
        #expect(PayFortGateway.capabilities.abandonedAttemptSeconds == PayFortGateway.attemptHour)
        #expect(PayFortGateway.capabilities.attemptLifetimeSeconds == PayFortGateway.attemptHour)
    }

    @Test("Fixtures/wire/aps-currencies-and-check-status.json: Till sends exactly the currencies on whose decimals every vendor table agrees with ISO 4217, those of 2 or 3")
    func currencyTablesFixture() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/wire/aps-currencies-and-check-status.json")
        let facts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let tables = try #require(facts["currency_decimal_tables"] as? [[String: Any]])
        for currency in Currency.allISO {
            let agree = tables.allSatisfy { table in
                guard let fallback = table["default"] as? Int else { return true }   // the ISO table
                return ((table["decimals"] as? [String: Int])?[currency.code] ?? fallback) == currency.minorUnits
            }
            // Every table agrees with ISO for the currency exactly when its ISO exponent is 2 or 3 …
            #expect(agree == (currency.minorUnits == 2 || currency.minorUnits == 3), "\(currency.code)")
            // … and those are the currencies PayFort is offered.
            #expect(PayFortCurrencies.supports(currency) == agree, "\(currency.code)")
        }
        #expect((facts["check_status"] as? [String: Any])?["order_not_found_response_code"] as? String == "12036")
    }

    @Test("currencies PayFort's own integrations disagree on (ISO exponent 0 or 4: JPY, XOF, XPF, CLF) are refused by name before any call; 2 and 3 decimals are offered")
    func currencies() async throws {
        for code in ["JPY", "XOF", "XPF", "KRW", "CLF"] {
            let transport = RecordingTransport()
            let money = Money(minorUnits: 1000, currency: try Currency(code: code))
            let context = AttemptContext(intent: PaymentIntent(merchantReference: "o", amount: money, method: .card,
                                                               customer: Customer(email: "buyer@example.com")),
                                         attempt: ref("att1"), returnURL: URL(string: "https://shop.example/return"))
            let error = await #expect(throws: CheckoutError.self) { _ = try await server(transport).prepare(context) }
            #expect(error?.code == .unsupportedCurrency && error?.field == "intent.amount.currency" && error?.message.contains(code) == true, "\(code)")
            #expect(transport.requests.isEmpty)
            #expect(!PayFortGateway.capabilities.currencies!.contains(money.currency))
        }
        for code in ["AED", "SAR", "USD", "EGP", "KWD", "BHD", "JOD", "OMR", "TND", "IQD", "LYD"] {
            #expect(PayFortGateway.capabilities.currencies!.contains(try Currency(code: code)), "\(code)")
        }
    }

    @Test("CHECK_STATUS failures: order not found, a failed check, a forged answer")
    func inquiryFailures() async throws {
        func run(_ response: TransportResponse) async -> CheckoutError? {
            let transport = RecordingTransport()
            transport.expect(.post, path: api, respond: response)
            return await #expect(throws: CheckoutError.self) { try await server(transport).inquire(InquiryQuery(attempt: ref("att1"))) }
        }
        #expect(await run(signedAnswer([("status", "11"), ("response_code", "11036"), ("merchant_reference", "att1")]))?.code == .attemptNotFound)
        // The OpenCart and PrestaShop plugins' "order not found": the query worked (status 12) and found nothing.
        #expect(await run(signedAnswer([("status", "12"), ("response_code", "12036"), ("merchant_reference", "att1")]))?.code == .attemptNotFound)
        #expect(await run(signedAnswer([("status", "00"), ("response_code", "00002")]))?.field == "merchant_reference")
        var forged = signedAnswer([("status", "12"), ("response_code", "12000"), ("transaction_status", "13"), ("merchant_reference", "att1")])
        forged.body = Data(String(decoding: forged.body, as: UTF8.self).replacingOccurrences(of: "\"13\"", with: "\"14\"").utf8)
        #expect(await run(forged)?.code == .signatureMismatch)
        let other = await run(signedAnswer([("status", "12"), ("response_code", "12000"), ("merchant_reference", "att2"), ("transaction_status", "14")]))
        #expect(other?.category == .unknownOutcome && other?.field == "answer.merchant_reference")
    }

    @Test("statuses, failures and the decision table: 029 insufficient funds, 064 3-D Secure, 666 declined, 071 not a decline code")
    func codes() {
        #expect(PayFortCodes.paymentStatus("14") == .paid && PayFortCodes.paymentStatus("02") == .authorized)
        #expect(PayFortCodes.paymentStatus("13") == .failed && PayFortCodes.paymentStatus("03") == .failed)
        #expect(PayFortCodes.paymentStatus("03", responseCode: "03006") == .pending && PayFortCodes.paymentStatus("13", responseCode: "13006") == .failed)
        for uncertain in ["15", "19", "20"] { #expect(PayFortCodes.paymentStatus(uncertain) == .pending) }
        #expect(!PayFortCodes.paymentStatus("77").isKnown && !PayFortCodes.paymentStatus("77").isFinal)
        #expect(PayFortCodes.messages["029"] == "Insufficient funds" && PayFortCodes.messages["064"] == "3-D Secure check requested")
        #expect(PayFortCodes.messages["666"] == "Transaction declined" && PayFortCodes.messages["071"] == "Failed to initiate connection")
        #expect(PayFortCodes.failure(status: "13", responseCode: "13029", message: nil, gateway: "p").category == .declinedSoft)
        #expect(PayFortCodes.failure(status: "13", responseCode: "13666", message: nil, gateway: "p").category == .declinedHard)
        #expect(PayFortCodes.failure(status: "20", responseCode: "20064", message: nil, gateway: "p").category == .unknownOutcome)
        #expect(PayFortCodes.failure(status: "13", responseCode: "13777", message: nil, gateway: "p").category == .unknownOutcome)
        let table = server(RecordingTransport()).decisionTable
        #expect(table.decision(for: "20064") == .stepUp)
        // 13006 is on hold in three of PayFort's four plugins and a plain decline in the fourth: never a cascade.
        for stay in ["13006", "13666", "13029", "03029", "13071", "03006", "15006", "13064"] { #expect(table.decision(for: stay) == .doNotRetry, "\(stay)") }
    }

    @Test("capture, refund and void: signed requests, success codes, failures thrown")
    func maintenance() async throws {
        let aed = Currency.lookup("AED")!
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([("command", "CAPTURE"), ("merchant_reference", "att1"), ("amount", "319700"),
                                                                  ("currency", "AED"), ("status", "04"), ("response_code", "04000")]))
        transport.expect(.post, path: api, respond: signedAnswer([("command", "REFUND"), ("merchant_reference", "att1"), ("status", "07"),
                                                                  ("response_code", "07048")]))
        transport.expect(.post, path: api, respond: signedAnswer([("command", "VOID_AUTHORIZATION"), ("merchant_reference", "att1"),
                                                                  ("status", "08"), ("response_code", "08000")]))
        let gateway = server(transport)
        let capture = try await gateway.capture(ref("att1"), amount: Money(minorUnits: 319_700, currency: aed))
        #expect(capture.responseCode == "04000" && capture.amount == Money(minorUnits: 319_700, currency: aed))
        let refused = await #expect(throws: CheckoutError.self) {
            try await gateway.refund(ref("att1"), amount: Money(minorUnits: 1, currency: aed), maintenanceReference: "r-1")
        }
        #expect(refused?.gatewayCode == "07048")
        #expect(try await gateway.void(ref("att1")).responseCode == "08000")
        let bodies = try transport.requests.map(body)
        #expect(bodies[0].keys == ["command", "access_code", "merchant_identifier", "merchant_reference", "amount", "currency", "language", "signature"])
        #expect(bodies[1].keys == ["command", "access_code", "merchant_identifier", "merchant_reference", "amount", "currency", "language",
                                   "maintenance_reference", "signature"])
        #expect(bodies[2].keys == ["command", "access_code", "merchant_identifier", "merchant_reference", "language", "signature"])
        for sent in bodies { try PayFortSignature().verify(sent, phrase: credentials.requestPhrase) }
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

    @Test("the app half holds no credential and cannot verify or confirm")
    func appHalf() {
        let half: any GatewayAppHalf = app
        #expect(!(half is any GatewayServerHalf))
    }
}
