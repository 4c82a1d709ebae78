import Foundation

/// The input of **Return**.
public enum ReturnEvent: Sendable, Hashable {
    /// A return URL that the ``ReturnURLHandler`` matched to this attempt.
    case url(URL)
    /// A vendor SDK's in-process result (``SDKResult``): its code and parameters
    /// (Citcon `0`/`-2`/`6001`, iPayNow `PE001`, ecommpay `0`/`100`/`200`/`500`).
    case callback(code: String, parameters: [String: String])
    /// The customer never came back within the time allowed.
    case timedOut
    /// The app abandoned the wait (the customer closed the checkout).
    case abandoned
}

/// What the app may show after Present/Return. Never final: only Confirm is.
public struct ClientOutcome: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// Decodes a kind; another value is an error naming the field and listing the kinds.
        public init(from decoder: any Decoder) throws { self = try decoder.decodeOneOf(Self.self) }

        /// The client side believes the customer paid. Awaiting confirmation.
        case succeeded
        /// Still in progress.
        case pending
        /// The customer cancelled.
        case cancelled
        /// The client side saw a failure.
        case failed
        /// Nothing can be concluded (no return, unreadable callback).
        case unknown
    }
    public var kind: Kind
    /// The gateway's raw client-side code, verbatim.
    public var gatewayCode: String?
    /// A safe message.
    public var message: String?
    /// Set by the app when it reports the outcome: the customer was handed to a wallet, 3-D Secure or a
    /// redirect during the attempt. The server then never starts another attempt by itself.
    public var handedOff: Bool?

    public init(_ kind: Kind, gatewayCode: String? = nil, message: String? = nil, handedOff: Bool? = nil) {
        self.kind = kind
        self.gatewayCode = gatewayCode
        self.message = message
        self.handedOff = handedOff
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case kind, gatewayCode, message, handedOff }

    /// Decodes an outcome; a key Till does not know is an error naming it.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(Kind.self, forKey: .kind)
        gatewayCode = try c.decodeIfPresent(String.self, forKey: .gatewayCode)
        message = try c.decodeIfPresent(String.self, forKey: .message)
        handedOff = try c.decodeIfPresent(Bool.self, forKey: .handedOff)
    }
}
