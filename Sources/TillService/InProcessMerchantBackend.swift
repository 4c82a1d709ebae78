import Foundation
import Till
import TillOrchestration

/// The app's ``MerchantBackend`` over the merchant server's own logic, in-process: what
/// `HTTPMerchantBackend` does over HTTP, without the HTTP. Each call goes to ``PaymentService`` (the
/// type the HTTP application adapts), and a refusal comes back as the ``CheckoutError`` the HTTP client
/// would have made of the same answer: the server's `category` when it says what is known about the
/// money, otherwise the HTTP status decides, by the same table.
public struct InProcessMerchantBackend: MerchantBackend {
    /// The server logic the calls go to.
    public let service: PaymentService
    /// The merchant the app belongs to (the one its API key would name).
    public let merchant: MerchantRuntime
    /// Runs before every call reaches the server (the chaos run delivers the gateways' notifications
    /// here, so they arrive between the app's requests, in a repeatable order).
    private let beforeEachCall: @Sendable () async -> Void
    /// Told each payment the server created or replayed: its merchant reference and its id.
    private let onPayment: @Sendable (String, String) -> Void
    /// Told each failure that is not a refusal (the HTTP adapter's 500 `internal`).
    private let onInternalError: @Sendable (any Error) -> Void

    /// - Parameters:
    ///   - service: the server logic.
    ///   - merchant: the merchant whose payments these are (`service.state.merchant(id:)`).
    ///   - beforeEachCall: runs before each call; nothing by default.
    ///   - onPayment: told the merchant reference and id of each payment created or replayed.
    ///   - onInternalError: told each failure that is not a refusal (a store error), which the HTTP
    ///     adapter would have answered with 500 `internal`.
    public init(service: PaymentService, merchant: MerchantRuntime,
                beforeEachCall: @escaping @Sendable () async -> Void = {},
                onPayment: @escaping @Sendable (String, String) -> Void = { _, _ in },
                onInternalError: @escaping @Sendable (any Error) -> Void = { _ in }) {
        self.service = service
        self.merchant = merchant
        self.beforeEachCall = beforeEachCall
        self.onPayment = onPayment
        self.onInternalError = onInternalError
    }

    /// Creates the payment (idempotently) and prepares its next attempt, at the server's initiative.
    public func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs, customerRequested: false)
    }

    /// Creates the payment (idempotently, keyed by the merchant reference, as the HTTP client does) and
    /// prepares its next attempt.
    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation {
        await beforeEachCall()
        let payment = try await mapped {
            try await service.createPayment(intent, merchant: merchant, idempotencyKey: "intent-\(intent.merchantReference)").payment
        }
        onPayment(intent.merchantReference, payment.id)
        return try await mapped {
            try await service.prepare(paymentID: payment.id, merchant: merchant,
                                      request: PrepareRequest(returnURLs: returnURLs, customerRequested: customerRequested))
        }
    }

    /// The server's submit step: it calls the attempt's gateway with the payload, once.
    public func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        await beforeEachCall()
        return try await mapped { try await service.submit(submission, attempt: attempt, merchant: merchant).next }
    }

    /// Records what the app saw (informational).
    public func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws {
        await beforeEachCall()
        _ = try await mapped { try await service.reportOutcome(outcome, attempt: attempt, merchant: merchant) }
    }

    /// The attempt's authoritative status, as the server holds it.
    public func status(of attempt: AttemptReference) async throws -> StatusReport? {
        await beforeEachCall()
        return try await mapped { try await service.payment(attempt: attempt, merchant: merchant) }.report(of: attempt)
    }

    /// The server inquires the attempt's gateway now and answers with the status afterwards.
    public func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        await beforeEachCall()
        return try await mapped { try await service.inquire(attempt: attempt, merchant: merchant) }.report(of: attempt)
    }

    /// Runs a server call and maps a refusal the way the HTTP client maps the answer it would have been.
    private func mapped<T>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as ServiceError {
            throw Self.checkoutError(error)
        } catch {
            onInternalError(error)
            // The HTTP adapter answers anything else with 500 `internal`, which the client reads as unknown.
            throw CheckoutError("internal", category: .unknownOutcome, message: "the server could not complete the request")
        }
    }

    /// The ``CheckoutError`` the HTTP client makes of a refusal: the server's category when it gave one, otherwise
    /// the HTTP status's, by the one table the app's client reads the server with (``MerchantServerCall``).
    public static func checkoutError(_ error: ServiceError) -> CheckoutError {
        CheckoutError(CheckoutError.Code(rawValue: error.code), category: error.category ?? MerchantServerCall.category(status: error.status.code),
                      field: error.field, message: error.message)
    }
}
