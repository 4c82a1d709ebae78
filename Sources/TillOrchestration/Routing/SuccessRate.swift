import Foundation
import Till

/// A rule's `successRate` block: its gateways are ordered by how often each recently approved payments like this one
/// (the same segment), instead of the order they are listed in.
///
/// The rule's gateway list still says which gateways may take the payment; learning only orders them. The cascade, the
/// hand-off and the money rules do not change. A gateway's score is its approval rate in the payment's segment, the
/// outcomes weighed down by age (`halfLifeSeconds`), pulled toward its rate over every segment (`priorStrength`
/// pseudo-outcomes) so that a segment with few outcomes is not judged on two of them. The best-scored gateway goes
/// first, except for a share `exploration` of payments, which go first to another one (one with fewer than
/// `minSamples` outcomes first), so a gateway that got better is noticed. A gateway known to be worse (two standard
/// errors above its rate is still below the best's rate, ``SuccessRateScores/Score/isKnownWorse(than:)``) gets at most
/// that share.
///
/// Only customers' answers count: an approval (the attempt paid or authorised) or a decline (the gateway's definite
/// refusal). A gateway not working (unreachable, timed out, unknown outcome) is health's (``HealthMonitor``), which
/// still moves an unhealthy gateway back whatever its score.
public struct SuccessRateRouting: Sendable, Hashable, Codable {
    /// What a payment's segment is made of.
    public enum Dimension: String, Sendable, Hashable, Codable, CaseIterable {
        case method, currency, country
        /// The card's scheme from its IIN (visa, mastercard, amex, …).
        case cardNetwork
        /// The card's first six digits.
        case cardIIN
    }

    public var segmentBy: [Dimension]
    public var halfLifeSeconds: Double
    public var minSamples: Double
    public var exploration: Double
    public var priorStrength: Double

    public init(segmentBy: [Dimension] = [.method, .currency], halfLifeSeconds: Double = 900, minSamples: Double = 20,
                exploration: Double = 0.02, priorStrength: Double = 4) {
        self.segmentBy = segmentBy
        self.halfLifeSeconds = halfLifeSeconds
        self.minSamples = minSamples
        self.exploration = exploration
        self.priorStrength = priorStrength
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case segmentBy, halfLifeSeconds, minSamples, exploration, priorStrength
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = SuccessRateRouting()
        segmentBy = try c.decodeIfPresent([Dimension].self, forKey: .segmentBy) ?? d.segmentBy
        halfLifeSeconds = try c.decodeIfPresent(Double.self, forKey: .halfLifeSeconds) ?? d.halfLifeSeconds
        minSamples = try c.decodeIfPresent(Double.self, forKey: .minSamples) ?? d.minSamples
        exploration = try c.decodeIfPresent(Double.self, forKey: .exploration) ?? d.exploration
        priorStrength = try c.decodeIfPresent(Double.self, forKey: .priorStrength) ?? d.priorStrength
    }

    func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        func check(_ value: Double, _ range: ClosedRange<Double>, _ key: String) {
            issues += Validators.range(value, range, field: "\(path).\(key)")
        }
        // At least a minute: the server reads outcomes back in 10-second buckets, each aged from its middle (a weight
        // off by at most 2^(5/60), 6 %). At most 4 hours: the window read every 10 s is six half-lives.
        check(halfLifeSeconds, 60...14_400, "halfLifeSeconds")
        check(minSamples, 1...100_000, "minSamples")
        check(exploration, 0...0.5, "exploration")
        check(priorStrength, 0...10_000, "priorStrength")
        if Set(segmentBy).count != segmentBy.count {
            issues.append(.init(field: "\(path).segmentBy", code: .invalidField, message: "each dimension at most once"))
        }
        return issues
    }

    /// How long outcomes are read back: six half-lives (an older one weighs under 2 %).
    public var window: Duration { .seconds(halfLifeSeconds * 6) }
}

/// What a customer's answer on one attempt says for learning: approved, declined, or nothing (the gateway not working,
/// the customer gone, still open). One rule for the server's store and the simulator.
public enum LearningOutcome {
    /// Approved (true), declined (false) or not a customer's answer (nil).
    public static func of(status: PaymentStatus, gatewayCode: String?) -> Bool? {
        switch status {
        case .paid, .authorized, .partiallyRefunded, .refunded: return true
        case .failed:
            guard let gatewayCode, gatewayCode != AttemptFailure.notSentCode, gatewayCode != AttemptFailure.inputRefusedCode else { return nil }
            return false
        default: return nil
        }
    }
}

/// A payment's place along a rule's ``SuccessRateRouting/segmentBy`` dimensions, as small integers.
public struct SegmentKey: Sendable, Hashable {
    let method: Int32
    let currency: Int32
    let country: Int32
    let network: Int32
    let iin: Int32

