import Foundation
import Testing
import Till
@testable import TillWorldline

@Suite("Worldline form model")
struct FormTests {
    /// 1 June 2026, UTC: expiry dates are checked against it.
    static let june2026 = Date(timeIntervalSince1970: 1_780_272_000)

    /// A gateway for the form: the IIN answer, products by id (the Swift SDK's product resource,
    /// renumbered), the card group.
    private func gateway(iin: Data) throws -> WorldlineStubTransport {
        let product = try JSONDecoder().decode(WorldlinePaymentProduct.self, from: try clientFixtureBody("product-detail.swift-resource.json"))
        return WorldlineStubTransport { request in
            let path = request.url.path
            if path.hasSuffix("/services/getIINdetails") { return .success(TransportResponse(statusCode: 200, body: iin)) }
            if let id = Int(path.split(separator: "/").last ?? ""), path.contains("/products/") {
                var renumbered = product
                renumbered.basic.id = id
                renumbered.basic.accountsOnFile = []
                let body = (try? JSONEncoder().encode(renumbered)) ?? Data()
                return .success(TransportResponse(statusCode: 200, body: body))
            }
            return .success(TransportResponse(statusCode: 404, body: Data()))
        }
    }

    private func visaIIN() throws -> Data {   // android normalIINResponseVisa: product 1, co-brands 1 and 122
        let cases = try #require(try clientFixture("iin-responses.json")["cases"] as? [[String: Any]])
        let body = try #require(cases[5]["body"])
        return try JSONSerialization.data(withJSONObject: body)
    }

    private func cardGroup() throws -> WorldlineForm.Item {
        .group(try JSONDecoder().decode(WorldlinePaymentProductGroup.self, from: try clientFixtureBody("productgroup-detail.swift-resource.json")))
    }

    private func visa(withAccounts: Bool = false) throws -> WorldlinePaymentProduct {
        var product = try JSONDecoder().decode(WorldlinePaymentProduct.self, from: try clientFixtureBody("product-detail.swift-resource.json"))
        if !withAccounts { product.basic.accountsOnFile = [] }
        return product
    }

    /// Types `text` one character at a time at the end of field `id`, as a keyboard would.
    @discardableResult
    private func type(_ text: String, into id: String, of form: WorldlineForm, settling: Bool = true) async -> [(value: String, cursor: Int)] {
        var seen: [(value: String, cursor: Int)] = []
        for character in text {
            let count = await form.field(id)?.value.count ?? 0
            seen.append(await form.edit(id, replacing: count..<count, with: String(character)))
            if settling { await form.settle() }
        }
        return seen
    }

    @Test("typing a Visa number digit by digit: the Swift SDK's masked values and cursors; the IIN switches the group to Visa")
    func typingVisa() async throws {
        let transport = try gateway(iin: try visaIIN())
        let api = try vendorTestAPI(transport)
        let form = WorldlineForm(api: api, context: vendorTestContext, item: try cardGroup(), now: { Self.june2026 })
        #expect(await form.productId == nil)
        let seen = await type("4111111111111111", into: "cardNumber", of: form)
        let expected: [(String, Int)] = [
            ("4", 1), ("41", 2), ("411", 3), ("4111 ", 5), ("4111 1", 6), ("4111 11", 7), ("4111 111", 8), ("4111 1111 ", 10),
            ("4111 1111 1", 11), ("4111 1111 11", 12), ("4111 1111 111", 13), ("4111 1111 1111 ", 15),
            ("4111 1111 1111 1", 16), ("4111 1111 1111 11", 17), ("4111 1111 1111 111", 18), ("4111 1111 1111 1111 ", 20),
        ]
        #expect(seen.map(\.value) == expected.map(\.0))
        #expect(seen.map(\.cursor) == expected.map(\.1))
        // Switched at 6 digits to Visa (1); 8 digits asked again (a new bin) and kept Visa.
        #expect(await form.productId == 1)
        let iinBodies = transport.requests.filter { $0.url.path.hasSuffix("getIINdetails") }
            .compactMap { try? JSONSerialization.jsonObject(with: $0.body ?? Data()) as? [String: Any] }
        #expect(iinBodies.map { $0["bin"] as? String } == ["411111", "41111111"])
        #expect(transport.requests.filter { $0.url.path.hasSuffix("/products/1") }.count == 1)
        #expect(await form.iin?.status == .supported)
        #expect(await form.unmaskedValues["cardNumber"] == "4111111111111111")
        #expect(await form.field("cardNumber")?.value == "4111 1111 1111 1111 ")
        #expect(await form.fields.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
    }

