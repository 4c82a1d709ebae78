import Foundation
import Till
import TillOrchestration

/// The `server.rateLimits` block: the buckets no merchant owns, by the connection's source address. Every key is optional.
public struct ServerRateLimits: Sendable, Hashable, Codable {
    /// Requests from one address that present no valid API key or client secret (`401`): once its bucket is empty,
    /// that address's requests are answered `429` before any key is looked at or any payment read, so guessing
    /// client secrets from one address costs its sender, not the server.
    public var failedAuthenticationPerAddress: RateLimit?
    /// Notifications from one address that no configured gateway account verifies (`400`/`401`/`404`). Only refused
    /// notifications are charged: a gateway's genuine notifications never take a token, so they are never slowed,
    /// however many it sends; an address that has spent its bucket on forgeries is refused `429` until it refills.
    public var rejectedNotificationsPerAddress: RateLimit?
    /// The most buckets kept per kind (client secrets, addresses). Past it, buckets that have refilled are dropped
    /// first (they hold nothing a fresh one would not), then the least recently used; memory stays bounded under a
    /// flood of distinct secrets or addresses.
    public var maxTrackedClients: Int

    public static let defaultFailedAuthentication = RateLimit(perSecond: 10, burst: 100)
    public static let defaultRejectedNotifications = RateLimit(perSecond: 10, burst: 100)

    public init(failedAuthenticationPerAddress: RateLimit? = ServerRateLimits.defaultFailedAuthentication,
                rejectedNotificationsPerAddress: RateLimit? = ServerRateLimits.defaultRejectedNotifications,
                maxTrackedClients: Int = 100_000) {
        self.failedAuthenticationPerAddress = failedAuthenticationPerAddress
        self.rejectedNotificationsPerAddress = rejectedNotificationsPerAddress
        self.maxTrackedClients = maxTrackedClients
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case failedAuthenticationPerAddress, rejectedNotificationsPerAddress, maxTrackedClients }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ServerRateLimits()
        // Absent: the default. Present as null: no limit.
        failedAuthenticationPerAddress = try c.decodeLimit(forKey: .failedAuthenticationPerAddress, default: d.failedAuthenticationPerAddress)
        rejectedNotificationsPerAddress = try c.decodeLimit(forKey: .rejectedNotificationsPerAddress, default: d.rejectedNotificationsPerAddress)
        maxTrackedClients = try c.decodeIfPresent(Int.self, forKey: .maxTrackedClients) ?? d.maxTrackedClients
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(failedAuthenticationPerAddress, forKey: .failedAuthenticationPerAddress)
        try c.encode(rejectedNotificationsPerAddress, forKey: .rejectedNotificationsPerAddress)
        try c.encode(maxTrackedClients, forKey: .maxTrackedClients)
    }

    public func validate(path: String) -> [ValidationIssue] {
        (failedAuthenticationPerAddress?.validate(path: "\(path).failedAuthenticationPerAddress") ?? [])
            + (rejectedNotificationsPerAddress?.validate(path: "\(path).rejectedNotificationsPerAddress") ?? [])
            + Validators.range(maxTrackedClients, 100...10_000_000, field: "\(path).maxTrackedClients")
    }
}

