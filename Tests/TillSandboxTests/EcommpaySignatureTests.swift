import Foundation
import Testing
@testable import TillSandbox

/// The ecommpay fixtures (`Fixtures/ecommpay`), each naming its vendor source.
enum EcommpayFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/ecommpay")

    /// One official vector.
    struct Vector: Sendable {
        var id: String
        var source: String
        var secret: String?
        var kind: String
        var params: JSONValue
        var expectedString: String
        var expectedSignature: String?
    }

    static func vectors() throws -> [Vector] {
        let root = try JSONValue.parse(Array(Data(contentsOf: directory.appendingPathComponent("vectors.json"))))
        guard case .array(let items) = root["vectors"] else { return [] }
        return items.map { item in
            Vector(id: item["id"]?.stringValue ?? "", source: item["source"]?.stringValue ?? "",
                   secret: item["secret"]?.stringValue, kind: item["kind"]?.stringValue ?? "", params: item["params"] ?? .null,
                   expectedString: item["expected_string_to_sign"]?.stringValue ?? "",
                   expectedSignature: item["expected_signature"]?.stringValue)
        }
    }

    /// One callback body of an SDK test.
    struct CallbackCase: Sendable {
        var id: String
        var source: String
        var secret: String
        var body: String
        var expected: String
    }

    static func callbacks() throws -> [CallbackCase] {
        let root = try JSONValue.parse(Array(Data(contentsOf: directory.appendingPathComponent("callbacks.json"))))
        guard case .array(let items) = root["cases"] else { return [] }
        return items.map { item in
            CallbackCase(id: item["id"]?.stringValue ?? "", source: item["source"]?.stringValue ?? "",
                         secret: item["secret"]?.stringValue ?? "", body: item["body"]?.stringValue ?? "",
                         expected: item["expected"]?.stringValue ?? "")
        }
    }

    /// One Payment Page URL (or decoded query) of an SDK test.
    struct PageCase: Sendable {
        var id: String
        var source: String
        var secret: String
        /// The query as it would arrive, percent-encoded.
        var query: String
        /// The decoded query.
        var fields: [String: String]
    }

    static func pageURLs() throws -> [PageCase] {
        let root = try JSONValue.parse(Array(Data(contentsOf: directory.appendingPathComponent("payment-page-urls.json"))))
        guard case .array(let items) = root["cases"] else { return [] }
        return items.compactMap { item in
            let query: String
            if let url = item["url"]?.stringValue, let components = URLComponents(string: url), let encoded = components.percentEncodedQuery {
                query = encoded
            } else if let members = item["query"]?.objectMembers {
                query = members.map { FormEncoding.escape($0.key) + "=" + FormEncoding.escape($0.value.stringValue ?? "") }
                    .joined(separator: "&")
            } else {
                return nil
            }
            return PageCase(id: item["id"]?.stringValue ?? "", source: item["source"]?.stringValue ?? "",
                            secret: item["secret"]?.stringValue ?? "", query: query, fields: FormEncoding.decode(query) ?? [:])
        }
    }
}

@Suite("ecommpay signature")
struct EcommpaySignatureTests {
    @Test("all 27 official vectors: the emulator's signer recomputes each string and signature")
    func officialVectors() throws {
        let vectors = try EcommpayFixtures.vectors()
        #expect(vectors.count == 27)
        var signatures = 0
        for vector in vectors {
            #expect(EcommpaySignature.stringToSign(vector.params) == vector.expectedString, "\(vector.id) (\(vector.source))")
            if let secret = vector.secret, let expected = vector.expectedSignature {
                #expect(EcommpaySignature.sign(vector.params, secret: secret) == expected, "\(vector.id) (\(vector.source))")
                #expect(EcommpaySignature.verify(expected, of: vector.params, secret: secret))
                signatures += 1
            }
        }
        #expect(signatures == 25)
    }

    @Test("the 30 callback bodies of the SDK tests: valid, invalid or undefined as each test expects")
    func sdkCallbacks() throws {
        let cases = try EcommpayFixtures.callbacks()
        #expect(cases.count == 30)
        for item in cases {
            let check = EcommpaySignature.checkMessage(Array(item.body.utf8), secret: item.secret)
            let got: String = switch check {
            case .valid: "valid"
            case .invalid: "invalid"
            case .undefined: "undefined"
            case .notJSON: "not json"
            }
            #expect(got == item.expected, "\(item.id) (\(item.source))")
        }
    }

