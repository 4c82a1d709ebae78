import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import Till
import TillOrchestration
import TillService
import TillGatewayKit

/// The request context of the merchant server: Hummingbird's core context and the peer's address
/// (the customer's IP as a gateway wants it, e.g. PayFort's `customer_ip`).
public struct TillRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The address of the connection's peer (the app, or a proxy in front of the server).
    public let remoteAddress: SocketAddress?
    /// Who the request authenticated as, once it did: what the request's log line names.
    let credential = CredentialNote()

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The peer's IP address as text (`203.0.113.7`, `2001:db8::1`), when known.
    public var peerIP: String? { remoteAddress?.ipAddress }
}

/// Builds the merchant server's HTTP application. Mount it, or run it with `runService()`.
///
/// - Parameters:
///   - state: merchants with resolved secrets (``ServerState``).
///   - store: where payments live; migrated by the caller.
///   - metrics: where counters and timers go (`till_payments_created_total`,
///     `till_payment_status_total{status}`, `till_notifications_total{gateway,result}`,
///     `till_prepare_duration{gateway}`); the process-wide swift-metrics backend by default.
///   - load: counts the API's requests in flight, for the event deliverer to yield to (``APILoad``).
///   - onServerRunning: called with the bound port once listening (port 0 picks one).
public func buildApplication(
    state: ServerState, store: any PaymentStore, logger: Logger = Logger(label: "till.server"),
    metrics: any MetricsFactory = MetricsSystem.factory, load: APILoad? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    try buildApplication(state: state, store: store, logger: logger, metrics: metrics, crashPoint: nil, load: load, onServerRunning: onServerRunning)
}

/// The same, with a crash-safety test's fault injection: the process kills itself (SIGKILL) at `crashPoint`.
package func buildApplication(
    state: ServerState, store: any PaymentStore, logger: Logger = Logger(label: "till.server"),
    metrics: any MetricsFactory = MetricsSystem.factory,
    crashPoint: CrashPoint?, load: APILoad? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    guard let (host, port) = state.settings.hostAndPort else {
        throw StartupError(problems: ["server.listen: expected host:port"])
    }
    let api = API(service: PaymentService(state: state, store: store, logger: logger, metrics: metrics, crashPoint: crashPoint),
                  limits: RequestLimits(capacity: state.settings.rateLimits.maxTrackedClients, metrics: metrics))
    let router = makeRouter(api, load: load)
    let settings = state.settings
    let readLimit = TimeAmount.nanoseconds(Int64(settings.requestReadTimeoutSeconds * 1_000_000_000))
    return Application(
        router: router,
        // Per connection: the read deadline, then the early refusal of a credential whose bucket is already empty.
        server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadline(limit: readLimit), EarlyRefusal(api: api, serverName: "till")],
                                            idleTimeout: .nanoseconds(Int64(settings.idleTimeoutSeconds * 1_000_000_000)))),
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "till",
                                                availableConnectionsDelegate: MaximumAvailableConnections(settings.maxConnections)),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: logger)
}

