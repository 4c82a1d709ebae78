import Crypto
import _CryptoExtras
import Foundation
import Hummingbird
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Fixtures

/// The vendor fixtures beside this file (`Fixtures/worldline`, each naming its source).
enum WorldlineFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/worldline")

    static func load(_ name: String) throws -> JSONValue {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            Issue.record("Worldline fixture missing: \(url.path)")
            throw FixtureMissing()
        }
        return try JSONValue.parse([UInt8](Data(contentsOf: url)))
    }

    struct FixtureMissing: Error {}
}

// MARK: - An independent v1HMAC signer (written from the Python SDK's v1HMAC rule, not from the emulator)

enum TestSigner {
    /// RFC 1123 date, as the python SDK writes it.
    static func date(_ date: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    static func authorization(method: String, contentType: String?, date: String, gcsHeaders: [(String, String)],
                              resource: String, keyId: String, secret: String) -> String {
        var text = method + "\n" + (contentType ?? "") + "\n" + date + "\n"
        for (name, value) in gcsHeaders.map({ ($0.0.lowercased(), $0.1) }).sorted(by: { $0.0 < $1.0 }) {
            text += name + ":" + value + "\n"
        }
        text += resource + "\n"
        let mac = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "GCS v1HMAC:\(keyId):" + Data(mac).base64EncodedString()
    }

    /// Base64(HMAC-SHA256(secret, body)): the webhook signature rule of the Connect docs.
    static func webhookSignature(_ body: Data, secret: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))).base64EncodedString()
    }
}

// MARK: - A tiny JWE encryptor (written from RFC 7516/7518, not from the emulator)

enum TestJWE {
    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The Swift SDK's header has a space after each comma; js and android write it compact.
    static func header(keyId: String, spaced: Bool, alg: String = "RSA-OAEP") -> String {
        spaced ? "{\"alg\":\"\(alg)\", \"enc\":\"A256CBC-HS512\", \"kid\":\"\(keyId)\"}"
            : "{\"alg\":\"\(alg)\",\"enc\":\"A256CBC-HS512\",\"kid\":\"\(keyId)\"}"
    }

    static func encrypt(_ plaintext: String, publicKeyDER: Data, header: String) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let contentKey = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let iv = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let publicKey = try _RSA.Encryption.PublicKey(derRepresentation: publicKeyDER)
        let wrapped = try publicKey.encrypt(contentKey, padding: .PKCS1_OAEP)
        let ciphertext = try AES._CBC.encrypt(Array(plaintext.utf8), using: SymmetricKey(data: contentKey[32..<64]),
                                              iv: AES._CBC.IV(ivBytes: iv))
        let protected = base64URL(Array(header.utf8))
        let aad = Array(protected.utf8)
        var input = aad + iv + Array(ciphertext)
        let bits = UInt64(aad.count * 8)
        for shift in stride(from: 56, through: 0, by: -8) { input.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        let tag = Array(HMAC<SHA512>.authenticationCode(for: input, using: SymmetricKey(data: contentKey[0..<32]))).prefix(32)
        return [protected, base64URL(wrapped), base64URL(iv), base64URL(ciphertext), base64URL(tag)].joined(separator: ".")
    }

    /// The Swift SDK's plaintext (hand-concatenated, upper-case UUID nonce, `tokenize` only when true).
    static func swiftPlaintext(session: String, productId: Int, values: [(String, String)], tokenize: Bool = false) -> String {
        let pairs = values.map { "{\"key\":\"\($0.0)\",\"value\":\"\($0.1)\"}" }.joined(separator: ",")
        return "{\"clientSessionId\": \"\(session)\", \"nonce\": \"\(UUID().uuidString)\", \"paymentProductId\": \(productId), "
            + (tokenize ? "\"tokenize\": true, " : "") + "\"paymentValues\": [\(pairs)]}"
    }

