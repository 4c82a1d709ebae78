import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Webhooks (docs `documentation/webhooks/`, `…/event-structure/`, `…/event-types/`; python
/// `webhooks/signature_validator.py`, `v1/domain/webhooks_event.py`).
///
/// - Before the first event to a URL, the endpoint is verified: a `GET` with
///   `X-GCS-Webhooks-Endpoint-Verification: <random>`, which the endpoint must echo in its body (the
///   docs: "respond to get GET action and echo the 'X-GCS-Webhooks-Endpoint-Verification' header value
///   in the body"). No SDK implements it and the docs give no content type or status for the echo:
///   the emulator takes any 2xx whose body, trimmed of white space, equals the value.
/// - Events are `POST`ed as `application/json`, signed with `X-GCS-Signature` (Base64 of
///   HMAC-SHA256 of the raw body with the merchant's webhook secret) and `X-GCS-KeyId`.
/// - A non-2xx answer or none is retried, waiting `webhookRetryInterval`, then twice as long each
///   time, up to `webhookMaxAttempts` tries (no source gives Connect's schedule).
extension WorldlineEmulator {
    /// A test's own event (an attack test's forgery): what to send and how to sign it.
    public struct CraftedEvent: Sendable, Hashable, Codable {
        /// The merchant whose webhook URL it goes to.
        public var merchantId: String
        /// The event `type` to put in a built body (`payment.captured`, …).
        public var type: String?
        /// The payment whose current state a built body carries.
        public var paymentId: String?
        /// Field overrides applied to the built payment (`status`, `amount`): a forged state.
        public var status: String?
        /// Overrides `payment.paymentOutput.amountOfMoney.amount` in a built body.
        public var amount: Int64?
        /// The exact body to send instead of a built one.
        public var body: String?
        /// Sign with this secret instead of the merchant's webhook secret.
        public var secret: String?
        /// Send this `X-GCS-Signature` as it is (no signing).
        public var signature: String?
        /// Send this `X-GCS-KeyId` instead of the merchant's.
        public var keyId: String?
        /// Leave `X-GCS-Signature` out.
        public var omitSignature: Bool?

        /// Creates a crafted event; see the members.
        public init(merchantId: String, type: String? = nil, paymentId: String? = nil, status: String? = nil,
                    amount: Int64? = nil, body: String? = nil, secret: String? = nil, signature: String? = nil,
                    keyId: String? = nil, omitSignature: Bool? = nil) {
            self.merchantId = merchantId
            self.type = type
            self.paymentId = paymentId
            self.status = status
            self.amount = amount
            self.body = body
            self.secret = secret
            self.signature = signature
            self.keyId = keyId
            self.omitSignature = omitSignature
        }
    }

    // MARK: Queueing

    func queuePaymentEvent(_ paymentId: String, type: String) {
        guard let payment = payments[paymentId] else { return }
        queueEvent(merchantId: payment.merchantId, type: type, payment: paymentWire(payment), refund: nil)
    }

    func queueRefundEvent(_ refundId: String, type: String) {
        guard let refund = refunds[refundId] else { return }
        queueEvent(merchantId: refund.merchantId, type: type, payment: nil, refund: refundWire(refund))
    }

    private func queueEvent(merchantId: String, type: String, payment: PaymentWire?, refund: RefundWire?) {
        guard let merchant = merchant(merchantId), webhookURLs[merchantId] != nil else { return }
        let event = WebhookEventWire(apiVersion: "v1", id: UUID().uuidString.lowercased(),
                                     created: WorldlineDates.eventTime(now()), merchantId: merchantId, type: type,
                                     payment: payment, refund: refund)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(event) else { return }
        let bytes = Array(body)
        let message = WebhookMessage(eventId: event.id, type: type, merchantId: merchantId, body: bytes,
                                     keyId: merchant.webhookKeyId,
                                     signature: WorldlineWebhookSignature.sign(bytes, secret: merchant.webhookSecretKey))
        events[event.id] = message
        startDelivery(message)
    }

    private func startDelivery(_ message: WebhookMessage) {
        let id = nextDeliveryID
        nextDeliveryID += 1
        deliveryTasks[id] = Task {
            await self.deliver(message)
            self.deliveryTasks[id] = nil
        }
    }

    private func deliver(_ message: WebhookMessage) async {
        var wait = webhookRetryInterval
        for attempt in 1...webhookMaxAttempts {
            if attempt > 1 {
                do { try await Task.sleep(for: wait) } catch { return }
                wait = wait * 2
            }
            // The URL is read at each try: a merchant may fix its configuration meanwhile.
            guard let url = webhookURLs[message.merchantId] else { return }
            if !verifiedEndpoints.contains(url.absoluteString) {
                guard await verify(url, attempt: attempt) else { continue }
                verifiedEndpoints.insert(url.absoluteString)
            }
            let record = await post(message, to: url, attempt: attempt, replay: false, crafted: false, signatureHeader: message.signature)
            if record.accepted { return }
        }
        logger.warning("webhook not acknowledged; giving up", metadata: ["event": .string(message.eventId)])
    }

    /// The endpoint verification request; true when the endpoint echoed the value.
    private func verify(_ url: URL, attempt: Int) async -> Bool {
        let value = UUID().uuidString.lowercased()
        var request = URLRequest(url: url, timeoutInterval: Self.seconds(webhookTimeout))
        request.httpMethod = "GET"
        request.setValue(value, forHTTPHeaderField: "X-GCS-Webhooks-Endpoint-Verification")
        var status: Int?
        var echoed = false
        if let (data, response) = try? await session.data(for: request) {
            status = (response as? HTTPURLResponse)?.statusCode
            let body = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            echoed = (200..<300).contains(status ?? 0) && body == value
        }
        webhookDeliveries.append(WebhookDelivery(kind: .verification, url: url, eventId: nil, type: nil, body: value, keyId: nil,
                                                 signature: nil, status: status, accepted: echoed, attempt: attempt,
                                                 replay: false, crafted: false))
        return echoed
    }

    @discardableResult
    private func post(_ message: WebhookMessage, to url: URL, attempt: Int, replay: Bool, crafted: Bool,
                      signatureHeader: String?) async -> WebhookDelivery {
        var request = URLRequest(url: url, timeoutInterval: Self.seconds(webhookTimeout))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let signatureHeader { request.setValue(signatureHeader, forHTTPHeaderField: "X-GCS-Signature") }
        request.setValue(message.keyId, forHTTPHeaderField: "X-GCS-KeyId")
        request.httpBody = Data(message.body)
        var status: Int?
        if let (_, response) = try? await session.data(for: request) {
            status = (response as? HTTPURLResponse)?.statusCode
        }
        let record = WebhookDelivery(kind: .event, url: url, eventId: message.eventId, type: message.type,
                                     body: String(decoding: message.body, as: UTF8.self), keyId: message.keyId,
                                     signature: signatureHeader, status: status,
                                     accepted: (200..<300).contains(status ?? 0), attempt: attempt, replay: replay,
                                     crafted: crafted)
        webhookDeliveries.append(record)
        logger.debug("webhook delivery", metadata: [
            "event": .string(message.eventId), "type": .string(message.type), "attempt": .stringConvertible(attempt),
            "status": .string(status.map(String.init) ?? "no answer"),
        ])
        return record
    }

    // MARK: Test controls

    /// POSTs event `eventId` again, byte for byte and signed as before, once (a replay, for tests of
    /// idempotent receivers). Returns the try, or nil when there is no such event or no URL.
    @discardableResult
    public func redeliver(eventId: String) async -> WebhookDelivery? {
        guard let message = events[eventId], let url = webhookURLs[message.merchantId] else { return nil }
        return await post(message, to: url, attempt: 1, replay: true, crafted: false, signatureHeader: message.signature)
    }

    /// Sends a test's own event to `crafted.merchantId`'s webhook URL once, without verification or
    /// retries: a body built from a payment's current state (with `type`, `status` and `amount`
    /// overridden as asked) or the exact `body`, signed with the merchant's secret unless told
    /// otherwise. Moves no money. Returns the try, or nil when the merchant has no URL or the
    /// payment is unknown.
    @discardableResult
    public func sendCraftedEvent(_ crafted: CraftedEvent) async -> WebhookDelivery? {
        guard let merchant = merchant(crafted.merchantId), let url = webhookURLs[crafted.merchantId] else { return nil }
        let bytes: [UInt8]
        if let body = crafted.body {
            bytes = Array(body.utf8)
        } else {
            var payment: PaymentWire?
            if let id = crafted.paymentId {
                guard let record = payments[id] else { return nil }
                var wire = paymentWire(record)
                if let status = crafted.status { wire.status = status }
                if let amount = crafted.amount { wire.paymentOutput.amountOfMoney.amount = amount }
                payment = wire
            }
            let event = WebhookEventWire(apiVersion: "v1", id: UUID().uuidString.lowercased(),
                                         created: WorldlineDates.eventTime(now()), merchantId: crafted.merchantId,
                                         type: crafted.type ?? "payment.captured", payment: payment, refund: nil)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(event) else { return nil }
            bytes = Array(data)
        }
        let signature: String? = crafted.omitSignature == true ? nil
            : crafted.signature ?? WorldlineWebhookSignature.sign(bytes, secret: crafted.secret ?? merchant.webhookSecretKey)
        let message = WebhookMessage(eventId: "crafted-" + UUID().uuidString.lowercased(), type: crafted.type ?? "crafted",
                                     merchantId: crafted.merchantId, body: bytes, keyId: crafted.keyId ?? merchant.webhookKeyId,
                                     signature: signature ?? "")
        return await post(message, to: url, attempt: 1, replay: false, crafted: true, signatureHeader: signature)
    }
}
