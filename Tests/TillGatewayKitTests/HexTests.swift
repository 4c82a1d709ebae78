import Testing
import TillGatewayKit

@Suite("Hex")
struct HexTests {
    /// RFC 4648 §10 base 16 vectors.
    @Test("RFC 4648 vectors", arguments: [
        ("", ""), ("f", "66"), ("fo", "666F"), ("foo", "666F6F"), ("foob", "666F6F62"), ("fooba", "666F6F6261"), ("foobar", "666F6F626172"),
    ])
    func rfcVectors(_ text: String, _ hex: String) {
        #expect(Hex.encode(Array(text.utf8), uppercase: true) == hex)
        #expect(Hex.encode(Array(text.utf8)) == hex.lowercased())
        #expect(Hex.decode(hex) == Array(text.utf8))
        #expect(Hex.decode(hex.lowercased()) == Array(text.utf8))
    }

    @Test("every byte round-trips, in both cases")
    func roundTrip() {
        let bytes = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(bytes)) == bytes)
        #expect(Hex.decode(Hex.encode(bytes, uppercase: true)) == bytes)
        #expect(Hex.encode([0x00, 0xAB, 0xFF]) == "00abff")
        #expect(Hex.decode("aBcD") == [0xAB, 0xCD])
    }

    @Test("odd lengths and non-hex text are refused", arguments: ["0", "abc", "0g", "zz", " 00", "00 ", "0x00", "+1", "٣٣", "é0"])
    func rejects(_ text: String) {
        #expect(Hex.decode(text) == nil)
    }
}
