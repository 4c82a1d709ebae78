import Crypto
import Foundation
import HTTPTypes
import Logging
import Metrics
import Till
import TillOrchestration
import TillGatewayKit

/// Where a crash-safety test wants the server to die while handling a notification.
package enum CrashPoint: String, Sendable {
    /// After the notification is verified, before anything is stored.
    case beforeStore = "before-store"
    /// After the notification is stored and applied (committed), before the acknowledgement is sent.
    case afterStore = "after-store"
}

/// A refused request: an HTTP status, a stable code, the field at fault and, for gateway failures, what is
/// known about the money (``CheckoutError/Category``).
public struct ServiceError: Error, Sendable, Hashable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    public var field: String?
    public var category: CheckoutError.Category?
    /// With `429`: the whole seconds after which a try may succeed (`Retry-After`).
    public var retryAfterSeconds: Int?

    package static let unauthorized = ServiceError(status: .unauthorized, code: "unauthorized", message: "missing or invalid API key or client secret")
    package static func notFound(_ what: String) -> ServiceError { ServiceError(status: .notFound, code: "not_found", message: "no such \(what)") }
    /// `429`: a rate limit's bucket is empty; `what` says whose.
    package static func tooManyRequests(_ what: String, retryAfter seconds: Int) -> ServiceError {
        var error = ServiceError(status: .tooManyRequests, code: CheckoutError.Code.rateLimited.rawValue,
                                 message: "too many requests \(what); retry after \(seconds) s", category: .unavailable)
        error.retryAfterSeconds = seconds
        return error
    }

    public init(status: HTTPResponse.Status, code: String, message: String, field: String? = nil, category: CheckoutError.Category? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.category = category
    }

    init(_ error: CheckoutError, status: HTTPResponse.Status = .badRequest) {
        self.init(status: status, code: error.code.rawValue, message: error.message, field: error.field, category: error.category)
    }
}

/// The merchant server's behaviour, without HTTP: create a payment, start an attempt (the attempt policy
/// and the router decide where), submit, record what the app saw, inquire, take notifications. The HTTP
/// application (``buildApplication(state:store:logger:metrics:crashPoint:onServerRunning:)``) is a thin
/// adapter over it, and the chaos run drives this same type in-process, so what the chaos run proves is
/// what production runs.
///
/// Stateless apart from each merchant's health monitor: every decision reads the store, so any number of
/// instances may share one PostgreSQL (see docs/server.md).
public struct PaymentService: Sendable {
    public let state: ServerState
    public let store: any PaymentStore
    let metrics: any MetricsFactory
    let crashPoint: CrashPoint?
    let logger: Logger
    /// Inquiries the server starts by itself (a rejected or unconfirmed notification) run in the
    /// background by default; in-process drivers (the chaos run) run them inline, so a run is repeatable.
    let inquiriesInline: Bool
    /// Attempts with an inquiry under way, so a burst of notifications causes one inquiry.
    let inquiries = InFlight()
    /// How often notifications nobody could verify may make the server call a gateway: per attempt and
    /// in all (anyone can post to the notification endpoint).
    let unverifiedInquiries = InquiryBudget()
    /// How often an app (a client secret) may make the server ask a gateway: once per attempt every 5
    /// seconds, and in all a burst of 200 refilled at 50 a second; over it, the stored status answers.
    let appInquiries = InquiryBudget(perAttempt: .seconds(5), perSecond: 50, burst: 200)
    /// Removes credentials from stored notification headers (patterns compiled once).
    let redactor = Redactor()

    public init(state: ServerState, store: any PaymentStore, logger: Logger = Logger(label: "till.server"),
                metrics: any MetricsFactory = MetricsSystem.factory, inquiriesInline: Bool = false) {
        self.init(state: state, store: store, logger: logger, metrics: metrics, crashPoint: nil, inquiriesInline: inquiriesInline)
    }

    /// The same, with a crash-safety test's ``CrashPoint`` (test-only: the process kills itself there).
    package init(state: ServerState, store: any PaymentStore, logger: Logger = Logger(label: "till.server"),
                 metrics: any MetricsFactory = MetricsSystem.factory, crashPoint: CrashPoint?, inquiriesInline: Bool = false) {
        self.state = state
        self.store = store
        self.logger = logger
        self.metrics = metrics
        self.crashPoint = crashPoint
        self.inquiriesInline = inquiriesInline
    }

    // MARK: Payments

    /// Creates a payment (idempotent by `idempotencyKey`). Returns the payment and whether it was a replay.
    public func createPayment(_ intent: PaymentIntent, merchant: MerchantRuntime, idempotencyKey key: String?,
                              logger: Logger? = nil) async throws -> (payment: PaymentView, replayed: Bool) {
        if let issue = intent.validate(path: "body").first { throw ServiceError(issue.error) }
        // A payment no gateway could take is refused before it is stored — unless it is a replay of a create that
        // was stored (the configuration may have changed since): a retried request gets its first answer.
        if let issue = Self.admissionIssue(for: intent, merchant: merchant, path: "body") {
            var replay = false
            if let key { replay = try await store.hasIdempotencyKey(key, merchant: merchant.configuration.id) }
            if !replay { throw ServiceError(issue.error, status: .unprocessableContent) }
        }
        if let ceiling = merchant.configuration.maxAmount(for: intent.amount.currency), intent.amount.minorUnits > ceiling.minorUnits {
            throw ServiceError(status: .unprocessableContent, code: CheckoutError.Code.invalidAmount.rawValue,
                               message: "above this merchant's ceiling of \(ceiling)", field: "body.amount.value")
        }
        // Free text is kept (and shown to gateways) with any card number masked.
        let intent = try Self.maskingCardNumbers(in: intent)
        if let key, key.isEmpty || key.count > 255 {
            throw ServiceError(status: .badRequest, code: "invalid_field", message: "1 to 255 characters", field: "Idempotency-Key")
        }
        let hash = Hex.encode(SHA256.hash(data: try Self.canonicalJSON(intent)))
        let id = "pay_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        // A fresh client secret with every answer, new or replayed: only its digest is stored, so a replay
        // cannot show the earlier one; the new one replaces it.
        let secret = Self.newClientSecretPart()
        switch try await store.create(intent, merchant: merchant.configuration.id, id: id, idempotencyKey: key, requestHash: hash,
                                      clientSecretHash: Self.digest(clientSecret: secret[...])) {
        case .created(let payment):
            Counter(label: "till_payments_created_total", dimensions: [("merchant", merchant.configuration.id)], factory: metrics).increment()
            (logger ?? self.logger).info("payment created", metadata: ["payment": .string(payment.id)])
            var view = PaymentView(payment, forMerchant: true)
            view.clientSecret = try ClientSecret("\(payment.id)_secret_\(secret)")
            return (view, false)
        case .replayed(let payment):
            var view = PaymentView(payment, forMerchant: true)
            view.clientSecret = try ClientSecret("\(payment.id)_secret_\(secret)")
            return (view, true)
        case .idempotencyConflict:
            throw ServiceError(status: .conflict, code: "idempotency_conflict",
                               message: "this Idempotency-Key was used with a different request", field: "Idempotency-Key")
        case .duplicateReference:
            throw ServiceError(status: .conflict, code: "duplicate_reference",
                               message: "another payment already uses this merchant reference", field: "body.merchantReference")
        }
    }

