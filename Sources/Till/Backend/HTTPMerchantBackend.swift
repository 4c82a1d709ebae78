import Foundation

/// The app's client for the merchant server (TillServer), over any ``HTTPTransport``.
///
/// `prepare` creates the payment (idempotently, keyed by the merchant reference, so an app that
/// retries after a lost answer gets the same payment) and then prepares its next attempt. The API key
/// identifies the merchant; an app should use a key scoped to it, never a gateway secret.
///
/// ```swift
/// let backend = HTTPMerchantBackend(baseURL: URL(string: "https://pay.example.com")!, apiKey: appKey,
///                                   transport: URLSessionTransport())
/// let checkout = AppCheckout(backend: backend, gateways: [...], returns: returns, presenter: ui)
/// ```
public struct HTTPMerchantBackend: MerchantBackend {
    public let baseURL: URL
    private let apiKey: String
    private let transport: any HTTPTransport
    private let timeout: Duration

    public init(baseURL: URL, apiKey: String, transport: any HTTPTransport, timeout: Duration = .seconds(30)) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.transport = transport
        self.timeout = timeout
    }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs, customerRequested: false)
    }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation {
        let payment: PaymentView = try await call(.post, "v1/payments", body: intent,
                                                  headers: ["Idempotency-Key": "intent-\(intent.merchantReference)"])
        return try await call(.post, "v1/payments/\(payment.id)/attempts",
                              body: PrepareRequest(returnURLs: returnURLs, customerRequested: customerRequested))
    }

    /// `POST /v1/attempts/{reference}/submit`: the server calls the gateway with the payload and
    /// answers with the app's next step.
    public func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        let answer: SubmitAnswer = try await call(.post, "v1/attempts/\(attempt.rawValue)/submit", body: submission)
        return answer.next
    }

    public func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws {
        let _: PaymentView = try await call(.post, "v1/attempts/\(attempt.rawValue)/outcome", body: outcome)
    }

    public func status(of attempt: AttemptReference) async throws -> StatusReport? {
        Self.report(of: attempt, in: try await call(.get, "v1/attempts/\(attempt.rawValue)", body: Optional<String>.none))
    }

    /// `POST /v1/attempts/{reference}/inquire`: the server asks the gateway and applies the answer.
    public func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        Self.report(of: attempt, in: try await call(.post, "v1/attempts/\(attempt.rawValue)/inquire", body: Optional<String>.none))
    }

    /// The server's view of one attempt as a report.
    private static func report(of attempt: AttemptReference, in payment: PaymentView) -> StatusReport? {
        guard let view = payment.attempts.first(where: { $0.reference == attempt }) else { return nil }
        return StatusReport(gateway: view.gateway, attempt: attempt, gatewayReference: view.gatewayReference,
                            status: view.status, amount: payment.amount, gatewayCode: view.gatewayCode)
    }

    /// The payment with its attempts and authoritative status.
    public func payment(id: String) async throws -> PaymentView {
        try await call(.get, "v1/payments/\(id)", body: Optional<String>.none)
    }

    private func call<Body: Encodable, Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, body: Body?,
                                                         headers extra: [String: String] = [:]) async throws -> Answer {
        var headers = ["Authorization": "Bearer \(apiKey)", "Accept": "application/json"]
        headers.merge(extra) { _, new in new }
        var data: Data?
        if let body {
            headers["Content-Type"] = "application/json"
            data = try JSONEncoder().encode(body)
        }
        let response: TransportResponse
        do {
            response = try await transport.send(TransportRequest(method: method, url: baseURL.appendingPathComponent(path),
                                                            headers: headers, body: data, timeout: timeout))
        } catch {
            throw error.checkoutError(gateway: "merchant-server")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard (200..<300).contains(response.statusCode) else {
            let detail = (try? decoder.decode(ErrorBody.self, from: response.body))?.error
            // The server says what is known about the money; only without that does the HTTP status decide.
            let category = detail?.category.flatMap(CheckoutError.Category.init(rawValue:)) ?? Self.category(status: response.statusCode)
            throw CheckoutError(CheckoutError.Code(rawValue: detail?.code ?? "http_\(response.statusCode)"),
                                category: category, field: detail?.field,
                                message: detail?.message ?? "the merchant server answered \(response.statusCode)")
        }
        do {
            return try decoder.decode(Answer.self, from: response.body)
        } catch {
            throw CheckoutError(.malformedBody, message: "unreadable answer from the merchant server")
        }
    }

    static func category(status: Int) -> CheckoutError.Category {
        switch status {
        case 400, 404, 409, 413, 422: .invalidInput
        case 401, 403: .configuration
        case 503: .unavailable
        default: .unknownOutcome
        }
    }
}
