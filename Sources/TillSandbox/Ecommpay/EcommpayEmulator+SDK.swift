import Foundation

extension EcommpayEmulator {
    /// The path of the mobile SDK stand-in under the emulator's base URL. **Not an ecommpay API**: the
    /// real SDK UI talks to ecommpay through its closed MsdkCore (facts §5.1); the stand-in plays the
    /// SDK's checks, its card form, ecommpay's processing and the SDK's `PaymentResult` in one call.
    public static let sdkPath = "sandbox-only/sdk/pay"

    /// The card the customer types into the SDK's form.
    public struct SDKCard: Sendable, Hashable, Codable {
        /// The card number, digits only.
        public var number: String
        /// `1`…`12` (or `01`…`12`).
        public var expiry_month: String
        /// Two or four digits.
        public var expiry_year: String
        /// Three or four digits.
        public var cvv: String
        /// The cardholder's name.
        public var holder: String

        /// A card; `holder` is optional.
        public init(number: String, expiryMonth: String, expiryYear: String, cvv: String, holder: String = "") {
            self.number = number
            self.expiry_month = expiryMonth
            self.expiry_year = expiryYear
            self.cvv = cvv
            self.holder = holder
        }

        /// A sandbox test card that expires in 2030 (CVV `123`).
        public static func test(_ card: EcommpayTestCard, holder: String = "TEST CUSTOMER") -> SDKCard {
            SDKCard(number: card.rawValue, expiryMonth: "12", expiryYear: "2030", cvv: "123", holder: holder)
        }
    }

    /// What the stand-in answers: the iOS SDK's `PaymentResult` (ios `Facade/Internal/PaymentResult.swift`:
    /// `status`, `error: PaymentError?`, `payment: Payment?`).
    public struct SDKPaymentResult: Sendable, Hashable, Codable {
        /// `PaymentStatus`: `0` Success, `100` Decline, `200` Cancelled, `500` Error (ios `PaymentResult.swift`;
        /// the seed's result code table).
        public var status: Int
        /// The SDK's `Payment` (ios `PublicApi/Common/Payment.swift`), when there is one.
        public var payment: Payment?
        /// The SDK's `PaymentError`, for status `500`.
        public var error: PaymentError?

        /// The SDK's `Payment`: `status, type, id, date, method, sum (Int64), currency, token, account{number}`.
        public struct Payment: Sendable, Hashable, Codable {
            /// The payment's status. *Emulator choice*: the platform's status text (`success`,
            /// `awaiting capture`, `decline`) as callbacks carry it; the real SDK fills it with the
            /// `name` of MsdkCore's `PaymentStatus` enum (`corePayment.status.map { $0.name }`), whose
            /// text the closed binary does not show.
            public var status: String
            /// `purchase` for sale and auth, else the action (*emulator choice*).
            public var type: String
            /// The merchant's payment id.
            public var id: String
            /// When, `2020-08-24T07:44:44+0000` (UTC).
            public var date: String
            /// `card` or `apple_pay`.
            public var method: String
            /// Minor units.
            public var sum: Int64
            /// ISO 4217 alpha-3.
            public var currency: String
            /// A token of the card, for `verify` and `tokenize`.
            public var token: String?
            /// The card, masked.
            public var account: Account?

            /// The SDK's `PaymentAccount` (only `number` is filled by the stand-in).
            public struct Account: Sendable, Hashable, Codable {
                /// `400000******0010`.
                public var number: String
            }
        }

        /// The SDK's `PaymentError`: `code` (the `PaymentErrorCode` case's raw `Int`), `codeString`, `message`.
        public struct PaymentError: Sendable, Hashable, Codable {
            /// The `PaymentErrorCode` raw value (its declaration order, from 0: `serverUnauthorized`).
            public var code: Int
            /// The code's name. *Emulator choice*: the Kotlin enum entry name (`PAYMENT_ALREADY_EXIST`),
            /// inferred from MsdkCore's Swift names (`paymentAlreadyExist`); the binary is closed.
            public var codeString: String
            /// Why (`"<parameter>: <reason>"`).
            public var message: String
        }
    }

