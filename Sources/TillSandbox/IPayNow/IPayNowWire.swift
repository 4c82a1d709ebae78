import Foundation
import Till

/// iPayNow's `k=v&…` messages: parsing what arrives, writing what the emulator sends.
enum IPayNowForm {
    /// Why a body is not a form message.
    struct Malformed: Error, Sendable, Equatable {
        var message: String
    }

    /// Splits a form body on `&` and each pair on its first `=`, and form-decodes keys and values
    /// (`+` is a space, `%XX` a byte), as iPayNow's servers do before checking the signature: PyPI
    /// `ipaynow-python-sdk` 1.0.0 `parser.py` `parse_response` (`unquote_plus`), iPaynow-app-java
    /// `FormDateReportConvertor.parseFormDataPatternReportWithDecode` (`URLDecoder.decode`). cbphp
    /// posts values unencoded (`ParamUtil::createParamString($param, false, false)`); decoding leaves
    /// such values as they are unless they hold `%` or `+`.
    ///
    /// A key given twice is refused (*emulator choice*: the SDKs keep the last one, silently).
    static func parse(_ text: String) -> Result<[String: String], Malformed> {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = FormEncoding.unescape(String(parts[0])), !key.isEmpty else {
                return .failure(Malformed(message: "body: a pair without a key or with a bad %-escape"))
            }
            guard let value = parts.count > 1 ? FormEncoding.unescape(String(parts[1])) : "" else {
                return .failure(Malformed(message: "\(key): bad %-escape or not UTF-8"))
            }
            guard fields[key] == nil else { return .failure(Malformed(message: "\(key): given twice")) }
            fields[key] = value
        }
        return .success(fields)
    }

    /// `k=v&…` with every key and value percent-encoded once, keys in `order` (the rest sorted after).
    /// Empty values are written (`k=`), as the real messages carry them (`mhtSubMchId=` in the 2017
    /// N001, `nowPayOrderNo=` in the failed R001).
    static func encode(_ fields: [String: String], order: [String] = []) -> String {
        var keys = order.filter { fields[$0] != nil }
        keys += fields.keys.filter { !order.contains($0) }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return keys.map { FormEncoding.escape($0) + "=" + FormEncoding.escape(fields[$0] ?? "") }.joined(separator: "&")
    }
}

/// The field rules iPayNow applies to an order, from the two vendor tables.
struct IPayNowFieldRules: Sendable {
    /// Which table the rules come from.
    enum Table: Sendable {
        /// The iOS plugin's presign: seed 附录A (调起插件接口信息规范).
        case pluginPresign
        /// The server WP001: cbphp README 2.1 (跨境聚合交易API).
        case serverWP001
    }

    let table: Table

    /// Seed 附录C (the plugin's currencies, 15).
    static let appendixCCurrencies: Set<String> = ["GBP", "HKD", "USD", "CHF", "SGD", "SEK", "DKK", "NOK", "JPY", "CAD",
                                                   "AUD", "EUR", "NZD", "RUB", "MOP"]
    /// cbphp README 3.4 (the server's currencies: the same 15 plus KRW, THB, TWD, IDR).
    static let readmeCurrencies: Set<String> = appendixCCurrencies.union(["KRW", "THB", "TWD", "IDR"])

    /// The fields the plugin's `generatePresignMessage` requires: the 12 getters the binary checks
    /// (iPaynow/iPaynow-crossborder-iOS@74447529d92ead890a1128433a767bcf7d64fd62
    /// `SDK/iphone/libipaynowCrossBorderPlugin.a` `IPNCrossBorderPreSignUtil.o`), the same as 附录A's Y rows
    /// (plus `mhtSignType`/`mhtSignature`, checked with the signature).
    static let presignRequired = ["appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt",
                                  "mhtOrderDetail", "mhtOrderStartTime", "mhtCharset", "notifyUrl", "payChannelType",
                                  "mhtAmtCurrFlag"]

    /// README 2.1's Y rows (signature fields aside).
    static let wp001Required = ["funcode", "appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType",
                                "mhtOrderAmt", "mhtAmtCurrFlag", "mhtOrderDetail", "mhtOrderStartTime", "notifyUrl",
                                "mhtCharset", "deviceType", "payChannelType"]

