import Foundation
import Till

/// Stored intents, decoded once. A payment's intent is written once, at its creation, and never
/// changes; it is read back with every read of the payment (the app's polling, each attempt, each
/// notification), and decoding its JSON was the largest part of such a read. The cache is keyed by
/// the stored text itself, so a hit is exactly what decoding that text gives; nothing can be stale.
///
/// Bounded: at most `capacity` entries, the oldest replaced first. Each store instance has its own.
final class IntentCache: Sendable {
    private struct State {
        var entries: [String: PaymentIntent] = [:]
        /// Insertion order, as a ring: `order[next]` is replaced by the next new entry once full.
        var order: [String] = []
        var next = 0
    }

    private let state = Locked(State())
    let capacity: Int

    init(capacity: Int = 4_096) { self.capacity = max(1, capacity) }

    /// The intent `json` holds: from the cache, or decoded (and remembered).
    func intent(_ json: String) throws -> PaymentIntent {
        if let cached = state.withLock({ $0.entries[json] }) { return cached }
        let intent = try SQLitePaymentStore.decode(PaymentIntent.self, json)
        state.withLock { state in
            guard state.entries[json] == nil else { return }
            if state.order.count < capacity {
                state.order.append(json)
            } else {
                state.entries[state.order[state.next]] = nil
                state.order[state.next] = json
                state.next = (state.next + 1) % capacity
            }
            state.entries[json] = intent
        }
        return intent
    }

    /// How many intents are held (tests).
    var count: Int { state.withLock { $0.entries.count } }
}
