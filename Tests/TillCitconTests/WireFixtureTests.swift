import Crypto
import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillCitcon
@testable import TillCitconServer
import TillOrchestration

/// The vendor-sourced wire fixtures in `Fixtures/wire/` (each names its source), read as the plugin
/// reads them: every response decoded with the plugin's own models and mapped, every request the
/// plugin makes compared field by field with the vendor's, and the IPN fixtures verified.
enum Wire {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/wire")

    /// A fixture file as JSON; a missing file is a failure, never a skip.
    static func load(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(name) is not a JSON object")
    }

    /// Every fixture file in the folder (the README aside).
    static func allNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
    }

    /// `value` as JSON bytes.
    static func data(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    }

    /// A recorded answer: `http.status` (200 by default) and `body`.
    static func response(_ example: [String: Any]) throws -> TransportResponse {
        let status = ((example["http"] as? [String: Any])?["status"] as? Int) ?? 200
        return TransportResponse(statusCode: status, headers: ["Content-Type": "application/json; charset=utf-8"],
                                 body: try data(try #require(example["body"])))
    }

    /// The examples of a fixture: itself, then each of `other_examples` that has a body.
    static func examples(_ fixture: [String: Any]) -> [[String: Any]] {
        [fixture] + ((fixture["other_examples"] as? [[String: Any]]) ?? []).filter { $0["body"] is [String: Any] }
    }

    /// The leaves of a JSON value by path (`payment.client`, `goods.data[0].name`): arrays of objects
    /// by index, arrays of scalars (and empty arrays) as one leaf.
    static func leaves(_ value: Any, path: String = "") -> [String: Any] {
        if let object = value as? [String: Any] {
            var out: [String: Any] = [:]
            for (key, member) in object { out.merge(leaves(member, path: path.isEmpty ? key : "\(path).\(key)")) { a, _ in a } }
            return out
        }
        if let array = value as? [Any], !array.isEmpty, array.allSatisfy({ $0 is [String: Any] }) {
            var out: [String: Any] = [:]
            for (index, item) in array.enumerated() { out.merge(leaves(item, path: "\(path)[\(index)]")) { a, _ in a } }
            return out
        }
        return [path: value]
    }

    /// JSON equality of two leaves: numbers by value (`100` equals `100.0`), the rest by their text.
    static func same(_ a: Any, _ b: Any) -> Bool {
        if let x = a as? String, let y = b as? String { return x == y }
        if a is String || b is String { return false }
        if let x = a as? NSNumber, let y = b as? NSNumber { return x.doubleValue == y.doubleValue }
        guard let x = try? data(a), let y = try? data(b) else { return false }
        return x == y
    }

    static let attemptHint = "the attempt reference stands for the recorder's reference"
}

@Suite("Citcon wire fixtures: responses")
struct WireResponseTests {
    let api = CitconAPI(gateway: "citcon", environment: .custom(Fixtures.base), transport: RecordingTransport())

    @Test("every fixture file names its source and is read by a test here")
    func everyFixtureNamesItsSource() throws {
        let covered: Set<String> = [
            "access-token-request.json", "access-token-response.json", "cancel-request.json", "cancel-response.json", "capture-request.json",
            "capture-response.json", "charge-request-alipay.json", "charge-request-card.json", "charge-request-paypal.json",
            "charge-request-upop.json", "charge-request-wechatpay.json", "charge-response-alipay.json", "charge-response-paypal.json",
            "charge-response-upop.json", "charge-response-wechatpay.json", "error-response.json", "inquire-response.json",
            "ipn-charge.json", "ipn-kinds.json", "refund-request.json", "refund-response.json",
        ]
        let names = try Wire.allNames()
        #expect(Set(names) == covered, "a new fixture needs a test")
        for name in names {
            let fixture = try Wire.load(name)
            #expect((fixture["source"] as? String)?.isEmpty == false, "\(name) names no source")
        }
    }

    @Test("the access-token answers: permission (singular), expiry in milliseconds (2022 manual) or seconds (2025 sandbox)")
    func accessToken() throws {
        let fixture = try Wire.load("access-token-response.json")
        let manual = try api.decodeAnswer(try Wire.response(fixture), as: CitconAccessToken.self)
        #expect(manual.permission == ["inquiry", "charge", "vault", "installment"])
        #expect(manual.tokenType == "client")
        #expect(manual.expiry == 1_658_662_133_487)
        #expect(manual.expiryDate == Date(timeIntervalSince1970: 1_658_662_133.487))

        let recorded = try #require((fixture["other_examples"] as? [[String: Any]])?.first)
        let sandbox = try api.decodeAnswer(try Wire.response(recorded), as: CitconAccessToken.self)
        #expect(sandbox.accessToken == "<ACCESS_TOKEN>")
        #expect(sandbox.permission?.contains("refund") == true)
        #expect(sandbox.expiryDate == Date(timeIntervalSince1970: 1_762_681_312))
        // Both readings land within a day of their token's issue, as the fixture's disagreement notes.
        #expect(abs(manual.expiryDate!.timeIntervalSince1970 - 1_658_575_734) < 100_000)
    }

    @Test("the recorded charge answers decode; the mobile_browser redirect is what the app opens", arguments: [
        ("charge-response-wechatpay.json", PaymentMethod.wechatPay), ("charge-response-alipay.json", .alipay),
        ("charge-response-upop.json", .unionPay), ("charge-response-paypal.json", .paypal),
    ])
    func chargeAnswers(name: String, method: PaymentMethod) async throws {
        let fixture = try Wire.load(name)
        let data = try #require((fixture["body"] as? [String: Any])?["data"] as? [String: Any])
        let charge = try api.decodeAnswer(try Wire.response(fixture), as: CitconCharge.self)
        #expect(charge.id == data["id"] as? String)
        #expect(charge.reference == data["reference"] as? String)
        #expect(charge.status == "initiated")
        #expect(CitconGateway.status(charge.status ?? "") == .pending)
        #expect(charge.payment?.method == CitconMethods.wireName(of: method))
        let entries = try #require(charge.payment?.client)
        #expect(entries.allSatisfy { $0.content != nil && $0.method == "GET" })
        let browser = try #require((data["payment"] as? [String: Any]).flatMap { $0["client"] as? [[String: Any]] }?
            .first { $0["client"] as? String == "mobile_browser" }?["content"] as? String)
        #expect(charge.launch() == .page(URL(string: browser)!))

        // Through prepare, as the server meets it, and present, as the app does.
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/charges", respond: try Wire.response(fixture))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("client", type: "client"))
        let server = Fixtures.server(transport, settings: CitconSettings(walletClient: .mobileBrowser))
        var intent = Fixtures.intent(method: method)
        intent.amount = Money(minorUnits: Int64(data["amount"] as? Int ?? 0), currency: try Currency(code: "USD"))
        let returnURL = method == .wechatPay ? Fixtures.universalReturn : Fixtures.schemeReturn
        let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: try #require(charge.reference)), returnURL: returnURL,
                                     notificationURL: Fixtures.notificationURL)
        let preparation = try await server.prepare(context)
        try transport.verify()
        #expect(preparation.gatewayReference == charge.id)
        #expect(preparation.parameters["launch"] == "page")
        #expect(preparation.parameters["page_url"] == browser)
        #expect(try await Fixtures.app().present(preparation, input: .start) == .openURL(URL(string: browser)!, handoff: .webPage))
    }

    @Test("a mobile_native entry's content is a JSON text of the wallet's parameters (the keys the Android SDK reads)", arguments: [
        ("wechatpay", #"{"appid":"wx_example","partnerid":"1900000109","package":"Sign=WXPay","noncestr":"5K8264ILTKCH16CQ2502SI8ZNMTM67VS","timestamp":1412000000,"prepayid":"wx201410272009395522657a690389285100","sign":"C380BEC2BFD727A4B6845133519F3AD6"}"#,
         ["appid", "partnerid", "package", "noncestr", "timestamp", "prepayid", "sign"]),
        ("alipay", #"{"orderSpec":"partner=\"2088\"&seller_id=\"x\"","signedString":"c2lnbmVk"}"#, ["orderSpec", "signedString"]),
        ("upop", #"{"tn":"771234567890123456"}"#, ["tn"]),
    ])
    func nativeContent(method: String, content: String, keys: [String]) throws {
        // No source shows a value (the fixtures say so): these values are illustrative; the keys are
        // the Android SDK's (zhuanglm/cpay_upi APIManager.java, requestOrder).
        let body = try Wire.data(["status": "success", "app": "citcon_upi", "version": "v1.0.0",
                                  "data": ["object": "charge", "id": "2000470537621948100613", "reference": "r", "amount": 1, "currency": "USD",
                                           "status": "initiated",
                                           "payment": ["method": method, "client": [["client": "mobile_native", "format": "app", "method": "GET",
                                                                                      "content": content]]]]] as [String: Any])
        let charge = try api.decodeAnswer(TransportResponse(statusCode: 200, headers: [:], body: body), as: CitconCharge.self)
        guard case .wallet(let wallet, let parameters)? = charge.launch() else { Issue.record("no wallet launch"); return }
        #expect(wallet == method)
        #expect(Set(parameters.keys) == Set(keys))
        if method == "wechatpay" { #expect(parameters["timestamp"] == "1412000000") }
        if method == "alipay" { #expect(parameters["orderSpec"] == #"partner="2088"&seller_id="x""#) }
        // Content that is not a JSON object is handed over as it is.
        #expect(CitconLaunch.walletParameters("weixin://wxpay/bizpayurl?pr=abc") == ["content": "weixin://wxpay/bizpayurl?pr=abc"])
    }

    @Test("the inquiry answers decode and map: succeeded is paid with its amount, authorized is authorized")
    func inquiry() async throws {
        let fixture = try Wire.load("inquire-response.json")
        let server = Fixtures.server(RecordingTransport())
        var expected: [(String, PaymentStatus, Int64)] = []
        var seen: [(String, PaymentStatus, Int64)] = []
        for example in Wire.examples(fixture) {
            let data = try #require((example["body"] as? [String: Any])?["data"] as? [String: Any])
            let charge = try api.decodeAnswer(try Wire.response(example), as: CitconCharge.self)
            let report = try server.report(fromInquiry: charge, attempt: AttemptReference(rawValue: try #require(data["reference"] as? String)))
            seen.append((charge.id, report.status, report.amount?.minorUnits ?? -1))
            let status = data["status"] as? String == "authorized" ? PaymentStatus.authorized : .paid
            expected.append((try #require(data["id"] as? String), status, Int64(try #require(data["amount"] as? Int))))
            #expect(report.amount?.currency.code == "USD")
            #expect(charge.amountRefunded == nil && charge.amountCaptured == nil)
        }
        #expect(seen.map(\.0) == expected.map(\.0))
        #expect(seen.map(\.1) == expected.map(\.1))
        #expect(seen.map(\.2) == expected.map(\.2))

        // Through inquire, as the server calls it: GET /v1/transactions/{id} with the server token.
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.get, path: "/v1/transactions/8b3ac410a2d911ec8410e9f493c7d3ef", respond: try Wire.response(fixture))
        let report = try await Fixtures.server(transport).inquire(InquiryQuery(attempt: AttemptReference(rawValue: "sdk_digit_1647181572.353276"),
                                                                               gatewayReference: "8b3ac410a2d911ec8410e9f493c7d3ef"))
        try transport.verify()
        #expect(report.status == .paid)
        #expect(report.amount == Money(minorUnits: 1, currency: try Currency(code: "USD")))
        #expect(transport.requests[1].body == nil)
        #expect(transport.requests[1].headers["Authorization"] == "Bearer server")
    }

    @Test("the refund answers: 200 succeeded with the refund's own id; 406 code 4202 is a definite refusal")
    func refunds() async throws {
        let fixture = try Wire.load("refund-response.json")
        let operation = try api.decodeAnswer(try Wire.response(fixture), as: CitconOperation.self)
        #expect(operation.object == "refund")
        #expect(operation.id == "2000470575137023123461")
        #expect(operation.reference == "REFUND-PAYPAL-005")
        #expect(operation.amount == 100 && operation.amountRefunded == 100)
        #expect(operation.status == "succeeded")

        let refused = try #require((fixture["other_examples"] as? [[String: Any]])?.first)
        let error = try #require(throws: CheckoutError.self) { try api.decodeAnswer(try Wire.response(refused), as: CitconOperation.self) }
        #expect(error.category == .declinedHard)
        #expect(error.gatewayCode == "4202")
        #expect(error.gatewayMessage == "refund failed")
    }

    @Test("the cancel answers: status canceled, the cancelled charge's id")
    func cancels() throws {
        for example in Wire.examples(try Wire.load("cancel-response.json")) {
            let data = try #require((example["body"] as? [String: Any])?["data"] as? [String: Any])
            let operation = try api.decodeAnswer(try Wire.response(example), as: CitconOperation.self)
            #expect(operation.object == "cancel")
            #expect(operation.id == data["id"] as? String)
            #expect(operation.reference == data["reference"] as? String)
            #expect(operation.status == "canceled")
            #expect(CitconGateway.status(operation.status ?? "") == .cancelled)
        }
    }

    @Test("the failure envelopes: a repeated reference is HTTP 400 code 4100 (or the iOS guide's 4000 'duplicate request'); 4202 a refusal")
    func failures() async throws {
        let fixture = try Wire.load("error-response.json")
        let duplicate = try #require(throws: CheckoutError.self) { try api.decodeAnswer(try Wire.response(fixture), as: CitconCharge.self) }
        #expect(duplicate.category == .invalidInput)
        #expect(duplicate.field == "citcon.transaction.reference")
        #expect(duplicate.gatewayCode == "4100")
        #expect(duplicate.gatewayMessage == "duplicate request")

        #expect(CitconAPI.isDuplicateReference(CitconFailure(code: "4000", message: "duplicate request")))
        #expect(!CitconAPI.isDuplicateReference(CitconFailure(code: "4000", message: "bad request")))

        for example in Wire.examples(fixture).dropFirst() {
            let error = try #require(throws: CheckoutError.self) { try api.decodeAnswer(try Wire.response(example), as: CitconOperation.self) }
            #expect(error.gatewayCode == "4202")
            #expect(error.category == .declinedHard)
        }

        // At charge creation the duplicate is a refusal, not an unknown outcome, and nothing is cancelled.
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/charges", respond: try Wire.response(fixture))
        let error = try await #require(throws: CheckoutError.self) {
            try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent()))
        }
        #expect(error.gatewayCode == "4100")
        try transport.verify()
    }

    @Test("capture: no source shows a request or an answer, and Till sends none")
    func captureAbsent() async throws {
        #expect(try Wire.load("capture-request.json")["body"] is NSNull)
        #expect(try Wire.load("capture-response.json")["body"] is NSNull)
        let transport = RecordingTransport()
        let error = try await #require(throws: CheckoutError.self) {
            try await Fixtures.server(transport).capture(transactionID: "2000470537631498530821",
                                                         amount: Money(minorUnits: 500, currency: try Currency(code: "USD")))
        }
        #expect(error.code == .unsupportedAction)
        #expect(transport.requests.isEmpty)
    }
}

@Suite("Citcon wire fixtures: requests")
struct WireRequestTests {
    /// Compares the request the plugin sent with a vendor example, leaf by leaf: the same paths (but
    /// for `extraPaths` Till adds and `missingPaths` it leaves out, each with its reason), and the same
    /// values (but for `ownValues`: Till's own values, such as its return URLs, or recorded values
    /// Till chooses differently, each with its reason).
    static func compare(_ sent: [String: Any], with vendor: [String: Any], extraPaths: [String: String] = [:],
                        missingPaths: [String: String] = [:], ownValues: [String: String] = [:],
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let found = differences(sent, with: vendor, extraPaths: extraPaths, missingPaths: missingPaths, ownValues: ownValues)
        #expect(found.isEmpty, "\(found.joined(separator: "; "))", sourceLocation: sourceLocation)
    }

    /// What ``compare(_:with:extraPaths:missingPaths:ownValues:sourceLocation:)`` finds, one sentence each.
    static func differences(_ sent: [String: Any], with vendor: [String: Any], extraPaths: [String: String] = [:],
                            missingPaths: [String: String] = [:], ownValues: [String: String] = [:]) -> [String] {
        let ours = Wire.leaves(sent)
        let theirs = Wire.leaves(vendor)
        var found: [String] = []
        for path in Set(ours.keys).subtracting(theirs.keys).sorted() where extraPaths[path] == nil {
            found.append("Till sends \(path), which the vendor's example does not")
        }
        for path in Set(theirs.keys).subtracting(ours.keys).sorted() where missingPaths[path] == nil {
            found.append("Till does not send \(path), which the vendor's example does")
        }
        for (path, value) in ours.sorted(by: { $0.key < $1.key }) {
            guard let expected = theirs[path], ownValues[path] == nil, !Wire.same(value, expected) else { continue }
            found.append("\(path): Till sends \(value), the vendor \(expected)")
        }
        for path in extraPaths.keys.sorted() where ours[path] == nil { found.append("an allowance for \(path), which Till does not send") }
        return found
    }

    @Test("the comparison itself catches a missing, an extra and a changed field")
    func comparisonCatches() {
        #expect(Wire.same(100, 100.0) && !Wire.same("100", 100) && !Wire.same("a", "b"))
        let found = Self.differences(["transaction": ["amount": 1, "extra": "x"]], with: ["transaction": ["amount": 2, "reference": "r"]])
        #expect(found == ["Till sends transaction.extra, which the vendor's example does not",
                          "Till does not send transaction.reference, which the vendor's example does",
                          "transaction.amount: Till sends 1, the vendor 2"], "\(found)")
    }

    /// The body of the charge request the plugin sends for the vendor's example `body`, built from
    /// the same inputs: reference (as the attempt), amount, currency, country, note, method, consumer,
    /// goods and the IPN URL.
    static func chargeRequest(for body: [String: Any], settings: CitconSettings) async throws -> [String: Any] {
        let transaction = try #require(body["transaction"] as? [String: Any])
        let payment = try #require(body["payment"] as? [String: Any])
        let urls = try #require(body["urls"] as? [String: Any])
        let consumer = body["consumer"] as? [String: Any]
        let method: PaymentMethod = switch payment["method"] as? String {
        case "upop": .unionPay
        case let other?: PaymentMethod(rawValue: other)
        case nil: "none"
        }
        let currency = try Currency(code: try #require(transaction["currency"] as? String))
        var customer = Customer(reference: consumer?["reference"] as? String, email: consumer?["email"] as? String,
                                firstName: consumer?["first_name"] as? String, lastName: consumer?["last_name"] as? String,
                                phone: consumer?["phone"] as? String)
        if [.paypal, .venmo, .card].contains(method), customer.reference == nil { customer.reference = "CUSTOMER-TILL-001" }
        let intent = PaymentIntent(merchantReference: "order", amount: Money(minorUnits: Int64(try #require(transaction["amount"] as? Int)), currency: currency),
                                   country: try CountryCode(try #require(transaction["country"] as? String)), method: method, action: .sale,
                                   customer: customer, description: transaction["note"] as? String)
        let details: CitconOrderDetails? = (body["goods"] as? [String: Any]).map { goods in
            func minor(_ value: Any?) -> Int64? { (value as? NSNumber).map { Int64($0.doubleValue) } }
            let products = ((goods["data"] as? [[String: Any]]) ?? []).map { item in
                CitconChargeRequest.Product(name: item["name"] as? String, sku: item["sku"] as? String, url: item["url"] as? String,
                                            quantity: (item["quantity"] as? NSNumber)?.intValue, unitAmount: minor(item["unit_amount"]),
                                            productType: item["product_type"] as? String)
            }
            let shipping = (goods["shipping"] as? [String: String]).map { s in
                CitconChargeRequest.Shipping(firstName: s["first_name"], lastName: s["last_name"], phone: s["phone"], email: s["email"],
                                             street: s["street"], street2: s["street2"], city: s["city"], state: s["state"], zip: s["zip"],
                                             country: s["country"])
            }
            return CitconOrderDetails(goods: CitconChargeRequest.Goods(data: products, shipping: shipping))
        }
        let returnURL = method == .wechatPay ? Fixtures.universalReturn : Fixtures.schemeReturn
        let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: try #require(transaction["reference"] as? String)),
                                     returnURL: returnURL, notificationURL: URL(string: try #require(urls["ipn"] as? String)))
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.failure(code: "4000", message: "bad request", status: 400))
        let server = Fixtures.server(transport, settings: settings, orderDetails: { _ in details })
        _ = try? await server.prepare(context)
        let request = try #require(transport.requests.last { $0.url.path.hasSuffix("/v1/charges") })
        #expect(request.method == .post)
        #expect(request.headers["Authorization"] == "Bearer server")
        #expect(request.headers["Content-Type"] == "application/json")
        return try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])
    }

    static let ownURLs = [
        "urls.success": "Till's return URL with citcon_result=success", "urls.fail": "Till's return URL with citcon_result=fail",
        "urls.cancel": "Till's return URL with citcon_result=cancel",
    ]
    static let cancelURL = ["urls.cancel": "Till always gives the cancel URL; the sandbox accepted it (charge-request-alipay.json)"]
    static let oneClient = ["payment.client": "Till asks for the one client an app uses; the sandbox accepted [\"mobile_browser\"] alone (charge-request-wechatpay.json)"]

    @Test("the access-token requests: POST {base}/access-tokens, the merchant key as bearer, {token_type}")
    func accessToken() async throws {
        let fixture = try Wire.load("access-token-request.json")
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: "attemptref0000000000000001"))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("client", type: "client"))
        _ = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent()))
        let requests = transport.requests.filter { $0.url.path.hasSuffix("/access-tokens") }
        #expect(requests.count == 2)
        let headers = try #require(fixture["headers"] as? [String: String])
        for request in requests {
            #expect(request.method == .post)
            #expect(request.url.absoluteString == Fixtures.base.absoluteString + "access-tokens")
            #expect(request.headers["Accept"] == headers["Accept"])
            #expect(request.headers["Content-Type"] == headers["Content-Type"])
            #expect(request.headers["Authorization"] == "Bearer merchant-key")
        }
        let client = try #require(try JSONSerialization.jsonObject(with: requests[1].body ?? Data()) as? [String: Any])
        Self.compare(client, with: try #require(fixture["body"] as? [String: Any]))
        let serverExample = try #require((fixture["other_examples"] as? [[String: Any]])?.first { $0["source"] as? String ?? "" != "" && ($0["body"] as? [String: String])?["token_type"] == "server" })
        let server = try #require(try JSONSerialization.jsonObject(with: requests[0].body ?? Data()) as? [String: Any])
        Self.compare(server, with: try #require(serverExample["body"] as? [String: Any]))
        #expect(CitconEnvironment.uat.endpoint("access-tokens").absoluteString
                == ((fixture["http"] as? [String: String])?["url"]))
    }

    @Test("WeChat Pay: the sandbox's recorded charge (mobile_browser, country_accelerator CN)")
    func wechatpayRecorded() async throws {
        let body = try #require(try Wire.load("charge-request-wechatpay.json")["body"] as? [String: Any])
        let sent = try await Self.chargeRequest(for: body, settings: CitconSettings(walletClient: .mobileBrowser, countryAccelerator: "CN"))
        Self.compare(sent, with: body, extraPaths: Self.cancelURL, ownValues: Self.ownURLs)
    }

    @Test("native wallets: the Android SDK's charge (client mobile_native) for WeChat Pay, Alipay and UnionPay", arguments: [
        "charge-request-wechatpay.json", "charge-request-alipay.json", "charge-request-upop.json",
    ])
    func nativeLikeAndroid(name: String) async throws {
        let fixture = try Wire.load(name)
        let android = try #require((fixture["other_examples"] as? [[String: Any]])?.first { ($0["source"] as? String ?? "").hasPrefix("zhuanglm/cpay_upi") })
        let body = try #require(android["body"] as? [String: Any])
        let sent = try await Self.chargeRequest(for: body, settings: CitconSettings())
        Self.compare(sent, with: body, missingPaths: [
            "transaction.auto_capture": "Till sends auto_capture only for card, PayPal and Venmo, which can authorise; the wallets capture at once",
            "payment.indicator": "Till sends an indicator only when the merchant gives one (CitconOrderDetails.indicator)",
            "payment.request_token": "Till never asks for a vaulted token",
            "payment.token": "Till never sends a vaulted token (which could charge at once)",
            "payment.timeout": "the unit of 60000 is not stated by any source; Till sends no lifetime",
            "urls.mobile": "Till returns the customer through urls.success / fail / cancel",
        ], ownValues: Self.ownURLs)
        #expect((sent["payment"] as? [String: Any])?["client"] as? [String] == ["mobile_native"])
    }

    @Test("Alipay: the sandbox's recorded charge")
    func alipayRecorded() async throws {
        let body = try #require(try Wire.load("charge-request-alipay.json")["body"] as? [String: Any])
        let sent = try await Self.chargeRequest(for: body, settings: CitconSettings(walletClient: .mobileBrowser))
        Self.compare(sent, with: body, ownValues: Self.ownURLs.merging(Self.oneClient) { a, _ in a })
    }

    @Test("UnionPay: the sandbox's recorded charge (method upop, consumer, country_accelerator CN)")
    func upopRecorded() async throws {
        let body = try #require(try Wire.load("charge-request-upop.json")["body"] as? [String: Any])
        let sent = try await Self.chargeRequest(for: body, settings: CitconSettings(walletClient: .mobileBrowser, countryAccelerator: "CN"))
        Self.compare(sent, with: body, extraPaths: Self.cancelURL, ownValues: Self.ownURLs.merging(Self.oneClient) { a, _ in a })
        #expect((sent["payment"] as? [String: Any])?["method"] as? String == "upop")
    }

    @Test("PayPal: the sandbox's recorded charge with goods.data and goods.shipping")
    func paypalRecorded() async throws {
        let body = try #require(try Wire.load("charge-request-paypal.json")["body"] as? [String: Any])
        let sent = try await Self.chargeRequest(for: body, settings: CitconSettings())
        Self.compare(sent, with: body, extraPaths: Self.cancelURL.merging([
            "transaction.auto_capture": "Till says whether a PayPal charge captures (true for a sale); Citcon's default is false",
            "consumer.reference": "required for PayPal by the Phase 1 manual and the iOS guide; the recording omitted it",
        ]) { a, _ in a }, ownValues: Self.ownURLs.merging(Self.oneClient) { a, _ in a })
        #expect((sent["goods"] as? [String: Any])?["goods"] == nil, "goods.goods is only an iOS SDK property name")
    }

    @Test("card: no REST body is recorded; Till's card charge uses only paths some source names, with consumer.reference")
    func card() async throws {
        let fixture = try Wire.load("charge-request-card.json")
        #expect(fixture["body"] is NSNull)
        var known = Set<String>()
        for name in ["charge-request-wechatpay.json", "charge-request-alipay.json", "charge-request-upop.json", "charge-request-paypal.json"] {
            for example in Wire.examples(try Wire.load(name)) {
                known.formUnion(Wire.leaves(try #require(example["body"] as? [String: Any])).keys)
            }
        }
        known.formUnion(["payment.billing_address.street", "payment.billing_address.street2", "payment.billing_address.city",
                         "payment.billing_address.state", "payment.billing_address.zip", "payment.billing_address.country"])
        let address = CitconChargeRequest.Address(street: "123 main street", street2: "", city: "Chicago", state: "IL", zip: "60607", country: "US")
        let server = Fixtures.server(RecordingTransport()) { _ in CitconOrderDetails(billingAddress: address) }
        let request = try server.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .card), returnURL: Fixtures.schemeReturn))
        let sent = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(request)) as? [String: Any])
        let paths = Set(Wire.leaves(sent).keys)
        #expect(paths.subtracting(known).isEmpty, "unsourced: \(paths.subtracting(known).sorted())")
        #expect(paths.contains("consumer.reference"))
        #expect((sent["payment"] as? [String: Any])?["method"] as? String == "card")
    }

    @Test("refund: {id, reference, amount, note} naming the charge by id")
    func refund() async throws {
        let fixture = try Wire.load("refund-request.json")
        let body = try #require(fixture["body"] as? [String: Any])
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/refunds", respond: try Wire.response(try Wire.load("refund-response.json")))
        let operation = try await Fixtures.server(transport).refund(
            transactionID: try #require(body["id"] as? String), reference: try #require(body["reference"] as? String),
            amount: Money(minorUnits: 100, currency: try Currency(code: "USD")), note: body["note"] as? String)
        #expect(operation.status == "succeeded")
        let request = try #require(transport.requests.last)
        #expect(request.url.absoluteString == Fixtures.base.absoluteString + "refunds")
        #expect(request.headers["Authorization"] == "Bearer server")
        let sent = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])
        Self.compare(sent, with: body)
    }

    @Test("cancel: {id, reference[, transaction_reference]}", arguments: [true, false])
    func cancel(withTransactionReference: Bool) async throws {
        let fixture = try Wire.load("cancel-request.json")
        let examples = Wire.examples(fixture)
        let body = try #require((withTransactionReference ? examples[0] : examples[1])["body"] as? [String: Any])
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/cancels", respond: try Wire.response(try Wire.load("cancel-response.json")))
        _ = try await Fixtures.server(transport).cancel(transactionID: try #require(body["id"] as? String),
                                                        reference: try #require(body["reference"] as? String),
                                                        transactionReference: body["transaction_reference"] as? String)
        let sent = try #require(try JSONSerialization.jsonObject(with: transport.requests.last?.body ?? Data()) as? [String: Any])
        Self.compare(sent, with: body)
    }

    @Test("the cancel of an unusable charge has the recorded shape")
    func orphanCancel() async throws {
        let body = try #require(try Wire.load("cancel-request.json")["body"] as? [String: Any])
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: "attemptref0000000000000001", client: []))
        transport.expect(.post, path: "/v1/cancels", respond: try Wire.response(try Wire.load("cancel-response.json")))
        _ = try? await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent()))
        try transport.verify()
        let sent = try #require(try JSONSerialization.jsonObject(with: transport.requests.last?.body ?? Data()) as? [String: Any])
        Self.compare(sent, with: body, ownValues: ["id": "the created charge's id", "reference": "Till's cancel reference",
                                                   "transaction_reference": Wire.attemptHint])
    }
}

