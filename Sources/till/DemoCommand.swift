import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Till
import TillOrchestration
import TillService
import TillEcommpayServer
import TillGatewayKit
import TillPayFort
import TillSandbox
import TillServer
import TillWorldline

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run checkouts end to end on loopback: app → merchant server → gateway sandbox → notification → server.",
        discussion: """
            Everything starts in this process on 127.0.0.1 with embedded defaults: the gateway sandbox \
            (two PayFort accounts, a Citcon account, a Worldline Connect account, an iPayNow app and an ecommpay project), the merchant server (SQLite in a temporary \
            folder), and an app (AppCheckout with its return handler) whose customer types test cards \
            or pays in a wallet. Nothing else is needed.
            """)

    @Flag(help: "Show the server's and the sandbox's own logs.")
    var verbose = false

    struct Row {
        let scenario: String
        let expected: PaymentStatus
        var status: PaymentStatus = .created
        var client = "-"
        var gateways = "-"
        var attempts = 0
        var charged = 0
        var ok: Bool { status == expected }
    }

    func run() async throws {
        // The tool configures its logging backend once, at start: quiet unless asked.
        let level: Logger.Level = verbose ? .info : .critical
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "till.demo")
        logger.logLevel = verbose ? .info : .critical
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // 1. The sandbox: two PayFort merchant accounts, a Citcon account, a Worldline Connect account and an iPayNow app.
        let accountsOfPayFort = (1...2).map { index in
            PayFortMerchant(accessCode: "DemoAccess\(index)", merchantIdentifier: "DemoMerchant\(index)",
                            requestPhrase: "payfort-\(index)-request-phrase", responsePhrase: "payfort-\(index)-response-phrase")
        }
        // A lost answer (the timeout fault) is held a moment, not PayFort's 30 s.
        let emulator = PayFortEmulator(merchants: accountsOfPayFort, notificationRetry: (10, .milliseconds(100)),
                                       timeoutHold: .milliseconds(300), logger: logger)
        let citcon = CitconEmulator(merchants: [.init(apiKey: "demo-citcon-api-key", apiSecret: "demo-citcon-api-secret")],
                                    ipnRetryInterval: .milliseconds(100), logger: logger)
        // Worldline posts its webhooks to the endpoint configured for the merchant: set once the server listens.
        let worldline = try WorldlineEmulator(merchants: [.init(merchantId: "demo-worldline", apiKeyId: "demo-worldline-key",
                                                                 secretApiKey: "demo-worldline-secret", webhookKeyId: "demo-webhook-key",
                                                                 webhookSecretKey: "demo-webhook-secret")],
                                              webhookRetryInterval: .milliseconds(100), logger: logger)
        // iPayNow posts its N001 notification to the notifyUrl of each order (the server's, signed into it).
        let ipaynow = IPayNowEmulator(apps: [.init(appId: "1400000000000777", appKey: "demo-ipaynow-md5-key")],
                                      notifyRetryInterval: .milliseconds(100), logger: logger)
        // ecommpay posts its callbacks to the URL configured for the project: set once the server listens.
        let ecommpay = EcommpayEmulator(projects: [.init(projectId: 4242, secretKey: "demo-ecommpay-secret")],
                                        callbackRetryInterval: .milliseconds(100), logger: logger)
        let sandbox = try await Sandbox.start(emulators: [emulator, citcon, worldline, ipaynow, ecommpay], logger: logger)

        // 2. The merchant server, configured like a real one from the sandbox's accounts: one gateway per
        //    account, secrets from its environment, each module built by its own plugin.
        var environment = ["DEMO_API_KEY": "demo-app-key-\(UUID().uuidString)", "DEMO_WEBHOOK_SECRET": "demo-webhook-secret-\(UUID().uuidString)"]
        // The merchant's own backend, receiving the server's signed events (it knows the secret they are signed with).
        let receiver = try await WebhookReceiver.start(secrets: [environment["DEMO_WEBHOOK_SECRET"]!])
        var gateways: [GatewayConfiguration] = []
        var appGateways: [any GatewayAppHalf] = []   // the app: built from non-secret settings only
        let accounts = await sandbox.accounts()
        for account in accounts {
            let sameModule = accounts.filter { $0.module == account.module }
            let id = GatewayID(rawValue: sameModule.count == 1 ? account.module
                               : "\(account.module)-\(1 + (sameModule.firstIndex(of: account) ?? 0))")
            var settings = account.settings
            // The second PayFort account takes cards through the FORT mobile SDK; the first through the
            // custom merchant page (the card posted from the device to paymentPage).
            if account.module == "payfort", sameModule.firstIndex(of: account) == 1 { settings["integration"] = "mobile_sdk" }
            // iPayNow's iOS plugin 1.0.1 opens Alipay only; the sandbox's stand-in also plays WeChat Pay (80).
            if account.module == "ipaynow" { settings["wechat_pay"] = "true" }
            var credentials: [String: CredentialReference] = [:]
            for (name, value) in account.credentials {
                let variable = "DEMO_\(id.rawValue)_\(name)".uppercased().replacingOccurrences(of: "-", with: "_")
                environment[variable] = value
                credentials[name] = CredentialReference(env: variable)
            }
            // Each account takes its own currency: SAR to PayFort, USD to Citcon, EUR to Worldline, NZD to iPayNow.
            let currency = ["payfort": "SAR", "citcon": "USD", "worldline": "EUR", "ipaynow": "NZD", "ecommpay": "GBP"][account.module]
            gateways.append(GatewayConfiguration(id: id, module: account.module, credentials: credentials, settings: settings,
                                                 limits: currency.map { CapabilityLimits(currencies: [$0]) }))
            guard let plugin = Gateways.plugin(account.module) else { throw CheckoutError(.misconfigured, message: "no \(account.module) module") }
            var client = try plugin.makeAppHalf(GatewayPluginContext(
                id: id, settings: ModuleSettings(module: account.module, settings: settings, credentials: [:]),
                transport: URLSessionTransport()))
            // The app's FORT SDK knows its device id; the app half sends it with every attempt.
            if let payFort = client as? PayFortGateway {
                client = PayFortGateway(id: payFort.gateway, environment: payFort.environment, language: payFort.language,
                                        deviceID: SandboxPayFortCustomer.defaultDeviceID)
            }
            appGateways.append(client)
            say("▶ sandbox      \(id): \(account.settings["base_url"] ?? "")" + (settings["integration"].map { " (\($0))" } ?? ""))
        }
        let payFortIDs = gateways.filter { $0.module == "payfort" }.map(\.id)
        // Citcon learns where to post its IPN from each charge, so the server's public URL is its own.
        guard let port = LoopbackPort.reserve() else { throw CheckoutError(.misconfigured, message: "no free loopback port") }
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(id: "demo-shop", apiKey: .init(env: "DEMO_API_KEY"), gateways: gateways,
                                              routing: RoutingConfiguration(fallback: gateways.map(\.id)),
                                              retry: RetryPolicy(maxAttempts: 3),
                                              // The app below returns on tilldemo:// or its https universal link.
                                              returnURLSchemes: ["tilldemo"],
                                              webhooks: [WebhookEndpoint(url: receiver.url.absoluteString, secret: .init(env: "DEMO_WEBHOOK_SECRET"))])],
            server: ServerSettings(listen: "127.0.0.1:\(port)", storage: "sqlite:\(folder.appendingPathComponent("till.sqlite").path)",
                                   publicURL: "http://127.0.0.1:\(port)"))
        let state = try ServerState(configuration: configuration, plugins: Gateways.plugins, environment: environment)
        let store = try openStore(configuration.server!.storage)
        try await store.migrate()
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store, logger: logger) { portSink.yield($0) }
        let server = Task { try await app.runService() }
        // The delivery service, as `till server` runs it beside the HTTP server.
        var eventSettings = state.settings.events
        eventSettings.pollIntervalSeconds = 0.1
        let deliverer = EventDeliverer(store: store, settings: eventSettings, endpoints: { _ in state.merchants.first?.webhooks ?? [] },
                                       merchants: state.merchants.map(\.configuration.id), logger: logger)
        let delivering = Task { try await deliverer.run() }
        var portIterator = ports.makeAsyncIterator()
        let serverURL = URL(string: "http://127.0.0.1:\(await portIterator.next() ?? 0)")!
        for (id, account) in zip(payFortIDs, accountsOfPayFort) {
            await emulator.setNotificationURL(serverURL.appendingPathComponent("v1/notifications/\(id.rawValue)"),
                                              merchantIdentifier: account.merchantIdentifier)
        }
        let worldlineID = gateways.first { $0.module == "worldline" }?.id.rawValue ?? "worldline"
        _ = await worldline.setWebhookURL(serverURL.appendingPathComponent("v1/notifications/\(worldlineID)"), for: "demo-worldline")
        let ecommpayID = gateways.first { $0.module == "ecommpay" }?.id.rawValue ?? "ecommpay"
        _ = await ecommpay.setCallbackURL(serverURL.appendingPathComponent("v1/notifications/\(ecommpayID)"), for: 4242)
        say("▶ server       \(serverURL)  (SQLite in \(folder.lastPathComponent); notifications at /v1/notifications/<gateway>)")

        // 3. The app: one return handler (a URL scheme and a universal link), one checkout; the customer
        //    types test cards or pays in a wallet.
        let returns = try ReturnURLHandler(routes: [.customScheme("tilldemo"), .universalLink(host: "demo.till.example", path: "/till/return")])
        //    The merchant's own backend creates each payment with the API key; the app holds only that
        //    payment's client secret.
        let merchantBackend = MerchantAPIClient(baseURL: serverURL, apiKey: environment["DEMO_API_KEY"]!, transport: URLSessionTransport())
        let backend = ClientSecretBackend(merchant: merchantBackend, transport: URLSessionTransport())
        say("▶ app          holds one client secret per payment (the merchant's backend creates the payment); no API key")
        let total = 26
        let sar = try Currency(code: "SAR")

        func checkout(_ title: String, index: Int, card: String, amount: String, action: PaymentAction = .sale,
                      expect: PaymentStatus, tapsPayAgain: Bool = false, before: (() async -> Void)? = nil,
                      after: ((CheckoutResult, PaymentView) async throws -> PaymentStatus)? = nil) async throws -> Row {
            say("\n[\(index)/\(total)] \(title)")
            await before?()
            // The customer's device: posts the merchant page's form, plays the FORT SDK, approves 3-D Secure.
            let customer = SandboxPayFortCustomer(payFortBaseURL: sandbox.payFortBaseURL, returns: returns,
                                                  card: PayFortDevice.Card(number: card)) { say("  \($0)") }
            let checkout = AppCheckout(backend: backend, gateways: appGateways, returns: returns, presenter: customer,
                                       returnTimeout: .seconds(10), confirmationTimeout: .seconds(10),
                                       confirmationInterval: .milliseconds(50), maxAttempts: 3)
            let intent = PaymentIntent(merchantReference: "demo-\(index)-\(UUID().uuidString.prefix(6).lowercased())",
                                       amount: try Money(decimal: amount, currency: sar), country: try CountryCode("SA"), method: .card,
                                       action: action, customer: Customer(email: "customer@example.com"), description: "Demo order \(index)")
            say("  app     pays \(intent.amount) (\(action == .sale ? "PURCHASE" : "AUTHORIZATION")) with card \(Redactor.maskPAN(card))")
            var result = try await checkout.pay(intent)
            if tapsPayAgain, result.status == .failed {
                // After a hand-off the server never moves on by itself: the customer asks to try again.
                say("  app     saw \(result.clientOutcome.kind.rawValue) (\(result.confirmed?.gatewayCode ?? "-")); the customer taps pay again")
                result = try await checkout.retry(intent)
            }
            let payment = try await backend.status(of: result.preparation.attempt)
            var view: PaymentView?
            view = try? await backend.payment(of: result.preparation.attempt)
            let tried = view?.attempts.map { "\($0.gateway)(\($0.gatewayCode ?? $0.status.rawValue))" } ?? [result.preparation.gateway.rawValue]
            say("  server  attempts: \(tried.joined(separator: " → "))")
            say("  app     saw \(result.clientOutcome.kind.rawValue); the server says \(result.status)"
                + (payment?.gatewayCode.map { " (PayFort \($0))" } ?? ""))
            let charged = await emulator.ledger.filter { charge in view?.attempts.contains { $0.reference.rawValue == charge.merchantReference } ?? false }.count
            var status = result.status
            if let after {
                // The merchant's back office, after the checkout: through the server's API with the merchant key.
                status = try await after(result, try await merchantBackend.payment(id: view?.id ?? ""))
            }
            return Row(scenario: title, expected: expect, status: status, client: result.clientOutcome.kind.rawValue,
                       gateways: view?.attempts.map(\.gateway.rawValue).joined(separator: "→") ?? result.preparation.gateway.rawValue,
                       attempts: view?.attempts.count ?? result.attempts, charged: charged)
        }

        func walletCheckout(_ title: String, index: Int, method: PaymentMethod, amount: String, choice: SandboxCitconCustomer.Choice = .complete,
                            comesBack: Bool = true, actsAfter: Duration? = nil, expect: PaymentStatus, before: (() async -> Void)? = nil,
                            after: ((CheckoutResult) async throws -> Void)? = nil) async throws -> Row {
            say("\n[\(index)/\(total)] \(title)")
            await before?()
            let customer = SandboxCitconCustomer(sandbox: sandbox.baseURL, method: method, returns: returns, choice: choice,
                                                 comesBack: comesBack, actsAfter: actsAfter) { say("  \($0)") }
            let checkout = AppCheckout(backend: backend, gateways: appGateways, returns: returns, presenter: customer,
                                       returnTimeout: comesBack ? .seconds(10) : .seconds(1), confirmationTimeout: .seconds(10),
                                       confirmationInterval: .milliseconds(50))
            let intent = PaymentIntent(merchantReference: "demo-\(index)-\(UUID().uuidString.prefix(6).lowercased())",
                                       amount: try Money(decimal: amount, currency: try Currency(code: "USD")), country: try CountryCode("US"),
                                       method: method, customer: Customer(email: "customer@example.com"), description: "Demo order \(index)")
            say("  app     pays \(intent.amount) with \(method); offers every return route, the gateway picks one")
            let result = try await checkout.pay(intent)
            say("  server  citcon charge \(result.preparation.gatewayReference ?? "-"), back through \(result.preparation.returnURL.map { "\($0.scheme ?? "")://\($0.host ?? "")\($0.path)" } ?? "-"); the app saw \(result.clientOutcome.kind.rawValue)"
                + (result.clientOutcome.gatewayCode.map { " (code \($0))" } ?? "") + "; the server says \(result.status)")
            try await after?(result)
            let charged = await citcon.ledger.filter { $0.reference == result.preparation.attempt.rawValue && $0.operation == .charge }.count
            return Row(scenario: title, expected: expect, status: result.status, client: result.clientOutcome.kind.rawValue,
                       gateways: result.preparation.gateway.rawValue, attempts: result.attempts, charged: charged)
        }

        func storedNotifications(_ attempt: AttemptReference) async throws -> Int { try await store.notificationCount(attempt: attempt) }

        var rows: [Row] = []
        rows.append(try await checkout("PayFort card purchase", index: 1, card: "4005550000000001", amount: "120.00", expect: .paid))
        rows.append(try await checkout("PayFort authorization", index: 2, card: "5123450000000008", amount: "75.50", action: .authorize,
                                       expect: .authorized))
        rows.append(try await checkout("3-D Secure purchase through the return URL", index: 3, card: "4000000000003220", amount: "310.00",
                                       expect: .paid))
        rows.append(try await checkout("Technical problem: pay again, the next gateway (FORT SDK)", index: 4,
                                       card: "4005550000000001", amount: "42.00", expect: .paid, tapsPayAgain: true) {
            await emulator.injectFault(.technicalProblem, matching: "PURCHASE")
            say("  sandbox the first PayFort account will answer the next purchase with 13006 (technical problem)")
        })
        rows.append(try await checkout("Hard decline does not cascade", index: 5, card: "4000000000000002", amount: "99.00", expect: .failed))

        rows.append(try await walletCheckout("WeChat Pay, back through the universal link", index: 6, method: .wechatPay, amount: "18.80",
                                             expect: .paid))
        rows.append(try await walletCheckout("Alipay, back through the URL scheme", index: 7, method: .alipay, amount: "26.00", expect: .paid))
        rows.append(try await walletCheckout("Alipay, the customer cancels (6001)", index: 8, method: .alipay, amount: "12.00", choice: .cancel,
                                             expect: .cancelled))
        rows.append(try await walletCheckout("UnionPay: the return URL arrives before the IPN", index: 9, method: .unionPay, amount: "64.00",
                                             expect: .paid, before: {
            await citcon.holdIPNs()
            say("  sandbox Citcon holds its IPNs: the return comes first, the server inquires")
        }, after: { result in
            say("  server  notifications stored so far: \(try await storedNotifications(result.preparation.attempt))")
            await citcon.releaseIPNs()
            await citcon.waitForNotifications()
            let acknowledged = await citcon.notifications.last?.status.map(String.init) ?? "none"
            say("  sandbox the IPN arrives late (HTTP \(acknowledged)); stored: \(try await storedNotifications(result.preparation.attempt)); "
                + "status stays \(try await backend.status(of: result.preparation.attempt)?.status.rawValue ?? "?")")
        }))
        rows.append(try await walletCheckout("WeChat Pay: no return at all, the IPN alone settles it", index: 10, method: .wechatPay,
                                             amount: "33.00", comesBack: false, actsAfter: .milliseconds(1_500), expect: .paid))

        func worldlineCheckout(_ title: String, index: Int, card: String, expect: PaymentStatus) async throws -> Row {
            say("\n[\(index)/\(total)] \(title)")
            let customer = SandboxWorldlineCustomer(cardNumber: card, returns: returns) { say("  \($0)") }
            // The app's own card form, bound to Worldline's headless form model: the customer types the
            // number digit by digit (the mask and the cursor after each edit), the IIN switches the product.
            let typing: WorldlineGateway.FormPresenter = { form in
                let shown = await form.productId
                say("  app     form for product \(shown.map(String.init) ?? "-"): \(await form.fields.map { "\($0.id)\($0.mask.map { " \($0)" } ?? "")" }.joined(separator: ", "))")
                var cursor = 0
                var typed = ""
                for digit in card {
                    typed.append(digit)
                    let edit = await form.edit("cardNumber", replacing: cursor..<cursor, with: String(digit))
                    cursor = edit.cursor
                    if typed.count % 4 == 0 || typed.count == 6 {
                        // Digits after the sixth are shown as •, as a card field shows them.
                        var digits = 0
                        let shown = String(edit.value.map { character -> Character in
                            guard character.isNumber else { return character }
                            digits += 1
                            return digits > 6 ? "•" : character
                        })
                        say("  app     typed \(typed.count) digits → \"\(shown)\" cursor \(cursor)")
                    }
                }
                await form.settle()
                say("  app     IIN lookup: product \(shown.map(String.init) ?? "-") → \(await form.productId.map(String.init) ?? "-")"
                    + ((await form.coBrandChoices).isEmpty ? "" : ", co-brands \(await form.coBrandChoices)"))
                _ = await form.edit("expiryDate", replacing: 0..<0, with: "1230")
                _ = await form.edit("cvv", replacing: 0..<0, with: "123")
                say("  app     errors: \(await form.errors().map { "\($0.fieldId): \($0.messageId)" })")
                return true
            }
            let gateways: [any GatewayAppHalf] = appGateways.map { gateway in
                gateway.gateway.rawValue == worldlineID
                    ? WorldlineGateway(id: gateway.gateway, transport: URLSessionTransport(), formPresenter: typing) : gateway
            }
            let checkout = AppCheckout(backend: backend, gateways: gateways, returns: returns, presenter: customer,
                                       returnTimeout: .seconds(10), confirmationTimeout: .seconds(10), confirmationInterval: .milliseconds(50))
            let intent = PaymentIntent(merchantReference: "demo-\(index)-\(UUID().uuidString.prefix(6).lowercased())",
                                       amount: try Money(decimal: "49.90", currency: try Currency(code: "EUR")), country: try CountryCode("NL"),
                                       method: .card, customer: Customer(email: "customer@example.com", locale: "en_GB"),
                                       description: "Demo order \(index)")
            say("  app     pays \(intent.amount) with card \(Redactor.maskPAN(card)): products and fields from the Client API, "
                + "the IIN picks the product, the input is encrypted (JWE) for Worldline")
            let result = try await checkout.pay(intent)
            await worldline.waitForWebhooks()
            let payment = await worldline.ledger.first { $0.merchantReference == result.preparation.attempt.rawValue }
            say("  server  created Worldline payment \(payment?.paymentId ?? "-") from the encrypted input; "
                + "webhooks stored: \(try await storedNotifications(result.preparation.attempt)); the app saw \(result.clientOutcome.kind.rawValue); "
                + "the server says \(result.status)")
            let charged = await worldline.ledger.filter { $0.merchantReference == result.preparation.attempt.rawValue }.isEmpty ? 0 : 1
            return Row(scenario: title, expected: expect, status: result.status, client: result.clientOutcome.kind.rawValue,
                       gateways: result.preparation.gateway.rawValue, attempts: result.attempts, charged: charged)
        }
        rows.append(try await worldlineCheckout("Worldline: form → IIN switch → JWE → pay → webhook", index: 11,
                                                card: "4111111111111111", expect: .paid))
        rows.append(try await worldlineCheckout("Worldline: 3-D Secure through the return URL", index: 12,
                                                card: "4000000000003220", expect: .paid))

        func ipaynowCheckout(_ title: String, index: Int, method: PaymentMethod, amount: String,
                             choice: SandboxIPayNowCustomer.Choice = .complete, comesBack: SandboxIPayNowCustomer.Return = .atOnce,
                             expect: PaymentStatus) async throws -> Row {
            say("\n[\(index)/\(total)] \(title)")
            let customer = SandboxIPayNowCustomer(baseURL: sandbox.baseURL(of: ipaynow), returns: returns, choice: choice,
                                                  comesBack: comesBack) { say("  \($0)") }
            let checkout = AppCheckout(backend: backend, gateways: appGateways, returns: returns, presenter: customer,
                                       returnTimeout: .seconds(10), confirmationTimeout: .seconds(3), confirmationInterval: .milliseconds(50))
            let intent = PaymentIntent(merchantReference: "demo-\(index)-\(UUID().uuidString.prefix(6).lowercased())",
                                       amount: try Money(decimal: amount, currency: try Currency(code: "NZD")), method: method,
                                       customer: Customer(email: "customer@example.com"), description: "Demo order \(index)")
            say("  app     pays \(intent.amount) with \(method); the server signs the order, the app hands payData to iPayNow's plugin")
            let result = try await checkout.pay(intent)
            await ipaynow.waitForNotifications()
            let delivered = await ipaynow.notifications.filter { $0.mhtOrderNo == result.preparation.attempt.rawValue }
            say("  server  order \(result.preparation.attempt) signed; back on \(result.preparation.returnURL?.scheme ?? "-")://; "
                + "the delegate said \(result.clientOutcome.kind.rawValue)" + (result.clientOutcome.gatewayCode.map { " (\($0))" } ?? "")
                + "; N001 deliveries \(delivered.count) (acknowledged \(delivered.filter(\.acknowledged).count)); the server says \(result.status)")
            let charged = await ipaynow.ledger.filter { $0.mhtOrderNo == result.preparation.attempt.rawValue }.count
            return Row(scenario: title, expected: expect, status: result.status, client: result.clientOutcome.kind.rawValue,
                       gateways: result.preparation.gateway.rawValue, attempts: result.attempts, charged: charged)
        }
        rows.append(try await ipaynowCheckout("iPayNow: Alipay through the plugin, back on the URL scheme", index: 13, method: .alipay,
                                              amount: "23.50", expect: .paid))
        // The customer cancels in WeChat Pay: the order stays unprocessed (A00I) at iPayNow until its timeout.
        rows.append(try await ipaynowCheckout("iPayNow: WeChat Pay, the customer cancels", index: 14, method: .wechatPay,
                                              amount: "9.90", choice: .cancel, expect: .pending))
        rows.append(try await ipaynowCheckout("iPayNow: the N001 arrives before the customer is back", index: 15, method: .alipay,
                                              amount: "41.00", comesBack: .afterNotification, expect: .paid))

        func ecommpayCheckout(_ title: String, index: Int, method: PaymentMethod, amount: String, action: PaymentAction = .sale,
                              choice: SandboxEcommpayCustomer.Choice = .complete, expect: PaymentStatus,
                              after: ((CheckoutResult) async throws -> PaymentStatus)? = nil) async throws -> Row {
            say("\n[\(index)/\(total)] \(title)")
            let customer = SandboxEcommpayCustomer(baseURL: sandbox.baseURL(of: ecommpay), returns: returns, choice: choice) { say("  \($0)") }
            let checkout = AppCheckout(backend: backend, gateways: appGateways, returns: returns, presenter: customer,
                                       returnTimeout: .seconds(10), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(50))
            let intent = PaymentIntent(merchantReference: "demo-\(index)-\(UUID().uuidString.prefix(6).lowercased())",
                                       amount: try Money(decimal: amount, currency: try Currency(code: "GBP")), method: method, action: action,
                                       customer: Customer(email: "customer@example.com"), description: "Demo order \(index)")
            let signing = method == .card || method == .applePay
                ? "the server builds the payment options, then signs the SDK's own string" : "the server signs a Payment Page URL"
            say("  app     pays \(intent.amount) (\(action.rawValue)) with \(method); \(signing)")
            let result = try await checkout.pay(intent)
            await ecommpay.waitForCallbacks()
            var status = try await backend.status(of: result.preparation.attempt)?.status ?? result.status
            if let after { status = try await after(result) }
            let callbacks = await ecommpay.callbacks.filter { $0.paymentId == result.preparation.attempt.rawValue }
            say("  server  ecommpay callbacks: \(callbacks.count); the app saw \(result.clientOutcome.kind.rawValue)"
                + (result.clientOutcome.gatewayCode.map { " (\($0))" } ?? "") + "; the server says \(status)")
            let charged = await ecommpay.ledger.filter { $0.paymentId == result.preparation.attempt.rawValue }.count
            return Row(scenario: title, expected: expect, status: status, client: result.clientOutcome.kind.rawValue,
                       gateways: result.preparation.gateway.rawValue, attempts: result.attempts, charged: charged)
        }
        rows.append(try await ecommpayCheckout("ecommpay: card Sale through the SDK", index: 16, method: .card, amount: "19.99", expect: .paid))
        rows.append(try await ecommpayCheckout("ecommpay: Auth, then capture through the API", index: 17, method: .card, amount: "42.00",
                                               action: .authorize, expect: .paid) { result in
            let payment = try await merchantBackend.payment(attempt: result.preparation.attempt)
            say("  server  authorized; the merchant captures it: POST /v1/payments/\(payment.id)/captures (Gate /v2/payment/card/capture)")
            let capture = try await merchantBackend.operate(.capture, paymentID: payment.id, idempotencyKey: "demo-capture-\(payment.id)")
            say("  server  capture \(capture.id): \(capture.status.rawValue) (ecommpay answers by callback)")
            await ecommpay.waitForCallbacks()
            let settled = try await merchantBackend.operation(id: capture.id)
            say("  server  capture \(settled.id): \(settled.status.rawValue) by ecommpay's callback")
            return try await backend.status(of: result.preparation.attempt)?.status ?? .pending
        })
        rows.append(try await ecommpayCheckout("ecommpay: Verify (a zero amount)", index: 18, method: .card, amount: "0.00", action: .verify,
                                               expect: .paid))
        rows.append(try await ecommpayCheckout("ecommpay: PayPal on the Payment Page", index: 19, method: .paypal, amount: "12.50", expect: .paid))
        rows.append(try await ecommpayCheckout("ecommpay: a decline cascaded inside ecommpay, one attempt", index: 20, method: .card,
                                               amount: "30.00", choice: .cascade, expect: .paid))

        func money(_ view: PaymentView) -> String {
            "captured \(view.amountCaptured.map { "\($0)" } ?? "-"), refunded \(view.amountRefunded.map { "\($0)" } ?? "-")"
        }
        func operate(_ kind: OperationKind, _ payment: PaymentView, _ amount: String? = nil, final: Bool? = nil) async throws -> OperationView {
            let command = OperationCommand(amount: try amount.map { try Money(decimal: $0, currency: sar) }, final: final)
            let operation = try await merchantBackend.operate(kind, paymentID: payment.id, command: command,
                                                              idempotencyKey: "demo-\(kind.rawValue)-\(UUID().uuidString)")
            say("  server  \(kind.rawValue) \(operation.amount) → \(operation.id) \(operation.status.rawValue)")
            return operation
        }
        rows.append(try await checkout("PayFort: an authorization captured in two parts", index: 21, card: "4005550000000001",
                                       amount: "80.00", action: .authorize, expect: .paid, after: { _, payment in
            _ = try await operate(.capture, payment, "30.00")
            _ = try await operate(.capture, payment, final: true)
            let view = try await merchantBackend.payment(id: payment.id)
            say("  server  \(money(view)); the payment is \(view.status)")
            return view.amountCaptured == payment.amount ? view.status : .failed
        }))
        let refundedPayment = Locked<String?>(nil)
        rows.append(try await checkout("PayFort: a partial refund, then the rest", index: 22, card: "4005550000000001", amount: "60.00",
                                       expect: .refunded, after: { _, payment in
            refundedPayment.withLock { $0 = payment.id }
            _ = try await operate(.refund, payment, "20.00")
            say("  server  the payment is \(try await merchantBackend.payment(id: payment.id).status)")
            _ = try await operate(.refund, payment)
            let view = try await merchantBackend.payment(id: payment.id)
            say("  server  \(money(view)); the payment is \(view.status)")
            return view.status
        }))
        rows.append(try await checkout("PayFort: an authorization voided", index: 23, card: "4005550000000001", amount: "45.00",
                                       action: .authorize, expect: .cancelled, after: { _, payment in
            _ = try await operate(.void, payment)
            return try await merchantBackend.payment(id: payment.id).status
        }))
        rows.append(try await checkout("PayFort: a refund's answer is lost; the reconciler settles it", index: 24, card: "4005550000000001",
                                       amount: "50.00", expect: .refunded, after: { _, payment in
            await emulator.injectFault(.timeout, matching: "REFUND")
            // Its feedback is lost too (sent where nobody listens), so only the reconciler can learn what happened.
            for account in accountsOfPayFort {
                await emulator.setNotificationURL(URL(string: "http://127.0.0.1:9/nobody")!, merchantIdentifier: account.merchantIdentifier)
            }
            defer {
                Task {
                    for (id, account) in zip(payFortIDs, accountsOfPayFort) {
                        await emulator.setNotificationURL(serverURL.appendingPathComponent("v1/notifications/\(id.rawValue)"),
                                                          merchantIdentifier: account.merchantIdentifier)
                    }
                }
            }
            say("  sandbox PayFort will refund the next REFUND, then answer nothing (a 504 after the wait); its feedback is lost too")
            do {
                _ = try await operate(.refund, payment)
            } catch let error as CheckoutError {
                say("  server  \(error.code.rawValue): \(error.message)")
            }
            let reference = OperationReference(attempt: payment.attempts.last!.reference, kind: .refund, sequence: 1).rawValue
            let lost = try await merchantBackend.operation(id: reference).status
            say("  server  \(reference) is \(lost.rawValue); it is never sent again"
                + (lost == .succeeded ? " (PayFort's refund feedback and the server's CHECK_STATUS settled it already)" : ""))
            let reconciler = Reconciler(state: state, store: store, settings: ReconciliationSettings(minimumAgeSeconds: 0), logger: logger)
            for entry in try await reconciler.runOnce(now: Date().addingTimeInterval(120)) where entry.reason.contains(reference) {
                say("  reconciler \(entry.action): \(entry.reason)")
            }
            let view = try await merchantBackend.payment(id: payment.id)
            say("  server  \(reference) is \(try await merchantBackend.operation(id: reference).status.rawValue); \(money(view)); the payment is \(view.status)")
            return view.status
        }))

        say("\n[25/\(total)] The merchant's backend receives the events of one payment, signed and in order")
        var eventsRow = Row(scenario: "The backend receives one payment's events", expected: .refunded)
        if let paymentID = refundedPayment.withLock({ $0 }) {
            let written = try await store.events(merchant: "demo-shop", query: EventQuery(paymentID: paymentID, limit: 200))
            say("  server  \(written.count) events written for \(paymentID), each in its change's transaction")
            let arrived = await receiver.wait(atMost: .seconds(30)) { deliveries in
                Set(deliveries.filter { $0.accepted && $0.event?.paymentId == paymentID }.compactMap(\.eventID)).count >= written.count
            }
            say(await receiver.transcript(payment: paymentID))
            let received = await receiver.events(payment: paymentID)
            var firstArrivals: [Int] = []
            for event in received where !firstArrivals.contains(event.sequence) { firstArrivals.append(event.sequence) }
            let verified = await receiver.deliveries().filter { $0.event?.paymentId == paymentID }.allSatisfy(\.verified)
            let inOrder = firstArrivals == Array(1...max(written.count, 1))
            say("  backend \(firstArrivals.count) of \(written.count) events, " + (verified ? "every signature verified" : "a signature did not verify")
                + (inOrder ? ", in order" : ", out of order") + "; the last says \(received.last?.data.status.rawValue ?? "-")")
            eventsRow.status = arrived && verified && inOrder ? (received.last?.data.status ?? .failed) : .failed
            eventsRow.client = "\(firstArrivals.count) events"
        }
        rows.append(eventsRow)

        say("\n[26/\(total)] A forged return URL is ignored")
        let expected = try returns.expectReturn()
        let forged = URL(string: "tilldemo://till/return?till_state=forged&status=14&response_code=14000")!
        let forgedAccepted = returns.handle(forged)
        let realAccepted = returns.handle(expected.url)
        let replayAccepted = returns.handle(expected.url)
        say("  app     handle(forged \"paid\" URL) → \(forgedAccepted); real return → \(realAccepted); replay → \(replayAccepted)")
        returns.cancel(expected)
        var forgedRow = Row(scenario: "Forged return URL is ignored", expected: .cancelled)
        forgedRow.status = !forgedAccepted && realAccepted && !replayAccepted ? .cancelled : .paid
        forgedRow.client = forgedAccepted ? "accepted!" : "ignored"
        rows.append(forgedRow)

        // 4. The summary.
        say("\n   #  scenario                                                       gateways                        attempts  charged  client     status      ")
        for (index, row) in rows.enumerated() {
            let line = String(index + 1).leftPadded(to: 4) + "  " + row.scenario.padding(toLength: 62, withPad: " ", startingAt: 0) + " "
                + row.gateways.padding(toLength: 31, withPad: " ", startingAt: 0) + " "
                + String(row.attempts).padding(toLength: 9, withPad: " ", startingAt: 0) + " "
                + String(row.charged).padding(toLength: 8, withPad: " ", startingAt: 0) + " "
                + row.client.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                + (index == rows.count - 1 ? "ignored" : row.status.rawValue).padding(toLength: 11, withPad: " ", startingAt: 0)
                + (row.ok ? " ✓" : " ✗ expected \(row.expected)")
            say(line)
        }
        let ledger = await emulator.ledger
        say("\n  PayFort ledger: \(ledger.count) charge(s) — \(ledger.map { "\($0.command) \($0.amountMinor) \($0.currency)" }.joined(separator: ", "))")
        let citconLedger = await citcon.ledger
        let worldlineLedger = await worldline.ledger
        say("  Worldline ledger: \(worldlineLedger.count) operation(s) — \(worldlineLedger.map { "\($0.operation.rawValue) \($0.amount) \($0.currency)" }.joined(separator: ", "))")
        let ecommpayLedger = await ecommpay.ledger
        say("  ecommpay ledger: \(ecommpayLedger.count) operation(s) — \(ecommpayLedger.map { $0.operation }.joined(separator: ", "))")
        let ipaynowLedger = await ipaynow.ledger
        say("  iPayNow ledger: \(ipaynowLedger.count) charge(s) — \(ipaynowLedger.map { "\($0.mhtOrderAmt) \($0.mhtCurrencyType)" }.joined(separator: ", "))")
        say("  Citcon ledger:  \(citconLedger.count) charge(s) — \(citconLedger.map { "\($0.method) \($0.amountMinor) \($0.currency)" }.joined(separator: ", "))")
        delivering.cancel()
        _ = await delivering.result
        await receiver.stop()
        server.cancel()
        _ = await server.result
        await sandbox.stop()
        try await store.close()
        let failures = rows.filter { !$0.ok }.count
        say(failures == 0 ? "\nAll demo checkouts ended as expected." : "\n\(failures) demo checkout(s) did not end as expected.")
        if failures > 0 { throw ExitCode.failure }
    }
}

extension String {
    /// The string with spaces in front, at least `width` characters long.
    func leftPadded(to width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

/// Prints a line at once (the trace must not wait for a buffer).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
