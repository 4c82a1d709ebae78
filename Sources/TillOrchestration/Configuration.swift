import Foundation
import Till

/// One merchant: its gateways, routing, retry policy and health settings.
public struct MerchantConfiguration: Sendable, Hashable, Codable {
    public var id: String
    /// Where the merchant server reads this merchant's API key (its backend sends it as a bearer token): the
    /// one-key form, a key with the id `default` and the full scope. ``apiKeys`` is the form with several.
    public var apiKey: CredentialReference?
    /// The merchant's API keys, each with an id, a scope and an optional expiry (instead of ``apiKey``).
    public var apiKeys: [APIKeyConfiguration]
    /// Requests per second per API key and per client secret.
    public var rateLimits: MerchantRateLimits
    public var gateways: [GatewayConfiguration]
    public var routing: RoutingConfiguration
    public var retry: RetryPolicy
    public var health: HealthSettings
    /// The largest amount a payment may ask for, per currency (ISO 4217 code → minor units). A payment
    /// above its currency's ceiling is refused before anything is stored; a currency not listed has none.
    public var maxAmounts: [String: Int64]
    /// The custom URL schemes this merchant's apps registered (`["tillshop"]`), lower-cased. An offered
    /// return URL must be `https` with a host or use one of these (``ReturnURLRule``).
    public var returnURLSchemes: [String]
    /// Accept plain `http` return URLs to `127.0.0.1` or `localhost` (sandbox and test use only).
    public var allowLoopbackHTTPReturnURLs: Bool
    /// Where the merchant server posts this merchant's events (each event to every endpoint), signed with each
    /// endpoint's secret.
    public var webhooks: [WebhookEndpoint]

    public init(id: String, apiKey: CredentialReference? = nil, gateways: [GatewayConfiguration],
                routing: RoutingConfiguration = RoutingConfiguration(),
                retry: RetryPolicy = RetryPolicy(), health: HealthSettings = HealthSettings(), maxAmounts: [String: Int64] = [:],
                returnURLSchemes: [String] = [], allowLoopbackHTTPReturnURLs: Bool = false, webhooks: [WebhookEndpoint] = [],
                apiKeys: [APIKeyConfiguration] = [], rateLimits: MerchantRateLimits = MerchantRateLimits()) {
        self.webhooks = webhooks
        self.apiKeys = apiKeys
        self.rateLimits = rateLimits
        self.id = id
        self.apiKey = apiKey
        self.gateways = gateways
        self.routing = routing
        self.retry = retry
        self.health = health
        self.maxAmounts = maxAmounts
        self.returnURLSchemes = returnURLSchemes.map { $0.lowercased() }
        self.allowLoopbackHTTPReturnURLs = allowLoopbackHTTPReturnURLs
    }

    /// The ceiling for `currency`, when the merchant set one.
    public func maxAmount(for currency: Currency) -> Money? {
        maxAmounts[currency.code].map { Money(minorUnits: $0, currency: currency) }
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case id, apiKey, apiKeys, rateLimits, gateways, routing, retry, health, maxAmounts, returnURLSchemes, allowLoopbackHTTPReturnURLs, webhooks
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        apiKey = try c.decodeIfPresent(CredentialReference.self, forKey: .apiKey)
        apiKeys = try c.decodeIfPresent([APIKeyConfiguration].self, forKey: .apiKeys) ?? []
        rateLimits = try c.decodeIfPresent(MerchantRateLimits.self, forKey: .rateLimits) ?? MerchantRateLimits()
        gateways = try c.decode([GatewayConfiguration].self, forKey: .gateways)
        routing = try c.decodeIfPresent(RoutingConfiguration.self, forKey: .routing) ?? RoutingConfiguration()
        retry = try c.decodeIfPresent(RetryPolicy.self, forKey: .retry) ?? RetryPolicy()
        health = try c.decodeIfPresent(HealthSettings.self, forKey: .health) ?? HealthSettings()
        maxAmounts = try c.decodeIfPresent([String: Int64].self, forKey: .maxAmounts) ?? [:]
        returnURLSchemes = (try c.decodeIfPresent([String].self, forKey: .returnURLSchemes) ?? []).map { $0.lowercased() }
        allowLoopbackHTTPReturnURLs = try c.decodeIfPresent(Bool.self, forKey: .allowLoopbackHTTPReturnURLs) ?? false
        webhooks = try c.decodeIfPresent([WebhookEndpoint].self, forKey: .webhooks) ?? []
    }

