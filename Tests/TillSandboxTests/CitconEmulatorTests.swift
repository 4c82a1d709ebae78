import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Harness

/// A sandbox with a Citcon emulator, and a client that talks to it over real HTTP.
struct CitconHarness {
    static let formMerchant = CitconEmulator.Merchant(apiKey: "ck_sandbox_form_0001", apiSecret: "form-merchant secret")
    static let jsonMerchant = CitconEmulator.Merchant(apiKey: "ck_sandbox_json_0002", apiSecret: "json-merchant secret",
                                                      wechatAppID: "wxjsonmerchant", ipnFormat: .json)

    static let successURL = "https://shop.example/citcon/success?order=42"
    static let failURL = "https://shop.example/citcon/fail"
    static let cancelURL = "myshop://citcon/cancel"

    let emulator: CitconEmulator
    let sandbox: RunningSandbox
    let session: URLSession

    /// Runs `body` with a started harness, and stops it afterwards whatever happens.
    static func with<T>(tokenLifetime: Duration = .seconds(3600), ipnRetryInterval: Duration = .milliseconds(20),
                        ipnMaxAttempts: Int = 3, timeoutHold: Duration = .milliseconds(300),
                        now: @escaping @Sendable () -> Date = { Date() },
                        _ body: (CitconHarness) async throws -> T) async throws -> T {
        let harness = try await start(tokenLifetime: tokenLifetime, ipnRetryInterval: ipnRetryInterval,
                                      ipnMaxAttempts: ipnMaxAttempts, timeoutHold: timeoutHold, now: now)
        do {
            let result = try await body(harness)
            await harness.stop()
            return result
        } catch {
            await harness.stop()
            throw error
        }
    }

    static func start(tokenLifetime: Duration = .seconds(3600), ipnRetryInterval: Duration = .milliseconds(20),
                      ipnMaxAttempts: Int = 3, timeoutHold: Duration = .milliseconds(300),
                      now: @escaping @Sendable () -> Date = { Date() }) async throws -> CitconHarness {
        let emulator = CitconEmulator(merchants: [formMerchant, jsonMerchant], tokenLifetime: tokenLifetime,
                                      ipnRetryInterval: ipnRetryInterval, ipnMaxAttempts: ipnMaxAttempts,
                                      ipnTimeout: .seconds(2), timeoutHold: timeoutHold, now: now)
        let payFort = PayFortEmulator(merchants: [PayFortHarness.sha256Merchant])
        let sandbox = try await Sandbox.start(payFort: payFort, citcon: emulator)
        return CitconHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
    }

    func stop() async {
        await emulator.waitForNotifications()
        await sandbox.stop()
        session.finishTasksAndInvalidate()
    }

    // MARK: Calls

    func url(_ path: String) -> URL {
        sandbox.citconBaseURL.appendingPathComponent(path)
    }

    /// Calls the API: `path` is relative to `/citcon/v1`.
    func call(_ method: String = "POST", _ path: String, bearer: String?, body: String? = nil,
              session: URLSession? = nil) async throws -> CitconResult {
        var request = URLRequest(url: url(path))
        request.httpMethod = method
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try CitconResult(try await send(request, session: session))
    }

    func call(_ path: String, bearer: String?, json: JSONValue, session: URLSession? = nil) async throws -> CitconResult {
        try await call("POST", path, bearer: bearer, body: json.serialized, session: session)
    }

    func send(_ request: URLRequest, session: URLSession? = nil) async throws -> RawResponse {
        try await exchange(request, on: session ?? self.session)
    }

    func post(absolute url: URL, body: String, contentType: String = "application/json") async throws -> RawResponse {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        return try await send(request)
    }

    func get(absolute url: URL) async throws -> RawResponse {
        try await send(URLRequest(url: url))
    }

    func admin(_ path: String) -> URL {
        sandbox.baseURL.appendingPathComponent("admin/citcon").appendingPathComponent(path)
    }

    // MARK: Flows

    func token(_ type: String = "server", merchant: CitconEmulator.Merchant = formMerchant) async throws -> String {
        let result = try await call("access-tokens", bearer: merchant.apiKey,
                                    json: .object([.init(key: "token_type", value: .string(type))]))
        #expect(result.status == 200, "\(result.raw.text)")
        return try #require(result.data?["access_token"]?.stringValue)
    }

    /// A valid charge request for `method`.
    static func chargeRequest(method: String, reference: String = newReference(), amount: Int64 = 1999,
                              autoCapture: Bool? = nil, ipn: URL? = nil) -> JSONValue {
        var transaction: [JSONValue.Member] = [
            .init(key: "reference", value: .string(reference)), .init(key: "amount", value: .number(String(amount))),
            .init(key: "currency", value: "USD"), .init(key: "country", value: "US"), .init(key: "note", value: "order 42"),
        ]
        if let autoCapture { transaction.append(.init(key: "auto_capture", value: .bool(autoCapture))) }
        var urls: [JSONValue.Member] = [
            .init(key: "success", value: .string(successURL)), .init(key: "fail", value: .string(failURL)),
            .init(key: "cancel", value: .string(cancelURL)),
        ]
        if let ipn { urls.insert(.init(key: "ipn", value: .string(ipn.absoluteString)), at: 0) }
        return .object([
            .init(key: "transaction", value: .object(transaction)),
            .init(key: "payment", value: .object([
                .init(key: "method", value: .string(method)), .init(key: "client", value: .array(["mobile_native"])),
            ])),
            .init(key: "urls", value: .object(urls)),
            .init(key: "scheme", value: "myshop"),
            .init(key: "universal_link", value: "https://shop.example.com/till/return"),
        ])
    }

    /// Creates a charge and returns its `data`.
    func charge(_ request: JSONValue, token: String) async throws -> JSONValue {
        let result = try await call("charges", bearer: token, json: request)
        #expect(result.status == 200, "\(result.raw.text)")
        return try #require(result.data)
    }

    func charge(method: String, autoCapture: Bool? = nil, ipn: URL? = nil, token: String) async throws -> JSONValue {
        try await charge(Self.chargeRequest(method: method, autoCapture: autoCapture, ipn: ipn), token: token)
    }

    func inquire(_ id: String, token: String) async throws -> CitconResult {
        try await call("GET", "transactions/\(id)", bearer: token)
    }

    func status(_ id: String, token: String) async throws -> String? {
        try await inquire(id, token: token).data?["status"]?.stringValue
    }

    static func pageURL(_ charge: JSONValue) -> URL? {
        guard case .array(let entries)? = charge["payment"]?["client"] else { return nil }
        return entries.first { $0["type"] == "url" }?["content"]?["url"]?.stringValue.flatMap(URL.init(string:))
    }

    static func nativeContent(_ charge: JSONValue) -> [String: String]? {
        guard case .array(let entries)? = charge["payment"]?["client"],
              let members = entries.first(where: { $0["type"] == "native" })?["content"]?.objectMembers else { return nil }
        return Dictionary(members.map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
    }

    func walletURL(_ method: String) -> URL {
        sandbox.baseURL.appendingPathComponent("citcon/wallet/\(method)/pay")
    }

    static func newReference() -> String {
        "ref-" + UUID().uuidString.lowercased()
    }
}

/// An API answer: the envelope, parsed.
struct CitconResult {
    var status: Int
    var envelope: JSONValue
    var raw: RawResponse

    init(_ raw: RawResponse) throws {
        self.raw = raw
        status = raw.status
        envelope = try JSONValue.parse(Array(raw.body))
    }

    var data: JSONValue? { envelope["data"] }
    var code: String? { data?["code"]?.stringValue }
    var message: String? { data?["message"]?.stringValue }
}

extension JSONValue {
    /// A copy with the member at `path` replaced (nil removes it); objects on the way are created.
    func setting(_ path: String, to value: JSONValue?) -> JSONValue {
        setting(path.split(separator: ".").map(String.init)[...], to: value)
    }

