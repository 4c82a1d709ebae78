import Foundation

// The rules follow the vendor's Swift SDK (`connect-sdk-client-swift` 7.0.0, commit 68672461,
// `WorldlineConnectKit/Models/Validators/*.swift`, `Models/PaymentProduct/Field/DataRestrictions.swift` and
// `PaymentProductField.swift`). Where the JavaScript SDK (`connect-sdk-client-js` 6.0.5, commit 2ee9d240,
// `src/validation-rule/rules/*.ts`) reads a rule differently, the Swift reading is kept and the difference is
// named at the rule. Where the Swift SDK would trap or is plainly wrong, the deviation is named too.

/// One of a payment product field's validators, as the Client API defines them
/// (`dataRestrictions.validators`).
public enum WorldlineValidationRule: Sendable, Hashable {
    /// Luhn checksum over ASCII digits only (any other character fails).
    case luhn
    /// `MMYY`, from this month up to 25 years ahead.
    case expirationDate
    /// An integer (a fraction is truncated) within `minValue...maxValue`.
    case range(minValue: Int, maxValue: Int)
    /// `minLength...maxLength` characters.
    case length(minLength: Int, maxLength: Int)
    /// Exactly one of `allowedValues`.
    case fixedList(allowedValues: [String])
    /// The gateway's e-mail pattern.
    case emailAddress
    /// The pattern occurs exactly once in the value (it is not anchored).
    case regularExpression(String)
    /// A Chinese resident identity number: 15 digits, or 17 digits and an ISO 7064 MOD 11-2 check
    /// character (`X` for 10).
    case residentIdNumber
    /// An IBAN: format and mod-97 check, ignoring white space and letter case.
    case iban
    /// The terms were accepted: the value is `"true"`.
    case termsAndConditions
    /// The field is required when the `fiscalNumber` field's value has `fiscalNumberLength` characters.
    case boletoBancarioRequiredness(fiscalNumberLength: Int)

    /// The message id an app localizes for a failure of this rule (`"luhn"`, `"length"` …).
    public var messageId: String {
        switch self {
        case .luhn: "luhn"
        case .expirationDate: "expirationDate"
        case .range: "range"
        case .length: "length"
        case .fixedList: "fixedList"
        case .emailAddress: "emailAddress"
        case .regularExpression: "regularExpression"
        case .residentIdNumber: "residentIdNumber"
        case .iban: "iban"
        case .termsAndConditions: "termsAndConditions"
        case .boletoBancarioRequiredness: "fiscalNumberBoletoBancario"
        }
    }
}

/// A field's `dataRestrictions`: whether it is required, and its validators.
///
/// Decoding reads `{"isRequired": …, "validators": {"luhn": {}, "length": {"minLength": …, "maxLength": …}, …}}`
/// and keeps the validators in the Swift SDK's fixed order (luhn, expirationDate, range, length, fixedList,
/// emailAddress, residentIdNumber, regularExpression, termsAndConditions, iban, boletoBancarioRequiredness),
/// whatever the JSON order; the SDK's `ClientApiTestCase.testPaymentProductWithId` asserts that order. It
/// also reads the aliases the Swift SDK reads (`regex` for `regularExpression`, `fiscalNumberLengthToValidate`
/// for `fiscalNumberLength`) and, when `validators` is absent, the legacy array
/// `"validationRules": [{"validationType": "LENGTH", "minLength": …}, …]` in array order.
///
/// Unlike the Swift SDK, which skips whatever it cannot read, a known validator with a bad attribute
/// (a wrong type, a pattern that does not compile, a missing `fiscalNumberLength`) is a `DecodingError`
/// whose coding path names it. An unknown validator is ignored: the gateway may add rules. Missing
/// `minLength`/`maxLength`/`minValue`/`maxValue` are 0 and a missing `allowedValues` is empty, as in the
/// Swift SDK.
public struct WorldlineDataRestrictions: Sendable, Hashable, Decodable {
    /// Whether the customer must fill the field.
    public var isRequired: Bool
    /// The field's rules, in the order they are checked.
    public var validators: [WorldlineValidationRule]

