import Foundation
import Till

extension OperationKind {
    /// The letter of the kind in an ``OperationReference`` (`c`, `v`, `r`).
    var letter: Character {
        switch self {
        case .capture: "c"
        case .void: "v"
        case .refund: "r"
        }
    }
}

/// An operation's own reference: the attempt's reference, a dash, the kind's letter and the operation's
/// sequence among the attempt's operations of that kind (`<attempt>-r2`, the second refund). Unique, derived,
/// and sent to the gateway wherever the gateway keeps a merchant reference for the operation, so an
/// inquiry or a notification names it.
public struct OperationReference: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// The attempt the operation belongs to.
    public let attempt: AttemptReference
    /// What kind of operation it is.
    public let kind: OperationKind
    /// 1 for the attempt's first operation of this kind.
    public let sequence: Int

    /// The reference of the `sequence`th operation of `kind` on `attempt`.
    public init(attempt: AttemptReference, kind: OperationKind, sequence: Int) {
        precondition(sequence > 0 && sequence < 1000, "an operation's sequence is 1...999")
        self.attempt = attempt
        self.kind = kind
        self.sequence = sequence
        self.rawValue = "\(attempt.rawValue)-\(kind.letter)\(sequence)"
    }

    /// Reads a reference Till made; `nil` for anything else (a reference made outside Till).
    public init?(rawValue: String) {
        guard let dash = rawValue.lastIndex(of: "-"), dash > rawValue.startIndex else { return nil }
        let attempt = AttemptReference(rawValue: String(rawValue[..<dash]))
        let tail = rawValue[rawValue.index(after: dash)...]
        guard let letter = tail.first, let kind = OperationKind.allCases.first(where: { $0.letter == letter }),
              tail.count >= 2, tail.count <= 4, tail.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }),
              tail.dropFirst().first != "0", let sequence = Int(tail.dropFirst()) else { return nil }
        self.init(attempt: attempt, kind: kind, sequence: sequence)
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let reference = OperationReference(rawValue: raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an operation reference: \(raw)"))
        }
        self = reference
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// Which operations a gateway offers, declared by its server half from the vendor's sources. A kind that is
/// `nil` is refused with ``CheckoutError/Category/unsupported`` before anything is sent.
public struct OperationCapabilities: Sendable, Hashable {
    /// Capturing an authorization.
    public struct Capture: Sendable, Hashable {
        /// Less than the authorized amount may be captured.
        public var partial: Bool
        /// Several captures may be made of one authorization (each partial, up to the authorized amount).
        public var multiple: Bool
        /// The gateway takes a flag saying a capture is the last (the rest of the authorization is released).
        public var finalFlag: Bool
        /// How long after the payment was created a capture is accepted; `nil` when no source says.
        public var window: Duration?

        public init(partial: Bool, multiple: Bool, finalFlag: Bool = false, window: Duration? = nil) {
            self.partial = partial
            self.multiple = multiple
            self.finalFlag = finalFlag
            self.window = window
        }
    }

    /// Voiding an authorization before anything was captured.
    public struct Void: Sendable, Hashable {
        /// How long after the payment was created a void is accepted; `nil` when no source says.
        public var window: Duration?

        public init(window: Duration? = nil) {
            self.window = window
        }
    }

    /// Refunding captured money.
    public struct Refund: Sendable, Hashable {
        /// Less than what was captured may be refunded.
        public var partial: Bool
        /// Several refunds may be made (up to what was captured).
        public var multiple: Bool
        /// How long after the payment was created a refund is accepted; `nil` when no source says.
        public var window: Duration?

        public init(partial: Bool, multiple: Bool, window: Duration? = nil) {
            self.partial = partial
            self.multiple = multiple
            self.window = window
        }
    }

    public var capture: Capture?
    public var void: Void?
    public var refund: Refund?

    public init(capture: Capture? = nil, void: Void? = nil, refund: Refund? = nil) {
        self.capture = capture
        self.void = void
        self.refund = refund
    }

    /// No operations at all.
    public static let none = OperationCapabilities()

    /// Whether `kind` is offered at all.
    public func offers(_ kind: OperationKind) -> Bool {
        switch kind {
        case .capture: capture != nil
        case .void: void != nil
        case .refund: refund != nil
        }
    }

    /// How long after the payment `kind` is accepted; `nil` when it is not offered or no source says.
    public func window(of kind: OperationKind) -> Duration? {
        switch kind {
        case .capture: capture?.window
        case .void: void?.window
        case .refund: refund?.window
        }
    }

