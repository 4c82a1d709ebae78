import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A sandbox with a PayFort emulator, and a client that talks to it over real HTTP.
struct PayFortHarness {
    static let sha256Merchant = PayFortMerchant(
        accessCode: "zx0IPmPy5jp1vAz8Kpg7", merchantIdentifier: "CycHZxVj",
        requestPhrase: "TESTSHAIN$", responsePhrase: "TESTSHAOUT!", sha512: false)
    static let sha512Merchant = PayFortMerchant(
        accessCode: "Q8mPZ1nAq0wERt5yU7i9", merchantIdentifier: "MerchSHA512",
        requestPhrase: "512-request phrase", responsePhrase: "512-response phrase", sha512: true)

    let emulator: PayFortEmulator
    let sandbox: RunningSandbox
    let session: URLSession

    var merchant: PayFortMerchant { Self.sha256Merchant }
    var apiURL: URL { sandbox.payFortBaseURL.appendingPathComponent("FortAPI").appendingPathComponent("paymentApi") }

    static func start(notificationURL: URL? = nil,
                      notificationRetry: (tries: Int, interval: Duration) = (3, .milliseconds(20)),
                      timeoutHold: Duration = .milliseconds(300),
                      now: @escaping @Sendable () -> Date = { Date() }) async throws -> PayFortHarness {
        var first = sha256Merchant
        first.notificationURL = notificationURL
        let emulator = PayFortEmulator(merchants: [first, sha512Merchant], notificationRetry: notificationRetry,
                                       notificationTimeout: .seconds(2), timeoutHold: timeoutHold, now: now)
        let sandbox = try await Sandbox.start(payFort: emulator)
        return PayFortHarness(emulator: emulator, sandbox: sandbox, session: Self.makeSession())
    }

