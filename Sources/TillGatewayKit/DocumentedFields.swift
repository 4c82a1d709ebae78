import Foundation
import Till

/// What one documented field of a gateway may hold: at most ``maxLength`` (and at least
/// ``minLength``) characters, each of its ``kind`` or one of its ``special`` characters.
///
/// ```swift
/// let reference = FieldRule(40, .alphanumeric, special: "-_.")
/// reference.issue(for: "order-42", field: "body.merchant_reference")   // nil
/// let status = FieldRule(2, .digits, minLength: 2)                     // exactly two digits
/// ```
public struct FieldRule: Sendable, Hashable {
    /// What a field is made of, besides its ``special`` characters.
    public enum Kind: Sendable, Hashable {
        /// ASCII letters.
        case letters
        /// ASCII digits `0`-`9`.
        case digits
        /// ASCII letters and digits.
        case alphanumeric
        /// Letters (with their combining marks) and decimal digits of any script: names, descriptions.
        case text
        /// Anything but control characters and line or paragraph separators: a message meant to be
        /// shown, or a URL checked further by its reader.
        case printable
    }

    /// The most characters the field may hold (grapheme clusters, as `String.count` counts them).
    public var maxLength: Int
    /// The fewest characters the field may hold (0 by default); equal to ``maxLength`` for a fixed length.
    public var minLength: Int
    /// What the field is made of.
    public var kind: Kind
    /// Allowed besides ``kind`` (a space is written as a space).
    public var special: String

    /// A rule: at most `maxLength` characters of `kind` and `special`, at least `minLength`.
    public init(_ maxLength: Int, _ kind: Kind, special: String = "", minLength: Int = 0) {
        self.maxLength = maxLength
        self.minLength = minLength
        self.kind = kind
        self.special = special
    }

    /// Whether `scalar` may appear in the field.
    public func allows(_ scalar: Unicode.Scalar) -> Bool {
        if special.unicodeScalars.contains(scalar) { return true }
        let asciiLetter = scalar.isASCII && scalar.properties.isAlphabetic
        let asciiDigit = ("0"..."9").contains(scalar)
        switch kind {
        case .letters: return asciiLetter
        case .digits: return asciiDigit
        case .alphanumeric: return asciiLetter || asciiDigit
        case .text:
            let category = scalar.properties.generalCategory
            return scalar.properties.isAlphabetic || category == .decimalNumber || category == .nonspacingMark
                || category == .spacingMark
        case .printable:
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: return false
            default: return true
            }
        }
    }

    /// The problem with `value`, or nil: `field_too_long` over ``maxLength``, `invalid_field` under
    /// ``minLength`` or with a character the rule does not allow. The message never repeats the value.
    /// - Parameter field: the issue's field, as errors name it (`body.status`).
    public func issue(for value: String, field: String) -> ValidationIssue? {
        let count = value.count
        if count > maxLength {
            return ValidationIssue(field: field, code: .fieldTooLong, message: "at most \(maxLength) characters, got \(count)")
        }
        if count < minLength {
            let wanted = minLength == maxLength ? "exactly \(minLength)" : "at least \(minLength)"
            return ValidationIssue(field: field, code: .invalidField, message: "\(wanted) characters, got \(count)")
        }
        guard value.unicodeScalars.allSatisfy(allows) else {
            return ValidationIssue(field: field, code: .invalidField, message: "only \(allowedDescription) are allowed")
        }
        return nil
    }

    /// The characters the rule allows, in words (`digits 0-9`, `ASCII letters and digits and - _ .`).
    public var allowedDescription: String {
        let base = switch kind {
        case .letters: "ASCII letters"
        case .digits: "digits 0-9"
        case .alphanumeric: "ASCII letters and digits"
        case .text: "letters, digits"
        case .printable: "characters other than control characters"
        }
        guard !special.isEmpty else { return base }
        return base + " and " + special.map { $0 == " " ? "space" : String($0) }.joined(separator: " ")
    }
}

/// The fields a gateway documents for a signed flat message (form fields or a JSON object of
/// scalars), each with its ``FieldRule``, and the one way a plugin reads such a message once its
/// signature is verified.
///
/// A signature over `key=value` pairs concatenated without a separator does not fix where one pair
/// ends: a value holding `=` (an echoed return URL) lets whoever holds a signed message cut the same
/// text into other keys and values under the same signature. Reading only documented fields, each
/// within its documented characters, means such a re-cut either names no field the plugin reads or
/// fails a rule (a status with letters in it, a reference with `=` in it):
///
/// ```swift
/// let documented = DocumentedFields(["status": FieldRule(2, .digits, minLength: 2),
///                                    "merchant_reference": FieldRule(40, .alphanumeric, special: "-_.")])
/// let message = try documented.read(try FormFields.decode(body), prefix: "body", gateway: "acme")
/// message["status"]        // "14", checked; nil when absent or empty
/// message.ignored          // keys present but not documented: never read
/// ```
///
/// Duplicate keys are refused by the parsers (``FormFields/decode(_:field:)``,
/// ``OrderedJSON/parse(_:field:maxDepth:)``) and again here. An empty value reads as absent: some
/// signature rules leave empty values out of the signed text, so an empty value may be unsigned.
/// Cross-field facts (a code whose first digits are the status) stay with the plugin.
public struct DocumentedFields: Sendable, Hashable {
    /// The rule of each documented field, by the gateway's name.
    public let rules: [String: FieldRule]

