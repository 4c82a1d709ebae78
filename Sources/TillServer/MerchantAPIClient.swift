import Foundation
import Till
import TillService

/// The merchant backend's client for the merchant server, with the merchant API key: server-to-server
/// only (the key never goes into an app). It creates payments — each answer carries the payment's
/// ``ClientSecret`` for the app — and reads any of the merchant's payments.
///
/// ```swift
/// // In the merchant's backend, when the app asks to pay for an order:
/// let api = MerchantAPIClient(baseURL: tillServerURL, apiKey: merchantKey, transport: URLSessionTransport())
/// let payment = try await api.createPayment(intent, idempotencyKey: "order-\(order.id)")
/// respond(with: payment.clientSecret)   // the app's HTTPMerchantBackend uses it
/// ```
public struct MerchantAPIClient: Sendable {
    private let server: MerchantServerCall

    public init(baseURL: URL, apiKey: String, transport: any HTTPTransport, timeout: Duration = .seconds(30)) {
        server = MerchantServerCall(baseURL: baseURL, bearer: apiKey, transport: transport, timeout: timeout)
    }

    /// `POST /v1/payments`: creates the payment (idempotently by `idempotencyKey`). The answer's
    /// ``PaymentView/clientSecret`` is for the app; every answer, a replay too, issues a new one and the
    /// earlier one stops working.
    public func createPayment(_ intent: PaymentIntent, idempotencyKey: String? = nil) async throws -> PaymentView {
        try await server.call(.post, "v1/payments", body: intent, headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
    }

    /// `GET /v1/payments/{id}`.
    public func payment(id: String) async throws -> PaymentView {
        try await server.call(.get, "v1/payments/\(id)", body: Optional<String>.none)
    }

    /// `GET /v1/attempts/{reference}`: the payment an attempt belongs to.
    public func payment(attempt: AttemptReference) async throws -> PaymentView {
        try await server.call(.get, "v1/attempts/\(attempt.rawValue)", body: Optional<String>.none)
    }

    /// `POST /v1/payments/{id}/captures`, `/voids` or `/refunds`: one operation on the payment, idempotent by
    /// `idempotencyKey` (required: a retry after a lost answer must carry the same key, and is then answered from
    /// the server's store, never sent to the gateway again). Returns the operation when it succeeded or is pending.
    /// - Throws: ``CheckoutError`` with the server's code: `operation_declined` (402), a money rule (409,
    ///   `amount_exceeds_captured`, …), `unsupported_action` naming the capability (422), `unknown_outcome` (502:
    ///   settled later by inquiry; read it with ``operation(id:)``).
    public func operate(_ kind: OperationKind, paymentID: String, command: OperationCommand = OperationCommand(),
                        idempotencyKey: String) async throws -> OperationView {
        let route = switch kind {
        case .capture: "captures"
        case .void: "voids"
        case .refund: "refunds"
        }
        return try await server.call(.post, "v1/payments/\(paymentID)/\(route)", body: command, headers: ["Idempotency-Key": idempotencyKey])
    }

    /// `GET /v1/operations/{id}`: one capture, void or refund.
    public func operation(id: String) async throws -> OperationView {
        try await server.call(.get, "v1/operations/\(id)", body: Optional<String>.none)
    }

    /// `POST /v1/operations/{id}/inquire`: asks the gateway about an open operation now (never sends it again).
    public func inquireOperation(id: String) async throws -> OperationView {
        try await server.call(.post, "v1/operations/\(id)/inquire", body: Optional<String>.none)
    }

    /// `GET /v1/events`: a page of the merchant's events, oldest first (the order they were recorded in). Each filter
    /// given must hold; pass the answer's ``EventPage/next`` as `cursor` for the following page, until it is `nil`.
    /// - Parameters:
    ///   - type: an event type (`payment.paid`, `refund.succeeded`; see ``EventType``).
    ///   - payment: one payment's events only, in their `sequence` order.
    ///   - state: only events whose delivery is in this state (`failed`: what needs the merchant's attention).
    ///   - cursor: the previous page's ``EventPage/next``.
    ///   - limit: at most this many (1 to 200; the server's default is 50).
    /// - Throws: ``CheckoutError`` with the server's code: `invalid_field` naming the parameter at fault (`limit`,
    ///   `cursor`, …).
    public func events(type: EventType? = nil, payment: String? = nil, state: EventDeliveryState? = nil, cursor: String? = nil,
                       limit: Int? = nil) async throws -> EventPage {
        var query: [(name: String, value: String)] = []
        if let type { query.append(("type", type.rawValue)) }
        if let payment { query.append(("payment", payment)) }
        if let state { query.append(("state", state.rawValue)) }
        if let cursor { query.append(("cursor", cursor)) }
        if let limit { query.append(("limit", String(limit))) }
        return try await server.call(.get, "v1/events", body: Optional<String>.none, query: query)
    }

    /// `GET /v1/payments`: a page of the merchant's payments, newest first. `filters` are the search's parameters by
    /// name (`status`, `gateway`, `method`, `currency`, `amountMin`, `amountMax`, `merchantReference`, `customerEmail`,
    /// `createdFrom`, `createdTo`, `limit`, `cursor`; see ``PaymentSearchRequest``); pass the answer's
    /// ``PaymentSearchPage/nextCursor`` as `cursor` for the following page, until it is `nil`.
    /// - Throws: ``CheckoutError`` `invalid_field` or `duplicate_field` naming the parameter at fault.
    public func searchPayments(_ filters: [String: String] = [:]) async throws -> PaymentSearchPage {
        try await server.call(.get, "v1/payments", body: Optional<String>.none, query: filters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// `GET /v1/payments/export`: every payment the filters match (those of ``searchPayments(_:)`` but `limit` and
    /// `cursor`), as CSV or NDJSON.
    public func exportPayments(format: String, filters: [String: String] = [:]) async throws -> Data {
        try await server.callForBody(.get, "v1/payments/export", body: Optional<String>.none,
                                     query: [("format", format)] + filters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                                     accept: format == "csv" ? "text/csv" : "application/x-ndjson")
    }

    /// `GET /v1/events/{id}`: one of the merchant's events, with every try at delivering it
    /// (``EventView/attempts``: the endpoint, the time, the receiver's status or why there was none, the latency, the
    /// start of its answer).
    /// - Throws: ``CheckoutError`` `not_found` for an event that is not the merchant's.
    public func event(_ id: String) async throws -> EventView {
        try await server.call(.get, "v1/events/\(id)", body: Optional<String>.none)
    }

    /// `POST /v1/events/{id}/redeliver`: makes the event pending again and due now, whatever its state (a `failed`
    /// event after the receiver was fixed, a `delivered` one the receiver lost). The delivery service posts it on its
    /// next pass, after any earlier event of the same payment that is still pending; the answer is the event as it now
    /// stands, before that post.
    /// - Throws: ``CheckoutError`` `not_found` for an event that is not the merchant's.
    public func redeliver(_ id: String) async throws -> EventView {
        try await server.call(.post, "v1/events/\(id)/redeliver", body: Optional<String>.none)
    }

    /// `POST /v1/payments` then the app's backend for it: what a test or a demo that plays both the
    /// merchant's backend and the app needs.
    public func appBackend(for intent: PaymentIntent, idempotencyKey: String? = nil,
                           transport: any HTTPTransport) async throws -> HTTPMerchantBackend {
        let payment = try await createPayment(intent, idempotencyKey: idempotencyKey)
        guard let secret = payment.clientSecret else {
            throw CheckoutError(.malformedBody, field: "clientSecret", message: "the server answered without a client secret")
        }
        return HTTPMerchantBackend(baseURL: server.baseURL, clientSecret: secret, transport: transport)
    }
}

/// An app's ``MerchantBackend`` for a demo or a test that plays both the merchant's backend and the
/// app: the first prepare of an intent asks the merchant's backend (``MerchantAPIClient``, with the
/// API key) to create the payment, and from then on every call the app makes for that payment goes
/// through an ``HTTPMerchantBackend`` holding only its client secret — exactly what a real app sees.
package actor ClientSecretBackend: MerchantBackend {
    private let merchant: MerchantAPIClient
    private let transport: any HTTPTransport
    private var byReference: [String: HTTPMerchantBackend] = [:]
    private var byAttempt: [AttemptReference: HTTPMerchantBackend] = [:]

    package init(merchant: MerchantAPIClient, transport: any HTTPTransport) {
        self.merchant = merchant
        self.transport = transport
    }

    /// The app's backend for the payment of `intent`, created by the merchant's backend on first use.
    package func backend(for intent: PaymentIntent) async throws -> HTTPMerchantBackend {
        if let known = byReference[intent.merchantReference] { return known }
        let backend = try await merchant.appBackend(for: intent, idempotencyKey: "intent-\(intent.merchantReference)", transport: transport)
        byReference[intent.merchantReference] = backend
        return backend
    }

    package func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs, customerRequested: false)
    }

    package func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs, customerRequested: customerRequested, appData: [:])
    }

    package func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool,
                        appData: [String: String]) async throws -> Preparation {
        let backend = try await backend(for: intent)
        let preparation = try await backend.prepare(intent, returnURLs: returnURLs, customerRequested: customerRequested, appData: appData)
        byAttempt[preparation.attempt] = backend
        return preparation
    }

    package func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        try await backend(of: attempt).submit(submission, for: attempt)
    }

    package func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws {
        try await backend(of: attempt).report(outcome, for: attempt)
    }

    package func status(of attempt: AttemptReference) async throws -> StatusReport? {
        try await backend(of: attempt).status(of: attempt)
    }

    package func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        try await backend(of: attempt).inquire(attempt)
    }

    /// The payment an attempt of this app belongs to, read with its client secret.
    package func payment(of attempt: AttemptReference) async throws -> PaymentView {
        try await backend(of: attempt).payment()
    }

    private func backend(of attempt: AttemptReference) throws -> HTTPMerchantBackend {
        guard let backend = byAttempt[attempt] else {
            throw CheckoutError(.attemptNotFound, field: "attempt", message: "this app prepared no such attempt")
        }
        return backend
    }
}