    /// Runs `body` with a started harness, and stops it afterwards whatever happens.
    static func with<T>(notificationURL: URL? = nil,
                        notificationRetry: (tries: Int, interval: Duration) = (3, .milliseconds(20)),
                        timeoutHold: Duration = .milliseconds(300),
                        now: @escaping @Sendable () -> Date = { Date() },
                        _ body: (PayFortHarness) async throws -> T) async throws -> T {
        let harness = try await start(notificationURL: notificationURL, notificationRetry: notificationRetry,
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

    /// A session that does not follow redirects (so a test sees the 302 itself).
    static func makeSession() -> URLSession {
        URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
    }

    func stop() async {
        await emulator.waitForNotifications()
        await sandbox.stop()
        session.finishTasksAndInvalidate()
    }

    // MARK: Calls

    /// Signs `params` with the merchant's request phrase (unless told not to) and posts them.
    func call(_ params: [String: JSONValue], merchant: PayFortMerchant? = nil, signature: String? = nil,
              session: URLSession? = nil) async throws -> APIResult {
        let merchant = merchant ?? self.merchant
        var params = params
        let members = params.map { JSONValue.Member(key: $0.key, value: $0.value) }
        params["signature"] = .string(signature ?? PayFortEmulator.Signature.sign(members, phrase: merchant.requestPhrase,
                                                                         algorithm: merchant.algorithm))
        let raw = try await post(apiURL, body: Data(JSONValue.sortedObject(params).serialized.utf8),
                                 contentType: "application/json", session: session)
        return try APIResult(raw)
    }

    func post(_ url: URL, body: Data, contentType: String, session: URLSession? = nil) async throws -> RawResponse {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        return try await send(request, session: session)
    }

    func get(_ url: URL) async throws -> RawResponse {
        try await send(URLRequest(url: url))
    }

    func send(_ request: URLRequest, session: URLSession? = nil) async throws -> RawResponse {
        try await exchange(request, on: session ?? self.session)
    }

    // MARK: Flows

    /// The custom merchant page (`…/FortAPI/paymentPage`).
    var pageURL: URL { sandbox.payFortBaseURL.appendingPathComponent("FortAPI").appendingPathComponent("paymentPage") }
    /// Where the merchant page and 3-D Secure send the customer back to (with a query of its own).
    static let returnURL = "https://merchant.example/payfort/return?state=s1"
    /// The device the tests' SDK tokens are created for.
    static let deviceID = "ffffffff-a9fa-0b44-7b27-29e70033c587"

    func tokenParams(merchant: PayFortMerchant? = nil, device: String = Self.deviceID) -> [String: JSONValue] {
        let merchant = merchant ?? self.merchant
        return ["service_command": "SDK_TOKEN", "access_code": .string(merchant.accessCode),
                "merchant_identifier": .string(merchant.merchantIdentifier), "language": "en",
                "device_id": .string(device)]
    }

    func sdkToken(merchant: PayFortMerchant? = nil, device: String = Self.deviceID) async throws -> String {
        let result = try await call(tokenParams(merchant: merchant, device: device), merchant: merchant)
        #expect(result["response_code"] == "22000")
        return try #require(result["sdk_token"])
    }

    /// The custom merchant page's form: the merchant's signed hidden fields, then the card fields
    /// the customer types (not signed).
    func tokenizationForm(card: String, reference: String = Self.newReference(), merchant: PayFortMerchant? = nil,
                          returnURL: String? = Self.returnURL, tokenName: String? = nil, expiry: String = "3012",
                          securityCode: String? = nil) -> [(String, String)] {
        let merchant = merchant ?? self.merchant
        var hidden: [String: String] = ["service_command": "TOKENIZATION", "access_code": merchant.accessCode,
                                        "merchant_identifier": merchant.merchantIdentifier,
                                        "merchant_reference": reference, "language": "en"]
        if let returnURL { hidden["return_url"] = returnURL }
        if let tokenName { hidden["token_name"] = tokenName }
        hidden["signature"] = PayFortEmulator.Signature.sign(hidden, phrase: merchant.requestPhrase, algorithm: merchant.algorithm)
        let code = securityCode ?? (card.hasPrefix("34") || card.hasPrefix("37") ? "1234" : "123")
        return hidden.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            + [("card_number", card), ("expiry_date", expiry), ("card_security_code", code), ("card_holder_name", "John Smith")]
    }

    /// Posts a merchant page form as a browser would (without following the redirect).
    func postPage(_ fields: [(String, String)]) async throws -> RawResponse {
        let body = fields.map { FormEncoding.escape($0.0) + "=" + FormEncoding.escape($0.1) }.joined(separator: "&")
        return try await post(pageURL, body: Data(body.utf8), contentType: "application/x-www-form-urlencoded")
    }

    /// Tokenizes `card` on the merchant page and returns the fields the redirect carries.
    func tokenize(card: String, merchant: PayFortMerchant? = nil, tokenName: String? = nil) async throws -> [String: String] {
        let raw = try await postPage(tokenizationForm(card: card, merchant: merchant, tokenName: tokenName))
        #expect(raw.status == 302)
        let location = try #require(raw.headers["location"].flatMap(URL.init(string:)))
        return Self.queryFields(location)
    }

    /// The decoded query of a URL.
    static func queryFields(_ url: URL) -> [String: String] {
        URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery.flatMap(FormEncoding.decode) ?? [:]
    }

    /// A server-to-server PURCHASE or AUTHORIZATION with a token name, as the vendor SDKs send it.
    func paymentParams(token: String, command: String = "PURCHASE", reference: String = Self.newReference(),
                       amount: JSONValue = .number("1000"), merchant: PayFortMerchant? = nil) -> [String: JSONValue] {
        let merchant = merchant ?? self.merchant
        return ["command": .string(command), "access_code": .string(merchant.accessCode),
                "merchant_identifier": .string(merchant.merchantIdentifier), "merchant_reference": .string(reference),
                "amount": amount, "currency": "USD", "language": "en", "customer_email": "customer@domain.com",
                "token_name": .string(token), "customer_ip": "192.178.1.10", "merchant_extra1": "extra one",
                "return_url": .string(Self.returnURL)]
    }

    /// Tokenizes `card`, then pays with its token name.
    func pay(card: String, command: String = "PURCHASE", reference: String = Self.newReference(),
             extra: [String: JSONValue] = [:], session: URLSession? = nil) async throws -> APIResult {
        let token = try #require(try await tokenize(card: card)["token_name"])
        var params = paymentParams(token: token, command: command, reference: reference)
        params.merge(extra) { $1 }
        return try await call(params, session: session)
    }

    func checkStatus(reference: String? = nil, fortID: String? = nil) async throws -> APIResult {
        var params: [String: JSONValue] = ["query_command": "CHECK_STATUS", "access_code": .string(merchant.accessCode),
                                           "merchant_identifier": .string(merchant.merchantIdentifier), "language": "en"]
        if let reference { params["merchant_reference"] = .string(reference) }
        if let fortID { params["fort_id"] = .string(fortID) }
        return try await call(params)
    }

    func maintenance(_ command: String, reference: String, amount: Int64?) async throws -> APIResult {
        var params: [String: JSONValue] = ["command": .string(command), "access_code": .string(merchant.accessCode),
                                           "merchant_identifier": .string(merchant.merchantIdentifier), "language": "en",
                                           "merchant_reference": .string(reference)]
        if let amount {
            params["amount"] = .number(String(amount))
            params["currency"] = "USD"
        }
        return try await call(params)
    }

    static func newReference() -> String {
        "ord-" + UUID().uuidString.prefix(13).lowercased()
    }
}

/// Runs `body` with a started ``LoopbackReceiver``, and stops it afterwards whatever happens.
func withReceiver<T>(answering statuses: [Int] = [], otherwise: Int = 200,
                     _ body: (LoopbackReceiver) async throws -> T) async throws -> T {
    let receiver = try await LoopbackReceiver.start(answering: statuses, otherwise: otherwise)
    do {
        let result = try await body(receiver)
        await receiver.stop()
        return result
    } catch {
        await receiver.stop()
        throw error
    }
}

/// An HTTP answer.
struct RawResponse {
    var status: Int
    var headers: [String: String]
    var body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A payment API answer, parsed in order.
struct APIResult {
    var status: Int
    var object: [JSONValue.Member]
    var raw: RawResponse

    init(_ raw: RawResponse) throws {
        self.raw = raw
        status = raw.status
        object = try #require(try JSONValue.parse(Array(raw.body)).objectMembers, "not a JSON object: \(raw.text)")
    }

    subscript(key: String) -> String? {
        object.first { $0.key == key }.map(\.value.parameterText)
    }

    func value(_ key: String) -> JSONValue? {
        object.first { $0.key == key }?.value
    }

    /// Whether the response's `signature` is right for `merchant`'s response phrase.
    func isSigned(by merchant: PayFortMerchant) -> Bool {
        guard let signature = self["signature"] else { return false }
        return PayFortEmulator.Signature.verify(signature, members: object, phrase: merchant.responsePhrase,
                                       algorithm: merchant.algorithm)
    }
}

/// A wall clock a test can move.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date()

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(by seconds: TimeInterval) {
        lock.lock()
        current = current.addingTimeInterval(seconds)
        lock.unlock()
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

/// Sends `request` and reads the answer whole, without following redirects (the session decides).
func exchange(_ request: URLRequest, on session: URLSession) async throws -> RawResponse {
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return RawResponse(status: http.statusCode, headers: headers, body: data)
}
