import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Till
import TillOrchestration

/// The `server.reconciliation` block: how the reconciler finds and inquires open attempts. Every key is
/// optional; an absent block means these defaults.
public struct ReconciliationSettings: Sendable, Hashable, Codable {
    /// Whether `till server` runs the reconciler (`till reconcile` runs a pass either way).
    public var enabled: Bool
    /// An attempt younger than this is left to the app and the gateway's notification.
    public var minimumAgeSeconds: Int
    /// Time between two passes.
    public var intervalSeconds: Int
    /// Attempts taken per pass, oldest first.
    public var batch: Int
    /// Inquiries per pass to one gateway of one merchant; the rest wait for the next pass (`skipped_budget`).
    public var maxInquiriesPerGatewayPerPass: Int
    /// After an attempt's `n`-th inquiry its next one is due `backoffBaseSeconds × 2ⁿ` later (n from 0),
    /// at most `backoffMaxSeconds` later.
    public var backoffBaseSeconds: Int
    public var backoffMaxSeconds: Int

    public init(enabled: Bool = true, minimumAgeSeconds: Int = 600, intervalSeconds: Int = 60, batch: Int = 200,
                maxInquiriesPerGatewayPerPass: Int = 20, backoffBaseSeconds: Int = 60, backoffMaxSeconds: Int = 3_600) {
        self.enabled = enabled
        self.minimumAgeSeconds = minimumAgeSeconds
        self.intervalSeconds = intervalSeconds
        self.batch = batch
        self.maxInquiriesPerGatewayPerPass = maxInquiriesPerGatewayPerPass
        self.backoffBaseSeconds = backoffBaseSeconds
        self.backoffMaxSeconds = backoffMaxSeconds
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled, minimumAgeSeconds, intervalSeconds, batch, maxInquiriesPerGatewayPerPass, backoffBaseSeconds, backoffMaxSeconds
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ReconciliationSettings()
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
        minimumAgeSeconds = try c.decodeIfPresent(Int.self, forKey: .minimumAgeSeconds) ?? d.minimumAgeSeconds
        intervalSeconds = try c.decodeIfPresent(Int.self, forKey: .intervalSeconds) ?? d.intervalSeconds
        batch = try c.decodeIfPresent(Int.self, forKey: .batch) ?? d.batch
        maxInquiriesPerGatewayPerPass = try c.decodeIfPresent(Int.self, forKey: .maxInquiriesPerGatewayPerPass)
            ?? d.maxInquiriesPerGatewayPerPass
        backoffBaseSeconds = try c.decodeIfPresent(Int.self, forKey: .backoffBaseSeconds) ?? d.backoffBaseSeconds
        backoffMaxSeconds = try c.decodeIfPresent(Int.self, forKey: .backoffMaxSeconds) ?? d.backoffMaxSeconds
    }

    /// Every problem, each with its path (`server.reconciliation.batch`).
    public func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        func check(_ value: Int, _ range: ClosedRange<Int>, _ key: String) {
            issues += Validators.range(value, range, field: "\(path).\(key)")
        }
        check(minimumAgeSeconds, 0...604_800, "minimumAgeSeconds")
        check(intervalSeconds, 1...86_400, "intervalSeconds")
        check(batch, 1...10_000, "batch")
        check(maxInquiriesPerGatewayPerPass, 1...10_000, "maxInquiriesPerGatewayPerPass")
        check(backoffBaseSeconds, 1...86_400, "backoffBaseSeconds")
        if !(max(backoffBaseSeconds, 1)...604_800).contains(backoffMaxSeconds) {
            issues.append(.init(field: "\(path).backoffMaxSeconds", code: .invalidField, message: "backoffBaseSeconds to 604800"))
        }
        return issues
    }

    /// How long after its `inquiries`-th inquiry (counting from 0) an attempt is inquired again.
    public func backoff(afterInquiries inquiries: Int) -> TimeInterval {
        let base = Double(max(backoffBaseSeconds, 1))
        let cap = Double(max(backoffMaxSeconds, backoffBaseSeconds, 1))
        return min(base * pow(2, Double(min(max(inquiries, 0), 62))), cap)
    }
}