    /// Restrictions built in code.
    public init(isRequired: Bool, validators: [WorldlineValidationRule]) {
        self.isRequired = isRequired
        self.validators = validators
    }

    private enum Keys: String, CodingKey {
        case isRequired, validators, validationRules
    }

    /// The validator keys, in the order the Swift SDK's `Validators` decodes them.
    private enum RuleKey: String, CodingKey, CaseIterable {
        case luhn, expirationDate, range, length, fixedList, emailAddress, residentIdNumber, regularExpression,
             termsAndConditions, iban, boletoBancarioRequiredness

        /// The rule a legacy `validationType` names (the Swift SDK's `ValidationType` raw values); `nil` for
        /// `REQUIRED` and `TYPE` (the SDK turns both into a rule that always passes) and for unknown types.
        init?(validationType: String) {
            switch validationType {
            case "LUHN": self = .luhn
            case "EXPIRATIONDATE": self = .expirationDate
            case "RANGE": self = .range
            case "LENGTH": self = .length
            case "FIXEDLIST": self = .fixedList
            case "EMAILADDRESS": self = .emailAddress
            case "RESIDENTIDNUMBER": self = .residentIdNumber
            case "REGULAREXPRESSION": self = .regularExpression
            case "TERMSANDCONDITIONS": self = .termsAndConditions
            case "IBAN": self = .iban
            case "BOLETOBANCARIOREQUIREDNESS": self = .boletoBancarioRequiredness
            default: return nil
            }
        }
    }

    private enum AttributeKey: String, CodingKey {
        case minLength, maxLength, minValue, maxValue, allowedValues, regularExpression, regex
        case fiscalNumberLength, fiscalNumberLengthToValidate, validationType
    }

