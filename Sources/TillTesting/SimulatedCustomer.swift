import Foundation
import Till

/// A ``CheckoutPresenter`` that plays the customer against a ``FakeGateway``: fills card forms with
/// a test card, and in a "wallet" pays, cancels or never comes back.
public struct SimulatedCustomer: CheckoutPresenter {
    public enum Choice: Sendable, Hashable {
        /// Pay in the wallet, then come back.
        case pay
        /// Pay in the wallet but never come back (the notification alone settles the payment).
        case payAndVanish
        /// Cancel in the wallet, then come back.
        case cancel
        /// Close the card form.
        case closeForm
    }

    public let gateway: FakeGateway
    public let returns: ReturnURLHandler
    public let choice: Choice
    public let returnDelay: Duration
    /// A Luhn-valid test card; it is never logged by Till.
    public var card: FormValues = FormValues(["card_number": "4111111111111111", "expiry": "12/30", "cvv": "123"])

    public init(gateway: FakeGateway, returns: ReturnURLHandler, choice: Choice = .pay, returnDelay: Duration = .milliseconds(10)) {
        self.gateway = gateway
        self.returns = returns
        self.choice = choice
        self.returnDelay = returnDelay
    }

    public func open(_ url: URL, handoff: Handoff) async throws {
        guard let attempt = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?
            .first(where: { $0.name == "attempt" })?.value else { return }
        let (gateway, returns, choice, delay) = (self.gateway, self.returns, self.choice, self.returnDelay)
        // The customer is "in the wallet" now; the app goes on waiting for the return.
        Task {
            try? await Task.sleep(for: delay)
            let back = try? await gateway.customerActs(on: AttemptReference(rawValue: attempt), approve: choice != .cancel)
            if choice != .payAndVanish, let back { returns.handle(back) }
        }
    }

    /// A wallet launch goes through the wallet page (and back through the return URL); the fake's
    /// in-process SDK (``FakeFlow/sdk``) answers here, with the SDK's code and no URL: `0` paid,
    /// `-2` cancelled. With `.payAndVanish` the SDK never calls back.
    public func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        guard let attempt = wallet.parameters["attempt"] else { return nil }
        if wallet.wallet == FakeGateway.sdkName {
            try await Task.sleep(for: returnDelay)
            let reference = AttemptReference(rawValue: attempt)
            switch choice {
            case .pay, .closeForm:
                _ = try await gateway.customerActs(on: reference, result: .paid)
                return SDKResult(code: "0")
            case .cancel:
                _ = try await gateway.customerActs(on: reference, result: .cancelled, code: "cancel")
                return SDKResult(code: "-2", parameters: ["message": "cancelled in the SDK"])
            case .payAndVanish:
                _ = try await gateway.customerActs(on: reference, result: .paid)
                try await Task.sleep(for: .seconds(3_600))
                return nil
            }
        }
        if let url = URL(string: "https://wallet.fake.invalid/pay?attempt=\(attempt)") {
            try await open(url, handoff: .walletApp)
        }
        return nil
    }

    public func collect(_ form: FormSpec) async throws -> FormValues? {
        choice == .closeForm ? nil : card
    }
}
