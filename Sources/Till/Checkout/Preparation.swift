import Foundation

/// The output of **Prepare**, sent from the merchant server to the app. It contains no secrets:
/// only what the gateway's client half needs (a token, a session id, a signed parameter string).
public struct Preparation: Sendable, Hashable, Codable {
    public var gateway: GatewayID
    public var attempt: AttemptReference
    public var method: PaymentMethod
    public var amount: Money
    /// The gateway's own identifier when Prepare created one (charge id, session id).
    public var gatewayReference: String?
    /// Non-secret parameters for the client half, keyed by the module's own names.
    public var parameters: [String: String]
    /// The return URL registered for this attempt, if the flow leaves the app.
    public var returnURL: URL?
    /// When the prepared session or token stops being usable.
    public var expiresAt: Date?

    public init(gateway: GatewayID, attempt: AttemptReference, method: PaymentMethod, amount: Money,
                gatewayReference: String? = nil, parameters: [String: String] = [:], returnURL: URL? = nil,
                expiresAt: Date? = nil) {
        self.gateway = gateway
        self.attempt = attempt
        self.method = method
        self.amount = amount
        self.gatewayReference = gatewayReference
        self.parameters = parameters
        self.returnURL = returnURL
        self.expiresAt = expiresAt
    }
}
