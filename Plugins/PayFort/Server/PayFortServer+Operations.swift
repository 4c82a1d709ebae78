import Foundation
import TillGatewayKit
import TillPayFort
import TillOrchestration

// MARK: Operations: capture, void, refund

extension PayFortMaintenanceRequest.Command {
    /// The operation this command is.
    var kind: OperationKind {
        switch self {
        case .capture: .capture
        case .refund: .refund
        case .void: .void
        }
    }

    /// The command of an operation.
    init(_ kind: OperationKind) {
        switch kind {
        case .capture: self = .capture
        case .refund: self = .refund
        case .void: self = .void
        }
    }

    /// The two-digit status of a refusal of this command: `05` capture failed, `07` refund failed, `09`
    /// authorization void failed (docs `transactioncodes.md`, status codes).
    var failureStatus: String {
        switch self {
        case .capture: "05"
        case .refund: "07"
        case .void: "09"
        }
    }

    /// What PayFort's `status` and `response_code` for this command say about it:
    ///
    /// | answer | status |
    /// |---|---|
    /// | the command's success code (`04000`, `06000`, `08000`) | `succeeded` |
    /// | on hold (`xx006` "Technical problem", ``PayFortCodes/onHold``), `777`, status `15`/`19`/`20` | `unknown` |
    /// | the command's failure status (`05`, `07`, `09`) or `00` (invalid request, refused unprocessed) | `failed` |
    /// | anything else (no status, another command's status) | `unknown` |
    func outcome(status: String?, responseCode: String?) -> OperationStatus {
        guard let status, let responseCode else { return .unknown }
        if responseCode == successCode { return .succeeded }
        if PayFortCodes.onHold.contains(responseCode) || PayFortCodes.message(of: responseCode) == "777"
            || ["15", "19", "20"].contains(status) {
            return .unknown
        }
        return status == failureStatus || status == "00" ? .failed : .unknown
    }
}

extension PayFortServer {
    /// What PayFort offers, from its sources:
    /// - capture: partial ("The capture could be partial or full", docs `capturepayment.md`) and several per
    ///   authorization up to its amount (payfort/woocommerce-payfort@941fe9d offers another capture while
    ///   anything is left, `admin/class-aps-admin.php`; `042` over the authorized amount); no final flag in any
    ///   source; within 7 days of the authorization (APS's capture page; "usually 5-7 days maximum", APS 34b).
    /// - void: within 7 days of the authorization and only before it was captured (APS's void page).
    /// - refund: partial and several, up to what was captured (docs `refund.md`; `048` over the captured amount;
    ///   woocommerce-payfort checks captured − refunded); no window in any source.
    public var operationCapabilities: OperationCapabilities {
        OperationCapabilities(capture: .init(partial: true, multiple: true, finalFlag: false, window: Self.holdWindow),
                              void: .init(window: Self.holdWindow),
                              refund: .init(partial: true, multiple: true))
    }

    /// How long an authorization may be captured or voided: 7 days.
    static let holdWindow: Duration = .seconds(7 * 24 * 3_600)

