import Foundation

extension EcommpayEmulator {
    /// The callback body about payment `payment` and its last operation, not signed yet. Shapes from
    /// the SDK tests' callback samples: js `__tests__/data/callbackFormats.js` sample 1 (realistic
    /// types: `project_id` integer, `payment{id,type,status,date,method,sum{amount,currency},description}`,
    /// `account{number,token,type,card_holder,expiry_month,expiry_year}`, `customer{id}`,
    /// `operation{id,type,status,date,created_date,request_id,sum_initial,sum_converted,code,message,eci,
    /// provider{id,payment_id,auth_code,endpoint_id,date}}`) and php `tests/data/callbackFormats.php`
    /// format 6 (`payment.cascading_with_redirect`, `is_new_attempts_available`, `attempts_timeout`,
    /// `split_with_redirect`; booleans and numbers as in js sample 161). No member is ever `null`
    /// (PyPI `ecommpay-sdk` 1.0.6 would sign it `None` and reject the callback).
    func callbackValue(_ payment: Payment) -> JSONValue {
        typealias M = JSONValue.Member
        func sum(_ amount: Int64, _ currency: String) -> JSONValue {
            .object([M(key: "amount", value: .number(String(amount))), M(key: "currency", value: .string(currency))])
        }
        var paymentMembers: [M] = [
            M(key: "id", value: .string(payment.id)),
            M(key: "type", value: .string(Self.paymentType(payment.operationType))),
            M(key: "status", value: .string(payment.status)),
            M(key: "date", value: .string(Self.dateText(payment.operations.last?.date ?? payment.created))),
            M(key: "method", value: .string(payment.method)),
            M(key: "sum", value: sum(payment.amount, payment.currency)),
        ]
        if let description = payment.description { paymentMembers.append(M(key: "description", value: .string(description))) }
        paymentMembers += [
            M(key: "is_new_attempts_available", value: .bool(false)),
            M(key: "attempts_timeout", value: .number("0")),
            M(key: "cascading_with_redirect", value: .bool(payment.cascadingWithRedirect)),
            M(key: "split_with_redirect", value: .bool(false)),
        ]
        var members: [M] = [M(key: "project_id", value: .number(String(payment.project.projectId))),
                            M(key: "payment", value: .object(paymentMembers))]
        if let card = payment.card {
            var account: [M] = [M(key: "number", value: .string(card.masked))]
            if let token = payment.token { account.append(M(key: "token", value: .string(token))) }
            account += [M(key: "type", value: .string(card.brand))]
            if !card.holder.isEmpty { account.append(M(key: "card_holder", value: .string(card.holder))) }
            account += [M(key: "expiry_month", value: .string(card.expiryMonth)), M(key: "expiry_year", value: .string(card.expiryYear))]
            members.append(M(key: "account", value: .object(account)))
        }
        if let customer = payment.customerId { members.append(M(key: "customer", value: .object([M(key: "id", value: .string(customer))]))) }
        if let operation = payment.operations.last { members.append(JSONValue.Member(key: "operation", value: operationValue(operation))) }
        return .object(members)
    }

    /// One operation as callbacks (`operation`) and status answers (`operations[]`) carry it.
    func operationValue(_ operation: Operation) -> JSONValue {
        typealias M = JSONValue.Member
        func sum(_ amount: Int64, _ currency: String) -> JSONValue {
            .object([M(key: "amount", value: .number(String(amount))), M(key: "currency", value: .string(currency))])
        }
        var provider: [M] = [M(key: "id", value: .number(String(operation.providerId))),
                             M(key: "payment_id", value: .string(String(operation.id * 7 % 1_000_000_000))),
                             M(key: "endpoint_id", value: .string("sandbox")), M(key: "date", value: .string(Self.dateText(operation.date)))]
        if let code = operation.authCode { provider.insert(M(key: "auth_code", value: .string(code)), at: 2) }
        var members: [M] = [
            M(key: "id", value: .number(String(operation.id))),
            M(key: "type", value: .string(operation.type)),
            M(key: "status", value: .string(operation.status)),
            M(key: "date", value: .string(Self.dateText(operation.date))),
            M(key: "created_date", value: .string(Self.dateText(operation.date))),
            M(key: "request_id", value: .string(operation.requestId)),
            M(key: "sum_initial", value: sum(operation.amount, operation.currency)),
            M(key: "sum_converted", value: sum(operation.amount, operation.currency)),
            M(key: "code", value: .string(operation.code)),
            M(key: "message", value: .string(operation.message)),
        ]
        if let eci = operation.eci { members.append(M(key: "eci", value: .string(eci))) }
        members.append(M(key: "provider", value: .object(provider)))
        return .object(members)
    }

