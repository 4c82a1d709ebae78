import Crypto
import Foundation

extension IPayNowEmulator {
    /// iPayNow's MD5 message signature, as the gateway computes it.
    ///
    /// `md5_hex(k1=v1&k2=v2&…&md5_hex(appKey))` over the fields that take part, keys sorted in byte
    /// order, values decoded (never percent-encoded), fields with an empty value left out; UTF-8,
    /// lower-case hex. Which fields take part depends on the message (the `excluding` sets below).
    ///
    /// Sources: seed `ipaynow-crossborder-ios-sdk.txt` 附录B (sort, drop empty values,
    /// `表单字符串&密钥MD5值`, then MD5); ipaynowORG/ipaynow_cross_border_pay_php@279d28fbe7f5387f906c2923f246fa940889e356
    /// `util/ParamUtil.php` `buildSignature` (`md5($prestr.'&'.md5($appKey))`) and README.md 3.1;
    /// iPaynow/iPaynow-app-java@acf8ef1cffa9e80abb910fb012cc49d58335443d
    /// `devplat_mch_sdk/src/com/ipaynow/utils/MD5Facade.java` (skips empty values, sorts keys).
    ///
    /// ```swift
    /// let signature = IPayNowEmulator.Signature.sign(fields, appKey: key, excluding: IPayNowEmulator.Signature.requestExcluded)
    /// ```
    public enum Signature {
        /// Not signed in a cross-border WP001 request or the iOS plugin's presign: `funcode`,
        /// `deviceType`, `mhtSignType`, `mhtSignature`, `detail`, `version`. Source: cbphp
        /// `service/TradeService.php` `trade()` (the signature is computed before those six are
        /// added; README 2.1 lists the first four and marks `detail`/`version` "此字段不参与签名"). The
        /// seed's 附录A names only `mhtSignature` and `mhtSignType`; the plugin's presign has none of
        /// the other four (`IPNCrossBorderPreSignUtil.h`), and the plugin appends `deviceType=01`
        /// after signing, so one rule serves both.
        public static let requestExcluded: Set<String> = ["funcode", "deviceType", "mhtSignType", "mhtSignature", "detail", "version"]

        /// Not signed in the MQ001 query as cbphp's code sends it: `funcode`, `mhtSignType`,
        /// `mhtSignature` (so `appId`, `mhtOrderNo`, `mhtCharset` are signed). Source: cbphp
        /// `service/OrderQueryService.php` `orederQuery` (signs, then adds `funcode` and `mhtSignType`).
        public static let queryExcluded: Set<String> = ["funcode", "mhtSignType", "mhtSignature"]

        /// Not signed in the MQ001 query as cbphp's README 2.4 words it ("其它字段都参与 MD5 签": every
        /// other field is signed): only `mhtSignature`.
        public static let queryReadmeExcluded: Set<String> = ["mhtSignature"]

        /// Not signed in what iPayNow sends: the WP001 synchronous answer, the MQ001 answer, the N001
        /// and N002 notifications (`signType`, `signature`). Source: cbphp README 2.1 同步返回, 2.2,
        /// 2.3, 2.4 ("排除的有：signType,signature"); the real 2015 N001 and MQ001 verify only so.
        public static let responseExcluded: Set<String> = ["signType", "signature"]

        /// Not signed in the domestic 1.0.0 N001/MQ002 (`signType` *is* signed): only `signature`.
        /// Source: PyPI `ipaynow-python-sdk` 1.0.0 `ipaynow_sdk/notify.py` `parse_payment`; the seven
        /// real 2017 N001s and the real MQ002 verify only so. The emulator never sends this shape; the
        /// rule is here so the tests can check the signer against those real messages.
        public static let domestic100Excluded: Set<String> = ["signature"]

        /// The text before the key digest: `k=v&…` of the signed, non-empty fields, sorted by key.
        public static func canonical(_ fields: [String: String], excluding: Set<String>) -> String {
            fields.filter { !excluding.contains($0.key) && !$0.value.isEmpty }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { $0.key + "=" + $0.value }
                .joined(separator: "&")
        }

        /// The whole text that is hashed: ``canonical(_:excluding:)`` + `&` + `md5_hex(appKey)`.
        public static func stringToSign(_ fields: [String: String], appKey: String, excluding: Set<String>) -> String {
            canonical(fields, excluding: excluding) + "&" + md5Hex(appKey)
        }

        /// The lower-case hex MD5 signature of `fields`.
        public static func sign(_ fields: [String: String], appKey: String, excluding: Set<String>) -> String {
            md5Hex(stringToSign(fields, appKey: appKey, excluding: excluding))
        }

        /// Whether `fields[signatureField]` is the signature of `fields` under `appKey`. Upper-case hex
        /// is accepted (the PyPI SDK's `verify` lower-cases the given value); compared in constant time.
        public static func verify(_ fields: [String: String], appKey: String, signatureField: String,
                                  excluding: Set<String>) -> Bool {
            guard let given = fields[signatureField], !given.isEmpty else { return false }
            return constantTimeEqual(sign(fields, appKey: appKey, excluding: excluding), given.lowercased())
        }

        /// Lower-case hex MD5 of the UTF-8 bytes of `text`.
        public static func md5Hex(_ text: String) -> String {
            Insecure.MD5.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
        }
    }
}
