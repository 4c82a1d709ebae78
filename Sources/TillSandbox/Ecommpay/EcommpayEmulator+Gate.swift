import Foundation

extension EcommpayEmulator {
    /// How a Gate answer is delivered (faults change it).
    enum Delivery: Sendable {
        case respond
        case holdThenGatewayTimeout
        case dropConnection
    }

    /// A Gate answer.
    struct GateAnswer: Sendable {
        var status: Int
        var body: [UInt8]
        var delivery: Delivery = .respond
    }

    /// The Gate paths served under `{base}/v2/payment/`: `status` (woo `EcpGatewayAPIPayment::status()`;
    /// docs en_Gate_payment_status_request.html "sent to the endpoint /v2/payment/status"), and `capture`,
    /// `cancel` and `refund` under `card/` and `applepay/`, the two methods the emulator takes (woo
    /// `EcpGatewayAPIPayment::getMethodEndpoint()` and `refund()`; magento `EcpConfigHelper`
    /// `GATE_{CAPTURE,CANCEL,REFUND}_ENDPOINT_FORMAT` "/v2/payment/%s/capture|cancel|refund").
    static let gatePaths = ["status"] + gateMethods.keys.sorted().flatMap { method in
        GateOperation.allCases.map { method + "/" + $0.rawValue }
    }

    /// The method segment of a Gate path → the emulator's `payment.method` it operates on (woo
    /// `EcpGatewayPaymentMethods`: `card`; `applepay` for Apple Pay's `etoken`, the SDK's `apple_pay` here).
    static let gateMethods = ["card": "card", "applepay": "apple_pay"]

    /// The Gate operations on a payment.
    enum GateOperation: String, CaseIterable, Sendable {
        case capture
        case cancel
        case refund
    }

    /// Handles `POST {base}/v2/payment/{path}`: a JSON body signed with the project's secret
    /// (`general.signature`, or a top-level `signature`; facts §6, woo `EcpSigner::sign()`), whose
    /// `general` names `project_id`, `payment_id` and optionally `merchant_callback_url`.
    ///
    /// Every answer is JSON and signed (top-level `signature`, *emulator choice*: whether ecommpay signs
    /// Gate answers is not in the sources; woo does not check). A refused request is HTTP 400
    /// `{"status": "error", "code", "message", …}` (*emulator choice* of the status and codes; the docs
    /// say only that `error` "means that it is impossible to process and execute the request").
    func handleGate(path: String, body: [UInt8]) async -> GateAnswer {
        let fault = takeFault(for: path)
        if fault == .serverError {
            return GateAnswer(status: 500, body: Array("Internal Server Error".utf8))
        }
        var answer = processGate(path: path, body: body, decline: fault == .decline)
        switch fault {
        case .timeout: answer.delivery = .holdThenGatewayTimeout
        case .dropConnection: answer.delivery = .dropConnection
        case .garbage: answer = GateAnswer(status: 200, body: Array("<html><body>502 Bad Gateway</body></html>".utf8))
        case .badSignature:
            if let value = try? JSONValue.parse(answer.body), let signature = value["signature"]?.stringValue {
                let broken = String(signature.reversed())
                answer.body = Self.setting(value, path: ["signature"], to: .string(broken)).serializedBytes
            }
        case .serverError, .decline, .none: break
        }
        return answer
    }

