import Foundation
import Testing
import Till
import TillOrchestration
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit

extension EcommpayInteropTests {
    // MARK: 3a. Payment Page URLs

    @Test("the SDK's Payment Page URLs for generated parameters (unicode, '&', '=', '+', ';' in values, booleans, best_before with and without an offset): Till signs the SDK's parameters to the URL's signature; the query holds them in order, booleans written True/False")
    func sdkPaymentPageURLs() async throws {
        var random = EcommpayGenerator(seed: 0x9A6E)
        var items: [EcommpaySDK.URLItem] = []
        for index in 0..<80 {
            var params: [[String]] = []
            func add(_ name: String, _ value: OrderedJSON) { params.append([name, String(decoding: value.serialized(), as: UTF8.self)]) }
            add("payment_amount", .number(String(random.int(1...2_000_000_000))))
            add("payment_currency", .string(random.pick(["USD", "EUR", "GBP", "JPY"])))
            if random.chance(70) { add("customer_id", .string("cust-" + random.alphanumeric(random.int(1...20)))) }
            if random.chance(70) { add("payment_description", .string(random.plainText() + " & a=b+c;d")) }
            if random.chance(50) { add("language_code", .string(random.pick(["en", "de", "fr"]))) }
            if random.chance(50) { add("force_payment_method", .string(random.pick(["card", "alipay", "paypal-wallet"]))) }
            if random.chance(60) { add("merchant_success_url", .string("https://shop.example/return?order=\(index)&r=a+b%20c")) }
            if random.chance(40) { add("redirect", .bool(random.chance(50))) }
            if random.chance(30) { add("close_on_missclick", .bool(random.chance(50))) }
            if random.chance(50) {
                let offset = random.pick(["", "+00:00", "+03:00", "-05:30"])
                add("best_before", .string("20\(random.int(27...40))-0\(random.int(1...9))-1\(random.int(0...9))T1\(random.int(0...9)):0\(random.int(0...9)):00\(offset)"))
            }
            if random.chance(30) { add("customer_email", .string("b\(index)@shop.example")) }
            items.append(.init(secret: random.secret(), baseUrl: "", projectId: String(random.int(1...99_999)),
                               paymentId: "EP-\(index)-" + random.alphanumeric(random.int(1...16)), params: params))
        }
        let urls = try await EcommpaySDK.pageURL(items)
        for (item, sdk) in zip(items, urls) {
            let params = try OrderedJSON.parse(Data(sdk.params.utf8))
            let members = try #require(params.objectMembers)
            #expect(sdk.url.hasPrefix("https://paymentpage.ecommpay.com/payment?"))
            let query = try FormFields.decode(Data(String(sdk.url.split(separator: "?", maxSplits: 1)[1]).utf8))
            #expect(query.names == members.map(\.key) + ["signature"])
            #expect(query["signature"] == EcommpaySigner.sign(params, secret: item.secret), "\(sdk.url)")
            #expect(query["interface_type"] == "{\"id\": 24}" && members.first?.key == "project_id")
            for member in members {
                let text: String? = switch member.value {
                case .string(let value): value
                case .number(let value): value
                case .bool(let flag): flag ? "True" : "False"
                default: nil
                }
                #expect(query[member.key] == text, "\(member.key) in \(sdk.url)")
            }
        }
        #expect(urls.contains { $0.url.contains("redirect=True") } && urls.contains { $0.url.contains("=False") })
    }

    @Test("EcommpayServer.prepare's Payment Page URLs (Alipay, WeChat Pay, PayPal; sale, authorisation): the SDK's SignatureHandler signs the URL's parameters to the URL's signature, and the SDK's own URL for them differs only by its interface_type")
    func tillPaymentPageURLs() async throws {
        let secret = "till-page-secret"
        let server = EcommpayServer(secret: secret, settings: EcommpaySettings(projectId: 8080), transport: NoCallTransport())
        let currencies = ["USD", "EUR", "GBP", "JPY", "KWD"]
        let descriptions: [String?] = [nil, "Оплата заказа №1 — café", "tea & cakes; 2=two + 🙂", "plain"]
        var pages: [(url: URL, pairs: [(String, String)], signature: String)] = []
        for index in 0..<20 {
            let currency = try #require(Currency.lookup(currencies[index % currencies.count]))
            let intent = PaymentIntent(merchantReference: "order-\(index)", amount: Money(minorUnits: Int64(100 + index * 997), currency: currency),
                                       country: index % 3 == 0 ? try CountryCode("DE") : nil,
                                       method: [PaymentMethod.alipay, .wechatPay, .paypal][index % 3], action: index % 4 == 3 ? .authorize : .sale,
                                       customer: Customer(reference: index % 2 == 0 ? "cust-\(index)" : nil, email: "b\(index)@shop.example",
                                                          firstName: index % 5 == 0 ? "Zoë" : nil, locale: index % 2 == 0 ? "de-DE" : nil),
                                       description: descriptions[index % descriptions.count])
            let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: "attempt-\(index)"),
                                         returnURL: URL(string: "https://shop.example/return?order=\(index)&x=a+b"))
            let preparation = try await server.prepare(context)
            let url = try #require(preparation.parameters[EcommpayGateway.Parameter.pageURL].flatMap(URL.init(string:)))
            let query = try FormFields.decode(Data((url.query ?? "").utf8))
            let signature = try #require(query["signature"])
            #expect(query.names.last == "signature")
            pages.append((url, query.pairs.dropLast().map { ($0.name, $0.value) }, signature))
        }
        // The SDK's signer over the URL's parameters, as strings (a number and its text, true and "1", sign alike).
        let signed = try await EcommpaySDK.sign(pages.map { page in
            .init(secret: secret, json: String(decoding: OrderedJSON.object(page.pairs.map { .init(key: $0.0, value: .string($0.1)) }).serialized(),
                                               as: UTF8.self))
        })
        for (page, sdk) in zip(pages, signed) {
            #expect(sdk.signature == page.signature, "\(page.url)")
            #expect(page.url.absoluteString.hasPrefix("https://paymentpage.ecommpay.com/payment?"))
        }
        // The SDK's Payment for the same parameters adds interface_type; Till signs its parameters to the SDK's signature.
        let built = try await EcommpaySDK.pageURL(pages.map { page in
            let projectId = page.pairs.first { $0.0 == "project_id" }?.1 ?? ""
            let paymentId = page.pairs.first { $0.0 == "payment_id" }?.1 ?? ""
            let rest = page.pairs.filter { $0.0 != "project_id" && $0.0 != "payment_id" }
            return .init(secret: secret, baseUrl: "", projectId: projectId, paymentId: paymentId,
                         params: rest.map { [$0.0, String(decoding: OrderedJSON.string($0.1).serialized(), as: UTF8.self)] })
        })
        for (page, sdk) in zip(pages, built) {
            let params = try OrderedJSON.parse(Data(sdk.params.utf8))
            let query = try FormFields.decode(Data(String(sdk.url.split(separator: "?", maxSplits: 1)[1]).utf8))
            #expect(query["signature"] == EcommpaySigner.sign(params, secret: secret))
            let sdkNames = Set(query.names).subtracting(["interface_type", "signature"])
            #expect(sdkNames == Set(page.pairs.map(\.0)))
            for (name, value) in page.pairs { #expect(query[name] == value, "\(name)") }
        }
    }
}
