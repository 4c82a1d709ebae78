import Crypto
import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillEcommpayServer
import TillOrchestration

/// Reads a fixture of this target (`Fixtures/<name>`).
func fixture(_ name: String) throws -> Data {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent(name)
    return try Data(contentsOf: url)
}

/// A fixture file parsed as JSON (numbers keep their exact text, members their order).
func jsonFixture(_ name: String) throws -> OrderedJSON {
    try OrderedJSON.parse(try fixture(name), field: name)
}

// MARK: Official vectors

/// One official signature vector (`Fixtures/vectors.<sdk>-sdk.json`).
struct SignatureVector: Sendable, Hashable, CustomTestStringConvertible {
    var id: String
    var source: String
    /// `sign` (string and signature), `string` (string only), `callback` (a callback's parameters with its signatures removed).
    var kind: String
    var secret: String?
    var params: OrderedJSON
    var expectedString: String
    var expectedSignature: String?
    /// Whether the PyPI release 1.0.6 of the Python SDK, run on the vector, produced the expected value (nil: not run).
    var pypi106: Bool?
    /// Whether the Python SDK's GitHub master did.
    var pythonMaster: Bool?

    var testDescription: String { id }

    /// The five files, one per SDK.
    static let files = ["vectors.python-sdk.json", "vectors.php-sdk.json", "vectors.js-sdk.json", "vectors.go-sdk.json", "vectors.java-sdk.json"]

    static func load() throws -> [SignatureVector] {
        try files.flatMap { name -> [SignatureVector] in
            let items = try #require(try jsonFixture(name)["vectors"]?.arrayValue)
            return try items.map { item in
                let runs = item["vendor_runs"]
                return SignatureVector(id: try #require(item["id"]?.stringValue), source: try #require(item["source"]?.stringValue),
                                       kind: try #require(item["kind"]?.stringValue), secret: item["secret"]?.stringValue,
                                       params: try #require(item["params"]), expectedString: try #require(item["expected_string_to_sign"]?.stringValue),
                                       expectedSignature: item["expected_signature"]?.stringValue,
                                       pypi106: runs?["python_pypi_1_0_6"]?.boolValue, pythonMaster: runs?["python_master_35ed5ec"]?.boolValue)
            }
        }
    }

    /// Every vector; empty when the fixtures cannot be read (a test checks the count).
    static let all: [SignatureVector] = (try? load()) ?? []
    /// The vectors that carry a signature.
    static var signed: [SignatureVector] { all.filter { $0.expectedSignature != nil } }
}

/// One callback body of an SDK's tests (`Fixtures/callbacks.sdk-tests.json`).
struct CallbackCase: Sendable, Hashable, CustomTestStringConvertible {
    enum Outcome: String, Sendable { case valid, invalid, undefined }
    var id: String
    var source: String
    var secret: String
    var body: String
    /// What the SDK's test expects, as the fixture words it.
    var expectedBySDKTest: String
    /// What the Python SDK's master gave when run on the body (`valid`, `invalid`, `error: Signature undefined`).
    var pythonMaster: String
    var pypi106: String

    var testDescription: String { id }

    /// The outcome the SDK's test expects; on the one body the Python SDK's master and PyPI 1.0.6 disagree on
    /// (a `null` leaf), master's.
    var expected: Outcome {
        if pythonMaster == "valid" { return .valid }
        if pythonMaster.lowercased().contains("undefined") { return .undefined }
        return .invalid
    }

    static func load() throws -> [CallbackCase] {
        let items = try #require(try jsonFixture("callbacks.sdk-tests.json")["cases"]?.arrayValue)
        return try items.map { item in
            CallbackCase(id: try #require(item["id"]?.stringValue), source: try #require(item["source"]?.stringValue),
                         secret: try #require(item["secret"]?.stringValue), body: try #require(item["body"]?.stringValue),
                         expectedBySDKTest: try #require(item["expected_by_sdk_test"]?.stringValue),
                         pythonMaster: try #require(item["results"]?["vendor_python_master_35ed5ec"]?.stringValue),
                         pypi106: try #require(item["results"]?["vendor_python_pypi_1_0_6"]?.stringValue))
        }
    }

    static let all: [CallbackCase] = (try? load()) ?? []
}

/// One computed divergence case (`Fixtures/signer-divergences.computed.json`).
struct DivergenceCase: Sendable, Hashable, CustomTestStringConvertible {
    var id: String
    var input: OrderedJSON
    var secret: String
    var expectedString: String
    var expectedSignature: String
    var pypi106Same: Bool?

    var testDescription: String { id }

    static func load() throws -> [DivergenceCase] {
        let items = try #require(try jsonFixture("signer-divergences.computed.json")["cases"]?.arrayValue)
        return try items.map { item in
            let text = try #require(item["input_json"]?.stringValue)
            return DivergenceCase(id: try #require(item["id"]?.stringValue), input: try OrderedJSON.parse(Data(text.utf8)),
                                  secret: try #require(item["secret"]?.stringValue),
                                  expectedString: try #require(item["python_master_rules"]?["string_to_sign"]?.stringValue),
                                  expectedSignature: try #require(item["python_master_rules"]?["signature"]?.stringValue),
                                  pypi106Same: item["ran_here"]?["python_pypi_1_0_6_same"]?.boolValue)
        }
    }

