import Foundation

/// The app's view of the merchant server: the only party that holds secrets and knows the
/// authoritative status. The real implementation speaks to TillServer over HTTP; TillTesting ships
/// an in-memory one.
public protocol MerchantBackend: Sendable {
    /// Picks a gateway and runs its **Prepare** for `intent`, registering `returnURL` as the
    /// attempt's return URL.
    func prepare(_ intent: PaymentIntent, returnURL: URL?) async throws -> Preparation
    /// Tells the server what the app saw. Informational only: it never marks a payment paid.
    func report(_ outcome: ClientOutcome, for attempt: AttemptReference) async throws
    /// The authoritative status of an attempt, from verified notifications and inquiries.
    func status(of attempt: AttemptReference) async throws -> StatusReport?
    /// Asks the server to inquire the gateway about an attempt now (the customer just came back,
    /// perhaps before the gateway's notification) and returns the resulting status. The server does
    /// the inquiry with its own credentials; the app never learns more than the status.
    func inquire(_ attempt: AttemptReference) async throws -> StatusReport?
}

extension MerchantBackend {
    /// By default, the status as the server knows it (no inquiry).
    public func inquire(_ attempt: AttemptReference) async throws -> StatusReport? {
        try await status(of: attempt)
    }
}

/// The app's UI side of a checkout: what Till asks the app to do during **Present**.
public protocol CheckoutPresenter: Sendable {
    /// Open a URL: a wallet app, H5 page, browser or 3-D Secure page (`UIApplication.open`,
    /// `ASWebAuthenticationSession`, a web view).
    func open(_ url: URL, handoff: Handoff) async throws
    /// Hand parameters to a wallet SDK the app embeds.
    func launch(_ wallet: WalletLaunch) async throws
    /// Show a form and return what the customer entered, or `nil` when they cancelled.
    func collect(_ form: FormSpec) async throws -> FormValues?
}

/// How a checkout ended, as far as the app can know.
public struct CheckoutResult: Sendable, Hashable {
    public var preparation: Preparation
    /// What the app saw during Present/Return. Informational.
    public var clientOutcome: ClientOutcome
    /// The authoritative report, if the server had one before the confirmation wait ended.
    public var confirmed: StatusReport?
    /// True if the customer was handed to a wallet, 3-D Secure or a redirect during this attempt.
    public var customerMayHaveAuthenticated: Bool
    /// How many attempts this checkout made (more than one when the server moved to another gateway).
    public var attempts: Int = 1

    /// The status to act on: the confirmed one, or `pending` while nothing authoritative is known.
    /// Never derived from the client outcome.
    public var status: PaymentStatus { confirmed?.status ?? .pending }
}

/// The single checkout API an app embeds: prepare on the merchant server, present with the
/// gateway's client half, wait for the return, then confirm with the server.
///
/// ```swift
/// let checkout = AppCheckout(backend: myServer, gateways: [citcon, payfort], returns: returns, presenter: ui)
/// let result = try await checkout.pay(intent)
/// if result.status == .paid { showReceipt() }
/// ```
public struct AppCheckout: Sendable {
    public let backend: any MerchantBackend
    public let returns: ReturnURLHandler
    public let presenter: any CheckoutPresenter
    /// How long to wait for the customer to come back from a wallet or page.
    public var returnTimeout: Duration
    /// How long to poll the server for the authoritative status, and how often.
    public var confirmationTimeout: Duration
    public var confirmationInterval: Duration
    /// Attempts per checkout. After a confirmed failure that the customer never authenticated for,
    /// the app asks the server for another attempt; the server's router and the gateway's decision
    /// table decide whether one is allowed (a 409 ends it). 1 disables this.
    public var maxAttempts: Int
    /// What each method needs; decides which return route an attempt uses (WeChat Pay returns
    /// through a universal link, Alipay through a custom scheme).
    public var methods: PaymentMethodRegistry
    private let gateways: [GatewayID: any Checkout]

    public init(backend: any MerchantBackend, gateways: [any Checkout], returns: ReturnURLHandler,
                presenter: any CheckoutPresenter, returnTimeout: Duration = .seconds(900),
                confirmationTimeout: Duration = .seconds(30), confirmationInterval: Duration = .milliseconds(500),
                maxAttempts: Int = 1, methods: PaymentMethodRegistry? = nil) {
        self.backend = backend
        self.gateways = Dictionary(gateways.map { ($0.gateway, $0) }, uniquingKeysWith: { first, _ in first })
        self.returns = returns
        self.presenter = presenter
        self.returnTimeout = returnTimeout
        self.confirmationTimeout = confirmationTimeout
        self.confirmationInterval = confirmationInterval
        self.maxAttempts = max(1, maxAttempts)
        self.methods = methods ?? PaymentMethodRegistry(gateways: gateways)
    }

