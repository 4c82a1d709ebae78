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
    /// docs en_Gate_payment_status_request.html "sent to the endpoint /v2/payment/status"),
    /// `card/capture` (seed "/v2/payment/card/capture"; woo `capture()`) and `card/cancel` (woo; docs
    /// "Two-step purchase / Workflow").
    static let gatePaths = ["status", "card/capture", "card/cancel"]

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
        var answer = processGate(path: path, body: body)
        switch fault {
        case .timeout: answer.delivery = .holdThenGatewayTimeout
        case .dropConnection: answer.delivery = .dropConnection
        case .garbage: answer = GateAnswer(status: 200, body: Array("<html><body>502 Bad Gateway</body></html>".utf8))
        case .badSignature:
            if let value = try? JSONValue.parse(answer.body), let signature = value["signature"]?.stringValue {
                let broken = String(signature.reversed())
                answer.body = Self.setting(value, path: ["signature"], to: .string(broken)).serializedBytes
            }
        case .serverError, .none: break
        }
        return answer
    }

    private func processGate(path: String, body: [UInt8]) -> GateAnswer {
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
        case "card/capture", "card/cancel":
            guard let payment = payments[key] else {
                return refuse("404", "general.payment_id: payment not found", project: project, paymentId: paymentId)
            }
            guard payment.method == "card" else {
                return refuse("400", "payment: paid with \(payment.method), not card (use its own endpoint)", project: project, paymentId: paymentId)
            }
            guard payment.status == "awaiting capture" else {
                return refuse("400", "payment: its status is \"\(payment.status)\", only \"awaiting capture\" can be "
                              + (path == "card/capture" ? "captured" : "cancelled"), project: project, paymentId: paymentId)
            }
            var amount = payment.amount
            if path == "card/capture", let sum = request["payment"] {
                guard case .number(let text) = sum["amount"] ?? .null, let requested = Int64(text), requested > 0 else {
                    return refuse("400", "payment.amount: a whole number of minor units > 0", project: project, paymentId: paymentId)
                }
                guard requested <= payment.amount else {
                    return refuse("400", "payment.amount: \(requested) is more than the authorised \(payment.amount)", project: project,
                                  paymentId: paymentId)
                }
                guard sum["currency"]?.stringValue == payment.currency else {
                    return refuse("400", "payment.currency: must be \(payment.currency)", project: project, paymentId: paymentId)
                }
                amount = requested
            }
            if let callbackURL { payments[key]?.callbackURL = callbackURL }
            let requestId = Self.randomHex(count: 10) + "-" + Self.randomHex(count: 8)
            if path == "card/capture" {
                // A partial capture debits what was asked (docs "Two-step purchase / Workflow"); the
                // payment's sum becomes that amount and the rest of the hold is released (*emulator choice*).
                payments[key]?.amount = amount
                payments[key]?.status = "success"
                addOperation("capture", status: "success", amount: amount, to: key)
            } else {
                payments[key]?.status = "cancelled"
                addOperation("cancel", status: "success", amount: payment.amount, to: key)
            }
            if var operations = payments[key]?.operations, !operations.isEmpty {
                operations[operations.count - 1].requestId = requestId
                payments[key]?.operations = operations
            }
            queueCallback(for: key)
            // The synchronous answer is about the request, not the payment (docs en_faq_payment_result.html:
            // "The success status in the request body indicates that the request has been accepted");
            // fields of woo `EcpGatewayInfoResponse.php`: status, request_id, project_id, payment_id.
            let value = JSONValue.object([M(key: "status", value: .string("success")), M(key: "request_id", value: .string(requestId)),
                                          M(key: "project_id", value: .number(String(project.projectId))),
                                          M(key: "payment_id", value: .string(paymentId))])
            return GateAnswer(status: 200, body: EcommpaySignature.signedMessage(value, secret: project.secretKey).serializedBytes)
        default:
            return refuse("404", "no such Gate endpoint", project: project)
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
