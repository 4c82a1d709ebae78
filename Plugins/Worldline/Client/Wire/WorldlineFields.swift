import Foundation

// Payment product fields and accounts on file. Keys from the Swift client SDK 7.0.0:
// `Models/PaymentProduct/Field/PaymentProductField.swift`, `FieldType.swift`,
// `Field/DisplayHints/{PaymentProductFieldDisplayHints,FormElement,FormElementType,ValueMappingItem,
// DisplayElement,DisplayElementType,ToolTip,PreferredInputType}.swift`, and
// `Models/AccountOnFile/**`. `wildcardMask` is the JavaScript SDK's (`src/PaymentProductField.ts`).

/// A payment product field's `type`. Open: a value this version does not know is kept.
public struct WorldlineFieldType: WorldlineOpenValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let string: Self = "string"
    public static let integer: Self = "integer"
    /// `MMYY`.
    public static let expiryDate: Self = "expirydate"
    public static let numericString: Self = "numericstring"
    public static let boolean: Self = "boolean"
    public static let date: Self = "date"
}

/// `displayHints.formElement.type`: how to render the field. Open.
public struct WorldlineFormElementType: WorldlineOpenValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let text: Self = "text"
    /// One of `valueMapping`.
    public static let list: Self = "list"
    public static let currency: Self = "currency"
    public static let boolean: Self = "boolean"
    public static let date: Self = "date"
}

/// `displayHints.preferredInputType`: the keyboard to show. Open; absent is `NoKeyboard` as in the Swift SDK.
public struct WorldlineInputType: WorldlineOpenValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let stringKeyboard: Self = "StringKeyboard"
    public static let integerKeyboard: Self = "IntegerKeyboard"
    public static let emailAddressKeyboard: Self = "EmailAddressKeyboard"
    public static let phoneNumberKeyboard: Self = "PhoneNumberKeyboard"
    public static let dateKeyboard: Self = "DateKeyboard"
    public static let noKeyboard: Self = "NoKeyboard"
}

/// One display element of a value mapping (`{id, type, value}`); `type` is `STRING`, `INTEGER`,
/// `CURRENCY`, `PERCENTAGE` or `URI`, kept as sent.
public struct WorldlineDisplayElement: Sendable, Hashable, Codable {
    public var id: String
    public var type: String
    public var value: String

    /// An element from its parts.
    public init(id: String, type: String, value: String) {
        self.id = id
        self.type = type
        self.value = value
    }
}

/// One choice of a `list` field: the value to send and how to show it.
public struct WorldlineValueMapping: Sendable, Hashable, Codable {
    /// The value the field takes when this is chosen.
    public var value: String
    /// The name as sent, if sent.
    public var displayName: String?
    public var displayElements: [WorldlineDisplayElement]

    /// A choice from its parts.
    public init(value: String, displayName: String? = nil, displayElements: [WorldlineDisplayElement] = []) {
        self.value = value
        self.displayName = displayName
        self.displayElements = displayElements
    }

    /// The name to show: `displayName`, or (as the Swift SDK reads it) the display element with id
    /// `displayName`, or the value itself.
    public var label: String {
        if let displayName, !displayName.isEmpty { return displayName }
        return displayElements.first { $0.id == "displayName" }?.value ?? value
    }

    private enum CodingKeys: String, CodingKey { case value, displayName, displayElements }

    /// Decodes, taking absent display elements as none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(value: try c.decode(String.self, forKey: .value),
                  displayName: try c.decodeIfPresent(String.self, forKey: .displayName),
                  displayElements: try c.decodeIfPresent([WorldlineDisplayElement].self, forKey: .displayElements) ?? [])
    }
}

/// `displayHints.formElement`: the element type and, for lists, the choices.
public struct WorldlineFormElement: Sendable, Hashable, Codable {
    public var type: WorldlineFormElementType
    public var valueMapping: [WorldlineValueMapping]

    /// An element from its parts.
    public init(type: WorldlineFormElementType, valueMapping: [WorldlineValueMapping] = []) {
        self.type = type
        self.valueMapping = valueMapping
    }

    private enum CodingKeys: String, CodingKey { case type, valueMapping }

    /// Decodes, taking an absent `valueMapping` as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(type: try c.decode(WorldlineFormElementType.self, forKey: .type),
                  valueMapping: try c.decodeIfPresent([WorldlineValueMapping].self, forKey: .valueMapping) ?? [])
    }
}