    private func setting(_ path: ArraySlice<String>, to value: JSONValue?) -> JSONValue {
        guard let key = path.first else { return value ?? .null }
        var members = objectMembers ?? []
        let index = members.firstIndex { $0.key == key }
        let rest = path.dropFirst()
        let newValue: JSONValue? = rest.isEmpty ? value : (index.map { members[$0].value } ?? .object([])).setting(rest, to: value)
        switch (index, newValue) {
        case (let index?, let newValue?): members[index].value = newValue
        case (let index?, nil): members.remove(at: index)
        case (nil, let newValue?): members.append(.init(key: key, value: newValue))
        case (nil, nil): break
        }
        return .object(members)
    }

    /// The flat values of an IPN (JSON numbers as written).
    var flatValues: [String: String] {
        Dictionary((objectMembers ?? []).map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
    }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }
}

struct CitconVectorsUnavailable: Error {}

// MARK: - Signature

@Suite("Citcon emulator: IPN signature")
struct CitconSignatureTests {
    /// Citcon's official vectors: the fixture beside this file (the emulator's own copy).
    static let vectorsURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/citcon-vectors.json")

    @Test("the official vector: string to sign and sign")
    func officialVector() throws {
        guard FileManager.default.fileExists(atPath: Self.vectorsURL.path) else {
            Issue.record("Citcon vectors are missing: expected \(Self.vectorsURL.path)")
            throw CitconVectorsUnavailable()
        }
        let document = try JSONValue.parse([UInt8](Data(contentsOf: Self.vectorsURL)))
        guard case .array(let vectors)? = document["official_vectors"], !vectors.isEmpty else {
            Issue.record("no official_vectors")
            throw CitconVectorsUnavailable()
        }
        for vector in vectors {
            let post = try #require(vector["ipn_post"])
            let secret = try #require(vector["secret"]?.stringValue)
            let values = post.flatValues
            #expect(CitconEmulator.IPNSignature.stringToSign(values, secret: secret) == vector["expected_string"]?.stringValue)
            let sign = CitconEmulator.IPNSignature.sign(values, secret: secret)
            #expect(sign == vector["expected_sign"]?.stringValue)
            #expect(sign == values["sign"])
            #expect(CitconEmulator.IPNSignature.verify(values, secret: secret))
            var upper = values
            upper["sign"] = sign.uppercased()
            #expect(CitconEmulator.IPNSignature.verify(upper, secret: secret))
            var tampered = values
            tampered["amount"] = "101"
            #expect(!CitconEmulator.IPNSignature.verify(tampered, secret: secret))
            #expect(!CitconEmulator.IPNSignature.verify(values, secret: secret + "x"))
        }
    }

    @Test("only the listed fields are signed; a missing one signs as empty")
    func listedFieldsOnly() {
        let values = ["id": "1", "amount": "5", "fields": "id,amount,status", "extra": "not signed"]
        #expect(CitconEmulator.IPNSignature.stringToSign(values, secret: "s") == "amount=5&fields=id,amount,status&id=1&status=&secret=s")
    }

    @Test("ISO-8601 times as in the IPN document", arguments: [
        (Int64(1_628_934_463_000), "2021-08-14T09:47:43.000Z"), (Int64(1_626_427_424_000), "2021-07-16T09:23:44.000Z"),
        (Int64(0), "1970-01-01T00:00:00.000Z"), (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"), (Int64(4_102_444_800_000), "2100-01-01T00:00:00.000Z"),
    ])
    func iso8601(millis: Int64, text: String) {
        #expect(CitconEmulator.iso8601(millis: millis) == text)
    }

    @Test func merchantDescriptionHidesSecrets() {
        let merchant = CitconEmulator.Merchant(apiKey: "KEY-SECRET-abcd", apiSecret: "API-SECRET")
        for text in [merchant.description, merchant.debugDescription, "\(merchant)"] {
            #expect(!text.contains("SECRET"))
        }
        #expect(merchant.wechatAppID == "wxsandbox0001")
        #expect(merchant.ipnFormat == .form)
    }
}

// MARK: - API

@Suite("Citcon emulator: access tokens and the API")
struct CitconAPITests {
    @Test func baseURL() async throws {
        try await CitconHarness.with { harness in
            #expect(harness.sandbox.citconBaseURL.absoluteString == harness.sandbox.baseURL.absoluteString + "/citcon/v1")
        }
    }

    @Test("access tokens: permissions and expiry per type")
    func tokens() async throws {
        try await CitconHarness.with { harness in
            let before = Int64(Date().timeIntervalSince1970)
            for (type, permissions) in [("server", ["charge", "inquire", "refund", "capture", "cancel"]),
                                        ("client", ["charge", "inquire"])] {
                let result = try await harness.call("access-tokens", bearer: CitconHarness.formMerchant.apiKey,
                                                    json: .object([.init(key: "token_type", value: .string(type))]))
                #expect(result.status == 200)
                #expect(result.envelope["status"] == "success")
                #expect(result.envelope["app"] == "upi")
                #expect(result.envelope["version"] == "v1")
                #expect(result.data?["token_type"] == .string(type))
                #expect(result.data?["permissions"] == .array(permissions.map(JSONValue.string)))
                #expect((result.data?["access_token"]?.stringValue?.count ?? 0) >= 32)
                let expiry = try #require(result.data?["expiry"].flatMap { Int64($0.parameterText) })
                #expect(abs(expiry - (before + 3600)) <= 5)
            }
        }
    }

    @Test("access tokens: unknown key 4010, bad token_type 4001")
    func tokenRefusals() async throws {
        try await CitconHarness.with { harness in
            let body = JSONValue.object([.init(key: "token_type", value: "server")])
            for bearer in ["nope", nil] {
                let result = try await harness.call("access-tokens", bearer: bearer, json: body)
                #expect(result.status == 401)
                #expect(result.envelope["status"] == "fail")
                #expect(result.code == "4010")
            }
            // An access token is not a merchant key.
            let token = try await harness.token()
            #expect(try await harness.call("access-tokens", bearer: token, json: body).code == "4010")
            for bad in [JSONValue.object([.init(key: "token_type", value: "admin")]), .object([]),
                        .object([.init(key: "token_type", value: .number("1"))])] {
                let result = try await harness.call("access-tokens", bearer: CitconHarness.formMerchant.apiKey, json: bad)
                #expect(result.status == 400)
                #expect(result.code == "4001")
                #expect(result.message?.hasPrefix("token_type:") == true, "\(result.message ?? "")")
            }
            let notJSON = try await harness.call("POST", "access-tokens", bearer: CitconHarness.formMerchant.apiKey, body: "{")
            #expect(notJSON.code == "4001")
            #expect(notJSON.message?.hasPrefix("body:") == true)
        }
    }

