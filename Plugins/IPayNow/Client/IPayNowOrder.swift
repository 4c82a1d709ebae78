import Foundation
import TillGatewayKit

/// The fields of a cross-border order as the app hands them to iPayNow's plugin: the properties of the
/// plugin's `IPNCrossBorderPreSignUtil`, as appendix A of the iOS guide specifies them.
///
/// The merchant server builds it from the stored payment (never from what an app sends), checks it
/// (``validate(prefix:)``), signs its ``presignString`` and hands the app the ``payData(signature:)``.
///
/// ```swift
/// let order = IPayNowOrder(appId: "1408709961320306", mhtOrderNo: "a1b2c3", mhtOrderName: "Tea",
///                          mhtCurrencyType: "NZD", mhtOrderAmt: 1050, mhtAmtCurrFlag: .settlement,
///                          mhtOrderDetail: "2×green-tea", mhtOrderStartTime: "20261122093000",
///                          notifyUrl: "https://shop.example/v1/notifications/ipaynow", payChannelType: .alipay)
/// try order.validate()
/// let presign = order.presignString   // appId=…&mhtAmtCurrFlag=1&…&payChannelType=90
/// ```
public struct IPayNowOrder: Sendable, Hashable {
    /// `appId`, String(1,40): the merchant app's id, issued by iPayNow. Not a secret.
    public var appId: String
    /// `mhtOrderNo`, String(1,40), letters and digits: the merchant's order number (Till's attempt reference).
    public var mhtOrderNo: String
    /// `mhtOrderName`, String(1,40): the goods' name.
    public var mhtOrderName: String
    /// `mhtOrderType`, String(2): `01` (an ordinary purchase).
    public var mhtOrderType: String
    /// `mhtCurrencyType`, String(3): the settlement currency (appendix C).
    public var mhtCurrencyType: String
    /// `mhtOrderAmt`, String(1,22): the amount in integer minor units (fen when ``mhtAmtCurrFlag`` is `0`).
    public var mhtOrderAmt: Int64
    /// `mhtAmtCurrFlag`, String(2): which currency ``mhtOrderAmt`` is in.
    public var mhtAmtCurrFlag: IPayNowCodes.AmountCurrency
    /// `mhtOrderDetail`, String(1,1000): the order's detail.
    public var mhtOrderDetail: String
    /// `mhtOrderTimeOut`, Number(4,0), optional: 60–3600 seconds (iPayNow's default 3600).
    public var mhtOrderTimeOut: Int?
    /// `mhtOrderStartTime`, String(14): `yyyyMMddHHmmss`.
    public var mhtOrderStartTime: String
    /// `notifyUrl`, String(1,200): where iPayNow posts the N001 notification (http or https).
    public var notifyUrl: String
    /// `mhtCharset`: fixed `UTF-8`.
    public var mhtCharset: String
    /// `payChannelType`: `90` Alipay, `80` WeChat Pay.
    public var payChannelType: IPayNowCodes.Channel
    /// `mhtReserved`, String(100), optional: returned unchanged by iPayNow. It may hold `&`, `=` and
    /// the like: it is signed raw and URL-encoded in ``payData(signature:)`` after signing (iOS guide, 第一步).
    public var mhtReserved: String?
    /// `consumerId`, optional (iOS guide v1.0.1, p.7; `IPNCrossBorderPreSignUtil.h`).
    public var consumerId: String?
    /// `consumerName`, optional (iOS guide v1.0.1, p.7; `IPNCrossBorderPreSignUtil.h`).
    public var consumerName: String?
    /// `mhtSubAppId`, optional (declared by `IPNCrossBorderPreSignUtil.h`; no source documents it further).
    public var mhtSubAppId: String?

    public init(appId: String, mhtOrderNo: String, mhtOrderName: String, mhtOrderType: String = IPayNowCodes.orderTypePurchase,
                mhtCurrencyType: String, mhtOrderAmt: Int64, mhtAmtCurrFlag: IPayNowCodes.AmountCurrency, mhtOrderDetail: String,
                mhtOrderTimeOut: Int? = nil, mhtOrderStartTime: String, notifyUrl: String, mhtCharset: String = IPayNowCodes.charset,
                payChannelType: IPayNowCodes.Channel, mhtReserved: String? = nil, consumerId: String? = nil, consumerName: String? = nil,
                mhtSubAppId: String? = nil) {
        self.appId = appId
        self.mhtOrderNo = mhtOrderNo
        self.mhtOrderName = mhtOrderName
        self.mhtOrderType = mhtOrderType
        self.mhtCurrencyType = mhtCurrencyType
        self.mhtOrderAmt = mhtOrderAmt
        self.mhtAmtCurrFlag = mhtAmtCurrFlag
        self.mhtOrderDetail = mhtOrderDetail
        self.mhtOrderTimeOut = mhtOrderTimeOut
        self.mhtOrderStartTime = mhtOrderStartTime
        self.notifyUrl = notifyUrl
        self.mhtCharset = mhtCharset
        self.payChannelType = payChannelType
        self.mhtReserved = mhtReserved
        self.consumerId = consumerId
        self.consumerName = consumerName
        self.mhtSubAppId = mhtSubAppId
    }