    /// Reads the Client API's `dataRestrictions` object (see the type's documentation).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let isRequired = try container.decodeIfPresent(Bool.self, forKey: .isRequired) ?? false
        var rules: [WorldlineValidationRule] = []
        if container.contains(.validators), try !container.decodeNil(forKey: .validators) {
            let validators = try container.nestedContainer(keyedBy: RuleKey.self, forKey: .validators)
            for key in RuleKey.allCases where validators.contains(key) {
                if try validators.decodeNil(forKey: key) { continue }
                let attributes = try validators.nestedContainer(keyedBy: AttributeKey.self, forKey: key)
                rules.append(try Self.rule(key, attributes))
            }
        } else if container.contains(.validationRules), try !container.decodeNil(forKey: .validationRules) {
            var array = try container.nestedUnkeyedContainer(forKey: .validationRules)
            while !array.isAtEnd {
                let entry = try array.nestedContainer(keyedBy: AttributeKey.self)
                let type = try entry.decode(String.self, forKey: .validationType)
                guard let key = RuleKey(validationType: type) else { continue }
                rules.append(try Self.rule(key, entry))
            }
        }
        self.init(isRequired: isRequired, validators: rules)
    }

    private static func rule(_ key: RuleKey, _ attributes: KeyedDecodingContainer<AttributeKey>) throws
        -> WorldlineValidationRule
    {
        switch key {
        case .luhn: return .luhn
        case .expirationDate: return .expirationDate
        case .emailAddress: return .emailAddress
        case .residentIdNumber: return .residentIdNumber
        case .termsAndConditions: return .termsAndConditions
        case .iban: return .iban
        case .range:
            return .range(minValue: try integer(.minValue, in: attributes) ?? 0,
                          maxValue: try integer(.maxValue, in: attributes) ?? 0)
        case .length:
            return .length(minLength: try integer(.minLength, in: attributes) ?? 0,
                           maxLength: try integer(.maxLength, in: attributes) ?? 0)
        case .fixedList:
            return .fixedList(allowedValues: try attributes.decodeIfPresent([String].self, forKey: .allowedValues) ?? [])
        case .regularExpression:
            let patternKey: AttributeKey = attributes.contains(.regularExpression) ? .regularExpression : .regex
            guard attributes.contains(patternKey) else {
                throw DecodingError.keyNotFound(AttributeKey.regularExpression, DecodingError.Context(
                    codingPath: attributes.codingPath,
                    debugDescription: "A regularExpression validator needs a regularExpression (or regex) pattern."))
            }
            let pattern = try attributes.decode(String.self, forKey: patternKey)
            guard (try? NSRegularExpression(pattern: pattern)) != nil else {
                throw DecodingError.dataCorruptedError(forKey: patternKey, in: attributes,
                                                       debugDescription: "The pattern does not compile.")
            }
            return .regularExpression(pattern)
        case .boletoBancarioRequiredness:
            let lengthKey: AttributeKey = attributes.contains(.fiscalNumberLength) ? .fiscalNumberLength
                : .fiscalNumberLengthToValidate
            guard attributes.contains(lengthKey) else {
                throw DecodingError.keyNotFound(AttributeKey.fiscalNumberLength, DecodingError.Context(
                    codingPath: attributes.codingPath,
                    debugDescription: "A boletoBancarioRequiredness validator needs fiscalNumberLength."))
            }
            guard let length = try integer(lengthKey, in: attributes) else {
                throw DecodingError.valueNotFound(Int.self, DecodingError.Context(
                    codingPath: attributes.codingPath + [lengthKey],
                    debugDescription: "A boletoBancarioRequiredness validator needs fiscalNumberLength."))
            }
            return .boletoBancarioRequiredness(fiscalNumberLength: length)
        }
    }

    /// A whole-number attribute, `nil` when absent or null. A fraction (`1.5`) is a `DecodingError` naming
    /// the attribute: some JSON decoders report it without a coding path, or with an error of their own.
    private static func integer(_ key: AttributeKey, in attributes: KeyedDecodingContainer<AttributeKey>) throws -> Int? {
        guard attributes.contains(key), try !attributes.decodeNil(forKey: key) else { return nil }
        do {
            return try attributes.decode(Int.self, forKey: key)
        } catch let error as DecodingError {
            guard case .dataCorrupted = error else { throw error }
            throw DecodingError.dataCorruptedError(forKey: key, in: attributes, debugDescription: "Expected a whole number.")
        } catch {
            // swift-corelibs-foundation throws its own error type for a number `Int` cannot hold.
            throw DecodingError.dataCorruptedError(forKey: key, in: attributes, debugDescription: "Expected a whole number.")
        }
    }

    /// Why `value` (unmasked) is not acceptable for the field `fieldId`; empty when it is.
    ///
    /// As the Swift SDK's `PaymentProductField.validateValue(value:)`: a required field left empty has the
    /// one error `required`; otherwise, when the field is required, has a value, or carries a
    /// `boletoBancarioRequiredness` rule, every rule is checked and each failure is an error with the
    /// rule's message id. A `boletoBancarioRequiredness` rule fails as the Swift SDK's
    /// `validate(field:in:)` path does: with message id `required`, when `values["fiscalNumber"]` has
    /// exactly `fiscalNumberLength` characters and `value` is empty. `values` are the other fields'
    /// unmasked values, `now` the date expiry dates are compared with.
    public func errors(fieldId: String, value: String, values: [String: String] = [:], now: Date = Date())
        -> [WorldlineValidationError]
    {
        if isRequired && value.isEmpty {
            return [WorldlineValidationError(fieldId: fieldId, messageId: "required")]
        }
        let variableRequiredness = validators.contains {
            if case .boletoBancarioRequiredness = $0 { return true }
            return false
        }
        guard isRequired || !value.isEmpty || variableRequiredness else { return [] }
        return validators.compactMap { rule in
            if rule.validate(value, values: values, now: now) { return nil }
            if case .boletoBancarioRequiredness = rule {
                return WorldlineValidationError(fieldId: fieldId, messageId: "required", rule: rule)
            }
            return WorldlineValidationError(fieldId: fieldId, messageId: rule.messageId, rule: rule)
        }
    }
}

