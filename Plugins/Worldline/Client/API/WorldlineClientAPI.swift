import Foundation
import TillGatewayKit

/// The Worldline Connect Client API as the app calls it, with a client session the merchant server
/// created: products, groups, fields, IIN lookups, the encryption key, and a few services.
///
/// Requests are the Swift client SDK's (connect-sdk-client-swift 7.0.0,
/// `API communication/ClientApiCommunicator.swift`, sent through Alamofire's `URLEncoding.default`
/// for `GET` and `JSONEncoding.default` for `POST`, `Wrappers/AlamofireWrapper.swift`):
/// `{base}/{customerId}/…`, the headers `Authorization: GCS v1Client:{clientSessionId}` and
/// `X-GCS-ClientMetaInfo`, query parameters sorted by name (as Alamofire writes them) with `true`/
/// `false` for booleans. A status outside 200–299 (and 404 too for the IIN lookup) is a refusal: its
/// body, when it is the API's error body, becomes a ``CheckoutError`` naming the first error's
/// `propertyName`.
public struct WorldlineClientAPI: Sendable {
    /// The session, with ``WorldlineClientSession/clientApiURL`` normalised.
    public let session: WorldlineClientSession
    /// The device description sent with every call.
    public let metaInfo: WorldlineClientMetaInfo
    /// The gateway every error is attributed to.
    public let gateway: GatewayID
    private let client: GatewayHTTPClient
    private let baseURL: String
    private let headers: [String: String]

    /// A client for `session`, sending through `transport`.
    /// - Parameter gateway: the id errors are attributed to (`worldline` unless the merchant routes
    ///   Worldline under another name).
    /// - Throws: ``CheckoutError`` naming `clientApiUrl` when the session's URL is not a Client API
    ///   base (see ``WorldlineClientSession/normalizedClientApiURL(_:)``).
    public init(session: WorldlineClientSession, metaInfo: WorldlineClientMetaInfo, transport: any HTTPTransport,
                gateway: GatewayID = "worldline") throws(CheckoutError) {
        var fixed = session
        do {
            fixed.clientApiURL = try WorldlineClientSession.normalizedClientApiURL(session.clientApiURL)
        } catch {
            throw error.attributed(to: gateway)
        }
        self.session = fixed
        self.metaInfo = metaInfo
        self.gateway = gateway
        self.client = GatewayHTTPClient(gateway: gateway, transport: transport)
        self.baseURL = fixed.clientApiURL.absoluteString + "/" + Self.escapePathSegment(session.customerId)
        self.headers = ["Authorization": "GCS v1Client:\(session.clientSessionId)", "X-GCS-ClientMetaInfo": metaInfo.encoded]
    }

    // MARK: Products and groups

    /// `GET /products?countryCode&currencyCode&amount&hide=fields&isRecurring[&locale]`: the products
    /// available in `context`, without their fields.
    ///
    /// The Swift SDK then drops Apple Pay (302) when the device cannot pay with its networks
    /// (`checkApplePayAvailability`); that check needs PassKit and is the app's to make.
    public func paymentProducts(for context: WorldlinePaymentContext) async throws(CheckoutError) -> WorldlinePaymentProducts {
        var query = Self.contextQuery(context)
        query["hide"] = "fields"
        if let locale = context.locale { query["locale"] = locale }
        return try await get("/products", query: query, as: WorldlinePaymentProducts.self)
    }

    /// `GET /products/{id}?countryCode&currencyCode&amount&isRecurring[&forceBasicFlow][&locale]`: one
    /// product with its fields.
    /// - Parameter forceBasicFlow: sent only when given, as `true`/`false`.
    public func paymentProduct(id: Int, for context: WorldlinePaymentContext,
                               forceBasicFlow: Bool? = nil) async throws(CheckoutError) -> WorldlinePaymentProduct {
        var query = Self.contextQuery(context)
        if let forceBasicFlow { query["forceBasicFlow"] = forceBasicFlow ? "true" : "false" }
        if let locale = context.locale { query["locale"] = locale }
        return try await get("/products/\(id)", query: query, as: WorldlinePaymentProduct.self)
    }

