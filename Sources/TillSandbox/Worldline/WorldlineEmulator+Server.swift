import Crypto
import Foundation

/// A Server or Client API request as the routes hand it over.
struct WorldlineRequest: Sendable {
    var method: String
    /// The path exactly as sent (percent-encoded).
    var rawPath: String
    /// The query exactly as sent, without `?`.
    var rawQuery: String?
    var headers: [(name: String, value: String)]
    /// nil when the body was too large to read.
    var body: [UInt8]?

    func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// The decoded path segments.
    var segments: [String] {
        rawPath.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
    }

    /// The decoded query parameters (the last duplicate wins).
    var query: [String: String] {
        guard let rawQuery else { return [:] }
        var result: [String: String] = [:]
        for pair in rawQuery.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            result[key] = value
        }
        return result
    }
}

extension WorldlineEmulator {
    // MARK: Entry point

    /// Handles one Server API request (`/v1/{merchantId}/…`). `root` is the sandbox's base URL.
    func handleServer(_ request: WorldlineRequest, root: URL) -> WorldlineAnswer {
        let segments = request.segments
        guard segments.count >= 3, segments[0] == "v1" else {
            return WorldlineRefusal(404, WorldlineErrors.notFound("resource", request.rawPath)).answer
        }
        let merchantId = segments[1]
        guard request.header("Date")?.isEmpty == false,
              let credentials = WorldlineV1HMAC.parse(request.header("Authorization")),
              let merchant = merchants.first(where: { $0.apiKeyId == credentials.apiKeyId }),
              WorldlineV1HMAC.verify(credentials, secret: merchant.secretApiKey, method: request.method,
                                     headers: request.headers, rawPath: request.rawPath, rawQuery: request.rawQuery) else {
            logger.debug("server request refused: authorization", metadata: ["path": .string(request.rawPath)])
            return WorldlineRefusal(401, WorldlineErrors.authorization).answer
        }
        // A valid key used on another merchant's path: 403 (python maps 403 to AuthorizationException).
        guard merchant.merchantId == merchantId else {
            return WorldlineRefusal(403, WorldlineErrors.authorization).answer
        }
        guard let body = request.body else {
            return WorldlineRefusal(413, WorldlineErrors.invalid("body", "too large")).answer
        }

        let fault = takeFault(for: request.rawPath, merchantId: merchantId)
        if let fault { logger.info("injected fault", metadata: ["fault": .string(fault.rawValue), "path": .string(request.rawPath)]) }
        if fault == .serverError { return WorldlineRefusal(500, WorldlineErrors.unknownServerError).answer }

        // Idempotence (python communicator: X-GCS-Idempotence-Key out, X-GCS-Idempotence-Request-Timestamp
        // back, in Unix milliseconds; 409 / 1409 while the first request is still in progress).
        var idempotenceKey: String?
        var startedAt = Self.unixMillis(now())
        if request.method == "POST", let key = request.header("X-GCS-Idempotence-Key"), !key.isEmpty {
            let scoped = merchantId + "\u{0}" + key
            // "These keys are stored for a period of 24 hours" (docs `error-handling/idempotent-requests`): an answered
            // key older than that is forgotten, and the request is processed as a new one.
            if case .done(_, let started)? = idempotence[scoped], startedAt - started >= Self.idempotenceKeyLifetime {
                idempotence[scoped] = nil
            }
            switch idempotence[scoped] {
            case .inProgress(let started):
                var answer = WorldlineRefusal(409, WorldlineErrors.duplicateRequest).answer
                answer.headers.append(("X-GCS-Idempotence-Request-Timestamp", String(started)))
                return answer
            case .done(var answer, let started):
                answer.headers.append(("X-GCS-Idempotence-Request-Timestamp", String(started)))
                answer.delivery = .respond
                answer.heldIdempotenceKey = nil
                return answer
            case nil:
                idempotence[scoped] = .inProgress(startedAt)
                idempotenceKey = scoped
            }
        } else {
            startedAt = 0
        }

        var answer: WorldlineAnswer
        do throws(WorldlineRefusal) {
            answer = try route(request, segments: Array(segments.dropFirst(2)), merchant: merchant, body: body, root: root)
        } catch {
            logger.debug("server request refused", metadata: ["path": .string(request.rawPath),
                                                              "code": .string(error.errors.first?.code ?? "")])
            answer = error.answer
        }

        if let idempotenceKey {
            if fault == .timeout {
                answer.heldIdempotenceKey = idempotenceKey
            } else {
                idempotence[idempotenceKey] = .done(answer, startedAt)
            }
        }
        switch fault {
        case .timeout: answer.delivery = .holdThenGatewayTimeout
        case .dropConnection: answer.delivery = .dropConnection
        case .serverError, nil: break
        }
        return answer
    }

