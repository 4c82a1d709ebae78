import Foundation
import Testing
@testable import Till
import TillOrchestration

@Suite("Intents, errors, identifiers and the method registry")
struct ModelTests {
    static let usd = Currency.lookup("USD")!

    func intent(reference: String = "order-1", minor: Int64 = 1000, action: PaymentAction = .sale) -> PaymentIntent {
        PaymentIntent(merchantReference: reference, amount: Money(minorUnits: minor, currency: Self.usd), method: .card, action: action)
    }

    @Test("a valid intent has no issues")
    func valid() {
        #expect(intent().validate().isEmpty)
        #expect(intent(minor: 0, action: .verify).validate().isEmpty)
    }

    @Test("every problem is reported with its field path")
    func issues() {
        var bad = intent(reference: "order 1/évil", minor: 0)
        bad.cardIIN = "4111111111111111"
        bad.customer.email = "not-an-email"
        bad.metadata = ["note": String(repeating: "x", count: 600)]
        let fields = Set(bad.validate().map(\.field))
        #expect(fields == ["intent.merchantReference", "intent.amount", "intent.cardIIN", "intent.customer.email", "intent.metadata.note"])
        // The full card number never appears in the issue text.
        #expect(!bad.validate().map(\.description).joined().contains("4111111111111111"))
        #expect(throws: CheckoutError.self) { try bad.validated() }
        #expect(intent(reference: "").validate().first?.code == .missingField)
        #expect(intent(reference: String(repeating: "a", count: 65)).validate().first?.code == .fieldTooLong)
        #expect(intent(minor: 5, action: .verify).validate().first?.field == "intent.amount")
    }

