import _CryptoExtras
import Crypto
import Foundation
import Till
import TillGatewayKit

/// The gateway's public key for client-side encryption (`GET /crypto/publickey`): its id and the
/// RSA key (standard Base64 of a DER SubjectPublicKeyInfo).
///
/// Any RSA key of 2048 bits or more is accepted. The vendor's Swift SDK (connect-sdk-client-swift
/// 7.0.0, `Cryptography/Encryptor.swift`) instead strips one fixed 24-byte SubjectPublicKeyInfo prefix
/// (`30 82 01 22 … 03 82 01 0F 00`) and so only handles 2048-bit keys; the JS SDK (node-forge) and the
/// Android SDK (`X509EncodedKeySpec`) parse the SubjectPublicKeyInfo like this type does.
public struct WorldlinePublicKey: Sendable, Hashable {
    /// The key's id, sent as the JWE header's `kid`.
    public let keyId: String
    /// The key as the gateway sent it: standard, padded Base64 of a DER SubjectPublicKeyInfo.
    public let publicKey: String
    /// The SubjectPublicKeyInfo's DER bytes, checked. Kept as bytes: `_RSA.Encryption.PublicKey` is
    /// not `Sendable`, so the key is parsed again for each encryption.
    private let der: [UInt8]
    /// The RSA modulus size in bits (2048, 3072, 4096).
    public let keySizeInBits: Int

    /// The smallest RSA modulus accepted, in bits.
    public static let minimumKeySizeInBits = 2048

    /// Parses the gateway's public key.
    /// - Throws: ``CheckoutError`` naming `keyId` when it is empty or holds control characters, or
    ///   `publicKey` when it is not standard Base64 of exactly one DER SubjectPublicKeyInfo of an RSA
    ///   key of at least 2048 bits.
    public init(keyId: String, publicKey: String) throws(CheckoutError) {
        guard !keyId.isEmpty else {
            throw CheckoutError(.missingField, field: "keyId", message: "the public key's keyId is empty")
        }
        guard !keyId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw CheckoutError(.invalidField, field: "keyId", message: "the keyId holds control characters")
        }
        guard let der = Base64.decode(publicKey), !der.isEmpty else {
            throw CheckoutError(.invalidField, field: "publicKey", message: "not standard, padded Base64")
        }
        let parsed: _RSA.Encryption.PublicKey
        do {
            // The unsafe initialiser accepts 1024-bit keys, so a short key gets its own message below.
            parsed = try _RSA.Encryption.PublicKey(unsafeDERRepresentation: der)
        } catch {
            throw CheckoutError(.invalidField, field: "publicKey", message: "not a DER RSA public key")
        }
        // BoringSSL also reads a bare PKCS#1 RSAPublicKey and may ignore trailing bytes: the input must
        // be exactly the SubjectPublicKeyInfo the key re-encodes to.
        guard Array(parsed.derRepresentation) == der else {
            throw CheckoutError(.invalidField, field: "publicKey", message: "not exactly one DER SubjectPublicKeyInfo")
        }
        guard parsed.keySizeInBits >= Self.minimumKeySizeInBits else {
            throw CheckoutError(.invalidField, field: "publicKey",
                                message: "a \(parsed.keySizeInBits)-bit RSA key; at least \(Self.minimumKeySizeInBits) bits are required")
        }
        self.keyId = keyId
        self.publicKey = publicKey
        self.der = der
        self.keySizeInBits = parsed.keySizeInBits
    }

    /// The RSA key, parsed from the bytes ``init(keyId:publicKey:)`` checked.
    func rsaKey() throws(CheckoutError) -> _RSA.Encryption.PublicKey {
        do {
            return try _RSA.Encryption.PublicKey(unsafeDERRepresentation: der)
        } catch {
            throw CheckoutError(.invalidField, field: "publicKey", message: "not a DER RSA public key")
        }
    }
}

/// What the customer entered, as the gateway's `encryptedCustomerInput` carries it.
public struct WorldlineCustomerInput: Sendable, Hashable {
    /// The client session the app got from the merchant's server (`SessionResponse.clientSessionId`).
    public var clientSessionId: String
    /// The payment product the customer chose (`1` Visa, `3` MasterCard…).
    public var paymentProductId: Int
    /// The stored card or account the customer picked, if any.
    public var accountOnFileId: Int?
    /// Whether the gateway should keep the card as a token; written only when true.
    public var tokenize: Bool
    /// Field id and unmasked value, in order.
    public var values: [KeyValue]

    /// One `paymentValues` entry: a product field's id and its unmasked value.
    public struct KeyValue: Sendable, Hashable {
        /// The product field's id (`cardNumber`, `expiryDate`).
        public var key: String
        /// The value without its mask (`4567350000427977`, `1230`).
        public var value: String
        /// A field id and its unmasked value.
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// The customer's input for one payment product; checked when encrypted.
    public init(clientSessionId: String, paymentProductId: Int, accountOnFileId: Int? = nil, tokenize: Bool = false,
                values: [KeyValue]) {
        self.clientSessionId = clientSessionId
        self.paymentProductId = paymentProductId
        self.accountOnFileId = accountOnFileId
        self.tokenize = tokenize
        self.values = values
    }

