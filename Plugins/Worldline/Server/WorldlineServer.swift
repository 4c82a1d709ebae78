import Foundation
import TillGatewayKit
import TillWorldline
import TillOrchestration

/// What a merchant chooses for its Worldline account.
public struct WorldlineServerSettings: Sendable, Hashable {
    /// The merchant id in the Server API's paths (`/v1/{merchantId}/…`).
    public var merchantId: String
    /// `cardPaymentMethodSpecificInput.authorizationMode` for a sale (`SALE`) or an authorisation
    /// (`FINAL_AUTHORIZATION`), unless overridden here. `nil` sends none for a sale (the account's default).
    public var authorizationModeForSale: String?
    public var authorizationModeForAuthorize: String
    /// The `integrator` of `X-GCS-ServerMetaInfo` (the Python SDK requires one).
    public var integrator: String

    public init(merchantId: String, authorizationModeForSale: String? = "SALE", authorizationModeForAuthorize: String = "FINAL_AUTHORIZATION",
                integrator: String = "Till") {
        self.merchantId = merchantId
        self.authorizationModeForSale = authorizationModeForSale
        self.authorizationModeForAuthorize = authorizationModeForAuthorize
        self.integrator = integrator
    }
}

/// Worldline Connect: the **server half**, a ``GatewayServerHalf``. It holds the merchant's API key and
/// webhook keys.
///
/// | step | Worldline Connect |
/// |---|---|
/// | Prepare | `POST /v1/{merchantId}/sessions`: a client session the app uses for the Client API (products, fields, IIN, the public key) |
/// | Present (app) | ``WorldlineGateway`` shows the product's fields and encrypts what the customer entered (JWE) |
/// | Submit | `POST /v1/{merchantId}/payments` with `encryptedCustomerInput`, the attempt reference as `order.references.merchantReference` and as `X-GCS-Idempotence-Key` |
/// | Return | 3-D Secure comes back to `threeDSecure.redirectionData.returnUrl` (informational) |
/// | Confirm | webhooks signed with a webhook key (`X-GCS-Signature`, `X-GCS-KeyId`), or `GET /v1/{merchantId}/payments/{id}` (by `merchantReference` when the payment id was never learned) |
///
/// Captures, voids and refunds are Till's operations (``perform(_:)``, ``inquireOperation(_:)``, `WorldlineServer+Operations.swift`),
/// built on ``approve(paymentId:amount:idempotenceKey:)``, ``capture(paymentId:amount:isFinal:idempotenceKey:reference:)``,
/// ``cancel(paymentId:idempotenceKey:)`` and ``refund(paymentId:amount:attempt:sequence:)``; their results also arrive as
/// webhooks.
public struct WorldlineServer: GatewayServerHalf {
    public let gateway: GatewayID
    public let environment: WorldlineEnvironment
    public let settings: WorldlineServerSettings
    let api: WorldlineServerAPI

    /// - Parameters:
    ///   - id: the gateway id in the merchant's configuration.
    ///   - environment: where the Server API is.
    ///   - credentials: the API key and the webhook keys.
    ///   - settings: merchant id, authorisation modes, integrator.
    ///   - transport: how requests are sent.
    ///   - now: the clock of the `Date` header (tests pin it).
    public init(id: GatewayID = "worldline", environment: WorldlineEnvironment, credentials: WorldlineCredentials,
                settings: WorldlineServerSettings, transport: any HTTPTransport, now: @escaping @Sendable () -> Date = { Date() }) {
        self.gateway = id
        self.environment = environment
        self.settings = settings
        self.api = WorldlineServerAPI(gateway: id, environment: environment, merchantId: settings.merchantId, credentials: credentials,
                                      integrator: settings.integrator, transport: transport, now: now)
    }

    public var capabilities: GatewayCapabilities { WorldlineGateway.capabilities }

    // MARK: Prepare

    /// What Worldline needs of a payment, checked before any call (also when the payment is created): a currency
    /// its two-decimal amounts can express (``WorldlineAmount``), and the country, on which its payment products
    /// depend.
    public func requirementIssues(for intent: PaymentIntent) -> [CheckoutError] {
        var issues: [CheckoutError] = []
        do { _ = try WorldlineAmount.wire(intent.amount, field: "intent.amount.currency", gateway: gateway) } catch { issues.append(error) }
        do { _ = try country(of: intent) } catch { issues.append(error) }
        return issues
    }

