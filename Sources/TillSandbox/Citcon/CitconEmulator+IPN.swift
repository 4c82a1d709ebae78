import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CitconEmulator {
    /// The IPN fields, in the order they are sent and listed in `fields`.
    static let ipnFieldNames = [
        "id", "transaction_type", "reference", "amount", "currency", "status", "time_completed", "time_created",
        "payment_method", "amount_captured", "amount_refunded",
    ]

    /// Queues an IPN about `charge` to its `urls.ipn`, if it has one: the flat fields, `fields` and
    /// `sign` (with the merchant's API secret), form-encoded or JSON as the merchant wants. It is
    /// sent after the IPN delay, or when released if IPNs are held, and retried until a 2xx.
    /// - Parameters:
    ///   - transactionType: `charge` or `refund`.
    ///   - status: the IPN-document word: `success`, `authorized`, `captured`, `fail`, `cancelled`.
    ///   - time: when it happened, Unix milliseconds (`time_completed`).
    func notify(_ charge: Charge, transactionType: String, status: String, time: Int64) {
        guard let url = charge.ipnURL else { return }
        let message = IPNMessage(url: url, body: Self.ipnBody(charge, transactionType: transactionType, status: status,
                                                              time: time),
                                 contentType: charge.merchant.ipnFormat == .json
                                    ? "application/json" : "application/x-www-form-urlencoded",
                                 transactionID: charge.id)
        lastIPN[charge.id] = message
        if ipnsHeld {
            heldIPNs.append((message, ipnDelay))
        } else {
            startDelivery(message, delay: ipnDelay)
        }
    }

    /// The body of an IPN, signed.
    static func ipnBody(_ charge: Charge, transactionType: String, status: String, time: Int64) -> [UInt8] {
        let json = charge.merchant.ipnFormat == .json
        func amount(_ value: Int64?) -> JSONValue {
            guard let value else { return .string("") }
            return json ? .number(String(value)) : .string(String(value))
        }
        var members: [JSONValue.Member] = [
            .init(key: "id", value: .string(charge.id)),
            .init(key: "transaction_type", value: .string(transactionType)),
            .init(key: "reference", value: .string(charge.reference)),
            .init(key: "amount", value: amount(charge.amount)),
            .init(key: "currency", value: .string(charge.currency)),
            .init(key: "status", value: .string(status)),
            .init(key: "time_completed", value: .string(iso8601(millis: time))),
            .init(key: "time_created", value: .string(iso8601(millis: charge.timeCreated))),
            .init(key: "payment_method", value: .string(charge.method)),
            .init(key: "amount_captured", value: amount(charge.amountCaptured)),
            .init(key: "amount_refunded", value: amount(charge.amountRefunded > 0 ? charge.amountRefunded : nil)),
            .init(key: IPNSignature.fieldsKey, value: .string(ipnFieldNames.joined(separator: ","))),
        ]
        var values: [String: String] = [:]
        for member in members { values[member.key] = member.value.parameterText }
        members.append(.init(key: IPNSignature.signKey,
                             value: .string(IPNSignature.sign(values, secret: charge.merchant.apiSecret))))
        if json { return JSONValue.object(members).serializedBytes }
        let form = members.map { FormEncoding.escape($0.key) + "=" + FormEncoding.escape($0.value.parameterText) }
        return Array(form.joined(separator: "&").utf8)
    }

    /// Starts delivering `message` on its own task.
    func startDelivery(_ message: IPNMessage, delay: Duration) {
        let id = nextDeliveryID
        nextDeliveryID += 1
        deliveries[id] = Task {
            await self.deliver(message, delay: delay)
            self.deliveries[id] = nil
        }
    }

    private func deliver(_ message: IPNMessage, delay: Duration) async {
        if delay > .zero {
            do { try await Task.sleep(for: delay) } catch { return }
        }
        for attempt in 1...ipnMaxAttempts {
            if attempt > 1 {
                do { try await Task.sleep(for: ipnRetryInterval) } catch { return }
            }
            let record = await post(message, attempt: attempt, replay: false)
            if record.acknowledged { return }
        }
        logger.warning("IPN not acknowledged; giving up", metadata: ["id": .string(message.transactionID)])
    }

    /// POSTs `message` once and records the try.
    private func post(_ message: IPNMessage, attempt: Int, replay: Bool) async -> IPNAttempt {
        var request = URLRequest(url: message.url, timeoutInterval: Self.seconds(ipnTimeout))
        request.httpMethod = "POST"
        request.setValue(message.contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(message.body)
        var status: Int?
        do {
            let (_, response) = try await session.data(for: request)
            status = (response as? HTTPURLResponse)?.statusCode
        } catch {
            status = nil
        }
        let record = IPNAttempt(url: message.url, body: String(decoding: message.body, as: UTF8.self),
                                contentType: message.contentType, status: status, attempt: attempt,
                                transactionID: message.transactionID, replay: replay)
        notifications.append(record)
        logger.debug("IPN delivery", metadata: [
            "id": .string(message.transactionID), "attempt": .stringConvertible(attempt),
            "status": .string(status.map(String.init) ?? "no answer"), "replay": .stringConvertible(replay),
        ])
        return record
    }

    /// POSTs the last IPN of charge `id` again, byte for byte, once (a replay, for tests of
    /// idempotent receivers). Returns the try (also in ``notifications``, with `replay` set and
    /// `attempt` 1), or `nil` when no IPN was ever made for that charge.
    @discardableResult
    public func redeliver(ipnOf id: String) async -> IPNAttempt? {
        guard let message = lastIPN[id] else { return nil }
        return await post(message, attempt: 1, replay: true)
    }
}
