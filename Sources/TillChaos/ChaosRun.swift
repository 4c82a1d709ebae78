import Foundation
import Logging
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillServer
import TillTesting

/// The chaos run: many checkouts through production's merchant-server logic — ``PaymentService`` (the
/// type the HTTP server adapts), its attempt policy and router, a real SQLite or PostgreSQL store, and the
/// production ``Reconciler`` — driven by the app's own checkout loop (``AppCheckout``) over an in-process
/// ``InProcessMerchantBackend``, against fake gateways that inject faults (``ChaosFault``) and keep a
/// ledger of what they really charged.
///
/// Checkouts run one at a time and every fault is drawn from the seed, so one seed gives one report
/// (apart from ``Report/seconds``). After the last checkout the gateways deliver what they held back,
/// settle what they still hold as pending (as paid: the worst case), and the reconciler runs until
/// nothing changes. Then every payment is counted against the ledgers:
///
/// - a **double charge**: a payment charged by more than one attempt;
/// - a **lost payment**: a charged payment the store does not hold as paid (or authorized);
/// - a **stuck payment**: a payment still created or pending after the reconciliation horizon.
///
/// Its events go to the merchant's one webhook: the production ``EventDeliverer`` posts them, in a pass after every
/// checkout and every payment operated on and then pass after pass until none is pending, to an in-process
/// ``WebhookReceiver`` that fails a share of the posts as real receivers fail. Then every event the store wrote is
/// counted against what the receiver accepted:
///
/// - a **lost event**: one the receiver never accepted;
/// - an **out-of-order event**: one the receiver accepted before an earlier event of its payment;
/// - a **stale final view**: a payment whose final view (status, captured, refunded) is not what the last event the
///   receiver accepted for it says (a committed change without its event).
public enum ChaosRun {
    /// What to run.
    public struct Options: Sendable, Hashable {
        /// How many checkouts.
        public var checkouts: Int
        /// The seed of every draw: the same seed replays the same run.
        public var seed: UInt64
        /// The probability (0...1) of a fault at each step.
        public var faultRate: Double
        /// `sqlite` (a temporary file, removed after the run), `sqlite:PATH` (that file, kept), or a
        /// `postgres://` URL (a merchant id of its own, so a shared database is fine).
        public var store: String
        /// The probability (0...1) that the merchant's webhook receiver fails a post; `nil`: `faultRate`.
        public var webhookFaultRate: Double?
        /// Cards are routed by a rule that learns (``SuccessRateRouting``), its scores rebuilt from the store every ten
        /// checkouts as the server's refresher does, instead of the 60/40 split.
        public var learning: Bool

        /// Options for a run; on a temporary SQLite file unless `store` says otherwise.
        public init(checkouts: Int, seed: UInt64, faultRate: Double, store: String = "sqlite", webhookFaultRate: Double? = nil,
                    learning: Bool = false) {
            self.checkouts = checkouts
            self.seed = seed
            self.faultRate = faultRate
            self.store = store
            self.webhookFaultRate = webhookFaultRate
            self.learning = learning
        }
    }

