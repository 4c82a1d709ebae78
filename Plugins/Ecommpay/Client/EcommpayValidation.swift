import Foundation
import TillGatewayKit

extension EcommpayPaymentOptions {
    /// The SDK's languages (the article's "Payment interface language support"): a `languageCode` outside
    /// them keeps the form from opening.
    public static let sdkLanguages: Set<String> = ["en", "de", "hu", "it", "es", "fr"]

    /// The names ``parameters`` uses for the options' own parameters: an additional field may not take one.
    public static let reservedNames: Set<String> = [
        "project_id", "payment_id", "payment_amount", "payment_currency", "customer_id", "payment_description", "operation_type",
        "receipt_data", "hide_saved_wallets", "force_payment_method", "language_code", "region_code", "account_token", "recurring",
        "secure_info", "signature", "frame_mode", "merchant_success_url", "merchant_fail_url",
        "merchant_success_enabled", "merchant_fail_enabled", "merchant_callback_url",
    ]

    /// The article's rules for the 3-D Secure 2 fields: allowed codes, lengths, formats.
    enum SecureRule {
        case codes([String])
        case maxLength(Int)
        case date              // dd-mm-yyyy
        case dateTime          // dd-mm-yyyyhh:mm
        case numeric(Int, Int) // digits, min…max length
        case upTo(Int64)       // integer ≤
        case currency
        case country
        case region            // ISO 3166-2
        case integer
        case text
    }

    static let paymentSecureRules: [String: SecureRule] = [
        "challengeIndicator": .codes(["01", "02", "03", "04"]), "challengeWindow": .codes(["01", "02", "03", "04", "05"]),
        "preorderDate": .date, "preorderPurchase": .codes(["01", "02"]), "reorder": .codes(["01", "02"]),
        "giftCard.amount": .integer, "giftCard.currency": .currency, "giftCard.count": .integer,
    ]

    static let customerSecureRules: [String: SecureRule] = [
        "addressMatch": .codes(["Y", "N"]), "billingRegionCode": .region, "homePhone": .numeric(4, 24), "workPhone": .numeric(4, 24),
        "account.additional": .maxLength(64), "account.activityDay": .upTo(999), "account.activityYear": .upTo(999),
        "account.ageIndicator": .codes(["01", "02", "03", "04", "05"]), "account.authData": .maxLength(255),
        "account.authMethod": .codes(["01", "02", "03", "04"]), "account.authTime": .dateTime, "account.date": .date,
        "account.changeDate": .date, "account.changeIndicator": .codes(["01", "02", "03", "04"]), "account.passChangeDate": .date,
        "account.passChangeIndicator": .codes(["01", "02", "03", "04", "05"]), "account.paymentAge": .date,
        "account.paymentAgeIndicator": .codes(["01", "02", "03", "04", "05"]), "account.provisionAttempts": .upTo(999),
        "account.purchaseNumber": .upTo(9999), "account.suspiciousActivity": .codes(["01", "02"]),
        "shipping.address": .maxLength(150), "shipping.addressUsage": .date, "shipping.addressUsageIndicator": .codes(["01", "02", "03", "04"]),
        "shipping.city": .maxLength(50), "shipping.country": .country, "shipping.deliveryEmail": .maxLength(255),
        "shipping.deliveryTime": .codes(["01", "02", "03", "04"]), "shipping.nameIndicator": .codes(["01", "02"]),
        "shipping.postal": .maxLength(16), "shipping.regionCode": .region,
        "shipping.type": .codes(["01", "02", "03", "04", "05", "06", "07"]),
        "mpiResult.acsOperationId": .maxLength(36), "mpiResult.authenticationFlow": .codes(["01", "02"]),
        "mpiResult.authenticationTimestamp": .text,
    ]