    /// The payment's country, on which Worldline's payment products depend: required.
    private func country(of intent: PaymentIntent) throws(CheckoutError) -> CountryCode {
        guard let country = intent.country else {
            throw CheckoutError(.missingField, field: "intent.country", message: "Worldline's payment products depend on the country", gateway: gateway)
        }
        return country
    }

    /// Creates a client session (`POST /v1/{merchantId}/sessions`, an empty `SessionRequest`). The app
    /// gets the session (``WorldlinePreparation``), the payment context (amount, currency, country,
    /// locale) and nothing secret: a client session can only read products and encrypt for the gateway.
    /// - Throws: ``CheckoutError`` `missing_field` naming `intent.country` (Worldline's products depend on
    ///   the country); the Server API's failures as classified by the status.
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let intent = context.intent
        // Refused before any call: what the payment lacks (a currency Worldline's amounts cannot express, the country).
        if let issue = requirementIssues(for: intent).first { throw issue }
        let country = try country(of: intent)
        let request = try api.request(.post, "/sessions", body: try api.body(WorldlineSessionRequest()))
        let session = try api.decode(try await api.send(request), as: WorldlineSessionResponse.self)
        let preparation = WorldlinePreparation(
            clientSessionId: try required(session.clientSessionId, "answer.clientSessionId"),
            customerId: try required(session.customerId, "answer.customerId"),
            clientApiUrl: try required(session.clientApiUrl, "answer.clientApiUrl"),
            assetUrl: try required(session.assetUrl, "answer.assetUrl"),
            countryCode: country.code, locale: intent.customer.locale, isRecurring: false)
        return Preparation(gateway: gateway, attempt: context.attempt, method: intent.method, amount: intent.amount,
                           parameters: preparation.parameters, returnURL: context.returnURL)
    }

    private func required(_ value: String?, _ field: String) throws(CheckoutError) -> String {
        guard let value, !value.isEmpty else {
            throw CheckoutError(.malformedBody, category: .unavailable, field: field, message: "the session answer lacks \(field)", gateway: gateway)
        }
        return value
    }

    // MARK: Submit

    /// Creates the payment from the app's encrypted input (`POST /v1/{merchantId}/payments`).
    ///
    /// The attempt reference is `order.references.merchantReference` (so an inquiry finds the payment
    /// even when this answer is lost) and `X-GCS-Idempotence-Key` (a resent request is not a second
    /// payment). The app's `encodedClientMetaInfo` is checked (a JSON object) and forwarded as
    /// `X-GCS-ClientMetaInfo`.
    /// - Throws: ``CheckoutError``: `invalid_field` naming `submission.fields.…` for a payload that is not
    ///   a JWE or meta information that is not JSON (nothing was sent); a decline (`declined`, soft when
    ///   Worldline says the payment `isRetriable`) for a body with `paymentResult`; the Server API's other
    ///   failures as classified by the status (a 5xx or 409 is `unknown_outcome`).
    public func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        guard submission.kind == WorldlineGateway.submissionKind else {
            throw CheckoutError(.invalidField, field: "submission.kind", message: "expected \(WorldlineGateway.submissionKind)", gateway: gateway)
        }
        let input = try WorldlineSubmission(submission, gateway: gateway)
        let intent = context.intent
        let returnURL = context.returnURL?.absoluteString
        let card = WorldlineCreatePaymentRequest.CardInput(
            authorizationMode: intent.action == .authorize ? settings.authorizationModeForAuthorize : settings.authorizationModeForSale,
            // A sale is captured without the merchant's approval; an authorisation waits for the capture.
            requiresApproval: intent.action == .authorize,
            threeDSecure: returnURL.map { .init(redirectionData: .init(returnUrl: $0)) })
        var customer: WorldlineCreatePaymentRequest.Order.Customer?
        if intent.customer.email != nil || intent.country != nil || intent.customer.locale != nil {
            customer = .init(billingAddress: intent.country.map { .init(countryCode: $0.code) },
                             contactDetails: intent.customer.email.map { .init(emailAddress: $0) }, locale: intent.customer.locale,
                             merchantCustomerId: nil)
        }
        let body = WorldlineCreatePaymentRequest(
            encryptedCustomerInput: input.encryptedCustomerInput,
            order: .init(amountOfMoney: WorldlineAmountOfMoney(amount: try WorldlineAmount.wire(intent.amount, field: "intent.amount", gateway: gateway),
                                                               currencyCode: intent.amount.currency.code),
                         references: .init(merchantReference: context.attempt.rawValue, descriptor: nil), customer: customer),
            cardPaymentMethodSpecificInput: card)
        let request = try api.request(.post, "/payments", body: try api.body(body), clientMetaInfo: input.clientMetaInfo,
                                      idempotenceKey: context.attempt.rawValue)
        let response = try await api.send(request)
        if let declined = WorldlineServerAPI.errorBody(response), let result = declined.paymentResult {
            throw decline(result, errors: declined.errors ?? [])
        }
        let result = try api.decode(response, as: WorldlineCreatePaymentResult.self)
        guard let payment = result.payment, let id = payment.id else {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "answer.payment.id", message: "the answer names no payment",
                                gateway: gateway)
        }
        if let reference = payment.paymentOutput?.references?.merchantReference, reference != context.attempt.rawValue {
            throw CheckoutError(.unknownOutcome, field: "answer.payment.paymentOutput.references.merchantReference",
                                message: "Worldline answered about another order", gateway: gateway)
        }
        let report = try WorldlineStatus.report(payment, attempt: context.attempt, gateway: gateway, event: "create")
        if result.merchantAction?.actionType == "REDIRECT", let text = result.merchantAction?.redirectData?.redirectURL {
            guard let url = URL(string: text), ["https", "http"].contains(url.scheme?.lowercased() ?? "") else {
                throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "answer.merchantAction.redirectData.redirectURL",
                                    message: "the redirect is not a web address", gateway: gateway)
            }
            return SubmitResult(next: .openURL(url, handoff: .threeDSecure), report: report, gatewayReference: id)
        }
        if let action = result.merchantAction?.actionType {
            // SHOW_FORM, SHOW_INSTRUCTIONS, MOBILE_THREEDS_CHALLENGE, CALL_THIRD_PARTY …: not a card flow Till drives.
            return SubmitResult(next: .unsupported(type: "worldline.merchantAction.\(action)"), report: report, gatewayReference: id)
        }
        let outcome: ClientOutcome.Kind = switch report.status {
        case .paid, .authorized: .succeeded
        case .failed, .cancelled: .failed
        default: .pending
        }
        return SubmitResult(next: .completed(ClientOutcome(outcome, gatewayCode: payment.status)), report: report, gatewayReference: id)
    }

    /// The error of a declined payment (`paymentResult` in the error body, python `exception_factory.py`).
    func decline(_ result: WorldlineCreatePaymentResult, errors: [WorldlineAPIError.Item]) -> CheckoutError {
        let status = result.payment?.status
        let first = result.payment?.statusOutput?.errors?.first ?? errors.first
        // `isRetriable` (order_status_output.py): "whether a rejected payment may be retried by the merchant
        // without incurring a fee".
        let retriable = result.payment?.statusOutput?.isRetriable ?? false
        return CheckoutError(.declined, category: retriable ? .declinedSoft : .declinedHard, field: nil,
                             message: "Worldline declined the payment (\(status ?? "REJECTED"))", gateway: gateway,
                             gatewayCode: first?.code ?? status, gatewayMessage: GatewayText.safe(first?.message))
    }

    // MARK: Confirm: inquiry

    /// `GET /v1/{merchantId}/payments/{id}` when the payment id is known, else
    /// `GET /v1/{merchantId}/payments?merchantReference=…` (the attempt reference; python
    /// `find_payments_params.py`). The payment must name the attempt.
    /// - Throws: ``CheckoutError`` `attempt_not_found` when Worldline has no payment for the attempt.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        let payment: WorldlinePayment
        if let id = query.gatewayReference, !id.isEmpty {
            let request = try api.request(.get, "/payments/\(WorldlineServerAPI.pathSegment(id))")
            payment = try api.decode(try await api.send(request), as: WorldlinePayment.self)
        } else {
            let request = try api.request(.get, "/payments", query: [("merchantReference", query.attempt.rawValue), ("limit", "10")])
            let found = try api.decode(try await api.send(request), as: WorldlineFindPaymentsResponse.self)
            let mine = (found.payments ?? []).filter { $0.paymentOutput?.references?.merchantReference == query.attempt.rawValue }
            // With idempotence one attempt is one payment; should there be several, the most advanced decides.
            guard let best = mine.max(by: { WorldlineStatus.rank($0.status) < WorldlineStatus.rank($1.status) }) else {
                throw CheckoutError(.attemptNotFound, field: "merchantReference", message: "Worldline has no payment for this attempt",
                                    gateway: gateway)
            }
            payment = best
        }
        if let reference = payment.paymentOutput?.references?.merchantReference, reference != query.attempt.rawValue {
            throw CheckoutError(.unknownOutcome, field: "answer.paymentOutput.references.merchantReference",
                                message: "Worldline answered about another order", gateway: gateway)
        }
        return try WorldlineStatus.report(payment, attempt: query.attempt, gateway: gateway, event: "inquiry")
    }

    // MARK: Confirm: webhooks

    /// Worldline's endpoint verification: a `GET` carrying `X-GCS-Webhooks-Endpoint-Verification`, answered
    /// with that value as the body (docs `documentation/webhooks`: "echo the
    /// 'X-GCS-Webhooks-Endpoint-Verification' header value in the body"; the docs name no content type,
    /// so `text/plain`).
    public func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement? {
        // Only a short, printable token is echoed (the docs give no format; Till's cap): the echo is no
        // place to reflect arbitrary content.
        guard let value = request.headers["x-gcs-webhooks-endpoint-verification"], !value.isEmpty, value.utf8.count <= 512,
              value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value <= 0x7E }) else { return nil }
        return NotificationAcknowledgement(statusCode: 200, contentType: "text/plain", body: Data(value.utf8))
    }

    /// A webhook: the signature checked over the raw body with the key `X-GCS-KeyId` names, then the
    /// event read (`apiVersion` must be `v1`, python `webhooks_helper.py`; `merchantId` must be this
    /// account's).
    ///
    /// A `payment.*` event carries the whole payment, but it is a trigger: the server inquires the attempt
    /// (by its own payment id, else by `merchantReference`) before anything changes, because another
    /// payment created with the merchant's key may carry the same reference. (The signature covers every
    /// byte, so an event cannot be re-cut; a replay is a duplicate event id.) A `refund.*` event is a
    /// trigger too: the payment's `amountRefunded` decides.
    /// Other events (tokens, payouts, disputes) are stored and acknowledged, never applied.
    /// - Throws: ``CheckoutError`` in category `verification` for a missing header, an unknown key id or
    ///   a signature that does not match; `malformed_body` for an event that cannot be read.
    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        do {
            _ = try WorldlineWebhookSignature(secrets: api.credentials.webhookKeys).verify(notification)
        } catch {
            throw error.attributed(to: gateway)
        }
        let event: WorldlineWebhookEvent
        do { event = try JSONDecoder().decode(WorldlineWebhookEvent.self, from: notification.body) } catch {
            throw CheckoutError(.malformedBody, field: GatewayHTTPClient.fieldPath(of: error), message: "the event cannot be read",
                                gateway: gateway)
        }
        guard event.apiVersion == "v1" else {
            throw CheckoutError(.invalidField, field: "body.apiVersion", message: "expected v1", gateway: gateway)
        }
        guard let id = event.id, !id.isEmpty, let type = event.type else {
            throw CheckoutError(.missingField, field: "body.id", message: "the event has no id or type", gateway: gateway)
        }
        guard event.merchantId == settings.merchantId else {
            throw CheckoutError(.invalidField, category: .verification, field: "body.merchantId", message: "the event is another account's",
                                gateway: gateway)
        }
        if type.hasPrefix("payment."), let payment = event.payment {
            guard let reference = payment.paymentOutput?.references?.merchantReference, !reference.isEmpty else {
                return VerifiedNotification(report: Self.unattributed(event, id: id, type: type, gateway: gateway))
            }
            var report = try WorldlineStatus.report(payment, attempt: AttemptReference(rawValue: reference), gateway: gateway, event: id)
            report.eventID = "event:\(id)"
            // The event is Worldline's, but not necessarily about the attempt's own payment: anyone with the
            // merchant's API key can create another payment carrying the same merchantReference (a back
            // office, an old integration), and its events name the attempt too. So the event triggers and
            // the server's inquiry (the attempt's own payment id, or every payment of the reference)
            // decides: one GET per event that would change the attempt.
            // No operation is read from a payment event: an approval and a cancel have no id of their own and the payment
            // names none of Till's references for them, so only kind and amount could match one, and the event may be
            // another payment's carrying the same merchantReference. Those operations settle by their answer or by
            // inquireOperation (the attempt's own payment id).
            return VerifiedNotification(report: report, confirmBeforeApplying: true)
        }
        if type.hasPrefix("refund."), let refund = event.refund,
           let reference = refund.refundOutput?.references?.merchantReference.flatMap(Self.attempt(ofRefundReference:)) {
            // The refund's own status says little about the payment's money: the inquiry decides. The refund itself is an
            // operation: Till's when its reference is one (``refundOperation(_:)``).
            let amount = refund.refundOutput?.amountOfMoney.flatMap { WorldlineStatus.money($0) }
            let report = StatusReport(gateway: gateway, attempt: reference, status: .partiallyRefunded,
                                      amount: amount, gatewayStatus: refund.status, eventID: "event:\(id)")
            return VerifiedNotification(report: report, confirmBeforeApplying: true, operation: Self.refundOperation(refund))
        }
        if type.hasPrefix("capture."), let capture = event.capture,
           let reference = capture.captureOutput?.references?.merchantCaptureReference.flatMap(OperationReference.init(rawValue:))?.attempt
            ?? capture.captureOutput?.references?.merchantReference.map(AttemptReference.init(rawValue:)) {
            // A capture resource's event (`webhooks_event.py` names `capture`; no event-type page lists `capture.*` names): a
            // trigger for the attempt, and the capture's own operation.
            let amount = capture.captureOutput?.amountOfMoney.flatMap { WorldlineStatus.money($0) }
            let report = StatusReport(gateway: gateway, attempt: reference, gatewayReference: nil, status: .paid, amount: amount,
                                      gatewayStatus: capture.status, eventID: "event:\(id)")
            return VerifiedNotification(report: report, confirmBeforeApplying: true, operation: Self.captureOperation(capture))
        }
        return VerifiedNotification(report: Self.unattributed(event, id: id, type: type, gateway: gateway))
    }

    /// An event that names no attempt (a token, payout or dispute, or a payment made outside Till): kept
    /// under a reference no attempt has, with a status Till does not know, so it is stored and never applied.
    static func unattributed(_ event: WorldlineWebhookEvent, id: String, type: String, gateway: GatewayID) -> StatusReport {
        StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: "worldline-event-\(id)"),
                     gatewayReference: event.payment?.id ?? event.refund?.id ?? event.capture?.id, status: PaymentStatus(rawValue: "worldline.\(type)"),
                     gatewayStatus: type, eventID: "event:\(id)")
    }

    /// The attempt a webhook names, read without verifying it (to inquire when verification fails).
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        guard let event = try? JSONDecoder().decode(WorldlineWebhookEvent.self, from: notification.body) else { return nil }
        if let reference = event.payment?.paymentOutput?.references?.merchantReference, !reference.isEmpty {
            return AttemptReference(rawValue: reference)
        }
        if let reference = event.refund?.refundOutput?.references?.merchantReference.flatMap(Self.attempt(ofRefundReference:)) {
            return reference
        }
        return event.capture?.captureOutput?.references?.merchantCaptureReference.flatMap(OperationReference.init(rawValue:))?.attempt
    }

    // MARK: Follow-up operations

    /// Approves (captures) a `PENDING_APPROVAL` payment (`POST …/payments/{id}/approve`, python `approve_payment_request.py`):
    /// the single capture such a payment allows ("the PENDING_APPROVAL status is used for payments that only allow a single
    /// capture", API reference `payments/approve`). `amount` (`nil`: the authorised amount) may be lower than authorised.
    /// - Parameter idempotenceKey: `X-GCS-Idempotence-Key`, so a retry is not a second approval.
    public func approve(paymentId: String, amount: Money? = nil, idempotenceKey: String) async throws -> WorldlinePaymentApprovalResponse {
        try api.decode(try await sendApprove(paymentId: paymentId, amount: amount, idempotenceKey: idempotenceKey),
                       as: WorldlinePaymentApprovalResponse.self)
    }

    /// The approve request sent, and Worldline's answer whatever its status.
    func sendApprove(paymentId: String, amount: Money?, idempotenceKey: String) async throws -> TransportResponse {
        let wire = try amount.map { money throws(CheckoutError) in try WorldlineAmount.wire(money, field: "amount", gateway: gateway) }
        let request = try api.request(.post, "/payments/\(WorldlineServerAPI.pathSegment(paymentId))/approve",
                                      body: try api.body(WorldlineApproveRequest(amount: wire)), idempotenceKey: idempotenceKey)
        return try await api.send(request)
    }

    /// Captures an authorised payment (`POST …/payments/{id}/capture`, python `capture_payment_request.py`):
    /// `amount` (`nil` captures the rest and is final), sent as Worldline's two-decimal integer (``WorldlineAmount``).
    /// - Parameters:
    ///   - idempotenceKey: `X-GCS-Idempotence-Key`: the same key for a retry of the same capture
    ///     (after a timeout), so Worldline does not capture twice.
    ///   - reference: `order.references.merchantCaptureReference`, "your unique reference of the capture", echoed in the
    ///     capture's `captureOutput.references`.
    public func capture(paymentId: String, amount: Money? = nil, isFinal: Bool? = nil, idempotenceKey: String,
                        reference: String? = nil) async throws -> WorldlineCapture {
        try api.decode(try await sendCapture(paymentId: paymentId, amount: amount, isFinal: isFinal, idempotenceKey: idempotenceKey,
                                             reference: reference), as: WorldlineCapture.self)
    }

    /// The capture request sent, and Worldline's answer whatever its status.
    func sendCapture(paymentId: String, amount: Money?, isFinal: Bool?, idempotenceKey: String, reference: String?) async throws -> TransportResponse {
        let wire = try amount.map { money throws(CheckoutError) in try WorldlineAmount.wire(money, field: "amount", gateway: gateway) }
        let body = WorldlineCaptureRequest(amount: wire, isFinal: isFinal,
                                           order: reference.map { .init(references: .init(merchantCaptureReference: $0)) })
        let request = try api.request(.post, "/payments/\(WorldlineServerAPI.pathSegment(paymentId))/capture",
                                      body: try api.body(body), idempotenceKey: idempotenceKey)
        return try await api.send(request)
    }

    /// Refunds part or all of a paid payment (`POST …/payments/{id}/refund`, python `refund_request.py`).
    ///
    /// The refund's own reference (`refundReferences.merchantReference`, "your unique reference") is
    /// `<attempt>-<sequence>`, so a `refund.*` webhook names the attempt it belongs to; `sequence`
    /// numbers the attempt's refunds (1, 2 …) and also makes the idempotence key, so a retry of the same
    /// refund after a timeout is not a second refund. The result arrives as webhooks; the payment's
    /// `amountRefunded` is the running total. (Till's own refunds are operations, ``perform(_:)``, whose
    /// reference is the operation's.)
    /// - Throws: ``CheckoutError`` `declined` when Worldline refuses the refund (`refundResult` in the error
    ///   body, `refund_error_response.py`); the Server API's other failures as classified by the status.
    public func refund(paymentId: String, amount: Money, attempt: AttemptReference, sequence: Int) async throws -> WorldlineRefund {
        let reference = "\(attempt.rawValue)-\(sequence)"
        let response = try await sendRefund(paymentId: paymentId, amount: amount, reference: reference, idempotenceKey: "refund-\(reference)")
        if let refused = WorldlineServerAPI.errorBody(response), let result = refused.refundResult {
            let first = result.statusOutput?.errors?.first ?? refused.errors?.first
            throw CheckoutError(.declined, category: .declinedHard, message: "Worldline refused the refund (\(result.status ?? "REJECTED"))",
                                gateway: gateway, gatewayCode: first?.code, gatewayMessage: GatewayText.safe(first?.message))
        }
        return try api.decode(response, as: WorldlineRefund.self)
    }

    /// The refund request sent (`amountOfMoney`, `refundReferences.merchantReference` = `reference`), and Worldline's answer
    /// whatever its status.
    func sendRefund(paymentId: String, amount: Money, reference: String, idempotenceKey: String) async throws -> TransportResponse {
        let body = WorldlineRefundRequest(amountOfMoney: WorldlineAmountOfMoney(amount: try WorldlineAmount.wire(amount, field: "amount", gateway: gateway),
                                                                                currencyCode: amount.currency.code),
                                          refundReferences: .init(merchantReference: reference))
        let request = try api.request(.post, "/payments/\(WorldlineServerAPI.pathSegment(paymentId))/refund", body: try api.body(body),
                                      idempotenceKey: idempotenceKey)
        return try await api.send(request)
    }

    /// The attempt a refund's own reference names: an operation's (``OperationReference``, `<attempt>-r<n>`) or the
    /// `<attempt>-<sequence>` of ``refund(paymentId:amount:attempt:sequence:)``.
    static func attempt(ofRefundReference reference: String) -> AttemptReference? {
        if let operation = OperationReference(rawValue: reference), operation.kind == .refund { return operation.attempt }
        guard let dash = reference.lastIndex(of: "-"), reference[reference.index(after: dash)...].allSatisfy(\.isNumber),
              dash != reference.startIndex, reference.index(after: dash) != reference.endIndex else { return nil }
        return AttemptReference(rawValue: String(reference[..<dash]))
    }

    /// Cancels a payment that is not captured (`POST …/payments/{id}/cancel`, no body), idempotently.
    /// - Parameter idempotenceKey: `X-GCS-Idempotence-Key`; `cancel-<paymentId>` unless given.
    public func cancel(paymentId: String, idempotenceKey: String? = nil) async throws -> WorldlineCancelResponse {
        try api.decode(try await sendCancel(paymentId: paymentId, idempotenceKey: idempotenceKey ?? "cancel-\(paymentId)"),
                       as: WorldlineCancelResponse.self)
    }

    /// The cancel request sent, and Worldline's answer whatever its status.
    func sendCancel(paymentId: String, idempotenceKey: String) async throws -> TransportResponse {
        let request = try api.request(.post, "/payments/\(WorldlineServerAPI.pathSegment(paymentId))/cancel", idempotenceKey: idempotenceKey)
        return try await api.send(request)
    }
}

