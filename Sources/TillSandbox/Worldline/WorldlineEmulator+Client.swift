import Foundation

/// The Client API (`/client/v1/{customerId}/…`), as the client SDKs call it (swift
/// `ClientApiCommunicator.swift`, js `C2SCommunicator.ts`, android `network/apicalls`).
extension WorldlineEmulator {
    /// Handles one Client API request. `root` is the sandbox's base URL.
    func handleClient(_ request: WorldlineRequest, root: URL) -> WorldlineAnswer {
        do throws(WorldlineRefusal) {
            return try clientRoute(request)
        } catch {
            logger.debug("client request refused", metadata: ["path": .string(request.rawPath),
                                                              "code": .string(error.errors.first?.code ?? "")])
            return error.answer
        }
    }

    private func clientRoute(_ request: WorldlineRequest) throws(WorldlineRefusal) -> WorldlineAnswer {
        let segments = request.segments
        guard segments.count >= 4, segments[0] == "client", segments[1] == "v1" else {
            throw WorldlineRefusal(404, WorldlineErrors.notFound("resource", request.rawPath))
        }
        let customerId = segments[2]
        // `Authorization: GCS v1Client:{clientSessionId}` (swift `httpHeaders`, js `_getRequestHeaders`,
        // android `OkHttpClientBuilder`). A session that is unknown, expired or another customer's: 403,
        // the status of the swift SDK's error stub (the code is the emulator's choice).
        let prefix = "GCS v1Client:"
        guard let authorization = request.header("Authorization"), authorization.hasPrefix(prefix),
              let session = liveSession(String(authorization.dropFirst(prefix.count))),
              session.customerId == customerId else {
            throw WorldlineRefusal(403, WorldlineErrors.authorization)
        }
        // `X-GCS-ClientMetaInfo`: Base64 of a JSON object; standard (swift, js) or URL-safe without
        // padding (android) Base64 are both taken.
        guard let meta = request.header("X-GCS-ClientMetaInfo"), let decoded = LenientBase64.decode(meta),
              (try? JSONValue.parse(Array(decoded)))?.objectMembers != nil else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("X-GCS-ClientMetaInfo", "must be Base64 of a JSON object"))
        }
        let query = request.query
        let rest = Array(segments.dropFirst(3))
        switch (request.method, rest.count, rest.first) {
        case ("GET", 1, "products"):
            let context = try paymentContext(query)
            let offered = WorldlineCatalog.products.filter { $0.isOffered(country: context.country, currency: context.currency,
                                                                               amount: context.amount) }
                .filter { !context.recurring || $0.allowsRecurring }
            return json(.object([.init(key: "paymentProducts", value: .array(offered.map { productJSON($0, detail: false) }))]))
        case ("GET", 2, "products"):
            let product = try offeredProduct(rest[1], query)
            return json(productJSON(product, detail: true))
        case ("GET", 3, "products") where rest[2] == "networks":
            let product = try offeredProduct(rest[1], query)
            // swift ClientApiTestCase networks stub; only Apple Pay (302) has networks here.
            guard product.id == 302 else { throw WorldlineRefusal(404, WorldlineErrors.unknownProduct) }
            return json(.object([.init(key: "networks", value: .array([.string("Visa"), .string("MasterCard")]))]))
        case ("GET", 3, "products") where rest[2] == "directory":
            let product = try offeredProduct(rest[1], query)
            guard product.id == 809 else { throw WorldlineRefusal(404, WorldlineErrors.unknownProduct) }
            let entries = WorldlineCatalog.idealDirectory.map { entry in
                JSONValue.object([
                    .init(key: "countryNames", value: .array([.string("Nederland")])),
                    .init(key: "issuerId", value: .string(entry.issuerId)),
                    .init(key: "issuerList", value: .string("short")),
                    .init(key: "issuerName", value: .string(entry.issuerName)),
                ])
            }
            return json(.object([.init(key: "entries", value: .array(entries))]))
        case ("GET", 1, "productgroups"):
            let context = try paymentContext(query)
            let cards = WorldlineCatalog.products.contains {
                $0.group == "cards" && $0.isOffered(country: context.country, currency: context.currency, amount: context.amount)
            }
            return json(.object([.init(key: "paymentProductGroups", value: .array(cards ? [groupJSON(detail: false)] : []))]))
        case ("GET", 2, "productgroups"):
            _ = try paymentContext(query)
            guard rest[1] == "cards" else { throw WorldlineRefusal(404, WorldlineErrors.unknownProduct) }
            return json(groupJSON(detail: true))
        case ("GET", 2, "crypto") where rest[1] == "publickey":
            return json(.object([.init(key: "keyId", value: .string(encryptionKey.keyId)),
                                 .init(key: "publicKey", value: .string(encryptionKey.publicKeyBase64))]))
        case ("POST", 2, "services") where rest[1] == "getIINdetails":
            return try iinDetails(request.body ?? [])
        case ("GET", 3, "services") where rest[1] == "convert" && rest[2] == "amount":
            return try convertAmount(query, sourceKey: "source", targetKey: "target")
        case ("GET", 2, "services") where rest[1] == "privacypolicy":
            return json(.object([.init(key: "htmlContent", value: .string(
                "<p>Till sandbox: the Worldline emulator keeps no personal data beyond the running process.</p>"))]))
        case ("GET", 3, "payments") where rest[2] == "thirdpartystatus":
            guard let payment = payments[rest[1]], payment.merchantId == session.merchantId else {
                throw WorldlineRefusal(404, WorldlineErrors.notFound("payment", rest[1]))
            }
            return json(.object([.init(key: "thirdPartyStatus", value: .string(thirdPartyStatus(payment)))]))
        default:
            throw WorldlineRefusal(404, WorldlineErrors.notFound("resource", request.rawPath))
        }
    }

    private func json(_ value: JSONValue, status: Int = 200) -> WorldlineAnswer {
        WorldlineAnswer(status: status, body: value.serializedBytes)
    }

    struct ClientContext {
        var country: String
        var currency: String
        var amount: Int64?
        var recurring: Bool
    }

    /// The `countryCode`, `currencyCode`, `amount` and `isRecurring` query parameters. js omits falsy
    /// values, so a missing `amount` is no amount filter.
    private func paymentContext(_ query: [String: String]) throws(WorldlineRefusal) -> ClientContext {
        guard let country = query["countryCode"], country.count == 2, country.allSatisfy(\.isUppercase) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("countryCode", "an ISO 3166-1 alpha-2 code is required"))
        }
        guard let currency = query["currencyCode"], Self.isCurrencyCode(currency) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("currencyCode", "an ISO 4217 code is required"))
        }
        var amount: Int64?
        if let text = query["amount"] {
            guard let value = Int64(text), value >= 0 else {
                throw WorldlineRefusal(400, WorldlineErrors.invalid("amount", "an integer amount in minor units is required"))
            }
            amount = value
        }
        let recurring: Bool
        switch query["isRecurring"] {
        case nil, "false"?: recurring = false
        case "true"?: recurring = true
        default: throw WorldlineRefusal(400, WorldlineErrors.invalid("isRecurring", "true or false"))
        }
        return ClientContext(country: country, currency: currency, amount: amount, recurring: recurring)
    }

    private func offeredProduct(_ idText: String, _ query: [String: String]) throws(WorldlineRefusal) -> WorldlineCatalog.Product {
        let context = try paymentContext(query)
        guard let id = Int(idText), let product = WorldlineCatalog.product(id),
              product.isOffered(country: context.country, currency: context.currency, amount: context.amount) else {
            // js `C2SCommunicator.ts`: 404, 1007, propertyName productId, UNKNOWN_PRODUCT_ID.
            throw WorldlineRefusal(404, WorldlineErrors.unknownProduct)
        }
        return product
    }

    /// BasicPaymentProduct (swift `BasicPaymentProduct.swift` keys), plus `fields` for a detail.
    private func productJSON(_ product: WorldlineCatalog.Product, detail: Bool) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "allowsInstallments", value: .bool(false)),
            .init(key: "allowsRecurring", value: .bool(product.allowsRecurring)),
            .init(key: "allowsTokenization", value: .bool(product.allowsTokenization)),
            .init(key: "autoTokenized", value: .bool(false)),
            .init(key: "deviceFingerprintEnabled", value: .bool(false)),
            .init(key: "displayHints", value: .object([
                .init(key: "displayOrder", value: .number(String(product.displayOrder))),
                .init(key: "label", value: .string(product.label)),
                .init(key: "logo", value: .string(product.logo)),
            ])),
            .init(key: "id", value: .number(String(product.id))),
        ]
        if let maxAmount = product.maxAmount { members.append(.init(key: "maxAmount", value: .number(String(maxAmount)))) }
        if let minAmount = product.minAmount { members.append(.init(key: "minAmount", value: .number(String(minAmount)))) }
        members += [
            .init(key: "mobileIntegrationLevel", value: .string("OPTIMISED_SUPPORT")),
            .init(key: "paymentMethod", value: .string(product.paymentMethod)),
        ]
        if let group = product.group { members.append(.init(key: "paymentProductGroup", value: .string(group))) }
        if product.id == 302 {
            members.append(.init(key: "paymentProduct302SpecificData", value: .object([
                .init(key: "networks", value: .array([.string("Visa"), .string("MasterCard")]))])))
        }
        members.append(.init(key: "usesRedirectionTo3rdParty", value: .bool(product.usesRedirection)))
        if detail {
            members.append(.init(key: "fields", value: product.paymentMethod == "card" ? WorldlineCatalog.cardFields : .array([])))
        }
        return .object(members)
    }

    /// The `cards` group (swift `paymentProductGroup.json` test resource, with the group id the
    /// products' `paymentProductGroup` uses).
    private func groupJSON(detail: Bool) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "accountsOnFile", value: .array([])),
            .init(key: "allowsInstallments", value: .bool(false)),
            .init(key: "deviceFingerprintEnabled", value: .bool(false)),
            .init(key: "displayHints", value: .object([
                .init(key: "displayOrder", value: .number("20")),
                .init(key: "label", value: .string("Cards")),
                .init(key: "logo", value: .string("/templates/master/global/css/img/ppimages/group-card.png")),
            ])),
            .init(key: "id", value: .string("cards")),
        ]
        if detail { members.append(.init(key: "fields", value: WorldlineCatalog.cardFields)) }
        return .object(members)
    }

    // MARK: IIN details

    /// `POST …/services/getIINdetails`. The body types differ per SDK (swift: `isRecurring` and
    /// `amount` as strings; js: boolean and number, maybe a top-level `accountOnFileId`): both are taken.
    private func iinDetails(_ body: [UInt8]) throws(WorldlineRefusal) -> WorldlineAnswer {
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(body) } catch {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("body", "not JSON"))
        }
        guard let bin = parsed["bin"]?.stringValue else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("bin", "required"))
        }
        guard bin.count >= 6, bin.count <= 19, bin.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("bin", "6 to 8 digits"))
        }
        let context = parsed["paymentContext"]
        guard context?.objectMembers != nil else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("paymentContext", "required"))
        }
        let country = context?["countryCode"]?.stringValue
        let money = context?["amountOfMoney"]
        let currency = money?["currencyCode"]?.stringValue
        var amount: Int64?
        switch money?["amount"] {
        case .string(let text)?, .number(let text)?:
            guard let value = Int64(text) else {
                throw WorldlineRefusal(400, WorldlineErrors.invalid("paymentContext.amountOfMoney.amount", "an integer"))
            }
            amount = value
        case nil, .null?: amount = nil
        default: throw WorldlineRefusal(400, WorldlineErrors.invalid("paymentContext.amountOfMoney.amount", "an integer"))
        }
        switch context?["isRecurring"] {
        case nil, .bool?, .string("true")?, .string("false")?: break
        default: throw WorldlineRefusal(400, WorldlineErrors.invalid("paymentContext.isRecurring", "true or false"))
        }
        guard let range = WorldlineCatalog.iinRange(for: bin) else {
            // The swift SDK accepts a 404 here and reads the body as an IIN response (UNKNOWN).
            throw WorldlineRefusal(404, WorldlineErrors.unknownIIN)
        }
        func allowed(_ id: Int) -> Bool {
            WorldlineCatalog.product(id)?.isOffered(country: country, currency: currency, amount: amount) ?? false
        }
        var members: [JSONValue.Member] = []
        if !range.coBrands.isEmpty {
            members.append(.init(key: "coBrands", value: .array(range.coBrands.map { id in
                .object([.init(key: "isAllowedInContext", value: .bool(allowed(id))),
                         .init(key: "paymentProductId", value: .number(String(id)))])
            })))
        }
        members += [
            .init(key: "countryCode", value: .string(range.countryCode)),
            .init(key: "isAllowedInContext", value: .bool(allowed(range.productId))),
            .init(key: "paymentProductId", value: .number(String(range.productId))),
        ]
        return json(.object(members))
    }
}
