import Foundation
import TillGatewayKit

/// Where a PayFort (Amazon Payment Services) integration talks to. APS has two hosts per environment:
/// the server-to-server API (`FortAPI/paymentApi`) and the page a customer's device posts to
/// (`FortAPI/paymentPage`) (payfort/payfort-php-sdk `PaymentTypeAdapter` and `PaymentTypeAdapterApi`;
/// FORT Mobile SDK guide §5.3).
public enum PayFortEnvironment: Sendable, Hashable {
    /// `https://sbpaymentservices.payfort.com` and `https://sbcheckout.payfort.com`.
    case sandbox
    /// `https://paymentservices.payfort.com` and `https://checkout.payfort.com`.
    case production
    /// One base URL for both paths (the local sandbox, `till sandbox`, or a proxy):
    /// `{base}/FortAPI/paymentApi` and `{base}/FortAPI/paymentPage`.
    case custom(URL)

    /// `FortAPI/paymentApi`: SDK_TOKEN, PURCHASE/AUTHORIZATION with a token, CHECK_STATUS, CAPTURE, REFUND,
    /// VOID_AUTHORIZATION.
    public var paymentAPI: URL {
        switch self {
        case .sandbox: URL(string: "https://sbpaymentservices.payfort.com/FortAPI/paymentApi")!
        case .production: URL(string: "https://paymentservices.payfort.com/FortAPI/paymentApi")!
        case .custom(let base): base.appendingPathComponent("FortAPI/paymentApi")
        }
    }

    /// `FortAPI/paymentPage`: where the customer's device posts the TOKENIZATION form.
    public var paymentPage: URL {
        switch self {
        case .sandbox: URL(string: "https://sbcheckout.payfort.com/FortAPI/paymentPage")!
        case .production: URL(string: "https://checkout.payfort.com/FortAPI/paymentPage")!
        case .custom(let base): base.appendingPathComponent("FortAPI/paymentPage")
        }
    }

    /// Whether a page PayFort answers with (a 3-D Secure URL) may be plain `http`: only on a custom
    /// base URL that is itself `http` (the local sandbox).
    package var allowsPlainHTTP: Bool {
        if case .custom(let base) = self { return base.scheme == "http" }
        return false
    }
}

/// How the customer's card reaches PayFort: the `integration` setting. Both are APS's documented
/// in-app card flows; the merchant server never sees the card in either.
public enum PayFortIntegration: String, Sendable, Hashable, CaseIterable {
    /// The FORT mobile SDK collects the card in its own screen. Prepare gets an `sdk_token` for the
    /// device (the SDK's `device_id`); the app hands the operation request to the SDK, which reports
    /// through its `success` / `canceled` / `faild` callbacks. Needs the FORT SDK in the app.
    case mobileSDK = "mobile_sdk"
    /// The custom merchant page (Merchant Page 2.0): the app shows Till's card form and posts it from
    /// the device straight to `FortAPI/paymentPage` with the server's signed TOKENIZATION fields; the
    /// token comes back on the return URL, and the merchant server sends PURCHASE or AUTHORIZATION with
    /// it. Needs nothing from PayFort in the app. The default.
    case merchantPage = "merchant_page"
}

// MARK: Requests

/// `SDK_TOKEN` (FORT Mobile SDK guide §5.4.1): the server asks for a token for one device.
public struct PayFortSDKTokenRequest: Sendable, Hashable {
    /// The merchant's access code.
    public var accessCode: String
    /// The merchant's identifier.
    public var merchantIdentifier: String
    /// `en` or `ar`.
    public var language: String
    /// The FORT SDK's device id (iOS `PayFortController.getUDID()`, Android `FortSdk.getDeviceId`).
    public var deviceID: String

    /// A token request for one device.
    public init(accessCode: String, merchantIdentifier: String, language: String, deviceID: String) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.language = language
        self.deviceID = deviceID
    }

    /// The unsigned parameters, in the guide's order.
    public var parameters: PayFortParameters {
        PayFortParameters(strings: [("service_command", "SDK_TOKEN"), ("access_code", accessCode),
                                    ("merchant_identifier", merchantIdentifier), ("language", language), ("device_id", deviceID)])
    }
}

/// The signed hidden fields of the custom merchant page's `TOKENIZATION` form (payfort/payfort-dotnet-sdk
/// `HtmlProviderTests`, payfort/payfort-php-sdk `CCCustomTokenization`). The card fields the customer
/// types are posted with them but never signed.
public struct PayFortTokenizationForm: Sendable, Hashable {
    /// The merchant's access code.
    public var accessCode: String
    /// The merchant's identifier.
    public var merchantIdentifier: String
    /// The attempt reference.
    public var merchantReference: String
    /// `en` or `ar`.
    public var language: String
    /// Where PayFort sends the customer back with the token (the attempt's return URL).
    public var returnURL: String

