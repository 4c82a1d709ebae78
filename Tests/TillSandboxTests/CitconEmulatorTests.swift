import Foundation
import Testing
import Till
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Harness

/// A sandbox with a Citcon emulator, and a client that talks to it over real HTTP.
struct CitconHarness {
    static let jsonMerchant = CitconEmulator.Merchant(apiKey: "ck_sandbox_json_0001", apiSecret: "json-merchant secret")
    static let formMerchant = CitconEmulator.Merchant(apiKey: "ck_sandbox_form_0002", apiSecret: "form-merchant secret",
                                                      wechatAppID: "wxformmerchant", ipnFormat: .form)
    /// The demo servers' merchant key; the same word is the API secret of the IPN document's example.
    static let braintree = CitconEmulator.Merchant(apiKey: "braintree", apiSecret: "braintree")

    static let successURL = "https://shop.example/citcon/success?order=42"
    static let failURL = "https://shop.example/citcon/fail"
    static let cancelURL = "myshop://citcon/cancel"

    let emulator: CitconEmulator
    let sandbox: RunningSandbox
    let session: URLSession

    /// Runs `body` with a started harness, and stops it afterwards whatever happens.
    static func with<T>(tokenLifetime: Duration = .seconds(86_400), timeUnit: CitconEmulator.TimeUnit = .seconds,
                        unknownFields: CitconEmulator.UnknownFields = .ignore,
                        ipnRetryInterval: Duration = .milliseconds(20), ipnMaxAttempts: Int = 3,
                        timeoutHold: Duration = .milliseconds(300), now: @escaping @Sendable () -> Date = { Date() },
                        _ body: (CitconHarness) async throws -> T) async throws -> T {
        let harness = try await start(tokenLifetime: tokenLifetime, timeUnit: timeUnit, unknownFields: unknownFields,
                                      ipnRetryInterval: ipnRetryInterval, ipnMaxAttempts: ipnMaxAttempts,
                                      timeoutHold: timeoutHold, now: now)
        do {
            let result = try await body(harness)
            await harness.stop()
            return result
        } catch {
            await harness.stop()
            throw error
        }
    }