    /// Every API key: ``apiKey`` as the key `default` with the full scope, then ``apiKeys``, each with its path in the file.
    public var keys: [(key: APIKeyConfiguration, path: String)] {
        (apiKey.map { [(APIKeyConfiguration(id: "default", key: $0), "apiKey")] } ?? [])
            + apiKeys.enumerated().map { ($0.element, "apiKeys[\($0.offset)]") }
    }

    /// The enabled gateways, in configuration order.
    public var enabledGateways: [GatewayConfiguration] { gateways.filter(\.enabled) }

    public func validate(path: String, modules: [String: GatewayCapabilities]) -> [ValidationIssue] {
        var issues = Validators.reference(id, field: "\(path).id", maxLength: 64)
        if let apiKey { issues += apiKey.validate(path: "\(path).apiKey") }
        if apiKey != nil && !apiKeys.isEmpty {
            issues.append(.init(field: "\(path).apiKeys", code: .invalidField, message: "give apiKey (one key) or apiKeys (several), not both"))
        }
        var keyIDs: Set<String> = []
        for (index, key) in apiKeys.enumerated() {
            issues += key.validate(path: "\(path).apiKeys[\(index)]")
            if !keyIDs.insert(key.id).inserted {
                issues.append(.init(field: "\(path).apiKeys[\(index)].id", code: .invalidField, message: "duplicate key id \"\(CheckoutError.printable(key.id))\""))
            }
        }
        issues += rateLimits.validate(path: "\(path).rateLimits")
        if gateways.isEmpty { issues.append(.init(field: "\(path).gateways", code: .missingField, message: "at least one gateway is required")) }
        for (code, ceiling) in maxAmounts.sorted(by: { $0.key < $1.key }) {
            if Currency.lookup(code) == nil {
                issues.append(.init(field: "\(path).maxAmounts.\(CheckoutError.printable(code))", code: .invalidField, message: "not an ISO 4217 currency code"))
            } else if ceiling <= 0 {
                issues.append(.init(field: "\(path).maxAmounts.\(code)", code: .invalidField, message: "a positive number of minor units"))
            }
        }
        var schemes: Set<String> = []
        for (index, scheme) in returnURLSchemes.enumerated() {
            if let problem = ReturnURLRule.schemeProblem(scheme) {
                issues.append(.init(field: "\(path).returnURLSchemes[\(index)]", code: .invalidField, message: problem))
            } else if !schemes.insert(scheme.lowercased()).inserted {
                issues.append(.init(field: "\(path).returnURLSchemes[\(index)]", code: .invalidField, message: "duplicate scheme \"\(scheme)\""))
            }
        }
        var ids: Set<GatewayID> = []
        for (index, gateway) in gateways.enumerated() {
            let gpath = "\(path).gateways[\(index)]"
            if !ids.insert(gateway.id).inserted {
                issues.append(.init(field: "\(gpath).id", code: .invalidField, message: "duplicate gateway id \"\(gateway.id)\""))
            }
            issues += gateway.validate(path: gpath, modules: modules)
        }
        let enabled = Set(enabledGateways.map(\.id))
        func check(_ id: GatewayID, _ field: String) {
            if !ids.contains(id) {
                issues.append(.init(field: field, code: .invalidField, message: "unknown gateway \"\(CheckoutError.printable(id.rawValue))\""))
            } else if !enabled.contains(id) {
                issues.append(.init(field: field, code: .invalidField, message: "gateway \"\(id)\" is disabled"))
            }
        }
        for (index, rule) in routing.rules.enumerated() {
            let rpath = "\(path).routing.rules[\(index)]"
            issues += rule.validate(path: rpath)
            for (t, target) in rule.gateways.enumerated() { check(target.id, "\(rpath).gateways[\(t)].id") }
        }
        for (index, id) in (routing.fallback ?? []).enumerated() { check(id, "\(path).routing.fallback[\(index)]") }
        issues += retry.validate(path: "\(path).retry")
        for gateway in retry.decisionOverrides.keys.sorted() where !ids.contains(GatewayID(rawValue: gateway)) {
            issues.append(.init(field: "\(path).retry.decisionOverrides.\(gateway)", code: .invalidField,
                                message: "unknown gateway \"\(CheckoutError.printable(gateway))\""))
        }
        issues += health.validate(path: "\(path).health")
        var urls: Set<String> = []
        for (index, webhook) in webhooks.enumerated() {
            issues += webhook.validate(path: "\(path).webhooks[\(index)]")
            if !urls.insert(webhook.url).inserted {
                issues.append(.init(field: "\(path).webhooks[\(index)].url", code: .invalidField, message: "the same URL twice"))
            }
        }
        return issues
    }
}

