import Foundation
import Till

/// What an API key may do.
public enum APIKeyScope: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every route of the merchant API.
    case full
    /// `GET` routes only (reading payments, operations, events, the quarantine): a support tool's key.
    case readOnly
}

/// One of a merchant's API keys: its id (what the server logs, never the key), where its value is read, what it may
/// do, and when it stops working. Several keys let a merchant rotate one without a moment when none works.
public struct APIKeyConfiguration: Sendable, Hashable, Codable {
    /// Names the key in logs and in the reload's summary: 1 to 64 of `A-Z a-z 0-9 - _ .`, unique within the merchant.
    public var id: String
    /// Where the server reads the key's value (an environment variable or a file): never the value itself.
    public var key: CredentialReference
    public var scope: APIKeyScope
    /// From this instant on the key is refused like an unknown one (ISO 8601 with a zone: `2027-01-31T00:00:00Z`).
    public var expiresAt: Date?

    public init(id: String, key: CredentialReference, scope: APIKeyScope = .full, expiresAt: Date? = nil) {
        self.id = id
        self.key = key
        self.scope = scope
        self.expiresAt = expiresAt
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case id, key, scope, expiresAt }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        key = try c.decode(CredentialReference.self, forKey: .key)
        scope = try c.decodeIfPresent(APIKeyScope.self, forKey: .scope) ?? .full
        if let text = try c.decodeIfPresent(String.self, forKey: .expiresAt) {
            guard let date = Self.instant(text) else {
                throw DecodingError.dataCorruptedError(forKey: .expiresAt, in: c,
                                                       debugDescription: "an ISO 8601 instant with a zone, such as 2027-01-31T00:00:00Z")
            }
            expiresAt = date
        } else {
            expiresAt = nil
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(key, forKey: .key)
        try c.encode(scope, forKey: .scope)
        try c.encodeIfPresent(expiresAt.map { $0.formatted(.iso8601) }, forKey: .expiresAt)
    }

    /// `2027-01-31T00:00:00Z`, with or without fractional seconds, with `Z` or an offset.
    static func instant(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Whether the key works at `now`.
    public func isValid(at now: Date) -> Bool { expiresAt.map { now < $0 } ?? true }

    public func validate(path: String) -> [ValidationIssue] {
        Validators.reference(id, field: "\(path).id", maxLength: 64) + key.validate(path: "\(path).key")
    }
}

/// A token bucket: `perSecond` tokens a second, at most `burst` saved up. A request takes one; none left is `429`.
public struct RateLimit: Sendable, Hashable, Codable {
    public var perSecond: Double
    public var burst: Int

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case perSecond, burst }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        perSecond = try c.decode(Double.self, forKey: .perSecond)
        burst = try c.decode(Int.self, forKey: .burst)
    }

    public func validate(path: String) -> [ValidationIssue] {
        Validators.range(perSecond, 0.001...1_000_000, field: "\(path).perSecond") + Validators.range(burst, 1...10_000_000, field: "\(path).burst")
    }
}

extension KeyedDecodingContainer {
    /// A rate limit that may be absent (its `default`) or `null` (no limit): the one reading of every limit's key.
    package func decodeLimit(forKey key: Key, default value: RateLimit?) throws -> RateLimit? {
        contains(key) ? try decodeIfPresent(RateLimit.self, forKey: key) : value
    }
}

/// A merchant's `rateLimits`: one bucket per API key and one per payment's client secret. Either may be `null`
/// (no limit); a key absent takes the default.
public struct MerchantRateLimits: Sendable, Hashable, Codable {
    /// Each API key's bucket (the merchant's backend; a read-only support tool's key has its own).
    public var apiKey: RateLimit?
    /// Each client secret's bucket: one payment's app. An app polls its payment and starts a few attempts; far more
    /// is a scripted client.
    public var clientSecret: RateLimit?

    public static let defaultAPIKey = RateLimit(perSecond: 500, burst: 1_000)
    public static let defaultClientSecret = RateLimit(perSecond: 5, burst: 30)

    public init(apiKey: RateLimit? = MerchantRateLimits.defaultAPIKey, clientSecret: RateLimit? = MerchantRateLimits.defaultClientSecret) {
        self.apiKey = apiKey
        self.clientSecret = clientSecret
    }

    /// No limit at all (a benchmark's yardstick; a test).
    public static let none = MerchantRateLimits(apiKey: nil, clientSecret: nil)

    private enum CodingKeys: String, CodingKey, CaseIterable { case apiKey, clientSecret }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Absent: the default. Present as null: no limit.
        apiKey = try c.decodeLimit(forKey: .apiKey, default: Self.defaultAPIKey)
        clientSecret = try c.decodeLimit(forKey: .clientSecret, default: Self.defaultClientSecret)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(apiKey, forKey: .apiKey)
        try c.encode(clientSecret, forKey: .clientSecret)
    }

    public func validate(path: String) -> [ValidationIssue] {
        (apiKey?.validate(path: "\(path).apiKey") ?? []) + (clientSecret?.validate(path: "\(path).clientSecret") ?? [])
    }
}