    /// Why this merchant could not send `intent` to any gateway, or `nil` when one can take it: the router's
    /// eligibility first (method, currency, country, action, routing), then what each gateway the router would
    /// offer it to needs of the payment (``GatewayServerHalf/requirementIssues(for:)``): one that can take it is
    /// enough; when none can, the first candidate's first problem, its field under `path`
    /// (`body.customer.email`). Asked at create and at every change of the payment, so no attempt ever starts
    /// with a payment its gateway must refuse.
    static func admissionIssue(for intent: PaymentIntent, merchant: MerchantRuntime, path: String) -> ValidationIssue? {
        // One routing on the create's path: the router's reasons are asked for only when it offers no gateway.
        var generator = SeededGenerator(seed: 0)
        let candidates = merchant.router.route(intent, using: &generator).candidates
        guard !candidates.isEmpty else { return merchant.router.eligibilityIssue(for: intent, path: path) }
        var first: ValidationIssue?
        for candidate in candidates {
            guard let issue = requirementIssue(intent, on: candidate, merchant: merchant, path: path) else { return nil }
            first = first ?? issue
        }
        return first
    }

    /// The first thing gateway `id` needs of `intent` and does not find, with its field under `path`.
    static func requirementIssue(_ intent: PaymentIntent, on id: GatewayID, merchant: MerchantRuntime, path: String) -> ValidationIssue? {
        guard let gateway = merchant.gateways[id], let problem = gateway.requirementIssues(for: intent).first else { return nil }
        var field = problem.field ?? "intent"
        if field == "intent" { field = path } else if field.hasPrefix("intent.") { field = path + field.dropFirst("intent".count) }
        return ValidationIssue(field: field, code: problem.code, message: "gateway \(id) needs it: \(problem.message)")
    }

    /// The first thing gateway `id` needs of the app's ``PrepareRequest/appData`` and does not find (PayFort's SDK:
    /// `device_id`), with its field under `body.appData`: refused before an attempt is stored.
    static func appDataIssue(_ appData: [String: String], on id: GatewayID, merchant: MerchantRuntime) -> ValidationIssue? {
        guard let gateway = merchant.gateways[id], let problem = gateway.appDataIssues(Self.appData(appData, for: gateway)).first else { return nil }
        return ValidationIssue(field: "body." + (problem.field ?? "appData"), code: problem.code, message: "gateway \(id) needs it: \(problem.message)")
    }

    /// The part of the app's data `gateway` reads: the keys it declares (``GatewayCapabilities/appDataKeys``).
    static func appData(_ appData: [String: String], for gateway: any GatewayServerHalf) -> [String: String] {
        appData.filter { gateway.capabilities.appDataKeys.contains($0.key) }
    }

    /// The intent with a card number masked (first 6, last 4) wherever someone could type one as text: the
    /// description, the customer's names and e-mail, metadata keys and values; in the phone, only a run longer
    /// than any phone number (16 digits and more: E.164 allows 15).
    ///
    /// Identifiers pass as they are, because masking one corrupts it: the merchant reference, and the customer
    /// reference above all. A numeric customer id of 13–19 digits passes the Luhn check one time in ten or more,
    /// and two such ids masked alike would be one customer to a gateway (ecommpay's `customer_id` shows the
    /// customer's saved cards). A card number used as an identifier is the merchant's own data, as the merchant
    /// reference is; the card IIN, amount and country are checked values, not text.
    /// - Throws: ``ServiceError`` 400 `invalid_field` when two metadata keys become one once masked.
    static func maskingCardNumbers(in intent: PaymentIntent) throws -> PaymentIntent {
        let mask = { (text: String) in Redactor.maskCardNumbers(in: text) }
        var intent = intent
        intent.description = intent.description.map(mask)
        intent.customer.email = intent.customer.email.map(mask)
        intent.customer.firstName = intent.customer.firstName.map(mask)
        intent.customer.lastName = intent.customer.lastName.map(mask)
        intent.customer.phone = intent.customer.phone.map { Redactor.maskCardNumbers(in: $0, minimumRunDigits: 16) }
        var metadata: [String: String] = [:]
        for (key, value) in intent.metadata {
            let maskedKey = mask(key)
            guard metadata.updateValue(mask(value), forKey: maskedKey) == nil else {
                throw ServiceError(status: .badRequest, code: CheckoutError.Code.invalidField.rawValue,
                                   message: "two metadata keys are the same once their card numbers are masked", field: "body.metadata.\(maskedKey)")
            }
        }
        intent.metadata = metadata
        return intent
    }

    // MARK: Who is calling

    /// Who a request comes from: the merchant's backend (its API key: every route of that merchant), or an
    /// app holding one payment's client secret (that payment's routes only).
    public enum Caller: Sendable {
        /// The merchant's backend (or a support tool), with one of the merchant's API keys.
        case merchant(MerchantRuntime, key: MerchantKey)
        /// A payment's app, with the payment's client secret.
        case payment(MerchantRuntime, paymentID: String)

