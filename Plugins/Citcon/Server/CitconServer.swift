import Foundation
import TillCitcon
import TillGatewayKit

/// Citcon UPI: the **server half**, a ``CheckoutServer``. It holds the merchant's API key and secret:
/// it creates charges (Prepare), checks IPNs and inquires (Confirm), and captures, refunds and
/// cancels. The app half is ``CitconGateway``, in `TillCitcon`.
///
/// | step | Citcon |
/// |---|---|
/// | Return URL | WeChat Pay returns through a universal link, the other methods through the app's URL scheme when one is offered (``returnURL(from:for:)``) |
/// | Prepare | a server access token creates the charge (`POST /v1/charges`) with the attempt reference as `transaction.reference`; a client token (charge and inquire only) goes to the app |
/// | Confirm | the IPN, checked with the API secret (SHA-256 `sign`), or `GET /v1/transactions/{id}` |
///
/// Access tokens are cached per value (and its copies) until shortly before they expire.
public struct CitconServer: CheckoutServer {
    /// The gateway id in the merchant's configuration.
    public let gateway: GatewayID
    /// Where the API is; the app must use the same one.
    public let environment: CitconEnvironment
    /// UnionPay mode, 3-D Secure, charge lifetime.
    public let settings: CitconSettings
    private let credentials: CitconCredentials
    private let api: CitconAPI
    private let orderDetails: (@Sendable (AttemptContext) -> CitconOrderDetails?)?
    private let tokens = CitconTokenCache()