/// The app's submission, checked before anything is sent.
struct WorldlineSubmission {
    var encryptedCustomerInput: String
    /// The meta information as JSON, when the app sent some.
    var clientMetaInfo: String?

    /// The largest payload accepted: a JWE of a few fields is about 1 KB; 64 KB is far above any real one.
    static let maximumPayload = 64 * 1024

    init(_ submission: Submission, gateway: GatewayID) throws(CheckoutError) {
        let key = WorldlineGateway.encryptedInputField
        guard let jwe = submission.fields[key], !jwe.isEmpty else {
            throw CheckoutError(.missingField, field: "submission.fields.\(key)", message: "the encrypted input is missing", gateway: gateway)
        }
        let segments = jwe.split(separator: ".", omittingEmptySubsequences: false)
        guard jwe.utf8.count <= Self.maximumPayload, segments.count == 5,
              segments.allSatisfy({ !$0.isEmpty && !$0.contains("=") && Base64.urlDecode(String($0)) != nil }) else {
            throw CheckoutError(.invalidField, field: "submission.fields.\(key)", message: "not a JWE in compact serialization", gateway: gateway)
        }
        encryptedCustomerInput = jwe
        let metaKey = WorldlineGateway.clientMetaInfoField
        if let encoded = submission.fields[metaKey], !encoded.isEmpty {
            guard encoded.utf8.count <= 8 * 1024, let data = (Base64.decode(encoded) ?? Base64.urlDecode(encoded)).map({ Data($0) }),
                  let object = try? JSONSerialization.jsonObject(with: data), object is [String: Any],
                  let json = String(data: data, encoding: .utf8) else {
                throw CheckoutError(.invalidField, field: "submission.fields.\(metaKey)", message: "not Base64 of a JSON object", gateway: gateway)
            }
            clientMetaInfo = json
        }
        let unknown = Set(submission.fields.keys).subtracting([key, metaKey])
        if let extra = unknown.sorted().first {
            throw CheckoutError(.invalidField, field: "submission.fields.\(extra)", message: "not a field of a Worldline submission", gateway: gateway)
        }
    }
}
