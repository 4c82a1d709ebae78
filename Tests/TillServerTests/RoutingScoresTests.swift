import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillTesting
import TillServer

@Suite("Routing scores shared through the store")
struct RoutingScoresTests {
    static let usd = Currency.lookup("USD")!
    static let eur = Currency.lookup("EUR")!

    /// A merchant whose card payments are ordered by a rule that learns, over gateways a and b.
    static func configuration(_ merchant: String) -> TillConfiguration {
        TillConfiguration(merchants: [MerchantConfiguration(
            id: merchant, apiKey: CredentialReference(env: "API_KEY"),
            gateways: ["a", "b"].map { GatewayConfiguration(id: GatewayID(rawValue: $0), module: "fake") },
            routing: RoutingConfiguration(rules: [RoutingRule(name: "learn", when: RuleConditions(methods: [.card]), gateways: [RuleTarget("a"), RuleTarget("b")],
                                                              successRate: SuccessRateRouting(exploration: 0))]))],
            server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:unused"))
    }

    /// One payment with one attempt on `gateway` that ended `status` (a decline carries a gateway's code).
    func ended(_ store: any PaymentStore, merchant: String, gateway: GatewayID, currency: Currency, status: PaymentStatus,
               code: String? = nil) async throws {
        let id = "pay_\(UUID().uuidString.prefix(12))"
        let amount = Money(minorUnits: 1000, currency: currency)
        _ = try await store.create(PaymentIntent(merchantReference: "o-\(id)", amount: amount, country: try CountryCode("US"), method: .card),
                                   merchant: merchant, id: id, idempotencyKey: nil, requestHash: "h")
        let attempt = AttemptReference.generate()
        try await store.addAttempt(attempt, payment: id, gateway: gateway, expected: [])
        _ = try await store.apply(StatusReport(gateway: gateway, attempt: attempt, status: status, amount: amount, gatewayCode: code,
                                               eventID: "e-\(id)"), source: .inquiry)
    }

    @Test("two server instances on one store read the same outcomes and route a payment alike; only customers' answers count",
          arguments: StoreKind.everyStore)
    func twoInstances(kind: StoreKind) async throws {
        let store = try await kind.open()
        let merchant = "m-\(UUID().uuidString.prefix(8).lowercased())"
        // USD: a approves 2 of 10, b 9 of 10. EUR: a 9 of 10, b none. b's requests that never left count for nothing.
        for i in 0..<10 {
            try await ended(store, merchant: merchant, gateway: "a", currency: Self.usd, status: i < 2 ? .paid : .failed, code: "05")
            try await ended(store, merchant: merchant, gateway: "b", currency: Self.usd, status: i < 9 ? .paid : .failed, code: "05")
            try await ended(store, merchant: merchant, gateway: "a", currency: Self.eur, status: i < 9 ? .paid : .failed, code: "51")
            try await ended(store, merchant: merchant, gateway: "b", currency: Self.eur, status: .failed, code: AttemptFailure.notSentCode)
        }
        let fake = FakeGateway(id: "fake", secret: "s")
        let plugin = GatewayPlugin(module: "fake", capabilities: fake.capabilities, makeServerHalf: { _ in fake }, makeAppHalf: { _ in fake })
        var orders: [[GatewayID]] = []
        var samples: [[Double]] = []
        for _ in 0..<2 {
            let state = try ServerState(configuration: Self.configuration(merchant), plugins: [plugin], environment: ["API_KEY": "routing-scores-test-key"])
            let refresher = RoutingScoresRefresher(state: state, store: store)
            #expect(refresher.isNeeded)
            try await refresher.refreshOnce()
            let runtime = try #require(state.merchant(id: merchant))
            let scores = try #require(runtime.scores)
            let usd = PaymentIntent(merchantReference: "x", amount: Money(minorUnits: 1, currency: Self.usd), method: .card)
            var generator = SeededGenerator(seed: 1)
            orders.append(runtime.router.route(usd, scores: scores, using: &generator).candidates)
            let eurSegment = SegmentKey(dimensions: [.method, .currency], method: .card, currency: Self.eur, country: nil, cardIIN: nil)
            samples.append(scores.scores(of: ["a", "b"], segment: eurSegment, rule: 1).map(\.samples))
        }
        #expect(orders == [["b", "a"], ["b", "a"]])
        // EUR: a's ten answers (read back by the minute, each aged from its minute's middle: at most 30 s, under 3 % of
        // weight at a 15-minute half-life); b's ten never-sent count for nothing.
        #expect(abs(samples[0][0] - samples[1][0]) < 0.01 && samples[0][0] > 9.7 && samples[0][1] == 0 && samples[1][1] == 0, "\(samples)")
        try await store.close()
    }
}
