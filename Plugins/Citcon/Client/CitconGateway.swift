import Foundation
import Till

/// Citcon UPI (WeChat Pay, Alipay, UnionPay, PayPal, Venmo, card, Toss, FOMO, …) as a ``Checkout``.
///
/// | step | Citcon |
/// |---|---|
/// | Prepare (server) | a server access token creates the charge (`POST /v1/charges`) with the attempt reference as `transaction.reference`; a client token (charge and inquire only) goes to the app |
/// | Present (app) | a wallet SDK launch (WeChat Pay, Alipay, UnionPay) or the H5 / browser page |
/// | Return (app) | the return URL (custom scheme or universal link) with `citcon_result` and the SDK code (`0`, `-1`, `-2`, `6001`) |
/// | Confirm (server) | the IPN, checked with the API secret (SHA-256 `sign`), or `GET /v1/transactions/{id}` |
///
/// Build it with credentials on the server and without them in the app (only the environment).
public struct CitconGateway: Checkout {
    public let gateway: GatewayID
    public let environment: CitconEnvironment
    public let settings: CitconSettings
    private let credentials: CitconCredentials?
    private let transport: any HTTPTransport
    private let orderDetails: (@Sendable (AttemptContext) -> CitconOrderDetails?)?
    private let tokens = CitconTokenCache()

