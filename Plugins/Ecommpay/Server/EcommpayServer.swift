import Foundation
import TillGatewayKit
import TillOrchestration

/// Where the merchant server reaches ecommpay.
public struct EcommpayEnvironment: Sendable, Hashable {
    /// The Payment Page's base; the page is `{base}/payment` (every SDK: `paymentpage.ecommpay.com/payment`).
    public var paymentPage: URL
    /// Gate's base; requests go to `{base}/v2/…` (the WooCommerce plugin's `EcpGatewayAPI`, the Gate docs).
    public var gate: URL

    public init(paymentPage: URL, gate: URL) {
        self.paymentPage = paymentPage
        self.gate = gate
    }

    /// `https://paymentpage.ecommpay.com` and `https://api.ecommpay.com`.
    public static let production = EcommpayEnvironment(paymentPage: URL(string: "https://paymentpage.ecommpay.com")!,
                                                       gate: URL(string: "https://api.ecommpay.com")!)
}

/// What a merchant sets for its ecommpay project.
public struct EcommpaySettings: Sendable, Hashable {
    /// The project's id, assigned by ecommpay.
    public var projectId: Int
    /// `mockModeType` handed to the SDK: `disabled` in production.
    public var mockMode: EcommpayPaymentOptions.MockMode

    public init(projectId: Int, mockMode: EcommpayPaymentOptions.MockMode = .disabled) {
        self.projectId = projectId
        self.mockMode = mockMode
    }
}

/// ecommpay: the **server half**. It holds the project's secret key.
///
/// - **Prepare** builds the payment options from the stored payment (never from the app) and checks them
///   (errors name the `PaymentOptions` field); for other methods than cards and Apple Pay it signs a
///   Payment Page URL.
/// - **Submit** signs the SDK's own `paramsForSignature` once it matches the stored payment.
/// - **Confirm**: the signed callback (authoritative), or Gate `/v2/payment/status`.
/// - **Operate**: capture, cancel (void) and refund through Gate `/v2/payment/{method}/capture|cancel|refund`
///   (``perform(_:)``), settled by the operation's callback or by Gate's status answer (``inquireOperation(_:)``).
///
/// ecommpay may retry a declined payment on another provider itself (`cascading_with_redirect`): such a
/// decline is not final. It stays one Till attempt, pending until the callback of ecommpay's last try.
public struct EcommpayServer: GatewayServerHalf {
    public let gateway: GatewayID
    public let environment: EcommpayEnvironment
    public let settings: EcommpaySettings
    let secret: String
    let client: GatewayHTTPClient

    public init(id: GatewayID = "ecommpay", environment: EcommpayEnvironment = .production, secret: String, settings: EcommpaySettings,
                transport: any HTTPTransport) {
        self.gateway = id
        self.environment = environment
        self.secret = secret
        self.settings = settings
        self.client = GatewayHTTPClient(gateway: id, transport: transport)
    }

    public var capabilities: GatewayCapabilities { EcommpayGateway.capabilities }

    /// A card or an Apple Pay payment goes through the SDK; everything else through the Payment Page.
    static func usesSDK(_ method: PaymentMethod) -> Bool { method == .card || method == .applePay }

    // MARK: Prepare

