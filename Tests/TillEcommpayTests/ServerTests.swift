import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillEcommpayServer
import TillOrchestration

/// ``EcommpayServer`` with a ``RecordingTransport``. Expected signatures come from the tests' own signer
/// (``TestSigner``), never from ``EcommpaySigner``.
@Suite("ecommpay server")
struct ServerTests {
    // MARK: Prepare

    /// The params of an SDK preparation, parsed; nothing is signed at Prepare (the SDK's own string is, at Submit).
    static func sdkParams(_ preparation: Preparation, method: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> OrderedJSON {
        let text = try #require(preparation.parameters[EcommpayGateway.Parameter.params], sourceLocation: sourceLocation)
        #expect(preparation.parameters[EcommpayGateway.Parameter.signature] == nil, sourceLocation: sourceLocation)
        #expect(preparation.parameters[EcommpayGateway.Parameter.method] == method, sourceLocation: sourceLocation)
        #expect(!text.contains(Setup.secret), sourceLocation: sourceLocation)
        return try OrderedJSON.parse(Data(text.utf8))
    }

    /// What the card intent of ``Setup`` must give, before the action's own members.
    static func expectedParams(operation: String, amount: Int64 = 1999, customer: [(String, OrderedJSON)]? = nil) -> OrderedJSON {
        let people: [(String, OrderedJSON)] = customer ?? [
            ("customer_id", .string("cust-7")), ("customer_email", .string("ada@example.com")), ("customer_phone", .string("447700900123")),
            ("customer_first_name", .string("Ada")), ("customer_last_name", .string("Lovelace")), ("language_code", .string("de")),
        ]
        let members: [(String, OrderedJSON)] = [
            ("project_id", J.int(Int64(Setup.projectId))), ("payment_id", .string(Setup.attempt.rawValue)), ("payment_amount", J.int(amount)),
            ("payment_currency", .string("EUR")), ("payment_description", .string("Green tea")), ("operation_type", .string(operation)),
            ("region_code", .string("DE")),
        ] + people
        return PaymentOptionsTests.sorted(.object(members.map { .init(key: $0.0, value: $0.1) }))
    }

    @Test("prepare a card sale: the SDK's params (by the Payment Page's names), unsigned, no call to ecommpay")
    func prepareCard() async throws {
        let transport = RecordingTransport()
        let preparation = try await Setup.server(transport).prepare(Setup.context())
        try transport.verify()
        #expect(transport.requests.isEmpty)
        #expect(preparation.gateway == "ecommpay")
        #expect(preparation.attempt == Setup.attempt)
        #expect(preparation.method == .card)
        #expect(preparation.amount == Setup.money(1999, "EUR"))
        #expect(preparation.returnURL == Setup.appReturn)
        #expect(Set(preparation.parameters.keys) == ["params", "method"])
        let params = try Self.sdkParams(preparation, method: "card")
        #expect(PaymentOptionsTests.sorted(params) == Self.expectedParams(operation: "sale"))
    }

    @Test("prepare Apple Pay: method apple_pay; no e-mail or phone needed")
    func prepareApplePay() async throws {
        let intent = Setup.intent(method: .applePay, customer: Customer(), country: nil)
        let preparation = try await Setup.server().prepare(Setup.context(intent))
        let params = try Self.sdkParams(preparation, method: "apple_pay")
        #expect(PaymentOptionsTests.sorted(params) == PaymentOptionsTests.sorted(J.object(
            ("project_id", J.int(Int64(Setup.projectId))), ("payment_id", .string(Setup.attempt.rawValue)), ("payment_amount", J.int(1999)),
            ("payment_currency", .string("EUR")), ("payment_description", .string("Green tea")), ("operation_type", .string("sale")))))
    }

    @Test("prepare a verify: amount 0, operation_type verify")
    func prepareVerify() async throws {
        let preparation = try await Setup.server().prepare(Setup.context(Setup.intent(0, action: .verify)))
        let params = try Self.sdkParams(preparation, method: "card")
        #expect(PaymentOptionsTests.sorted(params) == Self.expectedParams(operation: "verify", amount: 0))
        #expect(preparation.amount.minorUnits == 0)
    }

    @Test("prepare an authorisation: operation_type auth; the mock mode handed over when set")
    func prepareAuth() async throws {
        let preparation = try await Setup.server(mock: .decline).prepare(Setup.context(Setup.intent(action: .authorize)))
        let params = try Self.sdkParams(preparation, method: "card")
        #expect(PaymentOptionsTests.sorted(params) == Self.expectedParams(operation: "auth"))
        #expect(preparation.parameters["mock_mode"] == "decline")
        let disabled = try await Setup.server().prepare(Setup.context())
        #expect(disabled.parameters["mock_mode"] == nil)
    }

    @Test("prepare: a locale outside the SDK's languages is left out; a customer's empty fields are left out")
    func prepareLanguage() async throws {
        let customer = Customer(reference: "", email: "ada@example.com", firstName: "", phone: nil, locale: "ru-RU")
        let preparation = try await Setup.server().prepare(Setup.context(Setup.intent(customer: customer)))
        let params = try Self.sdkParams(preparation, method: "card")
        #expect(PaymentOptionsTests.sorted(params) == Self.expectedParams(operation: "sale", customer: [("customer_email", .string("ada@example.com"))]))
        let french = try await Setup.server().prepare(Setup.context(Setup.intent(customer: Customer(email: "a@b.fr", locale: "FR"))))
        #expect(try Self.sdkParams(french, method: "card")["language_code"]?.stringValue == "fr")
    }

    @Test("prepare refuses what the article refuses, naming the PaymentOptions field")
    func prepareRefusals() async {
        let noContact = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(customer: Customer(firstName: "Ada"))))
        }
        #expect(noContact?.field == "additionalFields")
        #expect(noContact?.code == .missingField)
        #expect(noContact?.gateway == "ecommpay")
        let long = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(description: String(repeating: "d", count: 256))))
        }
        #expect(long?.field == "paymentDescription")
        #expect(long?.code == .fieldTooLong)
        let badMail = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(customer: Customer(email: "nope"))))
        }
        #expect(badMail?.field == "additionalFields[0].value")
    }

    // MARK: Payment Page

    @Test("prepare PayPal: the Payment Page forced to paypal-wallet, as the WooCommerce plugin's PayPal gateway forces it")
    func preparePayPal() async throws {
        let preparation = try await Setup.server().prepare(Setup.context(Setup.intent(method: .paypal), returnURL: Setup.webReturn))
        let url = try #require(preparation.parameters[EcommpayGateway.Parameter.pageURL].flatMap(URLComponents.init(string:)))
        #expect(url.queryItems?.first { $0.name == "force_payment_method" }?.value == "paypal-wallet")
    }

    @Test("prepare Alipay: a Payment Page URL, base /payment?, the params, merchant_success_url, the signature last and re-signed here")
    func preparePaymentPage() async throws {
        let transport = RecordingTransport()
        let preparation = try await Setup.server(transport).prepare(Setup.context(Setup.intent(method: .alipay), returnURL: Setup.webReturn))
        #expect(transport.requests.isEmpty)
        #expect(Array(preparation.parameters.keys) == [EcommpayGateway.Parameter.pageURL])
        let url = try #require(preparation.parameters[EcommpayGateway.Parameter.pageURL].flatMap(URL.init(string:)))
        let text = url.absoluteString
        let prefix = "https://paymentpage.ecommpay.test/payment?"
        #expect(text.hasPrefix(prefix))
        let pairs = decodeQuery(String(text.dropFirst(prefix.count)))
        #expect(pairs.last?.0 == "signature")
        #expect(pairs.filter { $0.0 == "signature" }.count == 1)
        let fields = Dictionary(pairs.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        #expect(fields.count == pairs.count)
        #expect(fields["merchant_success_url"] == Setup.webReturn.absoluteString)
        #expect(fields["merchant_fail_url"] == Setup.webReturn.absoluteString)
        #expect(fields["merchant_success_enabled"] == "2" && fields["merchant_fail_enabled"] == "2")
        #expect(fields["merchant_callback_url"] == Setup.notificationURL.absoluteString)
        #expect(fields["project_id"] == String(Setup.projectId))
        #expect(fields["payment_id"] == Setup.attempt.rawValue)
        #expect(fields["payment_amount"] == "1999")
        #expect(fields["payment_currency"] == "EUR")
        #expect(fields["payment_description"] == "Green tea")
        #expect(fields["operation_type"] == "sale")
        #expect(fields["customer_email"] == "ada@example.com")
        #expect(fields["force_payment_method"] == nil)
        // The decoded query, re-signed by the tests' signer, gives the signature it carries.
        let signed = OrderedJSON.object(pairs.dropLast().map { .init(key: $0.0, value: .string($0.1)) })
        #expect(fields["signature"] == TestSigner.sign(signed, secret: Setup.secret))
        // Form encoding: a space is '+', the return URL's own '&' and '=' are escaped.
        #expect(text.contains("payment_description=Green+tea"))
        #expect(!text.contains("till_state=abc&"))
    }

    @Test("a Payment Page method without a return URL is refused naming returnURL")
    func paymentPageNeedsReturn() async {
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(method: .wechatPay), returnURL: nil))
        }
        #expect(error?.field == "returnURL")
        #expect(error?.code == .misconfigured)
    }

    /// The URL carries only the top-level scalars; the signature is taken over the whole object. Options with
    /// `recurrentInfo` or `threeDSecureInfo` are signed over members the URL never carries, so the Payment Page
    /// cannot verify them.
    @Test("every member signed into a Payment Page URL is in the URL")
    func paymentPageSignsWhatItSends() throws {
        var options = PaymentOptionsTests.valid()
        options.recurrentInfo = .init(kind: .oneClick)
        let url = try Setup.server().paymentPageURL(options, returnURL: Setup.webReturn)
        let pairs = decodeQuery(url.query ?? "")
        let signed = OrderedJSON.object(pairs.dropLast().map { .init(key: $0.0, value: .string($0.1)) })
        // Was a known issue, fixed in the module.
        #expect(pairs.last?.1 == TestSigner.sign(signed, secret: Setup.secret))
        
        // Without nested members the URL verifies.
        let plain = try Setup.server().paymentPageURL(PaymentOptionsTests.valid(), returnURL: Setup.webReturn)
        let plainPairs = decodeQuery(plain.query ?? "")
        #expect(plainPairs.last?.1 == TestSigner.sign(.object(plainPairs.dropLast().map { .init(key: $0.0, value: .string($0.1)) }), secret: Setup.secret))
    }

    @Test("hide_saved_wallets: signed as 1 and sent as 1 in a Payment Page URL")
    func paymentPageBool() throws {
        var options = PaymentOptionsTests.valid()
        options.hideSavedWallets = true
        let url = try Setup.server().paymentPageURL(options, returnURL: Setup.webReturn)
        let pairs = decodeQuery(url.query ?? "")
        #expect(pairs.contains { $0 == ("hide_saved_wallets", "1") })
        #expect(pairs.last?.1 == TestSigner.sign(.object(pairs.dropLast().map { .init(key: $0.0, value: .string($0.1)) }), secret: Setup.secret))
    }

    @Test("the PHP SDK's Payment Page URL test: the same signature for the same parameters")
    func phpPaymentPageVector() throws {
        let cases = try #require(try jsonFixture("payment-page-urls.json")["cases"]?.arrayValue)
        let php = try #require(cases.first { $0["id"]?.stringValue == "php_payment_page_url" })
        let params = try #require(php["params_in_order"])
        let expected = try #require(php["expected_url"]?.stringValue)
        let secret = try #require(php["secret"]?.stringValue)
        let query = try #require(URL(string: expected)?.query)
        let pairs = decodeQuery(query)
        #expect(pairs.dropLast().map(\.0) == params.objectMembers?.map(\.key))
        #expect(pairs.last?.1 == EcommpaySigner.sign(params, secret: secret))
        #expect(pairs.last?.1 == TestSigner.sign(params, secret: secret))
        // The URL's text: form encoding as the module writes it (space '+', '&' escaped, the signature's '/', '+', '=' escaped).
        let ours = "https://paymentpage.ecommpay.com/payment?" + FormFields.encode(pairs.dropLast().map { ($0.0, $0.1) })
            + "&signature=" + FormFields.encode([("", EcommpaySigner.sign(params, secret: secret))]).dropFirst()
        #expect(ours == expected)
    }

    // MARK: Callbacks

    static func callbackMembers(status: String, cascading: Bool? = nil, project: Int = Setup.projectId, sum: (Int64, String)? = (1999, "EUR"),
                                payment: String = Setup.attempt.rawValue, operation: String = "sale") -> [OrderedJSON.Member] {
        var paymentMembers: [(String, OrderedJSON)] = [("id", .string(payment)), ("type", .string("purchase")), ("status", .string(status))]
        if let sum { paymentMembers.append(("sum", J.object(("amount", J.int(sum.0)), ("currency", .string(sum.1))))) }
        if let cascading { paymentMembers.append(("cascading_with_redirect", .bool(cascading))) }
        return J.members(
            ("project_id", J.int(Int64(project))),
            ("payment", .object(paymentMembers.map { .init(key: $0.0, value: $0.1) })),
            ("account", J.object(("number", .string("400000******0002")), ("type", .string("visa")))),
            ("operation", J.object(("id", J.int(28_000_000_001)), ("type", .string(operation)), ("status", .string(status)),
                                   ("code", .string("0")), ("message", .string("Success")))))
    }

    static func notification(_ members: [OrderedJSON.Member], secret: String = Setup.secret, atGeneral: Bool = false) -> IncomingNotification {
        IncomingNotification(headers: ["Content-Type": "application/json"], body: TestSigner.signedBody(members, secret: secret, atGeneral: atGeneral))
    }

    @Test("callback statuses: success paid, awaiting capture authorized, decline failed, cascading decline pending, cancelled/canceled, refunds, unknown kept",
          arguments: [
            ("success", false, PaymentStatus.paid), ("awaiting capture", false, .authorized), ("decline", false, .failed),
            ("decline", true, .pending), ("cancelled", false, .cancelled), ("canceled", false, .cancelled), ("refunded", false, .refunded),
            ("partially refunded", false, .partiallyRefunded), ("reversed", false, .refunded), ("processing", false, .pending),
            ("awaiting 3ds result", false, .pending), ("error", false, .failed), ("expired", false, .expired),
            ("awaiting magic", false, PaymentStatus(rawValue: "ecommpay_status_awaiting_magic")),
          ] as [(String, Bool, PaymentStatus)])
    func callbackStatus(_ status: String, _ cascading: Bool, _ expected: PaymentStatus) throws {
        let verified = try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: status, cascading: cascading)))
        let report = verified.report
        #expect(report.status == expected)
        #expect(report.gateway == "ecommpay")
        #expect(report.attempt == Setup.attempt)
        #expect(report.gatewayReference == Setup.attempt.rawValue)
        if expected == .refunded || expected == .partiallyRefunded {
            // A sale operation gives nothing back: no refund amount, `payment.sum` read as the balance.
            #expect(report.amount == nil && report.remaining == Setup.money(1999, "EUR"))
        } else {
            #expect(report.amount == Setup.money(1999, "EUR") && report.remaining == nil)
        }
        #expect(report.gatewayStatus == status + (cascading ? " (cascading_with_redirect)" : ""))
        #expect(report.gatewayCode == "0")
        #expect(report.gatewayMessage == "Success")
        #expect(report.eventID == "\(Setup.attempt.rawValue):28000000001:sale:\(status):\(status):\(cascading)")
        #expect(verified.acknowledgement.statusCode == 200)
        #expect(verified.acknowledgement.contentType == "text/plain")
        #expect(verified.acknowledgement.body == Data("OK".utf8))
    }

    @Test("a refund callback: the operation's own sum_initial is the refund, payment.sum the balance; a declined refund reports no amount; a status answer adds its successful refunds up",
          arguments: [("refund", "success", "partially refunded", Int64(700), Int64(1299), Int64?(700)),
                      ("reversal", "success", "reversed", 1999, 0, 1999),
                      ("refund", "decline", "partially refunded", 500, 1299, nil),
                      ("refund", "processing", "partially refunded", 500, 1299, nil)])
    func refundCallback(_ type: String, _ operationStatus: String, _ status: String, _ refund: Int64, _ balance: Int64, _ expected: Int64?) throws {
        var members = Self.callbackMembers(status: status, sum: (balance, "EUR"), operation: type)
        members = members.map { member in
            guard member.key == "operation" else { return member }
            return .init(key: "operation", value: J.object(("id", J.int(28_000_000_002)), ("type", .string(type)), ("status", .string(operationStatus)),
                                                           ("sum_initial", J.object(("amount", J.int(refund)), ("currency", .string("EUR")))),
                                                           ("sum_converted", J.object(("amount", J.int(refund * 2)), ("currency", .string("RUB")))),
                                                           ("code", .string("0")), ("message", .string("Success"))))
        }
        let report = try Setup.server().verifyNotification(Self.notification(members)).report
        #expect(report.amount == expected.map { Setup.money($0, "EUR") })
        #expect(report.remaining == Setup.money(balance, "EUR"))
        #expect(report.refundedTotal == nil)
        #expect(report.eventID.contains(":28000000002:\(type):\(operationStatus):"))
    }

    @Test("the fields Fixtures/refund-fields.json names (from ecommpay's own plugins) decide a refund: its amount at the refund_amount path, the balance at the balance path, the types and the success status as listed")
    func refundFieldsFixture() throws {
        let facts = try #require(try JSONSerialization.jsonObject(with: fixture("refund-fields.json")) as? [String: Any])
        func path(_ key: String) throws -> [String] { try #require((facts[key] as? [String: Any])?["path"] as? [String]) }
        #expect(try path("refund_amount") == ["operation", "sum_initial", "amount"] && path("balance") == ["payment", "sum", "amount"])
        let types = try #require((facts["refund_operation_types"] as? [String: Any])?["values"] as? [String])
        let success = try #require((facts["operation_succeeded"] as? [String: Any])?["value"] as? String)
        for type in types {
            #expect(EcommpayServer.isRefund(J.object(("type", .string(type)))))
            var members = Self.callbackMembers(status: "partially refunded", sum: (1500, "EUR"), operation: type)
            members = members.map { member in
                member.key != "operation" ? member : .init(key: "operation", value: J.object(
                    ("id", J.int(9)), ("type", .string(type)), ("status", .string(success)),
                    ("sum_initial", J.object(("amount", J.int(499)), ("currency", .string("EUR"))))))
            }
            let report = try Setup.server().verifyNotification(Self.notification(members)).report
            #expect(report.amount == Setup.money(499, "EUR") && report.remaining == Setup.money(1500, "EUR"), "\(type)")
        }
        #expect(!EcommpayServer.isRefund(J.object(("type", .string("sale")))))
    }

    @Test("a refund operation without its own amount is refused by name, not read from the balance")
    func refundWithoutAmount() throws {
        var members = Self.callbackMembers(status: "partially refunded", sum: (1299, "EUR"), operation: "refund")
        members = members.map { member in
            member.key != "operation" ? member : .init(key: "operation", value: J.object(("id", J.int(7)), ("type", .string("refund")), ("status", .string("success"))))
        }
        #expect(throws: CheckoutError.self) { try Setup.server().verifyNotification(Self.notification(members)) }
        do { _ = try Setup.server().verifyNotification(Self.notification(members)) } catch let error as CheckoutError {
            #expect(error.field == "body.operation.sum_initial" && error.code == .missingField)
        }
    }

    @Test("a cascading decline and the final decline of the same payment are two events")
    func cascadingEvents() throws {
        let first = try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: "decline", cascading: true)))
        let last = try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: "decline", cascading: false)))
        #expect(first.report.eventID != last.report.eventID)
        #expect(first.report.status == .pending)
        #expect(last.report.status == .failed)
    }

    @Test("a callback signed at general.signature with general.project_id is read the same")
    func callbackGeneral() throws {
        var members = Self.callbackMembers(status: "success")
        members.removeFirst()
        members.insert(.init(key: "general", value: J.object(("project_id", J.int(Int64(Setup.projectId))), ("payment_id", .string(Setup.attempt.rawValue)))),
                       at: 0)
        let verified = try Setup.server().verifyNotification(Self.notification(members, atGeneral: true))
        #expect(verified.report.status == .paid)
    }

    @Test("refused: another project's callback, a wrong key, a paid callback without its sum, no payment")
    func callbackRefusals() throws {
        let other = #expect(throws: CheckoutError.self) {
            _ = try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: "success", project: 999)))
        }
        #expect(other?.field == "body.project_id")
        #expect(other?.category == .verification)
        let wrongKey = #expect(throws: CheckoutError.self) {
            _ = try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: "success"), secret: "other"))
        }
        #expect(wrongKey?.code == .signatureMismatch)
        #expect(wrongKey?.field == "body.signature")
        let noSum = #expect(throws: CheckoutError.self) {
            _ = try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: "success", sum: nil)))
        }
        #expect(noSum?.field == "body.payment.sum")
        // A declined callback without a sum is still read.
        #expect(try Setup.server().verifyNotification(Self.notification(Self.callbackMembers(status: "decline", sum: nil))).report.status == .failed)
        let noPayment = #expect(throws: CheckoutError.self) {
            _ = try Setup.server().verifyNotification(Self.notification(J.members(("project_id", J.int(Int64(Setup.projectId))))))
        }
        #expect(noPayment?.field == "body.payment.id")
        let unsigned = #expect(throws: CheckoutError.self) {
            _ = try Setup.server().verifyNotification(IncomingNotification(body: OrderedJSON.object(Self.callbackMembers(status: "success")).serialized()))
        }
        #expect(unsigned?.field == "body.signature")
    }

    @Test("claimedAttempt reads payment.id or general.payment_id without verifying")
    func claimed() {
        let server = Setup.server()
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data(#"{"payment":{"id":"a-1"}}"#.utf8))) == AttemptReference(rawValue: "a-1"))
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data(#"{"general":{"payment_id":"a-2"}}"#.utf8))) == AttemptReference(rawValue: "a-2"))
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data("nope".utf8))) == nil)
    }

    @Test("the status table (Python SDK constants, PHP's canceled and partially reversed, the WooCommerce plugin's list)")
    func statusTable() {
        let table: [(String, PaymentStatus)] = [
            ("success", .paid), ("decline", .failed), ("awaiting 3ds result", .pending), ("awaiting redirect result", .pending),
            ("awaiting customer", .pending), ("awaiting clarification", .pending), ("awaiting capture", .authorized), ("cancelled", .cancelled),
            ("canceled", .cancelled), ("refunded", .refunded), ("partially refunded", .partiallyRefunded), ("processing", .pending),
            ("error", .failed), ("reversed", .refunded), ("partially reversed", .partiallyRefunded), ("internal error", .failed),
            ("external error", .failed), ("expired", .expired), ("awaiting retry", .pending), ("initial", .pending),
        ]
        for (raw, status) in table { #expect(EcommpayServer.paymentStatus(raw) == status, "\(raw)") }
        #expect(EcommpayServer.paymentStatus("decline", cascading: true) == .pending)
        #expect(EcommpayServer.paymentStatus("success", cascading: true) == .paid)
        #expect(EcommpayServer.paymentStatus("invoice sent") == PaymentStatus(rawValue: "ecommpay_status_invoice_sent"))
    }

    // MARK: Gate

    /// The request's JSON body, its `general.signature` checked against the tests' signer.
    static func signedRequest(_ request: TransportRequest, sourceLocation: SourceLocation = #_sourceLocation) throws -> OrderedJSON {
        #expect(request.method == .post, sourceLocation: sourceLocation)
        #expect(request.headers["Content-Type"] == "application/json", sourceLocation: sourceLocation)
        let body = try OrderedJSON.parse(try #require(request.body, sourceLocation: sourceLocation))
        let signature = try #require(body["general"]?["signature"]?.stringValue, sourceLocation: sourceLocation)
        #expect(signature == TestSigner.sign(TestSigner.unsigned(body), secret: Setup.secret), sourceLocation: sourceLocation)
        #expect(body["signature"] == nil, sourceLocation: sourceLocation)
        return body
    }

    static func statusAnswer(status: String = "success", payment: String = Setup.attempt.rawValue) -> [OrderedJSON.Member] {
        J.members(
            ("project_id", J.int(Int64(Setup.projectId))),
            ("payment", J.object(("id", .string(payment)), ("status", .string(status)), ("sum", J.object(("amount", J.int(1999)), ("currency", .string("EUR")))))),
            ("operations", .array([J.object(("id", J.int(5)), ("type", .string("sale")), ("status", .string(status)), ("code", .string("0")))])))
    }

    @Test("inquire: POST /v2/payment/status with general {project_id, payment_id, signature}; the answer read")
    func inquire() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v2/payment/status", respond: Setup.json(.object(Self.statusAnswer())))
        let report = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt))
        try transport.verify()
        let request = try #require(transport.requests.first)
        #expect(request.url.absoluteString == "https://api.ecommpay.test/v2/payment/status")
        let body = try Self.signedRequest(request)
        #expect(body["general"]?["project_id"] == J.int(Int64(Setup.projectId)))
        #expect(body["general"]?["payment_id"]?.stringValue == Setup.attempt.rawValue)
        #expect(report.status == .paid)
        #expect(report.amount == Setup.money(1999, "EUR"))
        #expect(report.attempt == Setup.attempt)
    }

    @Test("inquire a refunded payment: the successful refund and reversal operations' own sum_initial added up, payment.sum the balance, a declined refund left out")
    func inquireRefunds() async throws {
        func op(_ id: Int64, _ type: String, _ status: String, _ amount: Int64) -> OrderedJSON {
            J.object(("id", J.int(id)), ("type", .string(type)), ("status", .string(status)),
                     ("sum_initial", J.object(("amount", J.int(amount)), ("currency", .string("EUR")))), ("code", .string("0")))
        }
        let members = J.members(
            ("project_id", J.int(Int64(Setup.projectId))),
            ("payment", J.object(("id", .string(Setup.attempt.rawValue)), ("status", .string("partially refunded")),
                                 ("sum", J.object(("amount", J.int(1199)), ("currency", .string("EUR")))))),
            ("operations", .array([op(5, "sale", "success", 1999), op(6, "refund", "success", 500), op(7, "refund", "decline", 900),
                                   op(8, "refund", "success", 300)])))
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v2/payment/status", respond: Setup.json(.object(members)))
        let report = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt))
        #expect(report.status == .partiallyRefunded)
        #expect(report.amount == nil && report.refundedTotal == Setup.money(800, "EUR") && report.remaining == Setup.money(1199, "EUR"))
        // The money rule: 8.00 refunded of 19.99 leaves 11.99, as the balance says.
        #expect(AttemptPolicy.verdict(for: report, on: .paid, amount: Setup.money(1999, "EUR"), source: .inquiry)
            == .refund(status: .partiallyRefunded, refundedMinorUnits: 800))
    }

    @Test("inquire: answers signed with the project's key are accepted (top level or general), others refused")
    func inquireSignedAnswer() async throws {
        for atGeneral in [false, true] {
            var members = Self.statusAnswer(status: "awaiting capture")
            if atGeneral { members.insert(.init(key: "general", value: J.object(("project_id", J.int(Int64(Setup.projectId))))), at: 0) }
            let transport = RecordingTransport()
            transport.expect(.post, path: "/v2/payment/status",
                             respond: TransportResponse(statusCode: 200, body: TestSigner.signedBody(members, secret: Setup.secret, atGeneral: atGeneral)))
            #expect(try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt)).status == .authorized)

            let forged = RecordingTransport()
            forged.expect(.post, path: "/v2/payment/status",
                          respond: TransportResponse(statusCode: 200, body: TestSigner.signedBody(members, secret: "someone else", atGeneral: atGeneral)))
            let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(forged).inquire(InquiryQuery(attempt: Setup.attempt)) }
            #expect(error?.code == .signatureMismatch)
            #expect(error?.field == "v2/payment/status.signature")
        }
    }

    @Test("inquire: not found is attempt_not_found; HTTP 500 and an unreadable body are unknown outcomes; another payment refused")
    func inquireFailures() async throws {
        // The shape of a not-found answer: `errors[]` of {code, message} (the WooCommerce plugin's EcpGatewayInfoError);
        // no vendor sample of the exact body was found.
        let notFound = RecordingTransport()
        notFound.expect(.post, path: "/v2/payment/status", respond: Setup.json(J.object(
            ("errors", .array([J.object(("code", .string("3061")), ("message", .string("Payment not found")))])))))
        let missing = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(notFound).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(missing?.code == .attemptNotFound)
        #expect(missing?.field == "payment_id")
        #expect(missing?.message == "Payment not found")

        let broken = RecordingTransport()
        broken.expect(.post, path: "/v2/payment/status", respond: TransportResponse(statusCode: 500, body: Data("oops".utf8)))
        let server = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(broken).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(server?.code == .gatewayError)
        #expect(server?.category == .unknownOutcome)
        #expect(server?.field == "v2/payment/status")

        let garbled = RecordingTransport()
        garbled.expect(.post, path: "/v2/payment/status", respond: TransportResponse(statusCode: 200, body: Data("<html>".utf8)))
        let unreadable = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(garbled).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(unreadable?.code == .malformedBody)
        #expect(unreadable?.category == .unknownOutcome)

        let another = RecordingTransport()
        another.expect(.post, path: "/v2/payment/status", respond: Setup.json(.object(Self.statusAnswer(payment: "att0000000000000000000002"))))
        let mismatch = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(another).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(mismatch?.field == "status.payment.id")
        #expect(mismatch?.category == .unknownOutcome)

        let down = RecordingTransport()
        down.expect(.post, path: "/v2/payment/status", fail: TransportError(.notSent, "refused"))
        await #expect(throws: CheckoutError.self) { _ = try await Setup.server(down).inquire(InquiryQuery(attempt: Setup.attempt)) }
    }

    @Test("capture: POST /v2/payment/card/capture with general and payment {amount, currency}; the request's status read")
    func capture() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v2/payment/card/capture", respond: Setup.json(J.object(
            ("status", .string("success")), ("request_id", .string("req-1")), ("project_id", J.int(Int64(Setup.projectId))),
            ("payment_id", .string(Setup.attempt.rawValue)))))
        let answer = try await Setup.server(transport).capture(Setup.attempt, amount: Setup.money(1500, "EUR"))
        try transport.verify()
        #expect(answer == EcommpayServer.CaptureAnswer(status: "success", requestId: "req-1"))
        let request = try #require(transport.requests.first)
        #expect(request.url.absoluteString == "https://api.ecommpay.test/v2/payment/card/capture")
        let body = try Self.signedRequest(request)
        #expect(body["general"]?["project_id"] == J.int(Int64(Setup.projectId)))
        #expect(body["general"]?["payment_id"]?.stringValue == Setup.attempt.rawValue)
        #expect(body["payment"] == J.object(("amount", J.int(1500)), ("currency", .string("EUR"))))
    }

    @Test("capture refused by Gate: declined with Gate's code and message; HTTP 500 an unknown outcome")
    func captureRefused() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v2/payment/card/capture", respond: Setup.json(J.object(
            ("status", .string("error")), ("code", J.int(3061)), ("message", .string("Transaction not found")))))
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server(transport).capture(Setup.attempt, amount: Setup.money(1500, "EUR"))
        }
        #expect(error?.code == .declined)
        #expect(error?.gatewayCode == "3061")
        #expect(error?.message == "Transaction not found")
        #expect(error?.field == "capture")

        let broken = RecordingTransport()
        broken.expect(.post, path: "/v2/payment/card/capture", respond: TransportResponse(statusCode: 500))
        let down = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server(broken).capture(Setup.attempt, amount: Setup.money(1500, "EUR"))
        }
        #expect(down?.category == .unknownOutcome)
        #expect(down?.field == "v2/payment/card/capture")
    }
}
