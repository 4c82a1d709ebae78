import Crypto
import Foundation
import TillGatewayKit

/// iPayNow's MD5 signature (appendix B of the iOS guide): the fields that take part, empty values
/// dropped, sorted by key, joined `k=v&…` with their **decoded** values, then `&` + `md5_hex(appKey)`;
/// the signature is `md5_hex` of that, UTF-8, lower-case hex.
///
/// Which fields take part depends on the message (``Rule``); the rule of a message is read from its own
/// fields (``rule(of:)``), never tried one after the other.
public enum IPayNowSigning {
    /// Which fields a message leaves out of its string to sign, with the vendor source of each rule.
    public enum Rule: String, Sendable, Hashable, CaseIterable {
        /// A cross-border order: the server's WP001 request and the app plugin's presign (`payData`).
        /// Leaves out `funcode`, `deviceType`, `mhtSignType`, `mhtSignature`, `detail`, `version`
        /// (PHP SDK `TradeService::trade` signs before adding them; its README 2.1 says the same). The
        /// iOS guide's appendix A names only `mhtSignature` and `mhtSignType`; a presign holds none of
        /// the other four (the plugin adds `deviceType=01` after signing), so both agree on the wire.
        case order
        /// A cross-border MQ001 query: only `appId`, `mhtOrderNo` and `mhtCharset` are signed (PHP SDK
        /// `OrderQueryService`: `funcode` and `mhtSignType` are added after signing). Its README 2.4
        /// says every other field is signed; the code is followed.
        case query
        /// A cross-border MQ001 query as the PHP README 2.4 ("其它字段都参与 MD5 签") and the app demo
        /// (`iPaynow-app-java` `MchQuery`) sign it: every field but `mhtSignature`. Used once when iPayNow
        /// refuses a ``query``.
        case queryAllFields
        /// A message from iPayNow without `version`: the legacy and cross-border N001, the MQ001 answer,
        /// the WP001 answer and the refund family's answers. Leaves out `signType` and `signature` (PHP
        /// README 2.1–2.4; the official notification servlets of `iPaynow-app-java` and `iPaynow-wap-java`;
        /// real messages of 2015 and the refund family).
        case legacyMessage
        /// A message from iPayNow with `version` (the `1.0.0` N001 and the MQ002 answer): leaves out
        /// `signature` only, so `signType` is signed (`ipaynow-python-sdk` 1.0.0
        /// `NotifyParser.parse_payment`; seven real N001s and one MQ002 answer of 2017).
        case versionedMessage

        /// The fields left out of the string to sign.
        public var excluded: Set<String> {
            switch self {
            case .order: ["funcode", "deviceType", "mhtSignType", "mhtSignature", "detail", "version"]
            case .query: ["funcode", "mhtSignType", "mhtSignature"]
            case .queryAllFields: ["mhtSignature"]
            case .legacyMessage: ["signType", "signature"]
            case .versionedMessage: ["signature"]
            }
        }

        /// The field that carries the signature.
        public var signatureField: String {
            switch self {
            case .order, .query, .queryAllFields: "mhtSignature"
            case .legacyMessage, .versionedMessage: "signature"
            }
        }

        /// The field that names the sign type.
        public var signTypeField: String {
            switch self {
            case .order, .query, .queryAllFields: "mhtSignType"
            case .legacyMessage, .versionedMessage: "signType"
            }
        }
    }

    /// The rule of a message, from its own fields: a merchant's request carries `mhtSignature` (MQ001
    /// when `funcode` says so, else an order); a message from iPayNow carries `signature`, and is
    /// versioned exactly when it has a `version` field.
    public static func rule(of fields: FormFields) -> Rule? {
        if fields["mhtSignature"] != nil, fields["signature"] == nil {
            return fields["funcode"] == "MQ001" ? .query : .order
        }
        guard fields["signature"] != nil, fields["mhtSignature"] == nil else { return nil }
        return (fields["version"] ?? "").isEmpty ? .legacyMessage : .versionedMessage
    }

    /// The signed fields joined `k=v&…` (the presign string, for an order), without the key.
    public static func canonical(_ fields: some Sequence<(name: String, value: String)>, rule: Rule) -> String {
        let excluded = rule.excluded
        return fields.filter { !$0.value.isEmpty && !excluded.contains($0.name) }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            .map { "\($0.name)=\($0.value)" }
            .joined(separator: "&")
    }

    /// The canonical string of `fields` under `rule`.
    public static func canonical(_ fields: FormFields, rule: Rule) -> String {
        canonical(fields.pairs.map { (name: $0.name, value: $0.value) }, rule: rule)
    }

    /// `md5_hex(canonical + "&" + md5_hex(appKey))`.
    public static func sign(canonical: String, appKey: String) -> String {
        md5Hex(canonical + "&" + md5Hex(appKey))
    }

    /// The signature of `fields` under `rule`.
    public static func sign(_ fields: FormFields, rule: Rule, appKey: String) -> String {
        sign(canonical: canonical(fields, rule: rule), appKey: appKey)
    }

    /// Checks the signature of a message under `rule`, in constant time. Upper-case hex is accepted (the
    /// Python SDK lower-cases what it receives).
    /// - Throws: ``CheckoutError`` `missing_field` naming `<field>.<signature field>` when there is no
    ///   signature; `invalid_field` naming the sign type field when it is not MD5; `signature_mismatch`
    ///   naming the signature field when it does not match.
    public static func verify(_ fields: FormFields, rule: Rule, appKey: String, field: String = "body",
                              gateway: GatewayID? = nil) throws(CheckoutError) {
        guard let given = fields[rule.signatureField], !given.isEmpty else {
            throw CheckoutError(.missingField, field: "\(field).\(rule.signatureField)", message: "the message is not signed", gateway: gateway)
        }
        if let signType = fields[rule.signTypeField], signType.uppercased() != IPayNowCodes.signTypeMD5 {
            throw CheckoutError(.invalidField, field: "\(field).\(rule.signTypeField)",
                                message: "only MD5 is used across borders, got \"\(CheckoutError.printable(signType))\"", gateway: gateway)
        }
        guard ConstantTime.equals(sign(fields, rule: rule, appKey: appKey), given.lowercased()) else {
            throw CheckoutError(.signatureMismatch, field: "\(field).\(rule.signatureField)",
                                message: "the MD5 signature does not match (\(rule.rawValue) rule)", gateway: gateway)
        }
    }

    /// Lower-case hex MD5 of the UTF-8 bytes of `text`.
    static func md5Hex(_ text: String) -> String {
        Hex.encode(Insecure.MD5.hash(data: Data(text.utf8)))
    }
}
