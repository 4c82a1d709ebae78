import Foundation
import Testing
@testable import TillSandbox

struct VectorsUnavailable: Error {}

/// The signer against PayFort's official vectors (Fixtures/payfort-vectors.json).
@Suite struct PayFortSignatureTests {
    /// The fixture beside this file (the emulator's own copy).
    static let vectorsURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()   // Tests/TillSandboxTests
        .appendingPathComponent("Fixtures/payfort-vectors.json")

    static func loadVectors() throws -> [JSONValue] {
        guard FileManager.default.fileExists(atPath: vectorsURL.path) else {
            Issue.record("PayFort signature vectors are missing: expected \(vectorsURL.path)")
            throw VectorsUnavailable()
        }
        let bytes = try [UInt8](Data(contentsOf: vectorsURL))
        let document = try JSONValue.parse(bytes)
        guard case .array(let vectors)? = document["official_vectors"] else {
            Issue.record("\(vectorsURL.path) has no official_vectors array")
            throw VectorsUnavailable()
        }
        return vectors
    }

    /// The phrase before any explanation: `"PASS (SHA response phrase)"` → `"PASS"`.
    static func phrase(_ vector: JSONValue) -> String {
        let text = vector["phrase"]?.stringValue ?? ""
        return text.components(separatedBy: " (").first ?? text
    }

    static func algorithm(forHex hex: String) -> PayFortEmulator.Signature.Algorithm? {
        switch hex.count {
        case 64: .sha256
        case 128: .sha512
        default: nil
        }
    }

    /// Parameters for the .NET vectors, reconstructed from the SDK's test models (the file gives only
    /// the strings): nulls and empty values where the models have them, nested values in declaration order.
    static let reconstructed: [String: String] = [
        "net_one_level": #"{"access_code":"TestAccessCode","merchant_identifier":"TestMerchantIdentifier","language":"testlanguage","bank":null,"authentication_code":null,"signature":"ignored"}"#,
        "net_one_level_null_or_empty_language": #"{"access_code":"TestAccessCode","merchant_identifier":"TestMerchantIdentifier","language":"","bank":null}"#,
        "net_two_levels": #"{"access_code":"TestAccessCode","merchant_identifier":"TestMerchantIdentifier","language":"testlanguage","payment_type":{"payment_method":"TestPaymentMethod","payment_cardtype":"TestCardType","payment_security_code":123}}"#,
        "net_two_levels_empty_nested": #"{"access_code":"TestAccessCode","merchant_identifier":"TestMerchantIdentifier","language":"testlanguage","payment_type":{"payment_method":"","payment_cardtype":"TestCardType","payment_security_code":null}}"#,
        "net_two_levels_int": #"{"access_code":"TestAccessCode","merchant_identifier":"TestMerchantIdentifier","language":"testlanguage","payment_type":{"payment_method":null,"payment_cardtype":"TestCardType","payment_security_code":345}}"#,
        "net_collection": #"{"access_code":"TestAccessCode","merchant_identifier":"TestMerchantIdentifier","language":"testlanguage","payment_type":[{"payment_method":"TestPaymentMethod1","payment_cardtype":"TestCardType1","payment_security_code":null},{"payment_method":"TestPaymentMethod2","payment_cardtype":"TestCardType2","payment_security_code":""}]}"#,
    ]

