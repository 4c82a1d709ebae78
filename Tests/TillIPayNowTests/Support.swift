import Crypto
import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillIPayNowServer
import TillOrchestration

/// Reads a fixture of this target (`Fixtures/<name>`).
func fixture(_ name: String) throws -> Data {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent(name)
    return try Data(contentsOf: url)
}

// MARK: Vendor vectors

/// Where a vector comes from (`repo@commit path`, and where in the file).
struct VectorSource: Decodable, Sendable, Hashable {
    var repo: String?
    var commit: String?
    var path: String
    var `where`: String?
}

/// One real server-signed message (`Fixtures/real-*.json`).
struct RealVector: Decodable, Sendable, Hashable, CustomTestStringConvertible {
    var id: String
    var kind: String
    var source: VectorSource
    var app_id: String
    var app_key: String
    var raw_body: String
    var fields_decoded: [String: String]
    var expected_signature: String
    /// `signType_EXCLUDED` (the legacy rule) or `signType_INCLUDED` (the 1.0.0 rule), as recomputed when the vector was made.
    var rule: String
    var string_to_sign: String

    var testDescription: String { id }
    var body: Data { Data(raw_body.utf8) }

    /// The rule the vector says verifies it.
    var expectedRule: IPayNowSigning.Rule { rule == "signType_INCLUDED" ? .versionedMessage : .legacyMessage }
    /// The other message rule.
    var otherRule: IPayNowSigning.Rule { expectedRule == .versionedMessage ? .legacyMessage : .versionedMessage }

    /// The files holding the 16 real messages (one per file, or several under `messages`).
    static let files = [
        "real-R001-refund-response.json", "real-Q001-refund-query-response.json", "real-R002-reverse-response.json",
        "real-Q002-reverse-query-response.json", "real-MQ002-query-response.json", "real-N001-v1.0.0-notify.json",
        "real-N001-legacy-2015-notify.json", "real-N001-v1.0.0-more.json", "real-refund-family-failed.json",
        "real-MQ001-query-response-2015.json",
    ]

    private struct Many: Decodable { var messages: [RealVector] }

    static func load() throws -> [RealVector] {
        try files.flatMap { name -> [RealVector] in
            let data = try fixture(name)
            if let many = try? JSONDecoder().decode(Many.self, from: data) { return many.messages }
            return [try JSONDecoder().decode(RealVector.self, from: data)]
        }
    }

    /// Every real message; empty when the fixtures cannot be read (a test checks the count).
    static let all: [RealVector] = (try? load()) ?? []

    /// The pairs of the body, decoded and in the order received, by the test's own reader.
    var pairs: [(String, String)] { TestForm.decode(raw_body) }
}

/// The computed cross-border presign vectors (`Fixtures/computed-crossborder-WP001-presign.json`).
struct PresignVectors: Decodable, Sendable {
    struct Case: Decodable, Sendable, Hashable, CustomTestStringConvertible {
        var id: String
        var fields: [String: String]
        var presign_string: String
        var md5_appKey: String
        var mhtSignature: String
        var payData: String?
        var mhtReserved_encoded_after_signing: String?
        var testDescription: String { id }
    }
    var app_key: String
    var excluded_from_signature: [String]
    var cases: [Case]

    static func load() throws -> PresignVectors {
        try JSONDecoder().decode(PresignVectors.self, from: fixture("computed-crossborder-WP001-presign.json"))
    }

    static let loaded: PresignVectors? = try? load()
    static var all: [Case] { loaded?.cases ?? [] }
}

// MARK: An independent signer (appendix B), for expected values

