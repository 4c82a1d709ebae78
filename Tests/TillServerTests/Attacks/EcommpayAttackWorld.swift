import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit
@testable import TillServer

/// The real merchant server on 127.0.0.1 serving two merchants, A and B, each with its own ecommpay
/// project (its own `project_id` and secret key), for attacks on the ecommpay endpoints.
///
/// There is no emulator here. ecommpay's side is played by the test:
/// - **what ecommpay signs** is built by ``EcommpayWire``, a signer written for these tests from the
///   Python SDK's rule (never the module's `EcommpaySigner` or `EcommpaySignatureString`), checked
///   against a vector of the vendor's SDK tests in `EcommpayAttackTests`;
/// - **Gate** (`POST /v2/payment/status`, which the merchant server asks) is ``Upstream``, a stub
///   transport answering from the payments the app's SDK would have opened, or from a responder the
///   test installs (a man in the middle).
///
/// What an attacker can do: post anything to `/v1/notifications/ecommpay` (``notify(_:)``), hold
/// everything the app holds (the client secret, each preparation's `params` and `signature`), and keep
/// every callback ecommpay ever signed for this merchant.
final class EcommpayAttackWorld: @unchecked Sendable {
    /// One ecommpay project: its id and secret key.
    struct Project: Sendable {
        let id: Int
        let secret: String
    }

    /// One merchant of the server, with its ecommpay project.
    struct Merchant: Sendable {
        let id: String
        let key: String
        let project: Project
    }

    /// A payment the merchant created and the app prepared: its id, client secret, attempt (ecommpay's
    /// `payment_id`), the preparation as the app received it, and the money asked.
    struct Started: Sendable {
        let payment: String
        let secret: String
        let attempt: AttemptReference
        let preparation: Preparation
        let amount: Int64
        let currency: String
        let merchant: Merchant
    }

    static let gateway: GatewayID = "ecommpay"
    /// 10.50 EUR.
    static let amount: Int64 = 1050

    let a: Merchant
    let b: Merchant
    /// A project no merchant of this server has (someone else's, or the attacker's own).
    let outsider: Project
    let upstream: Upstream
    let store: any PaymentStore
    let serverURL: URL
    private let server: Task<Void, any Error>