/// A field's tooltip: an image path (relative to the asset URL) and a label.
public struct WorldlineTooltip: Sendable, Hashable, Codable {
    public var image: String?
    public var label: String?

    /// A tooltip from its parts.
    public init(image: String? = nil, label: String? = nil) {
        self.image = image
        self.label = label
    }
}

/// A field's `displayHints`.
public struct WorldlineFieldDisplayHints: Sendable, Hashable, Codable {
    /// Show the field even when an account on file is used.
    public var alwaysShow: Bool
    public var displayOrder: Int?
    public var formElement: WorldlineFormElement
    /// The display mask (`{{9999}} {{9999}}`), see ``WorldlineMask``.
    public var mask: String?
    /// Hide what is typed (a CVV).
    public var obfuscate: Bool
    public var placeholderLabel: String?
    public var tooltip: WorldlineTooltip?
    /// The label in the locale the API was called with.
    public var label: String?
    /// A link to show beside the field (terms and conditions), as sent.
    public var link: String?
    public var preferredInputType: WorldlineInputType
    /// JavaScript SDK only: the mask with every placeholder a wildcard.
    public var wildcardMask: String?

    /// Hints from their parts.
    public init(alwaysShow: Bool = false, displayOrder: Int? = nil, formElement: WorldlineFormElement = .init(type: .text),
                mask: String? = nil, obfuscate: Bool = false, placeholderLabel: String? = nil,
                tooltip: WorldlineTooltip? = nil, label: String? = nil, link: String? = nil,
                preferredInputType: WorldlineInputType = .noKeyboard, wildcardMask: String? = nil) {
        self.alwaysShow = alwaysShow
        self.displayOrder = displayOrder
        self.formElement = formElement
        self.mask = mask
        self.obfuscate = obfuscate
        self.placeholderLabel = placeholderLabel
        self.tooltip = tooltip
        self.label = label
        self.link = link
        self.preferredInputType = preferredInputType
        self.wildcardMask = wildcardMask
    }

    private enum CodingKeys: String, CodingKey {
        case alwaysShow, displayOrder, formElement, mask, obfuscate, placeholderLabel, tooltip, label, link,
             preferredInputType, wildcardMask
    }

    /// Decodes; `formElement` is required (as in the Swift SDK), the rest takes its default when absent.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(alwaysShow: try c.decodeIfPresent(Bool.self, forKey: .alwaysShow) ?? false,
                  displayOrder: try c.decodeIfPresent(Int.self, forKey: .displayOrder),
                  formElement: try c.decode(WorldlineFormElement.self, forKey: .formElement),
                  mask: try c.decodeIfPresent(String.self, forKey: .mask),
                  obfuscate: try c.decodeIfPresent(Bool.self, forKey: .obfuscate) ?? false,
                  placeholderLabel: try c.decodeIfPresent(String.self, forKey: .placeholderLabel),
                  tooltip: try c.decodeIfPresent(WorldlineTooltip.self, forKey: .tooltip),
                  label: try c.decodeIfPresent(String.self, forKey: .label),
                  link: try c.decodeIfPresent(String.self, forKey: .link),
                  preferredInputType: try c.decodeIfPresent(WorldlineInputType.self, forKey: .preferredInputType) ?? .noKeyboard,
                  wildcardMask: try c.decodeIfPresent(String.self, forKey: .wildcardMask))
    }
}

/// One field of a payment product (`cardNumber`, `expiryDate`, `cvv`, …).
public struct WorldlinePaymentProductField: Sendable, Hashable, Codable, Identifiable {
    public var id: String
    public var type: WorldlineFieldType
    /// The field whose first digits the IIN lookup takes (the card number).
    public var usedForLookup: Bool
    /// Required or not, and the validators.
    public var dataRestrictions: WorldlineDataRestrictions
    public var displayHints: WorldlineFieldDisplayHints?

    /// A field from its parts.
    public init(id: String, type: WorldlineFieldType = .string, usedForLookup: Bool = false,
                dataRestrictions: WorldlineDataRestrictions = .init(isRequired: false, validators: []),
                displayHints: WorldlineFieldDisplayHints? = nil) {
        self.id = id
        self.type = type
        self.usedForLookup = usedForLookup
        self.dataRestrictions = dataRestrictions
        self.displayHints = displayHints
    }

    /// The display mask, if any.
    public var mask: WorldlineMask? { displayHints?.mask.map(WorldlineMask.init) }

