/// Faults a test injected into an emulator, waiting for the requests they are meant for.
///
/// Each fault is queued with an optional key (a path, a command, a funcode): no key matches any
/// request; a key matches the requests the emulator's own rule says it does (an exact command, a
/// path prefix, a path suffix…). The first matching fault is used, once. A value type, held in the
/// emulator's actor state.
///
/// ```swift
/// var faults = FaultQueue<Fault>()
/// faults.append(.timeout, key: "PURCHASE")
/// let fault = faults.take(for: "PURCHASE")          // exact match
/// let other = faults.take { path.hasSuffix($0) }    // the emulator's own rule
/// ```
struct FaultQueue<Fault: Sendable>: Sendable {
    private var pending: [(fault: Fault, key: String?)] = []

    /// An empty queue.
    init() {}

    /// Queues `fault` for the next request that `key` matches (any request when `nil`).
    mutating func append(_ fault: Fault, key: String?) {
        pending.append((fault, key))
    }

    /// Takes the first fault whose key is `nil` or satisfies `matches`.
    mutating func take(where matches: (_ key: String) -> Bool) -> Fault? {
        guard let index = pending.firstIndex(where: { entry in entry.key.map(matches) ?? true }) else { return nil }
        return pending.remove(at: index).fault
    }

    /// Takes the first fault whose key is `nil` or equal to `key`.
    mutating func take(for key: String?) -> Fault? {
        take { $0 == key }
    }
}
