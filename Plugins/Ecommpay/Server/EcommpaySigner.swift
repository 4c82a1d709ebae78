import Crypto
import Foundation
import TillGatewayKit

/// ecommpay's signature: Base64 (with padding) of HMAC-SHA512, keyed with the project's secret (UTF-8),
/// over ``EcommpaySignatureString`` of the parameters (every SDK: Python `signature_handler.py`, PHP
/// `SignatureHandler.php`, JS `signer.js`, Go `signature-handler.go`, Java `SignatureHandler.java`).
public enum EcommpaySigner {
    /// The signature of `string`.
    public static func sign(string: String, secret: String) -> String {
        let mac = HMAC<SHA512>.authenticationCode(for: Data(string.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// The signature of a JSON object.
    public static func sign(_ object: OrderedJSON, secret: String) -> String {
        sign(string: EcommpaySignatureString.string(of: object), secret: secret)
    }

    /// Whether `signature` is the object's, compared in constant time (the SDKs compare plainly).
    public static func isValid(_ signature: String, of object: OrderedJSON, secret: String) -> Bool {
        ConstantTime.equals(sign(object, secret: secret), signature)
    }

    /// `object` without any member named `signature`, at every level of nested objects (lists are not
    /// entered, as in the Python SDK's `__remove_param`; none of the SDKs' callbacks carries one in a list).
    public static func removingSignatures(_ object: OrderedJSON) -> OrderedJSON {
        guard case .object(let members) = object else { return object }
        return .object(members.filter { $0.key != "signature" }.map { .init(key: $0.key, value: removingSignatures($0.value)) })
    }

    /// `object` with its signature set where ecommpay expects it: `general.signature` when there is a
    /// `general` object (a Gate request), else a top-level `signature` (the WooCommerce plugin's `EcpSigner::sign`).
    public static func signed(_ object: OrderedJSON, secret: String) -> OrderedJSON {
        let signature = OrderedJSON.string(sign(removingSignatures(object), secret: secret))
        guard case .object(let members) = removingSignatures(object) else { return object }
        if let index = members.firstIndex(where: { $0.key == "general" }), case .object(var general) = members[index].value {
            general.append(.init(key: "signature", value: signature))
            var out = members
            out[index] = .init(key: "general", value: .object(general))
            return .object(out)
        }
        return .object(members + [.init(key: "signature", value: signature)])
    }
}

/// A callback from ecommpay, verified and read.
///
/// As the Python SDK's `Callback` (GitHub master): the JSON parsed (duplicate keys refused), the
/// signature taken from `signature` or else `general.signature`, every `signature` member removed,
/// the rest signed and compared.
public struct EcommpayCallback: Sendable, Hashable {
    /// The body, parsed.
    public let body: OrderedJSON

    /// Verifies `data` against the project's secret.
    /// - Throws: ``CheckoutError``: `malformed_body` naming `<field>` for what is not a JSON object,
    ///   `missing_field` naming `<field>.signature` when neither `signature` nor `general.signature` is a
    ///   string, `signature_mismatch` naming it when it does not match.
    public init(_ data: Data, secret: String, field: String = "body", gateway: GatewayID? = nil) throws(CheckoutError) {
        let body = try OrderedJSON.parse(data, field: field)
        guard body.objectMembers != nil else {
            throw CheckoutError(.malformedBody, field: field, message: "a callback is a JSON object", gateway: gateway)
        }
        guard let signature = body["signature"]?.stringValue ?? body["general"]?["signature"]?.stringValue, !signature.isEmpty else {
            throw CheckoutError(.missingField, field: "\(field).signature", message: "neither signature nor general.signature", gateway: gateway)
        }
        guard EcommpaySigner.isValid(signature, of: EcommpaySigner.removingSignatures(body), secret: secret) else {
            throw CheckoutError(.signatureMismatch, field: "\(field).signature", message: "the HMAC-SHA512 signature does not match", gateway: gateway)
        }
        self.body = body
    }

    /// `project_id` (top level, else `general.project_id`) as text.
    public var projectId: String? {
        let value = body["project_id"] ?? body["general"]?["project_id"]
        return value?.numberText ?? value?.stringValue
    }
    /// `payment.id` (else `general.payment_id`).
    public var paymentId: String? { body["payment"]?["id"]?.stringValue ?? body["general"]?["payment_id"]?.stringValue }
    /// `payment.status`.
    public var paymentStatus: String? { body["payment"]?["status"]?.stringValue }
    /// `operation.type` (`sale`, `auth`, `capture`, `refund` …).
    public var operationType: String? { body["operation"]?["type"]?.stringValue }
    /// `operation.status`.
    public var operationStatus: String? { body["operation"]?["status"]?.stringValue }
    /// `operation.code` and `operation.message`.
    public var operationCode: String? { body["operation"]?["code"]?.stringValue ?? body["operation"]?["code"]?.numberText }
    public var operationMessage: String? { body["operation"]?["message"]?.stringValue }
    /// `operation.id`.
    public var operationId: String? { body["operation"]?["id"]?.numberText ?? body["operation"]?["id"]?.stringValue }
    /// `payment.cascading_with_redirect`: ecommpay itself will try another provider for this payment.
    public var cascadingWithRedirect: Bool { EcommpayCallback.flag(body["payment"]?["cascading_with_redirect"]) }

    /// Whether the signed string says exactly one thing: no key and no value holds `;` (the string joins
    /// leaves with `;` and escapes nothing in values, so a `;` inside a value could be the signed text of
    /// other leaves cut differently). A callback that is not is only a trigger: the server asks Gate.
    public var isUnambiguous: Bool { Self.unambiguous(body) }

    static func unambiguous(_ value: OrderedJSON) -> Bool {
        switch value {
        case .object(let members): members.allSatisfy { !$0.key.contains(";") && unambiguous($0.value) }
        case .array(let items): items.allSatisfy(unambiguous)
        case .string(let text): !text.contains(";")
        default: true
        }
    }

    /// A flag as signed: `true`, and equally `1` or `"1"` or `"true"` (all sign as `1`, so a re-cut from
    /// one to the other keeps the signature; all are read the same).
    static func flag(_ value: OrderedJSON?) -> Bool {
        switch value {
        case .bool(let flag)?: flag
        case .number(let text)?: text == "1"
        case .string(let text)?: text == "1" || text == "true"
        default: false
        }
    }
    /// `payment.sum` (`{amount, currency}`, minor units), when readable.
    public var paymentSum: Money? { EcommpayCallback.money(body["payment"]?["sum"]) }

    static func money(_ value: OrderedJSON?) -> Money? {
        guard let amount = value?["amount"]?.numberText.flatMap({ Int64($0) }),
              let currency = value?["currency"]?.stringValue.flatMap({ Currency.lookup($0) }) else { return nil }
        return Money(minorUnits: amount, currency: currency)
    }
}
