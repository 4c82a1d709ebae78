import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import Till
import TillGatewayKit

/// Where a crash-safety test wants the server to die while handling a notification.
public enum CrashPoint: String, Sendable {
    /// After the notification is verified, before anything is stored.
    case beforeStore = "before-store"
    /// After the notification is stored and applied (committed), before the acknowledgement is sent.
    case afterStore = "after-store"
}

/// Builds the merchant server's HTTP application. Mount it, or run it with `runService()`.
///
/// - Parameters:
///   - state: merchants with resolved secrets (``ServerState``).
///   - store: where payments live; migrated by the caller.
///   - metrics: where counters and timers go (`till_payments_created_total`,
///     `till_payment_status_total{status}`, `till_notifications_total{gateway,result}`,
///     `till_prepare_duration{gateway}`); the process-wide swift-metrics backend by default.
///   - crashPoint: test-only fault injection: the process kills itself there (SIGKILL).
///   - onServerRunning: called with the bound port once listening (port 0 picks one).
public func buildApplication(
    state: ServerState, store: any PaymentStore, logger: Logger = Logger(label: "till.server"),
    metrics: any MetricsFactory = MetricsSystem.factory,
    crashPoint: CrashPoint? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    guard let (host, port) = state.settings.hostAndPort else {
        throw StartupError(problems: ["server.listen: expected host:port"])
    }
    let api = API(state: state, store: store, metrics: metrics, crashPoint: crashPoint)
    let router = Router(context: BasicRequestContext.self)
    router.add(middleware: RequestIDMiddleware())
    router.get("/healthz") { _, _ in try API.json(["status": "ok"], status: .ok) }
    let v1 = router.group("v1")
    v1.post("payments") { request, context in await api.respond(context) { try await api.createPayment(request, context) } }
    v1.get("payments/:id") { request, context in await api.respond(context) { try await api.getPayment(request, context) } }
    v1.post("payments/:id/attempts") { request, context in await api.respond(context) { try await api.prepare(request, context) } }
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
    return Application(
        router: router,
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "till"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: logger)
}

/// Adds a request id to every request's logger and response (`X-Request-Id`, echoed if the caller sent one).
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[.requestID].flatMap { $0.count <= 64 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } ? $0 : nil }
        let id = given ?? UUID().uuidString.lowercased()
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        var response = try await next(request, context)
        response.headers[.requestID] = id
        return response
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}

/// An error answer with a stable code.
struct APIError: Error {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var field: String?
    /// For gateway failures: what is known about the money (the app's router acts on it).
    var category: CheckoutError.Category?

    static let unauthorized = APIError(status: .unauthorized, code: "unauthorized", message: "missing or invalid API key")
    static func notFound(_ what: String) -> APIError { APIError(status: .notFound, code: "not_found", message: "no such \(what)") }

    init(status: HTTPResponse.Status, code: String, message: String, field: String? = nil, category: CheckoutError.Category? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.category = category
    }

    init(_ error: CheckoutError, status: HTTPResponse.Status = .badRequest) {
        self.init(status: status, code: error.code.rawValue, message: error.message, field: error.field, category: error.category)
    }
}

/// The handlers.
struct API: Sendable {
    let state: ServerState
    let store: any PaymentStore
    let metrics: any MetricsFactory
    let crashPoint: CrashPoint?
    /// Attempts with an inquiry under way, so a burst of forged notifications causes one inquiry.
    let inquiries = InFlight()
    /// Removes credentials from stored notification headers (patterns compiled once).
    let redactor = Redactor()

    // MARK: Payments