    /// `PaymentErrorCode` of ios `PaymentResult.swift`, in declaration order (its `Int` raw values).
    enum SDKErrorCode: Int, CaseIterable {
        case serverUnauthorized, serverMethodNotFound, serverApiError, serverContentParsingError, networkError,
             networkIsNotAvailable, networkTimeout, paymentRequestTypeNotExist, paymentMethodNotAvailable,
             paymentAlreadyExist, paymentHasFinalStatus, paymentNotFound, paymentTokenNotExist, customerIdNotExist,
             clarificationFieldsError, sessionNotInitialized, illegalArguments, illegalState, unknown

        /// `paymentAlreadyExist` → `PAYMENT_ALREADY_EXIST`.
        var codeString: String {
            var output = ""
            for character in String(describing: self) {
                if character.isUppercase { output += "_" }
                output += character.uppercased()
            }
            return output
        }
    }

    static func sdkError(_ code: SDKErrorCode, _ message: String) -> SDKPaymentResult {
        SDKPaymentResult(status: 500, payment: nil, error: .init(code: code.rawValue, codeString: code.codeString, message: message))
    }

    /// Handles `POST {base}/sandbox-only/sdk/pay`. The body is
    /// `{"params": {…signed object…}, "signature": "…", "method": "card" | "apple_pay", "card": {…}?,
    /// "outcome": "pay" | "cancel"?, "mock_mode": "disabled" | "success" | "decline"?, "wait_for_callbacks": false?}`.
    /// Answers 200 with an ``SDKPaymentResult``, or 400 `{"error": …}` when the body is not of that
    /// shape or the card is one the SDK's form would not submit.
    func handleSDK(body: [UInt8]) async -> (status: Int, body: [UInt8]) {
        let expected = "expected {\"params\": {…}, \"signature\": \"…\", \"method\": \"card\" | \"apple_pay\", \"card\": {\"number\", "
            + "\"expiry_month\", \"expiry_year\", \"cvv\", \"holder\"}, \"outcome\": \"pay\" | \"cancel\", "
            + "\"mock_mode\": \"disabled\" | \"success\" | \"decline\", \"wait_for_callbacks\": false}"
        func refuse(_ problem: String) -> (Int, [UInt8]) {
            (400, JSONValue.object([.init(key: "error", value: .string(problem + "; " + expected))]).serializedBytes)
        }
        guard let request = try? JSONValue.parse(body), case .object = request else { return refuse("not a JSON object") }
        guard let params = request["params"], case .object = params else { return refuse("params: required, an object") }
        guard let method = request["method"]?.stringValue, ["card", "apple_pay"].contains(method) else {
            return refuse("method: \"card\" or \"apple_pay\"")
        }
        let outcome = request["outcome"]?.stringValue ?? "pay"
        guard ["pay", "cancel"].contains(outcome) else { return refuse("outcome: \"pay\" or \"cancel\"") }
        let mock = request["mock_mode"]?.stringValue ?? "disabled"
        guard ["disabled", "success", "decline"].contains(mock) else { return refuse("mock_mode: \"disabled\", \"success\" or \"decline\"") }
        var card: EcommpayCardInput?
        if let value = request["card"], value != .null {
            guard case .object = value else { return refuse("card: an object") }
            card = EcommpayCardInput(number: value["number"]?.parameterText ?? "", expiryMonth: value["expiry_month"]?.parameterText ?? "",
                                     expiryYear: value["expiry_year"]?.parameterText ?? "", cvv: value["cvv"]?.parameterText ?? "",
                                     holder: value["holder"]?.stringValue ?? "")
        }
        let result: SDKPaymentResult
        switch await sdkPay(params: params, signature: request["signature"]?.stringValue, method: method, card: card,
                            outcome: outcome, mock: mock, waitForCallbacks: request["wait_for_callbacks"] == .bool(true)) {
        case .success(let answer): result = answer
        case .failure(let problem): return refuse(problem.description)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (200, Array((try? encoder.encode(result)) ?? Data("{}".utf8)))
    }

    /// A card the SDK's form would not submit.
    struct CardProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// Plays the SDK, the customer and ecommpay for one `presentPayment` call.
    ///
    /// 1. The SDK's checks before it opens the form (seed: "the library checks for any errors and opens
    ///    the payment form only if no errors occur"), each a `500` with a `PaymentError`: see
    ///    ``sdkParameterProblem(_:method:)``; an unknown project or a signature that does not match
    ///    (`serverUnauthorized`); a `payment_id` the project already has (`paymentAlreadyExist`).
    /// 2. `outcome` `cancel`: the customer closes the form: `200`, nothing recorded (no callback; a
    ///    status request answers "not found", as the docs say of a closed Payment Page).
    /// 3. `mock_mode` `success`/`decline` (seed "Testing", ios `MockModeType`): `0`/`100` at once,
    ///    nothing recorded, nothing charged, no callback.
    /// 4. The customer pays with `card` (a test card decides, ``EcommpayTestCard``) or Apple Pay (always
    ///    approved, *emulator choice*). The payment is recorded, the ledger charged for a successful sale,
    ///    and the callback(s) queued.
    func sdkPay(params: JSONValue, signature: String?, method: String, card: EcommpayCardInput?, outcome: String,
                mock: String, waitForCallbacks: Bool) async -> Result<SDKPaymentResult, CardProblem> {
        if let (code, message) = sdkParameterProblem(params, method: method) { return .success(Self.sdkError(code, message)) }
        guard let signature, !signature.isEmpty else { return .success(Self.sdkError(.illegalArguments, "signature: required")) }
        let projectId = Int(params["project_id"]?.parameterText ?? "")
        guard let project = project(projectId) else {
            return .success(Self.sdkError(.serverUnauthorized, "project_id: unknown project"))
        }
        // The SDK presents with the signature of its own `paramsForSignature` (MsdkCore.h): only the
        // `SignatureParam` parameters, so `operation_type` and the additional fields are not covered.
        let signed = EcommpaySignature.sdkParamsForSignature(params)
        guard constantTimeEqual(EcommpaySignature.mac(signed, secret: project.secretKey), signature) else {
            return .success(Self.sdkError(.serverUnauthorized, "signature: does not match the parameters (expected the HMAC-SHA512 of the SDK's "
                + "paramsForSignature \"" + signed + "\")"))
        }
        let paymentId = params["payment_id"]?.stringValue ?? ""
        let operationType = params["operation_type"]?.stringValue ?? "sale"
        let amount = Int64(params["payment_amount"]?.parameterText ?? "") ?? 0
        let currency = params["payment_currency"]?.stringValue ?? ""
        if outcome == "cancel" { return .success(SDKPaymentResult(status: 200, payment: nil, error: nil)) }
        if mock != "disabled" {
            let status = mock == "success" ? Self.successStatus(operationType) : "decline"
            return .success(SDKPaymentResult(status: mock == "success" ? 0 : 100, payment: .init(
                status: status, type: Self.paymentType(operationType), id: paymentId, date: Self.dateText(now()), method: method,
                sum: amount, currency: currency, token: nil, account: nil), error: nil))
        }
        guard payments[Self.key(project.projectId, paymentId)] == nil else {
            return .success(Self.sdkError(.paymentAlreadyExist, "payment_id: the project already has payment \(paymentId)"))
        }
        var behaviour = EcommpayTestCard.Behaviour.success
        var details: CardDetails?
        if method == "card" {
            guard let card else { return .failure(CardProblem(description: "card: required for method card")) }
            if let problem = card.problem(now: now()) { return .failure(CardProblem(description: problem)) }
            behaviour = EcommpayTestCard.behaviour(of: card.number)
            details = card.details
        }
        var payment = Payment(project: project, id: paymentId, via: "sdk", operationType: operationType, method: method,
                              amount: amount, currency: currency, description: params["payment_description"]?.stringValue,
                              customerId: params["customer_id"]?.stringValue, status: "processing", created: now(), card: details)
        if operationType == "verify" || operationType == "tokenize" { payment.token = Self.randomHex(count: 32) }
        record(payment)
        let key = payment.key
        switch behaviour {
        case .decline: finish(key, success: false)
        case .threeDSecure(let pass): finish(key, success: pass, threeDSecure: true)
        case .cascade: cascade(key, threeDSecure: false)
        case .success: finish(key, success: true)
        }
        if waitForCallbacks { await self.waitForCallbacks(of: key) }
        guard let final = payments[key] else { return .success(Self.sdkError(.unknown, "payment lost")) }
        let succeeded = final.status == Self.successStatus(operationType)
        return .success(SDKPaymentResult(status: succeeded ? 0 : 100, payment: sdkPayment(final), error: nil))
    }

    /// The SDK's checks of the signed parameters, in order; each problem is `illegalArguments` unless named.
    /// - `project_id` an integer (seed: "projectId (integer)"; ios `Int32`);
    /// - `payment_id` a non-empty string (seed: "a payment identifier unique within the project");
    /// - `payment_amount` a whole number ≥ 0 (seed: "the payment amount in the smallest currency unit");
    ///   `0` exactly for `verify` (seed "Payment card verification": "debiting a dummy (zero) amount");
    /// - `payment_currency` three capital letters (ISO 4217 alpha-3);
    /// - `operation_type`, when given, `sale`, `auth`, `verify` or `tokenize` (ios `ActionType`);
    /// - `customer_id`, when given, a string (the seed lists it as required, ios has `customerID: String?`:
    ///   *emulator choice*, optional: the article lists it as required, the iOS SDK as optional);
    /// - `payment_description`, when given, 1–255 characters (seed Table 1);
    /// - `language_code`, when given, one of the project's languages (seed: "If the language is not
    ///   supported for the project, the payment form is not opened");
    /// - `hide_saved_wallets`, when given, a boolean (seed Table 1);
    /// - for a card payment, `customer_email` or `customer_phone` (seed: "For card payments, also pass
    ///   the additionalFields parameter with at least one of … customer_email or customer_phone").
    func sdkParameterProblem(_ params: JSONValue, method: String) -> (SDKErrorCode, String)? {
        guard case .number(let project) = params["project_id"], Int(project) != nil else {
            return (.illegalArguments, "project_id: required, an integer")
        }
        guard let paymentId = params["payment_id"]?.stringValue, !paymentId.isEmpty else {
            return (.illegalArguments, "payment_id: required, a non-empty string")
        }
        guard case .number(let amountText) = params["payment_amount"], let amount = Int64(amountText), amount >= 0 else {
            return (.illegalArguments, "payment_amount: required, a whole number of minor units ≥ 0")
        }
        guard let currency = params["payment_currency"]?.stringValue, currency.count == 3,
              currency.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) else {
            return (.illegalArguments, "payment_currency: required, ISO 4217 alpha-3 (e.g. USD)")
        }
        let operationType: String
        if let value = params["operation_type"] {
            guard let text = value.stringValue, ["sale", "auth", "verify", "tokenize"].contains(text) else {
                return (.paymentRequestTypeNotExist, "operation_type: sale, auth, verify or tokenize")
            }
            operationType = text
        } else {
            operationType = "sale"
        }
        if operationType == "verify", amount != 0 { return (.illegalArguments, "payment_amount: must be 0 for verify") }
        if operationType != "verify", operationType != "tokenize", amount == 0 {
            return (.illegalArguments, "payment_amount: must be more than 0 for \(operationType)")
        }
        if let value = params["customer_id"], value.stringValue == nil { return (.illegalArguments, "customer_id: a string") }
        if let value = params["payment_description"] {
            guard let text = value.stringValue, (1...255).contains(text.count) else {
                return (.illegalArguments, "payment_description: 1–255 characters")
            }
        }
        if let value = params["language_code"] {
            guard let text = value.stringValue, languages.contains(text.lowercased()) else {
                return (.illegalArguments, "language_code: not supported for the project (supported: \(languages.sorted().joined(separator: ", ")))")
            }
        }
        if let value = params["hide_saved_wallets"], case .bool = value {} else if params["hide_saved_wallets"] != nil {
            return (.illegalArguments, "hide_saved_wallets: a boolean")
        }
        if method == "card" {
            let email = params["customer_email"]?.stringValue ?? ""
            let phone = params["customer_phone"]?.stringValue ?? ""
            if email.isEmpty, phone.isEmpty {
                return (.illegalArguments, "customer_email or customer_phone: at least one is required for card payments")
            }
        }
        return nil
    }

