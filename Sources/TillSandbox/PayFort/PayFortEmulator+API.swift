import Foundation
import Till

/// How the HTTP layer should deliver an answer of the payment API.
struct PaymentAPIAnswer: Sendable {
    enum Delivery: Sendable, Equatable {
        /// Send `body` with `httpStatus` now.
        case respond
        /// Send nothing for the hold time, then HTTP 504.
        case holdThenGatewayTimeout
        /// Close the connection without answering.
        case dropConnection
        /// HTTP 503 now.
        case serviceUnavailable
    }

    var httpStatus: Int
    var body: [UInt8]
    var delivery: Delivery

    static func json(_ value: JSONValue, status: Int = 200) -> PaymentAPIAnswer {
        PaymentAPIAnswer(httpStatus: status, body: value.serializedBytes, delivery: .respond)
    }
}

/// A request the gateway refuses or declines; becomes the response's status, code and message.
struct Rejection: Error, Sendable {
    var status: String
    var message: String
    var responseCode: String

    init(status: String = "00", code: String, message: String) {
        self.status = status
        self.responseCode = status + code
        self.message = message
    }

    static func missing(_ field: String) -> Rejection { Rejection(code: "001", message: "Missing parameter: \(field)") }
    static func invalid(_ field: String, _ detail: String? = nil) -> Rejection {
        Rejection(code: "002", message: "Invalid parameter format: \(field)" + (detail.map { " (\($0))" } ?? ""))
    }
    static let signatureMismatch = Rejection(code: "008", message: "Signature mismatch")
    static let noSuchOrder = Rejection(code: "002", message: "Invalid merchant reference: no such order")
}

/// A request's parameters, with the lookups validation needs.
struct Parameters {
    var values: [String: JSONValue]
    var members: [JSONValue.Member]

    /// The text of a scalar parameter; `nil` when absent, null or empty.
    func text(_ key: String) -> String? {
        guard let value = values[key], value.isScalar else { return nil }
        let text = value.parameterText
        return text.isEmpty || value == .null ? nil : text
    }

    func require(_ key: String) throws(Rejection) -> String {
        guard let text = text(key) else { throw .missing(key) }
        return text
    }
}

extension PayFortEmulator {
    /// The fixed answer to a body that is not a JSON object.
    static let malformedBody = PaymentAPIAnswer.json(
        .object([.init(key: "status", value: .string("00")), .init(key: "response_code", value: .string("00002")),
                 .init(key: "response_message", value: .string("Invalid parameter format"))]),
        status: 400)

    /// The longest value accepted per parameter (PayFort's documented lengths); others get 1000.
    static let maximumLengths: [String: Int] = [
        "service_command": 20, "command": 20, "query_command": 20, "access_code": 20, "merchant_identifier": 20,
        "language": 2, "device_id": 100, "merchant_reference": 40, "amount": 10, "currency": 3, "customer_email": 254,
        "sdk_token": 100, "token_name": 100, "payment_option": 10, "eci": 16, "order_description": 150,
        "customer_ip": 45, "customer_name": 40, "phone_number": 19, "settlement_reference": 34, "merchant_extra": 999,
        "merchant_extra1": 250, "merchant_extra2": 250, "merchant_extra3": 250, "merchant_extra4": 250,
        "merchant_extra5": 250, "card_holder_name": 50, "return_url": 400, "fort_id": 20, "card_number": 19,
        "expiry_date": 4, "card_security_code": 4, "signature": 200,
    ]

    // MARK: Entry point

    /// Handles one `POST /FortAPI/paymentApi` body.
    /// - Parameter payFortBaseURL: where this emulator is reachable (`…/payfort`), for `3ds_url`.
    func handlePaymentAPI(body: [UInt8], payFortBaseURL: URL) -> PaymentAPIAnswer {
        let parsed = try? JSONValue.parse(body)
        let command = parsed.flatMap { $0["service_command"] ?? $0["query_command"] ?? $0["command"] }?.stringValue
        let fault = takeFault(for: command)
        if fault == .serverError {
            logger.info("injected fault: HTTP 503", metadata: ["command": .string(command ?? "-")])
            return PaymentAPIAnswer(httpStatus: 503, body: Array("Service Unavailable".utf8), delivery: .serviceUnavailable)
        }
        var answer: PaymentAPIAnswer
        if let members = parsed?.objectMembers {
            declineWithTechnicalProblem = fault == .technicalProblem
            defer { declineWithTechnicalProblem = false }
            answer = process(members, payFortBaseURL: payFortBaseURL)
        } else {
            answer = Self.malformedBody
        }
        switch fault {
        case .timeout: answer.delivery = .holdThenGatewayTimeout
        case .dropConnection: answer.delivery = .dropConnection
        case .serverError, .technicalProblem, nil: break
        }
        if let fault { logger.info("injected fault", metadata: ["fault": .string(fault.rawValue)]) }
        return answer
    }

