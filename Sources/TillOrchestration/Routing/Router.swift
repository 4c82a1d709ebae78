import Foundation
import Till

/// Picks the ordered list of gateways to try for one payment.
///
/// Steps, in order:
/// 1. **Eligibility**: enabled gateways whose capabilities (the module's, narrowed by the merchant's
///    limits) accept the payment's method, currency, country and action.
/// 2. **Rules**: the first rule whose conditions all hold. A rule with weights draws one gateway by
///    weight and puts it first, the others after it by descending weight; a rule that learns
///    (``SuccessRateRouting``) orders its gateways by their scores; any other rule is a priority list.
/// 3. **Fallback**: the merchant's default fallback list is appended; duplicates are dropped.
/// 4. **Health**: a stable reordering — healthy, then degraded (low success rate), then open
///    circuits last. Nothing is dropped for health: if only an open circuit remains, it is tried.
///
/// Deterministic given the random generator's seed.
public struct GatewayRouter: Sendable {
    public let merchant: MerchantConfiguration
    /// Effective capabilities per configured gateway.
    public let capabilities: [GatewayID: GatewayCapabilities]

    /// The most gateways one merchant may configure (eligibility is a 64-bit mask).
    public static let maxGateways = 64

    private let gatewayIDs: [GatewayID]
    private let gatewayCapabilities: [GatewayCapabilities]
    private let fastCapabilities: [FastCapabilities]
    private let enabledMask: UInt64
    private let rules: [CompiledRule]
    private let fallback: [Int]
    private let vocabulary: Vocabulary

    /// - Parameter modules: the declared capabilities of each gateway *module*, by module name.
    /// - Throws: ``ConfigurationError`` with every problem when the merchant's configuration is invalid.
    public init(merchant: MerchantConfiguration, modules: [String: GatewayCapabilities]) throws(ConfigurationError) {
        var issues = merchant.validate(path: "merchant", modules: modules)
        if merchant.gateways.count > Self.maxGateways {
            issues.append(.init(field: "merchant.gateways", code: .fieldTooLong, message: "at most \(Self.maxGateways) gateways"))
        }
        guard issues.isEmpty else { throw ConfigurationError(issues: issues) }
        self.merchant = merchant
        gatewayIDs = merchant.gateways.map(\.id)
        gatewayCapabilities = merchant.gateways.map { $0.capabilities(module: modules[$0.module]!) }
        capabilities = Dictionary(uniqueKeysWithValues: zip(gatewayIDs, gatewayCapabilities))
        var mask: UInt64 = 0
        for (i, gateway) in merchant.gateways.enumerated() where gateway.enabled { mask |= 1 << UInt64(i) }
        enabledMask = mask
        let index = Dictionary(uniqueKeysWithValues: gatewayIDs.enumerated().map { ($1, $0) })
        let vocabulary = Vocabulary(rules: merchant.routing.rules, capabilities: gatewayCapabilities)
        self.vocabulary = vocabulary
        fastCapabilities = gatewayCapabilities.map { FastCapabilities($0, vocabulary: vocabulary) }
        rules = merchant.routing.rules.enumerated().map { CompiledRule($1, number: $0 + 1, gatewayIndex: index, vocabulary: vocabulary) }
        fallback = (merchant.routing.fallback ?? merchant.enabledGateways.map(\.id)).compactMap { index[$0] }
    }

