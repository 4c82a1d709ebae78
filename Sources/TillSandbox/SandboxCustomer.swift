import Foundation
import Till

/// A customer paying with Citcon in the sandbox, for demos and tests: approves, fails or cancels in
/// the wallet app (WeChat Pay, Alipay, UnionPay, played by the sandbox's wallet simulator) or on the
/// H5 page, then comes back to the app through the return URL — or never comes back.
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
    ///   - method: the method being paid with (picks the wallet simulator).
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
        let (sandbox, method, choice) = (self.sandbox, self.method, self.choice.rawValue)
        try await act { try await SandboxBrowser.payInCitconWallet(sandbox: sandbox, method: method.rawValue, content: wallet.parameters, outcome: choice) }
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
