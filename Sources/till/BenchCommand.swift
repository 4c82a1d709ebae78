import ArgumentParser
import Foundation
import Till
import TillOrchestration

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Till's own speed. Prints one JSON object per line.",
        subcommands: [Router.self, ServerBench.self, SearchBench.self, EncryptBench.self, FloodBench.self])

    struct Router: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "router",
            abstract: "Routing decisions per second and latency for 5, 50 and 500 rules over 5 gateways, the same with every rule learning (successRate, scores from 20,000 outcomes), then the orchestrator's overhead for a whole checkout.")

        @Option(help: "Timed decisions per rule count.")
        var decisions = 200_000

        @Option(help: "Timed checkouts for the overhead figure.")
        var checkouts = 20_000

        func run() async throws {
            #if DEBUG
            printError("note: this is a debug build; run `swift run -c release till bench router` for real figures")
            #endif
            for rules in [5, 50, 500] {
                try printJSONLine(benchRouting(rules: rules))
            }
            for rules in [5, 50, 500] {
                try printJSONLine(benchRouting(rules: rules, learning: true))
            }
            try printJSONLine(await benchOverhead())
        }

        struct RoutingFigures: Encodable {
            let rules: Int
            /// Every rule learns (successRate) and the scores hold outcomes in every segment.
            let learning: Bool
            let gateways: Int
            let decisionsPerSecond: Int
            let p50Nanos: Int
            let p99Nanos: Int
        }

        struct OverheadFigures: Encodable {
            let checkouts: Int
            let orchestratorOverheadP50Micros: Double
            let orchestratorOverheadP99Micros: Double
        }

        static let gateways: [GatewayID] = ["g1", "g2", "g3", "g4", "g5"]
        static let currencies = ["USD", "EUR", "GBP", "SAR", "AED", "JPY", "CNY", "KWD", "SGD", "HKD"]
        static let countries = ["US", "DE", "GB", "SA", "AE", "JP", "CN", "KW", "SG", "HK"]
        static let methods: [PaymentMethod] = [.card, .applePay, .wechatPay, .alipay, .unionPay]

        /// A merchant with `count` rules of mixed conditions; most payments match late or not at all,
        /// so the router scans far.
        static func merchant(rules count: Int, learning: Bool = false) -> MerchantConfiguration {
            var generator = SeededGenerator(seed: 42)
            var rules: [RoutingRule] = []
            for index in 0..<count {
                var when = RuleConditions()
                switch index % 5 {
                case 0: when.methods = [methods[generator.roll(5)]]; when.currencies = [currencies[generator.roll(10)]]
                case 1: when.countries = [countries[generator.roll(10)], countries[generator.roll(10)]]; when.methods = [methods[generator.roll(5)]]
                case 2: when.amount = AmountRange(currency: "USD", min: "\(generator.roll(500))", max: "\(500 + generator.roll(500))")
                        when.countries = [countries[generator.roll(10)]]
                case 3: when.cardIIN = [IINRange(from: "400000", to: "4\(generator.roll(10))9999")]; when.currencies = [currencies[generator.roll(10)]]
                default: when.metadata = ["channel": "web\(generator.roll(3))"]; when.methods = [methods[generator.roll(5)]]
                }
                let split = index % 2 == 0 && !learning
                let targets = (0..<3).map { offset in
                    RuleTarget(gateways[(index + offset) % 5], weight: split ? 10 + generator.roll(90) : nil)
                }
                rules.append(RoutingRule(name: "rule \(index + 1)", when: when, gateways: targets,
                                         successRate: learning ? SuccessRateRouting(segmentBy: [.method, .currency, .cardNetwork]) : nil))
            }
            return MerchantConfiguration(
                id: "bench",
                gateways: gateways.map { GatewayConfiguration(id: $0, module: "bench") },
                routing: RoutingConfiguration(rules: rules, fallback: Array(gateways.reversed())))
        }

        static func intents(_ count: Int) -> [PaymentIntent] {
            var generator = SeededGenerator(seed: 7)
            return (0..<count).map { index in
                let currency = Currency.lookup(currencies[generator.roll(10)])!
                return PaymentIntent(
                    merchantReference: "bench-\(index)",
                    amount: Money(minorUnits: Int64(generator.roll(1_000_000)) + 1, currency: currency),
                    country: try! CountryCode(countries[generator.roll(10)]),
                    method: methods[generator.roll(5)],
                    cardIIN: "4\(100_000 + generator.roll(899_999))".prefix(6).description,
                    metadata: ["channel": "web\(generator.roll(4))"])
            }
        }

        static let modules: [String: GatewayCapabilities] = [
            "bench": GatewayCapabilities(methods: Set(methods), actions: [.sale, .authorize]),
        ]

        func benchRouting(rules: Int, learning: Bool = false) throws -> RoutingFigures {
            let merchant = Self.merchant(rules: rules, learning: learning)
            let router = try GatewayRouter(merchant: merchant, modules: Self.modules)
            let health = HealthMonitor(settings: HealthSettings())
            let intents = Self.intents(1024)
            var generator = SeededGenerator(seed: 1)
            var scores: SuccessRateScores?
            if learning {
                // Outcomes in every segment of every rule, as the server's refresher would have read them.
                let table = SuccessRateScores(rules: merchant.routing.rules)
                for i in 0..<20_000 {
                    let intent = intents[i & 1023]
                    for (number, rule) in merchant.routing.rules.enumerated() where i % max(1, rules / 5) == number % max(1, rules / 5) {
                        table.record(rule.gateways[i % 3].id, segment: SegmentKey(intent, dimensions: rule.successRate!.segmentBy), rule: number + 1,
                                     approved: generator.roll(10) < 8)
                    }
                }
                scores = table
            }
            var sink = 0
            for i in 0..<20_000 { sink &+= router.route(intents[i & 1023], health: health, scores: scores, using: &generator).candidates.count }

            // Throughput: one clock read around the whole loop.
            let start = ContinuousClock.now
            for i in 0..<decisions { sink &+= router.route(intents[i & 1023], health: health, scores: scores, using: &generator).candidates.count }
            let elapsed = ContinuousClock.now - start

            // Latency: each decision timed on its own.
            var samples = [Int](repeating: 0, count: decisions)
            for i in 0..<decisions {
                let t0 = ContinuousClock.now
                sink &+= router.route(intents[i & 1023], health: health, scores: scores, using: &generator).candidates.count
                samples[i] = Int((ContinuousClock.now - t0).nanoseconds)
            }
            samples.sort()
            if sink == 42 { print("") }   // keep the work observable
            return RoutingFigures(rules: rules, learning: learning, gateways: Self.gateways.count,
                                  decisionsPerSecond: Int(Double(decisions) / elapsed.seconds),
                                  p50Nanos: samples[decisions / 2], p99Nanos: samples[decisions * 99 / 100])
        }

        /// The orchestrator's own decisions for one checkout, as the server makes them: may an attempt
        /// start (the attempt policy), which gateway (the router, health on), and does the gateway's report
        /// apply (the policy's money rule). Gateway time and storage are not in it (`till bench server`
        /// measures the server with its store).
        func benchOverhead() async throws -> OverheadFigures {
            let merchant = Self.merchant(rules: 50)
            let router = try GatewayRouter(merchant: merchant, modules: Self.modules)
            let policy = AttemptPolicy(merchant: merchant, moduleTables: Dictionary(uniqueKeysWithValues: Self.gateways.map {
                ($0, DecisionTable(["soft": .retryNext]))
            }))
            let health = HealthMonitor(settings: merchant.health)
            let intents = Self.intents(1024)
            var generator = SeededGenerator(seed: 3)
            var sink = 0
            func checkout(_ intent: PaymentIntent) -> Int {
                let reference = AttemptReference.generate(using: &generator)
                guard case .success(let tried) = policy.nextAttempt(payment: .created, attempts: []) else { return 0 }
                let decision = router.route(intent, health: health, using: &generator)
                guard let gateway = decision.candidates.first(where: { !tried.contains($0) }) else { return 1 }
                let report = StatusReport(gateway: gateway, attempt: reference, status: .paid, amount: intent.amount)
                return AttemptPolicy.verdict(for: report, on: .pending, amount: intent.amount, source: .notification) == .apply ? 2 : 3
            }
            for i in 0..<2_000 { sink &+= checkout(intents[i & 1023]) }
            var samples: [Double] = []
            samples.reserveCapacity(checkouts)
            for i in 0..<checkouts {
                let t0 = ContinuousClock.now
                sink &+= checkout(intents[i & 1023])
                samples.append(Double((ContinuousClock.now - t0).nanoseconds) / 1000)
            }
            if sink == 42 { print("") }   // keep the work observable
            samples.sort()
            func round2(_ x: Double) -> Double { (x * 100).rounded() / 100 }
            return OverheadFigures(checkouts: checkouts,
                                   orchestratorOverheadP50Micros: round2(samples[checkouts / 2]),
                                   orchestratorOverheadP99Micros: round2(samples[checkouts * 99 / 100]))
        }
    }
}

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension RandomNumberGenerator {
    mutating func roll(_ bound: Int) -> Int { Int(next(upperBound: UInt64(bound))) }
}
