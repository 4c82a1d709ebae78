import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Worldline emulator: the Client API")
struct WorldlineClientAPITests {
    static let context = "?countryCode=NL&currencyCode=EUR&amount=1000&isRecurring=false&hide=fields"

    static func ids(_ result: WLResult) -> [Int] {
        guard case .array(let products)? = result["paymentProducts"] else { return [] }
        return products.compactMap { $0["id"]?.parameterText }.compactMap { Int($0) }
    }

    @Test("a client session of this customer and a decodable meta info are required; errors have the vendor shape")
    func authentication() async throws {
        let vendor = try WorldlineFixtures.load("client-error-403.swift-stub.json")
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            #expect(try await harness.client("GET", "/products" + Self.context, session: session).status == 200)

            let noSession = try await harness.client("GET", "/products" + Self.context, session: session, authorization: "")
            #expect(noSession.status == 403)
            #expect(noSession.json.keys == vendor["body"]?.keys)
            #expect(noSession.string("errors.0.httpStatusCode") == "403")
            // Another customer's path with this session.
            let other = try await harness.createSession()
            #expect(try await harness.client("GET", "/products" + Self.context, session: session,
                                             customerId: other.customerId).status == 403)
            #expect(try await harness.client("GET", "/products" + Self.context, session: session,
                                             authorization: "GCS v1Client:unknown").status == 403)
            // Meta info: missing or not Base64 JSON is refused; android's URL-safe unpadded form is taken.
            #expect(try await harness.client("GET", "/products" + Self.context, session: session, meta: nil).status == 400)
            #expect(try await harness.client("GET", "/products" + Self.context, session: session, meta: "not base64!").status == 400)
            let android = Data(#"{"platformIdentifier":"Android/14","screenSize":"2400x1080","sdkIdentifier":"AndroidClientSDK/v7.0.4"}"#.utf8)
                .base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(try await harness.client("GET", "/products" + Self.context, session: session, meta: android).status == 200)
        }
    }

    @Test("products depend on country, currency and amount")
    func products() async throws {
        let stub = try WorldlineFixtures.load("client-products.swift-stub.json")
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let netherlands = try await harness.client("GET", "/products" + Self.context, session: session)
            #expect(netherlands.status == 200)
            let nl = Self.ids(netherlands)
            #expect(Set(nl).isSuperset(of: [1, 2, 3, 302, 809, 840]))
            #expect(!nl.contains(125) && !nl.contains(130))
            // Every key of the Swift SDK's stub products is there.
            let stubKeys = Set(stub["body"]?["paymentProducts"].flatMap { value -> [String]? in
                if case .array(let items) = value { return items.first?.keys }
                return nil
            } ?? [])
            #expect(stubKeys.isSubset(of: Set(netherlands.at("paymentProducts.0")?.keys ?? [])))

            let france = Self.ids(try await harness.client("GET", "/products?countryCode=FR&currencyCode=EUR&amount=1000",
                                                           session: session))
            #expect(france.contains(130) && !france.contains(809))
            let japan = Self.ids(try await harness.client("GET", "/products?countryCode=JP&currencyCode=JPY&amount=1000",
                                                          session: session))
            #expect(japan.contains(125))
            let small = Self.ids(try await harness.client("GET", "/products?countryCode=NL&currencyCode=EUR&amount=50",
                                                          session: session))
            #expect(!small.contains(840))
            // js leaves out falsy values: no amount is no amount filter.
            #expect(try await harness.client("GET", "/products?countryCode=NL&currencyCode=EUR", session: session).status == 200)
            let missing = try await harness.client("GET", "/products?currencyCode=EUR", session: session)
            #expect(missing.status == 400)
            #expect(missing.string("errors.0.propertyName") == "countryCode")
        }
    }

    @Test("product detail: the card fields of the vendor resource; unknown or unoffered products are 404 / 1007")
    func productDetail() async throws {
        let resource = try WorldlineFixtures.load("client-product-detail.swift-resource.json")
        let misc = try WorldlineFixtures.load("client-misc.js-fixtures.json")
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let visa = try await harness.client("GET", "/products/1" + Self.context, session: session)
            #expect(visa.status == 200)
            guard case .array(let fields)? = visa["fields"], case .array(let vendorFields)? = resource["body"]?["fields"] else {
                Issue.record("no fields")
                return
            }
            #expect(fields.map { $0["id"] } == vendorFields.map { $0["id"] })
            #expect(fields.map { $0["type"] } == vendorFields.map { $0["type"] })
            #expect(fields.map { $0["dataRestrictions"] } == vendorFields.map { $0["dataRestrictions"] })
            #expect(fields.map { $0["displayHints"]?["mask"] } == vendorFields.map { $0["displayHints"]?["mask"] })

            let unknown = try await harness.client("GET", "/products/99999" + Self.context, session: session)
            #expect(unknown.status == 404)
            let synthetic = misc["sdkSyntheticUnknownProductError"]
            #expect(unknown.string("errors.0.code") == synthetic?["errors"].flatMap { value -> String? in
                if case .array(let items) = value { return items.first?["code"]?.stringValue }
                return nil
            })
            #expect(unknown.string("errors.0.propertyName") == "productId")
            #expect(try await harness.client("GET", "/products/130" + Self.context, session: session).status == 404)
        }
    }

    @Test("networks, directory, product groups, convert amount, privacy policy")
    func otherReads() async throws {
        let networks = try WorldlineFixtures.load("client-networks.swift-stub.json")
        let misc = try WorldlineFixtures.load("client-misc.js-fixtures.json")
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let applePay = try await harness.client("GET", "/products/302/networks" + Self.context + "&locale=nl_NL", session: session)
            #expect(applePay.json == networks["body"])
            #expect(try await harness.client("GET", "/products/1/networks" + Self.context, session: session).status == 404)

            let directory = try await harness.client("GET", "/products/809/directory?countryCode=NL&currencyCode=EUR", session: session)
            #expect(directory.json == misc["directory"])

            let groups = try await harness.client("GET", "/productgroups" + Self.context + "&locale=nl_NL", session: session)
            #expect(groups.string("paymentProductGroups.0.id") == "cards")
            let group = try await harness.client("GET", "/productgroups/cards" + Self.context, session: session)
            if case .array(let fields)? = group["fields"] { #expect(fields.count == 3) } else { Issue.record("no group fields") }

            let converted = try await harness.client("GET", "/services/convert/amount?source=EUR&target=EUR&amount=3", session: session)
            #expect(converted.json == .object([.init(key: "convertedAmount", value: .number("3"))]))
            let dollars = try await harness.client("GET", "/services/convert/amount?source=EUR&target=USD&amount=1000", session: session)
            #expect(dollars.string("convertedAmount") == "1080")
            #expect(try await harness.client("GET", "/services/convert/amount?source=EUR&target=XXX&amount=1", session: session).status == 400)

            let policy = try await harness.client("GET", "/services/privacypolicy?locale=en_GB", session: session)
            #expect(policy.json.keys == ["htmlContent"])
        }
    }

    @Test("the public key is an RSA-2048 SubjectPublicKeyInfo the Swift SDK can strip")
    func publicKey() async throws {
        let vendor = try WorldlineFixtures.load("client-publickey-responses.json")
        guard case .array(let cases)? = vendor["cases"], let prefixHex = cases.last?["swift_strip_prefix_hex"]?.stringValue else {
            throw WorldlineFixtures.FixtureMissing()
        }
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let result = try await harness.client("GET", "/crypto/publickey", session: session)
            #expect(result.json.keys == cases.first?["body"]?.keys)
            #expect(result.string("keyId") == (try WorldlineHarness.key).keyId)
            let publicKey = try #require(result.string("publicKey"))
            let der = try #require(Data(base64Encoded: publicKey))
            #expect(der.count == 294)
            #expect(der.prefix(24).map { String(format: "%02x", $0) }.joined() == prefixHex)
        }
    }

    @Test("IIN details: the Swift (string-typed) and js (typed) bodies; co-brands; not allowed in context; unknown is 404")
    func iin() async throws {
        let vendor = try WorldlineFixtures.load("client-iin-responses.json")
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let swiftBody = #"{"bin": "41111111", "paymentContext": {"isRecurring": "false", "countryCode": "NL", "isInstallments": false, "amountOfMoney": {"amount": "1000", "currencyCode": "EUR"}}}"#
            let visa = try await harness.client("POST", "/services/getIINdetails", session: session, body: swiftBody)
            #expect(visa.status == 200)
            #expect(visa.string("paymentProductId") == "1")
            #expect(visa.string("isAllowedInContext") == "true")

            let jsBody = #"{"bin": "403550100", "paymentContext": {"countryCode": "FR", "isRecurring": false, "isInstallments": false, "amountOfMoney": {"amount": 1000, "currencyCode": "EUR"}}, "accountOnFileId": 7}"#
            let coBranded = try await harness.client("POST", "/services/getIINdetails", session: session, body: jsBody)
            #expect(coBranded.status == 200)
            // Same keys as the android resource normalIINResponseVisa.json.
            guard case .array(let resources)? = vendor["cases"] else { throw WorldlineFixtures.FixtureMissing() }
            let normal = resources.first { $0["from"]?.stringValue?.contains("normalIINResponseVisa.json") == true }
            #expect(coBranded.json.keys == normal?["body"]?.keys)
            #expect(coBranded.string("paymentProductId") == "130")
            #expect(coBranded.at("coBrands") == .array([
                .object([.init(key: "isAllowedInContext", value: .bool(true)), .init(key: "paymentProductId", value: .number("130"))]),
                .object([.init(key: "isAllowedInContext", value: .bool(true)), .init(key: "paymentProductId", value: .number("1"))]),
            ]))
            // Outside France the Carte Bancaire brand is not allowed, Visa still is.
            let abroad = try await harness.client("POST", "/services/getIINdetails", session: session,
                                                  body: jsBody.replacingOccurrences(of: "\"FR\"", with: "\"NL\""))
            #expect(abroad.string("isAllowedInContext") == "false")
            #expect(abroad.string("coBrands.1.isAllowedInContext") == "true")

            let jcb = #"{"bin": "352800", "paymentContext": {"countryCode": "NL", "isRecurring": "false", "amountOfMoney": {"amount": "1000", "currencyCode": "EUR"}}}"#
            #expect(try await harness.client("POST", "/services/getIINdetails", session: session, body: jcb)
                .string("isAllowedInContext") == "false")
            let jcbJapan = jcb.replacingOccurrences(of: "\"NL\"", with: "\"JP\"").replacingOccurrences(of: "EUR", with: "JPY")
            #expect(try await harness.client("POST", "/services/getIINdetails", session: session, body: jcbJapan)
                .string("isAllowedInContext") == "true")

            let unknown = try await harness.client("POST", "/services/getIINdetails", session: session,
                                                   body: swiftBody.replacingOccurrences(of: "41111111", with: "99999999"))
            #expect(unknown.status == 404)
            #expect(unknown.json["paymentProductId"] == nil)
            #expect(unknown.json.keys == ["errorId", "errors"])
            let short = try await harness.client("POST", "/services/getIINdetails", session: session,
                                                 body: swiftBody.replacingOccurrences(of: "41111111", with: "41111"))
            #expect(short.status == 400)
            #expect(short.string("errors.0.propertyName") == "bin")
        }
    }

    @Test("a card whose product is not offered in the payment's context is refused; in its context it pays")
    func productNotAllowed() async throws {
        try await WorldlineHarness.with { harness in
            let customer = #", "customer": {"billingAddress": {"countryCode": "NL"}}"#
            let session = try await harness.createSession()
            let input = try harness.encryptedInput(card: "3528000000000007", productId: 125, session: session)
            let body = #"{"encryptedCustomerInput": "\#(input)", "order": {"amountOfMoney": {"amount": 1000, "currencyCode": "EUR"}\#(customer)}}"#
            let refused = try await harness.server("POST", "/v1/1234/payments", json: body)
            #expect(refused.status == 400)
            #expect(refused.string("errors.0.propertyName") == "paymentProductId")

            let japan = try harness.encryptedInput(card: "3528000000000007", productId: 125, session: session)
            let ok = #"{"encryptedCustomerInput": "\#(japan)", "order": {"amountOfMoney": {"amount": 1000, "currencyCode": "JPY"}, "customer": {"billingAddress": {"countryCode": "JP"}}}}"#
            #expect(try await harness.server("POST", "/v1/1234/payments", json: ok).status == 201)

            // A Visa card cannot be paid as MasterCard.
            let mismatch = try harness.encryptedInput(card: "4111111111111111", productId: 3, session: session)
            let wrong = try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: mismatch))
            #expect(wrong.status == 400)
            #expect(wrong.string("errors.0.propertyName") == "paymentProductId")
        }
    }

    @Test("third-party status of a payment, for the session's merchant only")
    func thirdPartyStatus() async throws {
        try await WorldlineHarness.with { harness in
            let extra = #", "cardPaymentMethodSpecificInput": {"threeDSecure": {"redirectionData": {"returnUrl": "myapp://return"}}}"#
            let payment = try await harness.pay(card: "4000000000003220", extra: extra)
            let id = try #require(payment.string("payment.id"))
            let session = try await harness.createSession()
            let status = try await harness.client("GET", "/payments/\(id)/thirdpartystatus", session: session)
            #expect(status.json == .object([.init(key: "thirdPartyStatus", value: .string("WAITING"))]))
            let other = try await harness.server("POST", "/v1/5678/sessions", json: "{}", merchant: WorldlineHarness.otherMerchant)
            let foreign = ClientSessionInfo(id: try #require(other.string("clientSessionId")),
                                            customerId: try #require(other.string("customerId")),
                                            clientApiUrl: session.clientApiUrl)
            #expect(try await harness.client("GET", "/payments/\(id)/thirdpartystatus", session: foreign).status == 404)
        }
    }
}
