import Foundation
import Till

/// A customer paying with Citcon in the sandbox, for demos and tests: approves, fails or cancels in
/// the wallet app (WeChat Pay, Alipay, UnionPay `upop`, played by the sandbox's wallet simulator) or on
/// the landing page, then comes back to the app through the return URL — or never comes back.
///
/// It gets what the app gets from a charge's `payment.client[]`: a ``WalletLaunch`` whose parameters
/// are the members of a `mobile_native` entry's `content` (WeChat `appid` … `sign`, Alipay
/// `orderSpec` and `signedString`, UnionPay `tn`), or an `open` of a `redirect` entry's `content`
/// (the landing page, for `mobile_browser`).
public struct SandboxCitconCustomer: CheckoutPresenter {
    /// What the customer does in the wallet or on the page.
    public enum Choice: String, Sendable {
        case complete, fail, cancel
    }

    public let sandbox: URL
    public let method: PaymentMethod
    public let returns: ReturnURLHandler
    public var choice: Choice
    /// False: the customer pays but never comes back to the app (killed the wallet, switched apps).
    public var comesBack: Bool
    /// Set: the customer lingers in the wallet or on the page and acts this long after the hand-off,
    /// while the app has already moved on (then only the gateway's notification can tell the server).
    public var actsAfter: Duration?
    /// Receives one line per step, for a demo's trace.
    public var trace: @Sendable (String) -> Void

    /// - Parameters:
    ///   - sandbox: the sandbox's base URL (``RunningSandbox/baseURL``).
    ///   - method: the method being paid with (picks the wallet simulator when the launch's `wallet`
    ///     names none: `wechatpay`, `alipay`, `unionpay`/`upop`).
    ///   - returns: the app's return handler, which the customer's return is offered to.
    public init(sandbox: URL, method: PaymentMethod, returns: ReturnURLHandler, choice: Choice = .complete, comesBack: Bool = true,
                actsAfter: Duration? = nil, trace: @escaping @Sendable (String) -> Void = { _ in }) {
        self.sandbox = sandbox
        self.method = method
        self.returns = returns
        self.choice = choice
        self.comesBack = comesBack
        self.actsAfter = actsAfter
        self.trace = trace
    }

    /// Citcon collects nothing in the app: a form is closed.
    public func collect(_ form: FormSpec) async throws -> FormValues? { nil }

    /// The sandbox's wallet simulator sends the customer back through the return URL, as the wallet
    /// apps' own return does, so there is no in-process result: `nil`.
    public func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        trace("app     launches the \(wallet.wallet) wallet with [\(wallet.parameters.keys.sorted().joined(separator: ", "))]")
        let walletApp = CitconEmulator.walletMethod(wallet.wallet) ?? CitconEmulator.walletMethod(method.rawValue) ?? method.rawValue
        let (sandbox, choice) = (self.sandbox, self.choice.rawValue)
        try await act { try await SandboxBrowser.payInCitconWallet(sandbox: sandbox, method: walletApp, content: wallet.parameters, outcome: choice) }
        return nil
    }

    public func open(_ url: URL, handoff: Handoff) async throws {
        trace("app     opens the \(handoff.rawValue) page \(url.path)")
        let choice = self.choice.rawValue
        try await act { try await SandboxBrowser.completeCitconPage(at: url, outcome: choice) }
    }

    private func act(_ pay: @escaping @Sendable () async throws -> URL?) async throws {
        guard let delay = actsAfter else { return come(try await pay()) }
        trace("wallet  the customer takes \(delay) in the wallet…")
        let customer = self
        Task {
            try? await Task.sleep(for: delay)
            customer.come((try? await pay()) ?? nil)
        }
    }

    private func come(_ back: URL?) {
        trace("wallet  customer chose \(choice.rawValue)")
        guard let back else { return }
        guard comesBack else {
            trace("app     …the customer never comes back")
            return
        }
        let accepted = returns.handle(back)
        trace("app     return \(back.scheme ?? "")://\(back.host ?? "")\(back.path) matched: \(accepted)")
    }
}

/// A customer paying with PayFort (Amazon Payment Services) in the sandbox, for demos and tests.
///
/// - ``launch(_:)`` of a `"payfort"` ``WalletLaunch`` plays the FORT mobile SDK: the launch's parameters
///   are the SDK's request dictionary (`command`, `merchant_reference`, `amount`, `currency`,
///   `language`, `customer_email`, `sdk_token`, optional fields); the customer types ``card`` (or
///   pays with the dictionary's `token_name` when ``card`` is `nil`), or cancels, through the
///   emulator's stand-in (`POST {payfort}/sandbox-only/fort-sdk/pay`, not an APS API). It returns the
///   SDK's callback in-process: ``SDKResult`` with code `success`, `failure` or `cancel` and the SDK's
///   response dictionary as parameters.
/// - ``post(_:)`` plays the browser on the custom merchant page: it posts the form to the emulator
///   without following the answer, and hands the `Location` (the return URL with the signed
///   tokenization result) to the app's ``ReturnURLHandler``, as a browser landing on it would.
/// - ``open(_:handoff:)`` plays the customer on the 3-D Secure page (``approvesThreeDSecure``), then
///   hands where the bank page sends them to the ``ReturnURLHandler``.
/// - ``collect(_:)`` fills a card form from ``card`` by field kind.
public struct SandboxPayFortCustomer: CheckoutPresenter {
    /// The emulator's base URL (``RunningSandbox/payFortBaseURL``).
    public let payFortBaseURL: URL
    /// The app's return handler, which the customer's returns are offered to.
    public let returns: ReturnURLHandler
    /// What the customer types; `nil` pays with a saved card's `token_name` in the SDK.
    public var card: PayFortDevice.Card?
    /// The device's id, as `PayFortController.getUDID()` gives it: the merchant's SDK_TOKEN request
    /// must carry the same, or the SDK's operation fails with `00070` "device_id mismatch".
    public var deviceID: String
    /// True: the customer closes the SDK's payment screen instead of paying.
    public var cancelsInSDK: Bool
    /// What the customer does on the bank's 3-D Secure page.
    public var approvesThreeDSecure: Bool
    /// Receives one line per step, for a demo's trace (never card data).
    public var trace: @Sendable (String) -> Void