    init(_ kind: StoreKind, maxBodyBytes: Int = 65_536) async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        func project() -> Project {
            Project(id: Int.random(in: 100_000...999_999),
                    secret: String((0..<40).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }))
        }
        a = Merchant(id: "ea-\(tag)", key: "key-a-\(UUID().uuidString)", project: project())
        b = Merchant(id: "eb-\(tag)", key: "key-b-\(UUID().uuidString)", project: project())
        outsider = project()
        upstream = Upstream(projects: [a.project, b.project, outsider])
        func ecommpay(_ prefix: String, _ merchant: Merchant) -> GatewayConfiguration {
            GatewayConfiguration(id: Self.gateway, module: "ecommpay", credentials: ["secret_key": CredentialReference(env: "\(prefix)_ECP_SECRET")],
                                 settings: ["project_id": String(merchant.project.id), "base_url": "http://ecommpay.invalid"])
        }
        let configuration = TillConfiguration(
            merchants: [
                MerchantConfiguration(id: a.id, apiKey: CredentialReference(env: "A_KEY"), gateways: [ecommpay("A", a)],
                                      routing: RoutingConfiguration(fallback: [Self.gateway]), returnURLSchemes: ["shop"]),
                MerchantConfiguration(id: b.id, apiKey: CredentialReference(env: "B_KEY"), gateways: [ecommpay("B", b)],
                                      routing: RoutingConfiguration(fallback: [Self.gateway]), returnURLSchemes: ["shop"]),
            ],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused", publicURL: "http://127.0.0.1", maxBodyBytes: maxBodyBytes))
        let environment = ["A_KEY": a.key, "B_KEY": b.key, "A_ECP_SECRET": a.project.secret, "B_ECP_SECRET": b.project.secret]
        let upstream = upstream
        let state = try ServerState(configuration: configuration, plugins: [EcommpayPlugin.plugin], environment: environment,
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
    static func with(_ kind: StoreKind, maxBodyBytes: Int = 65_536, _ body: (EcommpayAttackWorld) async throws -> Void) async throws {
        let w = try await EcommpayAttackWorld(kind, maxBodyBytes: maxBodyBytes)
        do { try await body(w) } catch {
            await w.stop()
            throw error
        }
        await w.stop()
    }

    /// Lets the inquiries the server starts in the background (a rejected callback naming an attempt)
    /// finish: the stub answers at once, so a short wait is enough.
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

    /// The merchant creates a payment and the app prepares its first attempt with the client secret; the
    /// payment the app's SDK would open at ecommpay is registered with the stub (`processing` until told).
    func start(_ merchant: Merchant, minor: Int64 = amount, currency: String = "EUR", method: String = "card",
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
        upstream.register(preparation.attempt, project: merchant.project, amount: minor, currency: currency)
        return Started(payment: payment, secret: secret, attempt: preparation.attempt, preparation: preparation, amount: minor,
                       currency: currency, merchant: merchant)
    }

    /// The backend's inquiry of an attempt (the server asks Gate `/v2/payment/status`).
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

    /// Posts `body` to `/v1/notifications/ecommpay` as ecommpay does (JSON, HTTP POST), and as anyone can.
    func notify(_ body: Data, contentType: String = "application/json") async throws -> ServerHarness.Answer {
        try await call("POST", "v1/notifications/\(Self.gateway.rawValue)", body: body, contentType: contentType, bearer: nil)
    }

    /// Posts `value` serialized.
    func notify(_ value: EcommpayWire.Value) async throws -> ServerHarness.Answer {
        try await notify(value.serialized())
    }

    // MARK: What ecommpay signs

    /// A callback about `started` as ecommpay would post it, signed with `signer` (the merchant's own
    /// project unless told).
    ///
    /// The shape of sample 1 of the JS SDK's callback formats (`ITECOMMPAY/paymentpage-sdk-js@b53f674a04cf0bc6bbfbe1a32a77ae1846455cf6`
    /// `__tests__/data/callbackFormats.js`): `project_id`, `payment{id,type,status,date,method,sum,description}`,
    /// `account{number,token,type,id,card_holder,expiry_month,expiry_year}`, `customer{id,phone}`,
    /// `operation{id,type,status,date,created_date,request_id,sum_initial,sum_converted,code,message,eci,provider}`;
    /// `payment.cascading_with_redirect` as a boolean (the same file, sample 161). The values are made up.
    ///
    /// `changes` (a path and a value, nil removes) are made before signing, so the result is what
    /// ecommpay itself would have signed with those values.
    func callback(_ started: Started, status: String = "success", operationID: Int = 100, cascading: Bool? = false,
                  holder: String = "JOHN DOE", changes: [([String], EcommpayWire.Value?)] = [], signer: Project? = nil) -> EcommpayWire.Value {
        typealias V = EcommpayWire.Value
        let project = signer ?? started.merchant.project
        let sum = V.object([("amount", .number(String(started.amount))), ("currency", .string(started.currency))])
        var payment: [(String, V)] = [("id", .string(started.attempt.rawValue)), ("type", .string("purchase")), ("status", .string(status)),
                                      ("date", .string("2026-05-04T10:00:05+0000")), ("method", .string("card")), ("sum", sum),
                                      ("description", .string("Green tea"))]
        if let cascading { payment.append(("cascading_with_redirect", .bool(cascading))) }
        let operationStatus = status == "success" || status == "decline" ? status : "processing"
        var body = V.object([
            ("project_id", .number(String(project.id))),
            ("payment", .object(payment)),
            ("account", .object([("number", .string("400002******1488")), ("token", .string("f8c2c15af1")), ("type", .string("visa")),
                                 ("id", .number("100")), ("card_holder", .string(holder)), ("expiry_month", .string("05")),
                                 ("expiry_year", .string("2030"))])),
            ("customer", .object([("id", .string("customer-1")), ("phone", .string("100"))])),
            ("operation", .object([("id", .number(String(operationID))), ("type", .string("sale")), ("status", .string(operationStatus)),
                                   ("date", .string("2026-05-04T10:00:05+0000")), ("created_date", .string("2026-05-04T10:00:01+0000")),
                                   ("request_id", .string("a3d2c082761")), ("sum_initial", sum), ("sum_converted", sum),
                                   ("code", .string(status == "success" ? "0" : "20000")),
                                   ("message", .string(status == "success" ? "Success" : "General decline")), ("eci", .string("07")),
                                   ("provider", .object([("id", .number("3")), ("payment_id", .string("159825508")),
                                                         ("auth_code", .string("563253"))]))])),
        ])
        for (path, value) in changes { body = body.setting(path, value) }
        return EcommpayWire.signed(body, secret: project.secret)
    }

    /// Gate, as the merchant server reaches it: `POST {base}/v2/payment/status`.
    ///
    /// By default it answers about the payments the app's SDK opened (``register(_:project:amount:currency:)``)
    /// with the status set for them (``setStatus(_:for:)``, `processing` until then), signed with the
    /// project's key, the signature at the top level. No vendor source shows a signed Gate answer (the
    /// WooCommerce plugin never checks one; the docs say "certain responses" carry a signature), so the
    /// signature's place is the one `EcpSigner::sign` gives a body without `general`. A payment never
    /// registered gets `errors` (the docs: "this payment has not been found"). A test plays a man in the
    /// middle with ``intercept(_:)``.
    final class Upstream: HTTPTransport, Sendable {
        /// What a man in the middle answers to a status request (its parsed body); nil lets Gate answer.
        typealias Responder = @Sendable (_ request: EcommpayWire.Value?) -> TransportResponse?

        struct Opened: Sendable {
            let project: Project
            let amount: Int64
            let currency: String
        }

        private struct State {
            var projects: [Int: Project] = [:]
            var payments: [String: Opened] = [:]
            var statuses: [String: String] = [:]
            var responder: Responder?
            var requests: [TransportRequest] = []
        }
        private let state = Locked(State())

        init(projects: [Project]) {
            state.withLock { state in
                for project in projects { state.projects[project.id] = project }
            }
        }

        func register(_ attempt: AttemptReference, project: Project, amount: Int64, currency: String) {
            state.withLock { $0.payments[attempt.rawValue] = Opened(project: project, amount: amount, currency: currency) }
        }

        /// What Gate says about `attempt` from now on (`success`, `decline`, …).
        func setStatus(_ status: String, for attempt: AttemptReference) {
            state.withLock { $0.statuses[attempt.rawValue] = status }
        }

        /// Installs a man in the middle (nil removes it).
        func intercept(_ responder: Responder?) {
            state.withLock { $0.responder = responder }
        }

        /// Every request the merchant server sent.
        var requests: [TransportRequest] { state.withLock { $0.requests } }

        func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
            let body = EcommpayWire.Value.parse(request.body ?? Data())
            let paymentID = body?["general"]?["payment_id"]?.string ?? ""
            let (responder, opened, status) = state.withLock { state in
                state.requests.append(request)
                return (state.responder, state.payments[paymentID], state.statuses[paymentID] ?? "processing")
            }
            if let responder, let answer = responder(body) { return answer }
            guard request.url.path == "/v2/payment/status", let opened,
                  body?["general"]?["project_id"]?.number == String(opened.project.id) else {
                return Self.json(.object([("errors", .array([.object([("code", .string("3061")), ("message", .string("Payment not found"))])]))]))
            }
            return Self.json(answer(paymentID, opened: opened, status: status, secret: opened.project.secret))
        }

        /// A signed status answer about `paymentID`.
        func answer(_ paymentID: String, opened: Opened, status: String, secret: String?, changes: [([String], EcommpayWire.Value?)] = []) -> EcommpayWire.Value {
            typealias V = EcommpayWire.Value
            let sum = V.object([("amount", .number(String(opened.amount))), ("currency", .string(opened.currency))])
            var body = V.object([
                ("project_id", .number(String(opened.project.id))),
                ("payment", .object([("id", .string(paymentID)), ("type", .string("purchase")), ("status", .string(status)),
                                     ("date", .string("2026-05-04T10:00:05+0000")), ("method", .string("card")), ("sum", sum)])),
                ("operations", .array([.object([("id", .number("100")), ("type", .string("sale")), ("status", .string(status)),
                                                ("sum_initial", sum), ("code", .string("0")), ("message", .string("Success"))])])),
            ])
            for (path, value) in changes { body = body.setting(path, value) }
            return secret.map { EcommpayWire.signed(body, secret: $0) } ?? body
        }

        /// What Gate would answer about `started` (signed with `secret`, the project's unless told; nil: unsigned).
        func answer(_ started: Started, status: String, secret: String?? = .none, changes: [([String], EcommpayWire.Value?)] = []) -> EcommpayWire.Value {
            let opened = Opened(project: started.merchant.project, amount: started.amount, currency: started.currency)
            let key: String? = switch secret {
            case .none: started.merchant.project.secret
            case .some(let value): value
            }
            return answer(started.attempt.rawValue, opened: opened, status: status, secret: key, changes: changes)
        }

        /// A 200 answer with a JSON body.
        static func json(_ value: EcommpayWire.Value, statusCode: Int = 200) -> TransportResponse {
            TransportResponse(statusCode: statusCode, headers: ["Content-Type": "application/json"], body: value.serialized())
        }
    }
}

