import _CryptoExtras
import Crypto
import Foundation
import Testing
import Till
import TillGatewayKit
@testable import TillWorldline

/// `Fixtures/jwe.json`: the TEST-ONLY key pair, the RFC 7518 B.3 known answer and the self-made vectors.
private struct JWEFixture: Decodable {
    struct PublicKeyResponse: Decodable {
        var keyId: String
        var publicKey: String
    }

    struct Vector: Decodable {
        struct Parts: Decodable {
            var encodedHeader: String
            var ciphertextB64url: String
            var tagB64url: String
            var alHex: String

            enum CodingKeys: String, CodingKey {
                case encodedHeader = "encoded_header", ciphertextB64url = "ciphertext_b64url", tagB64url = "tag_b64url"
                case alHex = "al_hex"
            }
        }

        var id: String
        var source: String
        var plaintext: String
        var compactJWE: String
        var protectedHeaderJSON: String?
        var cekHex: String?
        var ivHex: String?
        var deterministicParts: Parts?

        enum CodingKeys: String, CodingKey {
            case id, source, plaintext
            case compactJWE = "compact_jwe", protectedHeaderJSON = "protected_header_json", cekHex = "cek_hex"
            case ivHex = "iv_hex", deterministicParts = "deterministic_parts"
        }
    }

    struct KnownAnswer: Decodable {
        var source: String
        var kHex: String
        var pUTF8: String
        var ivHex: String
        var aUTF8: String
        var alHex: String
        var eHex: String
        var tHex: String

        enum CodingKeys: String, CodingKey {
            case source, kHex = "K_hex", pUTF8 = "P_utf8", ivHex = "IV_hex", aUTF8 = "A_utf8", alHex = "AL_hex"
            case eHex = "E_hex", tHex = "T_hex"
        }
    }

    var privateKeyPEM: String
    var publicKeyResponse: PublicKeyResponse
    var vectors: [Vector]
    var knownAnswer: KnownAnswer

    enum CodingKeys: String, CodingKey {
        case privateKeyPEM = "test_rsa_private_key_pem_pkcs8", publicKeyResponse = "public_key_response", vectors
        case knownAnswer = "rfc7518_B3_aes256cbc_hmac_sha512_kat"
    }

    static func load() throws -> JWEFixture {
        try JSONDecoder().decode(JWEFixture.self, from: try worldlineFixture("jwe.json"))
    }

    func privateKey() throws -> _RSA.Encryption.PrivateKey {
        try _RSA.Encryption.PrivateKey(pemRepresentation: privateKeyPEM)
    }

    func publicKey() throws -> WorldlinePublicKey {
        try WorldlinePublicKey(keyId: publicKeyResponse.keyId, publicKey: publicKeyResponse.publicKey)
    }

    func vector(_ id: String) throws -> Vector {
        try #require(vectors.first { $0.id == id })
    }
}

/// `Fixtures/publickey-responses.json`: the vendor SDKs' sample `GET /crypto/publickey` bodies.
private struct PublicKeyResponses: Decodable {
    struct Case: Decodable {
        struct Body: Decodable {
            var keyId: String
            var publicKey: String
        }

        var from: String
        var body: Body?
        var publicKeyOnly: String?
        var swiftStripPrefixHex: String?

        enum CodingKeys: String, CodingKey {
            case from, body, publicKeyOnly = "publicKey_only", swiftStripPrefixHex = "swift_strip_prefix_hex"
        }
    }

    var cases: [Case]

    static func load() throws -> PublicKeyResponses {
        try JSONDecoder().decode(PublicKeyResponses.self, from: try worldlineFixture("publickey-responses.json"))
    }
}

/// A JWE decryptor written for these tests only, independently of the plugin's encryptor: it is
/// what the gateway does with `encryptedCustomerInput` (RSA-OAEP SHA-1 unwrap, tag check, AES-CBC).
private enum TestDecryptor {
    enum Failure: Error, Equatable {
        case segments, encoding(Int), header, unwrap, tag, decrypt
    }

    struct Result {
        var header: [String: String]
        var plaintext: [UInt8]
    }

