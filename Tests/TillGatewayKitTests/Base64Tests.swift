import Testing
import TillGatewayKit

@Suite("Base64")
struct Base64Tests {
    /// RFC 4648 §10.
    static let vectors = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ]

    @Test("RFC 4648 base 64 vectors", arguments: vectors)
    func standard(_ text: String, _ encoded: String) {
        #expect(Base64.encode(Array(text.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(text.utf8))
    }

    @Test("RFC 4648 vectors in base64url, without padding, and with it", arguments: vectors)
    func url(_ text: String, _ encoded: String) {
        let unpadded = String(encoded.filter { $0 != "=" })
        #expect(Base64.urlEncode(Array(text.utf8)) == unpadded)
        #expect(Base64.urlDecode(unpadded) == Array(text.utf8))
        #expect(Base64.urlDecode(encoded) == Array(text.utf8))
    }

    @Test("the two alphabets differ in the last two characters")
    func alphabets() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.urlEncode(bytes) == "-_-_")
        #expect(Base64.decode("+/+/") == bytes)
        #expect(Base64.urlDecode("-_-_") == bytes)
        #expect(Base64.decode("-_-_") == nil)
        #expect(Base64.urlDecode("+/+/") == nil)
    }

    @Test("every byte value round-trips at every length remainder")
    func roundTrip() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + length) & 0xFF) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
            #expect(Base64.urlDecode(Base64.urlEncode(bytes)) == bytes)
        }
    }

    @Test("strict base 64 refuses what encode never writes", arguments: [
        "Zg", "Zg=", "Zm8", "Zm9vY", "Zg==Zg==", "Z===", "=Zg=", "Zm=8", "Zm9v\n", " Zm9v", "Zm9 v", "Zm9v====",
        "Zh==", "Zm9=", "Zm9v*A==", "Zm9vYg=\u{E9}",
    ])
    func strictRejects(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test("strict base64url refuses bad padding, lengths and characters", arguments: ["Z", "Zm9vY", "Zg=", "Zg===", "Zh", "Zm9", "Zm9v=", "Zm 9v", "Zg==Zg"])
    func urlRejects(_ text: String) {
        #expect(Base64.urlDecode(text) == nil)
    }
}