    private func processGate(path: String, body: [UInt8], decline: Bool) -> GateAnswer {
        typealias M = JSONValue.Member
        func refuse(_ code: String, _ message: String, project: Project? = nil, paymentId: String? = nil) -> GateAnswer {
            var members: [M] = [M(key: "status", value: .string("error"))]
            if let project { members.append(M(key: "project_id", value: .number(String(project.projectId)))) }
            if let paymentId { members.append(M(key: "payment_id", value: .string(paymentId))) }
            members += [M(key: "code", value: .string(code)), M(key: "message", value: .string(message))]
            let value = JSONValue.object(members)
            return GateAnswer(status: 400, body: (project.map { EcommpaySignature.signedMessage(value, secret: $0.secretKey) } ?? value)
                .serializedBytes)
        }
        guard let request = try? JSONValue.parse(body), case .object = request else { return refuse("400", "body: not a JSON object") }
        guard let general = request["general"], case .object = general else { return refuse("400", "general: required, an object") }
        guard let projectText = general["project_id"].map(\.parameterText), let projectId = Int(projectText) else {
            return refuse("400", "general.project_id: required, an integer")
        }
        guard let project = project(projectId) else { return refuse("400", "general.project_id: unknown project") }
        switch EcommpaySignature.checkMessage(request, secret: project.secretKey) {
        case .valid: break
        case .undefined: return refuse("400", "general.signature: required", project: project)
        case .invalid, .notJSON:
            let unsigned = EcommpaySignature.removingSignatures(request)
            return refuse("400", "general.signature: does not match (expected the HMAC-SHA512 of \""
                          + EcommpaySignature.stringToSign(unsigned) + "\")", project: project)
        }
        guard let paymentId = general["payment_id"].map(\.parameterText), !paymentId.isEmpty else {
            return refuse("400", "general.payment_id: required", project: project)
        }
        var callbackURL: URL?
        if let text = general["merchant_callback_url"]?.stringValue {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                return refuse("400", "general.merchant_callback_url: an http(s) URL", project: project, paymentId: paymentId)
            }
            callbackURL = url
        }
        let key = Self.key(project.projectId, paymentId)
        switch path {
        case "status":
            guard let payment = payments[key] else { return notFound(project: project, paymentId: paymentId) }
            if let callbackURL { payments[key]?.callbackURL = callbackURL }
            return GateAnswer(status: 200, body: EcommpaySignature.signedMessage(statusValue(payment), secret: project.secretKey)
                .serializedBytes)
        default:
            let segments = path.split(separator: "/").map(String.init)
            guard segments.count == 2, let method = Self.gateMethods[segments[0]], let operation = GateOperation(rawValue: segments[1]) else {
                return refuse("404", "no such Gate endpoint", project: project)
            }
            guard let payment = payments[key] else {
                return refuse("404", "general.payment_id: payment not found", project: project, paymentId: paymentId)
            }
            guard payment.method == method else {
                return refuse("400", "payment: paid with \(payment.method), not \(method) (use its own endpoint)", project: project, paymentId: paymentId)
            }
            let amount: Int64
            switch checkOperation(operation, on: payment, request: request["payment"]) {
            case .success(let checked): amount = checked
            case .failure(let problem): return refuse(problem.code, problem.message, project: project, paymentId: paymentId)
            }
            if let callbackURL { payments[key]?.callbackURL = callbackURL }
            let requestId = Self.randomHex(count: 10) + "-" + Self.randomHex(count: 8)
            apply(operation, amount: amount, to: key, requestId: requestId, decline: decline)
            queueCallback(for: key)
            // The synchronous answer is about the request, not the payment (docs en_faq_payment_result.html:
            // "The success status in the request body indicates that the request has been accepted");
            // fields of woo `EcpGatewayInfoResponse.php`: status, request_id, project_id, payment_id.
            let value = JSONValue.object([M(key: "status", value: .string("success")), M(key: "request_id", value: .string(requestId)),
                                          M(key: "project_id", value: .number(String(project.projectId))),
                                          M(key: "payment_id", value: .string(paymentId))])
            return GateAnswer(status: 200, body: EcommpaySignature.signedMessage(value, secret: project.secretKey).serializedBytes)
        }
    }

    /// Why Gate refuses an operation request: HTTP 400 `status: error` with this code and message.
    struct GateProblem: Error, Sendable {
        var code: String
        var message: String
    }

    /// The amount an operation request may move, or why it is refused (*emulator choice* of the codes, the
    /// messages and of refusing at once: no source shows Gate's refusal of an operation):
    /// - capture and cancel: only of a hold (`awaiting capture`; a cancel after a capture is refused); capture
    ///   `payment{amount, currency}` optional (the whole hold), at most the hold, in its currency; a cancel
    ///   releases all of the hold: a `payment` with another amount is refused (woo sends the order total,
    ///   magento no `payment`: both mean the whole hold here);
    /// - refund: of a payment that holds money (`success`, `partially refunded`, `partially reversed`: woo
    ///   `EcpGatewayOrder::is_action_allowed('refund')`), `payment{amount, currency}` required, at most the
    ///   balance `payment.sum` (woo `EcpModuleRefund::process()`: "Refund amount … is greater than payment
    ///   balance").
    func checkOperation(_ operation: GateOperation, on payment: Payment, request: JSONValue?) -> Result<Int64, GateProblem> {
        var requested: Int64?
        if let request {
            guard case .number(let text) = request["amount"] ?? .null, let value = Int64(text), value > 0 else {
                return .failure(GateProblem(code: "400", message: "payment.amount: a whole number of minor units > 0"))
            }
            guard request["currency"]?.stringValue == payment.currency else {
                return .failure(GateProblem(code: "400", message: "payment.currency: must be \(payment.currency)"))
            }
            requested = value
        }
        switch operation {
        case .capture, .cancel:
            guard payment.status == "awaiting capture" else {
                return .failure(GateProblem(code: "400", message: "payment: its status is \"\(payment.status)\", only \"awaiting capture\" can be "
                                            + (operation == .capture ? "captured" : "cancelled")))
            }
            if let requested, requested > payment.amount {
                return .failure(GateProblem(code: "400", message: "payment.amount: \(requested) is more than the authorised \(payment.amount)"))
            }
            if operation == .cancel, let requested, requested != payment.amount {
                return .failure(GateProblem(code: "400", message: "payment.amount: a cancel releases the whole hold of \(payment.amount)"))
            }
            return .success(requested ?? payment.amount)
        case .refund:
            guard ["success", "partially refunded", "partially reversed"].contains(payment.status), payment.operationType != "verify" else {
                return .failure(GateProblem(code: "400", message: "payment: its status is \"\(payment.status)\", nothing to refund"))
            }
            guard let requested else {
                return .failure(GateProblem(code: "400", message: "payment: required, {amount, currency}"))
            }
            guard requested <= payment.amount else {
                return .failure(GateProblem(code: "400", message: "payment.amount: \(requested) is greater than the payment balance \(payment.amount)"))
            }
            return .success(requested)
        }
    }

    /// Carries out an accepted operation on payment `key` and records it with `requestId` (the callback's
    /// `operation.request_id`). A declined one (``Fault/decline``) is recorded `decline` and changes nothing.
    /// - capture: the payment's sum becomes the captured amount and the rest of the hold is released (woo
    ///   `EcpOrderManager`: "The rest is returned to the payer"), status `success`, charged once in the ledger;
    /// - cancel: status `cancelled`; the callback's `sum_initial` is the released hold;
    /// - refund: `sum_initial` is the refund, `payment.sum` the balance left (woo `EcpModuleRefund`: "Refunded
    ///   %1$s. Payment balance: %2$s"), status `partially refunded`, or `refunded` at a zero balance.
    func apply(_ operation: GateOperation, amount: Int64, to key: String, requestId: String, decline: Bool) {
        guard let payment = payments[key] else { return }
        if decline {
            addOperation(operation.rawValue, status: "decline", amount: amount, to: key)
        } else {
            switch operation {
            case .capture:
                payments[key]?.amount = amount
                payments[key]?.status = "success"
            case .cancel:
                payments[key]?.status = "cancelled"
            case .refund:
                let balance = payment.amount - amount
                payments[key]?.amount = balance
                payments[key]?.status = balance == 0 ? "refunded" : "partially refunded"
            }
            addOperation(operation.rawValue, status: "success", amount: amount, to: key)
        }
        if var operations = payments[key]?.operations, !operations.isEmpty {
            operations[operations.count - 1].requestId = requestId
            payments[key]?.operations = operations
        }
    }

    /// A status answer for an unregistered payment. The docs say only that it "contains an error message
    /// that this payment has not been found in the platform" (en_Gate_payment_status_request.html) and
    /// that a correct request is answered HTTP 200; the shape is an *emulator choice*: HTTP 200,
    /// `{"status": "error", "project_id", "payment_id", "code": "404", "message": "Payment not found",
    /// "errors": [{"code", "message", "field", "description"}]}` (the `errors[]` fields of woo
    /// `EcpGatewayInfoError.php`).
    private func notFound(project: Project, paymentId: String) -> GateAnswer {
        typealias M = JSONValue.Member
        let error = JSONValue.object([M(key: "code", value: .string("404")), M(key: "message", value: .string("Payment not found")),
                                      M(key: "field", value: .string("general.payment_id")),
                                      M(key: "description", value: .string("the payment has not been found in the platform"))])
        let value = JSONValue.object([M(key: "status", value: .string("error")), M(key: "project_id", value: .number(String(project.projectId))),
                                      M(key: "payment_id", value: .string(paymentId)), M(key: "code", value: .string("404")),
                                      M(key: "message", value: .string("Payment not found")), M(key: "errors", value: .array([error]))])
        return GateAnswer(status: 200, body: EcommpaySignature.signedMessage(value, secret: project.secretKey).serializedBytes)
    }

    /// The status answer: the top-level fields woo reads (`EcpGatewayInfoStatus.php`): `project_id`,
    /// `payment` (`EcpGatewayInfoPayment.php`), `account`, `customer`, `operations[]`
    /// (`EcpGatewayInfoOperation.php`), built like the callback (``callbackValue(_:)``) with every
    /// operation instead of the last.
    func statusValue(_ payment: Payment) -> JSONValue {
        var members = (callbackValue(payment).objectMembers ?? []).filter { $0.key != "operation" }
        members.append(.init(key: "operations", value: .array(payment.operations.map(operationValue))))
        return .object(members)
    }
}
