import Foundation
import TillGatewayKit
import TillWorldline
import TillOrchestration

/// Capture, void and refund as Till's operations, wrapping ``WorldlineServer/approve(paymentId:amount:idempotenceKey:)``,
/// ``WorldlineServer/capture(paymentId:amount:isFinal:idempotenceKey:reference:)``, ``WorldlineServer/cancel(paymentId:idempotenceKey:)``
/// and the refund call. Sources: connect-sdk-python3 6.3.0 (`payments_client.py`, `captures_client.py`, `refunds_client.py`
/// and the domain classes named below), the API reference's `payments/approve` page and the docs' refunds-and-cancellations page.
///
/// | operation | wire | this operation's amount | Till's reference |
/// |---|---|---|---|
/// | capture of a `PENDING_APPROVAL` payment | `POST …/payments/{id}/approve` `{amount}` | the payment's `amountCaptured`, else `amountCaptureRequested` | `X-GCS-Idempotence-Key` |
/// | capture of a `PENDING_CAPTURE` payment | `POST …/payments/{id}/capture` `{amount, isFinal: true, order.references.merchantCaptureReference}` | `captureOutput.amountOfMoney` | idempotence key and `merchantCaptureReference` |
/// | void | `POST …/payments/{id}/cancel`, no body | the request's | idempotence key |
/// | refund | `POST …/payments/{id}/refund` `{amountOfMoney, refundReferences.merchantReference}` | `refundOutput.amountOfMoney` | idempotence key and `merchantReference` |
///
/// Every amount is Worldline's two-decimal integer (``WorldlineAmount``).
extension WorldlineServer {
    /// Capture: partial (`approve`: "a different lower amount"; `capture`: "can be lower than the amount that was authorized"),
    /// single: Till's authorisation asks for approval, and "the PENDING_APPROVAL status is used for payments that only allow a
    /// single capture" (API reference `payments/approve`); multiple captures are a pilot feature enabled per account (docs
    /// `payment-scenarios/Multiple-partial-captures`), so Till does not count on them and sends no final flag (`approve` has
    /// none; a `capture` is always sent final). Void: `cancel`. Refund: partial and multiple ("multiple refund requests on one
    /// payment as long as the total … does not exceed the total amount that was paid", API reference `payments/refund`).
    /// No source gives a window for any of them.
    public var operationCapabilities: OperationCapabilities {
        OperationCapabilities(capture: .init(partial: true, multiple: false, finalFlag: false), void: .init(),
                              refund: .init(partial: true, multiple: true))
    }

