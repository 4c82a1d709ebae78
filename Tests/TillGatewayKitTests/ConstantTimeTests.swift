import Foundation
import Testing
import TillGatewayKit

@Suite("ConstantTime")
struct ConstantTimeTests {
    @Test("equal bytes are equal", arguments: [[UInt8](), [0], [1, 2, 3], Array("a4f1c0de".utf8)])
    func equalBytes(_ bytes: [UInt8]) {
        #expect(ConstantTime.equals(bytes, bytes))
        #expect(ConstantTime.equals(bytes, Data(bytes)))
        #expect(ConstantTime.equals(bytes[...], bytes))
    }

    @Test("bytes that differ anywhere are unequal", arguments: [0, 7, 15])
    func unequalBytes(_ position: Int) {
        let a = [UInt8](repeating: 0x5A, count: 16)
        var b = a
        b[position] ^= 0x01
        #expect(!ConstantTime.equals(a, b))
    }

    @Test("different lengths are unequal, a prefix included")
    func differentLengths() {
        #expect(!ConstantTime.equals([UInt8](), [0]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2] as [UInt8]))
        #expect(!ConstantTime.equals("abc", "abcd"))
    }

    @Test("strings compare their UTF-8 bytes", arguments: [
        ("3f2a", "3f2a", true), ("3f2a", "3F2A", false), ("", "", true), ("مرحبا", "مرحبا", true),
        // Canonically equivalent (Swift's == says equal) but different bytes.
        ("\u{E9}", "e\u{301}", false),
    ])
    func strings(_ a: String, _ b: String, _ expected: Bool) {
        #expect(ConstantTime.equals(a, b) == expected)
    }
}
