import Foundation
import Testing
import Till

@Suite("Client secret")
struct ClientSecretModelTests {
    static let id = "pay_0123456789abcdef0123456789abcdef"
    static let part = String(repeating: "aZ09-_", count: 7) + "x"   // 43 Base64URL characters

    @Test("reads pay_<32 hex>_secret_<43 Base64URL>; never prints the secret part; round-trips as a JSON string")
    func reads() throws {
        let secret = try ClientSecret("\(Self.id)_secret_\(Self.part)")
        #expect(secret.paymentID == Self.id)
        #expect(secret.description == "\(Self.id)_secret_…")
        let json = try JSONEncoder().encode(secret)
        #expect(try JSONDecoder().decode(ClientSecret.self, from: json) == secret)
    }

    @Test("anything else is invalid_field naming clientSecret", arguments: [
        "", "pay_", "\(id)", "\(id)_secret_", "\(id)_secret_\(part)x", "\(id)_secret_\(part.dropLast())",
        "\(id.uppercased())_secret_\(part)", "pay_0123456789abcdef0123456789abcdeg_secret_\(part)",
        "\(id)_SECRET_\(part)", "\(id)_secret_\(part.dropLast())=", "\(id)_secret_\(part.dropLast())/",
        "\(id)_secret_\(part.dropLast())é", "key-12345",
    ])
    func refuses(text: String) {
        let error = #expect(throws: CheckoutError.self) { try ClientSecret(text) }
        #expect(error?.code == .invalidField && error?.field == "clientSecret")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ClientSecret.self, from: Data("\"\(text)\"".utf8)) }
    }
}
