import Foundation
import Testing
@testable import Till
@testable import TillOrchestration

@Suite("Routing that learns")
struct SuccessRateRoutingTests {
    static let modules: [String: GatewayCapabilities] = ["cards": GatewayCapabilities(methods: [.card])]

    /// A merchant with gateways a, b, c (listed in that order) and one learning rule over them.
    func setup(_ settings: SuccessRateRouting = SuccessRateRouting(exploration: 0))
        throws -> (router: GatewayRouter, scores: SuccessRateScores, clock: VirtualClock) {
        let rules = [RoutingRule(name: "learn", gateways: ["a", "b", "c"].map { RuleTarget(GatewayID(rawValue: $0)) }, successRate: settings)]
        let merchant = MerchantConfiguration(id: "m", gateways: ["a", "b", "c"].map { GatewayConfiguration(id: GatewayID(rawValue: $0), module: "cards") },
                                             routing: RoutingConfiguration(rules: rules))
        let clock = VirtualClock()
        return (try GatewayRouter(merchant: merchant, modules: Self.modules), SuccessRateScores(rules: rules, clock: clock), clock)
    }

    func intent(_ currency: String = "USD", country: String = "US", iin: String? = nil) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "o", amount: Money(minorUnits: 1_000, currency: Currency.lookup(currency)!),
                      country: try CountryCode(country), method: .card, cardIIN: iin)
    }

    func record(_ scores: SuccessRateScores, _ gateway: GatewayID, _ intent: PaymentIntent, approved: Int, declined: Int,
                dimensions: [SuccessRateRouting.Dimension] = SuccessRateRouting().segmentBy) {
        let segment = SegmentKey(intent, dimensions: dimensions)
        for _ in 0..<approved { scores.record(gateway, segment: segment, rule: 1, approved: true) }
        for _ in 0..<declined { scores.record(gateway, segment: segment, rule: 1, approved: false) }
    }

    func first(_ router: GatewayRouter, _ scores: SuccessRateScores, _ intent: PaymentIntent, seed: UInt64 = 1) -> [GatewayID] {
        var generator = SeededGenerator(seed: seed)
        return router.route(intent, scores: scores, using: &generator).candidates
    }

    @Test("cold start: with no outcome at all every score is the prior's 50 %, and the listed order stands")
    func coldStart() throws {
        let (router, scores, _) = try setup()
        #expect(first(router, scores, try intent()) == ["a", "b", "c"])
        let scored = scores.scores(of: ["a", "b", "c"], segment: SegmentKey(try intent(), dimensions: [.method, .currency]), rule: 1)
        #expect(scored.allSatisfy { $0.rate == 0.5 && $0.samples == 0 })
    }

    @Test("the gateway that approves most in the payment's segment goes first; another segment keeps its own order")
    func bestFirstPerSegment() throws {
        let (router, scores, _) = try setup()
        let usd = try intent("USD"), eur = try intent("EUR", country: "DE")
        record(scores, "a", usd, approved: 60, declined: 40)
        record(scores, "b", usd, approved: 90, declined: 10)
        record(scores, "c", usd, approved: 75, declined: 25)
        record(scores, "a", eur, approved: 90, declined: 10)
        record(scores, "b", eur, approved: 50, declined: 50)
        #expect(first(router, scores, usd) == ["b", "c", "a"])
        #expect(first(router, scores, eur).first == "a")
    }

    @Test("ties keep the listed order")
    func ties() throws {
        let (router, scores, _) = try setup()
        let usd = try intent()
        for gateway: GatewayID in ["c", "b", "a"] { record(scores, gateway, usd, approved: 8, declined: 2) }
        #expect(first(router, scores, usd) == ["a", "b", "c"])
    }

    @Test("a gateway with no outcome in the segment is scored at its rate over every segment (the prior), not at zero")
    func noDataUsesThePrior() throws {
        let (router, scores, _) = try setup()
        let usd = try intent("USD"), aed = try intent("AED", country: "AE")
        record(scores, "b", aed, approved: 95, declined: 5)     // b is good elsewhere, unknown in USD
        record(scores, "a", usd, approved: 70, declined: 30)
        let scored = scores.scores(of: ["a", "b"], segment: SegmentKey(usd, dimensions: [.method, .currency]), rule: 1)
        #expect(scored[1].samples == 0)
        #expect(abs(scored[1].prior - 0.95) < 1e-9 && abs(scored[1].rate - 0.95) < 1e-9)
        #expect(first(router, scores, usd).first == "b")
    }

    @Test("outcomes weigh half as much after each half-life: a gateway that was best an hour ago and is bad now falls behind")
    func decay() throws {
        let settings = SuccessRateRouting(halfLifeSeconds: 600, exploration: 0)
        let (router, scores, clock) = try setup(settings)
        let usd = try intent()
        record(scores, "a", usd, approved: 200, declined: 0)
        record(scores, "b", usd, approved: 70, declined: 30)
        #expect(first(router, scores, usd).first == "a")
        clock.advance(by: .seconds(600))
        let halved = scores.scores(of: ["a"], segment: SegmentKey(usd, dimensions: settings.segmentBy), rule: 1)[0]
        #expect(abs(halved.samples - 100) < 1e-6, "\(halved)")
        clock.advance(by: .seconds(3_000))
        record(scores, "a", usd, approved: 5, declined: 15)
        record(scores, "b", usd, approved: 70, declined: 30)
        #expect(first(router, scores, usd).first == "b")
    }

    @Test("exploration: with a share of 10 %, about 10 % of payments go first to another gateway, the rest to the best; 0 explores never",
          arguments: [0.0, 0.1])
    func explorationBounds(share: Double) throws {
        let (router, scores, _) = try setup(SuccessRateRouting(minSamples: 5, exploration: share))
        let usd = try intent()
        record(scores, "a", usd, approved: 50, declined: 50)
        record(scores, "b", usd, approved: 90, declined: 10)
        record(scores, "c", usd, approved: 60, declined: 40)
        var elsewhere = 0
        let payments = 20_000
        for seed in 0..<UInt64(payments) where first(router, scores, usd, seed: seed).first != "b" { elsewhere += 1 }
        let observed = Double(elsewhere) / Double(payments)
        // Binomial: 3 standard deviations of 20,000 draws at 10 % is 0.64 points.
        #expect(abs(observed - share) < 0.0065, "\(observed)")
    }

    @Test("exploration goes first to a gateway short of the minimum sample")
    func explorationPrefersTheUnproven() throws {
        let (router, scores, _) = try setup(SuccessRateRouting(minSamples: 20, exploration: 0.5))
        let usd = try intent()
        record(scores, "a", usd, approved: 90, declined: 10)
        record(scores, "b", usd, approved: 60, declined: 40)
        record(scores, "c", usd, approved: 1, declined: 1)
        var explored: [GatewayID: Int] = [:]
        for seed in 0..<UInt64(2_000) {
            let order = first(router, scores, usd, seed: seed)
            if order.first != "a" { explored[order.first!, default: 0] += 1 }
        }
        #expect(explored["b"] == nil && (explored["c"] ?? 0) > 800)
    }

    @Test("segments by card network: a Visa and a Mastercard payment in one currency are scored apart")
    func cardNetworkSegments() throws {
        let settings = SuccessRateRouting(segmentBy: [.currency, .cardNetwork], exploration: 0)
        let (router, scores, _) = try setup(settings)
        let visa = try intent(iin: "411111"), mastercard = try intent(iin: "555555")
        record(scores, "a", visa, approved: 95, declined: 5, dimensions: settings.segmentBy)
        record(scores, "b", mastercard, approved: 95, declined: 5, dimensions: settings.segmentBy)
        record(scores, "a", mastercard, approved: 40, declined: 60, dimensions: settings.segmentBy)
        record(scores, "b", visa, approved: 40, declined: 60, dimensions: settings.segmentBy)
        #expect(first(router, scores, visa).first == "a")
        #expect(first(router, scores, mastercard).first == "b")
        #expect(CardNetwork(iin: "222100") == .mastercard && CardNetwork(iin: "378282") == .amex && CardNetwork(iin: nil) == .unknown)
    }

    @Test("rebuilt from the store's counts, the scores are those the outcomes recorded one by one give")
    func replaceMatchesRecord() throws {
        let (_, recorded, _) = try setup()
        let (_, rebuilt, _) = try setup()
        let usd = try intent()
        record(recorded, "a", usd, approved: 30, declined: 10)
        rebuilt.replace(with: [
            SuccessRateScores.Count(gateway: "a", method: .card, currency: usd.amount.currency, country: "US", cardIIN: nil, approved: true, age: .zero, count: 30),
            SuccessRateScores.Count(gateway: "a", method: .card, currency: usd.amount.currency, country: "US", cardIIN: nil, approved: false, age: .zero, count: 10),
        ])
        let segment = SegmentKey(usd, dimensions: SuccessRateRouting().segmentBy)
        #expect(recorded.scores(of: ["a"], segment: segment, rule: 1) == rebuilt.scores(of: ["a"], segment: segment, rule: 1))
    }

    @Test("rebuilt from the store, a rule learns only from the payments its conditions take (its prior included), and a rule that does not learn gets nothing")
    func replaceFollowsTheRuleConditions() throws {
        let rules = [
            RoutingRule(name: "usd cards", when: RuleConditions(methods: [.card], currencies: ["USD"]), gateways: [RuleTarget("a"), RuleTarget("b")],
                        successRate: SuccessRateRouting(exploration: 0)),
            RoutingRule(name: "split", gateways: [RuleTarget("a", weight: 1), RuleTarget("b", weight: 1)]),
        ]
        let scores = SuccessRateScores(rules: rules, clock: VirtualClock())
        let usd = Currency.lookup("USD")!, eur = Currency.lookup("EUR")!
        scores.replace(with: [
            SuccessRateScores.Count(gateway: "a", method: .card, currency: usd, country: nil, cardIIN: nil, approved: true, age: .zero, count: 10),
            // Not the rule's: EUR, and a wallet in USD. Neither reaches its tallies, nor a's prior.
            SuccessRateScores.Count(gateway: "a", method: .card, currency: eur, country: nil, cardIIN: nil, approved: false, age: .zero, count: 50),
            SuccessRateScores.Count(gateway: "a", method: .alipay, currency: usd, country: nil, cardIIN: nil, approved: false, age: .zero, count: 50),
        ])
        let segment = SegmentKey(dimensions: [.method, .currency], method: .card, currency: usd, country: nil, cardIIN: nil)
        let a = scores.scores(of: ["a"], segment: segment, rule: 1)[0]
        #expect(a.samples == 10 && a.prior == 1, "\(a)")
        #expect(scores.rules.keys.sorted() == [1])
    }

    @Test("a gateway named twice in a learning rule is a candidate once")
    func duplicateTargets() throws {
        let rules = [RoutingRule(gateways: [RuleTarget("a"), RuleTarget("b"), RuleTarget("a")], successRate: SuccessRateRouting(exploration: 0.5))]
        let merchant = MerchantConfiguration(id: "m", gateways: ["a", "b"].map { GatewayConfiguration(id: GatewayID(rawValue: $0), module: "cards") },
                                             routing: RoutingConfiguration(rules: rules, fallback: []))
        let router = try GatewayRouter(merchant: merchant, modules: Self.modules)
        let scores = SuccessRateScores(rules: rules, clock: VirtualClock())
        let payment = try intent()
        for seed in 0..<UInt64(50) {
            let order = first(router, scores, payment, seed: seed)
            #expect(order.count == 2 && Set(order) == ["a", "b"], "\(order)")
        }
    }

    @Test("only customers' answers count: paid and refunded approve, a gateway's decline declines; never sent, input refused, open and expired count for nothing")
    func learningOutcomes() {
        #expect(LearningOutcome.of(status: .paid, gatewayCode: nil) == true)
        #expect(LearningOutcome.of(status: .refunded, gatewayCode: nil) == true)
        #expect(LearningOutcome.of(status: .failed, gatewayCode: "05") == false)
        #expect(LearningOutcome.of(status: .failed, gatewayCode: AttemptFailure.notSentCode) == nil)
        #expect(LearningOutcome.of(status: .failed, gatewayCode: AttemptFailure.inputRefusedCode) == nil)
        #expect(LearningOutcome.of(status: .failed, gatewayCode: nil) == nil)
        #expect(LearningOutcome.of(status: .pending, gatewayCode: nil) == nil)
        #expect(LearningOutcome.of(status: .expired, gatewayCode: nil) == nil)
    }

    @Test("the explainer gives each gateway's score, its error, outcomes and prior, and says which is best, which known to be worse")
    func explainer() throws {
        let (router, scores, _) = try setup()
        let usd = try intent()
        record(scores, "a", usd, approved: 60, declined: 40)
        record(scores, "b", usd, approved: 90, declined: 10)
        var generator = SeededGenerator(seed: 1)
        let decision = router.route(usd, scores: scores, using: &generator, explain: true)
        let lines = decision.notes.map(\.description)
        #expect(lines.contains { $0.hasPrefix("b: rule #1 score") && $0.contains("from 100.0 recent outcomes") && $0.hasSuffix("best score") }, "\(lines)")
        // 60 of 100 against 90 of 100: known to be worse. c has no outcome: its rate is the prior's, unknown.
        #expect(lines.contains { $0.hasPrefix("a: rule #1 score") && $0.hasSuffix("known to be worse") })
        #expect(lines.contains { $0.hasPrefix("c: rule #1 score 50.0 %") && $0.hasSuffix("lower score") })
    }

    @Test("a rule that learns cannot also be a split, and its settings are checked by name")
    func validation() {
        var rule = RoutingRule(gateways: [RuleTarget("a", weight: 1)], successRate: SuccessRateRouting(exploration: 0.9))
        let fields = rule.validate(path: "r").map(\.field)
        #expect(fields.contains("r.successRate") && fields.contains("r.successRate.exploration"))
        rule.gateways = [RuleTarget("a")]
        rule.successRate = SuccessRateRouting(segmentBy: [.currency, .currency], halfLifeSeconds: 1)
        #expect(Set(rule.validate(path: "r").map(\.field)) == ["r.successRate.segmentBy", "r.successRate.halfLifeSeconds"])
    }
}