    static func start(tokenLifetime: Duration = .seconds(86_400), timeUnit: CitconEmulator.TimeUnit = .seconds,
                      unknownFields: CitconEmulator.UnknownFields = .ignore,
                      ipnRetryInterval: Duration = .milliseconds(20), ipnMaxAttempts: Int = 3,
                      timeoutHold: Duration = .milliseconds(300),
                      now: @escaping @Sendable () -> Date = { Date() }) async throws -> CitconHarness {
        let emulator = CitconEmulator(merchants: [jsonMerchant, formMerchant, braintree], tokenLifetime: tokenLifetime,
                                      timeUnit: timeUnit, unknownFields: unknownFields, ipnRetryInterval: ipnRetryInterval,
                                      ipnMaxAttempts: ipnMaxAttempts, ipnTimeout: .seconds(2), timeoutHold: timeoutHold, now: now)
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

    func token(_ type: String = "server", merchant: CitconEmulator.Merchant = jsonMerchant) async throws -> String {
        let result = try await call("access-tokens", bearer: merchant.apiKey,
                                    json: .object([.init(key: "token_type", value: .string(type))]))
        #expect(result.status == 200, "\(result.raw.text)")
        return try #require(result.data?["access_token"]?.stringValue)
    }

    /// A charge request in the recorded shape for `method`.
    static func chargeRequest(method: String, reference: String = newReference(), amount: Int64 = 1999,
                              clients: [String] = ["mobile_native", "mobile_browser"], autoCapture: Bool? = nil,
                              ipn: URL? = nil, cancel: Bool = true) -> JSONValue {
        var transaction: [JSONValue.Member] = [
            .init(key: "reference", value: .string(reference)), .init(key: "amount", value: .number(String(amount))),
            .init(key: "currency", value: "USD"), .init(key: "country", value: "US"), .init(key: "note", value: "order 42"),
        ]
        if let autoCapture { transaction.append(.init(key: "auto_capture", value: .bool(autoCapture))) }
        var urls: [JSONValue.Member] = [.init(key: "success", value: .string(successURL)), .init(key: "fail", value: .string(failURL))]
        if cancel { urls.append(.init(key: "cancel", value: .string(cancelURL))) }
        if let ipn { urls.insert(.init(key: "ipn", value: .string(ipn.absoluteString)), at: 0) }
        return .object([
            .init(key: "transaction", value: .object(transaction)),
            .init(key: "payment", value: .object([
                .init(key: "method", value: .string(method)),
                .init(key: "client", value: .array(clients.map(JSONValue.string))),
            ])),
            .init(key: "urls", value: .object(urls)),
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

    static func entries(_ charge: JSONValue) -> [JSONValue] {
        guard case .array(let entries)? = charge["payment"]?["client"] else { return [] }
        return entries
    }

    /// The `content` of the first `redirect` entry (a landing page).
    static func pageURL(_ charge: JSONValue) -> URL? {
        entries(charge).first { $0["format"] == "redirect" }?["content"]?.stringValue.flatMap(URL.init(string:))
    }

    /// The members of the `mobile_native` entry's JSON `content`, as an app hands them to the wallet SDK.
    static func nativeContent(_ charge: JSONValue) -> [String: String]? {
        guard let text = entries(charge).first(where: { $0["client"] == "mobile_native" && $0["format"] == "json" })?["content"]?.stringValue,
              let members = try? JSONValue.parse(text).objectMembers else { return nil }
        return Dictionary(members.map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
    }

    func walletURL(_ wallet: String) -> URL {
        sandbox.baseURL.appendingPathComponent("citcon/wallet/\(wallet)/pay")
    }

    func pay(_ charge: JSONValue, wallet: String, outcome: String = "complete") async throws -> URL? {
        try await SandboxBrowser.payInCitconWallet(sandbox: sandbox.baseURL, method: wallet,
                                                   content: try #require(Self.nativeContent(charge)), outcome: outcome)
    }

    func payOnPage(_ charge: JSONValue, outcome: String = "complete") async throws -> URL? {
        try await SandboxBrowser.completeCitconPage(at: try #require(Self.pageURL(charge)), outcome: outcome)
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

    /// An integer member's value.
    var integer: Int64? {
        if case .number(let text) = self { return Int64(text) }
        return nil
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
        #expect(merchant.ipnFormat == .json)
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

    @Test("access tokens: permission and expiry per type and time unit", arguments: CitconEmulator.TimeUnit.allCases)
    func tokens(unit: CitconEmulator.TimeUnit) async throws {
        try await CitconHarness.with(timeUnit: unit) { harness in
            let before = Int64(Date().timeIntervalSince1970)
            for (type, permission) in [("server", CitconEmulator.serverPermission), ("client", CitconEmulator.clientPermission)] {
                let result = try await harness.call("access-tokens", bearer: CitconHarness.jsonMerchant.apiKey,
                                                    json: .object([.init(key: "token_type", value: .string(type))]))
                #expect(result.status == 200)
                #expect(result.raw.headers["content-type"]?.hasPrefix("application/json") == true)
                #expect(result.envelope.objectMembers?.map(\.key) == ["status", "app", "version", "data"])
                #expect(result.envelope["status"] == "success")
                #expect(result.envelope["app"] == "citcon_upi")
                #expect(result.envelope["version"] == (unit == .seconds ? "v1.0.0" : "v0.1.1"))
                let data = try #require(result.data)
                #expect(data.objectMembers?.map(\.key) == ["access_token", "token_type", "expiry", "permission"])
                #expect(data["token_type"] == .string(type))
                #expect(data["permission"] == .array(permission.map(JSONValue.string)))
                #expect(data["permissions"] == nil)
                let token = try #require(data["access_token"]?.stringValue)
                #expect(token.hasPrefix("UPI_") && token.split(separator: ".").count == 3)
                let expiry = try #require(data["expiry"]?.integer)
                // Issued between `before` and now, valid for a day (a loaded machine may take seconds to answer).
                let after = Int64(Date().timeIntervalSince1970) + 1
                switch unit {
                case .seconds: #expect(expiry >= before + 86_400 - 1 && expiry <= after + 86_400)
                case .milliseconds: #expect(expiry >= (before + 86_400 - 1) * 1000 && expiry <= (after + 86_400) * 1000)
                }
            }
        }
    }

    @Test("access tokens: unknown key 401 / 4010, bad token_type 400 / 4000")
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
                let result = try await harness.call("access-tokens", bearer: CitconHarness.jsonMerchant.apiKey, json: bad)
                #expect(result.status == 400)
                #expect(result.code == "4000")
                #expect(result.message?.hasPrefix("token_type:") == true, "\(result.message ?? "")")
            }
            let notJSON = try await harness.call("POST", "access-tokens", bearer: CitconHarness.jsonMerchant.apiKey, body: "{")
            #expect(notJSON.code == "4000")
            #expect(notJSON.message?.hasPrefix("body:") == true)
        }
    }

    @Test("a client token charges and inquires, but may not refund, capture or cancel")
    func clientTokenPermissions() async throws {
        try await CitconHarness.with { harness in
            let client = try await harness.token("client")
            let charge = try await harness.charge(method: "card", token: client)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.status(id, token: client) == "initiated")
            for (path, body, why) in [("refunds", #"{"id":"\#(id)","reference":"r1","amount":1}"#, "refund permission"),
                                      ("captures", #"{"id":"\#(id)"}"#, "capture permission"),
                                      ("cancels", #"{"id":"\#(id)","reference":"c1"}"#, "server access token")] {
                let result = try await harness.call("POST", path, bearer: client, body: body)
                #expect(result.status == 403, "\(path)")
                #expect(result.code == "4010")
                #expect(result.message?.contains(why) == true, "\(result.message ?? "")")
            }
            // The merchant key is not an access token.
            let keyed = try await harness.call("charges", bearer: CitconHarness.jsonMerchant.apiKey,
                                               json: CitconHarness.chargeRequest(method: "card"))
            #expect(keyed.status == 401)
            #expect(keyed.code == "4010")
            #expect(try await harness.inquire(id, token: "unknown").code == "4010")
        }
    }

    @Test("a token expires after its lifetime: 401 / 4010")
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

    @Test("a charge: the recorded members, status initiated, and payment.client per method", arguments: [
        "wechatpay", "alipay", "upop", "paypal", "venmo", "card", "alipay_hk", "gcash", "dana", "kakaopay", "toss",
    ])
    func chargeShape(method: String) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token("client")
            let reference = CitconHarness.newReference()
            let before = Int64(Date().timeIntervalSince1970)
            let result = try await harness.call("charges", bearer: token,
                                                json: CitconHarness.chargeRequest(method: method, reference: reference))
            #expect(result.status == 200)
            #expect(result.envelope["app"] == "citcon_upi")
            let data = try #require(result.data)
            var keys = ["object", "charge_token", "id", "reference", "amount", "currency", "time_created", "time_captured",
                        "auto_capture", "status", "country", "payment"]
            if method == "paypal" { keys.insert("exchange", at: 11) }
            #expect(data.objectMembers?.map(\.key) == keys)
            let id = try #require(data["id"]?.stringValue)
            #expect(id.count == 22 && id.allSatisfy(\.isNumber))
            let chargeToken = try #require(data["charge_token"]?.stringValue)
            #expect(chargeToken.count == 32 && chargeToken.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(data["object"] == "charge")
            #expect(data["reference"] == .string(reference))
            #expect(data["amount"] == .number("1999"))
            #expect(data["currency"] == "USD")
            #expect(data["country"] == "US")
            #expect(data["status"] == "initiated")
            #expect(data["time_captured"] == .null)
            #expect(data["auto_capture"] == .bool(!CitconEmulator.authorizingMethods.contains(method)))
            let created = try #require(data["time_created"]?.integer)
            #expect(created >= before - 1 && created <= before + 60)
            #expect(data["payment"]?["method"] == .string(method))
            let entries = CitconHarness.entries(data)
            #expect(entries.map { $0["client"]?.stringValue ?? "" } == ["mobile_native", "mobile_browser"])
            for entry in entries {
                #expect(entry.objectMembers?.map(\.key) == ["client", "format", "method", "content"])
                #expect(entry["content"]?.stringValue != nil)
            }
            let page = try #require(CitconHarness.pageURL(data))
            #expect(page.absoluteString.hasPrefix(harness.sandbox.baseURL.absoluteString + "/citcon/landing/v1/landing/"))
            #expect(entries.last?["format"] == "redirect" && entries.last?["method"] == "GET")
            let native = CitconHarness.nativeContent(data)
            switch method {
            case "wechatpay":
                #expect(entries.first?["format"] == "json")
                let text = try #require(entries.first?["content"]?.stringValue)
                #expect(try JSONValue.parse(text).objectMembers?.map(\.key)
                    == ["appid", "partnerid", "package", "noncestr", "timestamp", "prepayid", "sign"])
                #expect(native?["appid"] == CitconHarness.jsonMerchant.wechatAppID)
                #expect(native?["partnerid"] == CitconHarness.jsonMerchant.wechatPartnerID)
                #expect(native?["package"] == "Sign=WXPay")
                #expect(native?["prepayid"]?.hasPrefix("wx") == true)
                #expect(native?["timestamp"] == String(created))
                #expect(native?["sign"]?.count == 64)
            case "alipay":
                #expect(native?.keys.sorted() == ["orderSpec", "signedString"])
                #expect(native?["orderSpec"]?.contains("out_trade_no=\"\(id)\"") == true)
                #expect(native?["orderSpec"]?.contains("total_fee=\"19.99\"") == true)
            case "upop":
                #expect(native?.keys.sorted() == ["tn"])
                #expect(native?["tn"]?.count == 21 && native?["tn"]?.allSatisfy(\.isNumber) == true)
            default:
                // No native wallet: the mobile_native entry is a landing page too.
                #expect(native == nil)
                #expect(entries.first?["format"] == "redirect")
                #expect(entries.first?["content"]?.stringValue?.hasPrefix(harness.sandbox.baseURL.absoluteString) == true)
            }
            // Inquiry: the same charge with its state.
            let inquiry = try await harness.inquire(id, token: token)
            #expect(inquiry.status == 200)
            let state = try #require(inquiry.data)
            #expect(state.objectMembers?.map(\.key) == [
                "id", "object", "amount", "currency", "status", "time_canceled", "expiry", "time_created", "country",
                "reference", "amount_captured", "amount_refunded", "time_captured", "auto_capture", "payment", "exchange",
                "captures", "refunds", "chargebacks",
            ])
            #expect(state["status"] == "initiated")
            #expect(state["amount_captured"] == .null)
            #expect(state["amount_refunded"] == .null)
            #expect(state["time_captured"] == .null)
            #expect(state["time_canceled"] == "")
            #expect(state["expiry"] == .null)
            #expect(state["time_created"] == .number(String(created)))
            #expect(state["payment"]?["method"] == .string(method))
            #expect(state["reference"] == .string(reference))
        }
    }

    @Test("payment.client: one redirect per requested client, then the desktop QR (none for PayPal)")
    func clientEntries() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            func triples(_ method: String, _ clients: [String]) async throws -> [String] {
                let charge = try await harness.charge(CitconHarness.chargeRequest(method: method, clients: clients), token: token)
                let entries = CitconHarness.entries(charge)
                let pages = entries.compactMap { $0["content"]?.stringValue }
                #expect(Set(pages).count == pages.count, "each entry has its own page")
                return entries.map { "\($0["client"]?.stringValue ?? "") \($0["format"]?.stringValue ?? "") \($0["method"]?.stringValue ?? "")" }
            }
            #expect(try await triples("alipay", ["mobile_browser", "desktop"])
                == ["desktop redirect GET", "mobile_browser redirect GET", "desktop qr GET"])
            #expect(try await triples("upop", ["desktop", "mobile_browser"])
                == ["desktop redirect GET", "mobile_browser redirect GET", "desktop qr GET"])
            #expect(try await triples("paypal", ["desktop", "mobile_browser"]) == ["desktop redirect GET", "mobile_browser redirect GET"])
            #expect(try await triples("wechatpay", ["mobile_browser"]) == ["mobile_browser redirect GET"])
            #expect(try await triples("wechatpay", ["mobile_native"]) == ["mobile_native json "])
            #expect(try await triples("alipay", ["desktop", "mobile_native", "desktop"])
                == ["mobile_native json ", "desktop redirect GET", "desktop qr GET"])
        }
    }

    @Test("milliseconds: time_created and the inquiry's times in milliseconds")
    func milliseconds() async throws {
        try await CitconHarness.with(timeUnit: .milliseconds) { harness in
            let token = try await harness.token()
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let charge = try await harness.charge(method: "wechatpay", token: token)
            let created = try #require(charge["time_created"]?.integer)
            #expect(created >= before - 1000 && created <= before + 60_000)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.inquire(id, token: token).envelope["version"] == "v0.1.1")
        }
    }

    struct ValidationCase: Sendable, CustomTestStringConvertible {
        var method = "paypal"
        var path: String
        var value: JSONValue?
        var field: String
        var testDescription: String { "\(method) \(path) = \(value?.serialized ?? "absent") → \(field)" }
    }

    static let validationCases: [ValidationCase] = [
        ValidationCase(path: "transaction", value: nil, field: "transaction"),
        ValidationCase(path: "transaction", value: "x", field: "transaction"),
        ValidationCase(path: "transaction.reference", value: nil, field: "transaction.reference"),
        ValidationCase(path: "transaction.reference", value: "", field: "transaction.reference"),
        ValidationCase(path: "transaction.reference", value: .string(String(repeating: "r", count: 129)), field: "transaction.reference"),
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
        ValidationCase(path: "payment.method", value: nil, field: "payment.method"),
        ValidationCase(path: "payment.method", value: "bitcoin", field: "payment.method"),
        ValidationCase(path: "payment.method", value: "unionpay", field: "payment.method"),
        ValidationCase(path: "payment.method", value: "WECHATPAY", field: "payment.method"),
        ValidationCase(path: "payment.client", value: nil, field: "payment.client"),
        ValidationCase(path: "payment.client", value: [], field: "payment.client"),
        ValidationCase(path: "payment.client", value: "mobile_native", field: "payment.client"),
        ValidationCase(path: "payment.client", value: [.number("1")], field: "payment.client[0]"),
        ValidationCase(path: "payment.client", value: ["mobile_native", "watch"], field: "payment.client[1]"),
        ValidationCase(path: "payment.expiry", value: .number("60000"), field: "payment.expiry"),
        ValidationCase(path: "payment.expiry", value: .number("4102444800000"), field: "payment.expiry"),
        ValidationCase(path: "payment.expiry", value: "tomorrow", field: "payment.expiry"),
        ValidationCase(path: "payment.request_token", value: "false", field: "payment.request_token"),
        ValidationCase(path: "urls.fail", value: "not a url", field: "urls.fail"),
        ValidationCase(path: "urls.cancel", value: "javascript:alert(1)", field: "urls.cancel"),
        ValidationCase(path: "urls.ipn", value: "myshop://ipn", field: "urls.ipn"),
        ValidationCase(path: "urls.success", value: .number("1"), field: "urls.success"),
        ValidationCase(path: "goods.data", value: [.object([.init(key: "quantity", value: "2")])], field: "goods.data[0].quantity"),
        ValidationCase(path: "goods.data", value: [.object([.init(key: "unit_amount", value: .number("2.5"))])],
                       field: "goods.data[0].unit_amount"),
        ValidationCase(path: "consumer.email", value: .number("1"), field: "consumer.email"),
    ]

    @Test("every validation error is 400 / 4000 naming its member, and creates nothing", arguments: validationCases)
    func validation(_ testCase: ValidationCase) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let reference = CitconHarness.newReference()
            let valid = CitconHarness.chargeRequest(method: testCase.method, reference: reference)
            let invalid = valid.setting(testCase.path, to: testCase.value)
            let result = try await harness.call("charges", bearer: token, json: invalid)
            #expect(result.status == 400)
            #expect(result.envelope["status"] == "fail")
            #expect(result.code == "4000")
            let message = result.message ?? ""
            #expect(message.hasPrefix(testCase.field + ": "), "\(message)")
            // Nothing was created: the reference is still free.
            _ = try await harness.charge(valid, token: token)
        }
    }

    @Test("members no source shows are ignored (as the sandbox ignored a client's own), null is absent, 100.0 is 100")
    func unknownMembersIgnored() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let request = CitconHarness.chargeRequest(method: "alipay")
                .setting("scheme", to: "myshop")
                .setting("universal_link", to: "https://shop.example.com/till/return")
                .setting("unionpay_mode", to: "01")
                .setting("request_3ds_verification", to: .bool(true))
                .setting("transaction.unknown", to: "y")
                .setting("transaction.amount", to: .number("1999.00"))
                .setting("consumer", to: .null)
            let charge = try await harness.charge(request, token: token)
            #expect(charge["amount"] == .number("1999"))
            for body in ["{", "[1]", "", "\"x\""] {
                let result = try await harness.call("POST", "charges", bearer: token, body: body)
                #expect(result.status == 400)
                #expect(result.message?.hasPrefix("body: ") == true)
            }
        }
    }

    @Test("unknownFields .refuse: a member no source shows is 400 / 4000 naming it", arguments: [
        ("scheme", JSONValue.string("myshop")), ("universal_link", "https://shop.example.com/r"), ("unionpay_mode", "00"),
        ("request_3ds_verification", .bool(true)), ("transaction.transaction_id", "x"), ("payment.type", "native"),
        ("urls.return", "https://shop.example/r"),
    ])
    func unknownMembersRefused(path: String, value: JSONValue) async throws {
        try await CitconHarness.with(unknownFields: .refuse) { harness in
            let token = try await harness.token()
            let valid = CitconHarness.chargeRequest(method: "wechatpay")
            let result = try await harness.call("charges", bearer: token, json: valid.setting(path, to: value))
            #expect(result.status == 400)
            #expect(result.code == "4000")
            #expect(result.message == "\(path): unknown member")
            // The recorded bodies pass as they are (see CitconWireFixtureTests for every fixture).
            _ = try await harness.charge(valid.setting("transaction.country_accelerator", to: "CN"), token: token)
            let refund = try await harness.call("POST", "refunds", bearer: token, body: #"{"id":"1","reference":"r","amount":1,"reason":"x"}"#)
            #expect(refund.message == "reason: unknown member")
        }
    }

    @Test("a pending charge (WebSDK step 2: no payment object) is created initiated, without payment.client")
    func pendingCharge() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let request = CitconHarness.chargeRequest(method: "paypal").setting("payment", to: nil)
                .setting("transaction.auto_capture", to: .bool(false))
            let charge = try await harness.charge(request, token: token)
            #expect(charge["status"] == "initiated")
            #expect(charge["payment"] == nil)
            #expect(charge["charge_token"]?.stringValue?.count == 32)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.status(id, token: token) == "initiated")
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"id":"\#(id)","reference":"c-\#(id)"}"#).status == 200)
        }
    }

    @Test("the PHP demo's URLs (`*_url` inside transaction) are taken")
    func phpDemoURLs() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let request = CitconHarness.chargeRequest(method: "upop").setting("urls", to: nil)
                    .setting("transaction.urls", to: .object([
                        .init(key: "ipn_url", value: .string(receiver.url.absoluteString)),
                        .init(key: "success_url", value: .string(CitconHarness.successURL)),
                        .init(key: "fail_url", value: .string(CitconHarness.failURL)),
                        .init(key: "mobile_url", value: "https://shop.example/mobile"),
                    ]))
                let charge = try await harness.charge(request, token: token)
                #expect(try await harness.pay(charge, wallet: "upop", outcome: "cancel")?.absoluteString == CitconHarness.failURL + "?code=-2")
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().count == 1)
            }
        }
    }

    @Test("a reused reference is 400 / 4100 duplicate request; nothing new is created")
    func duplicateReference() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let request = CitconHarness.chargeRequest(method: "wechatpay")
            let first = try await harness.charge(request, token: token)
            let again = try await harness.call("charges", bearer: token, json: request.setting("payment.method", to: "paypal"))
            #expect(again.status == 400)
            #expect(again.code == "4100")
            #expect(again.message == "duplicate request")
            #expect(await harness.emulator.charges.count == 1)
            #expect(first["status"] == "initiated")
            // Another merchant may use the same reference.
            let other = try await harness.token(merchant: CitconHarness.formMerchant)
            _ = try await harness.charge(request, token: other)
        }
    }

    @Test("inquiry: unknown id and another merchant's charge are 404 / 4103")
    func inquiryNotFound() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let id = try #require(try await harness.charge(method: "toss", token: token)["id"]?.stringValue)
            let missing = try await harness.inquire(String(repeating: "1", count: 22), token: token)
            #expect(missing.status == 404)
            #expect(missing.code == "4103")
            let other = try await harness.token("client", merchant: CitconHarness.formMerchant)
            let foreign = try await harness.inquire(id, token: other)
            #expect(foreign.status == 404)
            #expect(foreign.code == "4103")
            let refund = try await harness.call("POST", "refunds", bearer: try await harness.token(merchant: CitconHarness.formMerchant),
                                                body: #"{"id":"\#(id)","reference":"r","amount":1}"#)
            #expect(refund.code == "4103")
        }
    }

    @Test("payment.expiry (Unix seconds): an initiated charge expires; completing it then goes to the fail URL")
    func expiry() async throws {
        let clock = TestClock()
        try await CitconHarness.with(now: { clock.now }) { harness in
            let token = try await harness.token()
            let expiry = Int64(clock.now.timeIntervalSince1970) + 60
            let charge = try await harness.charge(CitconHarness.chargeRequest(method: "alipay_hk")
                .setting("payment.expiry", to: .number(String(expiry))), token: token)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.inquire(id, token: token).data?["expiry"] == .number(String(expiry)))
            clock.advance(by: 61)
            #expect(try await harness.status(id, token: token) == "expired")
            #expect(try await harness.payOnPage(charge)?.absoluteString == CitconHarness.failURL)
            #expect(try await harness.status(id, token: token) == "expired")
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"id":"\#(id)","reference":"c"}"#).code == "4000")
            let past = try await harness.call("charges", bearer: token, json: CitconHarness.chargeRequest(method: "gcash")
                .setting("payment.expiry", to: .number(String(expiry - 10))))
            #expect(past.message?.hasPrefix("payment.expiry: already past") == true)
        }
    }
}