    private func process(_ members: [JSONValue.Member], payFortBaseURL: URL) -> PaymentAPIAnswer {
        let request = Parameters(values: Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }),
                                 members: members)
        // Until the merchant is known nothing can be signed. The mobile SDK's PURCHASE/AUTHORIZATION
        // carries no access code and no signature: the SDK token (created by a signed request on the
        // merchant's server) is what authenticates it, so no phrase ever sits on the device.
        let merchant: PayFortMerchant
        let viaSDKToken = Self.isMobileSDKOperation(request)
        do throws(Rejection) {
            merchant = viaSDKToken ? try merchantHolding(request) : try identifyMerchant(request)
        } catch {
            return respond(echo(request), rejection: error, merchant: nil)
        }
        do throws(Rejection) {
            if !viaSDKToken {
                let signature = try request.require("signature")
                guard Signature.verify(signature, members: members, phrase: merchant.requestPhrase,
                                       algorithm: merchant.algorithm) else {
                    logger.notice("signature mismatch", metadata: ["merchant": .string(merchant.merchantIdentifier)])
                    throw Rejection.signatureMismatch
                }
            }
            if let nested = members.first(where: { !$0.value.isScalar }) {
                throw Rejection.invalid(nested.key, "nested values are not accepted")
            }
            for member in members {
                let limit = Self.maximumLengths[member.key] ?? 1000
                if member.value.parameterText.count > limit { throw Rejection.invalid(member.key, "longer than \(limit)") }
            }
            let language = try request.require("language")
            guard language == "en" || language == "ar" else { throw Rejection.invalid("language", "en or ar") }

            if let service = request.text("service_command") {
                guard service == "SDK_TOKEN" else { throw Rejection.invalid("service_command") }
                return try createSDKToken(request, merchant: merchant)
            }
            if let query = request.text("query_command") {
                guard query == "CHECK_STATUS" else { throw Rejection.invalid("query_command") }
                return try checkStatus(request, merchant: merchant)
            }
            let command = try request.require("command")
            switch command {
            case "PURCHASE", "AUTHORIZATION":
                return try pay(request, command: command, merchant: merchant, payFortBaseURL: payFortBaseURL)
            case "CAPTURE", "REFUND", "VOID_AUTHORIZATION":
                return try maintain(request, command: command, merchant: merchant)
            default:
                throw Rejection.invalid("command")
            }
        } catch {
            return respond(echo(request), rejection: error, merchant: merchant)
        }
    }

    /// A PURCHASE or AUTHORIZATION as the mobile SDK sends it: with an `sdk_token`, without a signature.
    private static func isMobileSDKOperation(_ request: Parameters) -> Bool {
        ["PURCHASE", "AUTHORIZATION"].contains(request.text("command") ?? "") && request.text("sdk_token") != nil
            && request.text("signature") == nil
    }

    /// The merchant an SDK token was created for (the token itself is checked and used up later).
    private func merchantHolding(_ request: Parameters) throws(Rejection) -> PayFortMerchant {
        let value = try request.require("sdk_token")
        guard let token = tokens[value],
              let merchant = merchants.first(where: { $0.merchantIdentifier == token.merchantIdentifier && $0.accessCode == token.accessCode })
        else { throw .invalid("sdk_token", "unknown token") }
        return merchant
    }

    private func identifyMerchant(_ request: Parameters) throws(Rejection) -> PayFortMerchant {
        let accessCode = try request.require("access_code")
        let identifier = try request.require("merchant_identifier")
        let candidates = merchants.filter { $0.merchantIdentifier == identifier }
        guard !candidates.isEmpty else { throw .invalid("merchant_identifier", "unknown merchant") }
        guard let merchant = candidates.first(where: { $0.accessCode == accessCode }) else {
            throw .invalid("access_code", "not valid for this merchant")
        }
        return merchant
    }

    // MARK: SDK_TOKEN

    private func createSDKToken(_ request: Parameters, merchant: PayFortMerchant) throws(Rejection) -> PaymentAPIAnswer {
        let device = try request.require("device_id")
        guard device.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .invalid("device_id")
        }
        let token = Self.randomAlphanumeric(count: 40)
        tokens[token] = SDKToken(merchantIdentifier: merchant.merchantIdentifier, accessCode: merchant.accessCode,
                                 created: now())
        var response = echo(request)
        response["sdk_token"] = .string(token)
        setOutcome(&response, status: "22", code: "000", message: "Success")
        logger.debug("SDK token created", metadata: ["merchant": .string(merchant.merchantIdentifier)])
        return respond(response, merchant: merchant)
    }

    // MARK: PURCHASE / AUTHORIZATION

    private func pay(_ request: Parameters, command: String, merchant: PayFortMerchant,
                     payFortBaseURL: URL) throws(Rejection) -> PaymentAPIAnswer {
        for field in ["merchant_reference", "amount", "currency", "customer_email", "sdk_token", "card_number",
                      "expiry_date", "card_security_code"] {
            _ = try request.require(field)
        }
        let reference = try Self.validReference(request)
        let (amountMinor, amountValue) = try Self.validAmount(request)
        let currency = try Self.validCurrency(request)
        let email = try request.require("customer_email")
        guard Self.isPlausibleEmail(email) else { throw .invalid("customer_email") }
        let eci = request.text("eci") ?? "ECOMMERCE"
        guard ["ECOMMERCE", "MOTO", "RECURRING"].contains(eci) else { throw .invalid("eci") }
        if let returnURL = request.text("return_url") {
            guard Self.isAbsoluteURL(returnURL) else { throw .invalid("return_url", "an absolute URL") }
        }
        let expiry = try request.require("expiry_date")
        guard expiry.count == 4, expiry.allSatisfy(\.isASCIIDigit), let month = Int(expiry.suffix(2)),
              (1...12).contains(month), let year = Int(expiry.prefix(2)) else {
            throw .invalid("expiry_date", "YYMM")
        }
        let securityCode = try request.require("card_security_code")
        guard (3...4).contains(securityCode.count), securityCode.allSatisfy(\.isASCIIDigit) else {
            throw .invalid("card_security_code")
        }
        let cardNumber = try request.require("card_number")
        let behaviour = TestCard.behaviour(of: cardNumber)
        guard behaviour != .invalidNumber else { throw Rejection(code: "016", message: "Invalid card number") }
        let cardOptions = TestCard.paymentOptions(of: cardNumber)
        var paymentOption = cardOptions.first
        if let given = request.text("payment_option") {
            guard ["VISA", "MASTERCARD", "AMEX", "MADA", "MEEZA"].contains(given) else { throw .invalid("payment_option") }
            if given == "MADA" || given == "MEEZA" {
                guard command == "PURCHASE", eci == "ECOMMERCE" else {
                    throw .invalid("payment_option", "\(given) only with PURCHASE and eci ECOMMERCE")
                }
            }
            guard cardOptions.isEmpty || cardOptions.contains(given) else {
                throw .invalid("payment_option", "does not match the card")
            }
            paymentOption = given
        }

        let key = Self.orderKey(merchant.merchantIdentifier, reference)
        if let existing = orders[key] {
            logger.debug("duplicate merchant_reference: replaying the first response",
                        metadata: ["merchant_reference": .string(reference)])
            return respond(existing.firstResponse, merchant: merchant)
        }
        try useToken(request, merchant: merchant)

        let fortID = newFortID()
        var response = echo(request)
        response["fort_id"] = .string(fortID)
        response["eci"] = .string(eci)
        if let paymentOption { response["payment_option"] = .string(paymentOption) }
        var order = Order(merchant: merchant, reference: reference, fortID: fortID, command: command,
                          amountMinor: amountMinor, amountValue: amountValue, currency: currency.code,
                          firstResponse: [:], current: [:], returnURL: request.text("return_url"))
        let success = command == "PURCHASE" ? "14" : "02"
        let failure = command == "PURCHASE" ? "13" : "03"
        var delivery = PaymentAPIAnswer.Delivery.respond
        var final = true

        if Self.isExpired(year: 2000 + year, month: month, now: now()) {
            setOutcome(&response, status: failure, code: "012", message: "Card expired")
        } else if declineWithTechnicalProblem {
            setOutcome(&response, status: failure, code: "006", message: "Technical problem")
        } else {
            switch behaviour {
            case .approve:
                response["authorization_code"] = .string(Self.randomDigits(count: 6))
                setOutcome(&response, status: success, code: "000", message: "Success")
            case .decline:
                setOutcome(&response, status: failure, code: "071", message: "Transaction declined")
            case .insufficientFunds:
                setOutcome(&response, status: failure, code: "064", message: "Insufficient funds")
            case .timeout:
                setOutcome(&response, status: failure, code: "006", message: "Technical problem")
                delivery = .holdThenGatewayTimeout
            case .uncertain:
                // Charged, but the answer says it is not known: only CHECK_STATUS or feedback tell.
                response["authorization_code"] = .string(Self.randomDigits(count: 6))
                setOutcome(&response, status: success, code: "000", message: "Success")
                var told = response
                told["authorization_code"] = nil
                setOutcome(&told, status: "15", code: "006", message: "Technical problem")
                order.firstResponse = told
            case .threeDSecure:
                response["3ds_url"] = .string(payFortBaseURL.appendingPathComponent("3ds").appendingPathComponent(fortID).absoluteString)
                setOutcome(&response, status: "20", code: "064", message: "3-D Secure check requested")
                order.awaitingThreeDS = true
                final = false
            case .invalidNumber:
                throw Rejection(code: "016", message: "Invalid card number")
            }
        }
        order.current = response
        if order.firstResponse.isEmpty { order.firstResponse = response }
        if order.status == success { recordCharge(&order) }
        store(order)
        logger.debug("\(command) processed", metadata: [
            "merchant_reference": .string(reference), "fort_id": .string(fortID),
            "card": .string(TestCard.mask(cardNumber)), "response_code": .string(order.responseCode),
        ])
        if final { notify(order.current, merchant: merchant) }
        var answer = respond(order.firstResponse, merchant: merchant)
        answer.delivery = delivery
        return answer
    }

    private func useToken(_ request: Parameters, merchant: PayFortMerchant) throws(Rejection) {
        let value = try request.require("sdk_token")
        guard var token = tokens[value], token.merchantIdentifier == merchant.merchantIdentifier,
              token.accessCode == merchant.accessCode else {
            throw .invalid("sdk_token", "unknown token")
        }
        guard !token.used else { throw .invalid("sdk_token", "already used") }
        guard now() < token.created.addingTimeInterval(Self.seconds(tokenLifetime)) else {
            throw .invalid("sdk_token", "expired")
        }
        token.used = true
        tokens[value] = token
    }

    // MARK: CHECK_STATUS

    private func checkStatus(_ request: Parameters, merchant: PayFortMerchant) throws(Rejection) -> PaymentAPIAnswer {
        let order = try findOrder(request, merchant: merchant)
        var response = echo(request)
        response["merchant_reference"] = .string(order.reference)
        response["fort_id"] = .string(order.fortID)
        response["amount"] = Self.amount(order.amountMinor, like: order.amountValue)
        response["currency"] = .string(order.currency)
        response["transaction_status"] = .string(order.status)
        response["transaction_code"] = .string(order.responseCode)
        response["transaction_message"] = .string(order.responseMessage)
        // Authorized: still held or taken (a voided authorization holds nothing).
        let authorized: Int64 = order.charged && !order.voided ? order.amountMinor : 0
        let captured = order.command == "PURCHASE" ? authorized : order.captured
        response["authorized_amount"] = Self.amount(authorized, like: order.amountValue)
        response["captured_amount"] = Self.amount(captured, like: order.amountValue)
        response["refunded_amount"] = Self.amount(order.refunded, like: order.amountValue)
        for key in ["authorization_code", "payment_option", "eci", "card_number"] {
            if let value = order.current[key] { response[key] = value }
        }
        setOutcome(&response, status: "12", code: "000", message: "Success")
        return respond(response, merchant: merchant)
    }

    private func findOrder(_ request: Parameters, merchant: PayFortMerchant) throws(Rejection) -> Order {
        if let reference = request.text("merchant_reference") {
            guard let order = orders[Self.orderKey(merchant.merchantIdentifier, reference)] else { throw .noSuchOrder }
            if let fortID = request.text("fort_id"), fortID != order.fortID {
                throw .invalid("fort_id", "does not match merchant_reference")
            }
            return order
        }
        guard let fortID = request.text("fort_id") else { throw .missing("merchant_reference") }
        guard let key = orderKeysByFortID[fortID], let order = orders[key],
              order.merchant.merchantIdentifier == merchant.merchantIdentifier else {
            throw Rejection(code: "002", message: "Invalid fort_id: no such order")
        }
        return order
    }

    // MARK: CAPTURE / REFUND / VOID_AUTHORIZATION

    private func maintain(_ request: Parameters, command: String, merchant: PayFortMerchant) throws(Rejection) -> PaymentAPIAnswer {
        var order = try findOrder(request, merchant: merchant)
        let (success, failure) = switch command {
        case "CAPTURE": ("04", "05")
        case "REFUND": ("06", "07")
        default: ("08", "09")
        }
        var amount = order.amountMinor
        if command != "VOID_AUTHORIZATION" {
            (amount, _) = try Self.validAmount(request)
            let currency = try Self.validCurrency(request)
            guard currency.code == order.currency else { throw .invalid("currency", "does not match the order") }
        }
        var response = echo(request)
        response["merchant_reference"] = .string(order.reference)
        response["fort_id"] = .string(order.fortID)

        let refusal: String? = switch command {
        case "CAPTURE":
            if order.command != "AUTHORIZATION" || !order.charged || order.voided {
                "the order is not an open authorization"
            } else if amount > order.amountMinor - order.captured {
                "amount exceeds the uncaptured balance"
            } else { nil }
        case "REFUND":
            if !order.charged {
                "the order was not charged"
            } else if order.command == "AUTHORIZATION" && order.captured == 0 {
                "nothing was captured"
            } else if amount > (order.command == "PURCHASE" ? order.amountMinor : order.captured) - order.refunded {
                "amount exceeds the refundable balance"
            } else { nil }
        default:
            if order.command != "AUTHORIZATION" || !order.charged || order.voided || order.captured > 0 {
                "the order is not an uncaptured authorization"
            } else { nil }
        }
        if let refusal {
            setOutcome(&response, status: failure, code: "071", message: "Transaction declined: \(refusal)")
            return respond(response, merchant: merchant)
        }
        switch command {
        case "CAPTURE": order.captured += amount
        case "REFUND": order.refunded += amount
        default: order.voided = true
        }
        setOutcome(&response, status: success, code: "000", message: "Success")
        var current = order.current
        for key in ["status", "response_code", "response_message"] { current[key] = response[key] }
        order.current = current
        store(order)
        operations.append(Charge(merchantReference: order.reference, fortID: order.fortID, amountMinor: amount,
                                 currency: order.currency, command: command, status: success))
        logger.debug("\(command) processed", metadata: ["merchant_reference": .string(order.reference),
                                                       "fort_id": .string(order.fortID)])
        notify(response, merchant: merchant)
        return respond(response, merchant: merchant)
    }

    // MARK: Helpers

    static func orderKey(_ merchant: String, _ reference: String) -> String { merchant + "\u{0}" + reference }

    func store(_ order: Order) {
        let key = Self.orderKey(order.merchant.merchantIdentifier, order.reference)
        orders[key] = order
        orderKeysByFortID[order.fortID] = key
    }

    func recordCharge(_ order: inout Order) {
        order.charged = true
        ledger.append(Charge(merchantReference: order.reference, fortID: order.fortID, amountMinor: order.amountMinor,
                             currency: order.currency, command: order.command, status: order.status))
    }

    /// The request's parameters as the response echoes them: without the signature and security
    /// code, and with the card number masked.
    func echo(_ request: Parameters) -> [String: JSONValue] {
        var values = request.values
        values["signature"] = nil
        values["card_security_code"] = nil
        if let card = values["card_number"] {
            values["card_number"] = .string(TestCard.mask(card.parameterText))
        }
        return values
    }

    func setOutcome(_ values: inout [String: JSONValue], status: String, code: String, message: String) {
        values["status"] = .string(status)
        values["response_code"] = .string(status + code)
        values["response_message"] = .string(message)
    }

    /// Signs (when the merchant is known) and serializes a response.
    func respond(_ values: [String: JSONValue], rejection: Rejection? = nil, merchant: PayFortMerchant?) -> PaymentAPIAnswer {
        var values = values
        if let rejection {
            values["status"] = .string(rejection.status)
            values["response_code"] = .string(rejection.responseCode)
            values["response_message"] = .string(rejection.message)
        }
        if let merchant { values["signature"] = .string(Self.sign(values, merchant: merchant)) }
        return .json(.sortedObject(values))
    }

    static func sign(_ values: [String: JSONValue], merchant: PayFortMerchant) -> String {
        Signature.sign(values.map { JSONValue.Member(key: $0.key, value: $0.value) },
                       phrase: merchant.responsePhrase, algorithm: merchant.algorithm)
    }

    static func validReference(_ request: Parameters) throws(Rejection) -> String {
        let reference = try request.require("merchant_reference")
        let allowed = reference.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "-_.".unicodeScalars.contains($0)
        }
        guard reference.count <= 40, allowed else { throw .invalid("merchant_reference") }
        return reference
    }

    /// A positive integer amount in minor units, sent as a JSON number or a numeric string.
    static func validAmount(_ request: Parameters) throws(Rejection) -> (Int64, JSONValue) {
        guard let value = request.values["amount"], request.text("amount") != nil else { throw .missing("amount") }
        let text: String
        switch value {
        case .number(let literal), .string(let literal): text = literal
        default: throw .invalid("amount", "an integer number of minor units")
        }
        guard text.count <= 10, text.allSatisfy(\.isASCIIDigit), !text.hasPrefix("0"), let minor = Int64(text) else {
            throw .invalid("amount", "a positive integer number of minor units")
        }
        return (minor, value)
    }

    static func validCurrency(_ request: Parameters) throws(Rejection) -> Currency {
        let code = try request.require("currency")
        guard let currency = Currency.lookup(code) else { throw .invalid("currency", "unknown ISO 4217 code") }
        return currency
    }

    static func amount(_ minor: Int64, like original: JSONValue) -> JSONValue {
        if case .number = original { return .number(String(minor)) }
        return .string(String(minor))
    }

    static func isPlausibleEmail(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && !email.contains(where: \.isWhitespace)
    }

    /// An http(s) URL with a host, or an app's own scheme (`myapp://…`); never `javascript:`, `data:` or `file:`.
    static func isAbsoluteURL(_ text: String) -> Bool {
        guard text.allSatisfy({ $0.isASCII && !$0.isWhitespace }), let url = URL(string: text),
              let scheme = url.scheme?.lowercased(), !scheme.isEmpty else { return false }
        if scheme == "http" || scheme == "https" { return url.host?.isEmpty == false }
        return !["javascript", "data", "file", "vbscript", "about"].contains(scheme) && text.contains("://")
    }

    static func isExpired(year: Int, month: Int, now: Date) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let today = calendar.dateComponents([.year, .month], from: now)
        guard let currentYear = today.year, let currentMonth = today.month else { return false }
        return (year, month) < (currentYear, currentMonth)
    }

    func newFortID() -> String {
        while true {
            let candidate = "17" + Self.randomDigits(count: 16)
            if orderKeysByFortID[candidate] == nil { return candidate }
        }
    }

    static func randomDigits(count: Int) -> String {
        String((0..<count).map { _ in Character(String(Int.random(in: 0...9))) })
    }

    static func randomAlphanumeric(count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).compactMap { _ in alphabet.randomElement() })
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let parts = duration.components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}

extension Character {
    /// `0`…`9` only (not other Unicode digits).
    var isASCIIDigit: Bool { isASCII && isNumber }
}