    /// The js SDK's plaintext (`JSON.stringify`, 32-hex nonce, `tokenize` always, device information).
    static func jsPlaintext(session: String, productId: Int, values: [(String, String)]) -> String {
        let pairs = values.map { "{\"key\":\"\($0.0)\",\"value\":\"\($0.1)\"}" }.joined(separator: ",")
        let nonce = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return "{\"clientSessionId\":\"\(session)\",\"nonce\":\"\(nonce)\",\"tokenize\":false,"
            + "\"collectedDeviceInformation\":{\"timezoneOffsetUtcMinutes\":\"-60\",\"locale\":\"nl-NL\","
            + "\"browserData\":{\"javaScriptEnabled\":true,\"javaEnabled\":false,\"colorDepth\":24,\"screenHeight\":1080,"
            + "\"screenWidth\":1920,\"innerHeight\":900,\"innerWidth\":1600}},"
            + "\"paymentProductId\":\(productId),\"paymentValues\":[\(pairs)]}"
    }

    /// The android SDK's plaintext order (`tokenize` only if true, lower-case UUID nonce).
    static func androidPlaintext(session: String, productId: Int, values: [(String, String)]) -> String {
        let pairs = values.map { "{\"key\":\"\($0.0)\",\"value\":\"\($0.1)\"}" }.joined(separator: ",")
        return "{\"paymentProductId\":\(productId),\"clientSessionId\":\"\(session)\","
            + "\"nonce\":\"\(UUID().uuidString.lowercased())\",\"paymentValues\":[\(pairs)]}"
    }
}

// MARK: - Harness

