import Foundation
import TillGatewayKit
import TillPayFort
import TillOrchestration

/// The merchant's PayFort credentials. Server side only: this type exists only in the server
/// library, so an app cannot hold them.
public struct PayFortCredentials: Sendable, Hashable {
    /// The merchant's access code. Not a secret to the customer: APS's own merchant page form carries it.
    public var accessCode: String
    /// The merchant's identifier. Like the access code, it appears in the merchant page form.
    public var merchantIdentifier: String
    /// Signs requests.
    public var requestPhrase: String
    /// Verifies responses and notifications.
    public var responsePhrase: String
    /// The SHA variant both phrases are used with.
    public var algorithm: PayFortSignature.Algorithm

    /// Credentials as PayFort's back office shows them.
    public init(accessCode: String, merchantIdentifier: String, requestPhrase: String, responsePhrase: String,
                algorithm: PayFortSignature.Algorithm = .sha256) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.requestPhrase = requestPhrase
        self.responsePhrase = responsePhrase
        self.algorithm = algorithm
    }
}

/// PayFort FORT (Amazon Payment Services): the **server half**, a ``GatewayServerHalf`` holding the
/// merchant's ``PayFortCredentials``.
///
/// | step | `mobile_sdk` | `merchant_page` |
/// |---|---|---|
/// | Prepare | `SDK_TOKEN` for the app's `device_id` (signed; the answer verified) | the `TOKENIZATION` hidden fields signed; no call |
/// | Submit | — | the tokenization return verified, then `PURCHASE`/`AUTHORIZATION` with `token_name` and `customer_ip` |
/// | Confirm | transaction feedback (form or JSON) verified with the response phrase, anything it would change confirmed by `CHECK_STATUS` before it applies (``confirmFeedback``); `CHECK_STATUS` | the same |
///
/// The app half is `PayFortGateway` (library `TillPayFort`). The attempt reference is sent as
/// `merchant_reference`, so every attempt can be checked. Captures, refunds and voids are
/// ``capture(_:amount:fortID:)``, ``refund(_:amount:fortID:maintenanceReference:)`` and
/// ``void(_:fortID:amount:)``, which ``perform(_:)`` wraps (``operationCapabilities``; an unknown outcome is
/// settled by ``inquireOperation(_:)`` from `CHECK_STATUS`'s totals, or by the operation's feedback).
public struct PayFortServer: GatewayServerHalf {
    /// The gateway's identifier (`"payfort"` unless a merchant runs several PayFort accounts).
    public let gateway: GatewayID
    /// Where requests go.
    public let environment: PayFortEnvironment
    /// PayFort's language for messages: `en` or `ar`.
    public let language: String
    /// The card channel (the `integration` setting).
    public let integration: PayFortIntegration
    /// Whether feedback that would change an attempt (success, decline, refund, void) waits for the
    /// server's own `CHECK_STATUS` (the `confirm_feedback` setting; on unless turned off explicitly). See
    /// ``verifyNotification(_:)``.
    public let confirmFeedback: Bool
    private let credentials: PayFortCredentials
    private let api: PayFortAPI