    @Test("a client token charges and inquires, but may not refund, capture or cancel")
    func clientTokenPermissions() async throws {
        try await CitconHarness.with { harness in
            let client = try await harness.token("client")
            let charge = try await harness.charge(method: "card", token: client)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.status(id, token: client) == "pending")
            for (path, body) in [("refunds", #"{"transaction_id":"\#(id)","amount":1}"#),
                                 ("captures", #"{"transaction_id":"\#(id)","amount":1}"#),
                                 ("cancels", #"{"transaction_id":"\#(id)"}"#)] {
                let result = try await harness.call("POST", path, bearer: client, body: body)
                #expect(result.status == 403, "\(path)")
                #expect(result.code == "4030")
            }
            // The merchant key is not an access token.
            let keyed = try await harness.call("charges", bearer: CitconHarness.formMerchant.apiKey,
                                               json: CitconHarness.chargeRequest(method: "card"))
            #expect(keyed.status == 401)
            #expect(keyed.code == "4010")
            #expect(try await harness.inquire(id, token: "unknown").code == "4010")
        }
    }

    @Test("a token expires after its lifetime: 401 4010")
    func tokenExpiry() async throws {
        let clock = TestClock()
        try await CitconHarness.with(tokenLifetime: .seconds(60), now: { clock.now }) { harness in
            let token = try await harness.token()
            _ = try await harness.charge(method: "paypal", token: token)
            clock.advance(by: 61)
            let result = try await harness.call("charges", bearer: token, json: CitconHarness.chargeRequest(method: "paypal"))
            #expect(result.status == 401)
            #expect(result.code == "4010")
            let fresh = try await harness.token()
            _ = try await harness.charge(method: "paypal", token: fresh)
        }
    }

    // MARK: Charges

    @Test("a charge: id, status, token, time, and payment.client per method", arguments: [
        "wechatpay", "alipay", "alipay_hk", "alipayplus", "unionpay", "paypal", "venmo", "card", "toss", "fomo", "gcash",
        "dana", "kakaopay",
    ])
    func chargeShape(method: String) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token("client")
            let reference = CitconHarness.newReference()
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let result = try await harness.call("charges", bearer: token,
                                                json: CitconHarness.chargeRequest(method: method, reference: reference))
            #expect(result.status == 200)
            let data = try #require(result.data)
            #expect(data.objectMembers?.map(\.key) == ["object", "id", "reference", "amount", "currency", "country",
                                                       "auto_capture", "status", "time_created", "charge_token", "payment"])
            let id = try #require(data["id"]?.stringValue)
            #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(data["object"] == "charge")
            #expect(data["reference"] == .string(reference))
            #expect(data["amount"] == .number("1999"))
            #expect(data["currency"] == "USD")
            #expect(data["country"] == "US")
            #expect(data["auto_capture"] == .bool(false))
            #expect(data["status"] == "pending")
            #expect(data["charge_token"]?.stringValue?.isEmpty == false)
            let created = try #require(data["time_created"].flatMap { Int64($0.parameterText) })
            #expect(created >= before - 1000 && created <= before + 60_000)
            #expect(data["payment"]?["method"] == .string(method))
            guard case .array(let entries)? = data["payment"]?["client"] else {
                Issue.record("no payment.client")
                return
            }
            let page = harness.sandbox.baseURL.absoluteString + "/citcon/h5/" + id
            #expect(entries.last == .object([.init(key: "type", value: "url"),
                                             .init(key: "content", value: .object([.init(key: "url", value: .string(page))]))]))
            let native = CitconHarness.nativeContent(data)
            switch method {
            case "wechatpay":
                #expect(entries.count == 2)
                #expect(entries.first?["content"]?.objectMembers?.map(\.key)
                    == ["appid", "partnerid", "package", "noncestr", "timestamp", "prepayid", "sign"])
                #expect(native?["appid"] == CitconHarness.formMerchant.wechatAppID)
                #expect(native?["partnerid"] == CitconHarness.formMerchant.wechatPartnerID)
                #expect(native?["package"] == "Sign=WXPay")
                #expect(native?["prepayid"]?.hasPrefix("wx") == true)
                #expect(native?["timestamp"] == String(created / 1000))
                #expect(native?["sign"]?.count == 64)
            case "alipay":
                #expect(entries.count == 2)
                #expect(native?.keys.sorted() == ["orderSpec", "signedString"])
                #expect(native?["orderSpec"]?.contains("out_trade_no=\"\(id)\"") == true)
                #expect(native?["orderSpec"]?.contains("total_fee=\"19.99\"") == true)
            case "unionpay":
                #expect(entries.count == 2)
                #expect(native?["tn"]?.count == 21 && native?["tn"]?.allSatisfy(\.isNumber) == true)
                #expect(native?["mode"] == "00")
            default:
                #expect(entries.count == 1)
                #expect(native == nil)
            }
            // Inquiry: the same charge with its state, without payment.client.
            let inquiry = try await harness.inquire(id, token: token)
            #expect(inquiry.status == 200)
            #expect(inquiry.data?["status"] == "pending")
            #expect(inquiry.data?["amount_captured"] == .null)
            #expect(inquiry.data?["amount_refunded"] == .null)
            #expect(inquiry.data?["time_captured"] == .null)
            #expect(inquiry.data?["time_canceled"] == .null)
            #expect(inquiry.data?["payment"] == .object([.init(key: "method", value: .string(method))]))
            #expect(inquiry.data?["reference"] == .string(reference))
        }
    }

    @Test("unionpay_mode is echoed in the launch content")
    func unionpayMode() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(CitconHarness.chargeRequest(method: "unionpay").setting("unionpay_mode", to: "01"),
                                                  token: token)
            #expect(CitconHarness.nativeContent(charge)?["mode"] == "01")
        }
    }

    struct ValidationCase: Sendable, CustomTestStringConvertible {
        var method = "paypal"
        var path: String
        var value: JSONValue?
        var field: String
        var extra: [String: JSONValue] = [:]
        var testDescription: String { "\(method) \(path) = \(value?.serialized ?? "absent") → \(field)" }
    }

    static let threeDS: [String: JSONValue] = [
        "request_3ds_verification": .bool(true),
        "consumer": .object([
            .init(key: "first_name", value: "Ada"), .init(key: "last_name", value: "Lovelace"),
            .init(key: "phone", value: "5551234567"), .init(key: "email", value: "ada@example.com"),
            .init(key: "billing_address", value: .object([
                .init(key: "street", value: "555 Smith St"), .init(key: "city", value: "Chicago"),
                .init(key: "state", value: "IL"), .init(key: "zip", value: "12345"), .init(key: "country", value: "US"),
            ])),
        ]),
    ]

    static let validationCases: [ValidationCase] = [
        ValidationCase(path: "transaction", value: nil, field: "transaction"),
        ValidationCase(path: "transaction", value: "x", field: "transaction"),
        ValidationCase(path: "transaction.reference", value: nil, field: "transaction.reference"),
        ValidationCase(path: "transaction.reference", value: "", field: "transaction.reference"),
        ValidationCase(path: "transaction.reference", value: .string(String(repeating: "r", count: 65)), field: "transaction.reference"),
        ValidationCase(path: "transaction.reference", value: .number("42"), field: "transaction.reference"),
        ValidationCase(path: "transaction.amount", value: nil, field: "transaction.amount"),
        ValidationCase(path: "transaction.amount", value: .number("0"), field: "transaction.amount"),
        ValidationCase(path: "transaction.amount", value: .number("-5"), field: "transaction.amount"),
        ValidationCase(path: "transaction.amount", value: .number("10.5"), field: "transaction.amount"),
        ValidationCase(path: "transaction.amount", value: .number("1e3"), field: "transaction.amount"),
        ValidationCase(path: "transaction.amount", value: "1999", field: "transaction.amount"),
        ValidationCase(path: "transaction.amount", value: .number("99999999999999999999"), field: "transaction.amount"),
        ValidationCase(path: "transaction.currency", value: nil, field: "transaction.currency"),
        ValidationCase(path: "transaction.currency", value: "usd", field: "transaction.currency"),
        ValidationCase(path: "transaction.currency", value: "XYZ", field: "transaction.currency"),
        ValidationCase(path: "transaction.country", value: nil, field: "transaction.country"),
        ValidationCase(path: "transaction.country", value: "ZZ", field: "transaction.country"),
        ValidationCase(path: "transaction.auto_capture", value: "yes", field: "transaction.auto_capture"),
        ValidationCase(path: "payment", value: nil, field: "payment"),
        ValidationCase(path: "payment.method", value: nil, field: "payment.method"),
        ValidationCase(path: "payment.method", value: "bitcoin", field: "payment.method"),
        ValidationCase(path: "payment.method", value: "WECHATPAY", field: "payment.method"),
        ValidationCase(path: "payment.client", value: nil, field: "payment.client"),
        ValidationCase(path: "payment.client", value: [], field: "payment.client"),
        ValidationCase(path: "payment.client", value: "mobile_native", field: "payment.client"),
        ValidationCase(path: "payment.client", value: [.number("1")], field: "payment.client[0]"),
        ValidationCase(path: "payment.expiry", value: .number("60000"), field: "payment.expiry"),
        ValidationCase(path: "payment.request_token", value: "false", field: "payment.request_token"),
        ValidationCase(path: "urls", value: nil, field: "urls"),
        ValidationCase(path: "urls.success", value: nil, field: "urls.success"),
        ValidationCase(path: "urls.fail", value: "not a url", field: "urls.fail"),
        ValidationCase(path: "urls.cancel", value: "javascript:alert(1)", field: "urls.cancel"),
        ValidationCase(path: "urls.ipn", value: "myshop://ipn", field: "urls.ipn"),
        ValidationCase(method: "alipay", path: "scheme", value: nil, field: "scheme"),
        ValidationCase(path: "scheme", value: "1 bad scheme", field: "scheme"),
        ValidationCase(method: "wechatpay", path: "universal_link", value: nil, field: "universal_link"),
        ValidationCase(method: "wechatpay", path: "universal_link", value: "http://shop.example.com/r", field: "universal_link"),
        ValidationCase(path: "unionpay_mode", value: "02", field: "unionpay_mode"),
        ValidationCase(path: "unionpay_mode", value: .number("0"), field: "unionpay_mode"),
        ValidationCase(path: "request_3ds_verification", value: "yes", field: "request_3ds_verification"),
        ValidationCase(path: "consumer.email", value: "not-an-email", field: "consumer.email"),
        ValidationCase(path: "goods.data", value: [.object([.init(key: "quantity", value: "2")])], field: "goods.data[0].quantity"),
        ValidationCase(path: "installments.id", value: .number("6"), field: "installments.id"),
        ValidationCase(method: "card", path: "consumer", value: nil, field: "consumer", extra: threeDS),
        ValidationCase(method: "card", path: "consumer.email", value: nil, field: "consumer.email", extra: threeDS),
        ValidationCase(method: "card", path: "consumer.phone", value: "", field: "consumer.phone", extra: threeDS),
        ValidationCase(method: "card", path: "consumer.billing_address", value: nil, field: "consumer.billing_address", extra: threeDS),
        ValidationCase(method: "card", path: "consumer.billing_address.zip", value: nil, field: "consumer.billing_address.zip", extra: threeDS),
        ValidationCase(method: "card", path: "payment.billing_address", value: .object([.init(key: "street", value: "1 Main")]),
                       field: "payment.billing_address.city", extra: threeDS),
    ]

    @Test("every validation error is 400 / 4001 naming its field, and creates nothing", arguments: validationCases)
    func validation(_ testCase: ValidationCase) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let reference = CitconHarness.newReference()
            var valid = CitconHarness.chargeRequest(method: testCase.method, reference: reference)
            for (key, value) in testCase.extra { valid = valid.setting(key, to: value) }
            let invalid = valid.setting(testCase.path, to: testCase.value)
            let result = try await harness.call("charges", bearer: token, json: invalid)
            #expect(result.status == 400)
            #expect(result.envelope["status"] == "fail")
            #expect(result.code == "4001")
            let message = result.message ?? ""
            #expect(message.hasPrefix(testCase.field + ": "), "\(message)")
            // Nothing was created: the reference is still free.
            _ = try await harness.charge(valid, token: token)
        }
    }

    @Test("unknown keys are ignored, null counts as absent, and 3-D Secure with full details passes")
    func lenientButTyped() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let request = CitconHarness.chargeRequest(method: "alipay")
                .setting("future_field", to: .object([.init(key: "x", value: .number("1"))]))
                .setting("transaction.unknown", to: "y")
                .setting("consumer", to: .null)
                .setting("unionpay_mode", to: .null)
            _ = try await harness.charge(request, token: token)
            var card = CitconHarness.chargeRequest(method: "card")
            for (key, value) in Self.threeDS { card = card.setting(key, to: value) }
            _ = try await harness.charge(card, token: token)
            // The address may come as payment.billing_address instead.
            let moved = card.setting("payment.billing_address", to: Self.threeDS["consumer"]?["billing_address"])
                .setting("consumer.billing_address", to: nil)
                .setting("transaction.reference", to: .string(CitconHarness.newReference()))
            _ = try await harness.charge(moved, token: token)
            for body in ["{", "[1]", "", "\"x\""] {
                let result = try await harness.call("POST", "charges", bearer: token, body: body)
                #expect(result.status == 400)
                #expect(result.message?.hasPrefix("body: ") == true)
            }
        }
    }

    @Test("a reused reference is 400 / 4000 duplicate request; nothing new is created")
    func duplicateReference() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let request = CitconHarness.chargeRequest(method: "wechatpay")
            let first = try await harness.charge(request, token: token)
            let again = try await harness.call("charges", bearer: token,
                                               json: request.setting("payment.method", to: "paypal"))
            #expect(again.status == 400)
            #expect(again.code == "4000")
            #expect(again.message == "duplicate request")
            #expect(await harness.emulator.charges.count == 1)
            #expect(first["status"] == "pending")
            // Another merchant may use the same reference.
            let other = try await harness.token(merchant: CitconHarness.jsonMerchant)
            _ = try await harness.charge(request, token: other)
        }
    }

    @Test("inquiry: unknown id and another merchant's charge are 404 / 4040")
    func inquiryNotFound() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let id = try #require(try await harness.charge(method: "toss", token: token)["id"]?.stringValue)
            let missing = try await harness.inquire(String(repeating: "0", count: 32), token: token)
            #expect(missing.status == 404)
            #expect(missing.code == "4040")
            let other = try await harness.token("client", merchant: CitconHarness.jsonMerchant)
            let foreign = try await harness.inquire(id, token: other)
            #expect(foreign.status == 404)
            #expect(foreign.code == "4040")
            let refund = try await harness.call("POST", "refunds", bearer: try await harness.token(merchant: CitconHarness.jsonMerchant),
                                                body: #"{"transaction_id":"\#(id)","amount":1}"#)
            #expect(refund.code == "4040")
        }
    }

    @Test("a pending charge expires at payment.expiry; completing it then goes to the fail URL")
    func expiry() async throws {
        let clock = TestClock()
        try await CitconHarness.with(now: { clock.now }) { harness in
            let token = try await harness.token()
            let expiry = Int64(clock.now.timeIntervalSince1970 * 1000) + 60_000
            let charge = try await harness.charge(CitconHarness.chargeRequest(method: "alipay_hk")
                .setting("payment.expiry", to: .number(String(expiry))), token: token)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.inquire(id, token: token).data?["expiry"] == .number(String(expiry)))
            clock.advance(by: 61)
            #expect(try await harness.status(id, token: token) == "expired")
            let page = try #require(CitconHarness.pageURL(charge))
            let back = try await SandboxBrowser.completeCitconPage(at: page, outcome: "complete")
            #expect(back?.absoluteString == CitconHarness.failURL)
            #expect(try await harness.status(id, token: token) == "expired")
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"transaction_id":"\#(id)"}"#).code == "4001")
        }
    }
}

