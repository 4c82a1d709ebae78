import Foundation
import Testing
import Till
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The sandbox's own plumbing: the order-keeping JSON reader, form encoding, the server's life cycle.
@Suite struct SandboxTests {
    @Test func jsonKeepsOrderAndNumberText() throws {
        let value = try JSONValue.parse(#" {"b": 1000, "a": {"z": 1.50, "y": [true, null, "x"]}, "c": "\u00e9\ud83d\ude00"} "#)
        let members = try #require(value.objectMembers)
        #expect(members.map(\.key) == ["b", "a", "c"])
        #expect(value["b"] == .number("1000"))
        #expect(value["a"]?.objectMembers?.map(\.key) == ["z", "y"])
        #expect(value["a"]?["z"] == .number("1.50"))
        #expect(value["c"] == .string("é😀"))
        #expect(value["a"]?.parameterText == "{z=1.50, y=[true, , x]}")
        // Round trip.
        #expect(try JSONValue.parse(value.serialized) == value)
    }

    @Test("malformed JSON is a typed error, not a crash",
          arguments: ["", "{", "{\"a\"}", "{\"a\":}", "[1,]", "01", "1.", "\"\\x\"", "\"a\nb\"", "{\"a\":1,\"a\":2}",
                      "tru", "{} {}", "\"\\ud800\"", String(repeating: "[", count: 100) + String(repeating: "]", count: 100)])
    func malformedJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test func invalidUTF8IsRejected() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func serializedStringsAreEscaped() throws {
        let value = JSONValue.object([.init(key: "q\"", value: .string("line\nbreak\u{01}\\"))])
        #expect(value.serialized == #"{"q\"":"line\nbreak\u0001\\"}"#)
        #expect(try JSONValue.parse(value.serialized) == value)
    }

    @Test func formEncodingRoundTrips() throws {
        let fields = ["return_url": "http://test.com/a?b=c&d=e", "message": "Technical problem", "name": "Zoë+1", "empty": ""]
        let encoded = FormEncoding.encode(fields)
        #expect(encoded.contains("return_url=http%3A%2F%2Ftest.com%2Fa%3Fb%3Dc%26d%3De"))
        #expect(encoded.contains("message=Technical%20problem"))
        #expect(FormEncoding.decode(encoded) == fields)
        #expect(FormEncoding.decode("a=Technical+problem&b=%2") == nil)
        #expect(FormEncoding.decode("a=Technical+problem") == ["a": "Technical problem"])
    }

    @Test func returnURLQueryIsAppended() {
        #expect(PayFortEmulator.appendingQuery("a=1", to: "https://m.example/r") == "https://m.example/r?a=1")
        #expect(PayFortEmulator.appendingQuery("a=1", to: "https://m.example/r?s=2") == "https://m.example/r?s=2&a=1")
        #expect(PayFortEmulator.appendingQuery("a=1", to: "myapp://pay/return#top") == "myapp://pay/return?a=1#top")
    }

    @Test func luhn() {
        #expect(PayFortEmulator.TestCard.isLuhnValid("4005550000000001"))
        #expect(PayFortEmulator.TestCard.isLuhnValid("345678000000007"))
        #expect(!PayFortEmulator.TestCard.isLuhnValid("4005550000000002"))
        #expect(!PayFortEmulator.TestCard.isLuhnValid("4005 5500 0000 0001"))
        #expect(!PayFortEmulator.TestCard.isLuhnValid("00"))
    }

    @Test func merchantDescriptionHidesPhrases() {
        let merchant = PayFortMerchant(accessCode: "code", merchantIdentifier: "merchant", requestPhrase: "IN-SECRET",
                                       responsePhrase: "OUT-SECRET")
        for text in [merchant.description, merchant.debugDescription, String(describing: merchant), "\(merchant)"] {
            #expect(!text.contains("SECRET"))
        }
    }

    @Test("a port in use is a typed error")
    func portInUse() async throws {
        let emulator = PayFortEmulator(merchants: [PayFortHarness.sha256Merchant])
        let first = try await Sandbox.start(payFort: emulator)
        let port = try #require(first.baseURL.port)
        await #expect(throws: SandboxError.self) {
            let second = try await Sandbox.start(payFort: emulator, port: port)
            await second.stop()
        }
        await first.stop()
    }

    @Test func receiverRecordsAndScriptsAnswers() async throws {
        try await withReceiver(answering: [404]) { receiver in
            var request = URLRequest(url: receiver.url)
            request.httpMethod = "POST"
            request.httpBody = Data("a=1&b=two+words".utf8)
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            let session = PayFortHarness.makeSession()
            defer { session.finishTasksAndInvalidate() }
            let (_, first) = try await session.data(for: request)
            let (_, second) = try await session.data(for: request)
            #expect((first as? HTTPURLResponse)?.statusCode == 404)
            #expect((second as? HTTPURLResponse)?.statusCode == 200)
            let received = await receiver.received()
            #expect(received.map(\.answeredStatus) == [404, 200])
            #expect(received.first?.formFields == ["a": "1", "b": "two words"])
            #expect(received.first?.path == "/notifications")
        }
    }

    @Test func currenciesComeFromTheCore() {
        // The emulator accepts what Till's ISO 4217 table knows, nothing else.
        #expect(Currency.lookup("JOD")?.minorUnits == 3)
        #expect(Currency.lookup("usd") == nil)
    }
}
