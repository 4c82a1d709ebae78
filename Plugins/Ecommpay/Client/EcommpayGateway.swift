import Foundation
import TillGatewayKit

/// ecommpay: the **app half**, a ``GatewayAppHalf`` built without the project's secret.
///
/// | step | where | what |
/// |---|---|---|
/// | Prepare | merchant server | builds the ``EcommpayPaymentOptions`` from the stored payment and checks them; for other methods signs a Payment Page URL |
/// | Present | app | cards and Apple Pay: `.prepareSDK` (the adapter returns the SDK's `paramsForSignature`), `.submit` of that string |
/// | Submit | merchant server | checks the string against the stored payment and signs it exactly (HMAC-SHA512): `.launchWallet` (``sdkWallet``) with the options and the signature |
/// | Present | app | other methods: `.openURL` of the Payment Page |
/// | Return | app | the SDK's `PaymentResult` (`0` success, `100` decline, `200` cancelled, `500` error) or the Payment Page's redirect: informational only |
/// | Confirm | merchant server | ecommpay's signed callback (authoritative), or Gate `/v2/payment/status` |
public struct EcommpayGateway: GatewayAppHalf {
    /// The gateway's identifier (`"ecommpay"` unless a merchant runs several projects).
    public let gateway: GatewayID

    public init(id: GatewayID = "ecommpay") {
        self.gateway = id
    }

    /// Cards and Apple Pay through the SDK; the methods of the Payment Page; sale, authorisation
    /// (captured through Gate) and verify; Gate status and callbacks.
    public static let capabilities = GatewayCapabilities(
        methods: [.card, .applePay, .alipay, .wechatPay, .paypal],
        actions: [.sale, .authorize, .verify], supportsInquiry: true, supportsNotifications: true)

    /// The same as the type's `capabilities`.
    public var capabilities: GatewayCapabilities { Self.capabilities }

    /// The ``WalletLaunch/wallet`` of ecommpay's mobile SDK.
    public static let sdkWallet = "ecommpay"
    /// The ``Submission/kind`` of the SDK's string sent for signing.
    public static let signingKind = "ecommpay_params_for_signature"

    /// Preparation, hand-off and launch parameters.
    public enum Parameter {
        /// The payment options the server built, a JSON object as text (the Payment Page's names).
        public static let params = "params"
        /// The Base64 HMAC-SHA512 signature of the SDK's `paramsForSignature` (in the launch only).
        public static let signature = "signature"
        /// The SDK's `paramsForSignature`: returned by the app's adapter, sent for signing, and echoed in
        /// the launch (the exact text that was signed).
        public static let paramsForSignature = "params_for_signature"
        /// The SDK's `mockModeType` when the project runs in a mock mode.
        public static let mockMode = "mock_mode"
        /// `card` or `apple_pay`: which SDK form.
        public static let method = "method"
        /// The signed Payment Page URL, for the other methods.
        public static let pageURL = "payment_page_url"
    }

    /// The SDK's result codes (`PaymentStatus`: `Success = 0, Decline = 100, Cancelled = 200, Error = 500`).
    public enum ResultCode: String, Sendable, Hashable, CaseIterable {
        case success = "0", decline = "100", cancelled = "200", error = "500"
    }

    // MARK: Present