    func createPayment(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let intent = try decode(PaymentIntent.self, try await body(request), field: "body")
        if let issue = intent.validate(path: "body").first { throw APIError(issue.error) }
        let key = request.headers[.idempotencyKey]
        if let key, key.isEmpty || key.count > 255 {
            throw APIError(status: .badRequest, code: "invalid_field", message: "1 to 255 characters", field: "Idempotency-Key")
        }
        let canonical = try Self.canonicalJSON(intent)
        let hash = Hex.encode(SHA256.hash(data: canonical))
        let outcome = try await store.create(intent, merchant: merchant.configuration.id, id: "pay_" + UUID().uuidString.lowercased()
                                                 .replacingOccurrences(of: "-", with: ""), idempotencyKey: key, requestHash: hash)
        switch outcome {
        case .created(let payment):
            Counter(label: "till_payments_created_total", dimensions: [("merchant", merchant.configuration.id)], factory: metrics).increment()
            context.logger.info("payment created", metadata: ["payment": .string(payment.id)])
            return try Self.json(PaymentView(payment), status: .created)
        case .replayed(let payment):
            var response = try Self.json(PaymentView(payment), status: .ok)
            response.headers[.idempotentReplayed] = "true"
            return response
        case .idempotencyConflict:
            throw APIError(status: .conflict, code: "idempotency_conflict",
                           message: "this Idempotency-Key was used with a different request", field: "Idempotency-Key")
        case .duplicateReference:
            throw APIError(status: .conflict, code: "duplicate_reference",
                           message: "another payment already uses this merchant reference", field: "body.merchantReference")
        }
    }

    func getPayment(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let id = try context.parameters.require("id")
        guard let payment = try await store.payment(id: id, merchant: merchant.configuration.id) else { throw APIError.notFound("payment") }
        return try Self.json(PaymentView(payment), status: .ok)
    }

    // MARK: Prepare

    func prepare(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let id = try context.parameters.require("id")
        let raw = try await body(request)
        let input = raw.readableBytes == 0 ? PrepareRequest() : try decode(PrepareRequest.self, raw, field: "body")
        guard let payment = try await store.payment(id: id, merchant: merchant.configuration.id) else { throw APIError.notFound("payment") }
        let gatewayID = try chooseGateway(for: payment, merchant: merchant)
        guard let gateway = merchant.gateways[gatewayID] else {
            throw APIError(status: .serviceUnavailable, code: "misconfigured", message: "gateway \(gatewayID) is not available")
        }
        let reference = AttemptReference.generate()
        do {
            // Stored before the gateway hears of it, so no notification can arrive for an unknown attempt.
            // Compare-and-set: only if the attempts the decision was made on are still exactly these.
            try await store.addAttempt(reference, payment: payment.id, gateway: gatewayID, expected: payment.attempts)
        } catch StoreError.conflict {
            throw APIError(status: .conflict, code: "attempt_in_progress",
                           message: "the payment changed while preparing (another attempt, or a late notification); read it again")
        }
        let notificationURL = notificationURL(for: gatewayID)
        let start = ContinuousClock.now
        merchant.health.attemptStarted(on: gatewayID)
        do {
            // The app offered every route it has; the chosen gateway takes the one that fits it.
            let returnURL = try gateway.returnURL(from: input.offeredReturnURLs, for: payment.intent)
            var preparation = try await gateway.prepare(AttemptContext(intent: payment.intent, attempt: reference,
                                                                       returnURL: returnURL, notificationURL: notificationURL))
            preparation.returnURL = preparation.returnURL ?? returnURL
            Timer(label: "till_prepare_duration", dimensions: [("gateway", gatewayID.rawValue)], factory: metrics).recordNanoseconds((ContinuousClock.now - start).nanosecondsCount)
            merchant.health.record(gatewayID, success: true)
            try await store.attemptPrepared(reference, gatewayReference: preparation.gatewayReference, returnURL: preparation.returnURL)
            context.logger.info("attempt prepared", metadata: ["payment": .string(payment.id), "attempt": .string(reference.rawValue),
                                                               "gateway": .string(gatewayID.rawValue)])
            return try Self.json(preparation, status: .created)
        } catch {
            Timer(label: "till_prepare_duration", dimensions: [("gateway", gatewayID.rawValue)], factory: metrics).recordNanoseconds((ContinuousClock.now - start).nanosecondsCount)
            let failure = error as? CheckoutError
                ?? CheckoutError(.unknownOutcome, message: "the gateway module failed unexpectedly", gateway: gatewayID)
            merchant.health.record(gatewayID, success: failure.category != .unavailable && failure.category != .unknownOutcome)
            try await close(reference, on: gatewayID, after: failure, stage: "prepare")
            throw APIError(status: failure.category == .invalidInput ? .unprocessableContent : .badGateway,
                           code: failure.code.rawValue, message: failure.message, field: failure.field, category: failure.category)
        }
    }

