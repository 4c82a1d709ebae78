import Foundation
import Testing
@testable import TillWorldline

/// `Fixtures/validators.json`: every validator vector of the vendor SDKs' unit tests (Swift, JavaScript),
/// each naming its source; `till_expected` marks where the asserting SDK reads a rule differently from the
/// Swift SDK that Till follows. Date-dependent vectors run with `now` pinned by the fixture.
struct ValidatorVectors: Decodable {
    /// A rule as the fixture writes it: the Client API's validator key and its attributes.
    struct RuleJSON: Decodable {
        var rule: String
        var attributes: Attributes

        struct Attributes: Decodable {
            var minValue: Int?
            var maxValue: Int?
            var minLength: Int?
            var maxLength: Int?
            var allowedValues: [String]?
            var regularExpression: String?
            var fiscalNumberLength: Int?
        }

        func make() throws -> WorldlineValidationRule {
            switch rule {
            case "luhn": return .luhn
            case "expirationDate": return .expirationDate
            case "range": return .range(minValue: try #require(attributes.minValue), maxValue: try #require(attributes.maxValue))
            case "length":
                return .length(minLength: try #require(attributes.minLength), maxLength: try #require(attributes.maxLength))
            case "fixedList": return .fixedList(allowedValues: try #require(attributes.allowedValues))
            case "emailAddress": return .emailAddress
            case "regularExpression": return .regularExpression(try #require(attributes.regularExpression))
            case "residentIdNumber": return .residentIdNumber
            case "iban": return .iban
            case "termsAndConditions": return .termsAndConditions
            case "boletoBancarioRequiredness":
                return .boletoBancarioRequiredness(fiscalNumberLength: try #require(attributes.fiscalNumberLength))
            default:
                Issue.record("unknown rule \(rule) in the fixture")
                return .luhn
            }
        }
    }

    struct Case: Decodable {
        var rule: String
        var attributes: RuleJSON.Attributes
        var value: String
        var expected_valid: Bool
        var source: String
        var till_expected: Bool?
        var till_reason: String?
        var vendor_value: String?
        var till: Bool { till_expected ?? expected_valid }
        var ruleJSON: RuleJSON { RuleJSON(rule: rule, attributes: attributes) }
    }

    struct Window: Decodable {
        var source: String
        var current: String
        var last_year: Int
        var cases: [WindowCase]
    }

    struct WindowCase: Decodable {
        var date: String
        var expected_valid: Bool
    }

    struct Boleto: Decodable {
        var source: String
        var attributes: RuleJSON.Attributes
        var cases: [BoletoCase]
    }

    struct BoletoCase: Decodable {
        var fiscalNumber: String?
        var value: String?
        var validateValue: Bool
        var validate: Bool?
    }

    struct Restrictions: Decodable {
        var field: String
        /// The `dataRestrictions` object as the vendor resource has it, re-encoded for the decoder.
        var json: AnyJSON
        var expected_isRequired: Bool
        var expected_rules: [RuleJSON]
        var source: String
    }

    /// Any JSON value, so a fixture's object can be handed to the decoder under test. Re-encoding may
    /// change the key order; `decodesEveryRule` checks order independence with a literal in reverse order.
    enum AnyJSON: Decodable, Encodable {
        case object([String: AnyJSON]), array([AnyJSON]), string(String), number(Double), bool(Bool), null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null }
            else if let bool = try? container.decode(Bool.self) { self = .bool(bool) }
            else if let number = try? container.decode(Double.self) { self = .number(number) }
            else if let string = try? container.decode(String.self) { self = .string(string) }
            else if let array = try? container.decode([AnyJSON].self) { self = .array(array) }
            else { self = .object(try container.decode([String: AnyJSON].self)) }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .object(let object): try container.encode(object)
            case .array(let array): try container.encode(array)
            case .string(let string): try container.encode(string)
            case .number(let number): try container.encode(number)
            case .bool(let bool): try container.encode(bool)
            case .null: try container.encodeNil()
            }
        }
    }

    var now: String
    var cases: [Case]
    var expirationDate_window: Window
    var boletoBancarioRequiredness: Boleto
    var dataRestrictions: [Restrictions]

    static func load() throws -> ValidatorVectors {
        try JSONDecoder().decode(ValidatorVectors.self, from: try worldlineFixture("validators.json"))
    }

    /// The pinned date every date-dependent vector is checked against.
    func pinnedNow() throws -> Date {
        try #require(ISO8601DateFormatter().date(from: now))
    }
}

@Suite("Worldline validators")
struct ValidatorTests {
    @Test("the fixture holds every vendor validator vector, each with its source")
    func fixtureIsComplete() throws {
        let vectors = try ValidatorVectors.load()
        #expect(vectors.cases.count == 106)
        #expect(vectors.expirationDate_window.cases.count == 8)
        #expect(vectors.boletoBancarioRequiredness.cases.count == 8)
        #expect(vectors.cases.allSatisfy { $0.source.contains("Worldline-Global-Collect/connect-sdk-client-") })
        #expect(vectors.cases.filter { $0.till_expected != nil }.allSatisfy { $0.till_reason != nil })
        // Every rule the Client API defines has vendor vectors.
        let rules = Set(vectors.cases.map(\.rule))
        #expect(rules == ["luhn", "expirationDate", "range", "length", "fixedList", "emailAddress",
                          "regularExpression", "residentIdNumber", "iban", "termsAndConditions"])
    }

