import Foundation

/// One of a payment product field's validators, as the Client API defines them
/// (`dataRestrictions.validators`).
public enum WorldlineValidationRule: Sendable, Hashable {
    case luhn
    case expirationDate
    case range(minValue: Int, maxValue: Int)
    case length(minLength: Int, maxLength: Int)
    case fixedList(allowedValues: [String])
    case emailAddress
    case regularExpression(String)
    case residentIdNumber
    case iban
    case termsAndConditions
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
public struct WorldlineDataRestrictions: Sendable, Hashable, Decodable {
    public var isRequired: Bool
    public var validators: [WorldlineValidationRule]

    public init(isRequired: Bool, validators: [WorldlineValidationRule]) {
        self.isRequired = isRequired
        self.validators = validators
    }

    public init(from decoder: any Decoder) throws {
        // implemented in the form work
        self.init(isRequired: false, validators: [])
    }
}

/// Why a field's value failed: the field and the message id to localize (`"required"`, `"luhn"` …).
public struct WorldlineValidationError: Sendable, Hashable, Error {
    public var fieldId: String
    public var messageId: String
    /// The rule that failed; `nil` for `required`.
    public var rule: WorldlineValidationRule?

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
        true // implemented in the form work
    }
}
