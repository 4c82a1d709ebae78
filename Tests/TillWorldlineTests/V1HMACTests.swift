import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillWorldlineServer

/// `Fixtures/v1hmac.json`: the Python, Java and .NET SDKs' v1HMAC vectors and three requests the
/// Python SDK 6.3.0 really sent.
private struct V1HMACFixture: Decodable {
    struct SignatureVector: Decodable {
        var sources: [String]
        var apiKeyId: String
        var secretApiKey: String
        var stringToSign: String
        var expectedSignature: String
        var expectedAuthorization: String
        var note: String?

        enum CodingKeys: String, CodingKey {
            case sources, apiKeyId, secretApiKey, note
            case stringToSign = "string_to_sign", expectedSignature = "expected_signature"
            case expectedAuthorization = "expected_authorization"
        }
    }

    struct Canonicalization: Decodable {
        var input: String
        var output: String
        var sdk: String

        enum CodingKeys: String, CodingKey { case input = "in", output = "out", sdk }
    }

    struct PartialDataToSign: Decodable {
        var method: String
        var urlPy: String
        var headersInOrder: [[String]]
        var expectedPrefix: String
        var expectedSuffixPy: String

        enum CodingKeys: String, CodingKey {
            case method, urlPy = "url_py", headersInOrder = "headers_in_order", expectedPrefix = "expected_prefix"
            case expectedSuffixPy = "expected_suffix_py"
        }
    }

    struct SharedVectors: Decodable {
        struct Vector: Decodable {
            var id: String
            var source: String
            var secretApiKey: String?
            var dataToSign: String?
            var expectedSignature: String?
            var cases: [[String]]?
            var method: String?
            var url: String?
            var headers: [[String]]?
            var expectedDataToSign: String?
            var expectedAuthorization: String?

            enum CodingKeys: String, CodingKey {
                case id, source, cases, method, url, headers
                case secretApiKey = "secret_api_key", dataToSign = "data_to_sign", expectedSignature = "expected_signature"
                case expectedDataToSign = "expected_data_to_sign", expectedAuthorization = "expected_authorization"
            }
        }

        var vectors: [Vector]
    }

    struct Captured: Decodable {
        struct Source: Decodable {
            var apiKeyId: String
            var secretApiKey: String
        }

        struct Request: Decodable {
            var method: String
            var path: String
            var headers: [[String]]
            var recomputedStringToSign: String
            var recomputedAuthorization: String

            enum CodingKeys: String, CodingKey {
                case method, path, headers, recomputedStringToSign = "recomputed_string_to_sign"
                case recomputedAuthorization = "recomputed_authorization"
            }
        }

        var source: Source
        var requests: [Request]
    }

    var signatureVectors: [SignatureVector]
    var canonicalizeHeaderValue: [Canonicalization]
    var dataToSignPartial: PartialDataToSign
    var sharedVectors: SharedVectors
    var capturedPythonSDKRequests: Captured

    enum CodingKeys: String, CodingKey {
        case signatureVectors = "signature_vectors", canonicalizeHeaderValue = "canonicalize_header_value"
        case dataToSignPartial = "data_to_sign_partial", sharedVectors = "shared_vectors"
        case capturedPythonSDKRequests = "captured_python_sdk_requests"
    }

    static func load() throws -> V1HMACFixture {
        try JSONDecoder().decode(V1HMACFixture.self, from: try worldlineFixture("v1hmac.json"))
    }
}