    /// The segment of a payment with these values, along `dimensions` (the others left out).
    public init(dimensions: [SuccessRateRouting.Dimension], method: PaymentMethod, currency: Currency, country: String?, cardIIN: String?) {
        func has(_ d: SuccessRateRouting.Dimension) -> Bool { dimensions.contains(d) }
        // FNV-1a of the method's name: the same number in every process.
        self.method = has(.method) ? Int32(bitPattern: method.rawValue.utf8.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 } & 0x7FFF_FFFF) : -1
        self.currency = has(.currency) ? Int32(currency.numeric) : -1
        self.country = has(.country) ? Int32(country.map { CountryIndex.of($0) } ?? -2) : -1
        self.network = has(.cardNetwork) ? Int32(CardNetwork(iin: cardIIN).rawValue) : -1
        var iin: Int32 = -2
        if has(.cardIIN) {
            let digits = Array((cardIIN ?? "").utf8.prefix(6))
            if digits.count == 6, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) { iin = digits.reduce(0) { $0 * 10 + Int32($1 - 48) } }
        } else {
            iin = -1
        }
        self.iin = iin
    }

    /// The segment of `intent`.
    public init(_ intent: PaymentIntent, dimensions: [SuccessRateRouting.Dimension]) {
        self.init(dimensions: dimensions, method: intent.method, currency: intent.amount.currency, country: intent.country?.code,
                  cardIIN: intent.cardIIN)
    }
}

/// A card's scheme, told by its IIN's leading digits (the ranges the schemes publish); `unknown` without one.
public enum CardNetwork: Int, Sendable {
    case unknown, visa, mastercard, amex, discover, jcb, unionpay, diners

    public init(iin: String?) {
        let digits = Array((iin ?? "").utf8.prefix(6)).map { Int($0) - 48 }
        guard digits.count >= 4, digits.allSatisfy({ (0...9).contains($0) }) else { self = .unknown; return }
        let two = digits[0] * 10 + digits[1], four = two * 100 + digits[2] * 10 + digits[3]
        switch true {
        case digits[0] == 4: self = .visa
        case (51...55).contains(two) || (2221...2720).contains(four): self = .mastercard
        case two == 34 || two == 37: self = .amex
        case four == 6011 || two == 65 || (644...649).contains(four / 10): self = .discover
        case (3528...3589).contains(four): self = .jcb
        case two == 62: self = .unionpay
        case two == 36 || two == 38 || two == 39 || (300...305).contains(four / 10): self = .diners
        default: self = .unknown
        }
    }
}

/// Recent approvals and declines per gateway and segment, for every ``SuccessRateRouting`` rule of one merchant, each
/// weighed down by its age. Read on every routing decision (one lock, a dictionary lookup per gateway); written by the
/// server's refresher, which rebuilds it from the store's attempts so every instance scores alike
/// (``replace(with:now:)``), or outcome by outcome (``record(_:segment:rule:approved:)``, the simulator).
public final class SuccessRateScores: Sendable {
    /// Outcomes decayed to `at` (seconds on the clock).
    struct Tally: Sendable {
        var approved = 0.0
        var declined = 0.0
        var at = 0.0

        func decayed(to now: Double, halfLife: Double) -> Tally {
            guard now > at else { return self }
            let factor = exp2(-(now - at) / halfLife)
            return Tally(approved: approved * factor, declined: declined * factor, at: now)
        }
    }

    private struct Key: Hashable {
        let rule: Int
        let segment: SegmentKey?
        let gateway: GatewayID
    }

    /// The rules that learn, by number (1-based, as the router counts them).
    public let rules: [Int: SuccessRateRouting]
    /// Each learning rule's conditions but its amount and metadata ones: which stored outcomes it learns from.
    private let matchers: [Int: CompiledRule]
    private let vocabulary: Vocabulary
    private let clock: any TillClock
    private let table = Locked<[Key: Tally]>([:])

    /// - Parameter rules: the merchant's routing rules (those with `successRate` learn).
    public init(rules: [RoutingRule], clock: any TillClock = SystemClock()) {
        var learning: [Int: SuccessRateRouting] = [:]
        for (index, rule) in rules.enumerated() { if let settings = rule.successRate { learning[index + 1] = settings } }
        self.rules = learning
        self.clock = clock
        let loose = rules.map { rule in
            var rule = rule
            rule.when.amount = nil
            rule.when.metadata = nil
            return rule
        }
        let vocabulary = Vocabulary(rules: loose, capabilities: [])
        self.vocabulary = vocabulary
        matchers = Dictionary(uniqueKeysWithValues: learning.keys.map { number in
            (number, CompiledRule(loose[number - 1], number: number, gatewayIndex: [:], vocabulary: vocabulary))
        })
    }

    var seconds: Double { Self.seconds(clock.now) }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Counts one customer's answer on `gateway` for learning rule `rule`, now (in its segment and in the gateway's
    /// total over every segment, the prior).
    public func record(_ gateway: GatewayID, segment: SegmentKey, rule: Int, approved: Bool) {
        guard let settings = rules[rule] else { return }
        let now = seconds
        table.withLock { table in
            for key in [Key(rule: rule, segment: segment, gateway: gateway), Key(rule: rule, segment: nil, gateway: gateway)] {
                var tally = (table[key] ?? Tally(at: now)).decayed(to: now, halfLife: settings.halfLifeSeconds)
                if approved { tally.approved += 1 } else { tally.declined += 1 }
                table[key] = tally
            }
        }
    }

