import Foundation
import TillCitcon
import TillGatewayKit
import TillOrchestration

/// Citcon UPI: the **server half**, a ``GatewayServerHalf``. It holds the merchant's API key and secret:
/// it creates charges (Prepare), checks IPNs and inquires (Confirm), and refunds and cancels. The app
/// half is ``CitconGateway``, in `TillCitcon`.
///
/// | step | Citcon |
/// |---|---|
/// | Return URL | WeChat Pay returns through a universal link, the other methods through the app's URL scheme when one is offered (``returnURL(from:for:)``) |
/// | Prepare | a server access token creates the charge (`POST /v1/charges`) with the attempt reference as `transaction.reference`; a client token (charge and inquire only) goes to the app |
/// | Confirm | the IPN, checked with the API secret (SHA-256 `sign`), or `GET /v1/transactions/{id}` |
///
/// Access tokens are cached per value (and its copies) until shortly before they expire.
public struct CitconServer: GatewayServerHalf {
    /// The gateway id in the merchant's configuration.
    public let gateway: GatewayID
    /// Where the API is; the app must use the same one.
    public let environment: CitconEnvironment
    /// The wallet client, acceleration, UnionPay mode and preparation lifetime.
    public let settings: CitconSettings
    private let credentials: CitconCredentials
    private let api: CitconAPI
    private let orderDetails: (@Sendable (AttemptContext) -> CitconOrderDetails?)?
    private let tokens = CitconTokenCache()

    /// - Parameters:
    ///   - id: the gateway id in the merchant's configuration.
    ///   - environment: where the API is; the app must use the same one.
    ///   - credentials: the merchant's API key and secret.
    ///   - settings: the wallet client, acceleration, UnionPay mode and preparation lifetime.
    ///   - transport: how requests are sent.
    ///   - orderDetails: goods, shipping and billing address for an attempt.
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

    /// Methods whose charge needs `consumer.reference` (Citcon's Phase 1 manual for the PayPal and
    /// Venmo WebSDK; the iOS SDK guide for card, PayPal and Venmo).
    static let consumerReferenceMethods: Set<PaymentMethod> = [.card, .paypal, .venmo]

    /// Methods whose charge may carry `transaction.country_accelerator` (the sandbox accepted it for
    /// WeChat Pay and UnionPay).
    static let acceleratedMethods: Set<PaymentMethod> = [.wechatPay, .unionPay]

    // MARK: Return URL

    /// The return URL for the method: WeChat Pay's SDK returns through a universal link, so the first
    /// `https` URL offered; Alipay's through the app's URL scheme, so the first custom-scheme URL; the
    /// other methods prefer a custom scheme, else take the first offered (the iOS SDK guide requires a
    /// universal link for WeChat Pay and a scheme for Alipay).
    /// - Throws: ``CheckoutError`` `missing_field` naming `returnURLs` when WeChat Pay is offered no
    ///   `https` URL, or Alipay no custom-scheme URL.
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? {
        let universalLink = offered.first { $0.scheme?.lowercased() == "https" }
        let customScheme = offered.first { !Self.isWeb($0) }
        switch intent.method {
        case .wechatPay:
            guard let universalLink else {
                throw CheckoutError(.missingField, field: "returnURLs",
                                    message: "WeChat Pay returns through a universal link: register a universal-link (https) return route",
                                    gateway: gateway)
            }
            return universalLink
        case .alipay:
            guard let customScheme else {
                throw CheckoutError(.missingField, field: "returnURLs",
                                    message: "Alipay returns through a URL scheme: register a custom-scheme return route", gateway: gateway)
            }
            return customScheme
        default:
            return customScheme ?? offered.first
        }
    }

    /// Whether `url` is a web address (a universal link) rather than an app's own scheme.
    static func isWeb(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "https" || scheme == "http"
    }

    // MARK: Prepare

