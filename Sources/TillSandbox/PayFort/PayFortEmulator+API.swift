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

/// A request the gateway refuses or declines: the answer's `status`, `response_code` and `response_message`.
struct Rejection: Error, Sendable {
    var status: String
    var message: String
    var responseCode: String

    /// - Parameters:
    ///   - status: the two-digit status (`00` invalid request by default).
    ///   - code: the three-digit message code (response-codes.json `messages`).
    init(status: String = "00", code: String, message: String) {
        self.status = status
        self.responseCode = status + code
        self.message = message
    }

    static func missing(_ field: String) -> Rejection { Rejection(code: "001", message: "Missing parameter: \(field)") }
    static func invalid(_ field: String, _ detail: String? = nil) -> Rejection {
        Rejection(code: "002", message: "Invalid parameter format: \(field)" + (detail.map { " (\($0))" } ?? ""))
    }
    static func tooLong(_ field: String, _ limit: Int) -> Rejection {
        Rejection(code: "032", message: "Invalid parameter length: \(field) (at most \(limit))")
    }
    static let signatureMismatch = Rejection(code: "008", message: "Signature mismatch")
}

/// A request's parameters, with the lookups validation needs.
struct Parameters {
    var values: [String: JSONValue]
    var members: [JSONValue.Member]

    init(members: [JSONValue.Member]) {
        self.members = members
        self.values = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }

    init(_ fields: [String: String]) {
        self.init(members: fields.map { JSONValue.Member(key: $0.key, value: .string($0.value)) })
    }

    /// The text of a scalar parameter; `nil` when absent, null or empty.
    func text(_ key: String) -> String? {
        guard let value = values[key], value.isScalar, value != .null else { return nil }
        let text = value.parameterText
        return text.isEmpty ? nil : text
    }

    func require(_ key: String) throws(Rejection) -> String {
        guard let text = text(key) else { throw .missing(key) }
        return text
    }
}

extension PayFortEmulator {
    /// The fixed answer to a body that is not a JSON object (unsigned: the merchant is not known).
    static let malformedBody = PaymentAPIAnswer.json(
        .object([.init(key: "status", value: .string("00")), .init(key: "response_code", value: .string("00073")),
                 .init(key: "response_message", value: .string("Invalid request format"))]),
        status: 400)

    /// The longest value accepted per parameter, from the FORT mobile SDK guide's parameter tables
    /// (v3.4 §5.4.1, §6.7.1) and the custom merchant page's fields; others get 1000.
    static let maximumLengths: [String: Int] = [
        "service_command": 20, "command": 20, "query_command": 20, "access_code": 20, "merchant_identifier": 20,
        "language": 2, "device_id": 100, "merchant_reference": 40, "amount": 10, "currency": 3, "customer_email": 254,
        "sdk_token": 100, "token_name": 100, "payment_option": 10, "eci": 16, "order_description": 150,
        "customer_ip": 45, "customer_name": 40, "phone_number": 19, "settlement_reference": 34, "merchant_extra": 999,
        "merchant_extra1": 250, "merchant_extra2": 250, "merchant_extra3": 250, "merchant_extra4": 250,
        "merchant_extra5": 250, "card_holder_name": 50, "return_url": 400, "fort_id": 20, "card_number": 19,
        "expiry_date": 4, "card_security_code": 4, "signature": 200, "maintenance_reference": 200, "remember_me": 3,
    ]

    /// Request parameters an answer does not echo: the signature, the card security code, the return
    /// URL and the client-identification fields the vendor SDKs add (none of them appears in the
    /// sandbox answers of payfort/payfort-dotnet-sdk's test application logs).
    static let notEchoed: Set<String> = [
        "signature", "card_security_code", "return_url", "app_programming", "app_plugin", "app_plugin_version",
        "app_ver", "app_framework",
    ]

    /// Keys whose values a JSON answer carries as numbers (purchase-response.json: `"amount": 24300`).
    static let numericKeys: Set<String> = ["amount", "authorized_amount", "captured_amount", "refunded_amount"]

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
            answer = process(Parameters(members: members), payFortBaseURL: payFortBaseURL)
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

