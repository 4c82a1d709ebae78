import Foundation

extension EcommpayEmulator {
    /// A Payment Page opened by a customer: its verified parameters, and where the customer is.
    struct PageSession: Sendable {
        enum State: Sendable, Equatable {
            /// The card form is shown.
            case form
            /// The 3-D Secure page is shown for the recorded payment.
            case threeDSecure
            /// Finished (paid, declined or cancelled).
            case done
        }

        var id: String
        var project: Project
        /// The decoded query, without `signature`.
        var fields: [String: String]
        var state: State = .form
    }

    /// Query values the emulator reads as booleans when re-signing a Payment Page URL (the SDKs write a boolean as `True`/`true` in the URL but sign it as `1`):
    /// the SDKs sign a boolean as `1`/`0` but write it into the URL as `True`/`False` (py `urlencode`),
    /// `true`/`false` (go, java, js) or `1`/`0` (php).
    static let booleanTexts: [String: Bool] = ["true": true, "True": true, "false": false, "False": false]

    /// Whether `signature` signs the page's `fields`. **D8, emulator choice**: a query carries text only,
    /// so two readings are tried and either is accepted: (1) every value as the string it is; (2) every
    /// value spelled `true`/`True`/`false`/`False` as a boolean (signed `1`/`0`), the rest as strings.
    /// Reading 2 accepts the go SDK test's `some_future_bool_param=true` (signed `:1`) and python's
    /// `redirect=True`; reading 1 accepts a genuine string `"true"`. Numbers need no reading: their text
    /// signs the same as the number. Both readings are HMACs under the project's secret, so neither
    /// accepts a forged URL; they differ only on whether `"true"` was a string or a boolean.
    static func pageSignatureMatches(_ fields: [String: String], signature: String, secret: String) -> Bool {
        let sorted = fields.sorted { $0.key < $1.key }
        let asText = JSONValue.object(sorted.map { .init(key: $0.key, value: .string($0.value)) })
        if EcommpaySignature.verify(signature, of: asText, secret: secret) { return true }
        let asBooleans = JSONValue.object(sorted.map { .init(key: $0.key, value: booleanTexts[$0.value].map(JSONValue.bool) ?? .string($0.value)) })
        return EcommpaySignature.verify(signature, of: asBooleans, secret: secret)
    }

