import Foundation
import Till
import TillOrchestration

extension PaymentStore {
    /// The query for an inquiry of `attempt` at `gateway`: its reference at the gateway, the payment's amount, and
    /// the verified notifications waiting for this inquiry to confirm them, re-verified by the gateway module now
    /// (a stored body that no longer verifies, or that names another attempt, is left out). Every inquiry the
    /// server makes — after a notification, from the reconciler, at a caller's request — asks with this query.
    package func inquiryQuery(for attempt: AttemptReference, gatewayReference: String?, amount: Money?, gatewayID: GatewayID,
                      on gateway: any GatewayServerHalf) async -> InquiryQuery {
        let awaiting = (try? await notificationsAwaitingInquiry(attempt: attempt, gateway: gatewayID, limit: 5)) ?? []
        let confirming = awaiting.compactMap { raw -> StatusReport? in
            guard let verified = try? gateway.verifyNotification(IncomingNotification(headers: raw.headers, body: raw.body)),
                  verified.report.attempt == attempt else { return nil }
            return verified.report
        }
        return InquiryQuery(attempt: attempt, gatewayReference: gatewayReference, amount: amount, confirming: confirming)
    }
}

/// What one settle did: the gateway's answer, the report applied (the answer, or what the caller's `closing` made
/// of it), and what applying it did.
package struct Settlement: Sendable {
    package var answer: StatusReport
    package var applied: StatusReport
    package var outcome: ApplyOutcome
}

extension PaymentStore {
    /// The one way the server settles an attempt by asking its gateway, used by the API's inquiries, the inquiries
    /// the server starts after a notification, and the reconciler: the attempt's inquiry query, the gateway's answer
    /// checked to be about this attempt on this gateway, and the answer applied by the attempt policy (source
    /// `inquiry`). `closing` may replace the answer before it is applied (the reconciler closes an attempt abandoned
    /// at the gateway as expired); by default the answer is applied as it is.
    /// - Throws: the gateway module's ``CheckoutError`` (``CheckoutError/Code/attemptNotFound`` when the gateway has no
    ///   such attempt), `unknownOutcome` for an answer about another attempt, or the store's error.
    package func settle(_ attempt: AttemptReference, on gatewayID: GatewayID, gatewayReference: String?, amount: Money?,
                        gateway: any GatewayServerHalf,
                        closing: (StatusReport) -> StatusReport? = { _ in nil }) async throws -> Settlement {
        let query = await inquiryQuery(for: attempt, gatewayReference: gatewayReference, amount: amount, gatewayID: gatewayID, on: gateway)
        let answer = try await GatewayExchanges.$attempt.withValue(attempt) { try await gateway.inquire(query) }
        guard answer.attempt == attempt, answer.gateway == gatewayID else {
            throw CheckoutError(.unknownOutcome, message: "the gateway answered about another attempt", gateway: gatewayID)
        }
        let applied = closing(answer) ?? answer
        return Settlement(answer: answer, applied: applied, outcome: try await apply(applied, source: .inquiry))
    }
}

extension PaymentStore {
    /// The one way the server settles an open operation by asking its gateway (the reconciler, and an operator's
    /// request): the operation's request rebuilt from the store — the attempt's gateway reference, the gateway's id
    /// for the operation, what the attempt's other operations of its kind already add up to — the gateway's answer,
    /// and the answer applied (``settleOperation(_:report:)``). Never sends the operation again.
    /// - Throws: the gateway module's ``CheckoutError`` (category `unsupported` when it offers no inquiry), or the
    ///   store's error.
    /// `accepting`: the answers applied; another is left as it is (the operation stays open).
    package func settle(_ operation: StoredOperation, gateway: any GatewayServerHalf,
                        accepting: Set<OperationStatus> = Set(OperationStatus.allCases)) async throws -> OperationSettleOutcome {
        guard let payment = try await payment(attempt: operation.attempt),
              let attempt = payment.attempts.first(where: { $0.reference == operation.attempt }) else { return .unknownOperation }
        let request = OperationRequest(operation, of: payment, attempt: attempt, on: gateway)
        var answer = try await GatewayExchanges.$attempt.withValue(operation.attempt) { try await gateway.inquireOperation(request) }
        guard answer.kind == operation.kind, answer.reference.map({ $0 == operation.reference }) ?? true else {
            throw CheckoutError(.unknownOutcome, message: "the gateway answered about another operation", gateway: operation.gateway)
        }
        answer.reference = operation.reference
        guard accepting.contains(answer.status) else { return .unchanged(operation) }
        return try await settleOperation(operation.reference, report: answer)
    }
}

extension OperationRequest {
    /// The request for a stored operation, as the server sends it and asks about it: the payment's intent, the attempt's
    /// gateway reference, the gateway's id for the operation, what the attempt's other operations of its kind add up
    /// to, and the final flag only for a gateway that takes one (elsewhere "no capture after it" is Till's own rule).
    package init(_ operation: StoredOperation, of payment: StoredPayment, attempt: StoredAttempt, on gateway: any GatewayServerHalf,
                 notificationURL: URL? = nil) {
        let others = payment.operations.filter { $0.attempt == operation.attempt && $0.kind == operation.kind && $0.reference != operation.reference }
        let succeeded = others.filter { $0.status == .succeeded }.reduce(0) { $0 + $1.amount.minorUnits }
        self.init(reference: operation.reference, intent: payment.intent, gatewayReference: attempt.gatewayReference,
                  amount: operation.amount, isFinal: operation.isFinal && gateway.operationCapabilities.capture?.finalFlag == true,
                  notificationURL: notificationURL, operationGatewayReference: operation.gatewayReference,
                  succeededBefore: Money(minorUnits: succeeded, currency: operation.amount.currency),
                  othersOpen: others.contains { !$0.status.isFinal })
    }
}