/// Why a field's value failed: the field and the message id to localize (`"required"`, `"luhn"` …).
public struct WorldlineValidationError: Sendable, Hashable, Error {
    /// The payment product field's id (`cardNumber`).
    public var fieldId: String
    /// The message id to localize: a rule's `messageId`, or `required`.
    public var messageId: String
    /// The rule that failed; `nil` when a required field is empty, the boleto rule when its requiredness
    /// applies (message id `required`).
    public var rule: WorldlineValidationRule?

    /// An error for `fieldId`.
    public init(fieldId: String, messageId: String, rule: WorldlineValidationRule? = nil) {
        self.fieldId = fieldId
        self.messageId = messageId
        self.rule = rule
    }
}

extension WorldlineValidationRule {
    /// Whether `value` (unmasked) passes this rule; `values` are the other fields' unmasked values
    /// (boleto requiredness reads `fiscalNumber`), `now` the date expiry dates are compared with.
    public func validate(_ value: String, values: [String: String] = [:], now: Date = Date()) -> Bool {
        switch self {
        case .luhn:
            return Self.luhn(value)
        case .expirationDate:
            return Self.expirationDate(value, now: now)
        case .range(let minValue, let maxValue):
            guard let number = Self.truncatedInteger(value) else { return false }
            return minValue <= number && number <= maxValue
        case .length(let minLength, let maxLength):
            return minLength <= value.count && value.count <= maxLength
        case .fixedList(let allowedValues):
            return allowedValues.contains(value)
        case .emailAddress:
            return Self.matchCount(of: Self.emailPattern, in: value) == 1
        case .regularExpression(let pattern):
            // Swift SDK: exactly one match of the unanchored pattern (so `\d{3}` refuses "123456", two
            // matches). JS accepts any match. The Swift SDK searches only the first `value.count` UTF-16
            // units; the whole value is searched here.
            return Self.matchCount(of: pattern, in: value) == 1
        case .residentIdNumber:
            return Self.residentIdNumber(value)
        case .iban:
            return Self.iban(value)
        case .termsAndConditions:
            return value == "true"
        case .boletoBancarioRequiredness(let fiscalNumberLength):
            // Swift SDK `ValidatorBoletoBancarioRequiredness.validate(field:in:)`: an absent fiscalNumber
            // never makes the field required.
            guard let fiscalNumber = values["fiscalNumber"] else { return true }
            return !(fiscalNumber.count == fiscalNumberLength && value.isEmpty)
        }
    }

    /// The Swift SDK's `ValidatorEmailAddress` pattern (JS uses the same one, case-insensitively).
    static let emailPattern = #"^[^@\.]+(\.[^@\.]+)*@([^@\.]+\.)*[^@\.]+\.[^@\.][^@\.]+$"#