    static func decrypt(_ compact: String, with key: _RSA.Encryption.PrivateKey) throws(Failure) -> Result {
        let segments = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard segments.count == 5 else { throw .segments }
        var bytes: [[UInt8]] = []
        for (index, segment) in segments.enumerated() {
            guard let decoded = Base64.urlDecode(segment), !segment.contains("=") else { throw .encoding(index) }
            bytes.append(decoded)
        }
        let (headerBytes, wrappedKey, iv, ciphertext, tag) = (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4])
        guard let header = try? JSONDecoder().decode([String: String].self, from: Data(headerBytes)),
              header["alg"] == "RSA-OAEP", header["enc"] == "A256CBC-HS512" else { throw .header }
        guard let cek = try? Array(key.decrypt(wrappedKey, padding: .PKCS1_OAEP)), cek.count == 64 else { throw .unwrap }
        // The AAD is the header segment exactly as received, never a re-serialised header.
        let aad = Array(segments[0].utf8)
        var bitLength = [UInt8](repeating: 0, count: 8)
        var bits = UInt64(aad.count) * 8
        for index in stride(from: 7, through: 0, by: -1) {
            bitLength[index] = UInt8(bits & 0xFF)
            bits >>= 8
        }
        let mac = HMAC<SHA512>.authenticationCode(for: aad + iv + ciphertext + bitLength, using: SymmetricKey(data: cek[0..<32]))
        guard tag.count == 32, ConstantTime.equals(Array(mac).prefix(32), tag) else { throw .tag }
        guard iv.count == 16, let cbcIV = try? AES._CBC.IV(ivBytes: iv),
              let plaintext = try? AES._CBC.decrypt(ciphertext, using: SymmetricKey(data: cek[32..<64]), iv: cbcIV)
        else { throw .decrypt }
        return Result(header: header, plaintext: Array(plaintext))
    }
}

private func hex(_ text: String?) throws -> [UInt8] {
    let text = try #require(text)
    return try #require(Hex.decode(text))
}