    /// How long an answered idempotence key is kept, in milliseconds: 24 hours (docs `error-handling/idempotent-requests`).
    static let idempotenceKeyLifetime: Int64 = 24 * 60 * 60 * 1000

    /// Called when a held (timed-out) answer is given up on: repeats of its idempotence key now get it.
    func releaseHeld(_ answer: WorldlineAnswer) {
        guard let key = answer.heldIdempotenceKey, case .inProgress(let started) = idempotence[key] else { return }
        var stored = answer
        stored.delivery = .respond
        stored.heldIdempotenceKey = nil
        idempotence[key] = .done(stored, started)
    }

    private func route(_ request: WorldlineRequest, segments: [String], merchant: Merchant, body: [UInt8],
                       root: URL) throws(WorldlineRefusal) -> WorldlineAnswer {
        let method = request.method
        switch (method, segments.count, segments.first) {
        case ("POST", 1, "sessions"):
            return try createSession(merchant: merchant, body: body, root: root)
        case ("POST", 1, "payments"):
            return try createPayment(merchant: merchant, body: body, root: root)
        case ("GET", 1, "payments"):
            return try findPayments(merchant: merchant, query: request.query)
        case ("GET", 2, "payments"):
            return .json(paymentWire(try payment(segments[1], of: merchant)))
        case ("POST", 3, "payments"):
            let id = try payment(segments[1], of: merchant).id
            switch segments[2] {
            case "approve": return try approve(id, body: body)
            case "capture": return try capture(id, body: body)
            case "finalizecapture": return try finalizeCapture(id)
            case "refund": return try refund(id, body: body)
            case "cancel": return try cancel(id)
            default: break
            }
        case ("GET", 3, "payments"):
            let payment = try payment(segments[1], of: merchant)
            switch segments[2] {
            case "refunds": return .json(RefundsWire(refunds: payment.refundIDs.compactMap { refunds[$0] }.map(refundWire)))
            case "captures":
                return .json(CapturesWire(captures: payment.captureIDs.compactMap { captures[$0] }.map(captureWire)))
            case "thirdpartystatus": return .json(["thirdPartyStatus": thirdPartyStatus(payment)])
            default: break
            }
        case ("GET", 1, "refunds"):
            return try findRefunds(merchant: merchant, query: request.query)
        case ("GET", 2, "refunds"):
            guard let refund = refunds[segments[1]], refund.merchantId == merchant.merchantId else {
                throw WorldlineRefusal(404, WorldlineErrors.notFound("refund", segments[1]))
            }
            return .json(refundWire(refund))
        case ("GET", 2, "captures"):
            guard let capture = captures[segments[1]], capture.merchantId == merchant.merchantId else {
                throw WorldlineRefusal(404, WorldlineErrors.notFound("capture", segments[1]))
            }
            return .json(captureWire(capture))
        case ("GET", 2, "services") where segments[1] == "testconnection":
            // python `tests/resources/communication/testConnection.json`.
            return .json(["result": "OK"])
        case ("GET", 3, "services") where segments[1] == "convert" && segments[2] == "amount":
            return try convertAmount(request.query, sourceKey: "source", targetKey: "target")
        default:
            break
        }
        throw WorldlineRefusal(404, WorldlineErrors.notFound("resource", request.rawPath))
    }

    // MARK: Decoding