    /// The figures of a run. `doubleCharges`, `lostPayments`, `stuckPayments`, `unchargedPaid`, `doubleCaptures`,
    /// `overRefunds`, `lostOperations`, `stuckOperations`, `lostEvents`, `outOfOrderEvents`, `staleFinalViews` and
    /// `undeliveredEvents` must be 0.
    public struct Report: Sendable, Hashable, Codable {
        /// Checkouts run.
        public var checkouts = 0
        /// Payments charged by more than one attempt.
        public var doubleCharges = 0
        /// Payments a gateway charged that the store does not hold as paid or authorized.
        public var lostPayments = 0
        /// Payments still created or pending after the reconciliation.
        public var stuckPayments = 0
        /// Attempts a gateway captured more of than was authorized, or whose capture reached it twice.
        public var doubleCaptures = 0
        /// Attempts a gateway refunded more of than it took, or whose refund reached it twice.
        public var overRefunds = 0
        /// Operations a gateway did that the store does not hold as succeeded, and attempts whose totals in the store
        /// differ from the gateway's.
        public var lostOperations = 0
        /// Operations still pending or unknown after the reconciliation.
        public var stuckOperations = 0
        /// Events the store holds for the run's merchant that the webhook receiver never accepted.
        public var lostEvents = 0
        /// Events the receiver accepted while an earlier event of their payment had not been accepted yet.
        public var outOfOrderEvents = 0
        /// Payments whose final view (status, amount captured, amount refunded) differs from the data of the last event
        /// the receiver accepted for them: a committed change without its event.
        public var staleFinalViews = 0
        /// Events the store does not hold as delivered after the last delivery pass.
        public var undeliveredEvents = 0
        /// Events the store wrote for the run's merchant.
        public var events = 0
        /// Posts the receiver got (every try of every event).
        public var eventPosts = 0
        /// Events the receiver accepted again (it had processed an earlier try whose answer was lost).
        public var duplicateDeliveries = 0
        /// Delivery passes run (between the checkouts, between the operations, and at the end until nothing was pending).
        public var deliveryPasses = 0
        /// Operations the store holds.
        public var operations = 0
        /// What the operation requests were answered, by status or error code.
        public var operationAnswers: [String: Int] = [:]
        /// `sqlite` or `postgres`.
        public var store = ""
        /// Wall-clock time of the run.
        public var seconds = 0.0
        /// Payments the store holds as paid that no gateway charged.
        public var unchargedPaid = 0
        /// Payments that ended holding money (paid, authorized, refunded in part or in full). Sessions the gateways still held at the end were
        /// settled as paid (the worst case), so this counts some the customer walked away from.
        public var paid = 0
        /// Payments that ended failed, cancelled or expired (not by a void).
        public var failed = 0
        /// Authorized payments the merchant voided.
        public var voided = 0
        /// Attempts stored.
        public var attempts = 0
        /// Attempts the gateways charged.
        public var charges = 0
        /// Checkouts for which no payment was created.
        public var withoutPayment = 0
        /// Notifications the store applied (production's ``ApplyOutcome/applied(attempt:payment:)``).
        public var notificationsApplied = 0
        /// Notifications already seen, or reporting the status the attempt already had.
        public var notificationsDuplicate = 0
        /// Notifications stored but refused by the rules (backwards, wrong amount).
        public var notificationsStale = 0
        /// Notifications the server applies only after its own inquiry.
        public var notificationsNeedingInquiry = 0
        /// Verified notifications about attempts this merchant does not have.
        public var notificationsQuarantined = 0
        /// Notifications the server refused as unverifiable (nothing stored).
        public var notificationsRejected = 0
        /// Reports from the server's own inquiries (the app's, the server's, the reconciler's) that moved an attempt.
        public var inquiriesApplied = 0
        /// Reconciliation entries that settled or expired an attempt.
        public var reconciled = 0
        /// Reconciliation entries by action, over all passes.
        public var reconciliationActions: [String: Int] = [:]
        /// Reconciler passes run (until one changed nothing, at most 10).
        public var reconciliationPasses = 0
        /// What the app's checkout ended with when it threw, by error code (the server's refusals and the
        /// gateways' failures, as the app sees them).
        public var appErrors: [String: Int] = [:]
        /// Failures that were not refusals (the HTTP adapter's 500), and genuine notifications the server
        /// refused: each one is a finding.
        public var internalErrors: [String] = []
        /// How often each fault was injected, by ``ChaosFault`` raw value.
        public var faults: [String: Int] = [:]
        /// The run's seed.
        public var seed: UInt64 = 0
        /// The run's fault rate.
        public var faultRate = 0.0
        /// The webhook receiver's fault rate.
        public var webhookFaultRate = 0.0
        /// One line per violation, with the story: each attempt's scripted behaviour, what the gateway says
        /// and what the store says.
        public var violations: [String] = []

        /// An empty report.
        public init() {}

        /// True when no money rule was broken.
        public var isClean: Bool {
            doubleCharges == 0 && lostPayments == 0 && stuckPayments == 0 && unchargedPaid == 0
                && doubleCaptures == 0 && overRefunds == 0 && lostOperations == 0 && stuckOperations == 0
                && lostEvents == 0 && outOfOrderEvents == 0 && staleFinalViews == 0 && undeliveredEvents == 0
        }

        /// The report without its timing, for comparing two runs.
        public var untimed: Report {
            var copy = self
            copy.seconds = 0
            return copy
        }

