// Plugins/Toy/Server/ToyServer.swift in a real module: the credentialed half.
// (A real server target also has ToyServerModule.swift with `@_exported import TillToy`.)

import Crypto
import Foundation
import TillGatewayKit
import TillOrchestration

/// Toy Pay's signatures: HMAC-SHA256 keyed with the account's secret key, in lower-case hex.
public struct ToySignature: Sendable {
    private let secret: Data
    private var key: SymmetricKey { SymmetricKey(data: secret) }

    public init(secret: String) {
        self.secret = Data(secret.utf8)
    }

    /// What a request's signature covers: `METHOD "\n" PATH "\n" BODY`.
    public static func requestMessage(method: String, path: String, body: Data) -> Data {
        Data("\(method)\n\(path)\n".utf8) + body
    }

    /// The lower-case hex signature of `message` (a request's message, or a notification's body).
    public func sign(_ message: Data) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: message, using: key))
    }

    /// Whether `signature` (hex) is the signature of `message`, compared in constant time.
    public func isValid(_ signature: String, for message: Data) -> Bool {
        guard let given = Hex.decode(signature) else { return false }
        return ConstantTime.equals(given, Array(HMAC<SHA256>.authenticationCode(for: message, using: key)))
    }
}

/// Toy Pay's server half: creates orders, verifies notifications, inquires.
public struct ToyServer: GatewayServerHalf {
    /// Toy Pay's production base URL.
    public static let production = URL(string: "https://api.toypay.example/toy")!

    public let gateway: GatewayID
    public var capabilities: GatewayCapabilities { ToyGateway.capabilities }
    private let keyID: String
    private let signer: ToySignature
    private let baseURL: URL
    private let client: GatewayHTTPClient

    public init(id: GatewayID, keyID: String, secret: String, baseURL: URL, transport: any HTTPTransport) {
        self.gateway = id
        self.keyID = keyID
        self.signer = ToySignature(secret: secret)
        self.baseURL = baseURL
        self.client = GatewayHTTPClient(gateway: id, transport: transport)
    }

    // MARK: Prepare

