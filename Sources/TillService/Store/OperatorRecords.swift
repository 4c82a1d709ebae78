import Foundation
import Till

/// A notification as the store keeps it for a payment's history: who sent it, what it reported and what Till did
/// with it (its verdict). The body and headers stay in the store; an operator's page shows none of them.
public struct StoredNotification: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var eventID: String
    public var reportedStatus: PaymentStatus
    /// `applied`, `duplicate`, `stale`, `needs_inquiry` or `unknown_operation` (``ApplyOutcome``'s stored name).
    public var verdict: String
    public var receivedAt: Date

    public init(gateway: GatewayID, attempt: AttemptReference, eventID: String, reportedStatus: PaymentStatus, verdict: String, receivedAt: Date) {
        self.gateway = gateway
        self.attempt = attempt
        self.eventID = eventID
        self.reportedStatus = reportedStatus
        self.verdict = verdict
        self.receivedAt = receivedAt
    }
}

/// One action an operator took in the console (or tried to): who, on what, and what came of it. Kept for as long as
/// the store is; never edited.
public struct AuditEntry: Sendable, Hashable, Codable {
    /// The operator's name from `server.console.operators`.
    public var operatorName: String
    public var merchantID: String
    public var paymentID: String?
    /// `inquire`, `redeliver`, `capture`, `void`, `refund`.
    public var action: String
    /// What the action was about: an attempt reference, an event id, a payment id.
    public var target: String
    /// `ok`, or the error's code.
    public var outcome: String
    /// A short, safe summary (an amount, the resulting status).
    public var detail: String
    public var at: Date

    public init(operatorName: String, merchantID: String, paymentID: String?, action: String, target: String, outcome: String,
                detail: String, at: Date = Date()) {
        self.operatorName = operatorName
        self.merchantID = merchantID
        self.paymentID = paymentID
        self.action = action
        self.target = target
        self.outcome = outcome
        self.detail = detail
        self.at = at
    }
}

/// Ended attempts of one kind, for routing that learns: see ``PaymentStore/routingOutcomes(merchant:since:)``.
public struct RoutingOutcomeCount: Sendable, Hashable {
    public var gateway: GatewayID
    public var status: PaymentStatus
    public var gatewayCode: String?
    public var method: String
    public var currency: String
    public var country: String?
    public var cardIIN: String?
    /// The payment's action (`sale` when the stored intent has none).
    public var action: String
    /// The 10 seconds the attempts started in (milliseconds since 1970 ÷ 10,000).
    public var bucket: Int64
    public var count: Int

    public init(gateway: GatewayID, status: PaymentStatus, gatewayCode: String?, method: String, currency: String, country: String?,
                cardIIN: String?, action: String, bucket: Int64, count: Int) {
        self.gateway = gateway
        self.status = status
        self.gatewayCode = gatewayCode
        self.method = method
        self.currency = currency
        self.country = country
        self.cardIIN = cardIIN
        self.action = action
        self.bucket = bucket
        self.count = count
    }

    /// The statuses an attempt ends in that say something of its customer's answer (the stores' filter).
    package static let endedStatuses: [PaymentStatus] = [.paid, .authorized, .partiallyRefunded, .refunded, .failed]
    /// The same, as an SQL list of string literals.
    package static var sqlList: String { endedStatuses.map { "'\($0.rawValue)'" }.joined(separator: ", ") }
    /// The length of a bucket, in milliseconds.
    package static let bucketMillis: Int64 = 10_000
}

/// How many of a merchant's attempts on one gateway ended in one status with one gateway code, in a window.
public struct AttemptCount: Sendable, Hashable {
    public var gateway: GatewayID
    public var status: PaymentStatus
    public var gatewayCode: String?
    public var count: Int

    public init(gateway: GatewayID, status: PaymentStatus, gatewayCode: String?, count: Int) {
        self.gateway = gateway
        self.status = status
        self.gatewayCode = gatewayCode
        self.count = count
    }
}
