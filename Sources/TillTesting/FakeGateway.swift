import Crypto
import Foundation
import Till
import TillOrchestration
import TillGatewayKit

/// What a ``FakeGateway`` does with one attempt.
public enum FakeBehavior: Sendable, Hashable {
    /// Charge and report paid.
    case approve
    /// Decline with a code the fake's decision table marks retryable (`"soft"` by default).
    case softDecline(code: String = "soft")
    /// Decline with a code that must not be retried (`"hard"` by default).
    case hardDecline(code: String = "hard")
    /// Accept the request, answer `pending`, settle later (``FakeGateway/settle(_:as:)``).
    case pending
    /// Fail before the request leaves: nothing charged, the error is `unavailable`.
    case timeoutBeforeSending
    /// Charge, then lose the answer: the error is an unknown outcome; inquiry says paid.
    case timeoutAfterCharging
    /// Charge, then the connection breaks before the answer: an unknown outcome.
    case lostResponse
    /// Answer HTTP 5xx, having charged or not: an unknown outcome either way.
    case serverError(charged: Bool)
    /// Time out having not processed the request yet: inquiries say "no such attempt" until the
    /// gateway processes it later (``FakeGateway/settle(_:as:code:)``) — a delayed request.
    case delayedCharge
    /// Prepare itself fails this way (the session or token could not be created).
    case failPrepare(TransportError.Kind)
    /// Prepare refuses the payment's data before anything is sent (a gateway module missing a field it needs:
    /// PayFort without the customer's e-mail): `missing_field` naming `intent.<field>`, category invalid input.
    case refuseInput(field: String)
    /// Send the customer to a wallet page; the customer's choice decides (``FakeGateway/customerActs(on:approve:)``).
    case walletHandoff
}

/// How the fake delivers its notification for an attempt.
public enum FakeNotificationTiming: Sendable, Hashable {
    /// Deliver right after the charge.
    case immediate
    /// Deliver after a delay (a notification arriving after the customer's return).
    case late(Duration)
    /// Deliver the same notification `count` times.
    case duplicate(count: Int)
    /// Never deliver: only inquiry finds the result.
    case never
    /// Keep it in the gateway's outbox until ``FakeGateway/drainOutbox()`` (a retry that arrives
    /// much later, after the checkout ended).
    case deferred
}

/// Everything scripted for one attempt.
public struct FakeAttemptPlan: Sendable, Hashable {
    public var behavior: FakeBehavior
    /// Overrides the gateway's notification timing for this attempt.
    public var notification: FakeNotificationTiming?
    /// Inquiries about this attempt that fail (time out) before one succeeds.
    public var failingInquiries: Int
    /// How long the gateway takes to answer, on the runner's clock.
    public var latency: Duration
    /// For `.walletHandoff`: the call after the customer came back fails this way (the customer's
    /// choice in the wallet still happened).
    public var afterReturn: TransportError.Kind?

    public init(_ behavior: FakeBehavior, notification: FakeNotificationTiming? = nil, failingInquiries: Int = 0,
                latency: Duration = .zero, afterReturn: TransportError.Kind? = nil) {
        self.behavior = behavior
        self.notification = notification
        self.failingInquiries = failingInquiries
        self.latency = latency
        self.afterReturn = afterReturn
    }
}