    @Test("every vendor vector, with now pinned; Swift SDK semantics where the SDKs disagree")
    func vendorVectors() throws {
        let vectors = try ValidatorVectors.load()
        let now = try vectors.pinnedNow()
        var run = 0
        for vector in vectors.cases {
            let rule = try vector.ruleJSON.make()
            #expect(rule.validate(vector.value, now: now) == vector.till,
                    "\(vector.rule) \(vector.value) — \(vector.source)")
            run += 1
        }
        #expect(run == vectors.cases.count)
    }

    @Test("the recorded disagreements are the JS SDK's lower-case x and MMYYYY")
    func disagreements() throws {
        let disagreements = try ValidatorVectors.load().cases.filter { $0.till_expected != nil }
        #expect(disagreements.count == 3)
        #expect(disagreements.allSatisfy { $0.source.contains("connect-sdk-client-js") && $0.till_expected == false })
    }

    @Test("the expiry window: month granularity below, year granularity above (the Swift SDK's own vectors)")
    func expiryWindow() throws {
        let window = try ValidatorVectors.load().expirationDate_window
        let current = window.current.split(separator: "-").compactMap { Int($0) }
        try #require(current.count == 2)
        for vector in window.cases {
            let date = vector.date.split(separator: "-").compactMap { Int($0) }
            try #require(date.count == 2)
            #expect(WorldlineValidationRule.expiryWindowContains(year: date[0], month: date[1],
                                                                 currentYear: current[0], currentMonth: current[1],
                                                                 lastYear: window.last_year) == vector.expected_valid,
                    "\(vector.date) — \(window.source)")
        }
    }

    @Test("expiry dates move with now: this month passes until it ends, +25 years is the limit")
    func expiryAcrossTime() throws {
        let calendar = Calendar(identifier: .gregorian)
        func date(_ year: Int, _ month: Int, _ day: Int) throws -> Date {
            try #require(calendar.date(from: DateComponents(year: year, month: month, day: day, hour: 12)))
        }
        let rule = WorldlineValidationRule.expirationDate
        #expect(rule.validate("0930", now: try date(2030, 9, 15)))
        #expect(!rule.validate("0930", now: try date(2030, 10, 15)))
        #expect(rule.validate("1255", now: try date(2030, 1, 15)))
        #expect(!rule.validate("0156", now: try date(2030, 12, 15)))
        #expect(!rule.validate("0025", now: try date(2025, 1, 15)))
        #expect(!rule.validate("12/30", now: try date(2025, 1, 15)))
    }

    @Test("boleto requiredness: the JS SDK's vectors, through the rule and through the field")
    func boleto() throws {
        let boleto = try ValidatorVectors.load().boletoBancarioRequiredness
        let rule = try ValidatorVectors.RuleJSON(rule: "boletoBancarioRequiredness", attributes: boleto.attributes).make()
        let restrictions = WorldlineDataRestrictions(isRequired: false, validators: [rule])
        for vector in boleto.cases {
            var values: [String: String] = [:]
            values["fiscalNumber"] = vector.fiscalNumber
            let value = vector.value ?? ""
            if let expected = vector.validate {
                #expect(rule.validate(value, values: values) == expected, "\(vector) — \(boleto.source)")
            }
            let errors = restrictions.errors(fieldId: "dummy", value: value, values: values)
            #expect(errors.isEmpty == vector.validateValue, "\(vector) — \(boleto.source)")
            // The Swift SDK's validate(field:in:) reports it as `required`.
            #expect(errors.allSatisfy { $0.messageId == "required" && $0.rule == rule })
        }
    }

    @Test("dataRestrictions from the vendor's resources decode to the rules, in the Swift SDK's order")
    func vendorRestrictions() throws {
        let vectors = try ValidatorVectors.load()
        for vector in vectors.dataRestrictions {
            let data = try JSONEncoder().encode(vector.json)
            let restrictions = try JSONDecoder().decode(WorldlineDataRestrictions.self, from: data)
            #expect(restrictions.isRequired == vector.expected_isRequired, "\(vector.field) — \(vector.source)")
            #expect(restrictions.validators == (try vector.expected_rules.map { try $0.make() }),
                    "\(vector.field) — \(vector.source)")
        }
        #expect(vectors.dataRestrictions.count == 7)
    }

    // MARK: - Decoding (self-made from the Swift SDK's DataRestrictions/Validators decoders)

    private func decode(_ json: String) throws -> WorldlineDataRestrictions {
        try JSONDecoder().decode(WorldlineDataRestrictions.self, from: Data(json.utf8))
    }

    private func decodingPath(_ json: String) -> [String]? {
        do {
            _ = try decode(json)
            return nil
        } catch let error as DecodingError {
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                return context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            case .keyNotFound(let key, let context):
                return (context.codingPath + [key]).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            @unknown default:
                return []
            }
        } catch {
            return []
        }
    }

    @Test("every validator key, the regex and fiscalNumberLengthToValidate aliases, fixed order")
    func decodesEveryRule() throws {
        let restrictions = try decode("""
            {"isRequired": true, "validators": {
              "boletoBancarioRequiredness": {"fiscalNumberLengthToValidate": 14},
              "iban": {}, "termsAndConditions": {}, "regularExpression": {"regex": "^[0-9]+$"},
              "residentIdNumber": {}, "emailAddress": {}, "fixedList": {"allowedValues": ["a", "b"]},
              "length": {"minLength": 1, "maxLength": 5}, "range": {"minValue": 2, "maxValue": 9},
              "expirationDate": {}, "luhn": {}, "someFutureRule": {"anything": [1, 2]}}}
            """)
        #expect(restrictions.isRequired)
        #expect(restrictions.validators == [
            .luhn, .expirationDate, .range(minValue: 2, maxValue: 9), .length(minLength: 1, maxLength: 5),
            .fixedList(allowedValues: ["a", "b"]), .emailAddress, .residentIdNumber, .regularExpression("^[0-9]+$"),
            .termsAndConditions, .iban, .boletoBancarioRequiredness(fiscalNumberLength: 14),
        ])
        #expect(try decode(#"{"validators": {"boletoBancarioRequiredness": {"fiscalNumberLength": 11}}}"#).validators
                == [.boletoBancarioRequiredness(fiscalNumberLength: 11)])
        #expect(try decode("{}") == WorldlineDataRestrictions(isRequired: false, validators: []))
        #expect(try decode(#"{"isRequired": null, "validators": null}"#).validators.isEmpty)
        // Missing numeric attributes are 0, a missing list is empty (the Swift SDK's defaults).
        #expect(try decode(#"{"validators": {"length": {"maxLength": 3}, "fixedList": {}}}"#).validators
                == [.length(minLength: 0, maxLength: 3), .fixedList(allowedValues: [])])
    }

    @Test("the legacy validationRules array, in array order; REQUIRED, TYPE and unknown types are skipped")
    func decodesLegacyArray() throws {
        let restrictions = try decode("""
            {"isRequired": false, "validationRules": [
              {"validationType": "LENGTH", "messageId": "length", "minLength": 2, "maxLength": 4},
              {"validationType": "REQUIRED", "messageId": "required"},
              {"validationType": "LUHN", "messageId": "luhn"},
              {"validationType": "REGULAREXPRESSION", "regex": "\\\\d+"},
              {"validationType": "SOMETHINGNEW"},
              {"validationType": "BOLETOBANCARIOREQUIREDNESS", "fiscalNumberLengthToValidate": 11}]}
            """)
        #expect(restrictions.validators == [
            .length(minLength: 2, maxLength: 4), .luhn, .regularExpression(#"\d+"#),
            .boletoBancarioRequiredness(fiscalNumberLength: 11),
        ])
        // `validators` wins when both are present, as in the Swift SDK.
        #expect(try decode(#"{"validators": {"iban": {}}, "validationRules": [{"validationType": "LUHN"}]}"#).validators
                == [.iban])
    }

    @Test("a known validator with a bad attribute is a DecodingError naming the path")
    func badAttributes() {
        #expect(decodingPath(#"{"validators": {"length": {"minLength": "2", "maxLength": 4}}}"#)
                == ["validators", "length", "minLength"])
        #expect(decodingPath(#"{"validators": {"range": {"minValue": 1.5, "maxValue": 4}}}"#)
                == ["validators", "range", "minValue"])
        #expect(decodingPath(#"{"validators": {"fixedList": {"allowedValues": [1, 2]}}}"#)?.prefix(3)
                == ["validators", "fixedList", "allowedValues"])
        #expect(decodingPath(#"{"validators": {"regularExpression": {"regularExpression": "(["}}}"#)
                == ["validators", "regularExpression", "regularExpression"])
        #expect(decodingPath(#"{"validators": {"regularExpression": {}}}"#)
                == ["validators", "regularExpression", "regularExpression"])
        #expect(decodingPath(#"{"validators": {"boletoBancarioRequiredness": {}}}"#)
                == ["validators", "boletoBancarioRequiredness", "fiscalNumberLength"])
        #expect(decodingPath(#"{"validators": {"luhn": true}}"#) == ["validators", "luhn"])
        #expect(decodingPath(#"{"isRequired": "yes"}"#) == ["isRequired"])
        #expect(decodingPath(#"{"validators": []}"#) == ["validators"])
        #expect(decodingPath(#"{"validationRules": [{"validationType": "LENGTH", "minLength": "x"}]}"#)
                == ["validationRules", "[0]", "minLength"])
        #expect(decodingPath(#"{"validationRules": [{"minLength": 1}]}"#) == ["validationRules", "[0]", "validationType"])
        // Unknown validators are ignored whatever they hold.
        #expect(decodingPath(#"{"validators": {"future": "x"}}"#) == nil)
    }

    // MARK: - Field-level errors (self-made from the Swift SDK's PaymentProductField.validateValue)

    @Test("field errors: required when empty, else every failing rule in order")
    func fieldErrors() throws {
        let now = try ValidatorVectors.load().pinnedNow()
        let card = WorldlineDataRestrictions(isRequired: true, validators: [.luhn, .length(minLength: 12, maxLength: 19)])
        #expect(card.errors(fieldId: "cardNumber", value: "", now: now)
                == [WorldlineValidationError(fieldId: "cardNumber", messageId: "required")])
        #expect(card.errors(fieldId: "cardNumber", value: "4242424242424242", now: now).isEmpty)
        #expect(card.errors(fieldId: "cardNumber", value: "1111", now: now).map(\.messageId) == ["luhn", "length"])
        #expect(card.errors(fieldId: "cardNumber", value: "1111", now: now).map(\.rule)
                == [.luhn, .length(minLength: 12, maxLength: 19)])

        // Not required and empty: nothing is checked.
        let cvv = WorldlineDataRestrictions(isRequired: false,
                                            validators: [.length(minLength: 3, maxLength: 4), .regularExpression("^[0-9]{3}[0-9]?$")])
        #expect(cvv.errors(fieldId: "cvv", value: "").isEmpty)
        #expect(cvv.errors(fieldId: "cvv", value: "12").map(\.messageId) == ["length", "regularExpression"])

        let expiry = WorldlineDataRestrictions(isRequired: true, validators: [.expirationDate])
        #expect(expiry.errors(fieldId: "expiryDate", value: "0625", now: now).isEmpty)
        #expect(expiry.errors(fieldId: "expiryDate", value: "0525", now: now).map(\.messageId) == ["expirationDate"])
    }

    @Test("field errors with boleto requiredness: required iff fiscalNumber has the configured length")
    func boletoFieldErrors() {
        let boleto = WorldlineValidationRule.boletoBancarioRequiredness(fiscalNumberLength: 14)
        let companyName = WorldlineDataRestrictions(isRequired: false, validators: [.length(minLength: 0, maxLength: 40), boleto])
        let company = ["fiscalNumber": "12345678000195"]
        let person = ["fiscalNumber": "12345678909"]
        #expect(companyName.errors(fieldId: "companyName", value: "", values: company)
                == [WorldlineValidationError(fieldId: "companyName", messageId: "required", rule: boleto)])
        #expect(companyName.errors(fieldId: "companyName", value: "", values: person).isEmpty)
        #expect(companyName.errors(fieldId: "companyName", value: "", values: [:]).isEmpty)
        #expect(companyName.errors(fieldId: "companyName", value: "ACME", values: company).isEmpty)
        // As in the Swift SDK, a boleto rule makes the other rules run on an empty value too.
        let strict = WorldlineDataRestrictions(isRequired: false, validators: [.length(minLength: 2, maxLength: 40), boleto])
        #expect(strict.errors(fieldId: "companyName", value: "", values: person).map(\.messageId) == ["length"])
    }

    // MARK: - Rule details (self-made from the Swift SDK's validators)

    @Test("luhn: digits only, empty fails instead of trapping, all zeros passes as in the Swift SDK")
    func luhnDetails() {
        #expect(!WorldlineValidationRule.luhn.validate(""))
        #expect(WorldlineValidationRule.luhn.validate("0000"))
        #expect(!WorldlineValidationRule.luhn.validate("4242 4242 4242 4242"))
        #expect(!WorldlineValidationRule.luhn.validate("42424242424242４2"))
    }

    @Test("regularExpression: exactly one unanchored match")
    func regularExpressionDetails() {
        let rule = WorldlineValidationRule.regularExpression(#"\d{3}"#)
        #expect(rule.validate("a123b"))
        #expect(!rule.validate("123456"))
        #expect(!WorldlineValidationRule.regularExpression("([").validate("(["))
        // The whole value is searched, beyond its character count in UTF-16 units.
        #expect(WorldlineValidationRule.regularExpression("z$").validate("👍👍z"))
    }

    @Test("range, iban, terms, residentIdNumber and fixedList details")
    func otherDetails() {
        let range = WorldlineValidationRule.range(minValue: -5, maxValue: 50)
        #expect(range.validate("-5") && range.validate("50.9") && range.validate("0"))
        #expect(!range.validate("") && !range.validate("5,0") && !range.validate("+5") && !range.validate("1e1"))
        #expect(!range.validate("99999999999999999999999") && !range.validate("-99999999999999999999999"))
        #expect(WorldlineValidationRule.iban.validate("de89 3704 0044 0532 0130 00"))
        #expect(WorldlineValidationRule.iban.validate("GB82 WEST 1234 5698 7654 32"))
        #expect(!WorldlineValidationRule.iban.validate("DE89-3704-0044-0532-0130-00"))
        #expect(!WorldlineValidationRule.iban.validate("GB82WEST12345698765433"))
        #expect(WorldlineValidationRule.termsAndConditions.validate("true"))
        #expect(!WorldlineValidationRule.termsAndConditions.validate("TRUE"))
        #expect(!WorldlineValidationRule.residentIdNumber.validate("+12345678901234"))
        #expect(!WorldlineValidationRule.fixedList(allowedValues: ["a"]).validate("A"))
        #expect(WorldlineValidationRule.boletoBancarioRequiredness(fiscalNumberLength: 3).messageId == "fiscalNumberBoletoBancario")
    }
}