/// A header list as the fixture writes it (`[[name, value], …]`), split as the Python SDK reads it:
/// `Content-Type` and `Date` (any case, last one wins) apart from the rest.
private func split(_ pairs: [[String]]) throws -> (contentType: String?, date: String, headers: [(name: String, value: String)]) {
    var contentType: String?
    var date: String?
    var headers: [(name: String, value: String)] = []
    for pair in pairs {
        try #require(pair.count == 2)
        switch pair[0].lowercased() {
        case "content-type": contentType = pair[1]
        case "date": date = pair[1]
        default: headers.append((pair[0], pair[1]))
        }
    }
    return (contentType, try #require(date), headers)
}

@Suite("Worldline server API v1HMAC")
struct V1HMACTests {
    @Test("the Python, Java and .NET SDKs' signature vectors")
    func signatureVectors() throws {
        let fixture = try V1HMACFixture.load()
        #expect(fixture.signatureVectors.count == 6)
        for vector in fixture.signatureVectors {
            #expect(WorldlineV1HMAC.signature(secretApiKey: vector.secretApiKey, stringToSign: vector.stringToSign)
                == vector.expectedSignature, "\(vector.sources)")
            #expect(try WorldlineV1HMAC.authorization(apiKeyId: vector.apiKeyId, secretApiKey: vector.secretApiKey,
                                                      stringToSign: vector.stringToSign) == vector.expectedAuthorization)
        }
        for vector in fixture.sharedVectors.vectors {
            guard let secret = vector.secretApiKey, let data = vector.dataToSign else { continue }
            #expect(WorldlineV1HMAC.signature(secretApiKey: secret, stringToSign: data) == vector.expectedSignature, "\(vector.id)")
        }
    }

    @Test("header values are unfolded and trimmed as the Python SDK's regex does")
    func canonicalHeaderValues() throws {
        let fixture = try V1HMACFixture.load()
        var cases = fixture.canonicalizeHeaderValue.map { ($0.input, $0.output) }
        for vector in fixture.sharedVectors.vectors { for pair in vector.cases ?? [] where pair.count == 2 { cases.append((pair[0], pair[1])) } }
        #expect(cases.count == 6)
        // Further cases, each checked against Python 3's re.sub(r"\r?\n(?:(?![\r\n])\s)*", " ", v).strip().
        cases += [
            ("a\n\n b", "a  b"),             // each line break is its own space
            ("a\r\r\nb", "a\r b"),           // a lone CR stays
            ("a\rb", "a\rb"),
            ("a \n\t b", "a  b"),            // whitespace before the break stays; after it, it folds
            ("\u{A0}a\u{3000}", "a"),        // Python strips Unicode whitespace
            ("a\u{1F}", "a"),                // and the U+001C–U+001F separators
            ("a\n\u{A0}b", "a b"),
            ("", ""),
            (" \r\n ", ""),
        ]
        for (input, output) in cases {
            #expect(WorldlineV1HMAC.canonicalHeaderValue(input) == output, "\(input.debugDescription)")
        }
    }

    @Test("the Python SDK test's POST: only X-GCS headers, lower-cased and sorted; the query as sent")
    func partialDataToSign() throws {
        let fixture = try V1HMACFixture.load()
        let partial = fixture.dataToSignPartial
        let (contentType, date, headers) = try split(partial.headersInOrder)
        let (path, query) = WorldlineV1HMAC.resource(of: try #require(URL(string: partial.urlPy)))
        let text = WorldlineV1HMAC.stringToSign(method: partial.method.lowercased(), contentType: contentType, date: date,
                                                headers: headers, path: path, query: query)
        #expect(text == partial.expectedPrefix + date + "\n" + partial.expectedSuffixPy)

        let shared = try #require(fixture.sharedVectors.vectors.first { $0.id == "official_data_to_sign_post" })
        #expect(shared.url == partial.urlPy)
        #expect(text == shared.expectedDataToSign)
        #expect(try WorldlineV1HMAC.authorization(apiKeyId: "apiKeyId", secretApiKey: "secretApiKey", stringToSign: text)
            == shared.expectedAuthorization)
    }

    @Test("the three requests the Python SDK 6.3.0 sent: same string to sign, same Authorization")
    func capturedRequests() throws {
        let captured = try V1HMACFixture.load().capturedPythonSDKRequests
        #expect(captured.requests.count == 3)
        for request in captured.requests {
            let (contentType, date, headers) = try split(request.headers)
            let text = WorldlineV1HMAC.stringToSign(method: request.method, contentType: contentType, date: date,
                                                    headers: headers, path: request.path, query: nil)
            #expect(text == request.recomputedStringToSign)
            let authorization = try WorldlineV1HMAC.authorization(apiKeyId: captured.source.apiKeyId,
                                                                  secretApiKey: captured.source.secretApiKey, stringToSign: text)
            #expect(authorization == request.recomputedAuthorization)
            #expect(authorization == headers.first { $0.name == "Authorization" }?.value)
            // The dictionary form (a TransportRequest's headers) signs the same.
            let dictionary = Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
            #expect(WorldlineV1HMAC.stringToSign(method: request.method, contentType: contentType, date: date,
                                                 headers: dictionary, path: request.path, query: nil) == text)
        }
    }

    @Test("the query is signed percent-encoded (Python, API reference), not decoded (Java, .NET)")
    func queryEncoding() throws {
        let vectors = try V1HMACFixture.load().signatureVectors
        let encoded = try #require(vectors.first { $0.stringToSign.contains("?q=na%20me") })
        let decoded = try #require(vectors.first { $0.stringToSign.contains("?q=na me") })
        let url = try #require(URL(string: "https://eu.api-ingenico.com/v1/consumer/ANDR%C3%89E/?q=na%20me"))
        let (path, query) = WorldlineV1HMAC.resource(of: url)
        let text = WorldlineV1HMAC.stringToSign(method: "GET", contentType: nil, date: "Fri, 06 Jun 2014 13:39:43 GMT",
                                                headers: [], path: path, query: query)
        #expect(text == encoded.stringToSign)
        let authorization = try WorldlineV1HMAC.authorization(apiKeyId: encoded.apiKeyId, secretApiKey: encoded.secretApiKey,
                                                              stringToSign: text)
        #expect(authorization == encoded.expectedAuthorization)
        #expect(authorization != decoded.expectedAuthorization)
    }

    @Test("headers: any case, sorted by lower-cased name, repeated names in sent order, others ignored")
    func headerOrdering() {
        let text = WorldlineV1HMAC.stringToSign(
            method: "post", contentType: "application/json", date: "D",
            headers: [("X-GCS-b", "2"), ("x-gcs-A", " 1 "), ("User-Agent", "ua"), ("X-GCS-B", "3"), ("Content-Type", "ignored"),
                      ("X-GCSx", "4"), ("Authorization", "a")],
            path: "/v1/1/payments", query: "")
        #expect(text == "POST\napplication/json\nD\nx-gcs-a:1\nx-gcs-b:2\nx-gcs-b:3\nx-gcsx:4\n/v1/1/payments\n")
    }

    @Test("the Date header: RFC 1123 in GMT with English names, as the Python SDK writes it")
    func httpDate() {
        #expect(WorldlineV1HMAC.httpDate(Date(timeIntervalSince1970: 1_402_061_983)) == "Fri, 06 Jun 2014 13:39:43 GMT")
        #expect(WorldlineV1HMAC.httpDate(Date(timeIntervalSince1970: 1_795_365_963)) == "Sun, 22 Nov 2026 16:46:03 GMT")
        #expect(WorldlineV1HMAC.httpDate(Date(timeIntervalSince1970: 946_782_245.9)) == "Sun, 02 Jan 2000 03:04:05 GMT")
    }

    @Test("blank or header-breaking credentials are refused, naming the field")
    func badCredentials() {
        for (keyId, secret, field) in [("", "s", "apiKeyId"), (" ", "s", "apiKeyId"), ("a\r\nX: y", "s", "apiKeyId"),
                                       ("a:b", "s", "apiKeyId"), ("k", "", "secretApiKey"), ("k", " \n", "secretApiKey")] {
            let error = #expect(throws: CheckoutError.self) {
                try WorldlineV1HMAC.authorization(apiKeyId: keyId, secretApiKey: secret, stringToSign: "x")
            }
            #expect(error?.field == field)
            #expect(error?.category == .configuration)
        }
    }

    @Test("till sign worldline prints the string to sign's lines, then the Authorization value")
    func debuggerSign() throws {
        let shared = try #require(try V1HMACFixture.load().sharedVectors.vectors.first { $0.id == "official_data_to_sign_post" })
        let (contentType, date, headers) = try split(try #require(shared.headers))
        var values: [String: [String]] = [
            "key-id": ["apiKeyId"], "secret": ["secretApiKey"], "method": ["POST"],
            "path": ["/v1/9991/services%20bla/convert/amount?aap=noot&mies=geen%20noot"],
            "content-type": [try #require(contentType)], "date": [date],
        ]
        values["header"] = headers.map { "\($0.name): \($0.value)" }
        let lines = try WorldlineSigning.debugger.sign(DebuggerArguments(values))
        let expected = try #require(shared.expectedDataToSign)
        #expect(lines.dropLast().joined(separator: "\n") + "\n" == expected)
        #expect(lines.last == shared.expectedAuthorization)

        // Without --date, now in the Python SDK's format.
        values["date"] = nil
        let now = Date(timeIntervalSince1970: 1_795_365_963)
        #expect(try WorldlineSigning.sign(DebuggerArguments(values), now: now)[2] == "Sun, 22 Nov 2026 16:46:03 GMT")
    }

    @Test("till sign worldline refuses malformed options, naming them")
    func debuggerSignErrors() throws {
        let base: [String: [String]] = ["key-id": ["k"], "secret": ["s"], "method": ["GET"], "path": ["/v1/1"]]
        #expect(try WorldlineSigning.debugger.sign(DebuggerArguments(base)).count == 5)
        let cases: [([String: [String]], String)] = [
            (base.merging(["path": ["v1/1"]]) { $1 }, "--path"),
            (base.merging(["header": ["X-GCS-A"]]) { $1 }, "--header"),
            (base.merging(["header": [": v"]]) { $1 }, "--header"),
            (base.merging(["header": ["Date: x"]]) { $1 }, "--header"),
            (base.merging(["secret": [""]]) { $1 }, "--secret"),
            (base.filter { $0.key != "key-id" }, "--key-id"),
        ]
        for (values, field) in cases {
            let error = #expect(throws: CheckoutError.self) { try WorldlineSigning.debugger.sign(DebuggerArguments(values)) }
            #expect(error?.field == field)
        }
    }
}
