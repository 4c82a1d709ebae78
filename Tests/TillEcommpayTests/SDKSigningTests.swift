import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillEcommpay
@testable import TillEcommpayServer
import TillOrchestration

/// The SDK hand-off's signing step: the app sends the SDK's own `paramsForSignature`, the server reads it
/// (``EcommpayParamsForSignature``), matches it to the stored payment and signs that exact text. Expected
/// signatures come from the tests' own signer (``TestSigner``).
@Suite("ecommpay SDK signing: the SDK's own string, checked and signed as it came")
struct SDKSigningTests {
    static let field = "params_for_signature"

    static func read(_ text: String) throws -> EcommpayParamsForSignature { try EcommpayParamsForSignature(text) }

    static func readError(_ text: String) -> CheckoutError? {
        do {
            _ = try EcommpayParamsForSignature(text)
            return nil
        } catch { return error }
    }

    static let expectation = EcommpayParamsForSignature.Expectation(
        projectId: 1234, paymentId: "p-1", amount: 1999, currency: "EUR", customerId: "c-1", description: "Green tea", regionCode: "DE",
        forcedMethods: ["card"])

    /// `base` with `extra` pairs added where the SDK would put them: top-level pairs sorted by key (folded),
    /// `secure_info:` pairs last.
    static func adding(_ extra: String..., to base: String) -> String {
        let pairs = base.split(separator: ";").map(String.init) + extra
        let fold = { (pair: String) in String(pair.prefix { $0 != ":" }).lowercased().replacingOccurrences(of: "_", with: "") }
        let top = pairs.filter { !$0.hasPrefix("secure_info:") }.sorted { fold($0) < fold($1) }
        return (top + pairs.filter { $0.hasPrefix("secure_info:") }).joined(separator: ";")
    }

    static func checkError(_ text: String, _ expected: EcommpayParamsForSignature.Expectation = expectation) -> CheckoutError? {
        do {
            try EcommpayParamsForSignature(text).check(expected)
            return nil
        } catch { return error }
    }

    // MARK: Reading

    @Test("keys in any spelling (snake, camel, upper) are one key; account_token is token; secure_info pairs are counted")
    func spellings() throws {
        let snake = try Self.read("payment_amount:1999;payment_currency:EUR;payment_id:p-1;project_id:1234")
        let camel = try Self.read("paymentAmount:1999;paymentCurrency:EUR;paymentId:p-1;projectId:1234")
        let upper = try Self.read("PAYMENT_AMOUNT:1999;PAYMENT_CURRENCY:EUR;PAYMENT_ID:p-1;PROJECT_ID:1234")
        #expect(snake.values == camel.values && camel.values == upper.values)
        #expect(snake.values[.paymentAmount] == "1999")
        #expect(try Self.read("account_token:t").values[.token] == "t")
        let secure = try Self.read("project_id:1;secure_info:customer:email:a@b.c;secure_info:payment:challenge_indicator:01")
        #expect(secure.securePairs == 2)
        // A ':' inside a value is the value's.
        #expect(try Self.read("payment_description:Tea: green").values[.paymentDescription] == "Tea: green")
        #expect(snake.text == "payment_amount:1999;payment_currency:EUR;payment_id:p-1;project_id:1234")
    }

