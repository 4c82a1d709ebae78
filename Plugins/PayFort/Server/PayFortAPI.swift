import Foundation
import TillGatewayKit
import TillPayFort

/// `FortAPI/paymentApi`, as the server half calls it: ordered JSON in, ordered JSON out.
struct PayFortAPI: Sendable {
    /// The gateway every error is attributed to.
    let gateway: GatewayID
    /// Where requests go.
    let environment: PayFortEnvironment
    private let client: GatewayHTTPClient

    /// The API of `environment`, over `transport`, attributing errors to `gateway`.
    init(gateway: GatewayID, environment: PayFortEnvironment, transport: any HTTPTransport) {
        self.gateway = gateway
        self.environment = environment
        self.client = GatewayHTTPClient(gateway: gateway, transport: transport)
    }

    /// POSTs `parameters` as JSON and parses the JSON answer, keeping its order and refusing a key
    /// that appears twice.
    /// - Throws: ``CheckoutError`` attributed to the gateway: a transport failure as ``GatewayHTTPClient``
    ///   classifies it; `gateway_error` (category `unknown_outcome`) for an HTTP status other than 2xx
    ///   or 400 (PayFort answers refusals with a body); `malformed_body` in category `unknown_outcome`
    ///   for an answer that cannot be read one way only (it was sent, so it may have been processed).
    func post(_ parameters: PayFortParameters) async throws(CheckoutError) -> PayFortParameters {
        let request = TransportRequest(method: .post, url: environment.paymentAPI,
                                       headers: ["Content-Type": "application/json", "Accept": "application/json"],
                                       body: parameters.jsonData(), timeout: .seconds(45))
        let response = try await client.send(request)
        guard (200..<300).contains(response.statusCode) || response.statusCode == 400 else {
            throw CheckoutError(.gatewayError, message: "PayFort answered HTTP \(response.statusCode)", gateway: gateway,
                                gatewayCode: String(response.statusCode))
        }
        return try answer(response.body)
    }

    /// The answer's parameters; synchronous, so its catch stays out of `async` code.
    private func answer(_ body: Data) throws(CheckoutError) -> PayFortParameters {
        do {
            return try PayFortParameters.json(body, field: "answer")
        } catch {
            // Sent, but unreadable (or a key sent twice): the outcome is unknown.
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: error.field,
                                message: "unreadable PayFort answer: \(error.message)", gateway: gateway)
        }
    }
}
