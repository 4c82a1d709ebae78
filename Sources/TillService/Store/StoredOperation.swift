import Foundation
import Till
import TillOrchestration

/// A capture, void or refund Till started, as the server stores it.
public struct StoredOperation: Sendable, Hashable, Codable {
    public var reference: OperationReference
    public var paymentID: String
    public var merchantID: String
    public var gateway: GatewayID
    public var status: OperationStatus
    /// This operation's amount, in the payment's currency.
    public var amount: Money
    /// For a capture: no further capture follows.
    public var isFinal: Bool
    /// The gateway's own id for the operation, when it gave one.
    public var gatewayReference: String?
    public var gatewayCode: String?
    public var gatewayMessage: String?
    /// The merchant's `Idempotency-Key` and the digest of its request: a retry with the same key is answered from
    /// here, never sent to the gateway again.
    public var idempotencyKey: String
    public var requestHash: String
    /// Inquiries the reconciler made, and when the next one is due.
    public var inquiryCount: Int
    public var nextInquiryAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    package init(reference: OperationReference, paymentID: String, merchantID: String, gateway: GatewayID, status: OperationStatus,
                 amount: Money, isFinal: Bool, gatewayReference: String? = nil, gatewayCode: String? = nil, gatewayMessage: String? = nil,
                 idempotencyKey: String, requestHash: String, inquiryCount: Int = 0, nextInquiryAt: Date? = nil, createdAt: Date, updatedAt: Date) {
        self.reference = reference
        self.paymentID = paymentID
        self.merchantID = merchantID
        self.gateway = gateway
        self.status = status
        self.amount = amount
        self.isFinal = isFinal
        self.gatewayReference = gatewayReference
        self.gatewayCode = gatewayCode
        self.gatewayMessage = gatewayMessage
        self.idempotencyKey = idempotencyKey
        self.requestHash = requestHash
        self.inquiryCount = inquiryCount
        self.nextInquiryAt = nextInquiryAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public var kind: OperationKind { reference.kind }
    public var attempt: AttemptReference { reference.attempt }
}

/// What asking to store a new operation did.
public enum OperationCreateOutcome: Sendable, Hashable {
    /// Stored (as `unknown`, before anything is sent).
    case created(StoredOperation)
    /// The same idempotency key with the same request: the operation it created before, never sent again.
    case replayed(StoredOperation)
    /// The same idempotency key with a different request (or another payment).
    case idempotencyConflict
}

/// What a gateway's statement about an operation did.
public enum OperationSettleOutcome: Sendable, Hashable {
    /// The operation moved (and, when it succeeded, its money was applied to the attempt).
    case settled(StoredOperation)
    /// Nothing new (the same status again, or still not known).
    case unchanged(StoredOperation)
    /// Not applied, with the reason (it contradicts a final status, or its amount is not the operation's).
    case refused(StoredOperation, String)
    /// No operation of Till's matches it.
    case unknownOperation

