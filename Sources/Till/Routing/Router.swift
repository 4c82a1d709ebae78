import Foundation

/// Picks the ordered list of gateways to try for one payment.
///
/// Steps, in order:
/// 1. **Eligibility**: enabled gateways whose capabilities (the module's, narrowed by the merchant's
///    limits) accept the payment's method, currency, country and action.
/// 2. **Rules**: the first rule whose conditions all hold. A rule with weights draws one gateway by
///    weight and puts it first, the others after it by descending weight; a rule without weights is
///    a priority list.
/// 3. **Fallback**: the merchant's default fallback list is appended; duplicates are dropped.
/// 4. **Health**: a stable reordering — healthy, then degraded (low success rate), then open
///    circuits last. Nothing is dropped for health: if only an open circuit remains, it is tried.
///
/// Deterministic given the random generator's seed.
public struct Router: Sendable {
    public let merchant: MerchantConfiguration
    /// Effective capabilities per configured gateway.
    public let capabilities: [GatewayID: GatewayCapabilities]

    private let gatewayIDs: [GatewayID]
    private let gatewayCapabilities: [GatewayCapabilities]
    private let enabled: [Bool]
    private let rules: [CompiledRule]
    private let fallback: [Int]
    private let methodIndex: [PaymentMethod: Int]

    /// - Parameter modules: the declared capabilities of each gateway *module*, by module name.
    /// - Throws: ``ConfigurationError`` with every problem when the merchant's configuration is invalid.
    public init(merchant: MerchantConfiguration, modules: [String: GatewayCapabilities]) throws(ConfigurationError) {
        let issues = merchant.validate(path: "merchant", modules: modules)
        guard issues.isEmpty else { throw ConfigurationError(issues: issues) }
        self.merchant = merchant
        gatewayIDs = merchant.gateways.map(\.id)
        gatewayCapabilities = merchant.gateways.map { $0.capabilities(module: modules[$0.module]!) }
        capabilities = Dictionary(uniqueKeysWithValues: zip(gatewayIDs, gatewayCapabilities))
        enabled = merchant.gateways.map(\.enabled)
        let index = Dictionary(uniqueKeysWithValues: gatewayIDs.enumerated().map { ($1, $0) })
        var methods: [PaymentMethod: Int] = [:]
        for rule in merchant.routing.rules {
            for method in rule.when.methods ?? [] where methods[method] == nil { methods[method] = methods.count }
        }
        methodIndex = methods
        rules = merchant.routing.rules.enumerated().map { CompiledRule($1, number: $0 + 1, gatewayIndex: index, methodIndex: methods) }
        fallback = (merchant.routing.fallback ?? merchant.enabledGateways.map(\.id)).compactMap { index[$0] }
    }

