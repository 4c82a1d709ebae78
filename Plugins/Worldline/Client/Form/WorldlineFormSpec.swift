import Foundation
import Till

extension WorldlinePaymentProduct {
    /// The product's fields as Till's generic ``FormSpec``, so an app UI that renders a `FormSpec`
    /// shows a Worldline product without knowing Worldline.
    ///
    /// - Labels: the API's texts (the Client API was called with the customer's locale), else the field
    ///   id; placeholders likewise.
    /// - Kinds: the lookup field is a card number; `expirydate` an expiry date; a `list` element a choice
    ///   (its `valueMapping`); `boolean` and `date` elements likewise; an obfuscated numeric field
    ///   (the CVV) a security code; the keyboard hint decides email, phone and number; else text.
    /// - Validators: one ``FieldValidator`` per rule, named by its message id, with the rule's
    ///   parameters (`minLength`/`maxLength`, `minValue`/`maxValue`, `pattern`, `allowedValues` joined
    ///   with `,`, `fiscalNumberLength`).
    /// - Parameter labels: the app's texts (the API's labels come first).
    public func formSpec(labels: WorldlineLabels = .init()) -> FormSpec {
        FormSpec(fields: fields.map { Self.formField($0, labels: labels) })
    }

    static func formField(_ field: WorldlinePaymentProductField, labels: WorldlineLabels) -> FormField {
        let hints = field.displayHints
        let mapping = hints?.formElement.valueMapping ?? []
        var allowed: [String] = []
        var maxLength: Int?
        let validators = field.dataRestrictions.validators.map { rule -> FieldValidator in
            switch rule {
            case .length(let minLength, let maxLength_):
                maxLength = maxLength_
                return FieldValidator("length", parameters: ["minLength": String(minLength), "maxLength": String(maxLength_)])
            case .range(let minValue, let maxValue):
                return FieldValidator("range", parameters: ["minValue": String(minValue), "maxValue": String(maxValue)])
            case .regularExpression(let pattern):
                return FieldValidator("regularExpression", parameters: ["pattern": pattern])
            case .fixedList(let values):
                allowed = values
                return FieldValidator("fixedList", parameters: ["allowedValues": values.joined(separator: ",")])
            case .boletoBancarioRequiredness(let length):
                return FieldValidator("boletoBancarioRequiredness", parameters: ["fiscalNumberLength": String(length)])
            case .luhn, .expirationDate, .emailAddress, .residentIdNumber, .iban, .termsAndConditions:
                return FieldValidator(rule.messageId)
            }
        }
        let kind = Self.kind(of: field)
        return FormField(id: field.id, labelKey: labels.label(of: field), kind: kind, required: field.dataRestrictions.isRequired,
                         maxLength: maxLength, options: mapping.isEmpty ? allowed : mapping.map(\.value),
                         sensitive: kind == .cardNumber || kind == .securityCode || (hints?.obfuscate ?? false),
                         mask: hints?.mask, validators: validators, obfuscate: hints?.obfuscate ?? false,
                         displayOrder: hints?.displayOrder, choices: mapping.map { FormChoice(value: $0.value, label: $0.label) },
                         placeholderKey: hints?.placeholderLabel)
    }

    /// The generic kind of a Worldline field.
    static func kind(of field: WorldlinePaymentProductField) -> FormField.Kind {
        let hints = field.displayHints
        if field.usedForLookup || field.id == "cardNumber" { return .cardNumber }
        if field.type == .expiryDate { return .expiryDate }
        switch hints?.formElement.type {
        case .list?: return .choice
        case .boolean?: return .boolean
        case .date?: return .date
        default: break
        }
        if field.type == .boolean { return .boolean }
        if field.type == .date { return .date }
        let numeric = field.type == .numericString || field.type == .integer || hints?.preferredInputType == .integerKeyboard
        if numeric && (hints?.obfuscate ?? false || field.id == "cvv") { return .securityCode }
        switch hints?.preferredInputType {
        case .emailAddressKeyboard?: return .email
        case .phoneNumberKeyboard?: return .phone
        default: break
        }
        return numeric ? .number : .text
    }
}