    /// Why no enabled gateway of this merchant can ever take `intent`, or nil when one can (health aside).
    ///
    /// Asked when a payment is created, so a payment no gateway could take is refused before it is stored,
    /// instead of failing at its first prepare as `no_gateway_left` with its merchant reference spent. The issue
    /// names the first field that rules every gateway out, in the order method, currency, country, action, and
    /// lists what the merchant's gateways do take there (`body.method: no gateway of this merchant takes
    /// "wechat"; they take: alipay, card, wechatpay`).
    public func eligibilityIssue(for intent: PaymentIntent, path: String) -> ValidationIssue? {
        // The router itself decides (health aside): a payment it would offer to any gateway passes.
        var generator = SeededGenerator(seed: 0)
        guard route(intent, using: &generator).candidates.isEmpty else { return nil }
        let enabled = gatewayIDs.indices.filter { enabledMask & (1 << UInt64($0)) != 0 }.map { gatewayCapabilities[$0] }
        let byMethod = enabled.filter { $0.methods.contains(intent.method) }
        guard !byMethod.isEmpty else {
            let methods = Set(enabled.flatMap(\.methods)).map(\.rawValue).sorted()
            return ValidationIssue(field: "\(path).method", code: .unsupportedMethod,
                                   message: "no gateway of this merchant takes \"\(CheckoutError.printable(intent.method.rawValue))\"; they take: "
                                    + methods.joined(separator: ", "))
        }
        let byCurrency = byMethod.filter { $0.currencies?.contains(intent.amount.currency) ?? true }
        guard !byCurrency.isEmpty else {
            return ValidationIssue(field: "\(path).amount.currency", code: .unsupportedCurrency,
                                   message: "no gateway of this merchant that takes \(intent.method.rawValue) takes \(intent.amount.currency.code)")
        }
        let byCountry = byCurrency.filter { capabilities in
            guard let countries = capabilities.countries else { return true }
            return intent.country.map(countries.contains) ?? false
        }
        guard !byCountry.isEmpty else {
            return ValidationIssue(field: "\(path).country", code: intent.country == nil ? .missingField : .invalidCountry,
                                   message: intent.country == nil ? "the gateways that take this payment need the customer's country"
                                    : "no gateway of this merchant that takes this payment serves \(intent.country!.code)")
        }
        guard !byCountry.contains(where: { $0.actions.contains(intent.action) }) else {
            // A gateway could take it, but none the routing offers it to (its rules' targets and fallback list).
            return ValidationIssue(field: path, code: "not_routable",
                                   message: "a gateway of this merchant could take this payment, but neither a matching rule nor the fallback list names one")
        }
        let actions = Set(byCountry.flatMap(\.actions)).map(\.rawValue).sorted()
        return ValidationIssue(field: "\(path).action", code: .unsupportedAction,
                               message: "no gateway of this merchant that takes this payment can \(intent.action.rawValue); they can: "
                                + actions.joined(separator: ", "))
    }

