import Foundation
import Till
import TillOrchestration

/// An event as the server stores it: the exact body it delivers, and where its delivery stands.
public struct StoredEvent: Sendable, Hashable {
    public var id: String
    public var merchantID: String
    public var paymentID: String
    /// 1 for the payment's first event; no gaps.
    public var sequence: Int
    public var type: EventType
    /// The JSON of the ``WebhookEvent``, byte for byte what every delivery posts and signs.
    public var body: Data
    public var createdAt: Date
    /// The store's order of all events (the list's cursor); 0 until stored.
    public var position: Int64
    public var state: EventDeliveryState
    public var attemptCount: Int
    public var nextAttemptAt: Date?
    public var deliveredAt: Date?

    package init(id: String, merchantID: String, paymentID: String, sequence: Int, type: EventType, body: Data, createdAt: Date,
                 position: Int64 = 0, state: EventDeliveryState = .pending, attemptCount: Int = 0, nextAttemptAt: Date? = nil,
                 deliveredAt: Date? = nil) {
        self.id = id
        self.merchantID = merchantID
        self.paymentID = paymentID
        self.sequence = sequence
        self.type = type
        self.body = body
        self.createdAt = createdAt
        self.position = position
        self.state = state
        self.attemptCount = attemptCount
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
    }

    /// The body decoded.
    public func decoded() throws -> WebhookEvent { try EventRules.decoder.decode(WebhookEvent.self, from: body) }
}

/// Which events a list asks for.
public struct EventQuery: Sendable, Hashable {
    public var type: EventType?
    public var paymentID: String?
    public var state: EventDeliveryState?
    /// Only events stored after this position (the previous page's last).
    public var after: Int64
    public var limit: Int

    public init(type: EventType? = nil, paymentID: String? = nil, state: EventDeliveryState? = nil, after: Int64 = 0, limit: Int = 50) {
        self.type = type
        self.paymentID = paymentID
        self.state = state
        self.after = after
        self.limit = limit
    }
}

/// One try at posting an event to one endpoint, as stored.
public struct StoredDeliveryAttempt: Sendable, Hashable {
    public var eventID: String
    public var endpoint: String
    public var at: Date
    public var statusCode: Int?
    public var latencyMillis: Int
    public var error: String?
    public var excerpt: String?

    public init(eventID: String, endpoint: String, at: Date, statusCode: Int?, latencyMillis: Int, error: String? = nil, excerpt: String? = nil) {
        self.eventID = eventID
        self.endpoint = endpoint
        self.at = at
        self.statusCode = statusCode
        self.latencyMillis = latencyMillis
        self.error = error
        self.excerpt = excerpt
    }

    /// The receiver accepted it (a 2xx).
    public var delivered: Bool { statusCode.map { (200..<300).contains($0) } ?? false }
}

/// What a claimed delivery came to.
public enum DeliveryResult: Sendable, Hashable {
    /// Every endpoint accepted it.
    case delivered
    /// Try again at this time.
    case retry(at: Date)
    /// The retry window is over.
    case failed
    /// The merchant has no endpoint.
    case skipped
}

/// The undelivered events, for the metrics: how many, and when the oldest was made.
public struct EventBacklog: Sendable, Hashable {
    public var pending: Int
    public var oldestCreatedAt: Date?

    public init(pending: Int, oldestCreatedAt: Date?) {
        self.pending = pending
        self.oldestCreatedAt = oldestCreatedAt
    }
}

