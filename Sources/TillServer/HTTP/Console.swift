import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Till
import TillGatewayKit
import TillOrchestration
import TillService

/// Who signed in to the console, from a cookie the console signed: stateless, so any instance over the same store
/// accepts it, and rotating an operator's token ends every session it signed.
///
/// The cookie is `name|expiry|nonce|mac`, the mac an HMAC-SHA256 over the first three under a key derived from the
/// operator's token. The CSRF token a session's forms carry is an HMAC of its nonce under the same key.
struct ConsoleSessions: Sendable {
    struct Operator: Sendable {
        let name: String
        let tokenDigest: [UInt8]
        let keyBytes: [UInt8]
        var key: SymmetricKey { SymmetricKey(data: keyBytes) }
    }

    struct Session: Sendable {
        let operatorName: String
        let csrf: String
    }

    static let cookieName = "till_console"
    let operators: [Operator]
    let lifetime: TimeInterval

    init(operators: [ResolvedOperator], sessionMinutes: Int) {
        self.operators = operators.map { person in
            Operator(name: person.name, tokenDigest: Array(SHA256.hash(data: Data(person.token.utf8))),
                     keyBytes: Array(SHA256.hash(data: Data("till-console-session|\(person.token)".utf8))))
        }
        lifetime = TimeInterval(sessionMinutes * 60)
    }

    /// The operator whose token this is, compared in constant time against every operator's.
    func signIn(token: String) -> Operator? {
        let given = Array(SHA256.hash(data: Data(token.utf8)))
        var found: Operator?
        for person in operators where ConstantTime.equals(given, person.tokenDigest) { found = person }
        return found
    }

    /// A new session's cookie value for `person`.
    func cookie(for person: Operator, now: Date) -> String {
        var nonce = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in nonce.indices { nonce[index] = generator.next() }
        let payload = "\(person.name)|\(Int64(now.timeIntervalSince1970 + lifetime))|\(Hex.encode(nonce))"
        return payload + "|" + Hex.encode(HMAC<SHA256>.authenticationCode(for: Data("session|\(payload)".utf8), using: person.key))
    }

    /// The session a cookie value stands for, when its mac is right and it has not expired.
    func session(cookie: String, now: Date) -> Session? {
        let parts = cookie.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, let expiry = Int64(parts[1]), Double(expiry) > now.timeIntervalSince1970,
              let person = operators.first(where: { $0.name == parts[0] }), let mac = Hex.decode(parts[3]) else { return nil }
        let payload = parts[0...2].joined(separator: "|")
        let expected = Array(HMAC<SHA256>.authenticationCode(for: Data("session|\(payload)".utf8), using: person.key))
        guard ConstantTime.equals(Array(mac), expected) else { return nil }
        return Session(operatorName: person.name,
                       csrf: Hex.encode(HMAC<SHA256>.authenticationCode(for: Data("csrf|\(parts[2])".utf8), using: person.key)))
    }
}

/// The operator console: server-rendered pages on their own listener, no script, behind the operators' tokens.
public struct ConsoleDependencies: Sendable {
    let service: PaymentService
    let sessions: ConsoleSessions
    let latencies: GatewayLatencies?
    let exchanges: GatewayExchanges?
    let logger: Logger

    /// - Parameters:
    ///   - operators: who may sign in (``ConsoleSettings/resolveOperators(environment:)``).
    ///   - latencies: the gateways' recent request durations (fed by ``MeasuredTransport``), for the gateways page.
    ///   - exchanges: the gateways' recent requests by attempt (fed by ``MeasuredTransport``), for a payment's timeline.
    public init(state: ServerState, store: any PaymentStore, operators: [ResolvedOperator], latencies: GatewayLatencies?,
                exchanges: GatewayExchanges? = nil, logger: Logger = Logger(label: "till.console")) {
        service = PaymentService(state: state, store: store, logger: logger)
        sessions = ConsoleSessions(operators: operators, sessionMinutes: state.settings.console.sessionMinutes)
        self.latencies = latencies
        self.exchanges = exchanges
        self.logger = logger
    }
}