    static func matchCount(of pattern: String, in value: String) -> Int {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return 0 }
        return expression.numberOfMatches(in: value, range: NSRange(value.startIndex..., in: value))
    }

    /// Luhn as the Swift SDK computes it: from the right, every second digit doubled and digit-summed,
    /// valid when the total is a multiple of 10; any non-digit fails (JS strips non-digits first and also
    /// refuses an all-zero total). The Swift SDK traps on an empty value; it fails here.
    static func luhn(_ value: String) -> Bool {
        guard !value.isEmpty else { return false }
        var total = 0
        for (position, character) in value.reversed().enumerated() {
            guard character.isASCII, let digit = character.wholeNumberValue else { return false }
            if position % 2 == 0 {
                total += digit
            } else {
                let doubled = digit * 2
                total += doubled % 10 + doubled / 10
            }
        }
        return total % 10 == 0
    }

    /// Exactly four ASCII digits `MMYY` with a month 01–12; the century is the current year's. Valid from
    /// the current month (compared by month) up to the current year + 25 (compared by year), in the
    /// Gregorian calendar of the device's time zone, as the Swift SDK's `ValidatorExpirationDate`. JS also
    /// accepts `MMYYYY` and strips non-digits first (`"12/30"`); neither is accepted here.
    static func expirationDate(_ value: String, now: Date) -> Bool {
        let characters = Array(value)
        guard characters.count == 4, characters.allSatisfy({ $0.isASCII && $0.isNumber }),
              let month = Int(String(characters[0..<2])), (1...12).contains(month),
              let shortYear = Int(String(characters[2..<4]))
        else { return false }
        let calendar = Calendar(identifier: .gregorian)
        let today = calendar.dateComponents([.year, .month], from: now)
        guard let currentYear = today.year, let currentMonth = today.month else { return false }
        let year = currentYear / 100 * 100 + shortYear
        return expiryWindowContains(year: year, month: month, currentYear: currentYear, currentMonth: currentMonth,
                                    lastYear: currentYear + 25)
    }

    /// The Swift SDK's `validateDateIsBetween`: not before the current month, not after `lastYear`
    /// (compared by year only).
    static func expiryWindowContains(year: Int, month: Int, currentYear: Int, currentMonth: Int, lastYear: Int)
        -> Bool
    {
        (year, month) >= (currentYear, currentMonth) && year <= lastYear
    }

    /// The value as an integer, a fraction truncated: an optional `-`, ASCII digits, optionally `.` and
    /// digits. The Swift SDK reads it with the device locale's `NumberFormatter` (so the same value could
    /// pass on one device and fail on another); this reading does not depend on the locale. Values beyond
    /// `Int` saturate, which puts them outside any range below `Int.max`.
    static func truncatedInteger(_ value: String) -> Int? {
        var rest = Substring(value)
        let negative = rest.first == "-"
        if negative { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return nil
        }
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        }
        guard let magnitude = Int(whole) else { return negative ? Int.min : Int.max }
        return negative ? -magnitude : magnitude
    }

    /// 15 ASCII digits, or 18 characters whose first 17 are ASCII digits and whose last is the ISO 7064
    /// MOD 11-2 check character (weights `2^(17-i) mod 11`, check `(12 - sum mod 11) mod 11`, 10 written
    /// `X`). Only an upper-case `X` is accepted, as in the Swift SDK (JS also accepts `x`). The Swift SDK
    /// accepts any 15 characters `Int(_:)` reads (a leading `+` or `-`) and counts a non-digit among the
    /// first 17 as 0; both are refused here, as in JS.
    static func residentIdNumber(_ value: String) -> Bool {
        let characters = Array(value)
        let isDigit: (Character) -> Bool = { $0.isASCII && $0.isNumber }
        switch characters.count {
        case 15:
            return characters.allSatisfy(isDigit)
        case 18:
            guard characters[0..<17].allSatisfy(isDigit) else { return false }
            var sum = 0
            for index in 0..<17 {
                let weight = (1 << (17 - index)) % 11
                sum += weight * (characters[index].wholeNumberValue ?? 0)
            }
            let check = (12 - sum % 11) % 11
            if check == 10 { return characters[17] == "X" }
            return isDigit(characters[17]) && characters[17].wholeNumberValue == check
        default:
            return false
        }
    }

    /// White space and line breaks removed and upper-cased (the Swift SDK; JS strips every non-word
    /// character), the format `^[A-Z]{2}[0-9]{2}[A-Z0-9]{4}[0-9]{7}([A-Z0-9]?){0,16}$`, then the first four
    /// characters moved to the end, letters read as 10…35 and the number taken mod 97, which must be 1.
    static func iban(_ value: String) -> Bool {
        let stripped = String(value.filter { !$0.isWhitespace && !$0.isNewline }).uppercased()
        guard matchCount(of: #"^[A-Z]{2}[0-9]{2}[A-Z0-9]{4}[0-9]{7}([A-Z0-9]?){0,16}$"#, in: stripped) == 1 else {
            return false
        }
        let rotated = stripped.dropFirst(4) + stripped.prefix(4)
        var remainder = 0
        for character in rotated {
            guard let scalar = character.unicodeScalars.first, character.unicodeScalars.count == 1 else { return false }
            let digits: Int
            switch scalar.value {
            case 48...57: digits = Int(scalar.value) - 48
            case 65...90: digits = Int(scalar.value) - 55
            default: return false
            }
            remainder = (remainder * (digits >= 10 ? 100 : 10) + digits) % 97
        }
        return remainder == 1
    }
}