    /// **Prepare**: the options for the app's SDK adapter (`params`, `method`, `mock_mode`), unsigned (the
    /// SDK's own string is signed at Submit), or the signed Payment Page URL.
    /// - Throws: ``CheckoutError`` naming the `PaymentOptions` field at fault, `returnURL` when a Payment
    ///   Page payment has no return URL.
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let options = try options(for: context)
        var parameters: [String: String]
        if Self.usesSDK(context.intent.method) {
            parameters = sdkParameters(options, method: context.intent.method)
        } else {
            parameters = [EcommpayGateway.Parameter.pageURL: try paymentPageURL(options, returnURL: context.returnURL,
                                                                                          notificationURL: context.notificationURL).absoluteString]
        }
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method, amount: context.intent.amount,
                           parameters: parameters, returnURL: context.returnURL)
    }

    /// The SDK adapter's parameters: the options as JSON, the form (`card` or `apple_pay`), the mock mode.
    func sdkParameters(_ options: EcommpayPaymentOptions, method: PaymentMethod) -> [String: String] {
        var parameters = [EcommpayGateway.Parameter.params: String(decoding: options.parameters.serialized(), as: UTF8.self),
                          EcommpayGateway.Parameter.method: Self.sdkMethod(method)]
        if settings.mockMode != .disabled { parameters[EcommpayGateway.Parameter.mockMode] = settings.mockMode.rawValue }
        return parameters
    }

    /// `card` or `apple_pay`: the SDK form, and the one method a signed string may force.
    static func sdkMethod(_ method: PaymentMethod) -> String { method == .applePay ? "apple_pay" : "card" }

    // MARK: Submit

    /// **Submit**: signs the SDK's `paramsForSignature` for an SDK attempt, once (the service marks the
    /// attempt submitted first), after checking it names this payment (``EcommpayParamsForSignature``: the
    /// project, payment id, amount and currency required and the stored payment's, nothing unknown,
    /// repeated or ambiguous). The text is signed exactly as it came. Nothing is sent to ecommpay here.
    /// - Returns: `.launchWallet` (``EcommpayGateway/sdkWallet``) with the options, the signature and the
    ///   signed text.
    /// - Throws: ``CheckoutError`` naming `submission.kind`, or `params_for_signature[.<key>]` (category
    ///   invalid input: the attempt closes and nothing was charged).
    public func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        guard submission.kind == EcommpayGateway.signingKind, Self.usesSDK(context.intent.method) else {
            throw CheckoutError(.invalidField, field: "submission.kind",
                                message: "ecommpay signs only the SDK's \(EcommpayGateway.Parameter.paramsForSignature) of an SDK payment", gateway: gateway)
        }
        let options = try options(for: AttemptContext(intent: context.intent, attempt: context.attempt, returnURL: context.returnURL))
        let string = try EcommpayParamsForSignature(submission.fields[EcommpayGateway.Parameter.paramsForSignature] ?? "", gateway: gateway)
        try string.check(.init(options, forcedMethods: [Self.sdkMethod(context.intent.method)]), gateway: gateway)
        var parameters = sdkParameters(options, method: context.intent.method)
        parameters[EcommpayGateway.Parameter.signature] = EcommpaySigner.sign(string: string.text, secret: secret)
        parameters[EcommpayGateway.Parameter.paramsForSignature] = string.text
        return SubmitResult(next: .launchWallet(WalletLaunch(wallet: EcommpayGateway.sdkWallet, parameters: parameters,
                                                             returnURL: context.returnURL)))
    }

    /// The options of an attempt, checked.
    public func options(for context: AttemptContext) throws(CheckoutError) -> EcommpayPaymentOptions {
        let intent = context.intent
        let action: EcommpayPaymentOptions.Action = switch intent.action {
        case .authorize: .auth
        case .verify: .verify
        default: .sale
        }
        var fields: [EcommpayPaymentOptions.AdditionalField] = []
        let customer = intent.customer
        for (name, value) in [("customer_email", customer.email), ("customer_phone", customer.phone),
                              ("customer_first_name", customer.firstName), ("customer_last_name", customer.lastName)] {
            if let value, !value.isEmpty { fields.append(.init(name, value)) }
        }
        let language = customer.locale.map { String($0.prefix(2)).lowercased() }.flatMap { EcommpayPaymentOptions.sdkLanguages.contains($0) ? $0 : nil }
        var options = EcommpayPaymentOptions(
            projectId: settings.projectId, paymentId: context.attempt.rawValue,
            paymentAmount: action == .verify ? 0 : intent.amount.minorUnits, paymentCurrency: intent.amount.currency.code,
            customerId: customer.reference, paymentDescription: intent.description.flatMap { $0.isEmpty ? nil : $0 }, action: action,
            additionalFields: fields, languageCode: language, regionCode: intent.country?.code, mockMode: settings.mockMode)
        // The Payment Page opens on PayPal alone, as the WooCommerce plugin's PayPal gateway forces it
        // (`EcpPayPal::PAYMENT_METHOD`); no vendor source gives Alipay's or WeChat Pay's code, so the customer picks.
        if intent.method == .paypal { options.forcePaymentMethod = "paypal-wallet" }
        if let issue = options.validate(needsContact: intent.method == .card).first {
            throw CheckoutError(issue.code, field: issue.field, message: issue.message, gateway: gateway)
        }
        // The SDK joins its signed parameters with ';': one inside a value could not be read back, so such
        // a string is never signed. Refused here, before the customer sees the form. A customer id never
        // holds one, whatever the method: the SDK's string names customers, and an id with a ';' would let a
        // crafted string name one while reading as another.
        for (field, value) in [("paymentDescription", Self.usesSDK(intent.method) ? options.paymentDescription : nil),
                               ("customerId", options.customerId)]
        where value.map({ $0.utf8.contains(UInt8(ascii: ";")) }) == true {
            throw CheckoutError(.invalidField, field: field, message: "';' cannot travel in the SDK's signed string", gateway: gateway)
        }
        return options
    }

    /// `{paymentPage}/payment?<parameters>&signature=<signature>`: the parameters in order, form-encoded,
    /// the signature last (the PHP SDK's pattern `%s/payment?%s&signature=%s`), with the return URL as
    /// `merchant_success_url` and `merchant_fail_url` (each enabled with `2`, as the WooCommerce plugin
    /// sends them) and the server's notification URL as `merchant_callback_url`.
    public func paymentPageURL(_ options: EcommpayPaymentOptions, returnURL: URL?, notificationURL: URL? = nil) throws(CheckoutError) -> URL {
        guard let returnURL else {
            throw CheckoutError(.misconfigured, field: "returnURL", message: "the Payment Page sends the customer back to a return URL", gateway: gateway)
        }
        guard case .object(let all) = options.parameters else { throw CheckoutError(.invalidField, field: "params", message: "not an object") }
        // Only flat parameters travel in the URL (nested objects are the SDK's), so only they are signed.
        var members = all.filter { member in
            switch member.value { case .object, .array: false; default: true }
        }
        // The WooCommerce plugin's Payment Page parameters (`EcpGatewayAPIProtocol`): each URL with its
        // `…_enabled` flag set to 2, and the server's callback URL on every request.
        members.append(.init(key: "merchant_success_enabled", value: .number("2")))
        members.append(.init(key: "merchant_success_url", value: .string(returnURL.absoluteString)))
        members.append(.init(key: "merchant_fail_enabled", value: .number("2")))
        members.append(.init(key: "merchant_fail_url", value: .string(returnURL.absoluteString)))
        if let notificationURL { members.append(.init(key: "merchant_callback_url", value: .string(notificationURL.absoluteString))) }
        let object = OrderedJSON.object(members)
        let signature = EcommpaySigner.sign(object, secret: secret)
        let pairs = members.compactMap { member -> (String, String)? in
            switch member.value {
            case .string(let text), .number(let text): (member.key, text)
            case .bool(let flag): (member.key, flag ? "1" : "0")
            default: nil
            }
        }
        let query = FormFields.encode(pairs) + "&signature=" + FormFields.encode([("", signature)]).dropFirst()
        guard let url = URL(string: environment.paymentPage.appendingPathComponent("payment").absoluteString + "?" + query) else {
            throw CheckoutError(.invalidField, field: "paymentPage", message: "not a URL", gateway: gateway)
        }
        return url
    }

    // MARK: Confirm

    /// **Confirm**: a callback, verified, for this project, read into a report.
    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let callback = try EcommpayCallback(notification.body, secret: secret, field: "body", gateway: gateway)
        guard callback.projectId == String(settings.projectId) else {
            throw CheckoutError(.invalidField, category: .verification, field: "body.project_id", message: "another project's callback", gateway: gateway)
        }
        // A callback whose signed string could be cut into other fields (a ';' inside a key or value) is a
        // trigger only: Gate's status decides, and it settles no operation.
        let report = try report(callback.body, field: "body")
        let operation = try callback.body["operation"].flatMap { operation throws(CheckoutError) in
            try Self.operationReport(operation, field: "body.operation", gateway: gateway)
        }
        return VerifiedNotification(report: report,
                                    acknowledgement: NotificationAcknowledgement(statusCode: 200, contentType: "text/plain", body: Data("OK".utf8)),
                                    confirmBeforeApplying: !callback.isUnambiguous, operation: callback.isUnambiguous ? operation : nil)
    }

    /// The `payment.id` a callback claims, read without verifying it.
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        guard let body = try? OrderedJSON.parse(notification.body) else { return nil }
        return (body["payment"]?["id"]?.stringValue ?? body["general"]?["payment_id"]?.stringValue).map(AttemptReference.init(rawValue:))
    }

    /// **Confirm**: Gate `POST /v2/payment/status` for the attempt (signed; a signature in the answer, when
    /// there is one, must match).
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        let body = try await gate("v2/payment/status", .object([generalBlock(query.attempt)]))
        if body["payment"] == nil, let errors = body["errors"]?.arrayValue, !errors.isEmpty {
            let message = errors.first?["message"]?.stringValue.flatMap { GatewayText.safe($0) }
            throw CheckoutError(.attemptNotFound, field: "payment_id", message: message ?? "ecommpay has no such payment", gateway: gateway)
        }
        let report = try report(body, field: "status")
        guard report.attempt == query.attempt else {
            throw CheckoutError(.invalidField, category: .unknownOutcome, field: "status.payment.id", message: "the answer is about another payment",
                                gateway: gateway)
        }
        return report
    }

    /// Gate's answer to a capture, a cancel or a refund: the request's own status (`success` means accepted for
    /// processing; the result comes in a callback whose `operation.type` names the operation, and whose
    /// `operation.request_id` is this answer's `request_id`), and a refusal's code and message.
    public struct CaptureAnswer: Sendable, Hashable {
        public var status: String?
        public var requestId: String?
        /// A refusal's `code` and `message` (the answer's status `error` or `decline`).
        public var code: String?
        public var message: String?

        /// Gate refused the request: it will not be processed (`error`, `decline`).
        public var isRefusal: Bool { status == "error" || status == "decline" }
    }

    /// Captures an authorisation (all of it, or `amount` of it): Gate `POST /v2/payment/card/capture`, or
    /// `/v2/payment/applepay/capture` for an Apple Pay payment.
    /// - Throws: ``CheckoutError`` `.declined` when Gate refuses the request.
    public func capture(_ attempt: AttemptReference, amount: Money, method: PaymentMethod = .card) async throws -> CaptureAnswer {
        let path = Self.gatePath(.capture, method: method) ?? "card/capture"
        let answer = try await gateOperation(path, attempt: attempt, payment: Self.sumMembers(amount))
        if answer.isRefusal {
            throw CheckoutError(.declined, field: "capture", message: answer.message ?? answer.status ?? "refused", gateway: gateway,
                                gatewayCode: answer.code)
        }
        return answer
    }

    /// One Gate operation request (`v2/payment/{method}/{capture|cancel|refund}`): `general` (with
    /// `merchant_callback_url` when given) and, when given, `payment`; the answer read. A refusal Gate states in
    /// a JSON answer (`status` `error` or `decline`, HTTP 200 or 4xx) is returned, not thrown.
    func gateOperation(_ path: String, attempt: AttemptReference, payment: [OrderedJSON.Member]?,
                       callbackURL: URL? = nil) async throws -> CaptureAnswer {
        var members = [generalBlock(attempt, callbackURL: callbackURL)]
        if let payment { members.append(.init(key: "payment", value: .object(payment))) }
        let body = try await gate("v2/payment/" + path, .object(members), acceptingRefusals: true)
        return CaptureAnswer(status: body["status"]?.stringValue, requestId: body["request_id"]?.stringValue ?? body["request_id"]?.numberText,
                             code: body["code"]?.stringValue ?? body["code"]?.numberText,
                             message: body["message"]?.stringValue.flatMap { GatewayText.safe($0) })
    }

    /// `amount` (minor units) and `currency` of a Gate `payment` object.
    static func sumMembers(_ amount: Money) -> [OrderedJSON.Member] {
        [.init(key: "amount", value: .number(String(amount.minorUnits))), .init(key: "currency", value: .string(amount.currency.code))]
    }

    /// `general{project_id, payment_id}` of a Gate request (signed at `general.signature`).
    func generalBlock(_ attempt: AttemptReference, callbackURL: URL? = nil) -> OrderedJSON.Member {
        var members: [OrderedJSON.Member] = [.init(key: "project_id", value: .number(String(settings.projectId))),
                                             .init(key: "payment_id", value: .string(attempt.rawValue))]
        // The plugins send the callback URL on every Gate request (WooCommerce `build_general_api_block`,
        // Magento `getRequestBody`).
        if let callbackURL { members.append(.init(key: "merchant_callback_url", value: .string(callbackURL.absoluteString))) }
        return .init(key: "general", value: .object(members))
    }

    /// One signed Gate request; the answer parsed (and its signature checked when it carries one).
    ///
    /// Any answer but HTTP 200 is an unknown outcome, except, with `acceptingRefusals`, an HTTP 4xx whose body is
    /// Gate's JSON refusal (`status` `error` or `decline`): the docs say `error` "means that it is impossible to
    /// process and execute the request" (developers.ecommpay.com en_faq_payment_result.html), and the Magento
    /// plugin reads the body whatever the HTTP status (`EcpGatewayProcessor::handleResponse`).
    func gate(_ path: String, _ object: OrderedJSON, acceptingRefusals: Bool = false) async throws -> OrderedJSON {
        let signed = EcommpaySigner.signed(object, secret: secret)
        let request = TransportRequest(method: .post, url: environment.gate.appendingPathComponent(path),
                                       headers: ["Content-Type": "application/json", "Accept": "application/json"], body: signed.serialized())
        let response = try await client.send(request)
        let refusal = acceptingRefusals && (400..<500).contains(response.statusCode)
        guard response.statusCode == 200 || refusal else {
            throw CheckoutError(.gatewayError, category: .unknownOutcome, field: path, message: "Gate answered HTTP \(response.statusCode)", gateway: gateway)
        }
        let body: OrderedJSON
        do { body = try OrderedJSON.parse(response.body, field: path) } catch {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: path, message: error.message, gateway: gateway)
        }
        if refusal, !["error", "decline"].contains(body["status"]?.stringValue ?? "") {
            throw CheckoutError(.gatewayError, category: .unknownOutcome, field: path, message: "Gate answered HTTP \(response.statusCode)", gateway: gateway)
        }
        if let signature = body["signature"]?.stringValue ?? body["general"]?["signature"]?.stringValue {
            guard EcommpaySigner.isValid(signature, of: EcommpaySigner.removingSignatures(body), secret: secret) else {
                throw CheckoutError(.signatureMismatch, field: "\(path).signature", message: "Gate's answer is not signed with this project's key",
                                    gateway: gateway)
            }
        } else if !Self.isTrustedChannel(environment.gate) {
            // No source shows whether Gate signs its answers (the WooCommerce plugin checks none): an unsigned
            // answer is believed only over TLS, or from the local sandbox, never over plain HTTP elsewhere.
            throw CheckoutError(.signatureMismatch, category: .unknownOutcome, field: "\(path).signature",
                                message: "an unsigned Gate answer over plain HTTP is not believed", gateway: gateway)
        }
        return body
    }

    /// `https`, or plain `http` to a loopback host (the local sandbox).
    static func isTrustedChannel(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "https": true
        case "http": ["127.0.0.1", "localhost", "::1"].contains(url.host?.lowercased() ?? "")
        default: false
        }
    }

    // MARK: Reading

    /// The Till status of an ecommpay payment status (the Python SDK's `callback.py` constants, the PHP
    /// SDK's `canceled` and `partially reversed`, the WooCommerce plugin's longer list). A decline ecommpay
    /// will retry on another provider (`cascading_with_redirect`) is pending, not failed.
    public static func paymentStatus(_ raw: String, cascading: Bool = false) -> PaymentStatus {
        switch raw {
        case "success": .paid
        case "awaiting capture": .authorized
        // The PHP SDK (Callback.php, 2025): "reversed" is a refund after a successful payment before the
        // business day closes, "partially reversed" a partial one.
        case "reversed": .refunded
        case "partially reversed": .partiallyRefunded
        case "decline": cascading ? .pending : .failed
        case "error", "internal error", "external error", "decline renewal": .failed
        case "cancelled", "canceled": .cancelled
        case "refunded": .refunded
        case "partially refunded": .partiallyRefunded
        case "expired": .expired
        case "processing", "awaiting 3ds result", "awaiting redirect result", "awaiting customer", "awaiting clarification",
             "awaiting customer action", "awaiting approval", "awaiting retry", "external processing", "initial", "awaiting confirmation":
            .pending
        default: PaymentStatus(rawValue: "ecommpay_status_" + raw.replacingOccurrences(of: " ", with: "_"))
        }
    }

    /// The report of a callback (`operation`: the operation it is about) or of a Gate status answer
    /// (`operations[]`: every operation of the payment).
    ///
    /// Which field holds which money (ITECOMMPAY/woocommerce-ecommpay 5.0.0, `EcpModuleRefund.php`,
    /// `EcpGatewayPayment.php` `get_balance()`, `EcpGatewayInfoOperation.php`; the PrestaShop and commercetools
    /// plugins read refunds the same way):
    /// - a payment that moved or holds money: `payment.sum`, the payment's amount;
    /// - one refund or reversal (`operation.type` `refund` or `reversal`, `operation.status` `success`): that
    ///   operation's own `operation.sum_initial`, never `payment.sum`, which is then the payment's remaining
    ///   **balance** (reported as ``StatusReport/remaining``, and the money rule checks that it agrees);
    /// - a status answer's refunds: the `sum_initial` of its successful `refund`/`reversal` operations, added up
    ///   (``StatusReport/refundedTotal``), with `payment.sum` as the balance again.
    /// A refund operation that did not succeed reports no refund amount, only the balance, so a declined refund
    /// books nothing.
    func report(_ body: OrderedJSON, field: String) throws(CheckoutError) -> StatusReport {
        guard let payment = body["payment"], let id = payment["id"]?.stringValue, !id.isEmpty else {
            throw CheckoutError(.missingField, field: "\(field).payment.id", message: "the message names no payment", gateway: gateway)
        }
        guard let raw = payment["status"]?.stringValue else {
            throw CheckoutError(.missingField, field: "\(field).payment.status", message: "the message carries no status", gateway: gateway)
        }
        let cascading = EcommpayCallback.flag(payment["cascading_with_redirect"])
        let status = Self.paymentStatus(raw, cascading: cascading)
        let operation = body["operation"]
        let sum = EcommpayCallback.money(payment["sum"])
        if status == .paid || status == .authorized, sum == nil {
            throw CheckoutError(.missingField, field: "\(field).payment.sum", message: "a payment without its amount", gateway: gateway)
        }
        var amount = sum
        var refundedTotal: Money?
        var remaining: Money?
        if status == .refunded || status == .partiallyRefunded {
            guard let sum else {
                throw CheckoutError(.missingField, field: "\(field).payment.sum", message: "a refunded payment without its balance", gateway: gateway)
            }
            remaining = sum
            amount = nil
            if let operation {
                if Self.isRefund(operation), operation["status"]?.stringValue == "success" {
                    amount = try Self.operationAmount(operation, field: "\(field).operation.sum_initial", gateway: gateway)
                }
            } else if let operations = body["operations"]?.arrayValue {
                var total: Money?
                for (index, entry) in operations.enumerated() where Self.isRefund(entry) && entry["status"]?.stringValue == "success" {
                    let one = try Self.operationAmount(entry, field: "\(field).operations[\(index)].sum_initial", gateway: gateway)
                    guard total == nil || total!.currency == one.currency else {
                        throw CheckoutError(.invalidField, field: "\(field).operations[\(index)].sum_initial.currency",
                                            message: "refunds in two currencies", gateway: gateway)
                    }
                    let (added, overflow) = (total?.minorUnits ?? 0).addingReportingOverflow(one.minorUnits)
                    guard !overflow else {
                        throw CheckoutError(.invalidAmount, field: "\(field).operations[\(index)].sum_initial.amount", message: "overflows", gateway: gateway)
                    }
                    total = Money(minorUnits: added, currency: one.currency)
                }
                refundedTotal = total
            }
        }
        let operationID = operation?["id"]?.numberText ?? operation?["id"]?.stringValue ?? ""
        let code = operation?["code"]?.stringValue ?? operation?["code"]?.numberText
        let operationStatus = operation?["status"]?.stringValue ?? ""
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: id), gatewayReference: id, status: status, amount: amount,
                            refundedTotal: refundedTotal, remaining: remaining,
                            gatewayStatus: raw + (cascading ? " (cascading_with_redirect)" : ""), gatewayCode: code,
                            gatewayMessage: operation?["message"]?.stringValue.flatMap { GatewayText.safe($0) },
                            eventID: "\(id):\(operationID):\(operation?["type"]?.stringValue ?? ""):\(operationStatus):\(raw):\(cascading)")
    }

    /// Whether an operation gives money back: `refund`, or `reversal` (a full refund before the business day
    /// closes); every ecommpay plugin handles the two alike (WooCommerce `EcpGatewayOperationType.php`).
    static func isRefund(_ operation: OrderedJSON) -> Bool {
        ["refund", "reversal"].contains(operation["type"]?.stringValue ?? "")
    }

    /// An operation's own amount, `sum_initial` (minor units of the request's currency; `sum_converted` is in
    /// the provider account's currency and is never read).
    static func operationAmount(_ operation: OrderedJSON, field: String, gateway: GatewayID) throws(CheckoutError) -> Money {
        guard let money = EcommpayCallback.money(operation["sum_initial"]) else {
            throw CheckoutError(.missingField, field: field, message: "a refund without its own amount", gateway: gateway)
        }
        guard money.minorUnits > 0 else {
            throw CheckoutError(.invalidAmount, field: "\(field).amount", message: "a refund of \(money) is not a refund", gateway: gateway)
        }
        return money
    }
}
