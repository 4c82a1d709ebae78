import Foundation

/// An authoritative statement by a gateway about one attempt: from a verified notification or an inquiry.
public struct StatusReport: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var gatewayReference: String?
    public var status: PaymentStatus
    /// The amount the gateway says it processed, when it says. For a refund: the amount of this one
    /// refund (see ``refundedTotal`` for a gateway that reports the running total).
    public var amount: Money?
    /// For a refund, when the gateway reports it: everything refunded on the attempt so far (an
    /// inquiry's `refunded_amount`). Preferred over adding ``amount`` to what was already recorded.
    public var refundedTotal: Money?
    /// For a refund, when the gateway reports it: what remains of the attempt's money after it (ecommpay's
    /// `payment.sum`, the payment's balance). The money rule checks that it agrees with what was captured
    /// less everything refunded; one that does not is confirmed by inquiry (or, from an inquiry, refused).
    /// Alone, it decides the refunded total (captured less remaining).
    public var remaining: Money?
    /// The gateway's raw status, code and message, verbatim.
    public var gatewayStatus: String?
    public var gatewayCode: String?
    public var gatewayMessage: String?
    /// A key that is equal for two deliveries of the same event, for deduplication.
    public var eventID: String

    public init(gateway: GatewayID, attempt: AttemptReference, gatewayReference: String? = nil, status: PaymentStatus,
                amount: Money? = nil, refundedTotal: Money? = nil, remaining: Money? = nil, gatewayStatus: String? = nil,
                gatewayCode: String? = nil, gatewayMessage: String? = nil, eventID: String? = nil) {
        self.gateway = gateway
        self.attempt = attempt
        self.gatewayReference = gatewayReference
        self.status = status
        self.amount = amount
        self.refundedTotal = refundedTotal
        self.remaining = remaining
        self.gatewayStatus = gatewayStatus
        self.gatewayCode = gatewayCode
        self.gatewayMessage = gatewayMessage
        self.eventID = eventID ?? "\(gateway.rawValue):\(attempt.rawValue):\(status.rawValue)"
    }
}