    /// The capability's name as the API reports it when it is missing (`operations.refund.partial`).
    public static func capabilityName(_ kind: OperationKind, _ aspect: String? = nil) -> String {
        ["operations", kind.rawValue, aspect].compactMap { $0 }.joined(separator: ".")
    }
}

/// The input of an operation: everything a gateway's server half needs to send it, and to ask about it later.
public struct OperationRequest: Sendable, Hashable {
    /// The operation's own reference (also its idempotency key at gateways that take one).
    public var reference: OperationReference
    /// The payment's intent (currency, customer, methods).
    public var intent: PaymentIntent
    /// The gateway's reference for the attempt (its payment or order id), when it made one.
    public var gatewayReference: String?
    /// This operation's amount: what to capture or refund; for a void, the authorized amount (for gateways
    /// that send one).
    public var amount: Money
    /// For a capture: no further capture follows (sent only to gateways with ``OperationCapabilities/Capture/finalFlag``).
    public var isFinal: Bool
    /// Where the gateway should send its notification about the operation, when it takes one per request.
    public var notificationURL: URL?
    /// For an inquiry: the gateway's own id for the operation, when its answer gave one.
    public var operationGatewayReference: String?
    /// For an inquiry at a gateway that reports only running totals (PayFort's `CHECK_STATUS`): the sum of the
    /// attempt's other operations of this kind that Till counts as succeeded, in the payment's currency.
    public var succeededBefore: Money?
    /// For an inquiry: whether another operation of this kind on the attempt is still open (pending or
    /// unknown). A running total cannot tell two open operations apart, so such a gateway answers `unknown`.
    public var othersOpen: Bool

    public init(reference: OperationReference, intent: PaymentIntent, gatewayReference: String?, amount: Money,
                isFinal: Bool = false, notificationURL: URL? = nil, operationGatewayReference: String? = nil,
                succeededBefore: Money? = nil, othersOpen: Bool = false) {
        self.reference = reference
        self.intent = intent
        self.gatewayReference = gatewayReference
        self.amount = amount
        self.isFinal = isFinal
        self.notificationURL = notificationURL
        self.operationGatewayReference = operationGatewayReference
        self.succeededBefore = succeededBefore
        self.othersOpen = othersOpen
    }

    public var kind: OperationKind { reference.kind }
    public var attempt: AttemptReference { reference.attempt }
}

/// A gateway's statement about one operation: its answer to the request, its answer to an inquiry, or a
/// verified notification.
public struct OperationReport: Sendable, Hashable, Codable {
    /// Which operation of Till's it is about, when the gateway names it (or the request was Till's). `nil` for
    /// an operation the gateway names only by its own id or not at all (one made in the gateway's back office,
    /// or a gateway that keeps no merchant reference for operations): the store then matches it by
    /// ``gatewayReference``, else by kind and amount when exactly one open operation fits.
    public var reference: OperationReference?
    public var kind: OperationKind
    public var status: OperationStatus
    /// This operation's amount as the gateway states it (never a balance or a running total), when it states one.
    public var amount: Money?
    /// The gateway's own id for the operation (a refund id), when it has one.
    public var gatewayReference: String?
    /// The gateway's raw status, code and message, verbatim (for a decline, the decline code).
    public var gatewayStatus: String?
    public var gatewayCode: String?
    public var gatewayMessage: String?

    public init(reference: OperationReference?, kind: OperationKind, status: OperationStatus, amount: Money? = nil,
                gatewayReference: String? = nil, gatewayStatus: String? = nil, gatewayCode: String? = nil, gatewayMessage: String? = nil) {
        self.reference = reference
        self.kind = kind
        self.status = status
        self.amount = amount
        self.gatewayReference = gatewayReference
        self.gatewayStatus = gatewayStatus
        self.gatewayCode = gatewayCode
        self.gatewayMessage = gatewayMessage
    }
}

extension CheckoutError {
    /// The refusal of an operation the gateway does not offer, made before anything is sent: category
    /// ``CheckoutError/Category/unsupported``, naming the capability (`operations.capture`).
    public static func unsupportedOperation(_ kind: OperationKind, aspect: String? = nil, gateway: GatewayID, why: String? = nil) -> CheckoutError {
        let capability = OperationCapabilities.capabilityName(kind, aspect)
        return CheckoutError(.unsupportedAction, category: .unsupported, field: capability,
                             message: why ?? "gateway \(gateway) does not offer \(capability)", gateway: gateway)
    }
}
