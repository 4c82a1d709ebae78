import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
@testable import TillServer
import TillTesting

/// Attacks on per-payment client secrets, as the customer who unpacked the app (and holds one
/// payment's secret) would make them: over loopback, against the real server, on both stores.
@Suite("Attack: per-payment client secrets")
struct ClientSecretAttackTests {
    @Test("payment A's secret on payment B's routes, same merchant or another: every read, prepare, submit, outcome and inquiry is 404 not_found, the answer names nothing of B, and B is unchanged",
          arguments: StoreKind.available)
    func otherPayments(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let mine = try await s.create(as: s.a)
        let sibling = try await s.create(as: s.a)
        let foreign = try await s.create(as: s.b)
        let siblingAttempt = try await s.prepare(sibling.id, bearer: s.a.key)
        let foreignAttempt = try await s.prepare(foreign.id, bearer: s.b.key)

        for (victim, attempt) in [(sibling.id, siblingAttempt), (foreign.id, foreignAttempt)] {
            let attacks: [(String, String, String?)] = [
                ("GET", "/v1/payments/\(victim)", nil),
                ("POST", "/v1/payments/\(victim)/attempts", "{}"),
                ("POST", "/v1/payments/\(victim)/attempts", #"{"customerRequested":true,"returnURLs":["https://evil.example/"]}"#),
                ("GET", "/v1/attempts/\(attempt)", nil),
                ("POST", "/v1/attempts/\(attempt)/inquire", nil),
                ("POST", "/v1/attempts/\(attempt)/submit", #"{"kind":"card","fields":{}}"#),
                ("POST", "/v1/attempts/\(attempt)/outcome", #"{"kind":"succeeded","handedOff":true}"#),
            ]
            for (method, path, json) in attacks {
                let answer = try await s.call(method, path, json: json, bearer: mine.secret)
                #expect(answer.status == 404 && answer.errorCode == "not_found", "\(method) \(path): \(answer.status) \(answer.text)")
                #expect(!answer.text.contains(victim) && !answer.text.contains(attempt) && !answer.text.contains(s.b.id),
                        "\(method) \(path) leaked: \(answer.text)")
            }
        }
        // Both victims exactly as before: one pending attempt, no outcome recorded, no hand-off.
        for (victim, owner) in [(sibling.id, s.a), (foreign.id, s.b)] {
            let stored = try #require(try await s.store.payment(id: victim, merchant: owner.id))
            #expect(stored.status == .pending && stored.attempts.count == 1)
            #expect(stored.attempts.first?.clientOutcome == nil && stored.attempts.first?.handedOff == false)
        }
        // And the secret still works on its own payment.
        #expect(try await s.call("GET", "/v1/payments/\(mine.id)", bearer: mine.secret).status == 200)
    }

    @Test("a client secret on create and on the quarantine is 403 forbidden and creates nothing; on the notification endpoint it is no credential at all: an unsigned 'paid' naming its own attempt is 401 and moves nothing",
          arguments: StoreKind.available)
    func merchantOnlyRoutes(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let mine = try await s.create(as: s.a)
        let attempt = try await s.prepare(mine.id, bearer: mine.secret)
        let reference = "by-secret-\(UUID().uuidString.prefix(8))"

        let create = try await s.call("POST", "/v1/payments", json: ServerHarness.intentJSON(reference), bearer: mine.secret)
        #expect(create.status == 403 && create.errorCode == "forbidden", "\(create.status) \(create.text)")
        #expect(!create.text.contains("_secret_"))
        let replay = try await s.call("POST", "/v1/payments", json: ServerHarness.intentJSON(reference), bearer: mine.secret,
                                      headers: [("Idempotency-Key", "k-\(reference)")])
        #expect(replay.status == 403)
        #expect(try await count(s.store, "till_payments", where: "merchant_reference = '\(reference)'") == 0)
        for path in ["/v1/quarantine", "/v1/quarantine?limit=1000"] {
            let answer = try await s.call("GET", path, bearer: mine.secret)
            #expect(answer.status == 403 && answer.errorCode == "forbidden", "\(path): \(answer.status)")
        }

        // The notification endpoint takes no bearer credential: the secret does not make a body genuine.
        let unsigned = #"{"attempt":"\#(attempt)","status":"paid","amount":{"value":2500,"currency":"USD"},"eventId":"forged"}"#
        let notified = try await s.call("POST", "/v1/notifications/fake", json: unsigned, bearer: mine.secret)
        #expect(notified.status == 401, "\(notified.status) \(notified.text)")
        // Signed with a made-up key, and with the client secret itself as the key: still refused.
        for key in ["not-the-gateway-secret", mine.secret] {
            let mac = Hex.encode(HMAC<SHA256>.authenticationCode(for: Data(unsigned.utf8), using: SymmetricKey(data: Data(key.utf8))))
            let answer = try await s.call("POST", "/v1/notifications/fake", json: unsigned, bearer: mine.secret,
                                          headers: [("x-fake-signature", mac)])
            #expect(answer.status == 401, "\(answer.status) \(answer.text)")
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await s.store.payment(id: mine.id, merchant: s.a.id)?.status == .pending)
        #expect(try await s.store.notificationCount(attempt: AttemptReference(rawValue: attempt)) == 0)
    }

    @Test("Authorization header tricks are 401 unauthorized, never a merchant's reach (the scheme name in any case reaches only the secret's own payment): odd scheme, tab or two spaces, the secret twice or beside the key in two headers, the secret glued to the key either way, Basic, a query parameter, a cookie",
          arguments: StoreKind.available)
    func headerTricks(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let mine = try await s.create(as: s.a)
        let other = try await s.create(as: s.a)
        let path = "/v1/payments/\(mine.id)"

        let tricks: [(String, [(String, String)], String)] = [
            ("no scheme", [("Authorization", mine.secret)], path),
            ("tab", [("Authorization", "Bearer\t\(mine.secret)")], path),
            ("two spaces", [("Authorization", "Bearer  \(mine.secret)")], path),
            ("two headers, secret twice", [("Authorization", "Bearer \(mine.secret)"), ("Authorization", "Bearer \(mine.secret)")], path),
            ("two headers, secret then key", [("Authorization", "Bearer \(mine.secret)"), ("Authorization", "Bearer \(s.a.key)")],
             "/v1/payments/\(other.id)"),
            ("two headers, key then secret", [("Authorization", "Bearer \(s.a.key)"), ("Authorization", "Bearer \(mine.secret)")],
             "/v1/payments/\(other.id)"),
            ("one header, comma list", [("Authorization", "Bearer \(mine.secret), Bearer \(s.a.key)")], "/v1/payments/\(other.id)"),
            ("secret with key appended", [("Authorization", "Bearer \(mine.secret)\(s.a.key)")], "/v1/payments/\(other.id)"),
            ("secret, space, key", [("Authorization", "Bearer \(mine.secret) \(s.a.key)")], "/v1/payments/\(other.id)"),
            ("key with secret appended", [("Authorization", "Bearer \(s.a.key)\(mine.secret)")], "/v1/payments/\(other.id)"),
            ("secret's id with another secret part", [("Authorization", "Bearer \(other.id)_secret_\(mine.secret.suffix(43))")],
             "/v1/payments/\(other.id)"),
            ("Basic", [("Authorization", "Basic " + Data("\(mine.secret):".utf8).base64EncodedString())], path),
            ("query parameter", [], "\(path)?client_secret=\(mine.secret)"),
            ("cookie", [("Cookie", "client_secret=\(mine.secret)")], path),
            ("X-Api-Key", [("X-Api-Key", mine.secret)], path),
        ]
        for (name, headers, target) in tricks {
            let answer = try await s.raw("GET", target, headers: headers)
            #expect(answer.status == 401 && answer.errorCode == "unauthorized", "\(name): \(answer.status) \(answer.text)")
            #expect(!answer.text.contains(mine.secret) && !answer.text.contains(s.a.key), "\(name) echoed a credential")
        }
        // The scheme name is case-insensitive in HTTP: any case reaches the secret's own payment, and only that.
        for scheme in ["bearer", "BEARER", "BeArEr"] {
            let own = try await s.raw("GET", path, headers: [("Authorization", "\(scheme) \(mine.secret)")])
            #expect(own.status == 200, "\(scheme): \(own.status)")
            let another = try await s.raw("GET", "/v1/payments/\(other.id)", headers: [("Authorization", "\(scheme) \(mine.secret)")])
            #expect(another.status == 404, "\(scheme) on another payment: \(another.status)")
        }
        // Trailing whitespace is optional whitespace in HTTP: the server may strip it; then it is the
        // secret itself, and still only its own payment.
        let trailing = try await s.raw("GET", path, headers: [("Authorization", "Bearer \(mine.secret) ")])
        #expect([200, 401].contains(trailing.status), "\(trailing.status)")
        let trailingOther = try await s.raw("GET", "/v1/payments/\(other.id)", headers: [("Authorization", "Bearer \(mine.secret) ")])
        #expect([401, 404].contains(trailingOther.status), "\(trailingOther.status)")
        // The plain header works (the tricks above were refused for what they are, not for the secret).
        #expect(try await s.raw("GET", path, headers: [("Authorization", "Bearer \(mine.secret)")]).status == 200)
    }

    @Test("path tricks with payment A's secret: dot segments, encoded slashes and dots, encoded or upper-case ids, trailing and double slashes, parameters, fragments, an absolute-form target: none answers anything of B or changes B",
          arguments: StoreKind.available)
    func pathTricks(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let mine = try await s.create(as: s.a)
        let myAttempt = try await s.prepare(mine.id, bearer: mine.secret)
        let victim = try await s.create(as: s.a)
        let victimAttempt = try await s.prepare(victim.id, bearer: s.a.key)
        let b = victim.id
        let encodedB = "pay_%" + String(format: "%02X", Character(String(b.dropFirst(4).prefix(1))).asciiValue!) + b.dropFirst(5)
        let attacks: [(String, String)] = [
            ("GET", "/v1/payments/\(mine.id)/../\(b)"),
            ("GET", "/v1/payments/\(mine.id)/..%2F\(b)"),
            ("GET", "/v1/payments/\(mine.id)%2F..%2F\(b)"),
            ("GET", "/v1/payments/\(mine.id)/%2E%2E/\(b)"),
            ("GET", "/v1/payments/\(mine.id)/../../v1/payments/\(b)"),
            ("GET", "/v1/./payments/\(b)"),
            ("GET", "/v1/payments/\(encodedB)"),
            ("GET", "/v1/payments/\(b.uppercased())"),
            ("GET", "/v1/payments/\(b)/"),
            ("GET", "/v1/payments//\(b)"),
            ("GET", "//v1/payments/\(b)"),
            ("GET", "/v1/payments/\(b)?id=\(mine.id)"),
            ("GET", "/v1/payments/\(b);\(mine.id)"),
            ("GET", "/v1/payments/\(b)%00\(mine.id)"),
            ("GET", "/v1/payments/\(b)#\(mine.id)"),
            ("GET", "http://127.0.0.1:\(s.port)/v1/payments/\(b)"),
            ("GET", "/v1/attempts/\(myAttempt)/../\(victimAttempt)"),
            ("GET", "/v1/attempts/\(victimAttempt)/"),
            ("GET", "/v1/attempts/\(victimAttempt.uppercased())"),
            ("POST", "/v1/payments/\(mine.id)/../\(b)/attempts"),
            ("POST", "/v1/payments/\(b)/attempts/"),
            ("POST", "/v1/attempts/\(myAttempt)/../\(victimAttempt)/outcome"),
            ("POST", "/v1/attempts/\(victimAttempt)/outcome/"),
        ]
        for (method, target) in attacks {
            let body = method == "POST" ? (target.hasSuffix("outcome") || target.hasSuffix("outcome/") ? #"{"kind":"succeeded","handedOff":true}"# : "{}") : nil
            let answer = try await s.raw(method, target, headers: [("Authorization", "Bearer \(mine.secret)")], body: body)
            #expect(!(200..<300).contains(answer.status), "\(method) \(target): \(answer.status) \(answer.text)")
            #expect(!answer.text.contains(b) && !answer.text.contains(victimAttempt), "\(method) \(target) leaked B: \(answer.text)")
        }
        // Its own payment through an encoded id is either read (decoded) or not found, never anything else.
        let encodedMine = "pay_%" + String(format: "%02X", Character(String(mine.id.dropFirst(4).prefix(1))).asciiValue!) + mine.id.dropFirst(5)
        let own = try await s.raw("GET", "/v1/payments/\(encodedMine)", headers: [("Authorization", "Bearer \(mine.secret)")])
        #expect([200, 404].contains(own.status))
        let stored = try #require(try await s.store.payment(id: victim.id, merchant: s.a.id))
        #expect(stored.attempts.count == 1 && stored.attempts.first?.clientOutcome == nil && stored.attempts.first?.handedOff == false)
    }

    @Test("the secret is never echoed: not by a read with the secret or the key, not in any error answer or response header, not in any log line at trace level; X-Request-Id cannot carry it; the store holds only its SHA-256",
          arguments: StoreKind.available)
    func neverEchoed(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let mine = try await s.create(as: s.a)
        let part = String(mine.secret.suffix(ClientSecret.secretLength))
        let attempt = try await s.prepare(mine.id, bearer: mine.secret)
        let other = try await s.create(as: s.a)
        var answers: [SecretAttackServer.RawAnswer] = []
        answers.append(try await s.call("GET", "/v1/payments/\(mine.id)", bearer: mine.secret))
        answers.append(try await s.call("GET", "/v1/payments/\(mine.id)", bearer: s.a.key))
        answers.append(try await s.call("GET", "/v1/attempts/\(attempt)", bearer: mine.secret))
        answers.append(try await s.call("POST", "/v1/attempts/\(attempt)/outcome", json: #"{"kind":"unknown"}"#, bearer: mine.secret))
        answers.append(try await s.call("POST", "/v1/payments/\(mine.id)/attempts", json: "{}", bearer: mine.secret))   // 409
        answers.append(try await s.call("GET", "/v1/payments/\(other.id)", bearer: mine.secret))                        // 404
        answers.append(try await s.call("GET", "/v1/payments/\(mine.id)", bearer: mine.secret + "x"))                   // 401
        answers.append(try await s.call("POST", "/v1/payments", json: "{}", bearer: mine.secret))                       // 403
        answers.append(try await s.call("POST", "/v1/attempts/\(attempt)/outcome", json: #"{"kind":"#, bearer: mine.secret))   // 400
        let asRequestID = try await s.call("GET", "/v1/payments/\(mine.id)", bearer: mine.secret, headers: [("X-Request-Id", mine.secret)])
        answers.append(asRequestID)
        for answer in answers {
            #expect(!answer.text.contains(part), "\(answer.status) body: \(answer.text)")
            for (name, value) in answer.headers { #expect(!value.contains(part) && !value.contains(mine.secret), "header \(name): \(value)") }
            #expect(answer.json["clientSecret"] == nil)
        }
        // The X-Request-Id echo refuses the secret's shape (it has '_'), so a request id never carries one.
        #expect(asRequestID.headers["x-request-id"] != mine.secret)
        let lines = s.logs.lines
        #expect(!lines.isEmpty, "the capture saw the server's log lines")
        for line in lines where line.contains(part) { Issue.record("a log line carries the secret: \(line)") }
        let digest = Hex.encode(SHA256.hash(data: Data(part.utf8)))
        #expect(try await count(s.store, "till_payments", where: "id = '\(mine.id)' AND client_secret_hash = '\(digest)'") == 1)
        #expect(try await count(s.store, "till_attempts", where: "payment_id = '\(mine.id)' AND client_outcome LIKE '%\(part)%'") == 0)
    }

    @Test("a replayed create under the same Idempotency-Key with a different body is 409 idempotency_conflict: no secret in the answer, no payment of the first body shown, and the secret issued first keeps working (no rotation)",
          arguments: StoreKind.available)
    func conflictingReplay(kind: StoreKind) async throws {
        let s = try await SecretAttackServer(kind)
        defer { Task { await s.stop() } }
        let reference = "order-\(UUID().uuidString.prefix(8))"
        let key = [("Idempotency-Key", "k-\(reference)")]
        let first = try await s.call("POST", "/v1/payments", json: ServerHarness.intentJSON(reference), bearer: s.a.key, headers: key)
        #expect(first.status == 201)
        let id = try #require(first.json["id"] as? String)
        let secret = try #require(first.json["clientSecret"] as? String)
        for changed in [ServerHarness.intentJSON(reference, minor: 1), ServerHarness.intentJSON("other-\(reference)"),
                        ServerHarness.intentJSON(reference, method: "alipay")] {
            let replay = try await s.call("POST", "/v1/payments", json: changed, bearer: s.a.key, headers: key)
            #expect(replay.status == 409 && replay.errorCode == "idempotency_conflict", "\(replay.status) \(replay.text)")
            #expect(!replay.text.contains("_secret_") && !replay.text.contains(id), "\(replay.text)")
            #expect(replay.headers["idempotent-replayed"] == nil)
        }
        // Merchant B sending A's key and body gets its own payment, never A's or A's secret.
        let fromB = try await s.call("POST", "/v1/payments", json: ServerHarness.intentJSON(reference), bearer: s.b.key, headers: key)
        #expect(fromB.status == 201 && fromB.json["id"] as? String != id)
        #expect(fromB.json["clientSecret"] as? String != secret)
        #expect(try await s.call("GET", "/v1/payments/\(id)", bearer: secret).status == 200, "the first secret still works")
        #expect(try await s.call("GET", "/v1/payments/\(id)", bearer: try #require(fromB.json["clientSecret"] as? String)).status == 404)
    }

    @Test("once paid, customerRequested prepares with the secret are 409 already_paid every time and add no attempt; before that a secret can start at most maxAttempts attempts (attempts_exhausted), and never one beside an open attempt (attempt_in_progress)",
          arguments: StoreKind.available)
    func burnAttempts(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let retry = #"{"customerRequested":true,"returnURLs":["shop://till/return"]}"#
        // A payment the customer pays on its first attempt.
        let paid = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))"))
        let paidID = try #require(paid.json["id"] as? String)
        let paidSecret = try #require(paid.json["clientSecret"] as? String)
        let first = try await h.send("POST", "v1/payments/\(paidID)/attempts", json: retry, key: .some(paidSecret))
        #expect(first.status == 201)
        let firstAttempt = AttemptReference(rawValue: try #require(first.json["attempt"] as? String))
        let open = try await h.send("POST", "v1/payments/\(paidID)/attempts", json: retry, key: .some(paidSecret))
        #expect(open.status == 409 && open.errorCode == "attempt_in_progress", "\(open.status) \(open.errorCode ?? "")")
        try await h.gateway("fake").settle(firstAttempt, as: .paid)
        #expect(try await h.status(of: paidID) == "paid")
        for _ in 0..<10 {
            let answer = try await h.send("POST", "v1/payments/\(paidID)/attempts", json: retry, key: .some(paidSecret))
            #expect(answer.status == 409 && answer.errorCode == "already_paid", "\(answer.status) \(answer.errorCode ?? "")")
        }
        #expect(try await count(h.store, "till_attempts", where: "payment_id = '\(paidID)'") == 1)

        // A payment whose attempts are declined: the customer's retries stop at maxAttempts (3 here).
        let declined = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))"))
        let declinedID = try #require(declined.json["id"] as? String)
        let declinedSecret = try #require(declined.json["clientSecret"] as? String)
        var made = 0
        for _ in 0..<6 {
            let answer = try await h.send("POST", "v1/payments/\(declinedID)/attempts", json: retry, key: .some(declinedSecret))
            guard answer.status == 201 else {
                #expect(answer.status == 409 && answer.errorCode == "attempts_exhausted", "\(answer.status) \(answer.errorCode ?? "")")
                continue
            }
            made += 1
            try await h.gateway("fake").settle(AttemptReference(rawValue: try #require(answer.json["attempt"] as? String)), as: .failed, code: "hard")
        }
        #expect(made == 3)
        #expect(try await count(h.store, "till_attempts", where: "payment_id = '\(declinedID)'") == 3)
        #expect(await h.gateway("fake").ledger.charges.keys.map(\.rawValue) == [firstAttempt.rawValue], "only the paid payment was charged")
    }

    @Test("a secret's inquiries of its own open attempt are rate-limited: 25 in a burst reach the gateway once (once per attempt every 5 s; the rest answer the stored view); the merchant's key is not budgeted",
          arguments: StoreKind.available)
    func inquiryAmplification(kind: StoreKind) async throws {
        // A clock that stands still: however slowly a loaded machine serves the 25 requests, they are one burst.
        let h = try await ServerHarness(kind, clock: VirtualClock())
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))"))
        let id = try #require(created.json["id"] as? String)
        let secret = try #require(created.json["clientSecret"] as? String)
        let prepared = try await h.send("POST", "v1/payments/\(id)/attempts", json: #"{"returnURLs":["shop://till/return"]}"#, key: .some(secret))
        let attempt = try #require(prepared.json["attempt"] as? String)
        let before = await h.gateway("fake").ledger.inquiries
        var statuses: [Int] = []
        for _ in 0..<25 {
            statuses.append(try await h.send("POST", "v1/attempts/\(attempt)/inquire", key: .some(secret)).status)
        }
        let reached = await h.gateway("fake").ledger.inquiries - before
        // One gateway inquiry per attempt every 5 seconds for an app; the rest answer the stored view.
        #expect(reached == 1, "\(reached) of 25 inquiries reached the gateway; answers \(Set(statuses))")
        #expect(statuses.allSatisfy { $0 == 200 })
        // The merchant's own backend (its key) is not an app: its inquiries are not budgeted.
        try await h.send("POST", "v1/attempts/\(attempt)/inquire")
        #expect(await h.gateway("fake").ledger.inquiries - before == 2)
    }
}

// MARK: - A two-merchant server that answers raw HTTP

/// One merchant server on 127.0.0.1 with two merchants, A and B (each with its own API key, its own
/// `fake` gateway notification secret, and the custom return scheme `shop`), a log capture at trace
/// level, and a raw HTTP/1.1 client: the request line and header lines go out exactly as written
/// (no path normalisation, repeated headers kept), as an attacker would send them.
final class SecretAttackServer: @unchecked Sendable {
    typealias Merchant = TwoMerchantServer.Merchant

    /// Every log line the server wrote, with its metadata.
    final class Logs: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String] = []
        func append(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
        var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
    }

    struct Capture: LogHandler {
        let logs: Logs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            logs.append("\(event.level) \(event.message) \(all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        }
    }

    struct RawAnswer {
        let status: Int
        let headers: [String: String]
        let body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorField: String? { (json["error"] as? [String: Any])?["field"] as? String }
    }

    let a: Merchant
    let b: Merchant
    let store: any PaymentStore
    let port: Int
    let logs = Logs()
    private let task: Task<Void, any Error>

    init(_ kind: StoreKind, maxAttempts: Int = 3) async throws {
        let (a, b, state) = try TwoMerchantServer.merchants(maxAttempts: maxAttempts, maxBodyBytes: 16_384)
        (self.a, self.b) = (a, b)
        store = try await kind.open()
        let logs = self.logs
        var logger = Logger(label: "till.attack") { _ in Capture(logs: logs) }
        logger.logLevel = .trace
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store, logger: logger) { continuation.yield($0) }
        task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        port = await iterator.next() ?? 0
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        try? await store.close()
    }

    /// A request with a bearer credential (none for nil) and extra header lines.
    func call(_ method: String, _ target: String, json: String? = nil, bearer: String?,
              headers: [(String, String)] = []) async throws -> RawAnswer {
        try await raw(method, target, headers: (bearer.map { [("Authorization", "Bearer \($0)")] } ?? []) + headers, body: json)
    }

    /// Creates a payment for `merchant`: its id and client secret.
    func create(as merchant: Merchant, minor: Int = 2500) async throws -> (id: String, secret: String) {
        let created = try await call("POST", "/v1/payments", json: ServerHarness.intentJSON("order-\(UUID().uuidString.prefix(8))", minor: minor),
                                     bearer: merchant.key)
        #expect(created.status == 201, "\(created.text)")
        return (try #require(created.json["id"] as? String), try #require(created.json["clientSecret"] as? String))
    }

    /// Prepares the payment's next attempt with `bearer`; its reference.
    func prepare(_ id: String, bearer: String) async throws -> String {
        let prepared = try await call("POST", "/v1/payments/\(id)/attempts", json: #"{"returnURLs":["shop://till/return"]}"#, bearer: bearer)
        #expect(prepared.status == 201, "\(prepared.text)")
        return try #require(prepared.json["attempt"] as? String)
    }

    /// Posts a notification signed as `merchant`'s gateway signs it.
    func notify(_ report: StatusReport, signedBy merchant: Merchant) async throws -> RawAnswer {
        let notification = merchant.gateway.signedNotification(for: report)
        return try await raw("POST", "/v1/notifications/fake", headers: notification.headers.map { ($0.key, $0.value) },
                             body: String(decoding: notification.body, as: UTF8.self))
    }

    /// One HTTP/1.1 exchange on a fresh connection, the request written exactly as given.
    func raw(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil) async throws -> RawAnswer {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        var lines = headers
        if let body {
            if !lines.contains(where: { $0.0.lowercased() == "content-type" }) { lines.append(("Content-Type", "application/json")) }
            lines.append(("Content-Length", "\(body.utf8.count)"))
        } else if method == "POST" {
            lines.append(("Content-Length", "0"))
        }
        for (name, value) in lines { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n" + (body ?? "")).utf8)
        let port = self.port
        let received: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Self.exchange(port: port, bytes) })
            }
        }
        return try Self.parse(received)
    }

    struct SocketError: Error, CustomStringConvertible { let description: String }

    private static func exchange(port: Int, _ bytes: [UInt8]) throws -> [UInt8] {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw SocketError(description: "socket: \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SocketError(description: "connect: \(errno)") }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw SocketError(description: "send: \(errno)") }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n]; if complete(received) { break }; continue }
            if n == 0 || !received.isEmpty { break }
            throw SocketError(description: "recv: \(errno)")
        }
        return received
    }

    /// Whether a whole response (by Content-Length or a final chunk) has arrived.
    private static func complete(_ bytes: [UInt8]) -> Bool {
        guard let end = headerEnd(bytes) else { return false }
        let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
        if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
           let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) {
            return bytes.count - (end + 4) >= length
        }
        if head.contains("transfer-encoding: chunked") {
            return bytes.count >= 5 && Array(bytes.suffix(5)) == Array("0\r\n\r\n".utf8)
        }
        return false
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private static func parse(_ bytes: [UInt8]) throws -> RawAnswer {
        guard let end = headerEnd(bytes) else { throw SocketError(description: "no HTTP response: \(String(decoding: bytes, as: UTF8.self))") }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw SocketError(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            var decoded: [UInt8] = []
            var rest = body[...]
            while let lineEnd = rest.indices.first(where: { rest[$0] == 13 && rest.index(after: $0) < rest.endIndex && rest[rest.index(after: $0)] == 10 }),
                  let size = Int(String(decoding: rest[rest.startIndex..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16), size > 0 {
                let start = lineEnd + 2
                decoded += rest[start..<min(start + size, rest.endIndex)]
                rest = rest[min(start + size + 2, rest.endIndex)...]
            }
            body = decoded
        }
        return RawAnswer(status: status, headers: headers, body: Data(body))
    }
}