    @Test("every official vector: string to sign and signature")
    func officialVectors() throws {
        let vectors = try Self.loadVectors()
        #expect(vectors.count >= 13)
        var checked: Set<String> = []
        for vector in vectors {
            let id = try #require(vector["id"]?.stringValue)
            let phrase = Self.phrase(vector)
            let expectedString = try #require(vector["expected_string"]?.stringValue, "\(id): no expected_string")

            // Every expected hash is the hash of the expected string.
            var hashes: [(PayFortEmulator.Signature.Algorithm, String)] = []
            if let sha256 = vector["expected_sha256"]?.stringValue { hashes.append((.sha256, sha256)) }
            if let sha512 = vector["expected_sha512"]?.stringValue { hashes.append((.sha512, sha512)) }
            for key in ["expected_signature", "expected_signature_uppercase"] {
                if let hex = vector[key]?.stringValue {
                    let algorithm = vector["sha_type"]?.stringValue.flatMap(PayFortEmulator.Signature.Algorithm.init(rawValue:))
                        ?? Self.algorithm(forHex: hex)
                    hashes.append((try #require(algorithm, "\(id): cannot tell the algorithm"), hex))
                }
            }
            #expect(!hashes.isEmpty, "\(id): no expected hash")
            for (algorithm, hex) in hashes {
                #expect(PayFortEmulator.Signature.digest(expectedString, algorithm: algorithm) == hex.lowercased(), "\(id) \(algorithm)")
            }

            // The signer builds the same string from the parameters.
            var members: [JSONValue.Member]?
            if let params = vector["params"]?.objectMembers {
                members = params
            } else if let json = Self.reconstructed[id] {
                members = try JSONValue.parse(json).objectMembers
            }
            // The .NET SDK's vectors skip empty and null values; the PHP and Java ones have none.
            let rule: PayFortEmulator.Signature.EmptyValues = id.hasPrefix("net_") ? .skipped : .signed
            if let members {
                #expect(PayFortEmulator.Signature.stringToSign(members, phrase: phrase, emptyValues: rule) == expectedString, "\(id)")
                for (algorithm, hex) in hashes {
                    #expect(PayFortEmulator.Signature.sign(members, phrase: phrase, algorithm: algorithm, emptyValues: rule)
                            == hex.lowercased(), "\(id)")
                    #expect(PayFortEmulator.Signature.verify(hex, members: members, phrase: phrase, algorithm: algorithm), "\(id)")
                    #expect(PayFortEmulator.Signature.verify(hex.uppercased(), members: members, phrase: phrase, algorithm: algorithm))
                }
                // Flat vectors also go through the public, string-keyed API.
                if members.allSatisfy(\.value.isScalar) {
                    let flat = Dictionary(members.map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
                    #expect(PayFortEmulator.Signature.stringToSign(flat, phrase: phrase, emptyValues: rule) == expectedString, "\(id)")
                    for (algorithm, hex) in hashes {
                        #expect(PayFortEmulator.Signature.verify(hex, parameters: flat, phrase: phrase, algorithm: algorithm), "\(id)")
                    }
                }
                checked.insert(id)
            }

            // Notifications: signed over the URL-decoded values.
            if let fields = vector["received_form_fields"]?.objectMembers {
                var decoded: [String: String] = [:]
                var raw: [String: String] = [:]
                for field in fields {
                    raw[field.key] = field.value.parameterText
                    let value = FormEncoding.unescape(field.value.parameterText)
                    #expect(value != nil, "\(id): \(field.key) is not URL-encoded text")
                    decoded[field.key] = value
                }
                #expect(PayFortEmulator.Signature.stringToSign(decoded, phrase: phrase) == expectedString, "\(id)")
                for (algorithm, hex) in hashes {
                    #expect(PayFortEmulator.Signature.verify(hex, parameters: decoded, phrase: phrase, algorithm: algorithm), "\(id)")
                    #expect(!PayFortEmulator.Signature.verify(hex, parameters: raw, phrase: phrase, algorithm: algorithm),
                            "\(id): must not verify over the encoded values")
                }
                checked.insert(id)
            }
        }
        let all = Set(vectors.compactMap { $0["id"]?.stringValue })
        #expect(checked == all, "vectors not run through the signer: \(all.subtracting(checked).sorted())")
    }

    @Test func tamperedParametersDoNotVerify() {
        let params = ["command": "PURCHASE", "amount": "1000", "currency": "USD"]
        let signature = PayFortEmulator.Signature.sign(params, phrase: "in", algorithm: .sha256)
        var tampered = params
        tampered["amount"] = "1001"
        #expect(PayFortEmulator.Signature.verify(signature, parameters: params, phrase: "in", algorithm: .sha256))
        #expect(!PayFortEmulator.Signature.verify(signature, parameters: tampered, phrase: "in", algorithm: .sha256))
        #expect(!PayFortEmulator.Signature.verify(signature, parameters: params, phrase: "out", algorithm: .sha256))
        #expect(!PayFortEmulator.Signature.verify(signature, parameters: params, phrase: "in", algorithm: .sha512))
        #expect(!PayFortEmulator.Signature.verify("", parameters: params, phrase: "in", algorithm: .sha256))
    }

    @Test("the signature is never signed; empty values are signed as k= (PHP SDK) unless told to skip them (.NET SDK)")
    func signatureAndEmptyValues() {
        let base = ["a": "1", "b": "2"]
        let withExtras = ["a": "1", "b": " 2 ", "c": "", "signature": "whatever"]
        #expect(PayFortEmulator.Signature.stringToSign(withExtras, phrase: "P") == "Pa=1b= 2 c=P")
        #expect(PayFortEmulator.Signature.stringToSign(withExtras, phrase: "P", emptyValues: .skipped) == "Pa=1b=2P")
        #expect(PayFortEmulator.Signature.sign(base, phrase: "P", algorithm: .sha512)
                == PayFortEmulator.Signature.sign(withExtras, phrase: "P", algorithm: .sha512, emptyValues: .skipped))
        #expect(PayFortEmulator.Signature.sign(base, phrase: "P", algorithm: .sha512)
                != PayFortEmulator.Signature.sign(withExtras, phrase: "P", algorithm: .sha512))
        let nulls = [JSONValue.Member(key: "a", value: .number("1")), .init(key: "n", value: .null)]
        #expect(PayFortEmulator.Signature.stringToSign(nulls, phrase: "P") == "Pa=1n=P")
        #expect(PayFortEmulator.Signature.stringToSign(nulls, phrase: "P", emptyValues: .skipped) == "Pa=1P")
    }

    @Test("verification accepts either SDK's rule for empty values, and nothing else")
    func verificationAcceptsBothRules() {
        let params = ["command": "PURCHASE", "amount": "243", "app_ver": "", "app_plugin": ""]
        let php = PayFortEmulator.Signature.sign(params, phrase: "PASS", algorithm: .sha256, emptyValues: .signed)
        let net = PayFortEmulator.Signature.sign(params, phrase: "PASS", algorithm: .sha256, emptyValues: .skipped)
        #expect(php != net)
        #expect(PayFortEmulator.Signature.verify(php, parameters: params, phrase: "PASS", algorithm: .sha256))
        #expect(PayFortEmulator.Signature.verify(net.uppercased(), parameters: params, phrase: "PASS", algorithm: .sha256))
        var tampered = params
        tampered["app_ver"] = "1"
        #expect(!PayFortEmulator.Signature.verify(php, parameters: tampered, phrase: "PASS", algorithm: .sha256))
        #expect(!PayFortEmulator.Signature.verify(net, parameters: tampered, phrase: "PASS", algorithm: .sha256))
    }

    @Test func numbersAreSignedAsWritten() throws {
        let members = try #require(try JSONValue.parse(#"{"amount":1000,"rate":10.50,"ok":true}"#).objectMembers)
        #expect(PayFortEmulator.Signature.stringToSign(members, phrase: "x") == "xamount=1000ok=truerate=10.50x")
    }
}
