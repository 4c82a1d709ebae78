import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillIPayNowServer
import TillTesting

/// iPayNow cross-border against code Till did not write: iPayNow's own Python SDK (PyPI
/// `ipaynow-python-sdk` 1.0.0, `Python/ipaynow_bridge.py`) signs what Till signs, verifies every real
/// message and the emulator's notifications, and signs notifications Till must accept.
///
/// The SDK is domestic-only (no cross-border request type, no MQ001); its `sign` is used for the
/// cross-border order by passing the fields the order leaves out as extra excluded fields, which is how
/// its own `sign(params, config, exclude_sign_type, *signature_fields)` is meant to be called.
@Suite("iPayNow interop: iPayNow's own Python SDK as the other party",
       .enabled(if: PythonEnvironment.available, "python3 not found: the vendor-SDK interop tests need it"))
struct IPayNowInteropTests {
    // MARK: 1. The SDK's signer equals Till's

    @Test("the four computed cross-border presign vectors: Till and the SDK build the same string to sign and mhtSignature")
    func presignVectors() async throws {
        let vectors = try InteropFixtures.decode("ipaynow-crossborder-presign.json", as: IPayNowPresignVectors.self)
        try #require(vectors.cases.count == 4)
        let items = vectors.cases.map { IPayNowSDK.SignItem(fields: $0.fields, excluded: IPayNowSDK.orderExcluded) }
        let answers = try await IPayNowSDK.sign(items, appId: vectors.appId, appKey: vectors.appKey)
        for (vector, sdk) in zip(vectors.cases, answers) {
            let fields = FormFields(vector.fields.map { ($0[0], $0[1]) })
            let canonical = IPayNowSigning.canonical(fields, rule: .order)
            #expect(canonical == vector.presign, "\(vector.id)")
            #expect(IPayNowSigning.sign(fields, rule: .order, appKey: vectors.appKey) == vector.mhtSignature, "\(vector.id)")
            #expect(sdk.canonical == canonical, "\(vector.id)")
            #expect(sdk.signature == vector.mhtSignature, "\(vector.id)")
        }
    }

    @Test("generated WP001 field sets (Chinese, spaces, +, %, mhtReserved with & and =, optional fields absent or empty, excluded fields present): the same string and signature")
    func generatedOrderFieldSets() async throws {
        var random = IPayNowGenerator(seed: 0x1BA7_2026)
        let sets = (0..<240).map { _ in random.orderFieldSet() }
        let answers = try await IPayNowSDK.sign(sets.map { IPayNowSDK.SignItem(fields: $0.fields, excluded: IPayNowSDK.orderExcluded,
                                                                                 appId: $0.appId, appKey: $0.appKey) },
                                                appId: "unused", appKey: "unused")
        try #require(answers.count == sets.count)
        var mismatches = 0
        for (set, sdk) in zip(sets, answers) {
            let fields = FormFields(set.fields.map { ($0[0], $0[1]) })
            let canonical = IPayNowSigning.canonical(fields, rule: .order)
            let signature = IPayNowSigning.sign(fields, rule: .order, appKey: set.appKey)
            if sdk.canonical != canonical || sdk.signature != signature { mismatches += 1 }
            #expect(sdk.canonical == canonical, "fields \(set.fields)")
            #expect(sdk.signature == signature, "fields \(set.fields)")
        }
        #expect(mismatches == 0)
        // The generator reached the cases it is for.
        let all = sets.flatMap(\.fields)
        #expect(all.contains { $0[0] == "mhtReserved" && $0[1].contains("&") && $0[1].contains("=") })
        #expect(all.contains { $0[1].contains("+") } && all.contains { $0[1].contains("%") } && all.contains { $0[1].contains(" ") })
        #expect(all.contains { $0[1].unicodeScalars.contains { $0.value >= 0x4E00 && $0.value <= 0x9FFF } })
        #expect(all.contains { $0[1].isEmpty })
        #expect(all.contains { $0[0] == "funcode" } && all.contains { $0[0] == "mhtSignType" })
    }

