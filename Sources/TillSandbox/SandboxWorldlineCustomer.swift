import Foundation
import Till

/// A customer paying with Worldline Connect in the sandbox, for demos and tests: fills in the card
/// form the app shows (the product fields from the Client API: `cardNumber`, `expiryDate`, `cvv`,
/// `cardholderName`), then, when the payment needs 3-D Secure, approves or fails it on the emulator's
/// page and comes back to the app through the return URL the page sends them to.
///
/// It types what a person types: digits and the expiry as `MMYY`, masks left to the app.
public struct SandboxWorldlineCustomer: CheckoutPresenter {
    /// The card: number, expiry (`MMYY`), CVV and the name on it.
    public var cardNumber: String
    public var expiryDate: String
    public var cvv: String
    public var cardholderName: String
    /// Whether the customer approves 3-D Secure.
    public var approvesThreeDSecure: Bool
    /// False: the customer closes the form instead of paying.
    public var fillsInTheForm: Bool
    public let returns: ReturnURLHandler
    /// Receives one line per step, for a demo's trace.
    public var trace: @Sendable (String) -> Void

    public init(cardNumber: String, expiryDate: String = "1230", cvv: String = "123", cardholderName: String = "Ada Lovelace",
                approvesThreeDSecure: Bool = true, fillsInTheForm: Bool = true, returns: ReturnURLHandler,
                trace: @escaping @Sendable (String) -> Void = { _ in }) {
        self.cardNumber = cardNumber
        self.expiryDate = expiryDate
        self.cvv = cvv
        self.cardholderName = cardholderName
        self.approvesThreeDSecure = approvesThreeDSecure
        self.fillsInTheForm = fillsInTheForm
        self.returns = returns
        self.trace = trace
    }

    /// Fills the fields the form shows, by their ids; a field it does not know stays empty.
    public func collect(_ form: FormSpec) async throws -> FormValues? {
        let ids = form.fieldsInDisplayOrder.map(\.id)
        trace("app     shows the form: \(ids.joined(separator: ", "))")
        guard fillsInTheForm else { return nil }
        let known = ["cardNumber": cardNumber, "expiryDate": expiryDate, "cvv": cvv, "cardholderName": cardholderName]
        var values: [String: String] = [:]
        for id in ids { if let value = known[id] { values[id] = value } }
        trace("app     the customer types the card; the app encrypts it for Worldline")
        return FormValues(values)
    }

    /// Worldline's card flow has no wallet.
    public func launch(_ wallet: WalletLaunch) async throws -> SDKResult? { nil }

    /// The 3-D Secure page: approve or fail, then back to the app.
    public func open(_ url: URL, handoff: Handoff) async throws {
        trace("app     opens the \(handoff.rawValue) page \(url.path)")
        let back = try await SandboxBrowser.completeThreeDSecure(at: url, approve: approvesThreeDSecure)
        trace("bank    the customer \(approvesThreeDSecure ? "approves" : "fails") 3-D Secure")
        guard let back else { return }
        let accepted = returns.handle(back)
        trace("app     return \(back.scheme ?? "")://\(back.host ?? "")\(back.path) matched: \(accepted)")
    }
}
