import Foundation
import Logging
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

    /// An event as POSTed: the message, where it goes, and the `X-GCS-Signature` it carries (`nil`:
    /// left out).
    struct WebhookPost: MerchantNotification {
        var message: WebhookMessage
        var url: URL
        var signatureHeader: String?

        var key: String { message.eventId }
        var body: [UInt8] { message.body }
        var headers: [(name: String, value: String)] {
            [("Content-Type", "application/json")] + (signatureHeader.map { [("X-GCS-Signature", $0)] } ?? [])
                + [("X-GCS-KeyId", message.keyId)]
        }
        var logMetadata: Logger.Metadata { ["event": .string(message.eventId), "type": .string(message.type)] }

        /// Any 2xx.
        func isAcknowledged(by response: DeliveryResponse) -> Bool { response.isSuccess }

        func record(_ delivery: DeliveryTry) -> WebhookDelivery {
            WebhookDelivery(kind: .event, url: url, eventId: message.eventId, type: message.type,
                            body: String(decoding: message.body, as: UTF8.self), keyId: message.keyId, signature: signatureHeader,
                            status: delivery.status, accepted: delivery.acknowledged, attempt: delivery.attempt,
                            replay: delivery.kind == .replay, crafted: delivery.kind == .crafted)
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
        guard let merchant = merchant(merchantId), let url = webhookURLs[merchantId] else { return }
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
        deliverer.queue(WebhookPost(message: message, url: url, signatureHeader: message.signature)) { post, attempt in
            await self.prepareTry(of: post, attempt: attempt)
        }
    }

    /// Before each try: the URL is read again (a merchant may fix its configuration meanwhile; when
    /// it has none, the delivery stops), and a URL not verified yet is verified first (a failed
    /// verification is a failed try).
    private func prepareTry(of post: WebhookPost, attempt: Int) async -> TryPlan<WebhookPost> {
        guard let url = webhookURLs[post.message.merchantId] else { return .stop }
        if !verifiedEndpoints.contains(url.absoluteString) {
            guard await verify(url, attempt: attempt) else { return .skip }
            verifiedEndpoints.insert(url.absoluteString)
        }
        var post = post
        post.url = url
        return .post(post)
    }

    /// The endpoint verification request; true when the endpoint echoed the value.
    private func verify(_ url: URL, attempt: Int) async -> Bool {
        let value = UUID().uuidString.lowercased()
        var request = URLRequest(url: url, timeoutInterval: webhookTimeout.timeInterval)
        request.httpMethod = "GET"
        request.setValue(value, forHTTPHeaderField: "X-GCS-Webhooks-Endpoint-Verification")
        let response = await deliverer.perform(request)
        let body = response.body.map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        let echoed = response.isSuccess && body == value
        deliverer.append(WebhookDelivery(kind: .verification, url: url, eventId: nil, type: nil, body: value, keyId: nil,
                                         signature: nil, status: response.status, accepted: echoed, attempt: attempt,
                                         replay: false, crafted: false))
        return echoed
    }

    // MARK: Test controls

    /// POSTs event `eventId` again, byte for byte and signed as before, once (a replay, for tests of
    /// idempotent receivers). Returns the try, or nil when there is no such event or no URL.
    @discardableResult
    public func redeliver(eventId: String) async -> WebhookDelivery? {
        guard var post = deliverer.latest(for: eventId), let url = webhookURLs[post.message.merchantId] else { return nil }
        post.url = url
        return await deliverer.send(post, kind: .replay)
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
        return await deliverer.send(WebhookPost(message: message, url: url, signatureHeader: signature), kind: .crafted)
    }
}
