import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillCitcon
@testable import TillCitconServer
import TillOrchestration

@Suite("Citcon gateway")
struct CitconGatewayTests {
    let attempt = "attemptref0000000000000001"

    @Test("prepare: a server token creates the charge; the app gets a client token and the wallet's parameters from the mobile_native entry")
    func prepareWeChat() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("client-token", type: "client"))
        let gateway = Fixtures.server(transport)
        let preparation = try await gateway.prepare(Fixtures.context(Fixtures.intent()))
        try transport.verify()

        let requests = transport.requests
        #expect(requests[0].headers["Authorization"] == "Bearer merchant-key")
        #expect(String(decoding: requests[0].body ?? Data(), as: UTF8.self) == #"{"token_type":"server"}"#)
        #expect(requests[1].headers["Authorization"] == "Bearer server-token")
        #expect(String(decoding: requests[2].body ?? Data(), as: UTF8.self) == #"{"token_type":"client"}"#)

        let body = try #require(JSONSerialization.jsonObject(with: requests[1].body ?? Data()) as? [String: Any])
        #expect(Set(body.keys) == ["transaction", "consumer", "payment", "urls"])
        let transaction = try #require(body["transaction"] as? [String: Any])
        #expect(transaction["reference"] as? String == attempt)
        #expect(transaction["amount"] as? Int == 1999)
        #expect(transaction["currency"] as? String == "USD")
        #expect(transaction["country"] as? String == "US")
        #expect(transaction["note"] as? String == "order 42")
        #expect(transaction["auto_capture"] == nil, "WeChat Pay captures at once")
        let payment = try #require(body["payment"] as? [String: Any])
        #expect(payment["method"] as? String == "wechatpay")
        #expect(payment["client"] as? [String] == ["mobile_native"])
        #expect(payment["expiry"] == nil && payment["timeout"] == nil, "no lifetime in a unit Till could vouch for")
        let urls = try #require(body["urls"] as? [String: String])
        #expect(urls["ipn"] == Fixtures.notificationURL.absoluteString)
        #expect(urls["success"] == "https://shop.example.com/till/return?till_state=abc&citcon_result=success")
        #expect(urls["cancel"] == "https://shop.example.com/till/return?till_state=abc&citcon_result=cancel")
        for invented in ["scheme", "universal_link", "request_3ds_verification", "unionpay_mode", "installments"] {
            #expect(body[invented] == nil, "\(invented) is an SDK property, not a REST field")
        }
        let consumer = try #require(body["consumer"] as? [String: Any])
        #expect(consumer["first_name"] as? String == "Ada")
        #expect(consumer["reference"] as? String == "cust-9")

        #expect(preparation.gatewayReference == "2000470537621948100613")
        #expect(preparation.parameters["access_token"] == "client-token")
        #expect(preparation.parameters["launch"] == "wallet")
        #expect(preparation.parameters["wallet"] == "wechatpay")
        #expect(preparation.parameters["wallet.prepayid"] == "wxp1")
        #expect(preparation.parameters["wallet.timestamp"] == "1767225600")
        #expect(preparation.parameters["wallet.package"] == "Sign=WXPay")
        #expect(preparation.parameters["page_url"] == nil)
        #expect(!preparation.parameters.values.contains("server-token"))
        #expect(!preparation.parameters.values.contains("merchant-key"))
        #expect(!preparation.parameters.values.contains(Fixtures.secret))
        #expect(preparation.parameters["charge_token"] == nil)

        let step = try await Fixtures.app().present(preparation, input: .start)
        #expect(step == .launchWallet(WalletLaunch(wallet: "wechatpay", parameters: [
            "appid": "wx1", "partnerid": "p1", "package": "Sign=WXPay", "noncestr": "n", "timestamp": "1767225600", "prepayid": "wxp1", "sign": "S",
        ], returnScheme: nil, returnURL: Fixtures.universalReturn)))
    }

    @Test("tokens are cached; an expired one (401) is replaced and the call made once more")
    func tokenCacheAndRefresh() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t1"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(id: "ch0001", reference: attempt, status: "initiated"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.failure(code: "4010", message: "token expired", status: 401))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t2"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(id: "ch0001", reference: attempt, status: "succeeded"))
        let gateway = Fixtures.server(transport)
        let query = InquiryQuery(attempt: AttemptReference(rawValue: attempt), gatewayReference: "ch0001")
        #expect(try await gateway.inquire(query).status == .pending)
        let second = try await gateway.inquire(query)
        #expect(second.status == .paid)
        #expect(second.amount == Money(minorUnits: 1999, currency: try Currency(code: "USD")))
        try transport.verify()
        #expect(transport.requests.map { $0.headers["Authorization"] ?? "" } == ["Bearer merchant-key", "Bearer t1", "Bearer t1", "Bearer merchant-key", "Bearer t2"])
    }

    @Test("an inquiry of a paid charge with a refunded total says partially refunded, or refunded once it reaches the amount")
    func inquiryRefunds() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t1"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(id: "ch0001", reference: attempt, status: "succeeded", amountRefunded: 500))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(id: "ch0001", reference: attempt, status: "succeeded", amountRefunded: 1999))
        let gateway = Fixtures.server(transport)
        let query = InquiryQuery(attempt: AttemptReference(rawValue: attempt), gatewayReference: "ch0001")
        let partial = try await gateway.inquire(query)
        #expect(partial.status == .partiallyRefunded)
        #expect(partial.amount?.minorUnits == 500)
        #expect(partial.refundedTotal?.minorUnits == 500)   // Citcon's running total
        let full = try await gateway.inquire(query)
        #expect(full.status == .refunded)
        #expect(full.eventID != partial.eventID)
    }

    @Test("Alipay needs a scheme return, WeChat Pay a universal link: errors name the field; neither is sent to Citcon")
    func returnStyles() throws {
        let server = Fixtures.server(RecordingTransport())
        let alipay = try #require(throws: CheckoutError.self) {
            try server.returnURL(from: [Fixtures.universalReturn], for: Fixtures.intent(method: .alipay))
        }
        #expect(alipay.field == "returnURLs")
        let wechat = try #require(throws: CheckoutError.self) {
            try server.returnURL(from: [Fixtures.schemeReturn], for: Fixtures.intent(method: .wechatPay))
        }
        #expect(wechat.field == "returnURLs")
        let request = try server.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .alipay), returnURL: Fixtures.schemeReturn))
        let body = try #require(JSONSerialization.jsonObject(with: try JSONEncoder().encode(request)) as? [String: Any])
        #expect(body["scheme"] == nil && body["universal_link"] == nil)
        #expect(request.urls.success == "myshop://till/return?till_state=abc&citcon_result=success")
    }

    @Test("bad intents are typed errors naming the field")
    func badIntents() throws {
        let gateway = Fixtures.server(RecordingTransport())
        var noCountry = Fixtures.intent()
        noCountry.country = nil
        do { _ = try gateway.chargeRequest(for: Fixtures.context(noCountry)); Issue.record("no country") }
        catch let error as CheckoutError { #expect(error.field == "intent.country") }

        var unsupported = Fixtures.intent()
        unsupported.method = .mada
        do { _ = try gateway.chargeRequest(for: Fixtures.context(unsupported)); Issue.record("accepted mada") }
        catch let error as CheckoutError { #expect(error.field == "intent.method") }

        var fomo = Fixtures.intent()
        fomo.method = .fomo
        do { _ = try gateway.chargeRequest(for: Fixtures.context(fomo)); Issue.record("FOMO is a provider, not a Citcon method") }
        catch let error as CheckoutError { #expect(error.field == "intent.method") }

        do { _ = try gateway.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .wechatPay, action: .authorize))); Issue.record("authorised wechat") }
        catch let error as CheckoutError { #expect(error.field == "intent.action") }

        do { _ = try gateway.chargeRequest(for: Fixtures.context(Fixtures.intent(), returnURL: nil)); Issue.record("no return URL") }
        catch let error as CheckoutError { #expect(error.field == "returnURL") }

        var long = Fixtures.intent()
        long.description = String(repeating: "x", count: 129)
        do { _ = try gateway.chargeRequest(for: Fixtures.context(long)); Issue.record("long note") }
        catch let error as CheckoutError { #expect(error.field == "intent.description") }
    }

    @Test("PayPal, Venmo and card need consumer.reference", arguments: [PaymentMethod.paypal, .venmo, .card])
    func consumerReference(method: PaymentMethod) throws {
        let gateway = Fixtures.server(RecordingTransport())
        var intent = Fixtures.intent(method: method)
        intent.customer.reference = nil
        let error = try #require(throws: CheckoutError.self) { try gateway.chargeRequest(for: Fixtures.context(intent, returnURL: Fixtures.schemeReturn)) }
        #expect(error.field == "intent.customer.reference")
        #expect(error.code == .missingField)
        var wallet = Fixtures.intent(method: .alipay)
        wallet.customer.reference = nil
        #expect(try gateway.chargeRequest(for: Fixtures.context(wallet, returnURL: Fixtures.schemeReturn)).consumer?.reference == nil)
    }

    @Test("card and PayPal: a page, auto_capture by action, goods under goods.data, the billing address under payment")
    func cardAndGoods() throws {
        let address = CitconChargeRequest.Address(street: "555 Smith St", street2: "#2", city: "Chicago", state: "IL", zip: "12345", country: "US")
        let goods = CitconChargeRequest.Goods(data: [.init(name: "Toy", sku: "3264571", quantity: 1, unitAmount: 1999, productType: "physical")],
                                              shipping: .init(firstName: "Ada", city: "Chicago", zip: "60607", country: "US"))
        let full = Fixtures.server(RecordingTransport()) { _ in
            CitconOrderDetails(goods: goods, billingAddress: address, indicator: "non-authenticated")
        }
        let request = try full.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .card, action: .authorize)))
        #expect(request.transaction.autoCapture == false)
        #expect(request.payment.client == ["mobile_browser"])
        #expect(request.payment.billingAddress == address)
        #expect(request.goods == goods)
        let encoded = try #require(JSONSerialization.jsonObject(with: try JSONEncoder().encode(request)) as? [String: Any])
        let data = try #require((encoded["goods"] as? [String: Any])?["data"] as? [[String: Any]])
        #expect(data.first?["unit_amount"] as? Int == 1999)
        #expect(data.first?["product_type"] as? String == "physical")
        #expect((encoded["goods"] as? [String: Any])?["goods"] == nil)
        #expect((encoded["payment"] as? [String: Any])?["billing_address"] != nil)
        #expect((encoded["consumer"] as? [String: Any])?["billing_address"] == nil)
        #expect(encoded["request_3ds_verification"] == nil)
        let sale = try full.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .paypal)))
        #expect(sale.transaction.autoCapture == true)
    }

    @Test("UnionPay is upop on the wire; its SDK mode goes to the app with the tn, never to Citcon")
    func unionPay() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("s"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt, method: "upop",
                                                                             client: [Fixtures.entry("mobile_native", content: #"{"tn":"771234567890"}"#)]))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("c", type: "client"))
        let gateway = Fixtures.server(transport, settings: CitconSettings(unionpayMode: "01"))
        let preparation = try await gateway.prepare(Fixtures.context(Fixtures.intent(method: .unionPay), returnURL: Fixtures.schemeReturn))
        let body = try #require(JSONSerialization.jsonObject(with: transport.requests[1].body ?? Data()) as? [String: Any])
        #expect((body["payment"] as? [String: Any])?["method"] as? String == "upop")
        #expect(body["unionpay_mode"] == nil)
        let step = try await Fixtures.app().present(preparation, input: .start)
        #expect(step == .launchWallet(WalletLaunch(wallet: "upop", parameters: ["tn": "771234567890", "mode": "01"], returnScheme: "myshop",
                                                   returnURL: Fixtures.schemeReturn)))
        #expect(CitconMethods.wireName(of: .unionPay) == "upop")
        #expect(CitconMethods.wireName(of: .alipayPlus) == "alipay+")
        #expect(CitconMethods.wireName(of: .wechatPay) == "wechatpay")
    }

    @Test("wallet_client mobile_browser: a wallet charge asks for the page and the app opens it in a web view")
    func walletAsPage() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("s"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt, method: "alipay", client: [
            Fixtures.entry("desktop", content: "https://landing.uat01.citconpay.com/v1/landing/a"),
            Fixtures.entry("mobile_browser", content: "https://landing.uat01.citconpay.com/v1/landing/b"),
            Fixtures.entry("desktop", format: "qr", content: "https://landing.uat01.citconpay.com/v1/qr/c"),
        ]))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("c", type: "client"))
        let gateway = Fixtures.server(transport, settings: CitconSettings(walletClient: .mobileBrowser))
        let preparation = try await gateway.prepare(Fixtures.context(Fixtures.intent(method: .alipay), returnURL: Fixtures.schemeReturn))
        let body = try #require(JSONSerialization.jsonObject(with: transport.requests[1].body ?? Data()) as? [String: Any])
        #expect((body["payment"] as? [String: Any])?["client"] as? [String] == ["mobile_browser"])
        let step = try await Fixtures.app().present(preparation, input: .start)
        #expect(step == .openURL(URL(string: "https://landing.uat01.citconpay.com/v1/landing/b")!, handoff: .webPage))
    }

    /// Charge answers Till cannot use: only a desktop QR, the entry shape Till once guessed (`type` and
    /// an object `content`), a page that is not https, no entry at all.
    static func unusableClient(_ name: String) -> [[String: Any]] {
        switch name {
        case "qr only": [["client": "desktop", "format": "qr", "method": "GET", "content": "https://landing.uat01.citconpay.com/v1/qr/c"]]
        case "object content": [["type": "native", "content": ["appid": "wx1"]]]
        case "not https": [["client": "mobile_browser", "format": "redirect", "method": "GET", "content": "javascript:alert(1)"]]
        default: []
        }
    }

    @Test("an answer Till cannot use is cancelled before the attempt fails, so nothing is left open",
          arguments: ["qr only", "object content", "not https", "no entries"])
    func unusableAnswerCancelled(answer: String) async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("s"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt, client: Self.unusableClient(answer)))
        transport.expect(.post, path: "/v1/cancels", respond: Fixtures.cancelled(reference: "\(attempt)-cancel"))
        let error = try await #require(throws: CheckoutError.self) { try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent())) }
        #expect(error.category == .unavailable)
        #expect(error.field == "payment.client")
        try transport.verify()
        let cancel = try #require(JSONSerialization.jsonObject(with: transport.requests.last?.body ?? Data()) as? [String: String])
        #expect(cancel == ["id": "2000470537621948100613", "reference": "\(attempt)-cancel", "transaction_reference": attempt])
    }

    @Test("a charge Citcon could not create moved no money, so it may go elsewhere; a refusal names Citcon's field; a duplicate reference is 4100")
    func prepareFailures() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t1"))
        transport.expect(.post, path: "/v1/charges", fail: TransportError(.timedOut, "no answer"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.failure(code: "4001", message: "transaction.currency: not supported", status: 400))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.failure(code: "4100", message: "duplicate request", status: 400))
        let gateway = Fixtures.server(transport)
        let context = Fixtures.context(Fixtures.intent())
        do { _ = try await gateway.prepare(context); Issue.record("prepared") }
        catch let error as CheckoutError { #expect(error.category == .unavailable) }
        do { _ = try await gateway.prepare(context); Issue.record("prepared") }
        catch let error as CheckoutError {
            #expect(error.category == .invalidInput)
            #expect(error.field == "citcon.transaction.currency")
            #expect(error.gatewayCode == "4001")
        }
        do { _ = try await gateway.prepare(context); Issue.record("prepared") }
        catch let error as CheckoutError {
            #expect(error.category == .invalidInput)
            #expect(error.field == "citcon.transaction.reference")
            #expect(error.gatewayCode == "4100")
        }
        try transport.verify()
    }

    @Test("a refused merchant key is a configuration error")
    func refusedKey() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.failure(code: "4010", message: "unknown key", status: 401))
        do { _ = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent())); Issue.record("prepared") }
        catch let error as CheckoutError { #expect(error.category == .configuration || error.category == .unavailable) }
    }

    @Test("present: a wallet launch with the wallet's parameters, or the page in a web view")
    func presentSteps() async throws {
        let gateway = CitconGateway(environment: .custom(Fixtures.base), transport: RecordingTransport())
        func preparation(_ method: PaymentMethod, _ parameters: [String: String], returnURL: URL = Fixtures.schemeReturn) -> Preparation {
            Preparation(gateway: "citcon", attempt: AttemptReference(rawValue: attempt), method: method,
                        amount: Money(minorUnits: 1, currency: try! Currency(code: "USD")), gatewayReference: "ch",
                        parameters: parameters.merging(["environment": "CUSTOM"]) { a, _ in a }, returnURL: returnURL)
        }
        let alipay = try await gateway.present(preparation(.alipay, ["launch": "wallet", "wallet": "alipay", "wallet.orderSpec": "spec",
                                                                     "wallet.signedString": "sig"]), input: .start)
        #expect(alipay == .launchWallet(WalletLaunch(wallet: "alipay", parameters: ["orderSpec": "spec", "signedString": "sig"], returnScheme: "myshop",
                                                     returnURL: Fixtures.schemeReturn)))
        let wechat = try await gateway.present(preparation(.wechatPay, ["launch": "wallet", "wallet": "wechatpay", "wallet.prepayid": "p"],
                                                           returnURL: Fixtures.universalReturn), input: .start)
        #expect(wechat == .launchWallet(WalletLaunch(wallet: "wechatpay", parameters: ["prepayid": "p"], returnScheme: nil,
                                                     returnURL: Fixtures.universalReturn)))
        let card = try await gateway.present(preparation(.card, ["launch": "page", "page_url": "https://citcon.test/h5/1"]), input: .start)
        #expect(card == .openURL(URL(string: "https://citcon.test/h5/1")!, handoff: .webPage))
        let paypal = try await gateway.present(preparation(.paypal, ["launch": "page", "page_url": "https://citcon.test/h5/2"]), input: .start)
        #expect(paypal == .openURL(URL(string: "https://citcon.test/h5/2")!, handoff: .webPage))
        #expect(card.customerMayAuthenticate && alipay.customerMayAuthenticate)

        let uat = CitconGateway(environment: .uat, transport: RecordingTransport())
        do { _ = try await uat.present(preparation(.card, ["launch": "page", "page_url": "https://p"]), input: .start); Issue.record("wrong environment") }
        catch let error as CheckoutError { #expect(error.field == "environment") }
        do { _ = try await uat.present(preparation(.card, ["environment": "UAT", "launch": "page", "page_url": "javascript:alert(1)"]), input: .start); Issue.record("bad url") }
        catch let error as CheckoutError { #expect(error.field == "payment.client") }
        do { _ = try await gateway.present(preparation(.card, [:]), input: .start); Issue.record("nothing to open") }
        catch let error as CheckoutError { #expect(error.field == "payment.client") }
    }

    @Test("returns: SDK codes 0 / -1 / -2 / 6001 and the page's result are informational outcomes",
          arguments: [("code=0", ClientOutcome.Kind.succeeded), ("code=-1", .failed), ("code=-2", .cancelled), ("code=6001", .cancelled),
                      ("code=4000", .failed), ("citcon_result=success", .succeeded), ("citcon_result=fail", .failed),
                      ("citcon_result=cancel", .cancelled), ("", .unknown)])
    func returns(query: String, kind: ClientOutcome.Kind) {
        let gateway = CitconGateway(environment: .uat, transport: RecordingTransport())
        let preparation = Preparation(gateway: "citcon", attempt: AttemptReference(rawValue: attempt), method: .alipay,
                                      amount: Money(minorUnits: 1, currency: try! Currency(code: "USD")))
        let url = URL(string: "myshop://till/return?till_state=abc&\(query)")!
        #expect(gateway.interpretReturn(.url(url), for: preparation).kind == kind)
        #expect(gateway.interpretReturn(.timedOut, for: preparation).kind == .unknown)
        #expect(gateway.interpretReturn(.callback(code: "6001", parameters: [:]), for: preparation).kind == .cancelled)
    }

    @Test("both status vocabularies map; an unknown status is never success", arguments: [
        ("succeeded", PaymentStatus.paid), ("success", .paid), ("captured", .paid), ("authorized", .authorized),
        ("failed", .failed), ("fail", .failed), ("canceled", .cancelled), ("cancelled", .cancelled), ("expired", .expired),
        ("initiated", .pending), ("pending", .pending),
    ])
    func statuses(raw: String, status: PaymentStatus) {
        #expect(CitconGateway.status(raw) == status)
    }

    @Test("unknown statuses are neither final nor paid")
    func unknownStatus() {
        let status = CitconGateway.status("settling")
        #expect(status != .paid)
        #expect(!status.isFinal)
        #expect(!PaymentStatus.known.contains(status))
    }

    @Test("IPN: verified, then read only from signed fields; refunds; the attempt it claims")
    func verifyIPN() throws {
        let gateway = Fixtures.server(RecordingTransport())
        func body(status: String, type: String = "charge", amount: String = "1999", refunded: String = "", captured: String = "",
                  completed: String = "1700000000") throws -> Data {
            var fields = CitconIPNFields([("id", "ch0001"), ("transaction_type", type), ("reference", attempt), ("amount", amount),
                                          ("currency", "USD"), ("status", status), ("amount_refunded", refunded), ("amount_captured", captured),
                                          ("time_completed", completed),
                                          ("fields", "id,transaction_type,reference,amount,currency,status,amount_refunded,amount_captured,time_completed")])
            let sign = try CitconSignature.sign(fields, secret: Fixtures.secret)
            fields = CitconIPNFields(fields.names.map { ($0, fields[$0]!) } + [("sign", sign)])
            return Data(fields.names.map { "\($0)=\(fields[$0]!)" }.joined(separator: "&").utf8)
        }
        let paid = try gateway.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                                                      body: try body(status: "success")))
        #expect(paid.report.status == .paid)
        #expect(paid.report.attempt.rawValue == attempt)
        #expect(paid.report.gatewayReference == "ch0001")
        #expect(paid.report.amount?.minorUnits == 1999)
        let again = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success")))
        #expect(again.report.eventID == paid.report.eventID)
        // A refund IPN's `amount` is not known to be the refund's: only the running total `amount_refunded` is read,
        // and the server's inquiry confirms it before anything applies. 500 refunded is still only part of the charge.
        let partial = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success", type: "refund", amount: "500", refunded: "500")))
        #expect(partial.report.status == .partiallyRefunded && partial.confirmBeforeApplying)
        #expect(partial.report.amount == nil)
        #expect(partial.report.refundedTotal?.minorUnits == 500)
        let full = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success", type: "refund", amount: "1499",
                                                                                     refunded: "1999", captured: "1999")))
        #expect(full.report.status == .refunded && full.confirmBeforeApplying)
        #expect(full.report.amount == nil && full.report.refundedTotal?.minorUnits == 1999)
        #expect(full.report.eventID != partial.report.eventID)
        // The IPN document's own example leaves amount_refunded empty: two refunds of $20 are two events, and neither
        // books anything by itself (no running total, no amount read), so the inquiry decides.
        let twenty = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success", type: "refund", amount: "2000", refunded: "")))
        let again20 = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success", type: "refund", amount: "2000", refunded: "",
                                                                                        completed: "1700000001")))
        #expect(twenty.report.amount == nil && twenty.report.refundedTotal == nil && twenty.confirmBeforeApplying)
        // Nothing to apply from it, but the paid attempt must still learn of the refund: the server inquires.
        guard case .confirmByInquiry = AttemptPolicy.verdict(for: twenty.report, on: .paid, amount: Money(minorUnits: 10_000, currency: Currency.lookup("USD")!),
                                                            source: .notificationToConfirm) else {
            Issue.record("a refund IPN without amounts must ask for the inquiry")
            return
        }
        #expect(twenty.report.eventID != again20.report.eventID)
        // A charge IPN applies as it comes.
        #expect(!paid.confirmBeforeApplying)

        #expect(gateway.claimedAttempt(in: IncomingNotification(body: Data("reference=\(attempt)&status=success".utf8)))?.rawValue == attempt)
        let forged = IncomingNotification(body: Data("id=ch0001&reference=\(attempt)&amount=1999&currency=USD&status=success&fields=id,reference,amount,currency,status&sign=00".utf8))
        #expect(throws: CheckoutError.self) { try gateway.verifyNotification(forged) }

        // The app half cannot verify an IPN at all: it holds no secret and is no server.
        #expect(!((Fixtures.app() as Any) is any GatewayServerHalf))
    }

    @Test("refund and cancel use the server token with the recorded bodies; capture has no vendor source and sends nothing")
    func followUps() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        transport.expect(.post, path: "/v1/refunds", respond: Fixtures.json(#"{"status":"success","app":"citcon_upi","version":"v1.0.0","data":{"id":"2000470575137023123461","object":"refund","reference":"r1","amount":500,"amount_refunded":500,"currency":"USD","country":"US","time_created":1762606655,"payment":{"method":"paypal"},"status":"succeeded","time_completed":1762606657}}"#))
        transport.expect(.post, path: "/v1/cancels", respond: Fixtures.cancelled(id: "ch0001", reference: "c1"))
        let gateway = Fixtures.server(transport)
        let usd = try Currency(code: "USD")
        let captureError = try await #require(throws: CheckoutError.self) {
            try await gateway.capture(transactionID: "ch0001", amount: Money(minorUnits: 500, currency: usd))
        }
        #expect(captureError.code == .unsupportedAction)
        let refund = try await gateway.refund(transactionID: "ch0001", reference: "r1", amount: Money(minorUnits: 500, currency: usd), note: "n")
        #expect(refund.object == "refund")
        #expect(refund.amountRefunded == 500)
        let cancel = try await gateway.cancel(transactionID: "ch0001", reference: "c1")
        #expect(cancel.status == "canceled")
        try transport.verify()
        #expect(!transport.requests.contains { $0.url.path.hasSuffix("/captures") })
        let refundBody = try #require(JSONSerialization.jsonObject(with: transport.requests[1].body ?? Data()) as? [String: Any])
        #expect(Set(refundBody.keys) == ["id", "reference", "amount", "note"])
        #expect(refundBody["id"] as? String == "ch0001")
        #expect(refundBody["amount"] as? Int == 500)
        let cancelBody = try #require(JSONSerialization.jsonObject(with: transport.requests[2].body ?? Data()) as? [String: String])
        #expect(cancelBody == ["id": "ch0001", "reference": "c1"])
        #expect(transport.requests.dropFirst().allSatisfy { $0.headers["Authorization"] == "Bearer server-token" })
    }

    @Test("a refund of an unpaid charge (HTTP 406, 4202) is a definite refusal")
    func refundRefused() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        transport.expect(.post, path: "/v1/refunds", respond: Fixtures.failure(code: "4202", message: "refund failed", status: 406))
        let error = try await #require(throws: CheckoutError.self) {
            try await Fixtures.server(transport).refund(transactionID: "ch0001", reference: "r1", amount: Money(minorUnits: 100, currency: try Currency(code: "USD")))
        }
        #expect(error.category == .declinedHard)
        #expect(error.gatewayCode == "4202")
    }

    @Test("the registry learns Citcon's Info.plist schemes")
    func registry() {
        var registry = PaymentMethodRegistry(gateways: [CitconGateway(environment: .uat, transport: RecordingTransport())])
        CitconMethods.register(in: &registry, bundleIdentifier: "com.example.shop")
        #expect(registry.gateways(offering: .wechatPay) == ["citcon"])
        let schemes = registry.requiredQueriesSchemes(for: [.wechatPay, .alipay, .unionPay, .card, .venmo])
        #expect(schemes == ["alipay", "alipays", "com.example.shop.payments", "com.venmo.touch.v2", "safepay", "uppaysdk", "uppaywallet",
                            "uppayx1", "uppayx2", "uppayx3", "wechat", "weixin", "weixinULAPI"])
        #expect(registry.info(for: .wechatPay).returnStyle == .universalLink)
        #expect(registry.info(for: .alipay).returnStyle == .customScheme)
    }

    @Test("credentials never print")
    func credentialsRedacted() {
        #expect(!"\(Fixtures.credentials)".contains("merchant-key"))
        #expect(!String(reflecting: Fixtures.credentials).contains(Fixtures.secret))
    }
}

