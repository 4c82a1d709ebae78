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
///
/// Codes: `4100` duplicate request (HTTP 400) and `4202` refund failed (HTTP 406) are the sandbox's
/// recorded answers; `4000` bad request (400), `4010` unauthorized (401; 403 for a valid token without
/// the permission), `4103` not found (404), `5100` internal server error (500) and `5200` gateway not
/// support (501) follow the numbering of a Citcon developer's error table
/// (citcon-lifeng/cash_app_demo `error/error_code.js`); the HTTP statuses 403 and 501 are choices.
struct CitconRefusal: Error, Sendable, Equatable {
    var httpStatus: Int
    var code: String
    var message: String

    /// `400` / `4000`; the message starts with the member's path.
    static func invalid(_ path: String, _ detail: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 400, code: "4000", message: "\(path): \(detail)")
    }

    static func unauthorized(_ detail: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 401, code: "4010", message: "unauthorized: \(detail)")
    }

    /// A valid token without the permission: HTTP 403 (no source shows this answer), code `4010`.
    static func forbidden(_ detail: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 403, code: "4010", message: "unauthorized: \(detail)")
    }

    static let duplicate = CitconRefusal(httpStatus: 400, code: "4100", message: "duplicate request")
    static let notFound = CitconRefusal(httpStatus: 404, code: "4103", message: "not found")
    static let refundFailed = CitconRefusal(httpStatus: 406, code: "4202", message: "refund failed")
    static let serverError = CitconRefusal(httpStatus: 500, code: "5100", message: "internal server error")

    static func notSupported(_ what: String) -> CitconRefusal {
        CitconRefusal(httpStatus: 501, code: "5200", message: "not supported: \(what)")
    }
}

/// The API operations, one per route.
enum CitconEndpoint: Sendable, Equatable {
    case accessTokens
    case charges
    case transaction(id: String)
    case captures
    case refunds
    case cancels

    /// The path as the API names it (`/v1/…`), for fault matching and logs.
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

/// The members a request may carry, as the sources show them, and their JSON types.
indirect enum CitconField: Sendable {
    case string
    /// Minor units: a JSON integer, or a number whose fraction is zero (the sandbox took `100.0`).
    case amount
    /// A JSON integer.
    case integer
    case boolean
    case array(CitconField)
    case object([String: CitconField])
    /// Anything (objects whose members no source lists).
    case any
}

extension CitconEmulator {
    /// `payment.method` values: the Android SDK's vendor list (`wechatpay`, `alipay`, `alipay_hk`,
    /// `gcash`, `kakaopay`, `dana`, `upop`), PayPal, Venmo and card (iOS guide, WebSDK manuals) and
    /// `toss` (Phase 2 guide). UnionPay is `upop` in every source; `unionpay` in none.
    static let supportedMethods: Set<String> = [
        "wechatpay", "alipay", "alipay_hk", "upop", "paypal", "venmo", "card", "gcash", "dana", "kakaopay", "toss",
    ]
    /// Methods that stop at `authorized` unless `transaction.auto_capture` is true (the iOS guide:
    /// auto capture "invalid for some wallets such as wechatpay, alipay, and union pay").
    static let authorizingMethods: Set<String> = ["paypal", "venmo", "card"]
    /// Methods whose desktop client also gets a `qr` entry (recorded for alipay and upop).
    static let qrMethods: Set<String> = ["wechatpay", "alipay", "alipay_hk", "upop", "gcash", "dana", "kakaopay"]
    /// `payment.client` values: `mobile_native` (Android SDK, iOS guide), `mobile_browser` and
    /// `desktop` (sandbox recordings).
    static let clientKinds = ["mobile_native", "desktop", "mobile_browser"]
    /// A client token's `permission` (2022 manual) and a server token's (2025 sandbox recording).
    static let clientPermission = ["inquiry", "charge", "vault", "installment"]
    static let serverPermission = ["inquiry", "charge", "vault", "consult", "encryption-config", "refund", "capture"]

