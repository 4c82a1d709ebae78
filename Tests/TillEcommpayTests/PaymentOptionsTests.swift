import Foundation
import Testing
import TillGatewayKit
@testable import TillEcommpay

/// ``EcommpayPaymentOptions``: every rule of the iOS article ("SDK UI & Core for iOS", Table 1, Table 2, the
/// 3-D Secure tables, Apple Pay, the language list), each problem naming its field; and the shape of what is
/// handed over (``EcommpayPaymentOptions/parameters`` and the server SDKs' string of them).
@Suite("ecommpay payment options")
struct PaymentOptionsTests {
    typealias Options = EcommpayPaymentOptions

    /// Options the article's rules accept: a card payment with an e-mail.
    static func valid() -> Options {
        Options(projectId: 12345, paymentId: "att-1", paymentAmount: 1999, paymentCurrency: "EUR", customerId: "cust-7",
                paymentDescription: "Green tea", additionalFields: [.init("customer_email", "ada@example.com")])
    }

    /// One rule: a change to valid options and the field and code the problem must name.
    struct Rule: Sendable, CustomTestStringConvertible {
        var name: String
        var field: String
        var code: CheckoutError.Code
        var needsContact = false
        var change: @Sendable (inout Options) -> Void
        var testDescription: String { "\(name) → \(field)" }
    }

    static let long256 = String(repeating: "a", count: 256)

