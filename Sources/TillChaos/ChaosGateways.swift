import Foundation
import Till
import TillGatewayKit
import TillTesting

/// The server half of one chaos gateway, as the merchant server builds it from the `fake` module: it
/// plays each attempt on the fake for the checkout's app flow, with the plan drawn for the attempt
/// when the server prepares it (the server's router picks the gateway; the plan does not depend on which).
struct ChaosServerHalf: CheckoutServer {
    let gateway: GatewayID
    let world: ChaosWorld

    var capabilities: GatewayCapabilities { ChaosWorld.capabilities }
    var decisionTable: DecisionTable { ChaosWorld.decisionTable }
    /// Any of this id's fakes: they share the notification secret.
    private var anyFake: FakeGateway { world.fakes[gateway]![.card]! }

    func prepare(_ context: AttemptContext) async throws -> Preparation {
        try await world.beginAttempt(context.attempt, on: gateway).prepare(context)
    }

    func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        try await world.fake(for: context.attempt, on: gateway).submit(submission, context: context)
    }

    func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        try anyFake.verifyNotification(notification)
    }

    func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        try await world.fake(for: query.attempt, on: gateway).inquire(query)
    }

    func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? { anyFake.claimedAttempt(in: notification) }

    func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement? { anyFake.answerChallenge(request) }

    func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? { try anyFake.returnURL(from: offered, for: intent) }
}

extension ChaosWorld {
    /// The `fake` module as the merchant server loads it: its server halves are this world's gateways.
    var plugin: GatewayPlugin {
        GatewayPlugin(module: "fake", capabilities: Self.capabilities,
                      makeServer: { context in ChaosServerHalf(gateway: context.id, world: self) },
                      makeClient: { context in self.fakes[context.id]![.card]! })
    }

    /// The app halves an app presenting `flow` embeds, one per gateway: the fakes of that flow.
    func appHalves(for flow: ChaosFlow) -> [any Checkout] {
        Self.gatewayIDs.map { fakes[$0]![flow.fakeFlow]! }
    }
}

/// The customer, played against the fakes: fills card forms with a test card, and in a wallet or a
/// vendor SDK pays, cancels, or pays and never comes back, as drawn. Acts at once (before the app starts
/// waiting for the return), so a run does not depend on timing.
struct ChaosCustomer: CheckoutPresenter {
    let world: ChaosWorld
    let returns: ReturnURLHandler
    /// A Luhn-valid test card.
    static let card = FormValues(["card_number": "4111111111111111", "expiry": "12/30", "cvv": "123"])

    func open(_ url: URL, handoff: Handoff) async throws {
        guard let value = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == "attempt" })?.value,
              let fake = world.fake(for: AttemptReference(rawValue: value)) else { return }
        let choice = world.customerChoice(handOff: true)
        let (_, back) = try await fake.customerActs(on: AttemptReference(rawValue: value), result: choice == .cancel ? .cancelled : .paid,
                                                    code: choice == .cancel ? "cancel" : nil)
        if choice != .vanish, let back { returns.handle(back) }
    }

    func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        guard let value = wallet.parameters["attempt"] else { return nil }
        let reference = AttemptReference(rawValue: value)
        guard wallet.wallet == FakeGateway.sdkName, let fake = world.fake(for: reference) else {
            if let url = URL(string: "https://wallet.fake.invalid/pay?attempt=\(value)") { try await open(url, handoff: .walletApp) }
            return nil
        }
        let choice = world.customerChoice(handOff: true)
        _ = try await fake.customerActs(on: reference, result: choice == .cancel ? .cancelled : .paid, code: choice == .cancel ? "cancel" : nil)
        switch choice {
        case .cancel: return SDKResult(code: "-2", parameters: ["message": "cancelled in the SDK"])
        case .vanish: return nil   // the SDK never calls back; the app waits for a return that never comes
        case .pay, .closeForm: return SDKResult(code: "0")
        }
    }

    func collect(_ form: FormSpec) async throws -> FormValues? {
        world.customerChoice(handOff: false) == .closeForm ? nil : Self.card
    }
}