/// ecommpay's wire, written for these tests from the vendor's Python SDK and independent of the module
/// (`EcommpaySigner`, `EcommpaySignatureString`, `OrderedJSON`), so a forgery the module accepts is one
/// these rules say ecommpay signed.
///
/// The rule (`ITECOMMPAY/paymentpage-sdk-python@35ed5ecb195fe72fea8bf052f5f22aa101f12570`
/// `payment_page_sdk/signature_handler.py`): every leaf becomes `path:value`; nested keys join with `:`,
/// a `:` inside a key is written `::`; a list's items are keyed by their index; `frame_mode` is skipped
/// at every level; an empty list or object adds nothing; `true` → `1`, `false` → `0`, `null` → empty, a
/// number as its text, a string as it is. Sorted by path (code points), joined with `;`, then
/// Base64(HMAC-SHA512(secret)). A callback's own `signature` members are removed first, at every level of
/// objects but not inside lists (`payment_page_sdk/callback.py`, `__remove_param`).
enum EcommpayWire {
    /// A JSON value as these tests write it: members in order, numbers as their text, repeats allowed.
    indirect enum Value: Sendable, Equatable {
        case object([Member])
        case array([Value])
        case string(String)
        case number(String)
        case bool(Bool)
        case null

        struct Member: Sendable, Equatable {
            var key: String
            var value: Value
        }

        static func object(_ pairs: [(String, Value)]) -> Value { .object(pairs.map { Member(key: $0.0, value: $0.1) }) }

        subscript(key: String) -> Value? {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.key == key }?.value
        }

