import Foundation
import TillGatewayKit

/// Where a PayFort (Amazon Payment Services) integration talks to.
public enum PayFortEnvironment: Sendable, Hashable {
    /// `https://sbpaymentservices.payfort.com`
    case sandbox
    /// `https://paymentservices.payfort.com`
    case production
    /// Another base URL: the local sandbox (`till sandbox`) or a proxy.
    case custom(URL)

    /// The environment's base URL.
    public var baseURL: URL {
        switch self {
        case .sandbox: URL(string: "https://sbpaymentservices.payfort.com")!
        case .production: URL(string: "https://paymentservices.payfort.com")!
        case .custom(let url): url
        }
    }

    /// `FortAPI/paymentApi` on this environment.
    public var paymentAPI: URL { baseURL.appendingPathComponent("FortAPI/paymentApi") }
}

/// PayFort FORT (Amazon Payment Services) through its mobile SDK flow: the **app half**, a
/// ``Checkout`` built without credentials (an app cannot hold any).
///
/// | step | PayFort | where |
/// |---|---|---|
/// | Prepare (server) | `SDK_TOKEN` request signed with the request phrase; the response verified with the response phrase | `PayFortServer` |
/// | Present (app) | a card form, then the operation request (`PURCHASE`/`AUTHORIZATION` with the `sdk_token`) as the mobile SDK sends it; a 3-D Secure `3ds_url` becomes an `openURL` step | here |
/// | Return (app) | the 3-D Secure redirect, or the SDK callback (`success` / `canceled` / `failed`) | here |
/// | Confirm (server) | transaction feedback (form or JSON) verified with the response phrase; `CHECK_STATUS` | `PayFortServer` |
///
/// The server half, `PayFortServer` (a ``CheckoutServer`` holding `PayFortCredentials`), lives in the
/// `TillPayFortServer` library, which the merchant server links and an app never does; its
/// `PayFortPlugin.plugin` builds both halves from a gateway's configuration. The operation request is
/// authenticated by the SDK token the server obtained, so no phrase is needed on the device.
public struct PayFortGateway: Checkout {
    /// The gateway's identifier (`"payfort"` unless a merchant runs several PayFort accounts).
    public let gateway: GatewayID
    /// Where the operation request goes.
    public let environment: PayFortEnvironment
    /// PayFort's language for messages: `en` or `ar`.
    public let language: String
    private let api: PayFortAPI

    /// The app half of a PayFort gateway: the environment and a transport, nothing secret.
    public init(id: GatewayID = "payfort", environment: PayFortEnvironment, language: String = "en", transport: any HTTPTransport) {
        self.gateway = id
        self.environment = environment
        self.language = language
        self.api = PayFortAPI(gateway: id, environment: environment, transport: transport)
    }

    /// What PayFort's mobile SDK flow can do: cards and mada, sale and authorization, with inquiry
    /// (`CHECK_STATUS`) and notifications (transaction feedback). Both halves declare it.
    public static let capabilities = GatewayCapabilities(methods: [.card, .mada], actions: [.sale, .authorize],
                                                         supportsInquiry: true, supportsNotifications: true)

    /// What this gateway can do: the same as the static `capabilities`.
    public var capabilities: GatewayCapabilities { Self.capabilities }

    // MARK: Present (app)

