import Foundation
import Testing
@testable import Till
import TillOrchestration

@Suite("Router")
struct RouterTests {
    static let usd = Currency.lookup("USD")!

    func router() throws -> GatewayRouter {
        let configuration = try ConfigurationLoader.decode(MerchantsFile.self, from: try fixture("valid-config.json")).get()
        return try GatewayRouter(merchant: configuration.merchants[0], modules: fakeModules)
    }

    func intent(_ method: PaymentMethod = .card, _ decimal: String = "10.00", currency: String = "USD", country: String? = "DE",
                iin: String? = nil, metadata: [String: String] = [:]) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "o-1", amount: try Money(decimal: decimal, currency: Currency(code: currency)),
                      country: try country.map { try CountryCode($0) }, method: method, cardIIN: iin, metadata: metadata)
    }

    @Test("eligibility: a gateway whose limits exclude the currency is skipped, with the reason")
    func eligibility() throws {
        var generator = SeededGenerator(seed: 1)
        let decision = try router().route(try intent(.card, "1000", currency: "JPY"), using: &generator, explain: true)
        #expect(!decision.candidates.contains("secondary"))
        #expect(!decision.candidates.contains("spare"))
        #expect(decision.notes.contains(RoutingDecision.Note.skipped("secondary", reasons: ["currency JPY not supported"])))
        #expect(decision.notes.contains(RoutingDecision.Note.skipped("spare", reasons: ["disabled"])))
    }

    @Test("a payment no enabled gateway can take is named by the first field that rules them all out: method, currency, country, action")
    func eligibilityIssue() throws {
        let modules: [String: GatewayCapabilities] = [
            "cards": GatewayCapabilities(methods: [.card], currencies: [Self.usd, Currency.lookup("EUR")!], countries: [try CountryCode("DE")],
                                         actions: [.sale]),
            "wallets": GatewayCapabilities(methods: [.alipay], actions: [.sale, .authorize]),
        ]
        var merchant = MerchantConfiguration(id: "m", gateways: [GatewayConfiguration(id: "c", module: "cards"),
                                                                 GatewayConfiguration(id: "w", module: "wallets"),
                                                                 GatewayConfiguration(id: "off", module: "wallets", enabled: false)])
        merchant.routing = RoutingConfiguration(fallback: ["c", "w"])
        let router = try GatewayRouter(merchant: merchant, modules: modules)
        func issue(_ intent: PaymentIntent) -> (String, CheckoutError.Code)? {
            router.eligibilityIssue(for: intent, path: "body").map { ($0.field, $0.code) }
        }
        #expect(issue(try intent(.card)) == nil)
        #expect(issue(try intent(.alipay, "1000", currency: "JPY", country: nil)) == nil)
        #expect(issue(try intent(.wechatPay)).map { $0.0 } == "body.method")
        #expect(router.eligibilityIssue(for: try intent(.wechatPay), path: "body")?.message.hasSuffix("they take: alipay, card") == true)
        #expect(issue(try intent(.card, "1000", currency: "JPY")).map { $0.1 } == .unsupportedCurrency)
        #expect(issue(try intent(.card, country: "FR")).map { $0.1 } == .invalidCountry)
        #expect(issue(try intent(.card, country: nil)).map { $0.1 } == .missingField)
        var authorize = try intent(.card)
        authorize.action = .authorize
        #expect(issue(authorize).map { $0.0 } == "body.action")
        // A gateway could take it, but the routing never offers it one: the fallback names only the card gateway.
        merchant.routing = RoutingConfiguration(fallback: ["c"])
        let narrow = try GatewayRouter(merchant: merchant, modules: modules)
        #expect(narrow.eligibilityIssue(for: try intent(.alipay, "1000", currency: "JPY", country: nil), path: "body").map { ($0.field, $0.code) }
                .map { $0.0 == "body" && $0.1 == "not_routable" } == true)
        #expect(narrow.eligibilityIssue(for: try intent(.card), path: "body") == nil)
    }

    @Test("first matching rule wins: the big-US-cards rule beats the split")
    func firstMatch() throws {
        var generator = SeededGenerator(seed: 1)
        let decision = try router().route(try intent(.card, "600.00", country: "US"), using: &generator)
        #expect(decision.matchedRule == 1)
        #expect(decision.candidates == ["secondary", "primary"])   // wallets takes no cards
    }

    @Test("amount bounds are inclusive and exact")
    func amountBounds() throws {
        var generator = SeededGenerator(seed: 1)
        #expect(try router().route(try intent(.card, "500.00", country: "US"), using: &generator).matchedRule == 1)
        #expect(try router().route(try intent(.card, "499.99", country: "US"), using: &generator).matchedRule == 2)
        // Another currency never matches an amount range in USD, whatever the number.
        #expect(try router().route(try intent(.card, "600.00", currency: "EUR", country: "US"), using: &generator).matchedRule == 2)
    }

    @Test("weighted split: the drawn gateway first, the other kept as fallback, frequencies follow the weights")
    func split() throws {
        let router = try router()
        var generator = SeededGenerator(seed: 99)
        var first: [GatewayID: Int] = [:]
        for _ in 0..<10_000 {
            let decision = router.route(try intent(), using: &generator)
            #expect(Set(decision.candidates.prefix(2)) == ["primary", "secondary"])
            #expect(decision.candidates.count == 2)   // wallets is limited to wallet methods
            first[decision.candidates[0], default: 0] += 1
        }
        #expect((6_700...7_300).contains(first["primary"] ?? 0), "\(first)")
    }

    @Test("deterministic given a seed")
    func deterministic() throws {
        let router = try router()
        func draw(_ seed: UInt64) throws -> [[GatewayID]] {
            var generator = SeededGenerator(seed: seed)
            return try (0..<50).map { _ in router.route(try intent(), using: &generator).candidates }
        }
        #expect(try draw(5) == draw(5))
        #expect(try draw(5) != draw(6))
    }

    @Test("IIN ranges and metadata conditions")
    func iinAndMetadata() throws {
        var generator = SeededGenerator(seed: 1)
        let router = try router()
        // The IIN rule matches, but its only gateway takes no alipay: the fallback list carries on.
        let visa = router.route(try intent(.alipay, iin: "411111"), using: &generator)
        #expect(visa.matchedRule == 3)
        #expect(visa.candidates == ["primary", "wallets"])
        #expect(router.route(try intent(.wechatPay, metadata: ["channel": "app"]), using: &generator).matchedRule == 4)
        #expect(router.route(try intent(.wechatPay, metadata: ["channel": "web"]), using: &generator).matchedRule == nil)
        #expect(router.route(try intent(.wechatPay, iin: "455555"), using: &generator).matchedRule == 3)
        #expect(router.route(try intent(.wechatPay, iin: "511111"), using: &generator).matchedRule == nil)
    }

    @Test("fallback is appended without duplicates; with no rule matching, the fallback list alone")
    func fallback() throws {
        var generator = SeededGenerator(seed: 1)
        let decision = try router().route(try intent(.alipay), using: &generator, explain: true)
        #expect(decision.matchedRule == nil)
        #expect(decision.candidates == ["primary", "wallets"])   // secondary does not take alipay
        let split = try router().route(try intent(), using: &generator, explain: true)
        #expect(split.notes.contains { if case .duplicateDropped = $0 { true } else { false } })
    }

    @Test("health: an open circuit goes last, never dropped; a degraded gateway goes after healthy ones")
    func health() throws {
        let clock = VirtualClock()
        let settings = HealthSettings(window: 10, minSamples: 4, minSuccessRate: 0.5, failureThreshold: 3, openMillis: 1_000)
        let health = HealthMonitor(settings: settings, clock: clock)
        let router = try router()
        var generator = SeededGenerator(seed: 1)
        let wallet = try intent(.wechatPay)   // no rule: fallback primary, wallets (secondary: methods)
        #expect(router.route(wallet, health: health, using: &generator).candidates == ["primary", "wallets"])

        for _ in 0..<3 { health.record("primary", success: false) }
        #expect(health.tier(of: "primary") == .open)
        let decision = router.route(wallet, health: health, using: &generator, explain: true)
        #expect(decision.candidates == ["wallets", "primary"])
        #expect(decision.notes.contains { if case .demoted("primary", _) = $0 { true } else { false } })

        // Only an open circuit left: it is still offered.
        let alipayOnlyPrimary = try intent(.alipay)
        health.record("wallets", success: false); health.record("wallets", success: false); health.record("wallets", success: false)
        #expect(router.route(alipayOnlyPrimary, health: health, using: &generator).candidates == ["primary", "wallets"])

        // Half-open after the open period: one probe slot; success closes it.
        clock.advance(by: .milliseconds(1_000))
        #expect(health.tier(of: "primary") == .healthy)
        health.attemptStarted(on: "primary")
        #expect(health.tier(of: "primary") == .open)          // the probe slot is taken
        health.record("primary", success: true)
        #expect(health.tier(of: "primary") != .open)          // closed again…
        #expect(health.tier(of: "primary") == .degraded)      // …but 1 success in 4 is a poor rate

        // A failed probe re-opens for a full period.
        for _ in 0..<3 { health.record("primary", success: false) }
        clock.advance(by: .milliseconds(1_000))
        health.attemptStarted(on: "primary")
        health.record("primary", success: false)
        #expect(health.tier(of: "primary") == .open)
        clock.advance(by: .milliseconds(999))
        #expect(health.tier(of: "primary") == .open)

        // Degraded: closed circuit but a poor success rate.
        let degraded = HealthMonitor(settings: settings, clock: clock)
        for success in [true, false, true, false, false, true, false] { degraded.record("primary", success: success) }
        #expect(degraded.tier(of: "primary") == .degraded)
    }

    @Test("an invalid merchant cannot build a router")
    func invalid() {
        let merchant = MerchantConfiguration(id: "m", gateways: [GatewayConfiguration(id: "g", module: "nope")])
        #expect(throws: ConfigurationError.self) { try GatewayRouter(merchant: merchant, modules: fakeModules) }
    }

    @Test("payment status aggregates over attempts: a decline never hides a charge")
    func aggregate() {
        #expect(PaymentStatus.aggregate([]) == .created)
        #expect(PaymentStatus.aggregate([.failed, .paid]) == .paid)
        #expect(PaymentStatus.aggregate([.paid, .failed]) == .paid)
        #expect(PaymentStatus.aggregate([.failed, .pending]) == .pending)
        #expect(PaymentStatus.aggregate([.failed, .cancelled]) == .cancelled)
        #expect(PaymentStatus.aggregate([.authorized, .failed]) == .authorized)
        #expect(PaymentStatus.aggregate([.failed, PaymentStatus(rawValue: "mystery")]) == .pending)
        // A refund of a duplicate never hides the attempt that still holds the money.
        #expect(PaymentStatus.aggregate([.paid, .refunded]) == .paid)
        #expect(PaymentStatus.aggregate([.refunded, .failed]) == .refunded)
        #expect(PaymentStatus.aggregate([.refunded, .authorized]) == .authorized)
    }
}

let fakeModules: [String: GatewayCapabilities] = [
    "fake": GatewayCapabilities(methods: [.card, .wechatPay, .alipay], actions: [.sale, .authorize]),
]

func fixture(_ name: String) throws -> Data {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    return try Data(contentsOf: url)
}

/// The merchants of a configuration file (the server's own settings are read by TillServer).
struct MerchantsFile: Decodable {
    var merchants: [MerchantConfiguration]
}