    /// `GET {base}/payment?<params>&signature=<sig>` (facts §4; py `Gate.get_purchase_payment_page_url`:
    /// `base + '?' + urlencode(params) + '&signature=' + quote_plus(sign(params))`). Checks, each a 400
    /// page naming the parameter: the query decodes; `project_id` is a known project; `signature` is
    /// there and matches (``pageSignatureMatches(_:signature:secret:)``); `payment_id` is given and new
    /// for the project; `best_before`, when given, is an ISO 8601 date not passed (one without an offset,
    /// as python's `isoformat()` writes, is read as UTC: *emulator choice*); `payment_amount` and
    /// `payment_currency`, when given, are a whole number and three capital letters; `operation_type`,
    /// when given, is `sale`, `auth`, `verify` or `tokenize`; `merchant_callback_url`, when given, an
    /// http(s) URL (the payment's callbacks go there). Then the card form.
    func paymentPage(query: String) -> PageAnswer {
        guard let decoded = FormEncoding.decode(query) else { return errorPage("the query is not URL-encoded text") }
        var fields = decoded
        guard let projectId = Int(fields["project_id"] ?? ""), let project = project(projectId) else {
            return errorPage(fields["project_id"] == nil ? "project_id: required" : "project_id: unknown project")
        }
        guard let signature = fields.removeValue(forKey: "signature"), !signature.isEmpty else { return errorPage("signature: required") }
        guard Self.pageSignatureMatches(fields, signature: signature, secret: project.secretKey) else {
            return errorPage("signature: does not match the parameters")
        }
        guard let paymentId = fields["payment_id"], !paymentId.isEmpty else { return errorPage("payment_id: required") }
        if let text = fields["best_before"] {
            guard let date = Self.isoDate(text) else { return errorPage("best_before: not an ISO 8601 date and time") }
            guard date > now() else { return errorPage("best_before: the payment period has expired") }
        }
        if let text = fields["payment_amount"], Int64(text).map({ $0 >= 0 }) != true {
            return errorPage("payment_amount: a whole number of minor units")
        }
        if let text = fields["payment_currency"], text.count != 3 || !text.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) {
            return errorPage("payment_currency: ISO 4217 alpha-3")
        }
        if let text = fields["operation_type"], !["sale", "auth", "verify", "tokenize"].contains(text) {
            return errorPage("operation_type: sale, auth, verify or tokenize")
        }
        if let text = fields["merchant_callback_url"], URL(string: text).flatMap({ ["http", "https"].contains($0.scheme?.lowercased() ?? "") }) != true {
            return errorPage("merchant_callback_url: an http(s) URL")
        }
        guard payments[Self.key(project.projectId, paymentId)] == nil else {
            return errorPage("payment_id: the project already has payment \(paymentId)")
        }
        let session = PageSession(id: Self.randomHex(count: 32), project: project, fields: fields)
        pageSessions[session.id] = session
        return .page(status: 200, html: formPage(session, problem: nil))
    }

    /// `POST {base}/sandbox-only/page/{id}`: the customer submits the card form (`card_number`,
    /// `expiry_month`, `expiry_year`, `cvv`, `card_holder`) with `outcome=pay`, or closes the page with
    /// `outcome=cancel`.
    func submitPage(id: String, form: [UInt8]) -> PageAnswer {
        guard var session = pageSessions[id], session.state == .form else { return errorPage("no such page, or it is finished", status: 404) }
        let fields = FormEncoding.decode(String(decoding: form, as: UTF8.self)) ?? [:]
        switch fields["outcome"] {
        case "cancel":
            session.state = .done
            pageSessions[id] = session
            // Nothing is registered (docs: a Payment Page closed without confirming leaves the payment
            // "not found"); the customer goes to the fail URL (*emulator choice*: no cancel URL exists).
            return redirect(to: Self.failURL(session.fields), result: "Payment cancelled")
        case "pay":
            break
        default:
            return .page(status: 400, html: formPage(session, problem: "outcome: pay or cancel"))
        }
        guard let amount = Int64(session.fields["payment_amount"] ?? ""), let currency = session.fields["payment_currency"] else {
            return .page(status: 400, html: formPage(session, problem: "this sandbox page cannot take a payment without payment_amount and payment_currency"))
        }
        let operationType = session.fields["operation_type"] ?? "sale"
        if operationType == "verify", amount != 0 { return .page(status: 400, html: formPage(session, problem: "payment_amount: must be 0 for verify")) }
        if operationType == "sale" || operationType == "auth", amount == 0 {
            return .page(status: 400, html: formPage(session, problem: "payment_amount: must be more than 0"))
        }
        let card = EcommpayCardInput(number: (fields["card_number"] ?? "").filter { $0 != " " }, expiryMonth: fields["expiry_month"] ?? "",
                                     expiryYear: fields["expiry_year"] ?? "", cvv: fields["cvv"] ?? "", holder: fields["card_holder"] ?? "")
        if let problem = card.problem(now: now(), prefix: "") { return .page(status: 400, html: formPage(session, problem: problem)) }
        let paymentId = session.fields["payment_id"] ?? ""
        guard payments[Self.key(session.project.projectId, paymentId)] == nil else {
            session.state = .done
            pageSessions[id] = session
            return errorPage("payment_id: the project already has payment \(paymentId)")
        }
        var payment = Payment(project: session.project, id: paymentId, via: "payment_page", operationType: operationType, method: "card",
                              amount: amount, currency: currency, description: session.fields["payment_description"],
                              customerId: session.fields["customer_id"], status: "processing", created: now(), card: card.details)
        if operationType == "verify" || operationType == "tokenize" { payment.token = Self.randomHex(count: 32) }
        // The page's signed `merchant_callback_url` (the WooCommerce plugin sends it on every Payment Page
        // request: `EcpModulePaymentPage`, `append_merchant_callback_url`) takes the callbacks, else the project's URL.
        payment.callbackURL = session.fields["merchant_callback_url"].flatMap(URL.init(string:))
        record(payment)
        let key = payment.key
        switch EcommpayTestCard.behaviour(of: card.number) {
        case .threeDSecure:
            // python `Callback.AW_3DS_STATUS`; no callback until the customer answers (*emulator choice*).
            payments[key]?.status = "awaiting 3ds result"
            session.state = .threeDSecure
            pageSessions[id] = session
            return .page(status: 200, html: threeDSecurePage(session))
        case .decline: finish(key, success: false)
        case .cascade: cascade(key, threeDSecure: false)
        case .success: finish(key, success: true)
        }
        session.state = .done
        pageSessions[id] = session
        return finalRedirect(session, key: key)
    }

    /// `POST {base}/sandbox-only/3ds/{id}` with `outcome=pass|fail`: the customer passes or fails the
    /// 3-D Secure challenge; the payment is finished and the customer sent on.
    func completeThreeDSecure(id: String, form: [UInt8]) -> PageAnswer {
        guard var session = pageSessions[id], session.state == .threeDSecure else {
            return errorPage("no 3-D Secure page waits here", status: 404)
        }
        let outcome = FormEncoding.decode(String(decoding: form, as: UTF8.self))?["outcome"]
        guard outcome == "pass" || outcome == "fail" else { return .page(status: 400, html: threeDSecurePage(session)) }
        let key = Self.key(session.project.projectId, session.fields["payment_id"] ?? "")
        finish(key, success: outcome == "pass", threeDSecure: true)
        session.state = .done
        pageSessions[id] = session
        return finalRedirect(session, key: key)
    }

    /// The 3-D Secure page of a session that waits for it (`GET`).
    func threeDSecurePageAnswer(id: String) -> PageAnswer {
        guard let session = pageSessions[id], session.state == .threeDSecure else { return errorPage("no 3-D Secure page waits here", status: 404) }
        return .page(status: 200, html: threeDSecurePage(session))
    }

    /// Where the customer goes after paying: the success URL for a payment whose action succeeded, else
    /// the fail URL.
    private func finalRedirect(_ session: PageSession, key: String) -> PageAnswer {
        let payment = payments[key]
        let succeeded = payment.map { $0.status == Self.successStatus($0.operationType) } ?? false
        return succeeded
            ? redirect(to: Self.successURL(session.fields), result: "Payment \(payment?.status ?? "")")
            : redirect(to: Self.failURL(session.fields), result: "Payment declined")
    }

    /// `redirect_success_url`, else `merchant_success_url` (py `payment.py`: "the URL … to which the
    /// customer is redirected after a successful payment" / "returned after a successful payment"; the
    /// precedence is an *emulator choice*).
    static func successURL(_ fields: [String: String]) -> String? {
        fields["redirect_success_url"] ?? fields["merchant_success_url"]
    }

    /// `redirect_fail_url`, else `merchant_fail_url` (py `payment.py`), as ``successURL(_:)``.
    static func failURL(_ fields: [String: String]) -> String? {
        fields["redirect_fail_url"] ?? fields["merchant_fail_url"]
    }

    /// `302` to `url` as given (nothing appended, *emulator choice*), or a page saying `result` when
    /// there is none.
    private func redirect(to url: String?, result: String) -> PageAnswer {
        guard let url, let parsed = URL(string: url), parsed.scheme != nil else {
            return .page(status: 200, html: SandboxHTML.page(title: result, body: "<p>You can close this page.</p>", emulator: "ecommpay"))
        }
        return .redirect(location: url)
    }

    private func errorPage(_ message: String, status: Int = 400) -> PageAnswer {
        .page(status: status, html: SandboxHTML.page(title: "Payment Page error", body: "<p class=\"error\">\(SandboxHTML.escape(message))</p>",
                                                     emulator: "ecommpay"))
    }

    private func formPage(_ session: PageSession, problem: String?) -> String {
        let fields = session.fields
        let amount = fields["payment_amount"].map { "\($0) (minor units) \(fields["payment_currency"] ?? "")" } ?? "not given"
        let cards = EcommpayTestCard.allCases.map { "<li><code>\($0.rawValue)</code> \(SandboxHTML.escape(String(describing: $0)))</li>" }
            .joined()
        let body = """
        \(problem.map { "<p class=\"error\">\(SandboxHTML.escape($0))</p>" } ?? "")
        <p>Project \(session.project.projectId), payment <code>\(SandboxHTML.escape(fields["payment_id"] ?? ""))</code>: \
        \(SandboxHTML.escape(amount)), \(SandboxHTML.escape(fields["operation_type"] ?? "sale"))</p>
        <form method="post" action="/ecommpay/sandbox-only/page/\(session.id)">
        <label>Card number <input name="card_number" autocomplete="cc-number"></label>
        <label>Month <input name="expiry_month" size="2"></label> <label>Year <input name="expiry_year" size="4"></label>
        <label>CVV <input name="cvv" size="4"></label> <label>Cardholder <input name="card_holder"></label>
        <button name="outcome" value="pay">Pay</button> <button name="outcome" value="cancel">Cancel</button>
        </form>
        <p>Sandbox test cards (any future expiry, any CVV):</p><ul>\(cards)</ul>
        """
        return SandboxHTML.page(title: "ecommpay Payment Page", body: body, emulator: "ecommpay")
    }

    private func threeDSecurePage(_ session: PageSession) -> String {
        let body = """
        <p>3-D Secure challenge for payment <code>\(SandboxHTML.escape(session.fields["payment_id"] ?? ""))</code>.</p>
        <form method="post" action="/ecommpay/sandbox-only/3ds/\(session.id)">
        <button name="outcome" value="pass">Pass</button> <button name="outcome" value="fail">Fail</button>
        </form>
        """
        return SandboxHTML.page(title: "3-D Secure", body: body, emulator: "ecommpay")
    }

    /// An ISO 8601 date and time with or without an offset (without: UTC).
    static func isoDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        return formatter.date(from: text)
    }
}