    /// The hidden fields of one attempt.
    public init(accessCode: String, merchantIdentifier: String, merchantReference: String, language: String, returnURL: String) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.merchantReference = merchantReference
        self.language = language
        self.returnURL = returnURL
    }

    /// The unsigned hidden fields, in the .NET SDK's order.
    public var parameters: PayFortParameters {
        PayFortParameters(strings: [("service_command", "TOKENIZATION"), ("return_url", returnURL), ("access_code", accessCode),
                                    ("merchant_identifier", merchantIdentifier), ("merchant_reference", merchantReference),
                                    ("language", language)])
    }

    /// The names of the hidden fields (with `signature`), in the order they are posted.
    public static let fieldNames = ["service_command", "return_url", "access_code", "merchant_identifier", "merchant_reference",
                                    "language", "signature"]
    /// The names of the card fields the customer types, in the order they are posted (never signed).
    public static let cardFieldNames = ["card_number", "expiry_date", "card_security_code", "card_holder_name"]
}

/// A server-to-server `PURCHASE` or `AUTHORIZATION` with a `token_name` (the custom merchant page's
/// second step): the fields of the vendor's sandbox traffic and of payfort/payfort-php-sdk
/// `PaymentTypeAdapter` (required: command, merchant_reference, amount, currency, language,
/// customer_email, customer_ip, token_name).
public struct PayFortPaymentRequest: Sendable, Hashable {
    /// `PURCHASE` or `AUTHORIZATION`.
    public var command: String
    /// Minor units (a JSON number, as both official SDKs send it).
    public var amount: Int64
    /// ISO 4217 code.
    public var currency: String
    /// The customer's e-mail.
    public var customerEmail: String
    /// The token of the tokenization return.
    public var tokenName: String
    /// Shown to the customer; at most 150 characters.
    public var orderDescription: String?
    /// The customer's IP address.
    public var customerIP: String
    /// The customer's name.
    public var customerName: String?
    /// The customer's phone number.
    public var phoneNumber: String?
    /// Where the customer comes back after 3-D Secure.
    public var returnURL: String?
    /// Optional documented fields (`payment_option`, `eci`, `settlement_reference`, `merchant_extra…`), in order.
    public var optional: [(String, String)]
    /// The merchant's access code.
    public var accessCode: String
    /// The merchant's identifier.
    public var merchantIdentifier: String
    /// The attempt reference.
    public var merchantReference: String
    /// `en` or `ar`.
    public var language: String

    /// A payment request with a token.
    public init(command: String, amount: Int64, currency: String, customerEmail: String, tokenName: String,
                orderDescription: String? = nil, customerIP: String, customerName: String? = nil, phoneNumber: String? = nil,
                returnURL: String? = nil, optional: [(String, String)] = [], accessCode: String, merchantIdentifier: String,
                merchantReference: String, language: String) {
        self.command = command
        self.amount = amount
        self.currency = currency
        self.customerEmail = customerEmail
        self.tokenName = tokenName
        self.orderDescription = orderDescription
        self.customerIP = customerIP
        self.customerName = customerName
        self.phoneNumber = phoneNumber
        self.returnURL = returnURL
        self.optional = optional
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.merchantReference = merchantReference
        self.language = language
    }

    /// Equal when their parameters are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.parameters == rhs.parameters }
    /// Hashes the parameters.
    public func hash(into hasher: inout Hasher) { hasher.combine(parameters) }

    /// The unsigned parameters, in the order of the vendor's sandbox traffic.
    public var parameters: PayFortParameters {
        var members: [OrderedJSON.Member] = [
            .init(key: "command", value: .string(command)), .init(key: "amount", value: .number(String(amount))),
            .init(key: "currency", value: .string(currency)), .init(key: "customer_email", value: .string(customerEmail)),
            .init(key: "token_name", value: .string(tokenName)),
        ]
        func add(_ key: String, _ value: String?) {
            if let value, !value.isEmpty { members.append(.init(key: key, value: .string(value))) }
        }
        add("order_description", orderDescription)
        add("customer_ip", customerIP)
        add("customer_name", customerName)
        add("phone_number", phoneNumber)
        add("return_url", returnURL)
        for (key, value) in optional { add(key, value) }
        add("access_code", accessCode)
        add("merchant_identifier", merchantIdentifier)
        add("merchant_reference", merchantReference)
        add("language", language)
        return PayFortParameters(members)
    }
}

