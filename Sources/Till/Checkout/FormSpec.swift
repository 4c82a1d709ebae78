import Foundation

/// A form the app shows: which fields, with which rules. Data-driven: a gateway that describes its
/// fields (Worldline's payment product fields) fills it from its own definitions, and the app binds its
/// UI to it without knowing the gateway.
public struct FormSpec: Sendable, Hashable, Codable {
    public var fields: [FormField]
    public init(fields: [FormField]) { self.fields = fields }

    /// The fields in the order to show them: by ``FormField/displayOrder``, then as listed.
    public var fieldsInDisplayOrder: [FormField] {
        fields.enumerated().sorted { ($0.element.displayOrder ?? Int.max, $0.offset) < ($1.element.displayOrder ?? Int.max, $1.offset) }
            .map(\.element)
    }

    /// The fields to show given what has been entered so far (a field with a ``FormField/visibleWhen``
    /// condition appears only while it holds), in display order.
    public func visibleFields(given values: [String: String]) -> [FormField] {
        fieldsInDisplayOrder.filter { $0.visibleWhen?.holds(for: values) ?? true }
    }
}

/// One field of a ``FormSpec``.
public struct FormField: Sendable, Hashable, Codable {
    /// What kind of value a field holds. Open: a gateway may name a kind this version does not know,
    /// which an app shows as plain text.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        public static let text: Kind = "text"
        public static let number: Kind = "number"
        public static let cardNumber: Kind = "card_number"
        public static let expiryDate: Kind = "expiry_date"
        public static let securityCode: Kind = "security_code"
        public static let email: Kind = "email"
        public static let phone: Kind = "phone"
        /// One of ``FormField/choices`` (a list, or a product choice with logos).
        public static let choice: Kind = "choice"
        /// A yes/no box (accept the terms and conditions).
        public static let boolean: Kind = "boolean"
        public static let date: Kind = "date"
    }

    public var id: String
    /// A localization key for the label (`"till.field.cardNumber"`).
    public var labelKey: String
    public var kind: Kind
    public var required: Bool
    public var maxLength: Int?
    /// For `.choice`: the allowed values (plain). See ``choices`` for labelled ones with logos.
    public var options: [String]
    /// Never logged, never echoed in an error (card number, CVV).
    public var sensitive: Bool
    /// A display mask in the `{{9999}} {{9999}}` notation (digits inside `{{ }}` are typed, the rest
    /// is shown as is), or `nil`.
    public var mask: String?
    /// The checks a value must pass, in order (all pure: see the gateway module's validators).
    public var validators: [FieldValidator]
    /// Shown obfuscated while typed (a CVV, a PIN).
    public var obfuscate: Bool
    /// Where to show the field: lower first; `nil` after those with an order.
    public var displayOrder: Int?
    /// Labelled choices, each with an optional logo (a payment product choice).
    public var choices: [FormChoice]
    /// Show the field only while this holds.
    public var visibleWhen: FieldCondition?
    /// A localization key for a placeholder or tooltip, if any.
    public var placeholderKey: String?

    public init(id: String, labelKey: String, kind: Kind, required: Bool = true, maxLength: Int? = nil,
                options: [String] = [], sensitive: Bool = false, mask: String? = nil, validators: [FieldValidator] = [],
                obfuscate: Bool = false, displayOrder: Int? = nil, choices: [FormChoice] = [],
                visibleWhen: FieldCondition? = nil, placeholderKey: String? = nil) {
        self.id = id
        self.labelKey = labelKey
        self.kind = kind
        self.required = required
        self.maxLength = maxLength
        self.options = options
        self.sensitive = sensitive
        self.mask = mask
        self.validators = validators
        self.obfuscate = obfuscate
        self.displayOrder = displayOrder
        self.choices = choices
        self.visibleWhen = visibleWhen
        self.placeholderKey = placeholderKey
    }

    private enum CodingKeys: String, CodingKey {
        case id, labelKey, kind, required, maxLength, options, sensitive, mask, validators, obfuscate, displayOrder, choices,
             visibleWhen, placeholderKey
    }

    /// Decodes with the defaults of ``init(id:labelKey:kind:required:maxLength:options:sensitive:mask:validators:obfuscate:displayOrder:choices:visibleWhen:placeholderKey:)``
    /// for absent keys, so a form from an older server still reads.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(String.self, forKey: .id), labelKey: try c.decode(String.self, forKey: .labelKey),
                  kind: try c.decode(Kind.self, forKey: .kind), required: try c.decodeIfPresent(Bool.self, forKey: .required) ?? true,
                  maxLength: try c.decodeIfPresent(Int.self, forKey: .maxLength),
                  options: try c.decodeIfPresent([String].self, forKey: .options) ?? [],
                  sensitive: try c.decodeIfPresent(Bool.self, forKey: .sensitive) ?? false,
                  mask: try c.decodeIfPresent(String.self, forKey: .mask),
                  validators: try c.decodeIfPresent([FieldValidator].self, forKey: .validators) ?? [],
                  obfuscate: try c.decodeIfPresent(Bool.self, forKey: .obfuscate) ?? false,
                  displayOrder: try c.decodeIfPresent(Int.self, forKey: .displayOrder),
                  choices: try c.decodeIfPresent([FormChoice].self, forKey: .choices) ?? [],
                  visibleWhen: try c.decodeIfPresent(FieldCondition.self, forKey: .visibleWhen),
                  placeholderKey: try c.decodeIfPresent(String.self, forKey: .placeholderKey))
    }
}

/// A check on a field's value, by kind with parameters (`length` with `minLength`/`maxLength`,
/// `range`, `regularExpression` with `pattern`, `luhn`, `expirationDate`, `fixedList` with
/// `allowedValues`, `emailAddress`, `iban`, `termsAndConditions`, …). Open: a kind this version does not
/// know is kept and reported by the module that defined it.
public struct FieldValidator: Sendable, Hashable, Codable {
    public var kind: String
    /// The validator's parameters, verbatim (`"minLength": "12"`, `"pattern": "^[0-9]+$"`). Lists are
    /// joined with `,`.
    public var parameters: [String: String]

    public init(_ kind: String, parameters: [String: String] = [:]) {
        self.kind = kind
        self.parameters = parameters
    }
}

/// A labelled choice of a `.choice` field, such as a payment product with its logo.
public struct FormChoice: Sendable, Hashable, Codable {
    public var value: String
    /// A localization key, or the display text when the gateway gives one.
    public var label: String
    /// A logo to show beside the label.
    public var logo: URL?

    public init(value: String, label: String, logo: URL? = nil) {
        self.value = value
        self.label = label
        self.logo = logo
    }
}

/// When a field appears: while another field's value is one of `values` (or, with no values, while
/// that field is filled in).
public struct FieldCondition: Sendable, Hashable, Codable {
    public var field: String
    public var values: [String]

    public init(field: String, values: [String] = []) {
        self.field = field
        self.values = values
    }

    /// Whether the condition holds for the values entered so far.
    public func holds(for entered: [String: String]) -> Bool {
        guard let value = entered[field], !value.isEmpty else { return false }
        return values.isEmpty || values.contains(value)
    }
}

/// Values the customer entered. Its description never shows the values, so printing or logging it
/// cannot leak a card number or CVV.
public struct FormValues: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var values: [String: String]
    public init(_ values: [String: String]) { self.values = values }
    public subscript(id: String) -> String? { values[id] }
    public var description: String { "FormValues(\(values.keys.sorted().joined(separator: ", ")): <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["fields": values.keys.sorted()]) }
}