    static let rules: [Rule] = [
        Rule(name: "projectId 0", field: "projectId", code: .invalidField) { $0.projectId = 0 },
        Rule(name: "projectId negative", field: "projectId", code: .invalidField) { $0.projectId = -5 },
        Rule(name: "paymentId empty", field: "paymentId", code: .missingField) { $0.paymentId = "" },
        Rule(name: "paymentId 256 characters", field: "paymentId", code: .fieldTooLong) { $0.paymentId = long256 },
        Rule(name: "paymentId with a control character", field: "paymentId", code: .invalidField) { $0.paymentId = "att\u{0007}1" },
        Rule(name: "sale of 0", field: "paymentAmount", code: .invalidAmount) { $0.paymentAmount = 0 },
        Rule(name: "sale of -1", field: "paymentAmount", code: .invalidAmount) { $0.paymentAmount = -1 },
        Rule(name: "auth of 0", field: "paymentAmount", code: .invalidAmount) { $0.action = .auth; $0.paymentAmount = 0 },
        Rule(name: "verify of 1", field: "paymentAmount", code: .invalidAmount) { $0.action = .verify; $0.paymentAmount = 1 },
        Rule(name: "verify of 1999", field: "paymentAmount", code: .invalidAmount) { $0.action = .verify },
        Rule(name: "tokenize of -1", field: "paymentAmount", code: .invalidAmount) { $0.action = .tokenize; $0.paymentAmount = -1 },
        Rule(name: "currency ZZZ", field: "paymentCurrency", code: .invalidCurrency) { $0.paymentCurrency = "ZZZ" },
        Rule(name: "currency lower case", field: "paymentCurrency", code: .invalidCurrency) { $0.paymentCurrency = "eur" },
        Rule(name: "currency EURO", field: "paymentCurrency", code: .invalidCurrency) { $0.paymentCurrency = "EURO" },
        Rule(name: "customerId 256", field: "customerId", code: .fieldTooLong) { $0.customerId = long256 },
        Rule(name: "description empty", field: "paymentDescription", code: .invalidField) { $0.paymentDescription = "" },
        Rule(name: "description 256", field: "paymentDescription", code: .fieldTooLong) { $0.paymentDescription = long256 },
        Rule(name: "description with a newline", field: "paymentDescription", code: .invalidField) { $0.paymentDescription = "a\nb" },
        Rule(name: "field name empty", field: "additionalFields[1].name", code: .invalidField) { $0.additionalFields.append(.init("", "x")) },
        Rule(name: "field name with ':'", field: "additionalFields[1].name", code: .invalidField) { $0.additionalFields.append(.init("a:b", "x")) },
        Rule(name: "field name with ';'", field: "additionalFields[1].name", code: .invalidField) { $0.additionalFields.append(.init("a;b", "x")) },
        Rule(name: "field name with a space", field: "additionalFields[1].name", code: .invalidField) { $0.additionalFields.append(.init("a b", "x")) },
        Rule(name: "field twice", field: "additionalFields[1].name", code: .duplicateField) {
            $0.additionalFields.append(.init("customer_email", "b@example.com"))
        },
        Rule(name: "field value empty", field: "additionalFields[1].value", code: .missingField) { $0.additionalFields.append(.init("customer_city", "")) },
        Rule(name: "field value 256", field: "additionalFields[1].value", code: .fieldTooLong) { $0.additionalFields.append(.init("customer_city", long256)) },
        Rule(name: "customer_email not an address", field: "additionalFields[0].value", code: .invalidField) {
            $0.additionalFields = [.init("customer_email", "ada.example.com")]
        },
        Rule(name: "billing_country ZZ", field: "additionalFields[1].value", code: .invalidCountry) { $0.additionalFields.append(.init("billing_country", "ZZ")) },
        Rule(name: "customer_country lower case", field: "additionalFields[1].value", code: .invalidCountry) {
            $0.additionalFields.append(.init("customer_country", "de"))
        },
        Rule(name: "card without e-mail or phone", field: "additionalFields", code: .missingField, needsContact: true) {
            $0.additionalFields = [.init("customer_first_name", "Ada")]
        },
        Rule(name: "card with no fields", field: "additionalFields", code: .missingField, needsContact: true) { $0.additionalFields = [] },
        Rule(name: "receiptData not Base64", field: "receiptData", code: .invalidField) { $0.receiptData = "not base64!" },
        Rule(name: "receiptData Base64 of a list", field: "receiptData", code: .invalidField) { $0.receiptData = Data("[1,2]".utf8).base64EncodedString() },
        Rule(name: "receiptData Base64 of text", field: "receiptData", code: .invalidField) { $0.receiptData = Data("receipt".utf8).base64EncodedString() },
        Rule(name: "receiptData Base64 of a string", field: "receiptData", code: .invalidField) { $0.receiptData = Data("\"x\"".utf8).base64EncodedString() },
        Rule(name: "forcePaymentMethod with ';'", field: "forcePaymentMethod", code: .invalidField) { $0.forcePaymentMethod = "card;x" },
        Rule(name: "forcePaymentMethod with a space", field: "forcePaymentMethod", code: .invalidField) { $0.forcePaymentMethod = "apple pay" },
        Rule(name: "languageCode ru", field: "languageCode", code: .invalidField) { $0.languageCode = "ru" },
        Rule(name: "languageCode english", field: "languageCode", code: .invalidField) { $0.languageCode = "english" },
        Rule(name: "languageCode en-US", field: "languageCode", code: .invalidField) { $0.languageCode = "en-US" },
        Rule(name: "regionCode ZZ", field: "regionCode", code: .invalidCountry) { $0.regionCode = "ZZ" },
        Rule(name: "regionCode DEU", field: "regionCode", code: .invalidCountry) { $0.regionCode = "DEU" },
        Rule(name: "token 256", field: "token", code: .fieldTooLong) { $0.token = long256 },
        Rule(name: "Apple Pay without a merchant id", field: "applePayOptions.merchantID", code: .missingField) {
            $0.applePayOptions = .init(merchantID: "", countryCode: "DE")
        },
        Rule(name: "Apple Pay country ZZ", field: "applePayOptions.countryCode", code: .invalidCountry) {
            $0.applePayOptions = .init(merchantID: "merchant.com.example", countryCode: "ZZ")
        },
        Rule(name: "Apple Pay description 256", field: "applePayOptions.description", code: .fieldTooLong) {
            $0.applePayOptions = .init(merchantID: "merchant.com.example", description: long256, countryCode: "DE")
        },
        Rule(name: "brandColor without #", field: "brandColor", code: .invalidField) { $0.brandColor = "00A1FF" },
        Rule(name: "brandColor five digits", field: "brandColor", code: .invalidField) { $0.brandColor = "#00A1F" },
        Rule(name: "brandColor not hex", field: "brandColor", code: .invalidField) { $0.brandColor = "#00A1FG" },
        Rule(name: "brandColor a name", field: "brandColor", code: .invalidField) { $0.brandColor = "blue" },
        Rule(name: "brandColor with alpha", field: "brandColor", code: .invalidField) { $0.brandColor = "#00A1FF80" },
    ]

