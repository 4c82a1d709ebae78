import Foundation
import TillGatewayKit

/// ecommpay's `PaymentOptions`, every parameter of the iOS SDK article's tables ("SDK UI & Core for iOS",
/// Table 1, Table 2, the 3-D Secure tables, Apple Pay, testing) with the iOS SDK 4.0.8 types
/// (`ITECOMMPAY/mobile-sdk-ios-ui` `PaymentOptions.swift`, `AdditionalField*.swift`, `RecurreInfo.swift`,
/// `ThreeDSecureInfo.swift`).
///
/// The merchant server builds it from the stored payment and checks it (``validate(prefix:)``, every problem
/// naming its field). The app's adapter sets ``parameters`` on the SDK's `PaymentOptions`; the server signs
/// the SDK's own `paramsForSignature` (``EcommpayParamsForSignature``), never a string of its own making.
/// For the Payment Page the server signs the flat ``parameters`` into the URL. Money is in minor units
/// (`paymentAmount` 1999 is 19.99).
public struct EcommpayPaymentOptions: Sendable, Hashable {
    /// `projectId`: the project's id, assigned by ecommpay. Required.
    public var projectId: Int
    /// `paymentId`: unique within the project (Till's attempt reference). Required.
    public var paymentId: String
    /// `paymentAmount`: in minor units. Required (zero for ``Action/verify``).
    public var paymentAmount: Int64
    /// `paymentCurrency`: ISO 4217 alpha-3. Required.
    public var paymentCurrency: String
    /// `customerId`: the customer's id within the project (the article lists it as required for the form).
    public var customerId: String?
    /// `paymentDescription`: 1–255 characters.
    public var paymentDescription: String?
    /// `action`: ``Action/sale`` by default.
    public var action: Action
    /// `additionalFields`: card payments need `customer_email` or `customer_phone`.
    public var additionalFields: [AdditionalField]
    /// `receiptData`: Base64 of a JSON object.
    public var receiptData: String?
    /// `hideSavedWallets`: hide the customer's saved instruments.
    public var hideSavedWallets: Bool
    /// `forcePaymentMethod`: a payment method id (`card`).
    public var forcePaymentMethod: String?
    /// `languageCode`: ISO 639-1; the SDK speaks en, de, hu, it, es, fr and refuses to open in others.
    public var languageCode: String?
    /// `regionCode`: ISO 3166-1 alpha-2.
    public var regionCode: String?
    /// `token`: a saved card's token (iOS SDK; the Payment Page's `account_token`).
    public var token: String?
    /// `recurrentInfo` (Table 2).
    public var recurrentInfo: RecurrentInfo?
    /// `threeDSecureInfo` (the 3-D Secure 2 tables).
    public var threeDSecureInfo: ThreeDSecureInfo?
    /// `applePayOptions`: for Apple Pay.
    public var applePayOptions: ApplePayOptions?
    /// `mockModeType`: ``MockMode/disabled`` in production.
    public var mockMode: MockMode
    /// `brandColor` (the article; 4.0.8 has `primaryBrandColor`): `#RRGGBB`. Appearance only, never signed.
    public var brandColor: String?

    public init(projectId: Int, paymentId: String, paymentAmount: Int64, paymentCurrency: String, customerId: String? = nil,
                paymentDescription: String? = nil, action: Action = .sale, additionalFields: [AdditionalField] = [],
                receiptData: String? = nil, hideSavedWallets: Bool = false, forcePaymentMethod: String? = nil,
                languageCode: String? = nil, regionCode: String? = nil, token: String? = nil, recurrentInfo: RecurrentInfo? = nil,
                threeDSecureInfo: ThreeDSecureInfo? = nil, applePayOptions: ApplePayOptions? = nil, mockMode: MockMode = .disabled,
                brandColor: String? = nil) {
        self.projectId = projectId
        self.paymentId = paymentId
        self.paymentAmount = paymentAmount
        self.paymentCurrency = paymentCurrency
        self.customerId = customerId
        self.paymentDescription = paymentDescription
        self.action = action
        self.additionalFields = additionalFields
        self.receiptData = receiptData
        self.hideSavedWallets = hideSavedWallets
        self.forcePaymentMethod = forcePaymentMethod
        self.languageCode = languageCode
        self.regionCode = regionCode
        self.token = token
        self.recurrentInfo = recurrentInfo
        self.threeDSecureInfo = threeDSecureInfo
        self.applePayOptions = applePayOptions
        self.mockMode = mockMode
        self.brandColor = brandColor
    }