    /// Routes one payment.
    ///
    /// - Parameters:
    ///   - health: live health; without it every gateway counts as healthy.
    ///   - explain: also record why each gateway is where it is (slower; for `till route`).
    ///   - scores: recent approval rates, for the rules that learn (``SuccessRateRouting``); without them such a rule keeps
    ///     its listed order.
    public func route<G: RandomNumberGenerator>(_ intent: PaymentIntent, health: HealthMonitor? = nil, scores: SuccessRateScores? = nil,
                                                using generator: inout G, explain: Bool = false) -> RoutingDecision {
        var notes: [RoutingDecision.Note] = []
        let key = IntentKey(intent, vocabulary: vocabulary)

        // 1. Eligibility, as a bit mask over the configured gateways.
        var eligible: UInt64 = 0
        for i in gatewayIDs.indices {
            let bit: UInt64 = 1 << UInt64(i)
            guard enabledMask & bit != 0 else {
                if explain { notes.append(.skipped(gatewayIDs[i], reasons: ["disabled"])) }
                continue
            }
            if fastCapabilities[i].accepts(key) { eligible |= bit }
            if explain {
                let reasons = gatewayCapabilities[i].ineligibility(for: intent)
                if !reasons.isEmpty { notes.append(.skipped(gatewayIDs[i], reasons: reasons)) }
            }
        }

        // 2. First matching rule.
        var candidates: [GatewayID] = []
        candidates.reserveCapacity(gatewayIDs.count)
        var used: UInt64 = 0
        func add(_ i: Int) {
            used |= 1 << UInt64(i)
            candidates.append(gatewayIDs[i])
        }
        func isEligible(_ i: Int) -> Bool { eligible & (1 << UInt64(i)) != 0 }
        var matchedRule: Int?
        for rule in rules {
            guard rule.matches(key) else {
                if explain { notes.append(.ruleNotMatched(rule.number, rule.name, reason: rule.mismatch(key, intent) ?? "no match")) }
                continue
            }
            matchedRule = rule.number
            if explain {
                notes.append(.ruleMatched(rule.number, rule.name))
                for target in rule.targets where !isEligible(target.gateway) {
                    notes.append(.ruleTargetSkipped(gatewayIDs[target.gateway], rule: rule.number, reason: "not eligible"))
                }
            }
            if let learning = rule.successRate, let scores {
                var seen: UInt64 = used
                let listed = rule.targets.map(\.gateway).filter { i in
                    // Each eligible gateway once, in the listed order (a list may name one twice).
                    defer { seen |= 1 << UInt64(i) }
                    return isEligible(i) && seen & (1 << UInt64(i)) == 0
                }
                let learned = Self.learnedOrder(listed.map { gatewayIDs[$0] }, indices: listed, intent: intent, rule: rule.number,
                                                settings: learning, scores: scores, generator: &generator, explain: explain)
                for i in learned.order { add(i) }
                notes += learned.notes
            } else if rule.weighted {
                var total = 0
                for target in rule.targets where target.weight > 0 && isEligible(target.gateway) { total += target.weight }
                if total > 0 {
                    let draw = Int(generator.next(upperBound: UInt64(total)))
                    var cumulative = 0
                    for target in rule.targets where target.weight > 0 && isEligible(target.gateway) {
                        cumulative += target.weight
                        if draw < cumulative {
                            add(target.gateway)
                            if explain { notes.append(.weightDrawn(gatewayIDs[target.gateway], weight: target.weight, total: total, draw: draw)) }
                            break
                        }
                    }
                    // The rest by descending weight: `targets` is sorted that way (stable).
                    for target in rule.targets where target.weight > 0 && isEligible(target.gateway) && used & (1 << UInt64(target.gateway)) == 0 {
                        add(target.gateway)
                        if explain { notes.append(.splitFallback(gatewayIDs[target.gateway], weight: target.weight)) }
                    }
                }
            } else {
                for target in rule.targets where isEligible(target.gateway) && used & (1 << UInt64(target.gateway)) == 0 {
                    add(target.gateway)
                    if explain { notes.append(.rulePriority(gatewayIDs[target.gateway], rule: rule.number)) }
                }
            }
            break
        }

        // 3. Default fallback list.
        for i in fallback where isEligible(i) {
            if used & (1 << UInt64(i)) != 0 {
                if explain { notes.append(.duplicateDropped(gatewayIDs[i])) }
            } else {
                add(i)
                if explain { notes.append(.defaultFallback(gatewayIDs[i])) }
            }
        }

        // 4. Health: stable partition by tier.
        if let health, candidates.count > 1 {
            let tiers = health.tiers(of: candidates)
            if tiers.contains(where: { $0 != .healthy }) {
                if explain {
                    for (gateway, tier) in zip(candidates, tiers) where tier != .healthy {
                        notes.append(.demoted(gateway, reason: "\(tier == .open ? "circuit open" : "low success rate"): \(health.summary(of: gateway))"))
                    }
                }
                candidates = zip(candidates, tiers).enumerated()
                    .sorted { ($0.element.1, $0.offset) < ($1.element.1, $1.offset) }
                    .map(\.element.0)
            }
        }
        return RoutingDecision(candidates: candidates, matchedRule: matchedRule, notes: notes)
    }
}

extension GatewayRouter {
    /// A learning rule's gateways in order: the best-scored first, or, for a share `exploration` of payments, another
    /// one (one short of `minSamples` outcomes when there is one), then the rest by score. Ties keep the listed order.
    static func learnedOrder<G: RandomNumberGenerator>(_ gateways: [GatewayID], indices: [Int], intent: PaymentIntent, rule: Int,
                                                       settings: SuccessRateRouting, scores: SuccessRateScores, generator: inout G,
                                                       explain: Bool) -> (order: [Int], notes: [RoutingDecision.Note]) {
        guard gateways.count > 1 || explain else { return (indices, []) }
        let scored = scores.scores(of: gateways, segment: SegmentKey(intent, dimensions: settings.segmentBy), rule: rule)
        // By descending score; the listed order breaks ties (a cold start keeps the configuration's order).
        var order = Array(scored.indices).sorted { (scored[$1].rate, $0) < (scored[$0].rate, $1) }
        var explored: Int?
        if order.count > 1, settings.exploration > 0, generator.next(upperBound: 1_000_000) < UInt64(settings.exploration * 1_000_000) {
            let others = order.dropFirst()
            let unproven = others.filter { scored[$0].samples < settings.minSamples }
            let pool = unproven.isEmpty ? Array(others) : unproven
            let pick = pool[Int(generator.next(upperBound: UInt64(pool.count)))]
            order.removeAll { $0 == pick }
            order.insert(pick, at: 0)
            explored = pick
        }
        var notes: [RoutingDecision.Note] = []
        if explain, !order.isEmpty {
            let leader = explored == nil || order.count < 2 ? order[0] : order[1]
            for position in order {
                let score = scored[position]
                let why = position == explored ? "explored (a share of \(settings.exploration) of payments goes to another gateway)"
                    : position == leader ? "best score" : score.isKnownWorse(than: scored[leader]) ? "known to be worse" : "lower score"
                notes.append(.scored(score.gateway, rule: rule, rate: score.rate, standardError: score.standardError, samples: score.samples,
                                     prior: score.prior, why: why))
            }
        }
        return (order.map { indices[$0] }, notes)
    }
}