    @Test("typing without waiting for the lookups ends in the same state, with no more lookups than bins")
    func typingFast() async throws {
        let transport = try gateway(iin: try visaIIN())
        let form = WorldlineForm(api: try vendorTestAPI(transport), context: vendorTestContext, item: try cardGroup())
        await type("4111111111111111", into: "cardNumber", of: form, settling: false)
        await form.settle()
        #expect(await form.productId == 1)
        #expect(await form.iin?.bin == "41111111")
        #expect(transport.requests.filter { $0.url.path.hasSuffix("getIINdetails") }.count <= 2)
    }

    @Test("the co-brand choice: the card's allowed brands, chooseProduct switches and keeps the values")
    func coBrands() async throws {
        let transport = try gateway(iin: try visaIIN())
        let form = WorldlineForm(api: try vendorTestAPI(transport), context: vendorTestContext, item: .product(try visa()))
        await type("41111111", into: "cardNumber", of: form)
        await type("1230", into: "expiryDate", of: form)
        #expect(await form.coBrandChoices == [1, 122])
        #expect(await form.productId == 1)   // already one of the brands: no switch
        try await form.chooseProduct(id: 122)
        #expect(await form.productId == 122)
        #expect(await form.field("cardNumber")?.value == "4111 1111 ")
        #expect(await form.field("expiryDate")?.value == "12/30")
        do {
            try await form.chooseProduct(id: 3)
            Issue.record("a brand the card does not have was chosen")
        } catch {
            #expect(error.field == "paymentProductId")
        }
    }

    @Test("an IIN saying EXISTING_BUT_NOT_ALLOWED puts an error on the card number")
    func notAllowed() async throws {
        let transport = try gateway(iin: Data(#"{"paymentProductId":3,"countryCode":"US","isAllowedInContext":false}"#.utf8))
        let form = WorldlineForm(api: try vendorTestAPI(transport), context: vendorTestContext, item: .product(try visa()), now: { Self.june2026 })
        await type("5555555555554444", into: "cardNumber", of: form)
        #expect(await form.iin?.status == .existingButNotAllowed)
        #expect(await form.productId == 1)
        #expect(await form.errors(for: "cardNumber").map(\.messageId) == [WorldlineForm.notAllowedMessageId])
        await type("1230", into: "expiryDate", of: form)
        do {
            _ = try await form.customerInput(clientSessionId: "client-session-id")
            Issue.record("a card not allowed here was accepted")
        } catch {
            #expect(error.field == "cardNumber")
            #expect(error.message.contains(WorldlineForm.notAllowedMessageId))
        }
        // Fewer than 6 digits again: the error goes with the answer.
        let count = await form.field("cardNumber")?.value.count ?? 0
        _ = await form.edit("cardNumber", replacing: 0..<count, with: "55")
        #expect(await form.iin == nil)
        #expect(await form.errors(for: "cardNumber").map(\.messageId) != [WorldlineForm.notAllowedMessageId])
    }

    @Test("errors per field, then the customer input with unmasked values")
    func errorsAndInput() async throws {
        let transport = try gateway(iin: try visaIIN())
        let form = WorldlineForm(api: try vendorTestAPI(transport), context: vendorTestContext, item: .product(try visa()), now: { Self.june2026 })
        #expect(await form.errors().map { "\($0.fieldId):\($0.messageId)" } == ["cardNumber:required", "expiryDate:required"])
        do {
            _ = try await form.customerInput(clientSessionId: "client-session-id")
            Issue.record("an empty form was accepted")
        } catch {
            #expect(error.field == "cardNumber")
            #expect(error.code == .missingField)
        }
        await type("4111111111111112", into: "cardNumber", of: form)
        await type("1225", into: "expiryDate", of: form)
        await type("12", into: "cvv", of: form)
        #expect(await form.errors(for: "cardNumber").map(\.messageId) == ["luhn"])
        #expect(await form.errors(for: "expiryDate").map(\.messageId) == ["expirationDate"])
        #expect(Set(await form.errors(for: "cvv").map(\.messageId)) == ["length", "regularExpression"])
        do {
            _ = try await form.customerInput(clientSessionId: "client-session-id")
            Issue.record("an invalid form was accepted")
        } catch {
            #expect(error.field == "cardNumber")
            #expect(error.code == .invalidField)
            #expect(error.message.contains("luhn"))
        }
        // Fix them: the last card digit, the year, the CVV.
        let card = await form.field("cardNumber")?.value.count ?? 0
        #expect(await form.edit("cardNumber", replacing: (card - 2)..<(card - 1), with: "1").value == "4111 1111 1111 1111 ")
        let expiry = await form.field("expiryDate")?.value ?? ""
        #expect(expiry == "12/25")
        #expect(await form.edit("expiryDate", replacing: 3..<5, with: "30") == (value: "12/30", cursor: 5))
        await type("3", into: "cvv", of: form)
        #expect(await form.errors().isEmpty)
        let input = try await form.customerInput(clientSessionId: "client-session-id", tokenize: true)
        #expect(input.clientSessionId == "client-session-id")
        #expect(input.paymentProductId == 1)
        #expect(input.accountOnFileId == nil)
        #expect(input.tokenize)
        #expect(input.values == [.init(key: "cardNumber", value: "4111111111111111"), .init(key: "expiryDate", value: "1230"),
                                 .init(key: "cvv", value: "123")])
    }

