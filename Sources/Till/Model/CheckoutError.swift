/// The one error type of Till's public API.
///
/// It carries a stable ``code`` to switch on, a ``category`` that says what the caller can do about
/// it, a ``message`` that is safe to log or show (it never contains a secret, a full card number or a
/// CVV), the ``field`` at fault for invalid input, and the gateway's own raw code and message when a
/// gateway produced it.
///
/// ```swift
/// do { try await checkout.pay(intent) }
/// catch let error as CheckoutError {
///     switch error.category {
///     case .declinedSoft: offerAnotherCard()
///     case .cancelled:    break
///     case .invalidInput: highlight(error.field)
///     default:            showGenericFailure(error.message)
///     }
/// }
/// ```
public struct CheckoutError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    /// What kind of failure this is, and so what a caller may do next.
    public enum Category: String, Sendable, Codable, CaseIterable {
        /// The issuer or gateway refused, and asking again will not help (stolen card, closed account).
        case declinedHard = "declined_hard"
        /// A refusal that another attempt, another gateway or another card may overcome.
        case declinedSoft = "declined_soft"
        /// The customer gave up: closed the wallet, pressed cancel.
        case cancelled
        /// The input was wrong; ``CheckoutError/field`` names it.
        case invalidInput = "invalid_input"
        /// The gateway could not be reached and the request provably never arrived (refused
        /// connection, unresolvable host). Safe to try again or elsewhere.
        case unavailable
        /// The request may or may not have been processed (timeout, lost response, 5xx).
        /// Never retried elsewhere before an inquiry settles it.
        case unknownOutcome = "unknown_outcome"
        /// The merchant's configuration or credentials are wrong (missing secret, bad signature key).
        case configuration
        /// A notification, response or return could not be authenticated (bad signature, forged state).
        case verification
        /// The gateway does not support what was asked (method, currency, action).
        case unsupported
    }

    /// A stable, machine-readable error code. Open: gateways may define their own.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        public static let invalidAmount: Code = "invalid_amount"
        public static let invalidCurrency: Code = "invalid_currency"
        public static let invalidCountry: Code = "invalid_country"
        /// A field is present but malformed (wrong type, characters, format).
        public static let invalidField: Code = "invalid_field"
        public static let missingField: Code = "missing_field"
        public static let fieldTooLong: Code = "field_too_long"
        public static let malformedBody: Code = "malformed_body"
        /// A key appears twice in a message (a form field, a JSON object key): refused, never "first wins".
        public static let duplicateField: Code = "duplicate_field"
        public static let declined: Code = "declined"
        public static let insufficientFunds: Code = "insufficient_funds"
        public static let cancelledByCustomer: Code = "cancelled_by_customer"
        public static let gatewayUnreachable: Code = "gateway_unreachable"
        public static let timeout: Code = "timeout"
        public static let gatewayError: Code = "gateway_error"
        public static let unknownOutcome: Code = "unknown_outcome"
        public static let signatureMismatch: Code = "signature_mismatch"
        public static let missingSecret: Code = "missing_secret"
        public static let misconfigured: Code = "misconfigured"
        public static let unsupportedMethod: Code = "unsupported_method"
        public static let unsupportedCurrency: Code = "unsupported_currency"
        public static let unsupportedAction: Code = "unsupported_action"
        public static let returnTimedOut: Code = "return_timed_out"
        public static let returnCancelled: Code = "return_cancelled"
        /// A return URL the merchant does not accept (``ReturnURLRule``): not https, not one of the
        /// merchant's custom schemes, relative, or carrying a user name or password.
        public static let invalidReturnURL: Code = "invalid_return_url"
        public static let invalidTransition: Code = "invalid_transition"
        /// An inquiry's answer: the gateway has no such attempt (yet). By itself it proves nothing until the
        /// attempt's documented lifetime has passed (``GatewayCapabilities/attemptLifetimeSeconds``).
        public static let attemptNotFound: Code = "attempt_not_found"
        /// The merchant server's rate limit for this credential (or its address) was reached; nothing was done. Its
        /// answer's `Retry-After` says when to try again.
        public static let rateLimited: Code = "rate_limited"

        /// The category an error with this code falls in unless stated otherwise.
        public var defaultCategory: Category {
            switch self {
            case .invalidAmount, .invalidCurrency, .invalidCountry, .invalidField, .missingField,
                 .fieldTooLong, .malformedBody, .duplicateField, .invalidTransition, .invalidReturnURL: .invalidInput
            case .declined: .declinedHard
            case .insufficientFunds: .declinedSoft
            case .cancelledByCustomer, .returnCancelled: .cancelled
            case .gatewayUnreachable, .rateLimited: .unavailable
            case .timeout, .gatewayError, .unknownOutcome, .returnTimedOut: .unknownOutcome
            case .signatureMismatch: .verification
            case .missingSecret, .misconfigured: .configuration
            case .unsupportedMethod, .unsupportedCurrency, .unsupportedAction: .unsupported
            default: .unknownOutcome
            }
        }
    }

    public var code: Code
    public var category: Category
    /// A human-readable explanation, safe for logs: no secrets, PANs or CVVs.
    public var message: String
    /// The path of the offending field (`"intent.amount"`, `"merchants[0].routing.rules[2].currency"`).
    public var field: String?
    /// The gateway that produced the error, if any.
    public var gateway: GatewayID?
    /// The gateway's raw code (`"00008"`, `"PE002"`, `"-2"`), verbatim.
    public var gatewayCode: String?
    /// The gateway's raw message, verbatim (already free of card data, or masked by the module).
    public var gatewayMessage: String?

    /// Creates an error whose category is the code's default unless given.
    public init(_ code: Code, category: Category? = nil, field: String? = nil, message: String,
                gateway: GatewayID? = nil, gatewayCode: String? = nil, gatewayMessage: String? = nil) {
        self.code = code
        self.category = category ?? code.defaultCategory
        self.message = message
        self.field = field
        self.gateway = gateway
        self.gatewayCode = gatewayCode
        self.gatewayMessage = gatewayMessage
    }

    public var description: String {
        var text = "[\(code.rawValue)] "
        if let field { text += "\(field): " }
        text += message
        if let gateway {
            text += " (gateway \(gateway.rawValue)"
            if let gatewayCode { text += " code \(gatewayCode)" }
            if let gatewayMessage { text += ": \(gatewayMessage)" }
            text += ")"
        }
        return text
    }

    /// The same error, attributed to `gateway` (a gateway module re-throwing a shared validator's error).
    public func attributed(to gateway: GatewayID) -> CheckoutError {
        var copy = self
        copy.gateway = gateway
        return copy
    }

    /// A printable, bounded rendering of untrusted input for use inside messages: at most 40
    /// characters, control characters escaped, and card-number-like digit runs masked.
    public static func printable(_ raw: String) -> String {
        // Mask first, so a card number cut by the length limit cannot show more than 6 + 4 digits.
        let masked = Redactor.maskCardNumbers(in: raw)
        var out = ""
        for scalar in masked.unicodeScalars.prefix(40) {
            if scalar.properties.generalCategory == .control {
                out += scalar.escaped(asASCII: true)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if masked.unicodeScalars.count > 40 { out += "…" }
        return out
    }
}