/// A gateway as a merchant configures it.
public struct GatewayConfiguration: Sendable, Hashable, Codable {
    public var id: GatewayID
    /// Which gateway module implements it (`"payfort"`, `"citcon"`, `"fake"`).
    public var module: String
    public var enabled: Bool
    /// Where each credential is read from on the server. Never the secret itself.
    public var credentials: [String: CredentialReference]
    /// Non-secret module settings (`"environment": "sandbox"`).
    public var settings: [String: String]
    /// Narrows what the module declares to what this merchant's account may do.
    public var limits: CapabilityLimits?

    public init(id: GatewayID, module: String, enabled: Bool = true, credentials: [String: CredentialReference] = [:],
                settings: [String: String] = [:], limits: CapabilityLimits? = nil) {
        self.id = id
        self.module = module
        self.enabled = enabled
        self.credentials = credentials
        self.settings = settings
        self.limits = limits
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case id, module, enabled, credentials, settings, limits
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(GatewayID.self, forKey: .id)
        module = try c.decode(String.self, forKey: .module)
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
        credentials = try c.decodeIfPresent([String: CredentialReference].self, forKey: .credentials) ?? [:]
        settings = try c.decodeIfPresent([String: String].self, forKey: .settings) ?? [:]
        limits = try c.decodeIfPresent(CapabilityLimits.self, forKey: .limits)
    }

    /// The module's capabilities narrowed by ``limits``.
    public func capabilities(module declared: GatewayCapabilities) -> GatewayCapabilities {
        guard let limits else { return declared }
        var result = declared
        if let methods = limits.methods { result.methods = declared.methods.intersection(methods) }
        if let codes = limits.currencies {
            let currencies = Set(codes.compactMap(Currency.lookup))
            result.currencies = declared.currencies.map { $0.intersection(currencies) } ?? currencies
        }
        if let codes = limits.countries {
            let countries = Set(codes.compactMap { try? CountryCode($0) })
            result.countries = declared.countries.map { $0.intersection(countries) } ?? countries
        }
        if let actions = limits.actions { result.actions = declared.actions.intersection(actions) }
        return result
    }

    public func validate(path: String, modules: [String: GatewayCapabilities]) -> [ValidationIssue] {
        var issues = Validators.reference(id.rawValue, field: "\(path).id", maxLength: 40)
        if modules[module] == nil {
            issues.append(.init(field: "\(path).module", code: .invalidField,
                                message: "unknown gateway module \"\(CheckoutError.printable(module))\" (this build has: \(modules.keys.sorted().joined(separator: ", ")))"))
        }
        for name in credentials.keys.sorted() {
            issues += credentials[name]!.validate(path: "\(path).credentials.\(name)")
        }
        issues += Validators.currencyCodes(limits?.currencies, field: "\(path).limits.currencies")
        issues += Validators.countryCodes(limits?.countries, field: "\(path).limits.countries")
        return issues
    }
}

