import Foundation
import TillGatewayKit

/// The seed's field rules for the mobile SDK operation request (FORT Mobile SDK 3.4, §6.7.1):
/// maximum length and the special characters allowed besides letters and digits; the card form the
/// app shows, and the checks on what the customer typed.
public enum PayFortFields {
    /// One field's rule.
    public struct Rule: Sendable {
        /// The most characters the field may hold.
        public var maxLength: Int
        /// Allowed besides ASCII letters and digits.
        public var special: String
        /// ASCII letters only.
        public var lettersOnly = false
        /// ASCII digits only.
        public var digitsOnly = false
    }

    /// The rule of each operation request field, by PayFort's name.
    public static let rules: [String: Rule] = [
        "command": Rule(maxLength: 20, special: "", lettersOnly: true),
        "merchant_reference": Rule(maxLength: 40, special: "-_."),
        "amount": Rule(maxLength: 10, special: "", digitsOnly: true),
        "currency": Rule(maxLength: 3, special: "", lettersOnly: true),
        "language": Rule(maxLength: 2, special: "", lettersOnly: true),
        "customer_email": Rule(maxLength: 254, special: "-.@+_"),
        "sdk_token": Rule(maxLength: 100, special: ""),
        "token_name": Rule(maxLength: 100, special: ".@-_"),
        "payment_option": Rule(maxLength: 10, special: "", lettersOnly: true),
        "eci": Rule(maxLength: 16, special: "", lettersOnly: true),
        "order_description": Rule(maxLength: 150, special: "#,/._-:$ "),
        "customer_ip": Rule(maxLength: 45, special: ".:"),
        "customer_name": Rule(maxLength: 40, special: "-\\/:,. '"),
        "phone_number": Rule(maxLength: 19, special: "+-() "),
        "settlement_reference": Rule(maxLength: 34, special: "-_."),
        "merchant_extra": Rule(maxLength: 999, special: ".;/_-,'@ "),
        "merchant_extra1": Rule(maxLength: 250, special: ".;/_-,'@ "),
        "merchant_extra2": Rule(maxLength: 250, special: ".;/_-,'@ "),
        "merchant_extra3": Rule(maxLength: 250, special: ".;/_-,'@ "),
        "merchant_extra4": Rule(maxLength: 250, special: ".;/_-,'@ "),
        "merchant_extra5": Rule(maxLength: 250, special: ".;/_-,'@ "),
        "device_id": Rule(maxLength: 100, special: "-"),
        "access_code": Rule(maxLength: 20, special: ""),
        "merchant_identifier": Rule(maxLength: 20, special: ""),
    ]

    /// The card brands the operation request's `payment_option` may name.
    public static let paymentOptions: Set<String> = ["VISA", "MASTERCARD", "AMEX", "MADA", "MEEZA"]

    /// Checks one value against its rule; the issue's field is `prefix + name`.
    public static func check(_ name: String, _ value: String, prefix: String = "payfort.") -> [ValidationIssue] {
        guard let rule = rules[name] else { return [] }
        let field = prefix + name
        if value.count > rule.maxLength {
            return [.init(field: field, code: .fieldTooLong, message: "at most \(rule.maxLength) characters, got \(value.count)")]
        }
        let ok = value.unicodeScalars.allSatisfy { scalar in
            let letter = scalar.isASCII && scalar.properties.isAlphabetic
            let digit = ("0"..."9").contains(scalar)
            if rule.lettersOnly { return letter }
            if rule.digitsOnly { return digit }
            return letter || digit || rule.special.unicodeScalars.contains(scalar)
        }
        guard ok else {
            let allowed = rule.lettersOnly ? "letters" : rule.digitsOnly ? "digits"
                : "letters, digits" + (rule.special.isEmpty ? "" : " and \(rule.special.map { $0 == " " ? "space" : String($0) }.joined(separator: " "))")
            return [.init(field: field, code: .invalidField, message: "only \(allowed) are allowed")]
        }
        return []
    }

