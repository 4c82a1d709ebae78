import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillCitcon
@testable import TillCitconServer

@Suite("Citcon gateway")
struct CitconGatewayTests {
    let attempt = "attemptref0000000000000001"

    @Test("prepare: a server token creates the charge with the whole request; the app gets a client token and the launch content")
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
        let transaction = try #require(body["transaction"] as? [String: Any])
        #expect(transaction["reference"] as? String == attempt)
        #expect(transaction["amount"] as? Int == 1999)
        #expect(transaction["currency"] as? String == "USD")
        #expect(transaction["country"] as? String == "US")
        #expect(transaction["note"] as? String == "order 42")
        let payment = try #require(body["payment"] as? [String: Any])
        #expect(payment["method"] as? String == "wechatpay")
        #expect(payment["client"] as? [String] == ["mobile_native"])
        let urls = try #require(body["urls"] as? [String: String])
        #expect(urls["ipn"] == Fixtures.notificationURL.absoluteString)
        #expect(urls["success"] == "https://shop.example.com/till/return?till_state=abc&citcon_result=success")
        #expect(urls["cancel"] == "https://shop.example.com/till/return?till_state=abc&citcon_result=cancel")
        #expect(body["universal_link"] as? String == "https://shop.example.com/till/return")
        #expect(body["scheme"] == nil)
        let consumer = try #require(body["consumer"] as? [String: Any])
        #expect(consumer["first_name"] as? String == "Ada")