/// What a merchant's account at a gateway may do, narrowing the module's declaration.
public struct CapabilityLimits: Sendable, Hashable, Codable {
    public var methods: Set<PaymentMethod>?
    public var currencies: [String]?
    public var countries: [String]?
    public var actions: Set<PaymentAction>?

    public init(methods: Set<PaymentMethod>? = nil, currencies: [String]? = nil, countries: [String]? = nil, actions: Set<PaymentAction>? = nil) {
        self.methods = methods
        self.currencies = currencies
        self.countries = countries
        self.actions = actions
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case methods, currencies, countries, actions
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        methods = try c.decodeIfPresent(Set<PaymentMethod>.self, forKey: .methods)
        currencies = try c.decodeIfPresent([String].self, forKey: .currencies)
        countries = try c.decodeIfPresent([String].self, forKey: .countries)
        actions = try c.decodeIfPresent(Set<PaymentAction>.self, forKey: .actions)
    }
}

/// One endpoint of a merchant's backend that receives its events.
///
/// Each delivery is signed with `secret` (`Till-Signature: t=…,v1=…`); while `previousSecret` is set, with it too
/// (`v1=…,v1=…`, the current secret first), so a secret is rotated without losing an event: add the new secret as
/// `secret` and the old as `previousSecret`, deploy the receiver with both, then remove `previousSecret`.
public struct WebhookEndpoint: Sendable, Hashable, Codable {
    /// `https://…`, or `http://` to `127.0.0.1` or `localhost` (a receiver on the same machine).
    public var url: String
    public var secret: CredentialReference
    public var previousSecret: CredentialReference?

    public init(url: String, secret: CredentialReference, previousSecret: CredentialReference? = nil) {
        self.url = url
        self.secret = secret
        self.previousSecret = previousSecret
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case url, secret, previousSecret }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        url = try c.decode(String.self, forKey: .url)
        secret = try c.decode(CredentialReference.self, forKey: .secret)
        previousSecret = try c.decodeIfPresent(CredentialReference.self, forKey: .previousSecret)
    }

    /// Every problem, each with its path: an URL that is not `https` (or `http` on loopback), or without a host; the
    /// secrets' references.
    public func validate(path: String) -> [ValidationIssue] {
        var issues = secret.validate(path: "\(path).secret")
        if let previousSecret { issues += previousSecret.validate(path: "\(path).previousSecret") }
        let parsed = URL(string: url)
        let host = parsed?.host?.lowercased()
        let loopback = host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]"
        if parsed == nil || host == nil || host?.isEmpty == true || parsed?.user != nil || parsed?.password != nil
            || !(parsed?.scheme?.lowercased() == "https" || (parsed?.scheme?.lowercased() == "http" && loopback)) {
            issues.append(.init(field: "\(path).url", code: .invalidField,
                                message: "an https URL with a host (http only to 127.0.0.1 or localhost), without user or password"))
        }
        return issues
    }
}

/// Where a secret is read from: an environment variable or a file. A configuration never holds the
/// secret itself, so it can live in an app bundle or a repository. Only the merchant server reads
/// the secret (`resolve(field:environment:)` lives in TillServer, not in the module an app links).
public struct CredentialReference: Sendable, Hashable, Codable {
    public var env: String?
    public var file: String?
    /// Set when the file held a bare string (a pasted secret); already reported while decoding.
    private var pastedSecret = false

    private enum CodingKeys: String, CodingKey, CaseIterable { case env, file }

