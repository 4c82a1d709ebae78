import Foundation
import Hummingbird
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
@testable import TillServer
import TillTesting
import Metrics

/// A browser's part, by hand: no redirect followed, the console's cookie kept and sent only when asked.
final class ConsoleClient: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let base: URL
    var cookie: String?
    private var session: URLSession!

    struct Page {
        let status: Int
        let headers: [String: String]
        let text: String
        var location: String? { headers["location"] }
        /// The CSRF token of the page's first form that carries one.
        var csrf: String? {
            guard let range = text.range(of: #"name="csrf" value=""#) else { return nil }
            return String(text[range.upperBound...].prefix { $0 != "\"" })
        }
        func hidden(_ name: String) -> String? {
            guard let range = text.range(of: #"name="\#(name)" value=""#) else { return nil }
            return String(text[range.upperBound...].prefix { $0 != "\"" })
        }
    }

    init(port: Int) {
        base = URL(string: "http://127.0.0.1:\(port)")!
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    func get(_ path: String, cookie: String?? = .none) async throws -> Page {
        try await send("GET", path, form: nil, cookie: cookie)
    }

    func post(_ path: String, _ form: [(String, String)], cookie: String?? = .none, headers: [String: String] = [:]) async throws -> Page {
        try await send("POST", path, form: form, cookie: cookie, headers: headers)
    }

    private func send(_ method: String, _ path: String, form: [(String, String)]?, cookie: String?? = .none,
                      headers: [String: String] = [:]) async throws -> Page {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        if let form {
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            request.httpBody = Data(form.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&").utf8)
        }
        let sent: String? = switch cookie { case .none: self.cookie; case .some(let given): given }
        if let sent { request.setValue("till_console=\(sent)", forHTTPHeaderField: "Cookie") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        return Page(status: http.statusCode, headers: fields, text: String(decoding: data, as: UTF8.self))
    }

    /// Signs in with `token`; keeps the cookie when it worked.
    @discardableResult
    func signIn(_ token: String) async throws -> Page {
        let page = try await post("/login", [("token", token)], cookie: .some(nil))
        if page.status == 303, let set = page.headers["set-cookie"], set.hasPrefix("till_console=") {
            cookie = String(set.dropFirst("till_console=".count).prefix { $0 != ";" })
        }
        return page
    }
}

/// The operator console, as a browser and an attacker use it: sign-in, pages, escaping, the CSRF token, actions
/// and their audit, the headers every answer carries.
@Suite("Operator console")
struct ConsoleTests {
    static let token = "console-test-operator-token-0000000001"
    static let otherToken = "console-test-auditor-token-00000000002"

    /// A console over `h`'s server and store on a free port.
    static func console(_ h: ServerHarness) async throws -> (ConsoleClient, Task<Void, any Error>) {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let dependencies = ConsoleDependencies(state: h.state, store: h.store,
                                               operators: [ResolvedOperator(name: "alice", token: token), ResolvedOperator(name: "bob", token: otherToken)],
                                               latencies: GatewayLatencies())
        let app = buildConsoleApplication(dependencies, host: "127.0.0.1", port: 0) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var ports = stream.makeAsyncIterator()
        let port = try #require(await ports.next())
        return (ConsoleClient(port: port), task)
    }

    @Test("off unless server.console.listen is set; refused on the API's or the metrics' port, without operators, or with a short token")
    func configuration() throws {
        #expect(ServerSettings().console.listen == nil)
        #expect(ServerSettings().console.validate(path: "server.console", apiListen: "127.0.0.1:8080", metricsListen: nil).isEmpty)
        let person = ConsoleSettings.Operator(name: "ops", token: CredentialReference(env: "TOKEN"))
        func issues(_ settings: ConsoleSettings, metrics: String? = "127.0.0.1:9464") -> [String] {
            settings.validate(path: "server.console", apiListen: "0.0.0.0:8080", metricsListen: metrics).map(\.field)
        }
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:9465", operators: [person])).isEmpty)
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:8080", operators: [person])) == ["server.console.listen"])
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:9464", operators: [person])) == ["server.console.listen"])
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:9465")) == ["server.console.operators"])
        #expect(issues(ConsoleSettings(listen: "localhost", operators: [person])) == ["server.console.listen"])
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:9465", operators: [ConsoleSettings.Operator(name: "a|b", token: person.token)]))
                == ["server.console.operators[0].name"])
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:9465", operators: [person, person])) == ["server.console.operators[1].name"])
        #expect(issues(ConsoleSettings(listen: "127.0.0.1:9465", operators: [person], sessionMinutes: 0)) == ["server.console.sessionMinutes"])
        let file = #"{"listen":"127.0.0.1:9465","operators":[{"name":"ops","token":{"env":"TOKEN"}}]}"#
        #expect(try JSONDecoder().decode(ConsoleSettings.self, from: Data(file.utf8)) == ConsoleSettings(listen: "127.0.0.1:9465", operators: [person]))
        let short = ConsoleSettings(listen: "127.0.0.1:9465", operators: [person])
        #expect(throws: StartupError.self) { try short.resolveOperators(environment: ["TOKEN": "too-short"]) }
        #expect(throws: StartupError.self) { try short.resolveOperators(environment: [:]) }
        #expect(try short.resolveOperators(environment: ["TOKEN": Self.token]).map(\.name) == ["ops"])
    }

    @Test("a session is the cookie the console signed: another operator's name, a changed expiry or an old cookie is nobody")
    func sessions() throws {
        let sessions = ConsoleSessions(operators: [ResolvedOperator(name: "alice", token: Self.token), ResolvedOperator(name: "bob", token: Self.otherToken)],
                                       sessionMinutes: 60)
        let now = Date()
        let alice = try #require(sessions.signIn(token: Self.token))
        #expect(sessions.signIn(token: Self.token + "x") == nil)
        #expect(sessions.signIn(token: "") == nil)
        let cookie = sessions.cookie(for: alice, now: now)
        let session = try #require(sessions.session(cookie: cookie, now: now))
        #expect(session.operatorName == "alice")
        #expect(session.csrf.count == 64)
        var parts = cookie.split(separator: "|").map(String.init)
        #expect(sessions.session(cookie: (["bob"] + parts[1...]).joined(separator: "|"), now: now) == nil)
        parts[1] = String(Int64(parts[1])! + 3_600)
        #expect(sessions.session(cookie: parts.joined(separator: "|"), now: now) == nil)
        #expect(sessions.session(cookie: cookie, now: now.addingTimeInterval(3_601)) == nil)
        #expect(sessions.session(cookie: "alice|9999999999|00|00", now: now) == nil)
        #expect(sessions.session(cookie: "", now: now) == nil)
        // Two sign-ins are two sessions, each with its own CSRF token.
        let again = try #require(sessions.session(cookie: sessions.cookie(for: alice, now: now), now: now))
        #expect(again.csrf != session.csrf)
    }

    @Test("every page needs a signed-in operator; a wrong token is refused; every answer forbids script, framing and caching",
          arguments: StoreKind.available)
    func signIn(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (client, task) = try await Self.console(h)
        defer { task.cancel() }
        for path in ["/", "/payments", "/payments/pay_1", "/gateways", "/reconciliation", "/quarantine", "/audit", "/confirm?action=void&payment=x"] {
            let page = try await client.get(path)
            #expect(page.status == 303 && page.location == "/login", "\(path): \(page.status)")
        }
        let wrong = try await client.signIn("not-the-operator-token-000000000000000")
        #expect(wrong.status == 401 && wrong.headers["set-cookie"] == nil && client.cookie == nil)
        #expect(try await client.get("/payments", cookie: "alice|9999999999|0011|00").status == 303)
        let right = try await client.signIn(Self.token)
        #expect(right.status == 303 && right.location == "/payments")
        let set = try #require(right.headers["set-cookie"])
        #expect(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/"), "\(set)")
        for path in ["/payments", "/gateways", "/reconciliation", "/quarantine", "/audit", "/login", "/no-such-page", "/console.css"] {
            let page = try await client.get(path)
            #expect(page.headers["content-security-policy"] == ConsoleHeaders<BasicRequestContext>.contentSecurityPolicy, "\(path)")
            #expect(page.headers["x-frame-options"] == "DENY" && page.headers["x-content-type-options"] == "nosniff", "\(path)")
            // Not no-referrer: under it a browser sends `Origin: null` with the console's own forms, which are then refused.
            #expect(page.headers["referrer-policy"] == "same-origin", "\(path)")
            #expect(path == "/console.css" || page.headers["cache-control"] == "no-store", "\(path)")
            #expect(!page.text.contains("<script"), "\(path) has a script")
        }
        #expect(try await client.get("/no-such-page").status == 404)
        #expect(try await client.get("/payments").text.contains("alice"))
        // Signing out needs the page's CSRF token too, and ends with the cookie cleared.
        let payments = try await client.get("/payments")
        #expect(try await client.post("/logout", []).status == 403)
        let out = try await client.post("/logout", [("csrf", try #require(payments.csrf))])
        #expect(out.status == 303 && out.headers["set-cookie"]?.contains("Max-Age=0") == true)
    }

    @Test("what a merchant or a customer wrote is shown as text, never as markup", arguments: StoreKind.available)
    func escaping(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (client, task) = try await Self.console(h)
        defer { task.cancel() }
        let markup = #"<script>alert(1)</script><img src=x onerror=alert(2)>"'&"#
        let body = #"{"merchantReference":"xss-1","amount":{"value":2500,"currency":"USD"},"method":"card","description":"\#(markup.replacingOccurrences(of: "\"", with: "\\\""))","metadata":{"note":"\#(markup.replacingOccurrences(of: "\"", with: "\\\""))"},"customer":{"email":"a@example.com"}}"#
        let created = try await h.send("POST", "v1/payments", json: body)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let id = try #require(created.json["id"] as? String)
        try await client.signIn(Self.token)
        let page = try await client.get("/payments/\(id)?merchant=\(h.merchant)")
        #expect(page.status == 200)
        #expect(!page.text.contains("<script>alert") && !page.text.contains("<img src=x"), "markup went through")
        #expect(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;"))
        // An id in the path is escaped too, in the page and in every link built from it.
        let odd = try await client.get("/payments/%3Cb%3Ex%3C%2Fb%3E?merchant=\(h.merchant)")
        #expect(odd.status == 404 && !odd.text.contains("<b>x</b>"))
        let unknownMerchant = try await client.get("/payments/\(id)?merchant=%3Cscript%3E")
        #expect(unknownMerchant.status == 400 && !unknownMerchant.text.contains("<script>") && unknownMerchant.text.contains("merchant"))
    }

    @Test("a payment's timeline: its attempt, each notification with its verdict, each inquiry, its events; money totals",
          arguments: StoreKind.available)
    func timeline(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (client, task) = try await Self.console(h)
        defer { task.cancel() }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        #expect(try await h.notifyPaid(attempt, gateway: gateway, eventID: "evt-timeline").status == 200)
        // The same status again under another event id: stored, and a duplicate.
        #expect(try await h.notifyPaid(attempt, gateway: gateway, eventID: "evt-timeline-2").status == 200)
        try await client.signIn(Self.token)
        let page = try await client.get("/payments/\(id)?merchant=\(h.merchant)")
        #expect(page.status == 200)
        let timeline = try #require(page.text.components(separatedBy: #"<ol class="timeline">"#).last)
        #expect(timeline.contains("Payment created"))
        #expect(timeline.contains("Attempt 1 on fake"))
        #expect(timeline.contains("Notification from fake about attempt 1") && timeline.contains("b-applied") && timeline.contains("b-duplicate"),
                "\(timeline)")
        #expect(timeline.contains("Event 1: payment.created"))
        #expect(page.text.contains("<dt>Captured</dt><dd>25.00 USD</dd>"), "the money totals")
        // An inquiry asked for through the API shows in the timeline and the reconciliation page.
        let (second, secondAttempt, _) = try await h.createAndPrepare()
        _ = try await h.send("POST", "v1/attempts/\(secondAttempt.rawValue)/inquire")
        let inquired = try await client.get("/payments/\(second)?merchant=\(h.merchant)")
        #expect(inquired.text.contains("Inquiry of attempt 1 at fake") && inquired.text.contains("asked by the merchant&#39;s API key"),
                "\(inquired.text.suffix(2_000))")
        #expect(try await client.get("/reconciliation").text.contains(secondAttempt.rawValue))
        let attemptLink = try await client.get("/attempts/\(secondAttempt.rawValue)?merchant=\(h.merchant)")
        #expect(attemptLink.status == 303 && attemptLink.location == "/payments/\(second)?merchant=\(h.merchant)")
        let gateways = try await client.get("/gateways")
        #expect(gateways.status == 200 && gateways.text.contains("<svg") && gateways.text.contains("100 %"), "\(gateways.text.suffix(3_000))")
    }

    @Test("an action needs the session's CSRF token and a same-origin form; a refused one changes nothing and writes nothing",
          arguments: StoreKind.available)
    func csrf(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (client, task) = try await Self.console(h)
        defer { task.cancel() }
        let (id, attempt, _) = try await h.createAndPrepare()
        try await client.signIn(Self.token)
        let confirm = try await client.get("/confirm?merchant=\(h.merchant)&payment=\(id)&action=inquire&target=\(attempt.rawValue)")
        #expect(confirm.status == 200)
        let csrf = try #require(confirm.csrf)
        let form = [("action", "inquire"), ("merchant", h.merchant), ("payment", id), ("target", attempt.rawValue)]
        let before = try await h.store.reconciliationLog(payment: id).count
        // Without a token, with a wrong one, with bob's, without a session, from another site.
        #expect(try await client.post("/actions", form).status == 403)
        #expect(try await client.post("/actions", form + [("csrf", String(repeating: "0", count: 64))]).status == 403)
        let bob = ConsoleClient(port: client.base.port!)
        try await bob.signIn(Self.otherToken)
        let bobs = try #require(try await bob.get("/payments").csrf)
        #expect(try await client.post("/actions", form + [("csrf", bobs)]).status == 403)
        #expect(try await client.post("/actions", form + [("csrf", csrf)], cookie: .some(nil)).status == 403)
        #expect(try await client.post("/actions", form + [("csrf", csrf)], headers: ["Origin": "https://evil.example"]).status == 403)
        #expect(try await client.post("/actions", form + [("csrf", csrf)], headers: ["Origin": "null"]).status == 403)
        #expect(try await client.post("/actions", form + [("csrf", csrf)], headers: ["Sec-Fetch-Site": "cross-site"]).status == 403)
        #expect(try await h.store.reconciliationLog(payment: id).count == before)
        #expect(try await h.store.auditLog(payment: id, limit: 10).isEmpty)
        // The right token, but a target of another payment (an attempt, an event): refused before anything is done or written.
        let (other, otherAttempt, _) = try await h.createAndPrepare()
        let otherEvent = try #require(try await h.store.events(merchant: h.merchant, query: EventQuery(paymentID: other, limit: 1)).first?.id)
        for (action, target) in [("inquire", otherAttempt.rawValue), ("redeliver", otherEvent)] {
            let crossed = try await client.post("/actions", [("csrf", csrf), ("action", action), ("merchant", h.merchant), ("payment", id),
                                                             ("target", target)])
            #expect(crossed.status == 400 && crossed.text.contains("target"), "\(action): \(crossed.status)")
            #expect(try await client.get("/confirm?merchant=\(h.merchant)&payment=\(id)&action=\(action)&target=\(target)").status == 400)
        }
        #expect(try await h.store.reconciliationLog(payment: other).isEmpty)
        let audited = try await h.store.auditLog(payment: id, limit: 10) + (try await h.store.auditLog(payment: other, limit: 10))
        #expect(audited.isEmpty)
        // The right one: done, audited, and the inquiry is in the payment's history.
        let done = try await client.post("/actions", form + [("csrf", csrf)], headers: ["Origin": client.base.absoluteString])
        #expect(done.status == 303 && done.location == "/payments/\(id)?merchant=\(h.merchant)", "\(done.status) \(done.text)")
        let audit = try await h.store.auditLog(payment: id, limit: 10)
        #expect(audit.map(\.outcome) == ["ok", "requested"] && audit.allSatisfy { $0.operatorName == "alice" && $0.action == "inquire" })
        #expect(try await h.store.reconciliationLog(payment: id).last?.reason == "on demand, asked by operator alice")
        #expect(try await client.get("/audit").text.contains("inquire"))
    }

    @Test("a gateway exchange is kept for its attempt's timeline, redacted as the log is, and only while the server is asking about an attempt")
    func exchanges() async throws {
        let kept = GatewayExchanges(capacity: 3)
        let answer = #"{"card_number":"4557010000000008","status":"14","signature":"abc"}"#
        let transport = MeasuredTransport(ScriptedTransport { _ in TransportResponse(statusCode: 200, headers: [:], body: Data(answer.utf8)) },
                                          gateway: GatewayID(rawValue: "payfort"), metrics: NOOPMetricsHandler.instance, exchanges: kept)
        let request = TransportRequest(method: .post, url: URL(string: "https://user:pw@gateway.example/pay?api_key=k-123&x=1")!, headers: [:],
                                       body: Data(#"{"access_code":"s3cret","amount":"2500"}"#.utf8), timeout: .seconds(5))
        _ = try await transport.send(request)   // about no attempt: not kept
        func refs(_ names: String...) -> Set<AttemptReference> { Set(names.map { AttemptReference(rawValue: $0) }) }
        #expect(kept.exchanges(of: refs("a-1")).isEmpty)
        _ = try await GatewayExchanges.$attempt.withValue(AttemptReference(rawValue: "a-1")) { try await transport.send(request) }
        let exchange = try #require(kept.exchanges(of: refs("a-1")).first)
        #expect(exchange.gateway.rawValue == "payfort" && exchange.statusCode == 200 && exchange.method == "POST")
        #expect(!exchange.url.contains("pw") && !exchange.url.contains("k-123"), "\(exchange.url)")
        #expect(!exchange.request.contains("s3cret") && exchange.request.contains("2500"), "\(exchange.request)")
        #expect(!exchange.response.contains("4557010000000008") && exchange.response.contains("14"), "\(exchange.response)")
        for index in 2...5 { _ = try await GatewayExchanges.$attempt.withValue(AttemptReference(rawValue: "a-\(index)")) { try await transport.send(request) } }
        #expect(kept.exchanges(of: refs("a-1", "a-2", "a-3", "a-4", "a-5")).map(\.attempt.rawValue) == ["a-3", "a-4", "a-5"], "bounded: the oldest go")
    }

    @Test("a refund confirmed twice with the same form refunds once; a bad amount is refused by name and audited",
          arguments: StoreKind.available)
    func refundOnce(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (client, task) = try await Self.console(h)
        defer { task.cancel() }
        let (id, attempt, gateway) = try await h.createAndPrepare()
        #expect(try await h.notifyPaid(attempt, gateway: gateway, eventID: "evt-refund").status == 200)
        await h.gateway(gateway).ledger.seed(attempt, amount: ServerHarness.amount, status: .paid)
        try await client.signIn(Self.token)
        let payment = try await client.get("/payments/\(id)?merchant=\(h.merchant)")
        #expect(payment.text.contains("action=refund") && !payment.text.contains("action=capture") && !payment.text.contains("action=void"))
        let confirm = try await client.get("/confirm?merchant=\(h.merchant)&payment=\(id)&action=refund")
        #expect(confirm.text.contains(#"name="amount" value="25.00""#), "the refundable rest is suggested")
        let key = try #require(confirm.hidden("key"))
        let csrf = try #require(confirm.csrf)
        let form = [("csrf", csrf), ("action", "refund"), ("merchant", h.merchant), ("payment", id), ("target", id), ("key", key)]
        let bad = try await client.post("/actions", form + [("amount", "1.234")])
        #expect(bad.status == 400 && bad.text.contains("amount"), "\(bad.text)")
        #expect(try await h.store.auditLog(payment: id, limit: 10).isEmpty, "a mistake in the form does nothing, so there is nothing to audit")
        #expect(try await client.post("/actions", form + [("amount", "10.00")]).status == 303)
        #expect(try await client.post("/actions", form + [("amount", "10.00")]).status == 303)
        let view = try await h.send("GET", "v1/payments/\(id)")
        let operations = try #require(view.json["operations"] as? [[String: Any]])
        #expect(operations.count == 1, "one refund for two clicks: \(operations)")
        let audit = try await h.store.auditLog(payment: id, limit: 10)
        #expect(audit.map(\.outcome) == ["ok", "requested", "ok", "requested"])
        #expect(audit.first?.detail.contains("answered from the store") == true, "\(audit)")
        #expect(audit.last?.detail == "amount 10.00 USD, Idempotency-Key console-\(key)", "the request is audited before it is sent: \(audit)")
        // What is left is what the next confirmation suggests: 15.00, the refund counted.
        let again = try await client.get("/confirm?merchant=\(h.merchant)&payment=\(id)&action=refund")
        #expect(again.text.contains(#"name="amount" value="15.00""#), "\(audit.map(\.detail))")
        #expect(audit.first?.detail.hasPrefix("10.00 USD succeeded") == true, "\(audit.map(\.detail))")
    }
}