    /// Creates the charge with a server token, picks what the app opens from its `payment.client[]`
    /// (``CitconCharge/launch(allowPlainHTTP:)``), then hands the app a client token (charge and
    /// inquiry only) with it.
    ///
    /// A charge Citcon could not create (no answer, unreachable, a server error, an answer that names
    /// no charge) moved no money, so it fails as `unavailable`: the attempt may go to another gateway.
    /// A charge that was created but that Till cannot use (nothing the app can open, or no client
    /// token) is cancelled (`POST /v1/cancels`) before failing the same way, so nothing is left open.
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let request = try chargeRequest(for: context)
        let charge: CitconCharge
        do {
            charge = try await call(.post, "charges", body: request, as: CitconCharge.self, token: .server)
        } catch let error as CheckoutError where error.category == .unknownOutcome || error.category == .unavailable {
            // Even if Citcon created the charge, it moves money only once a customer approves it in the
            // wallet or on the page, and nobody has its content: safe to try elsewhere. (This holds
            // because Till never sends a vaulted payment token, which could charge at once.)
            throw CheckoutError(.gatewayUnreachable, category: .unavailable, message: "no Citcon charge: \(error.message)",
                                gateway: gateway, gatewayCode: error.gatewayCode, gatewayMessage: error.gatewayMessage)
        }
        guard charge.reference == nil || charge.reference == context.attempt.rawValue else {
            // Another order's charge: never touched (not even cancelled).
            throw CheckoutError(.gatewayError, category: .unavailable, message: "Citcon answered with another order's charge", gateway: gateway)
        }
        guard let launch = charge.launch(allowPlainHTTP: environment.allowsPlainHTTP) else {
            let cancelled = await cancelUnused(charge, attempt: context.attempt)
            throw CheckoutError(.gatewayError, category: .unavailable, field: "payment.client",
                                message: "Citcon's answer holds nothing the app can open (\(cancelled ? "the charge was cancelled" : "cancelling the charge failed; it was never handed to anyone"))",
                                gateway: gateway)
        }
        let clientToken: CitconToken
        do {
            clientToken = try await token(.client, minimumLifetime: settings.clientTokenMinimumLifetime)
        } catch {
            // The charge exists but no app will ever get it: cancel it before moving on.
            _ = await cancelUnused(charge, attempt: context.attempt)
            throw CheckoutError(.gatewayUnreachable, category: .unavailable,
                                message: "no client token (the charge was cancelled): \((error as? CheckoutError)?.message ?? "failure")",
                                gateway: gateway, gatewayCode: (error as? CheckoutError)?.gatewayCode)
        }

