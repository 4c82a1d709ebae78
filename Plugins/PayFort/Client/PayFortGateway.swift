import Foundation
import TillGatewayKit

/// PayFort FORT (Amazon Payment Services): the **app half**, a ``GatewayAppHalf`` built without credentials
/// (an app cannot hold any). It makes no network call of its own: the card goes from the device to
/// PayFort through the FORT mobile SDK or a form post, never through this code's own requests.
///
/// Two channels, chosen by the gateway's `integration` setting (``PayFortIntegration``) and carried in
/// the preparation (``integrationParameter``):
///
/// | step | `mobile_sdk` | `merchant_page` (default) |
/// |---|---|---|
/// | Prepare (server) | signed `SDK_TOKEN` for the app's `device_id` | signed `TOKENIZATION` hidden fields; no call |
/// | Present (app) | `.launchWallet` with the operation request the FORT SDK takes | `.collect` the card form, then `.postForm` to `FortAPI/paymentPage` |
/// | Return (app) | the SDK's `success` / `canceled` / `faild` callback (``SDKCallback``) | the token on the return URL → `.submit` (``tokenizationSubmission``) |
/// | Submit (server) | — | verify the return, `PURCHASE`/`AUTHORIZATION` with `token_name`; 3-D Secure → `.openURL` |
/// | Confirm (server) | transaction feedback; `CHECK_STATUS` | transaction feedback; `CHECK_STATUS` |
///
/// Everything the app half reads is informational: it holds no phrase and verifies nothing. The
/// server half is `PayFortServer` (library `TillPayFortServer`).
public struct PayFortGateway: GatewayAppHalf {
    /// The gateway's identifier (`"payfort"` unless a merchant runs several PayFort accounts).
    public let gateway: GatewayID
    /// Where the custom merchant page's form is posted (``PayFortEnvironment/paymentPage``).
    public let environment: PayFortEnvironment
    /// PayFort's language for messages: `en` or `ar`.
    public let language: String
    /// The FORT SDK's id of this device (`PayFortController.getUDID()`), sent with each prepare as
    /// ``appDataDeviceID``: the server asks PayFort for an SDK token bound to it. `nil` in an app that uses
    /// only the merchant page.
    public let deviceID: String?

    /// The app half of a PayFort gateway: the environment, nothing secret.
    /// - Parameter deviceID: the FORT SDK's `PayFortController.getUDID()`, when the app embeds the SDK.
    public init(id: GatewayID = "payfort", environment: PayFortEnvironment, language: String = "en", deviceID: String? = nil) {
        self.gateway = id
        self.environment = environment
        self.language = language
        self.deviceID = deviceID
    }

    /// The ``PrepareRequest/appData`` key of the FORT SDK's device id.
    public static let appDataDeviceID = "device_id"

    /// The device id, when the app embeds the FORT SDK.
    public func appData() async throws -> [String: String] {
        deviceID.map { [Self.appDataDeviceID: $0] } ?? [:]
    }

    /// What PayFort can do here: cards and mada, sale and authorization, with inquiry (`CHECK_STATUS`)
    /// and notifications (transaction feedback). Both halves declare it.
    public static let capabilities = GatewayCapabilities(methods: [.card, .mada], currencies: PayFortCurrencies.all, actions: [.sale, .authorize],
                                                         supportsInquiry: true, supportsNotifications: true,
                                                         attemptLifetimeSeconds: attemptHour, appDataKeys: [appDataDeviceID],
                                                         abandonedAttemptSeconds: attemptHour,
                                                         waitingForCustomerCodes: [PayFortCodes.threeDSecureRequested])

    /// One hour: what a PayFort attempt can take, by Till's reading of sources that give no 3-D Secure lifetime.
    /// The FORT SDK's token lives one hour unless the same device sends another request ("Each token has a
    /// life-time of only one hour if no new request from the same device is sent", FORT Mobile SDK iOS guide
    /// v3.4 §5.2); CHECK_STATUS cannot show a 3-D Secure the customer never finished (APS "Check transaction
    /// status": "If the payment wasn't fully completed (e.g. the customer didn't finish 3D Secure…), the Check
    /// Status response alone won't be enough"); PayFort's own plugins cancel an order not paid a set time after
    /// its creation, `20064` included (payfort/woocommerce-payfort `status_cron_duration`, 60 minutes by
    /// default; payfort/magento2-payfort `Cron/Paymentstatus.php`, 15 to 120 minutes as the merchant chooses).
    /// See docs/gateways/payfort.md, *How long an attempt lives*.
    public static let attemptHour = 3_600