    private enum CodingKeys: String, CodingKey { case id, type, usedForLookup, dataRestrictions, displayHints }

    /// Decodes; an absent `type` is `string` and an absent `dataRestrictions` is "optional, no validators",
    /// as in the Swift SDK.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(String.self, forKey: .id),
                  type: try c.decodeIfPresent(WorldlineFieldType.self, forKey: .type) ?? .string,
                  usedForLookup: try c.decodeIfPresent(Bool.self, forKey: .usedForLookup) ?? false,
                  dataRestrictions: try c.decodeIfPresent(WorldlineDataRestrictions.self, forKey: .dataRestrictions)
                      ?? .init(isRequired: false, validators: []),
                  displayHints: try c.decodeIfPresent(WorldlineFieldDisplayHints.self, forKey: .displayHints))
    }

    /// Encodes the field as the Client API sends it (validators under the Swift SDK's keys).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(type, forKey: .type)
        try c.encode(usedForLookup, forKey: .usedForLookup)
        try c.encode(WireDataRestrictions(dataRestrictions), forKey: .dataRestrictions)
        try c.encodeIfPresent(displayHints, forKey: .displayHints)
    }

    /// `fields` ordered by display order (none last), ties as listed.
    static func displayOrdered(_ fields: [WorldlinePaymentProductField]) -> [WorldlinePaymentProductField] {
        fields.enumerated()
            .sorted { ($0.element.displayHints?.displayOrder ?? Int.max, $0.offset) < ($1.element.displayHints?.displayOrder ?? Int.max, $1.offset) }
            .map(\.element)
    }
}

/// `dataRestrictions` written back in the Client API's shape: `{isRequired, validators: {luhn: {}, length: {…}}}`.
private struct WireDataRestrictions: Encodable {
    let restrictions: WorldlineDataRestrictions
    init(_ restrictions: WorldlineDataRestrictions) { self.restrictions = restrictions }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(restrictions.isRequired, forKey: Key("isRequired"))
        var validators = c.nestedContainer(keyedBy: Key.self, forKey: Key("validators"))
        for rule in restrictions.validators {
            switch rule {
            case .luhn: _ = validators.nestedContainer(keyedBy: Key.self, forKey: Key("luhn"))
            case .expirationDate: _ = validators.nestedContainer(keyedBy: Key.self, forKey: Key("expirationDate"))
            case .emailAddress: _ = validators.nestedContainer(keyedBy: Key.self, forKey: Key("emailAddress"))
            case .residentIdNumber: _ = validators.nestedContainer(keyedBy: Key.self, forKey: Key("residentIdNumber"))
            case .iban: _ = validators.nestedContainer(keyedBy: Key.self, forKey: Key("iban"))
            case .termsAndConditions: _ = validators.nestedContainer(keyedBy: Key.self, forKey: Key("termsAndConditions"))
            case .range(let minValue, let maxValue):
                var r = validators.nestedContainer(keyedBy: Key.self, forKey: Key("range"))
                try r.encode(minValue, forKey: Key("minValue"))
                try r.encode(maxValue, forKey: Key("maxValue"))
            case .length(let minLength, let maxLength):
                var r = validators.nestedContainer(keyedBy: Key.self, forKey: Key("length"))
                try r.encode(minLength, forKey: Key("minLength"))
                try r.encode(maxLength, forKey: Key("maxLength"))
            case .fixedList(let allowedValues):
                var r = validators.nestedContainer(keyedBy: Key.self, forKey: Key("fixedList"))
                try r.encode(allowedValues, forKey: Key("allowedValues"))
            case .regularExpression(let pattern):
                var r = validators.nestedContainer(keyedBy: Key.self, forKey: Key("regularExpression"))
                try r.encode(pattern, forKey: Key("regularExpression"))
            case .boletoBancarioRequiredness(let length):
                var r = validators.nestedContainer(keyedBy: Key.self, forKey: Key("boletoBancarioRequiredness"))
                try r.encode(length, forKey: Key("fiscalNumberLength"))
            }
        }
    }
}

/// The status of an account-on-file attribute: `READ_ONLY`, `CAN_WRITE` or `MUST_WRITE`. Open.
public struct WorldlineAttributeStatus: WorldlineOpenValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer cannot change the stored value.
    public static let readOnly: Self = "READ_ONLY"
    public static let canWrite: Self = "CAN_WRITE"
    /// The customer must enter the value again (`mustWriteReason` says why).
    public static let mustWrite: Self = "MUST_WRITE"
}