/// The router's output: the candidates in order, and (when explained) why.
public struct RoutingDecision: Sendable, Hashable {
    public var candidates: [GatewayID]
    /// The 1-based number of the rule that matched, if any.
    public var matchedRule: Int?
    public var notes: [Note]

    public enum Note: Sendable, Hashable, CustomStringConvertible {
        case skipped(GatewayID, reasons: [String])
        case ruleNotMatched(Int, String?, reason: String)
        case ruleMatched(Int, String?)
        case ruleTargetSkipped(GatewayID, rule: Int, reason: String)
        case weightDrawn(GatewayID, weight: Int, total: Int, draw: Int)
        case splitFallback(GatewayID, weight: Int)
        case rulePriority(GatewayID, rule: Int)
        case defaultFallback(GatewayID)
        case duplicateDropped(GatewayID)
        case demoted(GatewayID, reason: String)
        /// A learning rule's score for the gateway: its approval rate (with the prior), its outcomes in the segment, its
        /// rate over every segment, and why it is where it is.
        case scored(GatewayID, rule: Int, rate: Double, standardError: Double, samples: Double, prior: Double, why: String)

        static func percent(_ value: Double) -> String { String(format: "%.1f %%", value * 100) }
        static func count(_ value: Double) -> String { String(format: "%.1f", value) }

        static func rule(_ number: Int, _ name: String?) -> String {
            name.map { "rule #\(number) \"\($0)\"" } ?? "rule #\(number)"
        }

        public var description: String {
            switch self {
            case .skipped(let g, let reasons): "\(g): skipped — \(reasons.joined(separator: "; "))"
            case .ruleNotMatched(let n, let name, let reason): "\(Self.rule(n, name)) not matched — \(reason)"
            case .ruleMatched(let n, let name): "\(Self.rule(n, name)) matched"
            case .ruleTargetSkipped(let g, let n, let reason): "\(g): in rule #\(n) but \(reason)"
            case .weightDrawn(let g, let w, let total, let draw): "\(g): drawn by weight \(w) of \(total) (draw \(draw))"
            case .splitFallback(let g, let w): "\(g): kept as a split fallback (weight \(w))"
            case .rulePriority(let g, let n): "\(g): listed by rule #\(n)"
            case .defaultFallback(let g): "\(g): from the default fallback list"
            case .duplicateDropped(let g): "\(g): already listed, fallback duplicate dropped"
            case .demoted(let g, let reason): "\(g): moved back — \(reason)"
            case .scored(let g, let n, let rate, let error, let samples, let prior, let why):
                "\(g): rule #\(n) score \(Self.percent(rate)) ± \(Self.percent(error)) from \(Self.count(samples)) recent outcomes in this segment (\(Self.percent(prior)) over all) — \(why)"
            }
        }
    }

    /// The notes about one gateway.
    public func notes(about gateway: GatewayID) -> [Note] {
        notes.filter {
            switch $0 {
            case .skipped(let g, _), .ruleTargetSkipped(let g, _, _), .weightDrawn(let g, _, _, _), .splitFallback(let g, _),
                 .rulePriority(let g, _), .defaultFallback(let g), .duplicateDropped(let g), .demoted(let g, _), .scored(let g, _, _, _, _, _, _):
                g == gateway
            case .ruleMatched, .ruleNotMatched: false
            }
        }
    }
}

// MARK: - Compiled rules

