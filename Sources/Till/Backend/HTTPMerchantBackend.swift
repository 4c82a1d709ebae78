import Foundation

/// The app's client for the merchant server (TillServer) for one payment, authenticated by that
/// payment's ``ClientSecret`` — never by the merchant's API key.
///
/// The merchant's own backend creates the payment server to server (with its API key) and hands the
/// answer's client secret to the app. The app then prepares the payment's attempts, submits, reports
/// what it saw, reads the status and asks for inquiries with it; the secret reaches nothing else.
///
/// ```swift
/// // The secret came from the merchant's own backend, which created the payment.
/// let backend = HTTPMerchantBackend(baseURL: URL(string: "https://pay.example.com")!,
///                                   clientSecret: try ClientSecret(secretFromMyBackend),
///                                   transport: URLSessionTransport())
/// let checkout = AppCheckout(backend: backend, gateways: [...], returns: returns, presenter: ui)
/// ```
public struct HTTPMerchantBackend: MerchantBackend {
    public let baseURL: URL
    /// The payment this backend reaches, and the secret for it.
    public let clientSecret: ClientSecret
    private let server: MerchantServerCall

    public init(baseURL: URL, clientSecret: ClientSecret, transport: any HTTPTransport, timeout: Duration = .seconds(30)) {
        self.baseURL = baseURL
        self.clientSecret = clientSecret
        self.server = MerchantServerCall(baseURL: baseURL, bearer: clientSecret.rawValue, transport: transport, timeout: timeout)
    }

    /// The payment's ID, from its client secret.
    public var paymentID: String { clientSecret.paymentID }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs, customerRequested: false)
    }

    /// `POST /v1/payments/{id}/attempts` for the payment the client secret names. The server's stored
    /// intent is the one that is paid; `intent` is the app's copy of it (what the merchant's backend
    /// created), used by the checkout to present the attempt.
    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs, customerRequested: customerRequested, appData: [:])
    }

    /// The same, with what only the app knows (``PrepareRequest/appData``).
    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool,
                        appData: [String: String]) async throws -> Preparation {
        try await server.call(.post, "v1/payments/\(paymentID)/attempts",
                              body: PrepareRequest(returnURLs: returnURLs, customerRequested: customerRequested, appData: appData))
    }

    /// `POST /v1/attempts/{reference}/submit`: the server calls the gateway with the payload and
    /// answers with the app's next step.
    public func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        let answer: SubmitAnswer = try await server.call(.post, "v1/attempts/\(attempt.rawValue)/submit", body: submission)
        return answer.next
    }

    public func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws {
        let _: PaymentView = try await server.call(.post, "v1/attempts/\(attempt.rawValue)/outcome", body: outcome)
    }

    public func status(of attempt: AttemptReference) async throws -> StatusReport? {
        try await (server.call(.get, "v1/attempts/\(attempt.rawValue)", body: Optional<String>.none) as PaymentView).report(of: attempt)
    }

    /// `POST /v1/attempts/{reference}/inquire`: the server asks the gateway and applies the answer.
    public func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        try await (server.call(.post, "v1/attempts/\(attempt.rawValue)/inquire", body: Optional<String>.none) as PaymentView).report(of: attempt)
    }

    /// The payment with its attempts and authoritative status.
    public func payment() async throws -> PaymentView {
        try await server.call(.get, "v1/payments/\(paymentID)", body: Optional<String>.none)
    }
}

/// One JSON call to the merchant server with a bearer credential, its error answers turned into
/// ``CheckoutError``s that say what is known about the money. Shared by the app's client and the
/// merchant backend's, so the two read the server alike.
package struct MerchantServerCall: Sendable {
    package let baseURL: URL
    private let bearer: String
    private let transport: any HTTPTransport
    private let timeout: Duration

    package init(baseURL: URL, bearer: String, transport: any HTTPTransport, timeout: Duration) {
        self.baseURL = baseURL
        self.bearer = bearer
        self.transport = transport
        self.timeout = timeout
    }

    /// - Parameter query: the query string's parameters, in order, each name and value percent-encoded but for
    ///   letters, digits and `-._~` (so a value holding `&`, `=`, `+` or `#` arrives as given).
    package func call<Body: Encodable, Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, body: Body?,
                                                          query: [(name: String, value: String)] = [],
                                                          headers extra: [String: String] = [:]) async throws -> Answer {
        let body = try await callForBody(method, path, body: body, query: query, headers: extra)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(Answer.self, from: body)
        } catch {
            throw CheckoutError(.malformedBody, message: "unreadable answer from the merchant server")
        }
    }

    /// The same call, answering the body as it came (an export); a refusal is thrown as ``call(_:_:body:query:headers:)`` throws it.
    package func callForBody<Body: Encodable>(_ method: TransportRequest.Method, _ path: String, body: Body?,
                                              query: [(name: String, value: String)] = [],
                                              headers extra: [String: String] = [:], accept: String = "application/json") async throws -> Data {
        var headers = ["Authorization": "Bearer \(bearer)", "Accept": accept]
        headers.merge(extra) { _, new in new }
        var data: Data?
        if let body {
            headers["Content-Type"] = "application/json"
            data = try JSONEncoder().encode(body)
        }
        var url = baseURL.appendingPathComponent(path)
        if !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
            components.percentEncodedQuery = query.map { "\(encoded($0.name))=\(encoded($0.value))" }.joined(separator: "&")
            url = components.url ?? url
        }
        let response: TransportResponse
        do {
            response = try await transport.send(TransportRequest(method: method, url: url,
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
        return response.body
    }

    /// The one table from the server's HTTP status to what is known about the money, for an answer without a
    /// `category`: used by the app's client, the merchant backend's client and the in-process backend alike.
    package static func category(status: Int) -> CheckoutError.Category {
        switch status {
        case 400, 404, 409, 413, 422: .invalidInput
        case 401, 403: .configuration
        case 429, 503: .unavailable
        default: .unknownOutcome
        }
    }
}
