import Crypto
import Foundation
import Till

/// How the HTTP layer should deliver an answer of the Citcon API.
struct CitconAnswer: Sendable {
    enum Delivery: Sendable, Equatable {
        /// Send `body` with `httpStatus` now.
        case respond
        /// Send nothing for the hold time, then HTTP 504.
        case holdThenGatewayTimeout
        /// Close the connection without answering.
        case dropConnection
    }

    var httpStatus: Int
    var body: [UInt8]
    var delivery: Delivery = .respond
}

/// A request the API refuses: the HTTP status and the envelope's `data.code` and `data.message`.
struct CitconRefusal: Error, Sendable, Equatable {
    var httpStatus: Int
    var code: String
    var message: String

    /// `400` / `4001`; the message starts with the field path.
    static func invalid(_ path: String, _ detail: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 400, code: "4001", message: "\(path): \(detail)")
    }

    static func unauthorized(_ detail: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 401, code: "4010", message: "unauthorized: \(detail)")
    }

    static func forbidden(_ permission: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 403, code: "4030", message: "forbidden: the access token lacks the \(permission) permission")
    }

    static let duplicate = CitconRefusal(httpStatus: 400, code: "4000", message: "duplicate request")
    static let notFound = CitconRefusal(httpStatus: 404, code: "4040", message: "transaction not found")
    static let unavailable = CitconRefusal(httpStatus: 503, code: "5000",
                                           message: "service unavailable: the request was not processed")
}

/// The API operations, one per route.
enum CitconEndpoint: Sendable, Equatable {
    case accessTokens
    case charges
    case transaction(id: String)
    case captures
    case refunds
    case cancels

    /// The path as Till speaks it (`/v1/…`), for fault matching and logs.
    var path: String {
        switch self {
        case .accessTokens: "/v1/access-tokens"
        case .charges: "/v1/charges"
        case .transaction(let id): "/v1/transactions/\(id)"
        case .captures: "/v1/captures"
        case .refunds: "/v1/refunds"
        case .cancels: "/v1/cancels"
        }
    }
}

/// The shape a field of a request must have; anything not described is ignored.
indirect enum CitconShape: Sendable {
    case string
    /// A JSON integer (no fraction, no exponent) that fits 64 bits, at least `minimum` if given.
    case integer(minimum: Int64?)
    case boolean
    case array(CitconShape)
    case object([String: CitconShape])
}

extension CitconEmulator {
    /// The methods a charge may use.
    static let supportedMethods: Set<String> = [
        "wechatpay", "alipay", "alipay_hk", "alipayplus", "unionpay", "paypal", "venmo", "card", "toss", "fomo",
        "gcash", "dana", "kakaopay",
    ]
    /// Methods that can stop at `authorized` (others are captured when paid).
    static let authorizingMethods: Set<String> = ["card", "paypal", "venmo"]
    static let clientPermissions = ["charge", "inquire"]
    static let serverPermissions = ["charge", "inquire", "refund", "capture", "cancel"]

    static let addressShape = CitconShape.object([
        "street": .string, "street2": .string, "city": .string, "state": .string, "zip": .string, "country": .string,
    ])

    /// `POST /v1/charges`, as far as types go.
    static let chargeShape = CitconShape.object([
        "transaction": .object([
            "reference": .string, "amount": .integer(minimum: 1), "currency": .string, "country": .string,
            "auto_capture": .boolean, "note": .string,
        ]),
        "consumer": .object([
            "reference": .string, "first_name": .string, "last_name": .string, "phone": .string, "email": .string,
            "billing_address": addressShape,
        ]),
        "payment": .object([
            "method": .string, "indicator": .string, "request_token": .boolean, "token": .string,
            "client": .array(.string), "expiry": .integer(minimum: 0),
            "data": .object(["first_name": .string, "last_name": .string, "cvv": .string, "pan": .string, "expiry": .string]),
            "billing_address": addressShape,
        ]),
        "goods": .object([
            "data": .array(.object([
                "name": .string, "sku": .string, "url": .string, "quantity": .integer(minimum: nil),
                "total_amount": .integer(minimum: nil), "unit_amount": .integer(minimum: nil),
                "total_tax_rate": .integer(minimum: nil), "total_tax_amount": .integer(minimum: nil),
                "total_discount_amount": .integer(minimum: nil), "taxable_amount": .integer(minimum: nil),
                "tax_exempt_amount": .integer(minimum: nil),
            ])),
            "shipping": .object([
                "first_name": .string, "last_name": .string, "phone": .string, "email": .string, "street": .string,
                "street2": .string, "city": .string, "state": .string, "zip": .string, "country": .string,
            ]),
        ]),
        "installments": .object(["id": .string]),
        "urls": .object(["ipn": .string, "success": .string, "fail": .string, "cancel": .string]),
        "scheme": .string, "universal_link": .string, "request_3ds_verification": .boolean, "unionpay_mode": .string,
    ])