// MARK: - Customer

@Suite("Citcon emulator: the H5 page and the wallet apps")
struct CitconCustomerTests {
    struct PageCase: Sendable, CustomTestStringConvertible {
        var method: String
        var autoCapture: Bool?
        var outcome: String
        var location: String
        var status: String
        var testDescription: String { "\(method) auto_capture \(autoCapture.map(String.init) ?? "-") \(outcome) → \(status)" }
    }

    static let pageCases: [PageCase] = [
        PageCase(method: "alipay_hk", outcome: "complete", location: CitconHarness.successURL, status: "succeeded"),
        PageCase(method: "alipay_hk", outcome: "fail", location: CitconHarness.failURL, status: "failed"),
        PageCase(method: "alipay_hk", outcome: "cancel", location: CitconHarness.cancelURL, status: "canceled"),
        PageCase(method: "card", outcome: "complete", location: CitconHarness.successURL, status: "authorized"),
        PageCase(method: "paypal", autoCapture: false, outcome: "complete", location: CitconHarness.successURL, status: "authorized"),
        PageCase(method: "venmo", autoCapture: true, outcome: "complete", location: CitconHarness.successURL, status: "succeeded"),
        PageCase(method: "wechatpay", autoCapture: false, outcome: "complete", location: CitconHarness.successURL, status: "succeeded"),
        PageCase(method: "card", outcome: "fail", location: CitconHarness.failURL, status: "failed"),
    ]

