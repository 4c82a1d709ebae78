import Foundation
import Hummingbird
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Fixtures

/// The iPayNow fixtures (`Fixtures/ipaynow`), each naming its vendor source.
enum IPayNowFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/ipaynow")

    /// One real server-signed message and the key that verifies it.
    struct RealMessage: Decodable {
        var id: String
        var kind: String
        var source: [String: String?]
        var app_key: String
        var app_key_source: String
        var raw_body: String
        var rule: String
        var expected_signature: String
        var string_to_sign: String
    }

    private struct Bundle: Decodable {
        var messages: [RealMessage]
    }

    /// Every real message of `real-*.json` (16).
    static func realMessages() throws -> [(file: String, message: RealMessage)] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("real-") && $0.hasSuffix(".json") }.sorted()
        var all: [(String, RealMessage)] = []
        for file in files {
            let data = try Data(contentsOf: directory.appendingPathComponent(file))
            if let bundle = try? JSONDecoder().decode(Bundle.self, from: data) {
                all += bundle.messages.map { (file, $0) }
            } else {
                all.append((file, try JSONDecoder().decode(RealMessage.self, from: data)))
            }
        }
        return all
    }

    /// The computed cross-border presign vectors.
    struct Presign: Decodable {
        struct Case: Decodable {
            var id: String
            var fields: [String: String]
            var presign_string: String
            var md5_appKey: String
            var mhtSignature: String
            var mhtReserved_encoded_after_signing: String?
            var payData: String
        }

        var source: [String: String]
        var app_key: String
        var app_key_source: String
        var excluded_from_signature: [String]
        var cases: [Case]
    }

    static func presign() throws -> Presign {
        try JSONDecoder().decode(Presign.self, from: Data(contentsOf: directory.appendingPathComponent("computed-crossborder-WP001-presign.json")))
    }
}

// MARK: - Harness

/// A sandbox with an iPayNow emulator, and a client that talks to it over real HTTP.
struct IPayNowHarness {
    /// The iOS demo's app id and key (the presign vectors are signed with them).
    static let demoApp = IPayNowEmulator.App(appId: "1480321334800229", appKey: "BB7qcwBIZeeLQt54BqBthCR5ae4GgXGt")
    static let otherApp = IPayNowEmulator.App(appId: "1500000000000002", appKey: "another app's md5 key")

    let emulator: IPayNowEmulator
    let sandbox: RunningSandbox
    let session: URLSession

    var base: URL { sandbox.baseURL(of: emulator) }
    var globalURL: URL { base.appendingPathComponent("global") }

    static func with<T>(queryRule: IPayNowEmulator.QuerySignatureRule = .code, notifyRetryInterval: Duration = .milliseconds(20),
                        notifyMaxAttempts: Int = 3, timeoutHold: Duration = .milliseconds(300),
                        now: @escaping @Sendable () -> Date = { Date() },
                        _ body: (IPayNowHarness) async throws -> T) async throws -> T {
        let emulator = IPayNowEmulator(apps: [demoApp, otherApp], notifyRetryInterval: notifyRetryInterval,
                                       notifyMaxAttempts: notifyMaxAttempts, notifyTimeout: .seconds(2), timeoutHold: timeoutHold,
                                       queryRule: queryRule, now: now)
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let harness = IPayNowHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
        do {
            let result = try await body(harness)
            await harness.stop()
            return result
        } catch {
            await harness.stop()
            throw error
        }
    }

    func stop() async {
        await emulator.waitForNotifications()
        await sandbox.stop()
        session.finishTasksAndInvalidate()
    }

    // MARK: /global

    /// An answer of `/global`, its fields decoded.
    struct GlobalAnswer {
        var raw: RawResponse
        var fields: [String: String]
        subscript(key: String) -> String? { fields[key] }

        /// Whether the answer is signed by `app` (excluding `signType` and `signature`).
        func isSigned(by app: IPayNowEmulator.App) -> Bool {
            fields["signType"] == "MD5"
                && IPayNowEmulator.Signature.verify(fields, appKey: app.appKey, signatureField: "signature",
                                                    excluding: IPayNowEmulator.Signature.responseExcluded)
        }
    }