    // MARK: Entry point

    /// Handles one API request.
    /// - Parameters:
    ///   - endpoint: which operation the route is.
    ///   - authorization: the `Authorization` header, if any.
    ///   - body: the request body; `nil` when it was too large to read.
    ///   - citconBaseURL: where this emulator is reachable (`{sandbox}/citcon`), for H5 page URLs.
    func handleAPI(_ endpoint: CitconEndpoint, authorization: String?, body: [UInt8]?, citconBaseURL: URL) -> CitconAnswer {
        let fault = takeFault(for: endpoint.path)
        if let fault { logger.info("injected fault", metadata: ["fault": .string(fault.rawValue), "path": .string(endpoint.path)]) }
        switch fault {
        case .serverError:
            return Self.failure(.unavailable)
        case .expireTokens:
            expireTokens()
        case .timeout, .dropConnection, nil:
            break
        }
        var answer: CitconAnswer
        do throws(CitconRefusal) {
            answer = try process(endpoint, authorization: authorization, body: body, citconBaseURL: citconBaseURL)
        } catch {
            logger.debug("request refused", metadata: ["path": .string(endpoint.path), "code": .string(error.code)])
            answer = Self.failure(error)
        }
        switch fault {
        case .timeout: answer.delivery = .holdThenGatewayTimeout
        case .dropConnection: answer.delivery = .dropConnection
        case .serverError, .expireTokens, nil: break
        }
        return answer
    }

    private func process(_ endpoint: CitconEndpoint, authorization: String?, body: [UInt8]?,
                         citconBaseURL: URL) throws(CitconRefusal) -> CitconAnswer {
        switch endpoint {
        case .accessTokens:
            return try issueToken(authorization: authorization, body: body)
        case .charges:
            let token = try authorize(authorization, permission: "charge")
            return try createCharge(Self.parseObject(body), token: token, citconBaseURL: citconBaseURL)
        case .transaction(let id):
            let token = try authorize(authorization, permission: "inquire")
            let charge = try findCharge(id, token: token)
            return Self.success(transactionData(charge))
        case .captures:
            let token = try authorize(authorization, permission: "capture")
            return try capture(Self.parseObject(body), token: token)
        case .refunds:
            let token = try authorize(authorization, permission: "refund")
            return try refund(Self.parseObject(body), token: token)
        case .cancels:
            let token = try authorize(authorization, permission: "cancel")
            return try cancel(Self.parseObject(body), token: token)
        }
    }

    // MARK: Access tokens

    private func issueToken(authorization: String?, body: [UInt8]?) throws(CitconRefusal) -> CitconAnswer {
        guard let key = Self.bearer(authorization) else { throw .unauthorized("missing merchant API key") }
        guard let merchant = merchants.first(where: { $0.apiKey == key }) else {
            throw .unauthorized("unknown merchant API key")
        }
        let request = try Self.parseObject(body)
        let permissions: [String]
        switch request["token_type"] {
        case .string("client")?: permissions = Self.clientPermissions
        case .string("server")?: permissions = Self.serverPermissions
        case nil, .null?: throw .invalid("token_type", "required (\"client\" or \"server\")")
        default: throw .invalid("token_type", "must be \"client\" or \"server\"")
        }
        let type = request["token_type"]?.stringValue ?? ""
        var value = Self.randomHex(count: 48)
        while tokens[value] != nil { value = Self.randomHex(count: 48) }
        let expiry = Self.unixSeconds(now().addingTimeInterval(Self.seconds(tokenLifetime)))
        tokens[value] = AccessToken(apiKey: merchant.apiKey, type: type, permissions: permissions, expiry: expiry)
        logger.debug("access token issued", metadata: ["token_type": .string(type)])
        return Self.success(.object([
            .init(key: "access_token", value: .string(value)),
            .init(key: "token_type", value: .string(type)),
            .init(key: "permissions", value: .array(permissions.map(JSONValue.string))),
            .init(key: "expiry", value: .number(String(expiry))),
        ]))
    }