    @Test("cursor moves: typing in the middle, and backspace over an inserted space takes the digit before it")
    func cursors() async throws {
        let form = WorldlineForm(api: try vendorTestAPI(try gateway(iin: try visaIIN())), context: vendorTestContext, item: .product(try visa()))
        await type("41111", into: "cardNumber", of: form)
        #expect(await form.field("cardNumber")?.value == "4111 1")
        #expect(await form.edit("cardNumber", replacing: 0..<0, with: "9") == (value: "9411 11", cursor: 1))
        #expect(await form.edit("cardNumber", replacing: 0..<1, with: "") == (value: "4111 1", cursor: 0))
        #expect(await form.edit("cardNumber", replacing: 5..<6, with: "") == (value: "4111 ", cursor: 5))
        // Backspace over the space the mask inserted removes the 4th digit too.
        #expect(await form.edit("cardNumber", replacing: 4..<5, with: "") == (value: "411", cursor: 3))
        // Pasting a formatted number.
        #expect(await form.edit("cardNumber", replacing: 0..<3, with: "4111 1111 1111 1111").value == "4111 1111 1111 1111 ")
        // Letters are dropped by the digit placeholders.
        #expect(await form.edit("cvv", replacing: 0..<0, with: "1a2b3").value == "123")
    }

    @Test("an account on file: read-only stored values are shown masked, not editable, not validated, not sent")
    func accountOnFile() async throws {
        let product = try visa(withAccounts: true)
        let account = try #require(product.accountsOnFile.first)
        let form = WorldlineForm(api: try vendorTestAPI(try gateway(iin: try visaIIN())), context: vendorTestContext,
                                 item: .product(product), accountOnFile: account, now: { Self.june2026 })
        let card = try #require(await form.field("cardNumber"))
        #expect(card.isReadOnly)
        #expect(card.value.filter { $0 != " " } == "************7988")
        let edited = await form.edit("cardNumber", replacing: 0..<0, with: "4")
        #expect(edited.value == card.value)
        #expect(await form.field("expiryDate")?.isReadOnly == true)
        #expect(await form.field("cvv")?.isReadOnly == false)
        #expect(await form.errors().isEmpty)
        await type("123", into: "cvv", of: form)
        let input = try await form.customerInput(clientSessionId: "s")
        #expect(input.accountOnFileId == 0)
        #expect(input.values == [.init(key: "cvv", value: "123")])
    }

    @Test("a group has no product to pay with until the IIN names one")
    func groupInput() async throws {
        let form = WorldlineForm(api: try vendorTestAPI(try gateway(iin: try visaIIN())), context: vendorTestContext, item: try cardGroup())
        do {
            _ = try await form.customerInput(clientSessionId: "s")
            Issue.record("a group was paid with")
        } catch {
            #expect(error.field == "paymentProductId")
        }
    }