    @Test("IPayNowOrder values Till checks as valid: presignString is the SDK's string to sign")
    func generatedOrders() async throws {
        var random = IPayNowGenerator(seed: 42)
        let orders = (0..<120).map { _ in random.order() }
        for order in orders { #expect(order.validate().isEmpty, "\(order.validate())") }
        let key = "BB7qcwBIZeeLQt54BqBthCR5ae4GgXGt"
        let answers = try await IPayNowSDK.sign(orders.map { IPayNowSDK.SignItem(fields: $0.fields.map { [$0.name, $0.value] },
                                                                                   excluded: IPayNowSDK.orderExcluded) },
                                                appId: "1480321334800229", appKey: key)
        for (order, sdk) in zip(orders, answers) {
            #expect(sdk.canonical == order.presignString)
            #expect(sdk.canonical == IPayNowSigning.canonical(order.fields, rule: .order))
            #expect(sdk.signature == IPayNowSigning.sign(canonical: order.presignString, appKey: key))
        }
    }

    @Test("IPayNowServer.prepare's payData: the SDK recomputes its mhtSignature over the fields the app hands the plugin")
    func preparedPayDataSignature() async throws {
        let key = "BB7qcwBIZeeLQt54BqBthCR5ae4GgXGt"
        let fixed = Date(timeIntervalSince1970: 1_790_000_000)
        let server = IPayNowServer(environment: .test, credentials: IPayNowCredentials(appKey: key),
                                   settings: IPayNowSettings(appId: "1480321334800229", settlementCurrency: "HKD", orderTimeout: 900),
                                   transport: NoCallTransport(), now: { fixed })
        // Till refuses a notifyUrl holding "&" or "=" (the plugin splits payData on them), so no query string.
        let notify = URL(string: "https://shop.example/v1/notifications/ipaynow")!
        let intents: [(PaymentIntent, String)] = [
            (PaymentIntent(merchantReference: "order-1", amount: Money(minorUnits: 1050, currency: try #require(Currency.lookup("NZD"))),
                           method: .alipay, description: "绿茶 green tea + 100% 乌龙"), "a1b2c3d4"),
            (PaymentIntent(merchantReference: "order-2", amount: Money(minorUnits: 500, currency: try #require(Currency.lookup("USD"))),
                           method: .alipay), "attempt2"),
            (PaymentIntent(merchantReference: "order-3", amount: Money(minorUnits: 8800, currency: try #require(Currency.lookup("CNY"))),
                           method: .alipay, description: "测试商品!@#"), "ATTEMPT3"),
            (PaymentIntent(merchantReference: "order-4", amount: Money(minorUnits: 1, currency: try #require(Currency.lookup("EUR"))),
                           method: .alipay, description: "  spaced   out  "), "x4"),
        ]
        var items: [IPayNowSDK.SignItem] = []
        var expected: [(signature: String, presign: String)] = []
        for (intent, attempt) in intents {
            let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: attempt),
                                         returnURL: URL(string: "shopapp://ipaynow"), notificationURL: notify)
            let preparation = try await server.prepare(context)
            let payData = try #require(preparation.parameters[IPayNowGateway.payDataParameter])
            // The plugin splits payData on "&" and each pair on its first "="; values are raw (no order of
            // Till's carries mhtReserved, the one value encoded after signing).
            let pairs = payData.split(separator: "&", omittingEmptySubsequences: false).map { pair -> [String] in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return [String(parts[0]), parts.count > 1 ? String(parts[1]) : ""]
            }
            let signature = try #require(pairs.last { $0[0] == "mhtSignature" }?[1])
            #expect(pairs.contains(["mhtSignType", "MD5"]))
            items.append(IPayNowSDK.SignItem(fields: pairs, excluded: IPayNowSDK.orderExcluded))
            let order = try server.order(for: context)
            expected.append((signature, order.presignString))
        }
        let answers = try await IPayNowSDK.sign(items, appId: "1480321334800229", appKey: key)
        for (answer, expected) in zip(answers, expected) {
            #expect(answer.signature == expected.signature)
            #expect(answer.canonical == expected.presign)
        }
    }

    @Test("MQ001: generated field sets agree under the query rule, and Till's own query is signed as the SDK signs it; the SDK signs the answer Till reads")
    func queryRule() async throws {
        var random = IPayNowGenerator(seed: 7)
        let sets = (0..<80).map { _ in random.queryFieldSet() }
        let answers = try await IPayNowSDK.sign(sets.map { IPayNowSDK.SignItem(fields: $0.fields, excluded: IPayNowSDK.queryExcluded,
                                                                                 appId: $0.appId, appKey: $0.appKey) },
                                                appId: "unused", appKey: "unused")
        for (set, sdk) in zip(sets, answers) {
            let fields = FormFields(set.fields.map { ($0[0], $0[1]) })
            #expect(sdk.canonical == IPayNowSigning.canonical(fields, rule: .query), "fields \(set.fields)")
            #expect(sdk.signature == IPayNowSigning.sign(fields, rule: .query, appKey: set.appKey), "fields \(set.fields)")
        }

        // Till's MQ001 request, captured; the answer is a cross-border MQ001 answer (PHP README 2.4 fields)
        // the SDK signs under the legacy rule (signType left out, as README 2.4 says).
        let appId = "1480321334800229", key = "BB7qcwBIZeeLQt54BqBthCR5ae4GgXGt", attempt = "mq001attempt7"
        let answerFields: [[String]] = [
            ["appId", appId], ["mhtOrderNo", attempt], ["mhtOrderName", "绿茶 green tea"], ["mhtOrderType", "01"],
            ["mhtCurrencyType", "NZD"], ["mhtOrderAmt", "1050"], ["cashCurrencyType", "CNY"], ["cashAmont", "4725"],
            ["mhtAmtCurrFlag", "1"], ["mhtOrderTimeOut", "3600"], ["mhtOrderStartTime", "20261122093000"], ["mhtCharset", "UTF-8"],
            ["deviceType", "01"], ["payChannelType", "90"], ["tradeStatus", "A001"], ["nowPayOrderNo", "200801202611220930001234"],
            ["channelOrderNo", "2026112221001004"], ["responseTime", "20261122093512"], ["responseCode", "A001"],
            ["responseMsg", "查询成功"], ["signType", "MD5"],
        ]
        let built = try await IPayNowSDK.build([.init(fields: answerFields, excludeSignType: true)], appId: appId, appKey: key)
        let transport = RecordingTransport()
        transport.expect(.post, path: "/global", respond: TransportResponse(statusCode: 200, body: Data(built[0].body.utf8)))
        let server = IPayNowServer(environment: IPayNowEnvironment(baseURL: URL(string: "http://ipaynow.invalid")!),
                                   credentials: IPayNowCredentials(appKey: key), settings: IPayNowSettings(appId: appId),
                                   transport: transport)
        let report = try await server.inquire(InquiryQuery(attempt: AttemptReference(rawValue: attempt)))
        try transport.verify()
        #expect(report.status == .paid)
        #expect(report.amount == Money(minorUnits: 1050, currency: try #require(Currency.lookup("NZD"))))
        #expect(report.gatewayReference == "200801202611220930001234")

        let sent = try FormFields.decode(try #require(transport.requests.first?.body))
        let pairs = sent.pairs.map { [$0.name, $0.value] }
        let checked = try await IPayNowSDK.sign([.init(fields: pairs, excluded: IPayNowSDK.queryExcluded)], appId: appId, appKey: key)
        #expect(checked[0].canonical == "appId=\(appId)&mhtCharset=UTF-8&mhtOrderNo=\(attempt)")
        #expect(checked[0].signature == sent["mhtSignature"])
        #expect(sent["funcode"] == "MQ001" && sent["mhtSignType"] == "MD5")
    }
}

// MARK: - The SDK's side

/// `Python/ipaynow_bridge.py`: iPayNow's Python SDK called with Till's inputs.
enum IPayNowSDK {
    /// The fields a cross-border order leaves out of its signature beyond `mhtSignature` (which the
    /// SDK always leaves out): PHP SDK `TradeService::trade` signs before adding them.
    static let orderExcluded = ["funcode", "deviceType", "mhtSignType", "detail", "version"]
    /// The fields MQ001 leaves out beyond `mhtSignature`: PHP SDK `OrderQueryService` adds `funcode`
    /// and `mhtSignType` after signing.
    static let queryExcluded = ["funcode", "mhtSignType"]

    struct Request<Item: Encodable>: Encodable {
        var op: String
        var appId: String
        var appKey: String
        var items: [Item]
    }

    struct Answer<Result: Decodable>: Decodable {
        var results: [Result]
    }

    /// `sign(fields, cfg, excludeSignType, *excluded)` and `_canonical(…)` of one field set.
    struct SignItem: Encodable {
        /// Name and value, in order.
        var fields: [[String]]
        var excludeSignType = false
        var excluded: [String]
        /// This item's own app, when it differs from the request's.
        var appId: String?
        var appKey: String?
    }

    struct Signed: Decodable {
        var canonical: String
        var signature: String
    }

    /// `verify(parse_response(body), cfg, signatureField, excludeSignType)`.
    struct VerifyItem: Encodable {
        var body: String
        var signatureField = "signature"
        var excludeSignType: Bool
        var appId: String?
        var appKey: String?
    }

    struct Verified: Decodable {
        var ok: Bool
        var fields: [String: String]
    }

    /// `NotifyParser.parse_payment` (`kind` "payment") or `parse_refund` ("refund").
    struct NotifyItem: Encodable {
        var body: String
        var kind: String
        var appId: String?
        var appKey: String?
    }

    struct Notified: Decodable {
        var accepted: Bool
        var isSuccess: Bool?
        var fields: [String: String]?
        /// The SDK's error code (`E0012`) when refused.
        var error: String?
        /// `NotifyAck.success()` or `.fail()`.
        var ack: String
    }

    /// A message from iPayNow as the SDK signs one: `sign(fields, cfg, excludeSignType, "signature")`,
    /// form-encoded with `urlencode`, as the SDK's transport encodes a form.
    struct BuildItem: Encodable {
        var fields: [[String]]
        var excludeSignType: Bool
        var appId: String?
        var appKey: String?
    }

    struct Built: Decodable {
        var body: String
        var signature: String
    }

    static func sign(_ items: [SignItem], appId: String, appKey: String) async throws -> [Signed] {
        try await call("sign", items, appId: appId, appKey: appKey)
    }

    static func verify(_ items: [VerifyItem], appId: String = "unused", appKey: String = "unused") async throws -> [Verified] {
        try await call("verify", items, appId: appId, appKey: appKey)
    }

    static func notify(_ items: [NotifyItem], appId: String = "unused", appKey: String = "unused") async throws -> [Notified] {
        try await call("notify", items, appId: appId, appKey: appKey)
    }

    static func build(_ items: [BuildItem], appId: String, appKey: String) async throws -> [Built] {
        try await call("build", items, appId: appId, appKey: appKey)
    }

    private static func call<Item: Encodable, Result: Decodable>(_ op: String, _ items: [Item], appId: String,
                                                                   appKey: String) async throws -> [Result] {
        let python = try await PythonEnvironment.ipaynow.value
        let results = try await python.run("ipaynow_bridge.py", input: Request(op: op, appId: appId, appKey: appKey, items: items),
                                           as: Answer<Result>.self, timeout: .seconds(60)).results
        guard results.count == items.count else {
            throw InteropError("ipaynow_bridge.py \(op) answered \(results.count) results for \(items.count) items")
        }
        return results
    }
}

// MARK: - Fixtures

/// `Fixtures/ipaynow-crossborder-presign.json`.
struct IPayNowPresignVectors: Decodable {
    struct Case: Decodable {
        var id: String
        /// Name and value, in the demo's order.
        var fields: [[String]]
        var presign: String
        var mhtSignature: String
        var payData: String
    }
    var appId: String
    var appKey: String
    var cases: [Case]
}

/// `Fixtures/ipaynow-real-messages.json`.
struct IPayNowRealMessages: Decodable {
    struct Message: Decodable {
        var id: String
        var kind: String
        var function: String
        var source: String
        var appId: String
        var appKey: String
        /// `legacyMessage` or `versionedMessage`.
        var rule: String
        var signature: String
        var body: String

        var isLegacy: Bool { rule == IPayNowSigning.Rule.legacyMessage.rawValue }
        var isVersionedN001: Bool { function == "N001" && !isLegacy }
    }
    var messages: [Message]

    static func load() throws -> [Message] {
        try InteropFixtures.decode("ipaynow-real-messages.json", as: IPayNowRealMessages.self).messages
    }
}

/// A transport for a server that must not call out (Prepare makes no call to iPayNow).
struct NoCallTransport: HTTPTransport {
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        throw TransportError(.notSent, "no call expected: \(request.method.rawValue) \(request.url)")
    }
}

// MARK: - Generated inputs

/// Deterministic field sets for the signer comparison (SplitMix64, so a failure names a set that
/// comes back on the next run). These are inputs for two implementations to agree on, not wire facts.
struct IPayNowGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    mutating func pick<T>(_ values: [T]) -> T { values[int(0...(values.count - 1))] }

    mutating func alphanumeric(_ length: Int) -> String {
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in pick(letters) })
    }

