import _CryptoExtras
import Crypto
import Foundation
import Till
import TillGatewayKit

/// The JWE compact serialization Worldline's client SDKs produce (RFC 7516 with RFC 7518's
/// `RSA-OAEP` and `A256CBC-HS512`), as read from connect-sdk-client-swift 7.0.0
/// (`Cryptography/JOSEEncryptor.swift`, `Encryptor.swift`), connect-sdk-client-js 6.0.5
/// (`src/JOSEEncryptor.ts`) and connect-sdk-client-android 7.0.4 (`encryption/Encryptor.java`,
/// `EncryptUtil.java`):
///
/// 1. a 64-byte content key: the first 32 bytes are the HMAC-SHA-512 key, the last 32 the AES key;
/// 2. the content key wrapped with RSA-OAEP, SHA-1 and MGF1-SHA-1 (iOS `SecPadding.OAEP`, forge's
///    default `RSA-OAEP`, Android `OAEPWithSHA-1AndMGF1Padding`);
/// 3. a 16-byte IV and AES-256-CBC with PKCS#7 padding over the plaintext;
/// 4. AAD = the ASCII of the base64url protected header, AL = its length in bits as a 64-bit
///    big-endian integer, tag = the first 32 bytes of HMAC-SHA-512(AAD ‖ IV ‖ ciphertext ‖ AL);
/// 5. `header.key.iv.ciphertext.tag`, each base64url without padding.
package enum WorldlineJWE {
    /// Content key bytes: the MAC key, then the AES key.
    package static let contentKeyLength = 64
    package static let ivLength = 16
    /// The authentication tag keeps the first half of the HMAC-SHA-512 output.
    package static let tagLength = 32

    /// The protected header: `{"alg":"RSA-OAEP","enc":"A256CBC-HS512","kid":"…"}`, compact.
    ///
    /// The JS SDK (`JSON.stringify`) and the Android SDK write it compact; the Swift SDK writes
    /// `{"alg":"RSA-OAEP", "enc":"A256CBC-HS512", "kid":"…"}` with a space after each comma. Both are
    /// valid: the receiver authenticates the base64url header exactly as sent. The compact form is
    /// chosen because the JS SDK's test asserts exactly these three members. The key id is
    /// JSON-escaped (the Swift SDK pastes it in as it is).
    package static func protectedHeader(keyId: String) -> [UInt8] {
        Array("{\"alg\":\"RSA-OAEP\",\"enc\":\"A256CBC-HS512\",\"kid\":\(WorldlineCustomerInput.quoted(keyId))}".utf8)
    }

    /// The compact JWE for `plaintext`, with the content key and IV given.
    /// - Throws: ``CheckoutError`` naming `cek` or `iv` for a wrong length, `publicKey` when RSA-OAEP
    ///   fails.
    package static func compact(protectedHeader: [UInt8], plaintext: [UInt8], key: _RSA.Encryption.PublicKey,
                                cek: [UInt8], iv: [UInt8]) throws(CheckoutError) -> String {
        guard cek.count == contentKeyLength else {
            throw CheckoutError(.invalidField, field: "cek", message: "the content key must be \(contentKeyLength) bytes")
        }
        let encodedHeader = Base64.urlEncode(protectedHeader)
        let encryptedKey: Data
        do {
            encryptedKey = try key.encrypt(cek, padding: .PKCS1_OAEP)
        } catch {
            throw CheckoutError(.invalidField, field: "publicKey", message: "RSA-OAEP could not wrap the content key")
        }
        let (ciphertext, tag) = try encryptContent(plaintext, aad: Array(encodedHeader.utf8), cek: cek, iv: iv)
        return [encodedHeader, Base64.urlEncode(encryptedKey), Base64.urlEncode(iv), Base64.urlEncode(ciphertext),
                Base64.urlEncode(tag)].joined(separator: ".")
    }

    /// AES_256_CBC_HMAC_SHA_512 (RFC 7518 §5.2.5): the ciphertext and the 32-byte tag.
    /// - Throws: ``CheckoutError`` naming `cek` or `iv` for a wrong length.
    package static func encryptContent(_ plaintext: [UInt8], aad: [UInt8], cek: [UInt8],
                                       iv: [UInt8]) throws(CheckoutError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        guard cek.count == contentKeyLength else {
            throw CheckoutError(.invalidField, field: "cek", message: "the content key must be \(contentKeyLength) bytes")
        }
        guard iv.count == ivLength, let cbcIV = try? AES._CBC.IV(ivBytes: iv) else {
            throw CheckoutError(.invalidField, field: "iv", message: "the IV must be \(ivLength) bytes")
        }
        let ciphertext: [UInt8]
        do {
            ciphertext = Array(try AES._CBC.encrypt(plaintext, using: SymmetricKey(data: cek[32...]), iv: cbcIV))
        } catch {
            throw CheckoutError("encryption_failed", category: .configuration, message: "AES-256-CBC failed")
        }
        return (ciphertext, tag(aad: aad, iv: iv, ciphertext: ciphertext, macKey: Array(cek[..<32])))
    }

    /// The first 32 bytes of HMAC-SHA-512(`macKey`, AAD ‖ IV ‖ ciphertext ‖ AL).
    package static func tag(aad: [UInt8], iv: [UInt8], ciphertext: [UInt8], macKey: [UInt8]) -> [UInt8] {
        var mac = HMAC<SHA512>(key: SymmetricKey(data: macKey))
        mac.update(data: aad)
        mac.update(data: iv)
        mac.update(data: ciphertext)
        mac.update(data: additionalDataLength(aad))
        return Array(Array(mac.finalize()).prefix(tagLength))
    }

    /// AL: the AAD's length in bits as a 64-bit big-endian integer.
    package static func additionalDataLength(_ aad: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: (UInt64(aad.count) * 8).bigEndian) { Array($0) }
    }
}
