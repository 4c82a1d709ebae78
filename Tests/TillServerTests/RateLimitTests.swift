import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillTesting
@testable import TillServer

/// Token buckets per API key, per client secret and per source address (failed authentication, refused notifications):
/// `429` with `Retry-After` past each, nothing done; a gateway's verified notifications never charged; bounded memory.
@Suite("Rate limits", .serialized)
struct RateLimitTests {
    @Test("a bucket: the burst, then 429's wait in whole seconds, refilled at its rate; a check that finds none makes none")
    func bucket() {
        let buckets = TokenBuckets(capacity: 1_000)
        let limit = RateLimit(perSecond: 2, burst: 3)
        for _ in 0..<3 { #expect(buckets.take("k", limit: limit, now: 100) == nil) }
        #expect(buckets.take("k", limit: limit, now: 100) == 1)
        #expect(buckets.emptyFor("k", limit: limit, now: 100) == 1)
        #expect(buckets.emptyFor("k", limit: limit, now: 100.5) == nil, "half a second at 2 a second is a token")
        #expect(buckets.take("k", limit: limit, now: 100.5) == nil)
        #expect(buckets.take("k", limit: limit, now: 100.5) == 1)
        // A slow rate's wait is rounded up: 0.1 a second is 10 s for a token.
        #expect(buckets.take("slow", limit: RateLimit(perSecond: 0.1, burst: 1), now: 0) == nil)
        #expect(buckets.take("slow", limit: RateLimit(perSecond: 0.1, burst: 1), now: 0) == 10)
        // Never more than the burst saved up, however long idle.
        #expect(buckets.take("k", limit: limit, now: 10_000) == nil)
        #expect(buckets.take("k", limit: limit, now: 10_000) == nil)
        #expect(buckets.take("k", limit: limit, now: 10_000) == nil)
        #expect(buckets.take("k", limit: limit, now: 10_000) == 1)
        #expect(buckets.emptyFor("never-charged", limit: limit, now: 0) == nil)
        #expect(buckets.count == 2)
    }

    @Test("a charge after the work goes into debt (to -burst): requests that passed the check together each pay; a loosened limit applies at once")
    func debt() {
        let buckets = TokenBuckets(capacity: 1_000)
        let limit = RateLimit(perSecond: 1, burst: 2)
        // Ten requests checked at once, with one token left: all pass the check, all are charged.
        #expect(buckets.charge("a", limit: limit, now: 0) == nil)
        #expect(buckets.emptyFor("a", limit: limit, now: 0) == nil)
        for _ in 0..<10 { _ = buckets.charge("a", limit: limit, now: 0) }
        // In debt to -2: three seconds at one a second before a token is there again.
        #expect(buckets.emptyFor("a", limit: limit, now: 0) == 3)
        #expect(buckets.emptyFor("a", limit: limit, now: 2.5) == 1)
        #expect(buckets.emptyFor("a", limit: limit, now: 3) == nil)
        // A reload that loosens the limit: the same debt repaid at the new rate.
        for _ in 0..<5 { _ = buckets.charge("b", limit: limit, now: 0) }
        let loosened = RateLimit(perSecond: 100, burst: 2)
        #expect(buckets.emptyFor("b", limit: loosened, now: 0.05) == 1, "the time before it was at the old rate; Retry-After is at least 1 s")
        #expect(buckets.emptyFor("b", limit: loosened, now: 0.1) == nil, "from then on, the new rate: 5 tokens in 0.05 s")
    }

    @Test("an address's bucket key: IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64")
    func addressKeys() {
        #expect(RequestLimits.addressKey("203.0.113.7") == "203.0.113.7")
        #expect(RequestLimits.addressKey("::ffff:203.0.113.7") == "203.0.113.7")
        #expect(RequestLimits.addressKey("2001:db8:1:2:aaaa::1") == RequestLimits.addressKey("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        #expect(RequestLimits.addressKey("2001:db8:1:2::1") != RequestLimits.addressKey("2001:db8:1:3::1"))
        #expect(RequestLimits.addressKey(nil) == "unknown")
    }

    @Test("each refusal counted as till_rate_limited_total by its kind, with the label values the docs name")
    func refusalsCounted() {
        let metrics = ServerMetrics()
        let limits = RequestLimits(capacity: 10, metrics: metrics.factory)
        limits.refused(.clientSecret)
        limits.refused(.clientSecret)
        limits.refused(.failedAuthentication)
        let text = String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self)
        #expect(text.contains(#"till_rate_limited_total{limit="client_secret"} 2"#), "\(text)")
        #expect(text.contains(#"till_rate_limited_total{limit="failed_authentication"} 1"#))
        #expect(text.contains(#"till_rate_limited_total{limit="api_key"} 0"#))
        #expect(text.contains(#"till_rate_limited_total{limit="rejected_notifications"} 0"#))
    }