/// `CHECK_STATUS` (docs `incommon.md`; payfort/magento2-payfort `checkOrderStatus`).
public struct PayFortCheckStatusRequest: Sendable, Hashable {
    /// The merchant's access code.
    public var accessCode: String
    /// The merchant's identifier.
    public var merchantIdentifier: String
    /// The attempt reference.
    public var merchantReference: String
    /// `en` or `ar`.
    public var language: String
    /// FORT's order id, when known (optional: payfort/payfort-dotnet-sdk `CheckStatusRequestCommand`).
    public var fortID: String?

    /// A status query for one order.
    public init(accessCode: String, merchantIdentifier: String, merchantReference: String, language: String, fortID: String? = nil) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.merchantReference = merchantReference
        self.language = language
        self.fortID = fortID
    }

    /// The unsigned parameters, in the docs' order.
    public var parameters: PayFortParameters {
        var p = PayFortParameters(strings: [("query_command", "CHECK_STATUS"), ("access_code", accessCode),
                                            ("merchant_identifier", merchantIdentifier), ("merchant_reference", merchantReference),
                                            ("language", language)])
        if let fortID, !fortID.isEmpty { p["fort_id"] = .string(fortID) }
        return p
    }
}

/// `CAPTURE`, `REFUND` or `VOID_AUTHORIZATION` (docs `maintenanceparameters.md`; payfort/payfort-php-sdk
/// `PaymentCaptureModel`, `PaymentRefundModel`, `PaymentVoidAuthorizationModel`).
public struct PayFortMaintenanceRequest: Sendable, Hashable {
    /// The three operations.
    public enum Command: String, Sendable, Hashable {
        case capture = "CAPTURE"
        case refund = "REFUND"
        case void = "VOID_AUTHORIZATION"

        /// The response code of a successful operation (payfort/woocommerce-payfort constants).
        public var successCode: String {
            switch self {
            case .capture: PayFortCodes.captureSuccess
            case .refund: PayFortCodes.refundSuccess
            case .void: PayFortCodes.voidSuccess
            }
        }
    }

    /// The operation.
    public var command: Command
    /// The merchant's access code.
    public var accessCode: String
    /// The merchant's identifier.
    public var merchantIdentifier: String
    /// The attempt reference.
    public var merchantReference: String
    /// Capture and refund: mandatory. Void: sent only when given (the two official SDKs send none, the
    /// docs list it as mandatory).
    public var amount: Money?
    /// `en` or `ar`.
    public var language: String
    /// FORT's order id, when known.
    public var fortID: String?
    /// Shown to the customer; at most 150 characters.
    public var orderDescription: String?
    /// Refund only, optional.
    public var maintenanceReference: String?

    /// A maintenance operation on one order.
    public init(command: Command, accessCode: String, merchantIdentifier: String, merchantReference: String, amount: Money?,
                language: String, fortID: String? = nil, orderDescription: String? = nil, maintenanceReference: String? = nil) {
        self.command = command
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.merchantReference = merchantReference
        self.amount = amount
        self.language = language
        self.fortID = fortID
        self.orderDescription = orderDescription
        self.maintenanceReference = maintenanceReference
    }

    /// The unsigned parameters, in the docs' order.
    public var parameters: PayFortParameters {
        var members: [OrderedJSON.Member] = [
            .init(key: "command", value: .string(command.rawValue)), .init(key: "access_code", value: .string(accessCode)),
            .init(key: "merchant_identifier", value: .string(merchantIdentifier)),
            .init(key: "merchant_reference", value: .string(merchantReference)),
        ]
        if let amount {
            members.append(.init(key: "amount", value: .number(String(amount.minorUnits))))
            members.append(.init(key: "currency", value: .string(amount.currency.code)))
        }
        members.append(.init(key: "language", value: .string(language)))
        for (key, value) in [("fort_id", fortID), ("order_description", orderDescription), ("maintenance_reference", maintenanceReference)] {
            if let value, !value.isEmpty { members.append(.init(key: key, value: .string(value))) }
        }
        return PayFortParameters(members)
    }
}

// MARK: Answers

