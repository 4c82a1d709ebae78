import Foundation
import Till

/// Where a PayFort (Amazon Payment Services) integration talks to.
public enum PayFortEnvironment: Sendable, Hashable {
    /// `https://sbpaymentservices.payfort.com`
    case sandbox
    /// `https://paymentservices.payfort.com`
    case production
    /// Another base URL: the local sandbox (`till sandbox`) or a proxy.
    case custom(URL)

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

/// The merchant's PayFort credentials. Server side only: they never go into an app.
public struct PayFortCredentials: Sendable, Hashable {
    public var accessCode: String
    public var merchantIdentifier: String
    /// Signs requests.
    public var requestPhrase: String
    /// Verifies responses and notifications.
    public var responsePhrase: String
    public var algorithm: PayFortSignature.Algorithm

    public init(accessCode: String, merchantIdentifier: String, requestPhrase: String, responsePhrase: String,
                algorithm: PayFortSignature.Algorithm = .sha256) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.requestPhrase = requestPhrase
        self.responsePhrase = responsePhrase
        self.algorithm = algorithm
    }
}

/// PayFort FORT (Amazon Payment Services) through its mobile SDK flow, as a ``Checkout``.
///
/// | step | PayFort |
/// |---|---|
/// | Prepare (server) | `SDK_TOKEN` request signed with the request phrase; the response verified with the response phrase |
/// | Present (app) | a card form, then the operation request (`PURCHASE`/`AUTHORIZATION` with the `sdk_token`) as the mobile SDK sends it; a 3-D Secure `3ds_url` becomes an `openURL` step |
/// | Return (app) | the 3-D Secure redirect, or the SDK callback (`success` / `canceled` / `failed`) |
/// | Confirm (server) | transaction feedback (form or JSON) verified with the response phrase; `CHECK_STATUS` |
///
/// Build it with credentials on the server and without them in the app (only the environment).
/// The attempt reference is sent as `merchant_reference`, so every attempt can be checked.
public struct PayFortGateway: Checkout {
    public let gateway: GatewayID
    public let environment: PayFortEnvironment
    public let language: String
    private let credentials: PayFortCredentials?
    private let transport: any HTTPTransport

