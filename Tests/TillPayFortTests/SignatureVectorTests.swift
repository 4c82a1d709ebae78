import Foundation
import Crypto
import Testing
import Till
@testable import TillPayFort

/// The official vectors, read from the fixture beside this file.
struct Vectors {
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/payfort-vectors.json")

    struct Vector: Sendable, CustomTestStringConvertible {
        let id: String
        let phrase: String
        let parameters: PayFortParameters?
        let expectedString: String
        let sha256: String?
        let sha512: String?
        var testDescription: String { id }
    }

    /// Every vector; a missing file is a failure, never a skip.
    static func load() throws -> [Vector] {
        let data = try Data(contentsOf: url)
        let root = try PayFortParameters.json(data)
        guard case .array(let list)? = root["official_vectors"] else { return [] }
        return list.compactMap { item -> Vector? in
            guard case .object(let pairs) = item else { return nil }
            let v = PayFortParameters(pairs)
            var parameters: PayFortParameters?
            if case .object(let p)? = v["params"] { parameters = PayFortParameters(p) }
            if case .object(let p)? = v["received_form_fields"] {
                // As received: form values are URL-decoded before signing.
                parameters = PayFortParameters(p.map { PayFortValue.Member(key: $0.key, value: .string(($0.value.payFortText ?? "").removingPercentEncoding ?? "")) })
            }
            let phrase = (v.text("phrase") ?? "").components(separatedBy: " (").first ?? ""
            let sha256 = v.text("expected_sha256") ?? (v.text("sha_type") != "sha512" ? v.text("expected_signature") : nil)
                ?? v.text("expected_signature_uppercase")
            return Vector(id: v.text("id") ?? "?", phrase: phrase, parameters: parameters, expectedString: v.text("expected_string") ?? "",
                          sha256: sha256, sha512: v.text("expected_sha512"))
        }
    }
}

@Suite("PayFort signature: official vectors")
struct SignatureVectorTests {
    @Test("the vectors file is present and complete")
    func present() throws {
        let vectors = try Vectors.load()
        #expect(vectors.count >= 13, "expected every official vector in \(Vectors.url.path)")
    }

    @Test("string to sign and signature match every vector", arguments: try Vectors.load())
    func vector(_ vector: Vectors.Vector) throws {
        let signer = PayFortSignature(.sha256)
        if let parameters = vector.parameters {
            #expect(signer.stringToSign(parameters, phrase: vector.phrase) == vector.expectedString)
            if let expected = vector.sha256 {
                #expect(signer.sign(parameters, phrase: vector.phrase) == expected.lowercased())
                var signed = parameters
                signed["signature"] = .string(expected)           // either case verifies
                try signer.verify(signed, phrase: vector.phrase)
            }
            if let expected = vector.sha512 {
                #expect(PayFortSignature(.sha512).sign(parameters, phrase: vector.phrase) == expected)
            }
        } else {
            // Vectors given only as the string to hash (reconstructed from SDK test models).
            let data = Data(vector.expectedString.utf8)
            if let expected = vector.sha256 {
                #expect(Crypto.SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() == expected.lowercased())
            }
            if let expected = vector.sha512 {
                #expect(Crypto.SHA512.hash(data: data).map { String(format: "%02x", $0) }.joined() == expected)
            }
        }
    }
}