    /// **Operate**: `CAPTURE` (this operation's `amount`), `REFUND` (its `amount`, and its reference as
    /// `maintenance_reference`) or `VOID_AUTHORIZATION` (no amount: APS's void page and both official SDKs send
    /// none), on the attempt's order (`merchant_reference` is the attempt's reference; `fort_id` when known).
    ///
    /// The answer, verified with the response phrase and about this order, command, amount and refund reference:
    /// the command's success code → `succeeded` with the amount PayFort answered (the request's for a void); the
    /// command's failure status or `00` → `failed` with PayFort's `response_code` and message.
    /// - Throws: ``CheckoutError``: category `unsupported` for a final capture (PayFort has no final flag), before
    ///   anything is sent; `invalid_amount` / `invalid_currency` / `invalid_field` naming the field for an amount
    ///   or reference PayFort cannot take, before anything is sent; `unavailable` when the request never left;
    ///   `unknown_outcome` when it may have reached PayFort (timeout, HTTP 5xx, an answer that is unreadable,
    ///   unsigned, about something else, or on hold: `04006`, `06006`, `08006`, …).
    public func perform(_ operation: OperationRequest) async throws -> OperationReport {
        let request = try maintenanceRequest(for: operation)
        let message = try await sentMaintenance(request)
        let status = request.command.outcome(status: message.status, responseCode: message.responseCode)
        let report = OperationReport(reference: operation.reference, kind: operation.kind, status: status,
                                     amount: message.amount ?? operation.amount, gatewayStatus: message.status,
                                     gatewayCode: message.responseCode, gatewayMessage: message.responseMessage)
        switch status {
        case .succeeded, .failed, .pending:
            return report
        case .unknown:
            let failure = PayFortCodes.failure(status: message.status ?? "", responseCode: message.responseCode,
                                               message: message["response_message"], gateway: gateway)
            throw CheckoutError(.unknownOutcome, category: .unknownOutcome, field: "answer.response_code",
                                message: "PayFort did not settle the \(request.command.rawValue) (\(message.responseCode ?? "no code")): \(failure.message)",
                                gateway: gateway, gatewayCode: message.responseCode, gatewayMessage: message.responseMessage)
        }
    }