/// Token buckets by key, in bounded memory: at most `capacity` buckets, spread over shards with a lock each.
///
/// A key's bucket is made full when first charged. When a shard is full, the buckets that have refilled by now are
/// dropped (a fresh bucket would be the same), and if that frees nothing, the least recently charged half is: under a
/// flood of distinct keys memory stays put, and what is lost is at worst a dropped client's saved-up burst.
public final class TokenBuckets: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
        let limit: RateLimit
        /// The tokens at `now`, refilled since `updated`.
        func level(at now: Double) -> Double { min(Double(limit.burst), tokens + max(0, now - updated) * limit.perSecond) }
    }

    private let shards: [Locked<[String: Bucket]>]
    private let perShard: Int

    /// - Parameter capacity: the most buckets kept in all.
    public init(capacity: Int) {
        let count = 16
        shards = (0..<count).map { _ in Locked([:]) }
        perShard = max(1, capacity / count)
    }

    /// How many buckets are kept now (tests, metrics).
    public var count: Int { shards.reduce(0) { $0 + $1.withLock { $0.count } } }

    private func shard(_ key: String) -> Locked<[String: Bucket]> {
        var hasher = Hasher()
        hasher.combine(key)
        return shards[Int(UInt(bitPattern: hasher.finalize()) % UInt(shards.count))]
    }

    /// Takes one token from `key`'s bucket (made full at `limit` when new). Returns nil when taken, else how many
    /// seconds until one is there (at least 1, whole seconds, for `Retry-After`).
    public func take(_ key: String, limit: RateLimit, now: Double) -> Int? {
        update(key, limit: limit, now: now, create: true) { bucket in
            guard bucket.tokens >= 1 else { return Self.seconds(until: bucket) }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Charges one token for work found costly only once done (a failed authentication, a refused notification), even
    /// when none is left: the bucket goes into debt, down to −`burst`, repaid at its rate. So requests that all passed
    /// ``emptyFor(_:limit:now:)`` at once are each paid for, and refused until the debt is repaid. Returns nil when a
    /// token was there, else how many seconds until one is.
    public func charge(_ key: String, limit: RateLimit, now: Double) -> Int? {
        update(key, limit: limit, now: now, create: true) { bucket in
            let had = bucket.tokens
            bucket.tokens = max(bucket.tokens - 1, -Double(limit.burst))
            return had >= 1 ? nil : Self.seconds(until: bucket)
        }
    }

    /// Whether `key`'s bucket is empty now, at `limit` as it is now (its own limit when nil), without charging it or making
    /// one: the seconds until a token is there, or nil (a key never charged is never empty).
    public func emptyFor(_ key: String, limit: RateLimit?, now: Double) -> Int? {
        update(key, limit: limit, now: now, create: false) { bucket in bucket.tokens >= 1 ? nil : Self.seconds(until: bucket) }
    }

    /// Brings `key`'s bucket to `now` at `limit` (a limit changed by a reload applies at once, its saved tokens kept up
    /// to the new burst), lets `change` act on it, and keeps it; a missing bucket is made full only when `create`.
    private func update(_ key: String, limit: RateLimit?, now: Double, create: Bool, _ change: (inout Bucket) -> Int?) -> Int? {
        shard(key).withLock { table -> Int? in
            guard let existing = table[key] ?? (create ? limit.map { Bucket(tokens: Double($0.burst), updated: now, limit: $0) } : nil) else { return nil }
            let limit = limit ?? existing.limit
            var bucket = existing
            bucket.tokens = bucket.level(at: now)
            bucket.updated = max(bucket.updated, now)
            if bucket.limit != limit { bucket = Bucket(tokens: min(bucket.tokens, Double(limit.burst)), updated: bucket.updated, limit: limit) }
            let wait = change(&bucket)
            if table[key] == nil && table.count >= perShard { Self.evict(&table, now: now) }
            table[key] = bucket
            return wait
        }
    }

    private static func seconds(until bucket: Bucket) -> Int {
        let seconds = (1 - bucket.tokens) / bucket.limit.perSecond
        return max(1, Int(min(seconds, 86_400).rounded(.up)))
    }

    /// Makes room in a full shard: the refilled buckets, or else the least recently charged half.
    private static func evict(_ table: inout [String: Bucket], now: Double) {
        let before = table.count
        table = table.filter { $0.value.level(at: now) < Double($0.value.limit.burst) }
        guard table.count == before else { return }
        let cut = table.values.map(\.updated).sorted()[before / 2]
        table = table.filter { $0.value.updated > cut }
    }

    /// Seconds on a monotonic clock, for ``take(_:limit:now:)``.
    public static func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000 }
}
