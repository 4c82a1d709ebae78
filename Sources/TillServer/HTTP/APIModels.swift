import Foundation
import Till

/// `POST /v1/payments/{id}/attempts` body.
public struct PrepareRequest: Codable, Sendable {
    /// The return URL the app registered for this attempt (carries its per-attempt state).
    public var returnURL: URL?
    public init(returnURL: URL? = nil) { self.returnURL = returnURL }
}

/// A payment as the API shows it.
public struct PaymentView: Codable, Sendable, Hashable {
    public var id: String
    public var merchantReference: String
    public var amount: Money
    public var method: PaymentMethod
    /// The authoritative status (from verified notifications and inquiries only).
    public var status: PaymentStatus
    public var attempts: [AttemptView]
    public var createdAt: Date
    public var updatedAt: Date

    init(_ payment: StoredPayment) {
        id = payment.id
        merchantReference = payment.intent.merchantReference
        amount = payment.intent.amount
        method = payment.intent.method
        status = payment.status
        attempts = payment.attempts.map(AttemptView.init)
        createdAt = payment.createdAt
        updatedAt = payment.updatedAt
    }
}

/// One attempt as the API shows it.
public struct AttemptView: Codable, Sendable, Hashable {
    public var reference: AttemptReference
    public var sequence: Int
    public var gateway: GatewayID
    public var status: PaymentStatus
    public var gatewayReference: String?
    public var gatewayCode: String?
    public var clientOutcome: ClientOutcome?

    init(_ attempt: StoredAttempt) {
        reference = attempt.reference
        sequence = attempt.sequence
        gateway = attempt.gateway
        status = attempt.status
        gatewayReference = attempt.gatewayReference
        gatewayCode = attempt.gatewayCode
        clientOutcome = attempt.clientOutcome
    }
}

/// Every error answer: `{"error": {"code", "message", "field"}}`.
public struct ErrorBody: Codable, Sendable, Hashable {
    public struct Detail: Codable, Sendable, Hashable {
        public var code: String
        public var message: String
        public var field: String?
    }
    public var error: Detail
}