        /// One JSON object: `checkouts`, then the figures that must be 0 (`doubleCharges`, `lostPayments`,
        /// `stuckPayments`, `doubleCaptures`, `overRefunds`, `lostOperations`, `stuckOperations`, `lostEvents`,
        /// `outOfOrderEvents`, `staleFinalViews`), `store`, `seconds`, then the other figures (violations are counted,
        /// not listed).
        public var jsonLine: String {
            func int(_ value: Int) -> OrderedJSON { .number(String(value)) }
            func counts(_ table: [String: Int]) -> OrderedJSON {
                .object(table.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: int($0.value)) })
            }
            let members: [(String, OrderedJSON)] = [
                ("checkouts", int(checkouts)), ("doubleCharges", int(doubleCharges)), ("lostPayments", int(lostPayments)),
                ("stuckPayments", int(stuckPayments)), ("doubleCaptures", int(doubleCaptures)), ("overRefunds", int(overRefunds)),
                ("lostOperations", int(lostOperations)), ("stuckOperations", int(stuckOperations)),
                ("lostEvents", int(lostEvents)), ("outOfOrderEvents", int(outOfOrderEvents)), ("staleFinalViews", int(staleFinalViews)),
                ("store", .string(store)), ("seconds", .number(String(format: "%.2f", seconds))),
                ("undeliveredEvents", int(undeliveredEvents)), ("events", int(events)), ("duplicateDeliveries", int(duplicateDeliveries)),
                ("eventPosts", int(eventPosts)), ("deliveryPasses", int(deliveryPasses)),
                ("unchargedPaid", int(unchargedPaid)), ("paid", int(paid)), ("failed", int(failed)), ("voided", int(voided)), ("attempts", int(attempts)),
                ("charges", int(charges)), ("withoutPayment", int(withoutPayment)),
                ("notificationsApplied", int(notificationsApplied)), ("notificationsDuplicate", int(notificationsDuplicate)),
                ("notificationsStale", int(notificationsStale)), ("notificationsNeedingInquiry", int(notificationsNeedingInquiry)),
                ("notificationsQuarantined", int(notificationsQuarantined)), ("notificationsRejected", int(notificationsRejected)),
                ("inquiriesApplied", int(inquiriesApplied)), ("reconciled", int(reconciled)),
                ("reconciliationPasses", int(reconciliationPasses)), ("internalErrors", int(internalErrors.count)),
                ("violations", int(violations.count)), ("operations", int(operations)), ("operationAnswers", counts(operationAnswers)),
                ("seed", .number(String(seed))),
                ("faultRate", .number(String(faultRate))), ("webhookFaultRate", .number(String(webhookFaultRate))), ("faults", counts(faults)),
            ]
            return String(decoding: OrderedJSON.object(members.map { .init(key: $0.0, value: $0.1) }).serialized(), as: UTF8.self)
        }
    }

    /// The gateways of the chaos merchant.
    public static let gatewayIDs = ChaosWorld.gatewayIDs

    /// The merchant the chaos run routes for: cards split 60/40 between alpha and beta (or, `learning`, ordered by a
    /// rule that learns which approves more), wallets on gamma, everything falling back through all four; three
    /// attempts; a soft decline may cascade. Its events go to one webhook, the run's faulty receiver.
    public static func merchant(id: String = "chaos", learning: Bool = false) -> MerchantConfiguration {
        MerchantConfiguration(
            id: id, apiKey: CredentialReference(env: apiKeyVariable),
            gateways: gatewayIDs.map { GatewayConfiguration(id: $0, module: "fake") },
            routing: RoutingConfiguration(rules: [
                learning
                    ? RoutingRule(name: "cards", when: RuleConditions(methods: [.card]), gateways: [RuleTarget("alpha"), RuleTarget("beta")],
                                  successRate: SuccessRateRouting(halfLifeSeconds: 60, minSamples: 5, exploration: 0.1))
                    : RoutingRule(name: "cards", when: RuleConditions(methods: [.card]),
                                  gateways: [RuleTarget("alpha", weight: 60), RuleTarget("beta", weight: 40)]),
                RoutingRule(name: "wallets", when: RuleConditions(methods: [.wechatPay]), gateways: [RuleTarget("gamma")]),
            ], fallback: gatewayIDs),
            retry: RetryPolicy(maxAttempts: 3, timeBudgetMillis: 60_000, inquiryAttempts: 3, inquiryIntervalMillis: 2_000),
            health: HealthSettings(window: 50, minSamples: 20, minSuccessRate: 0.3, failureThreshold: 8, openMillis: 20_000),
            returnURLSchemes: ["chaosshop"],   // the scheme of the chaos app's return handler
            webhooks: [WebhookEndpoint(url: webhookURL, secret: CredentialReference(env: webhookSecretVariable))])
    }

    /// The merchant's webhook: the run's in-process receiver (nothing is sent over a network).
    public static let webhookURL = "https://receiver.chaos.invalid/till/events"

    /// How the run delivers events: the production deliverer with short retries (1 s, doubling, at most a minute) and
    /// every due event claimed in one pass; 8 posts at once.
    public static let eventDelivery = EventDeliverySettings(enabled: true, timeoutSeconds: 10, concurrency: 8, batch: 10_000,
                                                            pollIntervalSeconds: 1, retryBaseSeconds: 1, retryMaxSeconds: 60)

    /// How far ahead of the wall clock a delivery pass runs: past any retry's backoff, so every pending event is due
    /// at every pass and what a pass claims never depends on how fast the run goes.
    static let deliveryLookahead: TimeInterval = 3_600

    /// The reconciler's settings for the end of a run: every open attempt in one batch, no per-gateway
    /// budget in the way, production's backoff.
    public static let reconciliation = ReconciliationSettings(minimumAgeSeconds: 600, batch: 10_000, maxInquiriesPerGatewayPerPass: 10_000,
                                                              backoffBaseSeconds: 60, backoffMaxSeconds: 3_600)

    static let apiKeyVariable = "TILL_CHAOS_API_KEY"
    static let webhookSecretVariable = "TILL_CHAOS_WEBHOOK_SECRET"

    /// Runs `options.checkouts` checkouts and counts what went wrong.
    /// - Throws: when the store cannot be opened or read (a run that could not count is not a report).
    public static func run(_ options: Options) async throws -> Report {
        let started = ContinuousClock.now
        let (store, kind, temporary) = try openStore(options.store)
        func cleanUp() async {
            try? await store.close()
            if let temporary {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: temporary + suffix) }
            }
        }
        do {
            try await store.migrate()
            let driver = try ChaosDriver(options: options, store: store, kind: kind)
            var report = try await driver.run()
            await cleanUp()
            let elapsed = ContinuousClock.now - started
            report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return report
        } catch {
            await cleanUp()
            throw error
        }
    }

    /// The store `spec` names, its kind, and the file to remove after the run (a temporary SQLite file).
    static func openStore(_ spec: String) throws -> (any PaymentStore, kind: String, temporary: String?) {
        if spec == "sqlite" {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-chaos-\(UUID().uuidString).sqlite").path
            return (try SQLitePaymentStore(path: path), "sqlite", path)
        }
        if spec == "memory" { return (InMemoryPaymentStore(), "memory", nil) }
        if spec.hasPrefix("sqlite:") { return (try TillServer.openStore(spec), "sqlite", nil) }
        if spec.hasPrefix("postgres://") || spec.hasPrefix("postgresql://") { return (try TillServer.openStore(spec), "postgres", nil) }
        throw CheckoutError(.invalidField, field: "store", message: "expected sqlite, sqlite:PATH, postgres://… or memory")
    }
}

