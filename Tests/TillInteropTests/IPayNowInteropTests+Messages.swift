import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillIPayNowServer

extension IPayNowInteropTests {
    // MARK: 2. Every real message verifies on both sides

    @Test("the 16 real messages: each verifies in Till under the rule its fields imply and in the SDK under the matching exclude_sign_type, and under that rule only; both read the same fields; one changed value is refused by both")
    func realMessagesVerifyOnBothSides() async throws {
        let messages = try IPayNowRealMessages.load()
        try #require(messages.count == 16)
        #expect(messages.filter(\.isVersionedN001).count == 7)
        #expect(messages.filter { $0.function == "N001" && $0.isLegacy }.count == 1)

        var items: [IPayNowSDK.VerifyItem] = []
        var tampered: [String] = []
        for message in messages {
            let fields = try FormFields.decode(Data(message.body.utf8))
            let rule = try #require(IPayNowSigning.rule(of: fields), "\(message.id)")
            #expect(rule.rawValue == message.rule, "\(message.id)")
            #expect(throws: Never.self, "\(message.id)") { try IPayNowSigning.verify(fields, rule: rule, appKey: message.appKey) }
            let other: IPayNowSigning.Rule = rule == .legacyMessage ? .versionedMessage : .legacyMessage
            #expect(IPayNowSigning.sign(fields, rule: other, appKey: message.appKey) != message.signature, "\(message.id)")
            #expect(IPayNowSigning.sign(fields, rule: rule, appKey: message.appKey) == message.signature, "\(message.id)")

            // One signed, non-empty value changed (a digit appended), the signature kept.
            let target = try #require(fields.pairs.first { !["signature", "signType"].contains($0.name) && !$0.value.isEmpty })
            let changed = fields.pairs.map { ($0.name, $0.name == target.name ? $0.value + "1" : $0.value) }
            let changedBody = FormFields.encode(changed)
            tampered.append(changedBody)
            let error = #expect(throws: CheckoutError.self, "\(message.id)") {
                try IPayNowSigning.verify(try FormFields.decode(Data(changedBody.utf8)), rule: rule, appKey: message.appKey)
            }
            #expect(error?.code == .signatureMismatch && error?.field == "body.signature", "\(message.id)")

            items.append(.init(body: message.body, excludeSignType: message.isLegacy, appId: message.appId, appKey: message.appKey))
            items.append(.init(body: message.body, excludeSignType: !message.isLegacy, appId: message.appId, appKey: message.appKey))
            items.append(.init(body: changedBody, excludeSignType: message.isLegacy, appId: message.appId, appKey: message.appKey))
        }
        let verdicts = try await IPayNowSDK.verify(items)
        for (index, message) in messages.enumerated() {
            let (right, wrong, changed) = (verdicts[3 * index], verdicts[3 * index + 1], verdicts[3 * index + 2])
            #expect(right.ok, "the SDK refused \(message.id) with exclude_sign_type=\(message.isLegacy)")
            #expect(!wrong.ok, "the SDK accepted \(message.id) with exclude_sign_type=\(!message.isLegacy)")
            #expect(!changed.ok, "the SDK accepted \(message.id) with a value changed: \(tampered[index])")
            // parse_response and Till's form decoder read the same fields.
            let fields = try FormFields.decode(Data(message.body.utf8))
            #expect(right.fields == Dictionary(fields.pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
                    "\(message.id)")
        }
    }

    @Test("NotifyParser: parse_payment accepts the seven 1.0.0 N001s and refuses the legacy N001 (E0012, the SDK's documented limit: it signs signType); parse_refund accepts the legacy shape")
    func notifyParserOnRealMessages() async throws {
        let messages = try IPayNowRealMessages.load()
        var items: [IPayNowSDK.NotifyItem] = []
        for message in messages {
            items.append(.init(body: message.body, kind: "payment", appId: message.appId, appKey: message.appKey))
            items.append(.init(body: message.body, kind: "refund", appId: message.appId, appKey: message.appKey))
        }
        let answers = try await IPayNowSDK.notify(items)
        for (index, message) in messages.enumerated() {
            let (payment, refund) = (answers[2 * index], answers[2 * index + 1])
            // parse_payment verifies with exclude_sign_type=False, parse_refund with True: each accepts
            // exactly the messages of its rule.
            #expect(payment.accepted == !message.isLegacy, "\(message.id): parse_payment \(payment)")
            #expect(refund.accepted == message.isLegacy, "\(message.id): parse_refund \(refund)")
            if !payment.accepted { #expect(payment.error == "E0012" && payment.ack == "success=N", "\(message.id)") }
            if !refund.accepted { #expect(refund.error == "E0012", "\(message.id)") }
        }
        for (index, message) in messages.enumerated() where message.isVersionedN001 {
            let payment = answers[2 * index]
            #expect(payment.isSuccess == true && payment.fields?["transStatus"] == "A001" && payment.ack == "success=Y", "\(message.id)")
        }
        // The SDK's limit, recorded: a legacy-shape N001 (which is what the cross-border README 2.2
        // describes) is refused by the payment entry point and taken by the refund one, whose
        // is_success reads tradeStatus.
        let legacy = try #require(messages.firstIndex { $0.function == "N001" && $0.isLegacy })
        #expect(answers[2 * legacy].accepted == false && answers[2 * legacy].error == "E0012")
        #expect(answers[2 * legacy + 1].accepted == true && answers[2 * legacy + 1].isSuccess == true)
    }

    @Test("Till's server accepts each of the eight real N001s for its own app (paid, the order's amount in CNY), and refuses it for another app")
    func tillAcceptsRealN001s() async throws {
        let messages = try IPayNowRealMessages.load().filter { $0.function == "N001" }
        try #require(messages.count == 8)
        for message in messages {
            let fields = try FormFields.decode(Data(message.body.utf8))
            let server = IPayNowInterop.server(appId: message.appId, appKey: message.appKey)
            let verified = try server.verifyNotification(IPayNowInterop.notification(message.body))
            #expect(verified.report.status == .paid, "\(message.id)")
            #expect(verified.report.attempt.rawValue == fields["mhtOrderNo"], "\(message.id)")
            #expect(verified.report.gatewayReference == fields["nowPayOrderNo"], "\(message.id)")
            let amount = try #require(fields["mhtOrderAmt"].flatMap { Int64($0) })
            #expect(verified.report.amount == Money(minorUnits: amount, currency: try #require(Currency.lookup("CNY"))), "\(message.id)")
            #expect(verified.acknowledgement.body == Data("success=Y".utf8))

            let other = IPayNowInterop.server(appId: "1000000000000001", appKey: message.appKey)
            let refused = IPayNowInterop.refusal(other, body: message.body)
            #expect(refused?.code == .invalidField && refused?.field == "body.appId", "\(message.id): \(String(describing: refused))")
        }
    }

    // MARK: 3. Till accepts the N001s the SDK signs

    @Test("N001s the SDK signs (1.0.0 with signType signed; cross-border legacy with it left out), form-encoded as its transport encodes: Till accepts each with the right status and amount, and the SDK's own verify agrees")
    func tillAcceptsSDKSignedN001s() async throws {
        let app = IPayNowInterop.app
        let cases = IPayNowInterop.sdkNotifications
        let built = try await IPayNowSDK.build(cases.map { .init(fields: $0.fields, excludeSignType: $0.legacy) },
                                               appId: app.id, appKey: app.key)
        let server = IPayNowInterop.server(appId: app.id, appKey: app.key)
        var checks: [IPayNowSDK.VerifyItem] = []
        var parses: [IPayNowSDK.NotifyItem] = []
        for (sample, sdk) in zip(cases, built) {
            let verified = try server.verifyNotification(IPayNowInterop.notification(sdk.body))
            #expect(verified.report.status == sample.status, "\(sample.name)")
            #expect(verified.report.amount == sample.amount, "\(sample.name)")
            #expect(verified.report.attempt.rawValue == sample.value("mhtOrderNo"), "\(sample.name)")
            #expect(verified.report.gatewayReference == sample.value("nowPayOrderNo"), "\(sample.name)")
            #expect(verified.report.gatewayStatus == (sample.value("tradeStatus") ?? sample.value("transStatus")), "\(sample.name)")
            #expect(verified.acknowledgement.body == Data("success=Y".utf8))
            let message = try IPayNowMessage(body: Data(sdk.body.utf8), appKey: app.key)
            #expect(message.rule == (sample.legacy ? .legacyMessage : .versionedMessage), "\(sample.name)")
            // Till reads back every field the SDK encoded, exactly.
            #expect(message.fields.pairs.map { [$0.name, $0.value] } == sample.fields + [["signature", sdk.signature]], "\(sample.name)")
            checks.append(.init(body: sdk.body, excludeSignType: sample.legacy))
            parses.append(.init(body: sdk.body, kind: "payment"))
        }
        let verdicts = try await IPayNowSDK.verify(checks, appId: app.id, appKey: app.key)
        let parsed = try await IPayNowSDK.notify(parses, appId: app.id, appKey: app.key)
        for (index, sample) in cases.enumerated() {
            #expect(verdicts[index].ok, "\(sample.name)")
            // The SDK's payment entry point takes only the 1.0.0 shape (its documented limit).
            #expect(parsed[index].accepted == !sample.legacy, "\(sample.name): \(parsed[index])")
        }
    }

    @Test("Till refuses SDK-signed N001s that were changed (amount, status, reserved value, a version added, signature removed, signType not MD5, a field twice) or signed for another app or with another key")
    func tillRefusesTamperedSDKN001s() async throws {
        let app = IPayNowInterop.app
        let base = try #require(IPayNowInterop.sdkNotifications.first { $0.name == "cross-border NZD, amount in NZD" })
        let built = try await IPayNowSDK.build([.init(fields: base.fields, excludeSignType: true),
                                                .init(fields: base.fields.map { $0[0] == "appId" ? ["appId", "1000000000000001"] : $0 },
                                                      excludeSignType: true)],
                                               appId: app.id, appKey: app.key)
        let otherKey = try await IPayNowSDK.build([.init(fields: base.fields, excludeSignType: true)], appId: app.id,
                                                  appKey: "ZZ7qcwBIZeeLQt54BqBthCR5ae4GgXGt")
        let body = built[0].body
        let server = IPayNowInterop.server(appId: app.id, appKey: app.key)
        #expect(IPayNowInterop.refusal(server, body: body) == nil)

        func replacing(_ name: String, with value: String?) throws -> String {
            let fields = try FormFields.decode(Data(body.utf8))
            return FormFields.encode(fields.pairs.compactMap { pair in
                pair.name == name ? value.map { (name, $0) } : (pair.name, pair.value)
            })
        }
        let cases: [(name: String, body: String, code: CheckoutError.Code, field: String, sdkRefuses: Bool)] = [
            ("amount changed", try replacing("mhtOrderAmt", with: "1"), .signatureMismatch, "body.signature", true),
            ("status changed", try replacing("tradeStatus", with: "A002"), .signatureMismatch, "body.signature", true),
            ("reserved value changed", try replacing("mhtReserved", with: "a1-b3"), .signatureMismatch, "body.signature", true),
            ("reserved value re-cut with & and =", try replacing("mhtReserved", with: "a=1&b=3"), .invalidField, "body.mhtReserved", true),
            ("version added (the 1.0.0 rule signs signType)", body + "&version=1.0.0", .signatureMismatch, "body.signature", true),
            ("signature removed", try replacing("signature", with: nil), .missingField, "body.signature", true),
            ("signType RSA", try replacing("signType", with: "RSA"), .invalidField, "body.signType", true),
            ("amount twice", body + "&mhtOrderAmt=1", .duplicateField, "body.mhtOrderAmt", true),
            ("another app's notification", built[1].body, .invalidField, "body.appId", false),
            ("signed with another key", otherKey[0].body, .signatureMismatch, "body.signature", true),
        ]
        for sample in cases {
            let refused = IPayNowInterop.refusal(server, body: sample.body)
            #expect(refused?.code == sample.code && refused?.field == sample.field, "\(sample.name): \(String(describing: refused))")
        }
        // The SDK's verify agrees where it checks the same thing (it does not check appId).
        let verdicts = try await IPayNowSDK.verify(cases.map { .init(body: $0.body, excludeSignType: true) }, appId: app.id, appKey: app.key)
        for (sample, verdict) in zip(cases, verdicts) {
            #expect(verdict.ok == !sample.sdkRefuses, "\(sample.name)")
        }
    }
}

// MARK: - Shared pieces

enum IPayNowInterop {
    /// The app of the generated notifications (the iOS demo's app id and key, iPaynow-crossborder-iOS
    /// CrossBorderViewController.m createUI).
    static let app = (id: "1480321334800229", key: "BB7qcwBIZeeLQt54BqBthCR5ae4GgXGt")

    static func server(appId: String, appKey: String) -> IPayNowServer {
        IPayNowServer(environment: .test, credentials: IPayNowCredentials(appKey: appKey), settings: IPayNowSettings(appId: appId),
                      transport: NoCallTransport())
    }

    static func notification(_ body: String) -> IncomingNotification {
        IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(body.utf8))
    }

    /// The error Till's server refuses `body` with, or nil when it accepts it.
    static func refusal(_ server: IPayNowServer, body: String) -> CheckoutError? {
        do {
            _ = try server.verifyNotification(notification(body))
            return nil
        } catch let error as CheckoutError {
            return error
        } catch {
            return CheckoutError(.unknownOutcome, message: "not a CheckoutError: \(error)")
        }
    }

    /// One N001 for the SDK to sign.
    struct Sample {
        var name: String
        /// `true`: the legacy / cross-border shape (no `version`, `signType` left out of the signature).
        var legacy: Bool
        var fields: [[String]]
        var status: PaymentStatus
        var amount: Money?

        func value(_ name: String) -> String? { fields.first { $0[0] == name }?[1] }
    }

    /// The cross-border N001 of the PHP SDK's README 2.2 (`ipaynowORG/ipaynow_cross_border_pay_php`
    /// @279d28f README.md 2.2): `tradeStatus`, `cashCurrencyType`, `cashAmont` (sic), no `version`,
    /// `signType` left out of the signature. No real cross-border N001 exists to copy; these are that
    /// table's fields with made-up values.
    static func crossBorder(_ order: String, currency: String, amount: Int64, flag: String, status: String, reserved: String? = nil,
                            channel: String = "90") -> [[String]] {
        var fields: [[String]] = [
            ["funcode", "N001"], ["appId", app.id], ["mhtOrderNo", order], ["mhtOrderName", "绿茶 green tea + 100%"], ["mhtOrderType", "01"],
            ["mhtCurrencyType", currency], ["mhtOrderAmt", String(amount)], ["cashCurrencyType", "CNY"],
            // With flag 0 the order is in RMB fen, so the customer pays that; with flag 1 a made-up conversion.
            ["cashAmont", String(flag == "0" ? amount : amount * 4 + 7)],
            ["mhtAmtCurrFlag", flag], ["mhtOrderTimeOut", "3600"], ["mhtOrderStartTime", "20261122093000"], ["mhtCharset", "UTF-8"],
            ["deviceType", "01"], ["payChannelType", channel], ["nowPayOrderNo", "2008012026112209300\(order.count)"],
            ["channelOrderNo", "2026112221001004"], ["tradeStatus", status],
        ]
        if let reserved { fields.append(["mhtReserved", reserved]) }
        fields.append(["signType", "MD5"])
        return fields
    }

    /// The 1.0.0 N001 of the seven real ones (`ipaynowORG/ipaynow_pay_java` PaytestImpl.java): `transStatus`,
    /// `version=1.0.0`, `signType` signed. Values made up.
    static func versioned(_ order: String, amount: Int64, status: String) -> [[String]] {
        [
            ["appId", app.id], ["channelOrderNo", "4200000026201710178563691122"], ["deviceType", "05"], ["funcode", "N001"],
            ["mhtCharset", "UTF-8"], ["mhtCurrencyType", "156"], ["mhtOrderAmt", String(amount)], ["mhtOrderName", "测试商品!@#"],
            ["mhtOrderNo", order], ["mhtOrderStartTime", "20261122093000"], ["mhtOrderTimeOut", "2000"], ["mhtOrderType", "01"],
            ["mhtSubMchId", ""], ["nowPayOrderNo", "200701202611220930001"], ["payChannelType", "13"],
            ["payConsumerId", "oeMyBjlVC2s9swo3vyAw_lFG4Dxw"], ["payTime", "20261122093105"], ["signType", "MD5"],
            ["transStatus", status], ["version", "1.0.0"],
        ]
    }

    static let sdkNotifications: [Sample] = {
        func money(_ minor: Int64, _ code: String) -> Money? { Currency.lookup(code).map { Money(minorUnits: minor, currency: $0) } }
        return [
            Sample(name: "1.0.0 paid", legacy: false, fields: versioned("v100paid", amount: 1999, status: "A001"), status: .paid,
                   amount: money(1999, "CNY")),
            Sample(name: "1.0.0 failed", legacy: false, fields: versioned("v100failed", amount: 1, status: "A002"), status: .failed,
                   amount: money(1, "CNY")),
            Sample(name: "cross-border NZD, amount in NZD", legacy: true,
                   fields: crossBorder("cbnzd1", currency: "NZD", amount: 1050, flag: "1", status: "A001", reserved: "a1-b2 备注 100%"),
                   status: .paid, amount: money(1050, "NZD")),
            Sample(name: "cross-border HKD, amount in RMB fen", legacy: true,
                   fields: crossBorder("cbhkd2", currency: "HKD", amount: 8800, flag: "0", status: "A001", channel: "80"),
                   status: .paid, amount: money(8800, "CNY")),
            Sample(name: "cross-border JPY", legacy: true, fields: crossBorder("cbjpy3", currency: "JPY", amount: 500, flag: "1", status: "A001"),
                   status: .paid, amount: money(500, "JPY")),
            Sample(name: "cross-border failed", legacy: true, fields: crossBorder("cbfail4", currency: "USD", amount: 250, flag: "1", status: "A002"),
                   status: .failed, amount: money(250, "USD")),
            Sample(name: "cross-border accepted, not yet paid", legacy: true,
                   fields: crossBorder("cbacc5", currency: "EUR", amount: 999, flag: "1", status: "A004"), status: .pending, amount: money(999, "EUR")),
            Sample(name: "cross-border not processed", legacy: true,
                   fields: crossBorder("cbnew6", currency: "GBP", amount: 1234, flag: "1", status: "A00I"), status: .pending, amount: money(1234, "GBP")),
        ]
    }()
}