/// Everything the fake gateway knows: what it charged, per attempt. Shared by every copy of one fake.
public actor FakeGatewayLedger {
    public struct Record: Sendable, Hashable {
        public var plan: FakeAttemptPlan
        public var behavior: FakeBehavior { plan.behavior }
        public var amount: Money
        public var status: PaymentStatus
        public var code: String?
        public var charged: Bool
        public var notificationURL: URL?
        public var returnURL: URL?
        /// The payment's action is `authorize`: an approval holds the money (`authorized`) instead of taking it.
        public var authorizeOnly = false
    }

    public internal(set) var records: [AttemptReference: Record] = [:]
    /// Every capture, void and refund the fake received, by the operation's reference.
    public internal(set) var operations: [String: FakeOperationRecord] = [:]
    var operationScript: [FakeOperationPlan] = []
    private var script: [FakeAttemptPlan]
    private let defaultBehavior: FakeBehavior
    private var outbox: [IncomingNotification] = []

    init(script: [FakeAttemptPlan], defaultBehavior: FakeBehavior) {
        self.script = script
        self.defaultBehavior = defaultBehavior
    }

    /// Attempts the fake actually charged (money moved).
    public var charges: [AttemptReference: Money] {
        records.filter(\.value.charged).mapValues(\.amount)
    }

    /// Whether the fake charged `attempt` (constant time, unlike filtering ``charges``).
    public func isCharged(_ attempt: AttemptReference) -> Bool { records[attempt]?.charged ?? false }

    /// Queue behaviors for the next attempts, in order.
    public func enqueue(_ behaviors: [FakeBehavior]) { script += behaviors.map { FakeAttemptPlan($0) } }

    /// Queue full plans for the next attempts, in order.
    public func enqueue(_ plans: [FakeAttemptPlan]) { script += plans }

    func open(_ attempt: AttemptReference, amount: Money, notificationURL: URL?, returnURL: URL?, authorizeOnly: Bool = false) -> Record {
        if let existing = records[attempt] { return existing }
        let plan = script.isEmpty ? FakeAttemptPlan(defaultBehavior) : script.removeFirst()
        let record = Record(plan: plan, amount: amount, status: .pending, code: nil, charged: false,
                            notificationURL: notificationURL, returnURL: returnURL, authorizeOnly: authorizeOnly)
        records[attempt] = record
        return record
    }

    func update(_ attempt: AttemptReference, _ change: (inout Record) -> Void) -> Record? {
        guard var record = records[attempt] else { return nil }
        change(&record)
        records[attempt] = record
        return record
    }

    func record(_ attempt: AttemptReference) -> Record? { records[attempt] }

    /// Records an attempt the gateway holds without a checkout having run through it (a benchmark's seeded
    /// payments): `status` for `amount`, charged when money moved or is held.
    public func seed(_ attempt: AttemptReference, amount: Money, status: PaymentStatus) {
        records[attempt] = Record(plan: FakeAttemptPlan(.approve), amount: amount, status: status, code: nil,
                                  charged: status.moneyMoved || status == .authorized, notificationURL: nil, returnURL: nil,
                                  authorizeOnly: status == .authorized)
    }

    /// Changes what the gateway holds about an attempt behind the server's back, without notifying anyone (an
    /// order paid and refunded in the gateway's own back office, seen only by the next inquiry).
    public func setBehindTheScenes(_ attempt: AttemptReference, status: PaymentStatus, amount: Money? = nil) {
        guard var record = records[attempt] else { return }
        record.status = status
        if let amount { record.amount = amount }
        records[attempt] = record
    }

    func post(_ notification: IncomingNotification) { outbox.append(notification) }

    func takeOutbox() -> [IncomingNotification] {
        defer { outbox.removeAll() }
        return outbox
    }

    /// How many inquiries the gateway has answered or failed, in all.
    public private(set) var inquiries = 0

    /// Consumes one scripted inquiry failure; true if this inquiry must fail.
    func inquiryShouldFail(_ attempt: AttemptReference) -> Bool {
        inquiries += 1
        guard var record = records[attempt], record.plan.failingInquiries > 0 else { return false }
        record.plan.failingInquiries -= 1
        records[attempt] = record
        return true
    }
}

/// A scriptable gateway conforming to ``GatewayAppHalf``, for tests and the demo.
///
/// It keeps a ledger of what it really charged, signs its notifications with HMAC-SHA256 over the
/// body (header `x-fake-signature`), and plays the behaviors queued for it, one per attempt:
///
/// ```swift
/// let fake = FakeGateway(script: [.softDecline(), .approve])
/// ```
///
/// How a ``FakeGateway``'s app half presents card-like attempts.
public enum FakeFlow: String, Sendable, Hashable {
    /// A card form; the app half charges when it is submitted (PayFort's SDK shape).
    case card
    /// A card form whose values the app half seals and hands to the merchant server as a
    /// ``Submission``; the server half charges (Worldline's shape: encrypt in the app, CreatePayment on
    /// the server).
    case submit
    /// A vendor SDK launched in-process that reports its result through the presenter, not a URL
    /// (iPayNow's and ecommpay's shape).
    case sdk
}