/// The console's listener (`server.console.listen`): its pages, sign-in and actions, and nothing of the API.
public func buildConsoleApplication(_ dependencies: ConsoleDependencies, host: String, port: Int,
                                    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
    let console = Console(dependencies)
    let router = Router()
    router.middlewares.add(ConsoleHeaders())
    router.get("/console.css") { _, _ in
        Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                 body: .init(byteBuffer: ByteBuffer(string: ConsolePages.stylesheet)))
    }
    router.get("/login") { request, _ in console.loginPage(request) }
    router.post("/login") { request, _ in await console.login(request) }
    router.post("/logout") { request, _ in await console.signedPost(request) { _, _ in console.logout() } }
    router.get("/") { request, _ in await console.page(request) { _ in Console.redirect("/payments") } }
    router.get("/payments") { request, _ in await console.page(request) { session in try await console.payments(request, session) } }
    router.get("/payments/:id") { request, context in
        await console.page(request) { session in try await console.payment(context.parameters.get("id") ?? "", request, session) }
    }
    router.get("/attempts/:reference") { request, context in
        await console.page(request) { _ in try await console.attempt(context.parameters.get("reference") ?? "", request) }
    }
    router.get("/gateways") { request, _ in await console.page(request) { session in try await console.gateways(session) } }
    router.get("/reconciliation") { request, _ in await console.page(request) { session in try await console.reconciliation(session) } }
    router.get("/quarantine") { request, _ in await console.page(request) { session in try await console.quarantine(session) } }
    router.get("/audit") { request, _ in await console.page(request) { session in try await console.audit(session) } }
    router.get("/confirm") { request, _ in await console.page(request) { session in try await console.confirm(request, session) } }
    router.post("/actions") { request, _ in await console.signedPost(request) { fields, session in try await console.act(fields, session) } }
    return Application(router: router,
                       server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadline(limit: .seconds(10))], idleTimeout: .seconds(60))),
                       configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "till",
                                                               availableConnectionsDelegate: MaximumAvailableConnections(64)),
                       onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) }, logger: dependencies.logger)
}

/// Sent with every console answer, error pages included: no script runs, nothing is framed, nothing is cached.
struct ConsoleHeaders<Context: RequestContext>: RouterMiddleware {
    static var contentSecurityPolicy: String {
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let status = (error as? HTTPError)?.status ?? .internalServerError
            response = ConsolePages.plain(status: status, title: status == .notFound ? "Not found" : "Error",
                                          message: status == .notFound ? "There is no such page." : "The console could not answer.")
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "same-origin"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
    static let secFetchSite = Self("Sec-Fetch-Site")!
}

/// The console's behaviour: authentication, reading and acting, each answer a page.
struct Console: Sendable {
    let service: PaymentService
    let sessions: ConsoleSessions
    let latencies: GatewayLatencies?
    let exchanges: GatewayExchanges?
    let logger: Logger

    init(_ dependencies: ConsoleDependencies) {
        service = dependencies.service
        sessions = dependencies.sessions
        latencies = dependencies.latencies
        exchanges = dependencies.exchanges
        logger = dependencies.logger
    }

    var store: any PaymentStore { service.store }
    var merchants: [MerchantRuntime] { service.state.merchants }

    // MARK: Authentication

    static func redirect(_ location: String, cookie: String? = nil) -> Response {
        var headers: HTTPFields = [.location: location]
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }

    func session(_ request: Request) -> ConsoleSessions.Session? {
        guard let header = request.headers[.cookie] else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard pair.hasPrefix("\(ConsoleSessions.cookieName)=") else { continue }
            if let session = sessions.session(cookie: String(pair.dropFirst(ConsoleSessions.cookieName.count + 1)), now: Date()) { return session }
        }
        return nil
    }

    /// A page for a signed-in operator; anyone else is sent to sign in.
    func page(_ request: Request, _ body: (ConsoleSessions.Session) async throws -> Response) async -> Response {
        guard let session = session(request) else { return Self.redirect("/login") }
        do {
            return try await body(session)
        } catch {
            return failure(error, session: session)
        }
    }

    /// A form post: it must come from a console page (same origin), from a signed-in operator, with that session's
    /// CSRF token; anything else changes nothing and is answered 403.
    func signedPost(_ request: Request, _ body: (FormFields, ConsoleSessions.Session) async throws -> Response) async -> Response {
        guard sameOrigin(request) else { return Self.crossSiteRefusal }
        guard let session = session(request) else {
            return ConsolePages.plain(status: .forbidden, title: "Refused", message: "Sign in first: this action needs an operator.")
        }
        guard let fields = await form(request), let csrf = fields["csrf"],
              ConstantTime.equals(Array(csrf.utf8), Array(session.csrf.utf8)) else {
            return ConsolePages.plain(status: .forbidden, title: "Refused", message: "The form's CSRF token is missing or wrong; reload the page and try again.")
        }
        do {
            return try await body(fields, session)
        } catch {
            return failure(error, session: session)
        }
    }