    /// **Present**: the card form (``PayFortFields/cardForm``) at `.start`; once submitted, the card
    /// is checked (``PayFortFields/card(_:now:)``) and sent with the prepared operation parameters as
    /// the mobile SDK sends them, and PayFort's answer becomes the next step.
    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        switch input {
        case .start:
            return .collect(PayFortFields.cardForm)
        case .submit(let values):
            let card = try PayFortFields.card(values).get()
            var fields = preparation.parameters
            if let issue = PayFortFields.validateOperation(fields).first { throw issue.error.attributed(to: gateway) }
            fields.merge(card) { _, typed in typed }
            // As the mobile SDK sends it: authenticated by the SDK token, no phrase on the device.
            let ordered = fields.keys.sorted().map { ($0, fields[$0]!) }
            let response = try await api.post(PayFortParameters(strings: ordered))
            return step(for: response)
        case .returned:
            throw CheckoutError(.unsupportedAction, field: "input", message: "no form was posted", gateway: gateway)
        }
    }

    /// What the app shows after an operation response (never final: Confirm decides).
    func step(for response: PayFortParameters) -> NextStep {
        let status = response.text("status") ?? ""
        let code = response.text("response_code")
        let message = GatewayText.safe(response.text("response_message"))
        switch status {
        case "14", "02":
            return .completed(ClientOutcome(.succeeded, gatewayCode: code, message: message))
        case "20":
            if let text = response.text("3ds_url"), let url = URL(string: text), url.scheme == "https" || url.scheme == "http" {
                return .openURL(url, handoff: .threeDSecure)
            }
            return .completed(ClientOutcome(.pending, gatewayCode: code, message: message))
        case "15", "19":
            return .completed(ClientOutcome(.pending, gatewayCode: code, message: message))
        default:
            return .completed(ClientOutcome(.failed, gatewayCode: code, message: message))
        }
    }

    // MARK: Return (app)

    /// **Return**: the 3-D Secure redirect's query (ignored when it names another order), or the
    /// mobile SDK's callback (`success`, `canceled`, anything else a failure). Informational only.
    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url(let url):
            var parameters = PayFortParameters()
            for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] {
                parameters[item.name] = .string(item.value ?? "")
            }
            guard parameters.text("merchant_reference") == nil || parameters.text("merchant_reference") == preparation.attempt.rawValue else {
                return ClientOutcome(.unknown, message: "the return names another order")
            }
            if case .completed(let outcome) = step(for: parameters) { return outcome }
            return ClientOutcome(.pending)
        case .callback(let code, let parameters):
            switch code {
            case "success":
                return ClientOutcome(.succeeded, gatewayCode: parameters["response_code"], message: GatewayText.safe(parameters["response_message"]))
            case "canceled", "cancelled":
                return ClientOutcome(.cancelled, gatewayCode: parameters["response_code"])
            default:
                return ClientOutcome(.failed, gatewayCode: parameters["response_code"], message: GatewayText.safe(parameters["response_message"]))
            }
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back from 3-D Secure")
        }
    }
}

/// `FortAPI/paymentApi`, as both halves call it: ordered JSON in, ordered JSON out.
package struct PayFortAPI: Sendable {
    /// The gateway every error is attributed to.
    package let gateway: GatewayID
    /// Where requests go.
    package let environment: PayFortEnvironment
    private let client: GatewayClient

    /// The API of `environment`, over `transport`, attributing errors to `gateway`.
    package init(gateway: GatewayID, environment: PayFortEnvironment, transport: any HTTPTransport) {
        self.gateway = gateway
        self.environment = environment
        self.client = GatewayClient(gateway: gateway, transport: transport)
    }

    /// POSTs `parameters` as JSON and parses the JSON answer, keeping its order.
    /// - Throws: ``CheckoutError`` attributed to the gateway: a transport failure as ``GatewayClient``
    ///   classifies it; `gateway_error` for an HTTP status other than 2xx or 400 (PayFort answers
    ///   refusals with 400 and a body); `malformed_body` in category `unknown_outcome` for an answer
    ///   that cannot be read (it was sent, so it may have been processed).
    package func post(_ parameters: PayFortParameters) async throws(CheckoutError) -> PayFortParameters {
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
            return try PayFortParameters.json(body)
        } catch {
            // Sent, but unreadable: the outcome is unknown.
            throw CheckoutError(.malformedBody, category: .unknownOutcome, message: "unreadable PayFort answer", gateway: gateway)
        }
    }
}
