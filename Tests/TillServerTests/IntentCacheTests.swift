import Foundation
import Testing
import Till
import TillService
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

    @Test("never more bytes of text than its budget")
    func byteBudget() throws {
        let one = try Self.json("o-0").utf8.count
        let cache = IntentCache(capacity: 100, byteBudget: one * 3)
        for i in 0..<10 { _ = try cache.intent(try Self.json("o-\(i)")) }
        #expect(cache.count == 3)
        #expect(cache.heldBytes <= one * 3)
    }

    @Test("texts that differ only in Unicode normalisation are different entries, each decoded to its own bytes")
    func keyedByBytes() throws {
        let cache = IntentCache(capacity: 8)
        let composed = try Self.json("caf\u{e9}"), decomposed = try Self.json("cafe\u{301}")
        #expect(composed == decomposed)   // Swift's String equality: canonically equivalent
        let a = try cache.intent(composed), b = try cache.intent(decomposed)
        #expect(cache.count == 2)
        #expect(Array(a.merchantReference.utf8) != Array(b.merchantReference.utf8))
    }

    @Test("text that is not an intent throws and is not remembered")
    func damagedText() throws {
        let cache = IntentCache(capacity: 4)
        #expect(throws: (any Error).self) { try cache.intent(#"{"merchantReference":"x"}"#) }
        #expect(cache.count == 0)
    }

    @Test("a payment row with a currency Till does not know is a store error, not a crash")
    func unknownCurrency() throws {
        #expect(throws: StoreError.self) { try PaymentFacts.amount(minorUnits: 100, currency: "ZZZ") }
        #expect(try PaymentFacts.amount(minorUnits: 100, currency: "USD") == Money(minorUnits: 100, currency: Self.usd))
    }
}