// MARK: - Customer

@Suite("Citcon emulator: the landing pages and the wallet apps")
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

    @Test("landing page: complete, fail, cancel redirect (303) to the URL verbatim and set the status", arguments: pageCases)
    func landingPage(_ testCase: PageCase) async throws {
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
            if testCase.status == "succeeded", CitconEmulator.authorizingMethods.contains(testCase.method) {
                #expect(data["amount_captured"] == .number("1999"))
                #expect(data["time_captured"]?.integer != nil)
            } else {
                #expect(data["amount_captured"] == .null)
            }
            if testCase.status == "canceled" { #expect(data["time_canceled"]?.integer != nil) }

            // Completing again changes nothing and redirects to the URL of the actual state.
            for outcome in ["complete", "fail", "cancel"] {
                let back = try await SandboxBrowser.completeCitconPage(at: page, outcome: outcome)
                #expect(back?.absoluteString == testCase.location)
            }
            #expect(try await harness.status(id, token: token) == testCase.status)
            #expect(await harness.emulator.ledger.count == (paid ? 1 : 0))
        }
    }

    @Test("QR page: the desktop qr entry's page settles the charge too")
    func qrPage() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(CitconHarness.chargeRequest(method: "alipay", clients: ["desktop"]), token: token)
            let qr = try #require(CitconHarness.entries(charge).first { $0["format"] == "qr" }?["content"]?.stringValue.flatMap(URL.init(string:)))
            #expect(qr.path.contains("/citcon/landing/v1/qr/"))
            let html = try await harness.get(absolute: qr)
            #expect(html.status == 200 && html.text.contains("id=\"qr\""))
            #expect(try await SandboxBrowser.completeCitconPage(at: qr, outcome: "complete")?.absoluteString == CitconHarness.successURL)
            #expect(try await harness.status(try #require(charge["id"]?.stringValue), token: token) == "succeeded")
        }
    }

    @Test("landing page: unknown page 404, bad outcome 400; no URL on the charge: a result page, no redirect")
    func landingRefusals() async throws {
        try await CitconHarness.with { harness in
            let unknown = harness.sandbox.baseURL.appendingPathComponent("citcon/landing/v1/landing/\(String(repeating: "a", count: 32))")
            #expect(try await harness.get(absolute: unknown).status == 404)
            #expect(try await SandboxBrowser.completeCitconPage(at: unknown, outcome: "complete") == nil)
            let token = try await harness.token()
            let charge = try await harness.charge(method: "gcash", token: token)
            let page = try #require(CitconHarness.pageURL(charge))
            let bad = try await harness.post(absolute: page.appendingPathComponent("complete"), body: "outcome=steal",
                                             contentType: "application/x-www-form-urlencoded")
            #expect(bad.status == 400)
            #expect(try await harness.status(try #require(charge["id"]?.stringValue), token: token) == "initiated")

            let bare = try await harness.charge(CitconHarness.chargeRequest(method: "dana").setting("urls", to: nil), token: token)
            let result = try await harness.post(absolute: try #require(CitconHarness.pageURL(bare)).appendingPathComponent("complete"),
                                                body: "outcome=complete", contentType: "application/x-www-form-urlencoded")
            #expect(result.status == 200)
            #expect(result.headers["location"] == nil)
            #expect(try await harness.status(try #require(bare["id"]?.stringValue), token: token) == "succeeded")
        }
    }

    @Test("a cancel without urls.cancel goes to urls.fail (the recorded charges often have none)")
    func cancelWithoutCancelURL() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(CitconHarness.chargeRequest(method: "alipay", cancel: false), token: token)
            #expect(try await harness.payOnPage(charge, outcome: "cancel")?.absoluteString == CitconHarness.failURL)
            let wallet = try await harness.charge(CitconHarness.chargeRequest(method: "alipay", cancel: false), token: token)
            #expect(try await harness.pay(wallet, wallet: "alipay", outcome: "cancel")?.absoluteString == CitconHarness.failURL + "?code=6001")
        }
    }

    struct WalletCase: Sendable, CustomTestStringConvertible {
        var method: String
        var wallet: String
        var outcome: String
        var location: String
        var status: String
        var testDescription: String { "\(method) in \(wallet) \(outcome) → \(location)" }
    }

    static let walletCases: [WalletCase] = [
        WalletCase(method: "wechatpay", wallet: "wechatpay", outcome: "complete", location: CitconHarness.successURL + "&code=0", status: "succeeded"),
        WalletCase(method: "wechatpay", wallet: "wechat", outcome: "fail", location: CitconHarness.failURL + "?code=-1", status: "failed"),
        WalletCase(method: "wechatpay", wallet: "wechatpay", outcome: "cancel", location: CitconHarness.cancelURL + "?code=-2", status: "canceled"),
        WalletCase(method: "alipay", wallet: "alipay", outcome: "complete", location: CitconHarness.successURL + "&code=0", status: "succeeded"),
        WalletCase(method: "alipay", wallet: "alipay", outcome: "cancel", location: CitconHarness.cancelURL + "?code=6001", status: "canceled"),
        WalletCase(method: "alipay", wallet: "alipay", outcome: "fail", location: CitconHarness.failURL + "?code=-1", status: "failed"),
        WalletCase(method: "upop", wallet: "upop", outcome: "complete", location: CitconHarness.successURL + "&code=0", status: "succeeded"),
        WalletCase(method: "upop", wallet: "unionpay", outcome: "cancel", location: CitconHarness.cancelURL + "?code=-2", status: "canceled"),
        WalletCase(method: "upop", wallet: "upop", outcome: "fail", location: CitconHarness.failURL + "?code=-1", status: "failed"),
    ]

    @Test("wallet app: the mobile_native content settles the charge and returns with the SDK code", arguments: walletCases)
    func wallet(_ testCase: WalletCase) async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: testCase.method, token: token)
            let id = try #require(charge["id"]?.stringValue)
            #expect(try await harness.pay(charge, wallet: testCase.wallet, outcome: testCase.outcome)?.absoluteString == testCase.location)
            #expect(try await harness.status(id, token: token) == testCase.status)
            // Paying again changes nothing; the wallet returns to the actual state.
            #expect(try await harness.pay(charge, wallet: testCase.wallet)?.absoluteString == testCase.location)
            #expect(await harness.emulator.ledger.count == (testCase.status == "succeeded" ? 1 : 0))
        }
    }

    @Test("wallet app: the content string as received is taken too")
    func walletContentString() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "wechatpay", token: token)
            let content = try #require(CitconHarness.entries(charge).first?["content"])
            let body = JSONValue.object([.init(key: "content", value: content), .init(key: "outcome", value: "complete")])
            let raw = try await harness.post(absolute: harness.walletURL("wechatpay"), body: body.serialized)
            #expect(raw.status == 303)
            #expect(raw.headers["location"] == CitconHarness.successURL + "&code=0")
        }
    }

    @Test("wallet app: tampered or foreign content is refused with 400 and settles nothing")
    func walletTampering() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let wechat = try await harness.charge(method: "wechatpay", token: token)
            let alipay = try await harness.charge(method: "alipay", token: token)
            let upop = try await harness.charge(method: "upop", token: token)
            let wechatContent = try #require(CitconHarness.nativeContent(wechat))
            let alipayContent = try #require(CitconHarness.nativeContent(alipay))
            let upopContent = try #require(CitconHarness.nativeContent(upop))

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
            var unknownTN = upopContent
            unknownTN["tn"] = String(repeating: "9", count: 21)
            let attempts: [(String, [String: String])] = [
                ("wechatpay", badSign), ("wechatpay", badNonce), ("alipay", badSigned), ("alipay", cheaper),
                ("upop", unknownTN), ("alipay", wechatContent), ("wechatpay", upopContent), ("upop", [:]),
            ]
            for (wallet, content) in attempts {
                var fields = content.mapValues(JSONValue.string)
                fields["outcome"] = "complete"
                let raw = try await harness.post(absolute: harness.walletURL(wallet), body: JSONValue.sortedObject(fields).serialized)
                #expect(raw.status == 400, "\(wallet) \(content)")
                #expect(raw.headers["location"] == nil)
                #expect(try await SandboxBrowser.payInCitconWallet(sandbox: harness.sandbox.baseURL, method: wallet,
                                                                   content: content, outcome: "complete") == nil)
            }
            for charge in [wechat, alipay, upop] {
                #expect(try await harness.status(try #require(charge["id"]?.stringValue), token: token) == "initiated")
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

    @Test("SandboxCitconCustomer: a WalletLaunch from a mobile_native entry, or the landing page, brings the customer back")
    func simulatedCustomer() async throws {
        try await CitconHarness.with { harness in
            let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
            let token = try await harness.token()
            for (method, viaWallet) in [("upop", true), ("alipay", true), ("wechatpay", true), ("paypal", false)] {
                let expected = try returns.expectReturn()
                let request = CitconHarness.chargeRequest(method: method)
                    .setting("urls.success", to: .string(expected.url.absoluteString))
                let charge = try await harness.charge(request, token: token)
                let customer = SandboxCitconCustomer(sandbox: harness.sandbox.baseURL,
                                                     method: method == "upop" ? .unionPay : PaymentMethod(rawValue: method),
                                                     returns: returns)
                if viaWallet {
                    let wallet = method == "wechatpay" ? "wechat" : method
                    #expect(try await customer.launch(WalletLaunch(wallet: wallet, parameters: try #require(CitconHarness.nativeContent(charge)))) == nil)
                } else {
                    try await customer.open(try #require(CitconHarness.pageURL(charge)), handoff: .browser)
                }
                let result = await returns.wait(for: expected, timeout: .seconds(5))
                guard case .returned(let url) = result else {
                    Issue.record("\(method): no return (\(result))")
                    continue
                }
                #expect(url.absoluteString.hasPrefix(expected.url.absoluteString))
                let id = try #require(charge["id"]?.stringValue)
                #expect(try await harness.status(id, token: token) == (method == "paypal" ? "authorized" : "succeeded"))
            }
        }
    }
}

// MARK: - IPN

@Suite("Citcon emulator: IPNs")
struct CitconIPNTests {
    static func parse(_ received: LoopbackReceiver.ReceivedRequest) throws -> [String: String] {
        if received.contentType == "application/json" { return try JSONValue.parse(Array(received.body)).flatValues }
        return try #require(received.formFields)
    }

    @Test("a JSON IPN (the default): the document's members in order, amounts as numbers, signed with the API secret")
    func jsonIPN() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let charge = try await harness.charge(method: "wechatpay", ipn: receiver.url, token: token)
                let id = try #require(charge["id"]?.stringValue)
                _ = try await harness.pay(charge, wallet: "wechatpay")
                await harness.emulator.waitForNotifications()
                let received = await receiver.received()
                #expect(received.count == 1)
                let post = try #require(received.first)
                #expect(post.method == "POST")
                #expect(post.contentType == "application/json")
                let json = try JSONValue.parse(Array(post.body))
                #expect(json.objectMembers?.map(\.key) == CitconEmulator.ipnFieldNames + ["fields", "sign"])
                #expect(json["id"] == .string(id))
                #expect(json["transaction_type"] == "charge")
                #expect(json["reference"] == charge["reference"])
                #expect(json["amount"] == .number("1999"))
                #expect(json["currency"] == "USD")
                #expect(json["status"] == "success")
                #expect(json["payment_method"] == "wechatpay")
                #expect(json["amount_captured"] == "")
                #expect(json["amount_refunded"] == "")
                #expect(json["fields"] == "id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded")
                let iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
                #expect(json["time_completed"]?.stringValue?.wholeMatch(of: iso) != nil)
                #expect(json["time_created"]?.stringValue?.wholeMatch(of: iso) != nil)
                let values = json.flatValues
                #expect(CitconEmulator.IPNSignature.verify(values, secret: CitconHarness.jsonMerchant.apiSecret))
                #expect(!CitconEmulator.IPNSignature.verify(values, secret: CitconHarness.formMerchant.apiSecret))
                let log = await harness.emulator.notifications
                #expect(log.count == 1)
                #expect(log.first?.body == String(decoding: post.body, as: UTF8.self))
                #expect(log.first?.status == 200)
                #expect(log.first?.attempt == 1)
                #expect(log.first?.transactionID == id)
                #expect(log.first?.replay == false)
            }
        }
    }

    @Test("a form IPN: every value as text, the sign over the same text")
    func formIPN() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token(merchant: CitconHarness.formMerchant)
                let charge = try await harness.charge(method: "card", autoCapture: true, ipn: receiver.url, token: token)
                _ = try await harness.payOnPage(charge)
                await harness.emulator.waitForNotifications()
                let post = try #require(await receiver.received().first)
                #expect(post.contentType == "application/x-www-form-urlencoded")
                let text = String(decoding: post.body, as: UTF8.self)
                #expect(text.split(separator: "&").map { String($0.split(separator: "=").first ?? "") }
                    == CitconEmulator.ipnFieldNames + ["fields", "sign"])
                let fields = try Self.parse(post)
                #expect(fields["amount"] == "1999")
                #expect(fields["amount_captured"] == "1999")
                #expect(fields["amount_refunded"] == "")
                #expect(fields["status"] == "success")
                #expect(fields["payment_method"] == "card")
                #expect(CitconEmulator.IPNSignature.verify(fields, secret: CitconHarness.formMerchant.apiSecret))
            }
        }
    }

    @Test("IPN kinds and statuses: charge authorized, success, cancelled, fail; refund success")
    func ipnStatuses() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let paypal = try await harness.charge(method: "paypal", ipn: receiver.url, token: token)
                _ = try await harness.payOnPage(paypal)
                let wallet = try await harness.charge(method: "alipay", ipn: receiver.url, token: token)
                let walletID = try #require(wallet["id"]?.stringValue)
                _ = try await harness.pay(wallet, wallet: "alipay")
                let refund = try await harness.call("POST", "refunds", bearer: token,
                                                    body: #"{"id":"\#(walletID)","reference":"refund-1","amount":500,"note":"damaged"}"#)
                #expect(refund.status == 200)
                let cancelled = try await harness.charge(method: "venmo", ipn: receiver.url, token: token)
                let cancelledID = try #require(cancelled["id"]?.stringValue)
                #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"id":"\#(cancelledID)","reference":"c1"}"#).status == 200)
                let failed = try await harness.charge(method: "dana", ipn: receiver.url, token: token)
                _ = try await harness.payOnPage(failed, outcome: "fail")
                await harness.emulator.waitForNotifications()
                let posts = try await receiver.received().map { try Self.parse($0) }
                let summary = posts.map { [$0["transaction_type"] ?? "", $0["status"] ?? "", $0["amount"] ?? "",
                                           $0["amount_captured"] ?? "", $0["amount_refunded"] ?? ""].joined(separator: " ") }
                #expect(Set(summary) == [
                    "charge authorized 1999  ", "charge success 1999  ", "refund success 1999  500", "charge cancelled 1999  ",
                    "charge fail 1999  ",
                ])
                for post in posts {
                    #expect(CitconEmulator.IPNSignature.verify(post, secret: CitconHarness.jsonMerchant.apiSecret))
                }
                let refundIPN = try #require(posts.first { $0["transaction_type"] == "refund" })
                // About the refunded charge: its id and reference, the total refunded so far.
                #expect(refundIPN["id"] == walletID)
                #expect(refundIPN["reference"] == wallet["reference"]?.stringValue)
                #expect(refundIPN["amount_refunded"] == "500")
            }
        }
    }

    @Test("chargeback and vault IPNs on demand (API and admin route), with members left out when asked")
    func otherKinds() async throws {
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let charge = try await harness.charge(method: "paypal", autoCapture: true, ipn: receiver.url, token: token)
                let id = try #require(charge["id"]?.stringValue)
                _ = try await harness.payOnPage(charge)
                await harness.emulator.waitForNotifications()
                #expect(await harness.emulator.sendIPN(about: id, transactionType: "chargeback", status: "Notification of Claim"))
                let admin = try await harness.post(absolute: harness.admin("ipn/\(id)/send"),
                                                   body: #"{"transaction_type":"vault","status":"success","omit":["amount","amount_captured","amount_refunded"]}"#)
                #expect(admin.status == 200)
                #expect(try await harness.post(absolute: harness.admin("ipn/nothing/send"),
                                               body: #"{"transaction_type":"vault","status":"x"}"#).status == 404)
                #expect(try await harness.post(absolute: harness.admin("ipn/\(id)/send"), body: "{}").status == 400)
                await harness.emulator.waitForNotifications()
                let posts = try await receiver.received().map { try Self.parse($0) }
                #expect(posts.count == 3)
                let chargeback = try #require(posts.first { $0["transaction_type"] == "chargeback" })
                #expect(chargeback["status"] == "Notification of Claim")
                #expect(chargeback["amount"] == "1999")
                #expect(CitconEmulator.IPNSignature.verify(chargeback, secret: CitconHarness.jsonMerchant.apiSecret))
                let vault = try #require(posts.first { $0["transaction_type"] == "vault" })
                #expect(vault["amount"] == nil)
                #expect(vault["fields"] == "id,transaction_type,reference,currency,status,time_completed,time_created,payment_method")
                #expect(CitconEmulator.IPNSignature.verify(vault, secret: CitconHarness.jsonMerchant.apiSecret))
                #expect(await harness.emulator.ledger.count == 1)
            }
        }
    }

    @Test("an IPN is retried until a 2xx, the configured interval apart")
    func retries() async throws {
        try await withReceiver(answering: [500, 503]) { receiver in
            try await CitconHarness.with(ipnRetryInterval: .milliseconds(100), ipnMaxAttempts: 5) { harness in
                let token = try await harness.token()
                let charge = try await harness.charge(method: "toss", ipn: receiver.url, token: token)
                let start = ContinuousClock.now
                _ = try await harness.payOnPage(charge)
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
                _ = try await harness.payOnPage(charge, outcome: "cancel")
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
                let token = try await harness.token(merchant: CitconHarness.formMerchant)
                let charge = try await harness.charge(method: "paypal", autoCapture: true, ipn: receiver.url, token: token)
                let id = try #require(charge["id"]?.stringValue)
                _ = try await harness.payOnPage(charge)
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
                let first = try await harness.charge(method: "gcash", ipn: receiver.url, token: token)
                #expect(try await harness.payOnPage(first)?.absoluteString == CitconHarness.successURL)
                try await Task.sleep(for: .milliseconds(150))
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().isEmpty)
                await harness.emulator.releaseIPNs()
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().count == 1)

                await harness.emulator.setIPNDelay(.milliseconds(400))
                let second = try await harness.charge(method: "gcash", ipn: receiver.url, token: token)
                let start = ContinuousClock.now
                _ = try await harness.payOnPage(second)
                #expect(await receiver.received().count == 1)
                await harness.emulator.waitForNotifications()
                #expect(ContinuousClock.now - start >= .milliseconds(400))
                #expect(await receiver.received().count == 2)
            }
        }
    }

    @Test("no IPN URL, no IPN")
    func noIPNURL() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "toss", token: token)
            _ = try await harness.payOnPage(charge)
            await harness.emulator.waitForNotifications()
            #expect(await harness.emulator.notifications.isEmpty)
            #expect(await harness.emulator.ledger.count == 1)
        }
    }
}

