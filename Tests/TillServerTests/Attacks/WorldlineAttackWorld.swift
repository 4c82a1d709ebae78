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
import TillSandbox
import TillTesting
import TillWorldline
import TillWorldlineServer
@testable import TillServer

/// The real merchant server on 127.0.0.1 serving two merchants, A and B, each with its own Worldline
/// Connect account on the sandbox's emulator (its own API key and webhook key), for attacks on the
/// Worldline endpoints. Merchant A also has a `fake` gateway (payments with metadata `route=fake` go
/// there), so one merchant has attempts on two gateways.
///
/// Both accounts' webhooks go to the server's `/v1/notifications/worldline`, as Worldline sends them.
/// What "Worldline signed" means in a test: a body the emulator signed with the account's webhook secret
/// (its own events, its replays, or ``gatewaySigned(_:body:)``). What an attacker can do: post anything
/// (``post(_:headers:)``) and hold everything the app holds (client secret, client session, JWEs).
final class WorldlineAttackWorld: @unchecked Sendable {
    /// One Worldline Connect account.
    struct Account: Sendable {
        let merchantId: String
        let apiKeyId: String
        let secretApiKey: String
        let webhookKeyId: String
        let webhookSecret: String
    }

    /// One merchant of the server, with its Worldline account.
    struct Merchant: Sendable {
        let id: String
        let key: String
        let account: Account
    }

    /// A payment the app started: its id, client secret, attempt and the attempt's client session.
    struct Started: Sendable {
        let payment: String
        let secret: String
        let attempt: AttemptReference
        let session: WorldlinePreparation
    }

    static let gateway: GatewayID = "worldline"
    /// Approved at once (SALE: `CAPTURED`).
    static let approvedCard = "4111111111111111"
    /// Declined: HTTP 402, `REJECTED`.
    static let declinedCard = "4000000000000002"
    /// Left `AUTHORIZATION_REQUESTED` until the emulator settles it.
    static let pendingCard = "4000000000000259"
    /// 23.45 EUR.
    static let amount: Int64 = 2345

    let a: Merchant
    let b: Merchant
    let emulator: WorldlineEmulator
    let sandbox: RunningSandbox
    let store: any PaymentStore
    let serverURL: URL
    let fakeSecret: String
    private let server: Task<Void, any Error>

    init(_ kind: StoreKind, maxBodyBytes: Int = 65_536) async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        func account(_ name: String) -> Account {
            Account(merchantId: "wl\(name)\(tag)", apiKeyId: "api-\(name)-\(tag)", secretApiKey: "api-secret-\(name)-\(UUID().uuidString)",
                    webhookKeyId: "hook-\(name)-\(tag)", webhookSecret: "hook-secret-\(name)-\(UUID().uuidString)")
        }
        a = Merchant(id: "ma-\(tag)", key: "key-a-\(UUID().uuidString)", account: account("a"))
        b = Merchant(id: "mb-\(tag)", key: "key-b-\(UUID().uuidString)", account: account("b"))
        fakeSecret = "fake-secret-\(UUID().uuidString)"
        emulator = try WorldlineEmulator(
            merchants: [a, b].map { .init(merchantId: $0.account.merchantId, apiKeyId: $0.account.apiKeyId, secretApiKey: $0.account.secretApiKey,
                                          webhookKeyId: $0.account.webhookKeyId, webhookSecretKey: $0.account.webhookSecret) },
            webhookRetryInterval: .milliseconds(20), webhookMaxAttempts: 2)
        sandbox = try await Sandbox.start(emulators: [emulator])
        let base = sandbox.baseURL(of: emulator).absoluteString
        func worldline(_ prefix: String, _ merchant: Merchant) -> GatewayConfiguration {
            GatewayConfiguration(id: Self.gateway, module: "worldline",
                                 credentials: ["api_key_id": CredentialReference(env: "\(prefix)_WL_KEY"),
                                               "secret_api_key": CredentialReference(env: "\(prefix)_WL_SECRET"),
                                               "webhook_key_id": CredentialReference(env: "\(prefix)_WL_HOOK_KEY"),
                                               "webhook_secret_key": CredentialReference(env: "\(prefix)_WL_HOOK_SECRET")],
                                 settings: ["base_url": base, "merchant_id": merchant.account.merchantId])
        }
        let configuration = TillConfiguration(
            merchants: [
                MerchantConfiguration(
                    id: a.id, apiKey: CredentialReference(env: "A_KEY"),
                    gateways: [worldline("A", a),
                               GatewayConfiguration(id: "fake", module: "fake", credentials: ["notification_secret": CredentialReference(env: "FAKE")])],
                    routing: RoutingConfiguration(rules: [RoutingRule(when: RuleConditions(metadata: ["route": "fake"]), gateways: [RuleTarget("fake")])],
                                                  fallback: [Self.gateway]),
                    returnURLSchemes: ["shop"]),
                MerchantConfiguration(id: b.id, apiKey: CredentialReference(env: "B_KEY"), gateways: [worldline("B", b)],
                                      routing: RoutingConfiguration(fallback: [Self.gateway]), returnURLSchemes: ["shop"]),
            ],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused", publicURL: "http://127.0.0.1", maxBodyBytes: maxBodyBytes))
        var environment = ["A_KEY": a.key, "B_KEY": b.key, "FAKE": fakeSecret]
        for (prefix, merchant) in [("A", a), ("B", b)] {
            environment["\(prefix)_WL_KEY"] = merchant.account.apiKeyId
            environment["\(prefix)_WL_SECRET"] = merchant.account.secretApiKey
            environment["\(prefix)_WL_HOOK_KEY"] = merchant.account.webhookKeyId
            environment["\(prefix)_WL_HOOK_SECRET"] = merchant.account.webhookSecret
        }
        let state = try ServerState(configuration: configuration, plugins: [WorldlinePlugin.plugin, FakeGateway.plugin], environment: environment)
        store = try await kind.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        server = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        serverURL = URL(string: "http://127.0.0.1:\(await iterator.next() ?? 0)")!
        for merchant in [a, b] {
            await emulator.setWebhookURL(serverURL.appendingPathComponent("v1/notifications/worldline"), for: merchant.account.merchantId)
        }
    }

