import Foundation
import Till
import TillGatewayKit
import TillOrchestration

/// What a ``FakeGateway`` does with one capture, void or refund.
public enum FakeOperationBehavior: Sendable, Hashable {
    /// Do it and answer `succeeded` (then notify, as a real gateway's feedback does).
    case succeed
    /// Accept it and answer `pending`; the fake does it (and notifies, with the plan's timing) when told,
    /// ``FakeGateway/completePendingOperations()``.
    case pending
    /// Refuse it with `code` (nothing moves).
    case decline(code: String = "op_declined")
    /// Fail before the request leaves: nothing moves, the error is `unavailable`.
    case notSent
    /// Do it, then lose the answer: an unknown outcome; inquiry and the notification say what happened.
    case lostAnswer
    /// Answer HTTP 5xx, having done it or not: an unknown outcome either way.
    case serverError(done: Bool)
}

/// Everything scripted for one operation.
public struct FakeOperationPlan: Sendable, Hashable {
    public var behavior: FakeOperationBehavior
    /// When the operation's notification is delivered (by default the gateway's timing).
    public var notification: FakeNotificationTiming?
    /// Inquiries about this operation that fail (time out) before one succeeds.
    public var failingInquiries: Int

    public init(_ behavior: FakeOperationBehavior, notification: FakeNotificationTiming? = nil, failingInquiries: Int = 0) {
        self.behavior = behavior
        self.notification = notification
        self.failingInquiries = failingInquiries
    }
}

/// One operation as the fake gateway holds it.
public struct FakeOperationRecord: Sendable, Hashable {
    public var attempt: AttemptReference
    public var kind: OperationKind
    public var amount: Money
    /// `succeeded` once done, `failed` when refused; `pending` before a pending one is done.
    public var status: OperationStatus
    public var code: String?
    /// How many requests for this reference reached the gateway: more than one is a request sent twice.
    public var requests: Int
    public var plan: FakeOperationPlan
}

extension FakeGatewayLedger {
    /// Queue plans for the next operations, in order (afterwards: succeed).
    public func enqueueOperations(_ plans: [FakeOperationPlan]) { operationScript += plans }

    /// Forgets the plans no operation took (one the server refused before sending).
    public func dropQueuedOperations() { operationScript.removeAll() }

    /// What the fake captured and refunded on `attempt` (operations done), and whether it voided it.
    public func moneyOf(_ attempt: AttemptReference) -> (captured: Int64, refunded: Int64, voided: Bool) {
        let mine = operations.values.filter { $0.attempt == attempt && $0.status == .succeeded }
        return (mine.filter { $0.kind == .capture }.reduce(0) { $0 + $1.amount.minorUnits },
                mine.filter { $0.kind == .refund }.reduce(0) { $0 + $1.amount.minorUnits },
                mine.contains { $0.kind == .void })
    }

    /// Receives one operation: refuses what the gateway's own money rules forbid, records the request (a second
    /// request for one reference is counted, never done twice: ``FakeOperationRecord/requests``), and plays the plan.
    func receive(_ request: OperationRequest) -> (record: FakeOperationRecord, refusal: String?) {
        let key = request.reference.rawValue
        if var existing = operations[key] {
            existing.requests += 1
            operations[key] = existing
            return (existing, nil)
        }
        let plan = operationScript.isEmpty ? FakeOperationPlan(.succeed) : operationScript.removeFirst()
        var record = FakeOperationRecord(attempt: request.attempt, kind: request.kind, amount: request.amount, status: .pending, requests: 1,
                                         plan: plan)
        if plan.behavior == .notSent {
            return (record, nil)
        }
        let money = moneyOf(request.attempt)
        let authorized = records[request.attempt]
        let refusal: String? = switch request.kind {
        case .capture:
            authorized?.status != .authorized && authorized?.status != .paid ? "not_authorized"
                : money.voided ? "voided"
                : money.captured + request.amount.minorUnits > (authorized?.amount.minorUnits ?? 0) ? "exceeds_authorized" : nil
        case .void:
            authorized?.status != .authorized || money.captured > 0 ? "not_voidable" : money.voided ? "voided" : nil
        case .refund:
            money.captured + (authorized?.status == .paid && money.captured == 0 ? authorized?.amount.minorUnits ?? 0 : 0)
                < money.refunded + request.amount.minorUnits ? "exceeds_captured" : nil
        }
        if let refusal {
            record.status = .failed
            record.code = refusal
        }
        operations[key] = record
        return (record, refusal)
    }

    /// Does an accepted operation (its money moves at the fake), once.
    func complete(_ reference: OperationReference) -> FakeOperationRecord? {
        guard var record = operations[reference.rawValue] else { return nil }
        if record.status == .pending {
            record.status = .succeeded
            operations[reference.rawValue] = record
            if record.kind == .void { records[record.attempt]?.status = .cancelled }
            if record.kind == .capture, records[record.attempt]?.status == .authorized { records[record.attempt]?.status = .paid }
        }
        return record
    }

