import Foundation
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting

/// A notification on its way from a gateway to the server's notification endpoint.
struct Envelope: Sendable {
    var gateway: GatewayID
    var notification: IncomingNotification
    /// Signed with a secret that is not the gateway's: the server must refuse it.
    var forged = false
    /// How often the gateway has delivered it again after a lost acknowledgement (it gives up after 5,
    /// as gateways do).
    var redeliveries = 0
}

/// What the chaos run's gateways, app and customer share: three ``FakeGateway``s per gateway id (one per
/// app flow, each with its own ledger), what each attempt was scripted to do, the seeded draws, the
/// notifications in flight and the fault counts.
///
/// Checkouts run one at a time, and every draw happens at a point of that sequence, so one seed gives
/// one run. The lock only makes the sharing safe.
final class ChaosWorld: Sendable {
    /// One attempt as the run scripted it.
    struct Attempt: Sendable {
        /// The attempt's place among all the run's attempts.
        var index: Int
        var checkout: Int
        var gateway: GatewayID
        var flow: ChaosFlow
        var plan: FakeAttemptPlan
    }

    private struct State {
        var dice: Dice
        var attempts: [AttemptReference: Attempt] = [:]
        var order: [AttemptReference] = []
        var byCheckout: [Int: [AttemptReference]] = [:]
        var checkout = -1
        var flow: ChaosFlow = .card
        var faults: [ChaosFault: Int] = [:]
        /// Per checkout, the faults drawn outside any one attempt (the customer, the app, stray notifications).
        var story: [Int: [String]] = [:]
        /// Notifications the gateways sent right away: delivered before the server's next call.
        var wire: [Envelope] = []
        /// Notifications that arrive later: delivered at the next drain, shuffled.
        var late: [Envelope] = []
        /// Notifications that arrive only after the gateways settled what they held.
        var afterSettle: [Envelope] = []
        /// Merchant reference → payment id.
        var payments: [String: String] = [:]
        /// What the customer chose in a vendor SDK, until the SDK reports it.
        var sdkChoices: [AttemptReference: CustomerChoice] = [:]
        var internalErrors: [String] = []
    }

    static let gatewayIDs: [GatewayID] = ["alpha", "beta", "gamma", "delta"]
    static let capabilities = GatewayCapabilities(methods: [.card, .wechatPay], actions: [.sale, .authorize], attemptLifetimeSeconds: 900)
    static let decisionTable = DecisionTable(["soft": .retryNext])

    let rate: Double
    /// Per gateway id, one fake per app flow. All of one id share its notification secret.
    let fakes: [GatewayID: [FakeFlow: FakeGateway]]
    private let state: Locked<State>

    init(seed: UInt64, rate: Double) {
        self.rate = rate
        let state = Locked(State(dice: Dice(seed: seed)))
        var fakes: [GatewayID: [FakeFlow: FakeGateway]] = [:]
        for id in Self.gatewayIDs {
            for flow in [FakeFlow.card, .submit, .sdk] {
                fakes[id, default: [:]][flow] = FakeGateway(
                    id: id, capabilities: Self.capabilities, decisionTable: Self.decisionTable, secret: Self.secret(id),
                    notificationTiming: .immediate, flow: flow,
                    deliver: { notification in state.withLock { $0.wire.append(Envelope(gateway: id, notification: notification)) } })
            }
        }
        self.fakes = fakes
        self.state = state
    }

    /// Each gateway's notification secret (distinct per gateway, as real accounts are).
    static func secret(_ id: GatewayID) -> String { "chaos-notification-secret-\(id.rawValue)" }

    // MARK: Draws

    /// Runs `body` with the seeded dice.
    func draw<T>(_ body: (inout Dice) -> T) -> T { state.withLock { body(&$0.dice) } }

    /// True with probability ``rate``.
    func fault() -> Bool { draw { $0.chance(rate) } }

    /// Counts a fault of the current checkout.
    func count(_ fault: ChaosFault) {
        state.withLock { state in count(fault, checkout: state.checkout, in: &state) }
    }