    /// Free text of the kinds a name, detail or reserved value holds.
    mutating func text() -> String {
        let pieces = ["测试商品", "绿茶", "乌龙茶 礼盒", "IOS插件测试用例", "green tea", " ", "+", "%", "%20", "100%", "a+b", "!@#", "（全角）",
                      "Zoë", "café", "🙂", "~", "*", "'quoted'", "\"double\"", "/path?x", "#frag", ";", ":", ",", "$", "<b>", "\\"]
        return (0..<int(1...4)).map { _ in pick(pieces) }.joined()
    }

    /// A cross-border WP001 field set (appendix A names), some optional fields absent or empty, some
    /// of the fields the order leaves out present.
    mutating func orderFieldSet() -> (appId: String, appKey: String, fields: [[String]]) {
        let appId = String(int(1_000_000_000_000_000...9_999_999_999_999_999))
        let appKey = alphanumeric(32)
        var fields: [[String]] = [
            ["appId", appId], ["mhtOrderNo", alphanumeric(int(1...40))], ["mhtOrderName", text()], ["mhtOrderType", "01"],
            ["mhtCurrencyType", pick(IPayNowCodes.settlementCurrencies)], ["mhtOrderAmt", String(int(1...99_999_999))],
            ["mhtAmtCurrFlag", pick(["0", "1"])], ["mhtOrderDetail", text()],
            ["mhtOrderStartTime", "2026\(String(format: "%02d%02d%02d%02d%02d", int(1...12), int(1...28), int(0...23), int(0...59), int(0...59)))"],
            ["notifyUrl", pick(["https://shop.example/notify", "http://localhost:10802/", "https://例子.example/回调?a=1&b=2", "https://s.example/n?x=a+b%20c"])],
            ["mhtCharset", "UTF-8"], ["payChannelType", pick(["90", "80"])],
        ]
        let optional: [(String, String)] = [
            ("mhtOrderTimeOut", String(int(60...3600))), ("mhtReserved", "k=v&x=\(int(0...99))&y=a+b%3D \(text())"),
            ("consumerId", "cid-\(int(1...999))"), ("consumerName", "张三 Zhang"),
        ]
        for (name, value) in optional {
            switch int(0...2) {
            case 0: break
            case 1: fields.append([name, ""])
            default: fields.append([name, value])
            }
        }
        if chance(50) { fields.append(["mhtReserved2", text()]) }
        let excluded: [[String]] = [["funcode", "WP001"], ["deviceType", pick(["01", "0600", "06", "02"])], ["mhtSignType", "MD5"],
                                    ["detail", "{\"goods_detail\":[{\"goods_name\":\"茶\",\"quantity\":1}]}"], ["version", "1.0"],
                                    ["mhtSignature", alphanumeric(32)]]
        for field in excluded where chance(40) { fields.append(field) }
        // Shuffled: both sides sort.
        for index in fields.indices.reversed() {
            fields.swapAt(index, int(0...index))
        }
        return (appId, appKey, fields)
    }

