import Foundation

/// Values every emulator makes the same way: random identifiers and Unix times. Each gateway's own
/// formats (order numbers, token shapes) are built from these in the emulator's folder.
extension SandboxEmulator {
    /// `count` random decimal digits.
    static func randomDigits(count: Int) -> String {
        String((0..<count).map { _ in Character(String(Int.random(in: 0...9))) })
    }

    /// `count` random lower-case hex digits.
    static func randomHex(count: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String((0..<count).map { _ in digits[Int.random(in: 0..<digits.count)] })
    }

    /// `count` random ASCII letters and digits.
    static func randomAlphanumeric(count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    /// Unix milliseconds of `date`, rounded down.
    static func unixMillis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
