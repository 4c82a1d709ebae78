import Foundation
import Till
import TillOrchestration

/// A stream of payments over gateways whose true approval rates differ by segment and change over time: what
/// `till simulate` reads (docs/routing/scenarios/*.json).
public struct RoutingScenario: Codable, Sendable {
    /// A kind of payment and its share of the stream.
    public struct Segment: Codable, Sendable {
        public var id: String
        public var method: PaymentMethod
        public var currency: String
        public var country: String?
        public var share: Double
    }

    /// A gateway and its true approval rate per segment (by segment id).
    public struct Gateway: Codable, Sendable {
        public var id: GatewayID
        public var rates: [String: Double]
        /// The minute it joins (it is not configured before; nil: from the start).
        public var joinsAt: Double?
    }

    /// A change of one gateway from `fromMinute` to `toMinute` (nil: the end): its rate moved by `rateDelta` (in one
    /// segment, or all), or an outage (every request fails without reaching it).
    public struct Change: Codable, Sendable {
        public var gateway: GatewayID
        public var segment: String?
        public var fromMinute: Double
        public var toMinute: Double?
        public var rateDelta: Double?
        public var outage: Bool?
    }

    public var name: String
    public var description: String
    public var minutes: Double
    public var paymentsPerMinute: Double
    public var segments: [Segment]
    public var gateways: [Gateway]
    /// The static configuration's priority list (also the learning rule's list and the fallback).
    public var order: [GatewayID]
    public var changes: [Change]
    /// The learning rule's settings (the defaults when absent).
    public var learning: SuccessRateRouting?

    /// A gateway's true approval rate for `segment` at `minute` (0 while it is out or not there yet).
    func rate(_ gateway: GatewayID, segment: String, minute: Double) -> Double {
        guard let spec = gateways.first(where: { $0.id == gateway }), minute >= (spec.joinsAt ?? 0), !isOut(gateway, minute: minute) else { return 0 }
        var rate = spec.rates[segment] ?? 0
        for change in changes where change.gateway == gateway && (change.segment == nil || change.segment == segment)
            && minute >= change.fromMinute && minute < (change.toMinute ?? .infinity) {
            rate += change.rateDelta ?? 0
        }
        return min(max(rate, 0), 1)
    }

    /// Whether requests to `gateway` fail at `minute` (an outage).
    func isOut(_ gateway: GatewayID, minute: Double) -> Bool {
        changes.contains { $0.gateway == gateway && $0.outage == true && minute >= $0.fromMinute && minute < ($0.toMinute ?? .infinity) }
    }

    /// The minutes at which something changes (the start, a rate, an outage, a gateway joining).
    var changeMinutes: [Double] {
        [0] + changes.flatMap { [$0.fromMinute] + ($0.toMinute.map { [$0] } ?? []) } + gateways.compactMap(\.joinsAt)
    }
}

/// A scenario that cannot run, and why.
public struct ScenarioError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Drives the production router (``GatewayRouter``, ``HealthMonitor``, ``SuccessRateScores``) through a scenario, once
/// per strategy, on the same payments and the same draws, and counts approvals against an oracle that knows every
/// gateway's true rate at every moment.
public enum RoutingSimulation {
    /// The routers compared.
    public enum Strategy: String, Codable, Sendable, CaseIterable {
        /// The configured priority list; nothing moves it.
        case `static`
        /// The list, with health's demotion of gateways that do not work.
        case health
        /// A ``SuccessRateRouting`` rule over the list, with health.
        case learning
        /// The gateway with the best true rate at that moment, among those working.
        case oracle
    }

    /// One strategy's figures.
    public struct Figures: Codable, Sendable, Hashable {
        public var strategy: Strategy
        public var payments: Int
        public var approved: Int
        public var acceptance: Double
        /// Its acceptance ÷ the oracle's.
        public var ofOracle: Double
        /// The oracle's approvals less its own.
        public var regret: Int
        /// The share of payments sent first to a gateway at least 5 points worse (by true rate) than the best working
        /// one, counted only where nothing changed in the two half-lives before.
        public var worseShareSettled: Double
        /// Learning only: of the payments routed while every gateway was healthy and with a gateway its scores knew to be
        /// worse than their best among the candidates (``SuccessRateScores/Score/isKnownWorse(than:)``), the share sent
        /// first to such a gateway: at most the exploration share (give or take the draws' spread).
        public var knownWorseShare: Double?
        /// Learning only: how many payments had a gateway known to be worse among their candidates (the share's base).
        public var knownWorseCases: Int?