        var string: String? {
            if case .string(let text) = self { return text }
            return nil
        }

        var number: String? {
            if case .number(let text) = self { return text }
            return nil
        }

        /// The value with the member at `path` set (added at the end of its object when absent, the
        /// objects on the way created), or removed when `value` is nil.
        func setting(_ path: [String], _ value: Value?) -> Value {
            guard let first = path.first else { return value ?? self }
            var members: [Member] = if case .object(let members) = self { members } else { [] }
            if let index = members.firstIndex(where: { $0.key == first }) {
                if path.count == 1, value == nil {
                    members.remove(at: index)
                } else {
                    members[index].value = members[index].value.setting(Array(path.dropFirst()), value)
                }
            } else if let value {
                members.append(Member(key: first, value: Value.object([Member]()).setting(Array(path.dropFirst()), value)))
            }
            return .object(members)
        }

        /// Compact JSON text: members in order, numbers as their text, `"`, `\` and control characters escaped.
        func serialized() -> Data { Data(text.utf8) }

        var text: String {
            switch self {
            case .object(let members): "{" + members.map { Self.quoted($0.key) + ":" + $0.value.text }.joined(separator: ",") + "}"
            case .array(let items): "[" + items.map(\.text).joined(separator: ",") + "]"
            case .string(let text): Self.quoted(text)
            case .number(let text): text
            case .bool(let flag): flag ? "true" : "false"
            case .null: "null"
            }
        }