    /// `GET /productgroups?countryCode&locale&currencyCode&amount&hide=fields&isRecurring`.
    /// - Throws: ``CheckoutError`` `missing_field` naming `locale` when the context has none (the Swift
    ///   SDK refuses the call likewise, `ConnectSDKError.localeWasNil`; the JavaScript SDK omits it).
    public func paymentProductGroups(for context: WorldlinePaymentContext) async throws(CheckoutError) -> WorldlinePaymentProductGroups {
        var query = Self.contextQuery(context)
        query["locale"] = try requireLocale(context)
        query["hide"] = "fields"
        return try await get("/productgroups", query: query, as: WorldlinePaymentProductGroups.self)
    }

    /// `GET /productgroups/{id}?countryCode&locale&currencyCode&amount&isRecurring`: a group with its fields.
    /// - Throws: ``CheckoutError`` naming `locale` when the context has none (as the Swift SDK).
    public func paymentProductGroup(id: String, for context: WorldlinePaymentContext) async throws(CheckoutError) -> WorldlinePaymentProductGroup {
        var query = Self.contextQuery(context)
        query["locale"] = try requireLocale(context)
        return try await get("/productgroups/\(Self.escapePathSegment(id))", query: query, as: WorldlinePaymentProductGroup.self)
    }

    /// `GET /products/{id}/networks?countryCode&locale&currencyCode&amount&hide=fields&isRecurring`:
    /// the networks of a wallet product (Apple Pay, 302).
    /// - Throws: ``CheckoutError`` naming `locale` when the context has none (as the Swift SDK).
    public func networks(productId: Int, for context: WorldlinePaymentContext) async throws(CheckoutError) -> WorldlineNetworks {
        var query = Self.contextQuery(context)
        query["locale"] = try requireLocale(context)
        query["hide"] = "fields"
        return try await get("/products/\(productId)/networks", query: query, as: WorldlineNetworks.self)
    }

    /// `GET /products/{id}/directory?countryCode&currencyCode`: the issuers of a product (iDEAL banks).
    public func directory(productId: Int, for context: WorldlinePaymentContext) async throws(CheckoutError) -> WorldlineDirectory {
        try await get("/products/\(productId)/directory",
                      query: ["countryCode": context.countryCode, "currencyCode": context.currencyCode],
                      as: WorldlineDirectory.self)
    }

    // MARK: Encryption key

    /// `GET /crypto/publickey`: the key the customer's input is encrypted to.
    /// - Throws: ``CheckoutError`` from the transport or the gateway, or naming `publicKey` when it is
    ///   not a usable RSA key (``WorldlinePublicKey/init(keyId:publicKey:)``).
    public func publicKey() async throws(CheckoutError) -> WorldlinePublicKey {
        let answer = try await get("/crypto/publickey", query: [:], as: WorldlinePublicKeyResponse.self)
        do {
            return try WorldlinePublicKey(keyId: answer.keyId, publicKey: answer.publicKey)
        } catch {
            throw error.gateway == nil ? error.attributed(to: gateway) : error
        }
    }

    // MARK: IIN

    /// The digits the Swift SDK sends as `bin`: the first 8 when 8 or more are known, else the first
    /// 6 (`getIINDigitsFrom`); `nil` below 6, when no lookup is made. The Android SDK always sends 6.
    public static func bin(of digits: String) -> String? {
        guard digits.count >= 6 else { return nil }
        return String(digits.prefix(digits.count >= 8 ? 8 : 6))
    }