    /// Sends one capture, void or refund; see the type's table.
    /// - Throws: ``CheckoutError``: `unsupported` (nothing sent) for an amount in a currency Worldline's amounts cannot express;
    ///   `unavailable` when the payment is not named or cannot be read before a capture (nothing that moves money was sent);
    ///   `unknown_outcome` for a 409 (`1409`: the same key's request still in progress; another conflict), a 5xx, a lost or
    ///   unreadable answer. A definite refusal (400, 401, 402, 403, 404, 405, 410, a refund's `refundResult`) is a `failed` report.
    public func perform(_ operation: OperationRequest) async throws -> OperationReport {
        guard operationCapabilities.offers(operation.kind) else { throw CheckoutError.unsupportedOperation(operation.kind, gateway: gateway) }
        guard WorldlineAmount.supports(operation.amount.currency) else {
            throw CheckoutError.unsupportedOperation(operation.kind, aspect: "currency", gateway: gateway,
                                                     why: "Worldline amounts have two decimals; \(operation.amount.currency.code) has \(operation.amount.currency.minorUnits)")
        }
        guard operation.amount.currency == operation.intent.amount.currency else {
            throw CheckoutError(.invalidField, field: "operation.amount.currency", message: "not the payment's currency", gateway: gateway)
        }
        guard operation.amount.minorUnits > 0 else {
            throw CheckoutError(.invalidAmount, field: "operation.amount", message: "must be positive", gateway: gateway)
        }
        let paymentId = try paymentId(of: operation)
        let key = operation.reference.rawValue
        switch operation.kind {
        case .capture:
            // Which call captures depends on the payment's status: read it first (nothing that moves money is sent yet).
            let payment: WorldlinePayment
            do { payment = try await fetchPayment(paymentId) } catch {
                throw CheckoutError(error.code, category: .unavailable, field: error.field,
                                    message: "the payment could not be read before the capture, nothing was sent: \(error.message)",
                                    gateway: gateway, gatewayCode: error.gatewayCode, gatewayMessage: error.gatewayMessage)
            }
            switch payment.status {
            case "PENDING_APPROVAL":
                let response = try await sendApprove(paymentId: paymentId, amount: operation.amount, idempotenceKey: key)
                guard (200..<300).contains(response.statusCode) else { return try refusal(response, operation) }
                let approved = try api.decode(response, as: WorldlinePaymentApprovalResponse.self)
                guard let payment = approved.payment else {
                    throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "answer.payment", message: "the approval names no payment",
                                        gateway: gateway)
                }
                return try captureReport(payment, operation, answered: true)
            case "PENDING_CAPTURE":
                let response = try await sendCapture(paymentId: paymentId, amount: operation.amount, isFinal: true, idempotenceKey: key,
                                                     reference: key)
                guard (200..<300).contains(response.statusCode) else { return try refusal(response, operation) }
                return try captureReport(try api.decode(response, as: WorldlineCapture.self), operation)
            default:
                return OperationReport(reference: operation.reference, kind: .capture, status: .failed, amount: operation.amount,
                                       gatewayReference: nil, gatewayStatus: payment.status,
                                       gatewayMessage: "the payment is \(payment.status ?? "without a status"), not PENDING_APPROVAL or PENDING_CAPTURE: nothing was sent")
            }
        case .void:
            let response = try await sendCancel(paymentId: paymentId, idempotenceKey: key)
            guard (200..<300).contains(response.statusCode) else { return try refusal(response, operation) }
            let answer = try api.decode(response, as: WorldlineCancelResponse.self)
            return voidReport(answer.payment, operation, answered: true)
        case .refund:
            let response = try await sendRefund(paymentId: paymentId, amount: operation.amount, reference: key, idempotenceKey: key)
            if let refused = WorldlineServerAPI.errorBody(response), let result = refused.refundResult, !(200..<300).contains(response.statusCode) {
                // A declined refund (`refund_error_response.py`: "details on the created refund in case one has been created").
                var report = try refundReport(result, operation)
                let first = result.statusOutput?.errors?.first ?? refused.errors?.first
                report.status = .failed
                report.gatewayCode = first?.code ?? result.status
                report.gatewayMessage = GatewayText.safe(first?.message)
                return report
            }
            guard (200..<300).contains(response.statusCode) else { return try refusal(response, operation) }
            return try refundReport(try api.decode(response, as: WorldlineRefund.self), operation)
        }
    }

    /// Asks Worldline about one operation: a capture by `GET /captures/{id}` (its id known) or the payment (`GET /payments/{id}`:
    /// a single capture is the payment's `amountCaptured`); a refund by `GET /refunds/{id}` or among the payment's refunds
    /// (`GET /payments/{id}/refunds`, by `merchantReference`); a void by the payment's status.
    public func inquireOperation(_ operation: OperationRequest) async throws -> OperationReport {
        let paymentId = try paymentId(of: operation)
        switch operation.kind {
        case .capture:
            if let id = operation.operationGatewayReference, !id.isEmpty {
                let request = try api.request(.get, "/captures/\(WorldlineServerAPI.pathSegment(id))")
                return try captureReport(try api.decode(try await api.send(request), as: WorldlineCapture.self), operation)
            }
            return try captureReport(try await fetchPayment(paymentId), operation, answered: false)
        case .void:
            return voidReport(try await fetchPayment(paymentId), operation, answered: false)
        case .refund:
            if let id = operation.operationGatewayReference, !id.isEmpty {
                let request = try api.request(.get, "/refunds/\(WorldlineServerAPI.pathSegment(id))")
                return try refundReport(try api.decode(try await api.send(request), as: WorldlineRefund.self), operation)
            }
            let request = try api.request(.get, "/payments/\(WorldlineServerAPI.pathSegment(paymentId))/refunds")
            let refunds = try api.decode(try await api.send(request), as: WorldlineRefundsResponse.self).refunds ?? []
            if let mine = refunds.first(where: { $0.refundOutput?.references?.merchantReference == operation.reference.rawValue }) {
                return try refundReport(mine, operation)
            }
            // No refund at all: none was made. Refunds without this reference: no source says Worldline echoes
            // `refundReferences.merchantReference` there, so their absence tells nothing.
            return OperationReport(reference: operation.reference, kind: .refund, status: refunds.isEmpty ? .failed : .unknown,
                                   amount: operation.amount,
                                   gatewayMessage: refunds.isEmpty ? "the payment has no refund" : "no refund of the payment names this operation")
        }
    }

    // MARK: Reading answers

    /// The payment id the operation is about (the attempt's `gatewayReference`).
    func paymentId(of operation: OperationRequest) throws(CheckoutError) -> String {
        guard let id = operation.gatewayReference, !id.isEmpty else {
            throw CheckoutError(.missingField, field: "operation.gatewayReference", message: "the attempt has no Worldline payment id", gateway: gateway)
        }
        return id
    }

    func fetchPayment(_ id: String) async throws(CheckoutError) -> WorldlinePayment {
        let request = try api.request(.get, "/payments/\(WorldlineServerAPI.pathSegment(id))")
        return try api.decode(try await api.send(request), as: WorldlinePayment.self)
    }

    /// A non-2xx answer to an operation. A definite refusal (400 validation, 401/403 credentials, 402 rejected, 404/410 no such
    /// object, 405 "the action you are attempting to do isn't allowed": docs `error-handling/response-codes`; python
    /// `exception_factory.py`) is `failed`; anything else may have been processed and throws `unknown_outcome`: 409 (`1409`
    /// "DUPLICATE REQUEST IN PROGRESS", or "a duplicate request … a duplicate key"), 5xx.
    func refusal(_ response: TransportResponse, _ operation: OperationRequest) throws(CheckoutError) -> OperationReport {
        let first = WorldlineServerAPI.errorBody(response)?.errors?.first
        switch response.statusCode {
        case 400, 401, 402, 403, 404, 405, 410:
            return OperationReport(reference: operation.reference, kind: operation.kind, status: .failed, amount: operation.amount,
                                   gatewayStatus: "HTTP \(response.statusCode)", gatewayCode: first?.code ?? String(response.statusCode),
                                   gatewayMessage: GatewayText.safe(first?.message))
        default:
            throw api.failure(response)
        }
    }

    /// An amount in the operation's currency, or an error naming `field`.
    func amount(_ wire: WorldlineAmountOfMoney?, _ operation: OperationRequest, field: String) throws(CheckoutError) -> Money? {
        guard let wire else { return nil }
        guard wire.currencyCode == operation.amount.currency.code, let money = WorldlineStatus.money(wire) else {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: field,
                                message: "an amount in \(wire.currencyCode), not the payment's \(operation.amount.currency.code)", gateway: gateway)
        }
        return money
    }

    func captureReport(_ capture: WorldlineCapture, _ operation: OperationRequest) throws(CheckoutError) -> OperationReport {
        if let echoed = capture.captureOutput?.references?.merchantCaptureReference, echoed != operation.reference.rawValue {
            throw CheckoutError(.unknownOutcome, field: "answer.captureOutput.references.merchantCaptureReference",
                                message: "Worldline answered about another capture", gateway: gateway)
        }
        return OperationReport(reference: operation.reference, kind: .capture, status: Self.captureStatus(capture.status),
                               amount: try amount(capture.captureOutput?.amountOfMoney, operation, field: "answer.captureOutput.amountOfMoney")
                                   ?? operation.amount,
                               gatewayReference: capture.id, gatewayStatus: capture.status,
                               gatewayCode: capture.statusOutput?.statusCode.map(String.init))
    }

    /// The single capture of a payment, read from the payment (an approval's answer, or an inquiry).
    /// - Parameter answered: the payment is the answer to Till's approval (a payment still waiting is then `pending`);
    ///   otherwise an inquiry finding it still waiting knows the approval never took effect (`failed`).
    func captureReport(_ payment: WorldlinePayment, _ operation: OperationRequest, answered: Bool) throws(CheckoutError) -> OperationReport {
        let output = payment.paymentOutput
        var status = Self.captureStatus(payment.status)
        switch payment.status {
        case "PENDING_APPROVAL", "PENDING_CAPTURE": status = answered ? .pending : .failed
        case "REJECTED": status = .failed
        default: break
        }
        var amount = operation.amount
        if let currency = output?.amountOfMoney?.currencyCode {
            let captured = [output?.amountCaptured, output?.amountCaptureRequested].compactMap { $0 }.first { $0 > 0 }
            if let captured { amount = try self.amount(.init(amount: captured, currencyCode: currency), operation, field: "answer.paymentOutput.amountCaptured")
                ?? amount }
        }
        return OperationReport(reference: operation.reference, kind: .capture, status: status, amount: amount, gatewayReference: nil,
                               gatewayStatus: payment.status, gatewayCode: payment.statusOutput?.statusCode.map(String.init),
                               gatewayMessage: GatewayText.safe(payment.statusOutput?.errors?.first?.message))
    }

    /// A void read from the payment: `CANCELLED` is done; in an answer to the cancel, anything else is `pending`; in an inquiry,
    /// any other status means the cancel did not take effect.
    func voidReport(_ payment: WorldlinePayment?, _ operation: OperationRequest, answered: Bool) -> OperationReport {
        let raw = payment?.status
        let status: OperationStatus = switch raw {
        case "CANCELLED"?: .succeeded
        case nil: answered ? .pending : .unknown
        default: answered ? .pending : .failed
        }
        return OperationReport(reference: operation.reference, kind: .void, status: status, amount: operation.amount, gatewayReference: nil,
                               gatewayStatus: raw, gatewayCode: payment?.statusOutput?.statusCode.map(String.init))
    }

    func refundReport(_ refund: WorldlineRefund, _ operation: OperationRequest) throws(CheckoutError) -> OperationReport {
        if let echoed = refund.refundOutput?.references?.merchantReference, echoed != operation.reference.rawValue,
           OperationReference(rawValue: echoed) != nil {
            throw CheckoutError(.unknownOutcome, field: "answer.refundOutput.references.merchantReference",
                                message: "Worldline answered about another refund", gateway: gateway)
        }
        return OperationReport(reference: operation.reference, kind: .refund, status: Self.refundStatus(refund.status),
                               amount: try amount(refund.refundOutput?.amountOfMoney, operation, field: "answer.refundOutput.amountOfMoney")
                                   ?? operation.amount,
                               gatewayReference: refund.id, gatewayStatus: refund.status,
                               gatewayCode: refund.statusOutput?.statusCode.map(String.init),
                               gatewayMessage: GatewayText.safe(refund.statusOutput?.errors?.first?.message))
    }

    // MARK: Statuses

    /// A capture's status (`capture.py`; for the payment of a single capture, `payment.py`): CREATED and CAPTURE_REQUESTED ("in
    /// the queue to be captured") are `pending`, since REJECTED_CAPTURE may still follow; CAPTURED ("captured and we have
    /// received online confirmation") and PAID are `succeeded`, and so is a capture later reversed or charged back (the capture
    /// itself happened); REJECTED_CAPTURE and CANCELLED are `failed`.
    static func captureStatus(_ raw: String?) -> OperationStatus {
        switch raw {
        case "CREATED", "CAPTURE_REQUESTED": .pending
        case "CAPTURED", "PAID", "REVERSED", "CHARGEBACK_NOTIFICATION", "CHARGEBACKED", "REFUNDED": .succeeded
        case "REJECTED_CAPTURE", "CANCELLED": .failed
        default: .unknown
        }
    }

    /// A refund's status (`refund_result.py`): CREATED, PENDING_APPROVAL ("awaiting approval from you") and REFUND_REQUESTED
    /// ("in the queue to be refunded") are `pending`; REFUNDED is `succeeded`; REJECTED, REJECTED_CAPTURE ("rejected by the bank
    /// or us during processing") and CANCELLED are `failed`.
    static func refundStatus(_ raw: String?) -> OperationStatus {
        switch raw {
        case "CREATED", "PENDING_APPROVAL", "REFUND_REQUESTED": .pending
        case "REFUNDED": .succeeded
        case "REJECTED", "REJECTED_CAPTURE", "CANCELLED": .failed
        default: .unknown
        }
    }

    // MARK: Notifications

    /// The operation a refund event is about: its reference from `refundOutput.references.merchantReference` when it is
    /// one of Till's, Worldline's refund id, the refund's own amount.
    static func refundOperation(_ refund: WorldlineRefund) -> OperationReport {
        OperationReport(reference: refund.refundOutput?.references?.merchantReference.flatMap(OperationReference.init(rawValue:)),
                        kind: .refund, status: refundStatus(refund.status),
                        amount: refund.refundOutput?.amountOfMoney.flatMap { WorldlineStatus.money($0) }, gatewayReference: refund.id,
                        gatewayStatus: refund.status, gatewayCode: refund.statusOutput?.statusCode.map(String.init))
    }

    /// The operation a capture event is about (`webhooks_event.py` `capture`): its `merchantCaptureReference`, its id and amount.
    static func captureOperation(_ capture: WorldlineCapture) -> OperationReport {
        OperationReport(reference: capture.captureOutput?.references?.merchantCaptureReference.flatMap(OperationReference.init(rawValue:)),
                        kind: .capture, status: captureStatus(capture.status),
                        amount: capture.captureOutput?.amountOfMoney.flatMap { WorldlineStatus.money($0) }, gatewayReference: capture.id,
                        gatewayStatus: capture.status, gatewayCode: capture.statusOutput?.statusCode.map(String.init))
    }
}