/// Every route of the merchant server's API (docs/openapi.yaml describes each; a test holds them equal), with `load`
/// counting the requests in flight.
func makeRouter(_ api: API, load: APILoad? = nil) -> Router<TillRequestContext> {
    let router = Router(context: TillRequestContext.self)
    if let load { router.add(middleware: LoadMiddleware(load: load)) }
    router.add(middleware: RequestIDMiddleware())
    router.get("/healthz") { _, _ in try API.json(["status": "ok"], status: .ok) }
    router.get("/readyz") { _, context in await api.readiness(context) }
    let v1 = router.group("v1")
    v1.post("payments") { request, context in await api.respond(context) { try await api.createPayment(request, context) } }
    v1.get("payments") { request, context in await api.respond(context) { try await api.searchPayments(request, context) } }
    v1.get("payments/export") { request, context in await api.respond(context) { try await api.exportPayments(request, context) } }
    v1.get("payments/:id") { request, context in await api.respond(context) { try await api.getPayment(request, context) } }
    v1.patch("payments/:id") { request, context in await api.respond(context) { try await api.updatePayment(request, context) } }
    v1.post("payments/:id/attempts") { request, context in await api.respond(context) { try await api.prepare(request, context) } }
    v1.post("payments/:id/captures") { request, context in await api.respond(context) { try await api.operate(.capture, request, context) } }
    v1.post("payments/:id/voids") { request, context in await api.respond(context) { try await api.operate(.void, request, context) } }
    v1.post("payments/:id/refunds") { request, context in await api.respond(context) { try await api.operate(.refund, request, context) } }
    v1.get("refunds/:id") { request, context in await api.respond(context) { try await api.getOperation(.refund, request, context) } }
    v1.get("operations/:id") { request, context in await api.respond(context) { try await api.getOperation(nil, request, context) } }
    v1.post("operations/:id/inquire") { request, context in await api.respond(context) { try await api.inquireOperation(request, context) } }
    v1.get("attempts/:reference") { request, context in await api.respond(context) { try await api.getAttempt(request, context) } }
    v1.post("attempts/:reference/inquire") { request, context in
        await api.respond(context) { try await api.inquireAttempt(request, context) }
    }
    v1.post("attempts/:reference/submit") { request, context in
        await api.respond(context) { try await api.submit(request, context) }
    }
    v1.post("attempts/:reference/outcome") { request, context in
        await api.respond(context) { try await api.reportOutcome(request, context) }
    }
    v1.post("notifications/:gateway") { request, context in
        await api.respond(context) { try await api.notification(request, context) }
    }
    // Endpoint verification: some gateways check a notification URL before they send to it.
    v1.get("notifications/:gateway") { request, context in
        await api.respond(context) { try await api.challenge(request, context) }
    }
    v1.get("quarantine") { request, context in await api.respond(context) { try await api.quarantine(request, context) } }
    v1.get("events") { request, context in await api.respond(context) { try await api.listEvents(request, context) } }
    v1.get("events/:id") { request, context in await api.respond(context) { try await api.getEvent(request, context) } }
    v1.post("events/:id/redeliver") { request, context in await api.respond(context) { try await api.redeliverEvent(request, context) } }
    return router
}

/// Counts each request in ``APILoad`` while it is answered.
struct LoadMiddleware<Context: RequestContext>: RouterMiddleware {
    let load: APILoad

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await load.counting { try await next(request, context) }
    }
}

/// Adds a request id to every request's logger and response (`X-Request-Id`, echoed if the caller sent one),
/// and `X-Content-Type-Options: nosniff` to every response (a gateway's endpoint-verification echo and a
/// notification's acknowledgement included), so no browser guesses another type for what the server sends.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = requestID(given: request.headers[.requestID])
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        let started = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            // The router's own refusals (no such route, a method the route does not take) answer in the API's
            // error shape too, never with an empty body.
            let code = error.status == .notFound ? "not_found" : error.status == .methodNotAllowed ? "method_not_allowed" : "http_error"
            let path = CheckoutError.printable(request.uri.path)
            let message = error.status == .notFound ? "no such route: \(request.method) \(path)"
                : error.status == .methodNotAllowed ? "\(request.method) is not allowed on \(path)" : error.status.reasonPhrase
            response = (try? API.json(ErrorBody(error: .init(code: code, message: message)), status: error.status))
                ?? Response(status: error.status)
            response.headers.append(contentsOf: error.headers)
        }
        response.headers[.requestID] = id
        response.headers[.contentTypeOptions] = "nosniff"
        // One line per request: what was asked, the answer, and which key (by id) or client secret (by payment) asked.
        // The path without its query (a search's query may hold a customer's e-mail); never a key or a secret.
        if context.logger.logLevel <= .info {
            var metadata: Logger.Metadata = ["status": .stringConvertible(response.status.code),
                                             "ms": .stringConvertible(Self.milliseconds(ContinuousClock.now - started))]
            if let note = (context as? TillRequestContext)?.credential.metadata { metadata.merge(note) { a, _ in a } }
            context.logger.info("\(request.method) \(CheckoutError.printable(request.uri.path))", metadata: metadata)
        }
        return response
    }
}

/// The request id of a request that gave `given` as its `X-Request-Id`: echoed when it is 1–64 letters, digits and
/// dashes, else a new one (every answer carries one, an early refusal's included).
func requestID(given: String?) -> String {
    given.flatMap { !$0.isEmpty && $0.count <= 64 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } ? $0 : nil }
        ?? UUID().uuidString.lowercased()
}

