import Crypto
import Foundation

/// ecommpay's signature rule, as the emulator applies it to everything it checks (SDK stand-in
/// parameters, Payment Page queries, Gate requests) and everything it signs (callbacks, Gate answers).
///
/// The rule is the one of the vendor's Python SDK on GitHub master
/// (ITECOMMPAY/paymentpage-sdk-python@35ed5ecb195fe72fea8bf052f5f22aa101f12570
/// `payment_page_sdk/signature_handler.py`, `SignatureHandler.sign` and `__get_params_to_sign`):
///
/// 1. Walk the object. A key named `frame_mode` is skipped at every level (`IGNORE_KEYS`, passed down
///    on every recursive call). A path is `prefix:key`, a literal `:` in a key written `::` (commit
///    f8ebfbe "PE-702: fix signer"). A list is keyed by index (`enumerate`). An empty object or list adds
///    nothing.
/// 2. A leaf is `path:text`: `true`/`false` → `1`/`0`; `null` → the empty string (commit fd67b89); a
///    string as it is; a number as its JSON text (Python's `str()` of an `int` is its digits; the
///    emulator keeps the number's text as written, see ``leafText(_:)``).
/// 3. Sort the leaves by path in Unicode code-point order (Python `sorted` on `str`), join with `;`.
/// 4. Standard Base64 (with padding) of HMAC-SHA512 keyed with the UTF-8 secret.
///
/// Where the other SDKs differ (PHP natural sort, Go/Java sorting whole `path:value` strings, JS not
/// escaping `:`, Java failing on `null`) the emulator follows master, as the module does
/// (docs/gateways/ecommpay.md, where the SDKs disagree); none of the 27 official vectors reaches those differences.
enum EcommpaySignature {
    /// Keys never signed, at any level (`IGNORE_KEYS = ['frame_mode']`).
    static let ignoredKeys: Set<String> = ["frame_mode"]

    /// The string to sign for `value` (an object; a scalar signs as the empty string).
    static func stringToSign(_ value: JSONValue) -> String {
        var leaves: [(path: String, text: String)] = []
        collect(value, prefix: "", into: &leaves)
        leaves.sort { codePointsPrecede($0.path, $1.path) }
        return leaves.map { $0.path + ":" + $0.text }.joined(separator: ";")
    }

    /// The mobile SDK's `paramsForSignature` for the options `params` (an object by the Payment Page's
    /// names): the string the SDK hands the app to have signed, and the one the emulator rebuilds to check
    /// the signature the SDK presents with.
    ///
    /// What the vendor says (iOS 4.0.8 `MsdkCore.h`, `getParamsForSignature` and `SignatureParam`): only
    /// the parameters `projectId, paymentId, paymentAmount, paymentDescription, paymentCurrency,
    /// customerId, regionCode, token, languageCode, forcePaymentMethod, hideSavedWallets`; null and empty
    /// values left out; `key:value` pairs sorted by key, joined with `;`, no trailing `;`; the 3-D Secure
    /// parameters appended with the prefix `secure_info:`. So `operation_type`, the additional fields,
    /// `receipt_data` and `recurring` are not signed.
    ///
    /// *Emulator choices* (the core is a closed binary): the keys are spelt as the Payment Page spells
    /// them (`payment_amount`, `account_token`); a boolean is written `true`/`false` (Kotlin's
    /// `toString`); the `secure_info` object's leaves are written as the server SDKs write nested keys
    /// (`secure_info:customer:email:…`), sorted by path, after the other pairs.
    static func sdkParamsForSignature(_ params: JSONValue) -> String {
        var pairs: [(key: String, text: String)] = []
        for key in sdkSignedKeys {
            guard let value = params[key] else { continue }
            let text: String
            switch value {
            case .string(let string): text = string
            case .number(let number): text = number
            case .bool(let flag): text = flag ? "true" : "false"
            case .null, .array, .object: continue
            }
            if !text.isEmpty { pairs.append((key, text)) }
        }
        pairs.sort { codePointsPrecede($0.key, $1.key) }
        var text = pairs.map { $0.key + ":" + $0.text }.joined(separator: ";")
        if let secure = params["secure_info"], case .object = secure {
            var leaves: [(path: String, text: String)] = []
            collect(secure, prefix: "secure_info", into: &leaves)
            leaves.sort { codePointsPrecede($0.path, $1.path) }
            let tail = leaves.filter { !$0.text.isEmpty }.map { $0.path + ":" + $0.text }.joined(separator: ";")
            if !tail.isEmpty { text += (text.isEmpty ? "" : ";") + tail }
        }
        return text
    }

    /// Base64 HMAC-SHA512 of ``sdkParamsForSignature(_:)`` with `secret`: what the merchant server
    /// answers the SDK's string with.
    static func sdkSign(_ params: JSONValue, secret: String) -> String {
        mac(sdkParamsForSignature(params), secret: secret)
    }

    /// `SignatureParam`'s parameters by the Payment Page's names (*emulator choice*, see
    /// ``sdkParamsForSignature(_:)``).
    static let sdkSignedKeys = ["project_id", "payment_id", "payment_amount", "payment_description", "payment_currency", "customer_id",
                                "region_code", "account_token", "language_code", "force_payment_method", "hide_saved_wallets"]

    /// Base64 HMAC-SHA512 of ``stringToSign(_:)`` with `secret`.
    static func sign(_ value: JSONValue, secret: String) -> String {
        mac(stringToSign(value), secret: secret)
    }

