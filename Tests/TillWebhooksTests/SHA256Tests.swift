import Testing
@testable import TillWebhooks

/// The module's own SHA-256 and HMAC-SHA256 against the published vectors: FIPS 180-4's examples (as
/// NIST's example values give them) and RFC 4231's HMAC-SHA256 test cases.
@Suite("SHA-256 and HMAC-SHA256: FIPS 180-4 and RFC 4231 vectors")
struct SHA256Tests {
    @Test("the empty message")
    func empty() {
        #expect(hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("\"abc\" (one block)")
    func abc() {
        #expect(hex(SHA256.hash("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("the 448-bit message (its padding needs a second block)")
    func twoBlocks() {
        let message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(hex(SHA256.hash(message.utf8)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("a million 'a', in one piece and in uneven pieces")
    func millionA() {
        let expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        let all = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(hex(SHA256.hash(all)) == expected)
        // Pieces that straddle block boundaries: 1, 63, 64, 65, 127 bytes, and so on.
        var hasher = SHA256()
        var offset = 0
        var step = 1
        while offset < all.count {
            let end = min(offset + step, all.count)
            hasher.update(all[offset..<end])
            offset = end
            step = step % 130 + 1
        }
        #expect(hex(hasher.finalize()) == expected)
    }

    @Test("messages of every length around the padding boundaries hash the same whole and byte by byte")
    func paddingBoundaries() {
        for length in [55, 56, 57, 63, 64, 65, 119, 120, 121, 127, 128, 129] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            var hasher = SHA256()
            for byte in message { hasher.update(CollectionOfOne(byte)) }
            #expect(hex(hasher.finalize()) == hex(SHA256.hash(message)), "length \(length)")
        }
        // The longest message whose padding fits one block (55 bytes) and the shortest that needs a second (56).
        #expect(hex(SHA256.hash([UInt8](repeating: 0x61, count: 55))) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(hex(SHA256.hash([UInt8](repeating: 0x61, count: 56))) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
    }

    /// RFC 4231, section 4: key, data and HMAC-SHA-256 of test cases 1–4, 6 and 7 (case 5 is a truncated
    /// output, which nothing here uses).
    static let rfc4231: [(name: String, key: [UInt8], data: [UInt8], mac: String)] = [
        ("1", [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("2", Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("3", [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ("4", (1...25).map { UInt8($0) }, [UInt8](repeating: 0xcd, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ("6", [UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ("7", [UInt8](repeating: 0xaa, count: 131),
         Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test("RFC 4231 test cases 1–4, 6 and 7", arguments: 0..<6)
    func hmac(_ index: Int) {
        let vector = Self.rfc4231[index]
        #expect(hex(HMACSHA256.authenticationCode(key: vector.key, message: vector.data)) == vector.mac, "test case \(vector.name)")
    }

    @Test("HMAC fed in pieces equals HMAC of the whole message")
    func hmacIncremental() {
        let vector = Self.rfc4231[5]
        var mac = HMACSHA256(key: vector.key)
        mac.update(vector.data.prefix(10))
        mac.update(vector.data.dropFirst(10).prefix(70))
        mac.update(vector.data.dropFirst(80))
        #expect(hex(mac.finalize()) == vector.mac)
    }

    private func hex(_ bytes: [UInt8]) -> String { WebhookSignature.hex(bytes) }
}