    /// The first rule `fields` break, as `"<field>: <reason>"`, or `nil` when they keep them all.
    func violation(in fields: [String: String]) -> String? {
        let required = table == .pluginPresign ? Self.presignRequired : Self.wp001Required
        for key in required {
            guard let value = fields[key] else { return "\(key): required" }
            // README 2.1 mhtOrderDetail is String(0,200): present, possibly empty. Everything else is (1,…).
            if value.isEmpty, !(table == .serverWP001 && key == "mhtOrderDetail") { return "\(key): required, must not be empty" }
        }
        let plugin = table == .pluginPresign
        // Lengths in characters (*emulator choice*: no source says bytes or characters).
        let lengths: [(String, Int)] = [
            ("appId", 40), ("mhtOrderNo", 40), ("mhtOrderName", 40), ("mhtOrderAmt", 22),
            ("mhtOrderDetail", plugin ? 1000 : 200), ("notifyUrl", 200), ("frontNotifyUrl", 200), ("mhtReserved", 100),
            ("consumerId", 40), ("consumerName", 40), ("mhtSubAppId", 40), ("detail", 500), ("version", 10),
        ]
        for (key, maximum) in lengths {
            if let value = fields[key], value.count > maximum { return "\(key): longer than \(maximum) characters" }
        }
        if plugin, let number = fields["mhtOrderNo"], !number.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            return "mhtOrderNo: letters and digits only (附录A 字母、数字)"
        }
        if fields["mhtOrderType"] != "01" { return "mhtOrderType: must be 01 (普通消费)" }
        let currency = fields["mhtCurrencyType"] ?? ""
        if currency == "CNY" || currency == "156" { return "mhtCurrencyType: must not be CNY" }
        let currencies = plugin ? Self.appendixCCurrencies : Self.readmeCurrencies
        if !currencies.contains(currency) {
            return "mhtCurrencyType: \(currency) is not in the \(plugin ? "附录C" : "3.4") currency list"
        }
        let amount = fields["mhtOrderAmt"] ?? ""
        guard amount.allSatisfy(\.isASCIIDigit), let value = Int64(amount), value > 0 else {
            return "mhtOrderAmt: a positive whole number of fen, no decimal point"
        }
        if fields["mhtAmtCurrFlag"] != "0" && fields["mhtAmtCurrFlag"] != "1" { return "mhtAmtCurrFlag: must be 0 or 1" }
        if let timeout = fields["mhtOrderTimeOut"], !timeout.isEmpty {
            guard timeout.count <= 4, timeout.allSatisfy(\.isASCIIDigit), let seconds = Int(timeout), (60...3600).contains(seconds) else {
                return "mhtOrderTimeOut: 60 to 3600 seconds"
            }
        }
        if !IPayNowTime.isValidStamp(fields["mhtOrderStartTime"] ?? "") { return "mhtOrderStartTime: yyyyMMddHHmmss" }
        if !Self.isHTTPURL(fields["notifyUrl"] ?? "") { return "notifyUrl: an http or https URL" }
        if let front = fields["frontNotifyUrl"], !front.isEmpty, !Self.isHTTPURL(front) { return "frontNotifyUrl: an http or https URL" }
        if fields["mhtCharset"] != "UTF-8" { return "mhtCharset: must be UTF-8" }
        let channel = fields["payChannelType"] ?? ""
        if channel != "90" && channel != "80" { return "payChannelType: 90 (Alipay) or 80 (WeChat)" }
        if !plugin, !["0600", "06", "02"].contains(fields["deviceType"] ?? "") {
            return "deviceType: 0600 (公众号), 06 (手机网页) or 02 (PC扫码)"
        }
        if !plugin, fields["funcode"] != "WP001" { return "funcode: must be WP001" }
        return nil
    }

    static func isHTTPURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host?.isEmpty == false else { return false }
        return scheme == "http" || scheme == "https"
    }
}

/// iPayNow's 14-digit times.
enum IPayNowTime {
    /// China Standard Time (UTC+8). *Emulator choice*: no source states the zone of
    /// `responseTime`/`mhtOrderStartTime`; the vendor's demos use the local clock in China.
    static let zone = TimeZone(secondsFromGMT: 8 * 3600) ?? TimeZone(identifier: "UTC") ?? .current

    static var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    /// `yyyyMMddHHmmss` in China time.
    static func stamp(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return String(format: "%04d", parts.year ?? 0) + two(parts.month) + two(parts.day) + two(parts.hour)
            + two(parts.minute) + two(parts.second)
    }

    /// Whether `text` is 14 digits forming a real date and time.
    static func isValidStamp(_ text: String) -> Bool {
        guard text.count == 14, text.allSatisfy(\.isASCIIDigit) else { return false }
        let digits = Array(text)
        func number(_ from: Int, _ length: Int) -> Int { Int(String(digits[from..<(from + length)])) ?? -1 }
        var components = DateComponents()
        components.year = number(0, 4)
        components.month = number(4, 2)
        components.day = number(6, 2)
        components.hour = number(8, 2)
        components.minute = number(10, 2)
        components.second = number(12, 2)
        return components.isValidDate(in: calendar)
    }
}

/// What the customer pays in CNY.
enum IPayNowExchange {
    /// The fen the customer pays for `amount` (minor units of `currency`, or fen when `flag` is `0`).
    /// Flag `0`: the amount already is CNY fen (seed 附录A, cbphp README 2.1). Flag `1`: converted at
    /// `rates[currency]` (CNY per one unit of the currency), rounded half up to the fen.
    static func cashAmount(_ amount: Int64, currency: String, flag: String, rates: [String: Decimal]) -> Int64 {
        guard flag == "1", let rate = rates[currency] else { return amount }
        let minorUnits = Currency.lookup(currency)?.minorUnits ?? 2
        var value = Decimal(amount) * rate * 100
        for _ in 0..<minorUnits { value /= 10 }
        var rounded = Decimal()
        NSDecimalRound(&rounded, &value, 0, .plain)
        return NSDecimalNumber(decimal: rounded).int64Value
    }
}
