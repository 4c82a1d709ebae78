import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillIPayNow
import TillIPayNowServer
@testable import TillServer

/// The real merchant server on 127.0.0.1 serving two merchants, A and B, each with its own iPayNow
/// cross-border app (its own `appId` and MD5 key), for attacks on the iPayNow endpoints. Merchant A
/// also takes CNY payments (charged in RMB fen, `mhtAmtCurrFlag=0`, settled in HKD).
///
/// There is no emulator here. iPayNow's side is played by the test:
/// - **what iPayNow signs** is built by ``IPayNowWire``, an MD5 signer written for these tests from
///   appendix B of the cross-border iOS guide (never the module's `IPayNowSigning`), checked against
///   two real server-signed messages in `IPayNowAttackTests`;
/// - **iPayNow's server** (the MQ001 query the merchant server sends to `{base}/global`) is
///   ``Upstream``, a stub transport that answers from the orders the app's plugin would have sent
///   (the `payData` each preparation carried), or from a responder the test installs (a man in the middle).
///
/// What an attacker can do: post anything to `/v1/notifications/ipaynow` (``notify(_:)``), hold
/// everything the app holds (the client secret, each preparation's `payData`), and keep every message
/// iPayNow ever signed for this merchant.
final class IPayNowAttackWorld: @unchecked Sendable {
    /// One iPayNow app: its id and MD5 key (one key per app, appendix B).
    struct App: Sendable {
        let appId: String
        let appKey: String
    }

    /// One merchant of the server, with its iPayNow app.
    struct Merchant: Sendable {
        let id: String
        let key: String
        let app: App
    }

    /// A payment the merchant created and the app prepared: its id, client secret, attempt, the
    /// preparation as the app received it, and the order the plugin hands iPayNow (the `payData`
    /// fields, read here without the module) with iPayNow's own order number for it.
    struct Started: Sendable {
        let payment: String
        let secret: String
        let attempt: AttemptReference
        let preparation: Preparation
        let order: [String: String]
        let nowPayOrderNo: String
        let merchant: Merchant
    }

    static let gateway: GatewayID = "ipaynow"
    /// 10.50 NZD, an appendix C currency (`mhtAmtCurrFlag=1`).
    static let amount: Int64 = 1050

    let a: Merchant
    let b: Merchant
    /// An iPayNow app no merchant of this server has (someone else's, or the attacker's own).
    let outsider: App
    let upstream: Upstream
    let store: any PaymentStore
    let serverURL: URL
    private let server: Task<Void, any Error>

    init(_ kind: StoreKind, maxBodyBytes: Int = 65_536) async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        func app() -> App {
            // appId: digits like the vendor's (`1408709961320306`); the key: 32 letters and digits like theirs.
            App(appId: String((0..<16).map { _ in "0123456789".randomElement()! }),
                appKey: String((0..<32).map { _ in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }))
        }
        a = Merchant(id: "ma-\(tag)", key: "key-a-\(UUID().uuidString)", app: app())
        b = Merchant(id: "mb-\(tag)", key: "key-b-\(UUID().uuidString)", app: app())
        outsider = app()
        upstream = Upstream(apps: [a.app, b.app, outsider])
        func ipaynow(_ prefix: String, _ merchant: Merchant, settlement: String?) -> GatewayConfiguration {
            var settings = ["app_id": merchant.app.appId, "base_url": "http://ipaynow.invalid"]
            settings["settlement_currency"] = settlement
            return GatewayConfiguration(id: Self.gateway, module: "ipaynow", credentials: ["app_key": CredentialReference(env: "\(prefix)_IPN_KEY")],
                                        settings: settings)
        }
        let configuration = TillConfiguration(
            merchants: [
                MerchantConfiguration(id: a.id, apiKey: CredentialReference(env: "A_KEY"), gateways: [ipaynow("A", a, settlement: "HKD")],
                                      routing: RoutingConfiguration(fallback: [Self.gateway]), returnURLSchemes: ["shop"]),
                MerchantConfiguration(id: b.id, apiKey: CredentialReference(env: "B_KEY"), gateways: [ipaynow("B", b, settlement: nil)],
                                      routing: RoutingConfiguration(fallback: [Self.gateway]), returnURLSchemes: ["shop"]),
            ],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused", publicURL: "http://127.0.0.1", maxBodyBytes: maxBodyBytes))
        let environment = ["A_KEY": a.key, "B_KEY": b.key, "A_IPN_KEY": a.app.appKey, "B_IPN_KEY": b.app.appKey]
        let upstream = upstream
        let state = try ServerState(configuration: configuration, plugins: [IPayNowPlugin.plugin], environment: environment,
                                    transport: { _ in upstream })
        store = try await kind.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        server = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        serverURL = URL(string: "http://127.0.0.1:\(await iterator.next() ?? 0)")!
    }