    /// The registered return route that suits `method`: a universal link or a custom scheme as the
    /// method's ``PaymentMethodInfo/returnStyle`` says, else the handler's first route.
    public func returnRoute(for method: PaymentMethod) -> ReturnRoute {
        let routes = returns.routes
        switch methods.info(for: method).returnStyle {
        case .universalLink: return routes.first(where: \.isUniversalLink) ?? routes[0]
        case .customScheme: return routes.first(where: { !$0.isUniversalLink }) ?? routes[0]
        case .inProcess: return routes[0]
        }
    }

    /// Runs one checkout: Prepare (server) → Present → Return → Confirm (server).
    ///
    /// - Throws: ``CheckoutError`` for invalid intents, unknown gateways, and failures of the
    ///   backend or presenter. A decline or a cancel is not thrown: it is the result's outcome.
    public func pay(_ intent: PaymentIntent) async throws -> CheckoutResult {
        _ = try intent.validated()
        var result = try await attempt(intent)
        while result.attempts < maxAttempts, result.status.isNegative, !result.customerMayHaveAuthenticated {
            let made = result.attempts
            do {
                result = try await attempt(intent)
                result.attempts = made + 1
            } catch let error as CheckoutError where error.category == .invalidInput {
                break   // the server allows no further attempt (not retryable, exhausted, no gateway left)
            }
        }
        return result
    }

    /// One attempt: Prepare (server) → Present → Return → Confirm (server).
    private func attempt(_ intent: PaymentIntent) async throws -> CheckoutResult {
        let expected = try returns.expectReturn(on: returnRoute(for: intent.method))
        defer { returns.cancel(expected) }
        let preparation = try await backend.prepare(intent, returnURL: expected.url)
        guard let gateway = gateways[preparation.gateway] else {
            throw CheckoutError(.misconfigured, field: "gateway",
                                message: "the server chose gateway \(preparation.gateway), which this app does not include")
        }
        let outcome: ClientOutcome
        var handedOff = false
        do {
            outcome = try await presentUntilDone(preparation, gateway: gateway, expected: expected, handedOff: &handedOff)
        } catch let error as CheckoutError where error.category == .unknownOutcome {
            // The request may have reached the gateway: the server's confirmation decides, not this error.
            // A hand-off that already happened stays counted: no automatic cascade after it.
            outcome = ClientOutcome(.unknown, gatewayCode: error.gatewayCode, message: error.message)
        }
        try? await backend.report(outcome, for: preparation.attempt)
        var early: StatusReport?
        if handedOff {
            // The customer is back from the wallet or page (or the wait ran out): the gateway knows by
            // now, maybe before its notification arrives. A failed inquiry is not an error; the polling
            // below carries on.
            early = try? await backend.inquire(preparation.attempt)
        }
        let confirmed = try await awaitConfirmation(of: preparation.attempt, initial: early)
        return CheckoutResult(preparation: preparation, clientOutcome: outcome, confirmed: confirmed,
                              customerMayHaveAuthenticated: handedOff)
    }

    private func presentUntilDone(_ preparation: Preparation, gateway: any Checkout, expected: ExpectedReturn,
                                  handedOff: inout Bool) async throws -> ClientOutcome {
        var input = PresentInput.start
        // A gateway can ask for a form, then a 3-D Secure page: bounded so a faulty module cannot loop.
        for _ in 0..<8 {
            let step = try await gateway.present(preparation, input: input)
            handedOff = handedOff || step.customerMayAuthenticate
            switch step {
            case .completed(let outcome):
                return outcome
            case .collect(let form):
                guard let values = try await presenter.collect(form) else {
                    return ClientOutcome(.cancelled, message: "the customer closed the form")
                }
                input = .submit(values)
            case .openURL(let url, let handoff):
                try await presenter.open(url, handoff: handoff)
                return await awaitReturn(preparation, gateway: gateway, expected: expected)
            case .launchWallet(var launch):
                launch.returnURL = launch.returnURL ?? expected.url
                try await presenter.launch(launch)
                return await awaitReturn(preparation, gateway: gateway, expected: expected)
            }
        }
        throw CheckoutError(.gatewayError, message: "the gateway module asked for too many steps", gateway: gateway.gateway)
    }

    private func awaitReturn(_ preparation: Preparation, gateway: any Checkout, expected: ExpectedReturn) async -> ClientOutcome {
        switch await returns.wait(for: expected, timeout: returnTimeout) {
        case .returned(let url): gateway.interpretReturn(.url(url), for: preparation)
        case .timedOut: gateway.interpretReturn(.timedOut, for: preparation)
        case .cancelled: gateway.interpretReturn(.abandoned, for: preparation)
        }
    }

    private func awaitConfirmation(of attempt: AttemptReference, initial: StatusReport? = nil) async throws -> StatusReport? {
        if let initial, initial.status.isFinal || initial.status == .authorized { return initial }
        let deadline = ContinuousClock.now + confirmationTimeout
        var last: StatusReport?
        while true {
            last = try await backend.status(of: attempt)
            if let last, last.status.isFinal || last.status == .authorized { return last }
            if ContinuousClock.now >= deadline { return last }
            try await Task.sleep(for: confirmationInterval)
        }
    }
}
