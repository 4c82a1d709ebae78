import Foundation
import Testing
import TillGatewayKit
@testable import TillIPayNowServer

/// ``IPayNowOrder``: the computed presign vectors (`Fixtures/computed-crossborder-WP001-presign.json`) and
/// appendix A's rules in ``IPayNowOrder/validate(prefix:)``.
@Suite("iPayNow order")
struct OrderTests {
    /// The order of a vector's fields, built through the public initialiser.
    static func order(_ fields: [String: String]) throws -> IPayNowOrder {
        func field(_ name: String) throws -> String { try #require(fields[name], "\(name)") }
        return IPayNowOrder(
            appId: try field("appId"), mhtOrderNo: try field("mhtOrderNo"), mhtOrderName: try field("mhtOrderName"),
            mhtOrderType: try field("mhtOrderType"), mhtCurrencyType: try field("mhtCurrencyType"),
            mhtOrderAmt: try #require(Int64(try field("mhtOrderAmt"))),
            mhtAmtCurrFlag: try #require(IPayNowCodes.AmountCurrency(rawValue: try field("mhtAmtCurrFlag"))),
            mhtOrderDetail: try field("mhtOrderDetail"), mhtOrderTimeOut: fields["mhtOrderTimeOut"].flatMap { Int($0) },
            mhtOrderStartTime: try field("mhtOrderStartTime"), notifyUrl: try field("notifyUrl"), mhtCharset: try field("mhtCharset"),
            payChannelType: try #require(IPayNowCodes.Channel(rawValue: try field("payChannelType"))),
            mhtReserved: fields["mhtReserved"])
    }

    @Test("the presign vectors are in the fixtures, with the demo's key")
    func vectorsPresent() throws {
        let vectors = try PresignVectors.load()
        #expect(vectors.cases.count == 4)
        #expect(TestSigner.md5Hex(vectors.app_key) == "69c6f56e687114d1f80fbef5e6678429")
        #expect(Set(vectors.excluded_from_signature) == IPayNowSigning.Rule.order.excluded)
    }

    @Test("each vector: the same presign string, signature and payData (mhtReserved URL-encoded after signing)",
          arguments: PresignVectors.all)
    func presignVector(_ vector: PresignVectors.Case) throws {
        let key = try #require(PresignVectors.loaded).app_key
        let order = try Self.order(vector.fields)
        #expect(order.validate().isEmpty)
        #expect(order.presignString == vector.presign_string)
        #expect(TestSigner.md5Hex(key) == vector.md5_appKey)
        let signature = IPayNowSigning.sign(canonical: IPayNowSigning.canonical(order.fields, rule: .order), appKey: key)
        #expect(signature == vector.mhtSignature)
        #expect(IPayNowSigning.canonical(order.fields, rule: .order) == order.presignString)
        // The test's own signer, over the vector's fields (not the order's).
        #expect(TestSigner.sign(vector.fields.map { ($0.key, $0.value) }, excluding: [], key: key) == vector.mhtSignature)
        if let payData = vector.payData {
            #expect(order.payData(signature: signature) == payData)
        }
        if let encoded = vector.mhtReserved_encoded_after_signing {
            #expect(IPayNowOrder.reservedEncoding(try #require(vector.fields["mhtReserved"])) == encoded)
        }
    }

    @Test("payData read back by the app: every field as signed, mhtReserved decoded once", arguments: PresignVectors.all)
    func payDataReadBack(_ vector: PresignVectors.Case) throws {
        let payData = try #require(vector.payData)
        let read = try IPayNowPayData(payData, field: "payData")
        var expected = vector.fields
        expected["mhtSignType"] = "MD5"
        expected["mhtSignature"] = vector.mhtSignature
        #expect(read.fields == expected)
    }

    @Test("the presign signed as a WP001 request: funcode, deviceType, detail, version and the sign type are not signed")
    func orderRuleExclusions() throws {
        let vector = try #require(PresignVectors.all.first)
        let key = try #require(PresignVectors.loaded).app_key
        var pairs = vector.fields.map { ($0.key, $0.value) }
        pairs += [("funcode", "WP001"), ("deviceType", "0600"), ("detail", #"{"goods_detail":[]}"#), ("version", "1.0"),
                  ("mhtSignType", "MD5"), ("mhtSignature", vector.mhtSignature)]
        let fields = FormFields(pairs)
        #expect(IPayNowSigning.rule(of: fields) == .order)
        #expect(IPayNowSigning.canonical(fields, rule: .order) == vector.presign_string)
        try IPayNowSigning.verify(fields, rule: .order, appKey: key)
    }

    @Test("fields are in key order, empty optional fields left out; reservedEncoding escapes all but letters, digits and -._~")
    func fieldsAndEncoding() throws {
        var order = Self.valid
        order.mhtReserved = ""
        order.consumerName = "Ada"
        let names = order.fields.map(\.name)
        #expect(names == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(!names.contains("mhtReserved"))
        #expect(names.contains("consumerName"))
        #expect(names.contains("mhtOrderTimeOut"))
        #expect(IPayNowOrder.reservedEncoding("aZ09-._~") == "aZ09-._~")
        #expect(IPayNowOrder.reservedEncoding("!*'();:@&=+$,/?%#[] ") == "%21%2A%27%28%29%3B%3A%40%26%3D%2B%24%2C%2F%3F%25%23%5B%5D%20")
        #expect(IPayNowOrder.reservedEncoding("茶") == "%E8%8C%B6")
        order.mhtReserved = "k=v&w=x y"
        #expect(order.payData(signature: "s").contains("&mhtReserved=k%3Dv%26w%3Dx%20y&"))
        #expect(order.presignString.contains("&mhtReserved=k=v&w=x y&"))
    }

    // MARK: Appendix A

    static let valid = IPayNowOrder(appId: "1480321334800229", mhtOrderNo: "att0000000000000000000001", mhtOrderName: "Green-tea",
                                    mhtCurrencyType: "NZD", mhtOrderAmt: 1050, mhtAmtCurrFlag: .settlement, mhtOrderDetail: "2x-green-tea",
                                    mhtOrderTimeOut: 3600, mhtOrderStartTime: "20260101080000",
                                    notifyUrl: "https://shop.example.com/v1/notifications/ipaynow", payChannelType: .alipay)

    /// The issues of `valid` changed by `change`, as `field: code`.
    static func issues(_ change: (inout IPayNowOrder) -> Void) -> [String] {
        var order = valid
        change(&order)
        return order.validate().map { "\($0.field): \($0.code.rawValue)" }
    }

    @Test("a valid order has no issue; every appendix C currency, either channel and either flag pass")
    func validOrder() {
        #expect(Self.valid.validate().isEmpty)
        for currency in IPayNowCodes.settlementCurrencies {
            #expect(Self.issues { $0.mhtCurrencyType = currency }.isEmpty, "\(currency)")
        }
        #expect(IPayNowCodes.settlementCurrencies.count == 15)
        #expect(Self.issues { $0.payChannelType = .wechatPay; $0.mhtAmtCurrFlag = .renminbi }.isEmpty)
        #expect(Self.issues { $0.mhtOrderTimeOut = nil }.isEmpty)
        #expect(Self.issues { $0.mhtReserved = "a=1&b=2*" }.isEmpty, "mhtReserved may hold & and =: it is encoded after signing")
        #expect(Self.issues { $0.notifyUrl = "http://shop.example.com/n" }.isEmpty, "appendix A: HTTP or HTTPS")
        #expect(Self.issues { $0.mhtOrderName = String(repeating: "茶", count: 40) }.isEmpty)
        #expect(Self.issues { $0.mhtOrderDetail = String(repeating: "d", count: 1000) }.isEmpty)
        #expect(Self.issues { $0.mhtOrderTimeOut = 60 }.isEmpty)
        #expect(Self.issues { $0.mhtOrderTimeOut = 3600 }.isEmpty)
    }

    @Test("lengths: appId, mhtOrderNo, mhtOrderName 40; mhtOrderDetail 1000; notifyUrl 200; mhtReserved 100; consumer fields 40")
    func lengths() {
        #expect(Self.issues { $0.appId = String(repeating: "1", count: 41) } == ["appId: field_too_long"])
        #expect(Self.issues { $0.mhtOrderNo = String(repeating: "a", count: 41) } == ["mhtOrderNo: field_too_long"])
        #expect(Self.issues { $0.mhtOrderName = String(repeating: "n", count: 41) } == ["mhtOrderName: field_too_long"])
        #expect(Self.issues { $0.mhtOrderDetail = String(repeating: "d", count: 1001) } == ["mhtOrderDetail: field_too_long"])
        #expect(Self.issues { $0.notifyUrl = "https://shop.example.com/" + String(repeating: "p", count: 176) } == ["notifyUrl: field_too_long"])
        #expect(Self.issues { $0.mhtReserved = String(repeating: "r", count: 101) } == ["mhtReserved: field_too_long"])
        #expect(Self.issues { $0.consumerId = String(repeating: "c", count: 41) } == ["consumerId: field_too_long"])
        #expect(Self.issues { $0.consumerName = String(repeating: "c", count: 41) } == ["consumerName: field_too_long"])
        #expect(Self.issues { $0.mhtOrderAmt = 1_000_000_000_000_000_000 }.isEmpty, "19 digits fit String(1,22)")
    }

    @Test("no value may hold a space: the plugin strips spaces before sending, so iPayNow would check another string")
    func spaces() {
        #expect(Self.issues { $0.mhtOrderName = "Green tea" } == ["mhtOrderName: invalid_field"])
        #expect(Self.issues { $0.mhtOrderDetail = "2 x tea" } == ["mhtOrderDetail: invalid_field"])
        #expect(Self.issues { $0.mhtReserved = "a b" } == ["mhtReserved: invalid_field"])
        #expect(Self.issues { $0.mhtOrderName = "绿茶\u{3000}两杯" }.isEmpty, "only U+0020 is stripped by the plugin")
    }

    @Test("required fields: appId, mhtOrderNo, mhtOrderName, mhtOrderDetail, notifyUrl")
    func required() {
        #expect(Self.issues { $0.appId = "" } == ["appId: missing_field"])
        #expect(Self.issues { $0.mhtOrderNo = "" } == ["mhtOrderNo: missing_field"])
        #expect(Self.issues { $0.mhtOrderName = "" } == ["mhtOrderName: missing_field"])
        #expect(Self.issues { $0.mhtOrderDetail = "" } == ["mhtOrderDetail: missing_field"])
        #expect(Self.issues { $0.notifyUrl = "" } == ["notifyUrl: missing_field"])
    }

    @Test("& and = would re-cut payData: refused in every field but mhtReserved; control characters too; mhtOrderNo letters and digits")
    func characters() {
        for (name, path) in [("appId", \IPayNowOrder.appId), ("mhtOrderName", \.mhtOrderName), ("mhtOrderDetail", \.mhtOrderDetail)] {
            for bad in ["a&b", "a=b"] {
                #expect(Self.issues { $0[keyPath: path] = bad } == ["\(name): invalid_field"], "\(name) \(bad)")
            }
            #expect(Self.issues { $0[keyPath: path] = "a\u{0}b" } == ["\(name): invalid_field"], "\(name) control")
        }
        #expect(Self.issues { $0.notifyUrl = "https://shop.example.com/n?a=1" } == ["notifyUrl: invalid_field"])
        #expect(Self.issues { $0.consumerName = "a&b" } == ["consumerName: invalid_field"])
        #expect(Self.issues { $0.mhtOrderNo = "order-42" } == ["mhtOrderNo: invalid_field"])
        #expect(Self.issues { $0.mhtOrderNo = "订单1" } == ["mhtOrderNo: invalid_field"])
        #expect(Self.issues { $0.mhtOrderNo = "a&b" } == ["mhtOrderNo: invalid_field", "mhtOrderNo: invalid_field"])
    }

    @Test("currency: appendix C only (not the PHP README's four more, not CNY, not lower case)")
    func currency() {
        for code in ["KRW", "THB", "TWD", "IDR", "BRL", "nzd", "156", ""] {
            #expect(Self.issues { $0.mhtCurrencyType = code } == ["mhtCurrencyType: invalid_currency"], "\(code)")
        }
        var order = Self.valid
        order.mhtCurrencyType = "CNY"
        let cny = order.validate()
        #expect(cny.map(\.code) == [.invalidCurrency])
        #expect(cny.first?.message.contains("mhtAmtCurrFlag") == true)
    }

    @Test("amount: a positive whole number of minor units")
    func amount() {
        #expect(Self.issues { $0.mhtOrderAmt = 0 } == ["mhtOrderAmt: invalid_amount"])
        #expect(Self.issues { $0.mhtOrderAmt = -1 } == ["mhtOrderAmt: invalid_amount"])
        #expect(Self.issues { $0.mhtOrderAmt = 1 }.isEmpty)
    }

    @Test("mhtOrderTimeOut: 60 to 3600 seconds")
    func timeout() {
        for bad in [59, 3601, 0, -60] {
            #expect(Self.issues { $0.mhtOrderTimeOut = bad } == ["mhtOrderTimeOut: invalid_field"], "\(bad)")
        }
    }

    @Test("mhtOrderStartTime: yyyyMMddHHmmss of a real moment")
    func startTime() {
        for bad in ["20261301000000", "20260001000000", "20260100000000", "20260132000000", "20270229120000", "21000229120000",
                    "20260101240000", "20260101126000", "20260101120060", "2026010112000", "202601011200000", "2026-01-01 120",
                    "2026010112000a", "19991231235959", "", "２０２６０１０１０８００００"] {
            #expect(Self.issues { $0.mhtOrderStartTime = bad } == ["mhtOrderStartTime: invalid_field"], "\(bad)")
        }
        for good in ["20280229120000", "20000229000000", "20261231235959", "20260430000000"] {
            #expect(IPayNowOrder.isStartTime(good), "\(good)")
        }
        #expect(!IPayNowOrder.isStartTime("20260431000000"))
        #expect(IPayNowOrder.startTime(Setup.clock) == "20260101080000", "China time by default")
        #expect(IPayNowOrder.startTime(Setup.clock, utcOffsetSeconds: 0) == "20260101000000")
        #expect(IPayNowOrder.startTime(Setup.clock, utcOffsetSeconds: -5 * 3600) == "20251231190000")
    }

    @Test("notifyUrl: http or https only")
    func notifyURL() {
        for bad in ["ftp://shop.example.com/n", "shop.example.com/n", "javascript:alert(1)", "myapp://n", "//shop.example.com/n"] {
            #expect(Self.issues { $0.notifyUrl = bad } == ["notifyUrl: invalid_field"], "\(bad)")
        }
    }

    @Test("fixed values: mhtOrderType 01, mhtCharset UTF-8")
    func fixedValues() {
        #expect(Self.issues { $0.mhtOrderType = "02" } == ["mhtOrderType: invalid_field"])
        #expect(Self.issues { $0.mhtCharset = "GBK" } == ["mhtCharset: invalid_field"])
    }

    @Test("every problem is reported, each under the prefix; check() throws the first")
    func prefixAndCheck() {
        var order = Self.valid
        order.appId = ""
        order.mhtOrderAmt = 0
        order.mhtOrderTimeOut = 59
        let issues = order.validate(prefix: "order.")
        #expect(issues.map(\.field) == ["order.appId", "order.mhtOrderAmt", "order.mhtOrderTimeOut"])
        let error = #expect(throws: CheckoutError.self) { try order.check(prefix: "order.") }
        #expect(error?.field == "order.appId")
        #expect(error?.code == .missingField)
    }
}