    /// Counts a fault; `checkout` (when given) has it in its story.
    func count(_ fault: ChaosFault, checkout: Int?) {
        state.withLock { state in count(fault, checkout: checkout, in: &state) }
    }

    private func count(_ fault: ChaosFault, checkout: Int?, in state: inout State) {
        state.faults[fault, default: 0] += 1
        if let checkout, checkout >= 0 { state.story[checkout, default: []].append(fault.rawValue) }
    }

    var faultCounts: [ChaosFault: Int] { state.withLock { $0.faults } }

    // MARK: Checkouts and attempts

    func beginCheckout(_ index: Int, flow: ChaosFlow) {
        state.withLock {
            $0.checkout = index
            $0.flow = flow
        }
    }

    /// The story of a checkout outside its attempts.
    func story(of checkout: Int) -> [String] { state.withLock { $0.story[checkout] ?? [] } }

    /// Scripts a new attempt on `gateway` for the current checkout: draws its plan and returns the fake
    /// that plays it (the one for the checkout's app flow), with the plan queued on it.
    func beginAttempt(_ reference: AttemptReference, on gateway: GatewayID) async -> FakeGateway {
        let attempt = state.withLock { state -> Attempt in
            let (plan, faults) = Self.plan(for: state.flow, rate: rate, dice: &state.dice)
            let attempt = Attempt(index: state.order.count, checkout: state.checkout, gateway: gateway, flow: state.flow, plan: plan)
            state.attempts[reference] = attempt
            state.order.append(reference)
            state.byCheckout[state.checkout, default: []].append(reference)
            for fault in faults { state.faults[fault, default: 0] += 1 }
            return attempt
        }
        let fake = fakes[gateway]![attempt.flow.fakeFlow]!
        await fake.ledger.enqueue([attempt.plan])
        return fake
    }

    /// One attempt's plan: at each step, a fault with probability `rate`.
    private static func plan(for flow: ChaosFlow, rate: Double, dice: inout Dice) -> (FakeAttemptPlan, [ChaosFault]) {
        var faults: [ChaosFault] = []
        var behavior: FakeBehavior = flow == .wallet ? .walletHandoff : .approve
        if dice.chance(rate) {
            let (prepared, fault) = dice.deal("prepare", [(FakeBehavior.failPrepare(.notSent), ChaosFault.prepareNotSent),
                                               (.failPrepare(.timedOut), .prepareTimeout)])
            behavior = prepared
            faults.append(fault)
        } else if flow == .card || flow == .submit, dice.chance(rate) {
            let (charged, fault) = dice.deal("charge", [
                (FakeBehavior.timeoutBeforeSending, ChaosFault.timeoutBeforeSending),
                (.timeoutAfterCharging, .timeoutAfterCharging),
                (.serverError(charged: true), .serverErrorCharged),
                (.serverError(charged: false), .serverErrorNotCharged),
                (.lostResponse, .lostResponse),
                (.delayedCharge, .delayedCharge),
                (.softDecline(), .softDecline),
                (.hardDecline(), .hardDecline),
                (.pending, .pendingAnswer),
            ])
            behavior = charged
            faults.append(fault)
        }
        var notification = FakeNotificationTiming.immediate
        if dice.chance(rate) {
            switch dice.deal("notification", [0, 1, 2]) {
            case 0:
                notification = .deferred
                faults.append(.notificationLate)
            case 1:
                notification = .duplicate(count: dice.roll(3) + 2)
                faults.append(.notificationDuplicated)
            default:
                notification = .never
                faults.append(.notificationNever)
            }
        }
        var failingInquiries = 0
        if dice.chance(rate) {
            failingInquiries = dice.roll(5) + 1
            faults.append(.failingInquiries)
        }
        return (FakeAttemptPlan(behavior, notification: notification, failingInquiries: failingInquiries), faults)
    }

    /// The attempt as scripted, if the run made it.
    func attempt(_ reference: AttemptReference) -> Attempt? { state.withLock { $0.attempts[reference] } }