    func stop() async {
        await emulator.waitForWebhooks()
        await sandbox.stop()
        server.cancel()
        _ = await server.result
        try? await store.close()
    }

    /// Runs `body` in a fresh world and stops it after, whatever happens.
    static func with(_ kind: StoreKind, maxBodyBytes: Int = 65_536, _ body: (WorldlineAttackWorld) async throws -> Void) async throws {
        let w = try await WorldlineAttackWorld(kind, maxBodyBytes: maxBodyBytes)
        do { try await body(w) } catch {
            await w.stop()
            throw error
        }
        await w.stop()
    }

    // MARK: The merchant server, as the app and the merchant call it

    func call(_ method: String, _ path: String, body: Data? = nil, bearer: String?, headers: [String: String] = [:]) async throws -> ServerHarness.Answer {
        var request = URLRequest(url: serverURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        return ServerHarness.Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// The merchant creates a payment (EUR, NL) and the app prepares its first attempt with the client secret.
    func start(_ merchant: Merchant, minor: Int64 = amount, route: String? = nil) async throws -> Started {
        var intent: [String: Any] = ["merchantReference": "order-\(UUID().uuidString.prefix(8))", "amount": ["value": minor, "currency": "EUR"],
                                     "country": "NL", "method": "card", "customer": ["email": "buyer@example.com", "locale": "en_GB"]]
        if let route { intent["metadata"] = ["route": route] }
        let created = try await call("POST", "v1/payments", body: try JSONSerialization.data(withJSONObject: intent), bearer: merchant.key)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let payment = try #require(created.json["id"] as? String)
        let secret = try #require(created.json["clientSecret"] as? String)
        let prepared = try await call("POST", "v1/payments/\(payment)/attempts", body: Data(#"{"returnURLs":["shop://till/return"]}"#.utf8),
                                      bearer: secret)
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        let attempt = AttemptReference(rawValue: try #require(prepared.json["attempt"] as? String))
        let parameters = prepared.json["parameters"] as? [String: String] ?? [:]
        let session = route == nil ? try WorldlinePreparation(parameters: parameters)
            : WorldlinePreparation(clientSessionId: "-", customerId: "-", clientApiUrl: "-", assetUrl: "-", countryCode: "NL")
        return Started(payment: payment, secret: secret, attempt: attempt, session: session)
    }

    /// What the app's Worldline form produces for `card`: the JWE of the customer's input under the
    /// attempt's client session, encrypted to the gateway's public key.
    func jwe(_ session: WorldlinePreparation, card: String = approvedCard) throws -> String {
        let key = try WorldlinePublicKey(keyId: emulator.publicKey.keyId, publicKey: emulator.publicKey.publicKey)
        let input = WorldlineCustomerInput(clientSessionId: session.clientSessionId, paymentProductId: 1, values: [
            .init(key: "cardNumber", value: card), .init(key: "expiryDate", value: "1230"), .init(key: "cvv", value: "123"),
            .init(key: "cardholderName", value: "Ada Lovelace"),
        ])
        return try WorldlineEncryptor.encrypt(input, to: key)
    }

    /// The client meta information an app sends: Base64 of a JSON object.
    static let metaInfo = Data(#"{"platformIdentifier":"iOS/17.4","sdkIdentifier":"SwiftClientSDK/v7.0.0","screenSize":"1179x2556"}"#.utf8)
        .base64EncodedString()

    /// The app's submit, with `fields` as given (kind `encrypted_customer_input` unless told).
    func submit(_ attempt: AttemptReference, bearer: String, fields: [String: String],
                kind: String = WorldlineGateway.submissionKind) async throws -> ServerHarness.Answer {
        let body = try JSONSerialization.data(withJSONObject: ["kind": kind, "fields": fields])
        return try await call("POST", "v1/attempts/\(attempt.rawValue)/submit", body: body, bearer: bearer)
    }

    /// The honest submit of `card` for a started payment.
    func pay(_ started: Started, card: String = approvedCard) async throws -> ServerHarness.Answer {
        try await submit(started.attempt, bearer: started.secret, fields: [
            WorldlineGateway.encryptedInputField: try jwe(started.session, card: card), WorldlineGateway.clientMetaInfoField: Self.metaInfo,
        ])
    }

    // MARK: What the server holds

    func attempt(_ reference: AttemptReference) async throws -> StoredAttempt {
        let payment = try #require(try await store.payment(attempt: reference))
        return try #require(payment.attempts.first { $0.reference == reference })
    }

    func paymentStatus(_ reference: AttemptReference) async throws -> PaymentStatus? {
        try await store.payment(attempt: reference)?.status
    }

    /// The notifications stored for `attempt`, by outcome.
    func notifications(_ attempt: AttemptReference) async throws -> (all: Int, applied: Int) {
        (try await count(store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)'"),
         try await count(store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND outcome = 'applied'"))
    }

    func quarantine(_ merchant: Merchant) async throws -> [QuarantinedNotification] {
        try await store.quarantined(merchant: merchant.id, limit: 100)
    }

    /// Waits until every webhook the emulator has under way is answered, and a little longer for the
    /// inquiries the server starts in the background.
    func settle() async {
        await emulator.waitForWebhooks()
        try? await Task.sleep(for: .milliseconds(100))
        await emulator.waitForWebhooks()
    }

    /// Waits until every webhook the emulator has under way is answered, then until `condition` holds
    /// (at most 10 s: the server inquires in the background, and a loaded 2-core machine running the whole
    /// suite needed more than 5). Returns whether it held.
    @discardableResult
    func settle(until condition: () async throws -> Bool) async rethrows -> Bool {
        await emulator.waitForWebhooks()
        for _ in 0..<500 {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
            await emulator.waitForWebhooks()
        }
        return try await condition()
    }

    // MARK: The notification endpoint

    /// Posts `body` to `/v1/notifications/worldline` with exactly `headers`, as anyone on the internet can.
    func post(_ body: Data, headers: [String: String]) async throws -> ServerHarness.Answer {
        var request = URLRequest(url: serverURL.appendingPathComponent("v1/notifications/worldline"))
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        return ServerHarness.Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// `X-GCS-Signature` of `body` under `secret`: Base64(HMAC-SHA256), computed here independently
    /// of the module and the emulator.
    static func signature(_ body: Data, secret: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))).base64EncodedString()
    }

    /// `body` sent by the gateway itself: the emulator signs it with `account`'s webhook secret and
    /// posts it to the account's webhook URL (the server). Returns the HTTP status the server answered.
    func gatewaySigned(_ account: Account, body: Data) async -> Int? {
        await emulator.sendCraftedEvent(.init(merchantId: account.merchantId, body: String(decoding: body, as: UTF8.self)))?.status
    }

    /// A webhook event body. `payment` and `refund` are the objects as Worldline writes them.
    static func event(_ account: Account, type: String, id: String = UUID().uuidString.lowercased(), apiVersion: String? = "v1",
                      payment: [String: Any]? = nil, refund: [String: Any]? = nil) throws -> Data {
        var event: [String: Any] = ["id": id, "created": "2026-05-04T10:00:00.000+0200", "merchantId": account.merchantId, "type": type]
        if let apiVersion { event["apiVersion"] = apiVersion }
        if let payment { event["payment"] = payment }
        if let refund { event["refund"] = refund }
        return try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])
    }

    /// A payment object: `status`, its amount, the merchant reference (none for `nil`).
    static func payment(id: String = "000000000000000000990000100001", status: String, amount: Int64 = amount, currency: String = "EUR",
                        merchantReference: String?, amountRefunded: Int64? = nil) -> [String: Any] {
        var output: [String: Any] = ["amountOfMoney": ["amount": amount, "currencyCode": currency]]
        if let merchantReference { output["references"] = ["merchantReference": merchantReference] }
        if let amountRefunded { output["amountRefunded"] = amountRefunded }
        return ["id": id, "status": status, "paymentOutput": output]
    }

    /// A refund object whose own reference is `merchantReference` (Till writes `<attempt>-<n>`).
    static func refund(status: String = "REFUNDED", amount: Int64, currency: String = "EUR", merchantReference: String) -> [String: Any] {
        ["id": "000000000000000000990000300001", "status": status,
         "refundOutput": ["amountOfMoney": ["amount": amount, "currencyCode": currency], "references": ["merchantReference": merchantReference]]]
    }

    // MARK: The Server API, as someone with the account's API key calls it (outside Till)

    /// One v1HMAC-signed Server API call to the emulator.
    func serverAPI(_ account: Account, _ method: String, _ path: String, query: String? = nil,
                   json: [String: Any]? = nil) async throws -> (status: Int, json: [String: Any]) {
        let resource = "/v1/\(account.merchantId)\(path)"
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) }
        let contentType = body == nil ? nil : "application/json"
        let date = WorldlineV1HMAC.httpDate(Date())
        let text = WorldlineV1HMAC.stringToSign(method: method, contentType: contentType, date: date, headers: [String: String](),
                                                path: resource, query: query)
        var components = try #require(URLComponents(url: sandbox.baseURL(of: emulator), resolvingAgainstBaseURL: false))
        components.percentEncodedPath = resource
        components.percentEncodedQuery = query
        var request = URLRequest(url: try #require(components.url))
        request.httpMethod = method
        request.httpBody = body
        request.setValue(date, forHTTPHeaderField: "Date")
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        request.setValue(try WorldlineV1HMAC.authorization(apiKeyId: account.apiKeyId, secretApiKey: account.secretApiKey, stringToSign: text),
                         forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    /// A payment created on `account` outside Till (by card, SALE) with `merchantReference`; its id.
    func outsidePayment(_ account: Account, merchantReference: String?, amount: Int64, currency: String = "EUR",
                        card: String = approvedCard) async throws -> String {
        var order: [String: Any] = ["amountOfMoney": ["amount": amount, "currencyCode": currency],
                                    "customer": ["billingAddress": ["countryCode": "NL"]]]
        if let merchantReference { order["references"] = ["merchantReference": merchantReference] }
        let answer = try await serverAPI(account, "POST", "/payments", json: [
            "order": order,
            "cardPaymentMethodSpecificInput": ["card": ["cardNumber": card, "expiryDate": "1230", "cvv": "123"], "authorizationMode": "SALE",
                                               "requiresApproval": false],
        ])
        let payment = (answer.json["payment"] ?? (answer.json["paymentResult"] as? [String: Any])?["payment"]) as? [String: Any]
        return try #require(payment?["id"] as? String, "HTTP \(answer.status) \(answer.json)")
    }

    /// The payments Worldline holds on `account` for `merchantReference`.
    func worldlinePayments(_ account: Account, merchantReference: String) async throws -> [[String: Any]] {
        let answer = try await serverAPI(account, "GET", "/payments", query: "merchantReference=\(merchantReference)&limit=10")
        return answer.json["payments"] as? [[String: Any]] ?? []
    }

    /// Worldline's id of the one payment for `attempt`.
    func worldlinePaymentId(_ account: Account, _ attempt: AttemptReference) async throws -> String {
        let found = try await worldlinePayments(account, merchantReference: attempt.rawValue)
        #expect(found.count == 1, "\(found)")
        return try #require(found.first?["id"] as? String)
    }

    // MARK: Raw HTTP

    /// One HTTP/1.1 exchange on a fresh connection, the request head written byte for byte; the
    /// status, the head's lines and the body (nil status when the server closed without an answer).
    func raw(_ head: [UInt8]) async throws -> (status: Int?, head: String, body: [UInt8]) {
        let port = serverURL.port ?? 0
        let received: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try Self.exchange(port: port, head) }) }
        }
        guard let end = (0..<max(0, received.count - 3)).first(where: { received[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }) else {
            return (nil, String(decoding: received, as: UTF8.self), [])
        }
        let text = String(decoding: received[..<end], as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2)
        return (parts.count > 1 ? Int(parts[1]) : nil, text, Array(received[(end + 4)...]))
    }

    struct SocketError: Error { let errno: Int32 }

    private static func exchange(port: Int, _ bytes: [UInt8]) throws -> [UInt8] {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw SocketError(errno: errno) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SocketError(errno: errno) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            // The server may answer and close before reading everything (a head over its limit).
            guard n > 0 else { break }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            received += buffer[0..<n]
        }
        return received
    }
}
