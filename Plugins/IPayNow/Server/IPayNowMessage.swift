import Foundation
import TillGatewayKit

/// A message from iPayNow (an N001 notification or an MQ001 answer), verified and read.
///
/// The body is decoded once (`application/x-www-form-urlencoded`: `+` is a space, a name given twice is
/// refused), the rule read from the message's own fields (``IPayNowSigning/rule(of:)``), the signature
/// checked, and then only the documented fields Till acts on are read, each against its rule, so a value
/// moved across keys of the separator-less string to sign never reads as another field.
public struct IPayNowMessage: Sendable, Hashable {
    /// Every field as received, decoded.
    public let fields: FormFields
    /// The rule its signature was checked under.
    public let rule: IPayNowSigning.Rule
    /// The documented fields Till reads, checked.
    public let values: DocumentedValues

    /// The fields Till reads from a message, with their rules (PHP README 2.2 and 2.4; the real
    /// messages): letters and digits for identifiers (order numbers may also hold `-` and `_`), digits for
    /// amounts and times.
    static let documented = DocumentedFields([
        "funcode": FieldRule(5, .alphanumeric, minLength: 4),
        "appId": FieldRule(40, .alphanumeric, minLength: 1),
        // Appendix A says letters and digits; a real 2015 MQ001 answer carries `_`, so `-` and `_` are read
        // too (never `&` or `=`). Till's own order numbers are letters and digits.
        "mhtOrderNo": FieldRule(40, .alphanumeric, special: "-_", minLength: 1),
        "mhtCurrencyType": FieldRule(3, .alphanumeric, minLength: 3),
        "mhtOrderAmt": FieldRule(22, .digits, minLength: 1),
        "cashCurrencyType": FieldRule(3, .alphanumeric, minLength: 3),
        "cashAmont": FieldRule(22, .digits, minLength: 1),
        "mhtAmtCurrFlag": FieldRule(2, .digits, minLength: 1),
        "payChannelType": FieldRule(2, .digits, minLength: 1),
        "nowPayOrderNo": FieldRule(64, .alphanumeric, special: "-_"),
        "channelOrderNo": FieldRule(64, .alphanumeric, special: "-_"),
        "responseTime": FieldRule(14, .digits, minLength: 14),
        "tradeStatus": FieldRule(4, .alphanumeric, minLength: 4),
        "transStatus": FieldRule(4, .alphanumeric, minLength: 4),
        "responseCode": FieldRule(4, .alphanumeric, minLength: 1),
        "version": FieldRule(10, .alphanumeric, special: "."),
        "mhtOrderStartTime": FieldRule(14, .digits, minLength: 14),
        "mhtOrderTimeOut": FieldRule(4, .digits, minLength: 1),
    ])

    /// Verifies and reads `body`.
    /// - Parameters:
    ///   - body: the body exactly as received.
    ///   - appKey: the merchant's MD5 key.
    ///   - field: the body's name in errors (`"body"`).
    /// - Throws: ``CheckoutError``: `malformed_body`/`duplicate_field` for an unreadable form,
    ///   `missing_field` naming `<field>.signature` for an unsigned one, `signature_mismatch`, or
    ///   `invalid_field` naming the documented field at fault.
    public init(body: Data, appKey: String, field: String = "body", gateway: GatewayID? = nil) throws(CheckoutError) {
        let fields = try FormFields.decode(body, field: field)
        // The string to sign joins decoded names and values with `&` and `=` and no escaping: a name or value
        // holding either could be the same signed text cut into other fields (a `tradeStatus` moved out of
        // another value, a field hidden inside a name). Till's orders never carry them, nor does any real
        // message; such a message is refused before anything in it is read.
        if let bad = fields.pairs.first(where: { $0.name.contains(where: { $0 == "&" || $0 == "=" })
                                                 || $0.value.contains(where: { $0 == "&" || $0 == "=" }) }) {
            let name = bad.name.contains(where: { $0 == "&" || $0 == "=" }) ? "" : ".\(bad.name)"
            throw CheckoutError(.invalidField, field: "\(field)\(name)",
                                message: "a name or value holding '&' or '=' once decoded could re-cut the signed string", gateway: gateway)
        }
        guard let rule = IPayNowSigning.rule(of: fields), rule == .legacyMessage || rule == .versionedMessage else {
            throw CheckoutError(.missingField, field: "\(field).signature", message: "not a signed message from iPayNow", gateway: gateway)
        }
        try IPayNowSigning.verify(fields, rule: rule, appKey: appKey, field: field, gateway: gateway)
        self.fields = fields
        self.rule = rule
        self.values = try Self.documented.read(fields, prefix: field, gateway: gateway)
        if let trade = values["tradeStatus"], let trans = values["transStatus"], trade != trans {
            throw CheckoutError(.invalidField, field: "\(field).transStatus", message: "tradeStatus and transStatus disagree", gateway: gateway)
        }
    }

    /// The payment's state: `tradeStatus` (cross-border and legacy) or `transStatus` (1.0.0 and the
    /// 2015 MQ001 answer), whichever is present (sources disagree on the name; facts in the gateway page).
    public var tradeStatus: String? { values["tradeStatus"] ?? values["transStatus"] }

    /// The amount the order was for, in minor units of its currency: `mhtOrderAmt` in `mhtCurrencyType`
    /// when `mhtAmtCurrFlag` is `1`; in CNY when the message carries the numeric `156` of domestic
    /// messages. With flag `0` (an order in RMB fen) it is what the customer paid in CNY: `cashAmont` when
    /// `cashCurrencyType` is CNY (the PHP README labels N001's `mhtOrderAmt` "外币金额", the foreign amount,
    /// which for such an order may be a conversion), else `mhtOrderAmt`. `nil` when the message does not say.
    public var orderAmount: Money? {
        if values["mhtAmtCurrFlag"] == "0", ["CNY", "156"].contains(values["cashCurrencyType"] ?? ""),
           let cash = values["cashAmont"].flatMap({ Int64($0) }), let cny = Currency.lookup("CNY") {
            return Money(minorUnits: cash, currency: cny)
        }
        guard let text = values["mhtOrderAmt"], let minor = Int64(text) else { return nil }
        let currency: Currency?
        switch (values["mhtAmtCurrFlag"], values["mhtCurrencyType"]) {
        case ("0", _), (nil, "156"): currency = Currency.lookup("CNY")
        case ("1", let code?): currency = Currency.lookup(code)
        case (nil, let code?): currency = Currency.lookup(code)
        default: currency = nil
        }
        return currency.map { Money(minorUnits: minor, currency: $0) }
    }

    /// A field the message carries, decoded (`nil` when absent or empty).
    public subscript(name: String) -> String? {
        fields[name].flatMap { $0.isEmpty ? nil : $0 }
    }
}