    public init(env: String? = nil, file: String? = nil) {
        self.env = env
        self.file = file
    }

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), (try? single.decode(String.self)) != nil {
            // A bare string is a secret value pasted into the file: refuse it, without echoing it.
            let issue = ValidationIssue(field: decoder.codingPath.fieldPath, code: .misconfigured,
                                        message: "secret values must not appear in configuration; use {\"env\": \"NAME\"} or {\"file\": \"PATH\"}")
            guard let collector = decoder.userInfo[.tillIssueCollector] as? IssueCollector else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: issue.message,
                                                        underlyingError: issue.error))
            }
            collector.add(issue)
            pastedSecret = true
            return
        }
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        env = try c.decodeIfPresent(String.self, forKey: .env)
        file = try c.decodeIfPresent(String.self, forKey: .file)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(env, forKey: .env)
        try c.encodeIfPresent(file, forKey: .file)
    }

    /// Problems with the reference itself (never with the secret, which is read only on the server).
    public func validate(path: String) -> [ValidationIssue] {
        if pastedSecret { return [] }
        return switch (env, file) {
        case (let env?, nil) where !env.isEmpty: []
        case (nil, let file?) where !file.isEmpty: []
        default: [.init(field: path, code: .invalidField, message: "give exactly one of \"env\" or \"file\"")]
        }
    }

}

/// Routing rules and the default fallback list.
public struct RoutingConfiguration: Sendable, Hashable, Codable {
    /// Evaluated in order; the first matching rule wins.
    public var rules: [RoutingRule]
    /// Appended after the rule's gateways. When absent: every enabled gateway in configuration order.
    public var fallback: [GatewayID]?

    public init(rules: [RoutingRule] = [], fallback: [GatewayID]? = nil) {
        self.rules = rules
        self.fallback = fallback
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case rules, fallback
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rules = try c.decodeIfPresent([RoutingRule].self, forKey: .rules) ?? []
        fallback = try c.decodeIfPresent([GatewayID].self, forKey: .fallback)
    }
}

/// A routing rule: conditions and the gateways it sends matching payments to.
public struct RoutingRule: Sendable, Hashable, Codable {
    public var name: String?
    public var when: RuleConditions
    /// With weights: a volume split (one drawn first, the others kept as fallbacks by weight).
    /// Without weights: a priority list.
    public var gateways: [RuleTarget]
    /// Order the gateways by their recent approval rate for the payment's segment instead (``SuccessRateRouting``).
    public var successRate: SuccessRateRouting?

    public init(name: String? = nil, when: RuleConditions = RuleConditions(), gateways: [RuleTarget], successRate: SuccessRateRouting? = nil) {
        self.name = name
        self.when = when
        self.gateways = gateways
        self.successRate = successRate
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case name, when, gateways, successRate
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        when = try c.decodeIfPresent(RuleConditions.self, forKey: .when) ?? RuleConditions()
        gateways = try c.decode([RuleTarget].self, forKey: .gateways)
        successRate = try c.decodeIfPresent(SuccessRateRouting.self, forKey: .successRate)
    }

    func validate(path: String) -> [ValidationIssue] {
        var issues = when.validate(path: "\(path).when")
        if gateways.isEmpty { issues.append(.init(field: "\(path).gateways", code: .missingField, message: "at least one gateway is required")) }
        let weights = gateways.map(\.weight)
        if let successRate {
            issues += successRate.validate(path: "\(path).successRate")
            if weights.contains(where: { $0 != nil }) {
                issues.append(.init(field: "\(path).successRate", code: .invalidField,
                                    message: "a rule is a split (weights) or learns (successRate), not both"))
            }
        } else if weights.contains(where: { $0 != nil }) {
            for (index, target) in gateways.enumerated() {
                if let weight = target.weight, !(0...RuleTarget.maxWeight).contains(weight) {
                    issues.append(.init(field: "\(path).gateways[\(index)].weight", code: .invalidField,
                                        message: "weight must be 0 to \(RuleTarget.maxWeight)"))
                } else if target.weight == nil {
                    issues.append(.init(field: "\(path).gateways[\(index)].weight", code: .missingField,
                                        message: "give every gateway of a split a weight, or none"))
                }
            }
            if !weights.compactMap({ $0 }).contains(where: { $0 > 0 }) {
                issues.append(.init(field: "\(path).gateways", code: .invalidField, message: "the weights must add up to more than 0"))
            }
        }
        return issues
    }
}