    /// The status of a payment whose action succeeded: `awaiting capture` for `auth` (python SDK
    /// `Callback.AW_CAP_STATUS`; seed: a two-step purchase is captured later), `success` otherwise.
    static func successStatus(_ operationType: String) -> String {
        operationType == "auth" ? "awaiting capture" : "success"
    }

    /// `payment.type`: `purchase` for `sale` and `auth` (js callback sample 1: `type: 'purchase'` for a
    /// `sale` operation); the action itself for `verify` and `tokenize` (*emulator choice*).
    static func paymentType(_ operationType: String) -> String {
        operationType == "sale" || operationType == "auth" ? "purchase" : operationType
    }

    /// Ends the first attempt of payment `key`: success (the action's success status) or decline.
    func finish(_ key: String, success: Bool, threeDSecure: Bool? = nil, providerId: Int = 1) {
        guard var payment = payments[key] else { return }
        let type = payment.operationType
        let failed3DS = threeDSecure == true && !success
        let amount = type == "verify" || type == "tokenize" ? 0 : payment.amount
        payment.status = success ? Self.successStatus(type) : "decline"
        payments[key] = payment
        addOperation(type, status: success ? "success" : "decline", amount: amount, to: key, providerId: providerId,
                     code: failed3DS ? Self.threeDSecureFailedCode : nil, message: failed3DS ? Self.threeDSecureFailedMessage : nil,
                     eci: threeDSecure == nil ? (payment.method == "card" ? "07" : nil) : (success ? "05" : nil))
        queueCallback(for: key)
    }

