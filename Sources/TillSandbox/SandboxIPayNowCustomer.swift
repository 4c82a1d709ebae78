import Foundation
import Till

/// A customer paying with iPayNow's iOS cross-border plugin in the sandbox, for demos and tests.
///
/// ``launch(_:)`` handles a ``WalletLaunch`` whose `wallet` is `"ipaynow"`: `parameters["payData"]` is
/// the signed presign string exactly as the app hands it to `[IPNCrossBorderPluginAPi pay:AndScheme:…]`,
/// `parameters["scheme"]` (or ``WalletLaunch/returnScheme``) the app's URL scheme. It plays the plugin
/// and the wallet through the emulator's stand-in (``IPayNowDevice``), the customer completing, cancelling
/// or failing the payment in the wallet named by payData's `payChannelType`. Then, as the app delegate
/// would, it offers the URL the customer comes back on (`<scheme>://safepay/`, which carries no Till
/// state, so the ``ReturnURLHandler`` will not match it: expected) and returns the plugin delegate's
/// result in-process: ``SDKResult`` with code `success`, `fail`, `cancel` or `unknown` (the lower-cased
/// `IPNCrossBorderPayResult` names) and parameters `erroCode` and `erroInfo` when the delegate gives them.
///
/// The customer can come back late (``Return/afterNotification``: only once iPayNow's N001 reached the
/// merchant server, or ``Return/after(_:)``), or never (``Return/never``: no return URL, no delegate
/// call, ``launch(_:)`` reports `nil`).
public struct SandboxIPayNowCustomer: CheckoutPresenter {
    /// What the customer does in the wallet.
    public enum Choice: String, Sendable, Hashable, CaseIterable {
        /// Pays (the delegate gets `Success`).
        case complete
        /// Cancels in the wallet (`Cancel`, `支付被取消`).
        case cancel
        /// The channel refuses the payment (`Fail`, `PE004`).
        case fail
    }

    /// When the customer comes back to the app from the wallet.
    public enum Return: Sendable, Hashable {
        /// As soon as the wallet is done.
        case atOnce
        /// Only once iPayNow's N001 about the payment has been acknowledged by the merchant server (or
        /// has run out of tries); at once when there is none.
        case afterNotification
        /// This long after the wallet is done.
        case after(Duration)
        /// Never (the app was killed, the customer switched apps).
        case never
    }

    /// The emulator's base URL (``RunningSandbox/baseURL(of:)``, `…/ipaynow`).
    public let baseURL: URL
    /// The app's return handler, which the customer's return is offered to.
    public let returns: ReturnURLHandler
    /// What the customer does in the wallet.
    public var choice: Choice
    /// When the customer comes back.
    public var comesBack: Return
    /// Receives one line per step, for a demo's trace.
    public var trace: @Sendable (String) -> Void

    /// - Parameters:
    ///   - baseURL: the emulator's base URL (``RunningSandbox/baseURL(of:)``).
    ///   - returns: the app's return handler.
    ///   - choice: what the customer does in the wallet.
    ///   - comesBack: when the customer comes back to the app.
    public init(baseURL: URL, returns: ReturnURLHandler, choice: Choice = .complete, comesBack: Return = .atOnce,
                trace: @escaping @Sendable (String) -> Void = { _ in }) {
        self.baseURL = baseURL
        self.returns = returns
        self.choice = choice
        self.comesBack = comesBack
        self.trace = trace
    }

    /// iPayNow collects nothing in the app: a form is closed.
    public func collect(_ form: FormSpec) async throws -> FormValues? { nil }

    /// iPayNow's plugin flow opens no page; the customer stays where they are.
    public func open(_ url: URL, handoff: Handoff) async throws {
        trace("app     opens the \(handoff.rawValue) page \(url.path) (nothing to do for iPayNow's plugin)")
    }

    /// Plays the plugin for an `"ipaynow"` launch; other wallets report nothing (`nil`).
    /// - Throws: ``IPayNowDevice/Failure`` when the stand-in refuses the call.
    public func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        guard wallet.wallet == "ipaynow" else { return nil }
        let scheme = wallet.parameters["scheme"] ?? wallet.returnScheme ?? ""
        trace("app     hands the iPayNow plugin payData and scheme \"\(scheme)\"")
        let outcome: IPayNowEmulator.PluginOutcome = switch choice {
        case .complete: .pay
        case .cancel: .cancel
        case .fail: .fail
        }
        let result = try await IPayNowDevice.pay(baseURL: baseURL, .init(
            payData: wallet.parameters["payData"] ?? "", scheme: scheme, outcome: outcome,
            waitForNotification: comesBack == .afterNotification))
        if let back = result.returnURL.flatMap(URL.init(string:)) {
            trace("wallet  customer chose \(choice.rawValue); order \(result.tradeStatus ?? "-")")
            switch comesBack {
            case .never:
                trace("app     …the customer never comes back")
                return nil
            case .after(let delay):
                trace("wallet  the customer takes \(delay) to come back…")
                try await Task.sleep(for: delay)
            case .atOnce, .afterNotification:
                break
            }
            let accepted = returns.handle(back)
            trace("app     return \(back.absoluteString) matched: \(accepted)")
        }
        var parameters: [String: String] = [:]
        if let code = result.erroCode { parameters["erroCode"] = code }
        if let info = result.erroInfo { parameters["erroInfo"] = info }
        trace("plugin  calls the delegate: \(result.result) \(result.erroCode ?? "") \(result.erroInfo ?? "")")
        return SDKResult(code: result.result.lowercased(), parameters: parameters)
    }
}
