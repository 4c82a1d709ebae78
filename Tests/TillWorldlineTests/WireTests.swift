import Foundation
import Testing
import Till
@testable import TillWorldline

@Suite("Worldline Client API wire models")
struct WireTests {
    private func decode<T: Decodable>(_ type: T.Type, _ name: String, key: String = "body") throws -> T {
        try JSONDecoder().decode(type, from: try clientFixtureBody(name, key: key))
    }

    @Test("the Swift SDK's paymentProducts.json resource decodes: ids, hints, accounts on file")
    func products() throws {
        let products = try decode(WorldlinePaymentProducts.self, "products.swift-resource.json").paymentProducts
        #expect(products.count > 20)
        let visa = try #require(products.first)
        #expect(visa.id == 1)
        #expect(visa.displayHints == WorldlineDisplayHints(displayOrder: 20, label: "Visa", logo: "/templates/master/global/css/img/ppimages/pp_logo_1_v1.png"))
        #expect(visa.allowsRecurring && visa.allowsTokenization && !visa.autoTokenized)
        #expect(visa.mobileIntegrationLevel == "OPTIMISED_SUPPORT")
        #expect(visa.paymentMethod == nil)
        let account = try #require(visa.accountOnFile(id: 0))
        #expect(account.paymentProductId == 1)
        #expect(account.attributes.map(\.key) == ["cardholderName", "cardNumber", "expiryDate", "issueNumber"])
        #expect(account.attribute("cardNumber")?.value == "************7988")
        // No status in this resource: editable.
        #expect(!account.isReadOnly("cardNumber"))
        // The label is the card number's attribute under the template's mask (spacing is the mask's).
        #expect(account.label.filter { $0 != " " } == "************7988")
        // UnionPay (430) has no mobileIntegrationLevel.
        #expect(products.first { $0.id == 430 }?.mobileIntegrationLevel == nil)
    }

    @Test("the product detail resource: fields, display hints, tooltip, attribute statuses")
    func productDetail() throws {
        let product = try decode(WorldlinePaymentProduct.self, "product-detail.swift-resource.json")
        #expect(product.id == 1)
        #expect(product.displayHints.label == "Visa")
        #expect(product.fieldsInDisplayOrder.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
        let card = try #require(product.field(id: "cardNumber"))
        #expect(card.type == .numericString)
        #expect(card.usedForLookup == false)
        #expect(card.displayHints?.mask == "{{9999}} {{9999}} {{9999}} {{9999}} {{999}}")
        #expect(card.displayHints?.alwaysShow == true)
        #expect(card.displayHints?.preferredInputType == .integerKeyboard)
        #expect(card.displayHints?.formElement.type == .text)
        #expect(card.displayHints?.placeholderLabel == "**** **** **** ****")
        #expect(product.field(id: "expiryDate")?.type == .expiryDate)
        let cvv = try #require(product.field(id: "cvv"))
        #expect(cvv.displayHints?.tooltip?.image == "/templates/master/global/css/img/ppimages/ppf_cvv_v1.png")
        #expect(cvv.displayHints?.tooltip?.label?.hasPrefix("The CVV") == true)
        let account = try #require(product.accountsOnFile.first)
        #expect(account.attribute("cardholderName")?.status == .mustWrite)
        #expect(account.attribute("cardholderName")?.mustWriteReason == "IN_THE_PAST")
        #expect(account.isReadOnly("cardNumber"))
        #expect(account.isReadOnly("expiryDate"))
        #expect(!account.isReadOnly("issueNumber"))
        #expect(!account.isReadOnly("cvv"))
    }

    @Test("the SDK's stub: a key the gateway adds is ignored; formElement currency; the missing-fields resource decodes")
    func unknownKeys() throws {
        let stub = try decode(WorldlinePaymentProduct.self, "product-detail.swift-stub.json")
        #expect(stub.paymentMethod == "card")
        #expect(stub.maxAmount == 1_000_000)
        #expect(stub.fields.first?.displayHints?.formElement.type == .currency)
        let missing = try decode(WorldlinePaymentProduct.self, "product-detail-missing-fields.swift-resource.json")
        #expect(missing.fields.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
        #expect(missing.field(id: "expiryDate")?.displayHints?.obfuscate == false)
        #expect(missing.field(id: "expiryDate")?.displayHints?.alwaysShow == false)
    }