    /// `POST /services/getIINdetails`: which product the card's first digits belong to.
    ///
    /// The body is the Swift SDK's: `{"bin", "paymentContext": {"isRecurring": "true"|"false" (a
    /// string), "countryCode", "isInstallments": bool, "amountOfMoney": {"amount": "<minor units as a
    /// string>", "currencyCode"}}}`. A 404 answer is read like a 200 (it names no product: UNKNOWN).
    /// Fewer than 6 digits make no request and answer ``WorldlineIINStatus/notEnoughDigits``.
    /// - Parameters:
    ///   - partialCardNumber: the digits typed so far; spaces are dropped first (as the JavaScript SDK
    ///     does), anything else but digits is refused.
    ///   - absentAllowed: how to read an answer that names a product without `isAllowedInContext`.
    /// - Throws: ``CheckoutError`` naming `partialCardNumber` for a non-digit, or the transport's or
    ///   gateway's failure.
    public func iinDetails(partialCardNumber: String, for context: WorldlinePaymentContext,
                           absentAllowed: WorldlineIINAbsentAllowedRule = .confirmWithProduct) async throws(CheckoutError) -> WorldlineIINDetails {
        let digits = try Self.iinDigits(partialCardNumber, gateway: gateway)
        guard let bin = Self.bin(of: digits) else { return WorldlineIINDetails(status: .notEnoughDigits) }
        let body = IINRequest(bin: bin, paymentContext: .init(
            isRecurring: context.isRecurring ? "true" : "false", countryCode: context.countryCode,
            isInstallments: context.isInstallments,
            amountOfMoney: .init(amount: String(context.amount), currencyCode: context.currencyCode)))
        let request = try post("/services/getIINdetails", body: body)
        let response = try await client.send(request)
        let answer: WorldlineIINDetailsResponse
        if (200..<300).contains(response.statusCode) || response.statusCode == 404 {
            answer = try client.decodeAnswer(response, as: WorldlineIINDetailsResponse.self)
        } else {
            throw refusal(response)
        }
        return try await WorldlineIINDetails.read(answer, bin: bin, rule: absentAllowed) { id throws(CheckoutError) in
            _ = try await paymentProduct(id: id, for: context)
        }
    }