/// Card-like behaviors present a card form; submitting it charges (or declines), directly or through
/// the merchant server's submit step (``FakeFlow``). `.walletHandoff`
/// presents an `openURL` step; the simulated customer acts with ``customerActs(on:approve:)``,
/// which returns the URL the "wallet" sends the customer back to.
public struct FakeGateway: GatewayHalves {
    public let gateway: GatewayID
    public let capabilities: GatewayCapabilities
    public let operationCapabilities: OperationCapabilities
    public let decisionTable: DecisionTable
    public let ledger: FakeGatewayLedger
    public let notificationTiming: FakeNotificationTiming
    /// How card-like attempts are presented.
    public let flow: FakeFlow
    private let secretBytes: Data
    private var secret: SymmetricKey { SymmetricKey(data: secretBytes) }
    private let deliver: (@Sendable (IncomingNotification) async -> Void)?

    /// - Parameters:
    ///   - deliver: where notifications go (the merchant server's notification endpoint); none if nil.
    ///   - secret: the notification signing secret shared with the merchant server.
    public init(id: GatewayID = "fake", script: [FakeBehavior] = [], defaultBehavior: FakeBehavior = .approve,
                capabilities: GatewayCapabilities = GatewayCapabilities(
                    methods: [.card, .wechatPay, .alipay], actions: [.sale, .authorize], attemptLifetimeSeconds: 900),
                operationCapabilities: OperationCapabilities = FakeGateway.allOperations,
                decisionTable: DecisionTable = DecisionTable(["soft": .retryNext, "3ds_required": .stepUp]),
                secret: String = "fake-notification-secret",
                notificationTiming: FakeNotificationTiming = .immediate, flow: FakeFlow = .card,
                deliver: (@Sendable (IncomingNotification) async -> Void)? = nil) {
        self.flow = flow
        self.gateway = id
        self.capabilities = capabilities
        self.operationCapabilities = operationCapabilities
        self.decisionTable = decisionTable
        self.ledger = FakeGatewayLedger(script: script.map { FakeAttemptPlan($0) }, defaultBehavior: defaultBehavior)
        self.secretBytes = Data(secret.utf8)
        self.notificationTiming = notificationTiming
        self.deliver = deliver
    }