    func stop() async {
        await settle()
        server.cancel()
        _ = await server.result
        try? await store.close()
    }

    /// Runs `body` in a fresh world and stops it after, whatever happens.
    static func with(_ kind: StoreKind, maxBodyBytes: Int = 65_536, _ body: (IPayNowAttackWorld) async throws -> Void) async throws {
        let w = try await IPayNowAttackWorld(kind, maxBodyBytes: maxBodyBytes)
        do { try await body(w) } catch {
            await w.stop()
            throw error
        }
        await w.stop()
    }

    /// Lets the inquiries the server starts in the background (a rejected notification naming an
    /// attempt) finish: the stub answers at once, so a short wait is enough.
    func settle() async {
        try? await Task.sleep(for: .milliseconds(150))
    }

    // MARK: The merchant server, as the merchant's backend and the app call it

    func call(_ method: String, _ path: String, body: Data? = nil, contentType: String = "application/json", bearer: String?,
              headers: [String: String] = [:]) async throws -> ServerHarness.Answer {
        var request = URLRequest(url: serverURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        return ServerHarness.Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// The merchant creates a payment and the app prepares its first attempt with the client secret;
    /// the order the app's `payData` carries is registered with the stub as the plugin would have sent it.
    func start(_ merchant: Merchant, minor: Int64 = amount, currency: String = "NZD", method: String = "alipay",
               description: String? = "Green tea") async throws -> Started {
        var intent: [String: Any] = ["merchantReference": "order-\(UUID().uuidString.prefix(8))", "amount": ["value": minor, "currency": currency],
                                     "method": method, "customer": ["email": "buyer@example.com"]]
        if let description { intent["description"] = description }
        let created = try await call("POST", "v1/payments", body: try JSONSerialization.data(withJSONObject: intent), bearer: merchant.key)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let payment = try #require(created.json["id"] as? String)
        let secret = try #require(created.json["clientSecret"] as? String)
        let prepared = try await call("POST", "v1/payments/\(payment)/attempts", body: Data(#"{"returnURLs":["shop://till/return"]}"#.utf8),
                                      bearer: secret)
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let preparation = try decoder.decode(Preparation.self, from: prepared.body)
        let payData = try #require(preparation.parameters["payData"], "no payData in \(String(decoding: prepared.body, as: UTF8.self))")
        let order = try #require(IPayNowWire.payDataFields(payData), "payData is not k=v&…: \(payData)")
        let nowPayOrderNo = "2004" + String((0..<23).map { _ in "0123456789".randomElement()! })
        upstream.register(order: order, nowPayOrderNo: nowPayOrderNo)
        return Started(payment: payment, secret: secret, attempt: preparation.attempt, preparation: preparation, order: order,
                       nowPayOrderNo: nowPayOrderNo, merchant: merchant)
    }

    /// The app's or the backend's inquiry of an attempt (the server sends MQ001 to the stub).
    func inquire(_ started: Started) async throws -> ServerHarness.Answer {
        try await call("POST", "v1/attempts/\(started.attempt.rawValue)/inquire", bearer: started.merchant.key)
    }

    // MARK: What the server holds

    func attempt(_ reference: AttemptReference) async throws -> StoredAttempt {
        let payment = try #require(try await store.payment(attempt: reference))
        return try #require(payment.attempts.first { $0.reference == reference })
    }

    func paymentStatus(_ reference: AttemptReference) async throws -> PaymentStatus? {
        try await store.payment(attempt: reference)?.status
    }

    /// The notifications stored for `attempt`: all of them, and those applied.
    func notifications(_ attempt: AttemptReference) async throws -> (all: Int, applied: Int) {
        (try await count(store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)'"),
         try await count(store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND outcome = 'applied'"))
    }

    /// Every notification stored, whatever it names.
    /// Every notification and quarantined notification of this world's two merchants (a PostgreSQL store
    /// is shared by the tests running beside this one: rows of other merchants are not counted).
    func allNotifications() async throws -> Int {
        let merchants = "'\(a.id)', '\(b.id)'"
        let ours = "attempt_reference IN (SELECT a.reference FROM till_attempts a JOIN till_payments p ON p.id = a.payment_id "
            + "WHERE p.merchant_id IN (\(merchants)))"
        return try await count(store, "till_notifications", where: ours)
            + count(store, "till_quarantine", where: "merchant_id IN (\(merchants))")
    }

    func quarantine(_ merchant: Merchant) async throws -> [QuarantinedNotification] {
        try await store.quarantined(merchant: merchant.id, limit: 100)
    }

    // MARK: The notification endpoint

    /// Posts `body` to `/v1/notifications/ipaynow` as iPayNow does (a form body, HTTP POST), and as
    /// anyone on the internet can.
    func notify(_ body: Data, contentType: String = "application/x-www-form-urlencoded;charset=UTF-8") async throws -> ServerHarness.Answer {
        try await call("POST", "v1/notifications/\(Self.gateway.rawValue)", body: body, contentType: contentType, bearer: nil)
    }

    /// Posts `pairs` form-encoded, in the given order.
    func notify(_ pairs: [(String, String)], space: String = "+") async throws -> ServerHarness.Answer {
        try await notify(IPayNowWire.encode(pairs, space: space))
    }

    // MARK: What iPayNow signs

    /// An N001 notification about `started` as iPayNow would post it, signed with `signer` (the
    /// merchant's own app unless told).
    ///
    /// The cross-border shape (PHP SDK README 2.2): the order's fields as the plugin sent them,
    /// `funcode=N001`, `deviceType=01` (the iOS plugin appends it), `nowPayOrderNo`, `channelOrderNo`,
    /// `cashCurrencyType`/`cashAmont` (what the customer paid; their values are made up, Till never
    /// reads them), `tradeStatus`, `signType=MD5`, `signature` over all but `signType` and `signature`.
    /// `versioned` gives the 1.0.0 shape instead (`transStatus`, `version=1.0.0`, `signType` signed:
    /// `ipaynow-python-sdk` 1.0.0 `NotifyParser.parse_payment`, and the real 2017 N001s).
    ///
    /// `changes` are made before signing (a `nil` removes the field), so the result is what iPayNow
    /// itself would have signed with those values; fields come sorted by name, as real N001 bodies do.
    func n001(_ started: Started, status: String = "A001", changes: [String: String?] = [:], signer: App? = nil,
              versioned: Bool = false) -> [(String, String)] {
        var fields = started.order.filter { ["appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt", "mhtAmtCurrFlag",
                                             "mhtOrderTimeOut", "mhtOrderStartTime", "mhtCharset", "payChannelType"].contains($0.key) }
        fields["funcode"] = "N001"
        fields["deviceType"] = "01"
        fields["cashCurrencyType"] = "CNY"
        fields["cashAmont"] = IPayNowWire.cashAmount(started.order)
        fields["nowPayOrderNo"] = started.nowPayOrderNo
        fields["channelOrderNo"] = "2026" + started.nowPayOrderNo.suffix(14)
        fields["signType"] = "MD5"
        if versioned {
            fields["transStatus"] = status
            fields["version"] = "1.0.0"
        } else {
            fields["tradeStatus"] = status
        }
        for (name, value) in changes { fields[name] = value }
        return IPayNowWire.signed(fields, key: (signer ?? started.merchant.app).appKey,
                                  excluded: versioned ? IPayNowWire.versionedExcluded : IPayNowWire.legacyExcluded)
    }

    /// An MQ001 answer about `started` as iPayNow's `/global` would give it (PHP SDK README 2.4: the
    /// order's fields, `tradeStatus`, `nowPayOrderNo`, `channelOrderNo`, `responseTime`,
    /// `responseCode`, `responseMsg`, `signType`, `signature` over all but the last two), signed with
    /// `signer` (the merchant's app unless told); `changes` made before signing.
    func mq001Answer(_ started: Started, status: String, changes: [String: String?] = [:], signer: App? = nil) -> [(String, String)] {
        upstream.answer(order: started.order, nowPayOrderNo: started.nowPayOrderNo, status: status, changes: changes,
                        key: (signer ?? started.merchant.app).appKey)
    }

    /// iPayNow's server, as the merchant server reaches it: MQ001 queries to `{base}/global`.
    ///
    /// By default it answers a signed MQ001 answer from the order the plugin sent (``register(order:nowPayOrderNo:)``)
    /// with the status set for it (``setStatus(_:for:)``, `A00I` "not processed" until then). A test
    /// plays a man in the middle with ``intercept(_:)``: the responder's answer is served instead.
    final class Upstream: HTTPTransport, Sendable {
        /// What a man in the middle answers to an MQ001 query (its decoded fields); nil lets iPayNow answer.
        typealias Responder = @Sendable (_ query: [String: String]) -> TransportResponse?

        private struct State {
            var keys: [String: String] = [:]
            var orders: [String: (order: [String: String], nowPayOrderNo: String)] = [:]
            var statuses: [String: String] = [:]
            var responder: Responder?
            var queries: [TransportRequest] = []
        }
        private let state = Locked(State())

        init(apps: [App]) {
            state.withLock { state in
                for app in apps { state.keys[app.appId] = app.appKey }
            }
        }

        func register(order: [String: String], nowPayOrderNo: String) {
            state.withLock { $0.orders[order["mhtOrderNo"] ?? ""] = (order, nowPayOrderNo) }
        }

        /// What iPayNow says about `attempt` from now on (`A001` paid, `A002` failed, …).
        func setStatus(_ status: String, for attempt: AttemptReference) {
            state.withLock { $0.statuses[attempt.rawValue] = status }
        }

        /// Installs a man in the middle (nil removes it).
        func intercept(_ responder: Responder?) {
            state.withLock { $0.responder = responder }
        }

        /// Every request the merchant server sent.
        var queries: [TransportRequest] { state.withLock { $0.queries } }

        func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
            let query = IPayNowWire.decode(request.body ?? Data()) ?? [:]
            let (responder, known, status, key) = state.withLock { state in
                state.queries.append(request)
                let order = state.orders[query["mhtOrderNo"] ?? ""]
                return (state.responder, order, state.statuses[query["mhtOrderNo"] ?? ""] ?? "A00I", state.keys[query["appId"] ?? ""])
            }
            if let responder, let answer = responder(query) { return answer }
            guard request.url.path == "/global", query["funcode"] == "MQ001", let known, let key else {
                return Self.form([("responseCode", "A002"), ("responseMsg", "unknown order")])
            }
            return Self.form(answer(order: known.order, nowPayOrderNo: known.nowPayOrderNo, status: status, changes: [:], key: key))
        }

        /// A signed MQ001 answer about `order`.
        func answer(order: [String: String], nowPayOrderNo: String, status: String, changes: [String: String?], key: String) -> [(String, String)] {
            var fields = order.filter { ["appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt", "mhtAmtCurrFlag",
                                         "mhtOrderTimeOut", "mhtOrderStartTime", "mhtCharset", "payChannelType"].contains($0.key) }
            fields["deviceType"] = "01"
            fields["cashCurrencyType"] = "CNY"
            fields["cashAmont"] = IPayNowWire.cashAmount(order)
            fields["nowPayOrderNo"] = nowPayOrderNo
            fields["channelOrderNo"] = "2026" + nowPayOrderNo.suffix(14)
            fields["tradeStatus"] = status
            fields["responseTime"] = "20260504100000"
            fields["responseCode"] = "A001"
            fields["responseMsg"] = "查询成功"
            fields["signType"] = "MD5"
            for (name, value) in changes { fields[name] = value }
            return IPayNowWire.signed(fields, key: key, excluded: IPayNowWire.legacyExcluded)
        }

        /// A 200 answer with a form body.
        static func form(_ pairs: [(String, String)], statusCode: Int = 200) -> TransportResponse {
            TransportResponse(statusCode: statusCode, headers: ["Content-Type": "text/plain;charset=UTF-8"], body: IPayNowWire.encode(pairs))
        }
    }
}

/// iPayNow's wire, written for these tests from the vendor's documents and independent of the module
/// (`IPayNowSigning`, `FormFields`), so a forgery the module accepts is one these rules say iPayNow signed.
///
/// Appendix B of the cross-border iOS guide (附录B):
/// leave out the fields that do not take part and every empty value, sort by name, join `name=value`
/// with `&` (values as decoded, never percent-encoded), append `&` and the MD5 of the app key, and take
/// the lower-case hex MD5 of the UTF-8 bytes. The same in the vendor's code: PHP
/// `ipaynowORG/ipaynow_cross_border_pay_php@279d28f util/ParamUtil.php` `buildSignature`, and
/// `ipaynow-python-sdk` 1.0.0 `signer.py` `sign`.
enum IPayNowWire {
    /// A message from iPayNow without `version` (cross-border N001, MQ001 answers): `signType` and
    /// `signature` are not signed (PHP SDK README 2.2 and 2.4: "排除的有：signType,signature").
    static let legacyExcluded: Set<String> = ["signType", "signature"]
    /// A 1.0.0 message: only `signature` is left out (`ipaynow-python-sdk` 1.0.0 `parse_payment`).
    static let versionedExcluded: Set<String> = ["signature"]

    static func md5Hex(_ text: String) -> String {
        Insecure.MD5.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The string to sign, without the key: signed fields with a value, sorted by name (byte order), `k=v&…`.
    static func canonical(_ pairs: [(String, String)], excluded: Set<String>) -> String {
        pairs.filter { !$0.1.isEmpty && !excluded.contains($0.0) }
            .sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    static func signature(_ pairs: [(String, String)], key: String, excluded: Set<String>) -> String {
        md5Hex(canonical(pairs, excluded: excluded) + "&" + md5Hex(key))
    }

    /// `fields` (without any signature) signed: every field sorted by name, `signature` among them.
    static func signed(_ fields: [String: String], key: String, excluded: Set<String>) -> [(String, String)] {
        var pairs = fields.filter { $0.key != "signature" }.map { ($0.key, $0.value) }
        pairs.append(("signature", signature(pairs, key: key, excluded: excluded)))
        return pairs.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
    }

    /// `application/x-www-form-urlencoded`, pairs in the given order (repeats kept): letters, digits
    /// and `-._*` as they are, a space as `space` (`+` or `%20`), every other UTF-8 byte `%XX`.
    static func encode(_ pairs: [(String, String)], space: String = "+") -> Data {
        Data(pairs.map { escape($0.0, space: space) + "=" + escape($0.1, space: space) }.joined(separator: "&").utf8)
    }

    static func escape(_ text: String, space: String = "+") -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                out.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: " "):
                out += space
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// A form body's fields, decoded as the vendor's SDKs decode them (`unquote_plus`); nil when unreadable.
    static func decode(_ body: Data) -> [String: String]? {
        var fields: [String: String] = [:]
        for segment in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = segment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts[0].replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                  let value = (parts.count > 1 ? String(parts[1]) : "").replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            else { return nil }
            fields[name] = value
        }
        return fields
    }

    /// The fields of a `payData` as the plugin splits it: on `&`, then on the first `=` (values raw).
    static func payDataFields(_ payData: String) -> [String: String]? {
        var fields: [String: String] = [:]
        for segment in payData.split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = segment.firstIndex(of: "=") else { return nil }
            fields[String(segment[..<equals])] = String(segment[segment.index(after: equals)...])
        }
        return fields
    }

    /// What the customer paid in RMB fen (`cashAmont`, with `cashCurrencyType` CNY): the order's amount
    /// when it is in RMB fen (`mhtAmtCurrFlag=0`), else a made-up conversion (five fen to the cent). No
    /// source gives iPayNow's rate; a flag-1 order is read from `mhtOrderAmt`, never from this.
    static func cashAmount(_ order: [String: String]) -> String {
        let amount = Int64(order["mhtOrderAmt"] ?? "0") ?? 0
        return String(order["mhtAmtCurrFlag"] == "0" ? amount : amount * 5)
    }

    /// `pairs` with `name` set to `value` (added at the end when absent), or removed when `value` is nil.
    static func replacing(_ pairs: [(String, String)], _ name: String, with value: String?) -> [(String, String)] {
        var out = pairs
        if let index = out.firstIndex(where: { $0.0 == name }) {
            if let value { out[index].1 = value } else { out.remove(at: index) }
        } else if let value {
            out.append((name, value))
        }
        return out
    }

    /// The value of `name` in `pairs`.
    static func value(_ pairs: [(String, String)], _ name: String) -> String? {
        pairs.first { $0.0 == name }?.1
    }
}
