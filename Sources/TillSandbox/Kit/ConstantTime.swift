/// Compares two byte strings without stopping at the first difference, so the time taken does not
/// tell how much of a guessed signature or tag was right. Strings of different lengths are unequal
/// at once (the lengths of signatures and tags are public).
///
/// The sandbox's one constant-time compare: every emulator checks signatures, MACs and tags with it.
/// It is the sandbox's own, not the plugins' (the emulator is the other party and borrows nothing
/// from the party it checks).
func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
    return difference == 0
}

/// The constant-time compare of the UTF-8 bytes of two strings, as they are (callers lower-case hex
/// first where its case does not matter).
func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
    constantTimeEqual(Array(lhs.utf8), Array(rhs.utf8))
}
