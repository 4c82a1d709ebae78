import Foundation
import TillGatewayKit
import TillOrchestration

/// Capture, void (Gate's `cancel`) and refund through Gate, and what a callback says about one of them.
///
/// Gate answers such a request synchronously only about the request (`status` `success` = accepted, with its
/// `request_id`); the operation's outcome comes in a callback whose `operation.request_id` is that id
/// (ITECOMMPAY/woocommerce-ecommpay@7241b86: `EcpGatewayAPIPayment::capture()`/`cancel()` keep the answer's
/// `request_id`, `EcpModuleRefund::handle()` finds its refund by `operation.request_id`). So ``perform(_:)``
/// answers `pending` with the `request_id` as the operation's gateway reference, and the callback or Gate's
/// status answer (`operations[]`, found by `request_id`) settles it.
extension EcommpayServer {
    /// A Gate operation: the last segment of its path.
    enum GateOperation: String, Sendable {
        case capture
        case cancel
        case refund

        init(_ kind: OperationKind) {
            switch kind {
            case .capture: self = .capture
            case .void: self = .cancel
            case .refund: self = .refund
            }
        }
    }

    /// What ecommpay offers, from its plugins (ITECOMMPAY/woocommerce-ecommpay@7241b86 unless named):
    /// - capture: once, of all or part of the hold; the rest goes back to the payer ("The payment of %s was
    ///   captured. The rest is returned to the payer.", `EcpOrderManager.php`); no source makes a second capture
    ///   or sends a final flag; the hold's time limit is set up per project ("after specific time elapses",
    ///   developers.ecommpay.com en_gate_payment_auth.html), so no window;
    /// - void: Gate `cancel` of a hold (`EcpGatewayAPIPayment::cancel()`; Magento `EcpGatewayProcessor::cancel()`);
    /// - refund: partial and repeated while the payment keeps a balance (`EcpGatewayOrder::is_action_allowed`
    ///   allows a refund in `success`, `partially refunded`, `partially reversed`; `EcpModuleRefund::process()`
    ///   refuses only more than the balance); "there is no time limit for making a refund" in general
    ///   (en_Gate_Refund.html), so no window.
    public var operationCapabilities: OperationCapabilities {
        OperationCapabilities(capture: .init(partial: true, multiple: false), void: .init(), refund: .init(partial: true, multiple: true))
    }

    /// The path of `operation` for a payment made with `method`, under `v2/payment/`, or `nil` when no source
    /// gives one. Cards, Apple Pay and Google Pay have `card`, `applepay`, `googlepay` for the three
    /// (`EcpGatewayAPIPayment::getMethodEndpoint`, `EcpGatewayPaymentMethods`; Magento `etc/config.xml`); a
    /// PayPal payment is refunded at `wallet/paypal` (`EcpPayPal::REFUND_ENDPOINT`) and has no capture or cancel;
    /// Alipay's and WeChat Pay's paths are in no source.
    static func gatePath(_ operation: GateOperation, method: PaymentMethod) -> String? {
        let base: String? = switch method {
        case .card: "card"
        case .applePay: "applepay"
        case .googlePay: "googlepay"
        case .paypal: operation == .refund ? "wallet/paypal" : nil
        default: nil
        }
        return base.map { $0 + "/" + operation.rawValue }
    }

    /// Cancels a hold (all of it): Gate `POST /v2/payment/{card|applepay|googlepay}/cancel` with `general` only,
    /// as the Magento plugin sends it (`EcpGatewayProcessor::cancel()`: no `payment` object).
    /// - Throws: ``CheckoutError`` `unsupported` for a method without a cancel path, before anything is sent.
    public func cancel(_ attempt: AttemptReference, method: PaymentMethod = .card, callbackURL: URL? = nil) async throws -> CaptureAnswer {
        guard let path = Self.gatePath(.cancel, method: method) else {
            throw CheckoutError.unsupportedOperation(.void, aspect: "method", gateway: gateway, why: "no ecommpay source gives a cancel path for \(method)")
        }
        return try await gateOperation(path, attempt: attempt, payment: nil, callbackURL: callbackURL)
    }