    /// The answer to a post from another site: nothing done, nothing written.
    static var crossSiteRefusal: Response {
        ConsolePages.plain(status: .forbidden, title: "Refused", message: "The form came from another site.")
    }

    /// Whether a post came from this console: a browser's `Origin` (when it sends one) names the host the request
    /// went to, and its `Sec-Fetch-Site` (when it sends one) says same-origin.
    func sameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[.secFetchSite], site != "same-origin" { return false }
        guard let origin = request.headers[.origin] else { return true }
        guard let authority = request.head.authority else { return false }
        return origin == "http://\(authority)" || origin == "https://\(authority)"
    }

    func form(_ request: Request) async -> FormFields? {
        guard let buffer = try? await request.body.collect(upTo: 16_384) else { return nil }
        return try? FormFields.decode(Data(buffer: buffer))
    }

    func loginPage(_ request: Request, failed: Bool = false) -> Response {
        if !failed, session(request) != nil { return Self.redirect("/payments") }
        return ConsolePages.login(failed: failed)
    }

    func login(_ request: Request) async -> Response {
        guard sameOrigin(request) else { return Self.crossSiteRefusal }
        guard let fields = await form(request), let token = fields["token"], let person = sessions.signIn(token: token) else {
            logger.notice("console sign-in refused")
            // A wrong token costs its sender a moment; a right one is 32 characters or more, so guessing is hopeless anyway.
            try? await Task.sleep(for: .milliseconds(250))
            var response = ConsolePages.login(failed: true)
            response.status = .unauthorized
            return response
        }
        logger.notice("console sign-in", metadata: ["operator": .string(person.name)])
        let secure = request.headers[HTTPField.Name("X-Forwarded-Proto")!] == "https" ? "; Secure" : ""
        return Self.redirect("/payments", cookie: "\(ConsoleSessions.cookieName)=\(sessions.cookie(for: person, now: Date())); Path=/; HttpOnly; "
                                                  + "SameSite=Strict; Max-Age=\(Int(sessions.lifetime))\(secure)")
    }

    func logout() -> Response {
        Self.redirect("/login", cookie: "\(ConsoleSessions.cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    }

    func failure(_ error: any Error, session: ConsoleSessions.Session) -> Response {
        if let error = error as? ServiceError {
            let message = error.field.map { "\($0): \(error.message)" } ?? error.message
            return ConsolePages.plain(status: error.status, title: "Refused", message: "\(error.code): \(message)", session: session)
        }
        if let error = error as? CheckoutError {
            return ConsolePages.plain(status: .badRequest, title: "Refused", message: error.description, session: session)
        }
        logger.error("console page failed", metadata: ["error": .string(String(describing: type(of: error)))])
        return ConsolePages.plain(status: .internalServerError, title: "Error", message: "The console could not answer; the server's log says why.",
                                  session: session)
    }

    // MARK: Reading

    func merchant(_ id: String?) throws -> MerchantRuntime {
        guard let id else {
            guard let first = merchants.first else { throw ServiceError(status: .notFound, code: "not_found", message: "no merchant is configured") }
            return first
        }
        guard let merchant = service.state.merchant(id: id) else {
            throw ServiceError(status: .badRequest, code: "invalid_field", message: "no such merchant", field: "merchant")
        }
        return merchant
    }

    func payments(_ request: Request, _ session: ConsoleSessions.Session) async throws -> Response {
        let query = request.uri.queryParameters
        let merchant = try merchant(query.get("merchant"))
        if let id = query.get("id").map({ $0.trimmingCharacters(in: .whitespaces) }), !id.isEmpty {
            return Self.redirect(HTML.url("/payments/\(id)", [("merchant", merchant.configuration.id)]))
        }
        // The form sends every field, empty ones too: an empty field is no filter.
        var pairs: [(String, String)] = []
        for (name, value) in query where name != "merchant" && name != "id" && !value.isEmpty { pairs.append((String(name), String(value))) }
        var filters = Dictionary(pairs, uniquingKeysWith: { first, _ in first })
        filters["cursor"] = nil
        do {
            var search = try PaymentSearchRequest(pairs, accepting: PaymentSearchRequest.parameters.filter { $0 != "limit" })
            search["limit"] = "50"
            let page = try await service.searchPayments(merchant: merchant, request: search)
            return ConsolePages.payments(merchants: merchants.map(\.configuration.id), merchant: merchant, filters: filters, page: page,
                                         problem: nil, session: session)
        } catch let error as ServiceError {
            var response = ConsolePages.payments(merchants: merchants.map(\.configuration.id), merchant: merchant, filters: filters, page: nil,
                                                 problem: "\(error.field ?? "search"): \(error.message)", session: session)
            response.status = .badRequest
            return response
        }
    }

    func payment(_ id: String, _ request: Request, _ session: ConsoleSessions.Session) async throws -> Response {
        let merchant = try merchant(request.uri.queryParameters.get("merchant"))
        let history = try await service.history(paymentID: id, merchant: merchant, exchanges: exchanges)
        return ConsolePages.payment(history, merchant: merchant, session: session)
    }

    func attempt(_ reference: String, _ request: Request) async throws -> Response {
        let merchant = try merchant(request.uri.queryParameters.get("merchant"))
        let view = try await service.payment(attempt: AttemptReference(rawValue: reference), merchant: merchant)
        return Self.redirect(HTML.url("/payments/\(view.id)", [("merchant", merchant.configuration.id)]))
    }

    func gateways(_ session: ConsoleSessions.Session) async throws -> Response {
        let now = Date()
        var rows: [ConsolePages.GatewayRow] = []
        for merchant in merchants {
            let day = try await store.attemptCounts(merchant: merchant.configuration.id, since: now.addingTimeInterval(-86_400))
            let hour = try await store.attemptCounts(merchant: merchant.configuration.id, since: now.addingTimeInterval(-3_600))
            let quarter = try await store.attemptCounts(merchant: merchant.configuration.id, since: now.addingTimeInterval(-900))
            for gateway in merchant.gateways.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                rows.append(ConsolePages.GatewayRow(
                    merchant: merchant.configuration.id, gateway: gateway, tier: merchant.health.tier(of: gateway),
                    health: merchant.health.summary(of: gateway),
                    windows: [("15 min", quarter), ("1 h", hour), ("24 h", day)].map { name, counts in
                        ConsolePages.Window(name: name, counts: counts.filter { $0.gateway == gateway })
                    },
                    latency: latencies?.summary(of: gateway),
                    outcomes: day.filter { $0.gateway == gateway }.sorted { $0.count > $1.count }))
            }
        }
        return ConsolePages.gateways(rows, session: session)
    }

    func reconciliation(_ session: ConsoleSessions.Session) async throws -> Response {
        let known = Set(merchants.map(\.configuration.id))
        return ConsolePages.reconciliation(try await store.reconciliationLog(limit: 200).filter { known.contains($0.merchantID) }, session: session)
    }

    func quarantine(_ session: ConsoleSessions.Session) async throws -> Response {
        var entries: [(String, QuarantinedNotification)] = []
        for merchant in merchants {
            entries += try await service.quarantine(merchant: merchant, limit: 100).map { (merchant.configuration.id, $0) }
        }
        return ConsolePages.quarantine(entries, session: session)
    }

    func audit(_ session: ConsoleSessions.Session) async throws -> Response {
        ConsolePages.audit(try await store.auditLog(payment: nil, limit: 200), session: session)
    }

    // MARK: Actions

    /// What an operator may do from a payment's page.
    enum Action: String, CaseIterable {
        case inquire, redeliver, capture, void, refund

        var operation: OperationKind? {
            switch self {
            case .capture: .capture
            case .void: .void
            case .refund: .refund
            case .inquire, .redeliver: nil
            }
        }
    }

    struct ActionRequest {
        var action: Action
        var merchant: MerchantRuntime
        var paymentID: String
        var target: String
    }

    func actionRequest(_ value: (String) -> String?) throws -> ActionRequest {
        guard let name = value("action"), let action = Action(rawValue: name) else {
            throw ServiceError(status: .badRequest, code: "invalid_field", message: "one of \(Action.allCases.map(\.rawValue).joined(separator: ", "))",
                               field: "action")
        }
        guard let payment = value("payment"), !payment.isEmpty else {
            throw ServiceError(status: .badRequest, code: "missing_field", message: "required", field: "payment")
        }
        let target = value("target") ?? payment
        return ActionRequest(action: action, merchant: try merchant(value("merchant")), paymentID: payment, target: target.isEmpty ? payment : target)
    }

    /// The payment the action names, and the action checked against it: an attempt or an event of that payment (never
    /// another's), the payment itself for a capture, void or refund. Nothing is done or written before this holds.
    func checked(_ action: ActionRequest) async throws -> (ActionRequest, PaymentHistory) {
        let history = try await service.history(paymentID: action.paymentID, merchant: action.merchant, exchanges: exchanges)
        var action = action
        switch action.action {
        case .inquire:
            guard history.has(attempt: action.target) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "not an attempt of this payment", field: "target")
            }
        case .redeliver:
            guard history.has(event: action.target) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "not an event of this payment", field: "target")
            }
        case .capture, .void, .refund:
            action.target = action.paymentID
        }
        return (action, history)
    }

    /// The page that asks an operator to confirm an action; its form carries a fresh idempotency key, so sending it
    /// twice (a double click, a reload) does the operation once.
    func confirm(_ request: Request, _ session: ConsoleSessions.Session) async throws -> Response {
        let query = request.uri.queryParameters
        let (action, history) = try await checked(try actionRequest { query.get($0) })
        var key = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in key.indices { key[index] = generator.next() }
        return ConsolePages.confirm(action, history: history, key: Hex.encode(key), session: session)
    }

    /// Does a confirmed action, checked against its payment first. The audit log gets the request before anything is
    /// sent (so no action happens unaudited: if that write fails, nothing is done) and what came of it after.
    func act(_ fields: FormFields, _ session: ConsoleSessions.Session) async throws -> Response {
        let (action, history) = try await checked(try actionRequest { fields[$0] })
        let merchant = action.merchant
        var command = OperationCommand()
        var key = ""
        if let kind = action.action.operation {
            guard let given = fields["key"], given.count == 32, Hex.decode(given) != nil else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "reload the confirmation page", field: "key")
            }
            key = "console-\(given)"
            if kind != .void, let text = fields["amount"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
                do {
                    command.amount = try Money(decimal: text, currency: history.view.amount.currency)
                } catch {
                    throw ServiceError(status: .badRequest, code: "invalid_field", message: error.message, field: "amount")
                }
            }
        }
        let requested = [command.amount.map { "amount \($0)" }, key.isEmpty ? nil : "Idempotency-Key \(key)"].compactMap { $0 }.joined(separator: ", ")
        try await record(action, session: session, outcome: "requested", detail: requested)
        var detail = ""
        do {
            switch action.action {
            case .inquire:
                let view = try await service.inquire(attempt: AttemptReference(rawValue: action.target), merchant: merchant,
                                                     requestedBy: "operator \(session.operatorName)")
                detail = "payment now \(view.status.rawValue)"
            case .redeliver:
                let event = try await service.redeliver(action.target, merchant: merchant)
                detail = "\(event.event.type.rawValue) pending again"
            case .capture, .void, .refund:
                let answer = try await service.operate(action.action.operation!, paymentID: action.paymentID, merchant: merchant, command: command,
                                                       idempotencyKey: key, logger: logger)
                detail = "\(answer.operation.amount) \(answer.operation.status.rawValue)\(answer.replayed ? " (the same request again: answered from the store)" : "")"
            }
        } catch {
            let code = (error as? ServiceError)?.code ?? (error as? CheckoutError)?.code.rawValue ?? "error"
            try? await record(action, session: session, outcome: code, detail: requested)
            throw error
        }
        try? await record(action, session: session, outcome: "ok", detail: detail)
        return Self.redirect(HTML.url("/payments/\(action.paymentID)", [("merchant", merchant.configuration.id)]))
    }

    private func record(_ action: ActionRequest, session: ConsoleSessions.Session, outcome: String, detail: String) async throws {
        logger.notice("console action", metadata: [
            "operator": .string(session.operatorName), "action": .string(action.action.rawValue), "target": .string(action.target),
            "merchant": .string(action.merchant.configuration.id), "outcome": .string(outcome)])
        try await store.logAudit(AuditEntry(operatorName: session.operatorName, merchantID: action.merchant.configuration.id,
                                            paymentID: action.paymentID, action: action.action.rawValue, target: action.target,
                                            outcome: outcome, detail: detail))
    }
}
