import Foundation

/// The texts to show for products, fields and validation errors.
///
/// The Client API sends labels in the locale it was called with (``WorldlinePaymentContext/locale``):
/// a product's or group's `displayHints.label`, a field's `displayHints.label`, `placeholderLabel` and
/// tooltip label. Those come first. The Swift client SDK 7.0.0 ships no string table of its own; the
/// vendor's older iOS SDK guide names the keys its table used (`gc.general.paymentProducts.<id>.name`
/// for a product, `gc.general.paymentProductFields.validationErrors.<messageId>.label` for an error).
/// An app that has such a table passes it as ``table``; no translation is made up here.
public struct WorldlineLabels: Sendable, Hashable {
    /// The app's own texts, keyed as the vendor's iOS SDK keyed them.
    public var table: [String: String]

    /// Labels with the app's `table` as the fallback.
    public init(table: [String: String] = [:]) { self.table = table }

    /// `gc.general.paymentProducts.<id>.name`.
    public static func productKey(_ id: String) -> String { "gc.general.paymentProducts.\(id).name" }

    /// `gc.general.paymentProductFields.validationErrors.<messageId>.label`.
    public static func validationErrorKey(_ messageId: String) -> String {
        "gc.general.paymentProductFields.validationErrors.\(messageId).label"
    }

    /// A product's or group's name: the API's label, else the table's, else the id.
    public func name(of item: WorldlinePaymentItems.Item) -> String {
        nonEmpty(item.label) ?? table[Self.productKey(item.id)] ?? item.id
    }

    /// A product's name: the API's label, else the table's, else the id.
    public func name(of product: WorldlinePaymentProduct) -> String {
        nonEmpty(product.displayHints.label) ?? table[Self.productKey(String(product.id))] ?? String(product.id)
    }

    /// A field's label: the API's, else the field id.
    public func label(of field: WorldlinePaymentProductField) -> String {
        nonEmpty(field.displayHints?.label) ?? field.id
    }

    /// The text for a validation error, from the table; `nil` when the app has none (show the message id
    /// or a text of your own).
    public func message(for error: WorldlineValidationError) -> String? {
        table[Self.validationErrorKey(error.messageId)]
    }

    private func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
