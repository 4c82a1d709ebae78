import Foundation

/// Runs one attempt on one gateway and reports what happened. The server's runner prepares the
/// attempt and learns its outcome from the app and the gateway; test runners call fakes directly.
public protocol AttemptRunner: Sendable {
    func run(_ context: AttemptContext, on gateway: any CheckoutGateway) async -> AttemptOutcome
}

/// What one attempt produced.
public struct AttemptOutcome: Sendable, Hashable {
    /// The gateway's answer, if it gave one; or the error that stood in for it.
    public enum Result: Sendable, Hashable {
        case report(StatusReport)
        case error(CheckoutError)
    }
    public var result: Result
    /// True if the customer was handed to a wallet, 3-D Secure or a redirect during the attempt.
    public var customerAuthenticated: Bool

    public init(_ result: Result, customerAuthenticated: Bool = false) {
        self.result = result
        self.customerAuthenticated = customerAuthenticated
    }

    public static func report(_ report: StatusReport, customerAuthenticated: Bool = false) -> AttemptOutcome {
        AttemptOutcome(.report(report), customerAuthenticated: customerAuthenticated)
    }

    public static func error(_ error: CheckoutError, customerAuthenticated: Bool = false) -> AttemptOutcome {
        AttemptOutcome(.error(error), customerAuthenticated: customerAuthenticated)
    }
}

/// How a cascade ended.
public enum CascadeOutcome: Sendable, Hashable {
    /// An attempt was paid or authorised.
    case succeeded(StatusReport)
    /// Every attempt made failed definitively (or the last one must not be retried).
    case failed(CheckoutError)
    /// Stop and let the app ask the customer: a decline after they authenticated, or a step-up.
    case needsCustomer(CheckoutError)
    /// An attempt's outcome is still unknown after inquiry. Nothing else was tried; the attempt is
    /// left for notifications and reconciliation to settle.
    case unresolved(AttemptReference, CheckoutError)
}

/// One attempt, as recorded.
public struct AttemptRecord: Sendable, Hashable {
    public var gateway: GatewayID
    public var reference: AttemptReference
    /// The status the attempt ended with, as far as the cascade knows.
    public var status: PaymentStatus?
    public var error: CheckoutError?
    public var customerAuthenticated: Bool
    public var inquiries: Int
    /// Time spent waiting on the gateway (attempt and inquiries).
    public var gatewayTime: Duration
}

/// One decision of the cascade, with its reason.
public struct CascadeEvent: Sendable, Hashable, CustomStringConvertible {
    public var gateway: GatewayID?
    public var reference: AttemptReference?
    public var decision: String
    public var reason: String
    public var description: String {
        "\(gateway.map { "\($0) " } ?? "")\(reference.map { "[\($0)] " } ?? "")\(decision): \(reason)"
    }
}

/// The full story of one payment's cascade.
public struct CascadeResult: Sendable, Hashable {
    public var outcome: CascadeOutcome
    public var routing: RoutingDecision
    public var attempts: [AttemptRecord]
    public var events: [CascadeEvent]
    /// Real time spent in Till itself (total minus gateway time).
    public var orchestratorTime: Duration
    /// Real time spent waiting on gateways.
    public var gatewayTime: Duration
}

/// Runs the attempts of one payment across the router's candidates without ever charging twice.
///
/// The rules:
/// - Move to the next gateway only when the attempt is **known** to have failed: a definite decline
///   whose code the gateway's decision table (with the merchant's overrides) marks `retry_next`, or a
///   request that provably never left (`unavailable`), or a gateway that refused the merchant's
///   configuration before processing anything.
/// - A timeout, a 5xx, a lost or unverifiable response, or a pending status is an **unknown
///   outcome**: it is resolved by inquiry first, and if inquiry cannot settle it the cascade stops
///   with `unresolved` — it never guesses.
/// - After the customer authenticated (wallet, 3-D Secure, redirect), a failure never cascades
///   automatically: the result is `needsCustomer`, so the app can ask.
/// - A hard decline, a customer cancel, or invalid input stops the cascade.
/// - At most `maxAttempts` attempts, and no new attempt after the time budget.
public struct CascadeEngine: Sendable {
    public let router: GatewayRouter
    public let health: HealthMonitor
    public let clock: any TillClock
    private let gateways: [GatewayID: any CheckoutGateway]
    private let tables: [GatewayID: DecisionTable]

