import Foundation
import TillGatewayKit

/// PayFort's field rules: the most characters a field may hold and the characters it may hold, the
/// card form the app shows, and the checks on what the customer typed.
///
/// Sources, which disagree in places (Till accepts the union):
/// - FORT Mobile SDK for iOS, Merchant Integration Guide v3.4 (2019), §6.7.1 (the operation request);
/// - the integration guide's parameter tables as copied in bhaskarndas/payfortdoc@4536f9f
///   (`docs/iossdkoperations.md`, `docs/merchantpageparameters.md`, `docs/sdktokenparameters.md`);
/// - the vendor's sandbox, which accepted apostrophes in `customer_name` and `order_description`
///   (payfort/payfort-dotnet-sdk test application logs).
///
/// Letters of any script: the guides type free text as "Alpha"/"Alphanumeric" without restricting
/// the script, and the installments table shows an "Alphanumeric" example in Arabic
/// (`issuer_name_ar`, "Issuer2عربي", `docs/Installmentsparameters.md`). So a customer's name or an
/// order description in Arabic is valid; identifiers (references, codes, tokens) stay ASCII.
public enum PayFortFields {
    /// One field's rule: the kit's ``FieldRule`` (most characters, allowed characters).
    public typealias Rule = FieldRule

    /// The rule of each field Till sends or reads, by PayFort's name. Received messages are read
    /// through ``PayFortMessage/documented``, the subset Till reads.
    public static let rules: [String: Rule] = [
        "command": Rule(20, .letters, special: "_"),
        "service_command": Rule(20, .letters, special: "_"),
        "query_command": Rule(20, .letters, special: "_"),
        "merchant_reference": Rule(40, .alphanumeric, special: "-_."),
        "amount": Rule(10, .digits),
        "currency": Rule(3, .letters),
        "language": Rule(2, .letters),
        // 2019 guide `- . @ +`; docs `_ - . @ +`.
        "customer_email": Rule(254, .alphanumeric, special: "-.@+_"),
        "sdk_token": Rule(100, .alphanumeric),
        "token_name": Rule(100, .alphanumeric, special: ".@-_"),
        "payment_option": Rule(10, .letters),
        "eci": Rule(16, .letters),
        // 2019 guide `# , / . _ - : $ space`; docs `' / . _ - # : $ space`.
        "order_description": Rule(150, .text, special: "#,/._-:$' "),
        "customer_ip": Rule(45, .alphanumeric, special: ".:"),
        // 2019 guide `- \ / : ,`; docs `_ \ / - . ' space`.
        "customer_name": Rule(40, .text, special: "_\\/-.:,' "),
        "phone_number": Rule(19, .alphanumeric, special: "+-() "),
        "settlement_reference": Rule(34, .alphanumeric, special: "-_."),
        // `. ; / _ - , ' @`; the docs' example "John Smith" holds a space.
        "merchant_extra": Rule(999, .text, special: ".;/_-,'@ "),
        "merchant_extra1": Rule(250, .text, special: ".;/_-,'@ "),
        "merchant_extra2": Rule(250, .text, special: ".;/_-,'@ "),
        "merchant_extra3": Rule(250, .text, special: ".;/_-,'@ "),
        "merchant_extra4": Rule(250, .text, special: ".;/_-,'@ "),
        "merchant_extra5": Rule(250, .text, special: ".;/_-,'@ "),
        // 2019 guide `-`; docs `_ - . @ +`.
        "device_id": Rule(100, .alphanumeric, special: "-_.@+"),
        "access_code": Rule(20, .alphanumeric),
        "merchant_identifier": Rule(20, .alphanumeric),
        "card_holder_name": Rule(50, .text, special: "'-. "),
        // Answers: status exactly 2 digits, response_code exactly 5 (the status and a 3-digit message
        // code: docs `incommon.md`, `transactioncodes.md`), FORT's order id (numeric, at most 20).
        "status": Rule(2, .digits, minLength: 2),
        "response_code": Rule(5, .digits, minLength: 5),
        "transaction_status": Rule(2, .digits, minLength: 2),
        "transaction_code": Rule(5, .digits, minLength: 5),
        "fort_id": Rule(20, .digits),
        "authorized_amount": Rule(10, .digits),
        "captured_amount": Rule(10, .digits),
        "refunded_amount": Rule(10, .digits),
        "card_bin": Rule(8, .digits),
        // "The Refund's unique order number": at most 200, `- _ .` (docs `maintenanceparameters.md`, refund request
        // and response).
        "maintenance_reference": Rule(200, .alphanumeric, special: "-_."),
        // Messages ("Alphanumeric Max: 150", docs `incommon.md`) are shown, never decide: any characters
        // but control characters (the docs' own messages hold `’` and `.`). The 3-D Secure page
        // ("Alphanumeric Max: 300", docs `bypassparameters.md`) is further checked as an address.
        "response_message": Rule(150, .printable),
        "transaction_message": Rule(150, .printable),
        "3ds_url": Rule(300, .printable),
    ]

