import Till
import Foundation

extension Date {
    /// Milliseconds since 1970, as stored.
    package var storedMillis: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
    package init(storedMillis: Int64) { self.init(timeIntervalSince1970: Double(storedMillis) / 1000) }
}