    public init(router: GatewayRouter, gateways: [any CheckoutGateway], health: HealthMonitor? = nil, clock: any TillClock = SystemClock()) {
        self.router = router
        self.clock = clock
        self.health = health ?? HealthMonitor(settings: router.merchant.health, clock: clock)
        self.gateways = Dictionary(gateways.map { ($0.gateway, $0) }, uniquingKeysWith: { first, _ in first })
        var tables: [GatewayID: DecisionTable] = [:]
        for gateway in gateways {
            tables[gateway.gateway] = gateway.decisionTable
                .overriding(with: router.merchant.retry.decisionOverrides[gateway.gateway.rawValue] ?? [:])
        }
        self.tables = tables
    }

    /// Runs the cascade for `intent`.
    ///
    /// - Parameters:
    ///   - generator: draws the routing split and the attempt references (seeded in tests).
    ///   - urls: the return and notification URLs for an attempt.
    public func run<G: RandomNumberGenerator & Sendable>(
        _ intent: PaymentIntent, runner: any AttemptRunner, generator: inout G,
        urls: @Sendable (AttemptReference) -> (returnURL: URL?, notificationURL: URL?) = { _ in (nil, nil) }
    ) async -> CascadeResult {
        let realStart = ContinuousClock.now
        let start = clock.now
        let policy = router.merchant.retry
        let budget = Duration.milliseconds(policy.timeBudgetMillis)
        let routing = router.route(intent, health: health, using: &generator)
        var attempts: [AttemptRecord] = []
        var events: [CascadeEvent] = []
        var gatewayTime = Duration.zero
        var lastError: CheckoutError?

        func finish(_ outcome: CascadeOutcome) -> CascadeResult {
            let total = ContinuousClock.now - realStart
            return CascadeResult(outcome: outcome, routing: routing, attempts: attempts, events: events,
                                 orchestratorTime: total - gatewayTime, gatewayTime: gatewayTime)
        }

        if routing.candidates.isEmpty {
            let error = CheckoutError(.unsupportedMethod, message: "no configured gateway can take this payment")
            events.append(CascadeEvent(decision: "stop", reason: error.message))
            return finish(.failed(error))
        }

        for (position, gatewayID) in routing.candidates.enumerated() {
            if attempts.count >= policy.maxAttempts {
                events.append(CascadeEvent(gateway: gatewayID, decision: "stop", reason: "max attempts (\(policy.maxAttempts)) reached"))
                break
            }
            if clock.now - start >= budget {
                events.append(CascadeEvent(gateway: gatewayID, decision: "stop", reason: "time budget (\(policy.timeBudgetMillis) ms) spent"))
                break
            }
            guard let gateway = gateways[gatewayID] else {
                events.append(CascadeEvent(gateway: gatewayID, decision: "skip", reason: "no module instance for this gateway"))
                continue
            }
            let reference = AttemptReference.generate(using: &generator)
            let (returnURL, notificationURL) = urls(reference)
            let probe = health.attemptStarted(on: gatewayID)
            events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "attempt",
                                       reason: position == 0 ? "first candidate" : "next candidate"))
            let t0 = ContinuousClock.now
            let outcome = await runner.run(AttemptContext(intent: intent, attempt: reference, returnURL: returnURL,
                                                          notificationURL: notificationURL), on: gateway)
            var record = AttemptRecord(gateway: gatewayID, reference: reference, status: nil, error: nil,
                                       customerAuthenticated: outcome.customerAuthenticated, inquiries: 0,
                                       gatewayTime: ContinuousClock.now - t0)