    static let all: [DivergenceCase] = (try? load()) ?? []
}

// MARK: The tests' own signer

/// ecommpay's signature written again here, apart from the module, for expected values: the rules of the
/// Python SDK's master (`payment_page_sdk/signature_handler.py` at 35ed5ec) — `frame_mode` skipped, `:`
/// in a key doubled, nested paths joined with `:`, list items by index, `true`/`false` as `1`/`0`, `null`
/// empty, empty containers dropped, sorted by path in code-point order, joined with `;`; then
/// Base64(HMAC-SHA512(secret)).
enum TestSigner {
    static func string(_ value: OrderedJSON) -> String {
        var leaves: [(path: String, value: String)] = []
        walk(value, path: nil, into: &leaves)
        return leaves.sorted { $0.path.unicodeScalars.map(\.value).lexicographicallyPrecedes($1.path.unicodeScalars.map(\.value)) }
            .map { "\($0.path):\($0.value)" }.joined(separator: ";")
    }

    private static func walk(_ value: OrderedJSON, path: String?, into leaves: inout [(path: String, value: String)]) {
        func join(_ key: String) -> String { path.map { "\($0):\(key)" } ?? key }
        switch value {
        case .object(let members):
            for member in members where member.key != "frame_mode" {
                walk(member.value, path: join(member.key.replacingOccurrences(of: ":", with: "::")), into: &leaves)
            }
        case .array(let items):
            for (index, item) in items.enumerated() { walk(item, path: join("\(index)"), into: &leaves) }
        case .string(let text), .number(let text): leaves.append((path ?? "", text))
        case .bool(let flag): leaves.append((path ?? "", flag ? "1" : "0"))
        case .null: leaves.append((path ?? "", ""))
        }
    }

    static func hmac(_ string: String, secret: String) -> String {
        Data(HMAC<SHA512>.authenticationCode(for: Data(string.utf8), using: SymmetricKey(data: Data(secret.utf8)))).base64EncodedString()
    }

    static func sign(_ value: OrderedJSON, secret: String) -> String { hmac(string(value), secret: secret) }

    /// `value` with every `signature` member of every object removed (lists not entered, as master's `__remove_param`).
    static func unsigned(_ value: OrderedJSON) -> OrderedJSON {
        guard case .object(let members) = value else { return value }
        return .object(members.filter { $0.key != "signature" }.map { .init(key: $0.key, value: unsigned($0.value)) })
    }

    /// `members` signed as ecommpay signs what it sends: at `general.signature` when `general` is an object, else at the top.
    static func signedBody(_ members: [OrderedJSON.Member], secret: String, atGeneral: Bool = false) -> Data {
        let signature = OrderedJSON.string(sign(.object(members), secret: secret))
        var out = members
        if atGeneral, let index = out.firstIndex(where: { $0.key == "general" }), case .object(var general) = out[index].value {
            general.append(.init(key: "signature", value: signature))
            out[index] = .init(key: "general", value: .object(general))
        } else {
            out.append(.init(key: "signature", value: signature))
        }
        return OrderedJSON.object(out).serialized()
    }
}

/// A query string split on `&` and the first `=`, `+` a space, percent escapes decoded: the tests' own reader.
func decodeQuery(_ query: String) -> [(String, String)] {
    query.split(separator: "&").map { segment in
        let parts = segment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        func text(_ part: Substring) -> String { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part) }
        return (text(parts[0]), parts.count > 1 ? text(parts[1]) : "")
    }
}

/// Builds JSON in tests: `J.object(("a", .string("x")), …)`.
enum J {
    static func object(_ members: (String, OrderedJSON)...) -> OrderedJSON { .object(members.map { .init(key: $0.0, value: $0.1) }) }
    static func members(_ members: (String, OrderedJSON)...) -> [OrderedJSON.Member] { members.map { .init(key: $0.0, value: $0.1) } }
    static func int(_ value: Int64) -> OrderedJSON { .number(String(value)) }
}

// MARK: The module under test, configured for the tests

enum Setup {
    static let projectId = 12345
    static let secret = "till-ecommpay-test-secret"
    static let page = URL(string: "https://paymentpage.ecommpay.test")!
    static let gate = URL(string: "https://api.ecommpay.test")!
    static let appReturn = URL(string: "tillshop://till/return?till_state=abc")!
    static let webReturn = URL(string: "https://shop.example.com/till/return?till_state=abc&x=a+b")!
    static let notificationURL = URL(string: "https://shop.example.com/v1/notifications/ecommpay")!
    static let attempt = AttemptReference(rawValue: "att0000000000000000000001")

    static func server(_ transport: RecordingTransport = RecordingTransport(), projectId: Int = projectId,
                       mock: EcommpayPaymentOptions.MockMode = .disabled, secret: String = secret) -> EcommpayServer {
        EcommpayServer(environment: EcommpayEnvironment(paymentPage: page, gate: gate), secret: secret,
                       settings: EcommpaySettings(projectId: projectId, mockMode: mock), transport: transport)
    }

    static func money(_ minor: Int64, _ code: String) -> Money {
        Money(minorUnits: minor, currency: Currency.lookup(code)!)
    }

    static let customer = Customer(reference: "cust-7", email: "ada@example.com", firstName: "Ada", lastName: "Lovelace",
                                   phone: "447700900123", locale: "de-DE")

    static func intent(_ minor: Int64 = 1999, _ currency: String = "EUR", method: PaymentMethod = .card, action: PaymentAction = .sale,
                       customer: Customer = customer, description: String? = "Green tea", country: String? = "DE") -> PaymentIntent {
        PaymentIntent(merchantReference: "order-42", amount: money(minor, currency), country: country.flatMap { try? CountryCode($0) },
                      method: method, action: action, customer: customer, description: description)
    }

    static func context(_ intent: PaymentIntent = intent(), returnURL: URL? = appReturn) -> AttemptContext {
        AttemptContext(intent: intent, attempt: attempt, returnURL: returnURL, notificationURL: notificationURL)
    }

    static func json(_ value: OrderedJSON) -> TransportResponse {
        TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: value.serialized())
    }
}