// MARK: - Refunds, cancels, captures

@Suite("Citcon emulator: refunds, cancels, captures and the ledger")
struct CitconOperationTests {
    @Test("refund: a paid charge, by id, up to what was paid; 406 / 4202 otherwise; the ledger")
    func refunds() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "paypal", autoCapture: true, token: token)
            let id = try #require(charge["id"]?.stringValue)
            func refund(_ body: String) async throws -> CitconResult {
                try await harness.call("POST", "refunds", bearer: token, body: body)
            }
            // Not paid yet: the recorded refusal.
            let early = try await refund(#"{"id":"\#(id)","reference":"r0","amount":100.0}"#)
            #expect(early.status == 406)
            #expect(early.code == "4202")
            #expect(early.message == "refund failed")
            _ = try await harness.payOnPage(charge)
            #expect(try await harness.status(id, token: token) == "succeeded")

            for (body, field) in [(#"{"reference":"r","amount":1}"#, "id"),
                                  (#"{"transaction_id":"\#(id)","reference":"r","amount":1}"#, "id"),
                                  (#"{"id":"\#(id)","amount":1}"#, "reference"),
                                  (#"{"id":"\#(id)","reference":"r"}"#, "amount"),
                                  (#"{"id":"\#(id)","reference":"r","amount":0}"#, "amount"),
                                  (#"{"id":"\#(id)","reference":"r","amount":"100"}"#, "amount"),
                                  (#"{"id":"\#(id)","reference":"r","amount":1.5}"#, "amount"),
                                  (#"{"id":7,"reference":"r","amount":1}"#, "id")] {
                let result = try await refund(body)
                #expect(result.status == 400)
                #expect(result.code == "4000")
                #expect(result.message?.hasPrefix(field + ": ") == true, "\(body): \(result.message ?? "")")
            }
            let first = try await refund(#"{"id":"\#(id)","reference":"r1","amount":1000.0,"note":"too big"}"#)
            #expect(first.status == 200)
            let data = try #require(first.data)
            #expect(data.objectMembers?.map(\.key) == ["id", "object", "reference", "amount", "amount_refunded", "currency",
                                                       "country", "time_created", "payment", "status", "time_completed", "exchange"])
            #expect(data["object"] == "refund")
            #expect(data["id"] != .string(id))
            #expect(data["id"]?.stringValue?.count == 22)
            #expect(data["reference"] == "r1")
            #expect(data["amount"] == .number("1000"))
            #expect(data["amount_refunded"] == .number("1000"))
            #expect(data["status"] == "succeeded")
            #expect(data["payment"] == .object([.init(key: "method", value: "paypal")]))
            #expect(try await refund(#"{"id":"\#(id)","reference":"r1","amount":1}"#).code == "4100")
            #expect(try await refund(#"{"id":"\#(id)","reference":"r2","amount":1000}"#).code == "4202")
            let second = try await refund(#"{"id":"\#(id)","reference":"r3","amount":999}"#)
            #expect(second.data?["amount_refunded"] == .number("1999"))
            let inquiry = try #require(try await harness.inquire(id, token: token).data)
            #expect(inquiry["amount_refunded"] == .number("1999"))
            #expect(inquiry["status"] == "succeeded")
            guard case .array(let listed)? = inquiry["refunds"]?["data"] else {
                Issue.record("no refunds.data")
                return
            }
            #expect(listed.map { $0["reference"]?.stringValue ?? "" } == ["r1", "r3"])
            #expect(try await refund(#"{"id":"\#(id)","reference":"r4","amount":1}"#).code == "4202")

            let ledger = await harness.emulator.ledger
            #expect(ledger.map(\.operation) == [.charge, .refund, .refund])
            #expect(ledger.map(\.amountMinor) == [1999, 1000, 999])
            #expect(ledger.allSatisfy { $0.transactionID == id && $0.currency == "USD" && $0.method == "paypal" })
            #expect(ledger[1].id == data["id"]?.stringValue)
        }
    }

    @Test("capture: not supported (no source shows a capture request): 501 / 5200, nothing moves")
    func captureNotSupported() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let charge = try await harness.charge(method: "paypal", token: token)
            let id = try #require(charge["id"]?.stringValue)
            _ = try await harness.payOnPage(charge)
            let result = try await harness.call("POST", "captures", bearer: token, body: #"{"id":"\#(id)","amount":1999}"#)
            #expect(result.status == 501)
            #expect(result.envelope["status"] == "fail")
            #expect(result.code == "5200")
            #expect(try await harness.status(id, token: token) == "authorized")
            #expect(await harness.emulator.ledger.map(\.operation) == [.charge])
        }
    }

    @Test("cancel: an authorization (released, in the ledger) or an initiated charge (nothing moved); not a paid one")
    func cancels() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let authorized = try await harness.charge(method: "paypal", token: token)
            let authorizedID = try #require(authorized["id"]?.stringValue)
            _ = try await harness.payOnPage(authorized)
            let cancel = try await harness.call("POST", "cancels", bearer: token,
                                                body: #"{"id":"\#(authorizedID)","reference":"cancel-1","transaction_reference":"x"}"#)
            #expect(cancel.status == 200)
            let data = try #require(cancel.data)
            #expect(data.objectMembers?.map(\.key) == ["id", "object", "reference", "amount", "currency", "time_created",
                                                       "country", "payment", "status"])
            #expect(data["id"] == .string(authorizedID))
            #expect(data["object"] == "cancel")
            #expect(data["reference"] == "cancel-1")
            #expect(data["status"] == "canceled")
            let state = try #require(try await harness.inquire(authorizedID, token: token).data)
            #expect(state["status"] == "canceled")
            #expect(state["time_canceled"]?.integer != nil)

            let initiated = try await harness.charge(method: "upop", token: token)
            let initiatedID = try #require(initiated["id"]?.stringValue)
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"id":"\#(initiatedID)","reference":"cancel-2"}"#).status == 200)
            #expect(try await harness.status(initiatedID, token: token) == "canceled")
            // The customer arriving late is sent to the cancel URL; nothing is charged.
            #expect(try await harness.pay(initiated, wallet: "upop")?.absoluteString == CitconHarness.cancelURL + "?code=-2")
            let again = try await harness.call("POST", "cancels", bearer: token, body: #"{"id":"\#(initiatedID)","reference":"cancel-3"}"#)
            #expect(again.status == 400)
            #expect(again.code == "4000")

            let paid = try await harness.charge(method: "wechatpay", token: token)
            let paidID = try #require(paid["id"]?.stringValue)
            _ = try await harness.pay(paid, wallet: "wechatpay")
            #expect(try await harness.call("POST", "cancels", bearer: token, body: #"{"id":"\#(paidID)","reference":"c"}"#).message?.hasPrefix("id: ") == true)
            for (body, field) in [(#"{"reference":"c"}"#, "id"), (#"{"transaction_id":"\#(paidID)","reference":"c"}"#, "id"),
                                  (#"{"id":"\#(paidID)"}"#, "reference")] {
                #expect(try await harness.call("POST", "cancels", bearer: token, body: body).message?.hasPrefix(field + ": ") == true)
            }

            let ledger = await harness.emulator.ledger
            #expect(ledger.map(\.operation) == [.charge, .cancel, .charge])
            #expect(ledger[1].transactionID == authorizedID && ledger[1].status == "canceled")
        }
    }
}

// MARK: - Faults and admin

@Suite("Citcon emulator: faults and admin routes")
struct CitconFaultTests {
    @Test("server_error: 500 / 5100 and not processed; it waits for its path")
    func serverError() async throws {
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let existing = try #require(try await harness.charge(method: "paypal", token: token)["id"]?.stringValue)
            await harness.emulator.inject(.serverError, path: "charges")
            #expect(try await harness.inquire(existing, token: token).status == 200)
            let request = CitconHarness.chargeRequest(method: "paypal")
            let failed = try await harness.call("charges", bearer: token, json: request)
            #expect(failed.status == 500)
            #expect(failed.envelope["status"] == "fail")
            #expect(failed.code == "5100")
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
            #expect(try await harness.call("charges", bearer: token, json: request).code == "4100")
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
            #expect(try await harness.call("charges", bearer: token, json: request).code == "4100")
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
                _ = try await harness.pay(charge, wallet: "alipay")
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