/// One gateway of a rule: a bare id (`"payfort"`) or `{"id": "payfort", "weight": 70}`.
public struct RuleTarget: Sendable, Hashable, Codable {
    public var id: GatewayID
    public var weight: Int?

    /// The largest weight a split accepts, so sums can never overflow.
    public static let maxWeight = 1_000_000

    public init(_ id: GatewayID, weight: Int? = nil) {
        self.id = id
        self.weight = weight
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case id, weight
    }

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let bare = try? single.decode(String.self) {
            id = GatewayID(rawValue: bare)
            weight = nil
            return
        }
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(GatewayID.self, forKey: .id)
        weight = try c.decodeIfPresent(Int.self, forKey: .weight)
    }
}

/// A rule's conditions. Every given condition must hold; an absent one always holds.
public struct RuleConditions: Sendable, Hashable, Codable {
    public var methods: [PaymentMethod]?
    public var currencies: [String]?
    public var countries: [String]?
    public var amount: AmountRange?
    /// Card IIN ranges (inclusive, compared on the range's number of digits).
    public var cardIIN: [IINRange]?
    /// Metadata entries that must all be present with these values.
    public var metadata: [String: String]?
    public var actions: [PaymentAction]?

    public init(methods: [PaymentMethod]? = nil, currencies: [String]? = nil, countries: [String]? = nil,
                amount: AmountRange? = nil, cardIIN: [IINRange]? = nil, metadata: [String: String]? = nil,
                actions: [PaymentAction]? = nil) {
        self.methods = methods
        self.currencies = currencies
        self.countries = countries
        self.amount = amount
        self.cardIIN = cardIIN
        self.metadata = metadata
        self.actions = actions
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case methods, currencies, countries, amount, cardIIN, metadata, actions
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        methods = try c.decodeIfPresent([PaymentMethod].self, forKey: .methods)
        currencies = try c.decodeIfPresent([String].self, forKey: .currencies)
        countries = try c.decodeIfPresent([String].self, forKey: .countries)
        amount = try c.decodeIfPresent(AmountRange.self, forKey: .amount)
        cardIIN = try c.decodeIfPresent([IINRange].self, forKey: .cardIIN)
        metadata = try c.decodeIfPresent([String: String].self, forKey: .metadata)
        actions = try c.decodeIfPresent([PaymentAction].self, forKey: .actions)
    }

    func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        issues += Validators.currencyCodes(currencies, field: "\(path).currencies")
        issues += Validators.countryCodes(countries, field: "\(path).countries")
        for (index, method) in (methods ?? []).enumerated() where method.rawValue.isEmpty {
            issues.append(.init(field: "\(path).methods[\(index)]", code: .invalidField, message: "must not be empty"))
        }
        if let amount { issues += amount.validate(path: "\(path).amount") }
        for (index, range) in (cardIIN ?? []).enumerated() { issues += range.validate(path: "\(path).cardIIN[\(index)]") }
        for (name, list) in [("methods", methods?.count), ("currencies", currencies?.count), ("countries", countries?.count),
                             ("cardIIN", cardIIN?.count), ("actions", actions?.count)] where list == 0 {
            issues.append(.init(field: "\(path).\(name)", code: .invalidField, message: "an empty list matches nothing; omit it to match anything"))
        }
        return issues
    }
}

/// An amount range in one currency, bounds as exact decimal strings (`"10.00"`), both inclusive.
public struct AmountRange: Sendable, Hashable, Codable {
    public var currency: String
    public var min: String?
    public var max: String?

    public init(currency: String, min: String? = nil, max: String? = nil) {
        self.currency = currency
        self.min = min
        self.max = max
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case currency, min, max
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        currency = try c.decode(String.self, forKey: .currency)
        min = try c.decodeIfPresent(String.self, forKey: .min)
        max = try c.decodeIfPresent(String.self, forKey: .max)
    }