    /// - Parameters:
    ///   - id: the gateway id in the merchant's configuration.
    ///   - environment: where the API is; the app must use the same one as the server.
    ///   - credentials: the API key and secret (server only; `nil` in an app).
    ///   - settings: UnionPay mode, 3-D Secure, charge lifetime.
    ///   - transport: how requests are sent.
    ///   - orderDetails: goods, shipping, billing address and installments for an attempt (server only).
    public init(id: GatewayID = "citcon", environment: CitconEnvironment, credentials: CitconCredentials? = nil,
                settings: CitconSettings = CitconSettings(), transport: any HTTPTransport,
                orderDetails: (@Sendable (AttemptContext) -> CitconOrderDetails?)? = nil) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.settings = settings
        self.transport = transport
        self.orderDetails = orderDetails
    }

    public var capabilities: GatewayCapabilities {
        GatewayCapabilities(methods: CitconMethods.all, actions: [.sale, .authorize], supportsInquiry: true, supportsNotifications: true)
    }

    /// Every decline stays where it is: a customer who declined or cancelled in a wallet is not sent
    /// to another gateway. (A charge Citcon could not create moves on as `unavailable`, see ``prepare(_:)``.)
    public var decisionTable: DecisionTable { DecisionTable() }

    /// The code of an HTTP 401 answer: the token was refused and nothing was processed.
    static let tokenRefused: CheckoutError.Code = "citcon_token_refused"

    /// Methods whose charge can be authorised and captured later (the others capture at once).
    static let capturableMethods: Set<PaymentMethod> = [.card, .paypal, .venmo]

    // MARK: Prepare (server)

    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        _ = try requireCredentials()
        let request = try chargeRequest(for: context)
        let charge: CitconCharge
        do {
            charge = try await call(.post, "charges", body: request, as: CitconCharge.self, token: .server)
        } catch let error as CheckoutError where error.category == .unknownOutcome || error.category == .unavailable {
            // Even if Citcon created the charge, it moves money only once a customer approves it in the
            // wallet or on the page, and nobody has its launch content: safe to try elsewhere. (This
            // holds because Till never sends a vaulted payment token, which could charge at once.)
            throw CheckoutError(.gatewayUnreachable, category: .unavailable, message: "no Citcon charge: \(error.message)",
                                gateway: gateway, gatewayCode: error.gatewayCode, gatewayMessage: error.gatewayMessage)
        }
        guard charge.reference == nil || charge.reference == context.attempt.rawValue else {
            throw CheckoutError(.gatewayError, category: .unavailable, message: "Citcon answered with another order's charge", gateway: gateway)
        }
        let clientToken: CitconToken
        do {
            clientToken = try await token(.client, minimumLifetime: settings.clientTokenMinimumLifetime)
        } catch {
            // The charge exists but no app will ever get it: cancel it before moving on, so it cannot
            // linger payable. (If the cancel fails too, it expires with payment.expiry.)
            _ = try? await call(.post, "cancels", body: CitconOperationRequest(transactionID: charge.id), as: CitconOperation.self,
                                token: .server)
            throw CheckoutError(.gatewayUnreachable, category: .unavailable,
                                message: "no client token (the charge was cancelled): \((error as? CheckoutError)?.message ?? "failure")",
                                gateway: gateway, gatewayCode: (error as? CheckoutError)?.gatewayCode)
        }

        var parameters: [String: String] = [
            "charge_id": charge.id,
            "access_token": clientToken.value,
            "access_token_expiry": String(Int64(clientToken.expiresAt.timeIntervalSince1970.rounded(.down))),
            "environment": environment.name,
            "method": request.payment.method,
        ]
        for entry in charge.payment?.client ?? [] {
            switch entry.type {
            case "native":
                for (key, value) in entry.content where parameters["native.\(key)"] == nil { parameters["native.\(key)"] = value }
            case "url":
                if parameters["page_url"] == nil, let url = entry.content["url"] { parameters["page_url"] = url }
            default:
                continue
            }
        }
        var expiresAt = clientToken.expiresAt
        if let lifetime = settings.chargeLifetime { expiresAt = min(expiresAt, Date().addingTimeInterval(Self.seconds(lifetime))) }
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method, amount: context.intent.amount,
                           gatewayReference: charge.id, parameters: parameters, returnURL: context.returnURL, expiresAt: expiresAt)
    }

    /// The charge request for an attempt: every part of the SDK's `CPayRequest` Till can fill.
    /// - Throws: ``CheckoutError`` naming the field of the intent or context at fault.
    public func chargeRequest(for context: AttemptContext, now: Date = Date()) throws -> CitconChargeRequest {
        let intent = context.intent
        let method = intent.method
        guard CitconMethods.all.contains(method) else {
            throw CheckoutError(.unsupportedMethod, field: "intent.method", message: "Citcon does not offer \(method)", gateway: gateway)
        }
        guard intent.action == .sale || intent.action == .authorize else {
            throw CheckoutError(.unsupportedAction, field: "intent.action", message: "Citcon charges sell or authorise", gateway: gateway)
        }
        if intent.action == .authorize, !Self.capturableMethods.contains(method) {
            throw CheckoutError(.unsupportedAction, field: "intent.action",
                                message: "\(method) captures at once; only card, PayPal and Venmo can authorise", gateway: gateway)
        }
        guard let country = intent.country else {
            throw CheckoutError(.missingField, field: "intent.country", message: "Citcon needs the country the payment is processed in",
                                gateway: gateway)
        }
        guard intent.amount.minorUnits > 0 else {
            throw CheckoutError(.invalidAmount, field: "intent.amount", message: "must be positive", gateway: gateway)
        }
        guard let returnURL = context.returnURL else {
            throw CheckoutError(.missingField, field: "returnURL", message: "Citcon sends the customer back to the app: a return URL is needed",
                                gateway: gateway)
        }
        if let note = intent.description, note.count > 128 {
            throw CheckoutError(.fieldTooLong, field: "intent.description", message: "at most 128 characters for Citcon's note", gateway: gateway)
        }

        var scheme: String?
        var universalLink: String?
        if let urlScheme = returnURL.scheme?.lowercased(), urlScheme == "https" || urlScheme == "http" {
            var components = URLComponents(url: returnURL, resolvingAgainstBaseURL: false)
            components?.query = nil
            components?.fragment = nil
            universalLink = components?.url?.absoluteString
        } else {
            scheme = returnURL.scheme
        }
        if let override = intent.metadata["citcon.scheme"] { scheme = override }
        if let override = intent.metadata["citcon.universal_link"] { universalLink = override }
        if method == .alipay, scheme == nil {
            throw CheckoutError(.missingField, field: "returnURL",
                                message: "Alipay returns through a URL scheme: use a custom-scheme return route (or set intent.metadata[\"citcon.scheme\"])",
                                gateway: gateway)
        }
        if method == .wechatPay, universalLink == nil {
            throw CheckoutError(.missingField, field: "returnURL",
                                message: "WeChat Pay returns through a universal link: use a universal-link return route (or set intent.metadata[\"citcon.universal_link\"])",
                                gateway: gateway)
        }

        let details = orderDetails?(context)
        let customer = intent.customer
        let consumer = CitconChargeRequest.Consumer(reference: customer.reference, firstName: customer.firstName, lastName: customer.lastName,
                                                    phone: customer.phone, email: customer.email, billingAddress: details?.billingAddress)
        let wants3DS = method == .card && settings.request3DSecure
        if wants3DS {
            let needed: [(String, String?)] = [("intent.customer.firstName", customer.firstName), ("intent.customer.lastName", customer.lastName),
                                               ("intent.customer.phone", customer.phone), ("intent.customer.email", customer.email)]
            for (field, value) in needed where (value ?? "").isEmpty {
                throw CheckoutError(.missingField, field: field, message: "card 3-D Secure needs it", gateway: gateway)
            }
            guard details?.billingAddress?.isComplete == true else {
                throw CheckoutError(.missingField, field: "orderDetails.billingAddress",
                                    message: "card 3-D Secure needs the street, city, state, zip and country", gateway: gateway)
            }
        }
        guard ["00", "01"].contains(settings.unionpayMode) else {
            throw CheckoutError(.misconfigured, field: "settings.unionpay_mode", message: "00 (production) or 01 (development)", gateway: gateway)
        }

        var expiry: Int64?
        if let lifetime = settings.chargeLifetime {
            expiry = Int64((now.timeIntervalSince1970 + Self.seconds(lifetime)) * 1_000)
        }
        let hasConsumer = [customer.reference, customer.firstName, customer.lastName, customer.phone, customer.email].contains { $0 != nil }
            || details?.billingAddress != nil
        return CitconChargeRequest(
            transaction: .init(reference: context.attempt.rawValue, amount: intent.amount.minorUnits, currency: intent.amount.currency.code,
                               country: country.code, autoCapture: Self.capturableMethods.contains(method) ? intent.action == .sale : nil,
                               note: intent.description),
            consumer: hasConsumer ? consumer : nil,
            payment: .init(method: method.rawValue, indicator: details?.indicator, client: ["mobile_native"], expiry: expiry,
                           billingAddress: method == .card ? details?.billingAddress : nil),
            goods: details?.goods,
            installments: details?.installments,
            urls: .init(ipn: context.notificationURL?.absoluteString,
                        success: Self.returnURL(returnURL, result: "success"),
                        fail: Self.returnURL(returnURL, result: "fail"),
                        cancel: Self.returnURL(returnURL, result: "cancel")),
            scheme: scheme,
            universalLink: universalLink,
            request3DSecureVerification: method == .card ? wants3DS : nil,
            unionpayMode: method == .unionPay ? settings.unionpayMode : nil)
    }

    /// The attempt's return URL with `citcon_result=<result>` added (its state kept).
    static func returnURL(_ url: URL, result: String) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "citcon_result", value: result)]
        return components.url?.absoluteString ?? url.absoluteString
    }

    // MARK: Present (app)

    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        guard case .start = input else {
            throw CheckoutError(.invalidField, field: "input", message: "Citcon collects nothing in the app", gateway: gateway)
        }
        let parameters = preparation.parameters
        guard parameters["environment"] == environment.name else {
            throw CheckoutError(.misconfigured, field: "environment",
                                message: "the preparation was made in \(parameters["environment"] ?? "no environment"), this app uses \(environment.name); tokens belong to one environment",
                                gateway: gateway)
        }
        if let wallet = CitconMethods.nativeWallets[preparation.method] {
            var content: [String: String] = [:]
            for (key, value) in parameters where key.hasPrefix("native.") { content[String(key.dropFirst(7))] = value }
            if !content.isEmpty {
                let scheme = preparation.returnURL?.scheme.flatMap { ["http", "https"].contains($0.lowercased()) ? nil : $0 }
                return .launchWallet(WalletLaunch(wallet: wallet, parameters: content, returnScheme: scheme, returnURL: preparation.returnURL))
            }
        }
        guard let text = parameters["page_url"], let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "https" || (scheme == "http" && environment.allowsPlainHTTP) else {
            throw CheckoutError(.gatewayError, category: .unknownOutcome, field: "payment.client",
                                message: "Citcon gave nothing the app can open for \(preparation.method)", gateway: gateway)
        }
        let handoff: Handoff = [.paypal, .venmo].contains(preparation.method) ? .browser : .webPage
        return .openURL(url, handoff: handoff)
    }

    // MARK: Return (app)

    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url(let url):
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            func value(_ name: String) -> String? { items.last { $0.name == name }?.value }
            if let code = value("code") { return Self.outcome(sdkCode: code, message: value("message")) }
            switch value("citcon_result") {
            case "success": return ClientOutcome(.succeeded, gatewayCode: "0")
            case "fail": return ClientOutcome(.failed, message: "the payment page reported a failure")
            case "cancel": return ClientOutcome(.cancelled)
            default: return ClientOutcome(.unknown, message: "the return carried no result")
            }
        case .callback(let code, let parameters):
            return Self.outcome(sdkCode: code, message: parameters["message"])
        case .timedOut:
            return ClientOutcome(.unknown, message: "the customer did not come back from the wallet or page")
        case .abandoned:
            return ClientOutcome(.unknown, message: "the checkout stopped waiting for the customer")
        }
    }

    /// The SDK's result codes: `0` success, `-1` error, `-2` and `6001` cancelled, others errors.
    public static func outcome(sdkCode code: String, message: String? = nil) -> ClientOutcome {
        let safe = message.map { String(Redactor.maskCardNumbers(in: $0).prefix(150)) }
        switch code {
        case "0": return ClientOutcome(.succeeded, gatewayCode: code)
        case "-2", "6001": return ClientOutcome(.cancelled, gatewayCode: code, message: safe)
        default: return ClientOutcome(.failed, gatewayCode: code, message: safe)
        }
    }

    // MARK: Confirm (server)

    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let credentials = try requireCredentials()
        let fields = try CitconIPNFields.parse(notification.body, mediaType: notification.mediaType)
        let signed: Set<String>
        do {
            signed = try CitconSignature.verify(fields, secret: credentials.apiSecret)
        } catch {
            throw error.attributed(to: gateway)
        }
        return VerifiedNotification(report: try report(fromIPN: fields, signed: signed))
    }

    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? CitconIPNFields.parse(notification.body, mediaType: notification.mediaType))?["reference"]
            .flatMap { $0.isEmpty ? nil : AttemptReference(rawValue: $0) }
    }

    /// The report of a verified IPN, read only from its signed fields: whatever `fields` does not
    /// list could have been added on the way, so it is never looked at.
    func report(fromIPN all: CitconIPNFields, signed: Set<String>) throws -> StatusReport {
        func value(_ name: String) -> String? { signed.contains(name) ? all[name] : nil }
        guard let reference = value("reference"), !reference.isEmpty else {
            throw CheckoutError(.missingField, field: "reference", message: "the IPN names no order", gateway: gateway)
        }
        guard let raw = value("status"), !raw.isEmpty else {
            throw CheckoutError(.missingField, field: "status", message: "the IPN carries no status", gateway: gateway)
        }
        let amount = try money(minor: value("amount"), currency: value("currency"))
        let type = value("transaction_type") ?? ""
        let refunded = value("amount_refunded") ?? ""
        var status = Self.status(raw)
        switch type {
        case "charge":
            break
        case "refund":
            // A refund that succeeded moves a paid payment on; anything else about a refund says
            // nothing about the charge.
            if status == .paid, let total = Int64(refunded), let amount {
                status = total >= amount.minorUnits ? .refunded : .partiallyRefunded
            } else if status == .paid {
                status = .partiallyRefunded
            } else {
                status = PaymentStatus(rawValue: "citcon_refund_\(raw)")
            }
        default:
            status = PaymentStatus(rawValue: "citcon_\(type.isEmpty ? "untyped" : type)_\(raw)")
        }
        if status == .paid || status == .authorized, amount == nil {
            throw CheckoutError(.missingField, field: "amount", message: "a payment is only confirmed with its amount", gateway: gateway)
        }
        let id = value("id")
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: reference), gatewayReference: id,
                            status: status, amount: type == "refund" ? nil : amount, gatewayStatus: raw,
                            eventID: "\(id ?? reference):\(type):\(raw):\(refunded)")
    }

    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        _ = try requireCredentials()
        guard let id = query.gatewayReference, !id.isEmpty else {
            throw CheckoutError(.unknownOutcome, message: "no Citcon transaction id is known for this attempt", gateway: gateway)
        }
        let charge = try await transaction(id, token: .server)
        guard charge.reference == nil || charge.reference == query.attempt.rawValue else {
            throw CheckoutError(.unknownOutcome, message: "Citcon's transaction \(id) belongs to another order", gateway: gateway)
        }
        guard let raw = charge.status, !raw.isEmpty else {
            throw CheckoutError(.unknownOutcome, message: "Citcon's answer carries no status", gateway: gateway)
        }
        let status = Self.status(raw)
        let amount = try money(minor: charge.amount.map(String.init), currency: charge.currency)
        if status == .paid || status == .authorized, amount == nil {
            throw CheckoutError(.unknownOutcome, message: "Citcon's answer confirms a payment without its amount", gateway: gateway)
        }
        return StatusReport(gateway: gateway, attempt: query.attempt, gatewayReference: charge.id, status: status,
                            amount: amount, gatewayStatus: raw, eventID: "\(charge.id):inquiry:\(raw)")
    }

    /// Maps both of Citcon's vocabularies (the SDK guide's and the IPN document's) to Till's.
    /// Anything unlisted is an unknown status: never applied, never success.
    public static func status(_ raw: String) -> PaymentStatus {
        switch raw.lowercased() {
        case "succeeded", "success", "captured": .paid
        case "authorized": .authorized
        case "failed", "fail": .failed
        case "canceled", "cancelled": .cancelled
        case "expired": .expired
        case "initiated", "pending": .pending
        default: PaymentStatus(rawValue: "citcon_status_\(raw)")
        }
    }

    // MARK: Follow-up operations (server)

    /// The transaction as Citcon has it now (`GET /v1/transactions/{id}`), with the server token.
    public func transaction(_ id: String) async throws -> CitconCharge {
        _ = try requireCredentials()
        return try await transaction(id, token: .server)
    }

    /// Captures an authorised card, PayPal or Venmo charge.
    public func capture(transactionID: String, amount: Money) async throws -> CitconOperation {
        _ = try requireCredentials()
        return try await call(.post, "captures", body: CitconOperationRequest(transactionID: transactionID, amount: amount.minorUnits),
                              as: CitconOperation.self, token: .server)
    }

    /// Refunds part or all of a paid charge.
    public func refund(transactionID: String, amount: Money, reason: String? = nil) async throws -> CitconOperation {
        _ = try requireCredentials()
        return try await call(.post, "refunds",
                              body: CitconOperationRequest(transactionID: transactionID, amount: amount.minorUnits, reason: reason),
                              as: CitconOperation.self, token: .server)
    }

    /// Cancels a pending or authorised charge.
    public func cancel(transactionID: String) async throws -> CitconOperation {
        _ = try requireCredentials()
        return try await call(.post, "cancels", body: CitconOperationRequest(transactionID: transactionID),
                              as: CitconOperation.self, token: .server)
    }

    // MARK: Client-side status (app)

    /// The charge of `preparation` as the app may see it, with the client token the server handed over.
    func clientTransaction(_ preparation: Preparation) async throws -> CitconCharge {
        guard let id = preparation.parameters["charge_id"], let token = preparation.parameters["access_token"] else {
            throw CheckoutError(.missingField, field: "preparation.parameters", message: "no charge id or client token", gateway: gateway)
        }
        guard preparation.parameters["environment"] == environment.name else {
            throw CheckoutError(.misconfigured, field: "environment", message: "the preparation was made in another environment", gateway: gateway)
        }
        return try await send(.get, "transactions/\(id)", body: Optional<CitconOperationRequest>.none, as: CitconCharge.self, bearer: token)
    }

    // MARK: Plumbing

    private func requireCredentials() throws -> CitconCredentials {
        guard let credentials else {
            throw CheckoutError(.missingSecret, field: "credentials", message: "Citcon credentials are needed here (server side only)",
                                gateway: gateway)
        }
        return credentials
    }

    private func transaction(_ id: String, token: CitconTokenType) async throws -> CitconCharge {
        guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }), !id.isEmpty, id.count <= 64 else {
            throw CheckoutError(.invalidField, field: "id", message: "not a Citcon transaction id", gateway: gateway)
        }
        return try await call(.get, "transactions/\(id)", body: Optional<CitconOperationRequest>.none, as: CitconCharge.self, token: token)
    }

    /// An access token of `type`, cached.
    private func token(_ type: CitconTokenType, minimumLifetime: Duration = .seconds(60)) async throws -> CitconToken {
        let credentials = try requireCredentials()
        let fetch: @Sendable () async throws -> CitconToken = { [self] in
            let answer = try await send(.post, "access-tokens", body: CitconTokenRequest(tokenType: type), as: CitconAccessToken.self,
                                        bearer: credentials.apiKey)
            guard !answer.accessToken.isEmpty else {
                throw CheckoutError(.gatewayError, category: .configuration, message: "Citcon issued an empty access token", gateway: gateway)
            }
            // Believe at most a day: a far-future or absurd expiry must not keep a token forever (or overflow).
            let now = Date()
            let claimed = answer.expiry.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? now.addingTimeInterval(3_600)
            return CitconToken(value: answer.accessToken, expiresAt: min(claimed, now.addingTimeInterval(86_400)))
        }
        do {
            return try await tokens.token(type, minimumLifetime: Self.seconds(minimumLifetime), fetch: fetch)
        } catch let error as CheckoutError where error.code == Self.tokenRefused {
            throw CheckoutError(.misconfigured, category: .configuration, field: "credentials.api_key",
                                message: "Citcon refused the merchant API key", gateway: gateway, gatewayCode: error.gatewayCode)
        }
    }

    /// Calls the API with a cached token; an expired token (401) is replaced and the call made once more
    /// (a 401 means the request was not processed).
    private func call<Body: Encodable, Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, body: Body?, as: Answer.Type,
                                                          token type: CitconTokenType) async throws -> Answer {
        let first = try await token(type)
        do {
            return try await send(method, path, body: body, as: Answer.self, bearer: first.value)
        } catch let error as CheckoutError where error.code == Self.tokenRefused {
            await tokens.invalidate(type, value: first.value)
            let second = try await token(type)
            return try await send(method, path, body: body, as: Answer.self, bearer: second.value)
        }
    }

    private func send<Body: Encodable, Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, body: Body?, as: Answer.Type,
                                                          bearer: String) async throws -> Answer {
        var data: Data?
        if let body {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            data = try encoder.encode(body)
        }
        let request = TransportRequest(method: method, url: environment.endpoint(path),
                                  headers: ["Authorization": "Bearer \(bearer)", "Content-Type": "application/json", "Accept": "application/json"],
                                  body: data, timeout: .seconds(30))
        let response: TransportResponse
        switch await deliver(request) {
        case .success(let answer): response = answer
        case .failure(let failure): throw failure.checkoutError(gateway: gateway)
        }
        return try decodeAnswer(response, as: Answer.self)
    }

    /// Reads Citcon's envelope: the payload of a success, a typed error for a failure.
    func decodeAnswer<Answer: Decodable>(_ response: TransportResponse, as: Answer.Type) throws -> Answer {
        let decoder = JSONDecoder()
        if (200..<300).contains(response.statusCode) {
            if let envelope = try? decoder.decode(CitconEnvelope<Answer>.self, from: response.body), envelope.status == "success" {
                return envelope.data
            }
            if let failure = try? decoder.decode(CitconEnvelope<CitconFailure>.self, from: response.body), failure.status != "success" {
                throw error(for: response.statusCode, failure.data)
            }
            throw CheckoutError(.malformedBody, category: .unknownOutcome, message: "unreadable Citcon answer", gateway: gateway)
        }
        let failure = (try? decoder.decode(CitconEnvelope<CitconFailure>.self, from: response.body))?.data
        throw error(for: response.statusCode, failure)
    }

    private func error(for status: Int, _ failure: CitconFailure?) -> CheckoutError {
        let code = failure?.code ?? String(status)
        let message = failure?.message.map { String(Redactor.maskCardNumbers(in: $0).prefix(200)) }
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
        case 400..<500:
            // Citcon's validation messages start with the field path ("transaction.amount: …").
            let field = message.flatMap { text -> String? in
                guard let colon = text.firstIndex(of: ":") else { return nil }
                let path = text[..<colon]
                return path.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" }) && !path.isEmpty ? "citcon." + path : nil
            }
            return CheckoutError(.invalidField, category: .invalidInput, field: field,
                                 message: code == "4000" ? "Citcon already has an order with this reference" : "Citcon refused the request",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: message)
        default:
            return CheckoutError(.gatewayError, category: .unknownOutcome, message: "Citcon answered HTTP \(status)", gateway: gateway,
                                 gatewayCode: code, gatewayMessage: message)
        }
    }

    private func money(minor: String?, currency: String?) throws -> Money? {
        guard let minor, !minor.isEmpty else { return nil }
        guard let value = Int64(minor) else {
            throw CheckoutError(.invalidField, field: "amount", message: "not an integer amount in minor units", gateway: gateway)
        }
        guard let code = currency, let currency = Currency.lookup(code) else {
            throw CheckoutError(.invalidCurrency, field: "currency", message: "not an ISO 4217 currency", gateway: gateway)
        }
        return Money(minorUnits: value, currency: currency)
    }

    /// The transport's answer as a `Result` (keeps typed transport errors out of `async` catch
    /// blocks, which Swift 6.3.1's ownership verifier trips over).
    private func deliver(_ request: TransportRequest) async -> Result<TransportResponse, TransportError> {
        do {
            return .success(try await transport.send(request))
        } catch {
            return .failure(error)
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