    @Test("intent JSON rejects a wrong type or unknown currency with a path")
    func decoding() throws {
        let good = #"{"merchantReference":"o-1","amount":{"value":1050,"currency":"USD"},"country":"US","method":"wechatpay","action":"sale","customer":{},"metadata":{}}"#
        let decoded = try JSONDecoder().decode(PaymentIntent.self, from: Data(good.utf8))
        #expect(decoded.amount.minorUnits == 1050 && decoded.method == .wechatPay)
        let futureMethod = good.replacingOccurrences(of: "wechatpay", with: "quantum_wallet")
        #expect(try JSONDecoder().decode(PaymentIntent.self, from: Data(futureMethod.utf8)).method.rawValue == "quantum_wallet")
        for broken in [good.replacingOccurrences(of: "1050", with: "\"1050\""),
                       good.replacingOccurrences(of: "\"US\"", with: "\"XX\""),
                       good.replacingOccurrences(of: "\"sale\"", with: "\"steal\""),
                       String(good.dropLast())] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(PaymentIntent.self, from: Data(broken.utf8)) }
        }
    }

    @Test("error codes map to categories; the description names field and gateway code")
    func errors() {
        #expect(CheckoutError.Code.invalidAmount.defaultCategory == .invalidInput)
        #expect(CheckoutError.Code.gatewayUnreachable.defaultCategory == .unavailable)
        #expect(CheckoutError.Code.timeout.defaultCategory == .unknownOutcome)
        #expect(CheckoutError.Code.signatureMismatch.defaultCategory == .verification)
        #expect(CheckoutError.Code.missingSecret.defaultCategory == .configuration)
        #expect(CheckoutError.Code(rawValue: "brand_new").defaultCategory == .unknownOutcome)
        let error = CheckoutError(.declined, category: .declinedSoft, message: "do not honour", gateway: "payfort",
                                  gatewayCode: "14005", gatewayMessage: "Do not honor")
        #expect(error.description == "[declined] do not honour (gateway payfort code 14005: Do not honor)")
        let data = try! JSONEncoder().encode(error)
        #expect(try! JSONDecoder().decode(CheckoutError.self, from: data) == error)
    }

    @Test("attempt references are unique, 24 characters, gateway-safe")
    func references() {
        let references = (0..<5000).map { _ in AttemptReference.generate().rawValue }
        #expect(Set(references).count == 5000)
        #expect(references.allSatisfy { $0.count == 24 && $0.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) } })
    }

    @Test("the registry knows who offers what and which schemes the app must declare")
    func registry() {
        var registry = PaymentMethodRegistry()
        registry.register("citcon", methods: [.wechatPay, .alipay, .unionPay, .venmo])
        registry.register("payfort", methods: [.card, .applePay])
        registry.register("ecommpay", methods: [.card])
        registry.register("ecommpay", methods: [.card])
        #expect(registry.gateways(offering: .card) == ["payfort", "ecommpay"])
        #expect(registry.gateways(offering: .toss).isEmpty)
        #expect(registry.info(for: .wechatPay).switchesApp)
        #expect(registry.info(for: .wechatPay).returnStyle == .universalLink)
        #expect(registry.info(for: .card).needsForm)
        #expect(registry.info(for: .alipay).displayNameKey == "till.method.alipay")
        #expect(registry.requiredQueriesSchemes(for: [.wechatPay]) == ["wechat", "weixin", "weixinULAPI"])
        let all = registry.requiredQueriesSchemes()
        #expect(all.contains("alipays") && all.contains("uppaysdk") && all.contains("com.venmo.touch.v2"))
        #expect(Set(all).count == all.count)
        let unknown = registry.info(for: "quantum_wallet")
        #expect(unknown.needsForm && !unknown.switchesApp)
        registry.register(PaymentMethodInfo(method: "quantum_wallet", switchesApp: true, queriesSchemes: ["qw"], needsForm: false, returnStyle: .customScheme))
        #expect(registry.info(for: "quantum_wallet").queriesSchemes == ["qw"])
    }

    @Test("capabilities explain why a gateway cannot take an intent")
    func capabilities() throws {
        let caps = GatewayCapabilities(methods: [.card], currencies: [try Currency(code: "SAR")], countries: [try CountryCode("SA")], actions: [.sale])
        var intent = intent()
        intent.country = try CountryCode("US")
        intent.action = .authorize
        #expect(caps.ineligibility(for: intent) == ["currency USD not supported", "country US not supported", "action authorize not supported"])
    }

    @Test("form values never print what the customer typed")
    func formValues() {
        let values = FormValues(["card_number": "4111111111111111", "cvv": "987"])
        for text in [String(describing: values), String(reflecting: values), "\(values)"] {
            #expect(!text.contains("4111111111111111") && !text.contains("987"))
        }
        var dumped = ""
        dump(values, to: &dumped)
        #expect(!dumped.contains("4111111111111111") && !dumped.contains("987"))
    }

    @Test("decision tables default to do-not-retry; merchants override")
    func decisionTable() {
        let table = DecisionTable(["05": .retryNext, "3ds": .stepUp])
        #expect(table.decision(for: "05") == .retryNext)
        #expect(table.decision(for: "unknown") == .doNotRetry)
        #expect(table.decision(for: nil) == .doNotRetry)
        let merchant = table.overriding(with: ["05": .doNotRetry, "51": .retryNext])
        #expect(merchant.decision(for: "05") == .doNotRetry)
        #expect(merchant.decision(for: "51") == .retryNext)
    }
}

@Suite("Intent decoding defaults")
struct IntentDecodingTests {
    @Test("optional parts may be omitted; unknown keys are named")
    func defaults() throws {
        let minimal = #"{"merchantReference":"o-1","amount":{"value":100,"currency":"JPY"},"method":"card"}"#
        let intent = try JSONDecoder().decode(PaymentIntent.self, from: Data(minimal.utf8))
        #expect(intent.action == .sale && intent.metadata.isEmpty && intent.customer == Customer())
        let typo = #"{"merchantReference":"o-1","amount":{"value":100,"currency":"JPY"},"method":"card","metdata":{}}"#
        do {
            _ = try JSONDecoder().decode(PaymentIntent.self, from: Data(typo.utf8))
            Issue.record("accepted an unknown key")
        } catch let DecodingError.dataCorrupted(context) {
            #expect((context.underlyingError as? CheckoutError)?.field == "metdata")
        }
    }
}