    /// The documented fields and their rules.
    public init(_ rules: [String: FieldRule]) { self.rules = rules }

    /// The rule of `name`, if documented.
    public subscript(name: String) -> FieldRule? { rules[name] }

    /// Only the rules of `names` (a reader's subset of a gateway's table).
    public func restricted(to names: some Sequence<String>) -> DocumentedFields {
        var kept: [String: FieldRule] = [:]
        for name in names { kept[name] = rules[name] }
        return DocumentedFields(kept)
    }

    /// The problem with `value` under `name`'s rule, or nil (also for an undocumented name). The
    /// issue's field is `field` (the full path, `payfort.customer_email`).
    public func check(_ name: String, _ value: String, field: String) -> ValidationIssue? {
        rules[name]?.issue(for: value, field: field)
    }

    /// Reads a verified flat message given as `(name, value)` pairs in the order received; a `nil`
    /// value is one that is not a single scalar (a nested object or an array).
    ///
    /// - Parameters:
    ///   - prefix: names the message in errors (`body`, `answer`); a field is `<prefix>.<name>`.
    ///   - gateway: the gateway errors are attributed to.
    /// - Returns: the non-empty values of the documented fields, each within its rule; every other
    ///   key only by name, in ``DocumentedValues/ignored``.
    /// - Throws: ``CheckoutError`` naming `<prefix>.<name>`: `duplicate_field` for a name given twice,
    ///   `field_too_long` or `invalid_field` for a documented value outside its rule, `invalid_field`
    ///   for a documented field that is not a single value. Fields are checked in the order received.
    public func read(_ pairs: [(name: String, value: String?)], prefix: String, gateway: GatewayID? = nil) throws(CheckoutError) -> DocumentedValues {
        var values: [String: String] = [:]
        var ignored: [String] = []
        var seen: Set<String> = []
        for (name, value) in pairs {
            let field = prefix.isEmpty ? name : "\(prefix).\(name)"
            guard seen.insert(name).inserted else {
                throw CheckoutError(.duplicateField, field: field, message: "appears twice; each field is accepted once", gateway: gateway)
            }
            guard let rule = rules[name] else {
                ignored.append(name)
                continue
            }
            guard let value else {
                throw CheckoutError(.invalidField, field: field, message: "expected a single value", gateway: gateway)
            }
            guard !value.isEmpty else { continue }
            if let issue = rule.issue(for: value, field: field) {
                throw CheckoutError(issue.code, field: issue.field, message: issue.message, gateway: gateway)
            }
            values[name] = value
        }
        return DocumentedValues(values: values, ignored: ignored)
    }

    /// Reads a verified form, as the pairs reader does.
    public func read(_ form: FormFields, prefix: String, gateway: GatewayID? = nil) throws(CheckoutError) -> DocumentedValues {
        try read(form.pairs.map { (name: $0.name, value: Optional($0.value)) }, prefix: prefix, gateway: gateway)
    }

    /// Reads the members of a verified JSON object: a string or a number's exact text or `true` /
    /// `false` is its value, `null` reads as empty (absent), an object or an array is not a single
    /// value; otherwise as the pairs reader does.
    public func read(_ members: [OrderedJSON.Member], prefix: String, gateway: GatewayID? = nil) throws(CheckoutError) -> DocumentedValues {
        try read(members.map { member -> (name: String, value: String?) in
            switch member.value {
            case .string(let text), .number(let text): (member.key, text)
            case .bool(let flag): (member.key, flag ? "true" : "false")
            case .null: (member.key, "")
            case .object, .array: (member.key, nil)
            }
        }, prefix: prefix, gateway: gateway)
    }
}

/// The documented fields of one verified message, as ``DocumentedFields`` read them.
public struct DocumentedValues: Sendable, Hashable {
    /// Each documented field present with a non-empty value, within its rule.
    public let values: [String: String]
    /// The names present that are not documented, in the order received: never read.
    public let ignored: [String]

    /// What was read.
    public init(values: [String: String], ignored: [String] = []) {
        self.values = values
        self.ignored = ignored
    }

    /// The value of a documented field; nil when absent, empty or undocumented.
    public subscript(name: String) -> String? { values[name] }
}
