import Foundation
import Till

/// The input of an inquiry.
public struct InquiryQuery: Sendable, Hashable {
    public var attempt: AttemptReference
    /// The gateway's own id, when known.
    public var gatewayReference: String?
    public var amount: Money?
    /// Verified notifications about this attempt that wait for this inquiry to confirm them (re-verified from
    /// the store, newest first). A gateway whose status answer may lack what its signed notification carried
    /// (PayFort's `CHECK_STATUS` and the amount) may take it from the notification whose status the answer
    /// confirms; the answer's status always decides.
    public var confirming: [StatusReport]

    public init(attempt: AttemptReference, gatewayReference: String? = nil, amount: Money? = nil, confirming: [StatusReport] = []) {
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.amount = amount
        self.confirming = confirming
    }
}