            var verdict = classify(outcome.result, attempt: reference, intent: intent)
            health.record(gatewayID, success: verdict.gatewayWorked, releasingProbe: probe)
            // After the customer authenticated, a call that failed to go through says nothing about the
            // payment (the customer may have paid in the wallet): find out by inquiry.
            if outcome.customerAuthenticated {
                switch verdict {
                case .neverSent(let error), .invalid(let error): verdict = .unknown(error)
                default: break
                }
            }
            if case .unknown(let why) = verdict {
                events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "inquire",
                                           reason: "outcome unknown (\(why.message)); never retried elsewhere before inquiry"))
                verdict = await resolve(reference, gateway: gateway, why: why, intent: intent, record: &record, events: &events,
                                        deadline: start + budget)
            }
            // After the customer authenticated, a decline goes back to the app, never to the next gateway.
            if outcome.customerAuthenticated {
                switch verdict {
                case .paid, .cancelled, .unknown, .neverSent, .invalid: break
                case .declined(let error, _):
                    record.error = error
                    record.status = .failed
                    attempts.append(record)
                    gatewayTime += record.gatewayTime
                    events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "ask customer",
                                               reason: "failed (\(error.gatewayCode ?? error.code.rawValue)) after the customer authenticated; never cascaded automatically"))
                    return finish(.needsCustomer(error))
                }
            }
            gatewayTime += record.gatewayTime
            let table = tables[gatewayID] ?? DecisionTable()

            switch verdict {
            case .paid(let report):
                record.status = report.status
                attempts.append(record)
                events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "done", reason: "\(report.status)"))
                return finish(.succeeded(report))

            case .declined(let error, let status):
                record.status = status
                record.error = error
                attempts.append(record)
                lastError = error
                if error.category == .declinedHard {
                    events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "stop",
                                               reason: "hard decline (\(error.gatewayCode ?? "no code"))"))
                    return finish(.failed(error))
                }
                switch table.decision(for: error.gatewayCode) {
                case .retryNext:
                    events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "next gateway",
                                               reason: "decline code \(error.gatewayCode ?? "none") is retry_next in the decision table"))
                    continue
                case .stepUp:
                    events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "ask customer",
                                               reason: "decline code \(error.gatewayCode ?? "none") asks for step-up"))
                    return finish(.needsCustomer(error))
                case .doNotRetry:
                    events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "stop",
                                               reason: "decline code \(error.gatewayCode ?? "none") is do_not_retry"))
                    return finish(.failed(error))
                }

            case .cancelled(let error):
                record.status = .cancelled
                record.error = error
                attempts.append(record)
                events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "stop", reason: "the customer cancelled"))
                return finish(.failed(error))

            case .neverSent(let error):
                record.status = .failed
                record.error = error
                attempts.append(record)
                lastError = error
                events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "next gateway",
                                           reason: "known not processed: \(error.message)"))
                continue

            case .invalid(let error):
                record.error = error
                attempts.append(record)
                events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "stop",
                                           reason: "invalid input: \(error.field ?? "?") — retrying elsewhere would not help"))
                return finish(.failed(error))

            case .unknown(let error):
                record.error = error
                attempts.append(record)
                events.append(CascadeEvent(gateway: gatewayID, reference: reference, decision: "stop",
                                           reason: "outcome still unknown after inquiry; left to notifications and reconciliation"))
                return finish(.unresolved(reference, error))
            }
        }
        let error = lastError ?? CheckoutError(.declined, message: "no gateway accepted the payment")
        return finish(.failed(error))
    }

    /// What an attempt's result means for the cascade.
    enum Verdict {
        case paid(StatusReport)
        case declined(CheckoutError, PaymentStatus?)
        case cancelled(CheckoutError)
        case neverSent(CheckoutError)
        case invalid(CheckoutError)
        case unknown(CheckoutError)

        /// Whether the gateway itself worked (for health): declines and cancels are the gateway working.
        var gatewayWorked: Bool {
            switch self {
            case .paid, .declined, .cancelled, .invalid: true
            case .neverSent, .unknown: false
            }
        }
    }

    func classify(_ result: AttemptOutcome.Result, attempt: AttemptReference, intent: PaymentIntent) -> Verdict {
        switch result {
        case .report(let report):
            // A report about another attempt, or for another amount, proves nothing about this one.
            if report.attempt != attempt {
                return .unknown(CheckoutError(.unknownOutcome, message: "the gateway answered about attempt \(report.attempt)",
                                              gateway: report.gateway))
            }
            if let amount = report.amount, amount != intent.amount, report.status.moneyMoved || report.status == .authorized {
                return .unknown(CheckoutError(.unknownOutcome, message: "the gateway reports \(amount), not \(intent.amount)",
                                              gateway: report.gateway, gatewayCode: report.gatewayCode))
            }
            switch report.status {
            case .paid, .authorized:
                return .paid(report)
            case .failed, .expired:
                return .declined(CheckoutError(.declined, category: .declinedSoft, message: "declined",
                                               gateway: report.gateway, gatewayCode: report.gatewayCode,
                                               gatewayMessage: report.gatewayMessage), report.status)
            case .cancelled:
                return .cancelled(CheckoutError(.cancelledByCustomer, message: "cancelled", gateway: report.gateway,
                                                gatewayCode: report.gatewayCode))
            default:
                return .unknown(CheckoutError(.unknownOutcome, message: "status \(report.status) is not final",
                                              gateway: report.gateway, gatewayCode: report.gatewayCode))
            }
        case .error(let error):
            switch error.category {
            case .declinedHard, .declinedSoft: return .declined(error, .failed)
            case .cancelled: return .cancelled(error)
            case .unavailable, .configuration, .unsupported: return .neverSent(error)
            // An answer that could not be parsed came after sending: the charge may have happened.
            case .invalidInput where error.code == .malformedBody: return .unknown(error)
            case .invalidInput: return .invalid(error)
            case .unknownOutcome, .verification: return .unknown(error)
            }
        }
    }

    /// Inquires until the attempt's status is final, the inquiry budget is spent, or the deadline passes.
    private func resolve(_ reference: AttemptReference, gateway: any CheckoutGateway, why: CheckoutError, intent: PaymentIntent,
                         record: inout AttemptRecord, events: inout [CascadeEvent], deadline: Duration) async -> Verdict {
        let policy = router.merchant.retry
        guard gateway.capabilities.supportsInquiry else {
            events.append(CascadeEvent(gateway: gateway.gateway, reference: reference, decision: "cannot inquire",
                                       reason: "the gateway has no inquiry"))
            return .unknown(why)
        }
        var last = why
        for round in 0..<policy.inquiryAttempts {
            if round > 0 {
                guard clock.now + .milliseconds(policy.inquiryIntervalMillis) <= deadline else { break }
                try? await clock.sleep(for: .milliseconds(policy.inquiryIntervalMillis))
            }
            record.inquiries += 1
            let t0 = ContinuousClock.now
            let answer: Verdict
            do {
                answer = classify(.report(try await gateway.inquire(InquiryQuery(attempt: reference, amount: intent.amount))),
                                  attempt: reference, intent: intent)
            } catch let error as CheckoutError {
                answer = .unknown(error)
            } catch {
                answer = .unknown(CheckoutError(.unknownOutcome, message: "inquiry failed", gateway: gateway.gateway))
            }
            record.gatewayTime += ContinuousClock.now - t0
            switch answer {
            case .unknown(let error):
                last = error
                events.append(CascadeEvent(gateway: gateway.gateway, reference: reference, decision: "inquiry \(round + 1)",
                                           reason: "still unknown: \(error.message)"))
            case .neverSent(let error):
                // The inquiry itself did not get through; that says nothing about the attempt.
                last = CheckoutError(.unknownOutcome, message: "inquiry unreachable: \(error.message)", gateway: gateway.gateway)
                events.append(CascadeEvent(gateway: gateway.gateway, reference: reference, decision: "inquiry \(round + 1)",
                                           reason: "inquiry did not reach the gateway"))
            case .invalid(let error):
                last = CheckoutError(.unknownOutcome, message: "inquiry rejected: \(error.message)", gateway: gateway.gateway)
                events.append(CascadeEvent(gateway: gateway.gateway, reference: reference, decision: "inquiry \(round + 1)",
                                           reason: "inquiry rejected; treated as unknown"))
            default:
                events.append(CascadeEvent(gateway: gateway.gateway, reference: reference, decision: "inquiry \(round + 1)",
                                           reason: "resolved"))
                return answer
            }
        }
        return .unknown(last)
    }
}