/// Appendix B of the iOS guide, written here apart from the module: drop the excluded fields and
/// the empty values, sort by key, join `k=v` with `&`, append `&md5_hex(appKey)`, MD5 that, lower-case hex.
enum TestSigner {
    static func md5Hex(_ text: String) -> String {
        Insecure.MD5.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func canonical(_ pairs: [(String, String)], excluding: Set<String>) -> String {
        pairs.filter { !$0.1.isEmpty && !excluding.contains($0.0) }
            .sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    static func sign(_ pairs: [(String, String)], excluding: Set<String>, key: String) -> String {
        md5Hex(canonical(pairs, excluding: excluding) + "&" + md5Hex(key))
    }

    /// The legacy message rule (PHP README 2.2–2.4): `signType` and `signature` left out.
    static let legacy: Set<String> = ["signType", "signature"]
    /// The 1.0.0 message rule (`ipaynow-python-sdk` `parse_payment`): only `signature` left out.
    static let versioned: Set<String> = ["signature"]

    /// A message from iPayNow: `pairs`, then `signType=MD5` and `signature` under `rule`, form-encoded.
    static func message(_ pairs: [(String, String)], key: String, versioned: Bool = false, signType: Bool = true) -> Data {
        var all = pairs
        if signType { all.append(("signType", "MD5")) }
        let signature = sign(all, excluding: versioned ? Self.versioned : Self.legacy, key: key)
        all.append(("signature", signature))
        return Data(TestForm.encode(all).utf8)
    }
}

/// A small form codec of the tests' own (so the expected values do not come from the code under test).
enum TestForm {
    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// `k=v&…` split on `&` and the first `=`, `+` as a space, percent escapes decoded.
    static func decode(_ body: String) -> [(String, String)] {
        body.split(separator: "&").map { segment in
            let parts = segment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func text(_ part: Substring) -> String {
                (part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding) ?? String(part)
            }
            return (text(parts[0]), parts.count > 1 ? text(parts[1]) : "")
        }
    }

    /// `k=v&…` split on `&` and the first `=`, values as they are (payData is not percent-encoded).
    static func split(_ text: String) -> [(String, String)] {
        text.split(separator: "&").map { segment in
            let parts = segment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }
}

// MARK: The module under test, configured for the tests

enum Setup {
    /// The iOS demo's app id and key (`CrossBorderViewController.m` `createUI`, the vendor's published demo values).
    static let appId = "1480321334800229"
    static let appKey = "BB7qcwBIZeeLQt54BqBthCR5ae4GgXGt"
    static let base = URL(string: "https://ipaynow.test")!
    static let notificationURL = URL(string: "https://shop.example.com/v1/notifications/ipaynow")!
    /// The iOS demo's URL scheme (`Info.plist` `CFBundleURLSchemes`).
    static let appReturn = URL(string: "iPaynowCrossBorderSDKDemo://till/return?till_state=abc")!
    static let webReturn = URL(string: "https://shop.example.com/till/return?till_state=abc")!
    /// 2026-01-01T00:00:00Z: 08:00 in China.
    static let clock = Date(timeIntervalSince1970: 1_767_225_600)
    static let attempt = AttemptReference(rawValue: "att0000000000000000000001")

    static func server(_ transport: RecordingTransport = RecordingTransport(), settings: IPayNowSettings = IPayNowSettings(appId: appId),
                       key: String = appKey) -> IPayNowServer {
        IPayNowServer(environment: IPayNowEnvironment(baseURL: base), credentials: IPayNowCredentials(appKey: key), settings: settings,
                      transport: transport, now: { clock })
    }

    static func money(_ minor: Int64, _ code: String) -> Money {
        Money(minorUnits: minor, currency: Currency.lookup(code)!)
    }

    static func intent(_ minor: Int64 = 1050, _ currency: String = "NZD", method: PaymentMethod = .alipay,
                       description: String? = "Green tea") -> PaymentIntent {
        PaymentIntent(merchantReference: "order-42", amount: money(minor, currency), method: method, description: description)
    }

    static func context(_ intent: PaymentIntent = intent(), returnURL: URL? = appReturn,
                        notificationURL: URL? = notificationURL) -> AttemptContext {
        AttemptContext(intent: intent, attempt: attempt, returnURL: returnURL, notificationURL: notificationURL)
    }

    /// A cross-border N001 as the PHP SDK's README 2.2 lists its fields (legacy: `tradeStatus`, no `version`).
    static func crossBorderN001(appId: String = appId, order: String = attempt.rawValue, amount: String = "1050",
                                currency: String = "NZD", flag: String = "1", status: String = "A001",
                                funcode: String = "N001") -> [(String, String)] {
        [("funcode", funcode), ("appId", appId), ("mhtOrderNo", order), ("mhtOrderName", "Green tea"), ("mhtOrderType", "01"),
         ("mhtCurrencyType", currency), ("mhtOrderAmt", amount), ("cashCurrencyType", "CNY"), ("cashAmont", "4860"),
         ("mhtAmtCurrFlag", flag), ("mhtOrderTimeOut", "3600"), ("mhtOrderStartTime", "20260101080000"), ("mhtCharset", "UTF-8"),
         ("deviceType", "01"), ("payChannelType", "90"), ("nowPayOrderNo", "2004115215000380"),
         ("channelOrderNo", "2026010121001004310279577396"), ("tradeStatus", status)]
    }

    /// A cross-border MQ001 answer as the PHP SDK's README 2.4 lists its fields.
    static func mq001Answer(order: String = attempt.rawValue, status: String = "A001", responseCode: String = "A001") -> [(String, String)] {
        [("appId", appId), ("mhtOrderNo", order), ("mhtOrderName", "Green tea"), ("mhtOrderType", "01"), ("mhtCurrencyType", "NZD"),
         ("mhtOrderAmt", "1050"), ("cashCurrencyType", "CNY"), ("cashAmont", "4860"), ("mhtAmtCurrFlag", "1"),
         ("mhtOrderTimeOut", "3600"), ("mhtOrderStartTime", "20260101080000"), ("mhtCharset", "UTF-8"), ("deviceType", "01"),
         ("payChannelType", "90"), ("tradeStatus", status), ("nowPayOrderNo", "2004115215000380"),
         ("channelOrderNo", "2026010121001004310279577396"), ("responseTime", "20260101081000"), ("responseCode", responseCode),
         ("responseMsg", "成功")]
    }
}