    /// The plaintext the JWE carries, as UTF-8 JSON.
    ///
    /// Key order and spacing follow the vendor's Swift SDK (connect-sdk-client-swift 7.0.0,
    /// `ConnectSDK.preparePaymentRequestJSON`): `clientSessionId, nonce, paymentProductId,
    /// accountOnFileId?, tokenize? (only when true), paymentValues`, a space after each top-level `:`
    /// and `,`, and `paymentValues` compact with `key` before `value`. Unlike that SDK, which pastes
    /// the strings in unescaped and writes no `paymentValues` and no closing brace when the values
    /// cannot be serialised, every string here is JSON-escaped and the object is always complete.
    /// The JS SDK (`Encryptor.ts`) and Android SDK (`EncryptDataJsonSerializer`) use other key orders
    /// and nonce formats; JSON readers do not depend on either.
    /// - Throws: ``CheckoutError`` naming `clientSessionId` when it is empty, `values[i].key` when a
    ///   key is empty or repeats an earlier one.
    package func plaintext(nonce: String) throws(CheckoutError) -> [UInt8] {
        guard !clientSessionId.isEmpty else {
            throw CheckoutError(.missingField, field: "clientSessionId", message: "the client session id is empty")
        }
        var seen: Set<String> = []
        for (index, entry) in values.enumerated() {
            guard !entry.key.isEmpty else {
                throw CheckoutError(.missingField, field: "values[\(index)].key", message: "a payment value has no key")
            }
            guard seen.insert(entry.key).inserted else {
                throw CheckoutError(.duplicateField, field: "values[\(index)].key",
                                    message: "the key \(CheckoutError.printable(entry.key)) appears twice")
            }
        }
        var json = "{\"clientSessionId\": \(Self.quoted(clientSessionId)), \"nonce\": \(Self.quoted(nonce)), "
        json += "\"paymentProductId\": \(paymentProductId), "
        if let accountOnFileId { json += "\"accountOnFileId\": \(accountOnFileId), " }
        if tokenize { json += "\"tokenize\": true, " }
        json += "\"paymentValues\": ["
        json += values.map { "{\"key\":\(Self.quoted($0.key)),\"value\":\(Self.quoted($0.value))}" }.joined(separator: ",")
        json += "]}"
        return Array(json.utf8)
    }

    /// `text` as a JSON string literal (RFC 8259 §7): quote, backslash and control characters escaped,
    /// everything else (non-ASCII included) left as it is, to be written as UTF-8.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case let control where control.value < 0x20:
                out += "\\u00" + Hex.encode([UInt8(control.value)])
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Encrypts a ``WorldlineCustomerInput`` for the gateway: JWE compact serialization, RSA-OAEP key
/// wrapping and A256CBC-HS512 content encryption.
///
/// The result goes to the merchant's server, which sends it as `encryptedCustomerInput` in
/// CreatePayment. It is random every time (new content key, IV and nonce).
public enum WorldlineEncryptor {
    /// The JWE compact string for `input`, encrypted to `key`.
    /// - Throws: ``CheckoutError`` naming the input field at fault (`clientSessionId`,
    ///   `values[2].key`), or `publicKey` when the key cannot wrap the content key.
    public static func encrypt(_ input: WorldlineCustomerInput, to key: WorldlinePublicKey) throws(CheckoutError) -> String {
        try encrypt(input, to: key, cek: randomBytes(WorldlineJWE.contentKeyLength), iv: randomBytes(WorldlineJWE.ivLength),
                    nonce: UUID().uuidString.uppercased())
    }

    /// ``encrypt(_:to:)`` with the random parts given: the content key (64 bytes: MAC key, then AES
    /// key), the IV (16 bytes) and the plaintext's nonce. Everything but the RSA-OAEP-wrapped key is
    /// then deterministic. For tests only.
    package static func encrypt(_ input: WorldlineCustomerInput, to key: WorldlinePublicKey,
                                cek: [UInt8], iv: [UInt8], nonce: String) throws(CheckoutError) -> String {
        let plaintext = try input.plaintext(nonce: nonce)
        return try WorldlineJWE.compact(protectedHeader: WorldlineJWE.protectedHeader(keyId: key.keyId),
                                        plaintext: plaintext, key: try key.rsaKey(), cek: cek, iv: iv)
    }

    /// `count` bytes from the system's secure random source.
    private static func randomBytes(_ count: Int) -> [UInt8] {
        SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }
}

// What the customer entered never shows when an input is printed, logged or dumped: only the field names.
extension WorldlineCustomerInput: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "WorldlineCustomerInput(product \(paymentProductId), fields: \(values.map(\.key).joined(separator: ", ")): <redacted>)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["paymentProductId": paymentProductId, "fields": values.map(\.key)]) }
}

extension WorldlineCustomerInput.KeyValue: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(key): <redacted>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["key": key]) }
}
