import Foundation
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting

/// The server half of one chaos gateway, as the merchant server builds it from the `fake` module: it
/// plays each attempt on the fake for the checkout's app flow, with the plan drawn for the attempt
/// when the server prepares it (the server's router picks the gateway; the plan does not depend on which).
struct ChaosServerHalf: GatewayServerHalf {
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

    var operationCapabilities: OperationCapabilities { anyFake.operationCapabilities }

    func perform(_ operation: OperationRequest) async throws -> OperationReport {
        try await world.fake(for: operation.attempt, on: gateway).perform(operation)
    }

    func inquireOperation(_ operation: OperationRequest) async throws -> OperationReport {
        try await world.fake(for: operation.attempt, on: gateway).inquireOperation(operation)
    }

    func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? { anyFake.claimedAttempt(in: notification) }

    func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement? { anyFake.answerChallenge(request) }

    func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? { try anyFake.returnURL(from: offered, for: intent) }
}

/// The app half of one chaos gateway for one flow: the fake's own, except that the customer acts in a
/// vendor SDK the moment the app is told to launch it, before the app races the SDK's answer against the
/// return URL, so which of the two arrives first never changes what happened.
struct ChaosAppHalf: GatewayAppHalf {
    let fake: FakeGateway
    let customer: ChaosCustomer

    var gateway: GatewayID { fake.gateway }
    var capabilities: GatewayCapabilities { fake.capabilities }

    func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        let step = try await fake.present(preparation, input: input)
        if case .launchWallet(let launch) = step, launch.wallet == FakeGateway.sdkName {
            try await customer.actInSDK(on: preparation.attempt, fake: fake)
        }
        return step
    }

    func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        fake.interpretReturn(event, for: preparation)
    }
}

extension ChaosWorld {
    /// The `fake` module as the merchant server loads it: its server halves are this world's gateways.
    var plugin: GatewayPlugin {
        GatewayPlugin(module: "fake", capabilities: Self.capabilities,
                      makeServerHalf: { context in ChaosServerHalf(gateway: context.id, world: self) },
                      makeAppHalf: { context in self.fakes[context.id]![.card]! })
    }

    /// The app halves an app presenting `flow` embeds, one per gateway: the fakes of that flow.
    func appHalves(for flow: ChaosFlow, customer: ChaosCustomer) -> [any GatewayAppHalf] {
        Self.gatewayIDs.map { ChaosAppHalf(fake: fakes[$0]![flow.fakeFlow]!, customer: customer) }
    }
}

/// The customer, played against the fakes: fills card forms with a test card, and in a wallet or a
/// vendor SDK pays, cancels, or pays and never comes back, as drawn (the choices of `SimulatedCustomer`).
/// The customer acts before the app starts waiting for the return, and one who never comes back is
/// reported at once as the return that timed out, so a run never depends on timing.
struct ChaosCustomer: CheckoutPresenter {
    let world: ChaosWorld
    let returns: ReturnURLHandler
    /// A Luhn-valid test card.
    static let card = FormValues(["card_number": "4111111111111111", "expiry": "12/30", "cvv": "123"])

    static func neverCameBack() -> CheckoutError {
        CheckoutError(.returnTimedOut, message: "the customer did not come back")
    }

    /// The customer pays or cancels on the wallet page (or pays and never comes back).
    func open(_ url: URL, handoff: Handoff) async throws {
        guard let value = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == "attempt" })?.value,
              let fake = world.fake(for: AttemptReference(rawValue: value)) else { return }
        let choice = world.customerChoice(handOff: true)
        let (_, back) = try await fake.customerActs(on: AttemptReference(rawValue: value), result: choice == .cancel ? .cancelled : .paid,
                                                    code: choice == .cancel ? "cancel" : nil)
        guard choice != .vanish, let back else { throw Self.neverCameBack() }
        returns.handle(back)
    }

    /// The customer acts in the vendor SDK: pays, cancels, or pays and closes the app. The SDK then
    /// opens the return URL too (the app takes whichever of its answer and the URL comes first).
    func actInSDK(on reference: AttemptReference, fake: FakeGateway) async throws {
        let choice = world.customerChoice(handOff: true)
        let (_, back) = try await fake.customerActs(on: reference, result: choice == .cancel ? .cancelled : .paid,
                                                    code: choice == .cancel ? "cancel" : nil)
        world.recordSDKChoice(choice, for: reference)
        if choice != .vanish, let back { returns.handle(back) }
    }

    /// What the vendor SDK reports in-process, for the choice the customer made in it.
    func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        guard let value = wallet.parameters["attempt"] else { return nil }
        let reference = AttemptReference(rawValue: value)
        guard wallet.wallet == FakeGateway.sdkName, let fake = world.fake(for: reference) else {
            if let url = URL(string: "https://wallet.fake.invalid/pay?attempt=\(value)") { try await open(url, handoff: .walletApp) }
            return nil
        }
        var choice = world.takeSDKChoice(for: reference)
        if choice == nil {
            try await actInSDK(on: reference, fake: fake)
            choice = world.takeSDKChoice(for: reference)
        }
        switch choice ?? .pay {
        case .cancel: return SDKResult(code: "-2", parameters: ["message": "cancelled in the SDK"])
        case .vanish: throw Self.neverCameBack()
        case .pay, .closeForm: return SDKResult(code: "0")
        }
    }

    func collect(_ form: FormSpec) async throws -> FormValues? {
        world.customerChoice(handOff: false) == .closeForm ? nil : Self.card
    }
}
