import Foundation
import Till

/// The gateway's public key for client-side encryption (`GET /crypto/publickey`): its id and the
/// RSA key (standard Base64 of a DER SubjectPublicKeyInfo).
public struct WorldlinePublicKey: Sendable, Hashable {
    public var keyId: String
    public var publicKey: String

    /// - Throws: ``CheckoutError`` naming `publicKey` when it is not an RSA SubjectPublicKeyInfo.
    public init(keyId: String, publicKey: String) throws(CheckoutError) {
        self.keyId = keyId
        self.publicKey = publicKey
    }
}

/// What the customer entered, as the gateway's `encryptedCustomerInput` carries it.
public struct WorldlineCustomerInput: Sendable, Hashable {
    public var clientSessionId: String
    public var paymentProductId: Int
    public var accountOnFileId: Int?
    public var tokenize: Bool
    /// Field id and unmasked value, in order.
    public var values: [KeyValue]

    public struct KeyValue: Sendable, Hashable {
        public var key: String
        public var value: String
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    public init(clientSessionId: String, paymentProductId: Int, accountOnFileId: Int? = nil, tokenize: Bool = false,
                values: [KeyValue]) {
        self.clientSessionId = clientSessionId
        self.paymentProductId = paymentProductId
        self.accountOnFileId = accountOnFileId
        self.tokenize = tokenize
        self.values = values
    }
}

/// Encrypts a ``WorldlineCustomerInput`` for the gateway: JWE compact serialization, RSA-OAEP key
/// wrapping and A256CBC-HS512 content encryption.
public enum WorldlineEncryptor {
    /// The JWE compact string for `input`, encrypted to `key`.
    public static func encrypt(_ input: WorldlineCustomerInput, to key: WorldlinePublicKey) throws(CheckoutError) -> String {
        throw CheckoutError(.invalidField, field: "publicKey", message: "not implemented yet")
    }
}
