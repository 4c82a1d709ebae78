import Foundation
import Till
import TillService

/// Stored intents, decoded once. A payment's intent is written at its creation and changes only through
/// `PATCH /v1/payments/{id}` before any money moved; it is read back with every read of the payment (the app's polling, each attempt), and
/// decoding its JSON was the largest part of such a read. The cache is keyed by the stored text's
/// bytes (not by `String` equality, which treats canonically equivalent texts as one), so a hit is
/// exactly what decoding that text gives (an intent remembered at its creation is the one its text was encoded
/// from, and `CompactJSONTests` holds decoding that text to give it back); nothing can be stale.
///
/// Bounded by entries and by bytes of text held, the oldest dropped first. Each store has its own.
final class IntentCache: Sendable {
    private struct State {
        var entries: [[UInt8]: PaymentIntent] = [:]
        /// Insertion order; `order[head...]` are the live keys, oldest first.
        var order: [[UInt8]] = []
        var head = 0
        var bytes = 0
    }

    private let state = Locked(State())
    let capacity: Int
    let byteBudget: Int

    init(capacity: Int = 4_096, byteBudget: Int = 4 << 20) {
        self.capacity = max(1, capacity)
        self.byteBudget = max(1, byteBudget)
    }

    /// The intent `json` holds: from the cache, or decoded (and remembered).
    func intent(_ json: String) throws -> PaymentIntent {
        let key = Array(json.utf8)
        if let cached = state.withLock({ $0.entries[key] }) { return cached }
        let intent = try Self.decode(json)
        remember(key, intent)
        return intent
    }

    /// Holds `intent` as what `json` decodes to: the store calls it with the text it just encoded from `intent` (a
    /// payment's first notification then finds its intent here).
    func remember(_ json: String, _ intent: PaymentIntent) {
        remember(Array(json.utf8), intent)
    }

    private func remember(_ key: [UInt8], _ intent: PaymentIntent) {
        guard key.count <= byteBudget else { return }
        state.withLock { state in
            guard state.entries[key] == nil else { return }
            state.entries[key] = intent
            state.order.append(key)
            state.bytes += key.count
            while state.entries.count > capacity || state.bytes > byteBudget {
                let oldest = state.order[state.head]
                state.head += 1
                state.entries[oldest] = nil
                state.bytes -= oldest.count
            }
            if state.head > 1_024 && state.head * 2 > state.order.count {
                state.order.removeFirst(state.head)
                state.head = 0
            }
        }
    }

    /// An intent from its stored text: by ``CompactJSON`` (this runs inside the store's write, where Foundation's decoder
    /// would cost several times as much), or by Foundation's decoder when CompactJSON cannot read it.
    static func decode(_ json: String) throws -> PaymentIntent {
        if let intent = try? CompactJSON.decode(PaymentIntent.self, from: json.utf8) { return intent }
        return try SQLitePaymentStore.decode(PaymentIntent.self, json)
    }

    /// How many intents are held, and the bytes of their texts (tests).
    var count: Int { state.withLock { $0.entries.count } }
    var heldBytes: Int { state.withLock { $0.bytes } }
}
