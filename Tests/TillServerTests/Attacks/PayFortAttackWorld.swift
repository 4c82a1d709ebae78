import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillPayFort
import TillPayFortServer
import TillSandbox
@testable import TillServer

/// The real merchant server on 127.0.0.1 with one PayFort account on the sandbox's emulator, for
/// attacks that start from a message PayFort really signed.
///
/// The emulator's transaction feedback does not go to the merchant server: it goes to ``captured``,
/// a loopback receiver that plays the attacker's copy of what the gateway signed. The test then
/// delivers to `/v1/notifications/payfort` exactly what it chooses: the genuine message, or a forgery
/// built from it.
final class PayFortAttackWorld: @unchecked Sendable {
    static let gateway: GatewayID = "payfort"
    static let deviceID = "attack-device-1"

    let emulator: PayFortEmulator
    let sandbox: RunningSandbox
    let account: PayFortMerchant
    let captured: LoopbackReceiver
    let store: any PaymentStore
    let serverURL: URL
    let apiKey: String
    let merchant: String
    private let server: Task<Void, any Error>

    init(_ kind: StoreKind, integration: PayFortIntegration) async throws {
        let tag = UUID().uuidString.prefix(6).lowercased().filter(\.isLetter)
        account = PayFortMerchant(accessCode: "ACattack\(tag)", merchantIdentifier: "MIDattack\(tag)",
                                  requestPhrase: "attack-request-\(UUID().uuidString)", responsePhrase: "attack-response-\(UUID().uuidString)")
        captured = try await LoopbackReceiver.start()
        emulator = PayFortEmulator(merchants: [account], notificationRetry: (1, .milliseconds(10)))
        await emulator.setNotificationURL(captured.url, merchantIdentifier: account.merchantIdentifier)
        sandbox = try await Sandbox.start(payFort: emulator)
        merchant = "pf-\(UUID().uuidString.prefix(8).lowercased())"
        apiKey = "attack-key-\(UUID().uuidString)"
        let names = ["access_code", "merchant_identifier", "request_phrase", "response_phrase"]
        var environment = ["KEY": apiKey]
        for (name, value) in zip(names, [account.accessCode, account.merchantIdentifier, account.requestPhrase, account.responsePhrase]) {
            environment["PF_\(name)"] = value
        }
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: merchant, apiKey: CredentialReference(env: "KEY"),
                gateways: [GatewayConfiguration(id: Self.gateway, module: "payfort",
                                                credentials: Dictionary(uniqueKeysWithValues: names.map { ($0, CredentialReference(env: "PF_\($0)")) }),
                                                settings: ["base_url": sandbox.payFortBaseURL.absoluteString, "integration": integration.rawValue])],
                routing: RoutingConfiguration(fallback: [Self.gateway]))],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused", publicURL: "http://127.0.0.1"))
        let state = try ServerState(configuration: configuration, plugins: [PayFortPlugin.plugin], environment: environment)
        store = try await kind.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        server = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        serverURL = URL(string: "http://127.0.0.1:\(await iterator.next() ?? 0)")!
    }

    func stop() async {
        server.cancel()
        _ = await server.result
        await sandbox.stop()
        await captured.stop()
        try? await store.close()
    }

    // MARK: The merchant's API, as the app calls it

    func send(_ method: String, _ path: String, body: Data? = nil, contentType: String = "application/json",
              authorized: Bool = true) async throws -> ServerHarness.Answer {
        var request = URLRequest(url: serverURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        if authorized { request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        return ServerHarness.Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// Creates a payment of `minor` halalas (SAR) and returns its id.
    func createPayment(minor: Int64, reference: String = "order-\(UUID().uuidString.prefix(8))") async throws -> String {
        let body = #"{"merchantReference":"\#(reference)","amount":{"value":\#(minor),"currency":"SAR"},"method":"card","# +
            #""customer":{"email":"buyer@example.com"}}"#
        let created = try await send("POST", "v1/payments", body: Data(body.utf8))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        return try #require(created.json["id"] as? String)
    }

    /// Prepares the payment's next attempt, offering `returnURLs`; returns the attempt and the
    /// preparation's parameters (the signed form, or the SDK's operation request).
    func prepare(_ payment: String, returnURLs: [String] = []) async throws -> (AttemptReference, [String: String]) {
        // The app's FORT SDK sends its device id with the attempt.
        let body = try JSONSerialization.data(withJSONObject: ["returnURLs": returnURLs, "appData": ["device_id": Self.deviceID]] as [String: Any])
        let prepared = try await send("POST", "v1/payments/\(payment)/attempts", body: body)
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        let attempt = try #require(prepared.json["attempt"] as? String)
        let parameters = try #require(prepared.json["parameters"] as? [String: String])
        return (AttemptReference(rawValue: attempt), parameters)
    }

    func status(of payment: String) async throws -> String? {
        try await send("GET", "v1/payments/\(payment)").json["status"] as? String
    }

    /// Posts a body to the PayFort notification endpoint, as anyone on the internet can.
    func notify(_ body: Data, contentType: String) async throws -> ServerHarness.Answer {
        try await send("POST", "v1/notifications/\(Self.gateway.rawValue)", body: body, contentType: contentType, authorized: false)
    }

    // MARK: The customer's device

    /// Posts the merchant page's signed hidden fields with `card` to the emulator's paymentPage, as the
    /// device's browser does, and returns where PayFort sent the customer (the return URL with the
    /// signed tokenization result).
    func tokenize(_ parameters: [String: String], card: String) async throws -> URL {
        var fields = PayFortTokenizationForm.fieldNames.compactMap { name in parameters[name].map { FormPost.Field(name, $0) } }
        fields += [FormPost.Field("card_number", card), FormPost.Field("expiry_date", "3012"), FormPost.Field("card_security_code", "123"),
                   FormPost.Field("card_holder_name", "Test Customer")]
        let form = FormPost(url: sandbox.payFortBaseURL.appendingPathComponent("FortAPI/paymentPage"), fields: fields)
        return try #require(try await PayFortDevice.post(form), "the payment page did not send the customer back")
    }

    /// Waits for the emulator's feedback about `attempt` (at most 5 s) and returns its parameters as
    /// PayFort signed them, with the raw body.
    func feedback(about attempt: AttemptReference, count wanted: Int = 1) async throws -> [(fields: [String: String], body: Data)] {
        for _ in 0..<250 {
            let mine = await captured.received().compactMap { received -> (fields: [String: String], body: Data)? in
                guard let fields = received.formFields, fields["merchant_reference"] == attempt.rawValue else { return nil }
                return (fields, received.body)
            }
            if mine.count >= wanted { return mine }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("no feedback about \(attempt) reached the receiver")
        return []
    }

    /// Whether PayFort's own check (the emulator's, with this account's response phrase) accepts
    /// `fields`: a forgery that passes it carries a signature the gateway really made.
    func gatewayAccepts(_ fields: [String: String]) -> Bool {
        guard let signature = fields["signature"] else { return false }
        return PayFortEmulator.Signature.verify(signature, parameters: fields.filter { $0.key != "signature" },
                                                phrase: account.responsePhrase, algorithm: account.algorithm)
    }

    /// Signs `fields` as PayFort signs its feedback (the emulator's signer, this account's response phrase).
    func signedByGateway(_ fields: [String: String]) -> [String: String] {
        var signed = fields.filter { $0.key != "signature" }
        signed["signature"] = PayFortEmulator.Signature.sign(signed, phrase: account.responsePhrase, algorithm: account.algorithm)
        return signed
    }

    /// How many notifications the server stored for `attempt`, and how many of them it applied.
    func stored(_ attempt: AttemptReference) async throws -> (all: Int, applied: Int) {
        (try await count(store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)'"),
         try await count(store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)' AND outcome = 'applied'"))
    }
}

/// Bodies built by hand, so keys can repeat and appear in any order.
enum WireBody {
    /// `application/x-www-form-urlencoded`, pairs in the given order (repeats kept).
    static func form(_ pairs: [(String, String)]) -> Data {
        Data(pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&").utf8)
    }

    /// A JSON object of strings, members in the given order (repeats kept).
    static func json(_ pairs: [(String, String)]) -> Data {
        func quoted(_ text: String) -> String { String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self) }
        return Data(("{" + pairs.map { quoted($0.0) + ":" + quoted($0.1) }.joined(separator: ",") + "}").utf8)
    }

    static func escape(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._*")
        return (text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text).replacingOccurrences(of: "%20", with: "+")
    }

    /// The pairs of a message sorted as PayFort sorts them to sign (byte order), `signature` last.
    static func sortedPairs(_ fields: [String: String]) -> [(String, String)] {
        fields.filter { $0.key != "signature" }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { ($0.key, $0.value) }
            + (fields["signature"].map { [("signature", $0)] } ?? [])
    }
}

/// PayFort's string to sign is `k1=v1k2=v2…` with no separator between pairs, so one signed message
/// can be cut into other pairs with the same string, and therefore the same signature.
enum Recut {
    /// The concatenation PayFort hashes (without the phrases): sorted `key=value` pairs, no separator.
    static func signedText(_ fields: [String: String]) -> String {
        fields.filter { $0.key != "signature" }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { $0.key + "=" + $0.value }.joined()
    }

    /// Re-cuts `genuine`: the value of `absorbing` swallows every signed pair after it up to the text
    /// `injected` (which the attacker placed inside a signed value, such as an echoed return URL); the
    /// injected pairs follow; `junk` swallows the rest. The result has the genuine signature, and the
    /// caller checks that its signed text is the genuine one.
    static func cut(_ genuine: [String: String], absorbing: String, injected: [(String, String)], junk: String) -> [String: String]? {
        let text = signedText(genuine)
        let marker = injected.map { $0.0 + "=" + $0.1 }.joined() + junk + "="
        let before = genuine.filter { $0.key != "signature" && $0.key.utf8.lexicographicallyPrecedes(absorbing.utf8) }
        let head = signedText(before) + absorbing + "="
        guard text.hasPrefix(head), let found = text.range(of: marker, range: text.index(text.startIndex, offsetBy: head.count)..<text.endIndex)
        else { return nil }
        var forged = before
        forged[absorbing] = String(text[text.index(text.startIndex, offsetBy: head.count)..<found.lowerBound])
        for (key, value) in injected { forged[key] = value }
        forged[junk] = String(text[found.upperBound...])
        guard forged.count == before.count + 1 + injected.count + 1, signedText(forged) == text else { return nil }
        forged["signature"] = genuine["signature"]
        return forged
    }
}
