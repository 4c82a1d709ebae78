import Foundation
import Testing
@testable import TillSandbox

/// The emulators read the same vendor facts the plugins do, from their own copies of the fixtures: Worldline's
/// two-decimal amounts (`Fixtures/worldline/amounts.json`) and PayFort's CHECK_STATUS (`Fixtures/payfort-check-status.json`).
@Suite("Emulators against the vendors' amount and status facts")
struct VendorAmountFixtureTests {
    static func fixture(_ name: String) throws -> [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    @Test("the Worldline emulator converts with two decimals whatever the currency: a yen amount comes out as whole yen with two zero cents, as the API reference's JPY example")
    func worldlineConversion() throws {
        let examples = try #require(try Self.fixture("worldline/amounts.json")["examples"] as? [[String: Any]])
        let yen = try #require(examples.first { $0["currency"] as? String == "JPY" })
        #expect((yen["wire"] as? Int).map { $0 % 100 == 0 } == true)
        for euros in [Int64(1), 99, 100, 12_345] {
            let converted = try #require(WorldlineCatalog.convert(euros, from: "EUR", to: "JPY"))
            #expect(converted % 100 == 0, "\(euros) hundredths of EUR → \(converted) hundredths of JPY")
        }
        // 1.00 EUR is 160 yen at the emulator's fixed rate: 16000 hundredths of a yen.
        #expect(WorldlineCatalog.convert(100, from: "EUR", to: "JPY") == 16_000)
        #expect(WorldlineCatalog.convert(16_000, from: "JPY", to: "EUR") == 100)
    }

    @Test("the PayFort emulator answers an unknown order with the plugins' 12036, and, set to, CHECK_STATUS with the published answer's keys only")
    func payFortCheckStatus() async throws {
        let facts = try #require(try Self.fixture("payfort-check-status.json")["check_status"] as? [String: Any])
        let published = Set(try #require(facts["published_answer_keys"] as? [String]))
        let amounts = Set(try #require(facts["documented_amount_keys"] as? [String]))
        try await PayFortHarness.with { harness in
            let unknown = try await harness.checkStatus(reference: "never-used")
            #expect(unknown["response_code"] == facts["order_not_found_response_code"] as? String)
            let reference = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
            #expect(Set(try await harness.checkStatus(reference: reference).object.map(\.key)).isSuperset(of: amounts))
            await harness.emulator.setCheckStatusCarriesAmounts(false)
            let bare = Set(try await harness.checkStatus(reference: reference).object.map(\.key))
            #expect(bare.isDisjoint(with: amounts))
            // What else it says is the published answer's (authorization_code is the emulator's documented extra).
            #expect(bare.subtracting(published).subtracting(["authorization_code"]).isEmpty, "\(bare.subtracting(published))")
        }
    }
}
