import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
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

    @Test("an API key refused inside the API (pipelined behind a request in progress, so not on the connection): its log line names the key's id, never the key")
    func apiKeyRefusalLogged() async throws {
        let logs = SecretAttackServer.Logs()
        var logger = Logger(label: "till.server") { _ in SecretAttackServer.Capture(logs: logs) }
        logger.logLevel = .info
        let h = try await ServerHarness(.sqlite, logger: logger, merchantSettings: {
            $0.apiKey = nil
            $0.apiKeys = [APIKeyConfiguration(id: "backend-1", key: CredentialReference(env: "API_KEY"))]
            $0.rateLimits = MerchantRateLimits(apiKey: RateLimit(perSecond: 0.01, burst: 1), clientSecret: nil)
        })
        defer { Task { await h.stop() } }
        #expect(try await h.send("GET", "v1/payments").status == 200)
        // /healthz is the application's; the key's request, in the same write, waits behind it and is refused by the API.
        let connection = try RawConnection(port: h.baseURL.port!)
        connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        + "GET /v1/payments?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(h.apiKey)\r\n\r\n")
        #expect(connection.statuses(count: 2) == [200, 429])
        let refusals = logs.lines.filter { $0.contains("GET /v1/payments") && $0.contains("status=429") }
        #expect(refusals.count == 1, "\(logs.lines)")
        #expect(refusals.allSatisfy { $0.contains("key_id=backend-1") && $0.contains("merchant=\(h.merchant)") }, "\(refusals)")
        #expect(!logs.lines.contains { $0.contains(h.apiKey) })
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

extension RateLimitTests {
    @Test("past its bucket, a client secret is refused at the connection with the API's own answer, counted; the connection kept")
    func refusedAtConnection() async throws {
        let metrics = ServerMetrics()
        let h = try await ServerHarness(.sqlite, metrics: metrics.factory, merchantSettings: {
            $0.rateLimits = MerchantRateLimits(apiKey: nil, clientSecret: RateLimit(perSecond: 0.01, burst: 1))
        })
        defer { Task { await h.stop() } }
        let a = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("early-a"))
        let (idA, secretA) = (try #require(a.json["id"] as? String), try #require(a.json["clientSecret"] as? String))
        #expect(try await h.send("GET", "v1/payments/\(idA)", key: .some(secretA)).status == 200)
        // Through the API's usual client: the answer the document gives a refusal, the caller's request id echoed.
        let refused = try await h.send("GET", "v1/payments/\(idA)", key: .some(secretA), headers: ["X-Request-Id": "flood-1"])
        #expect(refused.status == 429)
        #expect(refused.errorCode == "rate_limited")
        #expect(refused.headers["retry-after"].flatMap(Int.init) ?? 0 >= 1)
        #expect(refused.headers["x-request-id"] == "flood-1")
        #expect(refused.headers["x-content-type-options"] == "nosniff")
        #expect((refused.json["error"] as? [String: Any])?["message"] as? String
                == API.errorBody(.tooManyRequests("for this payment's client secret", retryAfter: Int(refused.headers["retry-after"]!)!)).error.message)

