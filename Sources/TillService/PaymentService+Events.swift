import Foundation
import Till
import TillOrchestration

/// Which events `GET /v1/events` asks for, as its query string gives them (each checked, a mistake naming its
/// parameter).
public struct EventListRequest: Sendable, Hashable {
    public var type: String?
    public var paymentID: String?
    public var state: String?
    /// The previous page's `next`.
    public var cursor: String?
    public var limit: String?

    public init(type: String? = nil, paymentID: String? = nil, state: String? = nil, cursor: String? = nil, limit: String? = nil) {
        self.type = type
        self.paymentID = paymentID
        self.state = state
        self.cursor = cursor
        self.limit = limit
    }

    /// The largest page.
    public static let maximumLimit = 200

    /// The store's query, or an error naming the parameter at fault.
    func query() throws -> EventQuery {
        var query = EventQuery()
        if let type {
            guard (1...64).contains(type.utf8.count), type.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "an event type such as payment.paid", field: "type")
            }
            query.type = EventType(rawValue: type)
        }
        if let paymentID {
            // Characters as the document's maxLength counts them: Unicode scalars.
            guard (1...128).contains(paymentID.unicodeScalars.count) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "a payment id", field: "payment")
            }
            query.paymentID = paymentID
        }
        if let state {
            guard let parsed = EventDeliveryState(rawValue: state) else {
                throw ServiceError(status: .badRequest, code: "invalid_field",
                                   message: "one of \(EventDeliveryState.allCases.map(\.rawValue).joined(separator: ", "))", field: "state")
            }
            query.state = parsed
        }
        if let cursor {
            guard let position = Self.position(cursor) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "the next value of a previous page", field: "cursor")
            }
            query.after = position
        }
        if let limit {
            guard let parsed = Int(limit), (1...Self.maximumLimit).contains(parsed) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "1 to \(Self.maximumLimit)", field: "limit")
            }
            query.limit = parsed
        }
        return query
    }

    /// A page's cursor: the last event's position in the store, behind a prefix (opaque to a caller).
    static func cursor(after position: Int64) -> String { "ev\(position)" }

    static func position(_ cursor: String) -> Int64? {
        guard cursor.hasPrefix("ev"), cursor.utf8.count <= 22, let position = Int64(cursor.dropFirst(2)), position >= 0,
              cursor == Self.cursor(after: position) else { return nil }
        return position
    }
}

extension PaymentService {
    /// A page of the merchant's events, oldest first, with the cursor of the next page when there may be one.
    public func events(merchant: MerchantRuntime, request: EventListRequest) async throws -> EventPage {
        let query = try request.query()
        let events = try await store.events(merchant: merchant.configuration.id, query: query)
        let views = try events.map { try EventView($0, attempts: nil) }
        return EventPage(events: views, next: events.count == query.limit ? events.last.map { EventListRequest.cursor(after: $0.position) } : nil)
    }

    /// One of the merchant's events with every try at delivering it.
    public func event(_ id: String, merchant: MerchantRuntime) async throws -> EventView {
        guard let event = try await store.event(id: id, merchant: merchant.configuration.id) else { throw ServiceError.notFound("event") }
        return try EventView(event, attempts: try await store.deliveryAttempts(event: id))
    }

    /// Makes one of the merchant's events pending again, due now (whatever its state): the delivery service posts it
    /// on its next pass, after the payment's earlier events that are still pending.
    public func redeliver(_ id: String, merchant: MerchantRuntime) async throws -> EventView {
        guard let event = try await store.redeliver(event: id, merchant: merchant.configuration.id, now: Date()) else {
            throw ServiceError.notFound("event")
        }
        logger.info("event redelivery requested", metadata: ["event": .string(id), "merchant": .string(merchant.configuration.id)])
        return try EventView(event, attempts: try await store.deliveryAttempts(event: id))
    }
}

extension EventView {
    /// The API's view of a stored event (its body decoded), with its tries when given.
    init(_ event: StoredEvent, attempts: [StoredDeliveryAttempt]?) throws {
        self.init(event: try event.decoded(), state: event.state, attemptCount: event.attemptCount,
                  nextAttemptAt: event.state == .pending ? event.nextAttemptAt : nil, deliveredAt: event.deliveredAt,
                  attempts: attempts?.map { attempt in
                      EventDeliveryAttemptView(endpoint: attempt.endpoint, at: attempt.at, statusCode: attempt.statusCode,
                                               latencyMillis: attempt.latencyMillis, error: attempt.error, excerpt: attempt.excerpt)
                  })
    }
}