        static func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }

        /// Parses JSON through Foundation (for reading the requests the server sends: they hold no
        /// numbers these tests compare as text beyond integers, no booleans).
        static func parse(_ data: Data) -> Value? {
            guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
            return from(object)
        }

        private static func from(_ any: Any) -> Value {
            switch any {
            case let dictionary as [String: Any]:
                .object(dictionary.keys.sorted().map { ($0, from(dictionary[$0]!)) })
            case let array as [Any]: .array(array.map(from))
            case let text as String: .string(text)
            case let number as NSNumber: .number(number.stringValue)
            default: .null
            }
        }
    }

    /// The `path:value` leaves of `value`, sorted by path.
    static func leaves(_ value: Value) -> [(path: String, value: String)] {
        var out: [(String, String)] = []
        func walk(_ value: Value, _ prefix: String) {
            func join(_ key: String) -> String { prefix.isEmpty ? key : prefix + ":" + key }
            switch value {
            case .object(let members):
                for member in members where member.key != "frame_mode" {
                    walk(member.value, join(member.key.replacingOccurrences(of: ":", with: "::")))
                }
            case .array(let items):
                for (index, item) in items.enumerated() { walk(item, join(String(index))) }
            case .string(let text): out.append((prefix, text))
            case .number(let text): out.append((prefix, text))
            case .bool(let flag): out.append((prefix, flag ? "1" : "0"))
            case .null: out.append((prefix, ""))
            }
        }
        walk(value, "")
        // Python's sort of str keys: code-point order, which is the order of their UTF-8 bytes.
        return out.sorted { Array($0.0.unicodeScalars.map(\.value)).lexicographicallyPrecedes($1.0.unicodeScalars.map(\.value)) }
    }

    /// The string to sign.
    static func string(_ value: Value) -> String {
        leaves(value).map { "\($0.path):\($0.value)" }.joined(separator: ";")
    }

    /// Base64 of HMAC-SHA512 of `string`, keyed with `secret`.
    static func mac(_ string: String, secret: String) -> Data {
        Data(HMAC<SHA512>.authenticationCode(for: Data(string.utf8), using: SymmetricKey(data: Data(secret.utf8))))
    }

    static func signature(_ value: Value, secret: String) -> String {
        mac(string(withoutSignatures(value)), secret: secret).base64EncodedString()
    }

    /// `value` without any member named `signature`, in objects at every level (lists are not entered).
    static func withoutSignatures(_ value: Value) -> Value {
        guard case .object(let members) = value else { return value }
        return .object(members.filter { $0.key != "signature" }.map { .init(key: $0.key, value: withoutSignatures($0.value)) })
    }

    /// `value` signed: its signature as the last top-level member.
    static func signed(_ value: Value, secret: String) -> Value {
        let bare = withoutSignatures(value)
        return bare.setting(["signature"], .string(signature(bare, secret: secret)))
    }
}