    /// The device id sandbox customers have unless told otherwise.
    public static let defaultDeviceID = "TILL-SANDBOX-DEVICE-0001"

    /// - Parameters:
    ///   - payFortBaseURL: ``RunningSandbox/payFortBaseURL``.
    ///   - returns: the app's return handler, which the customer's returns are offered to.
    ///   - card: the card the customer types (a ``PayFortEmulator/TestCard`` number).
    public init(payFortBaseURL: URL, returns: ReturnURLHandler, card: PayFortDevice.Card? = PayFortDevice.Card(number: PayFortEmulator.TestCard.visa),
                deviceID: String = SandboxPayFortCustomer.defaultDeviceID, cancelsInSDK: Bool = false,
                approvesThreeDSecure: Bool = true, trace: @escaping @Sendable (String) -> Void = { _ in }) {
        self.payFortBaseURL = payFortBaseURL
        self.returns = returns
        self.card = card
        self.deviceID = deviceID
        self.cancelsInSDK = cancelsInSDK
        self.approvesThreeDSecure = approvesThreeDSecure
        self.trace = trace
    }

    /// Fills the card fields by kind: card number, expiry (`MM/YY` when the field's mask or length
    /// asks for a separator, else `YYMM`), security code, and a text field whose id names the holder.
    /// `nil` (the customer closed the form) when the customer has no card.
    public func collect(_ form: FormSpec) async throws -> FormValues? {
        guard let card else { return nil }
        var values: [String: String] = [:]
        for field in form.fields {
            switch field.kind {
            case .cardNumber: values[field.id] = card.number
            case .securityCode: values[field.id] = card.securityCode
            case .expiryDate:
                let separated = (field.mask?.contains("/") ?? false) || field.maxLength == 5
                values[field.id] = separated ? String(card.expiry.suffix(2)) + "/" + String(card.expiry.prefix(2)) : card.expiry
            default:
                if field.id.lowercased().contains("holder") || field.id.lowercased().contains("name") {
                    values[field.id] = card.holderName
                }
            }
        }
        trace("app     the customer fills in [\(values.keys.sorted().joined(separator: ", "))]")
        return FormValues(values)
    }

    /// Plays the FORT mobile SDK for a `"payfort"` launch; other wallets report nothing (`nil`).
    public func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        guard wallet.wallet == "payfort" else { return nil }
        trace("app     hands the FORT SDK [\(wallet.parameters.keys.sorted().joined(separator: ", "))]")
        let callback = try await PayFortDevice.payInSDK(payFortBaseURL: payFortBaseURL, request: wallet.parameters,
                                                        deviceID: deviceID, card: card, cancel: cancelsInSDK,
                                                        approveThreeDSecure: approvesThreeDSecure)
        // As an app's adapter reports the SDK's three callbacks (fort-ios-sdk: success, canceled, faild).
        let code = switch callback.code { case "success": "success"; case "cancel": "canceled"; default: "failed" }
        trace("sdk     calls back \(code) (\(callback.response["response_code"] ?? "-"))")
        return SDKResult(code: code, parameters: callback.response)
    }

    /// Posts the merchant page's form and hands where the page sends the customer to the app.
    /// - Throws: ``CheckoutError`` (`gateway_error`) when the page answers without a redirect.
    public func post(_ form: FormPost) async throws {
        trace("browser posts \(form)")
        guard let back = try await PayFortDevice.post(form) else {
            throw CheckoutError(.gatewayError, message: "the PayFort merchant page answered without sending the customer back")
        }
        come(back)
    }

    /// Plays the 3-D Secure page (or, for any other URL, nothing: the customer stays there).
    public func open(_ url: URL, handoff: Handoff) async throws {
        trace("app     opens the \(handoff.rawValue) page \(url.path)")
        guard url.path.hasSuffix("/secure3dsSimulator") else { return }
        trace("bank    the customer \(approvesThreeDSecure ? "approves" : "fails") 3-D Secure")
        if let back = try await SandboxBrowser.completeThreeDSecure(at: url, approve: approvesThreeDSecure) { come(back) }
    }

    private func come(_ back: URL) {
        let accepted = returns.handle(back)
        trace("app     return \(back.scheme ?? "")://\(back.host ?? "")\(back.path) matched: \(accepted)")
    }
}
