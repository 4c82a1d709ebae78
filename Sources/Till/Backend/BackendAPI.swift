import Foundation

// The merchant server's JSON API, shared by the server (TillServer) and the app's client
// (HTTPMerchantBackend), so the two cannot drift apart.

/// `POST /v1/payments/{id}/attempts` body.
public struct PrepareRequest: Codable, Sendable {
    /// Every return URL the app can be reached by for this attempt, one per route it registered, each
    /// carrying the attempt's state. The gateway the server picks chooses one
    /// (``CheckoutServer/returnURL(from:for:)``); the preparation names it.
    public var returnURLs: [URL]?
    /// A single return URL (older apps). Taken as `returnURLs: [returnURL]` when `returnURLs` is absent.
    public var returnURL: URL?
    /// The customer chose to try again (after a decline they were handed off for, or a cancel): the
    /// only way another attempt starts after a hand-off. Recorded on the attempt.
    public var customerRequested: Bool?

    public init(returnURLs: [URL], customerRequested: Bool = false) {
        self.returnURLs = returnURLs
        self.customerRequested = customerRequested ? true : nil
    }
    public init(returnURL: URL? = nil) { self.returnURL = returnURL }

    private enum CodingKeys: String, CodingKey, CaseIterable { case returnURLs, returnURL, customerRequested }

    /// Decodes a prepare request; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        returnURLs = try c.decodeIfPresent([URL].self, forKey: .returnURLs)
        returnURL = try c.decodeIfPresent(URL.self, forKey: .returnURL)
        customerRequested = try c.decodeIfPresent(Bool.self, forKey: .customerRequested)
    }

    /// The offered URLs, whichever field carried them.
    public var offeredReturnURLs: [URL] { returnURLs ?? returnURL.map { [$0] } ?? [] }
}

/// `POST /v1/attempts/{reference}/submit` answer: the app's next step and the payment afterwards.
public struct SubmitAnswer: Codable, Sendable, Hashable {
    public var next: NextStep
    public var payment: PaymentView

    public init(next: NextStep, payment: PaymentView) {
        self.next = next
        self.payment = payment
    }
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
    /// Only in the answer to creating the payment (a replay of the create issues a new one and the
    /// earlier one stops working): the secret the merchant's backend hands to the app for this one
    /// payment. Never shown again; the server keeps only its digest.
    public var clientSecret: ClientSecret?

    public init(id: String, merchantReference: String, amount: Money, method: PaymentMethod, status: PaymentStatus,
                attempts: [AttemptView], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.merchantReference = merchantReference
        self.amount = amount
        self.method = method
        self.status = status
        self.attempts = attempts
        self.createdAt = createdAt
        self.updatedAt = updatedAt
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
    /// True once the app submitted this attempt's payload (a submit is accepted once per attempt).
    public var submitted: Bool?
    /// True once the customer was handed off during this attempt (no automatic next attempt after it).
    public var handedOff: Bool?
    /// True when the customer asked for this attempt (tried again after a decline or a cancel).
    public var customerRequested: Bool?

    public init(reference: AttemptReference, sequence: Int, gateway: GatewayID, status: PaymentStatus,
                gatewayReference: String? = nil, gatewayCode: String? = nil, clientOutcome: ClientOutcome? = nil,
                submitted: Bool? = nil, handedOff: Bool? = nil, customerRequested: Bool? = nil) {
        self.submitted = submitted
        self.handedOff = handedOff
        self.customerRequested = customerRequested
        self.reference = reference
        self.sequence = sequence
        self.gateway = gateway
        self.status = status
        self.gatewayReference = gatewayReference
        self.gatewayCode = gatewayCode
        self.clientOutcome = clientOutcome
    }
}

/// Every error answer: `{"error": {"code", "message", "field"}}`.
public struct ErrorBody: Codable, Sendable, Hashable {
    public struct Detail: Codable, Sendable, Hashable {
        public var code: String
        public var message: String
        public var field: String?
        /// For gateway failures, the ``CheckoutError/Category`` raw value: what is known about the money.
        public var category: String?
        public init(code: String, message: String, field: String? = nil, category: String? = nil) {
            self.code = code
            self.message = message
            self.field = field
            self.category = category
        }
    }
    public var error: Detail
    public init(error: Detail) { self.error = error }
}