    @Test("master's rules beyond the vectors: ':' in keys escaped at every level, frame_mode skipped at every level, lists by index, empty containers add nothing")
    func masterRules() throws {
        let value = try JSONValue.parse(#"{"k:x":"v","o":{"k:x":"w","frame_mode":"iframe"},"l":[],"e":{},"n":null,"b":false,"frame_mode":"popup"}"#)
        #expect(EcommpaySignature.stringToSign(value) == "b:0;k::x:v;n:;o:k::x:w")
        // Python sorts by path in code-point order: "a" before "a-b" (the leaf "a:x:1" sorts by its path "a:x").
        let order = try JSONValue.parse(#"{"a-b":2,"a":{"x":1}}"#)
        #expect(EcommpaySignature.stringToSign(order) == "a-b:2;a:x:1")
    }

    @Test("a message signed by the emulator verifies; the signature goes to general.signature when there is a general object")
    func signedMessages() throws {
        let plain = try JSONValue.parse(#"{"project_id":123,"payment":{"id":"EP-1","status":"success"}}"#)
        let signed = EcommpaySignature.signedMessage(plain, secret: "s")
        #expect(signed["signature"] != nil)
        #expect(EcommpaySignature.checkMessage(signed, secret: "s") == .valid)
        #expect(EcommpaySignature.checkMessage(signed, secret: "other") == .invalid)
        let general = try JSONValue.parse(#"{"general":{"project_id":1,"payment_id":"p"},"interface_type":{"id":18}}"#)
        let signedGeneral = EcommpaySignature.signedMessage(general, secret: "s")
        #expect(signedGeneral["general"]?["signature"] != nil)
        #expect(signedGeneral["signature"] == nil)
        #expect(EcommpaySignature.checkMessage(signedGeneral, secret: "s") == .valid)
    }

    @Test("the Gate example bodies computed from the WooCommerce plugin's shapes sign as computed independently")
    func gateExamples() throws {
        // computed from the WooCommerce plugin's Gate shapes (not official), secret "secret".
        let status = try JSONValue.parse(#"{"general":{"payment_id":"EP-1001","project_id":123,"merchant_callback_url":"https://merchant.example/ecp/callback"},"interface_type":{"id":18}}"#)
        #expect(EcommpaySignature.stringToSign(status)
            == "general:merchant_callback_url:https://merchant.example/ecp/callback;general:payment_id:EP-1001;general:project_id:123;interface_type:id:18")
        #expect(EcommpaySignature.sign(status, secret: "secret")
            == "xGd90cY0AXw28dUguxA6C9wlQRLvfAeeBPqbysVt10xHvJMkqDRoRHv4LpsDZR/ZVJpLmWNFasCI5/bNrISgNQ==")
    }

    @Test("the SDK's paramsForSignature: SignatureParam's parameters only, sorted, booleans true/false, empties out, secure_info appended")
    func sdkString() {
        let params = JSONValue.object([
            .init(key: "project_id", value: .number("1234")), .init(key: "payment_id", value: .string("p-1")),
            .init(key: "payment_amount", value: .number("1999")), .init(key: "payment_currency", value: .string("USD")),
            .init(key: "customer_id", value: .string("c-1")), .init(key: "customer_email", value: .string("buyer@example.com")),
            .init(key: "operation_type", value: .string("sale")), .init(key: "payment_description", value: .string("")),
            .init(key: "hide_saved_wallets", value: .bool(true)), .init(key: "language_code", value: .null),
            .init(key: "recurring", value: .object([.init(key: "type", value: .string("C"))])),
            .init(key: "secure_info", value: .object([.init(key: "customer", value: .object([
                .init(key: "email", value: .string("a@b.c")), .init(key: "address_match", value: .string("Y"))]))])),
        ])
        // Not signed by the SDK: operation_type, the additional fields, recurring (MsdkCore.h's SignatureParam list).
        #expect(EcommpaySignature.sdkParamsForSignature(params) == "customer_id:c-1;hide_saved_wallets:true;payment_amount:1999;"
            + "payment_currency:USD;payment_id:p-1;project_id:1234;secure_info:customer:address_match:Y;secure_info:customer:email:a@b.c")
        #expect(EcommpaySignature.sdkSign(params, secret: "k") == EcommpaySignature.mac(EcommpaySignature.sdkParamsForSignature(params), secret: "k"))
        #expect(EcommpaySignature.sdkParamsForSignature(.object([])) == "")
    }
}
