import Foundation
import Till

/// A customer paying with ecommpay in the sandbox, for demos and tests: through the mobile SDK (played by
/// the emulator's stand-in) or on the Payment Page.
///
/// ``prepareSDK(_:)`` returns the SDK's `paramsForSignature` for the options of an `"ecommpay"` hand-off.
/// ``launch(_:)`` handles a ``WalletLaunch`` whose `wallet` is `"ecommpay"`: `parameters["params"]` is the
/// options object as JSON text, `parameters["signature"]` the merchant server's signature of the SDK's
/// string and
/// `parameters["method"]` `card` (default) or `apple_pay`. It calls the stand-in with the customer's
/// card (a sandbox test card chosen by ``choice``) and returns the SDK's `PaymentResult` in-process:
/// ``SDKResult`` with code `"0"` (Success), `"100"` (Decline), `"200"` (Cancelled) or `"500"` (Error)
/// and the result's fields flattened: `status`, `id`, `type`, `method`, `sum`, `currency`, `date`,
/// `token`, `account_number` from the payment; `error_code` (the `PaymentErrorCode` raw value),
/// `error_code_string` and `error_message` from the error (keys left out when absent). The SDK has no
/// return URL: nothing is offered to the ``ReturnURLHandler``.
///
/// ``open(_:handoff:)`` of a Payment Page URL plays the customer on the page (card form, 3-D Secure page)
/// and offers the URL the page redirects to (`redirect_success_url`/`merchant_success_url` or
/// `redirect_fail_url`/`merchant_fail_url`) to the app's ``ReturnURLHandler``.
public struct SandboxEcommpayCustomer: CheckoutPresenter {
    /// What the customer does.
    public enum Choice: String, Sendable, Hashable, CaseIterable {
        /// Pays with a card that succeeds (``EcommpayTestCard/success``); Apple Pay approves.
        case complete
        /// Pays with a card the provider declines (``EcommpayTestCard/decline``).
        case decline
        /// Closes the form or the page without paying.
        case cancel
        /// Pays with a card that asks for 3-D Secure, and passes it.
        case threeDSecurePass
        /// Pays with a card that asks for 3-D Secure, and fails it.
        case threeDSecureFail
        /// Pays with the cascade card: the first provider declines, a second one succeeds.
        case cascade

        /// The test card the choice pays with.
        public var card: EcommpayTestCard {
            switch self {
            case .complete, .cancel: .success
            case .decline: .decline
            case .threeDSecurePass: .threeDSecurePass
            case .threeDSecureFail: .threeDSecureFail
            case .cascade: .cascade
            }
        }
    }

    /// The emulator's base URL (``RunningSandbox/baseURL(of:)``, `…/ecommpay`).
    public let baseURL: URL
    /// The app's return handler, which a Payment Page's final redirect is offered to.
    public let returns: ReturnURLHandler
    /// What the customer does.
    public var choice: Choice
    /// `true`: the SDK answers only once ecommpay's callbacks about the payment reached the merchant
    /// server (or ran out of tries), so the server hears before the app.
    public var callbacksFirst: Bool
    /// Receives one line per step, for a demo's trace.
    public var trace: @Sendable (String) -> Void

    /// - Parameters:
    ///   - baseURL: the emulator's base URL (``RunningSandbox/baseURL(of:)``).
    ///   - returns: the app's return handler.
    ///   - choice: what the customer does.
    ///   - callbacksFirst: whether the SDK waits for the callbacks before answering.
    public init(baseURL: URL, returns: ReturnURLHandler, choice: Choice = .complete, callbacksFirst: Bool = false,
                trace: @escaping @Sendable (String) -> Void = { _ in }) {
        self.baseURL = baseURL
        self.returns = returns
        self.choice = choice
        self.callbacksFirst = callbacksFirst
        self.trace = trace
    }

    /// ecommpay collects nothing in the app: a form is closed.
    public func collect(_ form: FormSpec) async throws -> FormValues? { nil }

    /// Plays the customer on a Payment Page URL and offers the final redirect, if any, to ``returns``.
    /// - Throws: ``EcommpayDevice/Failure`` when a page has no form to post.
    public func open(_ url: URL, handoff: Handoff) async throws {
        trace("app     opens the \(handoff.rawValue) page \(url.path)")
        let action: EcommpayDevice.PageAction = choice == .cancel
            ? .cancel
            : .pay(.test(choice.card), threeDSecurePasses: choice != .threeDSecureFail)
        let outcome = try await EcommpayDevice.playPaymentPage(url, action)
        trace("page    customer chose \(choice.rawValue); HTTP \(outcome.status)")
        guard let back = outcome.redirect else {
            trace("page    no redirect")
            return
        }
        let accepted = returns.handle(back)
        trace("app     return \(back.absoluteString) matched: \(accepted)")
    }

    /// Plays the SDK's `paramsForSignature` for an `"ecommpay"` hand-off: the options in
    /// `parameters["params"]` (JSON text) set on the SDK, and its string returned as
    /// `["params_for_signature": …]` for the merchant server to sign.
    /// - Throws: ``EcommpayDevice/Failure`` when `params` is not a JSON object or the wallet is not ecommpay.
    public func prepareSDK(_ wallet: WalletLaunch) async throws -> [String: String] {
        guard wallet.wallet == "ecommpay", let params = try? JSONValue.parse(Array((wallet.parameters["params"] ?? "").utf8)),
              case .object = params else {
            throw EcommpayDevice.Failure(description: "prepareSDK: expected an ecommpay launch whose params is a JSON object")
        }
        let string = EcommpaySignature.sdkParamsForSignature(params)
        trace("sdk     paramsForSignature \(string.split(separator: ";").count) pairs, sent to the merchant server for signing")
        return ["params_for_signature": string]
    }

    /// Plays the SDK for an `"ecommpay"` launch; other wallets report nothing (`nil`).
    /// - Throws: ``EcommpayDevice/Failure`` when the stand-in refuses the call (parameters that are not
    ///   JSON, a body not of its shape).
    public func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        guard wallet.wallet == "ecommpay" else { return nil }
        let method = wallet.parameters["method"] ?? "card"
        trace("app     presents the ecommpay SDK (\(method)) with the server's signature of its string")
        let result = try await EcommpayDevice.pay(
            baseURL: baseURL, paramsJSON: wallet.parameters["params"] ?? "", signature: wallet.parameters["signature"] ?? "",
            method: method, card: method == "card" ? .test(choice.card) : nil, outcome: choice == .cancel ? "cancel" : "pay",
            waitForCallbacks: callbacksFirst)
        var parameters: [String: String] = [:]
        if let payment = result.payment {
            parameters["status"] = payment.status
            parameters["id"] = payment.id
            parameters["type"] = payment.type
            parameters["method"] = payment.method
            parameters["sum"] = String(payment.sum)
            parameters["currency"] = payment.currency
            parameters["date"] = payment.date
            if let token = payment.token { parameters["token"] = token }
            if let number = payment.account?.number { parameters["account_number"] = number }
        }
        if let error = result.error {
            parameters["error_code"] = String(error.code)
            parameters["error_code_string"] = error.codeString
            parameters["error_message"] = error.message
        }
        trace("sdk     completion: status \(result.status) \(result.payment?.status ?? "") \(result.error?.message ?? "")")
        return SDKResult(code: String(result.status), parameters: parameters)
    }
}