        /// The merchant either way.
        public var merchant: MerchantRuntime {
            switch self {
            case .merchant(let merchant, _), .payment(let merchant, _): merchant
            }
        }
    }

    /// Authenticates a bearer token: a merchant API key, or a payment's client secret (its digest
    /// compared in constant time with the stored one).
    /// - Throws: ``ServiceError`` 401 `unauthorized` for anything else.
    public func caller(bearer token: String) async throws -> Caller {
        if let (merchant, key) = state.merchant(apiKey: token) { return .merchant(merchant, key: key) }
        return try await caller(clientSecret: token)
    }

    /// Authenticates a bearer token that is not an API key (the HTTP layer has already looked for one): a payment's
    /// client secret, whose digest is compared in constant time with the stored one.
    /// - Throws: ``ServiceError`` 401 `unauthorized` for anything else.
    package func caller(clientSecret token: String) async throws -> Caller {
        guard let (paymentID, secret) = ClientSecret.split(token) else { throw ServiceError.unauthorized }
        // The digest is computed and compared whether or not the payment exists, so the answer's timing does
        // not tell which payment ids exist.
        let stored = try await store.clientSecretHash(payment: paymentID)
        let matches = ConstantTime.equals(Self.digest(clientSecret: secret), stored?.hash ?? Self.absentSecretDigest)
        guard let stored, matches, let merchant = state.merchant(id: stored.merchantID) else { throw ServiceError.unauthorized }
        return .payment(merchant, paymentID: paymentID)
    }

    /// The merchant, when `caller` may use a merchant-only route (creating payments, the quarantine).
    /// - Throws: ``ServiceError`` 403 `forbidden` for a client secret.
    public func merchantOnly(_ caller: Caller) throws -> MerchantRuntime {
        guard case .merchant(let merchant, _) = caller else {
            throw ServiceError(status: .forbidden, code: "forbidden",
                               message: "this route needs the merchant API key; a client secret reaches only its own payment")
        }
        return merchant
    }

    /// The merchant, when `caller` may reach payment `id`: a client secret reaches only its own payment
    /// (any other is "not found", so a secret cannot probe which payments exist).
    public func authorize(_ caller: Caller, payment id: String) throws -> MerchantRuntime {
        if case .payment(_, let own) = caller, own != id { throw ServiceError.notFound("payment") }
        return caller.merchant
    }

    /// The merchant, when `caller` may reach `attempt`: a client secret only its own payment's attempts.
    ///
    /// A client secret's own payment is read and searched for the attempt, so the work (and the time) is the
    /// same whether the attempt belongs to another payment or does not exist: a secret cannot probe which
    /// attempt references exist.
    public func authorize(_ caller: Caller, attempt reference: AttemptReference) async throws -> MerchantRuntime {
        if case .payment(let merchant, let own) = caller {
            guard let payment = try await store.payment(id: own, merchant: merchant.configuration.id),
                  payment.attempts.contains(where: { $0.reference == reference }) else { throw ServiceError.notFound("attempt") }
        }
        return caller.merchant
    }

