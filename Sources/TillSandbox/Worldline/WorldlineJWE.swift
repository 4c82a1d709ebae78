import Crypto
import _CryptoExtras
import Foundation

/// Decrypts the app's `encryptedCustomerInput`: a JWE in compact form, as the client SDKs make it
/// (swift `Cryptography/JOSEEncryptor.swift`, js `src/JOSEEncryptor.ts`, android `Encryptor.java`).
///
/// - protected header `{"alg":"RSA-OAEP","enc":"A256CBC-HS512","kid":…}` (the Swift SDK writes it with a
///   space after each comma, so the AAD is the **raw** first segment, never a re-serialised header);
/// - the 64-byte content key wrapped with RSA-OAEP (SHA-1, MGF1-SHA-1);
/// - MAC key = key[0..<32], AES key = key[32..<64]; AES-256-CBC with PKCS#7 padding;
/// - tag = first 32 bytes of HMAC-SHA-512(MAC key, AAD ‖ IV ‖ ciphertext ‖ AAD bit length as 64-bit
///   big-endian), checked in constant time before anything is decrypted.
enum WorldlineJWE {
    /// Why a JWE was refused (the message goes into the 400 answer; it never reveals key material).
    struct Failure: Error, Equatable, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    static func decrypt(_ compact: String, key: WorldlineEmulator.EncryptionKey) throws(Failure) -> [UInt8] {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 5 else { throw Failure(reason: "not a compact JWE (5 segments)") }
        guard let headerBytes = LenientBase64.decodeURL(parts[0]), let wrapped = LenientBase64.decodeURL(parts[1]),
              let iv = LenientBase64.decodeURL(parts[2]), let ciphertext = LenientBase64.decodeURL(parts[3]),
              let tag = LenientBase64.decodeURL(parts[4]) else {
            throw Failure(reason: "a segment is not base64url")
        }
        guard let header = try? JSONValue.parse(headerBytes), header.objectMembers != nil else {
            throw Failure(reason: "the protected header is not a JSON object")
        }
        guard header["alg"]?.stringValue == "RSA-OAEP" else { throw Failure(reason: "alg must be RSA-OAEP") }
        guard header["enc"]?.stringValue == "A256CBC-HS512" else { throw Failure(reason: "enc must be A256CBC-HS512") }
        guard header["kid"]?.stringValue == key.keyId else { throw Failure(reason: "kid is not the current key") }
        guard header["zip"] == nil, header["crit"] == nil else { throw Failure(reason: "zip and crit are not supported") }
        guard iv.count == 16 else { throw Failure(reason: "the IV must be 16 bytes") }
        guard tag.count == 32 else { throw Failure(reason: "the tag must be 32 bytes") }
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else { throw Failure(reason: "bad ciphertext length") }

        let contentKey: Data
        do {
            let privateKey = try _RSA.Encryption.PrivateKey(derRepresentation: key.privateKeyDER)
            contentKey = try privateKey.decrypt(wrapped, padding: .PKCS1_OAEP)
        } catch {
            throw Failure(reason: "the content key cannot be unwrapped")
        }
        guard contentKey.count == 64 else { throw Failure(reason: "the content key must be 64 bytes") }
        let macKey = SymmetricKey(data: contentKey.prefix(32))
        let encryptionKey = SymmetricKey(data: contentKey.suffix(32))

        let aad = Array(parts[0].utf8)
        var macInput = aad + iv + ciphertext
        let bits = UInt64(aad.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) { macInput.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        let expected = Array(HMAC<SHA512>.authenticationCode(for: macInput, using: macKey)).prefix(32)
        guard constantTimeEqual(Array(expected), tag) else { throw Failure(reason: "the authentication tag does not match") }

        do {
            let plaintext = try AES._CBC.decrypt(ciphertext, using: encryptionKey, iv: try AES._CBC.IV(ivBytes: iv))
            return Array(plaintext)
        } catch {
            throw Failure(reason: "the ciphertext cannot be decrypted")
        }
    }
}