/// A sandbox with a Worldline emulator, and clients that talk to it over real HTTP.
struct WorldlineHarness {
    static let merchant = WorldlineEmulator.Merchant(merchantId: "1234", apiKeyId: "apiKeyId", secretApiKey: "secretApiKey",
                                                     webhookKeyId: "dummy-key-id", webhookSecretKey: "hello+world")
    static let otherMerchant = WorldlineEmulator.Merchant(merchantId: "5678", apiKeyId: "other-key-id",
                                                          secretApiKey: "other secret", webhookKeyId: "other-wh",
                                                          webhookSecretKey: "other webhook secret")
    /// Shared across tests: RSA key generation is slow.
    static let sharedKey: WorldlineEmulator.EncryptionKey? = try? .generate(keyId: "86b64e4e-f43e-4a27-9863-9bbd5b499f82")
    static var key: WorldlineEmulator.EncryptionKey { get throws { try #require(sharedKey, "no RSA key") } }
    static let swiftMeta = Data(#"{"platformIdentifier":"iOS/17.2","sdkCreator":"Wordline Connect","screenSize":"11702532","deviceBrand":"Apple","deviceType":"iPhone15,2","appIdentifier":"UNKNOWN","sdkIdentifier":"SwiftClientSDK/v7.0.0"}"#.utf8).base64EncodedString()

    let emulator: WorldlineEmulator
    let sandbox: RunningSandbox
    let session: URLSession

    var root: URL { sandbox.baseURL }

    static func with<T>(webhookURL: URL? = nil, retryInterval: Duration = .milliseconds(20), attempts: Int = 3,
                        timeoutHold: Duration = .milliseconds(300), now: @escaping @Sendable () -> Date = { Date() },
                        _ body: (WorldlineHarness) async throws -> T) async throws -> T {
        var first = merchant
        first.webhookURL = webhookURL
        let emulator = try WorldlineEmulator(merchants: [first, otherMerchant], encryptionKey: try key,
                                             webhookRetryInterval: retryInterval, webhookMaxAttempts: attempts,
                                             webhookTimeout: .seconds(2), timeoutHold: timeoutHold, now: now)
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let harness = WorldlineHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
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
        await emulator.waitForWebhooks()
        await sandbox.stop()
        session.finishTasksAndInvalidate()
    }

    // MARK: Server API

    /// A signed Server API call; `path` includes any query, exactly as sent.
    func server(_ method: String, _ path: String, json body: String? = nil, merchant: WorldlineEmulator.Merchant = merchant,
                headers extra: [(String, String)] = [], idempotenceKey: String? = nil, authorization: String? = nil,
                date: String? = TestSigner.date(), signedResource: String? = nil,
                on otherSession: URLSession? = nil) async throws -> WLResult {
        var request = URLRequest(url: try #require(URL(string: root.absoluteString + path)))
        request.httpMethod = method
        var gcs: [(String, String)] = [("X-GCS-ServerMetaInfo", Data(#"{"sdkCreator":"Till tests","integrator":"Till"}"#.utf8).base64EncodedString())]
        if let idempotenceKey { gcs.append(("X-GCS-Idempotence-Key", idempotenceKey)) }
        gcs += extra.filter { $0.0.lowercased().hasPrefix("x-gcs") }
        let contentType = body == nil ? nil : "application/json"
        if let body { request.httpBody = Data(body.utf8) }
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if let date { request.setValue(date, forHTTPHeaderField: "Date") }
        for (name, value) in gcs { request.setValue(value, forHTTPHeaderField: name) }
        let auth = authorization ?? TestSigner.authorization(method: method, contentType: contentType, date: date ?? "",
                                                             gcsHeaders: gcs, resource: signedResource ?? path,
                                                             keyId: merchant.apiKeyId, secret: merchant.secretApiKey)
        request.setValue(auth, forHTTPHeaderField: "Authorization")
        return try WLResult(try await exchange(request, on: otherSession ?? session))
    }

    func createSession() async throws -> ClientSessionInfo {
        let result = try await server("POST", "/v1/1234/sessions", json: "{}")
        #expect(result.status == 201, "\(result.raw.text)")
        return ClientSessionInfo(id: try #require(result["clientSessionId"]?.stringValue),
                                 customerId: try #require(result["customerId"]?.stringValue),
                                 clientApiUrl: try #require(result["clientApiUrl"]?.stringValue))
    }

    static let futureExpiry: String = {
        let year = Calendar(identifier: .gregorian).component(.year, from: Date()) % 100 + 3
        return String(format: "12%02d", year)
    }()

    /// An encrypted customer input for `card`, made as the Swift SDK makes it.
    func encryptedInput(card: String, productId: Int = 1, session: ClientSessionInfo, expiry: String = futureExpiry,
                        dialect: String = "swift") throws -> String {
        let values = [("cardNumber", card), ("expiryDate", expiry), ("cvv", "123")]
        let plaintext: String
        switch dialect {
        case "js": plaintext = TestJWE.jsPlaintext(session: session.id, productId: productId, values: values)
        case "android": plaintext = TestJWE.androidPlaintext(session: session.id, productId: productId, values: values)
        default: plaintext = TestJWE.swiftPlaintext(session: session.id, productId: productId, values: values)
        }
        let key = try Self.key
        return try TestJWE.encrypt(plaintext, publicKeyDER: key.publicKeyDER,
                                   header: TestJWE.header(keyId: key.keyId, spaced: dialect == "swift"))
    }

    static func createBody(input: String, amount: Int64 = 2345, currency: String = "EUR", reference: String? = nil,
                           card: String = "", extra: String = "") -> String {
        let references = reference.map { #", "references": {"merchantReference": "\#($0)"}"# } ?? ""
        return #"{"encryptedCustomerInput": "\#(input)", "order": {"amountOfMoney": {"amount": \#(amount), "currencyCode": "\#(currency)"}\#(references)}\#(card)\#(extra)}"#
    }

    /// Session, encryption and create payment in one go.
    func pay(card: String = "4111111111111111", productId: Int = 1, amount: Int64 = 2345, currency: String = "EUR",
             reference: String? = nil, extra: String = "", idempotenceKey: String? = nil) async throws -> WLResult {
        let session = try await createSession()
        let input = try encryptedInput(card: card, productId: productId, session: session)
        return try await server("POST", "/v1/1234/payments",
                                json: Self.createBody(input: input, amount: amount, currency: currency, reference: reference, extra: extra),
                                idempotenceKey: idempotenceKey)
    }

    // MARK: Client API

    func client(_ method: String, _ path: String, session: ClientSessionInfo, body: String? = nil,
                meta: String? = swiftMeta, customerId: String? = nil, authorization: String? = nil) async throws -> WLResult {
        var request = URLRequest(url: try #require(URL(string: session.clientApiUrl + "/" + (customerId ?? session.customerId) + path)))
        request.httpMethod = method
        request.setValue(authorization ?? "GCS v1Client:\(session.id)", forHTTPHeaderField: "Authorization")
        if let meta { request.setValue(meta, forHTTPHeaderField: "X-GCS-ClientMetaInfo") }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try WLResult(try await exchange(request, on: self.session))
    }

    func admin(_ path: String, json body: String? = nil) async throws -> RawResponse {
        var request = URLRequest(url: root.appendingPathComponent("admin/worldline").appendingPathComponent(path))
        if let body {
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try await exchange(request, on: session)
    }
}

struct ClientSessionInfo {
    var id: String
    var customerId: String
    var clientApiUrl: String
}

/// A Connect answer: status, headers and the JSON body.
struct WLResult {
    var status: Int
    var json: JSONValue
    var raw: RawResponse

    init(_ raw: RawResponse) throws {
        self.raw = raw
        status = raw.status
        json = raw.body.isEmpty ? .null : (try? JSONValue.parse(Array(raw.body))) ?? .null
    }

    subscript(key: String) -> JSONValue? { json[key] }

    /// A member by dotted path (`payment.statusOutput.statusCode`, `errors.0.code`).
    func at(_ path: String) -> JSONValue? {
        var value: JSONValue? = json
        for part in path.split(separator: ".") {
            if let index = Int(part), case .array(let items)? = value {
                value = index < items.count ? items[index] : nil
            } else {
                value = value?[String(part)]
            }
        }
        return value
    }

    func string(_ path: String) -> String? { at(path)?.parameterText }
}

extension JSONValue {
    /// The member names of an object, sorted.
    var keys: [String] { (objectMembers ?? []).map(\.key).sorted() }
}

// MARK: - A webhook endpoint that echoes the verification header

/// Plays a merchant's webhook endpoint: answers the endpoint verification by echoing the header (or
/// not), records events with their headers, and answers them with scripted statuses.
actor WebhookEndpoint {
    struct Received: Sendable {
        var method: String
        var headers: [String: [String]]
        var body: Data
    }

    private(set) var received: [Received] = []
    private var statuses: [Int]
    private let echo: Bool

    init(statuses: [Int] = [], echo: Bool = true) {
        self.statuses = statuses
        self.echo = echo
    }

    func handle(method: String, headers: [String: [String]], body: Data) -> (Int, String) {
        received.append(Received(method: method, headers: headers, body: body))
        if method == "GET" {
            return (200, echo ? headers["x-gcs-webhooks-endpoint-verification"]?.first ?? "" : "OK")
        }
        return (statuses.isEmpty ? 200 : statuses.removeFirst(), "")
    }

    var events: [Received] { received.filter { $0.method == "POST" } }

    /// Starts a server for it; the URL is `…/hook`.
    static func start(_ endpoint: WebhookEndpoint) async throws -> (URL, RunningSandbox) {
        let server = try await Sandbox.start(emulators: [EndpointEmulator(endpoint: endpoint)])
        return (server.baseURL.appendingPathComponent("hook"), server)
    }

    private struct EndpointEmulator: SandboxEmulator {
        let endpoint: WebhookEndpoint
        var name: String { "hook" }

        func mount(_ mount: SandboxMount) {
            let endpoint = self.endpoint
            let handler: @Sendable (Request, SandboxRequestContext) async throws -> Response = { request, _ in
                let body = (try? await request.body.collect(upTo: 1 << 20)).map { Data($0.readableBytesView) } ?? Data()
                var headers: [String: [String]] = [:]
                for field in request.headers { headers[field.name.rawName.lowercased(), default: []].append(field.value) }
                let (status, text) = await endpoint.handle(method: request.method.rawValue, headers: headers, body: body)
                return Response(status: .init(code: status), headers: [.contentType: "text/plain"],
                                body: .init(byteBuffer: ByteBuffer(string: text)))
            }
            mount.router.get("/hook", use: handler)
            mount.router.post("/hook", use: handler)
        }
    }
}

/// Waits (up to `seconds`) until `condition` holds.
func eventually(seconds: Double = 5, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}