    /// The bounds in minor units; nil when invalid.
    func bounds() -> (currency: Currency, min: Int64?, max: Int64?)? {
        guard let currency = Currency.lookup(currency) else { return nil }
        do {
            let low = try min.map { try Money(decimal: $0, currency: currency).minorUnits }
            let high = try max.map { try Money(decimal: $0, currency: currency).minorUnits }
            return (currency, low, high)
        } catch { return nil }
    }

    func validate(path: String) -> [ValidationIssue] {
        guard let currency = Currency.lookup(currency) else {
            return [.init(field: "\(path).currency", code: .invalidCurrency, message: "unknown currency \"\(CheckoutError.printable(self.currency))\"")]
        }
        var issues: [ValidationIssue] = []
        var low: Int64?, high: Int64?
        for (name, text) in [("min", min), ("max", max)] {
            guard let text else { continue }
            do {
                let value = try Money(decimal: text, currency: currency, field: "\(path).\(name)").minorUnits
                if name == "min" { low = value } else { high = value }
            } catch {
                issues.append(.init(field: "\(path).\(name)", code: error.code, message: error.message))
            }
        }
        if min == nil && max == nil { issues.append(.init(field: path, code: .missingField, message: "give min, max or both")) }
        if let low, let high, low > high { issues.append(.init(field: path, code: .invalidField, message: "min is greater than max")) }
        return issues
    }
}

/// An inclusive range of card IIN prefixes of equal length (`{"from": "400000", "to": "499999"}`).
public struct IINRange: Sendable, Hashable, Codable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case from, to
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        from = try c.decode(String.self, forKey: .from)
        to = try c.decode(String.self, forKey: .to)
    }

    func validate(path: String) -> [ValidationIssue] {
        let digits: (String) -> Bool = { !$0.isEmpty && $0.count <= 8 && $0.allSatisfy(\.isASCIIDigit) }
        var issues: [ValidationIssue] = []
        if !digits(from) { issues.append(.init(field: "\(path).from", code: .invalidField, message: "1 to 8 digits")) }
        if !digits(to) { issues.append(.init(field: "\(path).to", code: .invalidField, message: "1 to 8 digits")) }
        if issues.isEmpty {
            if from.count != to.count {
                issues.append(.init(field: path, code: .invalidField, message: "from and to must have the same number of digits"))
            } else if from > to {
                issues.append(.init(field: path, code: .invalidField, message: "from is greater than to"))
            }
        }
        return issues
    }
}

/// How many attempts, how long, and which gateway codes may cascade.
public struct RetryPolicy: Sendable, Hashable, Codable {
    /// Attempts per payment, across gateways (1 disables cascading).
    public var maxAttempts: Int
    /// No new attempt starts after this much time since the payment began.
    public var timeBudgetMillis: Int
    /// Inquiries made to settle an unknown outcome, and the pause between them.
    public var inquiryAttempts: Int
    public var inquiryIntervalMillis: Int
    /// Per gateway id: code → decision, overriding the module's decision table.
    public var decisionOverrides: [String: [String: DecisionTable.Decision]]

    public init(maxAttempts: Int = 3, timeBudgetMillis: Int = 60_000, inquiryAttempts: Int = 3, inquiryIntervalMillis: Int = 2_000,
                decisionOverrides: [String: [String: DecisionTable.Decision]] = [:]) {
        self.maxAttempts = maxAttempts
        self.timeBudgetMillis = timeBudgetMillis
        self.inquiryAttempts = inquiryAttempts
        self.inquiryIntervalMillis = inquiryIntervalMillis
        self.decisionOverrides = decisionOverrides
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case maxAttempts, timeBudgetMillis, inquiryAttempts, inquiryIntervalMillis, decisionOverrides
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = RetryPolicy()
        maxAttempts = try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? d.maxAttempts
        timeBudgetMillis = try c.decodeIfPresent(Int.self, forKey: .timeBudgetMillis) ?? d.timeBudgetMillis
        inquiryAttempts = try c.decodeIfPresent(Int.self, forKey: .inquiryAttempts) ?? d.inquiryAttempts
        inquiryIntervalMillis = try c.decodeIfPresent(Int.self, forKey: .inquiryIntervalMillis) ?? d.inquiryIntervalMillis
        decisionOverrides = try c.decodeIfPresent([String: [String: DecisionTable.Decision]].self, forKey: .decisionOverrides) ?? [:]
    }