    /// After a failed Prepare or Submit: an attempt known not to have charged is closed as failed (so
    /// the next prepare may cascade, as the decision table allows); one that may have reached the
    /// gateway stays open (pending) for an inquiry to settle.
    func close(_ reference: AttemptReference, on gatewayID: GatewayID, after failure: CheckoutError, stage: String) async throws {
        if let code = AttemptFailure(failure).recordedCode {
            _ = try await store.apply(StatusReport(gateway: gatewayID, attempt: reference, status: .failed, gatewayCode: code,
                                                   eventID: "\(stage):\(reference)"))
        } else {
            try await store.attemptPrepared(reference, gatewayReference: nil, returnURL: nil)
        }
    }

    func notificationURL(for gatewayID: GatewayID) -> URL? {
        state.settings.publicURL.flatMap { URL(string: $0)?.appendingPathComponent("v1/notifications/\(gatewayID.rawValue)") }
    }

    // MARK: Submit

    /// `POST /v1/attempts/{reference}/submit`: the app hands over what it collected (an encrypted
    /// payload, a card token) and the attempt's gateway is called with it, once. Failures are
    /// classified like Prepare's: never sent or declined closes the attempt; anything else leaves it
    /// pending for an inquiry (never a cascade).
    func submit(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        let submission = try decode(Submission.self, try await body(request), field: "body")
        if let issue = Self.validate(submission).first { throw APIError(issue.error) }
        guard let payment = try await store.payment(attempt: reference), payment.merchantID == merchant.configuration.id,
              let attempt = payment.attempts.first(where: { $0.reference == reference }),
              let gateway = merchant.gateways[attempt.gateway] else {
            throw APIError.notFound("attempt")
        }
        guard attempt.status == .pending, attempt.submittedAt == nil, try await store.markSubmitted(reference) else {
            throw APIError(status: .conflict, code: "already_submitted",
                           message: "attempt \(reference) was already submitted or is \(attempt.status); read it again")
        }
        let submitContext = SubmitContext(intent: payment.intent, attempt: reference, gatewayReference: attempt.gatewayReference,
                                          returnURL: attempt.returnURL, notificationURL: notificationURL(for: attempt.gateway))
        let result: SubmitResult
        do {
            result = try await gateway.submit(submission, context: submitContext)
            merchant.health.record(attempt.gateway, success: true)
        } catch {
            let failure = error as? CheckoutError
                ?? CheckoutError(.unknownOutcome, message: "the gateway module failed unexpectedly", gateway: attempt.gateway)
            merchant.health.record(attempt.gateway, success: failure.category != .unavailable && failure.category != .unknownOutcome)
            try await close(reference, on: attempt.gateway, after: failure, stage: "submit")
            context.logger.info("submit failed", metadata: ["attempt": .string(reference.rawValue), "code": .string(failure.code.rawValue),
                                                            "category": .string(failure.category.rawValue)])
            let status: HTTPResponse.Status = switch AttemptFailure(failure) {
            case .declined: failure.category == .invalidInput ? .unprocessableContent : .init(code: 402)
            case .neverSent, .unknown: .badGateway
            }
            throw APIError(status: status, code: failure.code.rawValue, message: failure.message, field: failure.field,
                           category: failure.category)
        }
        if let report = result.report {
            guard report.attempt == reference, report.gateway == attempt.gateway else {
                throw APIError(status: .badGateway, code: CheckoutError.Code.unknownOutcome.rawValue,
                               message: "the gateway answered about another attempt", category: .unknownOutcome)
            }
            _ = try await store.apply(report)
        }
        context.logger.info("attempt submitted", metadata: ["attempt": .string(reference.rawValue), "gateway": .string(attempt.gateway.rawValue)])
        let after = try await store.payment(attempt: reference) ?? payment
        return try Self.json(SubmitAnswer(next: result.next, payment: PaymentView(after)), status: .ok)
    }