    public init(id: GatewayID = "payfort", environment: PayFortEnvironment, credentials: PayFortCredentials? = nil,
                language: String = "en", transport: any HTTPTransport) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.language = language
        self.transport = transport
    }

    public var capabilities: GatewayCapabilities {
        GatewayCapabilities(methods: [.card, .mada], actions: [.sale, .authorize], supportsInquiry: true, supportsNotifications: true)
    }

    /// Which declines may move to another gateway: only a technical problem on PayFort's side (`006`).
    /// Card declines, insufficient funds, expired cards and everything else stay where they are.
    public var decisionTable: DecisionTable {
        DecisionTable(["13006": .retryNext, "03006": .retryNext, "20064": .stepUp])
    }

    // MARK: Prepare (server)

    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let credentials = try requireCredentials()
        let intent = context.intent
        let operation = try operationParameters(for: context)
        let issues = PayFortFields.validateOperation(operation.merging(["sdk_token": "pending"]) { old, _ in old })
        if let first = issues.first { throw first.error.attributed(to: gateway) }

        let deviceID = intent.metadata["device_id"] ?? context.attempt.rawValue
        if let issue = PayFortFields.check("device_id", deviceID, prefix: "intent.metadata.").first { throw issue.error.attributed(to: gateway) }
        var request = PayFortParameters(strings: [
            ("service_command", "SDK_TOKEN"), ("access_code", credentials.accessCode),
            ("merchant_identifier", credentials.merchantIdentifier), ("language", language), ("device_id", deviceID),
        ])
        let signer = PayFortSignature(credentials.algorithm)
        request["signature"] = .string(signer.sign(request, phrase: credentials.requestPhrase))

        // An SDK token cannot move money, so any failure to get one is safe to move on from.
        let response: PayFortParameters
        do {
            response = try await post(request)
        } catch {
            let reason = (error as? CheckoutError)?.message ?? "transport failure"
            throw CheckoutError(.gatewayUnreachable, category: .unavailable, message: "no SDK token: \(reason)", gateway: gateway)
        }
        do {
            try signer.verify(response, phrase: credentials.responsePhrase)
        } catch {
            throw CheckoutError(.signatureMismatch, category: .configuration, field: "signature",
                                message: "the SDK token response's signature does not match the response phrase (\(response.text("response_code") ?? "no code"))",
                                gateway: gateway, gatewayCode: response.text("response_code"), gatewayMessage: Self.safe(response.text("response_message")))
        }
        guard response.text("status") == "22", let token = response.text("sdk_token"), !token.isEmpty else {
            let code = response.text("response_code")
            throw CheckoutError(code == "00008" ? .signatureMismatch : .misconfigured, category: .configuration,
                                message: "PayFort refused the SDK token request", gateway: gateway,
                                gatewayCode: code, gatewayMessage: Self.safe(response.text("response_message")))
        }
        var parameters = operation
        parameters["sdk_token"] = token
        return Preparation(gateway: gateway, attempt: context.attempt, method: intent.method, amount: intent.amount,
                           parameters: parameters, returnURL: context.returnURL, expiresAt: Date().addingTimeInterval(3_600))
    }

    /// The operation request's parameters (all but the token), from the intent.
    func operationParameters(for context: AttemptContext) throws -> [String: String] {
        let intent = context.intent
        guard intent.action != .verify else {
            throw CheckoutError(.unsupportedAction, field: "intent.action", message: "PayFort's mobile SDK does not verify cards", gateway: gateway)
        }
        guard let email = intent.customer.email, !email.isEmpty else {
            throw CheckoutError(.missingField, field: "intent.customer.email", message: "PayFort requires the customer's e-mail", gateway: gateway)
        }
        var p: [String: String] = [
            "command": intent.action == .sale ? "PURCHASE" : "AUTHORIZATION",
            "merchant_reference": context.attempt.rawValue,
            "amount": String(intent.amount.minorUnits),
            "currency": intent.amount.currency.code,
            "language": language,
            "customer_email": email,
            "eci": "ECOMMERCE",
        ]
        if intent.method == .mada { p["payment_option"] = "MADA" }
        if let option = intent.metadata["payment_option"] { p["payment_option"] = option }
        if let ip = intent.customer.ipAddress { p["customer_ip"] = ip }
        if let description = intent.description { p["order_description"] = description }
        let name = [intent.customer.firstName, intent.customer.lastName].compactMap { $0 }.joined(separator: " ")
        if !name.isEmpty { p["customer_name"] = name }
        if let phone = intent.customer.phone { p["phone_number"] = phone }
        for key in ["merchant_extra", "merchant_extra1", "merchant_extra2", "merchant_extra3", "merchant_extra4", "merchant_extra5",
                    "settlement_reference", "token_name"] {
            if let value = intent.metadata[key] { p[key] = value }
        }
        if let returnURL = context.returnURL { p["return_url"] = returnURL.absoluteString }
        return p
    }

    // MARK: Present (app)

    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        switch input {
        case .start:
            return .collect(FormSpec(fields: [
                FormField(id: "card_number", labelKey: "till.field.cardNumber", kind: .cardNumber, maxLength: 19, sensitive: true),
                FormField(id: "expiry", labelKey: "till.field.expiry", kind: .expiryDate, maxLength: 5),
                FormField(id: "cvv", labelKey: "till.field.cvv", kind: .securityCode, maxLength: 4, sensitive: true),
                FormField(id: "card_holder_name", labelKey: "till.field.cardHolder", kind: .text, required: false, maxLength: 50),
            ]))
        case .submit(let values):
            let card = try PayFortFields.card(values).get()
            var fields = preparation.parameters
            if let issue = PayFortFields.validateOperation(fields).first { throw issue.error.attributed(to: gateway) }
            fields.merge(card) { _, typed in typed }
            // As the mobile SDK sends it: authenticated by the SDK token, no phrase on the device.
            let ordered = fields.keys.sorted().map { ($0, fields[$0]!) }
            let response = try await post(PayFortParameters(strings: ordered))
            return step(for: response)
        }
    }

    /// What the app shows after an operation response (never final: Confirm decides).
    func step(for response: PayFortParameters) -> NextStep {
        let status = response.text("status") ?? ""
        let code = response.text("response_code")
        let message = Self.safe(response.text("response_message"))
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
            case "success": return ClientOutcome(.succeeded, gatewayCode: parameters["response_code"], message: Self.safe(parameters["response_message"]))
            case "canceled", "cancelled": return ClientOutcome(.cancelled, gatewayCode: parameters["response_code"])
            default: return ClientOutcome(.failed, gatewayCode: parameters["response_code"], message: Self.safe(parameters["response_message"]))
            }
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back from 3-D Secure")
        }
    }

    // MARK: Confirm (server)

    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let credentials = try requireCredentials()
        let parameters = try Self.parse(notification.body, mediaType: notification.mediaType)
        try PayFortSignature(credentials.algorithm).verify(parameters, phrase: credentials.responsePhrase)
        return VerifiedNotification(report: try report(from: parameters, statusKey: "status"))
    }

    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? Self.parse(notification.body, mediaType: notification.mediaType))?.text("merchant_reference").map(AttemptReference.init(rawValue:))
    }

    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        let credentials = try requireCredentials()
        var request = PayFortParameters(strings: [
            ("query_command", "CHECK_STATUS"), ("access_code", credentials.accessCode),
            ("merchant_identifier", credentials.merchantIdentifier), ("merchant_reference", query.attempt.rawValue),
            ("language", language),
        ])
        let signer = PayFortSignature(credentials.algorithm)
        request["signature"] = .string(signer.sign(request, phrase: credentials.requestPhrase))
        let response = try await post(request)
        do {
            try signer.verify(response, phrase: credentials.responsePhrase)
        } catch {
            throw CheckoutError(.signatureMismatch, category: .verification, field: "signature",
                                message: "the CHECK_STATUS response's signature does not match", gateway: gateway)
        }
        guard response.text("status") == "12" else {
            throw CheckoutError(.invalidField, field: "merchant_reference", message: "PayFort could not check this order",
                                gateway: gateway, gatewayCode: response.text("response_code"), gatewayMessage: Self.safe(response.text("response_message")))
        }
        return try report(from: response, statusKey: "transaction_status", codeKey: "transaction_code", messageKey: "transaction_message")
    }

    /// Maps PayFort's two-digit status to Till's. Anything unlisted stays an unknown status (never
    /// applied, never success).
    public static func status(_ code: String) -> PaymentStatus {
        switch code {
        case "14", "04": .paid                 // purchase success, capture success
        case "02": .authorized
        case "13", "03", "00": .failed          // purchase / authorization failure, invalid request
        case "15", "19", "20": .pending         // uncertain, pending, on hold: resolve with CHECK_STATUS
        case "06": .refunded
        case "08": .cancelled                   // void success
        default: PaymentStatus(rawValue: "payfort_status_\(code)")
        }
    }

    func report(from parameters: PayFortParameters, statusKey: String, codeKey: String = "response_code",
                messageKey: String = "response_message") throws -> StatusReport {
        guard let reference = parameters.text("merchant_reference"), !reference.isEmpty else {
            throw CheckoutError(.missingField, field: "merchant_reference", message: "the message names no order", gateway: gateway)
        }
        guard let raw = parameters.text(statusKey), !raw.isEmpty else {
            throw CheckoutError(.missingField, field: statusKey, message: "the message carries no status", gateway: gateway)
        }
        var amount: Money?
        if let currency = parameters.text("currency").flatMap(Currency.lookup), let minor = parameters.text("amount").flatMap({ Int64($0) }) {
            amount = Money(minorUnits: minor, currency: currency)
        }
        let code = parameters.text(codeKey)
        let fortID = parameters.text("fort_id")
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: reference), gatewayReference: fortID,
                            status: Self.status(raw), amount: amount, gatewayStatus: raw, gatewayCode: code,
                            gatewayMessage: Self.safe(parameters.text(messageKey)),
                            eventID: "\(fortID ?? reference):\(raw):\(code ?? "")")
    }

    // MARK: Plumbing

    private func requireCredentials() throws -> PayFortCredentials {
        guard let credentials else {
            throw CheckoutError(.missingSecret, field: "credentials", message: "PayFort credentials are needed here (server side only)",
                                gateway: gateway)
        }
        return credentials
    }

    /// POSTs JSON to `FortAPI/paymentApi` and parses the JSON answer, keeping its key order.
    private func post(_ parameters: PayFortParameters) async throws -> PayFortParameters {
        let request = TransportRequest(method: .post, url: environment.paymentAPI,
                                  headers: ["Content-Type": "application/json", "Accept": "application/json"],
                                  body: parameters.jsonData(), timeout: .seconds(45))
        let response: TransportResponse
        switch await send(request) {
        case .success(let answer): response = answer
        case .failure(let failure): throw failure.checkoutError(gateway: gateway)
        }
        guard (200..<300).contains(response.statusCode) || response.statusCode == 400 else {
            throw CheckoutError(.gatewayError, message: "PayFort answered HTTP \(response.statusCode)", gateway: gateway,
                                gatewayCode: String(response.statusCode))
        }
        do {
            return try PayFortParameters.json(response.body)
        } catch {
            // Sent, but unreadable: the outcome is unknown.
            throw CheckoutError(.malformedBody, category: .unknownOutcome, message: "unreadable PayFort answer", gateway: gateway)
        }
    }

    /// The transport's answer as a `Result` (keeps typed transport errors out of `async` catch
    /// blocks, which Swift 6.3.1's ownership verifier trips over here).
    private func send(_ request: TransportRequest) async -> Result<TransportResponse, TransportError> {
        do {
            return .success(try await transport.send(request))
        } catch {
            return .failure(error)
        }
    }

    /// A gateway message fit for errors, outcomes and logs: card numbers masked, at most 150 characters.
    static func safe(_ text: String?) -> String? {
        text.map { String(Redactor.maskCardNumbers(in: $0).prefix(150)) }
    }

    static func parse(_ body: Data, mediaType: String?) throws -> PayFortParameters {
        if mediaType == "application/json" || (mediaType == nil && body.first == UInt8(ascii: "{")) {
            return try PayFortParameters.json(body)
        }
        return try PayFortParameters.form(body)
    }
}
