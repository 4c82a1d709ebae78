import Foundation
import TillGatewayKit
import TillPayFort

/// The merchant's PayFort credentials. Server side only: this type exists only in the server
/// library, so an app cannot hold them.
public struct PayFortCredentials: Sendable, Hashable {
    /// The merchant's access code.
    public var accessCode: String
    /// The merchant's identifier.
    public var merchantIdentifier: String
    /// Signs requests.
    public var requestPhrase: String
    /// Verifies responses and notifications.
    public var responsePhrase: String
    /// The SHA variant both phrases are used with.
    public var algorithm: PayFortSignature.Algorithm

    /// Credentials as PayFort's back office shows them.
    public init(accessCode: String, merchantIdentifier: String, requestPhrase: String, responsePhrase: String,
                algorithm: PayFortSignature.Algorithm = .sha256) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.requestPhrase = requestPhrase
        self.responsePhrase = responsePhrase
        self.algorithm = algorithm
    }
}

/// PayFort FORT (Amazon Payment Services) through its mobile SDK flow: the **server half**, a
/// ``CheckoutServer`` holding the merchant's ``PayFortCredentials``.
///
/// | step | PayFort |
/// |---|---|
/// | Prepare | `SDK_TOKEN` request signed with the request phrase; the response verified with the response phrase |
/// | Confirm | transaction feedback (form or JSON) verified with the response phrase; `CHECK_STATUS` |
///
/// The app half is `PayFortGateway` (library `TillPayFort`). The attempt reference is sent as
/// `merchant_reference`, so every attempt can be checked.
public struct PayFortServer: CheckoutServer {
    /// The gateway's identifier (`"payfort"` unless a merchant runs several PayFort accounts).
    public let gateway: GatewayID
    /// Where requests go.
    public let environment: PayFortEnvironment
    /// PayFort's language for messages: `en` or `ar`.
    public let language: String
    private let credentials: PayFortCredentials
    private let api: PayFortAPI

