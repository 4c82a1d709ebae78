import Foundation
import TillGatewayKit

/// The headless model of a Worldline payment form: what an app's UI binds to.
///
/// It holds the current payment product (or a group, such as `cards`, until the card number names a
/// product), the account on file if one was chosen, and what the customer typed. It gives the fields
/// to show in display order, the masked value and cursor after every edit, the errors of each field,
/// and switches product when the card number's IIN says so, as the vendor's iOS SDK guide describes
/// its example app doing ("If the IIN is associated to another payment product, the input fields are
/// replaced with the input fields for the new payment product automatically"). When everything
/// validates, ``customerInput(clientSessionId:tokenize:)`` gives what ``WorldlineEncryptor`` encrypts.
///
/// The IIN lookup starts by itself when the lookup field (`usedForLookup`, else `cardNumber`) has 6 or
/// more digits and its BIN (6, or 8 digits once 8 are typed) changed; ``edit(_:replacing:with:)`` does
/// not wait for it. Await ``settle()`` to wait for it, or read ``changes``.
///
/// Values are kept as shown (masked); ``unmaskedValues`` and the customer input carry them unmasked,
/// as the Swift SDK's `PaymentRequest.unmaskedFieldValues` does.
public actor WorldlineForm {
    /// What the form is for.
    public enum Item: Sendable, Hashable {
        case product(WorldlinePaymentProduct)
        case group(WorldlinePaymentProductGroup)

        /// The fields, as listed.
        public var fields: [WorldlinePaymentProductField] {
            switch self {
            case .product(let product): product.fields
            case .group(let group): group.fields
            }
        }

        /// The product id; `nil` for a group.
        public var productId: Int? {
            if case .product(let product) = self { return product.id }
            return nil
        }
    }

    /// One choice of a list field.
    public struct Choice: Sendable, Hashable {
        /// The value the field takes.
        public var value: String
        /// What to show.
        public var label: String
    }

    /// One field as the UI shows it.
    public struct Field: Sendable, Hashable, Identifiable {
        public var id: String
        /// The API's label (in the context's locale), else the field id.
        public var label: String
        public var placeholder: String?
        public var tooltip: String?
        /// The tooltip's image under the session's asset URL.
        public var tooltipImage: URL?
        /// The display mask, if any.
        public var mask: String?
        /// Show dots instead of what is typed.
        public var obfuscate: Bool
        /// The keyboard to show.
        public var inputType: WorldlineInputType
        /// How to render it (`text`, `list`, `boolean`, …).
        public var element: WorldlineFormElementType
        public var type: WorldlineFieldType
        /// The choices of a `list` field.
        public var choices: [Choice]
        public var isRequired: Bool
        /// Stored in the chosen account on file as `READ_ONLY`: shown, not editable.
        public var isReadOnly: Bool
        /// The card number: its first digits decide the product.
        public var usedForLookup: Bool
        public var alwaysShow: Bool
        public var link: URL?
        /// The value as shown (masked).
        public var value: String
    }

    /// What changed, for a UI that does not poll.
    public enum Change: Sendable, Hashable {
        /// The form now shows this product's fields.
        case product(Int)
        /// An IIN lookup finished with this status.
        case iinStatus(WorldlineIINStatus)
        /// The co-brands the customer may choose between (empty: no choice).
        case coBrands([Int])
        /// An IIN lookup or product fetch failed; ``lastFailure`` has the error.
        case failure
    }

    /// The message id of the card number's error when the IIN says the card cannot be used here. The
    /// Swift SDK has the error class (`ValidationErrorAllowed`) but no message id for it; the iOS SDK
    /// guide describes it as "not allowed in the current payment context".
    public static let notAllowedMessageId = "allowedInContext"

    private let api: WorldlineClientAPI
    private let context: WorldlinePaymentContext
    private let labels: WorldlineLabels
    private let now: @Sendable () -> Date
    /// The lookup this form uses.
    public nonisolated let iinLookup: WorldlineIINLookup
    /// Changes as they happen.
    public nonisolated let changes: AsyncStream<Change>
    private let changeSink: AsyncStream<Change>.Continuation

    /// The product or group shown.
    public private(set) var item: Item
    /// The account on file chosen, if any.
    public private(set) var accountOnFile: WorldlineAccountOnFile?
    /// The values as shown (masked), by field id.
    public private(set) var values: [String: String] = [:]
    /// The last IIN answer for the current card number; `nil` before one.
    public private(set) var iin: WorldlineIINDetails?
    /// The last failure of a lookup or product switch (cleared by the next success).
    public private(set) var lastFailure: CheckoutError?
    private var wantedBIN: String?
    private var lookedUpBIN: String?
    private var lookupTask: Task<Void, Never>?

    /// A form for `item` in `context`.
    /// - Parameters:
    ///   - api: fetches the product when the IIN names another one.
    ///   - accountOnFile: the stored account chosen (its product's fields show its values).
    ///   - iinLookup: the lookup to use (one per checkout: it caches per BIN); a new one when `nil`.
    ///   - labels: the app's texts.
    ///   - now: the date expiry dates are validated against.
    public init(api: WorldlineClientAPI, context: WorldlinePaymentContext, item: Item,
                accountOnFile: WorldlineAccountOnFile? = nil, iinLookup: WorldlineIINLookup? = nil,
                labels: WorldlineLabels = .init(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.api = api
        self.context = context
        self.item = item
        self.accountOnFile = accountOnFile
        self.iinLookup = iinLookup ?? WorldlineIINLookup(api: api, context: context)
        self.labels = labels
        self.now = now
        (changes, changeSink) = AsyncStream.makeStream(of: Change.self)
        values = Self.fixedListDefaults(item.fields, values: [:])
    }

    deinit { changeSink.finish() }

    // MARK: Reading

    /// The product id shown; `nil` while a group is shown.
    public var productId: Int? { item.productId }

    /// The fields in display order, with their current values.
    public var fields: [Field] {
        WorldlinePaymentProductField.displayOrdered(item.fields).map(field)
    }

    /// The field with `id`.
    public func field(_ id: String) -> Field? { item.fields.first { $0.id == id }.map(field) }

    /// The co-brands of the card the customer may choose between (allowed in this context); empty when
    /// the card has one brand.
    public var coBrandChoices: [Int] {
        let allowed = iin?.allowedCoBrands.map(\.paymentProductId) ?? []
        return allowed.count > 1 ? allowed : []
    }

    /// Every value unmasked, by field id: the fields of the item shown and anything else set. A stored
    /// account's value the customer did not retype is not in it (the gateway has it).
    public var unmaskedValues: [String: String] {
        var result: [String: String] = [:]
        for (id, value) in values {
            if let mask = maskOf(id) { result[id] = mask.unformat(value) } else { result[id] = value }
        }
        return result
    }

    /// The errors of every field of the item shown, in display order of the fields (empty when valid).
    public func errors() -> [WorldlineValidationError] {
        WorldlinePaymentProductField.displayOrdered(item.fields).flatMap { errors(for: $0.id) }
    }

    /// The errors of field `id` for its current value: its data restrictions' checks
    /// (``WorldlineDataRestrictions/errors(fieldId:value:values:now:)``), and on the lookup field
    /// ``notAllowedMessageId`` when the IIN says EXISTING_BUT_NOT_ALLOWED. A stored account's value that
    /// is read-only or was not retyped is not checked (the Swift SDK's `PaymentRequest.validate`).
    public func errors(for id: String) -> [WorldlineValidationError] {
        guard let definition = item.fields.first(where: { $0.id == id }) else { return [] }
        if let account = accountOnFile, let attribute = account.attribute(id), !attribute.isEditingAllowed || values[id] == nil {
            return []
        }
        let unmasked = unmaskedValues
        var found = definition.dataRestrictions.errors(fieldId: id, value: unmasked[id] ?? "", values: unmasked, now: now())
        if isLookupField(definition), let iin, iin.status == .existingButNotAllowed,
           iin.bin == WorldlineClientAPI.bin(of: digits(unmasked[id] ?? "")) {
            found.append(WorldlineValidationError(fieldId: id, messageId: Self.notAllowedMessageId))
        }
        return found
    }

    // MARK: Editing

    /// Applies the customer's edit of field `id` as UIKit's `textField(_:shouldChangeCharactersIn:replacementString:)`
    /// reports it: the characters in `range` (of the value shown, in `Character`s) are replaced with
    /// `string`. Returns the new value as shown and where the cursor goes; the UI shows those instead
    /// of applying the edit itself.
    ///
    /// With a mask, the edited text is formatted with ``WorldlineMask/format(_:cursor:)`` (the Swift
    /// SDK's rule: a literal inserted before the cursor moves it right). A deletion that removed only
    /// literals the mask inserts (the space after `4111`) also removes the typed character before them,
    /// so backspace is not undone by the mask. A read-only field keeps its value.
    public func edit(_ id: String, replacing range: Range<Int>, with string: String) async -> (value: String, cursor: Int) {
        let current = Array(values[id] ?? shownAccountValue(id) ?? "")
        if let account = accountOnFile, account.isReadOnly(id) {
            return (String(current), min(range.lowerBound, current.count))
        }
        let lower = min(max(range.lowerBound, 0), current.count)
        let upper = min(max(range.upperBound, lower), current.count)
        var edited = current
        edited.replaceSubrange(lower..<upper, with: Array(string))
        var cursor = lower + string.count
        guard let mask = maskOf(id) else {
            set(id, String(edited))
            return (String(edited), cursor)
        }
        if string.isEmpty, upper > lower, mask.unformat(String(edited)) == mask.unformat(String(current)) {
            // Only inserted literals went: take the typed character before them too.
            if let typed = lastTypedIndex(in: current, before: lower, mask: mask) {
                edited = current
                edited.replaceSubrange(typed..<upper, with: [])
                cursor = typed
            }
        }
        let formatted = mask.format(String(edited), cursor: cursor)
        set(id, formatted.value)
        return formatted
    }

    /// Sets field `id` to `value` as typed or chosen (a list choice, a switch); a mask formats it.
    public func setValue(_ id: String, _ value: String) {
        if let account = accountOnFile, account.isReadOnly(id) { return }
        set(id, maskOf(id)?.format(value) ?? value)
    }

    /// Waits until no IIN lookup or product switch is under way.
    public func settle() async {
        while let task = lookupTask { await task.value }
    }

    /// Shows `id`, one of ``coBrandChoices`` (or any product when the card has no choice to make),
    /// keeping the values entered.
    /// - Throws: ``CheckoutError`` naming `paymentProductId` when `id` is not one of the card's allowed
    ///   co-brands, or the product fetch's failure.
    public func chooseProduct(id: Int) async throws(CheckoutError) {
        let choices = coBrandChoices
        guard choices.isEmpty || choices.contains(id) else {
            throw CheckoutError(.invalidField, field: "paymentProductId", message: "\(id) is not one of the card's brands",
                                gateway: api.gateway)
        }
        guard item.productId != id else { return }
        let product = try await api.paymentProduct(id: id, for: context)
        show(product)
    }

    /// Shows `product` (fetched by the app), keeping the values entered.
    public func show(_ product: WorldlinePaymentProduct) {
        let before = unmaskedValues
        item = .product(product)
        if let account = accountOnFile, account.paymentProductId != product.id { accountOnFile = nil }
        var reformatted: [String: String] = [:]
        for (id, value) in before { reformatted[id] = maskOf(id)?.format(value) ?? value }
        values = Self.fixedListDefaults(product.fields, values: reformatted)
        changeSink.yield(.product(product.id))
    }

    // MARK: Customer input

    /// What the customer entered, ready for ``WorldlineEncryptor``: the product, the account on file, and
    /// every field's unmasked value that is not empty, in the product's field order.
    /// - Throws: ``CheckoutError`` naming the first field with an error (`missing_field` for `required`,
    ///   `invalid_field` otherwise, the message id in the message), or naming `paymentProductId` while
    ///   a group is shown.
    public func customerInput(clientSessionId: String, tokenize: Bool = false) throws(CheckoutError) -> WorldlineCustomerInput {
        guard case .product(let product) = item else {
            throw CheckoutError(.missingField, field: "paymentProductId",
                                message: "no payment product yet: the card number decides it", gateway: api.gateway)
        }
        if let first = errors().first {
            throw CheckoutError(first.messageId == "required" ? .missingField : .invalidField, field: first.fieldId,
                                message: "the value fails its check: \(first.messageId)", gateway: api.gateway)
        }
        let unmasked = unmaskedValues
        let pairs = product.fields.compactMap { field -> WorldlineCustomerInput.KeyValue? in
            guard let value = unmasked[field.id], !value.isEmpty else { return nil }
            return WorldlineCustomerInput.KeyValue(key: field.id, value: value)
        }
        return WorldlineCustomerInput(clientSessionId: clientSessionId, paymentProductId: product.id,
                                      accountOnFileId: accountOnFile?.id, tokenize: tokenize, values: pairs)
    }

    // MARK: Plumbing

    private func set(_ id: String, _ value: String) {
        values[id] = value
        guard let definition = item.fields.first(where: { $0.id == id }), isLookupField(definition) else { return }
        let bin = WorldlineClientAPI.bin(of: digits(maskOf(id)?.unformat(value) ?? value))
        wantedBIN = bin
        guard let bin else {
            if iin != nil {
                iin = nil
                changeSink.yield(.iinStatus(.notEnoughDigits))
                changeSink.yield(.coBrands([]))
            }
            return
        }
        if bin != lookedUpBIN, lookupTask == nil {
            lookupTask = Task { await self.runLookups() }
        }
    }

    /// Looks up the wanted BIN until it is the one answered (the number may change while a lookup is
    /// under way: the Swift SDK answers PENDING to a second lookup, so the next one waits for this one).
    private func runLookups() async {
        var pendingRetries = 0
        while let bin = wantedBIN, bin != lookedUpBIN {
            let details: WorldlineIINDetails
            do {
                details = try await iinLookup.lookup(bin)
            } catch {
                fail(error)
                break
            }
            if details.status == .pending {
                // Another user of the shared lookup is under way: wait a little and ask again.
                pendingRetries += 1
                if pendingRetries > 100 { break }
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            lookedUpBIN = bin
            guard wantedBIN == bin else { continue }
            await apply(details)
        }
        lookupTask = nil
    }

    private func apply(_ details: WorldlineIINDetails) async {
        iin = details
        lastFailure = nil
        changeSink.yield(.iinStatus(details.status))
        changeSink.yield(.coBrands(coBrandChoices))
        guard details.status == .supported, let id = details.paymentProductId else { return }
        let current = item.productId
        let allowed = details.allowedCoBrands.map(\.paymentProductId)
        if current == id || (current.map(allowed.contains) ?? false) { return }
        do {
            let product = try await api.paymentProduct(id: id, for: context)
            // The number may have changed while the product came.
            guard wantedBIN == details.bin else { return }
            show(product)
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: CheckoutError) {
        lastFailure = error
        changeSink.yield(.failure)
    }

    private func field(_ definition: WorldlinePaymentProductField) -> Field {
        let hints = definition.displayHints
        let choices = (hints?.formElement.valueMapping ?? []).map { Choice(value: $0.value, label: $0.label) }
        return Field(id: definition.id, label: labels.label(of: definition), placeholder: hints?.placeholderLabel,
                     tooltip: hints?.tooltip?.label,
                     tooltipImage: hints?.tooltip?.image.flatMap { WorldlineAssets.url(forPath: $0, assetURL: api.session.assetURL) },
                     mask: hints?.mask, obfuscate: hints?.obfuscate ?? false, inputType: hints?.preferredInputType ?? .noKeyboard,
                     element: hints?.formElement.type ?? .text, type: definition.type, choices: choices,
                     isRequired: definition.dataRestrictions.isRequired, isReadOnly: accountOnFile?.isReadOnly(definition.id) ?? false,
                     usedForLookup: isLookupField(definition), alwaysShow: hints?.alwaysShow ?? false,
                     link: hints?.link.flatMap(URL.init(string:)),
                     value: values[definition.id] ?? shownAccountValue(definition.id) ?? "")
    }

    /// A stored account's value for `id`, under the field's mask made lenient.
    private func shownAccountValue(_ id: String) -> String? {
        guard let account = accountOnFile, account.attribute(id) != nil else { return nil }
        return account.maskedValue(id, mask: item.fields.first { $0.id == id }?.displayHints?.mask)
    }

    /// The field the IIN lookup reads: the one marked `usedForLookup`, or, when the product marks none
    /// (none of the vendor's sample products does), `cardNumber`, the field the iOS SDK guide's example
    /// looks up (`unmaskedValueForField:@"cardNumber"`).
    private func isLookupField(_ field: WorldlinePaymentProductField) -> Bool {
        if field.usedForLookup { return true }
        return field.id == "cardNumber" && !item.fields.contains { $0.usedForLookup }
    }

    private func maskOf(_ id: String) -> WorldlineMask? {
        item.fields.first { $0.id == id }?.mask
    }

    private func digits(_ text: String) -> String { text.filter { $0.isASCII && $0.isNumber } }

    /// The index of the last character before `index` that sits in a `{{ }}` position of `value`.
    private func lastTypedIndex(in value: [Character], before index: Int, mask: WorldlineMask) -> Int? {
        var position = index - 1
        while position >= 0 {
            let prefix = String(value[..<position])
            let withCharacter = String(value[...position])
            if mask.unformat(withCharacter).count > mask.unformat(prefix).count { return position }
            position -= 1
        }
        return nil
    }

    /// `values` with the first allowed value of every fixed-list field that has none (the Swift SDK's
    /// `PaymentRequest.getValue` fills it in the same way).
    private static func fixedListDefaults(_ fields: [WorldlinePaymentProductField], values: [String: String]) -> [String: String] {
        var result = values
        for field in fields where result[field.id] == nil {
            for rule in field.dataRestrictions.validators {
                if case .fixedList(let allowed) = rule, let first = allowed.first {
                    result[field.id] = first
                    break
                }
            }
        }
        return result
    }
}

// A field's value (a card number, a CVV) never shows when a field is printed, logged or dumped.
extension WorldlineForm.Field: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "WorldlineForm.Field(\(id): \(value.isEmpty ? "empty" : "<redacted>"))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id, "isEmpty": value.isEmpty]) }
}