        #expect(preparation.gatewayReference == "ch0001")
        #expect(preparation.parameters["access_token"] == "client-token")
        #expect(preparation.parameters["native.prepayid"] == "wxp1")
        #expect(preparation.parameters["native.timestamp"] == "1767225600")
        #expect(preparation.parameters["page_url"] == "https://citcon.test/h5/ch0001")
        #expect(!preparation.parameters.values.contains("server-token"))
        #expect(!preparation.parameters.values.contains("merchant-key"))
        #expect(!preparation.parameters.values.contains(Fixtures.secret))
    }

    @Test("tokens are cached; an expired one (401) is replaced and the call made once more")
    func tokenCacheAndRefresh() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t1"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(reference: attempt, status: "pending"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.failure(code: "4010", message: "token expired", status: 401))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t2"))
        transport.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(reference: attempt, status: "succeeded"))
        let gateway = Fixtures.server(transport)
        let query = InquiryQuery(attempt: AttemptReference(rawValue: attempt), gatewayReference: "ch0001")
        #expect(try await gateway.inquire(query).status == .pending)
        let second = try await gateway.inquire(query)
        #expect(second.status == .paid)
        #expect(second.amount == Money(minorUnits: 1999, currency: try Currency(code: "USD")))
        try transport.verify()
        #expect(transport.requests.map { $0.headers["Authorization"] ?? "" } == ["Bearer merchant-key", "Bearer t1", "Bearer t1", "Bearer merchant-key", "Bearer t2"])
    }

    @Test("Alipay needs a scheme return, WeChat Pay a universal link: errors name the field")
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
        #expect(request.scheme == "myshop")
        #expect(request.universalLink == nil)
    }

    @Test("bad intents are typed errors naming the field")
    func badIntents() throws {
        let gateway = Fixtures.server(RecordingTransport())
        var noCountry = Fixtures.intent()
        noCountry.country = nil
        #expect(throws: CheckoutError.self) { try gateway.chargeRequest(for: Fixtures.context(noCountry)) }
        #expect((try? gateway.chargeRequest(for: Fixtures.context(noCountry))) == nil)
        do { _ = try gateway.chargeRequest(for: Fixtures.context(noCountry)) } catch let error as CheckoutError { #expect(error.field == "intent.country") }

        var unsupported = Fixtures.intent()
        unsupported.method = .mada
        do { _ = try gateway.chargeRequest(for: Fixtures.context(unsupported)); Issue.record("accepted mada") }
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

    @Test("card with 3-D Secure needs the customer's details and a billing address")
    func cardThreeDS() throws {
        let settings = CitconSettings(request3DSecure: true)
        let bare = Fixtures.server(RecordingTransport(), settings: settings)
        do { _ = try bare.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .card))); Issue.record("no phone") }
        catch let error as CheckoutError { #expect(error.field == "intent.customer.phone") }

        var intent = Fixtures.intent(method: .card, action: .authorize)
        intent.customer.phone = "5551234567"
        do { _ = try bare.chargeRequest(for: Fixtures.context(intent)); Issue.record("no address") }
        catch let error as CheckoutError { #expect(error.field == "orderDetails.billingAddress") }

        let address = CitconChargeRequest.Address(street: "555 Smith St", street2: "#2", city: "Chicago", state: "IL", zip: "12345", country: "US")
        let goods = CitconChargeRequest.Goods(data: [.init(name: "Toy", sku: "3264571", quantity: 1, totalAmount: 1999, unitAmount: 1999)],
                                              shipping: .init(firstName: "Ada", city: "Chicago", country: "US"))
        let full = Fixtures.server(RecordingTransport(), settings: settings) { _ in
            CitconOrderDetails(goods: goods, billingAddress: address, installments: .init(id: "3"), indicator: "authenticated")
        }
        let request = try full.chargeRequest(for: Fixtures.context(intent))
        #expect(request.request3DSecureVerification == true)
        #expect(request.transaction.autoCapture == false)
        #expect(request.payment.billingAddress == address)
        #expect(request.consumer?.billingAddress == address)
        #expect(request.goods == goods)
        #expect(request.installments?.id == "3")
        let encoded = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        #expect(encoded.contains(#""request_3ds_verification":true"#))
        #expect(encoded.contains(#""total_amount":1999"#))
        #expect(encoded.contains(#""billing_address""#))
    }

    @Test("UnionPay carries its mode")
    func unionPayMode() throws {
        let gateway = Fixtures.server(RecordingTransport(), settings: CitconSettings(unionpayMode: "01"))
        let request = try gateway.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .unionPay), returnURL: Fixtures.schemeReturn))
        #expect(request.unionpayMode == "01")
        let bad = Fixtures.server(RecordingTransport(), settings: CitconSettings(unionpayMode: "02"))
        do { _ = try bad.chargeRequest(for: Fixtures.context(Fixtures.intent(method: .unionPay), returnURL: Fixtures.schemeReturn)); Issue.record("02") }
        catch let error as CheckoutError { #expect(error.field == "settings.unionpay_mode") }
    }

    @Test("a charge Citcon could not create moved no money, so it may go elsewhere; a validation refusal names Citcon's field")
    func prepareFailures() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("t1"))
        transport.expect(.post, path: "/v1/charges", fail: TransportError(.timedOut, "no answer"))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.failure(code: "4001", message: "transaction.currency: not supported", status: 400))
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
    }

    @Test("a refused merchant key is a configuration error")
    func refusedKey() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.failure(code: "4010", message: "unknown key", status: 401))
        do { _ = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent())); Issue.record("prepared") }
        catch let error as CheckoutError { #expect(error.category == .configuration || error.category == .unavailable) }
    }

    @Test("present: a wallet launch for WeChat Pay, Alipay and UnionPay, the page for the rest")
    func presentSteps() async throws {
        let gateway = CitconGateway(environment: .custom(Fixtures.base), transport: RecordingTransport())
        func preparation(_ method: PaymentMethod, _ parameters: [String: String], returnURL: URL = Fixtures.schemeReturn) -> Preparation {
            Preparation(gateway: "citcon", attempt: AttemptReference(rawValue: attempt), method: method,
                        amount: Money(minorUnits: 1, currency: try! Currency(code: "USD")), gatewayReference: "ch",
                        parameters: parameters.merging(["environment": "CUSTOM"]) { a, _ in a }, returnURL: returnURL)
        }
        let alipay = try await gateway.present(preparation(.alipay, ["native.orderSpec": "spec", "native.signedString": "sig", "page_url": "https://p"]), input: .start)
        #expect(alipay == .launchWallet(WalletLaunch(wallet: "alipay", parameters: ["orderSpec": "spec", "signedString": "sig"], returnScheme: "myshop",
                                                     returnURL: Fixtures.schemeReturn)))
        let wechat = try await gateway.present(preparation(.wechatPay, ["native.prepayid": "p"], returnURL: Fixtures.universalReturn), input: .start)
        #expect(wechat == .launchWallet(WalletLaunch(wallet: "wechat", parameters: ["prepayid": "p"], returnScheme: nil,
                                                     returnURL: Fixtures.universalReturn)))
        let card = try await gateway.present(preparation(.card, ["page_url": "https://citcon.test/h5/1"]), input: .start)
        #expect(card == .openURL(URL(string: "https://citcon.test/h5/1")!, handoff: .webPage))
        let paypal = try await gateway.present(preparation(.paypal, ["page_url": "https://citcon.test/h5/2"]), input: .start)
        #expect(paypal == .openURL(URL(string: "https://citcon.test/h5/2")!, handoff: .browser))
        #expect(card.customerMayAuthenticate && alipay.customerMayAuthenticate)

        let uat = CitconGateway(environment: .uat, transport: RecordingTransport())
        do { _ = try await uat.present(preparation(.card, ["page_url": "https://p"]), input: .start); Issue.record("wrong environment") }
        catch let error as CheckoutError { #expect(error.field == "environment") }
        do { _ = try await uat.present(preparation(.card, ["environment": "UAT", "page_url": "javascript:alert(1)"]), input: .start); Issue.record("bad url") }
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
        func body(status: String, type: String = "charge", refunded: String = "") throws -> Data {
            var fields = CitconIPNFields([("id", "ch0001"), ("transaction_type", type), ("reference", attempt), ("amount", "1999"),
                                          ("currency", "USD"), ("status", status), ("amount_refunded", refunded),
                                          ("fields", "id,transaction_type,reference,amount,currency,status,amount_refunded")])
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
        let partial = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success", type: "refund", refunded: "500")))
        #expect(partial.report.status == .partiallyRefunded)
        let full = try gateway.verifyNotification(IncomingNotification(body: try body(status: "success", type: "refund", refunded: "1999")))
        #expect(full.report.status == .refunded)
        #expect(full.report.eventID != partial.report.eventID)

        #expect(gateway.claimedAttempt(in: IncomingNotification(body: Data("reference=\(attempt)&status=success".utf8)))?.rawValue == attempt)
        let forged = IncomingNotification(body: Data("id=ch0001&reference=\(attempt)&amount=1999&currency=USD&status=success&fields=id,reference,amount,currency,status&sign=00".utf8))
        #expect(throws: CheckoutError.self) { try gateway.verifyNotification(forged) }

        // The app half cannot verify an IPN at all: it holds no secret and is no server.
        #expect(!((Fixtures.app() as Any) is any CheckoutServer))
    }

    @Test("refund, capture and cancel use the server token")
    func followUps() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        for (path, object) in [("captures", "capture"), ("refunds", "refund"), ("cancels", "cancel")] {
            transport.expect(.post, path: "/v1/\(path)", respond: Fixtures.json(#"{"status":"success","app":"upi","version":"v1","data":{"object":"\#(object)","id":"op1","transaction_id":"ch0001","amount":500,"currency":"USD","status":"succeeded"}}"#))
        }
        let gateway = Fixtures.server(transport)
        let usd = try Currency(code: "USD")
        #expect(try await gateway.capture(transactionID: "ch0001", amount: Money(minorUnits: 500, currency: usd)).object == "capture")
        #expect(try await gateway.refund(transactionID: "ch0001", amount: Money(minorUnits: 500, currency: usd), reason: "r").object == "refund")
        #expect(try await gateway.cancel(transactionID: "ch0001").status == "succeeded")
        try transport.verify()
        let refund = try #require(JSONSerialization.jsonObject(with: transport.requests[2].body ?? Data()) as? [String: Any])
        #expect(refund["transaction_id"] as? String == "ch0001")
        #expect(refund["amount"] as? Int == 500)
        #expect(transport.requests.dropFirst().allSatisfy { $0.headers["Authorization"] == "Bearer server-token" })
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
        #expect(!report.eventID.contains("1999:"), "the event id is built from signed fields only")
    }

    @Test("a refund that did not succeed says nothing about the charge; a 'paid' without an amount is refused")
    func refundFailureAndMissingAmount() throws {
        let gateway = Fixtures.server(RecordingTransport())
        let failedRefund = charge.map { $0.0 == "transaction_type" ? ("transaction_type", "refund") : $0.0 == "status" ? ("status", "fail") : $0 }
        let report = try gateway.verifyNotification(IncomingNotification(body: try body(failedRefund))).report
        #expect(report.status != .failed && !report.status.isFinal)
        let noAmount = charge.map { $0.0 == "amount" ? ("amount", "") : $0 }
        let error = try #require(throws: CheckoutError.self) { try gateway.verifyNotification(IncomingNotification(body: try body(noAmount))) }
        #expect(error.field == "amount")
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
        transport.expect(.post, path: "/v1/cancels", respond: Fixtures.json(#"{"status":"success","app":"upi","version":"v1","data":{"object":"cancel","id":"c1","transaction_id":"ch0001","status":"succeeded"}}"#))
        do { _ = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent())); Issue.record("prepared") }
        catch let error as CheckoutError { #expect(error.category == .unavailable) }
        try transport.verify()
        let cancel = try #require(JSONSerialization.jsonObject(with: transport.requests.last?.body ?? Data()) as? [String: Any])
        #expect(cancel["transaction_id"] as? String == "ch0001")
    }

    @Test("an absurd token expiry neither crashes nor keeps a token forever")
    func absurdExpiry() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.json(#"{"status":"success","app":"upi","version":"v1","data":{"access_token":"s","expiry":9223372036854775807}}"#))
        transport.expect(.post, path: "/v1/charges", respond: Fixtures.charge(reference: attempt))
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.json(#"{"status":"success","app":"upi","version":"v1","data":{"access_token":"c","expiry":9223372036854775807}}"#))
        let preparation = try await Fixtures.server(transport).prepare(Fixtures.context(Fixtures.intent()))
        let expiry = try #require(preparation.parameters["access_token_expiry"].flatMap { Int64($0) })
        #expect(expiry <= Int64(Date().timeIntervalSince1970) + 86_401)
        #expect(preparation.parameters["charge_token"] == nil)
    }
}