extension RequestIDMiddleware {
    /// A duration in whole milliseconds.
    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

/// The answer to an operation the gateway refused (402) or whose outcome is unknown (502): the error, and the
/// operation as stored.
struct OperationErrorBody: Codable, Sendable {
    var error: ErrorBody.Detail
    var operation: OperationView
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}

/// Who a request authenticated as, noted by ``API/authenticate(_:_:)`` for the request's log line: the merchant and
/// the API key's id, or the payment whose client secret it was. Never the key or the secret.
final class CredentialNote: Sendable {
    private let value = Locked<Logger.Metadata>([:])

    func note(_ metadata: Logger.Metadata) { value.withLock { $0 = metadata } }
    var metadata: Logger.Metadata { value.withLock { $0 } }
}

/// The HTTP adapter over ``PaymentService``: authentication, rate limits, bodies, JSON answers.
struct API: Sendable {
    let service: PaymentService
    /// The token buckets, shared by every request.
    let limits: RequestLimits

    init(service: PaymentService, limits: RequestLimits? = nil) {
        self.service = service
        self.limits = limits ?? RequestLimits(capacity: service.state.settings.rateLimits.maxTrackedClients)
    }
    let readinessProbe = ReadinessProbe()
    var state: ServerState { service.state }

    func createPayment(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        let intent = try decode(PaymentIntent.self, try await body(request), field: "body")
        let (payment, replayed) = try await service.createPayment(intent, merchant: merchant, idempotencyKey: request.headers[.idempotencyKey],
                                                                  logger: context.logger)
        var response = try Self.json(payment, status: replayed ? .ok : .created)
        if replayed { response.headers[.idempotentReplayed] = "true" }
        return response
    }

    func getPayment(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let caller = try await authenticate(request, context)
        let merchant = try service.authorize(caller, payment: id)
        let forMerchant = if case .merchant = caller { true } else { false }
        return try Self.json(try await service.payment(id: id, merchant: merchant, forMerchant: forMerchant), status: .ok)
    }

    func updatePayment(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        let update = try decode(PaymentUpdate.self, try await body(request), field: "body", nullable: ["customer", "description", "metadata"])
        return try Self.json(try await service.updatePayment(id: id, merchant: merchant, update: update, logger: context.logger), status: .ok)
    }

    func prepare(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.authorize(try await authenticate(request, context), payment: id)
        let raw = try await body(request)
        let input = raw.readableBytes == 0 ? PrepareRequest() : try decode(PrepareRequest.self, raw, field: "body")
        return try Self.json(try await service.prepare(paymentID: id, merchant: merchant, request: input, logger: context.logger),
                             status: .created)
    }

    func submit(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        let merchant = try await service.authorize(try await authenticate(request, context), attempt: reference)
        let submission = try decode(Submission.self, try await body(request), field: "body")
        return try Self.json(try await service.submit(submission, attempt: reference, merchant: merchant, customerIP: context.peerIP,
                                                      logger: context.logger),
                             status: .ok)
    }

    /// A capture, void or refund: 201 succeeded, 202 pending; a refusal by the gateway (402) or an unknown
    /// outcome (502) answers the error shape with the operation beside it.
    func operate(_ kind: OperationKind, _ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        let raw = try await body(request)
        let command = raw.readableBytes == 0 ? OperationCommand() : try decode(OperationCommand.self, raw, field: "body")
        let answer = try await service.operate(kind, paymentID: id, merchant: merchant, command: command,
                                               idempotencyKey: request.headers[.idempotencyKey], logger: context.logger)
        var response: Response
        switch answer.operation.status {
        case .succeeded, .pending:
            response = try Self.json(answer.operation, status: answer.status)
        case .failed:
            response = try Self.json(OperationErrorBody(error: .init(code: "operation_declined",
                                                                     message: "the gateway refused the \(kind)" + (answer.operation.gatewayCode.map { " (\($0))" } ?? ""),
                                                                     category: nil),
                                                        operation: answer.operation), status: answer.status)
        case .unknown:
            response = try Self.json(OperationErrorBody(error: .init(code: CheckoutError.Category.unknownOutcome.rawValue,
                                                                     message: "the gateway's answer is not known; the \(kind) is settled by inquiry, never sent again",
                                                                     category: CheckoutError.Category.unknownOutcome.rawValue),
                                                        operation: answer.operation), status: answer.status)
        }
        if answer.replayed { response.headers[.idempotentReplayed] = "true" }
        return response
    }