    /// Where payment `payment`'s callbacks go: a Gate request's `merchant_callback_url`, else the project's URL.
    func callbackTarget(_ payment: Payment) -> URL? {
        payment.callbackURL ?? callbackURLs[payment.project.projectId]
    }

    /// Signs the callback about payment `key`'s current state (top-level `signature`, as the python and
    /// js test bodies carry it) and queues it to the payment's callback URL. Nothing is sent when there
    /// is no URL (logged).
    func queueCallback(for key: String) {
        guard let payment = payments[key] else { return }
        let value = callbackValue(payment)
        lastCallbackValue[key] = value
        guard let url = callbackTarget(payment) else {
            logger.debug("no callback URL; callback not sent", metadata: ["payment_id": .string(payment.id)])
            return
        }
        let signed = EcommpaySignature.signedMessage(value, secret: payment.project.secretKey)
        let callback = Callback(url: url, body: signed.serializedBytes, projectId: payment.project.projectId, paymentId: payment.id)
        deliverer.queue(callback)
    }

    /// Waits for the deliveries under way for payment `key`.
    func waitForCallbacks(of key: String) async {
        await deliverer.waitForDeliveries(of: key)
    }

    /// POSTs the last callback of payment `paymentId` again, byte for byte, once (a replay, for tests of
    /// idempotent receivers). `nil` when no callback was ever sent for it.
    @discardableResult
    public func redeliver(projectId: Int? = nil, paymentId: String) async -> CallbackAttempt? {
        guard let key = paymentKey(projectId: projectId, paymentId: paymentId) else { return nil }
        return await deliverer.redeliver(key: key)
    }

    /// Sends a callback built as `crafted` says, once, and returns the try. Moves no money and changes
    /// no payment. `nil` when there is no such payment, no URL to send to, or a `set`/`tamper` value is
    /// not JSON.
    @discardableResult
    public func sendCrafted(_ crafted: CraftedCallback) async -> CallbackAttempt? {
        guard let key = paymentKey(projectId: crafted.projectId, paymentId: crafted.paymentId), let payment = payments[key],
              let url = URL(string: crafted.url ?? callbackTarget(payment)?.absoluteString ?? "") else { return nil }
        var value = callbackValue(payment)
        if let status = crafted.paymentStatus { value = Self.setting(value, path: ["payment", "status"], to: .string(status)) }
        if let status = crafted.operationStatus { value = Self.setting(value, path: ["operation", "status"], to: .string(status)) }
        for (path, text) in crafted.set ?? [:] {
            guard let parsed = try? JSONValue.parse(text) else { return nil }
            value = Self.setting(value, path: path.split(separator: ".").map(String.init), to: parsed)
        }
        if crafted.unsigned != true {
            if let signature = crafted.signature {
                value = Self.setting(value, path: ["signature"], to: .string(signature))
            } else {
                value = EcommpaySignature.signedMessage(value, secret: crafted.secretKey ?? payment.project.secretKey)
            }
        }
        for (path, text) in crafted.tamper ?? [:] {
            guard let parsed = try? JSONValue.parse(text) else { return nil }
            value = Self.setting(value, path: path.split(separator: ".").map(String.init), to: parsed)
        }
        let callback = Callback(url: url, body: value.serializedBytes, projectId: payment.project.projectId, paymentId: payment.id)
        return await deliverer.send(callback, kind: .crafted)
    }

    /// `value` with the member at `path` set to `new` (objects created on the way, members appended).
    static func setting(_ value: JSONValue, path: [String], to new: JSONValue) -> JSONValue {
        guard let first = path.first else { return new }
        var members = value.objectMembers ?? []
        if let index = members.firstIndex(where: { $0.key == first }) {
            members[index].value = setting(members[index].value, path: Array(path.dropFirst()), to: new)
        } else {
            members.append(.init(key: first, value: setting(.object([]), path: Array(path.dropFirst()), to: new)))
        }
        return .object(members)
    }
}