    @Test("what cannot be read back unambiguously is refused, naming the key where it can",
          arguments: [
            ("", "params_for_signature", CheckoutError.Code.missingField),
            ("project_id:1;;payment_id:p", "params_for_signature", .invalidField),
            (";project_id:1", "params_for_signature", .invalidField),
            ("project_id:1;", "params_for_signature", .invalidField),
            ("project_id", "params_for_signature", .invalidField),
            ("project_id:1\npayment_id:p", "params_for_signature", .invalidField),
            ("operation_type:sale", "params_for_signature.operation_type", .invalidField),
            ("customer_email:a@b.c", "params_for_signature.customer_email", .invalidField),
            ("payment amount:1", "params_for_signature", .invalidField),
            ("payment_amount:1999;paymentAmount:1", "params_for_signature.paymentAmount", .invalidField),
            ("payment_description:", "params_for_signature.payment_description", .invalidField),
            ("secure_info:", "params_for_signature.secure_info", .invalidField),
            // A ';' in a description makes its tail a pair of its own: refused, never signed.
            ("payment_amount:1999;payment_description:Tea;payment_amount:1", "params_for_signature.payment_amount", .invalidField),
            ("payment_description:Tea; green", "params_for_signature", .invalidField),
            // Out of the SDK's order, or after the secure_info pairs: a value's tail posing as a pair.
            ("project_id:1;payment_id:p", "params_for_signature.payment_id", .invalidField),
            ("payment_id:p;secure_info:x:y;project_id:1", "params_for_signature.project_id", .invalidField),
            // A key must be plain ASCII (a look-alike letter is not the key).
            ("payment_amount:1;pаyment_id:p", "params_for_signature", .invalidField),
          ] as [(String, String, CheckoutError.Code)])
    func refusals(_ text: String, _ field: String, _ code: CheckoutError.Code) {
        let error = Self.readError(text)
        #expect(error?.field == field)
        #expect(error?.code == code)
        #expect(error?.gateway == "ecommpay")
    }

    @Test("read byte by byte as ecommpay compares: a character that hides a ';' (U+0600 before it) does not hide it; U+037E is not a ';'")
    func bytes() throws {
        // Swift's Characters join U+0600 with the ';' after it; ecommpay sees the ';'.
        let hidden = "language_code:en;payment_amount:1000;secure_info:x\u{0600};payment_amount:1;payment_currency:EUR"
        #expect(Self.readError(hidden)?.field == "params_for_signature.payment_amount")
        // The Greek question mark looks like ';' and is the same Character to Swift; not to ecommpay.
        let greek = try Self.read("payment_amount:1999;secure_info:a\u{037E}payment_amount:1")
        #expect(greek.values[.paymentAmount] == "1999")
        #expect(greek.securePairs == 1)
    }

    @Test("values compared byte for byte: a Kelvin sign is not K, a decomposed é is not a composed one, digits are ASCII")
    func byteEquality() {
        var sek = Self.expectation
        sek.currency = "SEK"
        #expect(Self.checkError(Self.good.replacingOccurrences(of: "EUR", with: "SE\u{212A}"), sek)?.field == "params_for_signature.paymentCurrency")
        var accented = Self.expectation
        accented.customerId = "jos\u{E9}"
        #expect(Self.checkError(Self.good.replacingOccurrences(of: "c-1", with: "jose\u{301}"), accented)?.field == "params_for_signature.customerId")
        #expect(Self.checkError(Self.good.replacingOccurrences(of: "1999", with: "\u{0661}999"))?.field == "params_for_signature.paymentAmount")
        #expect(Self.checkError(Self.adding("language_code:\u{212A}k", to: Self.good))?.field == "params_for_signature.languageCode")
    }

    @Test("at most 200 secure_info pairs")
    func securePairLimit() throws {
        let pairs = (0..<200).map { "secure_info:customer:f\($0):x" }
        #expect(try Self.read(pairs.joined(separator: ";")).securePairs == 200)
        #expect(Self.readError((pairs + ["secure_info:customer:g:x"]).joined(separator: ";"))?.field == Self.field)
    }

    // MARK: Checking against the payment

    static let good = "customer_id:c-1;payment_amount:1999;payment_currency:EUR;payment_description:Green tea;payment_id:p-1;project_id:1234"

    @Test("the payment's own string passes, with or without what the SDK may leave out")
    func passes() throws {
        try Self.read(Self.good).check(Self.expectation)
        try Self.read("payment_amount:1999;payment_currency:EUR;payment_id:p-1;project_id:1234").check(Self.expectation)
        try Self.read(Self.adding("force_payment_method:card", "hide_saved_wallets:true", "language_code:DE", "region_code:DE",
                                  "secure_info:customer:email:a@b.c", to: Self.good)).check(Self.expectation)
        try Self.read(Self.adding("hideSavedWallets:0", to: Self.good)).check(Self.expectation)
        // A region the server gave none for: any ISO 3166-1 alpha-2.
        var noRegion = Self.expectation
        noRegion.regionCode = nil
        try Self.read(Self.adding("region_code:FR", to: Self.good)).check(noRegion)
    }

