import Foundation

/// A string the gateway sends from a set it may extend (a field type, an input type, an attribute
/// status): a value this version does not know is kept as it came. Conformers declare `rawValue`, the
/// non-failable `init(rawValue:)` and their known values; decoding, encoding, string literals and the
/// description come from here.
public protocol WorldlineOpenValue: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByStringLiteral, CustomStringConvertible
where RawValue == String, StringLiteralType == String {
    init(rawValue: String)
}

extension WorldlineOpenValue {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public init(from decoder: any Decoder) throws { self.init(rawValue: try decoder.singleValueContainer().decode(String.self)) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { rawValue }
}
