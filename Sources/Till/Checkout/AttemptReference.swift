import Foundation

/// A unique reference for one attempt at a payment, sent to the gateway as its order reference so
/// that the attempt can always be inquired about, even when its response was lost.
///
/// Generated references are 24 characters of `[a-z0-9]`, which fits every supported gateway's
/// reference field (PayFort 40, iPayNow 40, Citcon 64 …) and carries ~124 bits of randomness.
public struct AttemptReference: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// A new random reference.
    public static func generate() -> AttemptReference {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    /// A new reference drawn from `generator` (seeded in tests and the chaos run).
    public static func generate<G: RandomNumberGenerator>(using generator: inout G) -> AttemptReference {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        for _ in 0..<24 { bytes.append(alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))]) }
        return AttemptReference(rawValue: String(decoding: bytes, as: UTF8.self))
    }
}