    @Test("another project, payment, amount or currency, or none, is refused naming the key",
          arguments: [
            ("project_id", "9999", "projectId"), ("payment_id", "p-2", "paymentId"), ("payment_amount", "1", "paymentAmount"),
            ("payment_amount", "01999", "paymentAmount"), ("payment_currency", "USD", "paymentCurrency"),
          ])
    func moneyAndIdentity(_ key: String, _ value: String, _ name: String) {
        let pairs = Self.good.split(separator: ";").map(String.init)
        let changed = pairs.map { $0.hasPrefix(key + ":") ? "\(key):\(value)" : $0 }.joined(separator: ";")
        #expect(Self.checkError(changed)?.field == "params_for_signature.\(name)")
        #expect(Self.checkError(changed)?.code == .invalidField)
        let removed = pairs.filter { !$0.hasPrefix(key + ":") }.joined(separator: ";")
        #expect(Self.checkError(removed)?.field == "params_for_signature.\(name)")
        #expect(Self.checkError(removed)?.code == .missingField)
    }

    @Test("another customer (their saved cards), a description or region of the app's making, an unknown language, a token, another forced method, a non-boolean: refused")
    func theRest() {
        #expect(Self.checkError(Self.good.replacingOccurrences(of: "c-1", with: "c-2"))?.field == "params_for_signature.customerId")
        var anonymous = Self.expectation
        anonymous.customerId = nil
        #expect(Self.checkError(Self.good, anonymous)?.field == "params_for_signature.customerId")
        #expect(Self.checkError(Self.good.replacingOccurrences(of: "Green tea", with: "Free tea"))?.field == "params_for_signature.paymentDescription")
        #expect(Self.checkError(Self.adding("region_code:FR", to: Self.good))?.field == "params_for_signature.regionCode")
        var noRegion = Self.expectation
        noRegion.regionCode = nil
        #expect(Self.checkError(Self.adding("region_code:XYZ", to: Self.good), noRegion)?.field == "params_for_signature.regionCode")
        #expect(Self.checkError(Self.adding("language_code:ru", to: Self.good))?.field == "params_for_signature.languageCode")
        #expect(Self.checkError(Self.adding("token:abc", to: Self.good))?.field == "params_for_signature.token")
        #expect(Self.checkError(Self.adding("force_payment_method:qiwi", to: Self.good))?.field == "params_for_signature.forcePaymentMethod")
        #expect(Self.checkError(Self.adding("hide_saved_wallets:yes", to: Self.good))?.field == "params_for_signature.hideSavedWallets")
    }

    // MARK: The server's Submit

    static func submitContext(_ intent: PaymentIntent = Setup.intent()) -> SubmitContext {
        SubmitContext(intent: intent, attempt: Setup.attempt, returnURL: Setup.appReturn, notificationURL: Setup.notificationURL)
    }

    /// The SDK's string for ``Setup``'s card sale (the server gave customer, description, language and region).
    static let setupString = "customer_id:cust-7;language_code:de;payment_amount:1999;payment_currency:EUR;payment_description:Green tea;"
        + "payment_id:\(Setup.attempt.rawValue);project_id:\(Setup.projectId);region_code:DE"

    static func submission(_ text: String) -> Submission {
        Submission(kind: EcommpayGateway.signingKind, fields: ["params_for_signature": text])
    }

