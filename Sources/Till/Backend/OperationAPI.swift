import Foundation

/// What the merchant does to a payment after it was taken: **capture** an authorization (all or part),
/// **void** it (release the hold before anything was captured), **refund** captured money (all or part).
public enum OperationKind: String, Sendable, Hashable, Codable, CaseIterable {
    case capture
    case void
    case refund
}

/// Where an operation stands. `pending` and `unknown` both hold money back from the money rules until they
/// are settled (by the gateway's notification or by inquiry); only `succeeded` moves it.
public enum OperationStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// The gateway accepted the request and will say later (a notification, or an answer to inquiry).
    case pending
    /// The gateway confirmed it.
    case succeeded
    /// The gateway refused it, or it provably never reached the gateway: no money moved.
    case failed
    /// The request may have reached the gateway and its answer was lost: settled only by inquiry or a
    /// notification, never sent again.
    case unknown

    /// `succeeded` or `failed`: nothing will change it.
    public var isFinal: Bool { self == .succeeded || self == .failed }
}

/// The body of `POST /v1/payments/{id}/captures`, `/voids` and `/refunds`. Every key is optional; a key Till
/// does not know is refused by name.
public struct OperationCommand: Codable, Sendable, Hashable {
    /// How much to capture or refund, in the payment's currency. Absent: the rest (everything authorized and not
    /// yet captured, or everything captured and not yet refunded). Not taken by a void.
    public var amount: Money?
    /// For a capture: no further capture follows. A gateway that takes the flag releases the rest of the
    /// authorization; at any gateway, Till refuses later captures of the payment.
    public var final: Bool?

    public init(amount: Money? = nil, final: Bool? = nil) {
        self.amount = amount
        self.final = final
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case amount, final }

    /// Decodes a command; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        amount = try container.decodeIfPresent(Money.self, forKey: .amount)
        final = try container.decodeIfPresent(Bool.self, forKey: .final)
    }
}

/// One capture, void or refund as the API shows it (in `PaymentView/operations`, and alone from
/// `GET /v1/refunds/{id}` and the operation routes).
public struct OperationView: Codable, Sendable, Hashable {
    /// The operation's reference: the attempt's reference, the kind's letter and its sequence (`…-r2`).
    public var id: String
    public var paymentId: String
    public var attempt: AttemptReference
    public var kind: OperationKind
    public var status: OperationStatus
    /// This operation's amount (never a running total).
    public var amount: Money
    /// For a capture: no further capture follows.
    public var final: Bool?
    /// The gateway's own id for the operation, when it gave one.
    public var gatewayReference: String?
    /// The gateway's code and message for a refusal or an unknown outcome, verbatim.
    public var gatewayCode: String?
    public var gatewayMessage: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, paymentId: String, attempt: AttemptReference, kind: OperationKind, status: OperationStatus, amount: Money,
                final: Bool? = nil, gatewayReference: String? = nil, gatewayCode: String? = nil, gatewayMessage: String? = nil,
                createdAt: Date, updatedAt: Date) {
        self.id = id
        self.paymentId = paymentId
        self.attempt = attempt
        self.kind = kind
        self.status = status
        self.amount = amount
        self.final = final
        self.gatewayReference = gatewayReference
        self.gatewayCode = gatewayCode
        self.gatewayMessage = gatewayMessage
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
