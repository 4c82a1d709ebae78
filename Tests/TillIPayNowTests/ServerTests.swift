import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillIPayNowServer
import TillOrchestration

/// ``IPayNowServer`` with a fixed clock and a ``RecordingTransport``. Expected signatures come from the
/// tests' own appendix B signer (``TestSigner``), never from ``IPayNowSigning``.
@Suite("iPayNow server")
struct ServerTests {
    /// payData split into its fields, in order.
    static func payData(_ preparation: Preparation) throws -> [(String, String)] {
        TestForm.split(try #require(preparation.parameters[IPayNowGateway.payDataParameter]))
    }

    /// Checks that payData is `expected` (in key order) then `mhtSignType=MD5` and a signature the tests' signer recomputes.
    static func expectSigned(_ pairs: [(String, String)], _ expected: [(String, String)], key: String = Setup.appKey,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        let names = pairs.map(\.0)
        #expect(names == expected.map(\.0) + ["mhtSignType", "mhtSignature"], sourceLocation: sourceLocation)
        #expect(pairs.map(\.1).dropLast(2).elementsEqual(expected.map(\.1)), sourceLocation: sourceLocation)
        #expect(pairs.dropLast().last?.1 == "MD5", sourceLocation: sourceLocation)
        let signature = try #require(pairs.last?.1)
        #expect(signature == TestSigner.sign(expected, excluding: [], key: key), sourceLocation: sourceLocation)
    }

    // MARK: Prepare

    @Test("prepare Alipay in NZD: payData is the signed order (flag 1, channel 90), no call to iPayNow")
    func prepareAlipay() async throws {
        let transport = RecordingTransport()
        let preparation = try await Setup.server(transport).prepare(Setup.context())
        try transport.verify()
        #expect(transport.requests.isEmpty)
        #expect(preparation.gateway == "ipaynow")
        #expect(preparation.attempt == Setup.attempt)
        #expect(preparation.method == .alipay)
        #expect(preparation.amount == Setup.money(1050, "NZD"))
        #expect(preparation.returnURL == Setup.appReturn)
        #expect(preparation.expiresAt == Setup.clock.addingTimeInterval(3600))
        #expect(Array(preparation.parameters.keys) == ["payData"])
        // The description "Green tea" is signed without its space: the plugin strips spaces before sending.
        try Self.expectSigned(try Self.payData(preparation), [
            ("appId", Setup.appId), ("mhtAmtCurrFlag", "1"), ("mhtCharset", "UTF-8"), ("mhtCurrencyType", "NZD"), ("mhtOrderAmt", "1050"),
            ("mhtOrderDetail", "Greentea"), ("mhtOrderName", "Greentea"), ("mhtOrderNo", Setup.attempt.rawValue),
            ("mhtOrderStartTime", "20260101080000"), ("mhtOrderTimeOut", "3600"), ("mhtOrderType", "01"),
            ("notifyUrl", Setup.notificationURL.absoluteString), ("payChannelType", "90"),
        ])
        #expect(!(preparation.parameters["payData"] ?? "").contains(Setup.appKey))
        #expect(!(preparation.parameters["payData"] ?? "").contains(TestSigner.md5Hex(Setup.appKey)))
    }

    @Test("WeChat Pay only when enabled (the iOS plugin 1.0.1 opens Alipay only); JPY refused (no source says yen or hundredths)")
    func prepareWeChatAndYen() async throws {
        let off = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(500, "HKD", method: .wechatPay)))
        }
        #expect(off?.code == .unsupportedMethod)
        #expect(off?.field == "intent.method")
        let yen = await #expect(throws: CheckoutError.self) { _ = try await Setup.server().prepare(Setup.context(Setup.intent(500, "JPY"))) }
        #expect(yen?.code == .unsupportedCurrency)
        #expect(yen?.field == "intent.amount.currency")
        // JPY still settles CNY payments (flag 0, RMB fen).
        let cny = try await Setup.server(settings: IPayNowSettings(appId: Setup.appId, settlementCurrency: "JPY"))
            .prepare(Setup.context(Setup.intent(500, "CNY")))
        #expect(cny.parameters["payData"]?.contains("mhtCurrencyType=JPY") == true)
    }

    @Test("prepare WeChat Pay in HKD (enabled): channel 80, the settings' timeout and clock")
    func prepareWeChat() async throws {
        let settings = IPayNowSettings(appId: Setup.appId, orderTimeout: 600, utcOffsetSeconds: 0, wechatPay: true)
        let preparation = try await Setup.server(settings: settings).prepare(Setup.context(Setup.intent(500, "HKD", method: .wechatPay)))
        try Self.expectSigned(try Self.payData(preparation), [
            ("appId", Setup.appId), ("mhtAmtCurrFlag", "1"), ("mhtCharset", "UTF-8"), ("mhtCurrencyType", "HKD"), ("mhtOrderAmt", "500"),
            ("mhtOrderDetail", "Greentea"), ("mhtOrderName", "Greentea"), ("mhtOrderNo", Setup.attempt.rawValue),
            ("mhtOrderStartTime", "20260101000000"), ("mhtOrderTimeOut", "600"), ("mhtOrderType", "01"),
            ("notifyUrl", Setup.notificationURL.absoluteString), ("payChannelType", "80"),
        ])
        #expect(preparation.expiresAt == Setup.clock.addingTimeInterval(600))
    }

    @Test("prepare in CNY: RMB fen with flag 0 against the settlement currency")
    func prepareCNY() async throws {
        let settings = IPayNowSettings(appId: Setup.appId, settlementCurrency: "USD")
        let preparation = try await Setup.server(settings: settings).prepare(Setup.context(Setup.intent(8800, "CNY")))
        let pairs = try Self.payData(preparation)
        let fields = Dictionary(uniqueKeysWithValues: pairs)
        #expect(fields["mhtAmtCurrFlag"] == "0")
        #expect(fields["mhtCurrencyType"] == "USD")
        #expect(fields["mhtOrderAmt"] == "8800")
        #expect(preparation.amount == Setup.money(8800, "CNY"))
        #expect(fields["mhtSignature"] == TestSigner.sign(Array(pairs.dropLast(2)), excluding: [], key: Setup.appKey))
    }

    @Test("prepare in CNY without settlement_currency: misconfigured, naming settings.settlement_currency")
    func prepareCNYWithoutSettlement() async {
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server().prepare(Setup.context(Setup.intent(8800, "CNY"))) }
        #expect(error?.code == .misconfigured)
        #expect(error?.field == "settings.settlement_currency")
        #expect(error?.category == .configuration)
    }

    @Test("prepare refuses a currency outside appendix C, a method iPayNow has not, no notification URL")
    func prepareRefusals() async {
        for currency in ["KRW", "BRL", "IDR"] {
            let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server().prepare(Setup.context(Setup.intent(1000, currency))) }
            #expect(error?.code == .unsupportedCurrency, "\(currency)")
            #expect(error?.field == "intent.amount.currency")
        }
        for method in [PaymentMethod.card, .unionPay, .alipayHK] {
            let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server().prepare(Setup.context(Setup.intent(method: method))) }
            #expect(error?.code == .unsupportedMethod, "\(method)")
            #expect(error?.field == "intent.method")
        }
        let noURL = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(notificationURL: nil))
        }
        #expect(noURL?.code == .misconfigured)
        #expect(noURL?.field == "notificationURL")
    }

    @Test("the description becomes mhtOrderName: too long or holding & or =, the error names mhtOrderName; none: the merchant reference")
    func prepareDescription() async throws {
        let long = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(description: String(repeating: "t", count: 41))))
        }
        #expect(long?.code == .fieldTooLong)
        #expect(long?.field == "mhtOrderName")
        #expect(long?.gateway == "ipaynow")
        let ampersand = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(description: "tea & cake")))
        }
        #expect(ampersand?.code == .invalidField)
        #expect(ampersand?.field == "mhtOrderName")
        let fits = try await Setup.server().prepare(Setup.context(Setup.intent(description: String(repeating: "茶", count: 40))))
        #expect(Dictionary(uniqueKeysWithValues: try Self.payData(fits))["mhtOrderName"] == String(repeating: "茶", count: 40))
        let none = try await Setup.server().prepare(Setup.context(Setup.intent(description: nil)))
        #expect(Dictionary(uniqueKeysWithValues: try Self.payData(none))["mhtOrderName"] == "order-42")
    }

    @Test("an app id the settings hold that appendix A refuses is named as appId")
    func prepareBadAppId() async {
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server(settings: IPayNowSettings(appId: "app&id")).prepare(Setup.context())
        }
        #expect(error?.field == "appId")
    }

    // MARK: Return URL

    @Test("returnURL(from:): the first custom scheme offered; only http(s): refused naming returnURLs")
    func returnURL() throws {
        let server = Setup.server()
        let custom = URL(string: "otherapp://r")!
        #expect(try server.returnURL(from: [Setup.webReturn, Setup.appReturn, custom], for: Setup.intent()) == Setup.appReturn)
        #expect(try server.returnURL(from: [custom], for: Setup.intent()) == custom)
        for offered in [[Setup.webReturn], [], [URL(string: "HTTP://shop.example.com/r")!]] {
            let error = #expect(throws: CheckoutError.self) { _ = try server.returnURL(from: offered, for: Setup.intent()) }
            #expect(error?.field == "returnURLs")
        }
    }

    // MARK: Notifications

    @Test("a legacy cross-border N001 (PHP README 2.2), signed by the tests: paid, the order's amount, acknowledged success=Y")
    func legacyNotification() throws {
        let body = TestSigner.message(Setup.crossBorderN001(), key: Setup.appKey)
        let verified = try Setup.server().verifyNotification(IncomingNotification(body: body))
        let report = verified.report
        #expect(report.gateway == "ipaynow")
        #expect(report.attempt == Setup.attempt)
        #expect(report.status == .paid)
        #expect(report.amount == Setup.money(1050, "NZD"))
        #expect(report.gatewayReference == "2004115215000380")
        #expect(report.gatewayStatus == "A001")
        #expect(report.eventID == "2004115215000380:A001")
        #expect(verified.acknowledgement.statusCode == 200)
        #expect(String(decoding: verified.acknowledgement.body, as: UTF8.self) == "success=Y")
        #expect(verified.acknowledgement == IPayNowServer.acknowledgement)
    }

    @Test("a 1.0.0 N001 (transStatus, version, signType signed): read the same way")
    func versionedNotification() throws {
        let pairs = Setup.crossBorderN001(status: "A002").map { $0.0 == "tradeStatus" ? ("transStatus", $0.1) : $0 } + [("version", "1.0.0")]
        let report = try Setup.server().verifyNotification(IncomingNotification(body: TestSigner.message(pairs, key: Setup.appKey, versioned: true))).report
        #expect(report.status == .failed)
        #expect(report.gatewayStatus == "A002")
        #expect(report.eventID == "2004115215000380:A002")
    }

    @Test("real N001s verify for their own app: paid, 1 fen", arguments: RealVector.all.filter { $0.fields_decoded["funcode"] == "N001" })
    func realNotification(_ vector: RealVector) throws {
        let server = Setup.server(settings: IPayNowSettings(appId: vector.app_id), key: vector.app_key)
        let report = try server.verifyNotification(IncomingNotification(body: vector.body)).report
        #expect(report.attempt.rawValue == vector.fields_decoded["mhtOrderNo"])
        #expect(report.status == .paid)
        #expect(report.amount == Setup.money(1, "CNY"))
        #expect(report.gatewayReference == vector.fields_decoded["nowPayOrderNo"])
        #expect(server.claimedAttempt(in: IncomingNotification(body: vector.body))?.rawValue == vector.fields_decoded["mhtOrderNo"])
    }

    @Test("statuses: A00I pending, A002 failed, A003 pending, an unknown code never success; paid without mhtOrderAmt refused")
    func notificationStatuses() throws {
        let server = Setup.server()
        func status(_ raw: String) throws -> PaymentStatus {
            try server.verifyNotification(IncomingNotification(body: TestSigner.message(Setup.crossBorderN001(status: raw), key: Setup.appKey))).report.status
        }
        #expect(try status("A00I") == .pending)
        #expect(try status("A002") == .failed)
        #expect(try status("A003") == .pending)
        #expect(try status("A006") == .cancelled)
        #expect(try status("B001").rawValue == "ipaynow_status_B001")
        let noAmount = Setup.crossBorderN001().filter { $0.0 != "mhtOrderAmt" }
        let error = #expect(throws: CheckoutError.self) {
            _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(noAmount, key: Setup.appKey)))
        }
        #expect(error?.field == "body.mhtOrderAmt")
        let noStatus = Setup.crossBorderN001().filter { $0.0 != "tradeStatus" }
        let missing = #expect(throws: CheckoutError.self) {
            _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(noStatus, key: Setup.appKey)))
        }
        #expect(missing?.field == "body.tradeStatus")
    }

    @Test("refused: another app's N001, anything but N001, a forged signature, a body signed for the 1.0.0 rule without version")
    func notificationRefusals() throws {
        let server = Setup.server()
        let other = #expect(throws: CheckoutError.self) {
            _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(Setup.crossBorderN001(appId: "1445486158399220"),
                                                                                            key: Setup.appKey)))
        }
        #expect(other?.code == .invalidField)
        #expect(other?.field == "body.appId")
        #expect(other?.category == .verification)
        for funcode in ["N002", "MQ001", "WP001"] {
            let error = #expect(throws: CheckoutError.self) {
                _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(Setup.crossBorderN001(funcode: funcode),
                                                                                                key: Setup.appKey)))
            }
            #expect(error?.field == "body.funcode", "\(funcode)")
        }
        let withoutFuncode = Setup.crossBorderN001().filter { $0.0 != "funcode" }
        let none = #expect(throws: CheckoutError.self) {
            _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(withoutFuncode, key: Setup.appKey)))
        }
        #expect(none?.field == "body.funcode")
        let forged = #expect(throws: CheckoutError.self) {
            _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(Setup.crossBorderN001(), key: "another key")))
        }
        #expect(forged?.code == .signatureMismatch)
        #expect(forged?.category == .verification)
        // Signed with signType in the string (the 1.0.0 rule) but without version: read as legacy, mismatch.
        let mixed = #expect(throws: CheckoutError.self) {
            _ = try server.verifyNotification(IncomingNotification(body: TestSigner.message(Setup.crossBorderN001(), key: Setup.appKey,
                                                                                            versioned: true)))
        }
        #expect(mixed?.code == .signatureMismatch)
    }

    @Test("claimedAttempt reads mhtOrderNo without verifying; nothing from a body it cannot read")
    func claimedAttempt() {
        let server = Setup.server()
        let forged = TestSigner.message(Setup.crossBorderN001(), key: "another key")
        #expect(server.claimedAttempt(in: IncomingNotification(body: forged)) == Setup.attempt)
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data("mhtOrderNo=&tradeStatus=A001".utf8))) == nil)
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data("tradeStatus=A001".utf8))) == nil)
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data("mhtOrderNo=%ZZ".utf8))) == nil)
        #expect(server.claimedAttempt(in: IncomingNotification(body: Data("mhtOrderNo=a&mhtOrderNo=b".utf8))) == nil)
    }

    // MARK: Inquiry

    static func answer(_ pairs: [(String, String)], status: Int = 200) -> TransportResponse {
        TransportResponse(statusCode: status, headers: ["Content-Type": "text/plain;charset=UTF-8"], body: TestSigner.message(pairs, key: Setup.appKey))
    }

    @Test("inquire posts MQ001 to {base}/global, signed over appId, mhtOrderNo and mhtCharset only; A001 paid")
    func inquirePaid() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: Self.answer(Setup.mq001Answer()))
        let report = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt))
        try transport.verify()
        let request = try #require(transport.requests.first)
        #expect(request.url.absoluteString == "https://ipaynow.test/global")
        #expect(request.headers["Content-Type"]?.hasPrefix("application/x-www-form-urlencoded") == true)
        let sent = TestForm.decode(String(decoding: request.body ?? Data(), as: UTF8.self))
        #expect(sent.map(\.0) == ["funcode", "appId", "mhtOrderNo", "mhtCharset", "mhtSignType", "mhtSignature"])
        let fields = Dictionary(uniqueKeysWithValues: sent)
        #expect(fields["funcode"] == "MQ001")
        #expect(fields["appId"] == Setup.appId)
        #expect(fields["mhtOrderNo"] == Setup.attempt.rawValue)
        #expect(fields["mhtCharset"] == "UTF-8")
        #expect(fields["mhtSignType"] == "MD5")
        let expected = TestSigner.md5Hex("appId=\(Setup.appId)&mhtCharset=UTF-8&mhtOrderNo=\(Setup.attempt.rawValue)&" + TestSigner.md5Hex(Setup.appKey))
        #expect(fields["mhtSignature"] == expected)

        #expect(report.attempt == Setup.attempt)
        #expect(report.status == .paid)
        #expect(report.amount == Setup.money(1050, "NZD"))
        #expect(report.gatewayReference == "2004115215000380")
        #expect(report.gatewayCode == "A001")
        #expect(report.gatewayMessage == "成功")
    }

    @Test("inquire: A00I pending, A002 failed", arguments: [("A00I", PaymentStatus.pending), ("A002", .failed), ("A003", .pending)])
    func inquireStatuses(_ raw: String, _ status: PaymentStatus) async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: Self.answer(Setup.mq001Answer(status: raw)))
        let report = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt))
        #expect(report.status == status)
        #expect(report.gatewayStatus == raw)
    }

    @Test("inquire: an unsigned A002 answer, twice (both signing readings), is gateway_error (unknown outcome) with iPayNow's code and message")
    func inquireQueryFailed() async {
        let transport = RecordingTransport()
        let body = Data("responseCode=A002&responseMsg=%E8%AE%A2%E5%8D%95%E4%B8%8D%E5%AD%98%E5%9C%A8".utf8)
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 200, body: body))
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 200, body: body))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(error?.code == .gatewayError)
        #expect(error?.category == .unknownOutcome)
        #expect(error?.gatewayCode == "A002")
        #expect(error?.gatewayMessage == "订单不存在")
        #expect(error?.field == "MQ001.responseCode")
    }

    @Test("inquire: refused under the PHP code's signing, asked again signed over every field (README 2.4, app demo), answered")
    func inquireSecondReading() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 200, body: Data("responseCode=A002&responseMsg=sign".utf8)))
        transport.expect(.post, path: "/global", respond: Self.answer(Setup.mq001Answer(status: "A001")))
        let report = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt))
        #expect(report.status == .paid)
        let second = try FormFields.decode(try #require(transport.requests.last?.body))
        let signed = second.pairs.filter { $0.name != "mhtSignature" }.map { ($0.name, $0.value) }
        #expect(second["mhtSignature"] == TestSigner.sign(signed, excluding: [], key: Setup.appKey))
    }

    @Test("inquire: a bad signature is signature_mismatch; a signed A001 with no responseCode is no answer")
    func inquireBadSignature() async {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 200,
                                                                             body: TestSigner.message(Setup.mq001Answer(), key: "another key")))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(error?.code == .signatureMismatch)
        #expect(error?.field == "MQ001.signature")

        let silent = RecordingTransport()
        silent.expect(.post, path: "/global", respond: Self.answer(Setup.mq001Answer().filter { $0.0 != "responseCode" }))
        let noCode = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(silent).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(noCode?.category == .unknownOutcome)
        #expect(noCode?.field == "MQ001.responseCode")
    }

    @Test("inquire: an answer about another order, or another app, is refused")
    func inquireAnotherOrder() async {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: Self.answer(Setup.mq001Answer(order: "att0000000000000000000002")))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(error?.field == "MQ001.mhtOrderNo")
        #expect(error?.category == .unknownOutcome)

        let otherApp = RecordingTransport()
        otherApp.expect(.post, path: "/global", respond: Self.answer(Setup.mq001Answer().map { $0.0 == "appId" ? ("appId", "1445486158399220") : $0 }))
        let app = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(otherApp).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(app?.field == "MQ001.appId")
    }

    @Test("inquire: HTTP 500 is gateway_error, unknown outcome")
    func inquireHTTP500() async {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 500, body: Data("oops".utf8)))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(error?.code == .gatewayError)
        #expect(error?.category == .unknownOutcome)
        #expect(error?.field == "MQ001")
    }

    @Test("inquire: a transport failure is classified (never sent: unavailable; timed out or lost: unknown outcome)",
          arguments: [(TransportError.Kind.notSent, CheckoutError.Category.unavailable), (.timedOut, .unknownOutcome),
                      (.connectionLost, .unknownOutcome)])
    func inquireTransportFailure(_ kind: TransportError.Kind, _ category: CheckoutError.Category) async {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", fail: TransportError(kind, "scripted"))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).inquire(InquiryQuery(attempt: Setup.attempt)) }
        #expect(error?.category == category)
        #expect(error?.gateway == "ipaynow")
    }

    @Test("the real 2015 MQ001 answer, served for its own app and order: verified (signType not signed), transStatus A001")
    func inquireReal2015Answer() async throws {
        let vector = try #require(RealVector.all.first { $0.id == "MQ001_response_2015" })
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 200, body: vector.body))
        let server = Setup.server(transport, settings: IPayNowSettings(appId: vector.app_id), key: vector.app_key)
        // Its order number holds `_` (appendix A says letters and digits; the real message is read all the same).
        let order = AttemptReference(rawValue: try #require(vector.fields_decoded["mhtOrderNo"]))
        let report = try await server.inquire(InquiryQuery(attempt: order))
        #expect(report.attempt == order)
        #expect(report.status == .paid)
        #expect(report.gatewayStatus == "A001")
    }
}
