// Gateway modules import this kit alone and get the core with it.
@_exported import Till
import Foundation

/// The typed request/response client gateway modules use instead of hand-rolling POST, decoding and
/// failure classification.
///
/// Every failure it reports is a ``CheckoutError`` attributed to ``gateway`` and classified by what
/// it means for the money: `unavailable` only when the gateway provably did nothing, `unknown_outcome`
/// whenever the request may have been processed.
///
/// ```swift
/// let client = GatewayHTTPClient(gateway: gateway, transport: transport)
/// let request = try GatewayHTTPClient.jsonRequest(.post, endpoint, body: charge, gateway: gateway)
/// let answer = try await client.json(request, as: ChargeAnswer.self)
/// ```
public struct GatewayHTTPClient: Sendable {
    /// The gateway every error is attributed to.
    public let gateway: GatewayID
    /// How requests are sent.
    public let transport: any HTTPTransport

    /// A client for `gateway` over `transport`.
    public init(gateway: GatewayID, transport: any HTTPTransport) {
        self.gateway = gateway
        self.transport = transport
    }

    /// What happened to one request, classified by what it means for the money.
    public enum Exchange: Sendable {
        /// The request provably never reached the gateway: nothing happened there.
        case neverSent(TransportError)
        /// No answer in time: the gateway may have processed the request.
        case timedOut(TransportError)
        /// The connection broke, the caller cancelled while it was under way, or the answer was
        /// unreadable: the gateway may have processed the request.
        case lost(TransportError)
        /// The gateway answered, with any HTTP status.
        case answered(TransportResponse)
    }

    /// Sends `request` and says what happened; never throws.
    ///
    /// A task already cancelled does not send at all, and reports ``Exchange/neverSent(_:)``.
    public func exchange(_ request: TransportRequest) async -> Exchange {
        if Task.isCancelled {
            return .neverSent(TransportError(.notSent, "cancelled before the request was sent"))
        }
        switch await deliver(request) {
        case .success(let response):
            return .answered(response)
        case .failure(let failure):
            switch failure.kind {
            case .notSent: return .neverSent(failure)
            case .timedOut: return .timedOut(failure)
            case .connectionLost, .cancelled, .other: return .lost(failure)
            }
        }
    }

    /// Sends `request` and returns the response, whatever its HTTP status.
    ///
    /// A transport failure becomes the ``CheckoutError`` that `TransportError.checkoutError(gateway:)`
    /// gives: category `unavailable` when the request was never sent, `unknown_outcome` otherwise.
    public func send(_ request: TransportRequest) async throws(CheckoutError) -> TransportResponse {
        switch await exchange(request) {
        case .answered(let response):
            return response
        case .neverSent(let failure), .timedOut(let failure), .lost(let failure):
            throw failure.checkoutError(gateway: gateway)
        }
    }

    /// Sends `request`, requires an accepted status, and decodes the body as `Answer`.
    ///
    /// - Parameters:
    ///   - request: the request (see ``jsonRequest(_:_:body:headers:timeout:gateway:)``).
    ///   - as: the type of the answer.
    ///   - accept: the statuses whose body is the answer.
    ///   - definiteFailures: statuses with which the gateway says it did nothing (a refused token, a
    ///     rejected request), so another attempt is safe.
    ///   - decoder: decodes the body.
    ///   - refusal: reads a refused answer's body into the gateway's own error (its code and
    ///     message, and the category that code means), so a module can tell one refusal from
    ///     another; `nil` (or a closure returning `nil`) keeps the generic error below.
    /// - Throws: ``CheckoutError`` attributed to the gateway:
    ///   - a transport failure, as ``send(_:)`` classifies it;
    ///   - a status outside `accept`: `gateway_error` with the status as `gatewayCode`, in category
    ///     `unavailable` when it is one of `definiteFailures` and `unknown_outcome` otherwise;
    ///   - a body that does not decode: `malformed_body` in category `unknown_outcome` (the request
    ///     was sent and may have been processed), naming the decoding path in `field`
    ///     (`body.transaction.amount`, or `body` for the whole).
    public func json<Answer: Decodable>(_ request: TransportRequest, as: Answer.Type, accept: Set<Int> = Set(200..<300),
                                        definiteFailures: Set<Int> = [], decoder: JSONDecoder = JSONDecoder(),
                                        refusal: (@Sendable (TransportResponse) -> CheckoutError?)? = nil)
        async throws(CheckoutError) -> Answer {
        let response = try await send(request)
        let status = response.statusCode
        guard accept.contains(status) else {
            if let read = refusal?(response) { throw read.attributed(to: gateway) }
            if definiteFailures.contains(status) {
                throw CheckoutError(.gatewayError, category: .unavailable,
                                    message: "the gateway answered HTTP \(status), which says the request was not processed",
                                    gateway: gateway, gatewayCode: String(status))
            }
            throw CheckoutError(.gatewayError, category: .unknownOutcome,
                                message: "the gateway answered HTTP \(status); the outcome is unknown",
                                gateway: gateway, gatewayCode: String(status))
        }
        return try decode(Answer.self, from: response.body, status: status, decoder: decoder).get()
    }