    @Test("submit signs the SDK's string exactly as it came (any spelling) and answers the launch; nothing goes to ecommpay")
    func submitSigns() async throws {
        let transport = RecordingTransport()
        let server = Setup.server(transport)
        let prepared = try await server.prepare(Setup.context())
        let camel = Self.setupString.replacingOccurrences(of: "payment_amount", with: "paymentAmount")
            .replacingOccurrences(of: "project_id", with: "projectId")
        for text in [Self.setupString, camel, Self.setupString + ";secure_info:customer:email:ada@example.com"] {
            let result = try await server.submit(Self.submission(text), context: Self.submitContext())
            guard case .launchWallet(let launch) = result.next else { Issue.record("not a launch"); return }
            #expect(launch.wallet == "ecommpay")
            #expect(launch.returnURL == Setup.appReturn)
            #expect(launch.parameters["signature"] == TestSigner.hmac(text, secret: Setup.secret))
            #expect(launch.parameters["params_for_signature"] == text)
            #expect(launch.parameters["params"] == prepared.parameters["params"])
            #expect(launch.parameters["method"] == "card")
            #expect(result.report == nil)
        }
        try transport.verify()
        #expect(transport.requests.isEmpty)
    }

    @Test("submit of a verify wants amount 0; of Apple Pay may force apple_pay only; the mock mode goes with the launch")
    func submitVariants() async throws {
        let verify = Setup.intent(0, action: .verify)
        let zero = Self.setupString.replacingOccurrences(of: "payment_amount:1999", with: "payment_amount:0")
        _ = try await Setup.server().submit(Self.submission(zero), context: Self.submitContext(verify))
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().submit(Self.submission(Self.setupString), context: Self.submitContext(verify))
        }
        #expect(error?.field == "params_for_signature.paymentAmount")
        let apple = Setup.intent(method: .applePay)
        _ = try await Setup.server().submit(Self.submission(Self.adding("force_payment_method:apple_pay", to: Self.setupString)), context: Self.submitContext(apple))
        let forced = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().submit(Self.submission(Self.adding("force_payment_method:card", to: Self.setupString)), context: Self.submitContext(apple))
        }
        #expect(forced?.field == "params_for_signature.forcePaymentMethod")
        let mocked = try await Setup.server(mock: .success).submit(Self.submission(Self.setupString), context: Self.submitContext())
        guard case .launchWallet(let launch) = mocked.next else { Issue.record("not a launch"); return }
        #expect(launch.parameters["mock_mode"] == "success")
    }

    @Test("submit refuses another kind, a Payment Page payment, and a string that is not the payment's; invalid input, nothing signed")
    func submitRefuses() async throws {
        let kind = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().submit(Submission(kind: "token", fields: ["params_for_signature": Self.setupString]),
                                                context: Self.submitContext())
        }
        #expect(kind?.field == "submission.kind")
        let page = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().submit(Self.submission(Self.setupString), context: Self.submitContext(Setup.intent(method: .paypal)))
        }
        #expect(page?.field == "submission.kind")
        let cheaper = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().submit(Self.submission(Self.setupString.replacingOccurrences(of: ":1999", with: ":1")),
                                                context: Self.submitContext())
        }
        #expect(cheaper?.field == "params_for_signature.paymentAmount")
        #expect(cheaper?.category == .invalidInput)
        let other = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server(projectId: 777).submit(Self.submission(Self.setupString), context: Self.submitContext())
        }
        #expect(other?.field == "params_for_signature.projectId")
    }

    @Test("prepare refuses a ';' in an SDK payment's description (the SDK's string could not be read back) and in any customer id; the Payment Page takes it in a description")
    func semicolonsBeforeTheForm() async throws {
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(description: "Tea; green")))
        }
        #expect(error?.field == "paymentDescription")
        let customer = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(customer: Customer(reference: "a;b", email: "a@b.c"))))
        }
        #expect(customer?.field == "customerId")
        _ = try await Setup.server().prepare(Setup.context(Setup.intent(method: .paypal, description: "Tea; green"), returnURL: Setup.webReturn))
        let pageCustomer = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server().prepare(Setup.context(Setup.intent(method: .paypal, customer: Customer(reference: "c1;force_payment_method:card")),
                                                               returnURL: Setup.webReturn))
        }
        #expect(pageCustomer?.field == "customerId")
    }
}
