import Foundation
import Testing
import Till
@testable import TillServer

/// Decoded stored intents (``IntentCache``): a hit is exactly what decoding the same text gives, the cache
/// stays within its bound, and text that is not an intent is an error, never a cached value.
@Suite("Stored intents decoded once")
struct IntentCacheTests {
    static let usd = Currency.lookup("USD")!

    static func json(_ reference: String, minor: Int64 = 1000) throws -> String {
        try SQLitePaymentStore.encode(PaymentIntent(merchantReference: reference, amount: Money(minorUnits: minor, currency: usd),
                                                    method: .card, metadata: ["order": reference]))
    }

    @Test("a hit equals a fresh decode of the same text; different texts stay different")
    func hitsAreExact() throws {
        let cache = IntentCache(capacity: 8)
        let a = try Self.json("o-1"), b = try Self.json("o-1", minor: 2000)
        let first = try cache.intent(a)
        #expect(try cache.intent(a) == first)
        #expect(first == (try SQLitePaymentStore.decode(PaymentIntent.self, a)))
        #expect(try cache.intent(b).amount.minorUnits == 2000)
        #expect(cache.count == 2)
    }

    @Test("never more entries than its capacity, and an evicted text decodes again correctly")
    func bounded() throws {
        let cache = IntentCache(capacity: 4)
        for i in 0..<20 { _ = try cache.intent(try Self.json("o-\(i)")) }
        #expect(cache.count == 4)
        #expect(try cache.intent(try Self.json("o-0")).merchantReference == "o-0")
        #expect(cache.count == 4)
    }

    @Test("text that is not an intent throws and is not remembered")
    func damagedText() throws {
        let cache = IntentCache(capacity: 4)
        #expect(throws: (any Error).self) { try cache.intent(#"{"merchantReference":"x"}"#) }
        #expect(cache.count == 0)
    }

    @Test("a payment row with a currency Till does not know is a store error, not a crash")
    func unknownCurrency() {
        #expect(throws: StoreError.self) { try PaymentFacts.amount(minorUnits: 100, currency: "ZZZ") }
        #expect(try PaymentFacts.amount(minorUnits: 100, currency: "USD") == Money(minorUnits: 100, currency: Self.usd))
    }
}
