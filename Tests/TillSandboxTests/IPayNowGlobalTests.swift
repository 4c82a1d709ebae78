import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `POST {base}/global`: WP001 orders and MQ001 queries over the sandbox's real HTTP server.
@Suite("iPayNow emulator: WP001 and MQ001")
struct IPayNowGlobalTests {
    typealias Harness = IPayNowHarness

    @Test("a WP001 as cbphp builds it is recorded and answered A001, signed, with the README 2.1 fields")
    func wp001Accepted() async throws {
        try await Harness.with { harness in
            for raw in [false, true] {
                let request = Harness.wp001()
                let answer = try await harness.global(request, cbphpRaw: raw)
                #expect(answer.raw.status == 200)
                #expect(answer["responseCode"] == "A001", "\(answer.fields)")
                #expect(answer["funcode"] == "WP001")
                #expect(answer["appId"] == Harness.demoApp.appId)
                #expect(answer["mhtOrderNo"] == request["mhtOrderNo"])
                #expect(answer["nowPayOrderNo"]?.count == 27)
                #expect(answer["responseTime"]?.count == 14)
                #expect(answer["responseMsg"] == nil)
                #expect(answer.isSigned(by: Harness.demoApp))
                #expect(Set(answer.fields.keys).isSubset(of: Set(IPayNowEmulator.wp001AnswerOrder)))
                let tn = try #require(answer["tn"].flatMap(URL.init(string:)))
                #expect(tn.path.hasPrefix("/ipaynow/sandbox-only/channel/"))
            }
            #expect(await harness.emulator.orderSummaries().map(\.tradeStatus) == ["A00I", "A00I"])
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("WP001 refusals: A002 naming the field at fault, signed for a known app")
    func wp001Refusals() async throws {
        try await Harness.with { harness in
            func refusal(_ fields: [String: String]) async throws -> Harness.GlobalAnswer {
                let answer = try await harness.global(fields)
                #expect(answer.raw.status == 200)
                #expect(answer["responseCode"] == "A002")
                return answer
            }
            var missing = Harness.wp001()
            missing["mhtOrderName"] = nil
            let named = try await refusal(missing)
            #expect(named["responseMsg"]?.hasPrefix("mhtOrderName: required") == true)
            #expect(named.isSigned(by: Harness.demoApp))
            #expect(named["funcode"] == "WP001")

            let cny = try await refusal(Harness.wp001(currency: "CNY"))
            #expect(cny["responseMsg"]?.hasPrefix("mhtCurrencyType: must not be CNY") == true)
            let korean = try await harness.global(Harness.wp001(currency: "KRW"))
            #expect(korean["responseCode"] == "A001", "README 3.4 lists KRW")
            #expect(try await refusal(Harness.wp001(amount: "10.5"))["responseMsg"]?.hasPrefix("mhtOrderAmt:") == true)
            #expect(try await refusal(Harness.wp001(channel: "12"))["responseMsg"]?.hasPrefix("payChannelType:") == true)
            #expect(try await refusal(Harness.wp001(deviceType: "01"))["responseMsg"]?.hasPrefix("deviceType:") == true)
            let detail = Harness.wp001(extra: ["mhtOrderDetail": String(repeating: "d", count: 201)])
            #expect(try await refusal(detail)["responseMsg"]?.hasPrefix("mhtOrderDetail: longer than 200") == true)
            let timeout = Harness.wp001(extra: ["mhtOrderTimeOut": "59"])
            #expect(try await refusal(timeout)["responseMsg"]?.hasPrefix("mhtOrderTimeOut:") == true)
            let start = Harness.wp001(extra: ["mhtOrderStartTime": "20171332120000"])
            #expect(try await refusal(start)["responseMsg"]?.hasPrefix("mhtOrderStartTime:") == true)

            var tampered = Harness.wp001()
            tampered["mhtOrderAmt"] = "1"
            let badSignature = try await refusal(tampered)
            let message = try #require(badSignature["responseMsg"])
            #expect(message.hasPrefix("mhtSignature: does not match"))
            #expect(message.contains("mhtOrderAmt=1&"))
            #expect(!message.contains("deviceType="))

            var signType = Harness.wp001()
            signType["mhtSignType"] = "RSA"
            #expect(try await refusal(signType)["responseMsg"] == "mhtSignType: must be MD5")

            let duplicate = Harness.wp001()
            #expect(try await harness.global(duplicate)["responseCode"] == "A001")
            #expect(try await refusal(duplicate)["responseMsg"]?.hasPrefix("mhtOrderNo: duplicate") == true)
            // Another app may use the same number.
            #expect(try await harness.global(Harness.wp001(app: Harness.otherApp, mhtOrderNo: duplicate["mhtOrderNo"] ?? ""))["responseCode"] == "A001")

            // detail and version are not signed: changing them keeps the signature right.
            var goods = Harness.wp001()
            goods["detail"] = #"{"goods_detail":[{"goods_name":"iphone6s","quantity":1}]}"#
            goods["version"] = "1.0"
            #expect(try await harness.global(goods)["responseCode"] == "A001")
        }
    }

    @Test("an unknown app, a missing funcode, a funcode not emulated and a body that is no form")
    func unknownAppAndFuncode() async throws {
        try await Harness.with { harness in
            let stranger = IPayNowEmulator.App(appId: "9999999999999999", appKey: "k")
            let unknown = try await harness.global(Harness.wp001(app: stranger))
            #expect(unknown["responseCode"] == "A002")
            #expect(unknown["responseMsg"] == "appId: unknown app")
            #expect(unknown["signature"] == nil)
            #expect(unknown["signType"] == nil)

            var noFuncode = Harness.wp001()
            noFuncode["funcode"] = nil
            #expect(try await harness.global(noFuncode)["responseMsg"] == "funcode: required")
            var refund = Harness.wp001()
            refund["funcode"] = "R001"
            let refused = try await harness.global(refund)
            #expect(refused["responseMsg"]?.hasPrefix("funcode: R001 is not emulated") == true)
            #expect(refused.isSigned(by: Harness.demoApp))

            let malformed = try await harness.postGlobal("appId=1&mhtOrderNo=%ZZ")
            #expect(malformed["responseCode"] == "A002")
            #expect(malformed["responseMsg"]?.hasPrefix("mhtOrderNo:") == true)
            let twice = try await harness.postGlobal("funcode=WP001&funcode=MQ001")
            #expect(twice["responseMsg"] == "funcode: given twice")
        }
    }

    @Test("MQ001 answers README 2.4's fields, tradeStatus following the order, signed excluding signType and signature")
    func mq001() async throws {
        try await Harness.with { harness in
            let order = Harness.wp001(extra: ["mhtReserved": "tag=1&x"])
            #expect(try await harness.global(order)["responseCode"] == "A001")
            let number = try #require(order["mhtOrderNo"])
            let first = try await harness.global(Harness.mq001(mhtOrderNo: number), cbphpRaw: true)
            #expect(first["responseCode"] == "A001")
            #expect(first["responseMsg"] == "查询交易成功")
            #expect(first["tradeStatus"] == "A00I")
            #expect(first["channelOrderNo"] == "")
            #expect(first["funcode"] == nil)
            #expect(first.isSigned(by: Harness.demoApp))
            let expected: Set<String> = ["appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt",
                                         "cashCurrencyType", "cashAmont", "mhtAmtCurrFlag", "mhtOrderTimeOut", "mhtOrderStartTime",
                                         "mhtCharset", "deviceType", "payChannelType", "tradeStatus", "nowPayOrderNo",
                                         "channelOrderNo", "responseTime", "responseCode", "responseMsg", "signType", "signature"]
            #expect(Set(first.fields.keys) == expected)
            #expect(first["deviceType"] == "02")
            #expect(first["cashCurrencyType"] == "CNY")
            #expect(first["cashAmont"] == "40", "flag 1: 10 NZD cents at the sandbox's 4 CNY per NZD")

            await harness.emulator.setTradeStatus("A001", mhtOrderNo: number, notify: false)
            let paid = try await harness.global(Harness.mq001(mhtOrderNo: number))
            #expect(paid["tradeStatus"] == "A001")
            #expect(paid["channelOrderNo"]?.count == 18)
            #expect(paid.isSigned(by: Harness.demoApp))
            await harness.emulator.setTradeStatus("A003", mhtOrderNo: number)
            #expect(try await harness.global(Harness.mq001(mhtOrderNo: number))["tradeStatus"] == "A003")
        }
    }

    @Test("MQ001 refusals: the README's signing is refused by default and the expected string is named; unknown order; wrong app")
    func mq001Refusals() async throws {
        try await Harness.with { harness in
            let order = Harness.wp001()
            let number = try #require(order["mhtOrderNo"])
            _ = try await harness.global(order)

            let readme = try await harness.global(Harness.mq001(mhtOrderNo: number, readmeRule: true))
            #expect(readme["responseCode"] == "A002")
            let message = try #require(readme["responseMsg"])
            #expect(message.contains("\"appId=\(Harness.demoApp.appId)&mhtCharset=UTF-8&mhtOrderNo=\(number)&\""))
            #expect(message.contains("OrderQueryService.php"))
            #expect(readme.isSigned(by: Harness.demoApp))

            let unknown = try await harness.global(Harness.mq001(mhtOrderNo: "nope"))
            #expect(unknown["responseCode"] == "A002")
            #expect(unknown["responseMsg"] == "mhtOrderNo: no such order")
            #expect(unknown["mhtOrderNo"] == "nope")
            #expect(unknown.isSigned(by: Harness.demoApp))

            // Another app cannot see the order.
            let otherApp = try await harness.global(Harness.mq001(app: Harness.otherApp, mhtOrderNo: number))
            #expect(otherApp["responseMsg"] == "mhtOrderNo: no such order")
            #expect(otherApp.isSigned(by: Harness.otherApp))
            // A query signed with another app's key.
            let wrongKey = try await harness.global(Harness.mq001(app: .init(appId: Harness.demoApp.appId, appKey: "wrong"), mhtOrderNo: number))
            #expect(wrongKey["responseMsg"]?.hasPrefix("mhtSignature: does not match") == true)
            let stranger = try await harness.global(Harness.mq001(app: .init(appId: "42", appKey: "k"), mhtOrderNo: number))
            #expect(stranger["responseMsg"] == "appId: unknown app")
            #expect(stranger["signature"] == nil)
            var noCharset = Harness.mq001(mhtOrderNo: number)
            noCharset["mhtCharset"] = nil
            #expect(try await harness.global(noCharset)["responseMsg"]?.hasPrefix("mhtCharset: required") == true)
        }
        try await Harness.with(queryRule: .codeOrReadme) { harness in
            let order = Harness.wp001()
            let number = try #require(order["mhtOrderNo"])
            _ = try await harness.global(order)
            #expect(try await harness.global(Harness.mq001(mhtOrderNo: number, readmeRule: true))["responseCode"] == "A001")
            #expect(try await harness.global(Harness.mq001(mhtOrderNo: number))["responseCode"] == "A001")
            var tampered = Harness.mq001(mhtOrderNo: number)
            tampered["mhtSignature"] = String(repeating: "0", count: 32)
            let message = try #require(try await harness.global(tampered)["responseMsg"])
            #expect(message.contains("(README 2.4)"))
            #expect(message.contains("funcode=MQ001&mhtCharset=UTF-8"))
        }
    }

    @Test("faults on /global: 500, a hang then 504, a dropped connection, garbage, a bad signature", .timeLimit(.minutes(1)))
    func faults() async throws {
        try await Harness.with { harness in
            let order = Harness.wp001()
            let number = try #require(order["mhtOrderNo"])
            _ = try await harness.global(order)
            let query = Harness.mq001(mhtOrderNo: number)

            #expect(try await harness.admin("POST", "faults", json: #"{"fault": "server_error", "funcode": "MQ001"}"#).status == 200)
            // A WP001 does not take an MQ001 fault.
            #expect(try await harness.global(Harness.wp001())["responseCode"] == "A001")
            #expect(try await harness.global(query).raw.status == 500)
            #expect(try await harness.global(query)["responseCode"] == "A001")

            await harness.emulator.inject(.timeout, funcode: "MQ001")
            let started = ContinuousClock.now
            #expect(try await harness.global(query).raw.status == 504)
            #expect(ContinuousClock.now - started >= .milliseconds(250))

            await harness.emulator.inject(.dropConnection)
            let fresh = PayFortHarness.makeSession()
            defer { fresh.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) { try await harness.global(query, session: fresh) }

            await harness.emulator.inject(.garbage, funcode: "MQ001")
            let garbage = try await harness.global(query)
            #expect(garbage.raw.status == 200)
            #expect(garbage.fields.isEmpty)

            await harness.emulator.inject(.badSignature, funcode: "MQ001")
            let bad = try await harness.global(query)
            #expect(bad["responseCode"] == "A001")
            #expect(!bad.isSigned(by: Harness.demoApp))

            // A WP001 hit by a dropped connection was still recorded.
            let dropped = Harness.wp001()
            await harness.emulator.inject(.dropConnection, funcode: "WP001")
            let another = PayFortHarness.makeSession()
            defer { another.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) { try await harness.global(dropped, session: another) }
            #expect(try await harness.global(Harness.mq001(mhtOrderNo: dropped["mhtOrderNo"] ?? ""))["tradeStatus"] == "A00I")

            let unknownFault = try await harness.admin("POST", "faults", json: #"{"fault": "slow"}"#)
            #expect(unknownFault.status == 400)
        }
    }

    @Test("an order past its mhtOrderTimeOut cannot be paid on its page; a cancel leaves it A00I")
    func expiredOrder() async throws {
        let clock = TestClock()
        try await Harness.with(now: { clock.now }) { harness in
            let order = Harness.wp001(extra: ["mhtOrderTimeOut": "60"])
            let tn = try #require(try await harness.global(order)["tn"].flatMap(URL.init(string:)))
            var post = URLRequest(url: tn)
            post.httpMethod = "POST"
            post.httpBody = Data("outcome=cancel".utf8)
            #expect(try await exchange(post, on: harness.session).text.contains("A00I"))
            clock.advance(by: 61)
            post.httpBody = Data("outcome=pay".utf8)
            #expect(try await exchange(post, on: harness.session).text.contains("A00I"))
            post.httpBody = Data("outcome=later".utf8)
            #expect(try await exchange(post, on: harness.session).status == 400)
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.global(Harness.mq001(mhtOrderNo: order["mhtOrderNo"] ?? ""))["tradeStatus"] == "A00I")
            let unknown = harness.base.appendingPathComponent("sandbox-only/channel/nothing")
            #expect(try await exchange(URLRequest(url: unknown), on: harness.session).status == 404)
        }
    }

    @Test("the tn page pays a WP001 order: charged once, N001 sent, N002 posted to frontNotifyUrl", .timeLimit(.minutes(1)))
    func channelPage() async throws {
        let endpoint = IPayNowMerchantEndpoint()
        try await IPayNowMerchantEndpoint.with(endpoint) { notifyURL in
            try await Harness.with { harness in
                let order = Harness.wp001(notifyUrl: notifyURL.absoluteString,
                                          extra: ["frontNotifyUrl": "https://shop.example/front", "mhtReserved": "a=1&b"])
                let answer = try await harness.global(order)
                let tn = try #require(answer["tn"].flatMap(URL.init(string:)))
                let page = try await exchange(URLRequest(url: tn), on: harness.session)
                #expect(page.status == 200)
                #expect(page.text.contains("WeChat Pay"))
                #expect(page.text.contains("id=\"pay\""))

                var post = URLRequest(url: tn)
                post.httpMethod = "POST"
                post.httpBody = Data("outcome=pay".utf8)
                let paid = try await exchange(post, on: harness.session)
                #expect(paid.status == 200)
                #expect(paid.text.contains("action=\"https://shop.example/front\""))
                #expect(paid.text.contains("name=\"funcode\" value=\"N002\""))
                #expect(paid.text.contains("name=\"mhtReserved\" value=\"a%3D1%26b\""))
                // A second visit changes nothing.
                _ = try await exchange(post, on: harness.session)
                await harness.emulator.waitForNotifications()
                #expect(await harness.emulator.ledger.count == 1)
                let received = await endpoint.received
                #expect(received.count == 1)
                let n001 = try #require(received.first?.fields)
                #expect(n001["funcode"] == "N001")
                #expect(n001["deviceType"] == "02")
                #expect(n001["mhtReserved"] == "a=1&b")
                #expect(n001["tradeStatus"] == "A001")
                #expect(IPayNowEmulator.Signature.verify(n001, appKey: Harness.demoApp.appKey, signatureField: "signature",
                                                         excluding: IPayNowEmulator.Signature.responseExcluded))
            }
        }
    }
}
