import Foundation

extension CitconEmulator {
    /// The IPN fields, in the order of the IPN document's example and its `fields` list.
    static let ipnFieldNames = [
        "id", "transaction_type", "reference", "amount", "currency", "status", "time_completed", "time_created",
        "payment_method", "amount_captured", "amount_refunded",
    ]

    /// Queues the charge IPN: `transaction_type` `charge`, `status` in the IPN document's words
    /// (`success`, `authorized`, `fail`, `cancelled`), `time_completed` = `time` (Unix milliseconds).
    func notify(_ charge: Charge, status: String, time: Int64) {
        queueIPN(about: charge, members: chargeIPNMembers(charge, transactionType: "charge", status: status, time: time))
    }

    /// Queues a refund IPN: `transaction_type` `refund`, `status` `success`, about the refunded charge
    /// (its `id`, `reference`, `amount`, `payment_method`; it goes to the charge's IPN URL), with
    /// `amount_refunded` the charge's total refunded so far ("total amount refunded") and
    /// `time_completed` the refund's time. A receiver tells a partial refund from a full one by
    /// comparing `amount_refunded` with `amount`.
    func notify(refund: Refund, of charge: Charge) {
        queueIPN(about: charge, members: chargeIPNMembers(charge, transactionType: "refund", status: "success", time: refund.time))
    }

    /// Sends an IPN of any documented kind about charge `id` to its IPN URL, for tests of receivers:
    /// e.g. `transactionType` `chargeback` with `status` `"Notification of Claim"`, or `vault`
    /// (whose statuses no source lists). The members are the charge IPN's, signed as usual; those in
    /// `omitting` are left out of the body and of `fields` (no source shows an IPN without `amount`,
    /// so none is left out unless asked). Moves no money.
    /// - Returns: false when there is no such charge or it has no IPN URL.
    @discardableResult
    public func sendIPN(about id: String, transactionType: String, status: String, omitting: Set<String> = []) -> Bool {
        guard let charge = charges[id], charge.urls.ipn != nil else { return false }
        let members = chargeIPNMembers(charge, transactionType: transactionType, status: status,
                                       time: Self.unixMillis(now())).filter { !omitting.contains($0.key) }
        queueIPN(about: charge, members: members)
        return true
    }

    private func chargeIPNMembers(_ charge: Charge, transactionType: String, status: String, time: Int64) -> [JSONValue.Member] {
        [
            .init(key: "id", value: .string(charge.id)),
            .init(key: "transaction_type", value: .string(transactionType)),
            .init(key: "reference", value: .string(charge.reference)),
            .init(key: "amount", value: .number(String(charge.amount))),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "status", value: .string(status)),
            .init(key: "time_completed", value: .string(Self.iso8601(millis: time))),
            .init(key: "time_created", value: .string(Self.iso8601(millis: charge.created))),
            .init(key: "payment_method", value: .string(charge.method ?? "")),
            .init(key: "amount_captured", value: Self.ipnAmount(charge.amountCaptured)),
            .init(key: "amount_refunded", value: Self.ipnAmount(charge.amountRefunded > 0 ? charge.amountRefunded : nil)),
        ]
    }

    /// A number, or `""` when there is none (as in the IPN document's example).
    static func ipnAmount(_ value: Int64?) -> JSONValue {
        value.map { .number(String($0)) } ?? .string("")
    }

    /// Signs `members` and queues them to the charge's IPN URL, if it has one. Sent after the IPN
    /// delay, or when released if IPNs are held, and retried until a 2xx.
    private func queueIPN(about charge: Charge, members: [JSONValue.Member]) {
        guard let url = charge.urls.ipn else { return }
        let format = charge.merchant.ipnFormat
        let message = IPNMessage(url: url, body: Self.ipnBody(members, format: format, secret: charge.merchant.apiSecret),
                                 contentType: format == .json ? "application/json" : "application/x-www-form-urlencoded",
                                 transactionID: charge.id)
        deliverer.queue(message)
    }

    /// The body of an IPN: `members`, then `fields` (their names, comma-separated) and `sign`, per
    /// How_to_verify_UPI_IPN_signature.pdf. JSON keeps numbers as numbers; a form carries text.
    static func ipnBody(_ members: [JSONValue.Member], format: Merchant.IPNFormat, secret: String) -> [UInt8] {
        var members = members.map { member -> JSONValue.Member in
            format == .json ? member : .init(key: member.key, value: .string(member.value.parameterText))
        }
        members.append(.init(key: IPNSignature.fieldsKey, value: .string(members.map(\.key).joined(separator: ","))))
        var values: [String: String] = [:]
        for member in members { values[member.key] = member.value.parameterText }
        members.append(.init(key: IPNSignature.signKey, value: .string(IPNSignature.sign(values, secret: secret))))
        if format == .json { return JSONValue.object(members).serializedBytes }
        let form = members.map { FormEncoding.escape($0.key) + "=" + FormEncoding.escape($0.value.parameterText) }
        return Array(form.joined(separator: "&").utf8)
    }

    /// POSTs the last IPN about charge `id` again, byte for byte, once (a replay, for tests of
    /// idempotent receivers). Returns the try (also in ``notifications``, with `replay` set and
    /// `attempt` 1), or `nil` when no IPN was ever made for that charge.
    @discardableResult
    public func redeliver(ipnOf id: String) async -> IPNAttempt? {
        await deliverer.redeliver(key: id)
    }
}