    /// A submission's shape: a short kind, at most 32 fields, names of at most 64 characters, values
    /// of at most 32 KiB (an encrypted payload), no control characters in names.
    static func validate(_ submission: Submission) -> [ValidationIssue] {
        var issues = Validators.length(submission.kind, field: "body.kind", maxLength: 64)
        if submission.kind.isEmpty { issues.append(ValidationIssue(field: "body.kind", code: .missingField, message: "is required")) }
        if submission.fields.count > 32 {
            issues.append(ValidationIssue(field: "body.fields", code: .invalidField, message: "at most 32 fields"))
        }
        for (name, value) in submission.fields.sorted(by: { $0.key < $1.key }) {
            if name.isEmpty || name.count > 64 || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                issues.append(ValidationIssue(field: "body.fields", code: .invalidField, message: "field names are 1 to 64 printable characters"))
            }
            issues += Validators.length(value, field: "body.fields.\(name)", maxLength: 32_768)
        }
        return issues
    }

    /// The gateway for the next attempt, or the reason there is none. A new attempt is allowed only
    /// when every earlier one ended without moving money, and the last one's code may be retried.
    func chooseGateway(for payment: StoredPayment, merchant: MerchantRuntime) throws -> GatewayID {
        if payment.status.moneyMoved || payment.status == .authorized {
            throw APIError(status: .conflict, code: "already_paid", message: "the payment is \(payment.status)")
        }
        if let open = payment.attempts.first(where: { !$0.status.isNegative }) {
            throw APIError(status: .conflict, code: "attempt_in_progress",
                           message: "attempt \(open.reference) is \(open.status); wait for its outcome")
        }
        if payment.attempts.count >= merchant.configuration.retry.maxAttempts {
            throw APIError(status: .conflict, code: "attempts_exhausted", message: "no attempts left for this payment")
        }
        if let last = payment.attempts.last, last.status == .failed, last.gatewayCode != AttemptFailure.notSentCode,
           merchant.decisionTable(for: last.gateway).decision(for: last.gatewayCode) != .retryNext {
            throw APIError(status: .conflict, code: "not_retryable",
                           message: "the last attempt's decline (\(last.gatewayCode ?? "no code")) may not be retried on another gateway")
        }
        // The same seed per payment: every prepare of one payment sees the same order.
        var generator = SeededGenerator(seed: UInt64(truncatingIfNeeded: payment.id.utf8.reduce(UInt64(14_695_981_039_346_656_037)) {
            ($0 ^ UInt64($1)) &* 1_099_511_628_211 }))
        let tried = Set(payment.attempts.map(\.gateway))
        let decision = merchant.router.route(payment.intent, health: merchant.health, using: &generator)
        guard let next = decision.candidates.first(where: { !tried.contains($0) }) else {
            throw APIError(status: .conflict, code: "no_gateway_left", message: "no untried gateway can take this payment")
        }
        return next
    }

    /// The payment an attempt belongs to (the app knows its attempt from the preparation).
    func getAttempt(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        guard let payment = try await store.payment(attempt: reference), payment.merchantID == merchant.configuration.id else {
            throw APIError.notFound("attempt")
        }
        return try Self.json(PaymentView(payment), status: .ok)
    }

    /// Asks the attempt's gateway for its status now and applies the answer: how a stuck attempt (a
    /// timeout during prepare, a notification that never came) is settled on demand.
    func inquireAttempt(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        guard let payment = try await store.payment(attempt: reference), payment.merchantID == merchant.configuration.id,
              let attempt = payment.attempts.first(where: { $0.reference == reference }),
              let gateway = merchant.gateways[attempt.gateway] else {
            throw APIError.notFound("attempt")
        }
        if !attempt.status.isFinal {
            do {
                let report = try await gateway.inquire(InquiryQuery(attempt: reference, gatewayReference: attempt.gatewayReference,
                                                                    amount: payment.intent.amount))
                guard report.attempt == reference, report.gateway == attempt.gateway else {
                    throw CheckoutError(.unknownOutcome, message: "the gateway answered about another attempt", gateway: attempt.gateway)
                }
                _ = try await store.apply(report)
            } catch let error as CheckoutError {
                throw APIError(status: .badGateway, code: error.code.rawValue, message: error.message, category: error.category)
            }
        }
        return try Self.json(PaymentView(try await store.payment(attempt: reference) ?? payment), status: .ok)
    }

    func reportOutcome(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let merchant = try authenticate(request)
        let reference = AttemptReference(rawValue: try context.parameters.require("reference"))
        let outcome = try decode(ClientOutcome.self, try await body(request), field: "body")
        for issue in Validators.length(outcome.message, field: "body.message", maxLength: 500)
            + Validators.length(outcome.gatewayCode, field: "body.gatewayCode", maxLength: 64) {
            throw APIError(issue.error)
        }
        guard let before = try await store.payment(attempt: reference), before.merchantID == merchant.configuration.id else {
            throw APIError.notFound("attempt")
        }
        try await store.recordClientOutcome(outcome, attempt: reference)
        let payment = try await store.payment(attempt: reference) ?? before
        context.logger.info("client outcome recorded (informational)", metadata: ["attempt": .string(reference.rawValue),
                                                                                 "kind": .string(outcome.kind.rawValue)])
        return try Self.json(PaymentView(payment), status: .accepted)
    }

    // MARK: Notifications

    func notification(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let gatewayID = GatewayID(rawValue: try context.parameters.require("gateway"))
        let candidates: [(merchant: MerchantRuntime, gateway: any CheckoutServer)] = state.merchants.compactMap { merchant in
            merchant.gateways[gatewayID].map { (merchant: merchant, gateway: $0) }
        }
        guard !candidates.isEmpty else { throw APIError.notFound("gateway") }
        let body = try await body(request)
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let incoming = IncomingNotification(headers: headers, body: Data(buffer: body))

        var verified: (MerchantRuntime, VerifiedNotification)?
        var failure: CheckoutError?
        for candidate in candidates {
            do {
                verified = (candidate.merchant, try candidate.gateway.verifyNotification(incoming))
                break
            } catch let error as CheckoutError {
                failure = failure ?? error
            } catch {
                failure = failure ?? CheckoutError(.malformedBody, message: "unverifiable notification")
            }
        }
        guard let (merchant, notification) = verified else {
            Counter(label: "till_notifications_total", dimensions: [("gateway", gatewayID.rawValue), ("result", "rejected")], factory: metrics).increment()
            context.logger.warning("notification rejected", metadata: ["gateway": .string(gatewayID.rawValue),
                                                                       "reason": .string(failure?.message ?? "unverifiable")])
            inquireClaimedAttempt(incoming, gateway: gatewayID, candidates: candidates, logger: context.logger)
            let status: HTTPResponse.Status = failure?.category == .verification ? .unauthorized : .badRequest
            throw APIError(status: status, code: failure?.code.rawValue ?? "unverifiable",
                           message: failure?.message ?? "the notification could not be verified", field: failure?.field)
        }
        if crashPoint == .beforeStore { Self.crash() }
        // Headers are kept for audit and re-verification, minus credentials a proxy may have added.
        let stored = RawNotification(gateway: gatewayID, headers: redactor.redact(headers: headers), body: incoming.body)
        let outcome = try await store.ingest(stored, report: notification.report, merchant: merchant.configuration.id)
        if crashPoint == .afterStore { Self.crash() }
        Counter(label: "till_notifications_total", dimensions: [("gateway", gatewayID.rawValue), ("result", "verified")], factory: metrics).increment()
        switch outcome {
        case .unknownAttempt:
            throw APIError(status: .notFound, code: "unknown_attempt", message: "no attempt with that reference")
        case .applied(let attemptStatus, let paymentStatus):
            Counter(label: "till_payment_status_total", dimensions: [("status", paymentStatus.rawValue)], factory: metrics).increment()
            context.logger.info("notification applied", metadata: [
                "merchant": .string(merchant.configuration.id), "attempt": .string(notification.report.attempt.rawValue),
                "attempt_status": .string(attemptStatus.rawValue), "payment_status": .string(paymentStatus.rawValue)])
        case .duplicate, .stale:
            context.logger.info("notification stored, not applied", metadata: [
                "attempt": .string(notification.report.attempt.rawValue), "outcome": .string(outcome.storedName)])
        }
        // Only now, with the notification durably stored, acknowledge it in the gateway's way.
        let ack = notification.acknowledgement
        return Response(status: .init(code: ack.statusCode), headers: [.contentType: ack.contentType],
                        body: .init(byteBuffer: ByteBuffer(bytes: ack.body)))
    }

    /// `GET /v1/notifications/{gateway}`: a gateway checking the endpoint before it sends to it. The
    /// first of the gateway's configured instances that recognises the request answers it; nothing
    /// is stored and no status changes. Anything else is 404.
    func challenge(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let gatewayID = GatewayID(rawValue: try context.parameters.require("gateway"))
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let incoming = IncomingNotification(headers: headers, body: Data())
        for merchant in state.merchants {
            if let answer = merchant.gateways[gatewayID]?.answerChallenge(incoming) {
                context.logger.info("endpoint verification answered", metadata: ["gateway": .string(gatewayID.rawValue)])
                return Response(status: .init(code: answer.statusCode), headers: [.contentType: answer.contentType],
                                body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
            }
        }
        throw APIError.notFound("endpoint verification")
    }

    /// An unverifiable notification changes nothing, but if it names an attempt we know, made on this
    /// gateway, that attempt's own merchant's gateway is asked directly (in the background, at most
    /// once per attempt at a time) and its answer applied.
    func inquireClaimedAttempt(_ incoming: IncomingNotification, gateway gatewayID: GatewayID,
                               candidates: [(merchant: MerchantRuntime, gateway: any CheckoutServer)], logger: Logger) {
        guard let claimed = candidates.lazy.compactMap({ $0.gateway.claimedAttempt(in: incoming) }).first,
              inquiries.begin(claimed) else { return }
        let (store, state, inquiries) = (self.store, self.state, self.inquiries)
        Task {
            defer { inquiries.end(claimed) }
            do {
                guard let payment = try await store.payment(attempt: claimed),
                      let attempt = payment.attempts.first(where: { $0.reference == claimed }), attempt.gateway == gatewayID,
                      !attempt.status.isFinal,
                      let gateway = state.merchant(id: payment.merchantID)?.gateways[gatewayID],
                      gateway.capabilities.supportsInquiry else { return }
                let report = try await gateway.inquire(InquiryQuery(attempt: claimed, gatewayReference: attempt.gatewayReference,
                                                                    amount: payment.intent.amount))
                guard report.attempt == claimed, report.gateway == gatewayID else { return }
                let outcome = try await store.apply(report)
                logger.info("inquiry after a rejected notification", metadata: ["attempt": .string(claimed.rawValue),
                                                                               "outcome": .string(outcome.storedName)])
            } catch {
                logger.warning("inquiry after a rejected notification failed", metadata: [
                    "attempt": .string(claimed.rawValue), "error": .string((error as? CheckoutError)?.code.rawValue ?? "\(type(of: error))")])
            }
        }
    }

    private static func crash() -> Never {
        kill(getpid(), SIGKILL)
        fatalError("unreachable")
    }

    // MARK: Plumbing

    func authenticate(_ request: Request) throws -> MerchantRuntime {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
              let merchant = state.merchant(apiKey: String(header.dropFirst("Bearer ".count))) else {
            throw APIError.unauthorized
        }
        return merchant
    }

    func body(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: state.settings.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw APIError(status: .contentTooLarge, code: "body_too_large",
                           message: "the body is larger than \(state.settings.maxBodyBytes) bytes", field: "body")
        }
    }

    func decode<T: Decodable>(_ type: T.Type, _ buffer: ByteBuffer, field: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(buffer: buffer))
        } catch let error as DecodingError {
            let issue = ConfigurationLoader.issue(from: error)
            let path = issue.field == "$" ? field : "\(field).\(issue.field)"
            let malformed = issue.code == .malformedBody
            throw APIError(status: .badRequest, code: malformed ? "malformed_json" : issue.code.rawValue,
                           message: malformed ? "the body is not valid JSON" : issue.message, field: path)
        }
    }

    /// Runs a handler and turns every failure into a JSON error answer; nothing internal leaks.
    func respond(_ context: BasicRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as APIError {
            return (try? Self.json(ErrorBody(error: .init(code: error.code, message: error.message, field: error.field,
                                                          category: error.category?.rawValue)), status: error.status))
                ?? Response(status: error.status)
        } catch {
            context.logger.error("request failed", metadata: ["error": .string(String(describing: type(of: error)))])
            return (try? Self.json(ErrorBody(error: .init(code: "internal", message: "the server could not complete the request")),
                                   status: .internalServerError)) ?? Response(status: .internalServerError)
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    static func canonicalJSON(_ intent: PaymentIntent) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(intent)
    }
}

extension Duration {
    var nanosecondsCount: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

/// A set of keys with work under way.
struct InFlight: Sendable {
    private let keys = Locked<Set<AttemptReference>>([])
    /// True if the caller may start (nothing under way for `key`).
    func begin(_ key: AttemptReference) -> Bool { keys.withLock { $0.insert(key).inserted } }
    func end(_ key: AttemptReference) { keys.withLock { _ = $0.remove(key) } }
}