    /// 32 random bytes, unpadded Base64URL: the secret part of a client secret.
    static func newClientSecretPart() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Base64.urlEncode(bytes)
    }

    /// Compared against when a client secret names a payment the store does not have: the shape of a stored
    /// digest, matching no secret (no SHA-256 is all zeros to anyone's knowledge).
    package static let absentSecretDigest = String(repeating: "0", count: 64)

    /// What the store keeps of a client secret: the hex SHA-256 of its secret part.
    package static func digest(clientSecret part: Substring) -> String {
        Hex.encode(SHA256.hash(data: Data(part.utf8)))
    }

    /// A merchant's payment.
    /// - Parameter forMerchant: the merchant's key asks (the answer adds the customer, description and metadata).
    public func payment(id: String, merchant: MerchantRuntime, forMerchant: Bool = false) async throws -> PaymentView {
        guard let payment = try await store.payment(id: id, merchant: merchant.configuration.id) else { throw ServiceError.notFound("payment") }
        return PaymentView(payment, forMerchant: forMerchant)
    }

    /// Changes what the merchant may change of a payment — the customer, the description, the metadata —
    /// while nothing has been sent that could move money: every attempt so far failed or was cancelled (none
    /// is open, none holds or moved money, none was expired by the reconciler before its gateway said its
    /// last word). The changed payment is checked as a new one is
    /// (the intent's rules, card numbers masked, a gateway that can take it), and written only if its
    /// attempts are still exactly those the decision was made on.
    /// - Throws: ``ServiceError`` 409 `payment_not_editable` once an attempt is open or money may have moved;
    ///   422 naming the field the change gets wrong; 409 `attempt_in_progress` when an attempt started meanwhile.
    public func updatePayment(id: String, merchant: MerchantRuntime, update: PaymentUpdate, logger: Logger? = nil) async throws -> PaymentView {
        guard let payment = try await store.payment(id: id, merchant: merchant.configuration.id) else { throw ServiceError.notFound("payment") }
        // Open, holding or moving money — or expired by the reconciler, whose gateway never gave its final word
        // (its success may still come, with the intent it was made of): the payment stays as it is.
        if let open = payment.attempts.first(where: { !$0.status.isNegative || $0.status == .expired }) {
            throw ServiceError(status: .conflict, code: "payment_not_editable",
                               message: "attempt \(open.reference) is \(open.status): a payment changes only before anything that could move money was sent")
        }
        let changed = update.applied(to: payment.intent)
        if let issue = changed.validate(path: "body").first { throw ServiceError(issue.error, status: .unprocessableContent) }
        if let issue = Self.admissionIssue(for: changed, merchant: merchant, path: "body") {
            throw ServiceError(issue.error, status: .unprocessableContent)
        }
        let masked = try Self.maskingCardNumbers(in: changed)
        let stored: StoredPayment
        do {
            guard let updated = try await store.replaceIntent(masked, payment: payment.id, merchant: merchant.configuration.id,
                                                              expected: payment.attempts) else { throw ServiceError.notFound("payment") }
            stored = updated
        } catch StoreError.conflict {
            throw ServiceError(status: .conflict, code: "attempt_in_progress", message: "the payment changed meanwhile (an attempt started); read it again")
        }
        (logger ?? self.logger).info("payment updated", metadata: ["payment": .string(payment.id)])
        return PaymentView(stored, forMerchant: true)
    }

    /// The payment an attempt belongs to (the app knows its attempt from the preparation).
    public func payment(attempt reference: AttemptReference, merchant: MerchantRuntime) async throws -> PaymentView {
        guard let payment = try await store.payment(attempt: reference), payment.merchantID == merchant.configuration.id else {
            throw ServiceError.notFound("attempt")
        }
        return PaymentView(payment)
    }

    // MARK: Prepare

    /// Starts the payment's next attempt: the attempt policy says whether one may start, the router picks
    /// the gateway, the attempt is stored, the gateway picks its return URL, then its **Prepare** runs.
    public func prepare(paymentID id: String, merchant: MerchantRuntime, request input: PrepareRequest,
                        logger: Logger? = nil) async throws -> Preparation {
        let logger = logger ?? self.logger
        guard let payment = try await store.payment(id: id, merchant: merchant.configuration.id) else { throw ServiceError.notFound("payment") }
        // Every offered return URL must be https or one of the merchant's own schemes, before anything is
        // stored or any gateway hears of it: a gateway would send the customer's browser wherever it points.
        do { try merchant.configuration.returnURLRule.check(input, path: "body") } catch { throw ServiceError(error, status: .unprocessableContent) }
        let customerRequested = input.customerRequested == true
        let appData = try checkedAppData(input.appData ?? [:])
        let gatewayID = try chooseGateway(for: payment, merchant: merchant, customerRequested: customerRequested, appData: appData)
        guard let gateway = merchant.gateways[gatewayID] else {
            throw ServiceError(status: .serviceUnavailable, code: "misconfigured", message: "gateway \(gatewayID) is not available")
        }
        let reference = AttemptReference.generate()
        do {
            // Stored before the gateway hears of it, so no notification can arrive for an unknown attempt.
            // Compare-and-set: only if the attempts the decision was made on are still exactly these.
            try await store.addAttempt(reference, payment: payment.id, gateway: gatewayID, expected: payment.attempts,
                                       customerRequested: customerRequested, intent: payment.intent)
        } catch StoreError.conflict {
            throw ServiceError(status: .conflict, code: "attempt_in_progress",
                               message: "the payment changed while preparing (another attempt, a late notification, or a change of the payment); read it again")
        }
        let start = ContinuousClock.now
        // A half-open circuit's probe slot, if this attempt took it: released on every outcome below.
        let probe = merchant.health.attemptStarted(on: gatewayID)
        do {
            // The app offered every route it has; the chosen gateway takes the one that fits it.
            let returnURL = try gateway.returnURL(from: input.offeredReturnURLs, for: payment.intent)
            let context = AttemptContext(intent: payment.intent, attempt: reference, returnURL: returnURL,
                                         notificationURL: notificationURL(for: gatewayID), appData: Self.appData(appData, for: gateway))
            var preparation = try await GatewayExchanges.$attempt.withValue(reference) { try await gateway.prepare(context) }
            preparation.returnURL = preparation.returnURL ?? returnURL
            recordPrepareDuration(gatewayID, since: start)
            merchant.health.record(gatewayID, success: true, releasingProbe: probe)
            try await store.attemptPrepared(reference, gatewayReference: preparation.gatewayReference, returnURL: preparation.returnURL)
            logger.info("attempt prepared", metadata: ["payment": .string(payment.id), "attempt": .string(reference.rawValue),
                                                       "gateway": .string(gatewayID.rawValue)])
            return preparation
        } catch {
            recordPrepareDuration(gatewayID, since: start)
            let failure = error as? CheckoutError
                ?? CheckoutError(.unknownOutcome, message: "the gateway module failed unexpectedly", gateway: gatewayID)
            merchant.health.record(gatewayID, success: failure.category != .unavailable && failure.category != .unknownOutcome,
                                   releasingProbe: probe)
            // A Prepare that refuses the payment's own data (a field the gateway needs is missing or wrong) moves no
            // money — no customer has presented anything yet — so it is a mistake to fix, not a decline: the attempt
            // is closed as input refused, which the attempt policy does not count as a try, so the next prepare may try
            // the same gateway again once the payment or the app is fixed.
            let refusedInput = failure.category == .invalidInput && failure.code != .malformedBody
            try await close(reference, on: gatewayID, after: failure, stage: "prepare", as: refusedInput ? .inputRefused : nil)
            let field = failure.field.map { $0.hasPrefix("appData.") ? "body." + $0 : $0 }
            throw ServiceError(status: failure.category == .invalidInput ? .unprocessableContent : .badGateway,
                               code: failure.code.rawValue, message: failure.message, field: field, category: failure.category)
        }
    }

    /// The app's ``PrepareRequest/appData``, checked before anything is stored: at most 16 keys, each one some
    /// gateway module reads, each value 1 to 1024 bytes of UTF-8 without control characters. The chosen gateway
    /// then checks its own values by its own rules (``GatewayServerHalf/appDataIssues(_:)``).
    func checkedAppData(_ data: [String: String]) throws -> [String: String] {
        guard data.count <= 16 else {
            throw ServiceError(status: .unprocessableContent, code: "invalid_field", message: "at most 16 entries", field: "body.appData")
        }
        for (key, value) in data.sorted(by: { $0.key < $1.key }) {
            let field = "body.appData.\(CheckoutError.printable(String(key.prefix(64))))"
            guard state.appDataKeys.contains(key) else {
                let known = state.appDataKeys.sorted().joined(separator: ", ")
                throw ServiceError(status: .unprocessableContent, code: "invalid_field",
                                   message: "no gateway module reads this; they read: \(known.isEmpty ? "nothing" : known)", field: field)
            }
            guard !value.isEmpty, value.utf8.count <= 1_024, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw ServiceError(status: .unprocessableContent, code: "invalid_field",
                                   message: "1 to 1024 bytes of UTF-8, no control characters", field: field)
            }
        }
        return data
    }

    private func recordPrepareDuration(_ gateway: GatewayID, since start: ContinuousClock.Instant) {
        Timer(label: "till_prepare_duration", dimensions: [("gateway", gateway.rawValue)], factory: metrics)
            .recordNanoseconds((ContinuousClock.now - start).nanosecondsCount)
    }

    /// After a failed Prepare or Submit: an attempt known not to have charged is closed as failed (so
    /// the next prepare may cascade, as the attempt policy allows); one that may have reached the
    /// gateway stays open (pending) for an inquiry to settle.
    /// - Parameter classified: what the failure means for the money, when the stage knows better than the error.
    func close(_ reference: AttemptReference, on gatewayID: GatewayID, after failure: CheckoutError, stage: String,
               as classified: AttemptFailure? = nil) async throws {
        if let code = (classified ?? AttemptFailure(failure)).recordedCode {
            _ = try await store.apply(StatusReport(gateway: gatewayID, attempt: reference, status: .failed, gatewayCode: code,
                                                   eventID: "\(stage):\(reference)"), source: .answer)
        } else {
            try await store.attemptPrepared(reference, gatewayReference: nil, returnURL: nil)
        }
    }

    func notificationURL(for gatewayID: GatewayID) -> URL? {
        state.settings.publicURL.flatMap { URL(string: $0)?.appendingPathComponent("v1/notifications/\(gatewayID.rawValue)") }
    }

    /// The gateway for the next attempt, or the reason there is none: ``AttemptPolicy`` decides whether an
    /// attempt may start; the router orders the gateways; one not tried yet is taken (or, when the
    /// customer chose to try again and every gateway was tried, the router's first).
    func chooseGateway(for payment: StoredPayment, merchant: MerchantRuntime, customerRequested: Bool,
                       appData: [String: String] = [:]) throws -> GatewayID {
        let elapsed = Duration.milliseconds(Int64((Date().timeIntervalSince(payment.createdAt) * 1000).rounded()))
        let tried: Set<GatewayID>
        switch merchant.policy.nextAttempt(payment: payment.status, attempts: payment.attempts.map(AttemptSummary.init),
                                           customerRequested: customerRequested, elapsed: elapsed) {
        case .failure(let refusal):
            throw ServiceError(status: .conflict, code: refusal.code, message: refusal.reason)
        case .success(let gateways):
            tried = gateways
        }
        // The same seed per payment: every prepare of one payment draws alike (a rule that learns may still order
        // differently on a later prepare, its scores having moved).
        var generator = SeededGenerator(seed: UInt64(truncatingIfNeeded: payment.id.utf8.reduce(UInt64(14_695_981_039_346_656_037)) {
            ($0 ^ UInt64($1)) &* 1_099_511_628_211 }))
        let decision = merchant.router.route(payment.intent, health: merchant.health, scores: merchant.scores, using: &generator)
        // A gateway that needs something the payment lacks is passed over (it would only refuse); when every
        // gateway left needs something, the merchant is told what to fix (PATCH /v1/payments/{id}) and no
        // attempt starts.
        var unmet: ValidationIssue?
        let open = decision.candidates.filter { !tried.contains($0) }
        for candidate in open.isEmpty && customerRequested ? decision.candidates : open {
            guard let issue = Self.requirementIssue(payment.intent, on: candidate, merchant: merchant, path: "payment")
                    ?? Self.appDataIssue(appData, on: candidate, merchant: merchant) else { return candidate }
            unmet = unmet ?? issue
        }
        if let unmet { throw ServiceError(unmet.error, status: .unprocessableContent) }
        throw ServiceError(status: .conflict, code: "no_gateway_left", message: "no untried gateway can take this payment")
    }

    // MARK: Submit

    /// The app hands over what it collected (an encrypted payload, a card token) and the attempt's gateway
    /// is called with it, once. Failures are classified like Prepare's: never sent or declined closes the
    /// attempt; anything else leaves it pending for an inquiry (never a cascade). An answer that hands the
    /// customer off (3-D Secure) is recorded as a hand-off.
    ///
    /// `customerIP` is the address the app's request came from (gateways such as PayFort require it on
    /// a server-to-server payment).
    public func submit(_ submission: Submission, attempt reference: AttemptReference, merchant: MerchantRuntime,
                       customerIP: String? = nil, logger: Logger? = nil) async throws -> SubmitAnswer {
        let logger = logger ?? self.logger
        if let issue = Self.validate(submission).first { throw ServiceError(issue.error) }
        guard let payment = try await store.payment(attempt: reference), payment.merchantID == merchant.configuration.id,
              let attempt = payment.attempts.first(where: { $0.reference == reference }),
              let gateway = merchant.gateways[attempt.gateway] else {
            throw ServiceError.notFound("attempt")
        }
        guard attempt.status == .pending, attempt.submittedAt == nil, try await store.markSubmitted(reference) else {
            throw ServiceError(status: .conflict, code: "already_submitted",
                               message: "attempt \(reference) was already submitted or is \(attempt.status); read it again")
        }
        let context = SubmitContext(intent: payment.intent, attempt: reference, gatewayReference: attempt.gatewayReference,
                                    returnURL: attempt.returnURL, notificationURL: notificationURL(for: attempt.gateway),
                                    customerIP: customerIP)
        let result: SubmitResult
        do {
            result = try await GatewayExchanges.$attempt.withValue(reference) { try await gateway.submit(submission, context: context) }
            merchant.health.record(attempt.gateway, success: true)
        } catch {
            let failure = error as? CheckoutError
                ?? CheckoutError(.unknownOutcome, message: "the gateway module failed unexpectedly", gateway: attempt.gateway)
            merchant.health.record(attempt.gateway, success: failure.category != .unavailable && failure.category != .unknownOutcome)
            try await close(reference, on: attempt.gateway, after: failure, stage: "submit")
            logger.info("submit failed", metadata: ["attempt": .string(reference.rawValue), "code": .string(failure.code.rawValue),
                                                    "category": .string(failure.category.rawValue)])
            let status: HTTPResponse.Status = switch AttemptFailure(failure) {
            case .declined: failure.category == .invalidInput ? .unprocessableContent : .init(code: 402)
            case .neverSent, .inputRefused, .unknown: .badGateway
            }
            throw ServiceError(status: status, code: failure.code.rawValue, message: failure.message, field: failure.field,
                               category: failure.category)
        }
        if result.next.customerMayAuthenticate { try await store.markHandedOff(reference) }
        if let report = result.report {
            guard report.attempt == reference, report.gateway == attempt.gateway else {
                throw ServiceError(status: .badGateway, code: CheckoutError.Code.unknownOutcome.rawValue,
                                   message: "the gateway answered about another attempt", category: .unknownOutcome)
            }
            _ = try await store.apply(report, source: .answer)
        }
        logger.info("attempt submitted", metadata: ["attempt": .string(reference.rawValue), "gateway": .string(attempt.gateway.rawValue)])
        let after = try await store.payment(attempt: reference) ?? payment
        return SubmitAnswer(next: result.next, payment: PaymentView(after))
    }

    /// A submission's shape: a short kind, at most 32 fields, names of at most 64 characters, values
    /// of at most 32 KiB (an encrypted payload), no control characters in names.
    static func validate(_ submission: Submission) -> [ValidationIssue] {
        var issues = Validators.length(submission.kind, field: "body.kind", maxLength: 64)
        if submission.kind.isEmpty { issues.append(ValidationIssue(field: "body.kind", code: .missingField, message: "is required")) }
        if submission.fields.count > 32 {
            issues.append(ValidationIssue(field: "body.fields", code: .invalidField, message: "at most 32 fields"))
        }
        for (name, value) in submission.fields.sorted(by: { $0.key < $1.key }) {
            if name.isEmpty || name.unicodeScalars.count > 64 || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                issues.append(ValidationIssue(field: "body.fields", code: .invalidField, message: "field names are 1 to 64 printable characters"))
            }
            issues += Validators.length(value, field: "body.fields.\(name)", maxLength: 32_768)
        }
        return issues
    }

    // MARK: Inquiry and the app's report

    /// Asks the attempt's gateway for its status now and applies the answer: how a stuck attempt (a
    /// timeout during prepare, a notification that never came) is settled on demand.
    ///
    /// - Parameter fromApp: the caller holds a client secret (the customer's app): then the gateway is
    ///   asked at most once per attempt every few seconds (``appInquiries``), and a request over that
    ///   budget answers the stored view, so an app cannot turn the server into a source of gateway traffic.
    ///   - requestedBy: who asked, for the reconciliation log (each inquiry made is logged there, so a payment's history
    ///     shows it): by default the app or the merchant's API key.
    public func inquire(attempt reference: AttemptReference, merchant: MerchantRuntime, fromApp: Bool = false,
                        requestedBy: String? = nil) async throws -> PaymentView {
        guard let payment = try await store.payment(attempt: reference), payment.merchantID == merchant.configuration.id,
              let attempt = payment.attempts.first(where: { $0.reference == reference }),
              let gateway = merchant.gateways[attempt.gateway] else {
            throw ServiceError.notFound("attempt")
        }
        // Open attempts, and ended ones that moved no money (a late charge after an expiry or a decline is
        // only ever applied through this inquiry, never lost).
        let allowed = !fromApp || appInquiries.allow(reference, now: state.clock.now)
        if !allowed {
            Counter(label: "till_app_inquiries_suppressed_total", dimensions: [("gateway", attempt.gateway.rawValue)], factory: metrics).increment()
        }
        if allowed, !attempt.status.isFinal || attempt.status.isNegative {
            do {
                _ = try await inquireAndApply(attempt, of: payment, on: gateway,
                                              why: "on demand, asked by \(requestedBy ?? (fromApp ? "the app" : "the merchant's API key"))",
                                              logUnchanged: !fromApp)
            } catch let error as CheckoutError {
                throw ServiceError(status: .badGateway, code: error.code.rawValue, message: error.message, category: error.category)
            }
        }
        return PaymentView(try await store.payment(attempt: reference) ?? payment)
    }

    /// One inquiry of `attempt` and the answer applied (source `inquiry`): the store's one settle. Logged in the
    /// reconciliation log beside the reconciler's own (`why`: who asked, and why), so a payment's history shows the
    /// inquiries; one that changed nothing only when `logUnchanged`: those the merchant or an operator asked for, not
    /// the app's routine one at the end of a checkout nor the server's own confirmations, which would add a write to
    /// most payments. A failure to log does not fail the inquiry.
    func inquireAndApply(_ attempt: StoredAttempt, of payment: StoredPayment, on gateway: any GatewayServerHalf, why: String,
                         logUnchanged: Bool = true) async throws -> ApplyOutcome {
        func log(_ action: ReconciliationAction, _ reason: String, after: PaymentStatus) async {
            try? await store.logReconciliation(ReconciliationEntry(merchantID: payment.merchantID, attempt: attempt.reference, gateway: attempt.gateway,
                                                                   action: action.rawValue, reason: reason, statusBefore: attempt.status,
                                                                   statusAfter: after))
        }
        do {
            let outcome = try await store.settle(attempt.reference, on: attempt.gateway, gatewayReference: attempt.gatewayReference,
                                                 amount: payment.intent.amount, gateway: gateway).outcome
            if case .applied(let after, _) = outcome {
                await log(.settled, why, after: after)
            } else if logUnchanged {
                await log(.unchanged, why, after: attempt.status)
            }
            return outcome
        } catch let error as CheckoutError {
            await log(.inquiryFailed, "\(why): \(error.code.rawValue)", after: attempt.status)
            throw error
        }
    }

    /// Records what the app saw (informational; a reported hand-off is kept for the attempt policy).
    public func reportOutcome(_ outcome: ClientOutcome, attempt reference: AttemptReference, merchant: MerchantRuntime,
                              logger: Logger? = nil) async throws -> PaymentView {
        for issue in Validators.length(outcome.message, field: "body.message", maxLength: 500)
            + Validators.length(outcome.gatewayCode, field: "body.gatewayCode", maxLength: 64) {
            throw ServiceError(issue.error)
        }
        guard let before = try await store.payment(attempt: reference), before.merchantID == merchant.configuration.id else {
            throw ServiceError.notFound("attempt")
        }
        // Free text the app sends is kept with any card number masked (a customer may type one anywhere).
        var outcome = outcome
        outcome.message = outcome.message.map { Redactor.maskCardNumbers(in: $0) }
        outcome.gatewayCode = outcome.gatewayCode.map { Redactor.maskCardNumbers(in: $0) }
        try await store.recordClientOutcome(outcome, attempt: reference)
        (logger ?? self.logger).info("client outcome recorded (informational)", metadata: [
            "attempt": .string(reference.rawValue), "kind": .string(outcome.kind.rawValue)])
        return PaymentView(try await store.payment(attempt: reference) ?? before)
    }

    /// The merchant's quarantined notifications (verified, for attempts it does not have).
    public func quarantine(merchant: MerchantRuntime, limit: Int = 100) async throws -> [QuarantinedNotification] {
        try await store.quarantined(merchant: merchant.configuration.id, limit: min(max(limit, 1), 1_000))
    }

    // MARK: Notifications

    /// A gateway's notification: verified by one of the gateway's configured instances, stored (or
    /// quarantined) and applied by the attempt policy in one transaction, and only then acknowledged in
    /// the gateway's way. An unverifiable one changes nothing and is refused (the gateway retries); if it
    /// names an attempt we know, that attempt is inquired about instead.
    public func receiveNotification(gateway gatewayID: GatewayID, headers: [String: String], body: Data,
                                    logger: Logger? = nil) async throws -> NotificationAcknowledgement {
        let logger = logger ?? self.logger
        let candidates: [(merchant: MerchantRuntime, gateway: any GatewayServerHalf)] = state.merchants.compactMap { merchant in
            merchant.gateways[gatewayID].map { (merchant: merchant, gateway: $0) }
        }
        guard !candidates.isEmpty else { throw ServiceError.notFound("gateway") }
        let incoming = IncomingNotification(headers: headers, body: body)
        // Every merchant configured with this gateway tries to verify it: two merchants may share one gateway
        // account (one PayFort merchant identifier, one ecommpay project), and then both verify it.
        var verifiers: [(merchant: MerchantRuntime, notification: VerifiedNotification)] = []
        var failure: CheckoutError?
        for candidate in candidates {
            do {
                verifiers.append((candidate.merchant, try candidate.gateway.verifyNotification(incoming)))
            } catch let error as CheckoutError {
                failure = failure ?? error
            } catch {
                failure = failure ?? CheckoutError(.malformedBody, message: "unverifiable notification")
            }
        }
        guard let (merchant, notification) = try await owner(among: verifiers) else {
            Counter(label: "till_notifications_total", dimensions: [("gateway", gatewayID.rawValue), ("result", "rejected")], factory: metrics).increment()
            logger.warning("notification rejected", metadata: ["gateway": .string(gatewayID.rawValue),
                                                               "reason": .string(failure?.message ?? "unverifiable")])
            if let claimed = candidates.lazy.compactMap({ $0.gateway.claimedAttempt(in: incoming) }).first {
                if unverifiedInquiries.allow(claimed, now: state.clock.now) {
                    await inquire(claimed, gateway: gatewayID, why: "a rejected notification named it", logger: logger)
                } else {
                    Counter(label: "till_unverified_inquiries_suppressed_total", dimensions: [("gateway", gatewayID.rawValue)],
                            factory: metrics).increment()
                }
            }
            let status: HTTPResponse.Status = failure?.category == .verification ? .unauthorized : .badRequest
            throw ServiceError(status: status, code: failure?.code.rawValue ?? "unverifiable",
                               message: failure?.message ?? "the notification could not be verified", field: failure?.field)
        }
        if crashPoint == .beforeStore { Self.crash() }
        // Headers are kept for audit and re-verification, minus credentials a proxy may have added.
        // A clear card number a gateway sent is masked before the body is kept; everything else stays as received.
        let stored = RawNotification(gateway: gatewayID, headers: redactor.redact(headers: headers), body: redactor.maskingCardFields(in: body))
        let outcome = try await store.ingest(stored, report: notification.report, operation: notification.operation,
                                             merchant: merchant.configuration.id,
                                             source: notification.confirmBeforeApplying ? .notificationToConfirm : .notification)
        if crashPoint == .afterStore { Self.crash() }
        Counter(label: "till_notifications_total", dimensions: [("gateway", gatewayID.rawValue), ("result", "verified")], factory: metrics).increment()
        Counter(label: "till_notification_outcomes_total", dimensions: [("gateway", gatewayID.rawValue), ("outcome", outcome.storedName)],
                factory: metrics).increment()
        let attempt = notification.report.attempt
        switch outcome {
        case .applied(let attemptStatus, let paymentStatus):
            Counter(label: "till_payment_status_total", dimensions: [("status", paymentStatus.rawValue)], factory: metrics).increment()
            logger.info("notification applied", metadata: [
                "merchant": .string(merchant.configuration.id), "attempt": .string(attempt.rawValue),
                "attempt_status": .string(attemptStatus.rawValue), "payment_status": .string(paymentStatus.rawValue)])
        case .needsInquiry(let reason):
            logger.notice("notification stored; the server inquires before applying it", metadata: [
                "attempt": .string(attempt.rawValue), "reason": .string(reason)])
            await inquire(attempt, gateway: gatewayID, why: reason, logger: logger)
            // A notification its module asks to confirm that names one of Till's operations: the operation is asked about
            // too, so the gateway's word settles it without waiting for the reconciler.
            if let named = notification.operation, notification.confirmBeforeApplying {
                await inquireNamedOperation(named, attempt: attempt, merchant: merchant, logger: logger)
            }
        case .quarantined:
            logger.warning("verified notification for an unknown attempt quarantined", metadata: [
                "merchant": .string(merchant.configuration.id), "gateway": .string(gatewayID.rawValue), "attempt": .string(attempt.rawValue)])
        case .operation(let settled):
            logger.info("notification about an operation", metadata: ["attempt": .string(attempt.rawValue),
                                                                      "outcome": .string(settled.storedName)])
        case .duplicate, .stale, .unknownAttempt:
            logger.info("notification stored, not applied", metadata: ["attempt": .string(attempt.rawValue),
                                                                       "outcome": .string(outcome.storedName)])
        }
        // Only now, with the notification durably stored, acknowledge it in the gateway's way.
        return notification.acknowledgement
    }

    /// Of the merchants whose credentials verify a notification, the one that owns the attempt it names; the
    /// first when none does (it is quarantined under that merchant). One verifier needs no lookup.
    func owner(among verifiers: [(merchant: MerchantRuntime, notification: VerifiedNotification)]) async throws
        -> (MerchantRuntime, VerifiedNotification)? {
        guard let first = verifiers.first else { return nil }
        guard verifiers.count > 1 else { return first }
        for verifier in verifiers {
            if let payment = try await store.payment(attempt: verifier.notification.report.attempt),
               payment.merchantID == verifier.merchant.configuration.id { return verifier }
        }
        return first
    }

    /// A gateway checking its endpoint before it sends to it: the first of its configured instances that
    /// recognises the request answers it; nothing is stored and no status changes.
    public func answerChallenge(gateway gatewayID: GatewayID, headers: [String: String]) throws -> NotificationAcknowledgement {
        let incoming = IncomingNotification(headers: headers, body: Data())
        for merchant in state.merchants {
            if let answer = merchant.gateways[gatewayID]?.answerChallenge(incoming) { return answer }
        }
        throw ServiceError.notFound("endpoint verification")
    }

    /// Inquires an attempt the server has a reason to doubt (a rejected notification named it, or a
    /// notification may only be applied after the server's own inquiry), at most once at a time per
    /// attempt: in the background, or inline for in-process drivers.
    func inquire(_ claimed: AttemptReference, gateway gatewayID: GatewayID, why: String, logger: Logger) async {
        guard inquiries.begin(claimed) else { return }
        let (store, state, inquiries) = (self.store, self.state, self.inquiries)
        let service = self
        let work: @Sendable () async -> Void = {
            defer { inquiries.end(claimed) }
            do {
                guard let payment = try await store.payment(attempt: claimed),
                      let attempt = payment.attempts.first(where: { $0.reference == claimed }), attempt.gateway == gatewayID,
                      // Anything but a full refund may still change: a confirmable refund notification asks
                      // about a paid attempt too.
                      attempt.status != .refunded,
                      let gateway = state.merchant(id: payment.merchantID)?.gateways[gatewayID],
                      gateway.capabilities.supportsInquiry else { return }
                let outcome = try await service.inquireAndApply(attempt, of: payment, on: gateway, why: "started by the server: \(why)",
                                                                 logUnchanged: false)
                logger.info("inquiry the server started", metadata: ["attempt": .string(claimed.rawValue), "why": .string(why),
                                                                     "outcome": .string(outcome.storedName)])
            } catch {
                logger.warning("inquiry the server started failed", metadata: [
                    "attempt": .string(claimed.rawValue), "error": .string((error as? CheckoutError)?.code.rawValue ?? "\(type(of: error))")])
            }
        }
        if inquiriesInline { await work() } else { Task { await work() } }
    }

    private static func crash() -> Never {
        kill(getpid(), SIGKILL)
        fatalError("unreachable")
    }

    static func canonicalJSON(_ intent: PaymentIntent) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(intent)
    }
}