    /// - Parameters:
    ///   - id: the gateway id in the merchant's configuration.
    ///   - environment: where the API is; the app must use the same one.
    ///   - credentials: the merchant's API key and secret.
    ///   - settings: UnionPay mode, 3-D Secure, charge lifetime.
    ///   - transport: how requests are sent.
    ///   - orderDetails: goods, shipping, billing address and installments for an attempt.
    public init(id: GatewayID = "citcon", environment: CitconEnvironment, credentials: CitconCredentials,
                settings: CitconSettings = CitconSettings(), transport: any HTTPTransport,
                orderDetails: (@Sendable (AttemptContext) -> CitconOrderDetails?)? = nil) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.settings = settings
        self.api = CitconAPI(gateway: id, environment: environment, transport: transport)
        self.orderDetails = orderDetails
    }

    /// The same as the app half's: ``CitconGateway/capabilities``.
    public var capabilities: GatewayCapabilities { CitconGateway.capabilities }

    /// Every decline stays where it is: a customer who declined or cancelled in a wallet is not sent
    /// to another gateway. (A charge Citcon could not create moves on as `unavailable`, see ``prepare(_:)``.)
    public var decisionTable: DecisionTable { DecisionTable() }

    /// Methods whose charge can be authorised and captured later (the others capture at once).
    static let capturableMethods: Set<PaymentMethod> = [.card, .paypal, .venmo]

    // MARK: Return URL

    /// The return URL for the method: WeChat Pay returns through a universal link, so the first
    /// `https` URL offered; Alipay through the app's URL scheme, so the first custom-scheme URL; the
    /// other methods prefer a custom scheme, else take the first offered.
    ///
    /// An `intent.metadata` override (`citcon.universal_link` for WeChat Pay, `citcon.scheme` for
    /// Alipay) lifts the requirement: the override is sent to Citcon instead.
    /// - Throws: ``CheckoutError`` `missing_field` naming `returnURLs` when WeChat Pay is offered no
    ///   `https` URL, or Alipay no custom-scheme URL.
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? {
        let universalLink = offered.first { $0.scheme?.lowercased() == "https" }
        let customScheme = offered.first { !Self.isWeb($0) }
        switch intent.method {
        case .wechatPay:
            if let universalLink { return universalLink }
            guard intent.metadata["citcon.universal_link"] != nil else {
                throw CheckoutError(.missingField, field: "returnURLs",
                                    message: "WeChat Pay returns through a universal link: register a universal-link (https) return route (or set intent.metadata[\"citcon.universal_link\"])",
                                    gateway: gateway)
            }
        case .alipay:
            if let customScheme { return customScheme }
            guard intent.metadata["citcon.scheme"] != nil else {
                throw CheckoutError(.missingField, field: "returnURLs",
                                    message: "Alipay returns through a URL scheme: register a custom-scheme return route (or set intent.metadata[\"citcon.scheme\"])",
                                    gateway: gateway)
            }
        default:
            break
        }
        return customScheme ?? offered.first
    }

    /// Whether `url` is a web address (a universal link) rather than an app's own scheme.
    static func isWeb(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "https" || scheme == "http"
    }

    // MARK: Prepare

    /// Creates the charge with a server token, then hands the app a client token (charge and inquire
    /// only) with the wallet's launch content or the page to open.
    ///
    /// A charge Citcon could not create (no answer, unreachable, a server error) moved no money, so it
    /// fails as `unavailable`: the attempt may go to another gateway. A charge created for which no
    /// client token can be had is cancelled before failing the same way.
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
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
        if let lifetime = settings.chargeLifetime { expiresAt = min(expiresAt, Date().addingTimeInterval(CitconAPI.seconds(lifetime))) }
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method, amount: context.intent.amount,
                           gatewayReference: charge.id, parameters: parameters, returnURL: context.returnURL, expiresAt: expiresAt)
    }

    /// The charge request for an attempt: every part of the SDK's `CPayRequest` Till can fill. The
    /// return URL (chosen by ``returnURL(from:for:)``) gives the app's scheme or universal link;
    /// `intent.metadata["citcon.scheme"]` and `["citcon.universal_link"]` override them.
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
        if Self.isWeb(returnURL) {
            var components = URLComponents(url: returnURL, resolvingAgainstBaseURL: false)
            components?.query = nil
            components?.fragment = nil
            universalLink = components?.url?.absoluteString
        } else {
            scheme = returnURL.scheme
        }
        if let override = intent.metadata["citcon.scheme"] { scheme = override }
        if let override = intent.metadata["citcon.universal_link"] { universalLink = override }

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
            expiry = Int64((now.timeIntervalSince1970 + CitconAPI.seconds(lifetime)) * 1_000)
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

    // MARK: Confirm

    /// Checks the IPN's `sign` with the API secret, then reads the report from its signed fields only.
    /// - Throws: ``CheckoutError`` in category `verification` for a bad or missing signature or a
    ///   `fields` list that leaves out what Till reads; `invalid_input` for a malformed body or a
    ///   field sent twice (`duplicate_field`).
    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let fields: CitconIPNFields
        let signed: Set<String>
        do {
            fields = try CitconIPNFields.parse(notification.body, mediaType: notification.mediaType)
            signed = try CitconSignature.verify(fields, secret: credentials.apiSecret)
        } catch {
            throw error.attributed(to: gateway)
        }
        return VerifiedNotification(report: try report(fromIPN: fields, signed: signed))
    }

    /// The `reference` an IPN claims, unverified (to start an inquiry when verification fails).
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
        var status = CitconGateway.status(raw)
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

    /// The charge's status from `GET /v1/transactions/{id}`, with the server token.
    /// - Throws: ``CheckoutError`` `unknown_outcome` when no transaction id is known, the transaction
    ///   belongs to another order, or the answer confirms a payment without its amount.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
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
        let status = CitconGateway.status(raw)
        let amount = try money(minor: charge.amount.map(String.init), currency: charge.currency)
        if status == .paid || status == .authorized, amount == nil {
            throw CheckoutError(.unknownOutcome, message: "Citcon's answer confirms a payment without its amount", gateway: gateway)
        }
        return StatusReport(gateway: gateway, attempt: query.attempt, gatewayReference: charge.id, status: status,
                            amount: amount, gatewayStatus: raw, eventID: "\(charge.id):inquiry:\(raw)")
    }

    // MARK: Follow-up operations

    /// The transaction as Citcon has it now (`GET /v1/transactions/{id}`), with the server token.
    public func transaction(_ id: String) async throws -> CitconCharge {
        try await transaction(id, token: .server)
    }

    /// Captures an authorised card, PayPal or Venmo charge.
    public func capture(transactionID: String, amount: Money) async throws -> CitconOperation {
        try await call(.post, "captures", body: CitconOperationRequest(transactionID: transactionID, amount: amount.minorUnits),
                       as: CitconOperation.self, token: .server)
    }

    /// Refunds part or all of a paid charge.
    public func refund(transactionID: String, amount: Money, reason: String? = nil) async throws -> CitconOperation {
        try await call(.post, "refunds",
                       body: CitconOperationRequest(transactionID: transactionID, amount: amount.minorUnits, reason: reason),
                       as: CitconOperation.self, token: .server)
    }

    /// Cancels a pending or authorised charge.
    public func cancel(transactionID: String) async throws -> CitconOperation {
        try await call(.post, "cancels", body: CitconOperationRequest(transactionID: transactionID),
                       as: CitconOperation.self, token: .server)
    }

    // MARK: Plumbing

    private func transaction(_ id: String, token: CitconTokenType) async throws -> CitconCharge {
        guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }), !id.isEmpty, id.count <= 64 else {
            throw CheckoutError(.invalidField, field: "id", message: "not a Citcon transaction id", gateway: gateway)
        }
        return try await call(.get, "transactions/\(id)", body: Optional<CitconNoBody>.none, as: CitconCharge.self, token: token)
    }

    /// An access token of `type`, cached.
    private func token(_ type: CitconTokenType, minimumLifetime: Duration = .seconds(60)) async throws -> CitconToken {
        let (api, apiKey, gateway) = (self.api, credentials.apiKey, self.gateway)
        let fetch: @Sendable () async throws -> CitconToken = {
            let answer = try await api.send(.post, "access-tokens", body: CitconTokenRequest(tokenType: type), as: CitconAccessToken.self,
                                            bearer: apiKey)
            guard !answer.accessToken.isEmpty else {
                throw CheckoutError(.gatewayError, category: .configuration, message: "Citcon issued an empty access token", gateway: gateway)
            }
            // Believe at most a day: a far-future or absurd expiry must not keep a token forever (or overflow).
            let now = Date()
            let claimed = answer.expiry.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? now.addingTimeInterval(3_600)
            return CitconToken(value: answer.accessToken, expiresAt: min(claimed, now.addingTimeInterval(86_400)))
        }
        do {
            return try await tokens.token(type, minimumLifetime: CitconAPI.seconds(minimumLifetime), fetch: fetch)
        } catch let error as CheckoutError where error.code == CitconAPI.tokenRefused {
            throw CheckoutError(.misconfigured, category: .configuration, field: "credentials.api_key",
                                message: "Citcon refused the merchant API key", gateway: gateway, gatewayCode: error.gatewayCode)
        }
    }

    /// Calls the API with a cached token; an expired token (HTTP 401) is replaced and the call made
    /// once more (a 401 means the request was not processed).
    private func call<Body: Encodable, Answer: Decodable>(_ method: TransportRequest.Method, _ path: String, body: Body?, as: Answer.Type,
                                                          token type: CitconTokenType) async throws -> Answer {
        let first = try await token(type)
        do {
            return try await api.send(method, path, body: body, as: Answer.self, bearer: first.value)
        } catch let error as CheckoutError where error.code == CitconAPI.tokenRefused {
            tokens.invalidate(type, value: first.value)
            let second = try await token(type)
            return try await api.send(method, path, body: body, as: Answer.self, bearer: second.value)
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
}