    @Test("H5 page: complete, fail, cancel redirect (303) to the URL verbatim and set the status", arguments: pageCases)
    func h5Page(_ testCase: PageCase) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: testCase.method, autoCapture: testCase.autoCapture, token: token)
            let id = try #require(charge["id"]?.stringValue)
            let page = try #require(CitconHarness.pageURL(charge))
            let html = try await harness.get(absolute: page)
            #expect(html.status == 200)
            #expect(html.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(html.text.contains(CitconEmulator.displayName(testCase.method)))
            #expect(html.text.contains("19.99 USD"))
            #expect(html.text.contains("name=\"outcome\" value=\"\(testCase.outcome)\""))

            let raw = try await harness.post(absolute: page.appendingPathComponent("complete"),
                                             body: "outcome=\(testCase.outcome)", contentType: "application/x-www-form-urlencoded")
            #expect(raw.status == 303)
            #expect(raw.headers["location"] == testCase.location)
            let data = try #require(try await harness.inquire(id, token: token).data)
            #expect(data["status"] == .string(testCase.status))
            let paid = testCase.status == "succeeded" || testCase.status == "authorized"
            #expect(await harness.emulator.ledger.map(\.status) == (paid ? [testCase.status] : []))
            if testCase.status == "succeeded", ["card", "paypal", "venmo"].contains(testCase.method) {
                #expect(data["amount_captured"] == .number("1999"))
                #expect(data["time_captured"] != .null)
            } else {
                #expect(data["amount_captured"] == .null)
            }
            if testCase.status == "canceled" { #expect(data["time_canceled"] != .null) }

            // Completing again changes nothing and redirects to the URL of the actual state.
            for outcome in ["complete", "fail", "cancel"] {
                let back = try await SandboxBrowser.completeCitconPage(at: page, outcome: outcome)
                #expect(back?.absoluteString == testCase.location)
            }
            #expect(try await harness.status(id, token: token) == testCase.status)
            #expect(await harness.emulator.ledger.count == (paid ? 1 : 0))
        }
    }

    @Test("H5 page: unknown charge 404, bad outcome 400")
    func h5Refusals() async throws {
        try await CitconHarness.with { harness in
            let unknown = harness.sandbox.baseURL.appendingPathComponent("citcon/h5/\(String(repeating: "a", count: 32))")
            #expect(try await harness.get(absolute: unknown).status == 404)
            #expect(try await SandboxBrowser.completeCitconPage(at: unknown, outcome: "complete") == nil)
            let token = try await harness.token()
            let charge = try await harness.charge(method: "gcash", token: token)
            let page = try #require(CitconHarness.pageURL(charge))
            let bad = try await harness.post(absolute: page.appendingPathComponent("complete"), body: "outcome=steal",
                                             contentType: "application/x-www-form-urlencoded")
            #expect(bad.status == 400)
            #expect(try await harness.status(try #require(charge["id"]?.stringValue), token: token) == "pending")
        }
    }

    struct WalletCase: Sendable, CustomTestStringConvertible {
        var method: String
        var outcome: String
        var location: String
        var status: String
        var testDescription: String { "\(method) \(outcome) → \(location)" }
    }

    static let walletCases: [WalletCase] = [
        WalletCase(method: "wechatpay", outcome: "complete", location: CitconHarness.successURL + "&code=0", status: "succeeded"),
        WalletCase(method: "wechatpay", outcome: "fail", location: CitconHarness.failURL + "?code=-1", status: "failed"),
        WalletCase(method: "wechatpay", outcome: "cancel", location: CitconHarness.cancelURL + "?code=-2", status: "canceled"),
        WalletCase(method: "alipay", outcome: "complete", location: CitconHarness.successURL + "&code=0", status: "succeeded"),
        WalletCase(method: "alipay", outcome: "cancel", location: CitconHarness.cancelURL + "?code=6001", status: "canceled"),
        WalletCase(method: "alipay", outcome: "fail", location: CitconHarness.failURL + "?code=-1", status: "failed"),
        WalletCase(method: "unionpay", outcome: "complete", location: CitconHarness.successURL + "&code=0", status: "succeeded"),
        WalletCase(method: "unionpay", outcome: "cancel", location: CitconHarness.cancelURL + "?code=-2", status: "canceled"),
        WalletCase(method: "unionpay", outcome: "fail", location: CitconHarness.failURL + "?code=-1", status: "failed"),
    ]

    @Test("wallet app: the native content settles the charge and returns with the SDK code", arguments: walletCases)
    func wallet(_ testCase: WalletCase) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: testCase.method, token: token)
            let id = try #require(charge["id"]?.stringValue)
            let content = try #require(CitconHarness.nativeContent(charge))
            let back = try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: testCase.method,
                                                                 content: content, outcome: testCase.outcome)
            #expect(back?.absoluteString == testCase.location)
            #expect(try await harness.status(id, token: token) == testCase.status)
            // Paying again changes nothing; the wallet returns to the actual state.
            let again = try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: testCase.method,
                                                                  content: content, outcome: "complete")
            #expect(again?.absoluteString == testCase.location)
            #expect(await harness.emulator.ledger.count == (testCase.status == "succeeded" ? 1 : 0))
        }
    }

    @Test("wallet app: tampered or foreign content is refused with 400 and settles nothing")
    func walletTampering() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let wechat = try await harness.charge(method: "wechatpay", token: token)
            let alipay = try await harness.charge(method: "alipay", token: token)
            let unionpay = try await harness.charge(method: "unionpay", token: token)
            let wechatContent = try #require(CitconHarness.nativeContent(wechat))
            let alipayContent = try #require(CitconHarness.nativeContent(alipay))
            let unionpayContent = try #require(CitconHarness.nativeContent(unionpay))

            func flip(_ text: String) -> String {
                let last = text.last == "A" ? "B" : "A"
                return String(text.dropLast()) + last
            }
            var badSign = wechatContent
            badSign["sign"] = flip(wechatContent["sign"] ?? "")
            var badNonce = wechatContent
            badNonce["noncestr"] = "tampered"
            var badSigned = alipayContent
            badSigned["signedString"] = flip(alipayContent["signedString"] ?? "")
            var cheaper = alipayContent
            cheaper["orderSpec"] = alipayContent["orderSpec"]?.replacingOccurrences(of: "19.99", with: "0.01")
            var unknownTN = unionpayContent
            unknownTN["tn"] = String(repeating: "9", count: 21)
            let attempts: [(String, [String: String])] = [
                ("wechatpay", badSign), ("wechatpay", badNonce), ("alipay", badSigned), ("alipay", cheaper),
                ("unionpay", unknownTN), ("alipay", wechatContent), ("wechatpay", unionpayContent), ("unionpay", [:]),
            ]
            for (method, content) in attempts {
                var fields = content.mapValues(JSONValue.string)
                fields["outcome"] = "complete"
                let raw = try await harness.post(absolute: harness.walletURL(method), body: JSONValue.sortedObject(fields).serialized)
                #expect(raw.status == 400, "\(method) \(content)")
                #expect(raw.headers["location"] == nil)
                #expect(try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: method,
                                                                   content: content, outcome: "complete") == nil)
            }
            for charge in [wechat, alipay, unionpay] {
                #expect(try await harness.status(try #require(charge["id"]?.stringValue), token: token) == "pending")
            }
            #expect(await harness.emulator.ledger.isEmpty)
            // Bad outcome, not JSON, no such wallet.
            var noOutcome = wechatContent.mapValues(JSONValue.string)
            noOutcome["outcome"] = "steal"
            #expect(try await harness.post(absolute: harness.walletURL("wechatpay"),
                                           body: JSONValue.sortedObject(noOutcome).serialized).status == 400)
            #expect(try await harness.post(absolute: harness.walletURL("wechatpay"), body: "{").status == 400)
            #expect(try await harness.post(absolute: harness.walletURL("paypal"), body: "{}").status == 404)
        }
    }
}