    /// Parses `body` strictly (duplicate keys and trailing bytes refused) and decodes it as `T`; an
    /// empty body decodes as `{}`.
    func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], prefix: String = "") throws(WorldlineRefusal) -> T {
        let bytes = body.isEmpty ? Array("{}".utf8) : body
        do {
            guard try JSONValue.parse(bytes).objectMembers != nil else {
                throw WorldlineRefusal(400, WorldlineErrors.invalid(prefix.isEmpty ? "body" : prefix, "not a JSON object"))
            }
        } catch let error as WorldlineRefusal {
            throw error
        } catch {
            throw WorldlineRefusal(400, WorldlineErrors.invalid(prefix.isEmpty ? "body" : prefix, "not JSON (\(error))"))
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            let path = prefix.isEmpty ? error.propertyPath : prefix + "." + error.propertyPath
            throw WorldlineRefusal(400, WorldlineErrors.invalid(path, "missing or of the wrong type"))
        } catch {
            throw WorldlineRefusal(400, WorldlineErrors.invalid(prefix.isEmpty ? "body" : prefix, "unreadable"))
        }
    }

    // MARK: Sessions

    private func createSession(merchant: Merchant, body: [UInt8], root: URL) throws(WorldlineRefusal) -> WorldlineAnswer {
        struct SessionRequest: Decodable { var tokens: [String]? }
        let request = try decode(SessionRequest.self, body)
        let sessionId = Self.randomHex(count: 32)
        let customerId = merchant.merchantId + "-" + Self.randomHex(count: 20)
        sessions[sessionId] = ClientSession(merchantId: merchant.merchantId, customerId: customerId, created: now())
        let base = root.absoluteString.hasSuffix("/") ? String(root.absoluteString.dropLast()) : root.absoluteString
        // The emulator stores no tokens, so every token asked for is invalid.
        return .json(SessionResponseWire(assetUrl: base + "/worldline/assets", clientApiUrl: base + "/client/v1",
                                         clientSessionId: sessionId, customerId: customerId,
                                         invalidTokens: request.tokens ?? [], region: "EU"), status: 201)
    }

    /// The live session `id`, if it has not expired.
    func liveSession(_ id: String) -> ClientSession? {
        guard let session = sessions[id] else { return nil }
        guard now().timeIntervalSince(session.created) < sessionLifetime.timeInterval else { return nil }
        return session
    }

    // MARK: Create payment

    private func createPayment(merchant: Merchant, body: [UInt8], root: URL) throws(WorldlineRefusal) -> WorldlineAnswer {
        let request = try decode(CreatePaymentRequestWire.self, body)
        guard let amount = request.order?.amountOfMoney?.amount else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("order.amountOfMoney.amount", "required"))
        }
        guard amount > 0 else { throw WorldlineRefusal(400, WorldlineErrors.invalid("order.amountOfMoney.amount", "must be positive")) }
        guard let currency = request.order?.amountOfMoney?.currencyCode, Self.isCurrencyCode(currency) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("order.amountOfMoney.currencyCode", "an ISO 4217 code is required"))
        }
        let cardInput = request.cardPaymentMethodSpecificInput

        var cardNumber: String?
        var expiry: String?
        var requestedProduct = cardInput?.paymentProductId
        var customerId: String?
        var tokenize = cardInput?.tokenize ?? false
        if let encrypted = request.encryptedCustomerInput {
            let digest = SHA256.hash(data: Data(encrypted.utf8)).map { String(format: "%02x", $0) }.joined()
            guard !usedInputs.contains(digest) else {
                throw WorldlineRefusal(400, WorldlineErrors.encryptedInput("already used: encrypted customer input can only be submitted once"))
            }
            let plaintext: [UInt8]
            do { plaintext = try WorldlineJWE.decrypt(encrypted, key: encryptionKey) } catch {
                throw WorldlineRefusal(400, WorldlineErrors.encryptedInput(error.reason))
            }
            let input = try decode(CustomerInputWire.self, plaintext, prefix: "encryptedCustomerInput")
            guard let session = liveSession(input.clientSessionId), session.merchantId == merchant.merchantId else {
                throw WorldlineRefusal(400, WorldlineErrors.encryptedInput("clientSessionId is not a live session of this merchant"))
            }
            usedInputs.insert(digest)
            customerId = session.customerId
            var values: [String: String] = [:]
            for value in input.paymentValues ?? [] { values[value.key] = value.value }
            cardNumber = values["cardNumber"]
            expiry = values["expiryDate"]
            requestedProduct = input.paymentProductId
            tokenize = tokenize || (input.tokenize ?? false)
        } else if let card = cardInput?.card {
            cardNumber = card.cardNumber
            expiry = card.expiryDate
        } else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid(
                "encryptedCustomerInput", "required (or cardPaymentMethodSpecificInput.card)"))
        }

        guard let cardNumber, !cardNumber.isEmpty else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("cardPaymentMethodSpecificInput.card.cardNumber", "required"))
        }
        guard WorldlineCatalog.passesLuhn(cardNumber) else { throw WorldlineRefusal(400, WorldlineErrors.luhn) }
        guard let expiry, WorldlineCatalog.expiryIsValid(expiry, now: now()) else {
            throw WorldlineRefusal(400, WorldlineErrors.expiry(expiry ?? ""))
        }
        let range = WorldlineCatalog.iinRange(for: cardNumber)
        let brands = range.map { [$0.productId] + $0.coBrands } ?? []
        let productId: Int
        if let requestedProduct {
            guard brands.isEmpty || brands.contains(requestedProduct) else {
                throw WorldlineRefusal(400, WorldlineErrors.invalid("paymentProductId", "the card is not of product \(requestedProduct)"))
            }
            productId = requestedProduct
        } else if let range {
            productId = range.productId
        } else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("cardPaymentMethodSpecificInput.paymentProductId", "required"))
        }
        guard let product = WorldlineCatalog.product(productId), product.paymentMethod == "card" else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("paymentProductId", "\(productId) is not a card product"))
        }
        guard product.isOffered(country: request.order?.customer?.billingAddress?.countryCode, currency: currency, amount: amount) else {
            throw WorldlineRefusal(400, WorldlineErrors.productNotAllowed(productId))
        }

        let approvedStatus: WorldlinePaymentStatus
        switch cardInput?.authorizationMode {
        // A sale captures at the moment of approval, and a card payment waits for the merchant's approval
        // unless `requiresApproval` is false (the Python SDK's `createPayment.json`: a card payment sent
        // without these fields is PENDING_APPROVAL). So SALE alone still waits.
        case "SALE"?: approvedStatus = cardInput?.requiresApproval == false ? .captured : .pendingApproval
        case "FINAL_AUTHORIZATION"?, "PRE_AUTHORIZATION"?:
            approvedStatus = cardInput?.requiresApproval == false ? .captured : .pendingCapture
        case nil: approvedStatus = cardInput?.requiresApproval == false ? .captured : .pendingApproval
        case let other?:
            throw WorldlineRefusal(400, WorldlineErrors.invalid("cardPaymentMethodSpecificInput.authorizationMode",
                                                                "\(other) is not SALE, FINAL_AUTHORIZATION or PRE_AUTHORIZATION"))
        }
        let behaviour = WorldlineCatalog.behaviour(of: cardNumber)
        let returnURL = cardInput?.threeDSecure?.redirectionData?.returnUrl ?? cardInput?.returnUrl
        if behaviour == .threeDSecure, returnURL == nil {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("cardPaymentMethodSpecificInput.threeDSecure.redirectionData.returnUrl",
                                                                "required for a card that needs 3-D Secure"))
        }

        let id = newPaymentID(merchant: merchant)
        var record = PaymentRecord(
            id: id, merchantId: merchant.merchantId, customerId: customerId, amount: amount, currency: currency,
            merchantReference: request.order?.references?.merchantReference,
            card: StoredCard(productId: productId, maskedNumber: String(repeating: "*", count: cardNumber.count - 4) + cardNumber.suffix(4),
                             expiryDate: expiry),
            status: .created, statusChanged: now(), approvedStatus: approvedStatus)
        if tokenize { record.token = UUID().uuidString.lowercased() }
        payments[id] = record
        paymentOrder.append(id)

        var action: MerchantActionWire?
        switch behaviour {
        case .approve:
            authorize(id)
        case .pending:
            setStatus(id, .authorizationRequested)
        case .decline:
            reject(id, error: WorldlineErrors.notAuthorised)
            var error = WorldlineErrors.notAuthorised
            error.httpStatusCode = 402
            let result = createResult(id, action: nil)
            // python `createPayment.failure.rejected.json`: 402 with errors and paymentResult.
            throw WorldlineRefusal(402, error, paymentResult: result)
        case .threeDSecure:
            let token = Self.randomHex(count: 32)
            let mac = UUID().uuidString.lowercased()
            payments[id]?.returnURL = returnURL
            payments[id]?.returnMAC = mac
            threeDSTokens[token] = id
            setStatus(id, .redirected)
            let base = root.absoluteString.hasSuffix("/") ? String(root.absoluteString.dropLast()) : root.absoluteString
            action = MerchantActionWire(actionType: "REDIRECT",
                                        redirectData: RedirectDataWire(RETURNMAC: mac, redirectURL: base + "/worldline/3ds/" + token))
        }
        let base = root.absoluteString.hasSuffix("/") ? String(root.absoluteString.dropLast()) : root.absoluteString
        // The python SDK's test resources answer 201 with a Location header.
        return .json(createResult(id, action: action), status: 201,
                     headers: [("Location", base + "/v1/\(merchant.merchantId)/payments/\(id)")])
    }

    func createResult(_ id: String, action: MerchantActionWire?) -> CreatePaymentResultWire {
        let payment = payments[id]!  // swiftlint:disable:this force_unwrapping
        return CreatePaymentResultWire(
            creationOutput: CreationOutputWire(additionalReference: String(id.prefix(20)), externalReference: id,
                                               token: payment.token, isNewToken: payment.token == nil ? nil : true),
            merchantAction: action, payment: paymentWire(payment))
    }

    /// 30 digits, as the vendor fixtures' ids (`000000123410000595980000100001`): the merchant id
    /// (zero-padded to 10 when numeric), a 10-digit sequence, then `0000100001`.
    private func newPaymentID(merchant: Merchant) -> String {
        let merchantPart = merchant.merchantId.allSatisfy { $0.isASCII && $0.isNumber } && merchant.merchantId.count <= 10
            ? String(repeating: "0", count: 10 - merchant.merchantId.count) + merchant.merchantId : "0000000000"
        let sequencePart = String(format: "%010d", nextSequence())
        return merchantPart + sequencePart + "0000100001"
    }

    static func isCurrencyCode(_ text: String) -> Bool {
        text.count == 3 && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    // MARK: Status changes

    /// Moves a payment to `status`, and announces it by webhook.
    func setStatus(_ id: String, _ status: WorldlinePaymentStatus) {
        guard var payment = payments[id] else { return }
        payment.status = status
        payment.statusChanged = now()
        payments[id] = payment
        queuePaymentEvent(id, type: status.eventType)
    }

    /// An approved authorization: the status the request asked for, with the ledger entries.
    func authorize(_ id: String) {
        guard var payment = payments[id] else { return }
        payment.authorisationCode = "OK" + String(format: "%04d", Int.random(in: 0...9999))
        payments[id] = payment
        record(.authorization, payment, id: id, amount: payment.amount)
        if payment.approvedStatus == .captured {
            payments[id]?.amountCaptured = payment.amount
            record(.capture, payment, id: id, amount: payment.amount)
        }
        setStatus(id, payment.approvedStatus)
    }

    func reject(_ id: String, error: WorldlineAPIError) {
        var error = error
        error.requestId = String(nextSequence())
        payments[id]?.errors = [error]
        setStatus(id, .rejected)
    }

    func record(_ operation: LedgerEntry.Operation, _ payment: PaymentRecord, id: String, amount: Int64) {
        ledger.append(LedgerEntry(operation: operation, merchantId: payment.merchantId, paymentId: payment.id, id: id,
                                  merchantReference: payment.merchantReference, amount: amount, currency: payment.currency))
    }

    // MARK: Follow-ups

    private func payment(_ id: String, of merchant: Merchant) throws(WorldlineRefusal) -> PaymentRecord {
        guard let payment = payments[id], payment.merchantId == merchant.merchantId else {
            throw WorldlineRefusal(404, WorldlineErrors.notFound("payment", id))
        }
        return payment
    }

    private func approve(_ id: String, body: [UInt8]) throws(WorldlineRefusal) -> WorldlineAnswer {
        let request = try decode(ApprovePaymentRequestWire.self, body)
        guard let payment = payments[id], [.pendingApproval, .pendingCapture].contains(payment.status),
              payment.amountCaptured == 0 else {
            throw WorldlineRefusal(409, WorldlineErrors.notAllowed("approve needs PENDING_APPROVAL or PENDING_CAPTURE"))
        }
        let amount = request.amount ?? payment.amount
        guard amount > 0, amount <= payment.amount else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("amount", "must be between 1 and the authorized amount"))
        }
        payments[id]?.amountCaptured = amount
        record(.capture, payment, id: id, amount: amount)
        if amount < payment.amount { record(.cancel, payment, id: id, amount: payment.amount - amount) }
        setStatus(id, .captured)
        return .json(PaymentOnlyWire(payment: paymentWire(payments[id]!)))  // swiftlint:disable:this force_unwrapping
    }

    private func capture(_ id: String, body: [UInt8]) throws(WorldlineRefusal) -> WorldlineAnswer {
        let request = try decode(CapturePaymentRequestWire.self, body)
        guard let payment = payments[id], [.pendingApproval, .pendingCapture].contains(payment.status) else {
            throw WorldlineRefusal(409, WorldlineErrors.notAllowed("capture needs PENDING_APPROVAL or PENDING_CAPTURE"))
        }
        let remaining = payment.amount - payment.amountCaptured
        // python `capture_payment_request.py`: empty amount = the full amount, and then final.
        let amount = request.amount ?? remaining
        guard amount > 0, amount <= remaining else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("amount", "must be between 1 and the uncaptured amount \(remaining)"))
        }
        let isFinal = request.isFinal == true || request.amount == nil || amount == remaining
        let captureID = String(id.prefix(20)) + "0000" + String(format: "%06d", nextSequence() % 1_000_000)
        captures[captureID] = CaptureRecord(id: captureID, paymentId: id, merchantId: payment.merchantId, amount: amount,
                                            currency: payment.currency, isFinal: isFinal, statusChanged: now(),
                                            merchantCaptureReference: request.order?.references?.merchantCaptureReference)
        payments[id]?.captureIDs.append(captureID)
        payments[id]?.amountCaptured += amount
        record(.capture, payment, id: captureID, amount: amount)
        if isFinal {
            if amount < remaining { record(.cancel, payment, id: id, amount: remaining - amount) }
            setStatus(id, .captured)
        } else {
            queuePaymentEvent(id, type: payment.status.eventType)
        }
        return .json(captureWire(captures[captureID]!))  // swiftlint:disable:this force_unwrapping
    }

    /// `POST …/finalizecapture` (python `payments_client.py` `finalizecapture`: no body, a `PaymentResponse`). No source
    /// says more than "Finalize capture"; the emulator reads it as "no further capture": a `PENDING_CAPTURE` payment with
    /// captures becomes `CAPTURED` and the rest of the authorisation is released; without a capture it is refused.
    private func finalizeCapture(_ id: String) throws(WorldlineRefusal) -> WorldlineAnswer {
        guard let payment = payments[id], payment.status == .pendingCapture, payment.amountCaptured > 0 else {
            throw WorldlineRefusal(409, WorldlineErrors.notAllowed("finalizecapture needs a PENDING_CAPTURE payment with a capture"))
        }
        let rest = payment.amount - payment.amountCaptured
        if rest > 0 { record(.cancel, payment, id: id, amount: rest) }
        for captureID in payment.captureIDs { captures[captureID]?.isFinal = true }
        setStatus(id, .captured)
        return .json(paymentWire(payments[id]!))  // swiftlint:disable:this force_unwrapping
    }

    private func refund(_ id: String, body: [UInt8]) throws(WorldlineRefusal) -> WorldlineAnswer {
        let request = try decode(RefundRequestWire.self, body)
        guard let payment = payments[id], payment.amountCaptured > 0,
              [.captured, .paid, .pendingCapture].contains(payment.status) else {
            throw WorldlineRefusal(409, WorldlineErrors.notAllowed("only a payment with captured money can be refunded"))
        }
        guard let amount = request.amountOfMoney?.amount else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("amountOfMoney.amount", "required"))
        }
        guard request.amountOfMoney?.currencyCode == payment.currency else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("amountOfMoney.currencyCode", "must be the payment's \(payment.currency)"))
        }
        let remaining = payment.amountCaptured - refundedTotal(payment)
        guard amount > 0, amount <= remaining else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("amountOfMoney.amount",
                                                                "must be between 1 and the refundable amount \(remaining)"))
        }
        let refundID = String(id.prefix(20)) + "0000" + String(format: "%06d", 300_000 + nextSequence() % 100_000)
        var refund = RefundRecord(id: refundID, paymentId: id, merchantId: payment.merchantId, amount: amount,
                                  currency: payment.currency, merchantReference: request.refundReferences?.merchantReference,
                                  status: "REFUND_REQUESTED", statusChanged: now())
        if refundDeclines.remove(id) != nil {
            // A refund the bank refuses at once: python `refund_error_response.py` (errors and the created refund's
            // `refundResult`, which the SDK raises as DeclinedRefundException). The HTTP status, 402, is the one the
            // vendor's declined-payment resource uses; no source shows a declined refund's.
            refund.status = "REJECTED"
            refunds[refundID] = refund
            payments[id]?.refundIDs.append(refundID)
            queueRefundEvent(refundID, type: "refund.rejected")
            throw WorldlineRefusal(402, WorldlineErrors.refundRefused, refundResult: refundWire(refund))
        }
        refunds[refundID] = refund
        payments[id]?.refundIDs.append(refundID)
        let answer = WorldlineAnswer.json(refundWire(refund), status: 201)
        queueRefundEvent(refundID, type: "refund.refund_requested")

        // The emulator's bank pays refunds out at once (the refund is REFUNDED right after the answer) unless told to
        // hold them (``WorldlineEmulator/holdRefunds(_:)``; then ``WorldlineEmulator/settleRefund(_:refunded:)``).
        if !refundsHeld { settle(refundID, refunded: true) }
        return answer
    }

    /// Moves a `REFUND_REQUESTED` refund to `REFUNDED` (money back to the customer, the payment `REFUNDED` once its refunds
    /// add up to what was captured) or `REJECTED_CAPTURE` ("rejected by the bank or us during processing",
    /// `refund_result.py`), with its webhook.
    func settle(_ refundID: String, refunded: Bool) {
        guard var refund = refunds[refundID], refund.status == "REFUND_REQUESTED", let payment = payments[refund.paymentId] else { return }
        refund.status = refunded ? "REFUNDED" : "REJECTED_CAPTURE"
        refund.statusChanged = now()
        refunds[refundID] = refund
        guard refunded else {
            queueRefundEvent(refundID, type: "refund.rejected_capture")
            return
        }
        record(.refund, payment, id: refundID, amount: refund.amount)
        queueRefundEvent(refundID, type: "refund.refunded")
        if let updated = payments[refund.paymentId], refundedTotal(updated) == updated.amountCaptured {
            setStatus(refund.paymentId, .refunded)
        }
    }

    private func cancel(_ id: String) throws(WorldlineRefusal) -> WorldlineAnswer {
        guard let payment = payments[id], payment.status.isCancellable else {
            throw WorldlineRefusal(409, WorldlineErrors.notAllowed("the payment is not cancellable"))
        }
        if payment.status.isAuthorized {
            record(.cancel, payment, id: id, amount: payment.amount - payment.amountCaptured)
        }
        setStatus(id, payment.amountCaptured > 0 ? .captured : .cancelled)
        return .json(PaymentOnlyWire(payment: paymentWire(payments[id]!)))  // swiftlint:disable:this force_unwrapping
    }

    // MARK: Find

    private func paging(_ query: [String: String]) throws(WorldlineRefusal) -> (offset: Int, limit: Int) {
        // No source gives the defaults; 0 and 50 are choices (limit 1…100).
        let offset = try query["offset"].map { text throws(WorldlineRefusal) -> Int in
            guard let value = Int(text), value >= 0 else { throw WorldlineRefusal(400, WorldlineErrors.invalid("offset", "not a count")) }
            return value
        } ?? 0
        let limit = try query["limit"].map { text throws(WorldlineRefusal) -> Int in
            guard let value = Int(text), (1...100).contains(value) else {
                throw WorldlineRefusal(400, WorldlineErrors.invalid("limit", "must be 1 to 100"))
            }
            return value
        } ?? 50
        return (offset, limit)
    }

    private func findPayments(merchant: Merchant, query: [String: String]) throws(WorldlineRefusal) -> WorldlineAnswer {
        let (offset, limit) = try paging(query)
        let matching = paymentOrder.compactMap { payments[$0] }.filter { payment in
            // The emulator makes no hosted checkouts, so a hostedCheckoutId matches nothing.
            payment.merchantId == merchant.merchantId && query["hostedCheckoutId"] == nil
                && (query["merchantReference"].map { $0 == payment.merchantReference } ?? true)
        }
        let page = matching.dropFirst(offset).prefix(limit).map(paymentWire)
        return .json(FindPaymentsWire(limit: limit, offset: offset, payments: Array(page), totalCount: matching.count))
    }

    private func findRefunds(merchant: Merchant, query: [String: String]) throws(WorldlineRefusal) -> WorldlineAnswer {
        let (offset, limit) = try paging(query)
        let matching = paymentOrder.compactMap { payments[$0] }.filter { $0.merchantId == merchant.merchantId }
            .flatMap { payment in payment.refundIDs.compactMap { refunds[$0] }.map { (payment, $0) } }
            .filter { payment, refund in
                query["merchantReference"].map { $0 == refund.merchantReference || $0 == payment.merchantReference } ?? true
            }
            .map(\.1)
        let page = matching.dropFirst(offset).prefix(limit).map(refundWire)
        return .json(FindRefundsWire(limit: limit, offset: offset, refunds: Array(page), totalCount: matching.count))
    }

    func convertAmount(_ query: [String: String], sourceKey: String, targetKey: String) throws(WorldlineRefusal) -> WorldlineAnswer {
        guard let source = query[sourceKey], Self.isCurrencyCode(source) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid(sourceKey, "an ISO 4217 code is required"))
        }
        guard let target = query[targetKey], Self.isCurrencyCode(target) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid(targetKey, "an ISO 4217 code is required"))
        }
        guard let text = query["amount"], let amount = Int64(text), amount >= 0 else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid("amount", "an integer amount in minor units is required"))
        }
        guard let converted = WorldlineCatalog.convert(amount, from: source, to: target) else {
            throw WorldlineRefusal(400, WorldlineErrors.invalid(sourceKey, "no rate for \(source) to \(target)"))
        }
        return .json(["convertedAmount": converted])
    }

    // MARK: Wire views

    func refundedTotal(_ payment: PaymentRecord) -> Int64 {
        payment.refundIDs.compactMap { refunds[$0] }
            .filter { !["REJECTED", "REJECTED_CAPTURE", "CANCELLED"].contains($0.status) }
            .reduce(0) { $0 + $1.amount }
    }

    func paymentWire(_ payment: PaymentRecord) -> PaymentWire {
        let refunded = refundedTotal(payment)
        let status = payment.status
        return PaymentWire(
            id: payment.id,
            paymentOutput: PaymentOutputWire(
                amountOfMoney: AmountOfMoneyWire(amount: payment.amount, currencyCode: payment.currency),
                references: PaymentReferencesWire(merchantReference: payment.merchantReference, paymentReference: "0"),
                paymentMethod: "card",
                cardPaymentMethodSpecificOutput: CardOutputWire(
                    paymentProductId: payment.card.productId, authorisationCode: payment.authorisationCode,
                    card: CardEssentialsWire(cardNumber: payment.card.maskedNumber, expiryDate: payment.card.expiryDate),
                    token: payment.token),
                amountPaid: payment.amountCaptured, amountCaptured: payment.amountCaptured, amountRefunded: refunded),
            status: status.rawValue,
            statusOutput: PaymentStatusOutputWire(
                errors: payment.errors.isEmpty ? nil : payment.errors, isCancellable: status.isCancellable,
                statusCategory: status.category, statusCode: status.code,
                statusCodeChangeDateTime: WorldlineDates.statusTime(payment.statusChanged),
                isAuthorized: status.isAuthorized,
                isRefundable: [.captured, .paid].contains(status) && payment.amountCaptured > refunded))
    }

    /// Refund statuses from python `refund_result.py`; the category and code are choices
    /// (REFUND_REQUESTED is in the `statusCategory` list; the codes are not vendor-sourced).
    func refundWire(_ refund: RefundRecord) -> RefundWire {
        let (category, code): (String, Int) = switch refund.status {
        case "REFUNDED": ("REFUNDED", 1800)
        case "REFUND_REQUESTED": ("REFUND_REQUESTED", 800)
        default: ("UNSUCCESSFUL", 100)
        }
        let reference = payments[refund.paymentId]?.merchantReference
        return RefundWire(
            id: refund.id,
            refundOutput: RefundOutputWire(
                amountOfMoney: AmountOfMoneyWire(amount: refund.amount, currencyCode: refund.currency),
                references: PaymentReferencesWire(merchantReference: refund.merchantReference ?? reference, paymentReference: "0"),
                paymentMethod: "card", amountPaid: refund.status == "REFUNDED" ? refund.amount : 0),
            status: refund.status,
            statusOutput: RefundStatusOutputWire(isCancellable: false, statusCategory: category, statusCode: code,
                                                 statusCodeChangeDateTime: WorldlineDates.statusTime(refund.statusChanged)))
    }

    func captureWire(_ capture: CaptureRecord) -> CaptureWire {
        let reference = payments[capture.paymentId]?.merchantReference
        return CaptureWire(
            id: capture.id,
            captureOutput: CaptureOutputWire(
                amountOfMoney: AmountOfMoneyWire(amount: capture.amount, currencyCode: capture.currency),
                references: PaymentReferencesWire(merchantReference: reference, merchantCaptureReference: capture.merchantCaptureReference,
                                                  paymentReference: "0"),
                paymentMethod: "card", amountPaid: capture.amount),
            status: "CAPTURED",
            statusOutput: CaptureStatusOutputWire(isFinal: capture.isFinal, isRefundable: true,
                                                  statusCode: WorldlinePaymentStatus.captured.code,
                                                  statusCodeChangeDateTime: WorldlineDates.statusTime(capture.statusChanged)))
    }

    /// swift `ThirdPartyStatus.swift` values: WAITING, INITIALIZED, AUTHORIZED, COMPLETED.
    func thirdPartyStatus(_ payment: PaymentRecord) -> String {
        switch payment.status {
        case .created: "INITIALIZED"
        case .redirected, .authorizationRequested: "WAITING"
        case .pendingApproval, .pendingCapture: "AUTHORIZED"
        default: "COMPLETED"
        }
    }
}
