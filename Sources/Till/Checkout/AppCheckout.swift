import Foundation

/// The app's view of the merchant server: the only party that holds secrets and knows the
/// authoritative status. The real implementation speaks to TillServer over HTTP; TillTesting ships
/// an in-memory one.
public protocol MerchantBackend: Sendable {
    /// Picks a gateway and runs its **Prepare** for `intent`. `returnURLs` holds one return URL per
    /// route the app registered (all with the attempt's state); the chosen gateway picks the one that
    /// fits, and the preparation's ``Preparation/returnURL`` names it.
    func prepare(_ intent: PaymentIntent, returnURLs: [URL]) async throws -> Preparation
    /// Prepare for an attempt the customer asked for (they chose to try again after a decline they were
    /// handed off for, or a cancel): the only way the server starts another attempt after a hand-off.
    /// By default the same as an ordinary prepare (the server then refuses what only the customer may ask).
    func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation
    /// Prepare with what only the app knows (``PrepareRequest/appData``: PayFort's FORT SDK `device_id`), sent
    /// with this attempt. By default the same as the prepare above when there is nothing to send; a backend
    /// that cannot carry it refuses, naming `appData`.
    func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool, appData: [String: String]) async throws -> Preparation
    /// **Submit**: hands what the app collected to the server, which calls the gateway with it, and
    /// returns the app's next step. Refused by default (a backend for gateways without a submit step).
    func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep
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

    public func submit(_ submission: Submission, for attempt: AttemptReference) async throws -> NextStep {
        throw CheckoutError(.unsupportedAction, field: "submission", message: "this merchant backend has no submit step")
    }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURLs)
    }

    public func prepare(_ intent: PaymentIntent, returnURLs: [URL], customerRequested: Bool,
                        appData: [String: String]) async throws -> Preparation {
        guard appData.isEmpty else {
            throw CheckoutError(.unsupportedAction, field: "appData", message: "this merchant backend cannot send what the app knows")
        }
        return try await prepare(intent, returnURLs: returnURLs, customerRequested: customerRequested)
    }

    /// Prepare with a single return URL (or none).
    public func prepare(_ intent: PaymentIntent, returnURL: URL?) async throws -> Preparation {
        try await prepare(intent, returnURLs: returnURL.map { [$0] } ?? [])
    }
}

/// The app's UI side of a checkout: what Till asks the app to do during **Present**.
public protocol CheckoutPresenter: Sendable {
    /// Open a URL: a wallet app, H5 page, browser or 3-D Secure page (`UIApplication.open`,
    /// `ASWebAuthenticationSession`, a web view).
    func open(_ url: URL, handoff: Handoff) async throws
    /// Hand parameters to a vendor SDK the app embeds (a wallet's, or a gateway's own payment SDK)
    /// and return what the SDK reported in-process (its delegate or completion handler), or `nil`
    /// when it reports only through the return URL. Till races this against the return URL: the
    /// first to arrive is used, the other is dropped. No fake return URLs are needed.
    func launch(_ wallet: WalletLaunch) async throws -> SDKResult?
    /// Build the vendor SDK's options from `wallet` without showing anything, and return what the SDK
    /// asks to have signed (ecommpay: `["params_for_signature": paymentOptions.paramsForSignature]`).
    /// Till sends it to the merchant server, which checks and signs it; the signature comes back in
    /// the ``launch(_:)`` that follows. The default throws `unsupported_action`: a presenter for such
    /// an SDK implements it.
    func prepareSDK(_ wallet: WalletLaunch) async throws -> [String: String]
    /// Show a form and return what the customer entered, or `nil` when they cancelled.
    func collect(_ form: FormSpec) async throws -> FormValues?
    /// Post a form from the device straight to the gateway, as a browser would (a web view loading
    /// ``FormPost/autoSubmittingHTML()``), and let the customer follow the gateway's pages until it
    /// sends them to the return URL, which the app hands to its ``ReturnURLHandler`` as usual.
    /// The default throws `unsupported_action`: a presenter for a gateway that posts forms implements it.
    func post(_ form: FormPost) async throws
}

extension CheckoutPresenter {
    public func prepareSDK(_ wallet: WalletLaunch) async throws -> [String: String] {
        throw CheckoutError(.unsupportedAction, message: "this app's presenter cannot prepare the \(wallet.wallet) SDK")
    }

    public func post(_ form: FormPost) async throws {
        throw CheckoutError(.unsupportedAction, message: "this app's presenter cannot post a form to the gateway")
    }
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
    /// What each method needs (the URL schemes it queries, whether it switches apps).
    public var methods: PaymentMethodRegistry
    private let gateways: [GatewayID: any GatewayAppHalf]