    /// Refunds `amount` of a payment: Gate `POST /v2/payment/{method}/refund` with `payment{amount, currency,
    /// description, merchant_refund_id}` (WooCommerce `create_refund_request_form_data`; every plugin sends a
    /// description). `merchantRefundId` is Till's operation reference ("unique … identifier of a refund",
    /// `EcpGatewayInfoPayment::FIELD_MERCHANT_REFUND_ID`).
    /// - Throws: ``CheckoutError`` `unsupported` for a method without a refund path, before anything is sent.
    public func refund(_ attempt: AttemptReference, amount: Money, method: PaymentMethod = .card, merchantRefundId: String,
                       description: String, callbackURL: URL? = nil) async throws -> CaptureAnswer {
        guard let path = Self.gatePath(.refund, method: method) else {
            throw CheckoutError.unsupportedOperation(.refund, aspect: "method", gateway: gateway, why: "no ecommpay source gives a refund path for \(method)")
        }
        let payment = Self.sumMembers(amount) + [.init(key: "description", value: .string(description)),
                                                 .init(key: "merchant_refund_id", value: .string(merchantRefundId))]
        return try await gateOperation(path, attempt: attempt, payment: payment, callbackURL: callbackURL)
    }

    /// Sends one operation. Gate's acceptance is `pending` (the callback settles it) with the `request_id` as
    /// the gateway reference; its refusal (`error` or `decline`) is `failed` with Gate's code and message.
    /// - Throws: ``CheckoutError`` `unsupported` before anything is sent for a kind or method the wire cannot
    ///   express; `unknownOutcome` for a lost, unreadable or unverifiable answer, an answer other than HTTP 200
    ///   or a 4xx refusal, and an acceptance without a `request_id` (nothing could match its callback).
    public func perform(_ request: OperationRequest) async throws -> OperationReport {
        let operation = GateOperation(request.kind)
        guard operationCapabilities.offers(request.kind) else {
            throw CheckoutError.unsupportedOperation(request.kind, gateway: gateway)
        }
        guard let path = Self.gatePath(operation, method: request.intent.method) else {
            throw CheckoutError.unsupportedOperation(request.kind, aspect: "method", gateway: gateway,
                                                     why: "no ecommpay source gives a \(operation.rawValue) path for \(request.intent.method)")
        }
        guard request.amount.minorUnits > 0 || request.kind == .void else {
            throw CheckoutError(.invalidAmount, field: "amount", message: "a \(request.kind) of \(request.amount) moves no money", gateway: gateway)
        }
        let answer: CaptureAnswer
        switch operation {
        case .capture:
            answer = try await gateOperation(path, attempt: request.attempt, payment: Self.sumMembers(request.amount),
                                             callbackURL: request.notificationURL)
        case .cancel:
            answer = try await cancel(request.attempt, method: request.intent.method, callbackURL: request.notificationURL)
        case .refund:
            answer = try await refund(request.attempt, amount: request.amount, method: request.intent.method,
                                      merchantRefundId: request.reference.rawValue, description: "Refund \(request.reference.rawValue)",
                                      callbackURL: request.notificationURL)
        }
        if answer.isRefusal {
            return OperationReport(reference: request.reference, kind: request.kind, status: .failed, amount: request.amount,
                                   gatewayReference: answer.requestId, gatewayStatus: answer.status, gatewayCode: answer.code,
                                   gatewayMessage: answer.message)
        }
        guard let requestId = answer.requestId, !requestId.isEmpty else {
            throw CheckoutError(.missingField, category: .unknownOutcome, field: "v2/payment/\(path).request_id",
                                message: "Gate's answer names no request", gateway: gateway)
        }
        return OperationReport(reference: request.reference, kind: request.kind, status: .pending, amount: request.amount,
                               gatewayReference: requestId, gatewayStatus: answer.status)
    }