    @Test("valid options raise no problem; needsContact is met by an e-mail or a phone")
    func validOptions() {
        #expect(Self.valid().validate().isEmpty)
        #expect(Self.valid().validate(needsContact: true).isEmpty)
        var phone = Self.valid()
        phone.additionalFields = [.init("customer_phone", "447700900123")]
        #expect(phone.validate(needsContact: true).isEmpty)
        var none = Self.valid()
        none.additionalFields = []
        #expect(none.validate().isEmpty)
    }

    @Test("each article rule, its problem naming the field", arguments: rules)
    func rule(_ rule: Rule) {
        var options = Self.valid()
        rule.change(&options)
        let issues = options.validate(needsContact: rule.needsContact)
        #expect(issues.contains { $0.field == rule.field && $0.code == rule.code }, "\(issues)")
        // Each change breaks that one rule only.
        #expect(Set(issues.map(\.field)) == [rule.field], "\(issues)")
        // With a prefix the field is named under it, and check(prefix:) throws it.
        #expect(options.validate(prefix: "options.", needsContact: rule.needsContact).contains { $0.field == "options." + rule.field })
        let error = #expect(throws: CheckoutError.self) { try options.check(prefix: "options.", needsContact: rule.needsContact) }
        #expect(error?.field?.hasPrefix("options.") == true)
    }