@Suite("Citcon wire fixtures: IPNs")
struct WireIPNTests {
    /// A server whose API secret is the official example's.
    func server(_ secret: String) -> CitconServer {
        CitconServer(environment: .custom(Fixtures.base), credentials: CitconCredentials(apiKey: "k", apiSecret: secret), transport: RecordingTransport())
    }

    @Test("the official charge IPN: the string to sign and the sign, verified and mapped (authorized, 100 USD)")
    func officialChargeIPN() throws {
        let fixture = try Wire.load("ipn-charge.json")
        let secret = try #require(fixture["secret"] as? String)
        let body = try Wire.data(try #require(fixture["body"]))
        let fields = try CitconIPNFields.parse(body, mediaType: "application/json")
        #expect(try CitconSignature.stringToSign(fields, secret: secret) == fixture["string_to_sign"] as? String)
        #expect(try CitconSignature.sign(fields, secret: secret) == (fixture["signature"] as? [String: Any])?["value"] as? String)
        let report = try server(secret).verifyNotification(IncomingNotification(headers: ["Content-Type": "application/json"], body: body)).report
        #expect(report.attempt.rawValue == "reference132")
        #expect(report.gatewayReference == "84571d30e61711eba6a94911fce35a55")
        #expect(report.status == .authorized)
        #expect(report.amount == Money(minorUnits: 100, currency: try Currency(code: "USD")))
        #expect(report.gatewayStatus == "authorized")
    }

    /// The official IPN with a nested `payment` listed in `fields` (as the document's own example of
    /// `fields` ends), signed the way the third-party reader in the fixture computes it.
    func nestedPaymentIPN(secret: String, status: String = "succeeded") throws -> (body: Data, readerString: String) {
        let fixture = try Wire.load("ipn-charge.json")
        var body = try #require(fixture["body"] as? [String: Any])
        body["status"] = status
        body["payment"] = ["method": "paypal", "type": "", "data": ["pan": ""]] as [String: Any]
        body["fields"] = (body["fields"] as? String ?? "") + ",payment"
        body["sign"] = nil
        // The reader (shopeo/woocommerce-citcon-payments webhook): a fixed key list, values interpolated
        // as PHP text, so a decoded JSON object is written "Array".
        func text(_ key: String) -> String {
            switch body[key] {
            case let string as String: string
            case let number as NSNumber: number.stringValue
            case is [String: Any]: "Array"
            default: ""
            }
        }
        let keys = ["amount", "amount_captured", "amount_refunded", "currency", "fields", "id", "payment", "payment_method", "reference",
                    "status", "time_completed", "time_created", "transaction_type"]
        let reader = keys.map { "\($0)=\(text($0))" }.joined(separator: "&") + "&secret=\(secret)"
        body["sign"] = Hex.encode(SHA256.hash(data: Data(reader.utf8)))
        return (try Wire.data(body), reader)
    }

    @Test("an IPN whose fields list a nested payment is verified, acknowledged and mapped; what is inside payment is never read")
    func nestedPayment() throws {
        let secret = try #require(try Wire.load("ipn-charge.json")["secret"] as? String)
        let (body, reader) = try nestedPaymentIPN(secret: secret)
        let fields = try CitconIPNFields.parse(body)
        #expect(try CitconSignature.stringToSign(fields, secret: secret, nested: .phpArray) == reader)
        let verified = try server(secret).verifyNotification(IncomingNotification(headers: ["Content-Type": "application/json"], body: body))
        #expect(verified.report.status == .paid, "the reader's word 'succeeded' is the REST answers' word for paid")
        #expect(verified.report.amount?.minorUnits == 100)
        #expect(verified.acknowledgement == .ok)

        // Signed over the nested value's JSON text: accepted too; a changed scalar is refused either way.
        var object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        object["sign"] = try CitconSignature.sign(fields, secret: secret, nested: .json)
        let json = try Wire.data(object)
        #expect(try server(secret).verifyNotification(IncomingNotification(body: json)).report.status == .paid)
        let tampered = String(decoding: body, as: UTF8.self).replacingOccurrences(of: #""amount":100"#, with: #""amount":1"#)
        #expect(tampered != String(decoding: body, as: UTF8.self))
        let error = try #require(throws: CheckoutError.self) { try server(secret).verifyNotification(IncomingNotification(body: Data(tampered.utf8))) }
        #expect(error.code == .signatureMismatch)
        // With the JSON rendering the nested value is signed too.
        var changed = object
        changed["payment"] = ["method": "venmo"]
        #expect(throws: CheckoutError.self) { try server(secret).verifyNotification(IncomingNotification(body: try Wire.data(changed))) }
    }

    @Test("every documented transaction_type and status verifies and maps; chargeback and vault IPNs without amount are recorded, never applied")
    func kinds() throws {
        let kinds = try #require(try Wire.load("ipn-kinds.json")["kinds"] as? [String: Any])
        let official = try #require(try Wire.load("ipn-charge.json")["body"] as? [String: Any])
        let secret = "kinds-secret"
        let usd = try Currency(code: "USD")
        let expectedCharge: [String: PaymentStatus] = ["authorized": .authorized, "captured": .paid, "success": .paid, "cancelled": .cancelled,
                                                       "fail": .failed]
        var checked = 0
        for (kind, entry) in kinds {
            let statuses = ((entry as? [String: Any])?["status_values"] as? [String]) ?? [""]
            for status in statuses {
                var pairs: [(String, String)] = [("id", official["id"] as? String ?? ""), ("transaction_type", kind),
                                                 ("reference", "reference132")]
                if !status.isEmpty { pairs.append(("status", status)) }
                let money = kind == "charge" || kind == "refund"
                if money { pairs += [("amount", "100"), ("currency", "USD"), ("amount_refunded", kind == "refund" ? "40" : "")] }
                let names = pairs.map(\.0).joined(separator: ",")
                let unsigned = CitconIPNFields(pairs + [("fields", names)])
                let sign = try CitconSignature.sign(unsigned, secret: secret)
                var json: [String: Any] = [:]
                for (name, value) in pairs { json[name] = value }
                json["fields"] = names
                json["sign"] = sign
                let report = try server(secret).verifyNotification(IncomingNotification(body: try Wire.data(json))).report
                #expect(report.attempt.rawValue == "reference132")
                switch kind {
                case "charge":
                    #expect(report.status == expectedCharge[status], "\(status)")
                    #expect(report.amount == Money(minorUnits: 100, currency: usd))
                case "refund" where status == "success":
                    #expect(report.status == .partiallyRefunded, "a refund is partial unless the signed fields prove it whole")
                    #expect(report.refundedTotal?.minorUnits == 40, "amount_refunded is the running total")
                    #expect(report.amount == nil, "no source says whose amount a refund IPN's `amount` is: never read as the refund's")
                default:
                    #expect(!report.status.isKnown, "\(kind) \(status) → \(report.status)")
                    #expect(report.status.rawValue.hasPrefix("citcon_\(kind)"))
                    for current in [PaymentStatus.pending, .paid] {
                        #expect(AttemptPolicy.verdict(for: report, on: current, amount: Money(minorUnits: 100, currency: usd),
                                                      source: .notification) != .apply)
                    }
                }
                checked += 1
            }
        }
        #expect(checked == 5 + 2 + 6 + 1)
        #expect(CitconServer.unmapped("chargeback", "Notification of Claim").rawValue == "citcon_chargeback_notification_of_claim")
        #expect(CitconSignature.requiredSignedFields(for: "vault") == ["transaction_type"])
        #expect(!CitconSignature.requiredSignedFields(for: "chargeback").contains("amount"))
    }
}