/// Delivers the gateways' notifications to the server's notification entry point, as their HTTP posts
/// would arrive: right away (before the server's next call), or later, shuffled, some twice.
struct Courier: Sendable {
    let service: PaymentService
    let world: ChaosWorld
    /// Refused notifications, by the server's error code.
    let rejected = Locked<[String: Int]>([:])

    /// One delivery. When the server stored it, its acknowledgement may be lost (the server died between
    /// storing and answering): the gateway then delivers it again later.
    func deliver(_ envelope: Envelope) async {
        do {
            _ = try await service.receiveNotification(gateway: envelope.gateway, headers: envelope.notification.headers,
                                                      body: envelope.notification.body)
        } catch let error as ServiceError {
            rejected.withLock { $0[error.code, default: 0] += 1 }
            if !envelope.forged {
                world.recordInternalError(CheckoutError(CheckoutError.Code(rawValue: error.code),
                                                        message: "a genuine notification from \(envelope.gateway) was refused: \(error.message)"))
            }
            return
        } catch {
            world.recordInternalError(error)
            return
        }
        if envelope.redeliveries < 5, world.fault() {
            world.count(.ackLost, checkout: nil)
            var again = envelope
            again.redeliveries += 1
            world.sendLater(again)
        }
    }

    /// Delivers what the gateways sent right away.
    func flushWire() async {
        while true {
            let batch = world.takeWire()
            if batch.isEmpty { return }
            for envelope in batch { await deliver(envelope) }
        }
    }

    /// Delivers everything held back so far, in a seeded shuffle, a quarter of it twice (a gateway's retry
    /// crossing its first delivery). Returns how many were taken.
    @discardableResult
    func drain(includingAfterSettle: Bool) async -> Int {
        await flushWire()
        var batch = await world.takeLate(includingAfterSettle: includingAfterSettle)
        world.draw { $0.shuffle(&batch) }
        for envelope in batch {
            await deliver(envelope)
            if world.draw({ $0.roll(4) == 0 }) { await deliver(envelope) }
        }
        await flushWire()
        return batch.count
    }

    /// Drains until nothing is held back (lost acknowledgements queue redeliveries).
    func drainUntilQuiet() async {
        for _ in 0..<1_000 {
            if await drain(includingAfterSettle: true) == 0 { return }
        }
    }
}