    /// The server half of a PayFort gateway.
    public init(id: GatewayID = "payfort", environment: PayFortEnvironment, credentials: PayFortCredentials,
                language: String = "en", transport: any HTTPTransport) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.language = language
        self.api = PayFortAPI(gateway: id, environment: environment, transport: transport)
    }

    /// What PayFort can do: the same as `PayFortGateway.capabilities`.
    public var capabilities: GatewayCapabilities { PayFortGateway.capabilities }

    /// Which declines may move to another gateway: only a purchase that failed with a technical problem on
    /// PayFort's side (`13006`). An authorization's technical problem (`03006`) is not: PayFort's own
    /// WooCommerce plugin lists it among the on-hold codes (`APS_ONHOLD_RESPONSE_CODES` in
    /// payfort/woocommerce-payfort `lib/class-aps-constants.php`), so a hold may exist and trying another
    /// gateway could authorise twice. Card declines, insufficient funds and everything else stay too.
    public var decisionTable: DecisionTable {
        DecisionTable(["13006": .retryNext, "20064": .stepUp])
    }

    // MARK: Prepare

    /// **Prepare**: checks the operation parameters, then gets an SDK token for the device
    /// (`SDK_TOKEN`, signed with the request phrase; the answer verified with the response phrase).
    /// The app receives the operation parameters and the token, never a credential.
    /// - Throws: ``CheckoutError`` naming the field at fault before anything is sent; category
    ///   `unavailable` when no token could be had (a token cannot move money); `configuration` when
    ///   PayFort refuses the request or its answer's signature does not match.
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let intent = context.intent
        let operation = try operationParameters(for: context)
        let issues = PayFortFields.validateOperation(operation.merging(["sdk_token": "pending"]) { old, _ in old })
        if let first = issues.first { throw first.error.attributed(to: gateway) }

        let deviceID = intent.metadata["device_id"] ?? context.attempt.rawValue
        if let issue = PayFortFields.check("device_id", deviceID, prefix: "intent.metadata.").first { throw issue.error.attributed(to: gateway) }
        var request = PayFortParameters(strings: [
            ("service_command", "SDK_TOKEN"), ("access_code", credentials.accessCode),
            ("merchant_identifier", credentials.merchantIdentifier), ("language", language), ("device_id", deviceID),
        ])
        let signer = PayFortSignature(credentials.algorithm)
        request["signature"] = .string(signer.sign(request, phrase: credentials.requestPhrase))

        // An SDK token cannot move money, so any failure to get one is safe to move on from.
        let response: PayFortParameters
        do {
            response = try await api.post(request)
        } catch {
            throw CheckoutError(.gatewayUnreachable, category: .unavailable, message: "no SDK token: \(error.message)", gateway: gateway)
        }
        do {
            try signer.verify(response, phrase: credentials.responsePhrase)
        } catch {
            throw CheckoutError(.signatureMismatch, category: .configuration, field: "signature",
                                message: "the SDK token response's signature does not match the response phrase (\(response.text("response_code") ?? "no code"))",
                                gateway: gateway, gatewayCode: response.text("response_code"),
                                gatewayMessage: GatewayText.safe(response.text("response_message")))
        }
        guard response.text("status") == "22", let token = response.text("sdk_token"), !token.isEmpty else {
            let code = response.text("response_code")
            throw CheckoutError(code == "00008" ? .signatureMismatch : .misconfigured, category: .configuration,
                                message: "PayFort refused the SDK token request", gateway: gateway,
                                gatewayCode: code, gatewayMessage: GatewayText.safe(response.text("response_message")))
        }
        var parameters = operation
        parameters["sdk_token"] = token
        return Preparation(gateway: gateway, attempt: context.attempt, method: intent.method, amount: intent.amount,
                           parameters: parameters, returnURL: context.returnURL, expiresAt: Date().addingTimeInterval(3_600))
    }

    /// The operation request's parameters (all but the token), from the intent.
    func operationParameters(for context: AttemptContext) throws(CheckoutError) -> [String: String] {
        let intent = context.intent
        guard intent.action != .verify else {
            throw CheckoutError(.unsupportedAction, field: "intent.action", message: "PayFort's mobile SDK does not verify cards", gateway: gateway)
        }
        guard let email = intent.customer.email, !email.isEmpty else {
            throw CheckoutError(.missingField, field: "intent.customer.email", message: "PayFort requires the customer's e-mail", gateway: gateway)
        }
        var p: [String: String] = [
            "command": intent.action == .sale ? "PURCHASE" : "AUTHORIZATION",
            "merchant_reference": context.attempt.rawValue,
            "amount": String(intent.amount.minorUnits),
            "currency": intent.amount.currency.code,
            "language": language,
            "customer_email": email,
            "eci": "ECOMMERCE",
        ]
        if intent.method == .mada { p["payment_option"] = "MADA" }
        if let option = intent.metadata["payment_option"] { p["payment_option"] = option }
        if let ip = intent.customer.ipAddress { p["customer_ip"] = ip }
        if let description = intent.description { p["order_description"] = description }
        let name = [intent.customer.firstName, intent.customer.lastName].compactMap { $0 }.joined(separator: " ")
        if !name.isEmpty { p["customer_name"] = name }
        if let phone = intent.customer.phone { p["phone_number"] = phone }
        for key in ["merchant_extra", "merchant_extra1", "merchant_extra2", "merchant_extra3", "merchant_extra4", "merchant_extra5",
                    "settlement_reference", "token_name"] {
            if let value = intent.metadata[key] { p[key] = value }
        }
        if let returnURL = context.returnURL { p["return_url"] = returnURL.absoluteString }
        return p
    }

    // MARK: Confirm

    /// **Confirm**: verifies transaction feedback (form-encoded, or JSON) with the response phrase and
    /// reads its status.
    /// - Throws: ``CheckoutError`` `signature_mismatch` (category `verification`) for a signature that
    ///   does not match, `missing_field` for none; `malformed_body` or `duplicate_field` (a key sent
    ///   twice) for a body that cannot be read one way only.
    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let parameters = try Self.parse(notification.body, mediaType: notification.mediaType)
        try PayFortSignature(credentials.algorithm).verify(parameters, phrase: credentials.responsePhrase)
        return VerifiedNotification(report: try report(from: parameters, statusKey: "status"))
    }

    /// The `merchant_reference` a notification claims, read without verifying it.
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? Self.parse(notification.body, mediaType: notification.mediaType))?.text("merchant_reference").map(AttemptReference.init(rawValue:))
    }

    /// **Confirm**: `CHECK_STATUS` for the attempt (signed with the request phrase; the answer
    /// verified with the response phrase); the transaction's status is the report.
    /// - Throws: ``CheckoutError`` `signature_mismatch` when the answer's signature does not match;
    ///   `invalid_field` naming `merchant_reference` when PayFort could not check the order.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        var request = PayFortParameters(strings: [
            ("query_command", "CHECK_STATUS"), ("access_code", credentials.accessCode),
            ("merchant_identifier", credentials.merchantIdentifier), ("merchant_reference", query.attempt.rawValue),
            ("language", language),
        ])
        let signer = PayFortSignature(credentials.algorithm)
        request["signature"] = .string(signer.sign(request, phrase: credentials.requestPhrase))
        let response = try await api.post(request)
        do {
            try signer.verify(response, phrase: credentials.responsePhrase)
        } catch {
            throw CheckoutError(.signatureMismatch, category: .verification, field: "signature",
                                message: "the CHECK_STATUS response's signature does not match", gateway: gateway)
        }
        guard response.text("status") == "12" else {
            throw CheckoutError(.invalidField, field: "merchant_reference", message: "PayFort could not check this order",
                                gateway: gateway, gatewayCode: response.text("response_code"),
                                gatewayMessage: GatewayText.safe(response.text("response_message")))
        }
        return try report(from: response, statusKey: "transaction_status", codeKey: "transaction_code", messageKey: "transaction_message")
    }

    /// Maps PayFort's two-digit status to Till's. Anything unlisted stays an unknown status (never
    /// applied, never success).
    public static func status(_ code: String) -> PaymentStatus {
        switch code {
        case "14", "04": .paid                 // purchase success, capture success
        case "02": .authorized
        case "13", "03", "00": .failed          // purchase / authorization failure, invalid request
        case "15", "19", "20": .pending         // uncertain, pending, on hold: resolve with CHECK_STATUS
        case "06": .refunded
        case "08": .cancelled                   // void success
        default: PaymentStatus(rawValue: "payfort_status_\(code)")
        }
    }

    func report(from parameters: PayFortParameters, statusKey: String, codeKey: String = "response_code",
                messageKey: String = "response_message") throws(CheckoutError) -> StatusReport {
        guard let reference = parameters.text("merchant_reference"), !reference.isEmpty else {
            throw CheckoutError(.missingField, field: "merchant_reference", message: "the message names no order", gateway: gateway)
        }
        guard let raw = parameters.text(statusKey), !raw.isEmpty else {
            throw CheckoutError(.missingField, field: statusKey, message: "the message carries no status", gateway: gateway)
        }
        var amount: Money?
        if let currency = parameters.text("currency").flatMap(Currency.lookup), let minor = parameters.text("amount").flatMap({ Int64($0) }) {
            amount = Money(minorUnits: minor, currency: currency)
        }
        let code = parameters.text(codeKey)
        let fortID = parameters.text("fort_id")
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: reference), gatewayReference: fortID,
                            status: Self.status(raw), amount: amount, gatewayStatus: raw, gatewayCode: code,
                            gatewayMessage: GatewayText.safe(parameters.text(messageKey)),
                            eventID: "\(fortID ?? reference):\(raw):\(code ?? "")")
    }

    /// A notification body: JSON when it says so (or, untyped, looks like it), form-encoded otherwise.
    static func parse(_ body: Data, mediaType: String?) throws(CheckoutError) -> PayFortParameters {
        if mediaType == "application/json" || (mediaType == nil && body.first == UInt8(ascii: "{")) {
            return try PayFortParameters.json(body)
        }
        return try PayFortParameters.form(body)
    }
}
