import Foundation
import Testing
import Till
import TillWorldline

/// Worldline Connect against code Till did not write: jwcrypto (an independent JOSE library) decrypts
/// the app half's JWE, and the vendor's own Python server SDK (connect-sdk-python3 6.3.0) talks to the
/// emulator, checks its webhooks and signs what Till signs.
@Suite("Worldline interop: the vendor's Python SDK and jwcrypto as the other party",
       .enabled(if: PythonEnvironment.available, "python3 not found: the vendor-SDK interop tests need it"))
struct WorldlineInteropTests {
    // MARK: a. jwcrypto decrypts Till's JWE

    @Test("jwcrypto decrypts the app half's JWE (RSA-2048) and reads every member of the customer input")
    func jwcryptoDecrypts2048() async throws {
        let python = try await PythonEnvironment.shared.value
        let key = try await JWEInterop.keyPair(bits: 2048, python: python)
        let publicKey = try WorldlinePublicKey(keyId: "86b64e4e-f7dc-4a4f-b5c2-77dc1b0ae8b5", publicKey: key.publicKeyBase64)
        #expect(publicKey.keySizeInBits == 2048)
        let inputs = [
            WorldlineCustomerInput(clientSessionId: "3f4a0bd5c9e54c51a2b8c0b0a4b1f6d2", paymentProductId: 1, values: [
                .init(key: "cardNumber", value: "4111111111111111"), .init(key: "expiryDate", value: "1230"),
                .init(key: "cvv", value: "123"), .init(key: "cardholderName", value: "Wile E. Coyote"),
            ]),
            WorldlineCustomerInput(clientSessionId: "session-2", paymentProductId: 3, accountOnFileId: 4242, tokenize: true,
                                   values: [.init(key: "cvv", value: "987")]),
            WorldlineCustomerInput(clientSessionId: "session-3", paymentProductId: 809, values: []),
        ]
        let tokens = try inputs.map { try WorldlineEncryptor.encrypt($0, to: publicKey) }
        let results = try await JWEInterop.decrypt(tokens, privateKeyPem: key.privateKeyPem, python: python)
        try #require(results.count == inputs.count)
        for (input, result) in zip(inputs, results) {
            try JWEInterop.expectDecrypted(result, equals: input, keyId: publicKey.keyId)
        }
    }

    @Test("jwcrypto reads non-ASCII and escaped values exactly, and a 4096-bit key works")
    func jwcryptoNonASCIIAnd4096() async throws {
        let python = try await PythonEnvironment.shared.value
        let key = try await JWEInterop.keyPair(bits: 4096, python: python)
        let publicKey = try WorldlinePublicKey(keyId: "clé-4096 \"quoted\"", publicKey: key.publicKeyBase64)
        #expect(publicKey.keySizeInBits == 4096)
        let input = WorldlineCustomerInput(clientSessionId: "séance-ü-🙂", paymentProductId: 1, values: [
            .init(key: "cardNumber", value: "5555555555554444"),
            .init(key: "cardholderName", value: "Zoë Ångström 李小龍 🙂 Ñandú"),
            .init(key: "street", value: "quote \" backslash \\ slash / tab \t newline \n bell \u{07} nul \u{00}"),
            .init(key: "city", value: "\u{2028}\u{2029}\u{FEFF}Straße"),
        ])
        let token = try WorldlineEncryptor.encrypt(input, to: publicKey)
        let results = try await JWEInterop.decrypt([token], privateKeyPem: key.privateKeyPem, python: python)
        try #require(results.count == 1)
        try JWEInterop.expectDecrypted(results[0], equals: input, keyId: publicKey.keyId)
    }

    @Test("jwcrypto refuses a JWE with any one segment changed, and one encrypted to another key")
    func jwcryptoRefusesTampering() async throws {
        let python = try await PythonEnvironment.shared.value
        let key = try await JWEInterop.keyPair(bits: 2048, python: python)
        let other = try await JWEInterop.keyPair(bits: 2048, python: python)
        let publicKey = try WorldlinePublicKey(keyId: "kid-1", publicKey: key.publicKeyBase64)
        let input = WorldlineCustomerInput(clientSessionId: "session", paymentProductId: 1,
                                           values: [.init(key: "cardNumber", value: "4111111111111111")])
        let token = try WorldlineEncryptor.encrypt(input, to: publicKey)
        let segments = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(segments.count == 5)
        let names = ["protected header", "encrypted key", "IV", "ciphertext", "tag"]
        var tokens = [token]
        for index in segments.indices {
            var changed = segments
            changed[index] = JWEInterop.flipMiddleCharacter(segments[index])
            tokens.append(changed.joined(separator: "."))
        }
        let foreign = try WorldlineEncryptor.encrypt(input, to: try WorldlinePublicKey(keyId: "kid-1", publicKey: other.publicKeyBase64))
        tokens.append(foreign)
        let results = try await JWEInterop.decrypt(tokens, privateKeyPem: key.privateKeyPem, python: python)
        try #require(results.count == tokens.count)
        #expect(results[0].ok, "the untouched JWE must decrypt: \(results[0].error ?? "")")
        for (index, name) in names.enumerated() {
            #expect(!results[index + 1].ok, "jwcrypto accepted a JWE whose \(name) was changed")
        }
        #expect(!results[6].ok, "jwcrypto decrypted a JWE made for another key")
    }
}