    /// Every field with a value, by its iPayNow name, in key order (empty optional fields are left out,
    /// as the plugin's `generatePresignMessage` and appendix B leave them out).
    public var fields: [(name: String, value: String)] {
        var all: [(String, String?)] = [
            ("appId", appId), ("mhtOrderNo", mhtOrderNo), ("mhtOrderName", mhtOrderName), ("mhtOrderType", mhtOrderType),
            ("mhtCurrencyType", mhtCurrencyType), ("mhtOrderAmt", String(mhtOrderAmt)), ("mhtAmtCurrFlag", mhtAmtCurrFlag.rawValue),
            ("mhtOrderDetail", mhtOrderDetail), ("mhtOrderTimeOut", mhtOrderTimeOut.map(String.init)),
            ("mhtOrderStartTime", mhtOrderStartTime), ("notifyUrl", notifyUrl), ("mhtCharset", mhtCharset),
            ("payChannelType", payChannelType.rawValue), ("mhtReserved", mhtReserved), ("consumerId", consumerId),
            ("consumerName", consumerName), ("mhtSubAppId", mhtSubAppId),
        ]
        all.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        return all.compactMap { name, value in value.flatMap { $0.isEmpty ? nil : (name, $0) } }
    }

    /// The presign string (`generatePresignMessage`): the fields sorted by key, `k=v` joined with `&`,
    /// values raw (never percent-encoded). It is what the merchant server signs.
    public var presignString: String {
        fields.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// What the app passes to `IPNCrossBorderPluginAPi pay:AndScheme:viewController:delegate:`: the
    /// presign string with `mhtReserved` URL-encoded (after signing, as the guide's 第一步 and its demo
    /// do), then `&mhtSignType=MD5&mhtSignature=<signature>` (第三步).
    public func payData(signature: String) -> String {
        let body = fields.map { name, value in
            "\(name)=\(name == "mhtReserved" ? Self.reservedEncoding(value) : value)"
        }.joined(separator: "&")
        return body + "&mhtSignType=\(IPayNowCodes.signTypeMD5)&mhtSignature=\(signature)"
    }

    /// `mhtReserved` as the guide's demo encodes it after signing: UTF-8, every byte outside the
    /// unreserved set and every one of `!*'();:@&=+$,/?%#[]` written `%XX`
    /// (`CFURLCreateStringByAddingPercentEscapes` with those as legal characters to escape).
    public static func reservedEncoding(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            let scalar = Unicode.Scalar(byte)
            let keep = byte < 0x80 && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~".unicodeScalars.contains(scalar))
            out += keep ? String(scalar) : String(format: "%%%02X", byte)
        }
        return out
    }

