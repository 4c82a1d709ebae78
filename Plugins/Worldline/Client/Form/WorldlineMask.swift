import Foundation

/// A Worldline display mask (`{{9999}} {{9999}} {{9999}} {{9999}}`): inside `{{ }}`, `9` takes a digit,
/// `a` a lower-case letter, `A` an upper-case letter and `*` any character; everything else is a literal
/// the mask inserts.
public struct WorldlineMask: Sendable, Hashable {
    /// The mask as the gateway sent it.
    public let pattern: String

    public init(_ pattern: String) { self.pattern = pattern }

    /// `input` formatted with the mask, and where the cursor goes: `cursor` is an index into `input`
    /// (in characters), moved right by every literal the mask inserts at or before it.
    public func format(_ input: String, cursor: Int) -> (value: String, cursor: Int) {
        (input, cursor) // implemented in the form work
    }

    /// `input` formatted with the mask.
    public func format(_ input: String) -> String { format(input, cursor: 0).value }

    /// The characters the customer typed: `value` formatted, then only the characters in `{{ }}` positions.
    public func unformat(_ value: String) -> String { value }

    /// The same mask with every placeholder turned into `*` (accepts any character in those positions).
    public var relaxed: WorldlineMask { self }
}