    func getOperation(_ kind: OperationKind?, _ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        return try Self.json(try await service.operation(id, kind: kind, merchant: merchant), status: .ok)
    }

    func inquireOperation(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        return try Self.json(try await service.inquireOperation(id, merchant: merchant), status: .ok)
    }

    func getAttempt(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        let merchant = try await service.authorize(try await authenticate(request, context), attempt: reference)
        return try Self.json(try await service.payment(attempt: reference, merchant: merchant), status: .ok)
    }

    func inquireAttempt(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        let caller = try await authenticate(request, context)
        let merchant = try await service.authorize(caller, attempt: reference)
        let fromApp = if case .payment = caller { true } else { false }
        return try Self.json(try await service.inquire(attempt: reference, merchant: merchant, fromApp: fromApp), status: .ok)
    }

    func reportOutcome(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        let merchant = try await service.authorize(try await authenticate(request, context), attempt: reference)
        let outcome = try decode(ClientOutcome.self, try await body(request), field: "body")
        return try Self.json(try await service.reportOutcome(outcome, attempt: reference, merchant: merchant, logger: context.logger),
                             status: .accepted)
    }

    func quarantine(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        var limit = 100
        if let given = try Self.query(request, allowed: ["limit"])["limit"] {
            guard let value = Int(given), (1...1_000).contains(value) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "an integer, 1 to 1000", field: "limit")
            }
            limit = value
        }
        return try Self.json(try await service.quarantine(merchant: merchant, limit: limit), status: .ok)
    }

    /// `GET /v1/events`: a page of the merchant's events. The query may name only the list's parameters, each once: a
    /// misspelt one (`?stat=failed`) would otherwise be ignored and list every event as if it had been obeyed.
    func listEvents(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        var list = EventListRequest()
        for (name, value) in try Self.query(request, allowed: Self.eventListParameters) {
            switch name {
            case "type": list.type = value
            case "payment": list.paymentID = value
            case "state": list.state = value
            case "cursor": list.cursor = value
            default: list.limit = value
            }
        }
        return try Self.json(try await service.events(merchant: merchant, request: list), status: .ok)
    }

    /// `GET /v1/payments`: a page of the merchant's payments, newest first, filtered (``PaymentSearchRequest``).
    func searchPayments(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        let search = try PaymentSearchRequest(request.uri.queryParameters.map { (String($0.key), String($0.value)) })
        return try Self.json(try await service.searchPayments(merchant: merchant, request: search), status: .ok)
    }

    /// `GET /v1/payments/export?format=csv|ndjson&…`: every payment the same filters match, streamed page by page (one
    /// page of the store in memory at a time), newest first. A bad parameter is answered before anything is streamed.
    func exportPayments(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        var pairs = request.uri.queryParameters.map { (String($0.key), String($0.value)) }
        let formats = pairs.filter { $0.0 == "format" }
        guard formats.count <= 1 else { throw ServiceError(status: .badRequest, code: "duplicate_field", message: "given twice", field: "format") }
        guard let format = formats.first?.1, format == "csv" || format == "ndjson" else {
            throw ServiceError(status: .badRequest, code: "invalid_field", message: "csv or ndjson", field: "format")
        }
        pairs.removeAll { $0.0 == "format" }
        let search = try PaymentSearchRequest(pairs, accepting: PaymentSearchRequest.parameters.filter { $0 != "limit" && $0 != "cursor" })
        _ = try search.query()
        let service = self.service
        let logger = context.logger
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let body = ResponseBody { writer in
            if format == "csv" { try await writer.write(ByteBuffer(string: PaymentExport.csvHeader)) }
            do {
                try await service.eachPayment(merchant: merchant, request: search) { page in
                    var buffer = ByteBuffer()
                    for payment in page {
                        if format == "csv" {
                            buffer.writeString(PaymentExport.csvRow(payment))
                        } else {
                            buffer.writeBytes(try encoder.encode(payment))
                            buffer.writeString("\n")
                        }
                    }
                    try await writer.write(buffer)
                }
            } catch {
                // The status is sent; a reader sees the export cut short (no final newline of a complete last page).
                logger.error("payments export stopped", metadata: ["error": .string(String(describing: type(of: error)))])
                throw error
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: format == "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
                                               .contentDisposition: "attachment; filename=\"payments.\(format)\""], body: body)
    }

    /// The query parameters `GET /v1/events` takes.
    static let eventListParameters = ["type", "payment", "state", "cursor", "limit"]

    /// A list's query: each parameter one of `allowed`, each given once. A misspelt one (`?stat=failed`) would otherwise be
    /// ignored, and the answer would look as if it had been obeyed.
    static func query(_ request: Request, allowed: [String]) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for (name, value) in request.uri.queryParameters {
            if name.isEmpty && value.isEmpty { continue }   // `?` alone, or `&&`
            let name = String(name)
            guard allowed.contains(name) else {
                throw ServiceError(status: .badRequest, code: "invalid_field",
                                   message: "not a parameter of this list (\(allowed.joined(separator: ", ")))",
                                   field: CheckoutError.printable(name))
            }
            guard parameters.updateValue(String(value), forKey: name) == nil else {
                throw ServiceError(status: .badRequest, code: "duplicate_field", message: "given twice", field: name)
            }
        }
        return parameters
    }

    /// `GET /v1/events/{id}`: one of the merchant's events with every try at delivering it.
    func getEvent(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        return try Self.json(try await service.event(id, merchant: merchant), status: .ok)
    }

    /// `POST /v1/events/{id}/redeliver`: the event is pending again and due now; 202, as the delivery happens later.
    func redeliverEvent(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let merchant = try service.merchantOnly(try await authenticate(request, context))
        return try Self.json(try await service.redeliver(id, merchant: merchant), status: .accepted)
    }

    func notification(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        // Every notification is read and verified (a signature over a body of at most maxBodyBytes): a verified one is
        // never refused, however many its sender's address also sent that were not. Only a refusal is charged to the
        // address, and once its bucket is empty the refusal is answered 429 (the sender backs off): a gateway posting
        // another account's notifications here, or a forger, cannot have a gateway's genuine ones held back.
        let limit = state.access.server.rejectedNotificationsPerAddress
        let now = TokenBuckets.monotonicSeconds()
        let ack: NotificationAcknowledgement
        do {
            let gatewayID = GatewayID(rawValue: try context.parameters.require("gateway"))
            let body = try await body(request)
            ack = try await service.receiveNotification(gateway: gatewayID, headers: headers(request), body: Data(buffer: body),
                                                        logger: context.logger)
        } catch let error as ServiceError where (400..<500).contains(error.status.code) {
            if let limit, let wait = limits.rejectedNotifications.charge(RequestLimits.addressKey(context.peerIP), limit: limit, now: now) {
                limits.refused(.rejectedNotifications)
                throw ServiceError.tooManyRequests("from this address after refused notifications", retryAfter: wait)
            }
            throw error
        }
        return Response(status: .init(code: ack.statusCode), headers: [.contentType: ack.contentType],
                        body: .init(byteBuffer: ByteBuffer(bytes: ack.body)))
    }

    func challenge(_ request: Request, _ context: TillRequestContext) async throws -> Response {
        let gatewayID = GatewayID(rawValue: try context.parameters.require("gateway"))
        let answer = try service.answerChallenge(gateway: gatewayID, headers: headers(request))
        context.logger.info("endpoint verification answered", metadata: ["gateway": .string(gatewayID.rawValue)])
        return Response(status: .init(code: answer.statusCode), headers: [.contentType: answer.contentType],
                        body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    // MARK: Plumbing

    func headers(_ request: Request) -> [String: String] {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        return headers
    }

    /// What a request's credential and address say before anything is read from the store: the one rule that both
    /// ``authenticate(_:_:)`` and a connection's ``EarlyRefusal`` follow.
    enum Admission {
        /// A merchant's API key, its bucket not empty (charged later, by ``authenticate(_:_:)``).
        case apiKey(MerchantRuntime, MerchantKey)
        /// Anything else — a client secret, a wrong credential, none (`token` nil) — from `address` (its bucket key),
        /// neither the address's failed-authentication bucket nor the client secret's payment's bucket empty.
        case other(token: String?, address: String)
        /// Refused `429`: a bucket the request would pay from is already empty; with the API key it was, when it was one
        /// (its id goes in the request's log line).
        case refused(RequestLimits.Limit, ServiceError, key: (merchant: MerchantRuntime, key: MerchantKey)? = nil)
    }

    /// The buckets, in order: an API key is recognised first (in memory, no store read), so a merchant's backend is
    /// never held back by others' failures at its address; then an address whose failed authentications emptied its
    /// bucket; then a client secret's payment whose bucket is empty. Checks only: nothing is charged here.
    func admit(authorization header: String?, peerIP: String?, now: Double) -> Admission {
        let token = header.flatMap { $0.count > 7 && $0.prefix(7).lowercased() == "bearer " ? String($0.dropFirst(7)) : nil }
        let access = state.access
        if let token, let (merchant, key) = state.merchant(apiKey: token) {
            if let limit = access.limits(merchant: merchant.configuration.id).apiKey,
               let wait = limits.apiKeys.emptyFor(Self.apiKeyBucket(merchant, key), limit: limit, now: now) {
                return .refused(.apiKey, .tooManyRequests("for API key \(key.id)", retryAfter: wait), key: (merchant, key))
            }
            return .apiKey(merchant, key)
        }
        let address = RequestLimits.addressKey(peerIP)
        if let failedLimit = access.server.failedAuthenticationPerAddress,
           let wait = limits.failedAuthentication.emptyFor(address, limit: failedLimit, now: now) {
            return .refused(.failedAuthentication, .tooManyRequests("from this address after failed authentication", retryAfter: wait))
        }
        if let token, let (paymentID, _) = ClientSecret.split(token), let wait = limits.clientSecrets.emptyFor(paymentID, limit: nil, now: now) {
            return .refused(.clientSecret, .tooManyRequests("for this payment's client secret", retryAfter: wait))
        }
        return .other(token: token, address: address)
    }

    /// What a request's log line says of the API key it used: the merchant and the key's id, never the key.
    static func keyNote(_ merchant: MerchantRuntime, _ key: MerchantKey) -> Logger.Metadata {
        ["merchant": .string(merchant.configuration.id), "key_id": .string(key.id)]
    }

    /// An API key's bucket: by merchant and key id.
    static func apiKeyBucket(_ merchant: MerchantRuntime, _ key: MerchantKey) -> String { "\(merchant.configuration.id)/\(key.id)" }

    /// Whether a route authenticates its caller (``authenticate(_:_:)``): every route under `/v1/` but the gateways'
    /// notifications and their endpoint checks, which verify a gateway's signature instead. `path` may carry a query.
    static func authenticates(path: String) -> Bool {
        // Split as the router splits: empty segments (`//v1//payments`) count for nothing.
        let segments = path.prefix { $0 != "?" }.split(separator: "/", maxSplits: 1)
        return segments.count == 2 && segments[0] == "v1"
            && segments[1] != "notifications" && !segments[1].hasPrefix("notifications/") && !segments[1].hasPrefix("/")
    }

    /// The caller of a request: `Authorization: Bearer <merchant API key | client secret>` (the scheme
    /// name in any case, as HTTP authentication schemes are; exactly one space before the credential), within its
    /// rate limits (`429` with `Retry-After` past them) and its key's scope (`403` for a read-only key's write).
    ///
    /// The buckets are checked first (``admit(authorization:peerIP:now:)``), before anything may read the store (a client
    /// secret's payment). Once authenticated, the API key's or the client secret's own bucket is charged. A failed
    /// authentication charges its address.
    func authenticate(_ request: Request, _ context: TillRequestContext) async throws -> PaymentService.Caller {
        let access = state.access
        let now = TokenBuckets.monotonicSeconds()
        let caller: PaymentService.Caller
        switch admit(authorization: request.headers[.authorization], peerIP: context.peerIP, now: now) {
        case .refused(let limit, let error, let key):
            if let key { context.credential.note(Self.keyNote(key.merchant, key.key)) }
            limits.refused(limit)
            throw error
        case .apiKey(let merchant, let key):
            caller = .merchant(merchant, key: key)
        case .other(let token, let address):
            do {
                guard let token else { throw ServiceError.unauthorized }
                caller = try await service.caller(clientSecret: token)
            } catch let error as ServiceError where error.status == .unauthorized {
                // Charged even past empty: requests that passed the check above together each pay.
                if let failedLimit = access.server.failedAuthenticationPerAddress {
                    _ = limits.failedAuthentication.charge(address, limit: failedLimit, now: now)
                }
                throw error
            }
        }
        let merchantLimits = access.limits(merchant: caller.merchant.configuration.id)
        switch caller {
        case .merchant(let merchant, let key):
            context.credential.note(Self.keyNote(merchant, key))
            // The bucket first: a read-only key's refused writes are requests too.
            if let limit = merchantLimits.apiKey,
               let wait = limits.apiKeys.take(Self.apiKeyBucket(merchant, key), limit: limit, now: now) {
                limits.refused(.apiKey)
                throw ServiceError.tooManyRequests("for API key \(key.id)", retryAfter: wait)
            }
            if key.scope == .readOnly && request.method != .get && request.method != .head {
                throw ServiceError(status: .forbidden, code: "read_only_key", message: "API key \(key.id) is read-only: it may only read")
            }
        case .payment(let merchant, let paymentID):
            context.credential.note(["merchant": .string(merchant.configuration.id), "client_secret_of": .string(paymentID)])
            if let limit = merchantLimits.clientSecret, let wait = limits.clientSecrets.take(paymentID, limit: limit, now: now) {
                limits.refused(.clientSecret)
                throw ServiceError.tooManyRequests("for this payment's client secret", retryAfter: wait)
            }
        }
        return caller
    }

    func body(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: state.settings.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw ServiceError(status: .contentTooLarge, code: "body_too_large",
                               message: "the body is larger than \(state.settings.maxBodyBytes) bytes", field: "body")
        }
    }

    /// - Parameter nullable: the top-level keys whose `null` means something (a change's "clear it"); anywhere else a
    ///   `null` is refused by its path, since the document gives no key a `null` value and a reader that took it as
    ///   "absent" would accept a body the document calls wrong.
    func decode<T: Decodable>(_ type: T.Type, _ buffer: ByteBuffer, field: String, nullable: Set<String> = []) throws -> T {
        let data = Data(buffer: buffer)
        // Every body is read first by the strict RFC 8259 reader, and only what it accepts reaches JSONDecoder.
        // A key given twice is refused by its path: JSONDecoder keeps the first silently, while the merchant's
        // own language may keep the last (Python, JavaScript and Go do), so the merchant's log and Till would
        // disagree about the amount. Anything else the strict reader refuses — a byte-order mark, UTF-16, a
        // trailing comma, a lone surrogate, `007` — is not JSON, even where JSONDecoder would take it; taking it
        // would let a duplicate key past the check.
        let parsed: OrderedJSON
        do {
            parsed = try OrderedJSON.parse(data, field: field)
        } catch where error.code == .duplicateField {
            // The path names a key the caller typed: a card number typed as a key is answered masked.
            throw ServiceError(status: .badRequest, code: error.code.rawValue, message: error.message,
                               field: error.field.map { Redactor.maskCardNumbers(in: $0) })
        } catch {
            throw ServiceError(status: .badRequest, code: "malformed_json", message: "the body is not valid JSON (\(error.message))", field: field)
        }
        if let path = Self.firstNull(in: parsed, path: field, nullable: nullable) {
            throw ServiceError(status: .badRequest, code: CheckoutError.Code.invalidField.rawValue,
                               message: "null is not a value here: leave the key out", field: Redactor.maskCardNumbers(in: path))
        }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            let issue = ConfigurationLoader.issue(from: error)
            let path = issue.field == "$" ? field : "\(field).\(issue.field)"
            // Only a body that is not JSON at all is malformed; a value that cannot be read (a fraction in an
            // integer, an enum value Till does not know) is an invalid field, named by its path.
            let malformed = issue.code == .malformedBody && issue.field == "$"
            let code = malformed ? "malformed_json" : issue.code == .malformedBody ? CheckoutError.Code.invalidField.rawValue : issue.code.rawValue
            throw ServiceError(status: .badRequest, code: code,
                               message: malformed ? "the body is not valid JSON" : issue.code == .malformedBody ? "not a valid value" : issue.message,
                               field: path)
        }
    }

    /// The path of the first `null` in `value` other than at a top-level key in `nullable`.
    static func firstNull(in value: OrderedJSON, path: String, nullable: Set<String>, depth: Int = 0) -> String? {
        switch value {
        case .null: return path
        case .object(let members):
            for member in members {
                if depth == 0, case .null = member.value, nullable.contains(member.key) { continue }
                if let found = firstNull(in: member.value, path: "\(path).\(CheckoutError.printable(member.key))", nullable: nullable, depth: depth + 1) {
                    return found
                }
            }
            return nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = firstNull(in: item, path: "\(path)[\(index)]", nullable: nullable, depth: depth + 1) { return found }
            }
            return nil
        default: return nil
        }
    }

    /// `GET /readyz`: 200 once the store answers a read within 2 s, else 503 (a load balancer stops sending requests
    /// here; `/healthz` says only that the process runs).
    func readiness(_ context: TillRequestContext) async -> Response {
        let store = service.store
        let ready = await readinessProbe.check(within: .seconds(2)) { try await store.checkReady() }
        if !ready { context.logger.warning("not ready: the store did not answer a read within 2 s") }
        return (try? Self.json(ready ? ["status": "ready"] : ["status": "unavailable", "reason": "the store did not answer"],
                               status: ready ? .ok : .serviceUnavailable)) ?? Response(status: .serviceUnavailable)
    }

    /// Runs a handler and turns every failure into a JSON error answer; nothing internal leaks.
    func respond(_ context: TillRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as ServiceError {
            var response = (try? Self.json(Self.errorBody(error), status: error.status)) ?? Response(status: error.status)
            if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
            return response
        } catch {
            context.logger.error("request failed", metadata: ["error": .string(String(describing: type(of: error)))])
            return (try? Self.json(ErrorBody(error: .init(code: "internal", message: "the server could not complete the request")),
                                   status: .internalServerError)) ?? Response(status: .internalServerError)
        }
    }

    /// The body of `error`'s answer. A field's path may hold a key the caller typed (a metadata key, an appData key): a
    /// card number typed as one is answered masked, whichever check named it.
    static func errorBody(_ error: ServiceError) -> ErrorBody {
        ErrorBody(error: .init(code: error.code, message: error.message, field: error.field.map { Redactor.maskCardNumbers(in: $0) },
                               category: error.category?.rawValue))
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: try jsonBytes(value))))
    }

    /// The bytes of every JSON answer: keys sorted, dates in ISO 8601.
    static func jsonBytes(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(value)
    }
}

/// `GET /readyz`'s check of the store. The answer never waits past its limit, even when the read hangs (a query sent on a
/// connection the network lost is not stopped by cancellation), and one read at a time is in flight: probes during an
/// outage wait on it rather than piling up more reads.
final class ReadinessProbe: Sendable {
    private let current = Locked<Task<Bool, Never>?>(nil)

    /// Whether `read` (the store's check) succeeds within `limit`; a read already in flight is waited on, not repeated.
    func check(within limit: Duration, _ read: @escaping @Sendable () async throws -> Void) async -> Bool {
        let inFlight = current.withLock { current -> Task<Bool, Never> in
            if let running = current { return running }
            let task = Task { () -> Bool in
                let ready = (try? await read()) != nil
                // Runs only after the assignment below (it needs the same lock).
                self.current.withLock { $0 = nil }
                return ready
            }
            current = task
            return task
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answered = Locked(false)
            let answer: @Sendable (Bool) -> Void = { ready in
                if answered.withLock({ done in defer { done = true }; return !done }) { continuation.resume(returning: ready) }
            }
            Task { answer(await inFlight.value) }
            Task {
                try? await Task.sleep(for: limit)
                answer(false)
            }
        }
    }
}