    /// ``rules`` as the kit reads and checks them.
    public static let documented = DocumentedFields(rules)

    /// The operation request's `payment_option` values: VISA, MASTERCARD, AMEX, MADA, MEEZA (2019 guide
    /// and docs), SADAD, NAPS, KNET (docs only, purchases only).
    public static let paymentOptions: Set<String> = ["VISA", "MASTERCARD", "AMEX", "MADA", "MEEZA", "SADAD", "NAPS", "KNET"]
    /// Options the docs allow for `PURCHASE` only.
    static let purchaseOnlyOptions: Set<String> = ["MADA", "MEEZA", "SADAD", "NAPS", "KNET"]
    /// The `eci` values: ECOMMERCE (2019 guide and docs), MOTO (docs).
    public static let eciValues: Set<String> = ["ECOMMERCE", "MOTO"]

    /// Checks one value against its rule; the issue's field is `prefix + name`. A field without a rule
    /// has no issue.
    public static func check(_ name: String, _ value: String, prefix: String = "payfort.") -> [ValidationIssue] {
        documented.check(name, value, field: prefix + name).map { [$0] } ?? []
    }

    /// The keys of the FORT mobile SDK's operation request (2019 guide §6.7.1; fort-ios-sdk README).
    public static let operationKeys: [String] = [
        "command", "merchant_reference", "amount", "currency", "language", "customer_email", "sdk_token", "token_name",
        "payment_option", "eci", "order_description", "customer_ip", "customer_name", "phone_number", "settlement_reference",
        "merchant_extra", "merchant_extra1", "merchant_extra2", "merchant_extra3", "merchant_extra4", "merchant_extra5",
    ]

    /// The mandatory keys of the operation request.
    public static let requiredOperationKeys: [String] = [
        "command", "merchant_reference", "amount", "currency", "language", "customer_email", "sdk_token",
    ]

    /// Every problem in an operation request (a mobile SDK `PURCHASE`/`AUTHORIZATION`, or the fields a
    /// server-to-server one takes from the intent): required keys, each field's rule, and the cross-field
    /// rules. `required` names the mandatory keys to check (the mobile SDK's by default).
    public static func validateOperation(_ parameters: [String: String], required: [String] = requiredOperationKeys,
                                         prefix: String = "payfort.") -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        for key in required where (parameters[key] ?? "").isEmpty {
            issues.append(.init(field: prefix + key, code: .missingField, message: "is required"))
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
        if let eci = parameters["eci"], !eci.isEmpty, !eciValues.contains(eci) {
            issues.append(.init(field: prefix + "eci", code: .invalidField, message: "one of \(eciValues.sorted().joined(separator: ", "))"))
        }
        if let option = parameters["payment_option"], !option.isEmpty {
            if !paymentOptions.contains(option) {
                issues.append(.init(field: prefix + "payment_option", code: .invalidField, message: "one of \(paymentOptions.sorted().joined(separator: ", "))"))
            } else if purchaseOnlyOptions.contains(option), parameters["command"] != "PURCHASE" {
                issues.append(.init(field: prefix + "payment_option", code: .invalidField, message: "\(option) is only for PURCHASE"))
            } else if option == "MADA" || option == "MEEZA", let eci = parameters["eci"], !eci.isEmpty, eci != "ECOMMERCE" {
                // No eci means ECOMMERCE: the sandbox answered eci ECOMMERCE to a purchase that sent none.
                issues.append(.init(field: prefix + "payment_option", code: .invalidField, message: "\(option) is only for eci ECOMMERCE"))
            }
        }
        return issues
    }

