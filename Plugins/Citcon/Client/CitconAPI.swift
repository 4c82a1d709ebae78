import Foundation
import TillGatewayKit

/// Citcon's REST API as both halves call it: one request with a bearer token, Citcon's answer
/// envelope read, and Citcon's failures turned into typed errors. The app calls it with the client
/// token it was handed; the server with its own tokens (see `CitconServer`).
package struct CitconAPI: Sendable {
    /// The gateway every error is attributed to.
    package let gateway: GatewayID
    /// Where the API is.
    package let environment: CitconEnvironment
    /// Sends requests and classifies transport failures.
    package let client: GatewayHTTPClient

    /// The code of an HTTP 401 answer: the token was refused and nothing was processed.
    package static let tokenRefused: CheckoutError.Code = "citcon_token_refused"

    /// A client of `environment` for `gateway`, over `transport`.
    package init(gateway: GatewayID, environment: CitconEnvironment, transport: any HTTPTransport) {
        self.gateway = gateway
        self.environment = environment
        self.client = GatewayHTTPClient(gateway: gateway, transport: transport)
    }

    /// Calls `path` with `bearer` and returns the payload of Citcon's answer.
    ///
    /// A JSON body is written with sorted keys and unescaped slashes; a request without a body (a
    /// `GET`) carries the same headers and no body.
    /// - Throws: ``CheckoutError``: the transport's failure as ``GatewayHTTPClient/send(_:)`` classifies
    ///   it, or Citcon's refusal (see ``decodeAnswer(_:as:)``).
    package func send<Body: Encodable, Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, body: Body?,
                                                          as: Answer.Type, bearer: String) async throws -> Answer {
        let url = environment.endpoint(path)
        let authorization = ["Authorization": "Bearer \(bearer)"]
        let request: TransportRequest
        if let body {
            request = try GatewayHTTPClient.jsonRequest(method, url, body: body, headers: authorization, timeout: .seconds(30), gateway: gateway)
        } else {
            request = TransportRequest(method: method, url: url,
                                       headers: authorization.merging(["Content-Type": "application/json", "Accept": "application/json"]) { $1 },
                                       body: nil, timeout: .seconds(30))
        }
        let response = try await client.send(request)
        return try decodeAnswer(response, as: Answer.self)
    }

    /// Calls `path` without a body (a `GET`).
    package func send<Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, as: Answer.Type,
                                         bearer: String) async throws -> Answer {
        try await send(method, path, body: Optional<CitconNoBody>.none, as: Answer.self, bearer: bearer)
    }

    /// Reads Citcon's envelope: the payload of a success, a typed error for a failure.
    ///
    /// Only an HTTP 401 is ``tokenRefused`` (the one answer a caller may resend after refreshing its
    /// token); a `fail` envelope with HTTP 200 is never one, whatever code it carries. A success whose
    /// `data` cannot be read is `malformed_body` (category `unknownOutcome`) naming the path.
    package func decodeAnswer<Answer: Decodable>(_ response: TransportResponse, as: Answer.Type) throws(CheckoutError) -> Answer {
        let decoder = JSONDecoder()
        if (200..<300).contains(response.statusCode) {
            let probe = try? decoder.decode(CitconEnvelopeStatus.self, from: response.body)
            if probe?.status == "success" {
                return try client.decodeAnswer(response, as: CitconEnvelope<Answer>.self).data
            }
            if let failure = try? decoder.decode(CitconEnvelope<CitconFailure>.self, from: response.body), failure.status != "success" {
                throw error(for: response.statusCode, failure.data)
            }
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "body", message: "unreadable Citcon answer", gateway: gateway)
        }
        let failure = (try? decoder.decode(CitconEnvelope<CitconFailure>.self, from: response.body))?.data
        throw error(for: response.statusCode, failure)
    }

    /// The codes of a repeated `transaction.reference`: `4100` as the sandbox answers it (HTTP 400,
    /// "duplicate request"); the iOS SDK guide gives `4000` beside the same message, so `4000` counts
    /// only with that message.
    package static func isDuplicateReference(_ failure: CitconFailure?) -> Bool {
        guard let code = failure?.code else { return false }
        if code == "4100" { return true }
        return code == "4000" && failure?.message?.lowercased().contains("duplicate") == true
    }

    /// The error for a failed answer with HTTP `status`.
    func error(for status: Int, _ failure: CitconFailure?) -> CheckoutError {
        let code = failure?.code ?? String(status)
        let message = GatewayText.safe(failure?.message, limit: 200)
        switch status {
        case 401:
            // Only a real HTTP 401 means "not processed, token refused": the one answer that is retried.
            return CheckoutError(Self.tokenRefused, category: .configuration, message: "Citcon refused the access token",
                                 gateway: gateway, gatewayCode: failure?.code ?? "4010", gatewayMessage: message)
        case 403:
            return CheckoutError(.misconfigured, category: .configuration, message: "the access token may not do this",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        case 404:
            return CheckoutError(.unknownOutcome, message: "Citcon does not know this transaction", gateway: gateway,
                                 gatewayCode: code, gatewayMessage: message)
        case 400..<500 where Self.isDuplicateReference(failure):
            return CheckoutError(.invalidField, category: .invalidInput, field: "citcon.transaction.reference",
                                 message: "Citcon already has a transaction with this reference", gateway: gateway,
                                 gatewayCode: code, gatewayMessage: message)
        case 400..<500 where code == "4202":
            // The sandbox's answer (HTTP 406) to a refund of a charge that was never paid.
            return CheckoutError(.declined, category: .declinedHard, message: "Citcon refused the refund", gateway: gateway,
                                 gatewayCode: code, gatewayMessage: message)
        case 400..<500:
            // A validation message that starts with a field path ("transaction.amount: …") names it.
            let field = message.flatMap { text -> String? in
                guard let colon = text.firstIndex(of: ":") else { return nil }
                let path = text[..<colon]
                return path.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" }) && !path.isEmpty ? "citcon." + path : nil
            }
            return CheckoutError(.invalidField, category: .invalidInput, field: field, message: "Citcon refused the request",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        default:
            return CheckoutError(.gatewayError, category: .unknownOutcome, message: "Citcon answered HTTP \(status)", gateway: gateway,
                                 gatewayCode: code, gatewayMessage: message)
        }
    }

    /// `seconds` of a duration, as a `TimeInterval`.
    package static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// The body of a request that has none.
package struct CitconNoBody: Encodable, Sendable {}

/// The `status` of an envelope, read before its `data`.
struct CitconEnvelopeStatus: Decodable {
    var status: String
}