// MARK: - IPN

@Suite("Citcon emulator: IPNs")
struct CitconIPNTests {
    static func parse(_ received: LoopbackReceiver.ReceivedRequest, format: CitconEmulator.Merchant.IPNFormat) throws -> [String: String] {
        switch format {
        case .form: return try #require(received.formFields)
        case .json: return try JSONValue.parse(Array(received.body)).flatValues
        }
    }

    @Test("a form IPN: the contract's fields in order, signed with the API secret")
    func formIPN() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let charge = try await harness.charge(method: "wechatpay", ipn: receiver.url, token: token)
                let id = try #require(charge["id"]?.stringValue)
                let content = try #require(CitconHarness.nativeContent(charge))
                _ = try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: "wechatpay",
                                                              content: content, outcome: "complete")
                await harness.emulator.waitForNotifications()
                let received = await receiver.received()
                #expect(received.count == 1)
                let post = try #require(received.first)
                #expect(post.method == "POST")
                #expect(post.contentType == "application/x-www-form-urlencoded")
                let text = String(decoding: post.body, as: UTF8.self)
                #expect(text.split(separator: "&").map { String($0.split(separator: "=").first ?? "") }
                    == CitconEmulator.ipnFieldNames + ["fields", "sign"])
                let fields = try Self.parse(post, format: .form)
                #expect(fields["id"] == id)
                #expect(fields["transaction_type"] == "charge")
                #expect(fields["reference"] == charge["reference"]?.stringValue)
                #expect(fields["amount"] == "1999")
                #expect(fields["currency"] == "USD")
                #expect(fields["status"] == "success")
                #expect(fields["payment_method"] == "wechatpay")
                #expect(fields["amount_captured"] == "")
                #expect(fields["amount_refunded"] == "")
                #expect(fields["fields"] == "id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded")
                let iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
                #expect(fields["time_completed"]?.wholeMatch(of: iso) != nil)
                #expect(fields["time_created"]?.wholeMatch(of: iso) != nil)
                #expect(CitconEmulator.IPNSignature.verify(fields, secret: CitconHarness.formMerchant.apiSecret))
                #expect(!CitconEmulator.IPNSignature.verify(fields, secret: CitconHarness.jsonMerchant.apiSecret))
                let log = await harness.emulator.notifications
                #expect(log.count == 1)
                #expect(log.first?.body == text)
                #expect(log.first?.status == 200)
                #expect(log.first?.attempt == 1)
                #expect(log.first?.transactionID == id)
                #expect(log.first?.replay == false)
            }
        }
    }

    @Test("a JSON IPN: amounts are numbers, the sign covers them as written")
    func jsonIPN() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token(merchant: CitconHarness.jsonMerchant)
                let charge = try await harness.charge(method: "card", autoCapture: true, ipn: receiver.url, token: token)
                let page = try #require(CitconHarness.pageURL(charge))
                _ = try await SandboxBrowser.completeCitconPage(at: page, outcome: "complete")
                await harness.emulator.waitForNotifications()
                let post = try #require(await receiver.received().first)
                #expect(post.contentType == "application/json")
                let json = try JSONValue.parse(Array(post.body))
                #expect(json.objectMembers?.map(\.key) == CitconEmulator.ipnFieldNames + ["fields", "sign"])
                #expect(json["amount"] == .number("1999"))
                #expect(json["amount_captured"] == .number("1999"))
                #expect(json["amount_refunded"] == "")
                #expect(json["status"] == "success")
                #expect(json["payment_method"] == "card")
                let values = json.flatValues
                #expect(CitconEmulator.IPNSignature.verify(values, secret: CitconHarness.jsonMerchant.apiSecret))
            }
        }
    }

    @Test("IPN statuses: authorized, captured, refund success, cancelled, fail")
    func ipnStatuses() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let card = try await harness.charge(method: "card", ipn: receiver.url, token: token)
                let id = try #require(card["id"]?.stringValue)
                _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(card)), outcome: "complete")
                #expect(try await harness.call("POST", "captures", bearer: token, body: #"{"transaction_id":"\#(id)","amount":1500}"#).status == 200)
                #expect(try await harness.call("POST", "refunds", bearer: token,
                                               body: #"{"transaction_id":"\#(id)","amount":500,"reason":"damaged"}"#).status == 200)
                let cancelled = try await harness.charge(method: "venmo", ipn: receiver.url, token: token)
                let cancelledID = try #require(cancelled["id"]?.stringValue)
                #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"transaction_id":"\#(cancelledID)"}"#).status == 200)
                let failed = try await harness.charge(method: "dana", ipn: receiver.url, token: token)
                _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(failed)), outcome: "fail")
                await harness.emulator.waitForNotifications()
                let posts = try await receiver.received().map { try Self.parse($0, format: .form) }
                let summary = posts.map { [$0["transaction_type"] ?? "", $0["status"] ?? "", $0["amount_captured"] ?? "",
                                           $0["amount_refunded"] ?? ""] }
                #expect(Set(summary.map { $0.joined(separator: " ") }) == [
                    "charge authorized  ", "charge captured 1500 ", "refund success 1500 500", "charge cancelled  ", "charge fail  ",
                ])
                for post in posts {
                    #expect(CitconEmulator.IPNSignature.verify(post, secret: CitconHarness.formMerchant.apiSecret))
                }
                let refund = try #require(posts.first { $0["transaction_type"] == "refund" })
                #expect(refund["id"] == id)
                #expect(refund["amount"] == "1999")
            }
        }
    }

    @Test("an IPN is retried until a 2xx, the configured interval apart")
    func retries() async throws {
        try await withReceiver(answering: [500, 503]) { receiver in
            try await CitconHarness.with(ipnRetryInterval: .milliseconds(100), ipnMaxAttempts: 5) { harness in
                let token = try await harness.token()
                let charge = try await harness.charge(method: "fomo", ipn: receiver.url, token: token)
                let start = ContinuousClock.now
                _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(charge)), outcome: "complete")
                await harness.emulator.waitForNotifications()
                #expect(ContinuousClock.now - start >= .milliseconds(200))
                #expect(await receiver.received().map(\.answeredStatus) == [500, 503, 200])
                let log = await harness.emulator.notifications
                #expect(log.map(\.status) == [500, 503, 200])
                #expect(log.map(\.attempt) == [1, 2, 3])
                #expect(log.map(\.acknowledged) == [false, false, true])
                #expect(Set(log.map(\.body)).count == 1)
            }
        }
    }

    @Test("an IPN gives up after ipnMaxAttempts")
    func givesUp() async throws {
        try await withReceiver(otherwise: 500) { receiver in
            try await CitconHarness.with(ipnMaxAttempts: 3) { harness in
                let token = try await harness.token()
                let charge = try await harness.charge(method: "kakaopay", ipn: receiver.url, token: token)
                _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(charge)), outcome: "cancel")
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().count == 3)
                #expect(await harness.emulator.notifications.map(\.attempt) == [1, 2, 3])
            }
        }
    }

    @Test("redeliver replays the last IPN byte for byte (API and admin route)")
    func redeliver() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token(merchant: CitconHarness.jsonMerchant)
                let charge = try await harness.charge(method: "paypal", autoCapture: true, ipn: receiver.url, token: token)
                let id = try #require(charge["id"]?.stringValue)
                _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(charge)), outcome: "complete")
                await harness.emulator.waitForNotifications()
                let replay = try #require(await harness.emulator.redeliver(ipnOf: id))
                #expect(replay.replay)
                #expect(replay.status == 200)
                let admin = try await harness.post(absolute: harness.admin("ipn/\(id)/redeliver"), body: "")
                #expect(admin.status == 200)
                let attempt = try JSONDecoder().decode(CitconEmulator.IPNAttempt.self, from: admin.body)
                #expect(attempt.replay && attempt.transactionID == id)
                let bodies = await receiver.received().map(\.body)
                #expect(bodies.count == 3)
                #expect(Set(bodies).count == 1)
                #expect(await harness.emulator.notifications.map(\.replay) == [false, true, true])
                #expect(await harness.emulator.redeliver(ipnOf: "nothing") == nil)
                #expect(try await harness.post(absolute: harness.admin("ipn/nothing/redeliver"), body: "").status == 404)
            }
        }
    }

    @Test("held IPNs wait for release; a delay postpones the first try")
    func holdAndDelay() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                await harness.emulator.holdIPNs()
                let first = try await harness.charge(method: "alipayplus", ipn: receiver.url, token: token)
                let back = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(first)), outcome: "complete")
                #expect(back?.absoluteString == CitconHarness.successURL)
                try await Task.sleep(for: .milliseconds(150))
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().isEmpty)
                await harness.emulator.releaseIPNs()
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().count == 1)

                await harness.emulator.setIPNDelay(.milliseconds(400))
                let second = try await harness.charge(method: "alipayplus", ipn: receiver.url, token: token)
                let start = ContinuousClock.now
                _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(second)), outcome: "complete")
                #expect(await receiver.received().count == 1)
                await harness.emulator.waitForNotifications()
                #expect(ContinuousClock.now - start >= .milliseconds(400))
                #expect(await receiver.received().count == 2)
            }
        }
    }

    @Test("no urls.ipn, no IPN")
    func noIPNURL() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "toss", token: token)
            _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(charge)), outcome: "complete")
            await harness.emulator.waitForNotifications()
            #expect(await harness.emulator.notifications.isEmpty)
            #expect(await harness.emulator.ledger.count == 1)
        }
    }
}