    /// Gate `POST /v2/payment/status` for the attempt, and the operation of its `operations[]` whose `request_id`
    /// is the one ``perform(_:)`` kept (WooCommerce `EcpGatewayPayment::get_operation_by_request`). `unknown`
    /// when the answer lists no such operation (it may not be registered yet: the docs ask for status requests
    /// "not earlier than 10 seconds after the initial request", en_Gate_payment_status_request.html) or when
    /// Till kept no `request_id` (the request's answer was lost).
    public func inquireOperation(_ request: OperationRequest) async throws -> OperationReport {
        let unknown = OperationReport(reference: request.reference, kind: request.kind, status: .unknown,
                                      gatewayReference: request.operationGatewayReference)
        guard let requestId = request.operationGatewayReference, !requestId.isEmpty else { return unknown }
        let body = try await gate("v2/payment/status", .object([generalBlock(request.attempt)]))
        guard body["payment"]?["id"]?.stringValue == request.attempt.rawValue, let operations = body["operations"]?.arrayValue else {
            return unknown
        }
        for (index, entry) in operations.enumerated() where Self.requestId(of: entry) == requestId {
            guard let report = try Self.operationReport(entry, field: "status.operations[\(index)]", gateway: gateway),
                  report.kind == request.kind else {
                throw CheckoutError(.invalidField, category: .unknownOutcome, field: "status.operations[\(index)].type",
                                    message: "request \(requestId) is not a \(request.kind)", gateway: gateway)
            }
            var named = report
            named.reference = request.reference
            return named
        }
        return unknown
    }

    /// `operation.request_id` as text.
    static func requestId(of operation: OrderedJSON) -> String? {
        operation["request_id"]?.stringValue ?? operation["request_id"]?.numberText
    }

    /// Till's kind of an ecommpay operation type: `capture`; `cancel` (a void); `refund` and `reversal` (a full
    /// refund before the business day closes; `EcpGatewayOperationType.php`, handled alike by every plugin).
    /// `nil` for the others (`sale`, `auth`, `refund reverse`…): they are not operations Till sends.
    static func operationKind(_ type: String) -> OperationKind? {
        switch type {
        case "capture": .capture
        case "cancel": .void
        case "refund", "reversal": .refund
        default: nil
        }
    }

    /// Till's status of an `operation.status` (ITECOMMPAY/ecommpay-commercetools-integration@c89fc14
    /// `notification/src/helpers/actions.ts`): `success` succeeded; `decline`, `external error`, `internal error`
    /// (and `error`, `expired`) failed; the rest (`processing`, `awaiting clarification`, `external processing`…)
    /// pending.
    static func operationStatus(_ raw: String) -> OperationStatus {
        switch raw {
        case "success": .succeeded
        case "decline", "external error", "internal error", "error", "expired": .failed
        default: .pending
        }
    }

    /// What one `operation` (of a callback, or of a status answer's `operations[]`) says, when it is a capture,
    /// cancel or refund: its kind and status, its own amount `sum_initial` ("the amount … of the operation as
    /// specified in the initial request", `EcpGatewayInfoOperation.php`; never `payment.sum`, the balance), its
    /// `request_id` as the gateway reference, its code and message. No reference of Till's: Gate echoes none
    /// on the operation (the refund's `merchant_refund_id` is a payment field no plugin reads back).
    static func operationReport(_ operation: OrderedJSON, field: String, gateway: GatewayID) throws(CheckoutError) -> OperationReport? {
        guard let kind = operation["type"]?.stringValue.flatMap(operationKind) else { return nil }
        guard let raw = operation["status"]?.stringValue else {
            throw CheckoutError(.missingField, field: "\(field).status", message: "an operation without its status", gateway: gateway)
        }
        let amount = EcommpayCallback.money(operation["sum_initial"])
        if let amount, amount.minorUnits < 0 {
            throw CheckoutError(.invalidAmount, field: "\(field).sum_initial.amount", message: "a negative amount", gateway: gateway)
        }
        return OperationReport(reference: nil, kind: kind, status: operationStatus(raw), amount: amount,
                               gatewayReference: requestId(of: operation), gatewayStatus: raw,
                               gatewayCode: operation["code"]?.stringValue ?? operation["code"]?.numberText,
                               gatewayMessage: operation["message"]?.stringValue.flatMap { GatewayText.safe($0) })
    }
}
