import Foundation
import Till
import TillOrchestration
import TillService

/// The merchant server in-process, over one gateway, for tests and demos: production's ``PaymentService`` over an
/// ``InMemoryPaymentStore``, reached the way the app reaches it (``InProcessMerchantBackend``). No rule of the server
/// is written here: notifications are verified, deduplicated and applied, submits run once, inquiries are made and
/// refusals are read exactly as `till server` does.
public final class InMemoryMerchantBackend: MerchantBackend {
    /// What happened to each notification offered with ``receive(_:)``.
    public enum Receipt: Sendable, Equatable {
        case applied(PaymentStatus)
        case duplicate
        /// Verified, but the attempt policy did not apply it (it would have moved the status backwards, or it
        /// waits for the server's own inquiry): stored, not applied.
        case stale(String)
        case rejected(CheckoutError)
    }

    /// The server's service, over ``store``.
    public let service: PaymentService
    /// Where the payments live.
    public let store: InMemoryPaymentStore
    /// The merchant the app's payments belong to.
    public let merchant: MerchantRuntime
    private let backend: InProcessMerchantBackend
    private let gatewayID: GatewayID
    private let log: Locked<[Receipt]>

    /// - Parameters:
    ///   - gateway: the gateway's server half (a test double's, or a module's built with sandbox credentials).
    ///   - returnURLSchemes: the merchant's own return URL schemes (``MerchantConfiguration/returnURLSchemes``).
    ///   - retry: the merchant's attempt settings.
    public init(gateway: any GatewayServerHalf, returnURLSchemes: [String] = ["shop"], retry: RetryPolicy = RetryPolicy()) throws {
        let apiKeyVariable = "TILL_IN_MEMORY_API_KEY"
        let merchant = MerchantConfiguration(id: "merchant", apiKey: CredentialReference(env: apiKeyVariable),
                                             gateways: [GatewayConfiguration(id: gateway.gateway, module: "in-memory")],
                                             routing: RoutingConfiguration(fallback: [gateway.gateway]), retry: retry,
                                             returnURLSchemes: returnURLSchemes)
        let plugin = GatewayPlugin(module: "in-memory", capabilities: gateway.capabilities,
                                   makeServerHalf: { _ in gateway },
                                   makeAppHalf: { _ in throw CheckoutError(.unsupportedAction, message: "an in-memory server has no app half") })
        let configuration = TillConfiguration(merchants: [merchant],
                                              server: ServerSettings(listen: "127.0.0.1:0", storage: "sqlite:in-memory",
                                                                     publicURL: "https://merchant.invalid"))
        let state = try ServerState(configuration: configuration, plugins: [plugin],
                                    environment: [apiKeyVariable: "in-memory-api-key-not-a-secret"])
        let log = Locked<[Receipt]>([])
        let store = InMemoryPaymentStore()
        self.store = store
        self.log = log
        self.gatewayID = gateway.gateway
        // Each notification's outcome, as the store applied it: the receipts.
        service = PaymentService(state: state, store: ObservedPaymentStore(store) { event in
            guard case .ingested(let outcome) = event else { return }
            log.withLock { $0.append(Self.receipt(outcome)) }
        }, inquiriesInline: true)
        self.merchant = state.merchants[0]
        backend = InProcessMerchantBackend(service: service, merchant: state.merchants[0])
    }

    /// Every notification receipt, in order.
    public var receipts: [Receipt] { log.withLock { $0 } }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation {
        try await backend.prepare(intent, returnURLs: returnURLs)
    }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation {
        try await backend.prepare(intent, returnURLs: returnURLs, customerRequested: customerRequested)
    }

    public func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        try await backend.submit(submission, for: attempt)
    }

    public func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws {
        try await backend.report(outcome, for: attempt)
    }

    public func status(of attempt: AttemptReference) async throws -> StatusReport? {
        try await backend.status(of: attempt)
    }

    /// The server inquires the attempt's gateway now and answers with the status afterwards.
    @discardableResult
    public func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        try await backend.inquire(attempt)
    }

    /// Offers a notification to the server's notification endpoint; returns the acknowledgement it sends, or `nil`
    /// when it refuses the notification (so the gateway retries).
    @discardableResult
    public func receive(_ notification: IncomingNotification) async -> NotificationAcknowledgement? {
        do {
            return try await service.receiveNotification(gateway: gatewayID, headers: notification.headers, body: notification.body)
        } catch let error as ServiceError {
            // The notification endpoint answers a failed verification 401 and anything else it refuses 400
            // (docs/server.md): the receipt keeps that meaning, and the gateway module's code and field.
            let category: CheckoutError.Category = error.status.code == 401 ? .verification : .invalidInput
            log.withLock {
                $0.append(.rejected(CheckoutError(CheckoutError.Code(rawValue: error.code), category: category, field: error.field,
                                                  message: error.message, gateway: gatewayID)))
            }
        } catch {
            log.withLock { $0.append(.rejected(CheckoutError(.malformedBody, message: "unverifiable notification"))) }
        }
        return nil
    }

    private static func receipt(_ outcome: ApplyOutcome) -> Receipt {
        switch outcome {
        case .applied(let attempt, _): .applied(attempt)
        case .duplicate: .duplicate
        case .stale(let reason), .needsInquiry(let reason): .stale(reason)
        case .unknownAttempt: .stale("unknown attempt")
        case .quarantined: .stale("quarantined")
        case .operation(let settled): .stale("about operation: \(settled.storedName)")
        }
    }
}
