import Testing
import TillGatewayKit

@Suite("GatewayText")
struct GatewayTextTests {
    @Test("nil stays nil")
    func nilText() {
        #expect(GatewayText.safe(nil) == nil)
        #expect(GatewayText.safe("") == "")
    }

    @Test("card numbers are masked", arguments: [
        ("card 4111111111111111 declined", "card 411111******1111 declined"),
        ("card 4111 1111 1111 1111 declined", "card 411111******1111 declined"),
        ("order 20240101123456 failed", "order 20240101123456 failed"),
    ])
    func masksPANs(_ text: String, _ expected: String) {
        #expect(GatewayText.safe(text) == expected)
    }

    @Test("control characters, newlines included, become spaces")
    func controlCharacters() {
        #expect(GatewayText.safe("Invalid\nrequest\r\n\tsee log\u{0}\u{1B}[31m") == "Invalid request   see log  [31m")
        #expect(GatewayText.safe("a\u{2028}b\u{85}c") == "a b c")
    }

    @Test("a card number split by a line break is still masked")
    func splitPAN() {
        #expect(GatewayText.safe("4111 1111\n1111 1111") == "411111******1111")
    }

    @Test("text is cut to the limit", arguments: [0, 1, 10, 150])
    func cut(_ limit: Int) throws {
        let long = String(repeating: "مرحبا ", count: 100)
        let safe = try #require(GatewayText.safe(long, limit: limit))
        #expect(safe.count == limit)
        #expect(long.hasPrefix(safe))
    }

    @Test("the default limit is 150 characters, and short text is left alone")
    func defaultLimit() {
        #expect(GatewayText.safe(String(repeating: "x", count: 400))?.count == 150)
        #expect(GatewayText.safe("Insufficient funds 支付失败") == "Insufficient funds 支付失败")
    }

    @Test("a cut never shows more than the masked digits")
    func cutAfterMasking() {
        #expect(GatewayText.safe("4111111111111111", limit: 12) == "411111******")
    }
}