    /// Appendix A's rules, each problem naming its field (`<prefix>mhtOrderName`).
    ///
    /// Beyond the appendix: no value but `mhtReserved` may hold `&` or `=`, because the plugin splits
    /// `payData` on them and the string to sign would no longer say which field a value belongs to; and no
    /// value may hold a space, because the plugin removes every space before it sends the order to iPayNow
    /// (its `translateToJson:` strips `" "` and newlines from the whole order), so a signature over a value
    /// with a space could never match at iPayNow.
    public func validate(prefix: String = "") -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        func issue(_ field: String, _ code: CheckoutError.Code, _ message: String) {
            issues.append(ValidationIssue(field: prefix + field, code: code, message: message))
        }
        func text(_ field: String, _ value: String?, min: Int, max: Int) {
            guard let value, !value.isEmpty else {
                if min > 0 { issue(field, .missingField, "is required (appendix A)") }
                return
            }
            if value.count > max { issue(field, .fieldTooLong, "at most \(max) characters (appendix A), got \(value.count)") }
            if field != "mhtReserved", value.contains(where: { $0 == "&" || $0 == "=" }) {
                issue(field, .invalidField, "must not contain '&' or '=': the plugin splits payData on them")
            }
            if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                issue(field, .invalidField, "must not contain control characters")
            }
            if value.contains(" ") {
                issue(field, .invalidField, "must not contain spaces: the plugin removes them before sending, and the signature would not match")
            }
        }
        text("appId", appId, min: 1, max: 40)
        text("mhtOrderNo", mhtOrderNo, min: 1, max: 40)
        if !mhtOrderNo.isEmpty, !mhtOrderNo.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) {
            issue("mhtOrderNo", .invalidField, "letters and digits only (appendix A)")
        }
        text("mhtOrderName", mhtOrderName, min: 1, max: 40)
        if mhtOrderType != IPayNowCodes.orderTypePurchase { issue("mhtOrderType", .invalidField, "must be 01 (an ordinary purchase)") }
        if mhtCurrencyType == "CNY" {
            issue("mhtCurrencyType", .invalidCurrency, "CNY is never a settlement currency; use mhtAmtCurrFlag 0 to charge in RMB fen")
        } else if !IPayNowCodes.settlementCurrencies.contains(mhtCurrencyType) {
            issue("mhtCurrencyType", .invalidCurrency,
                  "\"\(CheckoutError.printable(mhtCurrencyType))\" is not an appendix C currency (\(IPayNowCodes.settlementCurrencies.joined(separator: " ")))")
        }
        if mhtOrderAmt <= 0 {
            issue("mhtOrderAmt", .invalidAmount, "a positive whole number of minor units")
        } else if String(mhtOrderAmt).count > 22 {
            issue("mhtOrderAmt", .fieldTooLong, "at most 22 digits")
        }
        text("mhtOrderDetail", mhtOrderDetail, min: 1, max: 1000)
        if let timeout = mhtOrderTimeOut, !(60...3600).contains(timeout) {
            issue("mhtOrderTimeOut", .invalidField, "60 to 3600 seconds, got \(timeout)")
        }
        if !Self.isStartTime(mhtOrderStartTime) {
            issue("mhtOrderStartTime", .invalidField, "yyyyMMddHHmmss, 14 digits of a real date and time")
        }
        text("notifyUrl", notifyUrl, min: 1, max: 200)
        if !notifyUrl.isEmpty, !(notifyUrl.hasPrefix("https://") || notifyUrl.hasPrefix("http://")) {
            issue("notifyUrl", .invalidField, "an http or https URL")
        }
        if mhtCharset != IPayNowCodes.charset { issue("mhtCharset", .invalidField, "must be UTF-8") }
        text("mhtReserved", mhtReserved, min: 0, max: 100)
        text("consumerId", consumerId, min: 0, max: 40)
        text("consumerName", consumerName, min: 0, max: 40)
        text("mhtSubAppId", mhtSubAppId, min: 0, max: 40)
        return issues
    }

    /// Throws the first of ``validate(prefix:)``'s problems.
    public func check(prefix: String = "") throws(CheckoutError) {
        if let first = validate(prefix: prefix).first { throw first.error }
    }

    /// Whether `text` is `yyyyMMddHHmmss` naming a real moment.
    public static func isStartTime(_ text: String) -> Bool { startTimeParts(text) != nil }

    /// The moment `yyyyMMddHHmmss` names at a fixed offset from UTC (the inverse of
    /// ``startTime(_:utcOffsetSeconds:)``), or `nil` when it names none.
    public static func date(fromStartTime text: String, utcOffsetSeconds: Int = 8 * 3600) -> Date? {
        guard let parts = startTimeParts(text) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: utcOffsetSeconds) ?? .gmt
        return calendar.date(from: parts)
    }

    /// The fields of `yyyyMMddHHmmss` when it names a real moment.
    static func startTimeParts(_ text: String) -> DateComponents? {
        guard text.utf8.count == 14, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let digits = text.utf8.map { Int($0 - UInt8(ascii: "0")) }
        func number(_ range: Range<Int>) -> Int { digits[range].reduce(0) { $0 * 10 + $1 } }
        let (year, month, day) = (number(0..<4), number(4..<6), number(6..<8))
        let (hour, minute, second) = (number(8..<10), number(10..<12), number(12..<14))
        guard year >= 2000, (1...12).contains(month), hour < 24, minute < 60, second < 60, day >= 1 else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        guard day <= [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] else { return nil }
        return DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// `date` as `yyyyMMddHHmmss` at a fixed offset from UTC (iPayNow states no time zone; its demos
    /// use the local clock of a server in China, UTC+8 with no daylight saving).
    public static func startTime(_ date: Date, utcOffsetSeconds: Int = 8 * 3600) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: utcOffsetSeconds) ?? .gmt
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02d%02d%02d%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0,
                      parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
    }
}
