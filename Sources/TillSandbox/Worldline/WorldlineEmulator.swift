import Crypto
import _CryptoExtras
import Foundation
import Logging

/// A local stand-in for the Worldline Connect gateway: the other party of Till's Worldline module.
///
/// It is written from vendor material only: the official Python server SDK (connect-sdk-python3
/// 6.3.0: its domain classes, communicator, v1HMAC authenticator, webhook helper and test resources),
/// the client SDKs (connect-sdk-client-swift 7.0.0, -js 6.0.5, -android 7.0.4: their request code,
/// encryption and test stubs), the vendor's iOS SDK guide, and the Connect documentation pages on
/// webhooks. Where no source says what the gateway does, the choice is named in a comment.
///
/// It answers, on the sandbox's root:
/// - the **Server API** `/v1/{merchantId}/…` (v1HMAC-signed): sessions, payments (create with the
///   app's encrypted customer input or a card, get, find, approve, capture, refund, cancel, captures,
///   refunds, third-party status), refunds, captures, `services/testconnection` and
///   `services/convert/amount`;
/// - the **Client API** `/client/v1/{customerId}/…` (a client session): products, product detail,
///   networks, directory, product groups, the encryption public key, IIN details, convert amount,
///   privacy policy and third-party status;
/// - its own pages under `/worldline/…` (the 3-D Secure page, logos) and admin routes under
///   `/admin/worldline/…` (faults, ledger, webhooks, forged events, merchants' webhook URLs).
///
/// It sends signed webhooks to each merchant's webhook URL (after the endpoint verification the
/// Connect documentation describes), retries them with backoff, and keeps a ``ledger`` of what really
/// moved money.
///
/// ```swift
/// let worldline = try WorldlineEmulator(merchants: [.init(merchantId: "1234", apiKeyId: "key",
///     secretApiKey: "secret", webhookKeyId: "wh-key", webhookSecretKey: "wh-secret")])
/// let sandbox = try await Sandbox.start(emulators: [worldline], port: 8089)
/// // Server API endpoint: sandbox.baseURL (scheme+host+port, no path, as the SDKs require)
/// ```
///
/// ## Test cards
///
/// Any expiry date in the future (`MMYY`) and any CVV. The card number decides what happens:
///
/// | card number | product (IIN) | outcome of a create payment |
/// |---|---|---|
/// | `4111 1111 1111 1111` | Visa (1) | approved: its status follows the request (see `WorldlinePaymentStatus`) |
/// | `5555 5555 5555 4444` | MasterCard (3) | approved |
/// | `3782 822463 10005` | American Express (2) | approved |
/// | `4035 5010 0000 0008` | Carte Bancaire (130), co-branded Visa (1) | approved (the IIN lookup lists both in `coBrands`) |
/// | `4000 0000 0000 0002` | Visa (1) | declined: HTTP 402 with `paymentResult` (status `REJECTED`, error `430330` "Not authorised") |
/// | `4000 0000 0000 3220` | Visa (1) | 3-D Secure: `REDIRECTED` with `merchantAction` `REDIRECT` to the emulator's 3-D Secure page |
/// | `4000 0000 0000 0259` | Visa (1) | left pending: `AUTHORIZATION_REQUESTED` until ``settlePendingPayment(_:approve:)`` (or the admin route) |
/// | `3528 0000 0000 0007` | JCB (125) | JCB is offered only for `JP`/`JPY`: elsewhere its IIN is "not allowed in context" and a payment with it is refused (400) |
/// | a number failing Luhn | – | 400 `21000020` "… DID NOT PASS THE LUHNCHECK" (vendor fixture) |
/// | expiry in the past | – | 400 `21000120`, `propertyName` `cardPaymentMethodSpecificInput.card.expiryDate` (vendor fixture) |
///
/// The test card numbers themselves are the emulator's own (no vendor list of Connect test cards was
/// available); all are Luhn-valid.
public actor WorldlineEmulator {
    /// One merchant account: its Server API key, its webhook key, and where its webhooks go.
    ///
    /// ``description`` leaves the secrets out, so a failing test can print it.
    public struct Merchant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// The merchant id in the Server API's paths (`/v1/{merchantId}/…`).
        public var merchantId: String
        /// The API key id in `Authorization: GCS v1HMAC:{apiKeyId}:{signature}`.
        public var apiKeyId: String
        /// The secret API key that signs requests (its UTF-8 bytes are the HMAC key).
        public var secretApiKey: String
        /// The webhook key id sent as `X-GCS-KeyId`.
        public var webhookKeyId: String
        /// The webhook secret key: `X-GCS-Signature` is Base64(HMAC-SHA256(secret, body)).
        public var webhookSecretKey: String
        /// Where this merchant's webhooks go; `nil` sends none. Worldline configures the endpoint per
        /// merchant (not per request); change it later with ``WorldlineEmulator/setWebhookURL(_:for:)``.
        public var webhookURL: URL?

        /// Creates a merchant account.
        public init(merchantId: String, apiKeyId: String, secretApiKey: String, webhookKeyId: String,
                    webhookSecretKey: String, webhookURL: URL? = nil) {
            self.merchantId = merchantId
            self.apiKeyId = apiKeyId
            self.secretApiKey = secretApiKey
            self.webhookKeyId = webhookKeyId
            self.webhookSecretKey = webhookSecretKey
            self.webhookURL = webhookURL
        }

        /// The merchant without its secrets.
        public var description: String {
            "WorldlineEmulator.Merchant(\(merchantId), api key \(apiKeyId), webhook key \(webhookKeyId), webhooks to \(webhookURL?.absoluteString ?? "nowhere"))"
        }

        /// Same as ``description``: secrets are never printed.
        public var debugDescription: String { description }
    }

    /// The RSA key pair the Client API hands out (`GET …/crypto/publickey`) and the emulator decrypts
    /// `encryptedCustomerInput` with.
    public struct EncryptionKey: Sendable {
        /// The `keyId` of the public key response; the JWE header's `kid` must equal it.
        public let keyId: String
        /// The private key, DER (PKCS#1).
        let privateKeyDER: Data
        /// The public key, DER SubjectPublicKeyInfo.
        public let publicKeyDER: Data

        /// A fresh RSA-2048 key pair (the size of every vendor sample, and the only size the Swift
        /// client SDK's fixed 24-byte SubjectPublicKeyInfo prefix accepts).
        public static func generate(keyId: String = UUID().uuidString.lowercased()) throws -> EncryptionKey {
            let key = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
            return EncryptionKey(keyId: keyId, privateKeyDER: key.derRepresentation, publicKeyDER: key.publicKey.derRepresentation)
        }

        /// A given key pair, from a PEM private key (PKCS#1 or PKCS#8).
        public init(keyId: String, privateKeyPEM: String) throws {
            let key = try _RSA.Encryption.PrivateKey(pemRepresentation: privateKeyPEM)
            self.init(keyId: keyId, privateKeyDER: key.derRepresentation, publicKeyDER: key.publicKey.derRepresentation)
        }

        init(keyId: String, privateKeyDER: Data, publicKeyDER: Data) {
            self.keyId = keyId
            self.privateKeyDER = privateKeyDER
            self.publicKeyDER = publicKeyDER
        }

        /// `publicKey` as the Client API answers it: standard Base64 of the DER SubjectPublicKeyInfo.
        public var publicKeyBase64: String { publicKeyDER.base64EncodedString() }
    }

    /// A failure to inject into the next matching Server API request.
    public enum Fault: String, Sendable, Hashable, CaseIterable, Codable {
        /// HTTP 500 with the vendor's `9999` `UNKNOWN_SERVER_ERROR` body at once; nothing is processed.
        case serverError = "server_error"
        /// The request is processed (money may move), but no answer comes for the emulator's
        /// `timeoutHold`; then HTTP 504. An idempotent retry during the hold gets `409` / `1409`.
        case timeout
        /// The request is processed, then the connection is closed without an answer.
        case dropConnection = "drop"
    }

    /// Something the gateway really did with money.
    public struct LedgerEntry: Sendable, Hashable, Codable {
        /// What happened.
        public enum Operation: String, Sendable, Hashable, Codable, CaseIterable {
            /// An authorization was obtained (money held on the card).
            case authorization
            /// Money was taken (a sale, an approval or a capture).
            case capture
            /// Money was given back.
            case refund
            /// An authorization was released without taking money.
            case cancel
        }

        /// What happened.
        public var operation: Operation
        /// The merchant.
        public var merchantId: String
        /// The payment.
        public var paymentId: String
        /// The refund's or capture's own id; the payment id otherwise.
        public var id: String
        /// The payment's `order.references.merchantReference`, if any.
        public var merchantReference: String?
        /// Minor units of ``currency``.
        public var amount: Int64
        /// ISO 4217 alphabetic code.
        public var currency: String

        /// Creates a ledger entry.
        public init(operation: Operation, merchantId: String, paymentId: String, id: String, merchantReference: String?,
                    amount: Int64, currency: String) {
            self.operation = operation
            self.merchantId = merchantId
            self.paymentId = paymentId
            self.id = id
            self.merchantReference = merchantReference
            self.amount = amount
            self.currency = currency
        }
    }

    /// One request the emulator made to a merchant's webhook endpoint.
    public struct WebhookDelivery: Sendable, Hashable, Codable {
        /// What kind of request it was.
        public enum Kind: String, Sendable, Hashable, Codable {
            /// The endpoint verification `GET` with `X-GCS-Webhooks-Endpoint-Verification`.
            case verification
            /// An event `POST`.
            case event
        }

        /// What kind of request it was.
        public var kind: Kind
        /// Where it went.
        public var url: URL
        /// The event's `id` (nil for a verification).
        public var eventId: String?
        /// The event's `type` (nil for a verification).
        public var type: String?
        /// The body as sent (an event), or the verification value sent in the header.
        public var body: String
        /// `X-GCS-KeyId` as sent.
        public var keyId: String?
        /// `X-GCS-Signature` as sent.
        public var signature: String?
        /// The HTTP status answered, or nil when no answer came.
        public var status: Int?
        /// For a verification: whether the endpoint echoed the value. For an event: whether it was acknowledged (2xx).
        public var accepted: Bool
        /// 1 for the first try.
        public var attempt: Int
        /// A replay made with ``WorldlineEmulator/redeliver(eventId:)``.
        public var replay: Bool
        /// Made with ``WorldlineEmulator/sendCraftedEvent(_:)`` (a test's forgery, not the gateway's event).
        public var crafted: Bool
    }

    // MARK: Configuration

    let merchants: [Merchant]
    let encryptionKey: EncryptionKey
    let sessionLifetime: Duration
    let webhookTimeout: Duration
    let timeoutHold: Duration
    let now: @Sendable () -> Date
    let logger: Logger
    /// Sends the webhook events (retried `webhookRetryInterval`, then twice as long each time, up to
    /// `webhookMaxAttempts` tries) and the endpoint verifications, and records every request.
    let deliverer: NotificationDeliverer<WebhookPost>

    // MARK: State

    struct ClientSession {
        var merchantId: String
        var customerId: String
        var created: Date
    }

    var sessions: [String: ClientSession] = [:]
    var payments: [String: PaymentRecord] = [:]
    var paymentOrder: [String] = []
    var refunds: [String: RefundRecord] = [:]
    var captures: [String: CaptureRecord] = [:]
    /// SHA-256 (hex) of every `encryptedCustomerInput` used.
    var usedInputs: Set<String> = []
    var idempotence: [String: IdempotenceEntry] = [:]
    /// Faults by path prefix (with or without `/v1/{merchantId}`).
    var faults = FaultQueue<Fault>()
    /// 3-D Secure page tokens → payment id.
    var threeDSTokens: [String: String] = [:]
    var webhookURLs: [String: URL] = [:]
    /// Payments whose next refund is declined (``declineNextRefund(of:)``).
    var refundDeclines: Set<String> = []
    /// Whether new refunds stay `REFUND_REQUESTED` (``holdRefunds(_:)``).
    var refundsHeld = false
    var verifiedEndpoints: Set<String> = []
    var sequence = 0

    /// What really moved money, oldest first.
    public internal(set) var ledger: [LedgerEntry] = []

    /// Every request made to webhook endpoints (verifications, events, replays, crafted events), oldest first.
    public var webhookDeliveries: [WebhookDelivery] { deliverer.attempts }

    /// Creates an emulator.
    /// - Parameters:
    ///   - merchants: the accounts requests may come from.
    ///   - encryptionKey: the key pair for client-side encryption; a fresh RSA-2048 pair by default.
    ///   - sessionLifetime: how long a client session (and so its encrypted input) stays usable. No
    ///     source gives Connect's value; 2 hours is a choice.
    ///   - webhookRetryInterval: the wait before the second try of a webhook; each later wait doubles
    ///     (no source gives Connect's schedule). Tests compress it to milliseconds.
    ///   - webhookMaxAttempts: tries per webhook (at least 1).
    ///   - webhookTimeout: how long one webhook request may take before it counts as unanswered.
    ///   - timeoutHold: how long a request hit by ``Fault/timeout`` is held before HTTP 504.
    ///   - now: the wall clock.
    ///   - logger: where the emulator logs (never secrets or card data).
    /// - Throws: when no key pair is given and one cannot be generated.
    public init(merchants: [Merchant], encryptionKey: EncryptionKey? = nil, sessionLifetime: Duration = .seconds(7200),
                webhookRetryInterval: Duration = .seconds(10), webhookMaxAttempts: Int = 5,
                webhookTimeout: Duration = .seconds(10), timeoutHold: Duration = .seconds(30),
                now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "till.sandbox.worldline")) throws {
        self.merchants = merchants
        self.encryptionKey = try encryptionKey ?? EncryptionKey.generate()
        self.sessionLifetime = sessionLifetime
        self.webhookTimeout = webhookTimeout
        self.timeoutHold = timeoutHold
        self.now = now
        self.logger = logger
        self.deliverer = NotificationDeliverer(
            schedule: RetrySchedule(attempts: webhookMaxAttempts, interval: webhookRetryInterval, growth: 2),
            timeout: webhookTimeout, noun: "webhook", logger: logger)
        var urls: [String: URL] = [:]
        for merchant in merchants { urls[merchant.merchantId] = merchant.webhookURL }
        self.webhookURLs = urls
    }

    // MARK: Test controls

    /// The key id and Base64 public key the Client API hands out.
    public nonisolated var publicKey: (keyId: String, publicKey: String) {
        (encryptionKey.keyId, encryptionKey.publicKeyBase64)
    }

    /// Sets (or clears) where `merchantId`'s webhooks go, as a merchant does in Worldline's
    /// configuration. A new URL is verified again before its first event.
    /// - Returns: false when there is no such merchant.
    @discardableResult
    public func setWebhookURL(_ url: URL?, for merchantId: String) -> Bool {
        guard merchants.contains(where: { $0.merchantId == merchantId }) else { return false }
        webhookURLs[merchantId] = url
        return true
    }

    /// Makes the next Server API request whose path starts with `path` fail as `fault`. `path` may
    /// include `/v1/{merchantId}` or not (`"/payments"` matches `/v1/1234/payments…`); `nil`
    /// matches any Server API request. Faults queue up and are used in order.
    public func inject(_ fault: Fault, path: String? = nil) {
        faults.append(fault, key: path)
    }

    /// Settles a payment left pending (`AUTHORIZATION_REQUESTED`): approved, it goes on as an
    /// approved card would; otherwise it is `REJECTED`.
    /// - Returns: the new status, or nil when there is no such pending payment.
    @discardableResult
    public func settlePendingPayment(_ id: String, approve: Bool) -> String? {
        guard let payment = payments[id], payment.status == .authorizationRequested else { return nil }
        if approve { authorize(id) } else { reject(id, error: WorldlineErrors.notAuthorised) }
        return payments[id]?.status.rawValue
    }

    /// Makes the next refund of payment `id` declined: HTTP 402 with the error body's `refundResult` (status `REJECTED`),
    /// as python `refund_error_response.py` shapes it.
    public func declineNextRefund(of id: String) {
        refundDeclines.insert(id)
    }

    /// Keeps new refunds `REFUND_REQUESTED` (true) until ``settleRefund(_:refunded:)``, or pays them out at once (false, the default).
    public func holdRefunds(_ held: Bool) {
        refundsHeld = held
    }

    /// Settles a held refund: `REFUNDED`, or `REJECTED_CAPTURE`; each with its webhook.
    /// - Returns: the refund's new status, or nil when there is no such refund.
    @discardableResult
    public func settleRefund(_ id: String, refunded: Bool) -> String? {
        settle(id, refunded: refunded)
        return refunds[id]?.status
    }

    /// Waits until every webhook under way has been acknowledged or has run out of tries.
    public func waitForWebhooks() async {
        await deliverer.waitForAll()
    }

    /// The current status of a payment (`"CAPTURED"`, …), or nil.
    public func paymentStatus(_ id: String) -> String? {
        payments[id]?.status.rawValue
    }

    /// Takes the first queued fault that matches the Server API path `path` (`/v1/{m}/…`).
    func takeFault(for path: String, merchantId: String) -> Fault? {
        let short = path.hasPrefix("/v1/\(merchantId)") ? String(path.dropFirst("/v1/\(merchantId)".count)) : path
        return faults.take { wanted in path.hasPrefix(wanted) || short.hasPrefix(wanted) }
    }

    /// How long held requests wait.
    nonisolated var holdDuration: Duration { timeoutHold }

    func merchant(_ id: String) -> Merchant? {
        merchants.first { $0.merchantId == id }
    }

    func nextSequence() -> Int {
        sequence += 1
        return sequence
    }
}