    /// One gateway's counted outcomes in one segment, as the refresher reads them from the store.
    public struct Count: Sendable, Hashable {
        public var gateway: GatewayID
        public var method: PaymentMethod
        public var currency: Currency
        public var country: String?
        public var cardIIN: String?
        public var action: PaymentAction
        public var approved: Bool
        /// How long before the read the attempts started (those of one 10-second bucket share one age).
        public var age: Duration
        public var count: Int

        public init(gateway: GatewayID, method: PaymentMethod, currency: Currency, country: String?, cardIIN: String?,
                    action: PaymentAction = .sale, approved: Bool, age: Duration, count: Int) {
            self.gateway = gateway
            self.method = method
            self.currency = currency
            self.country = country
            self.cardIIN = cardIIN
            self.action = action
            self.approved = approved
            self.age = age
            self.count = count
        }
    }

    /// Replaces every tally with those made from `counts` (the store's recent outcomes, read at once). Each learning
    /// rule counts the outcomes of the payments its conditions take — all of them but an amount range and metadata,
    /// which the store's counts do not carry — whichever rule routed them: a gateway's approvals of USD cards are one
    /// fact.
    public func replace(with counts: [Count]) {
        let now = seconds
        var fresh: [Key: Tally] = [:]
        let keys = counts.map { count -> IntentKey? in
            guard let country = count.country.map({ try? CountryCode($0) }) ?? .some(nil) else { return nil }
            return IntentKey(PaymentIntent(merchantReference: "-", amount: Money(minorUnits: 0, currency: count.currency), country: country,
                                           method: count.method, action: count.action, cardIIN: count.cardIIN), vocabulary: vocabulary)
        }
        for (number, settings) in rules {
            let limit = Self.seconds(settings.window)
            guard let matcher = matchers[number] else { continue }
            for (count, key) in zip(counts, keys) {
                let age = Self.seconds(count.age)
                guard age <= limit, let key, matcher.matches(key) else { continue }
                let weight = Double(count.count) * exp2(-max(age, 0) / settings.halfLifeSeconds)
                let segment = SegmentKey(dimensions: settings.segmentBy, method: count.method, currency: count.currency, country: count.country,
                                         cardIIN: count.cardIIN)
                for key in [Key(rule: number, segment: segment, gateway: count.gateway), Key(rule: number, segment: nil, gateway: count.gateway)] {
                    var tally = fresh[key] ?? Tally(at: now)
                    if count.approved { tally.approved += weight } else { tally.declined += weight }
                    fresh[key] = tally
                }
            }
        }
        table.withLock { $0 = fresh }
    }

    /// What the router needs of one gateway: its score, its outcomes in the segment (decayed), and its prior.
    public struct Score: Sendable, Hashable {
        public var gateway: GatewayID
        /// The approval rate the order follows: the segment's outcomes with `priorStrength` pseudo-outcomes at `prior`.
        public var rate: Double
        /// The segment's outcomes, weighed by age.
        public var samples: Double
        public var approved: Double
        /// The gateway's approval rate over every segment (0.5 with no outcome at all).
        public var prior: Double
        /// The rate's standard error, `√(rate × (1 − rate) ÷ (samples + priorStrength))`.
        public var standardError: Double

        /// Whether this gateway is known to be worse than `leader`: even two standard errors above its rate is below the
        /// leader's rate. Such a gateway is sent at most the exploration share of payments.
        public func isKnownWorse(than leader: Score) -> Bool { rate + 2 * standardError < leader.rate }
    }

    /// The scores of `gateways` in `segment` for learning rule `rule`, now.
    public func scores(of gateways: [GatewayID], segment: SegmentKey, rule: Int) -> [Score] {
        guard let settings = rules[rule] else {
            return gateways.map { Score(gateway: $0, rate: 0.5, samples: 0, approved: 0, prior: 0.5, standardError: 0.5) }
        }
        let now = seconds
        let halfLife = settings.halfLifeSeconds
        return table.withLock { table in
            gateways.map { gateway in
                let all = table[Key(rule: rule, segment: nil, gateway: gateway)]?.decayed(to: now, halfLife: halfLife) ?? Tally()
                let here = table[Key(rule: rule, segment: segment, gateway: gateway)]?.decayed(to: now, halfLife: halfLife) ?? Tally()
                let total = all.approved + all.declined
                let prior = total > 0 ? all.approved / total : 0.5
                let samples = here.approved + here.declined
                let weight = samples + settings.priorStrength
                guard weight > 0 else { return Score(gateway: gateway, rate: prior, samples: 0, approved: 0, prior: prior, standardError: 0.5) }
                let rate = (here.approved + settings.priorStrength * prior) / weight
                return Score(gateway: gateway, rate: rate, samples: samples, approved: here.approved, prior: prior,
                             standardError: (rate * (1 - rate) / weight).squareRoot())
            }
        }
    }
}