private func plaintextObject(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

/// The top-level keys of a JSON object in the order written (the plaintext's keys are simple names).
private func topLevelKeys(_ json: String) -> [String] {
    var keys: [String] = []
    var depth = 0
    var index = json.startIndex
    while index < json.endIndex {
        let char = json[index]
        if char == "{" || char == "[" { depth += 1 }
        if char == "}" || char == "]" { depth -= 1 }
        if char == "\"" {
            let start = json.index(after: index)
            var end = start
            while json[end] != "\"" { end = json.index(end, offsetBy: json[end] == "\\" ? 2 : 1) }
            let after = json[json.index(after: end)...].drop { $0 == " " }
            if depth == 1, after.first == ":" { keys.append(String(json[start..<end])) }
            index = end
        }
        index = json.index(after: index)
    }
    return keys
}

private let sampleInput = WorldlineCustomerInput(
    clientSessionId: "8d4f1a0a2e1b4c9d9a7f6e5d4c3b2a10", paymentProductId: 1, tokenize: true,
    values: [.init(key: "cardNumber", value: "4567350000427977"), .init(key: "expiryDate", value: "1230"),
             .init(key: "cvv", value: "123"), .init(key: "cardholderName", value: "John Doe")])

@Suite("Worldline client-side encryption (JWE)")
struct EncryptionTests {
    @Test("RFC 7518 B.3: AES_256_CBC_HMAC_SHA_512 known answer")
    func knownAnswer() throws {
        let kat = try JWEFixture.load().knownAnswer
        #expect(kat.source.contains("RFC 7518"))
        let aad = Array(kat.aUTF8.utf8)
        let result = try WorldlineJWE.encryptContent(Array(kat.pUTF8.utf8), aad: aad, cek: try hex(kat.kHex), iv: try hex(kat.ivHex))
        #expect(Hex.encode(result.ciphertext) == kat.eHex)
        #expect(Hex.encode(result.tag) == kat.tHex)
        #expect(Hex.encode(WorldlineJWE.additionalDataLength(aad)) == kat.alHex)
    }

    @Test("the vectors' deterministic parts: header, AL, ciphertext and tag for a fixed content key and IV",
          arguments: ["swift_style", "js_style"])
    func deterministicParts(id: String) throws {
        let vector = try JWEFixture.load().vector(id)
        let parts = try #require(vector.deterministicParts)
        let headerJSON = try #require(vector.protectedHeaderJSON)
        #expect(Base64.urlEncode(Array(headerJSON.utf8)) == parts.encodedHeader)
        let aad = Array(parts.encodedHeader.utf8)
        #expect(Hex.encode(WorldlineJWE.additionalDataLength(aad)) == parts.alHex)
        let result = try WorldlineJWE.encryptContent(Array(vector.plaintext.utf8), aad: aad, cek: try hex(vector.cekHex),
                                                     iv: try hex(vector.ivHex))
        #expect(Base64.urlEncode(result.ciphertext) == parts.ciphertextB64url)
        #expect(Base64.urlEncode(result.tag) == parts.tagB64url)
        // The vector's whole JWE carries the same parts.
        let segments = vector.compactJWE.split(separator: ".").map(String.init)
        #expect(segments[0] == parts.encodedHeader && segments[3] == parts.ciphertextB64url && segments[4] == parts.tagB64url)
    }

    @Test("the plugin's header is the JS and Android SDKs' compact header, byte for byte")
    func protectedHeaderIsCompact() throws {
        let fixture = try JWEFixture.load()
        let vector = try fixture.vector("js_style")
        #expect(WorldlineJWE.protectedHeader(keyId: fixture.publicKeyResponse.keyId) == Array(try #require(vector.protectedHeaderJSON).utf8))
        #expect(Base64.urlEncode(WorldlineJWE.protectedHeader(keyId: fixture.publicKeyResponse.keyId))
            == vector.deterministicParts?.encodedHeader)
    }

    @Test("the plaintext is the Swift SDK's, byte for byte, so the Swift-style vector's ciphertext is reproduced")
    func swiftPlaintextAndCiphertext() throws {
        let fixture = try JWEFixture.load()
        let vector = try fixture.vector("swift_style")
        let nonce = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
        #expect(try sampleInput.plaintext(nonce: nonce) == Array(vector.plaintext.utf8))

        let jwe = try WorldlineEncryptor.encrypt(sampleInput, to: try fixture.publicKey(), cek: try hex(vector.cekHex),
                                                 iv: try hex(vector.ivHex), nonce: nonce)
        let segments = jwe.split(separator: ".").map(String.init)
        #expect(segments.count == 5)
        #expect(segments[0] == fixture.vectors.first { $0.id == "js_style" }?.deterministicParts?.encodedHeader)
        #expect(segments[2] == Base64.urlEncode(try hex(vector.ivHex)))
        // The ciphertext does not depend on the header; the tag does (the AAD is the header).
        #expect(segments[3] == vector.deterministicParts?.ciphertextB64url)
        let expectedTag = WorldlineJWE.tag(aad: Array(segments[0].utf8), iv: try hex(vector.ivHex),
                                           ciphertext: try #require(Base64.urlDecode(segments[3])),
                                           macKey: Array(try hex(vector.cekHex).prefix(32)))
        #expect(segments[4] == Base64.urlEncode(expectedTag))
        let decrypted = try TestDecryptor.decrypt(jwe, with: try fixture.privateKey())
        #expect(decrypted.plaintext == Array(vector.plaintext.utf8))
    }

    @Test("the test decryptor opens every fixture JWE (Swift-style spaced header included), so it is a fair judge",
          arguments: ["swift_style", "js_style", "joserfc_produced"])
    func decryptorOpensVectors(id: String) throws {
        let fixture = try JWEFixture.load()
        let vector = try fixture.vector(id)
        let result = try TestDecryptor.decrypt(vector.compactJWE, with: try fixture.privateKey())
        #expect(result.plaintext == Array(vector.plaintext.utf8))
        #expect(result.header["kid"] == fixture.publicKeyResponse.keyId)
    }

    @Test("round trip: random key, IV and nonce; the gateway's decryption reads back every field in order")
    func roundTrip() throws {
        let fixture = try JWEFixture.load()
        let input = WorldlineCustomerInput(clientSessionId: "session-1", paymentProductId: 3, accountOnFileId: 42, tokenize: true,
                                           values: [.init(key: "cvv", value: "123")])
        let jwe = try WorldlineEncryptor.encrypt(input, to: try fixture.publicKey())
        let result = try TestDecryptor.decrypt(jwe, with: try fixture.privateKey())
        #expect(result.header == ["alg": "RSA-OAEP", "enc": "A256CBC-HS512", "kid": fixture.publicKeyResponse.keyId])
        let text = String(decoding: result.plaintext, as: UTF8.self)
        #expect(topLevelKeys(text) == ["clientSessionId", "nonce", "paymentProductId", "accountOnFileId", "tokenize", "paymentValues"])
        let object = try plaintextObject(result.plaintext)
        #expect(object["clientSessionId"] as? String == "session-1")
        #expect(object["paymentProductId"] as? Int == 3)
        #expect(object["accountOnFileId"] as? Int == 42)
        #expect(object["tokenize"] as? Bool == true)
        #expect(object["paymentValues"] as? [[String: String]] == [["key": "cvv", "value": "123"]])
        let nonce = try #require(object["nonce"] as? String)
        #expect(UUID(uuidString: nonce) != nil && nonce == nonce.uppercased())

        // Fresh randomness each time: key, IV, ciphertext and tag all differ.
        let again = try WorldlineEncryptor.encrypt(input, to: try fixture.publicKey())
        let (first, second) = (jwe.split(separator: "."), again.split(separator: "."))
        #expect(first[0] == second[0])
        for index in 1..<5 { #expect(first[index] != second[index]) }
    }

    @Test("tokenize and accountOnFileId are written only when set")
    func optionalMembers() throws {
        let input = WorldlineCustomerInput(clientSessionId: "s", paymentProductId: 1, values: [])
        let text = String(decoding: try input.plaintext(nonce: "N"), as: UTF8.self)
        #expect(text == "{\"clientSessionId\": \"s\", \"nonce\": \"N\", \"paymentProductId\": 1, \"paymentValues\": []}")
    }

    @Test("tampering with any of the five segments is caught by the unwrap or the tag", arguments: 0..<5)
    func tampering(segment: Int) throws {
        let fixture = try JWEFixture.load()
        let jwe = try WorldlineEncryptor.encrypt(sampleInput, to: try fixture.publicKey())
        var segments = jwe.split(separator: ".").map(String.init)
        var bytes = try #require(Base64.urlDecode(segments[segment]))
        if segment == 0 {
            // A header that is still valid JSON with the same members: only the tag can tell.
            bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\"kid\":", with: "\"kid\" :").utf8)
        } else {
            bytes[bytes.count / 2] ^= 0x01
        }
        segments[segment] = Base64.urlEncode(bytes)
        let tampered = segments.joined(separator: ".")
        #expect(tampered != jwe)
        #expect(throws: segment == 1 ? TestDecryptor.Failure.unwrap : TestDecryptor.Failure.tag) {
            try TestDecryptor.decrypt(tampered, with: try fixture.privateKey())
        }
    }

    @Test("non-ASCII and JSON-special values survive as UTF-8 in valid JSON")
    func nonASCIIAndEscaping() throws {
        let fixture = try JWEFixture.load()
        let tricky = "Zoë \"Ünïcødé\" \\ 中文 😀\n\t\u{01}/</script>"
        let input = WorldlineCustomerInput(clientSessionId: "s\"e", paymentProductId: 1,
                                           values: [.init(key: "cardholderName", value: "José Müller 中"),
                                                    .init(key: "note", value: tricky)])
        let result = try TestDecryptor.decrypt(try WorldlineEncryptor.encrypt(input, to: try fixture.publicKey()),
                                               with: try fixture.privateKey())
        let text = String(decoding: result.plaintext, as: UTF8.self)
        #expect(text.contains("José Müller 中"))
        #expect(Array(text.utf8).contains(0xC3))  // é as UTF-8, not \u escapes
        let object = try plaintextObject(result.plaintext)
        #expect(object["clientSessionId"] as? String == "s\"e")
        #expect(object["paymentValues"] as? [[String: String]] == [["key": "cardholderName", "value": "José Müller 中"],
                                                                  ["key": "note", "value": tricky]])
    }

    @Test("3072- and 4096-bit keys work (the Swift SDK handles only 2048)", arguments: [3072, 4096])
    func largerKeys(bits: Int) throws {
        let privateKey = try _RSA.Encryption.PrivateKey(keySize: .init(bitCount: bits))
        let key = try WorldlinePublicKey(keyId: "k\(bits)", publicKey: Base64.encode(privateKey.publicKey.derRepresentation))
        #expect(key.keySizeInBits == bits)
        let jwe = try WorldlineEncryptor.encrypt(sampleInput, to: key)
        #expect(try #require(Base64.urlDecode(String(jwe.split(separator: ".")[1]))).count == bits / 8)
        let result = try TestDecryptor.decrypt(jwe, with: privateKey)
        #expect(try plaintextObject(result.plaintext)["clientSessionId"] as? String == sampleInput.clientSessionId)
    }

    @Test("the vendor SDKs' sample public keys parse as 2048-bit SubjectPublicKeyInfo")
    func vendorSampleKeys() throws {
        let responses = try PublicKeyResponses.load()
        #expect(responses.cases.count == 3)
        for sample in responses.cases {
            let keyId = sample.body?.keyId ?? "no-key-id"
            let encoded = try #require(sample.body?.publicKey ?? sample.publicKeyOnly)
            let key = try WorldlinePublicKey(keyId: keyId, publicKey: encoded)
            #expect(key.keySizeInBits == 2048)
            if let prefix = sample.swiftStripPrefixHex {
                // The prefix the Swift SDK strips is this key's SubjectPublicKeyInfo header.
                #expect(Hex.encode(try #require(Base64.decode(encoded)).prefix(24)) == prefix)
            }
            #expect(!(try WorldlineEncryptor.encrypt(sampleInput, to: key)).isEmpty)
        }
    }

    @Test("bad public keys and key ids are refused, naming the field")
    func badKeys() throws {
        let fixture = try JWEFixture.load()
        let good = fixture.publicKeyResponse.publicKey
        let der = try #require(Base64.decode(good))
        let small = try _RSA.Encryption.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).publicKey
        let pkcs1 = try _RSA.Encryption.PublicKey(derRepresentation: der).pkcs1DERRepresentation
        let cases: [(keyId: String, publicKey: String, field: String)] = [
            ("k", "", "publicKey"),
            ("k", "not base64!", "publicKey"),
            ("k", String(good.dropLast(4)), "publicKey"),
            ("k", good.replacingOccurrences(of: "+", with: "-"), "publicKey"),
            ("k", "\n" + good, "publicKey"),
            ("k", Base64.encode(Array("hello, world".utf8)), "publicKey"),
            ("k", Base64.encode(der + [0x00]), "publicKey"),
            ("k", Base64.encode(pkcs1), "publicKey"),
            ("k", Base64.encode(small.derRepresentation), "publicKey"),
            ("", good, "keyId"),
            ("a\nb", good, "keyId"),
        ]
        for item in cases {
            let error = #expect(throws: CheckoutError.self) {
                try WorldlinePublicKey(keyId: item.keyId, publicKey: item.publicKey)
            }
            #expect(error?.field == item.field, "\(item.publicKey.prefix(20))")
            #expect(error?.category == .invalidInput)
        }
        let tooSmall = #expect(throws: CheckoutError.self) {
            try WorldlinePublicKey(keyId: "k", publicKey: Base64.encode(small.derRepresentation))
        }
        #expect(tooSmall?.message.contains("1024") == true)
    }

    @Test("bad input is refused before encrypting, naming the field")
    func badInput() throws {
        let key = try JWEFixture.load().publicKey()
        let empty = #expect(throws: CheckoutError.self) {
            try WorldlineEncryptor.encrypt(WorldlineCustomerInput(clientSessionId: "", paymentProductId: 1, values: []), to: key)
        }
        #expect(empty?.field == "clientSessionId")
        let duplicate = #expect(throws: CheckoutError.self) {
            try WorldlineEncryptor.encrypt(WorldlineCustomerInput(clientSessionId: "s", paymentProductId: 1,
                                                                  values: [.init(key: "cvv", value: "1"), .init(key: "cvv", value: "2")]),
                                           to: key)
        }
        #expect(duplicate?.field == "values[1].key")
        #expect(duplicate?.code == .duplicateField)
        let noKey = #expect(throws: CheckoutError.self) {
            try WorldlineEncryptor.encrypt(WorldlineCustomerInput(clientSessionId: "s", paymentProductId: 1,
                                                                  values: [.init(key: "", value: "1")]), to: key)
        }
        #expect(noKey?.field == "values[0].key")
        let shortCEK = #expect(throws: CheckoutError.self) {
            try WorldlineEncryptor.encrypt(sampleInput, to: key, cek: [UInt8](repeating: 0, count: 32),
                                           iv: [UInt8](repeating: 0, count: 16), nonce: "N")
        }
        #expect(shortCEK?.field == "cek")
        let shortIV = #expect(throws: CheckoutError.self) {
            try WorldlineEncryptor.encrypt(sampleInput, to: key, cek: [UInt8](repeating: 0, count: 64),
                                           iv: [UInt8](repeating: 0, count: 8), nonce: "N")
        }
        #expect(shortIV?.field == "iv")
    }
}