    @Test("a flood of a million distinct keys keeps at most the capacity; a key being limited stays limited")
    func boundedMemory() {
        let buckets = TokenBuckets(capacity: 10_000)
        let limit = RateLimit(perSecond: 1, burst: 2)
        // The flooder's own key, emptied first.
        #expect(buckets.take("flooder", limit: limit, now: 0) == nil)
        #expect(buckets.take("flooder", limit: limit, now: 0) == nil)
        for n in 0..<1_000_000 {
            _ = buckets.take("k\(n)", limit: limit, now: 0.5 + Double(n) / 10_000_000)
            if n % 100_000 == 0 { #expect(buckets.count <= 10_000) }
        }
        #expect(buckets.count <= 10_000)
    }

    @Test("an API key past its bucket: 429 rate_limited with Retry-After, nothing created; the merchant's other key unaffected")
    func apiKey() async throws {
        let h = try await ServerHarness(.sqlite, merchantSettings: {
            $0.apiKey = nil
            $0.apiKeys = [APIKeyConfiguration(id: "backend", key: CredentialReference(env: "API_KEY")),
                          APIKeyConfiguration(id: "second", key: CredentialReference(env: "SECOND_KEY"))]
            $0.rateLimits = MerchantRateLimits(apiKey: RateLimit(perSecond: 0.01, burst: 3), clientSecret: nil)
        }, environment: ["SECOND_KEY": "second-key-\(UUID().uuidString)"])
        defer { Task { await h.stop() } }
        for n in 0..<3 {
            #expect(try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("rl-\(n)")).status == 201)
        }
        let refused = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("rl-refused"))
        #expect(refused.status == 429)
        #expect(refused.errorCode == "rate_limited")
        #expect(Int(refused.headers["retry-after"] ?? "") ?? 0 >= 1)
        #expect(try await h.send("GET", "v1/payments").status == 429, "the same key is still empty")
        // The other key has a bucket of its own.
        let second = try await h.send("GET", "v1/payments", key: .some(h.environmentKey("SECOND_KEY")))
        #expect(second.status == 200)
        #expect((second.json["payments"] as? [Any])?.count == 3, "the refused create made nothing")
    }

    @Test("a client secret past its bucket: 429 for that payment only; the merchant's key and another payment's secret unaffected")
    func clientSecret() async throws {
        let h = try await ServerHarness(.sqlite, merchantSettings: {
            $0.rateLimits = MerchantRateLimits(apiKey: nil, clientSecret: RateLimit(perSecond: 0.01, burst: 2))
        })
        defer { Task { await h.stop() } }
        let a = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("cs-a"))
        let b = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("cs-b"))
        let (idA, secretA) = (try #require(a.json["id"] as? String), try #require(a.json["clientSecret"] as? String))
        let (idB, secretB) = (try #require(b.json["id"] as? String), try #require(b.json["clientSecret"] as? String))
        for _ in 0..<2 { #expect(try await h.send("GET", "v1/payments/\(idA)", key: .some(secretA)).status == 200) }
        let refused = try await h.send("GET", "v1/payments/\(idA)", key: .some(secretA))
        #expect(refused.status == 429)
        #expect(refused.headers["retry-after"] != nil)
        #expect(try await h.send("GET", "v1/payments/\(idB)", key: .some(secretB)).status == 200)
        #expect(try await h.send("GET", "v1/payments/\(idA)").status == 200, "the merchant's key is not the app's bucket")
    }

    @Test("failed authentication from one address: 401 up to the burst, then 429 for guesses; an API key from that address still served")
    func failedAuthentication() async throws {
        let h = try await ServerHarness(.sqlite, settings: {
            $0.rateLimits.failedAuthenticationPerAddress = RateLimit(perSecond: 0.01, burst: 5)
        })
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("fa"))
        let id = try #require(created.json["id"] as? String)
        for n in 0..<5 {
            #expect(try await h.send("GET", "v1/payments/\(id)", key: .some("\(id)_secret_guess\(n)")).status == 401)
        }
        let refused = try await h.send("GET", "v1/payments/\(id)", key: .some("\(id)_secret_guess-more"))
        #expect(refused.status == 429)
        #expect(refused.errorCode == "rate_limited")
        #expect(try await h.send("GET", "v1/payments/\(id)", key: .some(nil)).status == 429, "no credential is a failure too")
        #expect(try await h.send("GET", "v1/payments/\(id)").status == 200, "the merchant's key is recognised before the address's bucket")
    }

    @Test("refused notifications from one address: 429 past the burst; verified notifications never take a token and are never refused")
    func notifications() async throws {
        let h = try await ServerHarness(.sqlite, settings: {
            $0.rateLimits.rejectedNotificationsPerAddress = RateLimit(perSecond: 0.01, burst: 3)
        })
        defer { Task { await h.stop() } }
        // A gateway's genuine notifications, many more than the burst: every one is taken.
        for n in 0..<20 {
            let (_, attempt, gateway) = try await h.createAndPrepare("genuine-\(n)")
            #expect(try await h.notifyPaid(attempt, gateway: gateway, eventID: "ev-\(n)").status == 200)
        }
        let forged = IncomingNotification(headers: ["x-fake-signature": String(repeating: "0", count: 64)],
                                          body: Data(#"{"attempt":"att_x","eventId":"f","status":"paid","amount":{"value":2500,"currency":"USD"}}"#.utf8))
        for _ in 0..<3 { #expect(try await h.notify(forged, gateway: "fake").status == 401) }
        let refused = try await h.notify(forged, gateway: "fake")
        #expect(refused.status == 429)
        #expect(refused.headers["retry-after"] != nil)
        #expect(try await h.send("POST", "v1/notifications/unknown", json: "{}", key: .some(nil)).status == 429,
                "past its bucket, an address's refusals are answered 429")
        // The same address's genuine notification, with its bucket empty: still verified and taken (a gateway's own
        // addresses may carry another account's posts, which must not hold back this merchant's).
        let (_, attempt, gateway) = try await h.createAndPrepare("genuine-after")
        #expect(try await h.notifyPaid(attempt, gateway: gateway, eventID: "ev-after").status == 200)
    }
}

extension ServerHarness {
    /// The value of a key the harness's environment gave (tests that configure more keys).
    func environmentKey(_ name: String) -> String { environment[name] ?? "" }
}