    /// Routes one payment.
    ///
    /// - Parameters:
    ///   - health: live health; without it every gateway counts as healthy.
    ///   - explain: also record why each gateway is where it is (slower; for `till route`).
    public func route<G: RandomNumberGenerator>(_ intent: PaymentIntent, health: HealthMonitor? = nil,
                                                using generator: inout G, explain: Bool = false) -> RoutingDecision {
        var notes: [RoutingDecision.Note] = []
        // 1. Eligibility.
        var eligible = [Bool](repeating: false, count: gatewayIDs.count)
        for i in gatewayIDs.indices {
            guard enabled[i] else {
                if explain { notes.append(.skipped(gatewayIDs[i], reasons: ["disabled"])) }
                continue
            }
            if explain {
                let reasons = gatewayCapabilities[i].ineligibility(for: intent)
                eligible[i] = reasons.isEmpty
                if !reasons.isEmpty { notes.append(.skipped(gatewayIDs[i], reasons: reasons)) }
            } else {
                eligible[i] = gatewayCapabilities[i].accepts(intent)
            }
        }

        // 2. First matching rule.
        var order: [Int] = []
        order.reserveCapacity(gatewayIDs.count)
        let key = IntentKey(intent, methodIndex: methodIndex)
        var matchedRule: Int?
        for rule in rules {
            guard rule.matches(key, intent) else {
                if explain { notes.append(.ruleNotMatched(rule.number, rule.name, reason: rule.mismatch(key, intent) ?? "no match")) }
                continue
            }
            matchedRule = rule.number
            if explain { notes.append(.ruleMatched(rule.number, rule.name)) }
            let targets = rule.targets.filter { eligible[$0.gateway] && (!rule.weighted || $0.weight > 0) }
            if explain {
                for target in rule.targets where !eligible[target.gateway] {
                    notes.append(.ruleTargetSkipped(gatewayIDs[target.gateway], rule: rule.number, reason: "not eligible"))
                }
            }
            if rule.weighted, !targets.isEmpty {
                let total = targets.reduce(0) { $0 + $1.weight }
                let draw = Int(generator.next(upperBound: UInt64(total)))
                var cumulative = 0
                var chosen = targets[0]
                for target in targets {
                    cumulative += target.weight
                    if draw < cumulative { chosen = target; break }
                }
                order.append(chosen.gateway)
                if explain { notes.append(.weightDrawn(gatewayIDs[chosen.gateway], weight: chosen.weight, total: total, draw: draw)) }
                // The rest by descending weight; `targets` is already sorted that way (stable).
                for target in targets where target.gateway != chosen.gateway {
                    order.append(target.gateway)
                    if explain { notes.append(.splitFallback(gatewayIDs[target.gateway], weight: target.weight)) }
                }
            } else {
                for target in targets {
                    order.append(target.gateway)
                    if explain { notes.append(.rulePriority(gatewayIDs[target.gateway], rule: rule.number)) }
                }
            }
            break
        }

        // 3. Default fallback list.
        for i in fallback where eligible[i] {
            if order.contains(i) {
                if explain { notes.append(.duplicateDropped(gatewayIDs[i])) }
            } else {
                order.append(i)
                if explain { notes.append(.defaultFallback(gatewayIDs[i])) }
            }
        }

        // 4. Health: stable partition by tier.
        var candidates = order.map { gatewayIDs[$0] }
        if let health, candidates.count > 1 {
            let tiers = candidates.map { health.tier(of: $0) }
            if tiers.contains(where: { $0 != .healthy }) {
                candidates = zip(candidates, tiers).enumerated()
                    .sorted { ($0.element.1, $0.offset) < ($1.element.1, $1.offset) }
                    .map(\.element.0)
                if explain {
                    for (gateway, tier) in zip(order.map { gatewayIDs[$0] }, tiers) where tier != .healthy {
                        notes.append(.demoted(gateway, reason: "\(tier == .open ? "circuit open" : "low success rate"): \(health.summary(of: gateway))"))
                    }
                }
            }
        }
        return RoutingDecision(candidates: candidates, matchedRule: matchedRule, notes: notes)
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
            }
        }
    }

    /// The notes about one gateway.
    public func notes(about gateway: GatewayID) -> [Note] {
        notes.filter {
            switch $0 {
            case .skipped(let g, _), .ruleTargetSkipped(let g, _, _), .weightDrawn(let g, _, _, _), .splitFallback(let g, _),
                 .rulePriority(let g, _), .defaultFallback(let g), .duplicateDropped(let g), .demoted(let g, _): g == gateway
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

/// The intent reduced to small integers once per routing call.
struct IntentKey {
    let method: Int
    let currency: Int
    let country: Int
    let iin: String?

    init(_ intent: PaymentIntent, methodIndex: [PaymentMethod: Int]) {
        method = methodIndex[intent.method] ?? -1
        currency = intent.amount.currency.numeric
        country = intent.country.map { CountryIndex.of($0.code) } ?? -1
        iin = intent.cardIIN
    }
}

enum CountryIndex {
    static func of(_ code: String) -> Int {
        let u = Array(code.utf8)
        guard u.count == 2 else { return -1 }
        return Int(u[0] &- 65) * 26 + Int(u[1] &- 65)
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
    let metadata: [(String, String)]
    let actions: Set<PaymentAction>?
    let targets: [Target]
    let weighted: Bool
    let source: RuleConditions

    init(_ rule: RoutingRule, number: Int, gatewayIndex: [GatewayID: Int], methodIndex: [PaymentMethod: Int]) {
        self.number = number
        name = rule.name
        source = rule.when
        methods = rule.when.methods.map { list in
            var set = BitSet(capacity: max(methodIndex.count, 1))
            for method in list { set.insert(methodIndex[method]!) }
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
        actions = rule.when.actions.map(Set.init)
        weighted = rule.gateways.contains { $0.weight != nil }
        // Weighted targets sorted by descending weight (stable), so fallbacks come out in weight order.
        let targets = rule.gateways.compactMap { target in gatewayIndex[target.id].map { Target(gateway: $0, weight: target.weight ?? 0) } }
        self.targets = weighted
            ? targets.enumerated().sorted { ($1.element.weight, $0.offset) < ($0.element.weight, $1.offset) }.map(\.element)
            : targets
    }

    func matches(_ key: IntentKey, _ intent: PaymentIntent) -> Bool {
        if let methods, !methods.contains(key.method) { return false }
        if let currencies, !currencies.contains(key.currency) { return false }
        if let countries, !countries.contains(key.country) { return false }
        if let actions, !actions.contains(intent.action) { return false }
        if let amount {
            guard amount.currency == key.currency else { return false }
            let value = intent.amount.minorUnits
            if let min = amount.min, value < min { return false }
            if let max = amount.max, value > max { return false }
        }
        if let iin {
            guard let cardIIN = key.iin else { return false }
            var inRange = false
            for range in iin where cardIIN.count >= range.digits {
                if let prefix = Int(cardIIN.prefix(range.digits)), prefix >= range.from, prefix <= range.to { inRange = true; break }
            }
            if !inRange { return false }
        }
        for (k, v) in metadata where intent.metadata[k] != v { return false }
        return true
    }

    /// Why the rule did not match (explain mode only).
    func mismatch(_ key: IntentKey, _ intent: PaymentIntent) -> String? {
        if let methods, !methods.contains(key.method) { return "method \(intent.method) not in \(source.methods!.map(\.rawValue))" }
        if let currencies, !currencies.contains(key.currency) { return "currency \(intent.amount.currency.code) not in \(source.currencies!)" }
        if let countries, !countries.contains(key.country) { return "country \(intent.country?.code ?? "none") not in \(source.countries!)" }
        if let actions, !actions.contains(intent.action) { return "action \(intent.action.rawValue) not in \(source.actions!.map(\.rawValue))" }
        if let range = source.amount, let amount, amount.currency != key.currency || (amount.min.map { intent.amount.minorUnits < $0 } ?? false)
            || (amount.max.map { intent.amount.minorUnits > $0 } ?? false) {
            return "amount \(intent.amount) outside \(range.min ?? "…")–\(range.max ?? "…") \(range.currency)"
        }
        if source.cardIIN != nil, !matchesIIN(key) { return "card IIN \(intent.cardIIN ?? "none") outside the rule's ranges" }
        for (k, v) in metadata where intent.metadata[k] != v { return "metadata \(k) is not \"\(v)\"" }
        return nil
    }

    private func matchesIIN(_ key: IntentKey) -> Bool {
        guard let iin, let cardIIN = key.iin else { return false }
        return iin.contains { range in
            cardIIN.count >= range.digits && (Int(cardIIN.prefix(range.digits)).map { $0 >= range.from && $0 <= range.to } ?? false)
        }
    }
}

extension GatewayCapabilities {
    /// ``ineligibility(for:)`` without building strings: the router's hot path.
    func accepts(_ intent: PaymentIntent) -> Bool {
        methods.contains(intent.method)
            && (currencies?.contains(intent.amount.currency) ?? true)
            && (countries.map { list in intent.country.map { list.contains($0) } ?? false } ?? true)
            && actions.contains(intent.action)
    }
}