    /// The attempts of one checkout, in order.
    func attempts(of checkout: Int) -> [(AttemptReference, Attempt)] {
        state.withLock { state in (state.byCheckout[checkout] ?? []).map { ($0, state.attempts[$0]!) } }
    }

    /// Every attempt the run made, in the order they were prepared.
    var attemptsInOrder: [(AttemptReference, Attempt)] {
        state.withLock { state in state.order.map { ($0, state.attempts[$0]!) } }
    }

    /// The fake that plays `reference` (for an attempt the run never made, the gateway's card-flow fake,
    /// which knows nothing of it).
    func fake(for reference: AttemptReference, on gateway: GatewayID) -> FakeGateway {
        let flow = attempt(reference)?.flow.fakeFlow ?? .card
        return fakes[gateway]![flow]!
    }

    /// The fake that plays `reference`, whichever gateway it is on.
    func fake(for reference: AttemptReference) -> FakeGateway? {
        attempt(reference).map { fakes[$0.gateway]![$0.flow.fakeFlow]! }
    }

    // MARK: The customer

    /// What the customer does with what the app shows now (a form, a wallet page, a vendor SDK).
    func customerChoice(handOff: Bool) -> CustomerChoice {
        guard fault() else { return .pay }
        if !handOff {
            count(.closedForm)
            return .closeForm
        }
        let vanish = draw { $0.deal("hand-off", [true, false]) }
        count(vanish ? .customerVanished : .cancelledInWallet)
        return vanish ? .vanish : .cancel
    }

    func recordSDKChoice(_ choice: CustomerChoice, for reference: AttemptReference) {
        state.withLock { $0.sdkChoices[reference] = choice }
    }

    /// The customer's choice in the SDK for `reference`, once.
    func takeSDKChoice(for reference: AttemptReference) -> CustomerChoice? {
        state.withLock { $0.sdkChoices.removeValue(forKey: reference) }
    }

    // MARK: Payments

    func recordPayment(reference: String, id: String) { state.withLock { $0.payments[reference] = id } }
    func paymentID(reference: String) -> String? { state.withLock { $0.payments[reference] } }

    func recordInternalError(_ error: any Error) {
        state.withLock { $0.internalErrors.append(String(describing: error)) }
    }
    var internalErrors: [String] { state.withLock { $0.internalErrors } }

    // MARK: Notifications in flight

    /// Takes the notifications sent right away.
    func takeWire() -> [Envelope] {
        state.withLock { state in
            defer { state.wire.removeAll() }
            return state.wire
        }
    }

    /// Queues a notification for the next drain.
    func sendLater(_ envelope: Envelope) { state.withLock { $0.late.append(envelope) } }

    /// Queues a notification for after the gateways settled what they held.
    func sendAfterSettling(_ envelope: Envelope) { state.withLock { $0.afterSettle.append(envelope) } }

    /// Takes everything due at a drain: the gateways' outboxes, then what was queued for later (and, at
    /// the end, what waited for the settlement), in a fixed order for the caller to shuffle. The outboxes
    /// are ordered by attempt (which gateway holds an attempt's notification depends on routing, which
    /// depends on the server's random payment ids; the order must not).
    func takeLate(includingAfterSettle: Bool) async -> [Envelope] {
        var held: [(key: Int, body: [UInt8], envelope: Envelope)] = []
        for id in Self.gatewayIDs {
            for flow in [FakeFlow.card, .submit, .sdk] {
                for notification in await fakes[id]![flow]!.drainOutbox() {
                    let claimed = fakes[id]![flow]!.claimedAttempt(in: notification)
                    held.append((claimed.flatMap { attempt($0)?.index } ?? -1, Array(notification.body),
                                 Envelope(gateway: id, notification: notification)))
                }
            }
        }
        held.sort { $0.key != $1.key ? $0.key < $1.key : $0.body.lexicographicallyPrecedes($1.body) }
        return held.map(\.envelope) + state.withLock { state in
            defer {
                state.late.removeAll()
                if includingAfterSettle { state.afterSettle.removeAll() }
            }
            return state.late + (includingAfterSettle ? state.afterSettle : [])
        }
    }
}