    func operationInquiryShouldFail(_ reference: OperationReference) -> Bool {
        guard var record = operations[reference.rawValue], record.plan.failingInquiries > 0 else { return false }
        record.plan.failingInquiries -= 1
        operations[reference.rawValue] = record
        return true
    }

    func operationRecord(_ reference: OperationReference) -> FakeOperationRecord? { operations[reference.rawValue] }

    func pendingOperations() -> [OperationReference] {
        operations.filter { $0.value.status == .pending }.keys.sorted().compactMap(OperationReference.init(rawValue:))
    }
}

extension FakeGateway {
    /// Capture (partial, several, final), void and refund (partial, several), with no time window.
    public static let allOperations = OperationCapabilities(capture: .init(partial: true, multiple: true, finalFlag: true),
                                                            void: .init(), refund: .init(partial: true, multiple: true))

    public func perform(_ request: OperationRequest) async throws -> OperationReport {
        guard operationCapabilities.offers(request.kind) else {
            throw CheckoutError.unsupportedOperation(request.kind, gateway: gateway)
        }
        let (record, refusal) = await ledger.receive(request)
        if record.requests > 1 {
            // A second request for one reference: the fake answers what it holds (and counts it as sent twice).
            return report(request.reference, record)
        }
        if let refusal {
            return OperationReport(reference: request.reference, kind: request.kind, status: .failed, gatewayCode: refusal,
                                   gatewayMessage: "refused by the fake gateway")
        }
        switch record.plan.behavior {
        case .succeed:
            return report(request.reference, try await finish(request.reference))
        case .pending:
            return report(request.reference, record)
        case .decline(let code):
            _ = await ledger.failOperation(request.reference, code: code)
            return OperationReport(reference: request.reference, kind: request.kind, status: .failed, gatewayCode: code)
        case .notSent:
            throw TransportError(.notSent, "connection refused").checkoutError(gateway: gateway)
        case .lostAnswer:
            _ = try await finish(request.reference)
            throw TransportError(.timedOut, "no answer").checkoutError(gateway: gateway)
        case .serverError(let done):
            if done { _ = try await finish(request.reference) } else { _ = await ledger.failOperation(request.reference, code: "503") }
            throw CheckoutError(.gatewayError, message: "HTTP 503 from the gateway", gateway: gateway, gatewayCode: "503")
        }
    }

    public func inquireOperation(_ request: OperationRequest) async throws -> OperationReport {
        if await ledger.operationInquiryShouldFail(request.reference) {
            throw TransportError(.timedOut, "inquiry timed out").checkoutError(gateway: gateway)
        }
        guard let record = await ledger.operationRecord(request.reference) else {
            // Never received (a request that never left): it did not happen.
            return OperationReport(reference: request.reference, kind: request.kind, status: .failed, gatewayCode: "not_found")
        }
        return report(request.reference, record)
    }

    /// Does every operation the fake answered `pending` (in the order received) and sends their notifications.
    public func completePendingOperations() async throws {
        for reference in await ledger.pendingOperations() { try await finish(reference) }
    }

    /// Completes an operation the fake accepted and sends its notification.
    @discardableResult
    func finish(_ reference: OperationReference) async throws -> FakeOperationRecord {
        guard let record = await ledger.complete(reference), let attempt = await ledger.record(reference.attempt) else {
            throw CheckoutError(.invalidField, field: "operation", message: "unknown operation", gateway: gateway)
        }
        let operation = report(reference, record)
        let status: PaymentStatus = switch record.kind {
        case .capture: .paid
        case .void: .cancelled
        case .refund: .partiallyRefunded
        }
        let attemptReport = StatusReport(gateway: gateway, attempt: reference.attempt, gatewayReference: "fake_\(reference.attempt.rawValue)",
                                         status: status, amount: record.kind == .refund ? record.amount : attempt.amount,
                                         gatewayStatus: status.rawValue, eventID: "op:\(reference.rawValue):\(record.status.rawValue)")
        await notify(attemptReport, operation: operation, timing: record.plan.notification ?? notificationTiming)
        return record
    }

    private func report(_ reference: OperationReference, _ record: FakeOperationRecord) -> OperationReport {
        OperationReport(reference: reference, kind: record.kind, status: record.status, amount: record.amount,
                        gatewayReference: reference.rawValue, gatewayStatus: record.status.rawValue, gatewayCode: record.code)
    }
}

extension FakeGatewayLedger {
    func failOperation(_ reference: OperationReference, code: String) -> FakeOperationRecord? {
        guard var record = operations[reference.rawValue] else { return nil }
        record.status = .failed
        record.code = code
        operations[reference.rawValue] = record
        return record
    }
}