/// What the reconciler did with one attempt (``ReconciliationEntry/action``).
public enum ReconciliationAction: String, Sendable, Hashable, CaseIterable {
    /// The gateway's answer moved the attempt.
    case settled
    /// The gateway never saw the attempt and its lifetime there is over, or the customer never finished it
    /// within the time the gateway gives: closed as expired.
    case expired
    /// The gateway answered; nothing moved (still pending, not seen yet, or an answer the rules refuse).
    case unchanged
    /// The inquiry failed; the attempt is inquired again after its backoff.
    case inquiryFailed = "inquiry_failed"
    /// The attempt cannot be inquired here (unknown merchant or gateway, or a gateway without inquiry).
    case skipped
    /// The gateway's budget for this pass is spent; the attempt waits for the next pass, unclaimed.
    case skippedBudget = "skipped_budget"
}

/// Settles attempts nobody settled: the app died after Prepare, the customer never came back, the
/// notification never arrived. Every `intervalSeconds` it takes the open attempts older than
/// `minimumAgeSeconds` whose next inquiry is due, oldest first, and asks each one's gateway, within a
/// per-gateway budget, with an exponential backoff per attempt. An attempt the gateway says it never saw
/// is expired once it is older than the gateway's documented ``GatewayCapabilities/attemptLifetimeSeconds``; one
/// it still reports waiting for the customer, once older than ``GatewayCapabilities/abandonedAttemptSeconds``.
///
/// Any number of server instances may each run one over the same store: an attempt is claimed
/// (``PaymentStore/claimInquiry(_:expected:next:)``, a compare-and-set on its schedule) before it is
/// inquired, so one instance inquires it per round. Every action goes to the reconciliation log
/// (``PaymentStore/reconciliationLog(limit:)``), to swift-log under the reconciler's logger, and to the
/// counter `till_reconciliation_total{action}`.
public struct Reconciler: Service, CustomStringConvertible {
    /// Its name only: the service group logs its services' descriptions at debug level, and the reconciler's
    /// state holds the merchants' configuration (API key digests among it), which no log line should show.
    public var description: String { "Reconciler" }

    public let state: ServerState
    public let store: any PaymentStore
    public let settings: ReconciliationSettings
    let logger: Logger
    let metrics: any MetricsFactory

    /// The `gatewayCode` of an attempt the reconciler expired because its gateway never saw it.
    public static let expiredUnseenCode = "till_expired_unseen"
    /// The `gatewayCode` of an attempt the reconciler expired because the customer never finished it at the
    /// gateway within the time the gateway gives (``GatewayCapabilities/abandonedAttemptSeconds``).
    public static let expiredAbandonedCode = "till_expired_abandoned"

    public init(state: ServerState, store: any PaymentStore, settings: ReconciliationSettings,
                logger: Logger = Logger(label: "till.reconciler"), metrics: any MetricsFactory = MetricsSystem.factory) {
        self.state = state
        self.store = store
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
    }

