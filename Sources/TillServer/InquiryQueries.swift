import Foundation
import Till

extension PaymentStore {
    /// The query for an inquiry of `attempt` at `gateway`: its reference at the gateway, the payment's amount, and
    /// the verified notifications waiting for this inquiry to confirm them, re-verified by the gateway module now
    /// (a stored body that no longer verifies, or that names another attempt, is left out). Every inquiry the
    /// server makes — after a notification, from the reconciler, at a caller's request — asks with this query.
    func inquiryQuery(for attempt: AttemptReference, gatewayReference: String?, amount: Money?, gatewayID: GatewayID,
                      on gateway: any CheckoutServer) async -> InquiryQuery {
        let awaiting = (try? await notificationsAwaitingInquiry(attempt: attempt, gateway: gatewayID, limit: 5)) ?? []
        let confirming = awaiting.compactMap { raw -> StatusReport? in
            guard let verified = try? gateway.verifyNotification(IncomingNotification(headers: raw.headers, body: raw.body)),
                  verified.report.attempt == attempt else { return nil }
            return verified.report
        }
        return InquiryQuery(attempt: attempt, gatewayReference: gatewayReference, amount: amount, confirming: confirming)
    }
}