    /// Posts `body` to `/global` as cbphp's curl does (a string body: form content type).
    func postGlobal(_ body: String, session: URLSession? = nil) async throws -> GlobalAnswer {
        var request = URLRequest(url: globalURL)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        let raw = try await exchange(request, on: session ?? self.session)
        let fields = (try? IPayNowForm.parse(raw.text).get()) ?? [:]
        return GlobalAnswer(raw: raw, fields: fields)
    }

    /// Posts `fields` percent-encoded (as the PyPI SDK's `urlencode`), or raw like cbphp's
    /// `createParamString($param, false, false)` when `cbphpRaw`.
    func global(_ fields: [String: String], cbphpRaw: Bool = false, session: URLSession? = nil) async throws -> GlobalAnswer {
        let body = cbphpRaw ? fields.map { "\($0.key)=\($0.value)" }.joined(separator: "&") : IPayNowForm.encode(fields)
        return try await postGlobal(body, session: session)
    }

    /// A WP001 as cbphp's `TradeService::trade()` builds it, signed with the six-field exclusion.
    static func wp001(app: IPayNowEmulator.App = demoApp, mhtOrderNo: String = newOrderNo(), amount: String = "10",
                      currency: String = "NZD", channel: String = "80", deviceType: String = "02", notifyUrl: String = "http://127.0.0.1:9/notify",
                      extra: [String: String] = [:]) -> [String: String] {
        var fields = [
            "appId": app.appId, "mhtOrderNo": mhtOrderNo, "mhtOrderName": "orderName_php", "mhtOrderType": "01",
            "mhtCurrencyType": currency, "mhtOrderAmt": amount, "mhtAmtCurrFlag": "1", "mhtOrderDetail": "orderDetail",
            "mhtOrderTimeOut": "3600", "mhtOrderStartTime": IPayNowTime.stamp(Date()), "notifyUrl": notifyUrl,
            "payChannelType": channel, "mhtCharset": "UTF-8",
        ]
        fields.merge(extra) { $1 }
        fields["mhtSignature"] = IPayNowEmulator.Signature.sign(fields, appKey: app.appKey,
                                                                excluding: IPayNowEmulator.Signature.requestExcluded)
        fields["funcode"] = "WP001"
        fields["deviceType"] = deviceType
        fields["mhtSignType"] = "MD5"
        return fields
    }

    /// An MQ001 as cbphp's `OrderQueryService::orederQuery` builds it (or signed the README's way).
    static func mq001(app: IPayNowEmulator.App = demoApp, mhtOrderNo: String, readmeRule: Bool = false) -> [String: String] {
        var fields = ["appId": app.appId, "mhtOrderNo": mhtOrderNo, "mhtCharset": "UTF-8"]
        if readmeRule {
            fields["funcode"] = "MQ001"
            fields["mhtSignType"] = "MD5"
        }
        fields["mhtSignature"] = IPayNowEmulator.Signature.sign(
            fields, appKey: app.appKey,
            excluding: readmeRule ? IPayNowEmulator.Signature.queryReadmeExcluded : IPayNowEmulator.Signature.queryExcluded)
        fields["funcode"] = "MQ001"
        fields["mhtSignType"] = "MD5"
        return fields
    }

    // MARK: The plugin

    /// The presign fields of the iOS demo (`CrossBorderViewController.m`), with a new order number.
    static func presignFields(app: IPayNowEmulator.App = demoApp, mhtOrderNo: String = newOrderNo(), channel: String = "90",
                              notifyUrl: String = "http://localhost:10802/", currency: String = "NZD", flag: String = "0",
                              amount: String = "10") -> [String: String] {
        ["appId": app.appId, "mhtOrderNo": mhtOrderNo, "mhtOrderName": "merchantTest", "mhtOrderType": "01",
         "mhtCurrencyType": currency, "mhtOrderAmt": amount, "mhtOrderDetail": "mhtOrderDetail",
         "mhtOrderStartTime": IPayNowTime.stamp(Date()), "notifyUrl": notifyUrl, "mhtCharset": "UTF-8", "mhtOrderTimeOut": "3600",
         "mhtAmtCurrFlag": flag, "payChannelType": channel]
    }