/// A message from PayFort whose signature was verified (or, in the app, one it cannot verify and only
/// shows), read strictly through the kit's ``DocumentedFields``: only the fields Till reads
/// (``readFields``), only non-empty values (an empty one may not have been signed), each within its
/// documented characters (``PayFortFields/rules``); every other key is never read. Duplicate keys were
/// refused when it was parsed.
///
/// PayFort signs `key=value` pairs with no separator, so whoever holds a signed message can cut the
/// same text into other keys (a `return_url` the app supplied may hold `=`). What binds the outcome is
/// `response_code`, whose five digits begin with the `status` ("the first 2 digits represent the
/// response status": docs `incommon.md`, `transactioncodes.md`; APS's error-codes page): a message
/// with a `status` must carry a `response_code` that begins with it. The text `response_code=…` can
/// only be cut into `response_code` again or swallowed by another key, so a re-cut can neither change
/// the status nor, without losing `response_code`, reach the keys before it (`merchant_reference`,
/// `amount`) from an echoed URL.
public struct PayFortMessage: Sendable, Hashable {
    /// The parameters as received.
    public let parameters: PayFortParameters
    /// The empty-value rule its signature verified under (`nil`: not verified, as in the app).
    public let rule: PayFortSignature.EmptyValues?
    /// The fields Till reads, as read and checked.
    public let fields: DocumentedValues

    /// The fields Till reads, each checked against ``PayFortFields/rules`` when present.
    public static let readFields = ["command", "service_command", "query_command", "merchant_reference", "amount", "currency",
                                    "status", "response_code", "response_message", "fort_id", "token_name", "sdk_token", "device_id",
                                    "transaction_status", "transaction_code", "transaction_message", "authorized_amount",
                                    "captured_amount", "refunded_amount", "card_bin", "maintenance_reference", "3ds_url"]

    /// The rules of ``readFields``: how every received message is read.
    public static let documented = PayFortFields.documented.restricted(to: readFields)

    /// Reads `parameters`; `field` names the message in errors (`body`, `return`, `answer`).
    /// - Throws: ``CheckoutError`` naming `<field>.<key>`: `invalid_field` or `field_too_long` for a
    ///   read field outside its documented characters or length (also a `3ds_url` that is not a web
    ///   address), `invalid_currency` for an unknown currency, `missing_field` naming `response_code`
    ///   for a `status` without one, and `invalid_field` naming `status` for a `status` that is not the
    ///   first two digits of `response_code`.
    public init(_ parameters: PayFortParameters, rule: PayFortSignature.EmptyValues?, field: String = "body",
                allowPlainHTTP: Bool = false) throws(CheckoutError) {
        let fields = try Self.documented.read(parameters.members, prefix: field, gateway: "payfort")
        if let code = fields["currency"], Currency.lookup(code) == nil {
            throw CheckoutError(.invalidCurrency, field: field + ".currency", message: "not an ISO 4217 currency", gateway: "payfort")
        }
        if let status = fields["status"] {
            guard let responseCode = fields["response_code"] else {
                throw CheckoutError(.missingField, field: field + ".response_code",
                                    message: "PayFort sends a response_code with every status; a status without one is not read",
                                    gateway: "payfort")
            }
            guard responseCode.hasPrefix(status) else {
                throw CheckoutError(.invalidField, field: field + ".status",
                                    message: "the status must be the first two digits of response_code (\(responseCode))", gateway: "payfort",
                                    gatewayCode: responseCode)
            }
        }
        if let text = fields["3ds_url"] {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host != nil,
                  scheme == "https" || (allowPlainHTTP && scheme == "http") else {
                throw CheckoutError(.invalidField, field: field + ".3ds_url", message: "not an https address", gateway: "payfort")
            }
        }
        self.parameters = parameters
        self.rule = rule
        self.fields = fields
    }

    /// A read field's value, or nil when absent, empty or not one of ``readFields``.
    public subscript(key: String) -> String? { fields[key] }

    /// `status`: two digits.
    public var status: String? { self["status"] }
    /// `response_code`: the status and a three-digit message code.
    public var responseCode: String? { self["response_code"] }
    /// PayFort's message, made safe to keep.
    public var responseMessage: String? { GatewayText.safe(self["response_message"]) }
    /// `merchant_reference`: the attempt reference.
    public var merchantReference: String? { self["merchant_reference"] }
    /// `fort_id`: FORT's order id.
    public var fortID: String? { self["fort_id"] }
    /// `command`, or `service_command`, or `query_command`.
    public var command: String? { self["command"] ?? self["service_command"] ?? self["query_command"] }
    /// The 3-D Secure page, when PayFort asks for one.
    public var threeDSURL: URL? { self["3ds_url"].flatMap(URL.init(string:)) }

    /// `amount` (minor units) with `currency` as money, when both are there.
    public var amount: Money? {
        guard let minor = self["amount"].flatMap({ Int64($0) }), let currency = self["currency"].flatMap(Currency.lookup) else { return nil }
        return Money(minorUnits: minor, currency: currency)
    }
}