    private func process(_ request: Parameters, payFortBaseURL: URL) -> PaymentAPIAnswer {
        let merchant: PayFortMerchant
        do throws(Rejection) {
            merchant = try identifyMerchant(request)
        } catch {
            // Unknown credentials: nothing to sign with.
            return respond(echo(request), rejection: error, merchant: nil)
        }
        do throws(Rejection) {
            try verifySignature(request, merchant: merchant)
            try validateCommon(request)
            if let service = request.text("service_command") {
                guard service == "SDK_TOKEN" else { throw Rejection(code: "004", message: "Invalid command: \(service)") }
                return try createSDKToken(request, merchant: merchant)
            }
            if let query = request.text("query_command") {
                guard query == "CHECK_STATUS" else { throw Rejection(code: "004", message: "Invalid command: \(query)") }
                return checkStatus(request, merchant: merchant)
            }
            let command = try request.require("command")
            switch command {
            case "PURCHASE", "AUTHORIZATION":
                return try pay(request, command: command, merchant: merchant, payFortBaseURL: payFortBaseURL)
            case "CAPTURE", "REFUND", "VOID_AUTHORIZATION":
                return try maintain(request, command: command, merchant: merchant)
            default:
                throw Rejection(code: "004", message: "Invalid command: \(command)")
            }
        } catch {
            return respond(echo(request), rejection: error, merchant: merchant)
        }
    }

    /// The merchant named by `access_code` and `merchant_identifier`.
    func identifyMerchant(_ request: Parameters) throws(Rejection) -> PayFortMerchant {
        let accessCode = try request.require("access_code")
        let identifier = try request.require("merchant_identifier")
        let candidates = merchants.filter { $0.merchantIdentifier == identifier }
        guard !candidates.isEmpty else { throw Rejection(code: "009", message: "Invalid merchant identifier") }
        guard let merchant = candidates.first(where: { $0.accessCode == accessCode }) else {
            throw Rejection(code: "010", message: "Invalid access code")
        }
        return merchant
    }

    /// Checks `signature` with the merchant's request phrase, over every other parameter.
    func verifySignature(_ request: Parameters, merchant: PayFortMerchant) throws(Rejection) {
        let signature = try request.require("signature")
        guard Signature.verify(signature, members: request.members, phrase: merchant.requestPhrase,
                               algorithm: merchant.algorithm) else {
            logger.notice("signature mismatch", metadata: ["merchant": .string(merchant.merchantIdentifier)])
            throw Rejection.signatureMismatch
        }
    }

    /// Checks that hold for every request: flat values, documented lengths, `language` en or ar.
    func validateCommon(_ request: Parameters) throws(Rejection) {
        if let nested = request.members.first(where: { !$0.value.isScalar }) {
            throw Rejection.invalid(nested.key, "nested values are not accepted")
        }
        for member in request.members {
            let limit = Self.maximumLengths[member.key] ?? 1000
            if member.value.parameterText.count > limit { throw Rejection.tooLong(member.key, limit) }
        }
        let language = try request.require("language")
        guard language == "en" || language == "ar" else { throw Rejection.invalid("language", "en or ar") }
    }

    // MARK: SDK_TOKEN

    private func createSDKToken(_ request: Parameters, merchant: PayFortMerchant) throws(Rejection) -> PaymentAPIAnswer {
        let device = try request.require("device_id")
        guard Self.isDeviceID(device) else { throw Rejection.invalid("device_id") }
        let token = Self.randomHex(count: 32).uppercased()
        sdkTokens[token] = SDKToken(merchantIdentifier: merchant.merchantIdentifier, accessCode: merchant.accessCode,
                                    deviceID: device, created: now())
        var response = echo(request)
        response["sdk_token"] = token
        Self.setOutcome(&response, status: "22", code: "000", message: "Success")
        logger.debug("SDK token created", metadata: ["merchant": .string(merchant.merchantIdentifier)])
        return respond(response, merchant: merchant)
    }