    /// Passes every `intervalSeconds`, the first at once, until graceful shutdown or cancellation. A
    /// failed pass is logged and the next one runs on time; this never throws.
    public func run() async throws {
        guard settings.enabled else {
            // Nothing to do, but returning early would end a service group: wait for its shutdown.
            try? await gracefulShutdown()
            return
        }
        logger.info("reconciler started", metadata: [
            "interval_seconds": .stringConvertible(settings.intervalSeconds),
            "minimum_age_seconds": .stringConvertible(settings.minimumAgeSeconds)])
        let interval = Duration.seconds(settings.intervalSeconds)
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                do {
                    _ = try await runOnce()
                } catch {
                    if Task.isCancelled { break }
                    logger.error("reconciliation pass failed", metadata: ["error": .string(Self.describe(error))])
                }
                do { try await Task.sleep(for: interval) } catch { break }
            }
        }
        logger.info("reconciler stopped")
    }

    /// One pass at `now`: returns what was done with each due attempt this instance looked at (attempts
    /// another instance claimed first are left out), in due order, each already recorded (its `at` is
    /// `now` to the millisecond, as stored).
    /// - Throws: only when the due attempts cannot be read.
    public func runOnce(now: Date = Date()) async throws -> [ReconciliationEntry] {
        let due = try await store.dueAttempts(createdBefore: now.addingTimeInterval(-Double(settings.minimumAgeSeconds)),
                                              now: now, limit: settings.batch)
        var entries: [Int: ReconciliationEntry] = [:]
        // Attempts that can be inquired, per gateway of a merchant, in due order (oldest first).
        var queues: [GatewayKey: [(index: Int, attempt: DueAttempt)]] = [:]
        for (index, attempt) in due.enumerated() {
            guard let merchant = state.merchant(id: attempt.merchantID) else {
                entries[index] = await record(attempt, .skipped, "merchant \(attempt.merchantID) is not in this server's configuration", now: now)
                continue
            }
            guard let gateway = merchant.gateways[attempt.gateway] else {
                entries[index] = await record(attempt, .skipped,
                                              "gateway \(attempt.gateway) is not configured (or is disabled) for merchant \(attempt.merchantID)", now: now)
                continue
            }
            guard gateway.capabilities.supportsInquiry else {
                entries[index] = await record(attempt, .skipped,
                                              "gateway \(attempt.gateway) does not support inquiry; only its notification can settle the attempt", now: now)
                continue
            }
            queues[GatewayKey(merchant: attempt.merchantID, gateway: attempt.gateway), default: []].append((index, attempt))
        }
        // One task per gateway, so a slow gateway does not hold the others up; in order within one.
        let gateways = queues.compactMap { key, queue in
            state.merchant(id: key.merchant)?.gateways[key.gateway].map { (gateway: $0, queue: queue) }
        }
        let done = await withTaskGroup(of: [(Int, ReconciliationEntry)].self) { group in
            for (gateway, queue) in gateways {
                group.addTask { await reconcile(queue, on: gateway, now: now) }
            }
            return await group.reduce(into: [(Int, ReconciliationEntry)]()) { $0 += $1 }
        }
        for (index, entry) in done { entries[index] = entry }
        return entries.sorted { $0.key < $1.key }.map(\.value) + (await reconcileOperations(now: now))
    }

    /// Open operations (pending, or unknown after a lost answer) old enough, each asked about once per pass at most,
    /// claimed like attempts so two instances never ask twice, with the same backoff. An operation is never sent
    /// again; a gateway that offers no inquiry leaves it to its notification (logged as skipped).
    private func reconcileOperations(now: Date) async -> [ReconciliationEntry] {
        // Never one whose own request may still be on its way (a gateway that has not seen it yet would say it did not
        // happen, and a failed operation is final).
        let age = max(Double(settings.minimumAgeSeconds), PaymentService.operationInFlight)
        let due: [StoredOperation]
        do {
            due = try await store.dueOperations(createdBefore: now.addingTimeInterval(-age), now: now, limit: settings.batch)
        } catch {
            logger.error("reading the open operations failed", metadata: ["error": .string(Self.describe(error))])
            return []
        }
        var entries: [ReconciliationEntry] = []
        var asked: [GatewayKey: Int] = [:]
        for operation in due {
            if Task.isCancelled { break }
            let key = GatewayKey(merchant: operation.merchantID, gateway: operation.gateway)
            guard asked[key, default: 0] < settings.maxInquiriesPerGatewayPerPass else {
                entries.append(await record(operation, .skippedBudget, "operation \(operation.reference): \(settings.maxInquiriesPerGatewayPerPass) "
                                            + "operation inquiries to gateway \(operation.gateway) this pass; next pass", before: .pending, now: now))
                continue
            }
            let next = now.addingTimeInterval(settings.backoff(afterInquiries: operation.inquiryCount))
            guard (try? await store.claimOperationInquiry(operation.reference, expected: operation.nextInquiryAt, next: next)) == true else { continue }
            asked[key, default: 0] += 1
            let before = (try? await store.payment(attempt: operation.attempt))?.attempts.first { $0.reference == operation.attempt }?.status ?? .pending
            let label = "operation \(operation.reference) (\(operation.kind.rawValue) of \(operation.amount), \(operation.status.rawValue))"
            guard let gateway = state.merchant(id: operation.merchantID)?.gateways[operation.gateway] else {
                entries.append(await record(operation, .skipped, "\(label): gateway \(operation.gateway) is not configured", before: before, now: now))
                continue
            }
            do {
                let outcome = try await store.settle(operation, gateway: gateway)
                let after = (try? await store.payment(attempt: operation.attempt))?.attempts.first { $0.reference == operation.attempt }?.status ?? before
                switch outcome {
                case .settled(let settled):
                    entries.append(await record(operation, .settled, "\(label): the gateway reports \(settled.status.rawValue)", before: before,
                                                after: after, now: now))
                case .unchanged:
                    entries.append(await record(operation, .unchanged, "\(label): the gateway cannot say yet", before: before, now: now))
                case .refused(_, let why):
                    entries.append(await record(operation, .unchanged, "\(label), not applied: \(why)", before: before, now: now))
                case .unknownOperation:
                    entries.append(await record(operation, .skipped, "\(label): no longer stored", before: before, now: now))
                }
            } catch let error as CheckoutError where error.category == .unsupported {
                entries.append(await record(operation, .skipped, "\(label): \(error.message); its notification settles it", before: before, now: now))
            } catch {
                if Task.isCancelled { break }
                entries.append(await record(operation, .inquiryFailed, "\(label): \(Self.describe(error))", before: before, now: now))
            }
        }
        return entries
    }

    private func record(_ operation: StoredOperation, _ action: ReconciliationAction, _ reason: String, before: PaymentStatus,
                        after: PaymentStatus? = nil, now: Date) async -> ReconciliationEntry {
        await record(DueAttempt(reference: operation.attempt, paymentID: operation.paymentID, merchantID: operation.merchantID,
                                gateway: operation.gateway, status: before, gatewayReference: nil, amount: operation.amount,
                                createdAt: operation.createdAt, inquiryCount: operation.inquiryCount, nextInquiryAt: operation.nextInquiryAt,
                                submittedAt: nil),
                     action, reason, after: after, now: now)
    }

    private struct GatewayKey: Hashable {
        var merchant: String
        var gateway: GatewayID
    }

    /// One gateway's due attempts, within its budget.
    private func reconcile(_ queue: [(index: Int, attempt: DueAttempt)], on gateway: any GatewayServerHalf,
                           now: Date) async -> [(Int, ReconciliationEntry)] {
        var out: [(Int, ReconciliationEntry)] = []
        var inquiries = 0
        for (index, attempt) in queue {
            if Task.isCancelled { break }
            guard inquiries < settings.maxInquiriesPerGatewayPerPass else {
                out.append((index, await record(attempt, .skippedBudget,
                                                "\(settings.maxInquiriesPerGatewayPerPass) inquiries to gateway \(attempt.gateway) this pass; next pass",
                                                now: now)))
                continue
            }
            let next = now.addingTimeInterval(settings.backoff(afterInquiries: attempt.inquiryCount))
            let claimed: Bool
            do {
                claimed = try await store.claimInquiry(attempt.reference, expected: attempt.nextInquiryAt, next: next)
            } catch {
                logger.warning("could not claim an attempt for inquiry", metadata: [
                    "attempt": .string(attempt.reference.rawValue), "error": .string(Self.describe(error))])
                continue
            }
            // Another instance claimed it first: it inquires this round.
            guard claimed else { continue }
            inquiries += 1
            if let entry = await inquire(attempt, on: gateway, now: now) { out.append((index, entry)) }
        }
        return out
    }

    /// Inquires one claimed attempt and applies the answer (source `inquiry`).
    private func inquire(_ attempt: DueAttempt, on gateway: any GatewayServerHalf, now: Date) async -> ReconciliationEntry? {
        var expiring = false
        do {
            // Waiting for the customer (3-D Secure) since the submit — or the start, without one — for longer than the
            // gateway gives a customer: nobody can finish it any more, and the attempt is closed as expired instead.
            let settlement = try await store.settle(attempt.reference, on: attempt.gateway, gatewayReference: attempt.gatewayReference,
                                                    amount: attempt.amount, gateway: gateway) { answer in
                let expiry = abandoned(attempt, answer: answer, capabilities: gateway.capabilities, now: now)
                expiring = expiry != nil
                return expiry
            }
            if settlement.applied != settlement.answer {
                return await recordExpiry(attempt, settlement.outcome, reason: settlement.applied.gatewayMessage ?? "", now: now)
            }
            let (report, outcome) = (settlement.answer, settlement.outcome)
            let reported = "the gateway reports \(report.status)" + (report.gatewayCode.map { " (code \($0))" } ?? "")
            switch outcome {
            case .applied(let attemptStatus, let paymentStatus):
                return await record(attempt, .settled, "\(reported); payment \(paymentStatus)", after: attemptStatus, now: now)
            case .duplicate:
                return await record(attempt, .unchanged, reported, after: report.status, now: now)
            case .stale(let reason), .needsInquiry(let reason):
                return await record(attempt, .unchanged, "\(reported), not applied: \(reason)", now: now)
            case .unknownAttempt, .quarantined, .operation:
                return await record(attempt, .skipped, "the attempt is no longer stored", now: now)
            }
        } catch let error as CheckoutError where error.code == .attemptNotFound {
            return await notFound(attempt, on: gateway, now: now)
        } catch {
            if Task.isCancelled { return nil }
            return await record(attempt, .inquiryFailed, (expiring ? "expiring failed: " : "") + Self.describe(error), now: now)
        }
    }

    /// The gateway has no such attempt: not yet (it may still process a delayed request), or never,
    /// once the attempt outlived the gateway's documented lifetime of an attempt.
    private func notFound(_ attempt: DueAttempt, on gateway: any GatewayServerHalf, now: Date) async -> ReconciliationEntry? {
        let age = Int(now.timeIntervalSince(attempt.createdAt))
        guard let lifetime = gateway.capabilities.attemptLifetimeSeconds else {
            return await record(attempt, .unchanged, "the gateway has no such attempt; it documents no attempt lifetime, so it is never expired",
                                now: now)
        }
        guard age > lifetime else {
            return await record(attempt, .unchanged, "the gateway has no such attempt yet (\(age) s old; its lifetime there is \(lifetime) s)",
                                now: now)
        }
        return await expire(attempt, code: Self.expiredUnseenCode, now: now,
                            reason: "the gateway never saw the attempt and it is \(age) s old, past the gateway's attempt lifetime of \(lifetime) s")
    }

    /// The report that closes `attempt` as abandoned at the gateway (code ``expiredAbandonedCode``), when the gateway
    /// still reports it waiting for the customer (one of its ``GatewayCapabilities/waitingForCustomerCodes``) past the
    /// time a customer has there (``GatewayCapabilities/abandonedAttemptSeconds``), counted from the submit or, without
    /// one, the start; `nil` otherwise.
    private func abandoned(_ attempt: DueAttempt, answer report: StatusReport, capabilities: GatewayCapabilities, now: Date) -> StatusReport? {
        let since = attempt.submittedAt ?? attempt.createdAt
        let waited = Int(now.timeIntervalSince(since))
        guard report.status == .pending, let window = capabilities.abandonedAttemptSeconds, waited > window,
              let code = report.gatewayCode, capabilities.waitingForCustomerCodes.contains(code) else { return nil }
        let from = attempt.submittedAt == nil ? "it started" : "it was submitted"
        return Self.expiry(attempt, code: Self.expiredAbandonedCode,
                           reason: "the gateway still reports it waiting for the customer (code \(code)) \(waited) s after \(from), past the \(window) s a customer has to finish it there")
    }

    /// The report that closes an attempt as expired (``expiredUnseenCode`` or ``expiredAbandonedCode``), applied through
    /// the store's one status rule: a later verified success still moves it to paid. The reason is its message.
    private static func expiry(_ attempt: DueAttempt, code: String, reason: String) -> StatusReport {
        StatusReport(gateway: attempt.gateway, attempt: attempt.reference, status: .expired, gatewayCode: code, gatewayMessage: reason,
                     eventID: "reconciler:\(attempt.reference.rawValue):expired")
    }

    /// Closes an attempt the gateway never saw as expired.
    private func expire(_ attempt: DueAttempt, code: String, now: Date, reason: String) async -> ReconciliationEntry? {
        do {
            return await recordExpiry(attempt, try await store.apply(Self.expiry(attempt, code: code, reason: reason), source: .inquiry),
                                      reason: reason, now: now)
        } catch {
            if Task.isCancelled { return nil }
            return await record(attempt, .inquiryFailed, "expiring failed: \(Self.describe(error))", now: now)
        }
    }

    /// Records what applying an expiry did.
    private func recordExpiry(_ attempt: DueAttempt, _ outcome: ApplyOutcome, reason: String, now: Date) async -> ReconciliationEntry? {
        switch outcome {
        case .applied(let attemptStatus, _):
            return await record(attempt, .expired, reason, after: attemptStatus, now: now)
        case .stale(let why), .needsInquiry(let why):
            return await record(attempt, .unchanged, "not expired: \(why)", now: now)
        case .duplicate:
            return await record(attempt, .unchanged, "already expired", after: .expired, now: now)
        case .unknownAttempt, .quarantined, .operation:
            return await record(attempt, .skipped, "the attempt is no longer stored", now: now)
        }
    }

    /// Records an entry: the reconciliation log, swift-log and the counter.
    private func record(_ attempt: DueAttempt, _ action: ReconciliationAction, _ reason: String, after: PaymentStatus? = nil,
                        now: Date) async -> ReconciliationEntry {
        let entry = ReconciliationEntry(merchantID: attempt.merchantID, attempt: attempt.reference, gateway: attempt.gateway,
                                        action: action.rawValue, reason: reason, statusBefore: attempt.status,
                                        statusAfter: after ?? attempt.status, at: Date(storedMillis: now.storedMillis))
        do {
            try await store.logReconciliation(entry)
        } catch {
            logger.warning("could not write the reconciliation log", metadata: [
                "attempt": .string(attempt.reference.rawValue), "error": .string(Self.describe(error))])
        }
        Counter(label: "till_reconciliation_total", dimensions: [("action", action.rawValue)], factory: metrics).increment()
        let metadata: Logger.Metadata = [
            "merchant": .string(entry.merchantID), "attempt": .string(entry.attempt.rawValue), "gateway": .string(entry.gateway.rawValue),
            "action": .string(entry.action), "reason": .string(entry.reason),
            "status_before": .string(entry.statusBefore.rawValue), "status_after": .string(entry.statusAfter.rawValue)]
        logger.log(level: action == .inquiryFailed ? .warning : .info, "reconciled", metadata: metadata)
        return entry
    }

    /// An error as a log line: a gateway error's code and message, or the error's type.
    static func describe(_ error: any Error) -> String {
        if let error = error as? CheckoutError { return "\(error.code.rawValue): \(error.message)" }
        if let error = error as? StoreError {
            switch error {
            case .conflict(let message), .unavailable(let message): return "store: \(message)"
            }
        }
        return "\(type(of: error))"
    }
}

/// Runs `application` (the HTTP server, itself a service) and, when given, the reconciler, the event delivery and
/// `others` (the metrics listener) in
/// one service group that shuts down gracefully on SIGTERM and SIGINT: they stop first, then the server drains. What
/// `till server` runs.
public func runServer(_ application: some Service, reconciler: Reconciler?, deliverer: EventDeliverer? = nil,
                      others: [any Service] = [], logger: Logger = Logger(label: "till.server")) async throws {
    var services: [any Service] = [application]
    if let reconciler { services.append(reconciler) }
    if let deliverer { services.append(deliverer) }
    services += others
    let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    try await group.run()
}
