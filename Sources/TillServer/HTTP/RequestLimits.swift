import Foundation
import Metrics
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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
    /// `till_rate_limited_total{limit}`, one counter per kind, made once: a refusal under a flood only increments.
    private let refusals: [Limit: Counter]

    /// A kind of limit, as the metric's `limit` label names it.
    enum Limit: String, CaseIterable {
        case apiKey = "api_key"
        case clientSecret = "client_secret"
        case failedAuthentication = "failed_authentication"
        case rejectedNotifications = "rejected_notifications"
    }

    init(capacity: Int, metrics: any MetricsFactory = MetricsSystem.factory) {
        apiKeys = TokenBuckets(capacity: capacity)
        clientSecrets = TokenBuckets(capacity: capacity)
        failedAuthentication = TokenBuckets(capacity: capacity)
        rejectedNotifications = TokenBuckets(capacity: capacity)
        refusals = Dictionary(uniqueKeysWithValues: Limit.allCases.map { limit in
            (limit, Counter(label: "till_rate_limited_total", dimensions: [("limit", limit.rawValue)], factory: metrics))
        })
    }

    /// The bucket key of a peer's address: an IPv4 address as it is (an IPv4-mapped IPv6 one as its IPv4), an IPv6
    /// address by its /64 (one host is commonly given a whole /64, and would otherwise have 2⁶⁴ buckets), and
    /// `unknown` when there is none.
    static func addressKey(_ ip: String?) -> String {
        guard let ip else { return "unknown" }
        var v6 = in6_addr()
        guard ip.contains(":"), inet_pton(AF_INET6, ip, &v6) == 1 else { return ip }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        return bytes[0..<8].map { String(format: "%02x", $0) }.joined() + "::/64"
    }

    /// Counts a request refused `429` by the `limit` bucket kind (`till_rate_limited_total{limit}`).
    func refused(_ limit: Limit) {
        refusals[limit]?.increment()
    }
}