    /// **Present**: the SDK hand-off for cards and Apple Pay, the Payment Page for the rest.
    ///
    /// The SDK hand-off has three steps, as the article has them:
    /// 1. `.start` gives `.prepareSDK` with the options the server built (`params`, `method`): the app's
    ///    adapter sets them on the SDK's `PaymentOptions` and returns its `paramsForSignature`;
    /// 2. `.sdkPrepared` reads that string (``EcommpayParamsForSignature``), checks it names this attempt,
    ///    and gives `.submit` for the merchant server, which checks it against the stored payment and
    ///    signs it;
    /// 3. the server answers `.launchWallet` with the same options and the signature, and the adapter
    ///    presents the SDK.
    /// - Throws: ``CheckoutError`` naming `preparation.parameters.<name>` when the server's preparation
    ///   is not this attempt's or lacks what the channel needs, `params_for_signature.<key>` when the
    ///   SDK's string is not this attempt's, `input` for any other input.
    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        let parameters = preparation.parameters
        switch input {
        case .start:
            break
        case .sdkPrepared(let values) where parameters[Parameter.pageURL] == nil:
            let text = values[Parameter.paramsForSignature] ?? ""
            let string = try EcommpayParamsForSignature(text, gateway: gateway)
            let expected: [(EcommpayParamsForSignature.Key, String)] = [
                (.paymentId, preparation.attempt.rawValue), (.paymentAmount, Self.launchAmount(try Self.params(preparation), preparation)),
                (.paymentCurrency, preparation.amount.currency.code)]
            for (key, value) in expected where string.values[key] != value {
                throw CheckoutError(.invalidField, field: "\(EcommpayParamsForSignature.field).\(key.rawValue)",
                                    message: "not this attempt's", gateway: gateway)
            }
            return .submit(Submission(kind: Self.signingKind, fields: [Parameter.paramsForSignature: text]))
        default:
            throw CheckoutError(.unsupportedAction, field: "input", message: "ecommpay's SDK and page collect the details themselves", gateway: gateway)
        }
        if let page = parameters[Parameter.pageURL] {
            let field = "preparation.parameters.\(Parameter.pageURL)"
            guard let url = URL(string: page), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
                  let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery,
                  let fields = try? FormFields.decode(Data(query.utf8), field: field) else {
                throw CheckoutError(.invalidField, field: field, message: "not a Payment Page URL", gateway: gateway)
            }
            for (name, expected) in [("payment_id", preparation.attempt.rawValue), ("payment_amount", String(preparation.amount.minorUnits)),
                                     ("payment_currency", preparation.amount.currency.code)] where fields[name] != expected {
                throw CheckoutError(.invalidField, field: "\(field).\(name)", message: "not this attempt's", gateway: gateway)
            }
            return .openURL(url, handoff: .webPage)
        }
        let text = try checkedParams(preparation)
        var launch = [Parameter.params: text, Parameter.method: parameters[Parameter.method] ?? "card"]
        launch[Parameter.mockMode] = parameters[Parameter.mockMode]
        return .prepareSDK(WalletLaunch(wallet: Self.sdkWallet, parameters: launch, returnURL: preparation.returnURL))
    }

    /// The preparation's `params`, parsed (an error names `preparation.parameters.params`).
    static func params(_ preparation: Preparation) throws -> OrderedJSON {
        try OrderedJSON.parse(Data((preparation.parameters[Parameter.params] ?? "{}").utf8), field: "preparation.parameters.\(Parameter.params)")
    }

    /// The preparation's `params`, checked to be this attempt's (payment id, amount, currency).
    func checkedParams(_ preparation: Preparation) throws -> String {
        let field = "preparation.parameters.\(Parameter.params)"
        guard let text = preparation.parameters[Parameter.params] else {
            throw CheckoutError(.missingField, field: field, message: "the server built no payment options", gateway: gateway)
        }
        let params = try Self.params(preparation)
        guard params["payment_id"]?.stringValue == preparation.attempt.rawValue else {
            throw CheckoutError(.invalidField, field: "\(field).payment_id", message: "not this attempt's", gateway: gateway)
        }
        guard params["payment_amount"]?.numberText == Self.launchAmount(params, preparation) else {
            throw CheckoutError(.invalidField, field: "\(field).payment_amount", message: "not this attempt's amount", gateway: gateway)
        }
        guard params["payment_currency"]?.stringValue == preparation.amount.currency.code else {
            throw CheckoutError(.invalidField, field: "\(field).payment_currency", message: "not this attempt's currency", gateway: gateway)
        }
        return text
    }

    /// The amount the SDK is launched with: zero for a verify (its `operation_type`), else the attempt's.
    static func launchAmount(_ params: OrderedJSON, _ preparation: Preparation) -> String {
        preparation.method == .card && params["operation_type"]?.stringValue == "verify" ? "0" : String(preparation.amount.minorUnits)
    }

    // MARK: Return

    /// The iOS SDK's `PaymentErrorCode` cases in declaration order (`PaymentResult.swift`; the raw `Int` is the index).
    static let errorNames = [
        "serverUnauthorized", "serverMethodNotFound", "serverApiError", "serverContentParsingError", "networkError",
        "networkIsNotAvailable", "networkTimeout", "paymentRequestTypeNotExist", "paymentMethodNotAvailable", "paymentAlreadyExist",
        "paymentHasFinalStatus", "paymentNotFound", "paymentTokenNotExist", "customerIdNotExist", "clarificationFieldsError",
        "sessionNotInitialized", "illegalArguments", "illegalState", "unknown",
    ]

    /// The errors that stop the SDK before a payment is sent: its own checks, a signature or project
    /// ecommpay refuses, a payment id already used, no network at all.
    static let errorsBeforeSending: Set<String> = [
        "serverunauthorized", "networkisnotavailable", "paymentrequesttypenotexist", "paymentmethodnotavailable", "paymentalreadyexist",
        "paymenttokennotexist", "customeridnotexist", "sessionnotinitialized", "illegalarguments",
    ]

    /// An error's case name folded (`PAYMENT_ALREADY_EXIST`, `paymentAlreadyExist` → `paymentalreadyexist`), from
    /// its name or its raw `Int`.
    static func errorName(_ text: String) -> String? {
        if let index = Int(text) { return errorNames.indices.contains(index) ? errorNames[index].lowercased() : nil }
        let folded = text.lowercased().replacingOccurrences(of: "_", with: "")
        return folded.isEmpty ? nil : folded
    }

    /// **Return**: the SDK's `PaymentResult` (its code, and the payment's `status` when it gave one), or the
    /// Payment Page's redirect. Informational: ecommpay's callback decides.
    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .callback(let code, let parameters):
            // The platform writes `awaiting capture`; the SDK's closed core may hand its enum's name
            // (`AWAITING_CAPTURE`): both read the same.
            let status = parameters["status"].flatMap { GatewayText.safe($0) }.map { $0.lowercased().replacingOccurrences(of: "_", with: " ") }
            let errorCode = parameters["error_code"].flatMap { GatewayText.safe($0) }
            let message = parameters["error_message"].flatMap { GatewayText.safe($0) } ?? status
            switch ResultCode(rawValue: code) {
            case .success:
                return ClientOutcome(status == "awaiting capture" || status == "success" || status == nil ? .succeeded : .pending,
                                     gatewayCode: code, message: message)
            case .decline: return ClientOutcome(.failed, gatewayCode: code, message: message)
            case .cancelled: return ClientOutcome(.cancelled, gatewayCode: code, message: message)
            case .error:
                // An error that stopped the SDK before it sent a payment moved nothing; any other may have
                // (a timeout after the request left): the server decides.
                let name = (parameters["error_code_string"] ?? parameters["error_code"]).flatMap(Self.errorName)
                let nothingSent = parameters["id"] == nil && name.map(Self.errorsBeforeSending.contains) == true
                return ClientOutcome(nothingSent ? .failed : .unknown, gatewayCode: errorCode ?? code, message: message)
            case nil:
                return ClientOutcome(.unknown, gatewayCode: GatewayText.safe(code), message: "an SDK result Till does not know")
            }
        case .url:
            return ClientOutcome(.pending, message: "back from ecommpay's Payment Page; the callback decides")
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back from ecommpay")
        }
    }
}