    /// What this gateway can do: the same as the static `capabilities`.
    public var capabilities: GatewayCapabilities { Self.capabilities }

    /// The preparation parameter that names the channel (`mobile_sdk` or `merchant_page`).
    public static let integrationParameter = "integration"
    /// The ``Submission/kind`` of a custom merchant page's tokenization return.
    public static let tokenizationSubmission = "payfort_tokenization"
    /// The ``WalletLaunch/wallet`` of the FORT mobile SDK.
    public static let sdkWallet = "payfort"

    /// The ``SDKResult/code`` an app's FORT SDK adapter reports: which of the SDK's three callbacks
    /// fired (`PayFortController.callPayFort(withRequest:currentViewController:success:canceled:faild:)`,
    /// payfort/fort-ios-sdk). The ``SDKResult/parameters`` are the callback's response dictionary
    /// (`responeDic`) verbatim; for `faild`, the adapter may add the callback's `message` as `message`.
    public enum SDKCallback: String, Sendable, Hashable, CaseIterable {
        /// `success:`.
        case success
        /// `canceled:`.
        case canceled
        /// `faild:` (the SDK's spelling; `faild` is accepted as well).
        case failed
    }

    // MARK: Present (app)

    /// **Present**.
    /// - `mobile_sdk`: `.start` → `.launchWallet` (``sdkWallet``) with the operation request as the
    ///   FORT SDK takes it, checked field by field first.
    /// - `merchant_page`: `.start` → `.collect` (``PayFortFields/cardForm``); `.submit` → the card
    ///   checked (``PayFortFields/card(_:now:)``) and `.postForm` to `FortAPI/paymentPage` with the
    ///   server's signed hidden fields; `.returned` → the tokenization return read and `.submit`ted to
    ///   the merchant server (``tokenizationSubmission``), or `.completed` when it cannot be.
    /// - Throws: ``CheckoutError`` naming the field at fault (a preparation without what the channel
    ///   needs, an operation field outside its rule, a card field), or `unsupported_action` for an
    ///   input the channel has no use for.
    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        switch (try integration(of: preparation), input) {
        case (.mobileSDK, .start):
            return .launchWallet(try sdkLaunch(for: preparation))
        case (.merchantPage, .start):
            return .collect(PayFortFields.cardForm)
        case (.merchantPage, .submit(let values)):
            return .postForm(try tokenizationForm(for: preparation, card: try PayFortFields.card(values).get()))
        case (.merchantPage, .returned(let url)):
            return tokenizationStep(url, preparation)
        case (.mobileSDK, _):
            throw CheckoutError(.unsupportedAction, field: "input", message: "the FORT mobile SDK collects the card itself", gateway: gateway)
        case (.merchantPage, .sdkPrepared):
            throw CheckoutError(.unsupportedAction, field: "input", message: "the merchant page prepares no SDK", gateway: gateway)
        }
    }

    /// The channel the server prepared.
    func integration(of preparation: Preparation) throws(CheckoutError) -> PayFortIntegration {
        let raw = preparation.parameters[Self.integrationParameter]
        guard let raw, let integration = PayFortIntegration(rawValue: raw) else {
            throw CheckoutError(.invalidField, field: "preparation.parameters.\(Self.integrationParameter)",
                                message: "mobile_sdk or merchant_page", gateway: gateway)
        }
        return integration
    }

    /// The FORT SDK's operation request: the operation keys of the preparation, checked.
    func sdkLaunch(for preparation: Preparation) throws(CheckoutError) -> WalletLaunch {
        var request: [String: String] = [:]
        for key in PayFortFields.operationKeys { if let value = preparation.parameters[key], !value.isEmpty { request[key] = value } }
        if let issue = PayFortFields.validateOperation(request, prefix: "preparation.parameters.").first {
            throw issue.error.attributed(to: gateway)
        }
        guard request["merchant_reference"] == preparation.attempt.rawValue,
              request["amount"] == String(preparation.amount.minorUnits), request["currency"] == preparation.amount.currency.code else {
            throw CheckoutError(.invalidField, field: "preparation.parameters", message: "the operation request is not this attempt's",
                                gateway: gateway)
        }
        return WalletLaunch(wallet: Self.sdkWallet, parameters: request)
    }

    /// The form the device posts to `FortAPI/paymentPage`: the signed hidden fields, then the card.
    func tokenizationForm(for preparation: Preparation, card: [String: String]) throws(CheckoutError) -> FormPost {
        var fields: [FormPost.Field] = []
        for name in PayFortTokenizationForm.fieldNames {
            guard let value = preparation.parameters[name], !value.isEmpty else {
                throw CheckoutError(.missingField, field: "preparation.parameters.\(name)", message: "the server did not sign the form",
                                    gateway: gateway)
            }
            fields.append(FormPost.Field(name, value))
        }
        guard preparation.parameters["merchant_reference"] == preparation.attempt.rawValue,
              preparation.parameters["service_command"] == "TOKENIZATION" else {
            throw CheckoutError(.invalidField, field: "preparation.parameters", message: "the form is not this attempt's", gateway: gateway)
        }
        for name in PayFortTokenizationForm.cardFieldNames { if let value = card[name] { fields.append(FormPost.Field(name, value)) } }
        return FormPost(url: environment.paymentPage, fields: fields)
    }

    /// After the form post: the tokenization return, handed to the merchant server, which verifies it.
    func tokenizationStep(_ url: URL, _ preparation: Preparation) -> NextStep {
        let returned: PayFortMessage
        do {
            returned = try PayFortMessage(try PayFortParameters.query(of: url, returnURL: preparation.returnURL), rule: nil, field: "return")
        } catch {
            return .completed(ClientOutcome(.unknown, message: "an unreadable return from PayFort (\(error.message))"))
        }
        guard returned.command == "TOKENIZATION" else {
            return .completed(ClientOutcome(.unknown, message: "the return carries no tokenization result"))
        }
        guard returned.merchantReference == preparation.attempt.rawValue else {
            return .completed(ClientOutcome(.unknown, message: "the return names another order"))
        }
        // The card comes back masked (first six and last four at most); anything more is never carried on.
        if let number = returned.parameters.text("card_number"), number.filter(\.isASCIIDigit).count > 10 {
            return .completed(ClientOutcome(.unknown, message: "the return carries an unmasked card number; it is not passed on"))
        }
        // Every field PayFort put on the URL, so the server verifies its signature over exactly what was sent.
        return .submit(Submission(kind: Self.tokenizationSubmission, fields: returned.parameters.strings))
    }

    // MARK: Return (app)

    /// **Return**: the 3-D Secure redirect's query (PayFort's final result of a PURCHASE or
    /// AUTHORIZATION; ignored when it names another order), or the FORT SDK's callback
    /// (``SDKCallback``). Informational only: nothing here is verified.
    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url(let url):
            guard let returned = try? PayFortMessage(try PayFortParameters.query(of: url, returnURL: preparation.returnURL), rule: nil,
                                                     field: "return") else {
                return ClientOutcome(.unknown, message: "an unreadable return from PayFort")
            }
            guard returned.merchantReference == nil || returned.merchantReference == preparation.attempt.rawValue else {
                return ClientOutcome(.unknown, message: "the return names another order")
            }
            guard let status = returned.status else { return ClientOutcome(.pending) }
            return outcome(status: status, returned)
        case .callback(let code, let parameters):
            return sdkOutcome(code: code, parameters: parameters, preparation: preparation)
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back from PayFort")
        }
    }

    /// What the FORT SDK's callback says.
    func sdkOutcome(code: String, parameters: [String: String], preparation: Preparation) -> ClientOutcome {
        guard let callback = code == "faild" ? .failed : SDKCallback(rawValue: code) else {
            return ClientOutcome(.unknown, message: "an SDK callback Till does not know")
        }
        guard let response = try? PayFortMessage(PayFortParameters(dictionary: parameters), rule: nil, field: "sdk") else {
            return ClientOutcome(.unknown, message: "an unreadable SDK response")
        }
        guard response.merchantReference == nil || response.merchantReference == preparation.attempt.rawValue else {
            return ClientOutcome(.unknown, message: "the SDK response names another order")
        }
        switch callback {
        case .success:
            guard let status = response.status else { return ClientOutcome(.succeeded, gatewayCode: response.responseCode) }
            return outcome(status: status, response)
        case .canceled:
            return ClientOutcome(.cancelled, gatewayCode: response.responseCode, message: response.responseMessage)
        case .failed:
            return ClientOutcome(.failed, gatewayCode: response.responseCode,
                                 message: response.responseMessage ?? GatewayText.safe(parameters["message"]))
        }
    }

    /// What a status the app saw means, for the app (never final).
    func outcome(status: String, _ message: PayFortMessage) -> ClientOutcome {
        let kind: ClientOutcome.Kind = switch PayFortCodes.paymentStatus(status, responseCode: message.responseCode) {
        case .paid, .authorized: .succeeded
        case .failed: .failed
        case .pending: .pending
        case .cancelled: .cancelled
        default: status == "18" ? .pending : .unknown
        }
        return ClientOutcome(kind, gatewayCode: message.responseCode, message: message.responseMessage)
    }
}
