import Crypto
import Foundation
import HTTPTypes
import Logging
import Metrics
import Till
import TillGatewayKit
import TillOrchestration

/// The money rules of captures, voids and refunds, as one pure function over the payment as it is under its
/// lock: which attempt the operation is about, how much, and whether it may happen at all.
package enum OperationRules {
    /// Chooses the operation `command` asks for on `payment`, or throws the refusal.
    ///
    /// - Capture: only of an authorization (an `authorized` attempt, or a `paid` one whose earlier partial
    ///   captures Till made, at a gateway that takes several). Never more than what is authorized less every
    ///   capture not failed (pending and unknown ones count); none after a final capture or a void.
    /// - Void: only of an authorization nothing was captured from (no capture, pending, unknown or
    ///   succeeded), once.
    /// - Refund: only of captured money (a sale, or succeeded captures). Never more than what was captured
    ///   less everything refunded (Till's and the gateway's) and every refund still pending or unknown.
    /// - The gateway's capabilities: an operation it does not offer, a partial amount it does not take, a
    ///   second one it does not allow, or one after its window, is refused before anything is stored.
    package static func decide(_ kind: OperationKind, command: OperationCommand, payment: StoredPayment,
                               capabilities: (GatewayID) -> OperationCapabilities?, idempotencyKey: String, requestHash: String,
                               now: Date) throws -> StoredOperation {
        let currency = payment.intent.amount.currency
        if let amount = command.amount {
            guard amount.currency == currency else {
                throw ServiceError(status: .unprocessableContent, code: "currency_mismatch",
                                   message: "the payment is in \(currency.code)", field: "body.amount.currency")
            }
            guard amount.minorUnits > 0 else {
                throw ServiceError(status: .badRequest, code: CheckoutError.Code.invalidAmount.rawValue, message: "more than zero",
                                   field: "body.amount.value")
            }
            guard kind != .void else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "a void releases the whole authorization",
                                   field: "body.amount")
            }
        }
        if command.final != nil, kind != .capture {
            throw ServiceError(status: .badRequest, code: "invalid_field", message: "only a capture is final", field: "body.final")
        }
        // The attempt that holds the money: at most one per payment (no new attempt starts once one does).
        let holding: (PaymentStatus) -> Bool = kind == .refund
            ? { $0.moneyMoved }
            : { $0 == .authorized || $0 == .paid }
        guard let attempt = payment.attempts.last(where: { holding($0.status) }) else {
            let code = kind == .refund ? "nothing_captured" : "not_authorized"
            throw conflict(code, "the payment is \(payment.status): \(kind == .refund ? "nothing was captured" : "nothing is authorized")")
        }
        guard let offered = capabilities(attempt.gateway) else {
            throw ServiceError(status: .conflict, code: "gateway_not_configured",
                               message: "the attempt's gateway \(attempt.gateway) is not configured any more")
        }
        func unsupported(_ aspect: String?, _ why: String) -> ServiceError {
            let error = CheckoutError.unsupportedOperation(kind, aspect: aspect, gateway: attempt.gateway, why: why)
            return ServiceError(error, status: .unprocessableContent)
        }
        guard offered.offers(kind) else {
            throw unsupported(nil, "gateway \(attempt.gateway) does not offer \(OperationCapabilities.capabilityName(kind))")
        }
        if let window = offered.window(of: kind), now.timeIntervalSince(attempt.createdAt) > Double(window.components.seconds) {
            throw conflict("operation_window_closed", "gateway \(attempt.gateway) accepts a \(kind) only within \(window) of the payment")
        }
        let totals = MoneyTotals(attempt: attempt, operations: payment.operations, amount: payment.intent.amount)
        let earlier = payment.operations.filter { $0.attempt == attempt.reference && $0.kind == kind }
        let amount: Int64
        switch kind {
        case .capture:
            if totals.voided { throw conflict("already_voided", "the authorization was voided") }
            if attempt.status != .authorized && totals.capturedByOperations == 0 && totals.capturesOpen == 0 {
                throw conflict("already_captured", "the payment was captured in full (\(attempt.status))")
            }
            if totals.finalCapture { throw conflict("capture_final", "a final capture was made") }
            let remaining = totals.authorized - totals.capturedByOperations - totals.capturesOpen
            guard remaining > 0 else { throw conflict("already_captured", "everything authorized is captured or being captured") }
            amount = command.amount?.minorUnits ?? remaining
            guard amount <= remaining else {
                throw conflict("amount_exceeds_authorized", "at most \(Money(minorUnits: remaining, currency: currency)) is left to capture",
                               field: "body.amount.value")
            }
            let capability = offered.capture!
            if amount < remaining && !capability.partial {
                throw unsupported("partial", "gateway \(attempt.gateway) captures only the whole authorization")
            }
            // A gateway that takes one capture needs no check of its own here: its capture is final (below), so a second
            // one is `capture_final` above.
        case .void:
            if totals.capturedByOperations > 0 || totals.capturesOpen > 0 || attempt.status != .authorized {
                throw conflict("already_captured", "only an authorization nothing was captured from may be voided")
            }
            if totals.voided { throw conflict("already_voided", "the authorization was voided or is being voided") }
            amount = totals.authorized
        case .refund:
            let refundable = totals.captured - totals.refunded - totals.refundsOpen
            guard refundable > 0 else {
                throw conflict("already_refunded", "nothing captured is left to refund (refunded \(Money(minorUnits: totals.refunded, currency: currency)), "
                               + "pending \(Money(minorUnits: totals.refundsOpen, currency: currency)))")
            }
            amount = command.amount?.minorUnits ?? refundable
            guard amount <= refundable else {
                throw conflict("amount_exceeds_captured", "at most \(Money(minorUnits: refundable, currency: currency)) is left to refund",
                               field: "body.amount.value")
            }
            let capability = offered.refund!
            if amount < totals.captured - totals.refunded && !capability.partial {
                throw unsupported("partial", "gateway \(attempt.gateway) refunds only everything captured")
            }
            if (earlier.contains(where: { $0.status != .failed }) || totals.refunded > 0) && !capability.multiple {
                throw unsupported("multiple", "gateway \(attempt.gateway) takes one refund per payment")
            }
        }
        guard earlier.count < 999 else { throw conflict("too_many_operations", "999 \(kind)s of one attempt") }
        // A gateway that takes one capture releases the rest with it: the capture is final.
        let isFinal = kind == .capture && (command.final == true || offered.capture?.multiple == false)
        return StoredOperation(reference: OperationReference(attempt: attempt.reference, kind: kind, sequence: earlier.count + 1),
                               paymentID: payment.id, merchantID: payment.merchantID, gateway: attempt.gateway, status: .unknown,
                               amount: Money(minorUnits: amount, currency: currency), isFinal: isFinal,
                               idempotencyKey: idempotencyKey, requestHash: requestHash, createdAt: now, updatedAt: now)
    }

    static func conflict(_ code: String, _ message: String, field: String? = nil) -> ServiceError {
        ServiceError(status: .conflict, code: code, message: message, field: field)
    }
}

