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

    public func launch(_ wallet: WalletLaunch) async throws {
        if let attempt = wallet.parameters["attempt"], let url = URL(string: "https://wallet.fake.invalid/pay?attempt=\(attempt)") {
            try await open(url, handoff: .walletApp)
        }
    }

    public func collect(_ form: FormSpec) async throws -> FormValues? {
        choice == .closeForm ? nil : card
    }
}