    // MARK: Prepare

    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let record = await ledger.open(context.attempt, amount: context.intent.amount,
                                       notificationURL: context.notificationURL, returnURL: context.returnURL,
                                       authorizeOnly: context.intent.action == .authorize)
        if case .failPrepare(let kind) = record.behavior {
            throw TransportError(kind, "scripted prepare failure").checkoutError(gateway: gateway)
        }
        if case .refuseInput(let field) = record.behavior {
            throw CheckoutError(.missingField, field: "intent.\(field)", message: "this gateway needs it", gateway: gateway)
        }
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method,
                           amount: context.intent.amount, gatewayReference: "fake_\(context.attempt.rawValue)",
                           parameters: ["flow": record.behavior == .walletHandoff ? "wallet" : "card"],
                           returnURL: context.returnURL)
    }

    // MARK: Present

    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        guard let record = await ledger.record(preparation.attempt) else {
            throw CheckoutError(.invalidField, field: "preparation.attempt", message: "unknown attempt", gateway: gateway)
        }
        switch (record.behavior, input) {
        case (.walletHandoff, _):
            var page = URLComponents(string: "https://wallet.fake.invalid/pay")!
            page.queryItems = [URLQueryItem(name: "attempt", value: preparation.attempt.rawValue)]
            return .openURL(page.url!, handoff: .walletApp)
        case (_, .start) where flow == .sdk:
            return .launchWallet(WalletLaunch(wallet: Self.sdkName, parameters: ["attempt": preparation.attempt.rawValue]))
        case (_, .submit(let values)) where flow == .submit:
            // The app half seals what the customer typed; only the server half can open it.
            guard let number = values["card_number"], !number.isEmpty else {
                throw CheckoutError(.missingField, field: "card_number", message: "enter the card number", gateway: gateway)
            }
            return .submit(Submission(kind: Self.sealedKind, fields: ["sealed": seal(number, attempt: preparation.attempt)]))
        case (_, .start):
            return .collect(FormSpec(fields: [
                FormField(id: "card_number", labelKey: "till.field.cardNumber", kind: .cardNumber, maxLength: 19, sensitive: true),
                FormField(id: "expiry", labelKey: "till.field.expiry", kind: .expiryDate, maxLength: 5),
                FormField(id: "cvv", labelKey: "till.field.cvv", kind: .securityCode, maxLength: 4, sensitive: true),
            ]))
        case (_, .returned), (_, .sdkPrepared):
            throw CheckoutError(.unsupportedAction, field: "input", message: "the fake gateway posts no forms and signs for no SDK", gateway: gateway)
        case (_, .submit):
            let report = try await charge(preparation.attempt)
            switch report.status {
            case .paid, .authorized: return .completed(ClientOutcome(.succeeded, gatewayCode: report.gatewayCode))
            case .pending: return .completed(ClientOutcome(.pending))
            default: return .completed(ClientOutcome(.failed, gatewayCode: report.gatewayCode, message: "declined"))
            }
        }
    }

    /// The vendor-SDK name of the `.sdk` flow's launch.
    public static let sdkName = "fake-sdk"
    /// The submission kind of the `.submit` flow.
    public static let sealedKind = "sealed_card"

    /// What the app half hands the server in the `.submit` flow: an HMAC of the card number bound to
    /// the attempt, never the number itself.
    func seal(_ number: String, attempt: AttemptReference) -> String {
        HMAC<SHA256>.authenticationCode(for: Data("\(attempt.rawValue):\(number)".utf8), using: secret)
            .withUnsafeBytes { Hex.encode($0) }
    }

    // MARK: Submit (server)

    /// The `.submit` flow's server half: checks the sealed payload and charges, playing the attempt's
    /// behavior. A decline is an answer (a failed report), not an error; transport faults throw as
    /// they would from a real gateway (never sent, or an unknown outcome).
    public func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
        guard submission.kind == Self.sealedKind, let sealed = submission.fields["sealed"], sealed.count == 64,
              sealed.allSatisfy(\.isHexDigit) else {
            throw CheckoutError(.invalidField, field: "submission.fields.sealed", message: "not a sealed card", gateway: gateway)
        }
        let report = try await charge(context.attempt)
        let next: NextStep
        switch report.status {
        case .paid, .authorized: next = .completed(ClientOutcome(.succeeded, gatewayCode: report.gatewayCode))
        case .pending: next = .completed(ClientOutcome(.pending))
        default: next = .completed(ClientOutcome(.failed, gatewayCode: report.gatewayCode, message: "declined"))
        }
        return SubmitResult(next: next, report: report, gatewayReference: "fake_payment_\(context.attempt.rawValue)")
    }

    /// Server-to-gateway charge of an attempt, playing its behavior. Returns the gateway's answer or
    /// throws the transport-level error the behavior asks for.
    public func charge(_ attempt: AttemptReference) async throws -> StatusReport {
        guard let record = await ledger.record(attempt) else {
            throw CheckoutError(.invalidField, field: "attempt", message: "unknown attempt", gateway: gateway)
        }
        guard record.status == .pending, !record.charged else {
            // Idempotent: a repeated charge of the same attempt never charges twice.
            return report(for: attempt, record)
        }
        switch record.behavior {
        case .approve, .walletHandoff:
            return try await settle(attempt, as: .paid)
        case .softDecline(let code), .hardDecline(let code):
            return try await settle(attempt, as: .failed, code: code)
        case .pending:
            return report(for: attempt, record)
        case .timeoutBeforeSending:
            // The gateway never received it: it can never settle, and it sends nothing.
            _ = await ledger.update(attempt) { record in
                record.status = .failed
                record.code = "not_received"
            }
            throw TransportError(.notSent, "connection refused").checkoutError(gateway: gateway)
        case .timeoutAfterCharging:
            _ = try await settle(attempt, as: .paid)
            throw TransportError(.timedOut, "no answer").checkoutError(gateway: gateway)
        case .lostResponse:
            _ = try await settle(attempt, as: .paid)
            throw TransportError(.connectionLost, "connection reset").checkoutError(gateway: gateway)
        case .serverError(let charged):
            if charged { _ = try await settle(attempt, as: .paid) }
            throw CheckoutError(.gatewayError, message: "HTTP 503 from the gateway", gateway: gateway, gatewayCode: "503")
        case .delayedCharge:
            throw TransportError(.timedOut, "no answer").checkoutError(gateway: gateway)
        case .failPrepare(let kind):
            throw TransportError(kind, "scripted failure").checkoutError(gateway: gateway)
        case .refuseInput(let field):
            throw CheckoutError(.missingField, field: "intent.\(field)", message: "this gateway needs it", gateway: gateway)
        }
    }

    /// The simulated customer acts on a wallet hand-off: pays (or cancels) inside the "wallet", which
    /// then sends them back. Returns the return URL the wallet opens, with `result=success|cancel`.
    @discardableResult
    public func customerActs(on attempt: AttemptReference, approve: Bool) async throws -> URL? {
        try await customerActs(on: attempt, result: approve ? .paid : .cancelled, code: approve ? nil : "cancel").returnURL
    }

    /// The simulated customer finishes in the wallet with `result` (`.paid`, `.cancelled`, or
    /// `.failed` for a wallet-side decline). Returns the gateway's report and the return URL.
    public func customerActs(on attempt: AttemptReference, result: PaymentStatus, code: String? = nil) async throws -> (report: StatusReport, returnURL: URL?) {
        let report = try await settle(attempt, as: result, code: code)
        guard let returnURL = await ledger.record(attempt)?.returnURL,
              var components = URLComponents(url: returnURL, resolvingAgainstBaseURL: false) else { return (report, nil) }
        components.queryItems = (components.queryItems ?? []) + [
            URLQueryItem(name: "result", value: report.status == .paid ? "success" : report.status == .cancelled ? "cancel" : "fail")]
        return (report, components.url)
    }

    /// Moves an attempt to a final status (charging the ledger when paid) and delivers the notification.
    @discardableResult
    public func settle(_ attempt: AttemptReference, as status: PaymentStatus, code: String? = nil) async throws -> StatusReport {
        guard let record = await ledger.update(attempt, { record in
            guard record.status == .pending else { return }
            record.status = status == .paid && record.authorizeOnly ? .authorized : status
            record.code = code
            record.charged = status.moneyMoved || status == .authorized
        }) else {
            throw CheckoutError(.invalidField, field: "attempt", message: "unknown attempt", gateway: gateway)
        }
        let report = report(for: attempt, record)
        await notify(report, timing: record.plan.notification ?? notificationTiming)
        return report
    }

    /// Takes the notifications held back with `.deferred` timing, for the caller to deliver.
    public func drainOutbox() async -> [IncomingNotification] {
        await ledger.takeOutbox()
    }

    // MARK: Return

    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url(let url):
            let result = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "result" }?.value
            switch result {
            case "success": return ClientOutcome(.succeeded, gatewayCode: "0")
            case "cancel": return ClientOutcome(.cancelled, gatewayCode: "-2")
            default: return ClientOutcome(.unknown)
            }
        case .callback(let code, _):
            return code == "0" ? ClientOutcome(.succeeded, gatewayCode: code)
                : code == "-2" ? ClientOutcome(.cancelled, gatewayCode: code) : ClientOutcome(.failed, gatewayCode: code)
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back")
        }
    }

    // MARK: Confirm

    /// The fake's endpoint verification: a request carrying `X-Fake-Challenge` is answered `200` with
    /// the header's value as the body (the shape of Worldline's endpoint verification).
    public static let challengeHeader = "x-fake-challenge"

    public func answerChallenge(_ request: IncomingNotification) -> NotificationAcknowledgement? {
        guard let challenge = request.headers[Self.challengeHeader], !challenge.isEmpty, challenge.count <= 256 else { return nil }
        return NotificationAcknowledgement(statusCode: 200, contentType: "text/plain", body: Data(challenge.utf8))
    }

    /// The notification body the fake sends.
    public struct NotificationBody: Codable, Sendable, Hashable {
        public var attempt: String
        public var status: String
        public var amount: Money?
        public var code: String?
        public var eventId: String
        /// For a notification about an operation: its reference, kind, status and amount.
        public var operation: String?
        public var operationKind: OperationKind?
        public var operationStatus: OperationStatus?
        public var operationAmount: Money?
    }

    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        guard let signature = notification.headers["x-fake-signature"] else {
            throw CheckoutError(.signatureMismatch, field: "x-fake-signature", message: "unsigned notification", gateway: gateway)
        }
        guard let given = Hex.decode(signature),
              HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: notification.body, using: secret)
        else {
            throw CheckoutError(.signatureMismatch, field: "x-fake-signature", message: "signature does not match the body", gateway: gateway)
        }
        let body: NotificationBody
        do {
            body = try JSONDecoder().decode(NotificationBody.self, from: notification.body)
        } catch {
            throw CheckoutError(.malformedBody, field: "body", message: "not a fake-gateway notification", gateway: gateway)
        }
        let status = PaymentStatus(rawValue: body.status)
        let operation = body.operationKind.map { kind in
            OperationReport(reference: body.operation.flatMap(OperationReference.init(rawValue:)), kind: kind,
                            status: body.operationStatus ?? .unknown, amount: body.operationAmount, gatewayReference: body.operation,
                            gatewayCode: body.code)
        }
        return VerifiedNotification(report: StatusReport(
            gateway: gateway, attempt: AttemptReference(rawValue: body.attempt), gatewayReference: "fake_\(body.attempt)",
            status: status, amount: body.amount, gatewayStatus: body.status, gatewayCode: body.code, eventID: body.eventId),
            operation: operation)
    }

    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? JSONDecoder().decode(NotificationBody.self, from: notification.body)).map { AttemptReference(rawValue: $0.attempt) }
    }

    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        guard let record = await ledger.record(query.attempt) else {
            throw CheckoutError(.attemptNotFound, field: "attempt", message: "no such attempt at the gateway", gateway: gateway)
        }
        if await ledger.inquiryShouldFail(query.attempt) {
            throw TransportError(.timedOut, "inquiry timed out").checkoutError(gateway: gateway)
        }
        if record.behavior == .delayedCharge, record.status == .pending {
            throw CheckoutError(.attemptNotFound, field: "attempt", message: "no such attempt at the gateway (yet)", gateway: gateway)
        }
        return report(for: query.attempt, record)
    }

    // MARK: Internals

    /// The code of an attempt the fake holds ``FakeBehavior/pending``: waiting for the customer (PayFort's `20064`).
    public static let waitingForCustomerCode = "fake_waiting_for_customer"

    private func report(for attempt: AttemptReference, _ record: FakeGatewayLedger.Record) -> StatusReport {
        let waiting = record.status == .pending && record.behavior == .pending ? Self.waitingForCustomerCode : nil
        return StatusReport(gateway: gateway, attempt: attempt, gatewayReference: "fake_\(attempt.rawValue)", status: record.status,
                     amount: record.amount, gatewayStatus: record.status.rawValue, gatewayCode: record.code ?? waiting,
                     eventID: "\(attempt.rawValue):\(record.status.rawValue)")
    }

    /// The signed notification for `report` (and the operation it is about, if any), as the fake would send it.
    public func signedNotification(for report: StatusReport, operation: OperationReport? = nil) -> IncomingNotification {
        let body = NotificationBody(attempt: report.attempt.rawValue, status: report.status.rawValue,
                                    amount: report.amount,
                                    code: report.gatewayCode, eventId: report.eventID, operation: operation?.reference?.rawValue,
                                    operationKind: operation?.kind, operationStatus: operation?.status, operationAmount: operation?.amount)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(body)) ?? Data()
        let mac = HMAC<SHA256>.authenticationCode(for: data, using: secret)
        return IncomingNotification(headers: ["content-type": "application/json", "x-fake-signature": Hex.encode(mac)],
                                    body: data)
    }

    func notify(_ report: StatusReport, operation: OperationReport? = nil, timing: FakeNotificationTiming) async {
        let notification = signedNotification(for: report, operation: operation)
        if timing == .deferred {
            await ledger.post(notification)
            return
        }
        guard let deliver else { return }
        switch timing {
        case .immediate:
            await deliver(notification)
        case .late(let delay):
            Task {
                try? await Task.sleep(for: delay)
                await deliver(notification)
            }
        case .duplicate(let count):
            for _ in 0..<max(1, count) { await deliver(notification) }
        case .never, .deferred:
            break
        }
    }
}

extension FakeGateway {
    /// The `fake` module: a ``FakeGateway`` whose notifications are signed with the
    /// `notification_secret` credential (HMAC-SHA256). Settings: `flow` (`card` | `submit` | `sdk`).
    public static let plugin = GatewayPlugin(
        module: "fake",
        capabilities: FakeGateway().capabilities,
        makeServerHalf: { context in
            try FakeGateway(id: context.id, secret: context.settings.secret("notification_secret"), flow: flow(context.settings))
        },
        makeAppHalf: { context in FakeGateway(id: context.id, flow: try flow(context.settings)) })

    private static func flow(_ settings: ModuleSettings) throws(CheckoutError) -> FakeFlow {
        FakeFlow(rawValue: try settings.choice("flow", ["card", "submit", "sdk"], default: "card") ?? "card") ?? .card
    }
}