    static let addressFields = CitconField.object([
        "street": .string, "street2": .string, "city": .string, "state": .string, "zip": .string, "country": .string,
    ])
    static let urlFields = CitconField.object([
        "ipn": .string, "success": .string, "fail": .string, "cancel": .string, "mobile": .string,
        "ipn_url": .string, "success_url": .string, "fail_url": .string, "mobile_url": .string,
    ])

    /// `POST /v1/charges`: every member a source sends, with its type.
    static let chargeFields = CitconField.object([
        "transaction": .object([
            "reference": .string, "amount": .amount, "currency": .string, "country": .string,
            "auto_capture": .boolean, "note": .string, "country_accelerator": .string, "vertical": .string,
            "urls": urlFields,
        ]),
        "payment": .object([
            "method": .string, "indicator": .string, "request_token": .boolean, "token": .string,
            "timeout": .integer, "client": .array(.string), "expiry": .integer, "format": .string,
            "data": .object(["first_name": .string, "last_name": .string, "cvv": .string, "pan": .string,
                             "expiry": .string, "issuer": .string]),
            "billing_address": addressFields, "nonce": .string, "3ds": .object(["mode": .string]),
        ]),
        "consumer": .object([
            "reference": .string, "first_name": .string, "last_name": .string, "phone": .string, "email": .string,
            "id": .string, "ext_data": .any,
        ]),
        "goods": .object([
            "data": .array(.object([
                "name": .string, "sku": .string, "url": .string, "quantity": .integer, "unit_amount": .amount,
                "total_amount": .amount, "unit_tax_amount": .amount, "total_tax_rate": .amount,
                "total_tax_amount": .amount, "total_discount_amount": .amount, "total_discount_code": .string,
                "taxable_amount": .amount, "tax_exempt_amount": .amount, "product_type": .string,
                "category": .string, "unitAmount": .amount, "unitTaxAmount": .amount,
                "totalDiscountAmount": .amount,
            ])),
            "shipping": .object([
                "first_name": .string, "last_name": .string, "phone": .string, "email": .string, "street": .string,
                "street2": .string, "city": .string, "state": .string, "zip": .string, "country": .string,
                "type": .string, "amount": .amount,
            ]),
        ]),
        "installments": .any,
        "urls": urlFields,
        "ext": .any,
    ])

    /// `POST /v1/refunds` (sandbox recordings).
    static let refundFields = CitconField.object([
        "id": .string, "reference": .string, "amount": .amount, "note": .string, "transaction_reference": .string,
    ])
    /// `POST /v1/cancels` (sandbox recordings).
    static let cancelFields = CitconField.object([
        "id": .string, "reference": .string, "transaction_reference": .string,
    ])
    /// `POST /v1/access-tokens` (demo servers, sandbox recording).
    static let tokenFields = CitconField.object(["token_type": .string])

    // MARK: Entry point

    /// Handles one API request.
    /// - Parameters:
    ///   - endpoint: which operation the route is.
    ///   - authorization: the `Authorization` header, if any.
    ///   - body: the request body; `nil` when it was too large to read.
    ///   - citconBaseURL: where this emulator is reachable (`{sandbox}/citcon`), for landing page URLs.
    func handleAPI(_ endpoint: CitconEndpoint, authorization: String?, body: [UInt8]?, citconBaseURL: URL) -> CitconAnswer {
        let fault = takeFault(for: endpoint.path)
        if let fault { logger.info("injected fault", metadata: ["fault": .string(fault.rawValue), "path": .string(endpoint.path)]) }
        switch fault {
        case .serverError:
            return failure(.serverError)
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
            answer = failure(error)
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
            let token = try authorize(authorization, permission: "inquiry")
            return success(transactionData(try findCharge(id, token: token)))
        case .captures:
            _ = try authorize(authorization, permission: "capture")
            throw .notSupported("capture (no source shows a capture request)")
        case .refunds:
            let token = try authorize(authorization, permission: "refund")
            return try refund(Self.parseObject(body), token: token)
        case .cancels:
            let token = try authorize(authorization, permission: nil)
            return try cancel(Self.parseObject(body), token: token)
        }
    }

