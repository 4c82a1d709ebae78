import Crypto
import Foundation
import Till
import TillOrchestration
import TillGatewayKit

/// Worldline Connect webhook authentication: `X-GCS-Signature` is Base64(HMAC-SHA256(secret, raw
/// body)) under the webhook key `X-GCS-KeyId` names.
///
/// Read from connect-sdk-python3 6.3.0 (`worldline/connect/sdk/webhooks/signature_validator.py`,
/// commit e5dfdc8, and `tests/unit/test_web_hooks_helper.py`) and the vendor's webhook docs
/// (`documentation/webhooks/event-structure/`): the header lookup ignores case; a missing or repeated
/// header is refused; an unknown key id is refused; the Base64 text is compared in constant time. The
/// body is the exact bytes received: re-serialised JSON, a changed line ending or a trimmed final
/// newline no longer verifies.
public struct WorldlineWebhookSignature: Sendable {
    /// The header carrying the signature.
    public static let signatureHeader = "X-GCS-Signature"
    /// The header naming the webhook key.
    public static let keyIdHeader = "X-GCS-KeyId"
    /// The error code for a key id the merchant has no secret for.
    public static let unknownKeyId: CheckoutError.Code = "unknown_key_id"

    /// The merchant's webhook keys: key id → secret key, as the Configuration Center lists them.
    public var secrets: [String: String]

    /// - Parameter secrets: key id → secret key. Several keys may be live at once (key rotation).
    public init(secrets: [String: String]) {
        self.secrets = secrets
    }

    /// Verifies a webhook delivery.
    ///
    /// - Parameters:
    ///   - body: the request body exactly as received.
    ///   - headers: every header as received, in order, names in any case. A list, not a dictionary,
    ///     so that a repeated `X-GCS-Signature` or `X-GCS-KeyId` is seen and refused.
    /// - Returns: the key id that verified.
    /// - Throws: ``CheckoutError`` in category `verification`, naming the header at fault
    ///   (`headers.X-GCS-Signature`, `headers.X-GCS-KeyId`): `missing_field` when a header is absent,
    ///   `duplicate_field` when it is repeated, ``unknownKeyId`` for a key id without a secret,
    ///   `signature_mismatch` for an empty or wrong signature. A key whose secret is empty is a
    ///   `missing_secret` configuration error.
    @discardableResult
    public func verify(body: Data, headers: [(name: String, value: String)]) throws(CheckoutError) -> String {
        let signature = try Self.header(Self.signatureHeader, in: headers)
        let keyId = try Self.header(Self.keyIdHeader, in: headers)
        return try verify(body: body, signature: signature, keyId: keyId)
    }

    /// Verifies a notification the server received.
    ///
    /// ``IncomingNotification/headers`` is a dictionary: a header sent twice has already been merged
    /// into one value (the last one, or a comma-joined list, depending on the HTTP server), so a
    /// duplicate cannot be refused as the vendor SDK refuses it. A comma-joined pair of signatures does
    /// not verify; a dropped duplicate is the one case this overload cannot see. Use
    /// ``verify(body:headers:)`` when the raw header list is available.
    /// - Returns: the key id that verified.
    /// - Throws: as ``verify(body:headers:)``, except `duplicate_field`.
    @discardableResult
    public func verify(_ notification: IncomingNotification) throws(CheckoutError) -> String {
        try verify(body: notification.body, headers: notification.headers.map { (name: $0.key, value: $0.value) })
    }

    /// Verifies `signature` (the `X-GCS-Signature` value) for `body` under `keyId`.
    /// - Returns: `keyId`.
    /// - Throws: ``CheckoutError`` as ``verify(body:headers:)`` describes.
    @discardableResult
    public func verify(body: Data, signature: String, keyId: String) throws(CheckoutError) -> String {
        guard let secret = secrets[keyId] else {
            throw CheckoutError(Self.unknownKeyId, category: .verification, field: Self.field(Self.keyIdHeader),
                                message: "no webhook secret for key id \(CheckoutError.printable(keyId))")
        }
        guard !secret.isEmpty else {
            throw CheckoutError(.missingSecret, field: "webhookSecrets.\(CheckoutError.printable(keyId))",
                                message: "the webhook secret for this key id is empty")
        }
        guard !signature.isEmpty else {
            throw CheckoutError(.signatureMismatch, field: Self.field(Self.signatureHeader), message: "the signature is empty")
        }
        guard ConstantTime.equals(signature, Self.signature(body: body, secret: secret)) else {
            throw CheckoutError(.signatureMismatch, field: Self.field(Self.signatureHeader),
                                message: "the signature does not match the body under key id \(CheckoutError.printable(keyId))")
        }
        return keyId
    }

    /// `Base64(HMAC-SHA256(utf8(secret), body))`: the `X-GCS-Signature` of `body`.
    public static func signature(body: Data, secret: String) -> String {
        Base64.encode(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(secret.utf8))))
    }

    /// The one value of `name` (any case) in `headers`.
    private static func header(_ name: String, in headers: [(name: String, value: String)]) throws(CheckoutError) -> String {
        let wanted = name.lowercased()
        let values = headers.filter { $0.name.lowercased() == wanted }.map(\.value)
        guard let value = values.first else {
            throw CheckoutError(.missingField, category: .verification, field: field(name), message: "the \(name) header is missing")
        }
        guard values.count == 1 else {
            throw CheckoutError(.duplicateField, category: .verification, field: field(name),
                                message: "the \(name) header appears \(values.count) times")
        }
        return value
    }

    private static func field(_ header: String) -> String { "headers.\(header)" }
}
