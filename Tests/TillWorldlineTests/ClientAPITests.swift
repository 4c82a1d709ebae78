import Foundation
import Testing
import Till
@testable import TillWorldline

// MARK: Test plumbing shared by the Client API, IIN and form tests

/// A transport that answers every request with `handler` and records what was sent.
final class WorldlineStubTransport: HTTPTransport, @unchecked Sendable {
    typealias Handler = @Sendable (TransportRequest) async -> Result<TransportResponse, TransportError>
    private let lock = NSLock()
    private var recorded: [TransportRequest] = []
    private let handler: Handler

    init(_ handler: @escaping Handler) { self.handler = handler }

    /// Answers every request with `status` and `body`.
    convenience init(status: Int = 200, body: Data) {
        self.init { _ in .success(TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: body)) }
    }

    var requests: [TransportRequest] { lock.withLock { recorded } }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        lock.withLock { recorded.append(request) }
        return try await handler(request).get()
    }
}

/// The JSON at `key` (default `body`) of a fixture under `Fixtures/client/`, re-serialized.
func clientFixtureBody(_ name: String, key: String = "body") throws -> Data {
    let object = try clientFixture(name)
    let value = try #require(object[key], "fixture \(name) has no \(key)")
    return try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
}

/// A fixture under `Fixtures/client/` as a JSON object.
func clientFixture(_ name: String) throws -> [String: Any] {
    let data = try worldlineFixture("client/\(name)")
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// The session of the Swift SDK's ClientApiTestCase (`WorldlineConnectKitTests/ClientApiTestCase.swift`).
let vendorTestSession = WorldlineClientSession(
    clientSessionId: "client-session-id", customerId: "customer-id",
    clientApiURL: URL(string: "https://ams1.sandbox.api-worldline.com/client/v1")!,
    assetURL: URL(string: "https://ams1.sandbox.api-worldline.com/client/v1/assets")!)

/// The payment context of the Swift SDK's ClientApiTestCase: 3 EUR cents, recurring, NL.
let vendorTestContext = WorldlinePaymentContext(amount: 3, currencyCode: "EUR", countryCode: "NL", isRecurring: true)

let testMetaInfo = WorldlineClientMetaInfo(platformIdentifier: "iOS/18.2", screenSize: "11702532", deviceType: "iPhone15,2",
                                           appIdentifier: "application-id", ipAddress: "ip-address")

func vendorTestAPI(_ transport: WorldlineStubTransport) throws -> WorldlineClientAPI {
    try WorldlineClientAPI(session: vendorTestSession, metaInfo: testMetaInfo, transport: transport)
}

/// A request's query as name → value.
func queryItems(_ request: TransportRequest) -> [String: String] {
    let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
    return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
}

// MARK: Tests

@Suite("Worldline Client API")
struct ClientAPITests {
    @Test("the Client API URL is normalised as the Swift SDK's fixBaseURL does, and a wrong path names clientApiUrl")
    func baseURL() throws {
        let good: [(String, String)] = [
            ("https://ams1.sandbox.api-worldline.com/client/v1", "https://ams1.sandbox.api-worldline.com/client/v1"),
            ("https://ams1.sandbox.api-worldline.com/client/v1/", "https://ams1.sandbox.api-worldline.com/client/v1"),
            ("https://ams1.sandbox.api-worldline.com/client", "https://ams1.sandbox.api-worldline.com/client/v1"),
            ("https://ams1.sandbox.api-worldline.com", "https://ams1.sandbox.api-worldline.com/client/v1"),
            ("https://ams1.sandbox.api-worldline.com/", "https://ams1.sandbox.api-worldline.com/client/v1"),
            ("http://127.0.0.1:8080//client//v1", "http://127.0.0.1:8080/client/v1"),
        ]
        for (given, expected) in good {
            #expect(try WorldlineClientSession.normalizedClientApiURL(URL(string: given)!).absoluteString == expected)
        }
        for bad in ["https://h/v1", "https://h/client/v2", "https://h/api/client/v1", "https://h/client/v1/x",
                    "ftp://h/client/v1", "https://h/client/v1?x=1", "https://user@h/client/v1"] {
            #expect(throws: CheckoutError.self) { try WorldlineClientSession.normalizedClientApiURL(URL(string: bad)!) }
            do {
                _ = try WorldlineClientSession.normalizedClientApiURL(URL(string: bad)!)
            } catch {
                #expect(error.field == "clientApiUrl")
            }
        }
        var session = vendorTestSession
        session.clientApiURL = URL(string: "https://h/v2")!
        do {
            _ = try WorldlineClientAPI(session: session, metaInfo: testMetaInfo, transport: WorldlineStubTransport(body: Data()))
            Issue.record("a wrong Client API path was accepted")
        } catch {
            #expect(error.field == "clientApiUrl")
            #expect(error.gateway == "worldline")
        }
    }

    @Test("X-GCS-ClientMetaInfo is standard Base64 of JSON with the Swift SDK's keys; appIdentifier defaults to UNKNOWN, an empty ipAddress is left out")
    func metaInfo() throws {
        let decoded = try #require(Data(base64Encoded: testMetaInfo.encoded))
        let object = try #require(try JSONSerialization.jsonObject(with: decoded) as? [String: String])
        #expect(Set(object.keys) == ["platformIdentifier", "sdkCreator", "screenSize", "deviceBrand", "deviceType",
                                     "appIdentifier", "ipAddress", "sdkIdentifier"])
        #expect(object["appIdentifier"] == "application-id")
        #expect(object["deviceBrand"] == "Apple")
        let bare = WorldlineClientMetaInfo(platformIdentifier: "iOS/18.2", screenSize: "11702532", deviceType: "iPhone15,2",
                                           appIdentifier: "", ipAddress: "")
        let bareObject = try #require(try JSONSerialization.jsonObject(with: Data(base64Encoded: bare.encoded)!) as? [String: String])
        #expect(bareObject["appIdentifier"] == "UNKNOWN")
        #expect(bareObject["ipAddress"] == nil)
        #expect(bare.encoded.count % 4 == 0)
    }

    @Test("GET /products: path, query, headers as the Swift SDK sends them; the vendor stub decodes")
    func products() async throws {
        let fixture = try clientFixture("products.swift-stub.json")
        let transport = WorldlineStubTransport(body: try clientFixtureBody("products.swift-stub.json"))
        var context = vendorTestContext
        context.locale = "nl_NL"
        let products = try await vendorTestAPI(transport).paymentProducts(for: context)
        #expect(products.paymentProducts.map(\.id) == [1, 2, 3])
        #expect(products.paymentProducts.allSatisfy { $0.paymentProductGroup == "cards" })
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(request.url.path == (fixture["request"] as? [String: Any])?["path"] as? String)
        #expect(request.url.absoluteString == "https://ams1.sandbox.api-worldline.com/client/v1/customer-id/products"
            + "?amount=3&countryCode=NL&currencyCode=EUR&hide=fields&isRecurring=true&locale=nl_NL")
        #expect(request.headers["Authorization"] == "GCS v1Client:client-session-id")
        #expect(request.headers["X-GCS-ClientMetaInfo"] == testMetaInfo.encoded)
        #expect(request.body == nil)
    }

    @Test("GET /products/{id}: no hide, forceBasicFlow only when given, locale only when set")
    func productDetail() async throws {
        let transport = WorldlineStubTransport(body: try clientFixtureBody("product-detail.swift-stub.json"))
        let api = try vendorTestAPI(transport)
        let product = try await api.paymentProduct(id: 1, for: vendorTestContext)
        #expect(product.id == 1)
        #expect(product.fields.map(\.id) == ["cardNumber"])
        #expect(product.paymentProductGroup == "cards")
        _ = try await api.paymentProduct(id: 3012, for: WorldlinePaymentContext(amount: 1000, currencyCode: "EUR", countryCode: "BE", locale: "fr_BE"),
                                         forceBasicFlow: true)
        let urls = transport.requests.map(\.url.absoluteString)
        #expect(urls == [
            "https://ams1.sandbox.api-worldline.com/client/v1/customer-id/products/1?amount=3&countryCode=NL&currencyCode=EUR&isRecurring=true",
            "https://ams1.sandbox.api-worldline.com/client/v1/customer-id/products/3012?amount=1000&countryCode=BE&currencyCode=EUR&forceBasicFlow=true&isRecurring=false&locale=fr_BE",
        ])
    }

    @Test("product groups, group detail and networks need the locale, as in the Swift SDK")
    func groupsNeedLocale() async throws {
        let transport = WorldlineStubTransport(body: try clientFixtureBody("productgroups.swift-resource.json"))
        let api = try vendorTestAPI(transport)
        let calls: [@Sendable () async throws -> Any] = [{ try await api.paymentProductGroups(for: vendorTestContext) as Any },
                     { try await api.paymentProductGroup(id: "cards", for: vendorTestContext) as Any },
                     { try await api.networks(productId: 302, for: vendorTestContext) as Any }]
        for call in calls {
            do {
                _ = try await call()
                Issue.record("a call without a locale was sent")
            } catch let error as CheckoutError {
                #expect(error.field == "locale")
                #expect(error.code == .missingField)
            }
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("GET /productgroups, /productgroups/{id}, /products/{id}/networks and /directory with the Swift SDK's query")
    func groupsNetworksDirectory() async throws {
        let bodies: [String: Data] = [
            "/client/v1/customer-id/productgroups": try clientFixtureBody("productgroups.swift-resource.json"),
            "/client/v1/customer-id/productgroups/cards": try clientFixtureBody("productgroup-detail.swift-resource.json"),
            "/client/v1/customer-id/products/302/networks": try clientFixtureBody("networks.swift-stub.json"),
            "/client/v1/customer-id/products/809/directory": try clientFixtureBody("directory.swift-stub.json"),
        ]
        let transport = WorldlineStubTransport { request in
            .success(TransportResponse(statusCode: bodies[request.url.path] == nil ? 404 : 200, body: bodies[request.url.path] ?? Data()))
        }
        let api = try vendorTestAPI(transport)
        var context = vendorTestContext
        context.locale = "en_GB"
        let groups = try await api.paymentProductGroups(for: context)
        #expect(groups.paymentProductGroups.map(\.id) == ["card"])
        let group = try await api.paymentProductGroup(id: "cards", for: context)
        #expect(group.fields.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
        #expect(try await api.networks(productId: 302, for: context).networks == ["Visa", "MasterCard"])
        let directory = try await api.directory(productId: 809, for: context)
        #expect(directory.entries.map(\.issuerId) == ["ABNANL2A", "ASNBNL21"])
        #expect(transport.requests.map(\.url.query) == [
            "amount=3&countryCode=NL&currencyCode=EUR&hide=fields&isRecurring=true&locale=en_GB",
            "amount=3&countryCode=NL&currencyCode=EUR&isRecurring=true&locale=en_GB",
            "amount=3&countryCode=NL&currencyCode=EUR&hide=fields&isRecurring=true&locale=en_GB",
            "countryCode=NL&currencyCode=EUR",
        ])
    }

    @Test("public key, convert, privacy policy and third-party status")
    func services() async throws {
        let publicKey = try #require(((try clientFixture("publickey-responses.json"))["cases"] as? [[String: Any]])?.first?["body"])
        let misc = try clientFixture("misc.js-fixtures.json")
        let bodies: [String: Data] = [
            "/client/v1/customer-id/crypto/publickey": try JSONSerialization.data(withJSONObject: publicKey),
            "/client/v1/customer-id/services/convert/amount": try clientFixtureBody("convert-amount.swift-stub.json"),
            "/client/v1/customer-id/services/privacypolicy": Data(#"{"htmlContent":"<p>policy</p>"}"#.utf8),
            "/client/v1/customer-id/payments/000000123/thirdpartystatus": try JSONSerialization.data(withJSONObject: misc["thirdPartyStatus"]!),
        ]
        let transport = WorldlineStubTransport { request in
            .success(TransportResponse(statusCode: bodies[request.url.path] == nil ? 404 : 200, body: bodies[request.url.path] ?? Data()))
        }
        let api = try vendorTestAPI(transport)
        let key = try await api.publicKey()
        #expect(key.keyId == "86b64e4e-f43e-4a27-9863-9bbd5b499f82")
        let eur = try Currency(code: "EUR"), usd = try Currency(code: "USD"), jpy = try Currency(code: "JPY")
        #expect(try await api.convert(Money(minorUnits: 3, currency: eur), to: usd) == Money(minorUnits: 138, currency: usd))
        // The Connect API's integers have two decimals whatever the currency: the stub's 138 is ¥1.38, not a whole yen.
        let notWhole = await #expect(throws: CheckoutError.self) { _ = try await api.convert(Money(minorUnits: 3, currency: eur), to: jpy) }
        #expect(notWhole?.code == .invalidAmount && notWhole?.field == "answer.convertedAmount")
        #expect(try await api.privacyPolicy(productId: 1, locale: "nl_NL").htmlContent == "<p>policy</p>")
        _ = try await api.privacyPolicy()
        #expect(try await api.thirdPartyStatus(paymentId: "000000123") == .waiting)
        let convert = try clientFixture("convert-amount.swift-stub.json")["request"] as? [String: Any]
        let sent = transport.requests
        #expect(queryItems(sent[1]) == convert?["query"] as? [String: String])
        #expect(sent[1].url.query == "amount=3&source=EUR&target=USD")
        #expect(sent[2].url.query == "amount=3&source=EUR&target=JPY")
        #expect(sent[3].url.query == "paymentProductId=1&locale=nl_NL")
        #expect(sent[4].url.query == nil)
        #expect(sent.allSatisfy { $0.method == .get && $0.body == nil })
    }

    @Test("POST /services/getIINdetails: the body is the Swift SDK's, bins as the iin_rules vectors say")
    func iinRequest() async throws {
        let rules = try clientFixture("iin-rules.json")
        let cases = try #require(rules["cases"] as? [[String: String]])
        let example = try #require(rules["request_body_example"] as? [String: Any])
        var checked = 0
        for vector in cases {
            let input = try #require(vector["input"])
            let transport = WorldlineStubTransport(body: Data(#"{"paymentProductId":1,"isAllowedInContext":true}"#.utf8))
            let api = try vendorTestAPI(transport)
            let context = WorldlinePaymentContext(amount: 1000, currencyCode: "EUR", countryCode: "NL")
            let details = try await api.iinDetails(partialCardNumber: input, for: context)
            if let bin = vector["bin_sent"] {
                let request = try #require(transport.requests.first)
                #expect(request.method == .post)
                #expect(request.url.absoluteString == "https://ams1.sandbox.api-worldline.com/client/v1/customer-id/services/getIINdetails")
                #expect(request.headers["Content-Type"] == "application/json")
                #expect(request.headers["Authorization"] == "GCS v1Client:client-session-id")
                let body = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])
                #expect(body["bin"] as? String == bin)
                #expect(details.bin == bin)
                #expect(details.status == .supported)
                var expected = example
                expected["bin"] = bin
                #expect(NSDictionary(dictionary: body).isEqual(to: expected), "body \(body) for \(input)")
            } else {
                #expect(transport.requests.isEmpty)
                #expect(details.status == .notEnoughDigits)
            }
            checked += 1
        }
        #expect(checked == 6)
        // The example body's types exactly: strings for isRecurring and amount, a Bool for isInstallments.
        let transport = WorldlineStubTransport(body: Data("{}".utf8))
        _ = try await vendorTestAPI(transport).iinDetails(partialCardNumber: "4567350000427977",
                                                          for: WorldlinePaymentContext(amount: 1000, currencyCode: "EUR", countryCode: "NL"))
        let text = String(decoding: try #require(transport.requests.first?.body), as: UTF8.self)
        #expect(text == #"{"bin":"45673500","paymentContext":{"amountOfMoney":{"amount":"1000","currencyCode":"EUR"},"countryCode":"NL","isInstallments":false,"isRecurring":"false"}}"#)
    }

    @Test("an IIN 404 reads as UNKNOWN; a non-digit is refused before sending")
    func iin404() async throws {
        let misc = try clientFixture("misc.js-fixtures.json")
        let transport = WorldlineStubTransport(status: 404, body: try JSONSerialization.data(withJSONObject: misc["sdkSyntheticUnknownProductError"]!))
        let api = try vendorTestAPI(transport)
        #expect(try await api.iinDetails(partialCardNumber: "999999", for: vendorTestContext).status == .unknown)
        do {
            _ = try await api.iinDetails(partialCardNumber: "4111-11", for: vendorTestContext)
            Issue.record("a non-digit was sent")
        } catch {
            #expect(error.field == "partialCardNumber")
        }
        #expect(transport.requests.count == 1)
    }

    @Test("an API error body becomes a CheckoutError with the first error's propertyName and code")
    func apiErrors() async throws {
        let transport403 = WorldlineStubTransport(status: 403, body: try clientFixtureBody("error-403.swift-stub.json"))
        do {
            _ = try await vendorTestAPI(transport403).paymentProducts(for: vendorTestContext)
            Issue.record("a 403 was read as products")
        } catch let error as CheckoutError {
            #expect(error.gatewayCode == "1")
            #expect(error.gatewayMessage == "You are not allowed to perform this call.")
            #expect(error.category == .configuration)
            #expect(error.field == nil)
            #expect(error.message.contains("code 1"))
        }
        let misc = try clientFixture("misc.js-fixtures.json")
        let transport404 = WorldlineStubTransport(status: 404, body: try JSONSerialization.data(withJSONObject: misc["sdkSyntheticUnknownProductError"]!))
        do {
            _ = try await vendorTestAPI(transport404).paymentProduct(id: 9999, for: vendorTestContext)
            Issue.record("a 404 was read as a product")
        } catch let error as CheckoutError {
            #expect(error.field == "productId")
            #expect(error.gatewayCode == "1007")
            #expect(error.message.contains("1007"))
            #expect(error.category == .invalidInput)
        }
        let html = WorldlineStubTransport(status: 502, body: Data("<html>bad gateway</html>".utf8))
        do {
            _ = try await vendorTestAPI(html).publicKey()
            Issue.record("a 502 was read as a key")
        } catch let error as CheckoutError {
            #expect(error.gatewayCode == "502")
            #expect(error.category == .unavailable)
        }
    }

    @Test("transport failures are classified by the core's rule")
    func transportFailures() async throws {
        let refused = WorldlineStubTransport { _ in .failure(TransportError(.notSent, "refused")) }
        do {
            _ = try await vendorTestAPI(refused).paymentProducts(for: vendorTestContext)
            Issue.record("no error")
        } catch let error as CheckoutError {
            #expect(error.category == .unavailable)
            #expect(error.gateway == "worldline")
        }
        let lost = WorldlineStubTransport { _ in .failure(TransportError(.connectionLost, "lost")) }
        do {
            _ = try await vendorTestAPI(lost).paymentProducts(for: vendorTestContext)
            Issue.record("no error")
        } catch let error as CheckoutError {
            #expect(error.category == .unknownOutcome)
        }
    }

    @Test("the customer id and path ids are escaped as one path segment")
    func escaping() async throws {
        var session = vendorTestSession
        session.customerId = "cust/1 2"
        let transport = WorldlineStubTransport(body: Data(#"{"thirdPartyStatus":"COMPLETED"}"#.utf8))
        let api = try WorldlineClientAPI(session: session, metaInfo: testMetaInfo, transport: transport)
        #expect(try await api.thirdPartyStatus(paymentId: "a/b") == .completed)
        #expect(transport.requests.first?.url.absoluteString
            == "https://ams1.sandbox.api-worldline.com/client/v1/cust%2F1%202/payments/a%2Fb/thirdpartystatus")
    }

    @Test("assets: URLs joined with one slash, cached in memory, evicted by size")
    func assets() async throws {
        let base = URL(string: "https://ams1.sandbox.api-worldline.com/client/v1/assets")!
        #expect(WorldlineAssets.url(forPath: "/templates/a.png", assetURL: base)?.absoluteString
            == "https://ams1.sandbox.api-worldline.com/client/v1/assets/templates/a.png")
        #expect(WorldlineAssets.url(forPath: "templates/a.png", assetURL: URL(string: "https://assets.example/")!)?.absoluteString
            == "https://assets.example/templates/a.png")
        #expect(WorldlineAssets.url(forPath: "https://example.com/x.png", assetURL: base)?.absoluteString == "https://example.com/x.png")
        #expect(WorldlineAssets.url(forPath: "", assetURL: base) == nil)

        let transport = WorldlineStubTransport { request in
            .success(TransportResponse(statusCode: 200, body: Data(repeating: 7, count: request.url.lastPathComponent.count * 10)))
        }
        let cache = WorldlineAssetCache(assetURL: base, transport: transport, maxBytes: 100)
        let first = try await cache.data(forPath: "abcd.png")      // 80 bytes
        #expect(first.count == 80)
        _ = try await cache.data(forPath: "abcd.png")
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.headers.isEmpty == true)
        _ = try await cache.data(forPath: "b.png")                 // 50 bytes: evicts abcd.png
        #expect(await cache.bytes == 50)
        _ = try await cache.data(forPath: "abcd.png")
        #expect(transport.requests.count == 3)
        let big = try await cache.data(forPath: "much-too-large.png") // 180 bytes: returned, not kept
        #expect(big.count == 180)
        #expect(await cache.bytes <= 100)

        let failing = WorldlineAssetCache(assetURL: base, transport: WorldlineStubTransport(status: 404, body: Data()))
        await #expect(throws: CheckoutError.self) { try await failing.data(forPath: "x.png") }
    }
}