/// The one rule for which events a change writes, and their bodies.
package enum EventRules {
    /// The body's encoding: sorted keys, ISO 8601 dates (the API's own).
    package static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    package static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// What changed between `before` (nil: the payment is new) and `after`, as event types with their subject, in the
    /// order a receiver should apply them: the operations', then the attempts', then the payment's.
    package static func changes(before: StoredPayment?, after: StoredPayment) -> [(type: EventType, attempt: AttemptReference?, operation: OperationReference?)] {
        var out: [(EventType, AttemptReference?, OperationReference?)] = []
        let earlierOperations = Dictionary((before?.operations ?? []).map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
        for operation in after.operations {
            if let was = earlierOperations[operation.reference] {
                if was.status != operation.status { out.append((.operation(operation.kind, operation.status), operation.attempt, operation.reference)) }
            } else {
                out.append((.operationCreated(operation.kind), operation.attempt, operation.reference))
                if operation.status != .unknown { out.append((.operation(operation.kind, operation.status), operation.attempt, operation.reference)) }
            }
        }
        let earlierAttempts = Dictionary((before?.attempts ?? []).map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
        var refundsMoved = false
        for attempt in after.attempts {
            let was = earlierAttempts[attempt.reference]
            let refunded = attempt.refundedMinorUnits != (was?.refundedMinorUnits ?? 0)
            refundsMoved = refundsMoved || refunded
            if was?.status != attempt.status || refunded { out.append((.attempt(attempt.status), attempt.reference, nil)) }
        }
        if let before {
            if before.status != after.status || refundsMoved { out.append((.payment(after.status), nil, nil)) }
        } else {
            out.append((.paymentCreated, nil, nil))
            if after.status != .created { out.append((.payment(after.status), nil, nil)) }
        }
        return out
    }

    /// The events a change writes: each change of ``changes(before:after:)`` numbered after `lastSequence`, with the
    /// payment as `after` shows it to the merchant's key as its body.
    package static func events(before: StoredPayment?, after: StoredPayment, lastSequence: Int, now: Date) throws -> [StoredEvent] {
        let changes = changes(before: before, after: after)
        guard !changes.isEmpty else { return [] }
        // The payment is encoded once for all the change's events (most changes write two or three), and each event's
        // body is written around it in one pass.
        let data = CompactJSON.Raw(Array(try encode(PaymentView(after, forMerchant: true))))
        return try changes.enumerated().map { index, change in
            let id = newID(at: now)
            let sequence = lastSequence + index + 1
            let head = Head(id: id, type: change.type, version: 1, merchant: after.merchantID, paymentId: after.id, sequence: sequence,
                            createdAt: now, attempt: change.attempt, operation: change.operation?.rawValue, data: data)
            return StoredEvent(id: id, merchantID: after.merchantID, paymentID: after.id, sequence: sequence, type: change.type,
                               body: Data(try CompactJSON.encode(head)), createdAt: now, nextAttemptAt: now)
        }
    }

    /// `value` as ``encoder`` encodes it: by ``CompactJSON`` (the same bytes, in a fraction of the time; this runs inside
    /// the store's write), or by ``encoder`` itself for a value CompactJSON does not write.
    package static func encode(_ value: some Encodable) throws -> Data {
        do {
            return Data(try CompactJSON.encode(value))
        } catch is CompactJSON.Unsupported {
            return try encoder.encode(value)
        }
    }

    /// `evt_` and a version-7 UUID: its first 48 bits are the time in milliseconds, so ids made later sort later and the
    /// stores' index of ids grows at its end (one page per commit, not one random page per event).
    package static func newID(at now: Date) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        let millis = UInt64(max(0, now.timeIntervalSince1970 * 1_000))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: millis >> (8 * (5 - index))) }
        let random = (generator.next() as UInt64, generator.next() as UInt64)
        for index in 6..<8 { bytes[index] = UInt8(truncatingIfNeeded: random.0 >> (8 * index)) }
        for index in 8..<16 { bytes[index] = UInt8(truncatingIfNeeded: random.1 >> (8 * (index - 8))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)   // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)   // RFC 9562 variant
        let hex = Array("0123456789abcdef".utf8)
        var text = Array("evt_".utf8)
        text.reserveCapacity(40)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A ``WebhookEvent`` with its `data` already encoded (the change's payment, shared by its events): encoded by
    /// ``CompactJSON``, the same bytes as ``encoder`` gives for the whole event (a test holds it to that).
    struct Head: Encodable {
        var id: String, type: EventType, version: Int, merchant: String, paymentId: String, sequence: Int, createdAt: Date
        var attempt: AttemptReference?, operation: String?
        var data: CompactJSON.Raw
    }
}

extension StoreRules.Effect {
    /// The payment as this effect of `report` leaves it: the attempt's status (with the gateway's code and reference),
    /// its refunded total, the open refunds the report settles, the payment's status. Every store writes exactly these
    /// changes; the in-memory store keeps this value, a database store writes its rows and records its events.
    package func applied(to payment: StoredPayment, report: StatusReport, now: Date) -> StoredPayment {
        var payment = payment
        guard let index = payment.attempts.firstIndex(where: { $0.reference == report.attempt }) else { return payment }
        if let status = attemptStatus {
            payment.attempts[index].status = status
            payment.attempts[index].gatewayCode = report.gatewayCode ?? payment.attempts[index].gatewayCode
            payment.attempts[index].gatewayReference = payment.attempts[index].gatewayReference ?? report.gatewayReference
            payment.attempts[index].updatedAt = now
        }
        if let refundedMinorUnits {
            payment.attempts[index].refundedMinorUnits = refundedMinorUnits
            payment.attempts[index].updatedAt = now
        }
        for reference in settledOperations {
            if let at = payment.operations.firstIndex(where: { $0.reference == reference && !$0.status.isFinal }) {
                payment.operations[at].status = .succeeded
                payment.operations[at].updatedAt = now
            }
        }
        if let paymentStatus {
            payment.status = paymentStatus
            payment.updatedAt = now
        }
        return payment
    }
}

extension StoreRules {
    /// What a delivery's result makes of its event: its state, its next attempt, when it was delivered.
    package static func delivery(_ result: DeliveryResult, now: Date) -> (state: EventDeliveryState, next: Date?, delivered: Date?) {
        switch result {
        case .delivered: (.delivered, nil, now)
        case .retry(let at): (.pending, at, nil)
        case .failed: (.failed, nil, nil)
        case .skipped: (.skipped, nil, nil)
        }
    }
}
