/// Comparison of secrets (signatures, MACs, tokens) whose running time does not depend on where the
/// inputs first differ, so an attacker who can time a check cannot guess a signature byte by byte.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes.
    ///
    /// Inputs of different lengths return `false` at once (the length of a signature is no secret);
    /// inputs of the same length are compared over every byte, with no early exit.
    @inlinable
    public static func equals<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }

    /// Whether `a` and `b` have the same UTF-8 bytes, compared like any byte collections.
    ///
    /// Byte equality, not Swift's `String` equality: canonically equivalent but differently encoded
    /// texts (`é` as one scalar or as `e` plus a combining accent) are different here, as they are in
    /// a signature.
    public static func equals(_ a: String, _ b: String) -> Bool {
        equals(a.utf8, b.utf8)
    }
}