/// One run: the merchant server's logic on the store, the app, the customer and the gateways.
final class ChaosDriver {
    let options: ChaosRun.Options
    let kind: String
    let merchantID: String
    let world: ChaosWorld
    let tally = OutcomeTally()
    let store: ObservedPaymentStore
    let state: ServerState
    let service: PaymentService
    let courier: Courier
    let backend: InProcessMerchantBackend
    let returns: ReturnURLHandler
    let clock = VirtualClock()
    let usd = Currency.lookup("USD")!
    /// The merchant's webhook receiver, and the production deliverer posting to it.
    let receiver: WebhookReceiver
    let deliverer: EventDeliverer
    var deliveryPasses = 0
    /// Draws per checkout (flow, amount, drains); faults come from the world's own dice.
    var generator: SeededGenerator
    var appErrors: [String: Int] = [:]
    /// What the operation requests were answered, by status or error code.
    var operationAnswers: [String: Int] = [:]

    init(options: ChaosRun.Options, store raw: any PaymentStore, kind: String) throws {
        self.options = options
        self.kind = kind
        // On a shared PostgreSQL database the run's payments are told apart by a merchant of their own.
        merchantID = kind == "postgres" ? "chaos-\(UUID().uuidString.prefix(8).lowercased())" : "chaos"
        world = ChaosWorld(seed: options.seed ^ 0x6A09_E667_F3BC_C908, rate: options.faultRate)
        store = tally.observing(raw)
        let configuration = TillConfiguration(
            merchants: [ChaosRun.merchant(id: merchantID, learning: options.learning)],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:chaos", publicURL: "https://merchant.chaos.invalid",
                                   reconciliation: ChaosRun.reconciliation))
        state = try ServerState(configuration: configuration, plugins: [world.plugin],
                                environment: [ChaosRun.apiKeyVariable: "chaos-api-key-not-a-secret",
                                              ChaosRun.webhookSecretVariable: "chaos-webhook-secret-not-a-secret"], clock: clock)
        guard let merchant = state.merchant(id: merchantID), let webhook = merchant.webhooks.first else {
            throw CheckoutError(.misconfigured, message: "the chaos merchant or its webhook is missing from the server state")
        }
        receiver = WebhookReceiver(url: webhook.url, secrets: webhook.secrets, seed: options.seed ^ 0xBB67_AE85_84CA_A73B,
                                   rate: options.webhookFaultRate ?? options.faultRate, world: world)
        // The jitter only scales when a retry falls due on the wall clock; every pass runs past it (deliveryLookahead).
        let jitter = Locked(SeededGenerator(seed: options.seed ^ 0x3C6E_F372_FE94_F82B))
        let (ownMerchant, webhooks) = (merchantID, merchant.webhooks)
        // Only this run's merchant's events: on a shared PostgreSQL database, never another test's or an earlier run's.
        deliverer = EventDeliverer(store: store, settings: ChaosRun.eventDelivery,
                                   endpoints: { $0 == ownMerchant ? webhooks : [] }, merchants: [ownMerchant], transport: receiver,
                                   logger: Self.quiet("till.events"),
                                   jitter: { jitter.withLock { 0.5 + 0.5 * Double($0.next() >> 11) / Double(UInt64(1) << 53) } })
        service = PaymentService(state: state, store: store, logger: Self.quiet("till.server"), inquiriesInline: true)
        let shared = world
        let courier = Courier(service: service, world: shared)
        self.courier = courier
        backend = InProcessMerchantBackend(service: service, merchant: merchant,
                                           beforeEachCall: { await courier.flushWire() },
                                           onPayment: { shared.recordPayment(reference: $0, id: $1) },
                                           onInternalError: { shared.recordInternalError($0) })
        returns = try ReturnURLHandler(routes: [.customScheme("chaosshop")])
        generator = SeededGenerator(seed: options.seed)
    }

    /// A logger for production code that says only what went wrong (the run makes a lot of traffic).
    static func quiet(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .error
        return logger
    }

    func run() async throws -> ChaosRun.Report {
        let scores = RoutingScoresRefresher(state: state, store: store)
        for index in 0..<options.checkouts {
            if scores.isNeeded, index % 10 == 0 { try await scores.refreshOnce() }
            await checkout(index)
            await deliverEvents()
        }
        try await settleAndDeliverEverything()
        await deliverEvents()
        await operateOnPayments()
        var report = ChaosRun.Report()
        try await reconcile(into: &report)
        try await deliverEveryEvent()
        try await count(into: &report)
        try await countOperations(into: &report)
        try await countEvents(into: &report)
        return report
    }

    // MARK: Checkouts

    func checkout(_ index: Int) async {
        let flow = ChaosFlow.allCases[roll(ChaosFlow.allCases.count)]
        let amount = Money(minorUnits: Int64(roll(100_000)) + 1, currency: usd)
        // A third of the payments authorize only (the merchant captures or voids them later).
        let action: PaymentAction = roll(3) == 0 ? .authorize : .sale
        let intent = PaymentIntent(merchantReference: "chaos-\(index)", amount: amount, method: flow.method, action: action)
        world.beginCheckout(index, flow: flow)
        if flow.handsOff, world.fault() {
            world.count(.appDiedAfterHandoff)
            await appDiesAfterHandoff(intent, flow: flow)
        } else {
            await pay(intent, flow: flow)
        }
        await courier.flushWire()
        await sendLateNotifications(checkout: index, amount: amount)
        // Now and then the gateways' retries come in: everything held back so far, shuffled.
        if roll(10) == 0 { await courier.drain(includingAfterSettle: false) }
        // Time passes between checkouts (the health monitor's circuits run on this clock).
        clock.advance(by: .milliseconds(Int64(roll(2_000))))
    }

    /// A uniform integer in `0..<bound` from the checkout draws.
    func roll(_ bound: Int) -> Int { Int(generator.next(upperBound: UInt64(bound))) }

    /// The app's checkout, as an app runs it: pay; when the app says nothing was sent, the customer taps
    /// pay again; after a declined or cancelled hand-off, the customer may choose to try again.
    func pay(_ intent: PaymentIntent, flow: ChaosFlow) async {
        let customer = ChaosCustomer(world: world, returns: returns)
        let app = AppCheckout(backend: backend, gateways: world.appHalves(for: flow, customer: customer), returns: returns,
                              presenter: customer, returnTimeout: .milliseconds(50), confirmationTimeout: .milliseconds(5),
                              confirmationInterval: .milliseconds(5), maxAttempts: 3)
        var result: CheckoutResult?
        for round in 1...3 {
            do {
                result = try await app.pay(intent)
                break
            } catch let error as CheckoutError where error.category == .unavailable && round < 3 {
                world.count(.customerPaidAgain)
            } catch {
                noteAppError(error)
                break
            }
        }
        guard let result, result.customerMayHaveAuthenticated, result.status.isNegative, world.fault() else { return }
        world.count(.customerTriedAgain)
        do {
            _ = try await app.retry(intent)
        } catch {
            noteAppError(error)
        }
    }

    func noteAppError(_ error: any Error) {
        let code = (error as? CheckoutError)?.code.rawValue ?? "\(type(of: error))"
        appErrors[code, default: 0] += 1
    }

    /// The app dies right after handing the customer to the wallet or the SDK: the customer still acts
    /// there, but the app never reports, polls or asks the server to inquire.
    func appDiesAfterHandoff(_ intent: PaymentIntent, flow: ChaosFlow) async {
        guard let expected = try? returns.expectReturnOnAnyRoute() else { return }
        defer { returns.cancel(expected) }
        let preparation: Preparation
        do {
            preparation = try await backend.prepare(intent, returnURLs: expected.urls)
        } catch {
            noteAppError(error)
            return
        }
        guard let fake = world.fakes[preparation.gateway]?[flow.fakeFlow],
              let step = try? await fake.present(preparation, input: .start), step.customerMayAuthenticate else { return }
        let choice = world.customerChoice(handOff: true)
        _ = try? await fake.customerActs(on: preparation.attempt, result: choice == .cancel ? .cancelled : .paid,
                                         code: choice == .cancel ? "cancel" : nil)
    }

    /// Notifications of this checkout that arrive later: a gateway's earlier `pending` notification
    /// after its final one; and, with the fault rate, one of a forgery claiming the last attempt is paid,
    /// a correctly signed one about an attempt another shop made on the same gateway account, or a
    /// correctly signed one contradicting the gateway (it says paid about an attempt the gateway and the
    /// server hold as failed: a gateway's bug or a replay, delivered at once so nothing else can have
    /// moved the attempt meanwhile).
    func sendLateNotifications(checkout index: Int, amount: Money) async {
        let attempts = world.attempts(of: index)
        for (reference, attempt) in attempts where attempt.plan.behavior != .failPrepare(.notSent) {
            guard world.fault() else { continue }
            world.count(.stalePendingNotification)
            let fake = world.fakes[attempt.gateway]![attempt.flow.fakeFlow]!
            let report = StatusReport(gateway: attempt.gateway, attempt: reference, gatewayReference: "fake_\(reference.rawValue)",
                                      status: .pending, amount: amount, gatewayStatus: "pending", eventID: "\(reference.rawValue):pending")
            world.sendLater(Envelope(gateway: attempt.gateway, notification: fake.signedNotification(for: report)))
        }
        guard world.fault() else { return }
        func paid(_ gateway: GatewayID, _ reference: AttemptReference, event: String) -> StatusReport {
            StatusReport(gateway: gateway, attempt: reference, gatewayReference: "fake_\(reference.rawValue)", status: .paid,
                         amount: amount, gatewayStatus: "paid", eventID: "\(reference.rawValue):\(event)")
        }
        var kind = world.draw { $0.deal("late", [ChaosFault.forgedNotification, .strayNotification, .contradictingNotification]) }
        if kind == .contradictingNotification {
            let stored = try? await store.payment(attempt: attempts.first?.0 ?? AttemptReference(rawValue: ""))
            for (reference, attempt) in attempts {
                guard let fake = world.fake(for: reference),
                      await fake.ledger.records[reference].map({ $0.status.isNegative && !$0.charged }) == true,
                      stored?.attempts.first(where: { $0.reference == reference })?.status.isNegative == true else { continue }
                world.count(.contradictingNotification)
                await courier.deliver(Envelope(gateway: attempt.gateway,
                                               notification: fake.signedNotification(for: paid(attempt.gateway, reference, event: "contradiction"))))
                return
            }
            kind = .forgedNotification
        }
        if kind == .forgedNotification, let (reference, attempt) = attempts.last {
            world.count(.forgedNotification)
            let forger = FakeGateway(id: attempt.gateway, secret: "not-the-gateway-secret")
            world.sendLater(Envelope(gateway: attempt.gateway, notification: forger.signedNotification(for: paid(attempt.gateway, reference, event: "paid")),
                                     forged: true))
        } else {
            world.count(.strayNotification)
            let (gateway, reference) = world.draw { ($0.pick(ChaosWorld.gatewayIDs), $0.reference()) }
            world.sendLater(Envelope(gateway: gateway, notification: world.fakes[gateway]![.card]!.signedNotification(for: paid(gateway, reference, event: "paid"))))
        }
    }

    // MARK: The end of the run

    /// Delivers everything held back, lets the gateways settle what they still hold as pending, and
    /// delivers what that sent. Pending settles as paid, the worst case (even a session the customer
    /// walked away from: the server must not have moved on while it could still charge), except a
    /// prepare that never left (the gateway never had it) and every other delayed request, which the
    /// gateway never processes (it says "no such attempt" until the reconciler expires it).
    func settleAndDeliverEverything() async throws {
        world.beginCheckout(-1, flow: .card)
        await courier.drainUntilQuiet()
        for (reference, attempt) in world.attemptsInOrder {
            let fake = world.fakes[attempt.gateway]![attempt.flow.fakeFlow]!
            guard await fake.ledger.records[reference]?.status == .pending,
                  attempt.plan.behavior != .failPrepare(.notSent) else { continue }
            if attempt.plan.behavior == .delayedCharge, world.draw({ $0.deal("delayed", [true, false]) }) {
                world.count(.requestNeverProcessed, checkout: attempt.checkout)
                continue
            }
            _ = try await fake.settle(reference, as: .paid, code: "settled")
        }
        await courier.drainUntilQuiet()
    }

    /// The production reconciler, past the horizon (a day later, so every open attempt is due), pass
    /// after pass until one changes nothing (at most 10). Each pass is two hours after the last, past
    /// any backoff.
    func reconcile(into report: inout ChaosRun.Report) async throws {
        let reconciler = Reconciler(state: state, store: store, settings: state.settings.reconciliation,
                                    logger: Self.quiet("till.reconciler"))
        let horizon = Date().addingTimeInterval(86_400)
        for pass in 0..<10 {
            let entries = try await reconciler.runOnce(now: horizon.addingTimeInterval(Double(pass) * 7_200))
                .filter { $0.merchantID == merchantID }
            report.reconciliationPasses = pass + 1
            for entry in entries { report.reconciliationActions[entry.action, default: 0] += 1 }
            let moved = entries.filter { $0.action == ReconciliationAction.settled.rawValue || $0.action == ReconciliationAction.expired.rawValue }
            report.reconciled += moved.count
            let retrying = entries.contains {
                $0.action == ReconciliationAction.inquiryFailed.rawValue || $0.action == ReconciliationAction.skippedBudget.rawValue
            }
            if moved.isEmpty && !retrying { break }
        }
    }

    // MARK: Counting

    /// Counts every payment against the ledgers.
    func count(into report: inout ChaosRun.Report) async throws {
        report.checkouts = options.checkouts
        report.store = kind
        report.seed = options.seed
        report.faultRate = options.faultRate
        report.webhookFaultRate = receiver.rate
        var attributed: Set<AttemptReference> = []
        for index in 0..<options.checkouts {
            guard let id = world.paymentID(reference: "chaos-\(index)"),
                  let payment = try await store.payment(id: id, merchant: merchantID) else {
                report.withoutPayment += 1
                continue
            }
            report.attempts += payment.attempts.count
            var charged = 0
            for attempt in payment.attempts {
                attributed.insert(attempt.reference)
                // An authorization voided at the gateway holds nothing any more.
                if let ledger = world.fake(for: attempt.reference)?.ledger, await ledger.isCharged(attempt.reference),
                   await !ledger.moneyOf(attempt.reference).voided { charged += 1 }
            }
            report.charges += charged
            let holds = payment.status.moneyMoved || payment.status == .authorized
            var problems: [String] = []
            if charged > 1 {
                report.doubleCharges += 1
                problems.append("charged by \(charged) attempts")
            }
            if charged > 0 && !holds {
                report.lostPayments += 1
                problems.append("charged, but the store says \(payment.status)")
            }
            if payment.status == .created || payment.status == .pending {
                report.stuckPayments += 1
                problems.append("still \(payment.status) after the reconciliation")
            }
            if holds && charged == 0 {
                report.unchargedPaid += 1
                problems.append("\(payment.status) in the store, but no gateway charged it")
            }
            if holds {
                report.paid += 1
            } else if payment.operations.contains(where: { $0.kind == .void && $0.status == .succeeded }) {
                report.voided += 1
            } else if payment.status.isNegative {
                report.failed += 1
            }
            if !problems.isEmpty { report.violations.append(await story(index, payment: payment, problems: problems)) }
        }
        // A charge for an attempt no payment holds is money nobody knows about.
        for (reference, attempt) in world.attemptsInOrder where !attributed.contains(reference) {
            guard await world.fake(for: reference)?.ledger.isCharged(reference) == true else { continue }
            report.lostPayments += 1
            report.violations.append("checkout \(attempt.checkout): attempt \(reference) on \(attempt.gateway) was charged, but no stored payment has it")
        }
        let tally = self.tally.counts
        report.notificationsApplied = tally.notifications["applied"] ?? 0
        report.notificationsDuplicate = tally.notifications["duplicate"] ?? 0
        report.notificationsStale = tally.notifications["stale"] ?? 0
        report.notificationsNeedingInquiry = tally.notifications["needs_inquiry"] ?? 0
        report.notificationsQuarantined = tally.notifications["quarantined"] ?? 0
        report.notificationsRejected = courier.rejected.withLock { $0.values.reduce(0, +) }
        report.inquiriesApplied = tally.inquiries["applied"] ?? 0
        report.appErrors = appErrors
        report.internalErrors = world.internalErrors
        let faults = world.faultCounts
        report.faults = Dictionary(uniqueKeysWithValues: ChaosFault.allCases.map { ($0.rawValue, faults[$0] ?? 0) })
    }

    /// A violation's line: the checkout, what is wrong, each attempt's script and what the gateway and
    /// the store say, and the checkout's other faults.
    func story(_ index: Int, payment: StoredPayment, problems: [String]) async -> String {
        let flow = world.attempts(of: index).first?.1.flow.rawValue ?? "?"
        var line = "checkout \(index) (\(flow), \(payment.intent.amount)): \(problems.joined(separator: "; ")); payment \(payment.status)."
        for attempt in payment.attempts {
            line += " #\(attempt.sequence) \(attempt.gateway) \(attempt.reference):"
            if let scripted = world.attempt(attempt.reference) {
                let plan = scripted.plan
                line += " scripted \(plan.behavior)"
                if let timing = plan.notification, timing != .immediate { line += ", notification \(timing)" }
                if plan.failingInquiries > 0 { line += ", \(plan.failingInquiries) failing inquiries" }
            }
            if let record = await world.fake(for: attempt.reference)?.ledger.records[attempt.reference] {
                line += "; the gateway says \(record.status)\(record.charged ? " (charged)" : "")\(record.code.map { " code \($0)" } ?? "")"
            } else {
                line += "; the gateway has no record"
            }
            line += "; the store says \(attempt.status)\(attempt.gatewayCode.map { " code \($0)" } ?? "")"
            if attempt.handedOff { line += ", handed off" }
            if attempt.customerRequested { line += ", customer requested" }
            if let outcome = attempt.clientOutcome { line += ", the app saw \(outcome.kind.rawValue)" }
            line += "."
        }
        let other = world.story(of: index)
        if !other.isEmpty { line += " Also: \(other.joined(separator: ", "))." }
        return line
    }
}