    /// ``maintenanceAnswer(_:)``, an answer that does not verify being an unknown outcome: the request was sent.
    func sentMaintenance(_ request: PayFortMaintenanceRequest) async throws(CheckoutError) -> PayFortMessage {
        let result: Result<PayFortMessage, CheckoutError>
        do {
            result = .success(try await maintenanceAnswer(request))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let message):
            return message
        case .failure(let error) where error.category == .verification:
            throw CheckoutError(error.code, category: .unknownOutcome, field: error.field,
                                message: "PayFort's answer to the \(request.command.rawValue) cannot be trusted: \(error.message)",
                                gateway: gateway, gatewayCode: error.gatewayCode)
        case .failure(let error):
            throw error
        }
    }

    /// The maintenance request of an operation, or its refusal before anything is sent.
    func maintenanceRequest(for operation: OperationRequest) throws(CheckoutError) -> PayFortMaintenanceRequest {
        if operation.kind == .capture, operation.isFinal {
            throw CheckoutError.unsupportedOperation(.capture, aspect: "finalFlag", gateway: gateway,
                                                     why: "PayFort's CAPTURE takes no final flag; the rest of the authorization is released when it expires")
        }
        guard operation.amount.currency == operation.intent.amount.currency else {
            throw CheckoutError(.invalidCurrency, field: "amount.currency",
                                message: "PayFort maintains an order in its own currency (\(operation.intent.amount.currency.code))", gateway: gateway)
        }
        let command = PayFortMaintenanceRequest.Command(operation.kind)
        return try maintenanceRequest(command, attempt: operation.attempt, amount: command == .void ? nil : operation.amount,
                                      fortID: operation.gatewayReference,
                                      maintenanceReference: command == .refund ? operation.reference.rawValue : nil)
    }

    /// **Operate**: what `CHECK_STATUS` says about one operation. The answer names no operation: only the order's
    /// last operation (`transaction_status`) and its totals (`captured_amount`, `refunded_amount`), so:
    ///
    /// - capture / refund, when the answer carries the total (`captured_amount` / `refunded_amount`) and Till
    ///   passed what it already counts (``OperationRequest/succeededBefore``): the total equal to what Till counts
    ///   → `failed` (it did not happen); equal to that plus this operation's amount, with no other operation of
    ///   the kind open → `succeeded`; otherwise `unknown`.
    /// - void: the order's last operation voided it (`08`) → `succeeded`; a void failed (`09`) → `failed`.
    /// - any kind: the order's last operation is still the payment itself (`02` authorization, `14` purchase) →
    ///   `failed` (nothing followed it); for a void, a capture or refund succeeded last (`04`, `06`) → `failed`
    ///   (an authorization is voided only before any capture).
    /// - otherwise `unknown`: the operation stays for the reconciler or a notification.
    ///
    /// An order PayFort does not have (`12036`) had no operation: `failed`.
    /// - Throws: ``CheckoutError`` as ``inquire(_:)`` does, but for an order not found.
    public func inquireOperation(_ operation: OperationRequest) async throws -> OperationReport {
        let result: Result<PayFortMessage, CheckoutError>
        do {
            result = .success(try await checkStatus(operation.attempt, gatewayReference: operation.gatewayReference))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let message):
            return Self.operationReport(fromCheckStatus: message, operation: operation)
        case .failure(let error) where error.code == .attemptNotFound:
            return OperationReport(reference: operation.reference, kind: operation.kind, status: .failed,
                                   gatewayCode: error.gatewayCode, gatewayMessage: error.gatewayMessage)
        case .failure(let error):
            throw error
        }
    }

    /// The rule ``inquireOperation(_:)`` documents, on a verified `CHECK_STATUS` answer.
    static func operationReport(fromCheckStatus message: PayFortMessage, operation: OperationRequest) -> OperationReport {
        let last = message["transaction_status"]
        func report(_ status: OperationStatus) -> OperationReport {
            OperationReport(reference: operation.reference, kind: operation.kind, status: status,
                            amount: status == .succeeded ? operation.amount : nil, gatewayStatus: last,
                            gatewayCode: message["transaction_code"], gatewayMessage: GatewayText.safe(message["transaction_message"]))
        }
        let paymentIsLast = last == "02" || last == "14"
        switch operation.kind {
        case .void:
            switch last {
            case "08": return report(.succeeded)
            case "09", "04", "06": return report(.failed)
            default: return report(paymentIsLast ? .failed : .unknown)
            }
        case .capture, .refund:
            let key = operation.kind == .capture ? "captured_amount" : "refunded_amount"
            if let total = message[key].flatMap({ Int64($0) }), let before = operation.succeededBefore,
               before.currency == operation.amount.currency {
                if total == before.minorUnits { return report(.failed) }
                if total == before.minorUnits + operation.amount.minorUnits, !operation.othersOpen { return report(.succeeded) }
                return report(.unknown)
            }
            return report(paymentIsLast ? .failed : .unknown)
        }
    }

    /// The operation a piece of transaction feedback is about: a `CAPTURE`, `REFUND` or `VOID_AUTHORIZATION`
    /// (payfort/woocommerce-payfort@941fe9d accepts feedback of these commands, `lib/class-aps-payment.php`),
    /// including those made in PayFort's back office. Its reference is the echoed `maintenance_reference` when it
    /// is one of Till's for this order and kind (refunds only: the others take none); its amount is the
    /// feedback's `amount` (this operation's: woocommerce-payfort books one refund or capture of `amount` per
    /// feedback); its status is the command's outcome (``PayFortMaintenanceRequest/Command/outcome(status:responseCode:)``).
    /// PayFort has no id of its own for an operation (`fort_id` is the order's), so `gatewayReference` is nil.
    func operation(fromFeedback message: PayFortMessage) -> OperationReport? {
        guard let command = message.command.flatMap(PayFortMaintenanceRequest.Command.init(rawValue:)) else { return nil }
        let reference = message["maintenance_reference"].flatMap(OperationReference.init(rawValue:)).flatMap { reference in
            reference.kind == command.kind && reference.attempt.rawValue == message.merchantReference ? reference : nil
        }
        return OperationReport(reference: reference, kind: command.kind,
                               status: command.outcome(status: message.status, responseCode: message.responseCode),
                               amount: message.amount, gatewayStatus: message.status, gatewayCode: message.responseCode,
                               gatewayMessage: message.responseMessage)
    }
}
