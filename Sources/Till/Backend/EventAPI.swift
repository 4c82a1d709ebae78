import Foundation

/// The body of an event Till posts to a merchant's backend, and of each event `GET /v1/events` lists.
///
/// Every change of a payment's, an attempt's or an operation's status is recorded as events in the same
/// transaction as the change, so an event exists exactly when its change committed. `type` names the change
/// (see ``EventType``); `data` is the payment as that change left it, as `GET /v1/payments/{id}` shows it to the
/// merchant's key; `sequence` counts a payment's events from 1, so a receiver can order them and skip one it has
/// already applied.
public struct WebhookEvent: Codable, Sendable, Hashable {
    /// `evt_` and a UUID: the same on every delivery of the event (a receiver deduplicates by it).
    public var id: String
    public var type: EventType
    /// The version of the event list and body shape; this is version 1.
    public var version: Int
    public var merchant: String
    public var paymentId: String
    /// 1 for a payment's first event, one more for each later one (no gaps).
    public var sequence: Int
    public var createdAt: Date
    /// For an attempt's event: the attempt.
    public var attempt: AttemptReference?
    /// For an operation's event (a capture, void or refund): the operation's id.
    public var operation: String?
    /// The payment as this change left it.
    public var data: PaymentView

    public init(id: String, type: EventType, version: Int = 1, merchant: String, paymentId: String, sequence: Int, createdAt: Date,
                attempt: AttemptReference? = nil, operation: String? = nil, data: PaymentView) {
        self.id = id
        self.type = type
        self.version = version
        self.merchant = merchant
        self.paymentId = paymentId
        self.sequence = sequence
        self.createdAt = createdAt
        self.attempt = attempt
        self.operation = operation
        self.data = data
    }
}

/// An event's type: what changed and the status it changed to, `<subject>.<status>`.
///
/// Version 1 of the list:
/// - `payment.created`, then `payment.<status>` each time the payment's status changes, or its refunded total
///   does (`payment.partially_refunded` again for a second partial refund);
/// - `attempt.<status>` each time an attempt's status or refunded total changes;
/// - `capture.<status>`, `void.<status>`, `refund.<status>` for Till's operations: `created` when it is stored
///   (before it is sent, while its outcome is unknown), then `pending`, `succeeded` or `failed`.
///
/// `<status>` is a ``PaymentStatus`` or ``OperationStatus`` raw value. A receiver should ignore a type it does
/// not know: a later version may add types, never change what one means.
public struct EventType: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let paymentCreated = EventType(rawValue: "payment.created")
    /// `payment.<status>`.
    public static func payment(_ status: PaymentStatus) -> EventType { EventType(rawValue: "payment.\(status.rawValue)") }
    /// `attempt.<status>`.
    public static func attempt(_ status: PaymentStatus) -> EventType { EventType(rawValue: "attempt.\(status.rawValue)") }
    /// `<kind>.created`: the operation was stored, before it was sent.
    public static func operationCreated(_ kind: OperationKind) -> EventType { EventType(rawValue: "\(kind.rawValue).created") }
    /// `<kind>.<status>`.
    public static func operation(_ kind: OperationKind, _ status: OperationStatus) -> EventType {
        EventType(rawValue: "\(kind.rawValue).\(status.rawValue)")
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Where an event's delivery to the merchant's endpoints stands.
public enum EventDeliveryState: String, Codable, Sendable, Hashable, CaseIterable {
    /// Not yet accepted by every endpoint; retried with backoff.
    case pending
    /// Every endpoint answered 2xx.
    case delivered
    /// Retried for the whole retry window (3 days) without success; `POST /v1/events/{id}/redeliver` tries again.
    case failed
    /// The merchant had no endpoint when it was due; redelivering sends it once one is configured.
    case skipped
}

/// One try at posting an event to one endpoint.
public struct EventDeliveryAttemptView: Codable, Sendable, Hashable {
    /// The endpoint's URL.
    public var endpoint: String
    public var at: Date
    /// The receiver's HTTP status; absent when no answer came (refused, timed out, reset).
    public var statusCode: Int?
    public var latencyMillis: Int
    /// Why it failed, when it did: `timeout`, `connection`, `status 500`, …
    public var error: String?
    /// The start of the receiver's answer, at most 200 printable ASCII characters (never more of its body).
    public var excerpt: String?

    public init(endpoint: String, at: Date, statusCode: Int?, latencyMillis: Int, error: String? = nil, excerpt: String? = nil) {
        self.endpoint = endpoint
        self.at = at
        self.statusCode = statusCode
        self.latencyMillis = latencyMillis
        self.error = error
        self.excerpt = excerpt
    }
}

/// An event with its delivery: the answer of `GET /v1/events/{id}` and each item of `GET /v1/events`.
public struct EventView: Codable, Sendable, Hashable {
    public var event: WebhookEvent
    public var state: EventDeliveryState
    /// Deliveries tried so far.
    public var attemptCount: Int
    /// When the next try is due (while pending).
    public var nextAttemptAt: Date?
    public var deliveredAt: Date?
    /// Only from `GET /v1/events/{id}`: every try, oldest first.
    public var attempts: [EventDeliveryAttemptView]?

    public init(event: WebhookEvent, state: EventDeliveryState, attemptCount: Int, nextAttemptAt: Date?, deliveredAt: Date?,
                attempts: [EventDeliveryAttemptView]? = nil) {
        self.event = event
        self.state = state
        self.attemptCount = attemptCount
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
        self.attempts = attempts
    }
}

/// A page of `GET /v1/events`: oldest first; `next` is the cursor of the following page, absent on the last.
public struct EventPage: Codable, Sendable, Hashable {
    public var events: [EventView]
    public var next: String?

    public init(events: [EventView], next: String?) {
        self.events = events
        self.next = next
    }
}