    /// The card form of the custom merchant page (Merchant Page 2.0), by PayFort's field names: card
    /// number, expiry, security code and (optional) holder name, with a display mask for the number
    /// and the expiry, the security code obfuscated while typed, and validators for the checks
    /// ``card(_:now:)`` applies. None of it reaches the merchant server.
    public static let cardForm = FormSpec(fields: [
        FormField(id: "card_number", labelKey: "till.field.cardNumber", kind: .cardNumber, maxLength: 19, sensitive: true,
                  mask: "{{9999}} {{9999}} {{9999}} {{9999}}{{999}}",
                  validators: [FieldValidator("length", parameters: ["minLength": "13", "maxLength": "19"]), FieldValidator("luhn")],
                  displayOrder: 1),
        FormField(id: "expiry_date", labelKey: "till.field.expiry", kind: .expiryDate, maxLength: 5, mask: "{{99}}/{{99}}",
                  validators: [FieldValidator("expirationDate")], displayOrder: 2),
        FormField(id: "card_security_code", labelKey: "till.field.cvv", kind: .securityCode, maxLength: 4, sensitive: true,
                  validators: [FieldValidator("length", parameters: ["minLength": "3", "maxLength": "4"])], obfuscate: true,
                  displayOrder: 3),
        FormField(id: "card_holder_name", labelKey: "till.field.cardHolder", kind: .text, required: false, maxLength: 50,
                  validators: [FieldValidator("length", parameters: ["maxLength": "50"])], displayOrder: 4),
    ])

    /// What the customer typed into ``cardForm``: the card number (digits, spaces and dashes ignored;
    /// at most 19 digits per the docs, at least 13 and Luhn-valid by Till's choice), the expiry as
    /// typed (`MM/YY` or `MMYY`, not in the past) sent as PayFort's `YYMM`, the security code (3 or 4
    /// digits), the holder's name (optional, at most 50). Returns the fields to post, by PayFort's
    /// names, or the first problem, never echoing the number or the code.
    public static func card(_ values: FormValues, now: Date = Date()) -> Result<[String: String], CheckoutError> {
        func fail(_ field: String, _ code: CheckoutError.Code, _ why: String) -> Result<[String: String], CheckoutError> {
            .failure(CheckoutError(code, field: "card.\(field)", message: why, gateway: "payfort"))
        }
        let number = (values["card_number"] ?? "").filter { !$0.isWhitespace && $0 != "-" }
        guard !number.isEmpty else { return fail("card_number", .missingField, "is required") }
        guard number.allSatisfy(\.isASCIIDigit), (13...19).contains(number.count), Validators.isLuhnValid(number) else {
            return fail("card_number", .invalidField, "not a valid card number")
        }
        let rawExpiry = (values["expiry_date"] ?? "").filter { !$0.isWhitespace }
        let expiryDigits = rawExpiry.filter(\.isASCIIDigit)
        let shaped = rawExpiry.count == 4 || (rawExpiry.count == 5 && rawExpiry.dropFirst(2).first == "/")
        guard shaped, expiryDigits.count == 4 else {
            return rawExpiry.isEmpty ? fail("expiry_date", .missingField, "is required") : fail("expiry_date", .invalidField, "expected MM/YY")
        }
        let month = Int(expiryDigits.prefix(2)) ?? 0
        let year = Int(expiryDigits.suffix(2)) ?? 0
        guard (1...12).contains(month) else { return fail("expiry_date", .invalidField, "the month must be 01 to 12") }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = calendar.dateComponents([.year, .month], from: now)
        let current = (components.year ?? 2000) % 100 * 100 + (components.month ?? 1)
        guard year * 100 + month >= current else { return fail("expiry_date", .invalidField, "the card has expired") }
        let code = values["card_security_code"] ?? ""
        guard (3...4).contains(code.count), code.allSatisfy(\.isASCIIDigit) else {
            return fail("card_security_code", .invalidField, "3 or 4 digits")
        }
        var out = ["card_number": number, "expiry_date": String(format: "%02d%02d", year, month), "card_security_code": code]
        if let holder = values["card_holder_name"]?.trimmingCharacters(in: .whitespaces), !holder.isEmpty {
            if let issue = check("card_holder_name", holder, prefix: "card.").first {
                return .failure(CheckoutError(issue.code, field: issue.field, message: issue.message, gateway: "payfort"))
            }
            out["card_holder_name"] = holder
        }
        return .success(out)
    }
}