extension AttemptSummary {
    init(_ attempt: StoredAttempt) {
        self.init(reference: attempt.reference, gateway: attempt.gateway, status: attempt.status, gatewayCode: attempt.gatewayCode,
                  handedOff: attempt.handedOff, customerRequested: attempt.customerRequested)
    }
}

extension Duration {
    var nanosecondsCount: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

/// The budget of inquiries that notifications nobody could verify may cause: at most one per attempt
/// per `perAttempt`, and at most `burst` at once refilled at `perSecond` across all attempts. A forger
/// posting bad signatures cannot turn the server into a source of gateway traffic; a genuine but
/// unverifiable notification still gets its attempt inquired (and the reconciler inquires later anyway).
struct InquiryBudget: Sendable {
    let perAttempt: Duration
    let perSecond: Double
    let burst: Double
    private struct State {
        var lastByAttempt: [AttemptReference: Duration] = [:]
        var tokens: Double
        var refilledAt: Duration?
    }
    private let state: Locked<State>

    init(perAttempt: Duration = .seconds(60), perSecond: Double = 2, burst: Double = 10) {
        self.perAttempt = perAttempt
        self.perSecond = perSecond
        self.burst = burst
        state = Locked(State(tokens: burst))
    }

    /// Whether an inquiry of `attempt` may start at `now`; takes the budget when it may.
    func allow(_ attempt: AttemptReference, now: Duration) -> Bool {
        state.withLock { state in
            if let refilled = state.refilledAt {
                let elapsed = Double((now - refilled).components.seconds) + Double((now - refilled).components.attoseconds) / 1e18
                state.tokens = min(burst, state.tokens + max(0, elapsed) * perSecond)
            }
            state.refilledAt = now
            if let last = state.lastByAttempt[attempt], now - last < perAttempt { return false }
            guard state.tokens >= 1 else { return false }
            state.tokens -= 1
            state.lastByAttempt[attempt] = now
            if state.lastByAttempt.count > 10_000 {
                state.lastByAttempt = state.lastByAttempt.filter { now - $0.value < perAttempt }
            }
            return true
        }
    }
}

/// A set of keys with work under way.
struct InFlight: Sendable {
    private let keys = Locked<Set<AttemptReference>>([])
    /// True if the caller may start (nothing under way for `key`).
    func begin(_ key: AttemptReference) -> Bool { keys.withLock { $0.insert(key).inserted } }
    func end(_ key: AttemptReference) { keys.withLock { _ = $0.remove(key) } }
}