    public init(backend: any MerchantBackend, gateways: [any GatewayAppHalf], returns: ReturnURLHandler,
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

    /// Runs one checkout: Prepare (server) → Present → Return → Confirm (server).
    ///
    /// - Throws: ``CheckoutError`` for invalid intents, unknown gateways, and failures of the
    ///   backend or presenter. A decline or a cancel is not thrown: it is the result's outcome.
    public func pay(_ intent: PaymentIntent) async throws -> CheckoutResult {
        _ = try intent.validated()
        return try await run(intent, firstAttemptRequestedByCustomer: false)
    }

    /// The customer chose to try again after a checkout that ended declined or cancelled after they were
    /// handed off (a wallet, 3-D Secure): the server starts another attempt only on such an explicit
    /// request, and records it on the attempt. Nothing else differs from ``pay(_:)``.
    public func retry(_ intent: PaymentIntent) async throws -> CheckoutResult {
        _ = try intent.validated()
        return try await run(intent, firstAttemptRequestedByCustomer: true)
    }

    /// Whether the app asks the server for another attempt by itself after `status`: only after a definite
    /// failure the customer was never handed off for, while attempts remain. The server decides the rest
    /// (its attempt policy: the decision table, the budget, the gateways left).
    public static func mayAskAgain(after status: PaymentStatus, handedOff: Bool, attemptsMade: Int, maxAttempts: Int) -> Bool {
        attemptsMade < maxAttempts && (status == .failed || status == .expired) && !handedOff
    }

    private func run(_ intent: PaymentIntent, firstAttemptRequestedByCustomer: Bool) async throws -> CheckoutResult {
        var result = try await attempt(intent, customerRequested: firstAttemptRequestedByCustomer)
        // The one attempt policy: ask again only after a definite failure the customer was never handed
        // off for; the server decides the rest (decision table, budget, attempts left).
        while Self.mayAskAgain(after: result.status, handedOff: result.customerMayHaveAuthenticated,
                               attemptsMade: result.attempts, maxAttempts: maxAttempts) {
            let made = result.attempts
            do {
                result = try await attempt(intent, customerRequested: false)
                result.attempts = made + 1
            } catch let error as CheckoutError where error.category == .invalidInput {
                break   // the server allows no further attempt (not retryable, exhausted, no gateway left)
            }
        }
        return result
    }

    /// What the app's gateway halves know that the server's may need (``GatewayAppHalf/appData()``), merged: a key
    /// two halves send must have one value.
    private func appData() async throws -> [String: String] {
        var merged: [String: String] = [:]
        for gateway in gateways.values.sorted(by: { $0.gateway.rawValue < $1.gateway.rawValue }) {
            for (key, value) in try await gateway.appData() {
                if let held = merged[key], held != value {
                    throw CheckoutError(.misconfigured, field: "appData.\(key)", message: "two gateways of this app send different values")
                }
                merged[key] = value
            }
        }
        return merged
    }

    /// One attempt: Prepare (server) → Present → [Submit (server)] → Return → Confirm (server).
    private func attempt(_ intent: PaymentIntent, customerRequested: Bool) async throws -> CheckoutResult {
        // Every route is offered; the gateway the server picks chooses the one that fits.
        var expected = try returns.expectReturnOnAnyRoute()
        defer { returns.cancel(expected) }
        let preparation = try await backend.prepare(intent, returnURLs: expected.urls, customerRequested: customerRequested,
                                                    appData: try await appData())
        if let chosen = preparation.returnURL { expected = try returns.restrict(expected, to: chosen) }
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
        // The server keeps the hand-off: after one, it never starts another attempt by itself.
        var reported = outcome
        reported.handedOff = handedOff ? true : nil
        try? await backend.report(reported, for: preparation.attempt)
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

    private func presentUntilDone(_ preparation: Preparation, gateway: any GatewayAppHalf, expected: ExpectedReturn,
                                  handedOff: inout Bool) async throws -> ClientOutcome {
        var input = PresentInput.start
        // A step the server answered a submit with; it comes before asking the gateway again.
        var fromServer: NextStep?
        // A gateway can ask for a form, a submit, then a 3-D Secure page: bounded so a faulty module cannot loop.
        for _ in 0..<8 {
            let step: NextStep
            if let answered = fromServer {
                step = answered
                fromServer = nil
            } else {
                step = try await gateway.present(preparation, input: input)
            }
            handedOff = handedOff || step.customerMayAuthenticate
            switch step {
            case .completed(let outcome):
                return outcome
            case .collect(let form):
                guard let values = try await presenter.collect(form) else {
                    return ClientOutcome(.cancelled, message: "the customer closed the form")
                }
                input = .submit(values)
            case .submit(let submission):
                do {
                    fromServer = try await backend.submit(submission, for: preparation.attempt)
                } catch let error as CheckoutError where Self.submitFailureIsOutcome(error.category) {
                    // The server recorded what is known about the money; the app shows it and asks the
                    // server for the authoritative status like any other outcome.
                    return ClientOutcome(error.category == .cancelled ? .cancelled : .failed,
                                         gatewayCode: error.gatewayCode ?? error.code.rawValue, message: error.message)
                }
            case .openURL(let url, let handoff):
                try await presenter.open(url, handoff: handoff)
                return interpret(await returns.wait(for: expected, timeout: returnTimeout), preparation, gateway: gateway)
            case .postForm(let form):
                try await presenter.post(form)
                let result = await returns.wait(for: expected, timeout: returnTimeout)
                guard case .returned(let url) = result else { return interpret(result, preparation, gateway: gateway) }
                // The gateway may send the customer back once more (after 3-D Secure) on the same URL.
                returns.expectAgain(expected)
                input = .returned(url)
            case .prepareSDK(var launch):
                launch.returnURL = launch.returnURL ?? preparation.returnURL ?? expected.url
                input = .sdkPrepared(try await presenter.prepareSDK(launch))
            case .launchWallet(var launch):
                launch.returnURL = launch.returnURL ?? preparation.returnURL ?? expected.url
                return try await launchAndAwait(launch, preparation: preparation, gateway: gateway, expected: expected)
            case .unsupported(let type):
                return ClientOutcome(.unknown, message: "a step this app does not know (\(type)); the server will confirm")
            }
        }
        throw CheckoutError(.gatewayError, message: "the gateway module asked for too many steps", gateway: gateway.gateway)
    }

    /// Submit failures that end the attempt with an outcome rather than an error: a definite decline,
    /// a cancel, or a request that never reached the gateway (the server closed the attempt).
    static func submitFailureIsOutcome(_ category: CheckoutError.Category) -> Bool {
        [.declinedHard, .declinedSoft, .cancelled, .unavailable].contains(category)
    }

    /// Launches a vendor SDK and waits for whichever comes first: its in-process result or the return
    /// URL. An SDK that reports only through the URL returns `nil`, and the wait goes on.
    private func launchAndAwait(_ launch: WalletLaunch, preparation: Preparation, gateway: any GatewayAppHalf,
                                expected: ExpectedReturn) async throws -> ClientOutcome {
        enum Arrival: Sendable {
            case sdk(SDKResult?)
            case url(ReturnResult)
            case failed(any Error)
        }
        let (presenter, returns, timeout) = (self.presenter, self.returns, returnTimeout)
        // Unstructured on purpose: once one side has answered, the other is cancelled and not awaited,
        // so an SDK that never calls its delegate cannot hold the checkout.
        let (arrivals, sink) = AsyncStream<Arrival>.makeStream()
        let sdk = Task {
            do { sink.yield(.sdk(try await presenter.launch(launch))) } catch { sink.yield(.failed(error)) }
        }
        let url = Task { sink.yield(.url(await returns.wait(for: expected, timeout: timeout))) }
        defer {
            sdk.cancel()
            url.cancel()
            sink.finish()
        }
        for await arrival in arrivals {
            switch arrival {
            case .sdk(let result?):
                returns.cancel(expected)
                return gateway.interpretReturn(.callback(code: result.code, parameters: result.parameters), for: preparation)
            case .sdk(nil):
                continue
            case .url(let result):
                return interpret(result, preparation, gateway: gateway)
            case .failed(let error):
                throw error
            }
        }
        return gateway.interpretReturn(.abandoned, for: preparation)
    }

    private func interpret(_ result: ReturnResult, _ preparation: Preparation, gateway: any GatewayAppHalf) -> ClientOutcome {
        switch result {
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
            var wait = confirmationInterval
            do {
                last = try await backend.status(of: attempt)
            } catch let error as CheckoutError where error.code == .rateLimited {
                // The server's rate limit for this payment's client secret (nothing was done): poll again, slower.
                wait = max(wait, .seconds(1))
            }
            if let last, last.status.isFinal || last.status == .authorized { return last }
            if ContinuousClock.now >= deadline { return last }
            try await Task.sleep(for: wait)
        }
    }
}