    /// `payData` as the demo builds it: the sorted presign (raw values), `mhtReserved` URL-encoded after
    /// signing, then `&mhtSignType=MD5&mhtSignature=…` (seed 第三步; demo `payByType:`/`payByLocalSign`).
    static func payData(_ fields: [String: String], app: IPayNowEmulator.App = demoApp, signature: String? = nil) -> String {
        let signature = signature ?? IPayNowEmulator.Signature.sign(fields, appKey: app.appKey,
                                                                    excluding: IPayNowEmulator.Signature.requestExcluded)
        var shown = fields
        if let reserved = shown["mhtReserved"] { shown["mhtReserved"] = FormEncoding.escape(reserved) }
        let presign = shown.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { "\($0.key)=\($0.value)" }
            .joined(separator: "&")
        return presign + "&mhtSignType=MD5&mhtSignature=" + signature
    }

    func plugin(_ payData: String, scheme: String = "tillSandboxShop", outcome: IPayNowEmulator.PluginOutcome = .pay,
                waitForNotification: Bool = false) async throws -> IPayNowEmulator.PluginResult {
        try await IPayNowDevice.pay(baseURL: base, .init(payData: payData, scheme: scheme, outcome: outcome,
                                                         waitForNotification: waitForNotification))
    }

    func admin(_ method: String, _ path: String, json: String? = nil) async throws -> RawResponse {
        var request = URLRequest(url: sandbox.baseURL.appendingPathComponent("admin/ipaynow").appendingPathComponent(path))
        request.httpMethod = method
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try await exchange(request, on: session)
    }

    static func newOrderNo() -> String {
        "T" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20)
    }
}

// MARK: - The merchant's notify URL

/// The merchant server's N001 endpoint: records every post and answers scripted `(status, body)`
/// pairs, then `otherwise` (`200 success=Y`).
actor IPayNowMerchantEndpoint {
    struct Received: Sendable {
        var contentType: String?
        var body: String
        var fields: [String: String] { (try? IPayNowForm.parse(body).get()) ?? [:] }
    }

    private(set) var received: [Received] = []
    private var answers: [(Int, String)]
    private let otherwise: (Int, String)

    init(answers: [(Int, String)] = [], otherwise: (Int, String) = (200, "success=Y")) {
        self.answers = answers
        self.otherwise = otherwise
    }

    func handle(contentType: String?, body: Data) -> (Int, String) {
        received.append(Received(contentType: contentType, body: String(decoding: body, as: UTF8.self)))
        return answers.isEmpty ? otherwise : answers.removeFirst()
    }

    /// Runs `body` with the endpoint served at `…/merchant/notify`.
    static func with<T>(_ endpoint: IPayNowMerchantEndpoint, _ body: (URL) async throws -> T) async throws -> T {
        let server = try await Sandbox.start(emulators: [Host(endpoint: endpoint)])
        do {
            let result = try await body(server.baseURL.appendingPathComponent("merchant").appendingPathComponent("notify"))
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    private struct Host: SandboxEmulator {
        let endpoint: IPayNowMerchantEndpoint
        var name: String { "merchant" }

        func mount(_ mount: SandboxMount) {
            let endpoint = self.endpoint
            mount.router.post("/merchant/notify") { request, _ -> Response in
                let body = (try? await request.body.collect(upTo: 1 << 20)).map { Data($0.readableBytesView) } ?? Data()
                let (status, text) = await endpoint.handle(contentType: request.headers[.contentType], body: body)
                return Response(status: .init(code: status), headers: [.contentType: "text/plain"],
                                body: .init(byteBuffer: ByteBuffer(string: text)))
            }
        }
    }
}