    /// The valid access token of the `Authorization` header, which must carry `permission`.
    private func authorize(_ authorization: String?, permission: String) throws(CitconRefusal) -> AccessToken {
        guard let value = Self.bearer(authorization) else { throw .unauthorized("missing access token") }
        guard let token = tokens[value] else { throw .unauthorized("unknown access token") }
        guard !token.revoked, Self.unixSeconds(now()) < token.expiry else { throw .unauthorized("access token expired") }
        guard token.permissions.contains(permission) else { throw .forbidden(permission) }
        return token
    }

    /// The credential of `Authorization: Bearer <credential>` (scheme case-insensitive).
    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = parts[1].trimmingCharacters(in: .whitespaces)
        return credential.isEmpty ? nil : credential
    }

    // MARK: Charges

    private func createCharge(_ request: JSONValue, token: AccessToken, citconBaseURL: URL) throws(CitconRefusal) -> CitconAnswer {
        try Self.check(request, against: Self.chargeShape, path: "")
        guard let merchant = merchants.first(where: { $0.apiKey == token.apiKey }) else {
            throw .unauthorized("unknown merchant")
        }
        let transaction = try Self.requireObject(request, "transaction", path: "transaction")
        guard let reference = Self.text(transaction["reference"]) else { throw .invalid("transaction.reference", "required") }
        guard reference.count <= 64 else { throw .invalid("transaction.reference", "must be at most 64 characters") }
        guard !reference.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid("transaction.reference", "must not contain control characters")
        }
        guard let amount = Self.integer(transaction["amount"]) else { throw .invalid("transaction.amount", "required") }
        guard let currencyCode = Self.text(transaction["currency"]) else { throw .invalid("transaction.currency", "required") }
        guard let currency = Currency.lookup(currencyCode) else {
            throw .invalid("transaction.currency", "unknown ISO 4217 currency code (upper case, e.g. \"USD\")")
        }
        guard let country = Self.text(transaction["country"]) else { throw .invalid("transaction.country", "required") }
        guard (try? CountryCode(country)) != nil else {
            throw .invalid("transaction.country", "unknown ISO 3166-1 alpha-2 country code (upper case, e.g. \"US\")")
        }
        let autoCapture = transaction["auto_capture"] == .bool(true)

        let payment = try Self.requireObject(request, "payment", path: "payment")
        guard let method = Self.text(payment["method"]) else { throw .invalid("payment.method", "required") }
        guard Self.supportedMethods.contains(method) else {
            throw .invalid("payment.method", "unsupported payment method; expected one of "
                + Self.supportedMethods.sorted().joined(separator: ", "))
        }
        guard case .array(let clients)? = payment["client"] else { throw .invalid("payment.client", "required") }
        guard !clients.isEmpty else { throw .invalid("payment.client", "must not be empty") }
        let nowMillis = Self.unixMillis(now())
        let expiry = Self.integer(payment["expiry"])
        if let expiry, expiry <= nowMillis {
            throw .invalid("payment.expiry", "already past (an absolute time in Unix milliseconds)")
        }

        let urls = try Self.requireObject(request, "urls", path: "urls")
        var returnURLs: [String: String] = [:]
        for name in ["success", "fail", "cancel"] {
            guard let url = Self.text(urls[name]) else { throw .invalid("urls.\(name)", "required") }
            guard Self.isReturnURL(url) else { throw .invalid("urls.\(name)", "must be an absolute URL") }
            returnURLs[name] = url
        }
        var ipnURL: URL?
        if let ipn = Self.text(urls["ipn"]) {
            guard Self.isHTTPURL(ipn), let url = URL(string: ipn) else { throw .invalid("urls.ipn", "must be an http(s) URL") }
            ipnURL = url
        }

        let scheme = Self.text(request["scheme"])
        if method == "alipay", scheme == nil { throw .invalid("scheme", "required for alipay") }
        if let scheme, !Self.isURLScheme(scheme) { throw .invalid("scheme", "must be a URL scheme such as \"myshop\"") }
        let universalLink = Self.text(request["universal_link"])
        if method == "wechatpay", universalLink == nil { throw .invalid("universal_link", "required for wechatpay") }
        if let universalLink, !(Self.isHTTPURL(universalLink) && universalLink.lowercased().hasPrefix("https:")) {
            throw .invalid("universal_link", "must be an https URL")
        }
        var unionpayMode = "00"
        if let mode = request["unionpay_mode"], mode != .null {
            guard mode == .string("00") || mode == .string("01") else {
                throw .invalid("unionpay_mode", "must be \"00\" (production) or \"01\" (development)")
            }
            unionpayMode = mode.stringValue ?? "00"
        }
        let consumer = Self.present(request["consumer"])
        if let email = Self.text(consumer?["email"]), !Self.isPlausibleEmail(email) {
            throw .invalid("consumer.email", "not an e-mail address")
        }
        if method == "card", request["request_3ds_verification"] == .bool(true) {
            try Self.checkThreeDSecure(consumer: consumer, payment: payment)
        }

        let referenceKey = merchant.apiKey + "\u{0}" + reference
        guard !usedReferences.contains(referenceKey) else {
            logger.debug("duplicate transaction.reference", metadata: ["reference": .string(reference)])
            throw .duplicate
        }

        var id = Self.randomHex(count: 32)
        while charges[id] != nil { id = Self.randomHex(count: 32) }
        var charge = Charge(
            merchant: merchant, id: id, reference: reference, chargeToken: Self.randomHex(count: 32), amount: amount,
            currency: currency.code, country: country, method: method, autoCapture: autoCapture,
            successURL: returnURLs["success"] ?? "", failURL: returnURLs["fail"] ?? "",
            cancelURL: returnURLs["cancel"] ?? "", ipnURL: ipnURL, expiry: expiry, timeCreated: nowMillis, client: [])
        charge.native = nativeContent(for: charge, currency: currency, unionpayMode: unionpayMode)
        var client: [JSONValue] = []
        if let native = charge.native {
            client.append(.object([
                .init(key: "type", value: .string("native")),
                .init(key: "content", value: .object(Self.nativeKeyOrder(method).compactMap { key in
                    native[key].map { JSONValue.Member(key: key, value: .string($0)) }
                })),
            ]))
        }
        let page = citconBaseURL.appendingPathComponent("h5").appendingPathComponent(id).absoluteString
        client.append(.object([
            .init(key: "type", value: .string("url")),
            .init(key: "content", value: .object([.init(key: "url", value: .string(page))])),
        ]))
        charge.client = client
        charges[id] = charge
        usedReferences.insert(referenceKey)
        logger.debug("charge created", metadata: ["id": .string(id), "method": .string(method), "reference": .string(reference)])

        return Self.success(.object([
            .init(key: "object", value: .string("charge")),
            .init(key: "id", value: .string(id)),
            .init(key: "reference", value: .string(reference)),
            .init(key: "amount", value: .number(String(amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "country", value: .string(country)),
            .init(key: "auto_capture", value: .bool(autoCapture)),
            .init(key: "status", value: .string(State.pending.rawValue)),
            .init(key: "time_created", value: .number(String(nowMillis))),
            .init(key: "charge_token", value: .string(charge.chargeToken)),
            .init(key: "payment", value: .object([
                .init(key: "method", value: .string(method)),
                .init(key: "client", value: .array(client)),
            ])),
        ]))
    }

    /// A card charge with 3-D Secure needs the cardholder's names, phone, e-mail and billing address
    /// (`payment.billing_address`, or else `consumer.billing_address`).
    private static func checkThreeDSecure(consumer: JSONValue?, payment: JSONValue) throws(CitconRefusal) {
        let why = "required for card with request_3ds_verification"
        guard let consumer else { throw .invalid("consumer", why) }
        for field in ["first_name", "last_name", "phone", "email"] where text(consumer[field]) == nil {
            throw .invalid("consumer.\(field)", why)
        }
        let (address, path): (JSONValue?, String) = if let given = present(payment["billing_address"]) {
            (given, "payment.billing_address")
        } else {
            (present(consumer["billing_address"]), "consumer.billing_address")
        }
        guard let address else { throw .invalid("consumer.billing_address", why) }
        for field in ["street", "city", "state", "zip", "country"] where text(address[field]) == nil {
            throw .invalid("\(path).\(field)", why)
        }
        if let country = text(address["country"]), (try? CountryCode(country)) == nil {
            throw .invalid("\(path).country", "unknown ISO 3166-1 alpha-2 country code")
        }
    }

    // MARK: Inquiry

    /// The charge with its current status, as `GET /v1/transactions/{id}` answers it.
    func transactionData(_ charge: Charge) -> JSONValue {
        func optional(_ value: Int64?) -> JSONValue { value.map { .number(String($0)) } ?? .null }
        return .object([
            .init(key: "object", value: .string("charge")),
            .init(key: "id", value: .string(charge.id)),
            .init(key: "reference", value: .string(charge.reference)),
            .init(key: "amount", value: .number(String(charge.amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "country", value: .string(charge.country)),
            .init(key: "auto_capture", value: .bool(charge.autoCapture)),
            .init(key: "status", value: .string(status(of: charge))),
            .init(key: "time_created", value: .number(String(charge.timeCreated))),
            .init(key: "charge_token", value: .string(charge.chargeToken)),
            .init(key: "expiry", value: optional(charge.expiry)),
            .init(key: "amount_captured", value: optional(charge.amountCaptured)),
            .init(key: "amount_refunded", value: optional(charge.amountRefunded > 0 ? charge.amountRefunded : nil)),
            .init(key: "time_captured", value: optional(charge.timeCaptured)),
            .init(key: "time_canceled", value: optional(charge.timeCanceled)),
            .init(key: "payment", value: .object([.init(key: "method", value: .string(charge.method))])),
        ])
    }

    /// The SDK-guide status: `pending`, `succeeded`, `authorized`, `failed`, `canceled` or `expired`
    /// (a pending charge whose `payment.expiry` has passed).
    func status(of charge: Charge) -> String {
        if charge.state == .pending, let expiry = charge.expiry, Self.unixMillis(now()) >= expiry { return "expired" }
        return charge.state.rawValue
    }

    /// The merchant's charge `id`; 404 / 4040 for an unknown one or another merchant's.
    private func findCharge(_ id: String, token: AccessToken) throws(CitconRefusal) -> Charge {
        guard let charge = charges[id], charge.merchant.apiKey == token.apiKey else { throw .notFound }
        return charge
    }

    // MARK: Captures, refunds, cancels

    private func capture(_ request: JSONValue, token: AccessToken) throws(CitconRefusal) -> CitconAnswer {
        try Self.check(request, against: .object(["transaction_id": .string, "amount": .integer(minimum: 1)]), path: "")
        var charge = try operationTarget(request, token: token)
        guard let amount = Self.integer(request["amount"]) else { throw .invalid("amount", "required") }
        let current = status(of: charge)
        guard current == State.authorized.rawValue else {
            throw .invalid("transaction_id", "the transaction is \(current); only an authorized one can be captured")
        }
        guard amount <= charge.amount else { throw .invalid("amount", "exceeds the authorized amount (\(charge.amount))") }
        let time = Self.unixMillis(now())
        charge.state = .succeeded
        charge.amountCaptured = amount
        charge.timeCaptured = time
        charge.timeCompleted = time
        charges[charge.id] = charge
        let id = Self.randomHex(count: 32)
        record(.capture, charge: charge, id: id, amount: amount, status: "succeeded")
        notify(charge, transactionType: "charge", status: "captured", time: time)
        return Self.success(operationData("capture", id: id, charge: charge, amount: amount, time: time))
    }

    private func refund(_ request: JSONValue, token: AccessToken) throws(CitconRefusal) -> CitconAnswer {
        try Self.check(request, against: .object(["transaction_id": .string, "amount": .integer(minimum: 1),
                                                  "reason": .string]), path: "")
        var charge = try operationTarget(request, token: token)
        guard let amount = Self.integer(request["amount"]) else { throw .invalid("amount", "required") }
        let current = status(of: charge)
        guard current == State.succeeded.rawValue else {
            throw .invalid("transaction_id", "the transaction is \(current); only a paid one can be refunded")
        }
        let refundable = (charge.amountCaptured ?? charge.amount) - charge.amountRefunded
        guard amount <= refundable else { throw .invalid("amount", "exceeds the refundable balance (\(refundable))") }
        let time = Self.unixMillis(now())
        charge.amountRefunded += amount
        charges[charge.id] = charge
        let id = Self.randomHex(count: 32)
        record(.refund, charge: charge, id: id, amount: amount, status: "succeeded")
        notify(charge, transactionType: "refund", status: "success", time: time)
        return Self.success(operationData("refund", id: id, charge: charge, amount: amount, time: time))
    }

    private func cancel(_ request: JSONValue, token: AccessToken) throws(CitconRefusal) -> CitconAnswer {
        try Self.check(request, against: .object(["transaction_id": .string]), path: "")
        var charge = try operationTarget(request, token: token)
        let current = status(of: charge)
        guard current == State.authorized.rawValue || current == State.pending.rawValue else {
            throw .invalid("transaction_id", "the transaction is \(current); only an authorized or pending one can be cancelled")
        }
        let time = Self.unixMillis(now())
        charge.state = .canceled
        charge.timeCanceled = time
        charge.timeCompleted = time
        charges[charge.id] = charge
        let id = Self.randomHex(count: 32)
        if current == State.authorized.rawValue {
            record(.cancel, charge: charge, id: id, amount: charge.amount, status: "succeeded")
        }
        notify(charge, transactionType: "charge", status: "cancelled", time: time)
        return Self.success(operationData("cancel", id: id, charge: charge, amount: charge.amount, time: time))
    }

    /// The charge named by `transaction_id`.
    private func operationTarget(_ request: JSONValue, token: AccessToken) throws(CitconRefusal) -> Charge {
        guard let id = Self.text(request["transaction_id"]) else { throw .invalid("transaction_id", "required") }
        return try findCharge(id, token: token)
    }

    private func operationData(_ object: String, id: String, charge: Charge, amount: Int64, time: Int64) -> JSONValue {
        .object([
            .init(key: "object", value: .string(object)),
            .init(key: "id", value: .string(id)),
            .init(key: "transaction_id", value: .string(charge.id)),
            .init(key: "amount", value: .number(String(amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "status", value: .string("succeeded")),
            .init(key: "time_created", value: .number(String(time))),
        ])
    }

    func record(_ operation: LedgerEntry.Operation, charge: Charge, id: String, amount: Int64, status: String) {
        ledger.append(LedgerEntry(operation: operation, transactionID: charge.id, id: id, reference: charge.reference,
                                  method: charge.method, amountMinor: amount, currency: charge.currency, status: status))
        logger.debug("money moved", metadata: ["operation": .string(operation.rawValue), "id": .string(charge.id)])
    }

    // MARK: Envelope

    static func envelope(status: String, data: JSONValue) -> JSONValue {
        .object([
            .init(key: "status", value: .string(status)),
            .init(key: "app", value: .string("upi")),
            .init(key: "version", value: .string("v1")),
            .init(key: "data", value: data),
        ])
    }

    static func success(_ data: JSONValue) -> CitconAnswer {
        CitconAnswer(httpStatus: 200, body: envelope(status: "success", data: data).serializedBytes)
    }

    static func failure(_ refusal: CitconRefusal) -> CitconAnswer {
        let data = JSONValue.object([.init(key: "code", value: .string(refusal.code)),
                                     .init(key: "message", value: .string(refusal.message))])
        return CitconAnswer(httpStatus: refusal.httpStatus, body: envelope(status: "fail", data: data).serializedBytes)
    }

    // MARK: Validation helpers

    /// The body as a JSON object.
    static func parseObject(_ body: [UInt8]?) throws(CitconRefusal) -> JSONValue {
        guard let body else { throw .invalid("body", "larger than \(Sandbox.maximumBodyBytes) bytes") }
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(body)
        } catch {
            throw .invalid("body", "not valid JSON (\(error.description))")
        }
        guard case .object = parsed else { throw .invalid("body", "must be a JSON object") }
        return parsed
    }

    /// Checks the types of the described fields; unknown members are ignored and `null` counts as absent.
    static func check(_ value: JSONValue, against shape: CitconShape, path: String) throws(CitconRefusal) {
        let name = path.isEmpty ? "body" : path
        switch shape {
        case .string:
            guard case .string = value else { throw .invalid(name, "must be a string") }
        case .boolean:
            guard case .bool = value else { throw .invalid(name, "must be true or false") }
        case .integer(let minimum):
            let detail = switch minimum {
            case 1?: "must be a positive integer"
            case 0?: "must be a non-negative integer"
            default: "must be an integer"
            }
            guard case .number(let text) = value, !text.contains(where: { ".eE".contains($0) }), let number = Int64(text) else {
                throw .invalid(name, detail)
            }
            if let minimum, number < minimum { throw .invalid(name, detail) }
        case .array(let item):
            guard case .array(let items) = value else { throw .invalid(name, "must be an array") }
            for (index, element) in items.enumerated() {
                try check(element, against: item, path: "\(name)[\(index)]")
            }
        case .object(let fields):
            guard case .object(let members) = value else { throw .invalid(name, "must be an object") }
            for member in members where member.value != .null {
                guard let inner = fields[member.key] else { continue }
                try check(member.value, against: inner, path: path.isEmpty ? member.key : path + "." + member.key)
            }
        }
    }

    /// A present value (not absent, not `null`).
    static func present(_ value: JSONValue?) -> JSONValue? {
        guard let value, value != .null else { return nil }
        return value
    }

    /// A non-empty string value.
    static func text(_ value: JSONValue?) -> String? {
        guard let text = value?.stringValue, !text.isEmpty else { return nil }
        return text
    }

    /// An integer value (already type-checked).
    static func integer(_ value: JSONValue?) -> Int64? {
        guard case .number(let text)? = value else { return nil }
        return Int64(text)
    }

    static func requireObject(_ parent: JSONValue, _ key: String, path: String) throws(CitconRefusal) -> JSONValue {
        guard let value = present(parent[key]) else { throw .invalid(path, "required") }
        return value
    }

    /// An http(s) URL with a host, or an app's own scheme (`myapp://…`); never `javascript:`, `data:` or `file:`.
    static func isReturnURL(_ text: String) -> Bool {
        // Printable ASCII only: the URL goes verbatim into a `Location` header.
        guard text.count <= 2048, text.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }),
              let url = URL(string: text), let scheme = url.scheme?.lowercased(), !scheme.isEmpty else { return false }
        if scheme == "http" || scheme == "https" { return url.host?.isEmpty == false }
        return !["javascript", "data", "file", "vbscript", "about"].contains(scheme) && text.contains("://")
    }

    static func isHTTPURL(_ text: String) -> Bool {
        guard isReturnURL(text), let scheme = URL(string: text)?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// RFC 3986: a letter, then letters, digits, `+`, `-` or `.`.
    static func isURLScheme(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic, text.count <= 64 else {
            return false
        }
        return text.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0))
        }
    }

    static func isPlausibleEmail(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !email.contains(where: \.isWhitespace)
    }

    // MARK: Values

    static func randomHex(count: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String((0..<count).map { _ in digits[Int.random(in: 0..<16)] })
    }

    static func randomDigits(count: Int) -> String {
        String((0..<count).map { _ in Character(String(Int.random(in: 0...9))) })
    }

    static func randomAlphanumeric(count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    static func unixSeconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }

    static func unixMillis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let parts = duration.components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }

    /// `2021-08-14T09:47:43.000Z` for Unix milliseconds (UTC, proleptic Gregorian).
    static func iso8601(millis: Int64) -> String {
        let (days, dayMillis) = millis.quotientAndRemainder(dividingBy: 86_400_000)
        let (dayNumber, msOfDay) = dayMillis < 0 ? (days - 1, dayMillis + 86_400_000) : (days, dayMillis)
        // Howard Hinnant's civil_from_days.
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let hours = msOfDay / 3_600_000, minutes = msOfDay / 60_000 % 60, seconds = msOfDay / 1000 % 60, ms = msOfDay % 1000
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hours, 2)):\(pad(minutes, 2)):\(pad(seconds, 2)).\(pad(ms, 3))Z"
    }
}