/// A fixed-size bit set for small integer keys (method indices, ISO numeric codes, country indices).
struct BitSet: Sendable {
    private var words: [UInt64]
    init(capacity: Int) { words = Array(repeating: 0, count: (capacity + 63) / 64) }
    mutating func insert(_ value: Int) { words[value >> 6] |= 1 << UInt64(value & 63) }
    func contains(_ value: Int) -> Bool {
        let word = value >> 6
        return word >= 0 && word < words.count && words[word] & (1 << UInt64(value & 63)) != 0
    }
}

/// Small-integer indices for everything rules and capabilities compare, fixed when the router is built.
struct Vocabulary: Sendable {
    let methods: [PaymentMethod: Int]
    let metadataKeys: [String]

    init(rules: [RoutingRule], capabilities: [GatewayCapabilities]) {
        var methods: [PaymentMethod: Int] = [:]
        for method in rules.flatMap({ $0.when.methods ?? [] }) + capabilities.flatMap({ $0.methods.sorted() })
        where methods[method] == nil {
            methods[method] = methods.count
        }
        self.methods = methods
        metadataKeys = Array(Set(rules.flatMap { ($0.when.metadata ?? [:]).keys })).sorted()
    }
}

/// The intent reduced to small integers once per routing call.
struct IntentKey {
    let method: Int
    let currency: Int
    let country: Int
    let action: UInt8
    let amount: Int64
    /// The card IIN as a number and its digit count (0 when absent or malformed).
    let iin: Int
    let iinDigits: Int
    /// The intent's values for the vocabulary's metadata keys.
    let metadata: [String?]

    init(_ intent: PaymentIntent, vocabulary: Vocabulary) {
        method = vocabulary.methods[intent.method] ?? -1
        currency = intent.amount.currency.numeric
        country = intent.country.map { CountryIndex.of($0.code) } ?? -1
        action = ActionBits.of(intent.action)
        amount = intent.amount.minorUnits
        var value = 0, digits = 0
        for byte in (intent.cardIIN ?? "").utf8.prefix(8) {
            guard byte >= 48, byte <= 57 else { value = 0; digits = 0; break }
            value = value * 10 + Int(byte - 48)
            digits += 1
        }
        iin = value
        iinDigits = digits
        metadata = vocabulary.metadataKeys.isEmpty ? [] : vocabulary.metadataKeys.map { intent.metadata[$0] }
    }

    static let powersOfTen: [Int] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]

    /// The first `digits` digits of the IIN, or nil when it is shorter.
    func iinPrefix(_ digits: Int) -> Int? {
        iinDigits >= digits ? iin / Self.powersOfTen[iinDigits - digits] : nil
    }
}

enum CountryIndex {
    static func of(_ code: String) -> Int {
        let u = Array(code.utf8)
        guard u.count == 2 else { return -1 }
        return Int(u[0] &- 65) * 26 + Int(u[1] &- 65)
    }
}

enum ActionBits {
    static func of(_ action: PaymentAction) -> UInt8 {
        switch action {
        case .sale: 1
        case .authorize: 2
        case .verify: 4
        }
    }
    static func of(_ actions: some Sequence<PaymentAction>) -> UInt8 { actions.reduce(0) { $0 | of($1) } }
}

/// A gateway's capabilities as bit sets over the vocabulary.
struct FastCapabilities: Sendable {
    let methods: BitSet
    let currencies: BitSet?
    let countries: BitSet?
    let actions: UInt8

    init(_ capabilities: GatewayCapabilities, vocabulary: Vocabulary) {
        var methods = BitSet(capacity: max(vocabulary.methods.count, 1))
        for method in capabilities.methods { if let i = vocabulary.methods[method] { methods.insert(i) } }
        self.methods = methods
        currencies = capabilities.currencies.map { list in
            var set = BitSet(capacity: 1000)
            for currency in list { set.insert(currency.numeric) }
            return set
        }
        countries = capabilities.countries.map { list in
            var set = BitSet(capacity: 26 * 26)
            for country in list { set.insert(CountryIndex.of(country.code)) }
            return set
        }
        actions = ActionBits.of(capabilities.actions)
    }

    func accepts(_ key: IntentKey) -> Bool {
        methods.contains(key.method)
            && (currencies?.contains(key.currency) ?? true)
            && (countries?.contains(key.country) ?? true)
            && actions & key.action != 0
    }
}