// MARK: - Captures, refunds, cancels

@Suite("Citcon emulator: captures, refunds, cancels and the ledger")
struct CitconOperationTests {
    @Test("capture only an authorization, up to its amount; refund only what was paid; the ledger")
    func captureAndRefund() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "card", token: token)
            let id = try #require(charge["id"]?.stringValue)
            func op(_ path: String, _ body: String) async throws -> CitconResult {
                try await harness.call("POST", path, bearer: token, body: body)
            }
            // Pending: nothing to capture or refund.
            #expect(try await op("captures", #"{"transaction_id":"\#(id)","amount":100}"#).message?.hasPrefix("transaction_id: ") == true)
            #expect(try await op("refunds", #"{"transaction_id":"\#(id)","amount":100}"#).message?.hasPrefix("transaction_id: ") == true)
            _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(charge)), outcome: "complete")
            #expect(try await harness.status(id, token: token) == "authorized")
            #expect(try await op("refunds", #"{"transaction_id":"\#(id)","amount":100}"#).code == "4001")

            for (body, field) in [(#"{"transaction_id":"\#(id)","amount":2000}"#, "amount"),
                                  (#"{"transaction_id":"\#(id)","amount":0}"#, "amount"),
                                  (#"{"transaction_id":"\#(id)","amount":"100"}"#, "amount"),
                                  (#"{"transaction_id":"\#(id)"}"#, "amount"),
                                  (#"{"amount":100}"#, "transaction_id"),
                                  (#"{"transaction_id":7,"amount":100}"#, "transaction_id")] {
                let result = try await op("captures", body)
                #expect(result.status == 400)
                #expect(result.code == "4001")
                #expect(result.message?.hasPrefix(field + ": ") == true, "\(body): \(result.message ?? "")")
            }
            let unknown = try await op("captures", #"{"transaction_id":"nope","amount":100}"#)
            #expect(unknown.status == 404)
            #expect(unknown.code == "4040")

            let capture = try await op("captures", #"{"transaction_id":"\#(id)","amount":1500}"#)
            #expect(capture.status == 200)
            let captureData = try #require(capture.data)
            #expect(captureData.objectMembers?.map(\.key) == ["object", "id", "transaction_id", "amount", "currency", "status", "time_created"])
            #expect(captureData["object"] == "capture")
            #expect(captureData["transaction_id"] == .string(id))
            #expect(captureData["amount"] == .number("1500"))
            #expect(captureData["status"] == "succeeded")
            let inquiry = try #require(try await harness.inquire(id, token: token).data)
            #expect(inquiry["status"] == "succeeded")
            #expect(inquiry["amount_captured"] == .number("1500"))
            #expect(inquiry["time_captured"] != .null)
            // One capture per authorization; a captured charge cannot be cancelled.
            #expect(try await op("captures", #"{"transaction_id":"\#(id)","amount":1}"#).code == "4001")
            #expect(try await op("cancels", #"{"transaction_id":"\#(id)"}"#).message?.hasPrefix("transaction_id: ") == true)

            let refund = try await op("refunds", #"{"transaction_id":"\#(id)","amount":1000,"reason":"too big"}"#)
            #expect(refund.status == 200)
            #expect(refund.data?["object"] == "refund")
            #expect(refund.data?["amount"] == .number("1000"))
            let tooMuch = try await op("refunds", #"{"transaction_id":"\#(id)","amount":501}"#)
            #expect(tooMuch.code == "4001")
            #expect(tooMuch.message?.hasPrefix("amount: ") == true)
            #expect(try await op("refunds", #"{"transaction_id":"\#(id)","amount":500}"#).status == 200)
            #expect(try await harness.inquire(id, token: token).data?["amount_refunded"] == .number("1500"))
            #expect(try await op("refunds", #"{"transaction_id":"\#(id)","amount":1}"#).code == "4001")

            let ledger = await harness.emulator.ledger
            #expect(ledger.map(\.operation) == [.charge, .capture, .refund, .refund])
            #expect(ledger.map(\.amountMinor) == [1999, 1500, 1000, 500])
            #expect(ledger.map(\.status) == ["authorized", "succeeded", "succeeded", "succeeded"])
            #expect(ledger.allSatisfy { $0.transactionID == id && $0.currency == "USD" && $0.method == "card" })
            #expect(ledger[1].id == captureData["id"]?.stringValue)
        }
    }

    @Test("a wallet payment refunds up to its amount")
    func walletRefund() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "wechatpay", token: token)
            let id = try #require(charge["id"]?.stringValue)
            _ = try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: "wechatpay",
                                                          content: try #require(CitconHarness.nativeContent(charge)), outcome: "complete")
            #expect(try await harness.call("POST", "refunds", bearer: token, body: #"{"transaction_id":"\#(id)","amount":2000}"#).code == "4001")
            #expect(try await harness.call("POST", "refunds", bearer: token, body: #"{"transaction_id":"\#(id)","amount":1999}"#).status == 200)
            #expect(try await harness.status(id, token: token) == "succeeded")
        }
    }

    @Test("cancel an authorization (released, in the ledger) or a pending charge (nothing moved); not a failed one")
    func cancels() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let authorized = try await harness.charge(method: "paypal", token: token)
            let authorizedID = try #require(authorized["id"]?.stringValue)
            _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(authorized)), outcome: "complete")
            let cancel = try await harness.call("POST", "cancels", bearer: token, body: #"{"transaction_id":"\#(authorizedID)"}"#)
            #expect(cancel.status == 200)
            #expect(cancel.data?["object"] == "cancel")
            #expect(cancel.data?["amount"] == .number("1999"))
            let data = try #require(try await harness.inquire(authorizedID, token: token).data)
            #expect(data["status"] == "canceled")
            #expect(data["time_canceled"] != .null)

            let pending = try await harness.charge(method: "unionpay", token: token)
            let pendingID = try #require(pending["id"]?.stringValue)
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"transaction_id":"\#(pendingID)"}"#).status == 200)
            #expect(try await harness.status(pendingID, token: token) == "canceled")
            // The customer arriving late is sent to the cancel URL; nothing is charged.
            let back = try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: "unionpay",
                                                                 content: try #require(CitconHarness.nativeContent(pending)),
                                                                 outcome: "complete")
            #expect(back?.absoluteString == CitconHarness.cancelURL + "?code=-2")
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"transaction_id":"\#(pendingID)"}"#).code == "4001")

            let failed = try await harness.charge(method: "card", token: token)
            let failedID = try #require(failed["id"]?.stringValue)
            _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(failed)), outcome: "fail")
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"transaction_id":"\#(failedID)"}"#).code == "4001")

            let ledger = await harness.emulator.ledger
            #expect(ledger.map(\.operation) == [.charge, .cancel])
            #expect(ledger.allSatisfy { $0.transactionID == authorizedID })
        }
    }
}