    /// Letters, digits and `_ - . @ +` (sdk-token-request.json), as the mobile SDK's device id is.
    static func isDeviceID(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_-.@+".unicodeScalars.contains($0)) }
    }

    // MARK: PURCHASE / AUTHORIZATION

    /// The parts of a PURCHASE or AUTHORIZATION that the server-to-server API and the mobile SDK share.
    struct PaymentRequest {
        var command: String
        var reference: String
        var amountMinor: Int64
        var currency: Currency
        var eci: String
        var paymentOption: String
        var card: CardToken
        var returnURL: String?
    }

    /// Server-to-server PURCHASE or AUTHORIZATION with a `token_name` from the merchant page
    /// (purchase-request.json, authorization-request.json).
    private func pay(_ request: Parameters, command: String, merchant: PayFortMerchant,
                     payFortBaseURL: URL) throws(Rejection) -> PaymentAPIAnswer {
        for field in ["merchant_reference", "amount", "currency", "customer_email", "token_name"] {
            _ = try request.require(field)
        }
        let tokenName = try request.require("token_name")
        guard let card = cardTokens[merchant.merchantIdentifier]?[tokenName] else {
            throw Rejection(code: "044", message: "Token name does not exist")
        }
        let payment = try validatePayment(request, command: command, card: card, merchant: merchant)
        var response = echo(request)
        let (_, answer, delivery) = process(payment, echoed: &response, merchant: merchant, payFortBaseURL: payFortBaseURL)
        var reply = respond(answer, merchant: merchant)
        reply.delivery = delivery
        return reply
    }

