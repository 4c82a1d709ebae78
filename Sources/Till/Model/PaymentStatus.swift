/// The unified status of a payment or of one attempt at it.
///
/// Open: a status string Till does not know decodes to a value whose ``isKnown`` is false, which is
/// never final and never applied (it cannot move a payment anywhere). Known statuses, in the order
/// money moves:
///
/// | status | meaning | final |
/// |---|---|---|
/// | `created` | recorded, nothing sent yet | no |
/// | `pending` | sent; waiting for the customer or the gateway | no |
/// | `failed` / `cancelled` / `expired` | no money moved | yes, unless the gateway later reports money moved |
/// | `authorized` | funds held, not captured | no |
/// | `paid` | captured or sold | yes |
/// | `partially_refunded` / `refunded` | money went back | `refunded` is |
///
/// The transition rule is forward-only; see ``transition(to:)``.
public struct PaymentStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let created = PaymentStatus(rawValue: "created")
    public static let pending = PaymentStatus(rawValue: "pending")
    public static let authorized = PaymentStatus(rawValue: "authorized")
    public static let paid = PaymentStatus(rawValue: "paid")
    public static let failed = PaymentStatus(rawValue: "failed")
    public static let cancelled = PaymentStatus(rawValue: "cancelled")
    public static let expired = PaymentStatus(rawValue: "expired")
    public static let partiallyRefunded = PaymentStatus(rawValue: "partially_refunded")
    public static let refunded = PaymentStatus(rawValue: "refunded")

    /// Every status Till knows.
    public static let known: [PaymentStatus] = [
        .created, .pending, .failed, .cancelled, .expired, .authorized, .paid, .partiallyRefunded, .refunded,
    ]

    /// True for the statuses listed in ``known``.
    public var isKnown: Bool { Self.known.contains(self) }

    /// True when money moved to the merchant (and may since have gone back).
    public var moneyMoved: Bool {
        self == .paid || self == .partiallyRefunded || self == .refunded
    }

    /// True when the payment will not change without a new action by someone (a refund).
    public var isFinal: Bool {
        self == .paid || self == .refunded || isNegative
    }

    /// Failed, cancelled or expired: the attempt ended and no money moved.
    public var isNegative: Bool { self == .failed || self == .cancelled || self == .expired }

    /// The result of asking to move from one status to another.
    public enum Transition: Equatable, Sendable {
        /// Move: the new status is ahead of the current one.
        case advance
        /// Already there: a duplicate report. Nothing to do.
        case unchanged
        /// Refused: it would move backwards (or to an unknown status). Keep the current one.
        case rejected(reason: String)
    }

    /// Whether a payment in this status may move to `next`.
    ///
    /// The rule: status only moves forward. A paid payment never goes back to pending, authorized,
    /// failed, cancelled or expired; only refunds follow it. A failed, cancelled or expired one may
    /// still become paid, because a gateway's authoritative report that money moved must never be
    /// lost (a late notification after a timeout-driven failure); a failed one may also become
    /// authorized. A cancelled or expired one may not become authorized again: that is how a void
    /// or an expired hold ends, and a redelivered "authorized" must not reopen it. Nothing moves to
    /// `created`, and nothing moves to a status Till does not know.
    public func transition(to next: PaymentStatus) -> Transition {
        if next == self { return .unchanged }
        guard next.isKnown else { return .rejected(reason: "unknown status \"\(next.rawValue)\" is never applied") }
        let allowed: Bool
        switch self {
        case .created:
            allowed = next != .created
        case .pending:
            allowed = next != .created
        case .failed:
            allowed = next == .authorized || next == .paid
        case .cancelled, .expired:
            allowed = next == .paid
        case .authorized:
            allowed = next == .paid || next == .cancelled || next == .expired
        case .paid:
            allowed = next == .partiallyRefunded || next == .refunded
        case .partiallyRefunded:
            allowed = next == .refunded
        case .refunded:
            allowed = false
        default:
            // An unknown current status (from a newer Till) may be overwritten by any known one.
            allowed = true
        }
        return allowed ? .advance : .rejected(reason: "\(rawValue) → \(next.rawValue) would move backwards")
    }

    /// The status of a payment from the statuses of its attempts, in the order they were made.
    ///
    /// - Money held on any attempt: `paid` if one is paid, else `partially_refunded`, else
    ///   `authorized`. A decline — or a refund — on one attempt never hides money another holds.
    /// - Otherwise, if every attempt that moved money was refunded: `refunded`.
    /// - Otherwise, any attempt still open (created, pending, or a status Till does not know):
    ///   `pending` — a payment is not failed while one of its attempts may still succeed.
    /// - Otherwise every attempt ended negatively: the last attempt's status.
    /// - No attempts: `created`.
    public static func aggregate(_ attempts: [PaymentStatus]) -> PaymentStatus {
        for holding in [PaymentStatus.paid, .partiallyRefunded, .authorized] where attempts.contains(holding) { return holding }
        if attempts.contains(.refunded) { return .refunded }
        if attempts.contains(where: { !$0.isNegative }) { return .pending }
        return attempts.last ?? .created
    }
}