    /// `ActionType` (iOS: `Sale = 1, Auth = 2, Tokenize = 3, Verify = 4`); the raw value is the
    /// Payment Page's `operation_type`.
    public enum Action: String, Sendable, Hashable, CaseIterable {
        /// One-step purchase (the default).
        case sale
        /// Authorisation; the money is captured later through Gate `/v2/payment/card/capture`.
        case auth
        /// Tokenisation of a card (iOS SDK; not in the article's list).
        case tokenize
        /// A zero-amount check of the card.
        case verify
    }

    /// `MockModeType`: `disabled` (production), `success`, `decline`.
    public enum MockMode: String, Sendable, Hashable, CaseIterable {
        case disabled, success, decline
    }

    /// One `AdditionalField(type:value:)` or `AdditionalField(customName:value:)`.
    public struct AdditionalField: Sendable, Hashable {
        /// The field's name (`customer_email`, `billing_country`, or a custom name).
        public var name: String
        /// Its value.
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }

        /// The `AdditionalFieldType` names of the iOS SDK 4.0.8 (`AdditionalFieldType.swift`), besides `custom`.
        public static let knownNames: Set<String> = [
            "customer_first_name", "customer_middle_name", "customer_last_name", "customer_phone", "customer_email", "customer_country",
            "customer_state", "customer_city", "customer_address", "customer_zip", "customer_day_of_birth", "customer_birthplace",
            "customer_ssn", "customer_domain", "customer_mir", "customer_account_id", "customer_language", "customer_screen_res",
            "customer_save", "billing_postal", "billing_country", "billing_region", "billing_city", "billing_address",
            "identify_doc_number", "identify_doc_type", "identify_doc_issue_date", "identify_doc_issue_by",
        ]
    }

    /// `recurrentInfo` (the article's Table 2; iOS `RecurreInfo.swift` for the wire values).
    public struct RecurrentInfo: Sendable, Hashable {
        /// `C` one-click, `U` autopayment, `R` regular.
        public enum Kind: String, Sendable, Hashable, CaseIterable { case oneClick = "C", autopayment = "U", regular = "R" }
        /// `D W M Q Y`.
        public enum Period: String, Sendable, Hashable, CaseIterable { case day = "D", week = "W", month = "M", quarter = "Q", year = "Y" }
        /// One scheduled debit: `amount` in minor units, `date` `dd-mm-yyyy`.
        public struct Scheduled: Sendable, Hashable {
            public var date: String
            public var amount: Int64
            public init(date: String, amount: Int64) {
                self.date = date
                self.amount = amount
            }
        }

        public var kind: Kind
        public var period: Period?
        public var expiryDay: String?
        public var expiryMonth: String?
        public var expiryYear: String?
        /// With ``startDate``.
        public var scheduledPaymentID: String?
        /// `dd-mm-yyyy`; with ``scheduledPaymentID``.
        public var startDate: String?
        /// `hh:mm:ss`; with ``period``.
        public var time: String?
        public var schedule: [Scheduled]
        /// Minor units; sent only when positive (iOS).
        public var amount: Int64?

        public init(kind: Kind, period: Period? = nil, expiryDay: String? = nil, expiryMonth: String? = nil, expiryYear: String? = nil,
                    scheduledPaymentID: String? = nil, startDate: String? = nil, time: String? = nil, schedule: [Scheduled] = [],
                    amount: Int64? = nil) {
            self.kind = kind
            self.period = period
            self.expiryDay = expiryDay
            self.expiryMonth = expiryMonth
            self.expiryYear = expiryYear
            self.scheduledPaymentID = scheduledPaymentID
            self.startDate = startDate
            self.time = time
            self.schedule = schedule
            self.amount = amount
        }
    }

    /// `applePayOptions`: the Apple merchant id, a description, the merchant's country (ISO 3166-1 alpha-2).
    public struct ApplePayOptions: Sendable, Hashable {
        public var merchantID: String
        public var description: String?
        public var countryCode: String
        public init(merchantID: String, description: String? = nil, countryCode: String) {
            self.merchantID = merchantID
            self.description = description
            self.countryCode = countryCode
        }
    }

    /// `threeDSecureInfo`: the 3-D Secure 2 objects of the article, every field optional. Values are kept
    /// as the article types them (codes as strings, counts as integers).
    public struct ThreeDSecureInfo: Sendable, Hashable {
        /// `threeDSecurePaymentInfo` fields by their article names (`challengeIndicator`, `giftCard.amount` …).
        public var payment: [String: Value]
        /// `threeDSecureCustomerInfo` fields (`addressMatch`, `account.ageIndicator`, `shipping.city`, `mpiResult.acsOperationId` …).
        public var customer: [String: Value]

        public init(payment: [String: Value] = [:], customer: [String: Value] = [:]) {
            self.payment = payment
            self.customer = customer
        }

        /// A field's value.
        public enum Value: Sendable, Hashable {
            case text(String)
            case integer(Int64)
        }
    }

    // MARK: Parameters

    /// The options by the Payment Page's names (the SDK's own names live in its closed core): handed to the
    /// app's SDK adapter, which sets each on the SDK's `PaymentOptions`, and, the flat ones, signed into a
    /// Payment Page URL (the server SDKs' rule, ``EcommpaySignatureString``). Empty values are left out.
    public var parameters: OrderedJSON {
        var members: [OrderedJSON.Member] = []
        func add(_ key: String, _ value: OrderedJSON?) { if let value { members.append(.init(key: key, value: value)) }
        }
        func text(_ value: String?) -> OrderedJSON? { value.flatMap { $0.isEmpty ? nil : .string($0) } }
        add("project_id", .number(String(projectId)))
        add("payment_id", .string(paymentId))
        add("payment_amount", .number(String(paymentAmount)))
        add("payment_currency", .string(paymentCurrency))
        add("customer_id", text(customerId))
        add("payment_description", text(paymentDescription))
        add("operation_type", .string(action.rawValue))
        add("receipt_data", text(receiptData))
        if hideSavedWallets { add("hide_saved_wallets", .bool(true)) }
        add("force_payment_method", text(forcePaymentMethod))
        add("language_code", text(languageCode))
        add("region_code", text(regionCode))
        add("account_token", text(token))
        for field in additionalFields where !field.value.isEmpty { add(field.name, .string(field.value)) }
        if let recurrent = recurrentInfo {
            var r: [OrderedJSON.Member] = [.init(key: "type", value: .string(recurrent.kind.rawValue))]
            func radd(_ key: String, _ value: OrderedJSON?) { if let value { r.append(.init(key: key, value: value)) } }
            radd("period", recurrent.period.map { .string($0.rawValue) })
            radd("expiry_day", text(recurrent.expiryDay))
            radd("expiry_month", text(recurrent.expiryMonth))
            radd("expiry_year", text(recurrent.expiryYear))
            radd("scheduled_payment_id", text(recurrent.scheduledPaymentID))
            radd("start_date", text(recurrent.startDate))
            radd("time", text(recurrent.time))
            if let amount = recurrent.amount, amount > 0 { radd("amount", .number(String(amount))) }
            if !recurrent.schedule.isEmpty {
                radd("schedule", .array(recurrent.schedule.map {
                    .object([.init(key: "date", value: .string($0.date)), .init(key: "amount", value: .number(String($0.amount)))])
                }))
            }
            add("recurring", .object(r))
        }
        if let secure = threeDSecureInfo, !(secure.payment.isEmpty && secure.customer.isEmpty) {
            func tree(_ fields: [String: ThreeDSecureInfo.Value]) -> OrderedJSON {
                var root: [String: [String: ThreeDSecureInfo.Value]] = [:]
                var flat: [String: ThreeDSecureInfo.Value] = [:]
                for (name, value) in fields {
                    let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
                    if parts.count == 2 { root[Self.snake(parts[0]), default: [:]][Self.snake(parts[1])] = value } else { flat[Self.snake(name)] = value }
                }
                func json(_ value: ThreeDSecureInfo.Value) -> OrderedJSON {
                    switch value { case .text(let t): .string(t); case .integer(let n): .number(String(n)) }
                }
                var members = flat.sorted { $0.key < $1.key }.map { OrderedJSON.Member(key: $0.key, value: json($0.value)) }
                for (name, sub) in root.sorted(by: { $0.key < $1.key }) {
                    members.append(.init(key: name, value: .object(sub.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: json($0.value)) })))
                }
                return .object(members)
            }
            var s: [OrderedJSON.Member] = []
            if !secure.payment.isEmpty { s.append(.init(key: "payment", value: tree(secure.payment))) }
            if !secure.customer.isEmpty { s.append(.init(key: "customer", value: tree(secure.customer))) }
            add("secure_info", .object(s))
        }
        return .object(members)
    }

    /// `challengeIndicator` → `challenge_indicator`.
    static func snake(_ name: String) -> String {
        var out = ""
        for character in name {
            if character.isUppercase { out += "_" + character.lowercased() } else { out.append(character) }
        }
        return out
    }
}