@Suite("Citcon: the preparation both halves read")
struct CitconPreparationTests {
    @Test("what the server half writes, the app half reads back whole; the wire keys stay the documented ones")
    func roundTrip() {
        let wallet = CitconPreparation(chargeID: "ch_1", accessToken: "client", accessTokenExpiry: 1_800_000_000, environment: "UAT",
                                       method: "wechatpay", launch: .wallet("wechatpay", parameters: ["prepayid": "p", "mode": "00"]))
        #expect(CitconPreparation(parameters: wallet.parameters) == wallet)
        #expect(wallet.parameters == ["charge_id": "ch_1", "access_token": "client", "access_token_expiry": "1800000000",
                                      "environment": "UAT", "method": "wechatpay", "launch": "wallet", "wallet": "wechatpay",
                                      "wallet.prepayid": "p", "wallet.mode": "00"])
        let page = CitconPreparation(chargeID: "ch_2", accessToken: "c", accessTokenExpiry: nil, environment: "PROD", method: "card",
                                     launch: .page("https://citcon.test/h5/1"))
        #expect(CitconPreparation(parameters: page.parameters) == page)
        #expect(page.parameters["page_url"] == "https://citcon.test/h5/1" && page.parameters["launch"] == "page")
        #expect(CitconPreparation(parameters: [:]) == CitconPreparation(chargeID: nil, accessToken: nil, accessTokenExpiry: nil,
                                                                        environment: nil, method: nil, launch: nil))
    }
}