    // MARK: Access tokens

    private func issueToken(authorization: String?, body: [UInt8]?) throws(CitconRefusal) -> CitconAnswer {
        guard let key = Self.bearer(authorization) else { throw .unauthorized("missing merchant key") }
        guard let merchant = merchants.first(where: { $0.apiKey == key }) else {
            throw .unauthorized("unknown merchant key")
        }
        let request = try Self.parseObject(body)
        try check(request, against: Self.tokenFields, path: "")
        let permission: [String]
        switch request["token_type"] {
        case .string("client")?: permission = Self.clientPermission
        case .string("server")?: permission = Self.serverPermission
        case nil, .null?: throw .invalid("token_type", "required (\"client\" or \"server\")")
        default: throw .invalid("token_type", "must be \"client\" or \"server\"")
        }
        let type = request["token_type"]?.stringValue ?? ""
        let nowMillis = Self.unixMillis(now())
        let expiresAt = nowMillis + Int64(tokenLifetime.timeInterval * 1000)
        var value = makeToken(issuedAt: nowMillis, expiresAt: expiresAt)
        while tokens[value] != nil { value = makeToken(issuedAt: nowMillis, expiresAt: expiresAt) }
        tokens[value] = AccessToken(apiKey: merchant.apiKey, type: type, permission: permission, expiresAt: expiresAt)
        logger.debug("access token issued", metadata: ["token_type": .string(type)])
        return success(.object([
            .init(key: "access_token", value: .string(value)),
            .init(key: "token_type", value: .string(type)),
            .init(key: "expiry", value: apiTime(expiresAt)),
            .init(key: "permission", value: .array(permission.map(JSONValue.string))),
        ]))
    }