        let prepared: CitconPreparation.Launch
        switch launch {
        case .wallet(let method, let content):
            var content = content
            if method == "upop", content["mode"] == nil { content["mode"] = settings.unionpayMode }
            prepared = .wallet(method, parameters: content)
        case .page(let url):
            prepared = .page(url.absoluteString)
        }
        let parameters = CitconPreparation(chargeID: charge.id, accessToken: clientToken.value,
                                           accessTokenExpiry: Int64(clientToken.expiresAt.timeIntervalSince1970.rounded(.down)),
                                           environment: environment.name, method: request.payment.method, launch: prepared).parameters
        var expiresAt = clientToken.expiresAt
        if let lifetime = settings.chargeLifetime { expiresAt = min(expiresAt, Date().addingTimeInterval(CitconAPI.seconds(lifetime))) }
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method, amount: context.intent.amount,
                           gatewayReference: charge.id, parameters: parameters, returnURL: context.returnURL, expiresAt: expiresAt)
    }

    /// The reference of the cancel Till sends for an attempt's unused charge.
    static func cancelReference(for attempt: AttemptReference) -> String { "\(attempt.rawValue)-cancel" }

    /// Cancels a charge Till created but cannot use; true when Citcon answered the cancel.
    private func cancelUnused(_ charge: CitconCharge, attempt: AttemptReference) async -> Bool {
        let body = CitconCancelRequest(id: charge.id, reference: Self.cancelReference(for: attempt), transactionReference: attempt.rawValue)
        return (try? await call(.post, "cancels", body: body, as: CitconOperation.self, token: .server)) != nil
    }

    /// What Citcon needs of a payment, by the rules ``chargeRequest(for:)`` applies (the method and action it
    /// offers, the country, a positive amount, a note of at most 128 characters, the consumer's reference for the
    /// methods that need one), checked with no call (also when the payment is created). The return URL is the
    /// attempt's, not the payment's, so a stand-in takes its place here.
    public func requirementIssues(for intent: PaymentIntent) -> [CheckoutError] {
        let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: "requirementcheck"),
                                     returnURL: URL(string: "https://requirement.check/return"))
        do {
            _ = try chargeRequest(for: context)
            return []
        } catch let error as CheckoutError {
            return [error]
        } catch {
            return [CheckoutError(.invalidField, field: "intent", message: "Citcon cannot take this payment", gateway: gateway)]
        }
    }

    /// The charge request for an attempt: `transaction`, `payment`, `urls`, and `consumer` and
    /// `goods` when known. Wallets (WeChat Pay, Alipay, UnionPay) ask for ``CitconSettings/walletClient``;
    /// every other method for `mobile_browser`.
    /// - Throws: ``CheckoutError`` naming the field of the intent or context at fault.
    public func chargeRequest(for context: AttemptContext) throws -> CitconChargeRequest {
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
        let customer = intent.customer
        if Self.consumerReferenceMethods.contains(method), (customer.reference ?? "").isEmpty {
            throw CheckoutError(.missingField, field: "intent.customer.reference",
                                message: "Citcon needs consumer.reference for \(method)", gateway: gateway)
        }

        let details = orderDetails?(context)
        let hasConsumer = [customer.reference, customer.firstName, customer.lastName, customer.phone, customer.email].contains { $0 != nil }
        let client = CitconMethods.nativeWallets[method] != nil ? settings.walletClient.rawValue : CitconSettings.WalletClient.mobileBrowser.rawValue
        return CitconChargeRequest(
            transaction: .init(reference: context.attempt.rawValue, amount: intent.amount.minorUnits, currency: intent.amount.currency.code,
                               country: country.code,
                               countryAccelerator: Self.acceleratedMethods.contains(method) ? settings.countryAccelerator : nil,
                               autoCapture: Self.capturableMethods.contains(method) ? intent.action == .sale : nil,
                               note: intent.description),
            consumer: hasConsumer ? .init(reference: customer.reference, firstName: customer.firstName, lastName: customer.lastName,
                                          phone: customer.phone, email: customer.email) : nil,
            payment: .init(method: CitconMethods.wireName(of: method), indicator: details?.indicator, client: [client],
                           billingAddress: details?.billingAddress),
            goods: details?.goods,
            urls: .init(ipn: context.notificationURL?.absoluteString,
                        success: Self.returnURL(returnURL, result: "success"),
                        fail: Self.returnURL(returnURL, result: "fail"),
                        cancel: Self.returnURL(returnURL, result: "cancel")))
    }

    /// The attempt's return URL with `citcon_result=<result>` added (its state kept).
    static func returnURL(_ url: URL, result: String) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "citcon_result", value: result)]
        return components.url?.absoluteString ?? url.absoluteString
    }

    // MARK: Confirm

    /// Checks the IPN's `sign` with the API secret, then reads the report from its signed fields only.
    ///
    /// A verified IPN is always answered with a report, so it is stored and acknowledged; one that
    /// moves no money in Till's terms (a chargeback, a vault notice, a refund that failed, a paid
    /// charge without its amount) gets a `citcon_…` status that is recorded and never applied.
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
        let report = try report(fromIPN: fields, signed: signed)
        // A refund IPN triggers, the server's inquiry decides: no source says whether its `amount` is the refund's
        // or the charge's, and `amount_refunded` may be empty (the IPN document's own example), so the IPN alone
        // could book a $20 refund of a $100 charge as a full one. The inquiry's `amount_refunded` is the total.
        // It also settles the refund it names (by Till's reference, else its id), with no amount of its own.
        var operation: OperationReport?
        if Self.signedValue("transaction_type", in: fields, signed: signed) == "refund" {
            operation = Self.operation(ofRefundIPN: Self.signedValue("reference", in: fields, signed: signed),
                                       id: Self.signedValue("id", in: fields, signed: signed),
                                       status: Self.signedValue("status", in: fields, signed: signed) ?? "")
        }
        return VerifiedNotification(report: report, confirmBeforeApplying: report.status == .refunded || report.status == .partiallyRefunded,
                                    operation: operation)
    }

    /// The `reference` an IPN claims, unverified (to start an inquiry when verification fails).
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? CitconIPNFields.parse(notification.body, mediaType: notification.mediaType))?["reference"]
            .flatMap { $0.isEmpty ? nil : AttemptReference(rawValue: $0) }
    }

    /// The report of a verified IPN, read only from its signed fields: whatever `fields` does not
    /// list could have been added on the way, so it is never looked at.
    ///
    /// - `charge`: the status in Till's terms with the signed amount; a `paid` or `authorized` without
    ///   a readable amount and currency becomes `citcon_charge_<status>_without_amount` (never applied).
    /// - `refund`: for the attempt its `reference` names, or the attempt of a Till refund reference
    ///   (``refundReference(for:sequence:)``). A successful refund is `refunded` only when the signed
    ///   `amount_refunded` reaches the signed `amount_captured`; otherwise `partially_refunded`. Its only
    ///   money is `amount_refunded`, the running total (``StatusReport/refundedTotal``), when it is there:
    ///   the IPN document defines `amount` as "transaction amount" without saying whose, so it is never read
    ///   as the refund's. It is confirmed by the server's inquiry before anything applies. Each refund IPN is
    ///   its own event (its `id`, `amount`, `amount_refunded` and times are in the event id), so a second
    ///   refund of the same amount is not taken for a repeat of the first. A refund that did not succeed is
    ///   `citcon_refund_<status>`.
    /// - `chargeback`, `vault` and any other type: `citcon_<type>_<status>`, no amount.
    func report(fromIPN all: CitconIPNFields, signed: Set<String>) throws -> StatusReport {
        func value(_ name: String) -> String? { Self.signedValue(name, in: all, signed: signed) }
        let type = value("transaction_type") ?? ""
        let id = value("id")
        guard var about = value("reference") ?? id else {
            throw CheckoutError(.missingField, category: .verification, field: "reference", message: "the IPN names no order", gateway: gateway)
        }
        if type == "refund", let reference = value("reference") { about = Self.attempt(fromRefundReference: reference) }
        let raw = value("status") ?? ""
        let currency = value("currency").flatMap(Currency.lookup)
        func money(_ name: String) -> Money? {
            guard let text = value(name), let minor = Int64(text), minor >= 0, let currency else { return nil }
            return Money(minorUnits: minor, currency: currency)
        }
        let amount = money("amount")
        let refunded = value("amount_refunded") ?? ""
        var status: PaymentStatus
        var reported: Money?
        var refundedTotal: Money?
        switch type {
        case "charge":
            status = CitconGateway.status(raw)
            reported = amount
            if status == .paid || status == .authorized, amount == nil {
                status = Self.unmapped("charge", raw, suffix: "without_amount")
            }
            // A partial capture: the signed `amount_captured` below the charge's amount is what moved (see the inquiry).
            if status == .paid, let amount, let captured = money("amount_captured"), captured.minorUnits > 0, captured.minorUnits < amount.minorUnits {
                reported = captured
            }
        case "refund":
            if CitconGateway.status(raw) == .paid {
                let total = money("amount_refunded")
                if let total, let captured = money("amount_captured"), captured.minorUnits > 0, total.minorUnits >= captured.minorUnits {
                    status = .refunded
                } else {
                    status = .partiallyRefunded
                }
                // `amount_refunded` is the running total; `amount` is not known to be this refund's.
                reported = nil
                refundedTotal = total
            } else {
                status = Self.unmapped("refund", raw)
            }
        default:
            status = Self.unmapped(type.isEmpty ? "untyped" : type, raw)
        }
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: about), gatewayReference: id,
                            status: status, amount: reported, refundedTotal: refundedTotal, gatewayStatus: raw.isEmpty ? nil : raw,
                            eventID: Self.eventID(id: id ?? about, type: type, status: raw, refunded: refunded, value: value))
    }

    /// The IPN's field `name` when it is signed (listed in `fields`) and not empty; nothing else is read.
    static func signedValue(_ name: String, in all: CitconIPNFields, signed: Set<String>) -> String? {
        guard signed.contains(name), let text = all[name], !text.isEmpty else { return nil }
        return text
    }

    /// A verified IPN's event id: for a charge its id, type, status and refunded total (as before); for a refund
    /// also its `amount` and its times, which two refunds of one charge do not share even when their amount is.
    static func eventID(id: String, type: String, status: String, refunded: String, value: (String) -> String?) -> String {
        let base = "\(id):\(type):\(status):\(refunded)"
        guard type == "refund" else { return base }
        return base + ":" + ["amount", "time_created", "time_completed"].map { value($0) ?? "" }.joined(separator: ":")
    }

    /// The reference Till gives the `sequence`th refund of `attempt`: its ``OperationReference`` (`<attempt>-r<n>`).
    /// Citcon's refund answer echoes the refund's own reference, so a refund IPN may name the refund rather than
    /// the charge; such a reference maps back to its attempt.
    public static func refundReference(for attempt: AttemptReference, sequence: Int) -> String {
        OperationReference(attempt: attempt, kind: .refund, sequence: min(max(sequence, 1), 999)).rawValue
    }

    /// The attempt a refund IPN's `reference` names: the attempt of Till's refund reference
    /// (``OperationReference``), or the reference itself (a refund IPN naming the charge).
    static func attempt(fromRefundReference reference: String) -> String {
        guard let own = OperationReference(rawValue: reference), own.kind == .refund else { return reference }
        return own.attempt.rawValue
    }

    /// A status Till records and never applies: `citcon_<type>_<status>` in lower case, anything but
    /// letters and digits as `_` (`citcon_chargeback_notification_of_claim`).
    static func unmapped(_ type: String, _ raw: String, suffix: String? = nil) -> PaymentStatus {
        let words = [type, raw.isEmpty ? "notice" : raw] + (suffix.map { [$0] } ?? [])
        let slug = words.joined(separator: "_").lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" }
        var collapsed = ""
        for character in slug where !(character == "_" && collapsed.hasSuffix("_")) { collapsed.append(character) }
        while collapsed.hasSuffix("_") { collapsed.removeLast() }
        return PaymentStatus(rawValue: "citcon_" + String(collapsed.prefix(80)))
    }

    /// The charge's status from `GET /v1/transactions/{id}`, with the server token. A paid charge with
    /// a refunded total is `partially_refunded`, or `refunded` once the total reaches its amount.
    /// - Throws: ``CheckoutError`` `unknown_outcome` when no transaction id is known, the transaction
    ///   belongs to another order, or the answer confirms a payment without its amount.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        guard let id = query.gatewayReference, !id.isEmpty else {
            throw CheckoutError(.unknownOutcome, message: "no Citcon transaction id is known for this attempt", gateway: gateway)
        }
        let charge = try await transaction(id, token: .server)
        return try report(fromInquiry: charge, attempt: query.attempt)
    }

    /// The report of an inquiry's answer for `attempt`.
    func report(fromInquiry charge: CitconCharge, attempt: AttemptReference) throws -> StatusReport {
        guard charge.reference == nil || charge.reference == attempt.rawValue else {
            throw CheckoutError(.unknownOutcome, message: "Citcon's transaction \(charge.id) belongs to another order", gateway: gateway)
        }
        guard let raw = charge.status, !raw.isEmpty else {
            throw CheckoutError(.unknownOutcome, message: "Citcon's answer carries no status", gateway: gateway)
        }
        var status = CitconGateway.status(raw)
        let currency = charge.currency.flatMap(Currency.lookup)
        let amount = charge.amount.flatMap { minor in currency.map { Money(minorUnits: minor, currency: $0) } }
        if status == .paid || status == .authorized, amount == nil {
            throw CheckoutError(.unknownOutcome, message: "Citcon's answer confirms a payment without its amount", gateway: gateway)
        }
        var reported = amount
        // A partial capture (in Citcon's portal, or through the API): `amount_captured` is "amount captured from
        // Customer" (the IPN document; the Android SDK's inquiry model). When it is there and below the charge's
        // amount, the money that moved is it, not the charge's amount, and the money rule will not book the whole.
        // It "might be null" (the iOS guide; invalid for WeChat Pay, Alipay, UnionPay): then the amount decides.
        if status == .paid, let amount, let captured = charge.amountCaptured, captured > 0, captured < amount.minorUnits {
            reported = Money(minorUnits: captured, currency: amount.currency)
        }
        var refundedTotal: Money?
        if status == .paid, let amount, let refunded = charge.amountRefunded, refunded > 0 {
            status = refunded >= amount.minorUnits ? .refunded : .partiallyRefunded
            // The running total, unclamped: a total above the charge is the money rule's to refuse.
            refundedTotal = Money(minorUnits: refunded, currency: amount.currency)
            reported = refundedTotal
        }
        return StatusReport(gateway: gateway, attempt: attempt, gatewayReference: charge.id, status: status,
                            amount: reported, refundedTotal: refundedTotal, gatewayStatus: raw,
                            eventID: "\(charge.id):inquiry:\(raw):\(charge.amountRefunded.map(String.init) ?? "")")
    }

    // MARK: Follow-up operations

    /// The transaction as Citcon has it now (`GET /v1/transactions/{id}`), with the server token.
    public func transaction(_ id: String) async throws -> CitconCharge {
        try await transaction(id, token: .server)
    }

    /// Not supported: no Citcon source shows a capture request or answer, so Till does not guess one.
    /// Capture an authorised charge in Citcon's merchant portal.
    /// - Throws: ``CheckoutError`` `unsupported_action`, always, before anything is sent.
    public func capture(transactionID: String, amount: Money) async throws -> CitconOperation {
        throw CheckoutError(.unsupportedAction, field: "capture",
                            message: "Citcon's capture request is not documented in any source Till was built from", gateway: gateway)
    }

    /// Refunds part or all of a paid charge: `POST /v1/refunds` with `{id, reference, amount, note}`.
    /// - Parameters:
    ///   - transactionID: the charge's id (the attempt's gateway reference).
    ///   - reference: the refund's own reference, unique per refund.
    ///   - amount: how much, in the charge's currency.
    ///   - note: why, for the merchant's records.
    /// - Throws: ``CheckoutError``; a refusal of the refund (code `4202`) is `declined`.
    public func refund(transactionID: String, reference: String, amount: Money, note: String? = nil) async throws -> CitconOperation {
        guard amount.minorUnits > 0 else {
            throw CheckoutError(.invalidAmount, field: "amount", message: "must be positive", gateway: gateway)
        }
        return try await call(.post, "refunds",
                              body: CitconRefundRequest(id: transactionID, reference: reference, amount: amount.minorUnits, note: note),
                              as: CitconOperation.self, token: .server)
    }

    /// Cancels a charge that was not paid: `POST /v1/cancels` with `{id, reference[, transaction_reference]}`.
    /// - Parameters:
    ///   - transactionID: the charge's id.
    ///   - reference: the cancel's own reference.
    ///   - transactionReference: the charge's merchant reference (the attempt reference), if wanted.
    public func cancel(transactionID: String, reference: String, transactionReference: String? = nil) async throws -> CitconOperation {
        try await call(.post, "cancels",
                       body: CitconCancelRequest(id: transactionID, reference: reference, transactionReference: transactionReference),
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
            // Believe at most a day: a far-future or absurd expiry must not keep a token forever.
            let now = Date()
            let claimed = answer.expiryDate ?? now.addingTimeInterval(3_600)
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
}
