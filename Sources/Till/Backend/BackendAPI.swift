import Foundation

// The merchant server's JSON API, shared by the server (TillServer) and the app's client
// (HTTPMerchantBackend), so the two cannot drift apart.

/// `POST /v1/payments/{id}/attempts` body.
public struct PrepareRequest: Codable, Sendable {
    /// Every return URL the app can be reached by for this attempt, one per route it registered, each
    /// carrying the attempt's state. The gateway the server picks chooses one
    /// (``GatewayServerHalf/returnURL(from:for:)``); the preparation names it.
    public var returnURLs: [URL]?
    /// A single return URL (older apps). Taken as `returnURLs: [returnURL]` when `returnURLs` is absent.
    public var returnURL: URL?
    /// The customer chose to try again (after a decline they were handed off for, or a cancel): the
    /// only way another attempt starts after a hand-off. Recorded on the attempt.
    public var customerRequested: Bool?
    /// What only the app knows that the chosen gateway needs with this attempt (PayFort's FORT SDK:
    /// `device_id`), keyed by the names gateway modules declare (``GatewayCapabilities/appDataKeys``).
    /// Never stored with the payment; a key no module declares is refused, naming `appData.<key>`.
    public var appData: [String: String]?

    public init(returnURLs: [URL], customerRequested: Bool = false, appData: [String: String] = [:]) {
        self.returnURLs = returnURLs
        self.customerRequested = customerRequested ? true : nil
        self.appData = appData.isEmpty ? nil : appData
    }
    public init(returnURL: URL? = nil) { self.returnURL = returnURL }

    private enum CodingKeys: String, CodingKey, CaseIterable { case returnURLs, returnURL, customerRequested, appData }

    /// Decodes a prepare request; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        returnURLs = try c.decodeIfPresent([URL].self, forKey: .returnURLs)
        returnURL = try c.decodeIfPresent(URL.self, forKey: .returnURL)
        customerRequested = try c.decodeIfPresent(Bool.self, forKey: .customerRequested)
        appData = try c.decodeIfPresent([String: String].self, forKey: .appData)
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
    /// Only in answers to the merchant's key (never to the app's client secret): the customer as stored
    /// (card numbers in free text masked), when any field of it is set.
    public var customer: Customer?
    /// Only in answers to the merchant's key: the payment's description, when set.
    public var description: String?
    /// Only in answers to the merchant's key: the payment's metadata, when not empty.
    public var metadata: [String: String]?
    /// Only in answers to the merchant's key, once any was made: every capture, void and refund, oldest first.
    public var operations: [OperationView]?
    /// Only in answers to the merchant's key, once the payment holds money: what was captured (succeeded
    /// captures, or the whole amount of a sale) and what was refunded (succeeded refunds, including those made
    /// outside Till and learned from the gateway).
    public var amountCaptured: Money?
    public var amountRefunded: Money?

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

/// The body of `PATCH /v1/payments/{id}`: what the merchant may change before any money moved. A key
/// that is absent leaves its field as it is; `null` clears it; a value replaces it whole (the customer
/// and the metadata are replaced, not merged). Keys Till does not know are refused by name.
public struct PaymentUpdate: Codable, Sendable, Hashable {
    /// A change of one field: absent (keep), `null` (clear) or a new value.
    public enum Change<Value: Codable & Sendable & Hashable>: Sendable, Hashable {
        case keep
        case clear
        case set(Value)
    }

    public var customer: Change<Customer>
    public var description: Change<String>
    public var metadata: Change<[String: String]>

    public init(customer: Change<Customer> = .keep, description: Change<String> = .keep, metadata: Change<[String: String]> = .keep) {
        self.customer = customer
        self.description = description
        self.metadata = metadata
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case customer, description, metadata }

    /// Decodes an update; a key Till does not know is an error naming it, and an empty object is refused.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func change<Value>(_ key: CodingKeys, _ type: Value.Type) throws -> Change<Value> {
            guard c.contains(key) else { return .keep }
            if try c.decodeNil(forKey: key) { return .clear }
            return .set(try c.decode(Value.self, forKey: key))
        }
        customer = try change(.customer, Customer.self)
        description = try change(.description, String.self)
        metadata = try change(.metadata, [String: String].self)
        guard customer != .keep || description != .keep || metadata != .keep else {
            let message = "name at least one of customer, description, metadata"
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: message,
                                                    underlyingError: CheckoutError(.missingField, field: "$", message: message)))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        func put<Value>(_ change: Change<Value>, _ key: CodingKeys) throws {
            switch change {
            case .keep: break
            case .clear: try c.encodeNil(forKey: key)
            case .set(let value): try c.encode(value, forKey: key)
            }
        }
        try put(customer, .customer)
        try put(description, .description)
        try put(metadata, .metadata)
    }

    /// `intent` with this update applied.
    public func applied(to intent: PaymentIntent) -> PaymentIntent {
        var intent = intent
        switch customer {
        case .keep: break
        case .clear: intent.customer = Customer()
        case .set(let value): intent.customer = value
        }
        switch description {
        case .keep: break
        case .clear: intent.description = nil
        case .set(let value): intent.description = value
        }
        switch metadata {
        case .keep: break
        case .clear: intent.metadata = [:]
        case .set(let value): intent.metadata = value
        }
        return intent
    }
}

extension PaymentView {
    /// The server's view of one of the payment's attempts as a report (`nil` when the payment has no such attempt): how
    /// every client of the server reads `GET /v1/attempts/{reference}`.
    package func report(of attempt: AttemptReference) -> StatusReport? {
        guard let view = attempts.first(where: { $0.reference == attempt }) else { return nil }
        return StatusReport(gateway: view.gateway, attempt: attempt, gatewayReference: view.gatewayReference,
                            status: view.status, amount: amount, gatewayCode: view.gatewayCode)
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