    @Test("what the rules accept at their edges")
    func edges() {
        var options = Self.valid()
        options.paymentDescription = String(repeating: "é", count: 255)
        options.paymentId = String(repeating: "1", count: 255)
        options.customerId = String(repeating: "c", count: 255)
        #expect(options.validate().isEmpty)
        options.paymentDescription = "x"
        #expect(options.validate().isEmpty)
        // A verify is zero; a tokenize may be zero.
        options.action = .verify
        options.paymentAmount = 0
        #expect(options.validate().isEmpty)
        options.action = .tokenize
        #expect(options.validate().isEmpty)
        options.action = .auth
        options.paymentAmount = 1
        #expect(options.validate().isEmpty)
        // Currencies of every exponent.
        for currency in ["JPY", "KWD", "USD", "HUF"] {
            options.paymentCurrency = currency
            #expect(options.validate().isEmpty, "\(currency)")
        }
        options = Self.valid()
        options.receiptData = Data(#"{"positions":[{"amount":1999,"description":"Green tea"}]}"#.utf8).base64EncodedString()
        options.forcePaymentMethod = "card"
        options.regionCode = "DE"
        options.brandColor = "#00a1FF"
        options.applePayOptions = .init(merchantID: "merchant.com.example", description: nil, countryCode: "DE")
        options.additionalFields += [.init("billing_country", "DE"), .init("my_custom_field", "any value; with: signs")]
        options.hideSavedWallets = true
        options.token = "tok_123"
        #expect(options.validate().isEmpty, "\(options.validate())")
    }

    @Test("languageCode: the SDK's six languages (en, de, hu, it, es, fr)")
    func languages() {
        #expect(Options.sdkLanguages == ["en", "de", "hu", "it", "es", "fr"])
        for language in ["en", "de", "hu", "it", "es", "fr"] {
            var options = Self.valid()
            options.languageCode = language
            #expect(options.validate().isEmpty, "\(language)")
        }
        var empty = Self.valid()
        empty.languageCode = ""
        #expect(empty.validate().isEmpty)
    }

    /// The article's table lists the codes in lower case; its own example for `languageCode` is `IT`
    /// ("Example: IT"), and MsdkCore.h documents ISO 639-1 ("e.g., \"en\""). The module refuses the
    /// article's example.
    @Test("languageCode: the article's own example IT is accepted")
    func articleLanguageExample() {
        var options = Self.valid()
        options.languageCode = "IT"
        // Was a known issue, fixed in the module.
        #expect(options.validate().isEmpty)
        
    }

    // MARK: recurrentInfo

    @Test("recurrentInfo (Table 2): each rule names recurrentInfo.<field>")
    func recurrent() {
        typealias R = Options.RecurrentInfo
        let ok = R(kind: .regular, period: .month, expiryDay: "31", expiryMonth: "12", expiryYear: "2030", scheduledPaymentID: "sch-1",
                   startDate: "29-02-2028", time: "23:59:59", schedule: [.init(date: "01-03-2028", amount: 500)], amount: 500)
        var options = Self.valid()
        options.recurrentInfo = ok
        #expect(options.validate().isEmpty, "\(options.validate())")
        options.recurrentInfo = R(kind: .oneClick)
        #expect(options.validate().isEmpty)

        let cases: [(String, CheckoutError.Code, (inout R) -> Void)] = [
            ("recurrentInfo.startDate", .missingField, { $0.startDate = nil }),
            ("recurrentInfo.startDate", .missingField, { $0.startDate = "" }),
            ("recurrentInfo.startDate", .invalidField, { $0.startDate = "2028-02-29" }),
            ("recurrentInfo.startDate", .invalidField, { $0.startDate = "29-02-2027" }),
            ("recurrentInfo.startDate", .invalidField, { $0.startDate = "31-04-2028" }),
            ("recurrentInfo.time", .invalidField, { $0.time = "24:00:00" }),
            ("recurrentInfo.time", .invalidField, { $0.time = "10:00" }),
            ("recurrentInfo.time", .invalidField, { $0.time = "10:60:00" }),
            ("recurrentInfo.period", .missingField, { $0.period = nil }),
            ("recurrentInfo.expiryDay", .invalidField, { $0.expiryDay = "0" }),
            ("recurrentInfo.expiryDay", .invalidField, { $0.expiryDay = "32" }),
            ("recurrentInfo.expiryDay", .invalidField, { $0.expiryDay = "first" }),
            ("recurrentInfo.expiryMonth", .invalidField, { $0.expiryMonth = "13" }),
            ("recurrentInfo.expiryMonth", .invalidField, { $0.expiryMonth = "0" }),
            ("recurrentInfo.expiryYear", .invalidField, { $0.expiryYear = "30" }),
            ("recurrentInfo.expiryYear", .invalidField, { $0.expiryYear = "20x0" }),
            ("recurrentInfo.expiryYear", .invalidField, { $0.expiryYear = "20300" }),
            ("recurrentInfo.schedule[0].date", .invalidField, { $0.schedule = [.init(date: "2028-03-01", amount: 500)] }),
            ("recurrentInfo.schedule[1].amount", .invalidAmount, { $0.schedule.append(.init(date: "01-04-2028", amount: 0)) }),
            ("recurrentInfo.schedule[1].amount", .invalidAmount, { $0.schedule.append(.init(date: "01-04-2028", amount: -5)) }),
        ]
        for (field, code, change) in cases {
            var recurrent = ok
            change(&recurrent)
            var options = Self.valid()
            options.recurrentInfo = recurrent
            let issues = options.validate()
            #expect(issues.contains { $0.field == field && $0.code == code }, "\(field): \(issues)")
            #expect(Set(issues.map(\.field)) == [field], "\(field): \(issues)")
        }
        // scheduledPaymentID needs startDate; without an id the date may be left out.
        var noID = ok
        noID.scheduledPaymentID = nil
        noID.startDate = nil
        options = Self.valid()
        options.recurrentInfo = noID
        #expect(options.validate().isEmpty)
        #expect(R.Kind.allCases.map(\.rawValue) == ["C", "U", "R"])
        #expect(R.Period.allCases.map(\.rawValue) == ["D", "W", "M", "Q", "Y"])
    }

    // MARK: 3-D Secure

    typealias Value = Options.ThreeDSecureInfo.Value

    /// The article's 3-D Secure tables written out here: each field, a value they accept, values they refuse
    /// and the code of the problem.
    static let payment3DS: [(String, Value, [(Value, CheckoutError.Code)])] = [
        ("challengeIndicator", .text("04"), [(.text("05"), .invalidField), (.text("1"), .invalidField), (.integer(1), .invalidField)]),
        ("challengeWindow", .text("05"), [(.text("06"), .invalidField), (.text("00"), .invalidField)]),
        ("preorderDate", .text("29-02-2028"), [(.text("2028-02-29"), .invalidField), (.text("30-02-2028"), .invalidField), (.text("1-1-2028"), .invalidField)]),
        ("preorderPurchase", .text("02"), [(.text("03"), .invalidField)]),
        ("reorder", .text("01"), [(.text("1"), .invalidField)]),
        ("giftCard.amount", .integer(1000), [(.integer(-1), .invalidField), (.text("1000"), .invalidField)]),
        ("giftCard.currency", .text("EUR"), [(.text("EURO"), .invalidCurrency), (.integer(978), .invalidField)]),
        ("giftCard.count", .integer(2), [(.integer(-2), .invalidField), (.text("2"), .invalidField)]),
    ]

    static let customer3DS: [(String, Value, [(Value, CheckoutError.Code)])] = [
        ("addressMatch", .text("Y"), [(.text("y"), .invalidField), (.text("yes"), .invalidField)]),
        ("billingRegionCode", .text("DE-BY"), [(.text("DEBY"), .invalidField), (.text("ZZ-BY"), .invalidField), (.text("DE-ABCD"), .invalidField)]),
        ("homePhone", .text("4477009001"), [(.text("123"), .invalidField), (.text("+447700900"), .invalidField), (.text(String(repeating: "1", count: 25)), .invalidField)]),
        ("workPhone", .text(String(repeating: "9", count: 24)), [(.text("12ab"), .invalidField)]),
        ("account.additional", .text(String(repeating: "a", count: 64)), [(.text(String(repeating: "a", count: 65)), .fieldTooLong)]),
        ("account.activityDay", .integer(999), [(.integer(1000), .invalidField), (.integer(-1), .invalidField), (.text("5"), .invalidField)]),
        ("account.activityYear", .integer(0), [(.integer(1000), .invalidField)]),
        ("account.ageIndicator", .text("05"), [(.text("06"), .invalidField)]),
        ("account.authData", .text(String(repeating: "d", count: 255)), [(.text(long256), .fieldTooLong)]),
        ("account.authMethod", .text("04"), [(.text("05"), .invalidField)]),
        ("account.authTime", .text("14-12-201810:50"), [(.text("14-12-2018 10:50"), .invalidField), (.text("14-12-201825:00"), .invalidField),
                                                       (.text("201812141050"), .invalidField)]),
        ("account.date", .text("01-01-2020"), [(.text("01-13-2020"), .invalidField)]),
        ("account.changeDate", .text("31-12-2025"), [(.text("32-12-2025"), .invalidField)]),
        ("account.changeIndicator", .text("04"), [(.text("05"), .invalidField)]),
        ("account.passChangeDate", .text("28-02-2026"), [(.text("29-02-2026"), .invalidField)]),
        ("account.passChangeIndicator", .text("05"), [(.text("06"), .invalidField)]),
        ("account.paymentAge", .text("15-06-2024"), [(.text("15/06/2024"), .invalidField)]),
        ("account.paymentAgeIndicator", .text("01"), [(.text("00"), .invalidField)]),
        ("account.provisionAttempts", .integer(999), [(.integer(1000), .invalidField)]),
        ("account.purchaseNumber", .integer(9999), [(.integer(10000), .invalidField)]),
        ("account.suspiciousActivity", .text("02"), [(.text("03"), .invalidField)]),
        ("shipping.address", .text(String(repeating: "s", count: 150)), [(.text(String(repeating: "s", count: 151)), .fieldTooLong)]),
        ("shipping.addressUsage", .text("01-01-2024"), [(.text("01-01-24"), .invalidField)]),
        ("shipping.addressUsageIndicator", .text("04"), [(.text("05"), .invalidField)]),
        ("shipping.city", .text(String(repeating: "c", count: 50)), [(.text(String(repeating: "c", count: 51)), .fieldTooLong)]),
        ("shipping.country", .text("DE"), [(.text("DEU"), .invalidCountry), (.text("ZZ"), .invalidCountry)]),
        ("shipping.deliveryEmail", .text("ada@example.com"), [(.text(long256), .fieldTooLong)]),
        ("shipping.deliveryTime", .text("04"), [(.text("05"), .invalidField)]),
        ("shipping.nameIndicator", .text("02"), [(.text("03"), .invalidField)]),
        ("shipping.postal", .text(String(repeating: "1", count: 16)), [(.text(String(repeating: "1", count: 17)), .fieldTooLong)]),
        ("shipping.type", .text("07"), [(.text("08"), .invalidField)]),
        ("mpiResult.acsOperationId", .text(String(repeating: "0", count: 36)), [(.text(String(repeating: "0", count: 37)), .fieldTooLong)]),
        ("mpiResult.authenticationFlow", .text("02"), [(.text("03"), .invalidField)]),
        ("mpiResult.authenticationTimestamp", .text("201812141050"), [(.text(""), .invalidField), (.text(long256), .invalidField)]),
    ]

    @Test("every field of the article's 3-D Secure tables is known to the module, and no other")
    func secureFieldsCovered() {
        #expect(Set(Options.paymentSecureRules.keys) == Set(Self.payment3DS.map(\.0)))
        #expect(Set(Options.customerSecureRules.keys) == Set(Self.customer3DS.map(\.0) + ["shipping.regionCode"]))
    }

    @Test("each 3-D Secure field: its accepted value passes, each refused value names threeDSecureInfo.<object>.<field>")
    func secureRules() {
        for (object, table) in [("payment", Self.payment3DS), ("customer", Self.customer3DS)] {
            for (name, good, bads) in table {
                var options = Self.valid()
                options.threeDSecureInfo = object == "payment" ? .init(payment: [name: good]) : .init(customer: [name: good])
                #expect(options.validate().isEmpty, "\(object).\(name): \(options.validate())")
                for (bad, code) in bads {
                    options.threeDSecureInfo = object == "payment" ? .init(payment: [name: bad]) : .init(customer: [name: bad])
                    let issues = options.validate()
                    #expect(issues.map(\.field) == ["threeDSecureInfo.\(object).\(name)"], "\(object).\(name) = \(bad)")
                    #expect(issues.first?.code == code, "\(object).\(name) = \(bad)")
                }
            }
        }
    }

    @Test("shipping.regionCode: ISO 3166-2, and only with shipping.country")
    func shippingRegion() {
        var options = Self.valid()
        options.threeDSecureInfo = .init(customer: ["shipping.regionCode": .text("DE-BE"), "shipping.country": .text("DE")])
        #expect(options.validate().isEmpty)
        options.threeDSecureInfo = .init(customer: ["shipping.regionCode": .text("DE-BE")])
        #expect(options.validate().map(\.field) == ["threeDSecureInfo.customer.shipping.country"])
        #expect(options.validate().first?.code == .missingField)
        options.threeDSecureInfo = .init(customer: ["shipping.regionCode": .text("Berlin"), "shipping.country": .text("DE")])
        #expect(options.validate().map(\.field) == ["threeDSecureInfo.customer.shipping.regionCode"])
    }

    @Test("a 3-D Secure field outside the article's tables is refused by name")
    func secureUnknown() {
        var options = Self.valid()
        options.threeDSecureInfo = .init(payment: ["challengeIndicatr": .text("01")], customer: ["account.colour": .text("red")])
        let fields = Set(options.validate().map(\.field))
        #expect(fields == ["threeDSecureInfo.payment.challengeIndicatr", "threeDSecureInfo.customer.account.colour"])
    }

    // MARK: What is signed

    /// `value` with every object's members sorted by key, so two shapes compare whatever their order.
    static func sorted(_ value: OrderedJSON) -> OrderedJSON {
        switch value {
        case .object(let members): .object(members.map { .init(key: $0.key, value: sorted($0.value)) }.sorted { $0.key < $1.key })
        case .array(let items): .array(items.map(sorted))
        default: value
        }
    }

    @Test("parameters: the Payment Page's names, nesting for recurring and secure_info, empty values left out")
    func signedShape() {
        var options = Self.valid()
        options.action = .auth
        options.receiptData = "eyJhIjoxfQ=="
        options.hideSavedWallets = true
        options.forcePaymentMethod = "card"
        options.languageCode = "de"
        options.regionCode = "DE"
        options.token = "tok_1"
        options.additionalFields += [.init("customer_phone", "447700900123"), .init("billing_country", "DE"), .init("customer_city", "")]
        options.recurrentInfo = .init(kind: .regular, period: .month, expiryDay: "01", expiryMonth: "12", expiryYear: "2030",
                                      scheduledPaymentID: "sch-1", startDate: "01-02-2026", time: "10:00:00",
                                      schedule: [.init(date: "01-03-2026", amount: 500)], amount: 500)
        options.threeDSecureInfo = .init(payment: ["challengeIndicator": .text("01"), "giftCard.amount": .integer(1000), "giftCard.currency": .text("EUR")],
                                         customer: ["addressMatch": .text("Y"), "account.ageIndicator": .text("02"), "shipping.city": .text("Berlin"),
                                                    "mpiResult.acsOperationId": .text("acs-1")])
        options.applePayOptions = .init(merchantID: "merchant.com.example", countryCode: "DE")
        options.mockMode = .success
        options.brandColor = "#00A1FF"
        let expected = J.object(
            ("project_id", J.int(12345)), ("payment_id", .string("att-1")), ("payment_amount", J.int(1999)), ("payment_currency", .string("EUR")),
            ("customer_id", .string("cust-7")), ("payment_description", .string("Green tea")), ("operation_type", .string("auth")),
            ("receipt_data", .string("eyJhIjoxfQ==")), ("hide_saved_wallets", .bool(true)), ("force_payment_method", .string("card")),
            ("language_code", .string("de")), ("region_code", .string("DE")), ("account_token", .string("tok_1")),
            ("customer_email", .string("ada@example.com")), ("customer_phone", .string("447700900123")), ("billing_country", .string("DE")),
            ("recurring", J.object(("type", .string("R")), ("period", .string("M")), ("expiry_day", .string("01")), ("expiry_month", .string("12")),
                                   ("expiry_year", .string("2030")), ("scheduled_payment_id", .string("sch-1")), ("start_date", .string("01-02-2026")),
                                   ("time", .string("10:00:00")), ("amount", J.int(500)),
                                   ("schedule", .array([J.object(("date", .string("01-03-2026")), ("amount", J.int(500)))])))),
            ("secure_info", J.object(
                ("payment", J.object(("challenge_indicator", .string("01")), ("gift_card", J.object(("amount", J.int(1000)), ("currency", .string("EUR")))))),
                ("customer", J.object(("address_match", .string("Y")), ("account", J.object(("age_indicator", .string("02")))),
                                      ("shipping", J.object(("city", .string("Berlin")))), ("mpi_result", J.object(("acs_operation_id", .string("acs-1")))))))))
        #expect(Self.sorted(options.parameters) == Self.sorted(expected))
        // Appearance, the mock mode and Apple Pay's own options are never signed.
        let string = EcommpaySignatureString.string(of: options.parameters)
        for absent in ["00A1FF", "mock", "merchant.com.example", "customer_city", "apple"] {
            #expect(!string.contains(absent), "\(absent)")
        }
        #expect(string == TestSigner.string(expected))
        #expect(string.contains("secure_info:customer:account:age_indicator:02"))
        #expect(string.contains("recurring:schedule:0:amount:500"))
    }

    @Test("The string of plain options' parameters, written out")
    func plainString() {
        #expect(EcommpaySignatureString.string(of: Self.valid().parameters)
            == "customer_email:ada@example.com;customer_id:cust-7;operation_type:sale;payment_amount:1999;payment_currency:EUR;"
            + "payment_description:Green tea;payment_id:att-1;project_id:12345")
        var bare = Options(projectId: 1, paymentId: "p", paymentAmount: 0, paymentCurrency: "JPY", customerId: "", paymentDescription: "",
                           action: .verify, receiptData: "", forcePaymentMethod: "", languageCode: "", regionCode: "", token: "",
                           recurrentInfo: nil, threeDSecureInfo: .init())
        #expect(EcommpaySignatureString.string(of: bare.parameters) == "operation_type:verify;payment_amount:0;payment_currency:JPY;payment_id:p;project_id:1")
        bare.recurrentInfo = .init(kind: .oneClick, amount: 0)
        #expect(bare.parameters["recurring"] == J.object(("type", .string("C"))))
        #expect(Options.Action.allCases.map(\.rawValue) == ["sale", "auth", "tokenize", "verify"])
        #expect(Options.MockMode.allCases.map(\.rawValue) == ["disabled", "success", "decline"])
    }

    @Test("the article's names in camel case become snake case")
    func snake() {
        for (name, wire) in [("challengeIndicator", "challenge_indicator"), ("giftCard", "gift_card"), ("mpiResult", "mpi_result"),
                             ("acsOperationId", "acs_operation_id"), ("addressMatch", "address_match"), ("city", "city")] {
            #expect(Options.snake(name) == wire)
        }
    }
}