extension PaymentService {
    /// What an operation request came to: the operation as stored and whether it was a replay.
    public struct OperationAnswer: Sendable {
        public var operation: OperationView
        public var replayed: Bool
        /// The HTTP status its state answers with: 201 succeeded, 202 pending, 402 refused by the gateway,
        /// 502 unknown (settled later by inquiry).
        public var status: HTTPResponse.Status
    }

    /// Captures, voids or refunds (one of `kind`) on payment `id`: the money rules decided under the payment's lock
    /// and the operation stored as `unknown` before it is sent, so a crash or a lost answer leaves it to inquiry,
    /// never to a second request; a retry with the same `idempotencyKey` is answered from the store.
    public func operate(_ kind: OperationKind, paymentID id: String, merchant: MerchantRuntime, command: OperationCommand,
                        idempotencyKey key: String?, logger: Logger? = nil) async throws -> OperationAnswer {
        let logger = logger ?? self.logger
        guard let key else {
            throw ServiceError(status: .badRequest, code: "missing_field", message: "required for captures, voids and refunds",
                               field: "Idempotency-Key")
        }
        guard !key.isEmpty, key.count <= 255 else {
            throw ServiceError(status: .badRequest, code: "invalid_field", message: "1 to 255 characters", field: "Idempotency-Key")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let hash = Hex.encode(SHA256.hash(data: Data("\(kind.rawValue) \(id) ".utf8) + (try encoder.encode(command))))
        let gateways = merchant.gateways
        let now = Date()
        let outcome: OperationCreateOutcome
        do {
            outcome = try await storeOperation(payment: id, merchant: merchant, key: key, hash: hash) { payment in
                try OperationRules.decide(kind, command: command, payment: payment, capabilities: { gateways[$0]?.operationCapabilities },
                                          idempotencyKey: key, requestHash: hash, now: now)
            }
        } catch let error as StoreError {
            if case .conflict(let message) = error, message.hasPrefix("no payment") { throw ServiceError.notFound("payment") }
            throw error
        }
        let operation: StoredOperation
        switch outcome {
        case .replayed(let stored):
            return answer(stored, replayed: true)
        case .idempotencyConflict:
            throw ServiceError(status: .conflict, code: "idempotency_conflict",
                               message: "this Idempotency-Key was used with a different request", field: "Idempotency-Key")
        case .created(let stored):
            operation = stored
        }
        guard let gateway = merchant.gateways[operation.gateway], let payment = try await store.payment(id: id, merchant: merchant.configuration.id),
              let attempt = payment.attempts.first(where: { $0.reference == operation.attempt }) else {
            throw ServiceError.notFound("payment")
        }
        let request = OperationRequest(operation, of: payment, attempt: attempt, on: gateway, notificationURL: notificationURL(for: operation.gateway))
        let (report, refusal) = await send(request, to: gateway)
        let settled = try await settle(operation, with: report)
        Counter(label: "till_operations_total", dimensions: [("gateway", operation.gateway.rawValue), ("kind", kind.rawValue),
                                                             ("status", settled.status.rawValue)], factory: metrics).increment()
        logger.info("operation sent", metadata: ["payment": .string(id), "operation": .string(operation.reference.rawValue),
                                                 "status": .string(settled.status.rawValue), "code": .string(settled.gatewayCode ?? "")])
        // The gateway module refused it before anything left (a method or currency its wire cannot express): kept as a
        // failed operation, and answered as what it is, the caller's request the gateway cannot take (422, naming why).
        if let refusal, settled.status == .failed {
            throw ServiceError(refusal, status: .unprocessableContent)
        }
        return answer(settled, replayed: false)
    }

    /// The store's compare-and-set, retried when a concurrent write to the payment won (a database store reports a
    /// uniqueness conflict; the decision is then made again on what is stored now).
    private func storeOperation(payment id: String, merchant: MerchantRuntime, key: String, hash: String,
                                decide: @escaping @Sendable (StoredPayment) throws -> StoredOperation) async throws -> OperationCreateOutcome {
        var tries = 0
        while true {
            do {
                return try await store.addOperation(payment: id, merchant: merchant.configuration.id, idempotencyKey: key, requestHash: hash,
                                                    decide: decide)
            } catch StoreError.conflict(let message) where tries < 5 && !message.hasPrefix("no payment") {
                tries += 1
            }
        }
    }

    /// Sends one operation and turns whatever happened into a report: the gateway's answer, or what a failure
    /// says about the money (a refusal → `failed`; never sent → `failed`; anything else → `unknown`). A refusal by the
    /// gateway module before sending (category `unsupported` or `invalidInput`) is returned beside the report.
    func send(_ request: OperationRequest, to gateway: any GatewayServerHalf) async -> (OperationReport, refusal: CheckoutError?) {
        do {
            var report = try await GatewayExchanges.$attempt.withValue(request.reference.attempt) { try await gateway.perform(request) }
            report.reference = request.reference
            return (report, nil)
        } catch let error as CheckoutError {
            let status: OperationStatus = switch error.category {
            case .declinedHard, .declinedSoft, .invalidInput, .unsupported, .unavailable, .cancelled: .failed
            default: .unknown
            }
            let refusal = error.category == .unsupported || error.category == .invalidInput ? error : nil
            return (OperationReport(reference: request.reference, kind: request.kind, status: status,
                                    gatewayCode: error.gatewayCode ?? error.code.rawValue,
                                    gatewayMessage: GatewayText.safe(error.gatewayMessage ?? error.message)), refusal)
        } catch {
            return (OperationReport(reference: request.reference, kind: request.kind, status: .unknown, gatewayCode: "unknown_outcome",
                                    gatewayMessage: "\(type(of: error))"), nil)
        }
    }

    /// Applies a report to a stored operation and returns it as it now is.
    func settle(_ operation: StoredOperation, with report: OperationReport) async throws -> StoredOperation {
        switch try await store.settleOperation(operation.reference, report: report) {
        case .settled(let now), .unchanged(let now), .refused(let now, _): return now
        case .unknownOperation: return operation
        }
    }

    func answer(_ operation: StoredOperation, replayed: Bool) -> OperationAnswer {
        let status: HTTPResponse.Status = switch operation.status {
        case .succeeded: .created
        case .pending: .accepted
        case .failed: .init(code: 402)
        case .unknown: .badGateway
        }
        return OperationAnswer(operation: OperationView(operation), replayed: replayed, status: status)
    }

    /// One operation of the merchant's (`GET /v1/refunds/{id}`), by its reference.
    public func operation(_ reference: String, kind: OperationKind? = nil, merchant: MerchantRuntime) async throws -> OperationView {
        guard let parsed = OperationReference(rawValue: reference), kind.map({ $0 == parsed.kind }) ?? true,
              let operation = try await store.operation(parsed), operation.merchantID == merchant.configuration.id else {
            throw ServiceError.notFound(kind?.rawValue ?? "operation")
        }
        return OperationView(operation)
    }

    /// How long after an operation was stored an inquiry about it is not made: longer than any gateway module waits for
    /// an answer (45 s), so an inquiry never runs while the operation's own request may still be on its way (a gateway
    /// that has not seen it yet would say it did not happen).
    public static let operationInFlight: TimeInterval = 60

    /// The operation a confirmable notification names, asked about once its request can no longer be in flight; only a
    /// success or a pending answer is applied from this path (the notification says the gateway did something).
    func inquireNamedOperation(_ named: OperationReport, attempt: AttemptReference, merchant: MerchantRuntime, logger: Logger) async {
        do {
            guard let payment = try await store.payment(attempt: attempt), payment.merchantID == merchant.configuration.id,
                  let operation = StoreRules.match(named, among: payment.operations, attempt: attempt), !operation.status.isFinal,
                  let gateway = merchant.gateways[operation.gateway] else { return }
            let outcome = try await store.settle(operation, gateway: gateway, accepting: [.succeeded, .pending])
            logger.info("operation a notification named, asked about", metadata: [
                "operation": .string(operation.reference.rawValue), "outcome": .string(outcome.storedName)])
        } catch {
            logger.warning("inquiry of an operation a notification named failed", metadata: [
                "attempt": .string(attempt.rawValue), "error": .string((error as? CheckoutError)?.code.rawValue ?? "\(type(of: error))")])
        }
    }

    /// Asks the gateway about one open operation of the merchant's and applies the answer (`POST
    /// /v1/operations/{id}/inquire`): how an operator settles an operation whose answer was lost without waiting for
    /// the reconciler. Never sends the operation again.
    public func inquireOperation(_ reference: String, merchant: MerchantRuntime) async throws -> OperationView {
        guard let parsed = OperationReference(rawValue: reference), let operation = try await store.operation(parsed),
              operation.merchantID == merchant.configuration.id else { throw ServiceError.notFound("operation") }
        // Settled, or so young its own request may still be on its way: answered as stored, the gateway not asked.
        guard !operation.status.isFinal, Date().timeIntervalSince(operation.createdAt) >= Self.operationInFlight else {
            return OperationView(operation)
        }
        guard let gateway = merchant.gateways[operation.gateway] else {
            throw ServiceError(status: .conflict, code: "gateway_not_configured", message: "gateway \(operation.gateway) is not configured")
        }
        do {
            _ = try await store.settle(operation, gateway: gateway)
        } catch let error as CheckoutError {
            let status: HTTPResponse.Status = error.category == .unsupported ? .unprocessableContent : .badGateway
            throw ServiceError(status: status, code: error.code.rawValue, message: error.message, field: error.field, category: error.category)
        }
        return OperationView(try await store.operation(parsed) ?? operation)
    }
}

extension OperationView {
    init(_ operation: StoredOperation) {
        self.init(id: operation.reference.rawValue, paymentId: operation.paymentID, attempt: operation.attempt, kind: operation.kind,
                  status: operation.status, amount: operation.amount, final: operation.kind == .capture ? operation.isFinal : nil,
                  gatewayReference: operation.gatewayReference, gatewayCode: operation.gatewayCode, gatewayMessage: operation.gatewayMessage,
                  createdAt: operation.createdAt, updatedAt: operation.updatedAt)
    }
}