    @Test("fields as the UI shows them: display order, labels, placeholders, tooltip image, keyboard, changes stream")
    func fieldListing() async throws {
        let form = WorldlineForm(api: try vendorTestAPI(try gateway(iin: try visaIIN())), context: vendorTestContext, item: try cardGroup())
        let fields = await form.fields
        #expect(fields.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
        #expect(fields[0].label == "Card number")
        #expect(fields[0].placeholder == "**** **** **** ****")
        #expect(fields[0].inputType == .integerKeyboard)
        #expect(fields[0].usedForLookup)
        #expect(fields[0].isRequired)
        #expect(fields[2].tooltipImage?.absoluteString
            == "https://ams1.sandbox.api-worldline.com/client/v1/assets/templates/master/global/css/img/ppimages/ppf_cvv_v1.png")
        var changes = form.changes.makeAsyncIterator()
        await type("411111", into: "cardNumber", of: form)
        var seen: [WorldlineForm.Change] = []
        while seen.count < 3, let change = await changes.next() { seen.append(change) }
        #expect(seen == [.iinStatus(.supported), .coBrands([1, 122]), .product(1)])
    }

    @Test("a list field's choices come from valueMapping; a fixed list is prefilled with its first value, as the Swift SDK does")
    func lists() async throws {
        let field = try JSONDecoder().decode(WorldlinePaymentProductField.self, from: Data("""
            {"id":"issuerId","type":"string","dataRestrictions":{"isRequired":true,"validators":{"fixedList":{"allowedValues":["ABNANL2A","ASNBNL21"]}}},
             "displayHints":{"displayOrder":1,"formElement":{"type":"list","valueMapping":[
               {"value":"ABNANL2A","displayName":"ABN Amro Bank"},
               {"value":"ASNBNL21","displayElements":[{"id":"displayName","type":"STRING","value":"ASN Bank"}]}]},
             "label":"Bank"}}
            """.utf8))
        var product = try visa()
        product.fields = [field]
        let form = WorldlineForm(api: try vendorTestAPI(try gateway(iin: try visaIIN())), context: vendorTestContext, item: .product(product))
        let shown = try #require(await form.field("issuerId"))
        #expect(shown.choices == [.init(value: "ABNANL2A", label: "ABN Amro Bank"), .init(value: "ASNBNL21", label: "ASN Bank")])
        #expect(shown.value == "ABNANL2A")
        await form.setValue("issuerId", "ASNBNL21")
        #expect(try await form.customerInput(clientSessionId: "s").values == [.init(key: "issuerId", value: "ASNBNL21")])
        await form.setValue("issuerId", "NOPE")
        #expect(await form.errors(for: "issuerId").map(\.messageId) == ["fixedList"])
        let spec = product.formSpec()
        #expect(spec.fields.first?.kind == .choice)
        #expect(spec.fields.first?.options == ["ABNANL2A", "ASNBNL21"])
        #expect(spec.fields.first?.choices.map(\.label) == ["ABN Amro Bank", "ASN Bank"])
    }

    @Test("the bridge to Till's FormSpec: kinds, masks, validators with parameters, labels from the API")
    func formSpec() throws {
        let spec = try visa().formSpec()
        let fields = spec.fieldsInDisplayOrder
        #expect(fields.map(\.id) == ["cardNumber", "expiryDate", "cvv"])
        #expect(fields.map(\.kind) == [.cardNumber, .expiryDate, .securityCode])
        #expect(fields.map(\.labelKey) == ["Card number:", "Expiry date:", "CVV:"])
        #expect(fields.map(\.required) == [true, true, false])
        #expect(fields[0].mask == "{{9999}} {{9999}} {{9999}} {{9999}} {{999}}")
        #expect(fields[0].maxLength == 19)
        #expect(fields[0].sensitive)
        #expect(fields[2].sensitive)
        #expect(!fields[1].sensitive)
        #expect(fields[0].placeholderKey == "**** **** **** ****")
        #expect(Set(fields[0].validators.map(\.kind)) == ["length", "luhn"])
        #expect(fields[0].validators.first { $0.kind == "length" }?.parameters == ["minLength": "12", "maxLength": "19"])
        #expect(fields[1].validators.first { $0.kind == "regularExpression" }?.parameters == ["pattern": "(?:0[1-9]|1[0-2])[0-9]{2}"])
        #expect(fields.map(\.displayOrder) == [10, 20, 24])
    }
}