    /// `UPI_` and a JWT whose payload has `iat` in seconds and `exp` in milliseconds, as the 2022
    /// manual's token does; signed with this instance's key. Opaque to clients.
    private func makeToken(issuedAt: Int64, expiresAt: Int64) -> String {
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = base64URL(Data(#"{"name":"sandbox","jti":"\#(Self.randomHex(count: 16))","iat":\#(issuedAt / 1000),"exp":\#(expiresAt)}"#.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data((header + "." + payload).utf8), using: instanceKey)
        return "UPI_" + header + "." + payload + "." + base64URL(Data(mac))
    }

    /// The valid access token of the `Authorization` header. `permission` must be in its
    /// `permission` list; `nil` means a server token (cancels: the recorded server token had no
    /// `cancel` permission, and a client token has "inquiry and charge permissions").
    private func authorize(_ authorization: String?, permission: String?) throws(CitconRefusal) -> AccessToken {
        guard let value = Self.bearer(authorization) else { throw .unauthorized("missing access token") }
        guard let token = tokens[value] else { throw .unauthorized("unknown access token") }
        guard !token.revoked, Self.unixMillis(now()) < token.expiresAt else { throw .unauthorized("access token expired") }
        if let permission {
            guard token.permission.contains(permission) else {
                throw .forbidden("the access token lacks the \(permission) permission")
            }
        } else {
            guard token.type == "server" else { throw .forbidden("a server access token is required") }
        }
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
        try check(request, against: Self.chargeFields, path: "")
        guard let merchant = merchants.first(where: { $0.apiKey == token.apiKey }) else {
            throw .unauthorized("unknown merchant")
        }
        let transaction = try Self.requireObject(request, "transaction", path: "transaction")
        guard let reference = Self.text(transaction["reference"]) else { throw .invalid("transaction.reference", "required") }
        guard reference.count <= 128 else { throw .invalid("transaction.reference", "must be at most 128 characters") }
        guard !reference.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid("transaction.reference", "must not contain control characters")
        }
        guard let amount = Self.wholeNumber(transaction["amount"]) else { throw .invalid("transaction.amount", "required") }
        guard amount > 0 else { throw .invalid("transaction.amount", "must be a positive number of minor units") }
        guard let currencyCode = Self.text(transaction["currency"]) else { throw .invalid("transaction.currency", "required") }
        guard let currency = Currency.lookup(currencyCode) else {
            throw .invalid("transaction.currency", "unknown ISO 4217 currency code (upper case, e.g. \"USD\")")
        }
        guard let country = Self.text(transaction["country"]) else { throw .invalid("transaction.country", "required") }
        guard (try? CountryCode(country)) != nil else {
            throw .invalid("transaction.country", "unknown ISO 3166-1 alpha-2 country code (upper case, e.g. \"US\")")
        }

        var method: String?
        var clients: [String] = []
        var expiry: Int64?
        if let payment = Self.present(request["payment"]) {
            guard let given = Self.text(payment["method"]) else { throw .invalid("payment.method", "required") }
            guard Self.supportedMethods.contains(given) else {
                throw .invalid("payment.method", "unsupported payment method \"\(given)\"; expected one of "
                    + Self.supportedMethods.sorted().joined(separator: ", "))
            }
            method = given
            guard case .array(let items)? = Self.present(payment["client"]), !items.isEmpty else {
                throw .invalid("payment.client", "required: one or more of mobile_native, mobile_browser, desktop")
            }
            for (index, item) in items.enumerated() {
                guard let kind = item.stringValue, Self.clientKinds.contains(kind) else {
                    throw .invalid("payment.client[\(index)]", "must be mobile_native, mobile_browser or desktop")
                }
                if !clients.contains(kind) { clients.append(kind) }
            }
            if let given = Self.wholeNumber(payment["expiry"]) {
                let nowSeconds = Self.unixMillis(now()) / 1000
                guard given < 100_000_000_000 else {
                    throw .invalid("payment.expiry", "an absolute time in Unix seconds (this looks like milliseconds)")
                }
                guard given > nowSeconds else { throw .invalid("payment.expiry", "already past (Unix seconds)") }
                expiry = given
            }
        }
        let autoCapture: Bool = if let method, !Self.authorizingMethods.contains(method) {
            true
        } else {
            transaction["auto_capture"] == .bool(true)
        }
        let urls = try Self.chargeURLs(request)

        let referenceKey = merchant.apiKey + "\u{0}" + reference
        guard !usedReferences.contains(referenceKey) else {
            logger.debug("duplicate transaction.reference", metadata: ["reference": .string(reference)])
            throw .duplicate
        }

        var id = Self.randomDigits(count: 22)
        while charges[id] != nil || id.hasPrefix("0") { id = Self.randomDigits(count: 22) }
        var charge = Charge(merchant: merchant, id: id, chargeToken: Self.randomHex(count: 32), reference: reference,
                            amount: amount, currency: currency.code, country: country, method: method,
                            autoCapture: autoCapture, urls: urls, expiry: expiry, created: Self.unixMillis(now()))
        let client = clientEntries(for: &charge, clients: clients, citconBaseURL: citconBaseURL, currency: currency)
        charges[id] = charge
        usedReferences.insert(referenceKey)
        logger.debug("charge created", metadata: ["id": .string(id), "method": .string(method ?? "-"),
                                                  "reference": .string(reference)])

        var members: [JSONValue.Member] = [
            .init(key: "object", value: .string("charge")),
            .init(key: "charge_token", value: .string(charge.chargeToken)),
            .init(key: "id", value: .string(id)),
            .init(key: "reference", value: .string(reference)),
            .init(key: "amount", value: .number(String(amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "time_created", value: apiTime(charge.created)),
            .init(key: "time_captured", value: .null),
            .init(key: "auto_capture", value: .bool(autoCapture)),
            .init(key: "status", value: .string(State.initiated.rawValue)),
            .init(key: "country", value: .string(country)),
        ]
        if let exchange = exchange(of: charge) { members.append(.init(key: "exchange", value: exchange)) }
        if let method {
            members.append(.init(key: "payment", value: .object([
                .init(key: "method", value: .string(method)),
                .init(key: "client", value: .array(client)),
            ])))
        }
        return success(.object(members))
    }

    /// The charge's URLs: top-level `urls` with `ipn`, `success`, `fail`, `cancel` (sandbox recordings,
    /// Android SDK, Java demo), or the `*_url` keys of the PHP demo (top level or inside `transaction`).
    /// None is required; each must be an absolute URL (the IPN one http or https).
    static func chargeURLs(_ request: JSONValue) throws(CitconRefusal) -> ChargeURLs {
        func find(_ name: String) -> (value: String, path: String)? {
            let candidates: [(JSONValue?, String)] = [
                (request["urls"]?[name], "urls.\(name)"), (request["urls"]?[name + "_url"], "urls.\(name)_url"),
                (request["transaction"]?["urls"]?[name + "_url"], "transaction.urls.\(name)_url"),
            ]
            for (value, path) in candidates {
                if let text = text(value) { return (text, path) }
            }
            return nil
        }
        var urls = ChargeURLs()
        for name in ["success", "fail", "cancel"] {
            guard let (value, path) = find(name) else { continue }
            guard isReturnURL(value) else { throw .invalid(path, "must be an absolute URL") }
            switch name {
            case "success": urls.success = value
            case "fail": urls.fail = value
            default: urls.cancel = value
            }
        }
        if let (value, path) = find("ipn") {
            guard isHTTPURL(value), let url = URL(string: value) else { throw .invalid(path, "must be an http(s) URL") }
            urls.ipn = url
        }
        return urls
    }

    /// `payment.client[]` of a new charge, one or two entries per requested client, in the sandbox's
    /// order: a `mobile_native` entry first (the Android SDK reads `client[0]`), then the `redirect`
    /// entries (`desktop`, `mobile_browser`), then the desktop `qr` entry.
    private func clientEntries(for charge: inout Charge, clients: [String], citconBaseURL: URL,
                               currency: Currency) -> [JSONValue] {
        guard let method = charge.method else { return [] }
        func entry(_ client: String, _ format: String, _ httpMethod: String, _ content: String) -> JSONValue {
            .object([
                .init(key: "client", value: .string(client)), .init(key: "format", value: .string(format)),
                .init(key: "method", value: .string(httpMethod)), .init(key: "content", value: .string(content)),
            ])
        }
        func page(_ kind: String) -> String {
            var landing = Self.randomHex(count: 32)
            while landings[landing] != nil { landing = Self.randomHex(count: 32) }
            landings[landing] = charge.id
            return citconBaseURL.appendingPathComponent("landing").appendingPathComponent("v1")
                .appendingPathComponent(kind).appendingPathComponent(landing).absoluteString
        }
        var entries: [JSONValue] = []
        if clients.contains("mobile_native") {
            if let native = nativeContent(for: charge, currency: currency) {
                charge.native = native
                let content = JSONValue.object(Self.nativeKeyOrder(method).compactMap { key in
                    native[key].map { JSONValue.Member(key: key, value: .string($0)) }
                })
                entries.append(entry("mobile_native", "json", "", content.serialized))
            } else {
                entries.append(entry("mobile_native", "redirect", "GET", page("landing")))
            }
        }
        for client in ["desktop", "mobile_browser"] where clients.contains(client) {
            entries.append(entry(client, "redirect", "GET", page("landing")))
        }
        if clients.contains("desktop"), Self.qrMethods.contains(method) {
            entries.append(entry("desktop", "qr", "GET", page("qr")))
        }
        return entries
    }

    /// `exchange` of a PayPal charge (recorded: the amount, the currency, rate 1); `nil` for others.
    func exchange(of charge: Charge) -> JSONValue? {
        guard charge.method == "paypal" else { return nil }
        return .object([
            .init(key: "amount", value: .number(String(charge.amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "rate", value: .number("1")),
        ])
    }

    // MARK: Inquiry

    /// The charge with its current status, as `GET /v1/transactions/{id}` answers it (the iOS guide's
    /// example and the Android `ResponsdInquire` model).
    func transactionData(_ charge: Charge) -> JSONValue {
        func optional(_ value: Int64?) -> JSONValue { value.map { .number(String($0)) } ?? .null }
        let refunds = charge.refunds.map { refund -> JSONValue in
            .object([
                .init(key: "id", value: .string(refund.id)),
                .init(key: "object", value: .string("refund")),
                .init(key: "reference", value: .string(refund.reference)),
                .init(key: "amount", value: .number(String(refund.amount))),
                .init(key: "currency", value: .string(charge.currency)),
                .init(key: "status", value: .string("succeeded")),
                .init(key: "time_created", value: apiTime(refund.time)),
            ])
        }
        let exchange = exchange(of: charge) ?? .object([
            .init(key: "amount", value: .null), .init(key: "currency", value: .null), .init(key: "rate", value: .null),
        ])
        return .object([
            .init(key: "id", value: .string(charge.id)),
            .init(key: "object", value: .string("charge")),
            .init(key: "amount", value: .number(String(charge.amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "status", value: .string(status(of: charge))),
            .init(key: "time_canceled", value: charge.timeCanceled.map { apiTime($0) } ?? .string("")),
            .init(key: "expiry", value: optional(charge.expiry)),
            .init(key: "time_created", value: apiTime(charge.created)),
            .init(key: "country", value: .string(charge.country)),
            .init(key: "reference", value: .string(charge.reference)),
            .init(key: "amount_captured", value: optional(charge.amountCaptured)),
            .init(key: "amount_refunded", value: optional(charge.amountRefunded > 0 ? charge.amountRefunded : nil)),
            .init(key: "time_captured", value: charge.timeCaptured.map { apiTime($0) } ?? .null),
            .init(key: "auto_capture", value: .bool(charge.autoCapture)),
            .init(key: "payment", value: .object([
                .init(key: "method", value: .string(charge.method ?? "")),
                .init(key: "token", value: .null),
                .init(key: "type", value: .string("")),
                .init(key: "data", value: .object([
                    .init(key: "pan", value: .string("")), .init(key: "expiry", value: .string("")),
                ])),
            ])),
            .init(key: "exchange", value: exchange),
            .init(key: "captures", value: .object([.init(key: "data", value: .array([]))])),
            .init(key: "refunds", value: .object([.init(key: "data", value: .array(refunds))])),
            .init(key: "chargebacks", value: .object([.init(key: "data", value: .array([]))])),
        ])
    }

    /// `initiated`, `succeeded`, `authorized`, `failed`, `canceled`, or `expired` for an initiated
    /// charge whose `payment.expiry` (Unix seconds) has passed.
    func status(of charge: Charge) -> String {
        if charge.state == .initiated, let expiry = charge.expiry, Self.unixMillis(now()) / 1000 >= expiry { return "expired" }
        return charge.state.rawValue
    }

    /// The merchant's charge `id`; 404 / 4103 for an unknown one or another merchant's.
    private func findCharge(_ id: String, token: AccessToken) throws(CitconRefusal) -> Charge {
        guard let charge = charges[id], charge.merchant.apiKey == token.apiKey else { throw .notFound }
        return charge
    }

    // MARK: Refunds and cancels

    /// `POST /v1/refunds {id, reference, amount, note?}`: `id` is the charge's `data.id`, `reference`
    /// the refund's own. A charge that is not paid, or too large an amount, is 406 / 4202.
    private func refund(_ request: JSONValue, token: AccessToken) throws(CitconRefusal) -> CitconAnswer {
        try check(request, against: Self.refundFields, path: "")
        guard let id = Self.text(request["id"]) else { throw .invalid("id", "required (the charge's id)") }
        guard let reference = Self.text(request["reference"]) else { throw .invalid("reference", "required") }
        guard let amount = Self.wholeNumber(request["amount"]) else { throw .invalid("amount", "required") }
        guard amount > 0 else { throw .invalid("amount", "must be a positive number of minor units") }
        var charge = try findCharge(id, token: token)
        let referenceKey = charge.merchant.apiKey + "\u{0}" + reference
        guard !usedRefundReferences.contains(referenceKey) else { throw .duplicate }
        guard status(of: charge) == State.succeeded.rawValue,
              amount <= (charge.amountCaptured ?? charge.amount) - charge.amountRefunded else {
            logger.debug("refund refused", metadata: ["id": .string(id), "status": .string(status(of: charge))])
            throw .refundFailed
        }
        let time = Self.unixMillis(now())
        var refundID = Self.randomDigits(count: 22)
        while refundID.hasPrefix("0") || charges[refundID] != nil { refundID = Self.randomDigits(count: 22) }
        let refund = Refund(id: refundID, reference: reference, amount: amount, time: time)
        charge.refunds.append(refund)
        charges[charge.id] = charge
        usedRefundReferences.insert(referenceKey)
        record(.refund, charge: charge, id: refundID, amount: amount, status: "succeeded")
        notify(refund: refund, of: charge)
        return success(.object([
            .init(key: "id", value: .string(refundID)),
            .init(key: "object", value: .string("refund")),
            .init(key: "reference", value: .string(reference)),
            .init(key: "amount", value: .number(String(amount))),
            .init(key: "amount_refunded", value: .number(String(charge.amountRefunded))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "country", value: .string(charge.country)),
            .init(key: "time_created", value: apiTime(time)),
            .init(key: "payment", value: .object([.init(key: "method", value: .string(charge.method ?? ""))])),
            .init(key: "status", value: .string("succeeded")),
            .init(key: "time_completed", value: apiTime(time)),
            .init(key: "exchange", value: .object([
                .init(key: "amount", value: .number(String(amount))),
                .init(key: "currency", value: .string(charge.currency)),
                .init(key: "rate", value: .number("1")),
            ])),
        ]))
    }

    /// `POST /v1/cancels {id, reference[, transaction_reference]}`: `id` is the charge's `data.id`,
    /// `reference` the cancel's own. An `initiated` charge (recorded) or an `authorized` one (released)
    /// becomes `canceled`; any other state is 400 / 4000.
    private func cancel(_ request: JSONValue, token: AccessToken) throws(CitconRefusal) -> CitconAnswer {
        try check(request, against: Self.cancelFields, path: "")
        guard let id = Self.text(request["id"]) else { throw .invalid("id", "required (the charge's id)") }
        guard let reference = Self.text(request["reference"]) else { throw .invalid("reference", "required") }
        var charge = try findCharge(id, token: token)
        let current = status(of: charge)
        guard current == State.initiated.rawValue || current == State.authorized.rawValue else {
            throw .invalid("id", "the charge is \(current); only an initiated or authorized charge can be cancelled")
        }
        let time = Self.unixMillis(now())
        charge.state = .canceled
        charge.timeCanceled = time
        charge.completed = time
        charges[charge.id] = charge
        if current == State.authorized.rawValue {
            record(.cancel, charge: charge, id: charge.id, amount: charge.amount, status: "canceled")
        }
        notify(charge, status: "cancelled", time: time)
        return success(.object([
            .init(key: "id", value: .string(charge.id)),
            .init(key: "object", value: .string("cancel")),
            .init(key: "reference", value: .string(reference)),
            .init(key: "amount", value: .number(String(charge.amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "time_created", value: apiTime(charge.created)),
            .init(key: "country", value: .string(charge.country)),
            .init(key: "payment", value: .object([
                .init(key: "method", value: .string(charge.method ?? "")),
                .init(key: "type", value: .string("")),
                .init(key: "data", value: .object([.init(key: "pan", value: .string(""))])),
            ])),
            .init(key: "status", value: .string("canceled")),
        ]))
    }

    func record(_ operation: LedgerEntry.Operation, charge: Charge, id: String, amount: Int64, status: String) {
        ledger.append(LedgerEntry(operation: operation, transactionID: charge.id, id: id, reference: charge.reference,
                                  method: charge.method ?? "", amountMinor: amount, currency: charge.currency, status: status))
        logger.debug("money moved", metadata: ["operation": .string(operation.rawValue), "id": .string(charge.id)])
    }

    // MARK: Envelope

    /// `{status, app: "citcon_upi", version, data}`; `version` is the sandbox's `v1.0.0` with seconds
    /// and the 2022 documents' `v0.1.1` with milliseconds.
    func envelope(status: String, data: JSONValue) -> JSONValue {
        .object([
            .init(key: "status", value: .string(status)),
            .init(key: "app", value: .string("citcon_upi")),
            .init(key: "version", value: .string(timeUnit == .seconds ? "v1.0.0" : "v0.1.1")),
            .init(key: "data", value: data),
        ])
    }

    func success(_ data: JSONValue) -> CitconAnswer {
        CitconAnswer(httpStatus: 200, body: envelope(status: "success", data: data).serializedBytes)
    }

    func failure(_ refusal: CitconRefusal) -> CitconAnswer {
        let data = JSONValue.object([.init(key: "code", value: .string(refusal.code)),
                                     .init(key: "message", value: .string(refusal.message))])
        return CitconAnswer(httpStatus: refusal.httpStatus, body: envelope(status: "fail", data: data).serializedBytes)
    }

    /// A time of the API (Unix milliseconds inside) in the emulator's ``TimeUnit``.
    func apiTime(_ millis: Int64) -> JSONValue {
        .number(String(timeUnit == .seconds ? millis / 1000 : millis))
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

    /// Checks the types of the members a source shows; `null` counts as absent. A member no source
    /// shows is ignored, or refused when the emulator was made with ``UnknownFields/refuse``.
    func check(_ value: JSONValue, against field: CitconField, path: String) throws(CitconRefusal) {
        let name = path.isEmpty ? "body" : path
        if value == .null { return }
        switch field {
        case .any:
            return
        case .string:
            guard case .string = value else { throw .invalid(name, "must be a string") }
        case .boolean:
            guard case .bool = value else { throw .invalid(name, "must be true or false") }
        case .integer:
            guard case .number(let text) = value, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }),
                  Int64(text) != nil else {
                throw .invalid(name, "must be an integer")
            }
        case .amount:
            guard Self.wholeNumber(value) != nil else { throw .invalid(name, "must be a whole number of minor units") }
        case .array(let item):
            guard case .array(let items) = value else { throw .invalid(name, "must be an array") }
            for (index, element) in items.enumerated() {
                try check(element, against: item, path: "\(name)[\(index)]")
            }
        case .object(let fields):
            guard case .object(let members) = value else { throw .invalid(name, "must be an object") }
            for member in members {
                let inner = path.isEmpty ? member.key : path + "." + member.key
                guard let described = fields[member.key] else {
                    if unknownFields == .refuse, member.value != .null { throw .invalid(inner, "unknown member") }
                    continue
                }
                try check(member.value, against: described, path: inner)
            }
        }
    }

    /// A JSON number with no fraction, or with a zero fraction (`100.0`), as a whole number; no exponents.
    static func wholeNumber(_ value: JSONValue?) -> Int64? {
        guard case .number(let text)? = value, !text.contains(where: { $0 == "e" || $0 == "E" }) else { return nil }
        var whole = Substring(text)
        if let dot = whole.firstIndex(of: ".") {
            let fraction = whole[whole.index(after: dot)...]
            guard !fraction.isEmpty, fraction.allSatisfy({ $0 == "0" }) else { return nil }
            whole = whole[..<dot]
        }
        return Int64(whole)
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

    // MARK: Values

    /// `2021-08-14T09:47:43.000Z` for Unix milliseconds (UTC, proleptic Gregorian), as the IPN
    /// document's example writes times.
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