    /// An order Till's appendix A check accepts.
    mutating func order() -> IPayNowOrder {
        // No spaces: Till refuses them in an order (the plugin strips them before sending).
        let safe = ["测试商品", "绿茶", "green-tea", "+", "%", "100%", "a+b", "!@#", "Zoë", "🙂", "~", "*"]
        func label(_ random: inout IPayNowGenerator) -> String {
            String((0..<random.int(1...3)).map { _ in random.pick(safe) }.joined().prefix(40))
        }
        let name = label(&self)
        let detail = label(&self)
        return IPayNowOrder(appId: String(int(1_000_000_000_000_000...9_999_999_999_999_999)), mhtOrderNo: alphanumeric(int(1...40)),
                            mhtOrderName: name,
                            mhtCurrencyType: pick(IPayNowCodes.settlementCurrencies), mhtOrderAmt: Int64(int(1...99_999_999)),
                            mhtAmtCurrFlag: pick(IPayNowCodes.AmountCurrency.allCases), mhtOrderDetail: detail,
                            mhtOrderTimeOut: chance(50) ? int(60...3600) : nil,
                            mhtOrderStartTime: "2026\(String(format: "%02d%02d%02d%02d%02d", int(1...12), int(1...28), int(0...23), int(0...59), int(0...59)))",
                            notifyUrl: pick(["https://shop.example/notify", "http://localhost:10802/", "https://s.example/n/a+b%20c~"]),
                            payChannelType: pick(IPayNowCodes.Channel.allCases),
                            mhtReserved: chance(50) ? pick(["a=1&b=2*", "k=v&x=y", "reserved备注100%", ""]) : nil,
                            consumerId: chance(30) ? "cid-\(int(1...999))" : nil, consumerName: chance(30) ? "张三" : nil)
    }

    /// An MQ001 field set: the three signed fields, the two left out, now and then others.
    mutating func queryFieldSet() -> (appId: String, appKey: String, fields: [[String]]) {
        let appId = String(int(1_000_000_000_000_000...9_999_999_999_999_999))
        let appKey = alphanumeric(32)
        var fields: [[String]] = [["funcode", "MQ001"], ["appId", appId], ["mhtOrderNo", alphanumeric(int(1...40))],
                                  ["mhtCharset", "UTF-8"], ["mhtSignType", "MD5"]]
        if chance(30) { fields.append(["mhtSignature", alphanumeric(32)]) }
        if chance(30) { fields.append(["mhtReserved", text()]) }
        if chance(20) { fields.append(["mhtCharset2", ""]) }
        for index in fields.indices.reversed() {
            fields.swapAt(index, int(0...index))
        }
        return (appId, appKey, fields)
    }
}