    /// `partialCardNumber` without spaces, or a typed error when something else than a digit is in it.
    static func iinDigits(_ partialCardNumber: String, gateway: GatewayID?) throws(CheckoutError) -> String {
        let digits = partialCardNumber.filter { !$0.isWhitespace }
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw CheckoutError(.invalidField, field: "partialCardNumber", message: "a card number holds only digits", gateway: gateway)
        }
        return digits
    }

    // MARK: Services

    /// `GET /services/convert/amount?amount&source&target`: `money` in `target`. Both amounts travel as Worldline's
    /// two-decimal integers (``WorldlineAmount``), whatever the currencies' own decimals.
    public func convert(_ money: Money, to target: Currency) async throws(CheckoutError) -> Money {
        let amount = try WorldlineAmount.wire(money, field: "amount", gateway: gateway)
        let converted = try await get("/services/convert/amount", query: ["source": money.currency.code, "target": target.code, "amount": String(amount)],
                                      as: WorldlineConvertedAmount.self).convertedAmount
        return try WorldlineAmount.money(wire: Int64(converted), currency: target, field: "answer.convertedAmount", gateway: gateway)
    }

    /// `GET /services/privacypolicy[?paymentProductId][&locale]`: the privacy policy's HTML.
    ///
    /// The Swift SDK writes these two parameters in this order, not sorted.
    public func privacyPolicy(productId: Int? = nil, locale: String? = nil) async throws(CheckoutError) -> WorldlinePrivacyPolicy {
        var items: [(String, String)] = []
        if let productId { items.append(("paymentProductId", String(productId))) }
        if let locale { items.append(("locale", locale)) }
        return try await get("/services/privacypolicy", orderedQuery: items, as: WorldlinePrivacyPolicy.self)
    }

    /// `GET /payments/{paymentId}/thirdpartystatus`: how far the customer got with a third party.
    public func thirdPartyStatus(paymentId: String) async throws(CheckoutError) -> WorldlineThirdPartyStatus {
        try await get("/payments/\(Self.escapePathSegment(paymentId))/thirdpartystatus", query: [:],
                      as: WorldlineThirdPartyStatusResponse.self).thirdPartyStatus
    }

    // MARK: Plumbing

    /// `countryCode`, `currencyCode`, `amount` and `isRecurring`, which most calls send.
    static func contextQuery(_ context: WorldlinePaymentContext) -> [String: String] {
        ["countryCode": context.countryCode, "currencyCode": context.currencyCode, "amount": String(context.amount),
         "isRecurring": context.isRecurring ? "true" : "false"]
    }

    private func requireLocale(_ context: WorldlinePaymentContext) throws(CheckoutError) -> String {
        guard let locale = context.locale, !locale.isEmpty else {
            throw CheckoutError(.missingField, field: "locale", message: "this Client API call needs the payment context's locale",
                                gateway: gateway)
        }
        return locale
    }

    private func get<Answer: Decodable>(_ path: String, query: [String: String], as type: Answer.Type) async throws(CheckoutError) -> Answer {
        try await get(path, orderedQuery: query.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, as: type)
    }

    private func get<Answer: Decodable>(_ path: String, orderedQuery: [(String, String)], as type: Answer.Type) async throws(CheckoutError) -> Answer {
        var text = baseURL + path
        if !orderedQuery.isEmpty {
            text += "?" + orderedQuery.map { Self.escapeQuery($0.0) + "=" + Self.escapeQuery($0.1) }.joined(separator: "&")
        }
        guard let url = URL(string: text) else {
            throw CheckoutError(.invalidField, field: "clientApiUrl", message: "cannot build a Client API URL", gateway: gateway)
        }
        let response = try await client.send(TransportRequest(method: .get, url: url, headers: headers))
        guard (200..<300).contains(response.statusCode) else { throw refusal(response) }
        return try client.decodeAnswer(response, as: type)
    }

    private func post<Body: Encodable>(_ path: String, body: Body) throws(CheckoutError) -> TransportRequest {
        guard let url = URL(string: baseURL + path) else {
            throw CheckoutError(.invalidField, field: "clientApiUrl", message: "cannot build a Client API URL", gateway: gateway)
        }
        var request = try GatewayHTTPClient.jsonRequest(.post, url, body: body, headers: headers, gateway: gateway)
        // Alamofire's JSONEncoding sets only Content-Type; no Accept.
        request.headers.removeValue(forKey: "Accept")
        return request
    }

    /// The error a refused call becomes: the API's error body read (the first error's `propertyName`
    /// as the field, its code and message as the gateway's), or the bare HTTP status.
    func refusal(_ response: TransportResponse) -> CheckoutError {
        Self.refusal(statusCode: response.statusCode, body: response.body, gateway: gateway)
    }

    /// See ``refusal(_:)``. The category follows the status: 400/404/409/410 the request was wrong
    /// (`invalid_input`), 401/403 the session is expired or not allowed this (`configuration`), anything
    /// else the gateway did nothing it could be asked again for (`unavailable`: Client API calls move no money).
    static func refusal(statusCode: Int, body: Data, gateway: GatewayID) -> CheckoutError {
        let category: CheckoutError.Category = switch statusCode {
        case 400, 404, 409, 410: .invalidInput
        case 401, 403: .configuration
        default: .unavailable
        }
        guard let read = try? JSONDecoder().decode(WorldlineAPIErrorResponse.self, from: body), let first = read.errors.first else {
            return CheckoutError(.gatewayError, category: category,
                                 message: "the Client API answered HTTP \(statusCode)", gateway: gateway,
                                 gatewayCode: String(statusCode))
        }
        let field = first.propertyName.flatMap { $0.isEmpty ? nil : $0 }
        return CheckoutError(.gatewayError, category: category, field: field,
                             message: "the Client API refused the request (HTTP \(statusCode), code \(CheckoutError.printable(first.code)))",
                             gateway: gateway, gatewayCode: first.code, gatewayMessage: first.message)
    }

    /// Alamofire's query escaping (`CharacterSet.afURLQueryAllowed`): letters, digits and `-._~/?`
    /// stay, everything else is percent-encoded (UTF-8).
    static func escapeQuery(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryAllowed) ?? ""
    }

    private static let queryAllowed: CharacterSet = {
        var set = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        set.insert(charactersIn: "-._~/?")
        return set
    }()

    /// One path segment, percent-encoded (letters, digits and `-._~` stay).
    static func escapePathSegment(_ text: String) -> String {
        var set = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        set.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: set) ?? ""
    }
}

/// The IIN request body, as the Swift SDK builds it.
struct IINRequest: Encodable {
    struct Context: Encodable {
        struct Amount: Encodable {
            let amount: String
            let currencyCode: String
        }
        let isRecurring: String
        let countryCode: String
        let isInstallments: Bool
        let amountOfMoney: Amount
    }
    let bin: String
    let paymentContext: Context
}
