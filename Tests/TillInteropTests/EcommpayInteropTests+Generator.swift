import Foundation
import Till
import TillEcommpay
import TillGatewayKit

/// Deterministic inputs for the ecommpay comparisons (SplitMix64, so a failure names an input that comes
/// back on the next run). These are inputs for two implementations to agree on, not wire facts: no JSON
/// `null` and no `:` in keys (where PyPI 1.0.6 and master differ), numbers as integers or fractions in
/// their shortest form (the form Python's `str()` gives back).
struct EcommpayGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    mutating func pick<T>(_ values: [T]) -> T { values[int(0...(values.count - 1))] }

    mutating func alphanumeric(_ length: Int) -> String {
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in pick(letters) })
    }

    mutating func secret() -> String {
        pick(["qwerty", "secret", alphanumeric(int(8...64)), "ключ-секрет", "s3cr3t;with:odd=chars&more"])
    }

    /// Free text: unicode of several planes, `;` and `:` (values are never escaped), quotes, escapes.
    mutating func text() -> String {
        let pieces = ["Оплата заказа №1", "café", "Zoë", "绿茶", "🙂", "😀", "ｶﾀｶﾅ", "｡", " ", ";", ":", "a;b:c", "::", "=", "&", "+", "%20",
                      "'q'", "\"dq\"", "\\", "\n", "\t", "/path?x=1", "<b>", "0", "true", "None", "null", ""]
        return (0..<int(0...4)).map { _ in pick(pieces) }.joined()
    }

    /// A key: no `:`; prefix-sibling keys, digit keys, unicode, `frame_mode`.
    mutating func key() -> String {
        pick(["payment", "id", "status", "sum", "amount", "currency", "operation", "errors", "frame_mode", "a", "a-b", "a.b", "a b", "a;b",
              "0", "1", "10", "2", "ключ", "键", "😀", "｡", "Z", "z", "_x", "description", "customer", "general", alphanumeric(int(1...12))])
    }

    mutating func number() -> OrderedJSON {
        switch int(0...4) {
        case 0: .number(String(int(-1000...1000)))
        case 1: .number(String(Int64(bitPattern: next()) / Int64(int(1...1_000_000))))
        case 2: .number(String(Double(int(-40_000...40_000)) / 4))   // shortest form, as Python's repr
        case 3: .number("0")
        default: .number(String(int(0...99_999_999)))
        }
    }

    mutating func scalar() -> OrderedJSON {
        switch int(0...5) {
        case 0, 1: .string(text())
        case 2: number()
        case 3: .bool(chance(50))
        case 4: .string(String(int(0...9999)))
        default: .string("")
        }
    }

    mutating func value(depth: Int) -> OrderedJSON {
        guard depth < 4 else { return scalar() }
        switch int(0...9) {
        case 0, 1: return object(depth: depth + 1)
        case 2:
            let count = chance(15) ? int(11...14) : int(0...4)
            return .array((0..<count).map { _ in value(depth: depth + 1) })
        default: return scalar()
        }
    }

    /// An object with distinct keys (Till refuses a repeated key; Python would keep the last).
    mutating func object(depth: Int) -> OrderedJSON {
        var members: [OrderedJSON.Member] = []
        var seen: Set<String> = []
        for _ in 0..<int(depth == 0 ? 1...7 : 0...5) {
            let name = key()
            guard seen.insert(name).inserted else { continue }
            members.append(.init(key: name, value: value(depth: depth)))
        }
        return .object(members)
    }

    static func hasNestedFrameMode(_ value: OrderedJSON, depth: Int = 0) -> Bool {
        switch value {
        case .object(let members):
            members.contains { ($0.key == "frame_mode" && depth > 0) || hasNestedFrameMode($0.value, depth: depth + 1) }
        case .array(let items): items.contains { hasNestedFrameMode($0, depth: depth + 1) }
        default: false
        }
    }

    static func longestList(_ value: OrderedJSON) -> Int {
        switch value {
        case .object(let members): members.map { longestList($0.value) }.max() ?? 0
        case .array(let items): max(items.count, items.map { longestList($0) }.max() ?? 0)
        default: 0
        }
    }

    // MARK: Payment options

    /// Free text for a description or name: no control characters (Till refuses them).
    mutating func plainText() -> String {
        let pieces = ["Оплата заказа №1", "café", "Zoë", "绿茶", "🙂", "Order 42", " ", ";", ":", "a;b:c", "=", "&", "+", "%", "'q'", "\"dq\"", "\\"]
        let joined = (0..<int(1...4)).map { _ in pick(pieces) }.joined()
        return joined.trimmingCharacters(in: .whitespaces).isEmpty ? "x" : joined
    }

    mutating func date() -> String { String(format: "%02d-%02d-%04d", int(1...28), int(1...12), int(2026...2035)) }

    /// Options Till's checks accept, touching every parameter kind of `parameters`.
    mutating func paymentOptions() -> EcommpayPaymentOptions {
        typealias Options = EcommpayPaymentOptions
        let action = pick(Options.Action.allCases)
        var fields: [Options.AdditionalField] = []
        var names: Set<String> = []
        for _ in 0..<int(0...5) {
            let field: Options.AdditionalField = switch int(0...5) {
            case 0: .init("customer_email", "buyer\(int(1...999))@shop.example")
            case 1: .init("customer_phone", "+44\(int(1_000_000...9_999_999))")
            case 2: .init(pick(["customer_country", "billing_country"]), pick(["DE", "FR", "GB", "US", "JP"]))
            case 3: .init(pick(["customer_first_name", "customer_last_name", "billing_city", "billing_address"]), plainText())
            case 4: .init("custom_" + alphanumeric(int(1...8)).lowercased(), plainText())
            default: .init("customer_day_of_birth", date())
            }
            if names.insert(field.name).inserted { fields.append(field) }
        }
        var recurrent: Options.RecurrentInfo?
        if chance(35) {
            let period = chance(60) ? pick(Options.RecurrentInfo.Period.allCases) : nil
            let scheduled = chance(40)
            recurrent = .init(kind: pick(Options.RecurrentInfo.Kind.allCases), period: period,
                              expiryDay: chance(50) ? String(format: "%02d", int(1...28)) : nil,
                              expiryMonth: chance(50) ? String(format: "%02d", int(1...12)) : nil,
                              expiryYear: chance(50) ? String(int(2026...2040)) : nil,
                              scheduledPaymentID: scheduled ? alphanumeric(10) : nil, startDate: scheduled || chance(30) ? date() : nil,
                              time: period != nil && chance(50) ? String(format: "%02d:%02d:%02d", int(0...23), int(0...59), int(0...59)) : nil,
                              schedule: (0..<(chance(40) ? int(1...12) : 0)).map { _ in .init(date: date(), amount: Int64(int(1...500_000))) },
                              amount: chance(50) ? Int64(int(1...900_000)) : nil)
        }
        var secure: Options.ThreeDSecureInfo?
        if chance(35) {
            var payment: [String: Options.ThreeDSecureInfo.Value] = [:]
            var customer: [String: Options.ThreeDSecureInfo.Value] = [:]
            if chance(70) { payment["challengeIndicator"] = .text(pick(["01", "02", "03", "04"])) }
            if chance(50) { payment["giftCard.amount"] = .integer(Int64(int(0...99_999))) }
            if chance(50) { payment["giftCard.currency"] = .text(pick(["USD", "EUR"])) }
            if chance(50) { payment["preorderDate"] = .text(date()) }
            if chance(60) { customer["addressMatch"] = .text(pick(["Y", "N"])) }
            if chance(50) { customer["account.ageIndicator"] = .text(pick(["01", "02", "03"])) }
            if chance(50) { customer["account.purchaseNumber"] = .integer(Int64(int(0...9999))) }
            if chance(50) {
                customer["shipping.city"] = .text(String(plainText().prefix(40)))
                customer["shipping.country"] = .text(pick(["DE", "FR"]))
            }
            if chance(40) { customer["mpiResult.acsOperationId"] = .text(alphanumeric(20)) }
            secure = .init(payment: payment, customer: customer)
        }
        let receipt = chance(25) ? Data("{\"positions\":[{\"amount\":\(int(1...9999)),\"description\":\"x\"}]}".utf8).base64EncodedString() : nil
        return Options(projectId: int(1...999_999), paymentId: "EP-" + alphanumeric(int(4...30)),
                       paymentAmount: action == .verify ? 0 : Int64(int(1...2_000_000_000)),
                       paymentCurrency: pick(["USD", "EUR", "GBP", "JPY", "KWD", "RUB"]),
                       customerId: chance(70) ? "cust-" + alphanumeric(int(1...12)) : nil,
                       paymentDescription: chance(60) ? plainText() : nil, action: action, additionalFields: fields, receiptData: receipt,
                       hideSavedWallets: chance(30), forcePaymentMethod: chance(40) ? pick(["card", "alipay", "wechat-pay", "paypal_wallet"]) : nil,
                       languageCode: chance(50) ? pick(EcommpayPaymentOptions.sdkLanguages.sorted()) : nil,
                       regionCode: chance(40) ? pick(["DE", "FR", "GB"]) : nil, token: chance(20) ? alphanumeric(int(16...64)) : nil,
                       recurrentInfo: recurrent, threeDSecureInfo: secure, mockMode: pick(EcommpayPaymentOptions.MockMode.allCases),
                       brandColor: chance(30) ? "#1A2B3C" : nil)
    }

    // MARK: Callbacks

    /// A callback's body as the SDKs' tests and the facts describe one (payment, operation, account,
    /// customer), without a signature; `general` when `withGeneral`.
    mutating func callback(projectId: Int, paymentId: String, status: String, amount: Int64, currency: String,
                           withGeneral: Bool) -> OrderedJSON {
        func s(_ text: String) -> OrderedJSON { .string(text) }
        func n(_ value: Int64) -> OrderedJSON { .number(String(value)) }
        func o(_ members: [(String, OrderedJSON)]) -> OrderedJSON { .object(members.map { .init(key: $0.0, value: $0.1) }) }
        let sum = o([("amount", n(amount)), ("currency", s(currency))])
        var payment: [(String, OrderedJSON)] = [("id", s(paymentId)), ("type", s("purchase")), ("status", s(status)),
                                               ("date", s("2026-0\(int(1...9))-1\(int(0...9))T10:2\(int(0...9)):00+0000")),
                                               ("method", s(pick(["card", "alipay", "paypal-wallet"]))), ("sum", sum), ("description", s(plainText()))]
        if chance(30) { payment.append(("cascading_with_redirect", .bool(chance(50)))) }
        var operation: [(String, OrderedJSON)] = [("id", n(Int64(int(1...999_999_999)))), ("type", s(pick(["sale", "auth", "capture"]))),
                                                 ("status", s(status)), ("date", s("2026-01-01T00:00:00+0000")),
                                                 ("request_id", s(alphanumeric(40))), ("sum_initial", sum), ("sum_converted", sum),
                                                 ("code", s(status == "success" ? "0" : String(int(1000...9999)))), ("message", s(plainText())),
                                                 ("provider", o([("id", n(Int64(int(1...9999)))), ("payment_id", s(alphanumeric(12))),
                                                                 ("auth_code", s(String(int(100_000...999_999)))), ("date", s("2026-01-01T00:00:00+0000"))]))]
        if chance(40) { operation.append(("eci", s(pick(["05", "06", "07"])))) }
        var members: [(String, OrderedJSON)] = [("project_id", n(Int64(projectId))), ("payment", o(payment))]
        if chance(70) {
            members.append(("account", o([("number", s("424242******4242")), ("type", s("visa")), ("card_holder", s(plainText())),
                                          ("expiry_month", s("12")), ("expiry_year", s("2030"))])))
        }
        if chance(50) { members.append(("customer", o([("id", s("cust-" + alphanumeric(6)))]))) }
        members.append(("operation", o(operation)))
        if chance(30) { members.append(("errors", .array([o([("code", s("100")), ("message", s(plainText()))])]))) }
        if withGeneral { members.insert(("general", o([("project_id", n(Int64(projectId))), ("payment_id", s(paymentId))])), at: 0) }
        return o(members)
    }
}