/// One stored value of an account on file.
public struct WorldlineAccountOnFileAttribute: Sendable, Hashable, Codable {
    /// The field id it fills (`cardNumber`).
    public var key: String
    /// The stored value, masked by the gateway (`************7988`).
    public var value: String?
    /// Absent in some of the vendor's own samples; absent reads as editable.
    public var status: WorldlineAttributeStatus?
    public var mustWriteReason: String?

    /// An attribute from its parts.
    public init(key: String, value: String? = nil, status: WorldlineAttributeStatus? = nil, mustWriteReason: String? = nil) {
        self.key = key
        self.value = value
        self.status = status
        self.mustWriteReason = mustWriteReason
    }

    /// Whether the customer may change it (anything but `READ_ONLY`).
    public var isEditingAllowed: Bool { status != .readOnly }
}

/// One item of an account on file's `labelTemplate`: which attribute to show, with which mask.
public struct WorldlineLabelTemplateItem: Sendable, Hashable, Codable {
    public var attributeKey: String
    public var mask: String?

    /// An item from its parts.
    public init(attributeKey: String, mask: String? = nil) {
        self.attributeKey = attributeKey
        self.mask = mask
    }
}

/// An account on file's `displayHints`.
public struct WorldlineAccountOnFileDisplayHints: Sendable, Hashable, Codable {
    public var labelTemplate: [WorldlineLabelTemplateItem]
    public var logo: String?

    /// Hints from their parts.
    public init(labelTemplate: [WorldlineLabelTemplateItem] = [], logo: String? = nil) {
        self.labelTemplate = labelTemplate
        self.logo = logo
    }

    private enum CodingKeys: String, CodingKey { case labelTemplate, logo }

    /// Decodes, taking an absent template as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(labelTemplate: try c.decodeIfPresent([WorldlineLabelTemplateItem].self, forKey: .labelTemplate) ?? [],
                  logo: try c.decodeIfPresent(String.self, forKey: .logo))
    }
}

/// A customer's stored account (a card on file) for one product.
public struct WorldlineAccountOnFile: Sendable, Hashable, Codable, Identifiable {
    /// An integer on the wire.
    public var id: Int
    public var paymentProductId: Int
    public var displayHints: WorldlineAccountOnFileDisplayHints
    public var attributes: [WorldlineAccountOnFileAttribute]

    /// An account from its parts.
    public init(id: Int, paymentProductId: Int, displayHints: WorldlineAccountOnFileDisplayHints = .init(),
                attributes: [WorldlineAccountOnFileAttribute] = []) {
        self.id = id
        self.paymentProductId = paymentProductId
        self.displayHints = displayHints
        self.attributes = attributes
    }

    private enum CodingKeys: String, CodingKey { case id, paymentProductId, displayHints, attributes }

    /// Decodes, taking absent hints and attributes as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(Int.self, forKey: .id),
                  paymentProductId: try c.decode(Int.self, forKey: .paymentProductId),
                  displayHints: try c.decodeIfPresent(WorldlineAccountOnFileDisplayHints.self, forKey: .displayHints) ?? .init(),
                  attributes: try c.decodeIfPresent([WorldlineAccountOnFileAttribute].self, forKey: .attributes) ?? [])
    }

    /// The attribute for field `key`, if stored.
    public func attribute(_ key: String) -> WorldlineAccountOnFileAttribute? { attributes.first { $0.key == key } }

    /// Whether field `key` is stored and may not be changed.
    public func isReadOnly(_ key: String) -> Bool { attribute(key).map { !$0.isEditingAllowed } ?? false }

    /// The stored value of `key` shown with `mask` (or the template's mask for it) made lenient
    /// (``WorldlineMask/relaxed``), so the gateway's `*` pass; the raw value without a mask.
    public func maskedValue(_ key: String, mask: String? = nil) -> String {
        let value = attribute(key)?.value ?? ""
        guard let pattern = mask ?? displayHints.labelTemplate.first(where: { $0.attributeKey == key })?.mask else { return value }
        return WorldlineMask(pattern).relaxed.format(value)
    }

    /// The label to show for this account: the label template's attributes, masked, trimmed and
    /// joined with a space (as the Swift SDK's `AccountOnFile.label` builds it).
    public var label: String {
        displayHints.labelTemplate
            .map { maskedValue($0.attributeKey, mask: $0.mask).trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }
}