    func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        if !(1...10).contains(maxAttempts) { issues.append(.init(field: "\(path).maxAttempts", code: .invalidField, message: "1 to 10")) }
        if timeBudgetMillis < 1 { issues.append(.init(field: "\(path).timeBudgetMillis", code: .invalidField, message: "must be positive")) }
        if !(0...20).contains(inquiryAttempts) { issues.append(.init(field: "\(path).inquiryAttempts", code: .invalidField, message: "0 to 20")) }
        if inquiryIntervalMillis < 0 { issues.append(.init(field: "\(path).inquiryIntervalMillis", code: .invalidField, message: "must not be negative")) }
        return issues
    }
}

/// Live-health settings: the success-rate window and the circuit breaker.
public struct HealthSettings: Sendable, Hashable, Codable {
    /// How many recent attempts the success rate looks at.
    public var window: Int
    /// Below this many samples the success rate is not used.
    public var minSamples: Int
    /// Gateways whose success rate is below this (0...1) go after healthy ones.
    public var minSuccessRate: Double
    /// Consecutive failures that open the circuit.
    public var failureThreshold: Int
    /// How long an open circuit stays open before half-open probing.
    public var openMillis: Int
    /// Probe attempts allowed at once while half-open.
    public var halfOpenProbes: Int

    public init(window: Int = 100, minSamples: Int = 20, minSuccessRate: Double = 0.5, failureThreshold: Int = 5,
                openMillis: Int = 30_000, halfOpenProbes: Int = 1) {
        self.window = window
        self.minSamples = minSamples
        self.minSuccessRate = minSuccessRate
        self.failureThreshold = failureThreshold
        self.openMillis = openMillis
        self.halfOpenProbes = halfOpenProbes
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case window, minSamples, minSuccessRate, failureThreshold, openMillis, halfOpenProbes
    }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = HealthSettings()
        window = try c.decodeIfPresent(Int.self, forKey: .window) ?? d.window
        minSamples = try c.decodeIfPresent(Int.self, forKey: .minSamples) ?? d.minSamples
        minSuccessRate = try c.decodeIfPresent(Double.self, forKey: .minSuccessRate) ?? d.minSuccessRate
        failureThreshold = try c.decodeIfPresent(Int.self, forKey: .failureThreshold) ?? d.failureThreshold
        openMillis = try c.decodeIfPresent(Int.self, forKey: .openMillis) ?? d.openMillis
        halfOpenProbes = try c.decodeIfPresent(Int.self, forKey: .halfOpenProbes) ?? d.halfOpenProbes
    }

    func validate(path: String) -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        if !(1...10_000).contains(window) { issues.append(.init(field: "\(path).window", code: .invalidField, message: "1 to 10000")) }
        if minSamples < 1 || minSamples > window { issues.append(.init(field: "\(path).minSamples", code: .invalidField, message: "1 to window")) }
        if !(0...1).contains(minSuccessRate) { issues.append(.init(field: "\(path).minSuccessRate", code: .invalidField, message: "0 to 1")) }
        if failureThreshold < 1 { issues.append(.init(field: "\(path).failureThreshold", code: .invalidField, message: "at least 1")) }
        if openMillis < 1 { issues.append(.init(field: "\(path).openMillis", code: .invalidField, message: "must be positive")) }
        if halfOpenProbes < 1 { issues.append(.init(field: "\(path).halfOpenProbes", code: .invalidField, message: "at least 1")) }
        return issues
    }
}
