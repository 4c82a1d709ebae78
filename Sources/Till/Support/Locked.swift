import Foundation

/// A value guarded by a lock, for state that must be reached synchronously (a URL handler called
/// from `application(_:open:options:)`, a token cache read on every request) and so cannot live in
/// an actor. Gateway modules and the server use this one type instead of keeping lock boxes of their own.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A box holding `value`.
    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