    @Test("groups and a group detail decode; group ids are strings")
    func groups() throws {
        let groups = try decode(WorldlinePaymentProductGroups.self, "productgroups.swift-resource.json").paymentProductGroups
        #expect(groups.map(\.id) == ["card"])
        #expect(groups.first?.displayHints.displayOrder == 2_147_483_647)
        let stub = try decode(WorldlinePaymentProductGroups.self, "productgroups.swift-stub.json").paymentProductGroups
        #expect(stub.map(\.id) == ["cards"])
        #expect(stub.first?.deviceFingerprintEnabled == true)
        let group = try decode(WorldlinePaymentProductGroup.self, "productgroup-detail.swift-resource.json")
        #expect(group.id == "card")
        #expect(group.fields.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
        #expect(group.displayHints.logo == "templates/master/global/css/img/ppimages/group-card.png")
    }

    @Test("every vendor IIN answer decodes")
    func iinAnswers() throws {
        let fixture = try clientFixture("iin-responses.json")
        let cases = try #require(fixture["cases"] as? [[String: Any]])
        var decoded = 0
        for vector in cases {
            guard let body = vector["body"] else { continue }
            let answer = try JSONDecoder().decode(WorldlineIINDetailsResponse.self, from: try JSONSerialization.data(withJSONObject: body))
            #expect(answer.paymentProductId != nil)
            decoded += 1
        }
        #expect(decoded == 6)
        let swiftStub = try JSONDecoder().decode(WorldlineIINDetailsResponse.self,
                                                 from: try JSONSerialization.data(withJSONObject: cases[0]["body"]!))
        #expect(swiftStub == WorldlineIINDetailsResponse(paymentProductId: 3, countryCode: "RU", isAllowedInContext: nil,
                                                         coBrands: [WorldlineIINCoBrand(paymentProductId: 1, isAllowedInContext: true)]))
    }

    @Test("the other answers and the error body decode")
    func others() throws {
        let misc = try clientFixture("misc.js-fixtures.json")
        func data(_ key: String) throws -> Data { try JSONSerialization.data(withJSONObject: misc[key]!) }
        #expect(try JSONDecoder().decode(WorldlineThirdPartyStatusResponse.self, from: data("thirdPartyStatus")).thirdPartyStatus == .waiting)
        #expect(try JSONDecoder().decode(WorldlineDirectory.self, from: data("directory")).entries.count == 4)
        let error = try JSONDecoder().decode(WorldlineAPIErrorResponse.self, from: data("sdkSyntheticUnknownProductError"))
        #expect(error.errors.first?.propertyName == "productId")
        #expect(error.errors.first?.httpStatusCode == 404)
        let forbidden = try decode(WorldlineAPIErrorResponse.self, "error-403.swift-stub.json")
        #expect(forbidden.errorId == "99")
        #expect(forbidden.errors.first?.category == "Test failure")
        #expect(try decode(WorldlineConvertedAmount.self, "convert-amount.swift-stub.json").convertedAmount == 138)
        #expect(try decode(WorldlineNetworks.self, "networks.swift-stub.json").networks == ["Visa", "MasterCard"])
        let directory = try decode(WorldlineDirectory.self, "directory.swift-stub.json")
        #expect(directory.entries.first == WorldlineDirectoryEntry(issuerId: "ABNANL2A", issuerList: "short", issuerName: "ABN Amro Bank",
                                                                   countryNames: ["Nederland"]))
    }

    @Test("a known key of the wrong type is an error naming its path; an unknown key is not")
    func wrongTypes() async throws {
        var object = try #require(try JSONSerialization.jsonObject(with: try clientFixtureBody("products.swift-resource.json")) as? [String: Any])
        var list = try #require(object["paymentProducts"] as? [[String: Any]])
        list[2]["id"] = "3"
        list[2]["someNewKey"] = ["anything": true]
        object["paymentProducts"] = list
        let transport = WorldlineStubTransport(body: try JSONSerialization.data(withJSONObject: object))
        do {
            _ = try await vendorTestAPI(transport).paymentProducts(for: vendorTestContext)
            Issue.record("a string id was read")
        } catch let error as CheckoutError {
            #expect(error.field == "body.paymentProducts[2].id")
            #expect(error.code == .malformedBody)
        }
        let badFlag = Data(#"{"paymentProductId":1,"isAllowedInContext":"yes"}"#.utf8)
        do {
            _ = try await vendorTestAPI(WorldlineStubTransport(body: badFlag)).iinDetails(partialCardNumber: "411111", for: vendorTestContext)
            Issue.record("a string flag was read")
        } catch let error as CheckoutError {
            #expect(error.field == "body.isAllowedInContext")
        }
        let product = Data(#"{"id":1,"displayHints":{"logo":"x"},"fields":[{"id":"cvv","displayHints":{"formElement":{"type":"text"},"obfuscate":"no"}}]}"#.utf8)
        do {
            _ = try await vendorTestAPI(WorldlineStubTransport(body: product)).paymentProduct(id: 1, for: vendorTestContext)
            Issue.record("a string obfuscate was read")
        } catch let error as CheckoutError {
            #expect(error.field == "body.fields[0].displayHints.obfuscate")
        }
    }

    @Test("a product detail encodes back to what decodes to the same value")
    func roundTrip() throws {
        let product = try decode(WorldlinePaymentProduct.self, "product-detail.swift-resource.json")
        let encoded = try JSONEncoder().encode(product)
        #expect(try JSONDecoder().decode(WorldlinePaymentProduct.self, from: encoded) == product)
        let group = try decode(WorldlinePaymentProductGroup.self, "productgroup-detail.swift-resource.json")
        #expect(try JSONDecoder().decode(WorldlinePaymentProductGroup.self, from: try JSONEncoder().encode(group)) == group)
        let session = try JSONDecoder().decode(WorldlineClientSession.self, from: Data(
            #"{"assetUrl":"https://assets.example/","clientApiUrl":"https://h/client/v1","clientSessionId":"s","customerId":"c","invalidTokens":[],"region":"EU"}"#.utf8))
        #expect(session.clientApiURL.absoluteString == "https://h/client/v1")
        #expect(session.assetURL.absoluteString == "https://assets.example/")
    }

    @Test("payment items: grouped products behind their group, sorted by display order, logos under the asset URL")
    func paymentItems() async throws {
        let stubProducts = try decode(WorldlinePaymentProducts.self, "products.swift-stub.json").paymentProducts
        let groups = try decode(WorldlinePaymentProductGroups.self, "productgroups.swift-stub.json").paymentProductGroups
        let resource = try decode(WorldlinePaymentProducts.self, "products.swift-resource.json").paymentProducts
        let assetURL = vendorTestSession.assetURL
        let items = WorldlinePaymentItems(products: stubProducts + resource.filter { $0.id > 3 }, groups: groups, assetURL: assetURL)
        // 1, 2 and 3 are in "cards" (displayOrder 20, as Visa's).
        #expect(Array(items.items.map(\.id).prefix(4)) == ["201", "cards", "11", "12"])
        #expect(items.items.filter { $0.id == "cards" }.count == 1)
        #expect(!items.items.contains { ["1", "2", "3"].contains($0.id) })
        let orders = items.items.map { $0.displayHints.displayOrder ?? Int.max }
        #expect(orders == orders.sorted())
        #expect(items.items.first?.id == "201")  // Invoice, displayOrder 17
        #expect(items.item(id: "2")?.label == "American Express")

        let ungrouped = WorldlinePaymentItems(products: resource, assetURL: assetURL)
        #expect(ungrouped.items.count == resource.count)
        #expect(ungrouped.accountsOnFile.map(\.id) == [0])
        #expect(ungrouped.hasAccountsOnFile)
        let visa = try #require(ungrouped.item(id: "1"))
        #expect(ungrouped.logo(of: visa)?.absoluteString
            == "https://ams1.sandbox.api-worldline.com/client/v1/assets/templates/master/global/css/img/ppimages/pp_logo_1_v1.png")
        #expect(ungrouped.logo(of: ungrouped.accountsOnFile[0]) == ungrouped.logo(of: visa))

        // load: products, then groups (with the locale).
        let transport = WorldlineStubTransport { request in
            let name = request.url.path.hasSuffix("/productgroups") ? "productgroups.swift-stub.json" : "products.swift-stub.json"
            return .success(TransportResponse(statusCode: 200, body: (try? clientFixtureBody(name)) ?? Data()))
        }
        var context = vendorTestContext
        context.locale = "en_GB"
        let loaded = try await WorldlinePaymentItems.load(try vendorTestAPI(transport), for: context)
        #expect(loaded.items.map(\.id) == ["cards"])
        #expect(transport.requests.map(\.url.path) == ["/client/v1/customer-id/products", "/client/v1/customer-id/productgroups"])
        let labels = WorldlineLabels(table: [WorldlineLabels.productKey("cards"): "Kaarten"])
        #expect(labels.name(of: loaded.items[0]) == "Cards")
        var unlabelled = loaded.groups[0]
        unlabelled.displayHints.label = nil
        #expect(labels.name(of: .group(unlabelled)) == "Kaarten")
        #expect(WorldlineLabels().name(of: .group(unlabelled)) == "cards")
    }
}