    /// How the outcome is recorded next to a stored notification and in the reconciliation log.
    public var storedName: String {
        switch self {
        case .settled: "applied"
        case .unchanged: "duplicate"
        case .refused: "stale"
        case .unknownOperation: "unknown_operation"
        }
    }
}

/// The money of one attempt as the operations and the attempt's own record state it, in minor units of the
/// payment's currency. Derived, never stored: the one place the totals are added up.
package struct MoneyTotals: Sendable, Equatable {
    /// What the authorization holds: the payment's amount.
    package var authorized: Int64
    /// Captures that succeeded.
    package var capturedByOperations: Int64
    /// Captures that may still succeed (pending or unknown).
    package var capturesOpen: Int64
    /// What was captured: the succeeded captures once Till made a capture (succeeded, pending or unknown), else the whole
    /// amount of an attempt that moved money without one (a sale, or a capture made outside Till), else nothing.
    package var captured: Int64
    /// Everything refunded on the attempt (Till's refunds and those learned from the gateway).
    package var refunded: Int64
    /// Refunds that may still succeed (pending or unknown).
    package var refundsOpen: Int64
    /// A final capture exists that is not failed.
    package var finalCapture: Bool
    /// A void exists that is not failed.
    package var voided: Bool

    package init(attempt: StoredAttempt, operations: [StoredOperation], amount: Money) {
        let mine = operations.filter { $0.attempt == attempt.reference }
        func sum(_ kind: OperationKind, _ statuses: Set<OperationStatus>) -> Int64 {
            mine.filter { $0.kind == kind && statuses.contains($0.status) }.reduce(0) { $0 + $1.amount.minorUnits }
        }
        authorized = amount.minorUnits
        capturedByOperations = sum(.capture, [.succeeded])
        capturesOpen = sum(.capture, [.pending, .unknown])
        // Once Till captures, only its succeeded captures are captured money: an attempt made `paid` by the gateway's word
        // while a partial capture is still open has captured no more than those.
        let capturing = mine.contains { $0.kind == .capture && $0.status != .failed }
        captured = capturing ? capturedByOperations : attempt.status.moneyMoved ? amount.minorUnits : 0
        refunded = attempt.refundedMinorUnits
        refundsOpen = sum(.refund, [.pending, .unknown])
        finalCapture = mine.contains { $0.kind == .capture && $0.isFinal && $0.status != .failed }
        voided = mine.contains { $0.kind == .void && $0.status != .failed }
    }

    /// What a capture could still take (what the capture rule in `PaymentService.operate` leaves): nothing once voided,
    /// finally captured, or captured in full without Till.
    package func leftToCapture(status: PaymentStatus) -> Int64 {
        if voided || finalCapture || (status != .authorized && capturedByOperations == 0 && capturesOpen == 0) { return 0 }
        return max(0, authorized - capturedByOperations - capturesOpen)
    }

    /// What a refund could still take: the captured money less what was refunded or is being refunded.
    package var leftToRefund: Int64 { max(0, captured - refunded - refundsOpen) }

    /// Whether a void could still be made: an authorization nothing was captured from, not voided.
    package func voidable(status: PaymentStatus) -> Bool { status == .authorized && capturedByOperations == 0 && capturesOpen == 0 && !voided }

    /// The amount the refund rule takes as captured, when operations decided it (`nil`: the attempt's amount).
    package func capturedMoney(in currency: Currency) -> Money? {
        capturedByOperations > 0 || capturesOpen > 0 ? Money(minorUnits: captured, currency: currency) : nil
    }
}

extension StoreRules {
    /// How a gateway's statement changes one of Till's operations: the operation as it becomes (`nil`: unchanged),
    /// and the report that applies its money to the attempt through the stores' one rule
    /// (``apply(_:attempt:payment:source:)``, source `inquiry`): a capture makes the authorization `paid`, a void
    /// `cancelled`, a refund adds to what was refunded. The report's event id names the operation, so a second
    /// statement of the same success applies nothing twice.
    package struct OperationEffect: Equatable {
        package var outcome: OperationSettleOutcome
        package var operation: StoredOperation?
        package var money: StatusReport?
    }

    package static func settle(_ operation: StoredOperation, report: OperationReport, paymentAmount: Money, now: Date) -> OperationEffect {
        var next = operation
        next.gatewayReference = operation.gatewayReference ?? report.gatewayReference
        next.gatewayCode = report.gatewayCode ?? operation.gatewayCode
        next.gatewayMessage = report.gatewayMessage ?? operation.gatewayMessage
        next.updatedAt = now
        if operation.status.isFinal {
            return report.status == operation.status || report.status == .unknown || report.status == .pending
                ? OperationEffect(outcome: .unchanged(operation))
                : OperationEffect(outcome: .refused(operation, "operation \(operation.reference) already \(operation.status.rawValue)"))
        }
        switch report.status {
        case .unknown, .pending:
            next.status = report.status == .pending ? .pending : operation.status
            let changed = next != operation
            return OperationEffect(outcome: next.status != operation.status ? .settled(next) : .unchanged(changed ? next : operation),
                                   operation: changed ? next : nil)
        case .failed:
            next.status = .failed
            return OperationEffect(outcome: .settled(next), operation: next)
        case .succeeded:
            if let amount = report.amount, amount != operation.amount {
                return OperationEffect(outcome: .refused(operation, "the gateway reports \(amount), the operation is \(operation.amount)"))
            }
            next.status = .succeeded
            let status: PaymentStatus = switch operation.kind {
            case .capture: .paid
            case .void: .cancelled
            case .refund: .partiallyRefunded
            }
            let money = StatusReport(gateway: operation.gateway, attempt: operation.attempt, status: status,
                                     amount: operation.kind == .refund ? operation.amount : paymentAmount,
                                     gatewayCode: report.gatewayCode, eventID: "operation:\(operation.reference.rawValue):succeeded")
            return OperationEffect(outcome: .settled(next), operation: next, money: money)
        }
    }

    /// The operation of Till's a gateway's statement is about, among the attempt's operations: the one it names,
    /// else the one with the gateway's id for it, else the only open one of its kind and amount. `nil` when none
    /// (or more than one) fits: an operation made outside Till.
    package static func match(_ report: OperationReport, among operations: [StoredOperation], attempt: AttemptReference) -> StoredOperation? {
        let mine = operations.filter { $0.attempt == attempt && $0.kind == report.kind }
        if let reference = report.reference {
            return mine.first { $0.reference == reference }
        }
        if let id = report.gatewayReference, let found = mine.first(where: { $0.gatewayReference == id }) {
            return found
        }
        guard let amount = report.amount else { return nil }
        let open = mine.filter { !$0.status.isFinal && $0.amount == amount }
        return open.count == 1 ? open[0] : nil
    }
}