@Suite("Citcon: what only signed fields, real 401s and confirmed amounts may do")
struct CitconHardeningTests {
    let attempt = "attemptref0000000000000001"

    /// A signed form body over `signed` (in order), then `extra` appended unsigned.
    func body(_ signed: [(String, String)], extra: [(String, String)] = []) throws -> Data {
        let names = signed.map(\.0).joined(separator: ",")
        let fields = CitconIPNFields(signed + [("fields", names)])
        let sign = try CitconSignature.sign(fields, secret: Fixtures.secret)
        let pairs = signed + [("fields", names), ("sign", sign)] + extra
        return Data(pairs.map { "\($0.0)=\($0.1)" }.joined(separator: "&").utf8)
    }

    var charge: [(String, String)] {
        [("id", "ch0001"), ("transaction_type", "charge"), ("reference", attempt), ("amount", "1999"), ("currency", "USD"), ("status", "success")]
    }

    @Test("a signed 'paid' cannot be turned into a refund by appending unsigned fields")
    func unsignedRefundFieldsIgnored() throws {
        let gateway = Fixtures.server(RecordingTransport())
        // transaction_type must be signed…
        var withoutType = charge
        withoutType.remove(at: 1)
        let refused = try #require(throws: CheckoutError.self) {
            try gateway.verifyNotification(IncomingNotification(body: try body(withoutType, extra: [("transaction_type", "refund"), ("amount_refunded", "1999")])))
        }
        #expect(refused.field == "fields")
        // …and an unsigned amount_refunded is never read.
        let refund = charge.map { $0.0 == "transaction_type" ? ("transaction_type", "refund") : $0 }
        let report = try gateway.verifyNotification(IncomingNotification(body: try body(refund, extra: [("amount_refunded", "1999")]))).report
        #expect(report.status == .partiallyRefunded)
        // id:type:status:amount_refunded:…: the unsigned amount_refunded is not in it.
        #expect(report.eventID.split(separator: ":", omittingEmptySubsequences: false)[3] == "", "the event id is built from signed fields only")
    }

    @Test("a partial capture: amount_captured below the charge's amount is what moved (inquiry and IPN), so the money rule does not book the whole; null or equal changes nothing")
    func partialCapture() throws {
        let gateway = Fixtures.server(RecordingTransport())
        let usd = Currency.lookup("USD")!
        func inquiry(_ captured: String) throws -> StatusReport {
            let json = #"{"object":"charge","id":"ch1","reference":"att-pc","amount":10000,"currency":"USD","status":"captured","amount_captured":\#(captured)}"#
            return try gateway.report(fromInquiry: try JSONDecoder().decode(CitconCharge.self, from: Data(json.utf8)), attempt: AttemptReference(rawValue: "att-pc"))
        }
        let partial = try inquiry("2000")
        #expect(partial.status == .paid && partial.amount == Money(minorUnits: 2000, currency: usd))
        #expect(AttemptPolicy.verdict(for: partial, on: .authorized, amount: Money(minorUnits: 10_000, currency: usd), source: .inquiry) != .apply)
        #expect(try inquiry("null").amount == Money(minorUnits: 10_000, currency: usd))
        #expect(try inquiry("10000").amount == Money(minorUnits: 10_000, currency: usd))
        var fields = CitconIPNFields([("id", "ch1"), ("transaction_type", "charge"), ("reference", "att-pc"), ("amount", "10000"), ("currency", "USD"),
                                      ("status", "captured"), ("amount_captured", "2000"),
                                      ("fields", "id,transaction_type,reference,amount,currency,status,amount_captured")])
        fields = CitconIPNFields(fields.names.map { ($0, fields[$0]!) } + [("sign", try CitconSignature.sign(fields, secret: Fixtures.secret))])
        let ipn = try gateway.verifyNotification(IncomingNotification(body: Data(fields.names.map { "\($0)=\(fields[$0]!)" }.joined(separator: "&").utf8)))
        #expect(ipn.report.status == .paid && ipn.report.amount == Money(minorUnits: 2000, currency: usd))
    }

    @Test("a refund that did not succeed says nothing about the charge; a signed 'paid' without an amount is recorded, never paid")
    func refundFailureAndMissingAmount() throws {
        let gateway = Fixtures.server(RecordingTransport())
        let failedRefund = charge.map { $0.0 == "transaction_type" ? ("transaction_type", "refund") : $0.0 == "status" ? ("status", "fail") : $0 }
        let report = try gateway.verifyNotification(IncomingNotification(body: try body(failedRefund))).report
        #expect(report.status != .failed && !report.status.isFinal)
        #expect(!report.status.isKnown)
        let noAmount = charge.map { $0.0 == "amount" ? ("amount", "") : $0 }
        let unmapped = try gateway.verifyNotification(IncomingNotification(body: try body(noAmount))).report
        #expect(unmapped.status != .paid && !unmapped.status.isKnown)
        #expect(unmapped.status.rawValue == "citcon_charge_success_without_amount")
        #expect(AttemptPolicy.verdict(for: unmapped, on: .pending, amount: Money(minorUnits: 1999, currency: try Currency(code: "USD")),
                                      source: .notification) != .apply)
        let badCurrency = charge.map { $0.0 == "currency" ? ("currency", "XXQ") : $0 }
        #expect(try gateway.verifyNotification(IncomingNotification(body: try body(badCurrency))).report.status != .paid)
    }

    @Test("a refund IPN naming Till's refund reference maps back to its attempt; one naming the charge maps as it is")
    func refundReferences() throws {
        let gateway = Fixtures.server(RecordingTransport())
        let reference = CitconServer.refundReference(for: AttemptReference(rawValue: attempt), sequence: 2)
        #expect(reference == "\(attempt)-r2")
        for named in [reference, attempt] {
            let refund = charge.map { $0.0 == "transaction_type" ? ("transaction_type", "refund") : $0.0 == "reference" ? ("reference", named) : $0 }
            let report = try gateway.verifyNotification(IncomingNotification(body: try body(refund))).report
            #expect(report.attempt.rawValue == attempt)
            #expect(report.status == .partiallyRefunded)
        }
        #expect(CitconServer.attempt(fromRefundReference: "order-7") == "order-7")
        #expect(CitconServer.attempt(fromRefundReference: "order-r") == "order-r")
        #expect(CitconServer.attempt(fromRefundReference: "-r1") == "-r1")
        // A charge IPN's reference is never rewritten.
        let chargeIPN = charge.map { $0.0 == "reference" ? ("reference", reference) : $0 }
        #expect(try gateway.verifyNotification(IncomingNotification(body: try body(chargeIPN))).report.attempt.rawValue == reference)
    }

    @Test("only an HTTP 401 refreshes the token and resends; a 'fail' envelope saying 4010 is not resent")
    func onlyReal401Retries() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t1"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.failure(code: "4010", message: "odd", status: 200))
        do { _ = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent())); Issue.record("prepared") }
        catch is CheckoutError {}
        try transport.verify()
        #expect(transport.requests.filter { $0.url.path.hasSuffix("/charges") }.count == 1)
    }

    @Test("a charge made for an app that then gets no client token is cancelled before moving on")
    func orphanChargeCancelled() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.failure(code: "5000", message: "down", status: 503))
        transport.expect(.post, path: "/v1/cancels", respond: Fixtures.cancelled(reference: "\(attempt)-cancel"))
        do { _ = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent())); Issue.record("prepared") }
        catch let error as CheckoutError { #expect(error.category == .unavailable) }
        try transport.verify()
        let cancel = try #require(JSONSerialization.jsonObject(with: transport.requests.last?.body ?? Data()) as? [String: Any])
        #expect(cancel["id"] as? String == "2000470537621948100613")
        #expect(cancel["transaction_id"] == nil)
    }

    @Test("an absurd token expiry neither crashes nor keeps a token forever")
    func absurdExpiry() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.json(#"{"status":"success","app":"citcon_upi","version":"v1.0.0","data":{"access_token":"s","expiry":9223372036854775807}}"#))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.json(#"{"status":"success","app":"citcon_upi","version":"v1.0.0","data":{"access_token":"c","expiry":9223372036854775807}}"#))
        let preparation = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent()))
        let expiry = try #require(preparation.parameters["access_token_expiry"].flatMap { Int64($0) })
        #expect(expiry <= Int64(Date().timeIntervalSince1970) + 86_401)
        #expect(preparation.parameters["charge_token"] == nil)
    }
}
