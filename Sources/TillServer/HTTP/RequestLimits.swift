import Metrics
import TillService

/// The server's token buckets, one table per kind, shared by every request; each table keeps at most `capacity`
/// buckets (``TokenBuckets``). The limits themselves are read per request from ``ServerState/access``, so a reload
/// changes them; the buckets' contents survive it.
final class RequestLimits: Sendable {
    /// By merchant and API key id.
    let apiKeys: TokenBuckets
    /// By payment (one client secret's payment).
    let clientSecrets: TokenBuckets
    /// By source address: requests that failed authentication.
    let failedAuthentication: TokenBuckets
    /// By source address: notifications refused.
    let rejectedNotifications: TokenBuckets
    private let metrics: any MetricsFactory

    init(capacity: Int, metrics: any MetricsFactory = MetricsSystem.factory) {
        apiKeys = TokenBuckets(capacity: capacity)
        clientSecrets = TokenBuckets(capacity: capacity)
        failedAuthentication = TokenBuckets(capacity: capacity)
        rejectedNotifications = TokenBuckets(capacity: capacity)
        self.metrics = metrics
    }

    /// Counts a request refused `429` by the `limit` bucket kind (`till_rate_limited_total{limit}`).
    func refused(_ limit: String) {
        Counter(label: "till_rate_limited_total", dimensions: [("limit", limit)], factory: metrics).increment()
    }
}