// MARK: - Faults and admin

@Suite("Citcon emulator: faults and admin routes")
struct CitconFaultTests {
    @Test("server_error: 503 / 5000 and not processed; it waits for its path")
    func serverError() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let existing = try #require(try await harness.charge(method: "paypal", token: token)["id"]?.stringValue)
            await harness.emulator.inject(.serverError, path: "charges")
            #expect(try await harness.inquire(existing, token: token).status == 200)
            let request = CitconHarness.chargeRequest(method: "paypal")
            let failed = try await harness.call("charges", bearer: token, json: request)
            #expect(failed.status == 503)
            #expect(failed.envelope["status"] == "fail")
            #expect(failed.code == "5000")
            // Not processed: the reference is still free.
            _ = try await harness.charge(request, token: token)
            #expect(await harness.emulator.charges.count == 2)
        }
    }

    @Test("timeout: processed, held, then 504; a retry with the reference is a duplicate")
    func timeout() async throws {
        try await CitconHarness.with(timeoutHold: .milliseconds(400)) { harness in
            let token = try await harness.token()
            let admin = try await harness.post(absolute: harness.admin("faults"), body: #"{"fault":"timeout","path":"/v1/charges"}"#)
            #expect(admin.status == 200)
            #expect(try JSONValue.parse(Array(admin.body))["path"] == "/v1/charges")
            let request = CitconHarness.chargeRequest(method: "alipay")
            let start = ContinuousClock.now
            var raw = URLRequest(url: harness.url("charges"))
            raw.httpMethod = "POST"
            raw.httpBody = Data(request.serialized.utf8)
            raw.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let answer = try await harness.send(raw)
            #expect(ContinuousClock.now - start >= .milliseconds(400))
            #expect(answer.status == 504)
            #expect(try await harness.call("charges", bearer: token, json: request).code == "4000")
        }
    }

    @Test("drop: processed, the connection closed without an answer")
    func drop() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            await harness.emulator.inject(.dropConnection)
            let request = CitconHarness.chargeRequest(method: "venmo")
            let fresh = PayFortHarness.makeSession()
            defer { fresh.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) {
                _ = try await harness.call("charges", bearer: token, json: request, session: fresh)
            }
            #expect(try await harness.call("charges", bearer: token, json: request).code == "4000")
        }
    }

    @Test("expire_tokens: every token issued so far is refused 401 / 4010; new ones work")
    func expireTokens() async throws {
        try await CitconHarness.with { harness in
            let server = try await harness.token()
            let client = try await harness.token("client")
            let id = try #require(try await harness.charge(method: "card", token: client)["id"]?.stringValue)
            await harness.emulator.inject(.expireTokens, path: "/citcon/v1/transactions")
            let refused = try await harness.inquire(id, token: client)
            #expect(refused.status == 401)
            #expect(refused.code == "4010")
            #expect(try await harness.inquire(id, token: server).code == "4010")
            let fresh = try await harness.token()
            #expect(try await harness.inquire(id, token: fresh).status == 200)
            // The admin route expires them at once.
            let admin = try await harness.post(absolute: harness.admin("tokens/expire"), body: "")
            #expect(admin.status == 200)
            #expect(try JSONValue.parse(Array(admin.body))["expired"] == .number("1"))
            #expect(try await harness.inquire(id, token: fresh).code == "4010")
        }
    }

    @Test("stop() lets a held request go at once")
    func stopReleasesHeldRequests() async throws {
        let harness = try await CitconHarness.start(timeoutHold: .seconds(30))
        let token = try await harness.token()
        await harness.emulator.inject(.timeout)
        let held = Task { try? await harness.call("charges", bearer: token, json: CitconHarness.chargeRequest(method: "card")) }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        await harness.stop()
        #expect(ContinuousClock.now - start < .seconds(10), "a held request (30 s) was let go when the sandbox stopped")
        _ = await held.value
    }

    @Test("admin routes: bad faults refused; ledger and notifications as JSON")
    func adminRoutes() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                #expect(try await harness.post(absolute: harness.admin("faults"), body: #"{"fault":"meltdown"}"#).status == 400)
                #expect(try await harness.post(absolute: harness.admin("faults"), body: "nope").status == 400)
                let token = try await harness.token()
                let charge = try await harness.charge(method: "alipay", ipn: receiver.url, token: token)
                _ = try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: "alipay",
                                                              content: try #require(CitconHarness.nativeContent(charge)),
                                                              outcome: "complete")
                await harness.emulator.waitForNotifications()
                let ledger = try await harness.get(absolute: harness.admin("ledger"))
                #expect(ledger.status == 200)
                let entries = try JSONDecoder().decode([CitconEmulator.LedgerEntry].self, from: ledger.body)
                #expect(entries == (await harness.emulator.ledger))
                #expect(entries.first?.operation == .charge && entries.first?.amountMinor == 1999)
                #expect(ledger.text.contains(#""transaction_id""#))
                let notifications = try await harness.get(absolute: harness.admin("notifications"))
                let attempts = try JSONDecoder().decode([CitconEmulator.IPNAttempt].self, from: notifications.body)
                #expect(attempts == (await harness.emulator.notifications))
                #expect(attempts.count == 1)
            }
        }
    }
}
