import Foundation
import Testing
import Till
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The iOS plugin stand-in, the N001 notifications, the admin controls and the sandbox customer.
@Suite("iPayNow emulator: plugin stand-in and notifications")
struct IPayNowPluginTests {
    typealias Harness = IPayNowHarness
    typealias Signature = IPayNowEmulator.Signature

    static func isLegacySigned(_ fields: [String: String], app: IPayNowEmulator.App = Harness.demoApp) -> Bool {
        Signature.verify(fields, appKey: app.appKey, signatureField: "signature", excluding: Signature.responseExcluded)
    }

    @Test("pay: Success, the order paid and charged once, the N001 of README 2.2 acknowledged", .timeLimit(.minutes(1)))
    func pay() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                var fields = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                fields["mhtReserved"] = "cart=7&coupon=*"
                let result = try await harness.plugin(Harness.payData(fields))
                #expect(result == IPayNowEmulator.PluginResult(
                    result: "Success", returnURL: "tillSandboxShop://safepay/", mhtOrderNo: fields["mhtOrderNo"],
                    nowPayOrderNo: result.nowPayOrderNo, tradeStatus: "A001", serverResponseCode: "A001"))
                await harness.emulator.waitForNotifications()
                let ledger = await harness.emulator.ledger
                #expect(ledger.count == 1)
                #expect(ledger.first?.cashAmont == 10, "flag 0: the amount already is CNY fen")
                #expect(ledger.first?.cashCurrencyType == "CNY")

                let received = await endpoint.received
                #expect(received.count == 1)
                let post = try #require(received.first)
                #expect(post.contentType?.hasPrefix("application/x-www-form-urlencoded") == true)
                let n001 = post.fields
                #expect(Set(n001.keys) == ["funcode", "appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType",
                                           "mhtOrderAmt", "cashCurrencyType", "cashAmont", "mhtAmtCurrFlag", "mhtOrderTimeOut",
                                           "mhtOrderStartTime", "mhtCharset", "deviceType", "payChannelType", "nowPayOrderNo",
                                           "channelOrderNo", "tradeStatus", "mhtReserved", "signType", "signature"])
                #expect(n001["funcode"] == "N001")
                #expect(n001["deviceType"] == "01")
                #expect(n001["tradeStatus"] == "A001")
                #expect(n001["mhtReserved"] == "cart=7&coupon=*", "returned as the merchant signed it")
                #expect(n001["nowPayOrderNo"] == result.nowPayOrderNo)
                #expect(n001["cashAmont"] == "10")
                #expect(Self.isLegacySigned(n001))
                #expect(!Signature.verify(n001, appKey: Harness.demoApp.appKey, signatureField: "signature",
                                          excluding: Signature.domestic100Excluded), "signType is not signed")
                // The body arrives sorted by key, values percent-encoded once.
                let keys = post.body.split(separator: "&").map { String($0.split(separator: "=")[0]) }
                #expect(keys == keys.sorted())
                #expect(post.body.contains("mhtReserved=cart%3D7%26coupon%3D%2A"))
                let attempts = await harness.emulator.notifications
                #expect(attempts.count == 1)
                #expect(attempts.first?.acknowledged == true)
                #expect(attempts.first?.answer == "success=Y")

                let query = try await harness.global(Harness.mq001(mhtOrderNo: fields["mhtOrderNo"] ?? ""))
                #expect(query["tradeStatus"] == "A001")
                #expect(query["deviceType"] == "01")
                #expect(query["channelOrderNo"] == n001["channelOrderNo"])

                // The same payData again: a duplicate order, nothing charged twice.
                let again = try await harness.plugin(Harness.payData(fields))
                #expect(again.result == "Fail")
                #expect(again.erroCode == "PE004")
                #expect(again.erroInfo?.hasPrefix("mhtOrderNo: duplicate") == true)
                #expect(again.returnURL == nil)
                #expect(await harness.emulator.ledger.count == 1)
            }
        }
    }

    @Test("cancel, fail, unknown and a network error: the delegate's result, the order's state, N001 only when paid")
    func otherOutcomes() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                func run(_ outcome: IPayNowEmulator.PluginOutcome, channel: String = "90") async throws
                    -> (IPayNowEmulator.PluginResult, String) {
                    let fields = Harness.presignFields(channel: channel, notifyUrl: notifyURL.absoluteString)
                    return (try await harness.plugin(Harness.payData(fields), outcome: outcome), fields["mhtOrderNo"] ?? "")
                }
                let (cancel, cancelled) = try await run(.cancel)
                #expect(cancel.result == "Cancel")
                #expect(cancel.erroCode == nil)
                #expect(cancel.erroInfo == "支付被取消")
                #expect(cancel.tradeStatus == "A00I")
                #expect(cancel.returnURL == "tillSandboxShop://safepay/")
                #expect(try await harness.global(Harness.mq001(mhtOrderNo: cancelled))["tradeStatus"] == "A00I")

                let (fail, failed) = try await run(.fail, channel: "80")
                #expect(fail.result == "Fail")
                #expect(fail.erroCode == "PE004")
                #expect(fail.erroInfo == "交易处理失败")
                #expect(fail.returnURL == "tillSandboxShop://pay/")
                #expect(try await harness.global(Harness.mq001(mhtOrderNo: failed))["tradeStatus"] == "A002")

                let (unknown, paid) = try await run(.unknown)
                #expect(unknown.result == "Unknown")
                #expect(unknown.erroCode == "PE005")
                #expect(unknown.erroInfo == "交易状态未知")
                #expect(try await harness.global(Harness.mq001(mhtOrderNo: paid))["tradeStatus"] == "A001")

                let (network, _) = try await run(.networkError)
                #expect(network == IPayNowEmulator.PluginResult(result: "Fail", erroCode: "PE002", erroInfo: "网络连接异常"))

                await harness.emulator.waitForNotifications()
                #expect(await endpoint.received.map { $0.fields["mhtOrderNo"] } == [paid])
                #expect(await harness.emulator.ledger.map(\.mhtOrderNo) == [paid])
                #expect(await harness.emulator.orderSummaries().count == 3)
            }
        }
    }

    @Test("the plugin's own checks: PE004 for empty data, scheme or view controller; PE001 for another channel")
    func pluginChecks() async throws {
        try await Harness.with { harness in
            let payData = Harness.payData(Harness.presignFields())
            let empty = try await harness.plugin("")
            #expect(empty == IPayNowEmulator.PluginResult(result: "Fail", erroCode: "PE004", erroInfo: "订单数据为空"))
            let noScheme = try await harness.plugin(payData, scheme: "")
            #expect(noScheme == IPayNowEmulator.PluginResult(result: "Fail", erroCode: "PE004", erroInfo: "scheme为空"))
            let noController = try await IPayNowDevice.pay(baseURL: harness.base, .init(payData: payData, scheme: "s", outcome: .pay,
                                                                                         viewController: false))
            #expect(noController.erroInfo == "viewController为空")
            let domestic = try await harness.plugin(Harness.payData(Harness.presignFields(channel: "12")))
            #expect(domestic == IPayNowEmulator.PluginResult(result: "Fail", erroCode: "PE001", erroInfo: "插件不支持该渠道交易"))
            #expect(await harness.emulator.orderSummaries().isEmpty)

            // Not the stand-in's shape: 400 naming what is wrong.
            var request = URLRequest(url: harness.base.appendingPathComponent(IPayNowEmulator.pluginPath))
            request.httpMethod = "POST"
            request.httpBody = Data(#"{"payData": "x", "scheme": "s", "outcome": "maybe"}"#.utf8)
            let refused = try await exchange(request, on: harness.session)
            #expect(refused.status == 400)
            #expect(refused.text.contains("outcome: invalid"))
            request.httpBody = Data(#"{"scheme": "s", "outcome": "pay"}"#.utf8)
            #expect(try await exchange(request, on: harness.session).text.contains("payData: required"))
        }
    }

    @Test("iPayNow's checks of the presign: the signature, each missing field named, 附录A's rules")
    func presignRefusals() async throws {
        try await Harness.with { harness in
            func refusal(_ fields: [String: String], signature: String? = nil) async throws -> String {
                let result = try await harness.plugin(Harness.payData(fields, signature: signature))
                #expect(result.result == "Fail")
                #expect(result.erroCode == "PE004")
                #expect(result.serverResponseCode == "A002")
                #expect(result.serverResponseMsg == result.erroInfo)
                #expect(result.returnURL == nil)
                return result.erroInfo ?? ""
            }
            let bad = try await refusal(Harness.presignFields(), signature: String(repeating: "a", count: 32))
            #expect(bad.hasPrefix("mhtSignature: does not match; expected the MD5 of \"appId=\(Harness.demoApp.appId)&mhtAmtCurrFlag=0"))
            #expect(!bad.contains("deviceType="))
            let otherKey = try await refusal(Harness.presignFields(), signature: Signature.sign(
                Harness.presignFields(), appKey: Harness.otherApp.appKey, excluding: Signature.requestExcluded))
            #expect(otherKey.hasPrefix("mhtSignature:"))

            for key in IPayNowFieldRules.presignRequired {
                var fields = Harness.presignFields()
                fields[key] = nil
                #expect(try await refusal(fields).hasPrefix("\(key): required"), "\(key)")
            }
            func with(_ key: String, _ value: String) -> [String: String] {
                var fields = Harness.presignFields()
                fields[key] = value
                return fields
            }
            #expect(try await refusal(with("mhtCurrencyType", "KRW")).hasPrefix("mhtCurrencyType: KRW is not in the 附录C"))
            #expect(try await refusal(with("mhtCurrencyType", "CNY")).hasPrefix("mhtCurrencyType: must not be CNY"))
            #expect(try await refusal(with("mhtOrderType", "05")).hasPrefix("mhtOrderType:"))
            #expect(try await refusal(with("mhtAmtCurrFlag", "2")).hasPrefix("mhtAmtCurrFlag:"))
            #expect(try await refusal(with("mhtOrderTimeOut", "3601")).hasPrefix("mhtOrderTimeOut:"))
            #expect(try await refusal(with("mhtOrderStartTime", "2018-01-30")).hasPrefix("mhtOrderStartTime:"))
            #expect(try await refusal(with("notifyUrl", "ftp://shop.example/")).hasPrefix("notifyUrl:"))
            #expect(try await refusal(with("mhtCharset", "GBK")).hasPrefix("mhtCharset:"))
            #expect(try await refusal(with("mhtOrderNo", "order_1")).hasPrefix("mhtOrderNo: letters and digits"))
            #expect(try await refusal(with("mhtOrderName", String(repeating: "名", count: 41))).hasPrefix("mhtOrderName: longer than 40"))
            #expect(try await refusal(with("mhtOrderAmt", "0")).hasPrefix("mhtOrderAmt:"))
            #expect(try await refusal(with("appId", "0000")) == "appId: unknown app")
            // 附录A allows a 1000-character detail (README 2.1 allows 200 on the server).
            let longDetail = try await harness.plugin(Harness.payData(with("mhtOrderDetail", String(repeating: "d", count: 1000))))
            #expect(longDetail.result == "Success")
            #expect(await harness.emulator.orderSummaries().count == 1)
        }
    }

    @Test("flag 1 in JPY through WeChat: cashAmont at the sandbox rate, the order's currency untouched", .timeLimit(.minutes(1)))
    func exchangeRate() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                let fields = Harness.presignFields(channel: "80", notifyUrl: notifyURL.absoluteString, currency: "JPY", flag: "1", amount: "500")
                #expect(try await harness.plugin(Harness.payData(fields), waitForNotification: true).result == "Success")
                let n001 = try #require(await endpoint.received.first?.fields)
                #expect(n001["mhtCurrencyType"] == "JPY")
                #expect(n001["mhtOrderAmt"] == "500")
                #expect(n001["mhtAmtCurrFlag"] == "1")
                #expect(n001["cashCurrencyType"] == "CNY")
                #expect(n001["cashAmont"] == "2500", "500 yen at 0.05 CNY is 25 CNY")
                #expect(n001["payChannelType"] == "80")
            }
        }
    }

    @Test("N001 is retried until success=Y: an error status, success=N and a Python dict are failures", .timeLimit(.minutes(1)))
    func retries() async throws {
        let endpoint = IPayNowMerchantEndpoint(answers: [(500, "success=Y"), (200, "success=N"), (200, "{'success':'Y'}")])
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with(notifyMaxAttempts: 5) { harness in
                let fields = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                let result = try await harness.plugin(Harness.payData(fields), waitForNotification: true)
                #expect(result.result == "Success")
                let attempts = await harness.emulator.notifications
                #expect(attempts.map(\.attempt) == [1, 2, 3, 4])
                #expect(attempts.map(\.acknowledged) == [false, false, false, true])
                #expect(attempts.map(\.status) == [500, 200, 200, 200])
                #expect(Set(attempts.map(\.body)).count == 1, "every try sends the same bytes")
                #expect(await endpoint.received.count == 4)
            }
        }
        let refusing = IPayNowMerchantEndpoint(otherwise: (200, "success=N"))
        try await IPayNowMerchantEndpoint.with(refusing) { notifyURL in
            try await Harness.with(notifyMaxAttempts: 3) { harness in
                let fields = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                _ = try await harness.plugin(Harness.payData(fields))
                await harness.emulator.waitForNotifications()
                #expect(await harness.emulator.notifications.count == 3)
                #expect(await refusing.received.count == 3)
            }
        }
    }

    @Test("waitForNotification: the stand-in answers only after the N001 reached the merchant, even when delayed",
          .timeLimit(.minutes(1)))
    func notificationBeforeReturn() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                await harness.emulator.setNotificationDelay(.milliseconds(200))
                let fields = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                let result = try await harness.plugin(Harness.payData(fields), waitForNotification: true)
                #expect(result.result == "Success")
                #expect(await endpoint.received.count == 1)

                let early = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                _ = try await harness.plugin(Harness.payData(early))
                #expect(await endpoint.received.count == 1, "without waiting, the app hears first")
            }
        }
    }

    @Test("admin: ledger, orders, notifications; replay, crafted and tampered N001s; drop, hold and release; set a status",
          .timeLimit(.minutes(1)))
    func admin() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                let fields = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                let number = fields["mhtOrderNo"] ?? ""
                _ = try await harness.plugin(Harness.payData(fields), waitForNotification: true)

                let ledger = try await harness.admin("GET", "ledger")
                #expect(ledger.status == 200)
                #expect(ledger.text.contains("\"mhtOrderNo\":\"\(number)\""))
                #expect(try await harness.admin("GET", "orders").text.contains("\"tradeStatus\":\"A001\""))
                #expect(try await harness.admin("GET", "notifications").text.contains("\"acknowledged\":true"))

                let replay = try await harness.admin("POST", "notifications/redeliver", json: #"{"mhtOrderNo": "\#(number)"}"#)
                #expect(replay.status == 200)
                #expect(replay.text.contains("\"replay\":true"))
                let received = await endpoint.received
                #expect(received.count == 2)
                #expect(received[0].body == received[1].body, "a replay is byte for byte")
                #expect(try await harness.admin("POST", "notifications/redeliver", json: #"{"mhtOrderNo": "none"}"#).status == 404)

                let tampered = try await harness.admin("POST", "notifications/send",
                                                       json: #"{"mhtOrderNo": "\#(number)", "tamper": {"mhtOrderAmt": "1"}}"#)
                #expect(tampered.status == 200)
                let forged = try await harness.admin("POST", "notifications/send",
                                                     json: #"{"mhtOrderNo": "\#(number)", "tradeStatus": "A002", "appKey": "guess"}"#)
                #expect(forged.text.contains("\"crafted\":true"))
                let crafted = try await harness.admin("POST", "notifications/send",
                                                      json: #"{"mhtOrderNo": "\#(number)", "tradeStatus": "A002", "omit": ["mhtReserved"]}"#)
                #expect(crafted.status == 200)
                let unsigned = try await harness.admin("POST", "notifications/send",
                                                       json: #"{"mhtOrderNo": "\#(number)", "omit": ["signature"]}"#)
                #expect(unsigned.status == 200)
                let posts = await endpoint.received
                #expect(posts.count == 6)
                #expect(posts[2].fields["mhtOrderAmt"] == "1")
                #expect(!Self.isLegacySigned(posts[2].fields))
                #expect(posts[3].fields["tradeStatus"] == "A002")
                #expect(!Self.isLegacySigned(posts[3].fields))
                #expect(posts[4].fields["tradeStatus"] == "A002")
                #expect(Self.isLegacySigned(posts[4].fields))
                #expect(posts[5].fields["signature"] == nil)
                #expect(await harness.emulator.ledger.count == 1, "crafted notifications move no money")
                #expect(try await harness.global(Harness.mq001(mhtOrderNo: number))["tradeStatus"] == "A001")

                // Dropped: recorded, never sent; the query still tells.
                #expect(try await harness.admin("POST", "notifications/drop", json: #"{"count": 1}"#).status == 200)
                let lost = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                _ = try await harness.plugin(Harness.payData(lost), waitForNotification: true)
                #expect(await endpoint.received.count == 6)
                #expect(await harness.emulator.notifications.last?.dropped == true)
                #expect(try await harness.global(Harness.mq001(mhtOrderNo: lost["mhtOrderNo"] ?? ""))["tradeStatus"] == "A001")

                #expect(try await harness.admin("POST", "notifications/delay", json: #"{"milliseconds": 0}"#).status == 200)
                #expect(try await harness.admin("POST", "notifications/delay", json: #"{"milliseconds": -1}"#).status == 400)

                // Held, then released.
                #expect(try await harness.admin("POST", "notifications/hold").status == 200)
                let held = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                _ = try await harness.plugin(Harness.payData(held))
                await harness.emulator.waitForNotifications()
                #expect(await endpoint.received.count == 6)
                #expect(try await harness.admin("POST", "notifications/release").status == 200)
                await harness.emulator.waitForNotifications()
                #expect(await endpoint.received.last?.fields["mhtOrderNo"] == held["mhtOrderNo"])

                // An admin pays a WP001 order; paying it again charges nothing more.
                let order = Harness.wp001(notifyUrl: notifyURL.absoluteString)
                _ = try await harness.global(order)
                let status = #"{"mhtOrderNo": "\#(order["mhtOrderNo"] ?? "")", "tradeStatus": "A001"}"#
                #expect(try await harness.admin("POST", "orders/status", json: status).status == 200)
                #expect(try await harness.admin("POST", "orders/status", json: status).status == 200)
                await harness.emulator.waitForNotifications()
                #expect(await harness.emulator.ledger.count == 4)
                #expect(await endpoint.received.filter { $0.fields["mhtOrderNo"] == order["mhtOrderNo"] }.count == 1)
                #expect(try await harness.admin("POST", "orders/status", json: #"{"mhtOrderNo": "x", "tradeStatus": "A001"}"#).status == 404)
                #expect(try await harness.admin("POST", "orders/status", json: #"{"mhtOrderNo": "x", "tradeStatus": "PAID"}"#).status == 400)
            }
        }
    }

    @Test("the sandbox account: module ipaynow, base_url, app_id and app_key")
    func accounts() async throws {
        try await Harness.with { harness in
            let accounts = await harness.sandbox.accounts()
            #expect(accounts.count == 2)
            let account = try #require(accounts.first)
            #expect(account.module == "ipaynow")
            #expect(account.settings == ["base_url": harness.base.absoluteString, "app_id": Harness.demoApp.appId])
            #expect(account.credentials == ["app_key": Harness.demoApp.appKey])
            #expect(harness.base.path == "/ipaynow")
            #expect(!"\(Harness.demoApp)".contains(Harness.demoApp.appKey))
        }
    }
}

/// ``SandboxIPayNowCustomer`` as an app's presenter.
@Suite("iPayNow emulator: sandbox customer")
struct IPayNowCustomerTests {
    typealias Harness = IPayNowHarness

    final class Trace: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    static func launch(_ fields: [String: String], scheme: String = "tillSandboxShop") -> WalletLaunch {
        WalletLaunch(wallet: "ipaynow", parameters: ["payData": Harness.payData(fields), "scheme": scheme])
    }

    @Test("complete, cancel and fail reach the app as the delegate's lower-cased result with erroCode and erroInfo")
    func results() async throws {
        try await Harness.with { harness in
            let returns = try ReturnURLHandler(routes: [.customScheme("tillSandboxShop")])
            let trace = Trace()
            var customer = SandboxIPayNowCustomer(baseURL: harness.base, returns: returns, trace: { trace.add($0) })
            #expect(try await customer.launch(Self.launch(Harness.presignFields())) == SDKResult(code: "success"))
            #expect(trace.all.contains("app     return tillSandboxShop://safepay/ matched: false"))
            customer.choice = .cancel
            #expect(try await customer.launch(Self.launch(Harness.presignFields()))
                    == SDKResult(code: "cancel", parameters: ["erroInfo": "支付被取消"]))
            customer.choice = .fail
            #expect(try await customer.launch(Self.launch(Harness.presignFields()))
                    == SDKResult(code: "fail", parameters: ["erroCode": "PE004", "erroInfo": "交易处理失败"]))
            customer.choice = .complete
            // The scheme may come from the launch's returnScheme; a refused order never leaves the app.
            var refused = WalletLaunch(wallet: "ipaynow", parameters: ["payData": Harness.payData(Harness.presignFields(), signature: "0")],
                                       returnScheme: "tillSandboxShop")
            let refusal = try #require(try await customer.launch(refused))
            #expect(refusal.code == "fail")
            #expect(refusal.parameters["erroCode"] == "PE004")
            #expect(refusal.parameters["erroInfo"]?.hasPrefix("mhtSignature:") == true)
            refused.wallet = "alipay"
            #expect(try await customer.launch(refused) == nil)
            #expect(try await customer.collect(FormSpec(fields: [])) == nil)
        }
    }

    @Test("the customer comes back after the N001, later, or never", .timeLimit(.minutes(1)))
    func comingBack() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                let returns = try ReturnURLHandler(routes: [.customScheme("tillSandboxShop")])
                await harness.emulator.setNotificationDelay(.milliseconds(150))
                var customer = SandboxIPayNowCustomer(baseURL: harness.base, returns: returns, comesBack: .afterNotification)
                let first = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                #expect(try await customer.launch(Self.launch(first))?.code == "success")
                #expect(await endpoint.received.count == 1, "the server heard before the app")

                customer.comesBack = .after(.milliseconds(100))
                let started = ContinuousClock.now
                #expect(try await customer.launch(Self.launch(Harness.presignFields(notifyUrl: notifyURL.absoluteString)))?.code == "success")
                #expect(ContinuousClock.now - started >= .milliseconds(100))

                customer.comesBack = .never
                let never = Harness.presignFields(notifyUrl: notifyURL.absoluteString)
                #expect(try await customer.launch(Self.launch(never)) == nil)
                #expect(try await harness.global(Harness.mq001(mhtOrderNo: never["mhtOrderNo"] ?? ""))["tradeStatus"] == "A001")
            }
        }
    }
}