    /// Validates what a PURCHASE or AUTHORIZATION carries besides the card.
    func validatePayment(_ request: Parameters, command: String, card: CardToken,
                         merchant: PayFortMerchant) throws(Rejection) -> PaymentRequest {
        let reference = try Self.validReference(request)
        let amountMinor = try Self.validAmount(request)
        let currency = try Self.validCurrency(request)
        let email = try request.require("customer_email")
        guard Self.isPlausibleEmail(email) else { throw Rejection.invalid("customer_email") }
        let eci = request.text("eci") ?? "ECOMMERCE"
        guard ["ECOMMERCE", "MOTO", "RECURRING"].contains(eci) else { throw Rejection.invalid("eci") }
        if let returnURL = request.text("return_url") {
            guard Self.isAbsoluteURL(returnURL) else { throw Rejection.invalid("return_url", "an absolute URL") }
        }
        if let ip = request.text("customer_ip"), !ip.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }) {
            throw Rejection.invalid("customer_ip")
        }
        let cardOptions = TestCard.paymentOptions(of: card.number)
        var paymentOption = cardOptions.first ?? "VISA"
        if let given = request.text("payment_option") {
            guard ["VISA", "MASTERCARD", "AMEX", "MADA", "MEEZA"].contains(given) else { throw Rejection.invalid("payment_option") }
            if given == "MADA" || given == "MEEZA" {
                // FORT mobile SDK guide §6.7.1: MADA and MEEZA for Purchase and eci ECOMMERCE only.
                guard command == "PURCHASE", eci == "ECOMMERCE" else {
                    throw Rejection.invalid("payment_option", "\(given) only with PURCHASE and eci ECOMMERCE")
                }
            }
            guard cardOptions.isEmpty || cardOptions.contains(given) else {
                throw Rejection.invalid("payment_option", "does not match the card")
            }
            paymentOption = given
        }
        guard orders[Self.orderKey(merchant.merchantIdentifier, reference)] == nil else {
            throw Rejection(code: "066", message: "Merchant reference already exists")
        }
        return PaymentRequest(command: command, reference: reference, amountMinor: amountMinor, currency: currency,
                              eci: eci, paymentOption: paymentOption, card: card, returnURL: request.text("return_url"))
    }

    /// Charges (or declines, or asks 3-D Secure for) a validated payment, stores the order, sends the
    /// feedback when the result is final, and returns the order, the answer's fields and how to deliver it.
    /// - Parameter echoed: the request's echoed parameters; completed with the transaction's.
    func process(_ payment: PaymentRequest, echoed response: inout [String: String], merchant: PayFortMerchant,
                 payFortBaseURL: URL) -> (Order, [String: String], PaymentAPIAnswer.Delivery) {
        let fortID = newFortID()
        response["fort_id"] = fortID
        response["eci"] = payment.eci
        response["payment_option"] = payment.paymentOption
        response["card_number"] = TestCard.mask(payment.card.number)
        response["expiry_date"] = payment.card.expiry
        if let holder = payment.card.holder { response["card_holder_name"] = Self.escapeApostrophes(holder) }
        let purchase = payment.command == "PURCHASE"
        let success = purchase ? "14" : "02"
        let failure = purchase ? "13" : "03"
        var order = Order(merchant: merchant, reference: payment.reference, fortID: fortID, command: payment.command,
                          amountMinor: payment.amountMinor, currency: payment.currency.code, card: payment.card,
                          current: [:], returnURL: payment.returnURL, transaction: ("", "", ""))
        order.created = now()
        var answer: [String: String]?
        var delivery = PaymentAPIAnswer.Delivery.respond
        let behaviour = TestCard.behaviour(of: payment.card.number)

        if Self.isExpired(payment.card.expiry, now: now()) {
            response["acquirer_response_code"] = "54"
            Self.setOutcome(&response, status: failure, code: "012", message: "Card expired")
        } else if declineWithTechnicalProblem {
            Self.setOutcome(&response, status: failure, code: "006", message: "Technical problem")
        } else {
            switch behaviour {
            case .approve, .invalidNumber:
                Self.approve(&response, status: success)
            case .decline:
                response["acquirer_response_code"] = "05"
                Self.setOutcome(&response, status: failure, code: "666", message: "Transaction declined")
            case .insufficientFunds:
                response["acquirer_response_code"] = "51"
                Self.setOutcome(&response, status: failure, code: "029", message: "Insufficient funds")
            case .timeout:
                Self.setOutcome(&response, status: failure, code: "006", message: "Technical problem")
                delivery = .holdThenGatewayTimeout
            case .uncertain:
                // Charged, but the answer says it is not known: only CHECK_STATUS or feedback tell.
                Self.approve(&response, status: success)
                var told = response
                told["authorization_code"] = nil
                told["acquirer_response_code"] = nil
                Self.setOutcome(&told, status: "15", code: "777",
                                message: "The transaction has been processed, but failed to receive confirmation")
                answer = told
            case .threeDSecure:
                let session = Self.randomAlphanumeric(count: 26).lowercased()
                order.threeDSSession = session
                orderKeysBySession[session] = Self.orderKey(merchant.merchantIdentifier, payment.reference)
                Self.setOutcome(&response, status: "20", code: "064", message: "3-D Secure check requested")
                // authorization-response.json: the 20064 answer carries 3ds_url and no token_name.
                var told = response
                told["token_name"] = nil
                told["3ds_url"] = Self.threeDSURL(payFortBaseURL, session: session)
                answer = told
            }
        }
        order.current = response
        order.transaction = (response["status"] ?? "", response["response_code"] ?? "", response["response_message"] ?? "")
        if response["status"] == success { recordCharge(&order) }
        store(order)
        logger.debug("\(payment.command) processed", metadata: [
            "merchant_reference": .string(payment.reference), "fort_id": .string(fortID),
            "card": .string(TestCard.mask(payment.card.number)), "response_code": .string(order.transaction.code),
        ])
        if !order.awaitingThreeDS { notify(order.current, merchant: merchant) }
        return (order, answer ?? response, delivery)
    }

    static func approve(_ response: inout [String: String], status: String) {
        response["authorization_code"] = randomDigits(count: 6)
        response["acquirer_response_code"] = "00"
        setOutcome(&response, status: status, code: "000", message: "Success")
    }

    static func threeDSURL(_ base: URL, session: String) -> String {
        base.appendingPathComponent("secure3dsSimulator").absoluteString + "?FORTSESSIONID=" + session
    }

    // MARK: CHECK_STATUS

    /// CHECK_STATUS (check-status-response.json): `12000` with the order's last operation in
    /// `transaction_*` and its money in `authorized_amount`, `captured_amount`, `refunded_amount`;
    /// no `amount`, no `currency` (without the amounts when ``PayFortEmulator/setCheckStatusCarriesAmounts(_:)``
    /// says so). An order it cannot find is `12036` "Order not found": the query worked and found nothing
    /// (payfort/opencart3-payfort@ba4c924 `AMAZON_PS_CHECK_STATUS_ORDER_NOT_FOUND_RESPONSE_CODE = '12036'`,
    /// payfort/prestashop-payfort@7aabf85 the same constant).
    private func checkStatus(_ request: Parameters, merchant: PayFortMerchant) -> PaymentAPIAnswer {
        var response = echo(request)
        guard let order = findOrder(request, merchant: merchant) else {
            Self.setOutcome(&response, status: "12", code: "036", message: "Order not found")
            return respond(response, merchant: merchant)
        }
        response["merchant_reference"] = order.reference
        response["fort_id"] = order.fortID
        response["transaction_status"] = order.transaction.status
        response["transaction_code"] = order.transaction.code
        response["transaction_message"] = order.transaction.message
        // Authorized: still held or taken (a voided authorization holds nothing).
        let authorized: Int64 = order.charged && !order.voided ? order.amountMinor : 0
        let captured = order.command == "PURCHASE" ? authorized : order.captured
        if checkStatusCarriesAmounts {
            response["authorized_amount"] = String(authorized)
            response["captured_amount"] = String(captured)
            response["refunded_amount"] = String(order.refunded)
        }
        if let code = order.current["authorization_code"], order.charged { response["authorization_code"] = code }
        Self.setOutcome(&response, status: "12", code: "000", message: "Success")
        return respond(response, merchant: merchant)
    }

    /// The merchant's order named by `merchant_reference` and/or `fort_id` (both must agree).
    private func findOrder(_ request: Parameters, merchant: PayFortMerchant) -> Order? {
        if let reference = request.text("merchant_reference") {
            guard let order = orders[Self.orderKey(merchant.merchantIdentifier, reference)] else { return nil }
            if let fortID = request.text("fort_id"), fortID != order.fortID { return nil }
            return order
        }
        guard let fortID = request.text("fort_id"), let key = orderKeysByFortID[fortID], let order = orders[key],
              order.merchant.merchantIdentifier == merchant.merchantIdentifier else { return nil }
        return order
    }

    // MARK: CAPTURE / REFUND / VOID_AUTHORIZATION

    /// How long an authorization is held: it is captured or voided "within 7 days of the authorization" (APS's
    /// capture and void pages); after the hold period "the transaction will be voided automatically" (docs
    /// `redirection.md`). What is left of it can then be neither captured nor voided.
    static let holdPeriod: TimeInterval = 7 * 24 * 3_600

    /// CAPTURE, REFUND or VOID_AUTHORIZATION of an order named by `merchant_reference` and/or `fort_id` (docs
    /// `maintenanceparameters.md`; payfort-maintenance.json): the answer echoes the request (with its
    /// `maintenance_reference`), adds `fort_id`, and carries the command's success (`04000`, `06000`, `08000`) or
    /// its failure status (`05`, `07`, `09`) with a message code; the feedback carries the same.
    ///
    /// - CAPTURE: of an AUTHORIZATION still held, up to what is left of it (`042` beyond).
    /// - REFUND: up to what was captured (a PURCHASE is captured whole) less what was refunded (`048` beyond).
    /// - VOID_AUTHORIZATION: of an AUTHORIZATION still held and not captured; `amount`/`currency` optional (the
    ///   docs mirror lists them, APS's void page and both official SDKs send none).
    /// - An order it cannot find: `036`; another currency: `013`.
    /// - A capture or void the sources give no code for (a PURCHASE, a declined or voided order, a void after a
    ///   capture, an authorization past its hold): `666` "Transaction declined", the emulator's choice.
    /// - The `technicalProblem` fault: the failure status with `006` "Technical problem", nothing moved.
    private func maintain(_ request: Parameters, command: String, merchant: PayFortMerchant) throws(Rejection) -> PaymentAPIAnswer {
        _ = try request.require("merchant_reference")
        let (success, failure) = switch command {
        case "CAPTURE": ("04", "05")
        case "REFUND": ("06", "07")
        default: ("08", "09")
        }
        var amount: Int64?
        var currency: Currency?
        if command != "VOID_AUTHORIZATION" || request.text("amount") != nil {
            amount = try Self.validAmount(request)
            currency = try Self.validCurrency(request)
        }
        if let reference = request.text("maintenance_reference"), !Self.isReference(reference) {
            throw Rejection.invalid("maintenance_reference")
        }
        var response = echo(request)
        guard var order = findOrder(request, merchant: merchant) else {
            Self.setOutcome(&response, status: failure, code: "036", message: "Order not found")
            return respond(response, merchant: merchant)
        }
        response["fort_id"] = order.fortID
        let value = amount ?? order.amountMinor
        let held = order.command == "AUTHORIZATION" && order.charged && !order.voided
            && now().timeIntervalSince(order.created) <= Self.holdPeriod
        var refusal: (code: String, message: String)?
        if let currency, currency.code != order.currency {
            refusal = ("013", "Invalid currency")
        } else if declineWithTechnicalProblem {
            refusal = ("006", "Technical problem")
        } else {
            switch command {
            case "CAPTURE":
                if !held {
                    refusal = ("666", "Transaction declined")
                } else if value > order.amountMinor - order.captured {
                    refusal = ("042", "Operation amount exceeds the authorized amount")
                }
            case "REFUND":
                let refundable = (order.command == "PURCHASE" ? (order.charged ? order.amountMinor : 0) : order.captured) - order.refunded
                if !order.charged || order.voided {
                    refusal = ("666", "Transaction declined")
                } else if value > refundable {
                    refusal = ("048", "Operation amount exceeds captured amount")
                }
            default:
                if !held || order.captured > 0 {
                    refusal = ("666", "Transaction declined")
                }
            }
        }
        if let refusal {
            Self.setOutcome(&response, status: failure, code: refusal.code, message: refusal.message)
        } else {
            switch command {
            case "CAPTURE": order.captured += value
            case "REFUND": order.refunded += value
            default: order.voided = true
            }
            Self.setOutcome(&response, status: success, code: "000", message: "Success")
            operations.append(Charge(merchantReference: order.reference, fortID: order.fortID, amountMinor: value,
                                     currency: order.currency, command: command, status: success,
                                     maintenanceReference: request.text("maintenance_reference")))
            // Only an operation that went through becomes the order's last transaction (CHECK_STATUS).
            order.transaction = (success, success + "000", "Success")
        }
        store(order)
        logger.debug("\(command) processed", metadata: ["merchant_reference": .string(order.reference),
                                                       "fort_id": .string(order.fortID),
                                                       "response_code": .string(response["response_code"] ?? "")])
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
                             currency: order.currency, command: order.command, status: order.current["status"] ?? ""))
    }

    /// The request's parameters as an answer echoes them ("every parameter the merchant sends is
    /// returned", FORT mobile SDK guide §5.4.2), as text, less ``notEchoed``. APS echoes an apostrophe
    /// as `&#39;` and signs that text (purchase-response.json, feedback-json.json).
    func echo(_ request: Parameters) -> [String: String] {
        var values: [String: String] = [:]
        for (key, value) in request.values where !Self.notEchoed.contains(key) && value.isScalar {
            values[key] = Self.escapeApostrophes(value.parameterText)
        }
        if let card = values["card_number"] { values["card_number"] = TestCard.mask(card) }
        return values
    }

    static func escapeApostrophes(_ text: String) -> String {
        text.replacingOccurrences(of: "'", with: "&#39;")
    }

    static func setOutcome(_ values: inout [String: String], status: String, code: String, message: String) {
        values["status"] = status
        values["response_code"] = status + code
        values["response_message"] = message
    }

    /// Signs (when the merchant is known, with the response phrase) and serializes an answer, amounts
    /// as JSON numbers and everything else as strings.
    func respond(_ values: [String: String], rejection: Rejection? = nil, merchant: PayFortMerchant?) -> PaymentAPIAnswer {
        var values = values
        if let rejection {
            values["status"] = rejection.status
            values["response_code"] = rejection.responseCode
            values["response_message"] = rejection.message
        }
        if let merchant { values[Signature.signatureKey] = Self.sign(values, merchant: merchant) }
        var json: [String: JSONValue] = [:]
        for (key, text) in values {
            let numeric = Self.numericKeys.contains(key) && !text.isEmpty && text.allSatisfy(\.isASCIIDigit)
            json[key] = numeric ? .number(text) : .string(text)
        }
        return .json(.sortedObject(json))
    }

    /// The response-phrase signature of outgoing parameters, the PHP SDK's way (empty values as `k=`).
    static func sign(_ values: [String: String], merchant: PayFortMerchant) -> String {
        var unsigned = values
        unsigned[Signature.signatureKey] = nil
        return Signature.sign(unsigned, phrase: merchant.responsePhrase, algorithm: merchant.algorithm, emptyValues: .signed)
    }

    static func validReference(_ request: Parameters) throws(Rejection) -> String {
        let reference = try request.require("merchant_reference")
        guard isReference(reference) else { throw Rejection.invalid("merchant_reference") }
        return reference
    }

    /// Letters, digits and `- _ .`: `merchant_reference` and `maintenance_reference` (docs `maintenanceparameters.md`).
    static func isReference(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "-_.".unicodeScalars.contains($0)
        }
    }

    /// A positive integer amount in minor units, sent as a JSON number (the PHP and .NET SDKs) or a
    /// numeric string (the mobile SDK's request dictionary).
    static func validAmount(_ request: Parameters) throws(Rejection) -> Int64 {
        guard let value = request.values["amount"], request.text("amount") != nil else { throw .missing("amount") }
        let text: String
        switch value {
        case .number(let literal), .string(let literal): text = literal
        default: throw Rejection(code: "005", message: "Invalid amount")
        }
        guard text.count <= 10, text.allSatisfy(\.isASCIIDigit), !text.hasPrefix("0"), let minor = Int64(text) else {
            throw Rejection(code: "005", message: "Invalid amount: a positive integer number of minor units")
        }
        return minor
    }

    static func validCurrency(_ request: Parameters) throws(Rejection) -> Currency {
        let code = try request.require("currency")
        guard let currency = Currency.lookup(code) else { throw Rejection(code: "013", message: "Invalid currency") }
        return currency
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

    /// Whether `expiry` is four digits YYMM with a month from 01 to 12.
    static func isExpiryDate(_ expiry: String) -> Bool {
        guard expiry.count == 4, expiry.allSatisfy(\.isASCIIDigit), let month = Int(expiry.suffix(2)) else { return false }
        return (1...12).contains(month)
    }

    /// Whether the card's YYMM expiry month is before the current one (UTC).
    static func isExpired(_ expiry: String, now: Date) -> Bool {
        guard isExpiryDate(expiry), let year = Int(expiry.prefix(2)), let month = Int(expiry.suffix(2)) else { return true }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let today = calendar.dateComponents([.year, .month], from: now)
        guard let currentYear = today.year, let currentMonth = today.month else { return false }
        return (2000 + year, month) < (currentYear, currentMonth)
    }

    /// A new 18-digit `fort_id` (purchase-response.json: `"169996200007825545"`).
    func newFortID() -> String {
        while true {
            let candidate = "17" + Self.randomDigits(count: 16)
            if orderKeysByFortID[candidate] == nil { return candidate }
        }
    }

}

extension Character {
    /// `0`…`9` only (not other Unicode digits).
    var isASCIIDigit: Bool { isASCII && isNumber }
}