    /// Toy Pay needs somewhere to send the customer back: the first URL the app offered.
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? {
        guard let first = offered.first else {
            throw CheckoutError(.missingField, field: "returnURLs", message: "Toy Pay's payment page needs a return URL", gateway: gateway)
        }
        return first
    }

    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        guard let returnURL = context.returnURL else {
            throw CheckoutError(.missingField, field: "returnURLs", message: "Toy Pay's payment page needs a return URL", gateway: gateway)
        }
        let body = ToyOrderRequest(reference: context.attempt.rawValue, amount: context.intent.amount.minorUnits,
                                   currency: context.intent.amount.currency.code, returnURL: returnURL.absoluteString,
                                   notifyURL: context.notificationURL?.absoluteString)
        let request = try signed(GatewayHTTPClient.jsonRequest(.post, baseURL.appendingPathComponent("v1/orders"), body: body, gateway: gateway))
        let response = try await client.send(request)
        guard response.statusCode == 201 else { throw failure(response) }
        let order = try decode(ToyOrder.self, response)
        guard order.reference == context.attempt.rawValue else {
            throw CheckoutError(.unknownOutcome, message: "Toy Pay answered about another order", gateway: gateway)
        }
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method, amount: context.intent.amount,
                           gatewayReference: order.order, parameters: [ToyGateway.payURLParameter: order.payURL],
                           returnURL: returnURL)
    }

    // MARK: Confirm

    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        guard let signature = notification.headers["toy-signature"] else {
            throw CheckoutError(.signatureMismatch, field: "toy-signature", message: "unsigned notification", gateway: gateway)
        }
        guard signer.isValid(signature, for: notification.body) else {
            throw CheckoutError(.signatureMismatch, field: "toy-signature", message: "the signature does not match the body", gateway: gateway)
        }
        let json = try OrderedJSON.parse(notification.body, field: "body")
        func text(_ key: String) throws(CheckoutError) -> String {
            guard let value = json[key]?.stringValue, !value.isEmpty else {
                throw CheckoutError(.malformedBody, field: "body.\(key)", message: "missing or not a string", gateway: gateway)
            }
            return value
        }
        let reference = try text("reference"), raw = try text("status"), event = try text("event"), order = try text("order")
        let amount = try money(minor: json["amount"]?.numberText, currency: json["currency"]?.stringValue)
        let status = ToyGateway.status(raw)
        return VerifiedNotification(report: StatusReport(
            gateway: gateway, attempt: AttemptReference(rawValue: reference), gatewayReference: order, status: status,
            amount: amount, gatewayStatus: raw, eventID: event))
    }

    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? OrderedJSON.parse(notification.body))?["reference"]?.stringValue.map(AttemptReference.init(rawValue:))
    }

    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        let url = baseURL.appendingPathComponent("v1/orders").appendingPathComponent(query.attempt.rawValue)
        let request = signed(TransportRequest(method: .get, url: url, headers: ["Accept": "application/json"]))
        let response = try await client.send(request)
        guard response.statusCode == 200 else { throw failure(response) }
        let order = try decode(ToyOrder.self, response)
        guard order.reference == query.attempt.rawValue else {
            throw CheckoutError(.unknownOutcome, message: "Toy Pay answered about another order", gateway: gateway)
        }
        return StatusReport(gateway: gateway, attempt: query.attempt, gatewayReference: order.order, status: ToyGateway.status(order.status),
                            amount: try money(minor: String(order.amount), currency: order.currency), gatewayStatus: order.status,
                            eventID: "\(order.order):inquiry:\(order.status)")
    }

    // MARK: Plumbing

    /// `request` with `Toy-Key` and `Toy-Signature` over its method, path and body.
    private func signed(_ request: TransportRequest) -> TransportRequest {
        var request = request
        let message = ToySignature.requestMessage(method: request.method.rawValue, path: request.url.path, body: request.body ?? Data())
        request.headers["Toy-Key"] = keyID
        request.headers["Toy-Signature"] = signer.sign(message)
        return request
    }

    /// What a non-success answer says about the money, as Toy Pay documents it.
    private func failure(_ response: TransportResponse) -> CheckoutError {
        let detail = try? JSONDecoder().decode(ToyErrorAnswer.self, from: response.body).error
        let code = detail?.code ?? String(response.statusCode)
        let message = GatewayText.safe(detail?.message)
        switch (response.statusCode, code) {
        case (400, "invalid_request"):
            // A definite refusal: nothing was created.
            return CheckoutError(.invalidField, field: "body", message: "Toy Pay refused the order",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        case (401, _):
            return CheckoutError(.misconfigured, field: "credentials", message: "Toy Pay refused the key or the signature",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        case (404, "not_found"):
            return CheckoutError(.invalidField, field: "attempt", message: "Toy Pay has no order with this reference",
                                 gateway: gateway, gatewayCode: code)
        case (503, "unavailable"):
            // Documented as "not processed".
            return CheckoutError(.gatewayError, category: .unavailable, message: "Toy Pay did not process the request",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        default:
            // A duplicate reference, another 5xx, anything undocumented: the order may exist.
            return CheckoutError(.gatewayError, category: .unknownOutcome, message: "Toy Pay answered HTTP \(response.statusCode); the outcome is unknown",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        }
    }

    /// Decodes an answer; one that cannot be read leaves the outcome unknown.
    private func decode<Answer: Decodable>(_ type: Answer.Type, _ response: TransportResponse) throws(CheckoutError) -> Answer {
        do {
            return try JSONDecoder().decode(Answer.self, from: response.body)
        } catch {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "body",
                                message: "Toy Pay's answer (HTTP \(response.statusCode)) cannot be read; the outcome is unknown", gateway: gateway)
        }
    }

    private func money(minor: String?, currency: String?) throws(CheckoutError) -> Money {
        guard let minor, let units = Int64(minor), let currency else {
            throw CheckoutError(.malformedBody, field: "body.amount", message: "missing or not an integer amount with its currency", gateway: gateway)
        }
        return Money(minorUnits: units, currency: try Currency(code: currency, field: "body.currency"))
    }
}
