import Foundation
import Till
import TillOrchestration
import TillTesting

/// A fault the chaos run injects. Each one is counted in ``ChaosRun/Report/faults`` under its raw value,
/// so a run shows that it exercised it.
public enum ChaosFault: String, CaseIterable, Sendable, Codable {
    // Prepare: the gateway's session cannot be created.
    /// Prepare fails before the request leaves (`failPrepare(.notSent)`): the server may cascade.
    case prepareNotSent
    /// Prepare times out (`failPrepare(.timedOut)`): the attempt stays open for an inquiry.
    case prepareTimeout

    // The charge (card flows: the app's card form, or the server's submit step).
    /// The request never left (`timeoutBeforeSending`): nothing charged.
    case timeoutBeforeSending
    /// Charged, then the answer timed out (`timeoutAfterCharging`).
    case timeoutAfterCharging
    /// Charged, then HTTP 5xx (`serverError(charged: true)`).
    case serverErrorCharged
    /// Not charged, but HTTP 5xx (`serverError(charged: false)`): as unknown as the charged one.
    case serverErrorNotCharged
    /// Charged, then the connection broke (`lostResponse`).
    case lostResponse
    /// Timed out before the gateway processed it; it charges much later (`delayedCharge`).
    case delayedCharge
    /// A delayed request the gateway never processes after all (every other delayed charge still open at
    /// the end): it says "no such attempt" until the reconciler expires the attempt.
    case requestNeverProcessed
    /// A decline the decision table lets cascade (`softDecline`).
    case softDecline
    /// A decline that must not cascade (`hardDecline`).
    case hardDecline
    /// The gateway answers pending and settles later (`pending`).
    case pendingAnswer

    // The customer and the app.
    /// The customer closes the card form.
    case closedForm
    /// The customer cancels in the wallet or the vendor SDK.
    case cancelledInWallet
    /// The customer pays in the wallet or SDK and never comes back (`payAndVanish`).
    case customerVanished
    /// The app dies right after the hand-off: no report, no polling.
    case appDiedAfterHandoff
    /// After a declined or cancelled hand-off, the customer chooses to try again.
    case customerTriedAgain
    /// An error said nothing was sent; the customer taps pay again.
    case customerPaidAgain

    // Notifications.
    /// Held in the gateway's outbox and delivered later, shuffled (late, out of order).
    case notificationLate
    /// Delivered several times at once.
    case notificationDuplicated
    /// Never delivered: only an inquiry finds the result.
    case notificationNever
    /// The server stored and applied it, then died before acknowledging: the gateway delivers it again later.
    case ackLost
    /// A notification signed with the wrong secret, claiming the payment's last attempt is paid.
    case forgedNotification
    /// A correctly signed notification for an attempt this merchant never made (another shop on the
    /// same gateway account): quarantined.
    case strayNotification
    /// A `pending` notification that arrives after the attempt's final one.
    case stalePendingNotification
    /// A correctly signed notification saying paid about an attempt the gateway and the server hold as
    /// failed (a gateway's bug, or a replay): the server applies it only after its own inquiry, which
    /// says failed.
    case contradictingNotification

    // Inquiries.
    /// Inquiries about the attempt time out (1 to 5 of them) before one succeeds.
    case failingInquiries

    // Operations (captures, voids, refunds).
    /// The gateway did it, then the answer was lost: unknown, settled by inquiry or notification.
    case operationLostAnswer
    /// HTTP 5xx after the gateway did it.
    case operationServerErrorDone
    /// HTTP 5xx and the gateway did not do it.
    case operationServerErrorNotDone
    /// The request never left.
    case operationNotSent
    /// The gateway refused it.
    case operationDeclined
    /// The gateway answered pending and did it later.
    case operationPending
    /// Inquiries about the operation time out (1 to 3) before one succeeds.
    case operationFailingInquiries
    /// The merchant's backend retried an operation whose outcome was unknown, with the same key.
    case operationRetried
    /// Two refunds at once that together exceed what was captured.
    case concurrentRefunds

    // The merchant's webhook receiver (the server's events).
    /// The receiver answers 500 before processing the event.
    case webhookServerError
    /// The receiver answers 503 before processing the event.
    case webhookUnavailable
    /// The post never reached the receiver.
    case webhookNotSent
    /// The receiver processed the event, then the answer was lost (a timeout): the event comes again, a duplicate.
    case webhookTimeoutAfterProcessing
}

/// How a checkout's app presents the payment.
enum ChaosFlow: String, Sendable, CaseIterable {
    /// A card form; the app's gateway half charges (``FakeFlow/card``).
    case card
    /// A card form sealed by the app and charged by the server's submit step (``FakeFlow/submit``).
    case submit
    /// A vendor SDK in the app that reports in-process (``FakeFlow/sdk``).
    case sdk
    /// A wallet hand-off: the customer leaves the app and comes back through the return URL.
    case wallet

    /// The fake whose app half presents this flow.
    var fakeFlow: FakeFlow {
        switch self {
        case .card, .wallet: .card
        case .submit: .submit
        case .sdk: .sdk
        }
    }

    var method: PaymentMethod { self == .wallet ? .wechatPay : .card }

    /// The customer leaves the app (a wallet page or a vendor SDK).
    var handsOff: Bool { self == .sdk || self == .wallet }
}

/// What the customer does when the app hands them a form, a wallet or an SDK.
enum CustomerChoice: Sendable, Hashable {
    case pay, cancel, vanish, closeForm
}

/// Seeded draws. Not thread-safe by itself: ``ChaosWorld`` keeps it under its lock.
struct Dice {
    private var generator: SeededGenerator
    /// Per deck, the cards (indices) not dealt yet.
    private var decks: [String: [Int]] = [:]

    init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        guard p > 0 else { return false }
        return Double(generator.next() >> 11) / Double(UInt64(1) << 53) < p
    }

    /// A uniform integer in `0..<bound`.
    mutating func roll(_ bound: Int) -> Int { Int(generator.next(upperBound: UInt64(bound))) }

    mutating func pick<T>(_ items: [T]) -> T { items[roll(items.count)] }

    /// The next of `items` from a shuffled deck named `deck`, reshuffled when it runs out: random, yet
    /// every item comes up once in each `items.count` deals, so a short run still sees each one.
    mutating func deal<T>(_ deck: String, _ items: [T]) -> T {
        var cards = decks[deck] ?? []
        if cards.isEmpty {
            cards = Array(items.indices)
            cards.shuffle(using: &generator)
        }
        let card = cards.removeLast()
        decks[deck] = cards
        return items[card]
    }

    mutating func shuffle<T>(_ items: inout [T]) { items.shuffle(using: &generator) }

    /// A reference drawn from the seed (stray notifications name attempts nobody made).
    mutating func reference() -> AttemptReference { AttemptReference.generate(using: &generator) }
}