/// The jwcrypto side of the encryption tests (`Python/jwe.py`).
enum JWEInterop {
    struct KeyPair: Decodable {
        var publicKeyBase64: String
        var privateKeyPem: String
    }

    struct Decryption: Decodable {
        var ok: Bool
        var header: [String: String]?
        var payloadBase64: String?
        var payload: Plaintext?
        var error: String?
    }

    /// The plaintext as jwcrypto's JSON reader sees it.
    struct Plaintext: Decodable, Equatable {
        struct Value: Decodable, Equatable {
            var key: String
            var value: String
        }
        var clientSessionId: String
        var nonce: String
        var paymentProductId: Int
        var accountOnFileId: Int?
        var tokenize: Bool?
        var paymentValues: [Value]
    }

    /// An RSA key pair made by Python's `cryptography` (the other party's key, not one Till made).
    static func keyPair(bits: Int, python: PythonEnvironment) async throws -> KeyPair {
        try await python.run("jwe.py", ["keygen"], input: ["bits": bits], as: KeyPair.self)
    }

    /// jwcrypto's verdict on each token.
    static func decrypt(_ tokens: [String], privateKeyPem: String, python: PythonEnvironment) async throws -> [Decryption] {
        struct Request: Encodable {
            var privateKeyPem: String
            var tokens: [String]
        }
        struct Answer: Decodable { var results: [Decryption] }
        return try await python.run("jwe.py", ["decrypt"], input: Request(privateKeyPem: privateKeyPem, tokens: tokens),
                                    as: Answer.self).results
    }

    /// Checks that jwcrypto decrypted `result` to exactly `input`: the header's three members, every
    /// plaintext member, and no other member.
    static func expectDecrypted(_ result: Decryption, equals input: WorldlineCustomerInput, keyId: String,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.ok, "jwcrypto refused the JWE: \(result.error ?? "")", sourceLocation: sourceLocation)
        let header = try #require(result.header, sourceLocation: sourceLocation)
        #expect(header == ["alg": "RSA-OAEP", "enc": "A256CBC-HS512", "kid": keyId], sourceLocation: sourceLocation)
        let plaintext = try #require(result.payload, sourceLocation: sourceLocation)
        #expect(plaintext.clientSessionId == input.clientSessionId, sourceLocation: sourceLocation)
        #expect(!plaintext.nonce.isEmpty, sourceLocation: sourceLocation)
        #expect(plaintext.paymentProductId == input.paymentProductId, sourceLocation: sourceLocation)
        #expect(plaintext.accountOnFileId == input.accountOnFileId, sourceLocation: sourceLocation)
        #expect(plaintext.tokenize == (input.tokenize ? true : nil), sourceLocation: sourceLocation)
        #expect(plaintext.paymentValues == input.values.map { Plaintext.Value(key: $0.key, value: $0.value) },
                sourceLocation: sourceLocation)
        let bytes = try #require(result.payloadBase64.flatMap { Data(base64Encoded: $0) }, sourceLocation: sourceLocation)
        let object = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any], sourceLocation: sourceLocation)
        var expectedKeys: Set<String> = ["clientSessionId", "nonce", "paymentProductId", "paymentValues"]
        if input.accountOnFileId != nil { expectedKeys.insert("accountOnFileId") }
        if input.tokenize { expectedKeys.insert("tokenize") }
        #expect(Set(object.keys) == expectedKeys, sourceLocation: sourceLocation)
    }

    /// `segment` with its middle base64url character replaced by another (a middle character's six
    /// bits are all data, so the decoded bytes change).
    static func flipMiddleCharacter(_ segment: String) -> String {
        var characters = Array(segment)
        let middle = characters.count / 2
        characters[middle] = characters[middle] == "A" ? "B" : "A"
        return String(characters)
    }
}