    /// Every problem in an operation request's parameters, including the cross-field rules
    /// (MADA and MEEZA only for PURCHASE with eci ECOMMERCE).
    public static func validateOperation(_ parameters: [String: String], prefix: String = "payfort.") -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        for required in ["command", "merchant_reference", "amount", "currency", "language", "customer_email", "sdk_token"]
        where (parameters[required] ?? "").isEmpty {
            issues.append(.init(field: prefix + required, code: .missingField, message: "is required"))
        }
        for (name, value) in parameters.sorted(by: { $0.key < $1.key }) where !value.isEmpty { issues += check(name, value, prefix: prefix) }
        if let command = parameters["command"], !["AUTHORIZATION", "PURCHASE"].contains(command) {
            issues.append(.init(field: prefix + "command", code: .invalidField, message: "AUTHORIZATION or PURCHASE"))
        }
        if let language = parameters["language"], !["en", "ar"].contains(language) {
            issues.append(.init(field: prefix + "language", code: .invalidField, message: "en or ar"))
        }
        if let currency = parameters["currency"], Currency.lookup(currency) == nil {
            issues.append(.init(field: prefix + "currency", code: .invalidCurrency, message: "unknown currency \"\(CheckoutError.printable(currency))\""))
        }
        if let email = parameters["customer_email"], !email.isEmpty { issues += Validators.email(email, field: prefix + "customer_email") }
        if let option = parameters["payment_option"], !option.isEmpty {
            if !paymentOptions.contains(option) {
                issues.append(.init(field: prefix + "payment_option", code: .invalidField, message: "one of \(paymentOptions.sorted().joined(separator: ", "))"))
            } else if (option == "MADA" || option == "MEEZA") && (parameters["command"] != "PURCHASE" || parameters["eci"] != "ECOMMERCE") {
                issues.append(.init(field: prefix + "payment_option", code: .invalidField,
                                    message: "\(option) is only for PURCHASE with eci ECOMMERCE"))
            }
        }
        if let eci = parameters["eci"], !eci.isEmpty, eci != "ECOMMERCE" {
            issues.append(.init(field: prefix + "eci", code: .invalidField, message: "ECOMMERCE"))
        }
        return issues
    }

    /// The card form the app shows: card number, expiry, security code and (optional) holder name,
    /// in display order, with a display mask for the card number, the security code obfuscated while
    /// typed, and validators for the checks ``card(_:now:)`` applies.
    public static let cardForm = FormSpec(fields: [
        FormField(id: "card_number", labelKey: "till.field.cardNumber", kind: .cardNumber, maxLength: 19, sensitive: true,
                  mask: "{{9999}} {{9999}} {{9999}} {{9999}}{{999}}",
                  validators: [FieldValidator("length", parameters: ["minLength": "13", "maxLength": "19"]), FieldValidator("luhn")],
                  displayOrder: 1),
        FormField(id: "expiry", labelKey: "till.field.expiry", kind: .expiryDate, maxLength: 5,
                  validators: [FieldValidator("expirationDate")], displayOrder: 2),
        FormField(id: "cvv", labelKey: "till.field.cvv", kind: .securityCode, maxLength: 4, sensitive: true,
                  validators: [FieldValidator("length", parameters: ["minLength": "3", "maxLength": "4"])], obfuscate: true,
                  displayOrder: 3),
        FormField(id: "card_holder_name", labelKey: "till.field.cardHolder", kind: .text, required: false, maxLength: 50,
                  validators: [FieldValidator("length", parameters: ["maxLength": "50"])], displayOrder: 4),
    ])

    /// Card fields the customer typed: card number (13–19 digits, Luhn), expiry (`MM/YY` or `YYMM`,
    /// not in the past), security code (3–4 digits), holder name. Returns the normalised values
    /// (`expiry_date` as `YYMM`) or every problem, never echoing the number or the code.
    public static func card(_ values: FormValues, now: Date = Date()) -> Result<[String: String], CheckoutError> {
        func fail(_ field: String, _ code: CheckoutError.Code, _ why: String) -> Result<[String: String], CheckoutError> {
            .failure(CheckoutError(code, field: "card.\(field)", message: why, gateway: "payfort"))
        }
        let number = (values["card_number"] ?? "").filter { !$0.isWhitespace && $0 != "-" }
        guard !number.isEmpty else { return fail("card_number", .missingField, "is required") }
        guard (13...19).contains(number.count), Validators.isLuhnValid(number) else {
            return fail("card_number", .invalidField, "not a valid card number")
        }
        let rawExpiry = values["expiry"] ?? values["expiry_date"] ?? ""
        let expiryDigits = rawExpiry.filter(\.isASCIIDigit)
        guard expiryDigits.count == 4 else { return fail("expiry_date", .invalidField, "expected MM/YY") }
        let (month, year) = rawExpiry.contains("/")
            ? (Int(expiryDigits.prefix(2))!, Int(expiryDigits.suffix(2))!)
            : (Int(expiryDigits.suffix(2))!, Int(expiryDigits.prefix(2))!)
        guard (1...12).contains(month) else { return fail("expiry_date", .invalidField, "the month must be 01 to 12") }
        let components = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: now)
        let current = (components.year ?? 2000) % 100 * 100 + (components.month ?? 1)
        guard year * 100 + month >= current else { return fail("expiry_date", .invalidField, "the card has expired") }
        let code = values["cvv"] ?? values["card_security_code"] ?? ""
        guard (3...4).contains(code.count), code.allSatisfy(\.isASCIIDigit) else {
            return fail("card_security_code", .invalidField, "3 or 4 digits")
        }
        var out = ["card_number": number, "expiry_date": String(format: "%02d%02d", year, month), "card_security_code": code]
        if let holder = values["card_holder_name"], !holder.isEmpty {
            guard holder.count <= 50 else { return fail("card_holder_name", .fieldTooLong, "at most 50 characters") }
            out["card_holder_name"] = holder
        }
        return .success(out)
    }
}

extension Character {
    /// `0` to `9` only (not other scripts' digits).
    var isASCIIDigit: Bool { isASCII && isNumber }
}