        // On one connection: a refused POST with a body, then the merchant's own request, then a refused one pipelined
        // behind it, then one that asks to close. Answered in order; the refused body did not become the next request.
        let connection = try RawConnection(port: h.baseURL.port!)
        let body = ServerHarness.intentJSON("early-body")
        connection.send("POST /v1/payments/\(idA)/attempts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(secretA)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                        + "GET /v1/payments/\(idA) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(h.apiKey)\r\n\r\n"
                        + "GET /v1/payments/\(idA) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(secretA)\r\n\r\n")
        #expect(connection.statuses(count: 3) == [429, 200, 429])
        connection.send("GET /v1/payments/\(idA) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: bearer \(secretA)\r\nConnection: close\r\n\r\n")
        #expect(connection.statuses(count: 1) == [429])
        #expect(connection.closedByServer, "Connection: close is honoured")
        // A gateway's notification route is never refused by a client secret's bucket.
        #expect(try await h.send("POST", "v1/notifications/fake", json: "{}", key: .some(secretA)).status != 429)
        let text = String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self)
        #expect(text.contains(#"till_rate_limited_total{limit="client_secret"} 4"#), "\(text)")
        #expect(try await h.send("GET", "v1/payments/\(idA)").status == 200)
    }

    @Test("the early refusal's routes are exactly those that authenticate: every route, sent no credential, is 401 just when it says so")
    func earlyRefusalRoutes() async throws {
        let h = try await ServerHarness(.sqlite, settings: { $0.rateLimits.failedAuthenticationPerAddress = nil })
        defer { Task { await h.stop() } }
        let router = makeRouter(API(service: PaymentService(state: h.state, store: h.store)))
        #expect(router.routes.count > 20)
        for route in router.routes {
            let path = "\(route.path)".split(separator: "/").map { $0.hasPrefix(":") ? "fake" : String($0) }.joined(separator: "/")
            // A gateway's routes answer by their own verification (a forged notification is 401 too).
            guard !path.hasPrefix("v1/notifications/") else {
                #expect(!API.authenticates(path: "/" + path))
                continue
            }
            let answer = try await h.send(route.method.rawValue, path, json: route.method == .get ? nil : "{}", key: .some(nil))
            #expect((answer.status == 401) == API.authenticates(path: "/" + path), "\(route.method) /\(path): \(answer.status)")
        }
        #expect(API.authenticates(path: "/v1/payments?merchantReference=x"))
        #expect(!API.authenticates(path: "/v1/notifications/payfort?x=1"))
        #expect(!API.authenticates(path: "/healthz"))
        #expect(API.authenticates(path: "//v1/payments/pay_1"), "split as the router splits")
        #expect(!API.authenticates(path: "/v1//notifications/payfort"), "never a notification, however written")
        #expect(EarlyRefusal.httpDate(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}

extension RateLimitTests {
    @Test("the connection's handler: a refused request never reaches the application; one behind a request in progress does")
    func earlyRefusalHandler() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("early-handler"))
        let (id, secret) = (try #require(created.json["id"] as? String), try #require(created.json["clientSecret"] as? String))
        let api = API(service: PaymentService(state: h.state, store: h.store))
        #expect(api.limits.clientSecrets.take(id, limit: RateLimit(perSecond: 0.001, burst: 1), now: TokenBuckets.monotonicSeconds()) == nil)
        let channel = EmbeddedChannel(handler: EarlyRefusal(api: api, serverName: "till"))
        func request(_ credential: String, method: HTTPRequest.Method = .get) -> HTTPRequestPart {
            var request = HTTPRequest(method: method, scheme: nil, authority: "127.0.0.1", path: "/v1/payments/\(id)")
            request.headerFields[.authorization] = "Bearer \(credential)"
            return .head(request)
        }
        func passedOn() throws -> Bool { try channel.readInbound(as: HTTPRequestPart.self) != nil }

        try channel.writeInbound(request(secret))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "dropped")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try !passedOn(), "refused on the connection")
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else { Issue.record("no answer"); return }
        #expect(head.status == .tooManyRequests)
        #expect(head.headerFields[.retryAfter] != nil)
        #expect(head.headerFields[.server] == "till")
        #expect(head.headerFields[.date]?.hasSuffix(" GMT") == true)
        guard case .body(let body) = try channel.readOutbound(as: HTTPResponsePart.self) else { Issue.record("no body"); return }
        #expect(String(buffer: body).contains(#""code":"rate_limited""#))
        guard case .end = try channel.readOutbound(as: HTTPResponsePart.self) else { Issue.record("no end"); return }

        // HEAD, and anything while an earlier request is being answered, goes the usual way.
        try channel.writeInbound(request(secret, method: .head))
        #expect(try passedOn(), "HEAD is the application's")
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try passedOn())
        try channel.writeInbound(request(secret))
        #expect(try passedOn(), "pipelined behind the HEAD still being answered")
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try passedOn())
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        // Both answered: refused on the connection again; a merchant's key never is.
        try channel.writeInbound(request(secret))
        #expect(try !passedOn())
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(request(h.apiKey))
        #expect(try passedOn())
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}

extension RawConnection {
    /// The status codes of the next `count` answers on the connection, in order (waits up to 5 s for them).
    func statuses(count: Int) -> [Int] {
        var received = ""
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(5)
        while received.components(separatedBy: "HTTP/1.1 ").count - 1 < count, Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { break }
            if n > 0 { received += String(decoding: buffer[0..<n], as: UTF8.self) }
        }
        return received.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }
}

extension ServerHarness {
    /// The value of a key the harness's environment gave (tests that configure more keys).
    func environmentKey(_ name: String) -> String { environment[name] ?? "" }
}