    /// The article's rules, each problem naming its field (`<prefix>paymentDescription`,
    /// `<prefix>threeDSecureInfo.customer.account.ageIndicator`).
    /// - Parameter needsContact: a card payment: `additionalFields` must hold `customer_email` or `customer_phone`.
    public func validate(prefix: String = "", needsContact: Bool = false) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        func issue(_ field: String, _ code: CheckoutError.Code, _ message: String) {
            issues.append(ValidationIssue(field: prefix + field, code: code, message: message))
        }
        func plain(_ field: String, _ value: String?, max: Int) {
            guard let value, !value.isEmpty else { return }
            if value.count > max { issue(field, .fieldTooLong, "at most \(max) characters, got \(value.count)") }
            if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                issue(field, .invalidField, "must not contain control characters")
            }
        }
        if projectId <= 0 { issue("projectId", .invalidField, "the project id ecommpay assigned, a positive integer") }
        if paymentId.isEmpty { issue("paymentId", .missingField, "is required") }
        plain("paymentId", paymentId, max: 255)
        switch action {
        case .verify where paymentAmount != 0: issue("paymentAmount", .invalidAmount, "a verify debits a zero amount")
        case .sale, .auth: if paymentAmount <= 0 { issue("paymentAmount", .invalidAmount, "a positive number of minor units") }
        default: if paymentAmount < 0 { issue("paymentAmount", .invalidAmount, "must not be negative") }
        }
        if Currency.lookup(paymentCurrency) == nil {
            issue("paymentCurrency", .invalidCurrency, "\"\(CheckoutError.printable(paymentCurrency))\" is not an ISO 4217 currency")
        }
        plain("customerId", customerId, max: 255)
        if let description = paymentDescription, description.isEmpty || description.count > 255 {
            issue("paymentDescription", description.isEmpty ? .invalidField : .fieldTooLong, "1 to 255 characters")
        } else { plain("paymentDescription", paymentDescription, max: 255) }
        var seen: Set<String> = []
        for (index, field) in additionalFields.enumerated() {
            let path = "additionalFields[\(index)]"
            if field.name.isEmpty || field.name.contains(where: { $0 == ":" || $0 == ";" || $0.isWhitespace }) {
                issue("\(path).name", .invalidField, "a field name without ':', ';' or spaces")
            }
            if !seen.insert(field.name).inserted { issue("\(path).name", .duplicateField, "\(field.name) is given twice") }
            if Self.reservedNames.contains(field.name) {
                issue("\(path).name", .invalidField, "\(field.name) is a parameter of its own, not an additional field")
            }
            if field.value.isEmpty { issue("\(path).value", .missingField, "is empty") }
            plain("\(path).value", field.value, max: 255)
            if field.name == "customer_email", !Validators.email(field.value, field: "").isEmpty {
                issue("\(path).value", .invalidField, "not a valid e-mail address")
            }
            if field.name.hasSuffix("_country"), (try? CountryCode(field.value)) == nil {
                issue("\(path).value", .invalidCountry, "ISO 3166-1 alpha-2")
            }
        }
        if needsContact, !additionalFields.contains(where: { ["customer_email", "customer_phone"].contains($0.name) && !$0.value.isEmpty }) {
            issue("additionalFields", .missingField, "a card payment needs customer_email or customer_phone")
        }
        if let receipt = receiptData, !receipt.isEmpty {
            let object = Data(base64Encoded: receipt).flatMap { try? OrderedJSON.parse($0) }?.objectMembers
            if object == nil { issue("receiptData", .invalidField, "Base64 of a JSON object") }
        }
        if let method = forcePaymentMethod, !method.isEmpty,
           !method.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }) {
            issue("forcePaymentMethod", .invalidField, "a payment method id (letters, digits, '_', '-')")
        }
        if let language = languageCode, !language.isEmpty, !Self.sdkLanguages.contains(language.lowercased()) {
            issue("languageCode", .invalidField, "the SDK opens only in \(Self.sdkLanguages.sorted().joined(separator: ", "))")
        }
        if let region = regionCode, !region.isEmpty, (try? CountryCode(region)) == nil {
            issue("regionCode", .invalidCountry, "ISO 3166-1 alpha-2")
        }
        plain("token", token, max: 255)
        if let recurrent = recurrentInfo { validate(recurrent, issue) }
        if let secure = threeDSecureInfo {
            for (name, value) in secure.payment { check(value, rule: Self.paymentSecureRules[name], field: "threeDSecureInfo.payment.\(name)", issue) }
            for (name, value) in secure.customer { check(value, rule: Self.customerSecureRules[name], field: "threeDSecureInfo.customer.\(name)", issue) }
            if secure.customer["shipping.regionCode"] != nil, secure.customer["shipping.country"] == nil {
                issue("threeDSecureInfo.customer.shipping.country", .missingField, "shipping.regionCode needs shipping.country")
            }
        }
        if let apple = applePayOptions {
            if apple.merchantID.isEmpty { issue("applePayOptions.merchantID", .missingField, "the Apple Pay merchant id is required") }
            if (try? CountryCode(apple.countryCode)) == nil { issue("applePayOptions.countryCode", .invalidCountry, "ISO 3166-1 alpha-2") }
            plain("applePayOptions.description", apple.description, max: 255)
        }
        if let color = brandColor, !(color.count == 7 && color.hasPrefix("#") && color.dropFirst().allSatisfy(\.isHexDigit)) {
            issue("brandColor", .invalidField, "#RRGGBB")
        }
        return issues
    }

    /// Throws the first problem of ``validate(prefix:needsContact:)``.
    public func check(prefix: String = "", needsContact: Bool = false) throws(CheckoutError) {
        if let first = validate(prefix: prefix, needsContact: needsContact).first { throw first.error }
    }

    private func validate(_ recurrent: RecurrentInfo, _ issue: (String, CheckoutError.Code, String) -> Void) {
        let path = "recurrentInfo"
        if let id = recurrent.scheduledPaymentID, !id.isEmpty, (recurrent.startDate ?? "").isEmpty {
            issue("\(path).startDate", .missingField, "scheduledPaymentID needs startDate")
        }
        if let date = recurrent.startDate, !date.isEmpty, !Self.isDate(date) { issue("\(path).startDate", .invalidField, "dd-mm-yyyy") }
        if let time = recurrent.time, !time.isEmpty {
            if !Self.isTime(time) { issue("\(path).time", .invalidField, "hh:mm:ss") }
            if recurrent.period == nil { issue("\(path).period", .missingField, "time needs period") }
        }
        if let day = recurrent.expiryDay, !day.isEmpty, !(Int(day).map { (1...31).contains($0) } ?? false) {
            issue("\(path).expiryDay", .invalidField, "a day of the month")
        }
        if let month = recurrent.expiryMonth, !month.isEmpty, !(Int(month).map { (1...12).contains($0) } ?? false) {
            issue("\(path).expiryMonth", .invalidField, "a month, 1 to 12")
        }
        if let year = recurrent.expiryYear, !year.isEmpty, !(year.count == 4 && year.allSatisfy(\.isASCII) && Int(year) != nil) {
            issue("\(path).expiryYear", .invalidField, "a four-digit year")
        }
        for (index, item) in recurrent.schedule.enumerated() {
            if !Self.isDate(item.date) { issue("\(path).schedule[\(index)].date", .invalidField, "dd-mm-yyyy") }
            if item.amount <= 0 { issue("\(path).schedule[\(index)].amount", .invalidAmount, "a positive number of minor units") }
        }
    }

    private func check(_ value: ThreeDSecureInfo.Value, rule: SecureRule?, field: String, _ issue: (String, CheckoutError.Code, String) -> Void) {
        guard let rule else { return issue(field, .invalidField, "not a 3-D Secure field of the article's tables") }
        switch (rule, value) {
        case (.codes(let codes), .text(let text)):
            if !codes.contains(text) { issue(field, .invalidField, "one of \(codes.joined(separator: ", "))") }
        case (.maxLength(let max), .text(let text)):
            if text.count > max { issue(field, .fieldTooLong, "at most \(max) characters") }
        case (.date, .text(let text)):
            if !Self.isDate(text) { issue(field, .invalidField, "dd-mm-yyyy") }
        case (.dateTime, .text(let text)):
            if !(text.count == 15 && Self.isDate(String(text.prefix(10))) && Self.isClock(String(text.suffix(5)))) {
                issue(field, .invalidField, "dd-mm-yyyyhh:mm")
            }
        case (.numeric(let min, let max), .text(let text)):
            if !(text.allSatisfy { $0.isASCII && $0.isNumber } && (min...max).contains(text.count)) {
                issue(field, .invalidField, "\(min) to \(max) digits")
            }
        case (.upTo(let max), .integer(let n)):
            if !(0...max).contains(n) { issue(field, .invalidField, "0 to \(max)") }
        case (.integer, .integer(let n)):
            if n < 0 { issue(field, .invalidField, "must not be negative") }
        case (.currency, .text(let text)):
            if Currency.lookup(text) == nil { issue(field, .invalidCurrency, "ISO 4217 alpha-3") }
        case (.country, .text(let text)):
            if (try? CountryCode(text)) == nil { issue(field, .invalidCountry, "ISO 3166-1 alpha-2") }
        case (.region, .text(let text)):
            let parts = text.split(separator: "-")
            if !(parts.count == 2 && (try? CountryCode(String(parts[0]))) != nil && (1...3).contains(parts[1].count)) {
                issue(field, .invalidField, "ISO 3166-2 (CC-XXX)")
            }
        case (.text, .text(let text)):
            if text.isEmpty || text.count > 255 { issue(field, .invalidField, "1 to 255 characters") }
        case (.upTo, .text), (.integer, .text):
            issue(field, .invalidField, "an integer")
        default:
            issue(field, .invalidField, "a string")
        }
    }

    /// `dd-mm-yyyy` naming a real day.
    static func isDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 2, parts[1].count == 2, parts[2].count == 4,
              let day = Int(parts[0]), let month = Int(parts[1]), let year = Int(parts[2]), (1...12).contains(month) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        return (1...[31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]).contains(day)
    }

    /// `hh:mm:ss`.
    static func isTime(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        return text.count == 8 && parts.count == 3 && (parts[0].map { $0 < 24 } ?? false) && (parts[1].map { $0 < 60 } ?? false)
            && (parts[2].map { $0 < 60 } ?? false)
    }

    /// `hh:mm`.
    static func isClock(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        return text.count == 5 && parts.count == 2 && (parts[0].map { $0 < 24 } ?? false) && (parts[1].map { $0 < 60 } ?? false)
    }
}