    /// The seed's cascade: the first provider declines (callback: `payment.status` `awaiting retry`,
    /// woo `EcpGatewayPaymentStatus::AWAITING_RETRY` "Status when customer can try pay one more time
    /// using cascading", and `cascading_with_redirect` true), then a second provider succeeds on the same
    /// payment (callback with the final status; `cascading_with_redirect` false, *emulator choice*).
    func cascade(_ key: String, threeDSecure: Bool) {
        guard var payment = payments[key] else { return }
        payment.status = "awaiting retry"
        payment.cascadingWithRedirect = true
        payments[key] = payment
        addOperation(payment.operationType, status: "decline", amount: payment.amount, to: key, providerId: 1)
        queueCallback(for: key)
        payments[key]?.cascadingWithRedirect = false
        finish(key, success: true, threeDSecure: threeDSecure ? true : nil, providerId: 2)
    }

    /// The SDK's `Payment` for a recorded payment.
    func sdkPayment(_ payment: Payment) -> SDKPaymentResult.Payment {
        SDKPaymentResult.Payment(status: payment.status, type: Self.paymentType(payment.operationType), id: payment.id,
                                 date: Self.dateText(payment.operations.last?.date ?? payment.created), method: payment.method,
                                 sum: payment.amount, currency: payment.currency, token: payment.token,
                                 account: payment.card.map { .init(number: $0.masked) })
    }
}