    /// The server half of a PayFort gateway.
    public init(id: GatewayID = "payfort", environment: PayFortEnvironment, credentials: PayFortCredentials,
                language: String = "en", integration: PayFortIntegration = .merchantPage, confirmFeedback: Bool = true,
                transport: any HTTPTransport) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.language = language
        self.integration = integration
        self.confirmFeedback = confirmFeedback
        self.api = PayFortAPI(gateway: id, environment: environment, transport: transport)
    }

    /// What PayFort can do: the same as `PayFortGateway.capabilities`.
    public var capabilities: GatewayCapabilities { PayFortGateway.capabilities }

    /// Which declines may move to another gateway: none. `20064` (3-D Secure check requested) steps up.
    /// A technical problem (`13006`, "Purchase Failure" + "Technical problem.") does not move on: three of
    /// PayFort's four official plugins list it among the on-hold codes, whose outcome is not known
    /// (payfort/magento2-payfort@708923f `APS_ONHOLD_RESPONSE_CODES`, payfort/opencart3-payfort@ba4c924 and
    /// payfort/prestashop-payfort@7aabf85 the same list), and the WooCommerce plugin, which dropped it from that
    /// list, treats it as a plain decline. Neither reading allows trying another gateway by itself; the
    /// customer may still choose to pay again. Card declines (`13666`), insufficient funds (`13029`,
    /// `03029`) and everything else stay.
    public var decisionTable: DecisionTable {
        DecisionTable(["20064": .stepUp])
    }

    private var signer: PayFortSignature { PayFortSignature(credentials.algorithm) }

    private func signed(_ parameters: PayFortParameters) -> PayFortParameters {
        var parameters = parameters
        parameters["signature"] = .string(signer.sign(parameters, phrase: credentials.requestPhrase))
        return parameters
    }

    // MARK: Prepare

    /// The custom merchant page needs a return URL (PayFort sends the token there); the SDK flow never
    /// leaves the app.
    /// - Throws: ``CheckoutError`` naming `returnURLs` when the app offered none for the merchant page.
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? {
        guard integration == .merchantPage else { return nil }
        guard let first = offered.first else {
            throw CheckoutError(.missingField, field: "returnURLs", message: "PayFort's merchant page sends the token to a return URL",
                                gateway: gateway)
        }
        return first
    }

    /// **Prepare**.
    /// - `mobile_sdk`: checks the operation fields, then gets an SDK token for the app's device
    ///   (`SDK_TOKEN`, signed with the request phrase; the answer verified with the response phrase).
    ///   The device id is the FORT SDK's, sent by the app with the attempt (`appData.device_id`,
    ///   ``PayFortGateway/appDataDeviceID``); it is required, never guessed.
    ///   The app receives the operation request and the token.
    /// - `merchant_page`: checks the fields the later PURCHASE/AUTHORIZATION needs, then signs the
    ///   `TOKENIZATION` hidden fields (no network call). The app receives them.
    ///
    /// Never a phrase in the preparation.
    /// - Throws: ``CheckoutError`` naming the field at fault before anything is sent; for the SDK token,
    ///   category `unavailable` when none could be had (a token cannot move money), `configuration`
    ///   when PayFort refuses the request or its answer's signature does not match.
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let intent = context.intent
        guard intent.action != .verify else {
            throw CheckoutError(.unsupportedAction, field: "intent.action", message: "PayFort's card flows do not verify cards", gateway: gateway)
        }
        var operation = try operationFields(for: context)
        switch integration {
        case .mobileSDK:
            let required = PayFortFields.requiredOperationKeys.filter { $0 != "sdk_token" }
            if let issue = PayFortFields.validateOperation(operation, required: required).first { throw issue.error.attributed(to: gateway) }
            let token = try await sdkToken(deviceID: try deviceID(of: context))
            operation["sdk_token"] = token
            operation[PayFortGateway.integrationParameter] = PayFortIntegration.mobileSDK.rawValue
            return Preparation(gateway: gateway, attempt: context.attempt, method: intent.method, amount: intent.amount,
                               parameters: operation, returnURL: context.returnURL, expiresAt: Date().addingTimeInterval(3_600))
        case .merchantPage:
            let required = PayFortFields.requiredOperationKeys.filter { $0 != "sdk_token" }
            if let issue = PayFortFields.validateOperation(operation, required: required).first { throw issue.error.attributed(to: gateway) }
            let returnURL = try Self.returnURLText(context.returnURL, gateway: gateway)
            let form = signed(PayFortTokenizationForm(accessCode: credentials.accessCode, merchantIdentifier: credentials.merchantIdentifier,
                                                      merchantReference: context.attempt.rawValue, language: language,
                                                      returnURL: returnURL).parameters)
            var parameters = form.strings
            parameters[PayFortGateway.integrationParameter] = PayFortIntegration.merchantPage.rawValue
            return Preparation(gateway: gateway, attempt: context.attempt, method: intent.method, amount: intent.amount,
                               parameters: parameters, returnURL: context.returnURL)
        }
    }

    /// In the `mobile_sdk` channel, the FORT SDK's device id (``deviceID(of:)``'s rules), checked before the
    /// attempt is stored.
    public func appDataIssues(_ appData: [String: String]) -> [CheckoutError] {
        guard integration == .mobileSDK else { return [] }
        do { _ = try deviceID(in: appData) } catch { return [error] }
        return []
    }

    /// The FORT SDK's device id the app sent with this attempt (``PayFortGateway/appDataDeviceID``): what only
    /// the app knows travels with the attempt, so a second device paying the same payment gets its own token.
    func deviceID(of context: AttemptContext) throws(CheckoutError) -> String { try deviceID(in: context.appData) }

    private func deviceID(in appData: [String: String]) throws(CheckoutError) -> String {
        let key = PayFortGateway.appDataDeviceID
        guard let deviceID = appData[key], !deviceID.isEmpty else {
            throw CheckoutError(.missingField, field: "appData.\(key)",
                                message: "the app sends the FORT SDK's device id (PayFortController.getUDID()) with the attempt; the SDK token is bound to it",
                                gateway: gateway)
        }
        if let issue = PayFortFields.check(key, deviceID, prefix: "appData.").first { throw issue.error.attributed(to: gateway) }
        return deviceID
    }

    /// What PayFort needs of a payment, by the rules ``prepare(_:)`` applies (the currency, the customer's
    /// e-mail, each operation field's documented rule), each named by the intent's field it comes from.
    public func requirementIssues(for intent: PaymentIntent) -> [CheckoutError] {
        let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: "requirementcheck"))
        let operation: [String: String]
        do { operation = try operationFields(for: context) } catch { return [error] }
        let required = PayFortFields.requiredOperationKeys.filter { $0 != "sdk_token" }
        return PayFortFields.validateOperation(operation, required: required).map { issue in
            let name = String(issue.field.dropFirst("payfort.".count))
            let field = Self.intentField[name] ?? (intent.metadata[name] != nil ? "intent.metadata.\(name)" : "intent")
            return CheckoutError(issue.code, field: field, message: "PayFort's \(name): \(issue.message)", gateway: gateway)
        }
    }

    /// The intent's field each operation field is made from (the rest come from the metadata).
    static let intentField: [String: String] = [
        "customer_email": "intent.customer.email", "order_description": "intent.description", "customer_name": "intent.customer.firstName",
        "phone_number": "intent.customer.phone", "customer_ip": "intent.customer.ipAddress", "amount": "intent.amount",
        "currency": "intent.amount.currency", "command": "intent.action",
    ]

    /// `SDK_TOKEN` for `deviceID`.
    func sdkToken(deviceID: String) async throws(CheckoutError) -> String {
        let request = signed(PayFortSDKTokenRequest(accessCode: credentials.accessCode, merchantIdentifier: credentials.merchantIdentifier,
                                                    language: language, deviceID: deviceID).parameters)
        // An SDK token cannot move money, so any failure to get one is safe to move on from.
        let response: PayFortParameters
        do {
            response = try await api.post(request)
        } catch {
            throw CheckoutError(.gatewayUnreachable, category: .unavailable, message: "no SDK token: \(error.message)", gateway: gateway,
                                gatewayCode: error.gatewayCode)
        }
        let message: PayFortMessage
        do {
            message = try PayFortMessage(response, rule: try signer.verify(response, phrase: credentials.responsePhrase), field: "answer")
            try checkAccount(message, field: "answer", required: false)
        } catch {
            throw CheckoutError(error.code == .signatureMismatch ? .signatureMismatch : .malformedBody, category: .configuration,
                                field: error.field, message: "the SDK token answer cannot be trusted: \(error.message)",
                                gateway: gateway, gatewayCode: response.text("response_code"),
                                gatewayMessage: GatewayText.safe(response.text("response_message")))
        }
        guard message.status == "22", let token = message["sdk_token"], message["device_id"].map({ $0 == deviceID }) ?? true else {
            var refusal = PayFortCodes.failure(status: message.status ?? "", responseCode: message.responseCode,
                                               message: message["response_message"], gateway: gateway)
            refusal.category = .configuration
            refusal.message = "PayFort refused the SDK token request: \(refusal.message)"
            throw refusal
        }
        return token
    }

    /// The operation fields PayFort takes from the intent (all but the token and the card): the mobile
    /// SDK's operation request, and what the server-to-server payment sends.
    func operationFields(for context: AttemptContext) throws(CheckoutError) -> [String: String] {
        let intent = context.intent
        try PayFortCurrencies.check(intent.amount, field: "intent.amount.currency", gateway: gateway)
        guard let email = intent.customer.email, !email.isEmpty else {
            throw CheckoutError(.missingField, field: "intent.customer.email", message: "PayFort requires the customer's e-mail", gateway: gateway)
        }
        var p: [String: String] = [
            "command": Self.command(for: intent.action),
            "merchant_reference": context.attempt.rawValue,
            "amount": String(intent.amount.minorUnits),
            "currency": intent.amount.currency.code,
            "language": language,
            "customer_email": email,
        ]
        for (key, value) in optionalFields(of: intent) { p[key] = value }
        if let ip = intent.customer.ipAddress, integration == .mobileSDK { p["customer_ip"] = ip }
        if let description = intent.description { p["order_description"] = description }
        if let name = Self.customerName(intent) { p["customer_name"] = name }
        if let phone = intent.customer.phone { p["phone_number"] = phone }
        if integration == .mobileSDK, let token = intent.metadata["token_name"] { p["token_name"] = token }
        return p
    }

    /// `payment_option` (MADA for the mada method, or the intent's), `eci` (ECOMMERCE with MADA and MEEZA,
    /// which the guides allow only for it), `settlement_reference` and `merchant_extra…` from the
    /// intent's metadata: the documented optional fields, in order.
    func optionalFields(of intent: PaymentIntent) -> [(String, String)] {
        var out: [(String, String)] = []
        let option = intent.metadata["payment_option"] ?? (intent.method == .mada ? "MADA" : nil)
        if let option { out.append(("payment_option", option)) }
        if let eci = intent.metadata["eci"] ?? ((option == "MADA" || option == "MEEZA") ? "ECOMMERCE" : nil) { out.append(("eci", eci)) }
        for key in ["settlement_reference", "merchant_extra", "merchant_extra1", "merchant_extra2", "merchant_extra3", "merchant_extra4",
                    "merchant_extra5"] {
            if let value = intent.metadata[key], !value.isEmpty { out.append((key, value)) }
        }
        return out
    }

    static func command(for action: PaymentAction) -> String { action == .authorize ? "AUTHORIZATION" : "PURCHASE" }

    static func customerName(_ intent: PaymentIntent) -> String? {
        let name = [intent.customer.firstName, intent.customer.lastName].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
        return name.isEmpty ? nil : name
    }

    /// The return URL as PayFort takes it: at most 400 characters of letters, digits and `$ ! = ? # & - _ / : .`
    /// (docs `merchantpageparameters.md`).
    static func returnURLText(_ url: URL?, gateway: GatewayID) throws(CheckoutError) -> String {
        guard let url else {
            throw CheckoutError(.missingField, field: "returnURL", message: "PayFort's merchant page sends the token to a return URL",
                                gateway: gateway)
        }
        let text = url.absoluteString
        let special = Set("$!=?#&-_/:.".unicodeScalars)
        guard text.count <= 400, text.unicodeScalars.allSatisfy({ ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0)
            || special.contains($0) }) else {
            throw CheckoutError(.invalidField, field: "returnURL",
                                message: "PayFort takes at most 400 characters of letters, digits and $ ! = ? # & - _ / : .", gateway: gateway)
        }
        return text
    }

    // MARK: Submit

    /// **Submit** (custom merchant page): the tokenization return the app read off the return URL.
    ///
    /// 1. The return is verified with the response phrase over exactly the fields received (under
    ///    either empty-value rule), without the return URL's own query items (Till's state); it must be
    ///    a `TOKENIZATION` of this attempt with status `18`.
    /// 2. `PURCHASE` (sale) or `AUTHORIZATION` with its `token_name`, the app's IP as `customer_ip`,
    ///    and the attempt's return URL for 3-D Secure, signed with the request phrase.
    /// 3. The answer, verified: `14`/`02` → `.completed` with a paid / authorized report carrying the
    ///    amount and currency PayFort answered; `20064` with a `3ds_url` → `.openURL` for 3-D Secure;
    ///    on hold or uncertain → `.completed(.pending)` (confirmed later); a decline is thrown,
    ///    classified by ``PayFortCodes/failure(status:responseCode:message:gateway:field:)``.
    ///
    /// - Throws: ``CheckoutError``: `unsupported_action` on the SDK channel; `invalid_input` for a
    ///   return that does not verify or is not this attempt's (nothing was charged: a token moves no
    ///   money); a decline for a refused tokenization; `missing_field` (category `configuration`)
    ///   naming `customer_ip` when the server does not know the app's address; transport failures as
    ///   classified; `signature_mismatch` (category `verification`) or `malformed_body` (category
    ///   `unknown_outcome`) for a payment answer that cannot be trusted.
    public func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        guard integration == .merchantPage else {
            throw CheckoutError(.unsupportedAction, field: "submission", message: "the FORT mobile SDK flow has no submit step", gateway: gateway)
        }
        guard submission.kind == PayFortGateway.tokenizationSubmission else {
            throw CheckoutError(.invalidField, field: "submission.kind", message: "expected \(PayFortGateway.tokenizationSubmission)",
                                gateway: gateway)
        }
        let tokenName = try verifiedToken(submission, context: context)
        guard let ip = context.customerIP, !ip.isEmpty else {
            throw CheckoutError(.missingField, category: .configuration, field: "customer_ip",
                                message: "the merchant server did not pass the customer's IP address, which PayFort's payment requires",
                                gateway: gateway)
        }
        if let issue = PayFortFields.check("customer_ip", ip, prefix: "").first {
            throw CheckoutError(issue.code, category: .configuration, field: issue.field, message: issue.message, gateway: gateway)
        }
        let request = try paymentRequest(context: context, tokenName: tokenName, customerIP: ip)
        let answer = try await api.post(signed(request.parameters))
        return try paymentResult(answer, command: request.command, context: context)
    }

    /// The token of a verified tokenization return of this attempt.
    func verifiedToken(_ submission: Submission, context: SubmitContext) throws(CheckoutError) -> String {
        let own = context.returnURL.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
        let fields = submission.fields.filter { field in !own.contains { $0.name == field.key && ($0.value ?? "") == field.value } }
        let returned = PayFortParameters(dictionary: fields)
        let message: PayFortMessage
        do {
            message = try PayFortMessage(returned, rule: try signer.verify(returned, phrase: credentials.responsePhrase),
                                         field: "submission.fields")
            try checkAccount(message, field: "submission.fields")
        } catch {
            // Nothing was charged: a tokenization moves no money, and no payment was sent.
            throw CheckoutError(error.code, category: .invalidInput, field: error.field.map { $0.hasPrefix("submission") ? $0 : "submission.fields.\($0)" },
                                message: "the tokenization return cannot be trusted: \(error.message)", gateway: gateway)
        }
        guard message.command == "TOKENIZATION" else {
            throw CheckoutError(.invalidField, field: "submission.fields.service_command", message: "expected TOKENIZATION", gateway: gateway)
        }
        guard message.merchantReference == context.attempt.rawValue else {
            throw CheckoutError(.invalidField, field: "submission.fields.merchant_reference", message: "the return is not this attempt's",
                                gateway: gateway)
        }
        guard message.status == "18" else {
            throw PayFortCodes.failure(status: message.status ?? "", responseCode: message.responseCode, message: message["response_message"],
                                       gateway: gateway, field: "submission.fields.status")
        }
        guard let token = message["token_name"] else {
            throw CheckoutError(.missingField, field: "submission.fields.token_name", message: "the return carries no token", gateway: gateway)
        }
        return token
    }

    /// The server-to-server payment with a token.
    func paymentRequest(context: SubmitContext, tokenName: String, customerIP: String) throws(CheckoutError) -> PayFortPaymentRequest {
        let intent = context.intent
        guard let email = intent.customer.email, !email.isEmpty else {
            throw CheckoutError(.missingField, field: "intent.customer.email", message: "PayFort requires the customer's e-mail", gateway: gateway)
        }
        let returnURL = try context.returnURL.map { url throws(CheckoutError) in try Self.returnURLText(url, gateway: gateway) }
        let request = PayFortPaymentRequest(
            command: Self.command(for: intent.action), amount: intent.amount.minorUnits, currency: intent.amount.currency.code,
            customerEmail: email, tokenName: tokenName, orderDescription: intent.description, customerIP: customerIP,
            customerName: Self.customerName(intent), phoneNumber: intent.customer.phone, returnURL: returnURL,
            optional: optionalFields(of: intent), accessCode: credentials.accessCode, merchantIdentifier: credentials.merchantIdentifier,
            merchantReference: context.attempt.rawValue, language: language)
        let fields = request.parameters.strings.filter { !["access_code", "merchant_identifier"].contains($0.key) }
        let required = ["command", "merchant_reference", "amount", "currency", "language", "customer_email", "token_name", "customer_ip"]
        if let issue = PayFortFields.validateOperation(fields, required: required).first { throw issue.error.attributed(to: gateway) }
        return request
    }

    /// What a verified PURCHASE/AUTHORIZATION answer means.
    func paymentResult(_ answer: PayFortParameters, command: String, context: SubmitContext) throws(CheckoutError) -> SubmitResult {
        let message = try trusted(answer)
        guard message.merchantReference.map({ $0 == context.attempt.rawValue }) ?? true, message.command.map({ $0 == command }) ?? true else {
            throw CheckoutError(.unknownOutcome, field: "answer.merchant_reference", message: "PayFort answered about another order",
                                gateway: gateway)
        }
        guard let status = message.status else {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "answer.status", message: "the answer carries no status",
                                gateway: gateway)
        }
        let code = message.responseCode
        let fortID = message.fortID
        switch PayFortCodes.paymentStatus(status, responseCode: code) {
        case .paid, .authorized:
            let paid = PayFortCodes.paymentStatus(status, responseCode: code)
            // A report that moves money carries PayFort's amount and currency, or there is none: the
            // feedback or an inquiry then settles it.
            let report = message.amount.map {
                StatusReport(gateway: gateway, attempt: context.attempt, gatewayReference: fortID, status: paid, amount: $0,
                             gatewayStatus: status, gatewayCode: code, gatewayMessage: message.responseMessage,
                             eventID: "\(fortID ?? context.attempt.rawValue):\(command):\(status):\(code ?? "")")
            }
            return SubmitResult(next: .completed(ClientOutcome(.succeeded, gatewayCode: code, message: message.responseMessage)),
                                report: report, gatewayReference: fortID)
        case .pending:
            if status == "20", let url = message.threeDSURL {
                return SubmitResult(next: .openURL(url, handoff: .threeDSecure), gatewayReference: fortID)
            }
            return SubmitResult(next: .completed(ClientOutcome(.pending, gatewayCode: code, message: message.responseMessage)),
                                gatewayReference: fortID)
        default:
            throw PayFortCodes.failure(status: status, responseCode: code, message: message["response_message"], gateway: gateway)
        }
    }

    /// Checks that a verified message is this account's: PayFort returns every parameter the merchant
    /// sent ("Every parameter the Merchant sends in the Request should be received by the Merchant in
    /// the Response", docs `incommon.md`; every vendor message in the wire fixtures carries both), so
    /// `access_code` and `merchant_identifier` must equal the credentials. They anchor the signed text:
    /// `access_code` is its first key and `merchant_identifier` sorts just before `merchant_reference`,
    /// so a re-cut that swallows the real reference (or the amount) into another key to put a different
    /// one in its place changes or loses one of them.
    ///
    /// - Parameter required: whether both must be there: for messages that pass through other hands
    ///   (feedback, returns through the device). An answer to Till's own request over TLS cannot be
    ///   re-cut, and one PayFort returns without them (a request it could not read) keeps its own
    ///   classification.
    /// - Throws: ``CheckoutError`` `missing_field` or `invalid_field` naming `<field>.access_code` or
    ///   `<field>.merchant_identifier`.
    func checkAccount(_ message: PayFortMessage, field: String, required: Bool = true) throws(CheckoutError) {
        for (key, expected) in [("access_code", credentials.accessCode), ("merchant_identifier", credentials.merchantIdentifier)] {
            guard let given = message.parameters.text(key), !given.isEmpty else {
                guard required else { continue }
                throw CheckoutError(.missingField, field: "\(field).\(key)", message: "PayFort returns the account's \(key) in every message",
                                    gateway: gateway)
            }
            guard given == expected else {
                throw CheckoutError(.invalidField, field: "\(field).\(key)", message: "not this account's \(key)", gateway: gateway)
            }
        }
    }

    /// An answer to one of Till's requests, verified and read strictly.
    /// - Throws: `signature_mismatch` (category `verification`) or `malformed_body` (category
    ///   `unknown_outcome`): the request was sent, so what it did is not known.
    func trusted(_ answer: PayFortParameters) throws(CheckoutError) -> PayFortMessage {
        let rule: PayFortSignature.EmptyValues
        do {
            rule = try signer.verify(answer, phrase: credentials.responsePhrase)
        } catch {
            throw CheckoutError(.signatureMismatch, category: .verification, field: "answer.signature",
                                message: "PayFort's answer does not carry a valid signature", gateway: gateway,
                                gatewayCode: answer.text("response_code"))
        }
        do {
            let message = try PayFortMessage(answer, rule: rule, field: "answer", allowPlainHTTP: environment.allowsPlainHTTP)
            try checkAccount(message, field: "answer", required: false)
            return message
        } catch {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: error.field, message: error.message, gateway: gateway)
        }
    }

    // MARK: Confirm

    /// **Confirm**: verifies transaction feedback (form-encoded, or JSON) with the response phrase,
    /// under either empty-value rule, and reads its status from the signed, non-empty, documented
    /// fields only (``PayFortMessage``), of this account only (``checkAccount(_:field:required:)``).
    ///
    /// With ``confirmFeedback`` (the default) the notification asks the server to confirm it before it
    /// applies (``VerifiedNotification/confirmBeforeApplying``): feedback that would change an attempt is
    /// stored, and the server's own `CHECK_STATUS` (``inquire(_:)``) decides. A signed message can be
    /// replayed or re-cut by whoever holds it; the inquiry cannot.
    ///
    /// Feedback of a `CAPTURE`, `REFUND` or `VOID_AUTHORIZATION` also names its operation
    /// (``VerifiedNotification/operation``, ``operation(fromFeedback:)``).
    /// - Throws: ``CheckoutError`` `signature_mismatch` (category `verification`) for a signature that
    ///   does not match, `missing_field` for none; `malformed_body` or `duplicate_field` (a key sent
    ///   twice) for a body that cannot be read one way only; `invalid_field` or `field_too_long` for a
    ///   read field outside its documented characters, `invalid_field` naming `body.status` for a status
    ///   that is not the first two digits of `response_code` (`missing_field` for a status without
    ///   one), and naming `body.access_code` or `body.merchant_identifier` for another account's message.
    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let parameters = try Self.parse(notification.body, mediaType: notification.mediaType)
        let rule = try signer.verify(parameters, phrase: credentials.responsePhrase)
        let message = try PayFortMessage(parameters, rule: rule, field: "body")
        // The FORT SDK's documented response (iossdkoperations.md, "SDK Operations response") lists no
        // access_code or merchant_identifier, so feedback of an SDK payment may lack them: when the
        // server's own CHECK_STATUS decides (the default), a missing one is tolerated (a wrong one
        // never is); without that confirmation both are required.
        try checkAccount(message, field: "body", required: !confirmFeedback)
        return VerifiedNotification(report: try report(fromFeedback: message), confirmBeforeApplying: confirmFeedback,
                                    operation: operation(fromFeedback: message))
    }

    /// The `merchant_reference` a notification claims, read without verifying it.
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? Self.parse(notification.body, mediaType: notification.mediaType))?.signedText("merchant_reference").map(AttemptReference.init(rawValue:))
    }

    /// The report of one piece of transaction feedback. A REFUND's feedback carries that one refund's
    /// `amount`; Till's money rule adds refunds up and decides partial or full by the amounts
    /// (``inquire(_:)`` reports PayFort's running `refunded_amount` instead). Two refunds of one order
    /// are two events: the refund's amount and its `maintenance_reference` are part of the event id.
    func report(fromFeedback message: PayFortMessage) throws(CheckoutError) -> StatusReport {
        guard let reference = message.merchantReference else {
            throw CheckoutError(.missingField, field: "body.merchant_reference", message: "the message names no order", gateway: gateway)
        }
        guard let raw = message.status else {
            throw CheckoutError(.missingField, field: "body.status", message: "the message carries no status", gateway: gateway)
        }
        let code = message.responseCode
        var status = PayFortCodes.paymentStatus(raw, responseCode: code)
        if status == .refunded { status = .partiallyRefunded }
        let fortID = message.fortID
        var eventID = "\(fortID ?? reference):\(message.command ?? ""):\(raw):\(code ?? "")"
        // Two refunds, or two partial captures, of one order are two events: an operation's amount (and a refund's
        // `maintenance_reference`) is part of its event id. Two captures of the same amount still share one (PayFort
        // gives a capture no id of its own): the second is settled by the reconciler's CHECK_STATUS.
        if status == .partiallyRefunded || message.command == PayFortMaintenanceRequest.Command.capture.rawValue {
            eventID += ":\(message.amount?.minorUnits ?? 0):\(message["maintenance_reference"] ?? "")"
        }
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: reference), gatewayReference: fortID,
                            status: status, amount: message.amount, gatewayStatus: raw, gatewayCode: code,
                            gatewayMessage: message.responseMessage, eventID: eventID)
    }

    /// **Confirm**: `CHECK_STATUS` for the attempt (signed with the request phrase; the answer verified
    /// with the response phrase). The query's own `status` must be `12`; the order's last operation is
    /// `transaction_status`/`transaction_code`, and its money `authorized_amount`, `captured_amount`
    /// and `refunded_amount` (minor units; the answer has no `amount` and no currency, so the currency
    /// is the attempt's, from `query.amount`). A refund of less than was captured is a partial refund. A success
    /// without amounts takes the amount of the verified feedback it confirms (``InquiryQuery/confirming``).
    /// - Throws: ``CheckoutError`` `attempt_not_found` when PayFort has no such order (`036`, as `12036` or
    ///   with another status);
    ///   `signature_mismatch` when the answer's signature does not match; `invalid_field` naming
    ///   `merchant_reference` when PayFort could not check the order.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        let message = try await checkStatus(query.attempt, gatewayReference: query.gatewayReference)
        return Self.report(fromCheckStatus: message, query: query, gateway: gateway)
    }

    /// `CHECK_STATUS` of one order: PayFort's verified answer with status `12`, about this order.
    /// - Throws: what ``inquire(_:)`` documents.
    func checkStatus(_ attempt: AttemptReference, gatewayReference: String?) async throws(CheckoutError) -> PayFortMessage {
        let fortID = gatewayReference.flatMap { $0.allSatisfy(\.isASCIIDigit) && !$0.isEmpty ? $0 : nil }
        let request = signed(PayFortCheckStatusRequest(accessCode: credentials.accessCode, merchantIdentifier: credentials.merchantIdentifier,
                                                       merchantReference: attempt.rawValue, language: language,
                                                       fortID: fortID).parameters)
        let message = try trusted(try await api.post(request))
        // "Order not found" (message `036`) comes as `12036` too: the query itself worked, and found nothing
        // (payfort/opencart3-payfort@ba4c924 and payfort/prestashop-payfort@7aabf85
        // `CHECK_STATUS_ORDER_NOT_FOUND_RESPONSE_CODE = '12036'`). Read as a status-12 answer it had no
        // `transaction_status` and looked pending; it is not found.
        guard message.status == "12", PayFortCodes.message(of: message.responseCode) != "036" else {
            if PayFortCodes.message(of: message.responseCode) == "036" {
                throw CheckoutError(.attemptNotFound, field: "merchant_reference", message: "PayFort has no such order", gateway: gateway,
                                    gatewayCode: message.responseCode, gatewayMessage: message.responseMessage)
            }
            throw CheckoutError(.invalidField, field: "merchant_reference", message: "PayFort could not check this order",
                                gateway: gateway, gatewayCode: message.responseCode, gatewayMessage: message.responseMessage)
        }
        guard message.merchantReference.map({ $0 == attempt.rawValue }) ?? true else {
            throw CheckoutError(.unknownOutcome, field: "answer.merchant_reference", message: "PayFort answered about another order",
                                gateway: gateway)
        }
        return message
    }

    /// What a verified `CHECK_STATUS` answer (status `12`) says about the order.
    static func report(fromCheckStatus message: PayFortMessage, query: InquiryQuery, gateway: GatewayID) -> StatusReport {
        let reference = message.merchantReference ?? query.attempt.rawValue
        let fortID = message.fortID
        guard let raw = message["transaction_status"] else {
            return StatusReport(gateway: gateway, attempt: query.attempt, gatewayReference: fortID, status: .pending,
                                gatewayCode: message.responseCode, eventID: "\(fortID ?? reference):inquiry:none")
        }
        let code = message["transaction_code"]
        // The answer documents no currency: the amounts are in the attempt's.
        func money(_ key: String) -> Money? {
            guard let currency = query.amount?.currency, let minor = message[key].flatMap({ Int64($0) }) else { return nil }
            return Money(minorUnits: minor, currency: currency)
        }
        let authorized = money("authorized_amount")
        let captured = money("captured_amount")
        let refunded = money("refunded_amount")
        var status = PayFortCodes.paymentStatus(raw, responseCode: code)
        var amount: Money?
        switch status {
        case .paid:
            amount = (captured?.minorUnits ?? 0) > 0 ? captured : authorized
        case .authorized:
            amount = authorized
        case .refunded:
            let base = (captured?.minorUnits ?? 0) > 0 ? captured : (authorized ?? query.amount)
            if let refunded, let base, refunded.minorUnits < base.minorUnits { status = .partiallyRefunded }
            amount = refunded
        default:
            amount = nil
        }
        // The only published CHECK_STATUS answer carries none of the amount fields (docs `incommon.md`, "Check
        // Status Response Example"), and no official plugin reads them. When the answer confirms a success but
        // names no amount, the amount is the one PayFort signed in the feedback this inquiry confirms: the same
        // success, of the same order (`fort_id`), in its own `amount` and `currency`. The answer's status
        // decides; the feedback only supplies the money it signed.
        // The order must be named on both sides: the answer's `fort_id` (else the attempt's known one) and the
        // feedback's.
        if (status == .paid || status == .authorized) && (amount?.minorUnits ?? 0) == 0, let order = fortID ?? query.gatewayReference {
            amount = query.confirming.first { report in
                report.status == status && report.amount != nil && report.gatewayReference == order
            }?.amount
        }
        // `refunded_amount` is PayFort's running total of refunds: the money rule takes it as such.
        let refundedTotal = status == .refunded || status == .partiallyRefunded ? refunded : nil
        return StatusReport(gateway: gateway, attempt: query.attempt, gatewayReference: fortID, status: status, amount: amount,
                            refundedTotal: refundedTotal,
                            gatewayStatus: raw, gatewayCode: code, gatewayMessage: GatewayText.safe(message["transaction_message"]),
                            eventID: "\(fortID ?? reference):inquiry:\(raw):\(code ?? ""):\(refunded?.minorUnits ?? 0)")
    }

    /// A notification body: JSON when it says so (or, untyped, looks like it), form-encoded otherwise.
    static func parse(_ body: Data, mediaType: String?) throws(CheckoutError) -> PayFortParameters {
        if mediaType == "application/json" || (mediaType == nil && body.first == UInt8(ascii: "{")) {
            return try PayFortParameters.json(body)
        }
        return try PayFortParameters.form(body)
    }

    // MARK: Captures, refunds, voids

    /// `CAPTURE` of an authorised order (success `04000`).
    public func capture(_ attempt: AttemptReference, amount: Money, fortID: String? = nil) async throws -> PayFortOperationResult {
        try await maintain(try maintenanceRequest(.capture, attempt: attempt, amount: amount, fortID: fortID))
    }

    /// `REFUND` of part or all of a captured order (success `06000`). `maintenanceReference` is the refund's own
    /// reference ("The Refund's unique order number", at most 200 of letters, digits and `- _ .`: docs
    /// `maintenanceparameters.md`), echoed in the answer and the feedback.
    public func refund(_ attempt: AttemptReference, amount: Money, fortID: String? = nil,
                       maintenanceReference: String? = nil) async throws -> PayFortOperationResult {
        try await maintain(try maintenanceRequest(.refund, attempt: attempt, amount: amount, fortID: fortID,
                                                  maintenanceReference: maintenanceReference))
    }

    /// `VOID_AUTHORIZATION` of an authorised order (success `08000`). The official PHP and .NET SDKs and APS's
    /// current void page send no amount; the docs mirror lists `amount` and `currency` as mandatory: Till sends
    /// them only when `amount` is given.
    public func void(_ attempt: AttemptReference, fortID: String? = nil, amount: Money? = nil) async throws -> PayFortOperationResult {
        try await maintain(try maintenanceRequest(.void, attempt: attempt, amount: amount, fortID: fortID))
    }

    /// The maintenance request of one order, its fields checked against their documented rules before anything is
    /// sent. `merchant_reference` is always the order's (the attempt's): PayFort finds the order by it.
    /// - Throws: ``CheckoutError`` naming the field at fault (`amount`, `amount.currency`, `maintenance_reference`).
    func maintenanceRequest(_ command: PayFortMaintenanceRequest.Command, attempt: AttemptReference, amount: Money?,
                            fortID: String?, maintenanceReference: String? = nil) throws(CheckoutError) -> PayFortMaintenanceRequest {
        if let amount {
            try PayFortCurrencies.check(amount, field: "amount.currency", gateway: gateway)
            guard amount.minorUnits > 0 else {
                throw CheckoutError(.invalidAmount, field: "amount", message: "PayFort takes a positive amount", gateway: gateway)
            }
            if let issue = PayFortFields.check("amount", String(amount.minorUnits), prefix: "").first { throw issue.error.attributed(to: gateway) }
        }
        if let maintenanceReference, let issue = PayFortFields.check("maintenance_reference", maintenanceReference, prefix: "").first {
            throw issue.error.attributed(to: gateway)
        }
        if let issue = PayFortFields.check("merchant_reference", attempt.rawValue, prefix: "").first { throw issue.error.attributed(to: gateway) }
        // FORT's order id is optional ("merchant_reference and/or fort_id"); one that is not FORT's (digits) is left out.
        let fortID = fortID.flatMap { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) ? $0 : nil }
        return PayFortMaintenanceRequest(command: command, accessCode: credentials.accessCode, merchantIdentifier: credentials.merchantIdentifier,
                                         merchantReference: attempt.rawValue, amount: amount, language: language, fortID: fortID,
                                         maintenanceReference: maintenanceReference)
    }

    /// Sends a maintenance request and requires its success code.
    private func maintain(_ request: PayFortMaintenanceRequest) async throws(CheckoutError) -> PayFortOperationResult {
        let message = try await maintenanceAnswer(request)
        guard message.responseCode == request.command.successCode else {
            throw PayFortCodes.failure(status: message.status ?? "", responseCode: message.responseCode, message: message["response_message"],
                                       gateway: gateway)
        }
        return PayFortOperationResult(command: request.command, answer: message)
    }

    /// Sends a maintenance request and returns PayFort's verified answer about it, whatever its code. PayFort
    /// returns every parameter sent (docs `incommon.md`), so an answer that names another order, another
    /// command, another amount or another `maintenance_reference` is about something else.
    /// - Throws: ``CheckoutError``: transport failures as ``GatewayHTTPClient`` classifies them; `signature_mismatch`
    ///   (category `verification`) or `malformed_body` (category `unknown_outcome`) for an answer that cannot be
    ///   trusted; `unknown_outcome` naming the answer's field for an answer about something else.
    func maintenanceAnswer(_ request: PayFortMaintenanceRequest) async throws(CheckoutError) -> PayFortMessage {
        let message = try trusted(try await api.post(signed(request.parameters)))
        let echoes: [(String, String?, String?)] = [
            ("merchant_reference", message.merchantReference, request.merchantReference),
            ("command", message["command"], request.command.rawValue),
            ("maintenance_reference", message["maintenance_reference"], request.maintenanceReference),
            ("amount", message["amount"], request.amount.map { String($0.minorUnits) }),
            ("currency", message["currency"], request.amount?.currency.code),
        ]
        for (key, answered, sent) in echoes {
            guard let answered, let sent else { continue }
            guard answered == sent else {
                throw CheckoutError(.unknownOutcome, field: "answer.\(key)", message: "PayFort answered about another operation (its \(key) is not the one sent)",
                                    gateway: gateway)
            }
        }
        return message
    }
}

/// A capture, refund or void PayFort confirmed (its success code), with the verified answer.
public struct PayFortOperationResult: Sendable, Hashable {
    /// The operation.
    public var command: PayFortMaintenanceRequest.Command
    /// PayFort's verified answer.
    public var answer: PayFortMessage
    /// The amount PayFort answered (none for a void).
    public var amount: Money? { answer.amount }
    /// FORT's order id.
    public var fortID: String? { answer.fortID }
    /// PayFort's code (`04000`, `06000`, `08000`).
    public var responseCode: String? { answer.responseCode }
}