        /// Whether ``knownWorseShare`` keeps to `exploration`, allowing three standard deviations of its draws.
        public func keepsExploration(_ exploration: Double) -> Bool {
            guard let share = knownWorseShare, let cases = knownWorseCases, cases > 0 else { return true }
            return share <= exploration + 3 * (exploration * (1 - exploration) / Double(cases)).squareRoot()
        }
    }

    public struct Report: Codable, Sendable {
        public var scenario: String
        public var seed: UInt64
        public var exploration: Double
        public var figures: [Figures]
    }

    /// Runs `scenario` with `seed` (the payments, the customers' answers and the routers' draws).
    public static func run(_ scenario: RoutingScenario, seed: UInt64) throws -> Report {
        let learning = scenario.learning ?? SuccessRateRouting()
        let count = Int((scenario.minutes * scenario.paymentsPerMinute).rounded())
        // The stream, shared by every strategy: each payment's minute, segment and the draw its answer is decided by.
        var streamGenerator = SeededGenerator(seed: seed)
        let totalShare = scenario.segments.reduce(0) { $0 + $1.share }
        var stream: [(minute: Double, segment: Int, draw: Double)] = []
        stream.reserveCapacity(count)
        for index in 0..<count {
            var pick = Double(streamGenerator.next() >> 11) / Double(1 << 53) * totalShare
            var segment = 0
            while segment < scenario.segments.count - 1, pick >= scenario.segments[segment].share {
                pick -= scenario.segments[segment].share
                segment += 1
            }
            stream.append((Double(index) / scenario.paymentsPerMinute, segment, Double(streamGenerator.next() >> 11) / Double(1 << 53)))
        }
        let intents = try scenario.segments.map { segment in
            guard let currency = Currency.lookup(segment.currency) else { throw ScenarioError("segment \(segment.id): unknown currency \(segment.currency)") }
            return PaymentIntent(merchantReference: "sim", amount: Money(minorUnits: 1_000, currency: currency),
                                 country: try segment.country.map { try CountryCode($0) }, method: segment.method)
        }
        guard count > 0, !scenario.segments.isEmpty, Set(scenario.order) == Set(scenario.gateways.map(\.id)) else {
            throw ScenarioError("a scenario needs payments, segments, and an order listing every gateway once")
        }
        let settleAfter = 2 * learning.halfLifeSeconds / 60
        let changes = scenario.changeMinutes
        func settled(_ minute: Double) -> Bool { !changes.contains { minute >= $0 && minute < $0 + settleAfter } }

        var figures: [Figures] = []
        var oracleApproved = 0
        for strategy in [Strategy.oracle, .static, .health, .learning] {
            let clock = VirtualClock()
            let health = strategy == .static || strategy == .oracle ? nil : HealthMonitor(settings: HealthSettings(), clock: clock)
            var routers: [Set<GatewayID>: GatewayRouter] = [:]
            var scores: SuccessRateScores?
            var approved = 0, worse = 0, settledCount = 0, knownWorse = 0, knownWorseGateways = 0
            var generator = SeededGenerator(seed: seed ^ 0x5EED_0F_0A7E5)
            for payment in stream {
                clock.advance(by: .milliseconds(Int64(payment.minute * 60_000)) - clock.now)
                let segment = scenario.segments[payment.segment]
                let present = Set(scenario.gateways.filter { payment.minute >= ($0.joinsAt ?? 0) }.map(\.id))
                let working = present.filter { !scenario.isOut($0, minute: payment.minute) }
                let best = working.map { scenario.rate($0, segment: segment.id, minute: payment.minute) }.max() ?? 0
                let candidates: [GatewayID]
                if strategy == .oracle {
                    candidates = working.sorted { (scenario.rate($1, segment: segment.id, minute: payment.minute), $0.rawValue)
                        < (scenario.rate($0, segment: segment.id, minute: payment.minute), $1.rawValue) }
                } else {
                    let router: GatewayRouter
                    if let built = routers[present] {
                        router = built
                    } else {
                        router = try Self.router(scenario, present: present, learning: strategy == .learning ? learning : nil)
                        routers[present] = router
                        if strategy == .learning, scores == nil { scores = SuccessRateScores(rules: router.merchant.routing.rules, clock: clock) }
                    }
                    candidates = router.route(intents[payment.segment], health: health, scores: scores, using: &generator).candidates
                    if let scores, let first = candidates.first, health?.tiers(of: candidates).allSatisfy({ $0 == .healthy }) ?? true {
                        // What the scores knew when the payment was routed (nothing has been recorded since).
                        let listed = scenario.order.filter(present.contains)
                        let scored = scores.scores(of: listed, segment: SegmentKey(intents[payment.segment], dimensions: learning.segmentBy), rule: 1)
                        let leader = scored.indices.max { (scored[$0].rate, $1) < (scored[$1].rate, $0) }.map { scored[$0] }
                        if let leader, scored.contains(where: { $0.isKnownWorse(than: leader) }) {
                            knownWorseGateways += 1
                            if let mine = scored.first(where: { $0.gateway == first }), mine.isKnownWorse(than: leader) { knownWorse += 1 }
                        }
                    }
                }
                if settled(payment.minute), let first = candidates.first {
                    settledCount += 1
                    // Five points or more (a hair's tolerance: 0.85 − 0.05 is not 0.80 in binary floating point).
                    if best - scenario.rate(first, segment: segment.id, minute: payment.minute) >= 0.05 - 1e-9 { worse += 1 }
                }
                // The cascade as the attempt policy allows it: a request that never reached its gateway moves to the next.
                for gateway in candidates {
                    if scenario.isOut(gateway, minute: payment.minute) {
                        let probe = health?.attemptStarted(on: gateway) ?? false
                        health?.record(gateway, success: false, releasingProbe: probe)
                        continue
                    }
                    let probe = health?.attemptStarted(on: gateway) ?? false
                    health?.record(gateway, success: true, releasingProbe: probe)
                    let yes = payment.draw < scenario.rate(gateway, segment: segment.id, minute: payment.minute)
                    if yes { approved += 1 }
                    scores?.record(gateway, segment: SegmentKey(intents[payment.segment], dimensions: learning.segmentBy), rule: 1, approved: yes)
                    break
                }
            }
            if strategy == .oracle { oracleApproved = approved }
            figures.append(Figures(strategy: strategy, payments: count, approved: approved, acceptance: Double(approved) / Double(max(count, 1)),
                                   ofOracle: Double(approved) / Double(max(oracleApproved, 1)), regret: oracleApproved - approved,
                                   worseShareSettled: Double(worse) / Double(max(settledCount, 1)),
                                   knownWorseShare: strategy == .learning ? Double(knownWorse) / Double(max(knownWorseGateways, 1)) : nil,
                                   knownWorseCases: strategy == .learning ? knownWorseGateways : nil))
        }
        return Report(scenario: scenario.name, seed: seed, exploration: learning.exploration, figures: figures)
    }

    /// The merchant the simulation routes for: the scenario's gateways (those `present` enabled) on a module that takes
    /// every segment, one rule over the scenario's order (learning or not), the same order as fallback.
    static func router(_ scenario: RoutingScenario, present: Set<GatewayID>, learning: SuccessRateRouting?) throws -> GatewayRouter {
        let methods = Set(scenario.segments.map(\.method))
        let order = scenario.order.filter(present.contains)
        let merchant = MerchantConfiguration(
            id: "simulated",
            gateways: scenario.gateways.map { GatewayConfiguration(id: $0.id, module: "simulated", enabled: present.contains($0.id)) },
            routing: RoutingConfiguration(rules: [RoutingRule(name: "simulated", gateways: order.map { RuleTarget($0) }, successRate: learning)],
                                          fallback: order))
        return try GatewayRouter(merchant: merchant, modules: ["simulated": GatewayCapabilities(methods: methods)])
    }
}
