import Foundation
import Testing
import Till
import TillOrchestration
import TillTesting

/// The steps the five gateways need beyond a card form: a submit to the merchant server (Worldline's
/// encrypt-then-CreatePayment shape), a vendor SDK's in-process result (iPayNow's delegate, ecommpay's
/// completion), and a return route chosen after the gateway.
@Suite("Submit step, SDK results and return routes, end to end against the fake gateway")
struct ModelStepsTests {
    // MARK: Submit (Prepare → form → submit → server call → result)

    @Test("submit flow, approved: the server half charges, paid, charged once, the card never leaves the app")
    func submitApproved() async throws {
        let h = try await Harness(.approve, flow: .submit)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.status == .paid)
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(await h.gateway.ledger.charges.count == 1)
        #expect(!result.customerMayHaveAuthenticated)
    }

    @Test("submit flow, declined: failed with the gateway's code from the submit's answer")
    func submitDeclined() async throws {
        let h = try await Harness(.hardDecline(code: "430285"), flow: .submit)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.status == .failed)
        #expect(result.clientOutcome.kind == .failed)
        #expect(result.confirmed?.gatewayCode == "430285")
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("submit flow, the answer is lost after charging: unknown on the client, the inquiry says paid")
    func submitLost() async throws {
        let h = try await Harness(.timeoutAfterCharging, timing: .never, flow: .submit)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.clientOutcome.kind == .unknown)
        #expect(result.status == .pending)
        #expect(try await h.backend.inquire(result.preparation.attempt)?.status == .paid)
        #expect(await h.gateway.ledger.charges.count == 1)
    }

    @Test("submit flow, never sent: a failed outcome, nothing charged")
    func submitNeverSent() async throws {
        let h = try await Harness(.timeoutBeforeSending, flow: .submit)
        let result = try await h.app.pay(Harness.intent())
        #expect(result.clientOutcome.kind == .failed)
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("an attempt is submitted once: a second submit is refused before the gateway hears of it")
    func submitOnce() async throws {
        let h = try await Harness(.approve, flow: .submit)
        let preparation = try await h.backend.prepare(Harness.intent(), returnURLs: [])
        let step = try await h.gateway.present(preparation, input: .submit(FormValues(["card_number": "4111111111111111"])))
        guard case .submit(let submission) = step else { Issue.record("expected a submit step, got \(step)"); return }
        #expect(!submission.description.contains("4111"))
        #expect(!submission.fields.values.contains { $0.contains("4111111111111111") })
        _ = try await h.backend.submit(submission, for: preparation.attempt)
        await #expect(throws: CheckoutError.self) { try await h.backend.submit(submission, for: preparation.attempt) }
        #expect(await h.gateway.ledger.charges.count == 1)
    }

    @Test("a gateway without a submit step refuses one, naming the submission")
    func noSubmitStep() async throws {
        struct Minimal: GatewayServerHalf {
            var gateway: GatewayID { "minimal" }
            var capabilities: GatewayCapabilities { GatewayCapabilities(methods: [.card]) }
            func prepare(_ context: AttemptContext) async throws -> Preparation {
                Preparation(gateway: gateway, attempt: context.attempt, method: .card, amount: context.intent.amount)
            }
            func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
                throw CheckoutError(.signatureMismatch, message: "no")
            }
            func inquire(_ query: InquiryQuery) async throws -> StatusReport {
                StatusReport(gateway: gateway, attempt: query.attempt, status: .pending)
            }
        }
        let context = SubmitContext(intent: Harness.intent(), attempt: .generate())
        do {
            _ = try await Minimal().submit(Submission(kind: "x", fields: [:]), context: context)
            Issue.record("submitted")
        } catch let error as CheckoutError {
            #expect(error.field == "submission")
            #expect(error.category == .unsupported)
        }
        #expect(try Minimal().returnURL(from: [URL(string: "shop://till/return?s=1")!], for: Harness.intent())?.scheme == "shop")
        #expect(Minimal().answerChallenge(IncomingNotification(body: Data())) == nil)
    }

    // MARK: SDK results in-process

    @Test("SDK flow: the SDK's in-process result wakes the checkout, no return URL involved; paid")
    func sdkPaid() async throws {
        let h = try await Harness(.approve, flow: .sdk)
        let result = try await h.app.pay(Harness.intent(.alipay))
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(result.clientOutcome.gatewayCode == "0")
        #expect(result.status == .paid)
        #expect(result.customerMayHaveAuthenticated)
        #expect(h.returns.pendingCount == 0)
        #expect(await h.gateway.ledger.charges.count == 1)
    }

    @Test("SDK flow: a cancel reported by the SDK is a cancel, nothing charged")
    func sdkCancelled() async throws {
        let h = try await Harness(.approve, choice: .cancel, flow: .sdk)
        let result = try await h.app.pay(Harness.intent(.alipay))
        #expect(result.clientOutcome.kind == .cancelled)
        #expect(result.clientOutcome.gatewayCode == "-2")
        #expect(await h.gateway.ledger.charges.isEmpty)
    }

    @Test("SDK flow: an SDK that never calls back cannot hold the checkout; the notification settles it")
    func sdkSilent() async throws {
        let h = try await Harness(.approve, choice: .payAndVanish, returnTimeout: .milliseconds(150), flow: .sdk)
        let result = try await h.app.pay(Harness.intent(.alipay))
        #expect(result.clientOutcome.kind == .unknown)
        #expect(result.status == .paid)
    }

    @Test("an SDK result and the return URL both arrive: the first wins, the other is ignored")
    func firstArrivalWins() async throws {
        struct Both: CheckoutPresenter {
            let gateway: FakeGateway
            let returns: ReturnURLHandler
            func open(_ url: URL, handoff: Handoff) async throws {}
            func collect(_ form: FormSpec) async throws -> FormValues? { nil }
            func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
                let attempt = AttemptReference(rawValue: wallet.parameters["attempt"] ?? "")
                _ = try await gateway.customerActs(on: attempt, result: .paid)
                // The scheme return lands first; the delegate's result comes a moment later.
                if var back = wallet.returnURL.flatMap({ URLComponents(url: $0, resolvingAgainstBaseURL: false) }) {
                    back.queryItems = (back.queryItems ?? []) + [URLQueryItem(name: "result", value: "success")]
                    #expect(returns.handle(back.url!))
                }
                try await Task.sleep(for: .milliseconds(50))
                return SDKResult(code: "-1")
            }
        }
        let h = try await Harness(.approve, flow: .sdk) { gateway, returns in Both(gateway: gateway, returns: returns) }
        let result = try await h.app.pay(Harness.intent(.alipay))
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(result.status == .paid)
    }

    // MARK: Return style after the gateway

    /// Picks the universal link (as Citcon does for WeChat Pay), delegating the rest to a fake.
    struct PicksUniversalLink: GatewayServerHalf {
        let fake: FakeGateway
        var gateway: GatewayID { fake.gateway }
        var capabilities: GatewayCapabilities { fake.capabilities }
        func prepare(_ context: AttemptContext) async throws -> Preparation { try await fake.prepare(context) }
        func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification { try fake.verifyNotification(notification) }
        func inquire(_ query: InquiryQuery) async throws -> StatusReport { try await fake.inquire(query) }
        func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? {
            guard let link = offered.first(where: { $0.scheme == "https" }) else {
                throw CheckoutError(.missingField, field: "returnURLs", message: "a universal link is needed")
            }
            return link
        }
    }

    @Test("the app offers every route; the gateway picks the universal link and only that route wakes the checkout")
    func returnRouteChosenByGateway() async throws {
        let relay = Relay()
        let fake = FakeGateway(script: [.walletHandoff]) { await relay.deliver($0) }
        let backend = try InMemoryMerchantBackend(gateway: PicksUniversalLink(fake: fake))
        await relay.set(backend)
        let returns = try ReturnURLHandler(routes: [.customScheme("shop"), .universalLink(host: "shop.example.com", path: "/till/return")])
        let app = AppCheckout(backend: backend, gateways: [fake], returns: returns,
                              presenter: SimulatedCustomer(gateway: fake, returns: returns),
                              returnTimeout: .seconds(2), confirmationTimeout: .milliseconds(600), confirmationInterval: .milliseconds(10))
        let result = try await app.pay(Harness.intent(.wechatPay))
        #expect(result.preparation.returnURL?.scheme == "https")
        #expect(result.preparation.returnURL?.host == "shop.example.com")
        #expect(result.clientOutcome.kind == .succeeded)
        #expect(result.status == .paid)

        // With no universal link registered, the gateway refuses before anything is created.
        let schemeOnly = try ReturnURLHandler(routes: [.customScheme("shop")])
        let refused = AppCheckout(backend: backend, gateways: [fake], returns: schemeOnly,
                                  presenter: SimulatedCustomer(gateway: fake, returns: schemeOnly))
        do {
            // A new payment (the first one is paid; the server never prepares a paid payment again).
            _ = try await refused.pay(Harness.intent(.wechatPay, reference: "order-2"))
            Issue.record("paid without a universal link")
        } catch let error as CheckoutError {
            #expect(error.field == "returnURLs")
        }
    }

    @Test("after the server chose a route, a return on the other route with the right state is ignored")
    func restrictedExpectation() throws {
        let returns = try ReturnURLHandler(routes: [.customScheme("shop"), .universalLink(host: "shop.example.com", path: "/r")])
        let expected = try returns.expectReturnOnAnyRoute()
        #expect(expected.urls.count == 2)
        #expect(Set(expected.urls.map { URLComponents(url: $0, resolvingAgainstBaseURL: false)!.queryItems!.first!.value! }).count == 1)
        let narrowed = try returns.restrict(expected, to: expected.urls[1])
        #expect(narrowed.routes.count == 1)
        #expect(!returns.handle(expected.urls[0]))
        #expect(returns.handle(expected.urls[1]))
        #expect(throws: CheckoutError.self) { try returns.restrict(expected, to: URL(string: "evil://x/y?till_state=z")!) }
        returns.cancel(narrowed)
    }

    // MARK: A form the device posts straight to the gateway (PayFort's custom merchant page)

    /// A card gateway whose page takes a form from the device and answers on the return URL with a
    /// token: the app half posts, reads the token off the return, and completes.
    struct PostsForm: GatewayAppHalf {
        let fake: FakeGateway
        var gateway: GatewayID { fake.gateway }
        var capabilities: GatewayCapabilities { fake.capabilities }
        func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
            switch input {
            case .start:
                return .collect(FormSpec(fields: [FormField(id: "card_number", labelKey: "k", kind: .cardNumber, sensitive: true)]))
            case .submit(let values):
                return .postForm(FormPost(url: URL(string: "https://gateway.example/page")!, fields: [
                    .init("return_url", preparation.returnURL?.absoluteString ?? ""), .init("card_number", values["card_number"] ?? ""),
                ]))
            case .returned(let url):
                let token = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "token_name" }?.value
                return .completed(ClientOutcome(token == "tok_1" ? .succeeded : .failed, gatewayCode: token))
            case .sdkPrepared:
                throw CheckoutError(.unsupportedAction, field: "input", message: "not this step")
            }
        }
        func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome { ClientOutcome(.unknown) }
    }

    /// The gateway's page, as the device sees it: takes the posted form and sends the customer back.
    struct Poster: CheckoutPresenter {
        let returns: ReturnURLHandler
        let posted: Locked<[FormPost]>
        func open(_ url: URL, handoff: Handoff) async throws {}
        func launch(_ wallet: WalletLaunch) async throws -> SDKResult? { nil }
        func collect(_ form: FormSpec) async throws -> FormValues? { FormValues(["card_number": "4111111111111111"]) }
        func post(_ form: FormPost) async throws {
            posted.withLock { $0.append(form) }
            guard var back = form["return_url"].flatMap({ URLComponents(string: $0) }) else { return }
            back.queryItems = (back.queryItems ?? []) + [URLQueryItem(name: "token_name", value: "tok_1")]
            _ = returns.handle(back.url!)
        }
    }

    @Test("post form: the device posts the card to the gateway's page, the return carries the token, Present goes on from it")
    func postFormFlow() async throws {
        let fake = FakeGateway(script: [.approve])
        let backend = try InMemoryMerchantBackend(gateway: fake)
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let posted = Locked<[FormPost]>([])
        let app = AppCheckout(backend: backend, gateways: [PostsForm(fake: fake)], returns: returns,
                              presenter: Poster(returns: returns, posted: posted),
                              returnTimeout: .seconds(2), confirmationTimeout: .milliseconds(50), confirmationInterval: .milliseconds(10))
        let result = try await app.pay(Harness.intent())
        #expect(result.clientOutcome == ClientOutcome(.succeeded, gatewayCode: "tok_1"))
        #expect(result.customerMayHaveAuthenticated)
        let form = try #require(posted.withLock { $0.first })
        #expect(form["card_number"] == "4111111111111111")
        #expect(!form.description.contains("4111") && !String(reflecting: form).contains("4111"))

        // A presenter that cannot post says so, and nothing is assumed about the money.
        let silent = AppCheckout(backend: backend, gateways: [PostsForm(fake: fake)], returns: returns,
                                 presenter: SimulatedCustomer(gateway: fake, returns: returns), returnTimeout: .milliseconds(100))
        await #expect(throws: CheckoutError.self) { try await silent.pay(Harness.intent()) }
    }

    @Test("a posted form's body and HTML: percent-encoded, HTML-escaped, in order, and it round-trips as a step")
    func formPostWire() throws {
        let form = FormPost(url: URL(string: "https://gateway.example/page?x=1")!, fields: [
            .init("return_url", "https://shop.example/r?a=1&b=2"), .init("card_holder_name", "Ab \"Cd\" <é>'"), .init("k", "+"),
        ])
        #expect(String(decoding: form.encodedBody, as: UTF8.self)
            == "return_url=https%3A%2F%2Fshop.example%2Fr%3Fa%3D1%26b%3D2&card_holder_name=Ab+%22Cd%22+%3C%C3%A9%3E%27&k=%2B")
        let html = form.autoSubmittingHTML()
        #expect(html.contains(#"action="https://gateway.example/page?x=1""#))
        #expect(html.contains(#"value="Ab &quot;Cd&quot; &lt;é&gt;&#39;""#))
        #expect(html.contains(#"value="https://shop.example/r?a=1&amp;b=2""#))
        #expect(!html.contains("<é>"))
        let step = NextStep.postForm(form)
        #expect(try JSONDecoder().decode(NextStep.self, from: try JSONEncoder().encode(step)) == step)
        #expect(step.customerMayAuthenticate)
    }

    // MARK: An SDK that asks for a signature before it launches (ecommpay's paramsForSignature)

    /// The app half: `.start` asks the SDK for its string, `.sdkPrepared` sends it to the server.
    struct SignsForSDK: GatewayAppHalf {
        let fake: FakeGateway
        var gateway: GatewayID { fake.gateway }
        var capabilities: GatewayCapabilities { fake.capabilities }
        func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
            switch input {
            case .start:
                return .prepareSDK(WalletLaunch(wallet: "vendor", parameters: ["amount": String(preparation.amount.minorUnits)]))
            case .sdkPrepared(let values):
                return .submit(Submission(kind: "sign", fields: ["string": values["string"] ?? ""]))
            default:
                throw CheckoutError(.unsupportedAction, field: "input", message: "not this step")
            }
        }
        func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
            guard case .callback(let code, _) = event else { return ClientOutcome(.unknown) }
            return ClientOutcome(code == "0" ? .succeeded : .failed, gatewayCode: code)
        }
    }

    /// The server half: signs what the SDK produced (here, a stand-in "signature") and answers the launch.
    struct SigningServer: GatewayServerHalf {
        let fake: FakeGateway
        var gateway: GatewayID { fake.gateway }
        var capabilities: GatewayCapabilities { fake.capabilities }
        func prepare(_ context: AttemptContext) async throws -> Preparation { try await fake.prepare(context) }
        func submit(_ submission: Submission, context: SubmitContext) async throws -> SubmitResult {
            let string = submission.fields["string"] ?? ""
            return SubmitResult(next: .launchWallet(WalletLaunch(wallet: "vendor", parameters: ["signature": "signed(\(string))"])))
        }
        func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification { try fake.verifyNotification(notification) }
        func inquire(_ query: InquiryQuery) async throws -> StatusReport { try await fake.inquire(query) }
    }

    /// The app's SDK adapter: builds the string from the launch, then presents with the signature.
    struct SDKAdapter: CheckoutPresenter {
        let calls: Locked<[String]>
        func open(_ url: URL, handoff: Handoff) async throws {}
        func collect(_ form: FormSpec) async throws -> FormValues? { nil }
        func prepareSDK(_ wallet: WalletLaunch) async throws -> [String: String] {
            calls.withLock { $0.append("prepare \(wallet.parameters["amount"] ?? "")") }
            return ["string": "amount:\(wallet.parameters["amount"] ?? "")"]
        }
        func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
            calls.withLock { $0.append("launch \(wallet.parameters["signature"] ?? "")") }
            return SDKResult(code: "0")
        }
    }

    @Test("prepare SDK: the SDK's string goes to the server before anything is shown, and the launch carries the server's signature")
    func prepareSDKFlow() async throws {
        let fake = FakeGateway(script: [.approve])
        let backend = try InMemoryMerchantBackend(gateway: SigningServer(fake: fake))
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let calls = Locked<[String]>([])
        let app = AppCheckout(backend: backend, gateways: [SignsForSDK(fake: fake)], returns: returns, presenter: SDKAdapter(calls: calls),
                              returnTimeout: .seconds(2), confirmationTimeout: .milliseconds(50), confirmationInterval: .milliseconds(10))
        let result = try await app.pay(Harness.intent())
        #expect(calls.withLock { $0 } == ["prepare 2500", "launch signed(amount:2500)"])
        #expect(result.clientOutcome == ClientOutcome(.succeeded, gatewayCode: "0"))
        #expect(result.customerMayHaveAuthenticated)
        #expect(!NextStep.prepareSDK(WalletLaunch(wallet: "vendor", parameters: [:])).customerMayAuthenticate)

        // A presenter that cannot prepare an SDK says so before anything is launched or charged.
        let silent = AppCheckout(backend: backend, gateways: [SignsForSDK(fake: fake)], returns: returns,
                                 presenter: SimulatedCustomer(gateway: fake, returns: returns), returnTimeout: .milliseconds(100))
        await #expect(throws: CheckoutError.self) { try await silent.pay(Harness.intent()) }
        #expect(await fake.ledger.charges.isEmpty)
    }

    // MARK: Wire shape of the new steps

    @Test("NextStep round-trips through JSON, and an unknown step type decodes as unsupported, never success")
    func nextStepCodable() throws {
        let steps: [NextStep] = [
            .openURL(URL(string: "https://bank.example/3ds")!, handoff: .threeDSecure),
            .launchWallet(WalletLaunch(wallet: "ipaynow", parameters: ["payData": "x"], returnScheme: "shop")),
            .prepareSDK(WalletLaunch(wallet: "ecommpay", parameters: ["params": "{}", "method": "card"])),
            .collect(FormSpec(fields: [FormField(id: "cardNumber", labelKey: "k", kind: .cardNumber, mask: "{{9999}} {{9999}}",
                                                 validators: [FieldValidator("luhn")], displayOrder: 1)])),
            .submit(Submission(kind: "encrypted_customer_input", fields: ["encryptedCustomerInput": "eyJ…"])),
            .completed(ClientOutcome(.pending)),
        ]
        for step in steps {
            let decoded = try JSONDecoder().decode(NextStep.self, from: try JSONEncoder().encode(step))
            #expect(decoded == step)
        }
        let future = try JSONDecoder().decode(NextStep.self, from: Data(#"{"type":"scan_qr_code","code":"x"}"#.utf8))
        #expect(future == .unsupported(type: "scan_qr_code"))
        #expect(!future.customerMayAuthenticate)
    }

    @Test("a data-driven form: display order, a field that appears on a condition, an unknown kind kept")
    func richForm() throws {
        let form = FormSpec(fields: [
            FormField(id: "terms", labelKey: "terms", kind: .boolean, displayOrder: 9),
            FormField(id: "product", labelKey: "product", kind: .choice, displayOrder: 0,
                      choices: [FormChoice(value: "1", label: "Visa", logo: URL(string: "https://assets.example/visa.png"))]),
            FormField(id: "installments", labelKey: "inst", kind: .number, visibleWhen: FieldCondition(field: "product", values: ["3"])),
            FormField(id: "cvv", labelKey: "cvv", kind: .securityCode, sensitive: true, obfuscate: true, displayOrder: 2),
        ])
        #expect(form.fieldsInDisplayOrder.map(\.id) == ["product", "cvv", "terms", "installments"])
        #expect(form.visibleFields(given: ["product": "1"]).map(\.id) == ["product", "cvv", "terms"])
        #expect(form.visibleFields(given: ["product": "3"]).map(\.id).contains("installments"))
        let field = try JSONDecoder().decode(FormField.self, from: Data(#"{"id":"x","labelKey":"l","kind":"boleto_barcode"}"#.utf8))
        #expect(field.kind.rawValue == "boleto_barcode")
        #expect(field.required)
        #expect(field.validators.isEmpty)
    }

    @Test("failure classification: never sent, declined, unknown")
    func attemptFailure() {
        #expect(AttemptFailure(CheckoutError(.gatewayUnreachable, message: "")) == .neverSent)
        #expect(AttemptFailure(CheckoutError(.declined, message: "", gatewayCode: "05")) == .declined(code: "05"))
        #expect(AttemptFailure(CheckoutError(.timeout, message: "")) == .unknown)
        #expect(AttemptFailure(CheckoutError(.malformedBody, category: .invalidInput, message: "")) == .unknown)
        #expect(AttemptFailure(CheckoutError(.signatureMismatch, message: "")) == .unknown)
        #expect(AttemptFailure.neverSent.recordedCode == AttemptFailure.notSentCode)
        #expect(AttemptFailure.unknown.recordedCode == nil)
    }
}