    /// Base64 HMAC-SHA512 of `text` keyed with `secret`, both UTF-8.
    static func mac(_ text: String, secret: String) -> String {
        let key = SymmetricKey(data: Data(secret.utf8))
        let code = HMAC<SHA512>.authenticationCode(for: Data(text.utf8), using: key)
        return Data(code).base64EncodedString()
    }

    /// Whether `signature` is the signature of `value` (constant-time comparison of the Base64 text;
    /// the Python SDK compares with `==`, which gives the same answers).
    static func verify(_ signature: String, of value: JSONValue, secret: String) -> Bool {
        constantTimeEqual(sign(value, secret: secret), signature)
    }

    private static func collect(_ value: JSONValue, prefix: String, into leaves: inout [(path: String, text: String)]) {
        switch value {
        case .object(let members):
            for member in members where !ignoredKeys.contains(member.key) {
                let key = member.key.replacingOccurrences(of: ":", with: "::")
                let path = prefix.isEmpty ? key : prefix + ":" + key
                collectChild(member.value, path: path, into: &leaves)
            }
        case .array(let items):
            for (index, item) in items.enumerated() {
                let path = prefix.isEmpty ? String(index) : prefix + ":" + String(index)
                collectChild(item, path: path, into: &leaves)
            }
        default:
            break
        }
    }

    private static func collectChild(_ value: JSONValue, path: String, into leaves: inout [(path: String, text: String)]) {
        switch value {
        case .object, .array: collect(value, prefix: path, into: &leaves)
        default: leaves.append((path, leafText(value)))
        }
    }

    /// A leaf's text: booleans `1`/`0`, `null` empty, strings as they are, numbers as written in the
    /// JSON. Python master prints an `int` as its digits (the same text) and a `float` with `repr`
    /// (`1.5`, `1.0`); a number written `1e3` would print `1000.0` there and `1e3` here: the emulator
    /// never sends such numbers (every amount is an integer of minor units, the gateway page).
    static func leafText(_ value: JSONValue) -> String {
        switch value {
        case .bool(let flag): flag ? "1" : "0"
        case .null: ""
        case .string(let text): text
        case .number(let text): text
        case .array, .object: ""
        }
    }

    /// Python `str` order: by Unicode scalar values.
    static func codePointsPrecede(_ lhs: String, _ rhs: String) -> Bool {
        lhs.unicodeScalars.map(\.value).lexicographicallyPrecedes(rhs.unicodeScalars.map(\.value))
    }

    // MARK: Signed messages (callbacks, Gate requests)

    /// How a signed JSON message (a callback, a Gate request) checks out.
    enum MessageCheck: Equatable, Sendable {
        /// The signature matches.
        case valid
        /// A signature was found but does not match.
        case invalid
        /// Neither `signature` nor `general.signature` is there (`ProcessException('Signature undefined')`).
        case undefined
        /// The body is not a JSON object (`'Error on response decoding'`).
        case notJSON
    }

    /// Checks a signed message as the Python SDK's `Callback` does (`payment_page_sdk/callback.py`):
    /// the signature is the top-level `signature`, else `general.signature` (the first that is not
    /// `null`); every key named `signature` is removed from every object, recursing into objects only
    /// (not lists); the rest is signed and compared.
    static func checkMessage(_ body: [UInt8], secret: String) -> MessageCheck {
        guard let value = try? JSONValue.parse(body), case .object = value else { return .notJSON }
        return checkMessage(value, secret: secret)
    }

    /// ``checkMessage(_:secret:)`` of a parsed body.
    static func checkMessage(_ value: JSONValue, secret: String) -> MessageCheck {
        guard let signature = messageSignature(value) else { return .undefined }
        guard let text = signature.stringValue else { return .invalid }
        return verify(text, of: removingSignatures(value), secret: secret) ? .valid : .invalid
    }

    /// The signature a message carries: `signature`, else `general.signature` (a `null` counts as
    /// absent, as Python's `get_value` returning `None` does).
    static func messageSignature(_ value: JSONValue) -> JSONValue? {
        if let top = value["signature"], top != .null { return top }
        if let general = value["general"]?["signature"], general != .null { return general }
        return nil
    }

    /// `value` without any member named `signature`, in objects at any depth (lists are not entered:
    /// `__remove_param` recurses into `dict` values only).
    static func removingSignatures(_ value: JSONValue) -> JSONValue {
        guard case .object(let members) = value else { return value }
        return .object(members.filter { $0.key != "signature" }.map { member in
            if case .object = member.value {
                return JSONValue.Member(key: member.key, value: removingSignatures(member.value))
            }
            return member
        })
    }

    /// `object` signed and its signature added: in `general.signature` when it has a `general` object,
    /// else as a top-level `signature` (woo `common/modules/EcpSigner.php` `sign()`; the PHP SDK's
    /// callback samples carry it in `general`).
    static func signedMessage(_ object: JSONValue, secret: String) -> JSONValue {
        let signature = JSONValue.string(sign(object, secret: secret))
        guard case .object(var members) = object else { return object }
        if let index = members.firstIndex(where: { $0.key == "general" }), case .object(var general) = members[index].value {
            general.append(.init(key: "signature", value: signature))
            members[index].value = .object(general)
        } else {
            members.append(.init(key: "signature", value: signature))
        }
        return .object(members)
    }
}