    /// Builds a request with a JSON body from `body` (keys sorted, `/` not escaped, so the same value
    /// always gives the same bytes), `Content-Type` and `Accept` set to `application/json` unless
    /// `headers` sets them.
    /// - Parameters:
    ///   - gateway: the gateway an encoding error is attributed to.
    /// - Throws: ``CheckoutError`` `invalid_field` (category `invalid_input`) naming the path of a
    ///   value that cannot be encoded (a non-finite number), as `body.<path>`.
    public static func jsonRequest<Body: Encodable>(_ method: TransportRequest.Method, _ url: URL, body: Body,
                                                    headers: [String: String] = [:], timeout: Duration = .seconds(30),
                                                    gateway: GatewayID? = nil) throws(CheckoutError) -> TransportRequest {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(body)
        } catch let error as EncodingError {
            let path: [any CodingKey]
            switch error {
            case .invalidValue(_, let context): path = context.codingPath
            @unknown default: path = []
            }
            throw CheckoutError(.invalidField, category: .invalidInput, field: renderPath(path),
                                message: "the request body cannot be encoded as JSON", gateway: gateway)
        } catch {
            throw CheckoutError(.invalidField, category: .invalidInput, field: "body",
                                message: "the request body cannot be encoded as JSON", gateway: gateway)
        }
        var allHeaders = headers
        let given = Set(headers.keys.map { $0.lowercased() })
        if !given.contains("content-type") { allHeaders["Content-Type"] = "application/json" }
        if !given.contains("accept") { allHeaders["Accept"] = "application/json" }
        return TransportRequest(method: method, url: url, headers: allHeaders, body: data, timeout: timeout)
    }

    // MARK: Plumbing

    /// The transport's answer as a `Result`, which keeps typed transport errors out of `async` catch
    /// blocks (Swift 6.3.1's ownership verifier trips over them).
    private func deliver(_ request: TransportRequest) async -> Result<TransportResponse, TransportError> {
        do {
            return .success(try await transport.send(request))
        } catch {
            return .failure(error)
        }
    }

    /// Decodes an answered body; synchronous, so its catch blocks stay out of `async` code.
    /// Decodes an answered response's body as `Answer` with the same rules as ``json(_:as:accept:definiteFailures:decoder:refusal:)``:
    /// an undecodable body is `malformed_body` in category `unknown_outcome`, naming the decoding path.
    public func decodeAnswer<Answer: Decodable>(_ response: TransportResponse, as type: Answer.Type,
                                                decoder: JSONDecoder = JSONDecoder()) throws(CheckoutError) -> Answer {
        try decode(type, from: response.body, status: response.statusCode, decoder: decoder).get()
    }

    private func decode<Answer: Decodable>(_ type: Answer.Type, from body: Data, status: Int,
                                           decoder: JSONDecoder) -> Result<Answer, CheckoutError> {
        do {
            return .success(try decoder.decode(Answer.self, from: body))
        } catch let error as DecodingError {
            let path: [any CodingKey]
            let problem: String
            switch error {
            case .keyNotFound(let key, let context):
                path = context.codingPath + [key]
                problem = "a required value is missing"
            case .valueNotFound(_, let context):
                path = context.codingPath
                problem = "a required value is null"
            case .typeMismatch(_, let context):
                path = context.codingPath
                problem = "a value has the wrong type"
            case .dataCorrupted(let context):
                path = context.codingPath
                problem = path.isEmpty ? "the body is not valid JSON" : "a value is invalid"
            @unknown default:
                path = []
                problem = "the body cannot be read"
            }
            return .failure(malformedAnswer(field: Self.renderPath(path), status: status, problem: problem))
        } catch {
            return .failure(malformedAnswer(field: "body", status: status, problem: "the body cannot be read"))
        }
    }

    private func malformedAnswer(field: String, status: Int, problem: String) -> CheckoutError {
        CheckoutError(.malformedBody, category: .unknownOutcome, field: field,
                      message: "the gateway's answer (HTTP \(status)) cannot be read: \(problem); the outcome is unknown",
                      gateway: gateway)
    }

    /// The field a decoding error names, as ``decodeAnswer(_:as:decoder:)`` names it (`body.transaction.amount`,
    /// `body.items[2]`; `body` for an error that is not a decoding error), for modules that decode a body
    /// themselves (a notification).
    public static func fieldPath(of error: any Error) -> String {
        guard let error = error as? DecodingError else { return "body" }
        switch error {
        case .keyNotFound(let key, let context): return renderPath(context.codingPath + [key])
        case .valueNotFound(_, let context), .typeMismatch(_, let context), .dataCorrupted(let context): return renderPath(context.codingPath)
        @unknown default: return "body"
        }
    }

    /// A coding path as `body.transaction.amount` or `body.items[2]`.
    static func renderPath(_ path: [any CodingKey]) -> String {
        var text = "body"
        for key in path {
            if let offset = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == String(offset) {
                text += "[\(offset)]"
            } else {
                text += ".\(key.stringValue)"
            }
        }
        return text
    }
}