struct CompiledRule: Sendable {
    struct Target: Sendable { let gateway: Int; let weight: Int }
    let number: Int
    let name: String?
    let methods: BitSet?
    let currencies: BitSet?
    let countries: BitSet?
    let amount: (currency: Int, min: Int64?, max: Int64?)?
    let iin: [(from: Int, to: Int, digits: Int)]?
    let metadata: [(key: Int, name: String, value: String)]
    let actions: UInt8?
    let targets: [Target]
    let weighted: Bool
    let source: RuleConditions
    /// The rule learns: its targets are ordered by ``SuccessRateScores``.
    let successRate: SuccessRateRouting?

    init(_ rule: RoutingRule, number: Int, gatewayIndex: [GatewayID: Int], vocabulary: Vocabulary) {
        self.number = number
        name = rule.name
        source = rule.when
        methods = rule.when.methods.map { list in
            var set = BitSet(capacity: max(vocabulary.methods.count, 1))
            for method in list { set.insert(vocabulary.methods[method]!) }
            return set
        }
        currencies = rule.when.currencies.map { list in
            var set = BitSet(capacity: 1000)
            for code in list { if let c = Currency.lookup(code) { set.insert(c.numeric) } }
            return set
        }
        countries = rule.when.countries.map { list in
            var set = BitSet(capacity: 26 * 26)
            for code in list { set.insert(CountryIndex.of(code)) }
            return set
        }
        amount = rule.when.amount?.bounds().map { ($0.currency.numeric, $0.min, $0.max) }
        iin = rule.when.cardIIN?.map { (Int($0.from)!, Int($0.to)!, $0.from.count) }
        metadata = (rule.when.metadata ?? [:]).sorted { $0.key < $1.key }
            .map { (vocabulary.metadataKeys.firstIndex(of: $0.key)!, $0.key, $0.value) }
        actions = rule.when.actions.map { ActionBits.of($0) }
        weighted = rule.gateways.contains { $0.weight != nil }
        successRate = rule.successRate
        // Weighted targets sorted by descending weight (stable), so fallbacks come out in weight order.
        let targets = rule.gateways.compactMap { target in gatewayIndex[target.id].map { Target(gateway: $0, weight: target.weight ?? 0) } }
        self.targets = weighted
            ? targets.enumerated().sorted { ($1.element.weight, $0.offset) < ($0.element.weight, $1.offset) }.map(\.element)
            : targets
    }

    func matches(_ key: IntentKey) -> Bool {
        if let methods, !methods.contains(key.method) { return false }
        if let currencies, !currencies.contains(key.currency) { return false }
        if let countries, !countries.contains(key.country) { return false }
        if let actions, actions & key.action == 0 { return false }
        if let amount {
            guard amount.currency == key.currency else { return false }
            if let min = amount.min, key.amount < min { return false }
            if let max = amount.max, key.amount > max { return false }
        }
        if let iin, !iin.contains(where: { range in key.iinPrefix(range.digits).map { $0 >= range.from && $0 <= range.to } ?? false }) {
            return false
        }
        for entry in metadata where key.metadata[entry.key] != entry.value { return false }
        return true
    }

    /// Why the rule did not match (explain mode only).
    func mismatch(_ key: IntentKey, _ intent: PaymentIntent) -> String? {
        if let methods, !methods.contains(key.method) { return "method \(intent.method) not in \(source.methods!.map(\.rawValue))" }
        if let currencies, !currencies.contains(key.currency) { return "currency \(intent.amount.currency.code) not in \(source.currencies!)" }
        if let countries, !countries.contains(key.country) { return "country \(intent.country?.code ?? "none") not in \(source.countries!)" }
        if let actions, actions & key.action == 0 { return "action \(intent.action.rawValue) not in \(source.actions!.map(\.rawValue))" }
        if let range = source.amount, let amount, amount.currency != key.currency || (amount.min.map { key.amount < $0 } ?? false)
            || (amount.max.map { key.amount > $0 } ?? false) {
            return "amount \(intent.amount) outside \(range.min ?? "…")–\(range.max ?? "…") \(range.currency)"
        }
        if let iin, !iin.contains(where: { range in key.iinPrefix(range.digits).map { $0 >= range.from && $0 <= range.to } ?? false }) {
            return "card IIN \(intent.cardIIN ?? "none") outside the rule's ranges"
        }
        for entry in metadata where key.metadata[entry.key] != entry.value {
            return "metadata \(entry.name) is not \"\(entry.value)\""
        }
        return nil
    }
}
