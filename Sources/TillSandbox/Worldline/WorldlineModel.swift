import Foundation

/// The payment statuses of Connect's `Payment.status` and the `statusCategory` each belongs to
/// (connect-sdk-python3 6.3.0 `v1/domain/payment.py` `status` and `order_status_output.py`
/// `status_category` docstrings).
///
/// How a card payment moves in the emulator (choices, since no source describes a card payment's
/// life step by step):
/// - `authorizationMode` `SALE`, or `requiresApproval` `false` → `CAPTURED`;
/// - `FINAL_AUTHORIZATION` / `PRE_AUTHORIZATION` → `PENDING_CAPTURE` (capture or approve it);
/// - neither (`requiresApproval` absent or true) → `PENDING_APPROVAL`, as the vendor's create-payment
///   fixtures answer (approve or capture it);
/// - approve / a final or full capture → `CAPTURED`; cancel of an uncaptured payment → `CANCELLED`;
/// - refunds adding up to the captured amount → `REFUNDED`.
///
/// `statusCode` is the "numeric status code of the legacy API" which "you should not write new
/// business logic based on" (`order_status_output.py`). Only three values have a vendor source:
/// `REJECTED` 100, `PENDING_APPROVAL` 600 (python test resources) and `PAID` 1000 (the webhook
/// test body). **Every other code below is the emulator's own choice**, not vendor-sourced.
enum WorldlinePaymentStatus: String, Sendable, CaseIterable {
    case created = "CREATED"
    case redirected = "REDIRECTED"
    case pendingPayment = "PENDING_PAYMENT"
    case accountVerified = "ACCOUNT_VERIFIED"
    case pendingFraudApproval = "PENDING_FRAUD_APPROVAL"
    case pendingApproval = "PENDING_APPROVAL"
    case pendingCompletion = "PENDING_COMPLETION"
    case pendingCapture = "PENDING_CAPTURE"
    case authorizationRequested = "AUTHORIZATION_REQUESTED"
    case captureRequested = "CAPTURE_REQUESTED"
    case captured = "CAPTURED"
    case paid = "PAID"
    case chargebackNotification = "CHARGEBACK_NOTIFICATION"
    case reversed = "REVERSED"
    case chargebacked = "CHARGEBACKED"
    case refunded = "REFUNDED"
    case rejected = "REJECTED"
    case rejectedCapture = "REJECTED_CAPTURE"
    case cancelled = "CANCELLED"

    /// `statusOutput.statusCategory` (python `order_status_output.py` docstring).
    var category: String {
        switch self {
        case .created: "CREATED"
        case .redirected, .pendingPayment: "PENDING_PAYMENT"
        case .accountVerified: "ACCOUNT_VERIFIED"
        case .pendingFraudApproval, .pendingApproval, .pendingCompletion, .pendingCapture: "PENDING_MERCHANT"
        case .authorizationRequested, .captureRequested: "PENDING_CONNECT_OR_3RD_PARTY"
        case .captured, .paid, .chargebackNotification: "COMPLETED"
        case .reversed, .chargebacked: "REVERSED"
        case .refunded: "REFUNDED"
        case .rejected, .rejectedCapture, .cancelled: "UNSUCCESSFUL"
        }
    }

    /// `statusOutput.statusCode`. Sourced: 100, 600, 1000; the rest are choices (see the type's doc).
    var code: Int {
        switch self {
        case .created: 0
        case .redirected: 50
        case .pendingPayment: 55
        case .accountVerified: 300
        case .pendingFraudApproval: 525
        case .pendingApproval: 600
        case .pendingCompletion: 650
        case .pendingCapture: 680
        case .authorizationRequested: 625
        case .captureRequested: 800
        case .captured: 900
        case .paid: 1000
        case .chargebackNotification: 1500
        case .reversed: 1520
        case .chargebacked: 1510
        case .refunded: 1800
        case .rejected: 100
        case .rejectedCapture: 1100
        case .cancelled: 99999
        }
    }

    /// Whether `cancel` may be called (`statusOutput.isCancellable`).
    var isCancellable: Bool {
        switch self {
        case .created, .redirected, .pendingPayment, .pendingFraudApproval, .pendingApproval, .pendingCompletion,
             .pendingCapture, .authorizationRequested:
            true
        default:
            false
        }
    }

    /// Whether an authorization is held or money was taken (`statusOutput.isAuthorized`).
    var isAuthorized: Bool {
        switch self {
        case .pendingApproval, .pendingCapture, .captureRequested, .captured, .paid, .chargebackNotification,
             .refunded, .pendingFraudApproval, .pendingCompletion:
            true
        default:
            false
        }
    }

    /// The webhook event type announcing this status (`payment.<status in lower case>`, the naming of
    /// the documented event types, e.g. `payment.pending_approval`, `payment.captured`).
    var eventType: String { "payment." + rawValue.lowercased() }
}

/// A card as the emulator keeps it: never the full number or the CVV.
struct StoredCard: Sendable {
    var productId: Int
    /// `************1111`, as the vendor fixtures show `card.cardNumber`.
    var maskedNumber: String
    /// `MMYY`.
    var expiryDate: String
}

struct PaymentRecord: Sendable {
    var id: String
    var merchantId: String
    var customerId: String?
    var amount: Int64
    var currency: String
    var merchantReference: String?
    var card: StoredCard
    var status: WorldlinePaymentStatus
    var statusChanged: Date
    /// What an approved authorization leads to (`CAPTURED`, `PENDING_APPROVAL`, `PENDING_CAPTURE`).
    var approvedStatus: WorldlinePaymentStatus
    var authorisationCode: String?
    var amountCaptured: Int64 = 0
    var refundIDs: [String] = []
    var captureIDs: [String] = []
    var errors: [WorldlineAPIError] = []
    /// The return URL and RETURNMAC of a 3-D Secure redirect.
    var returnURL: String?
    var returnMAC: String?
    var token: String?
}

struct RefundRecord: Sendable {
    var id: String
    var paymentId: String
    var merchantId: String
    var amount: Int64
    var currency: String
    var merchantReference: String?
    var status: String
    var statusChanged: Date
}

struct CaptureRecord: Sendable {
    var id: String
    var paymentId: String
    var merchantId: String
    var amount: Int64
    var currency: String
    var isFinal: Bool
    var statusChanged: Date
    /// `order.references.merchantCaptureReference` of the request, echoed in `captureOutput.references`.
    var merchantCaptureReference: String? = nil
}

/// An idempotence key's state (per merchant).
enum IdempotenceEntry: Sendable {
    /// Being processed since the Unix millisecond given.
    case inProgress(Int64)
    /// Answered; a repeat gets the same answer with `X-GCS-Idempotence-Request-Timestamp`.
    case done(WorldlineAnswer, Int64)
}

/// An event ready to send (kept for replays).
struct WebhookMessage: Sendable {
    var eventId: String
    var type: String
    var merchantId: String
    var body: [UInt8]
    var keyId: String
    var signature: String
}

// MARK: - Answers and errors

/// How the HTTP layer should deliver an answer.
struct WorldlineAnswer: Sendable {
    enum Delivery: Sendable, Equatable {
        case respond
        /// Hold for the emulator's timeout, then 504; `idempotenceKey` is released afterwards.
        case holdThenGatewayTimeout
        /// Close the connection without an answer.
        case dropConnection
    }

    var status: Int
    var body: [UInt8]
    var contentType = "application/json"
    var headers: [(String, String)] = []
    var delivery: Delivery = .respond
    /// The idempotence entry to mark done once a held answer is finally given up on.
    var heldIdempotenceKey: String?

    static func json<T: Encodable>(_ value: T, status: Int = 200, headers: [(String, String)] = []) -> WorldlineAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return WorldlineAnswer(status: status, body: Array(data), headers: headers)
    }
}

/// One item of a Connect error body (`APIError`: python `v1/domain/api_error.py`; swift `ApiErrorItem`).
struct WorldlineAPIError: Codable, Sendable, Hashable {
    var code: String
    var message: String
    var httpStatusCode: Int?
    var propertyName: String?
    var requestId: String?
    var category: String?
    var id: String?
}

/// A refused request: the HTTP status and the Connect error body (`{errorId, errors[], paymentResult?}`).
struct WorldlineRefusal: Error, Sendable {
    var status: Int
    var errors: [WorldlineAPIError]
    var paymentResult: CreatePaymentResultWire?
    var refundResult: RefundWire?

    init(_ status: Int, _ error: WorldlineAPIError, paymentResult: CreatePaymentResultWire? = nil, refundResult: RefundWire? = nil) {
        self.status = status
        var error = error
        if error.httpStatusCode == nil { error.httpStatusCode = status }
        self.errors = [error]
        self.paymentResult = paymentResult
        self.refundResult = refundResult
    }

    var answer: WorldlineAnswer {
        .json(ErrorResponseWire(errorId: UUID().uuidString.lowercased(), errors: errors, paymentResult: paymentResult,
                                refundResult: refundResult),
              status: status)
    }
}

/// The error codes the emulator answers.
///
/// Vendor-sourced (python test resources, js client SDK, the docs' error-code list): `9002`, `1409`, `21000020`,
/// `21000120`, `430330`, `9999`, `1007`, `430285`. **The others are the emulator's own** (no source lists Connect's codes
/// for those cases); the message names what is wrong and `propertyName` the field.
enum WorldlineErrors {
    /// `401` `9002` `MISSING_OR_INVALID_AUTHORIZATION` (python `invalid_authorization.json`).
    static let authorization = WorldlineAPIError(code: "9002", message: "MISSING_OR_INVALID_AUTHORIZATION")

    /// `409` `1409` `DUPLICATE REQUEST IN PROGRESS` (python `duplicate_request.json`).
    static let duplicateRequest = WorldlineAPIError(code: "1409", message: "DUPLICATE REQUEST IN PROGRESS")

    /// `400` `21000020` (python `createPayment.failure.invalidCardNumber.json`).
    static let luhn = WorldlineAPIError(
        code: "21000020", message: "VALUE **************** OF FIELD CREDITCARDNUMBER DID NOT PASS THE LUHNCHECK",
        propertyName: "cardPaymentMethodSpecificInput.card.cardNumber")

    /// `400` `21000120` (python `invalid_request.json`).
    static func expiry(_ value: String) -> WorldlineAPIError {
        WorldlineAPIError(code: "21000120",
                          message: "paymentMethodSpecificInput.card.expiryDate (\(value)) IS IN THE PAST OR NOT IN CORRECT MMYY FORMAT",
                          propertyName: "cardPaymentMethodSpecificInput.card.expiryDate")
    }

    /// `402` `430330` `Not authorised` (python `createPayment.failure.rejected.json`).
    static let notAuthorised = WorldlineAPIError(code: "430330", message: "Not authorised")

    /// `500` `9999` `UNKNOWN_SERVER_ERROR` (python `unknownServerError.json`).
    static let unknownServerError = WorldlineAPIError(code: "9999", message: "UNKNOWN_SERVER_ERROR")

    /// `404` `1007` `UNKNOWN_PRODUCT_ID` with `propertyName` `productId` (js `C2SCommunicator.ts`).
    static let unknownProduct = WorldlineAPIError(code: "1007", message: "UNKNOWN_PRODUCT_ID", propertyName: "productId")

    // Not vendor-sourced codes from here on.

    /// A required property is missing or malformed (emulator's code).
    static func invalid(_ property: String, _ detail: String) -> WorldlineAPIError {
        WorldlineAPIError(code: "20000000", message: "INVALID_VALUE: \(property): \(detail)", propertyName: property)
    }

    /// An unknown resource (emulator's code and message).
    static func notFound(_ what: String, _ id: String) -> WorldlineAPIError {
        WorldlineAPIError(code: "1002", message: "UNKNOWN_\(what.uppercased())_ID: \(id)")
    }

    /// The operation is not possible in the resource's current state (emulator's code).
    static func notAllowed(_ detail: String) -> WorldlineAPIError {
        WorldlineAPIError(code: "300450", message: "ACTION_NOT_ALLOWED_ON_TARGET: \(detail)")
    }

    /// The encrypted customer input cannot be used (emulator's code).
    static func encryptedInput(_ detail: String) -> WorldlineAPIError {
        WorldlineAPIError(code: "1100", message: "INVALID_ENCRYPTED_CUSTOMER_INPUT: \(detail)",
                          propertyName: "encryptedCustomerInput")
    }

    /// The card's product is not offered in the payment's context (emulator's code).
    static func productNotAllowed(_ productId: Int) -> WorldlineAPIError {
        WorldlineAPIError(code: "1008", message: "PAYMENT_PRODUCT_NOT_ALLOWED_IN_CONTEXT: \(productId)",
                          propertyName: "paymentProductId")
    }

    /// A refund the emulator's bank refuses: `430285` `Not authorised`, HTTP 402, from the Connect docs' error-code list
    /// (`documentation/error-codes`: "The cardholder's bank does not allow to process the transaction"), which does not say
    /// which operations answer it; using it for a refund is the emulator's choice. The body's shape, `refundResult`
    /// beside `errors`, is python `refund_error_response.py`.
    static let refundRefused = WorldlineAPIError(code: "430285", message: "Not authorised")

    /// An unknown IIN (emulator's code; the Swift SDK decodes a 404 body as an IIN response).
    static let unknownIIN = WorldlineAPIError(code: "1010", message: "UNKNOWN_IIN", propertyName: "bin")
}

extension WorldlineAPIError {
    init(code: String, message: String, propertyName: String? = nil) {
        self.init(code: code, message: message, httpStatusCode: nil, propertyName: propertyName, requestId: nil,
                  category: nil, id: nil)
    }
}

// MARK: - Wire models (Server API; shapes from the python domain classes)

struct ErrorResponseWire: Encodable {
    var errorId: String
    var errors: [WorldlineAPIError]
    var paymentResult: CreatePaymentResultWire?
    /// A declined refund's result (python `refund_error_response.py`).
    var refundResult: RefundWire? = nil
}

struct AmountOfMoneyWire: Codable, Sendable {
    var amount: Int64?
    var currencyCode: String?
}

/// `PaymentReferences` (python `payment_references.py`).
struct PaymentReferencesWire: Codable, Sendable {
    var merchantReference: String?
    var merchantCaptureReference: String? = nil
    var paymentReference: String?
}

struct CardEssentialsWire: Codable, Sendable {
    var cardNumber: String
    var expiryDate: String
}

struct CardOutputWire: Codable, Sendable {
    var paymentProductId: Int
    var authorisationCode: String?
    var card: CardEssentialsWire
    var token: String?
}

struct PaymentOutputWire: Codable, Sendable {
    var amountOfMoney: AmountOfMoneyWire
    var references: PaymentReferencesWire
    var paymentMethod: String
    var cardPaymentMethodSpecificOutput: CardOutputWire
    var amountPaid: Int64
    var amountCaptured: Int64
    var amountRefunded: Int64
}

struct PaymentStatusOutputWire: Codable, Sendable {
    var errors: [WorldlineAPIError]?
    var isCancellable: Bool
    var statusCategory: String
    var statusCode: Int
    var statusCodeChangeDateTime: String
    var isAuthorized: Bool
    var isRefundable: Bool
}

struct PaymentWire: Codable, Sendable {
    var id: String
    var paymentOutput: PaymentOutputWire
    var status: String
    var statusOutput: PaymentStatusOutputWire
}

struct CreationOutputWire: Codable, Sendable {
    var additionalReference: String
    var externalReference: String
    var token: String?
    var isNewToken: Bool?
}

struct RedirectDataWire: Codable, Sendable {
    var RETURNMAC: String
    var redirectURL: String
}

struct MerchantActionWire: Codable, Sendable {
    var actionType: String
    var redirectData: RedirectDataWire?
}

struct CreatePaymentResultWire: Codable, Sendable {
    var creationOutput: CreationOutputWire
    var merchantAction: MerchantActionWire?
    var payment: PaymentWire
}

struct SessionResponseWire: Codable, Sendable {
    var assetUrl: String
    var clientApiUrl: String
    var clientSessionId: String
    var customerId: String
    var invalidTokens: [String]
    var region: String
}

struct RefundOutputWire: Codable, Sendable {
    var amountOfMoney: AmountOfMoneyWire
    var references: PaymentReferencesWire
    var paymentMethod: String
    var amountPaid: Int64
}

struct RefundStatusOutputWire: Codable, Sendable {
    var isCancellable: Bool
    var statusCategory: String
    var statusCode: Int
    var statusCodeChangeDateTime: String
}

struct RefundWire: Codable, Sendable {
    var id: String
    var refundOutput: RefundOutputWire
    var status: String
    var statusOutput: RefundStatusOutputWire
}

struct CaptureOutputWire: Codable, Sendable {
    var amountOfMoney: AmountOfMoneyWire
    var references: PaymentReferencesWire
    var paymentMethod: String
    var amountPaid: Int64
}

struct CaptureStatusOutputWire: Codable, Sendable {
    var isFinal: Bool
    var isRefundable: Bool
    var statusCode: Int
    var statusCodeChangeDateTime: String
}

struct CaptureWire: Codable, Sendable {
    var id: String
    var captureOutput: CaptureOutputWire
    var status: String
    var statusOutput: CaptureStatusOutputWire
}

struct FindPaymentsWire: Codable, Sendable {
    var limit: Int
    var offset: Int
    var payments: [PaymentWire]
    var totalCount: Int
}

struct FindRefundsWire: Codable, Sendable {
    var limit: Int
    var offset: Int
    var refunds: [RefundWire]
    var totalCount: Int
}

struct PaymentOnlyWire: Codable, Sendable {
    var payment: PaymentWire
}

struct RefundsWire: Codable, Sendable {
    var refunds: [RefundWire]
}

struct CapturesWire: Codable, Sendable {
    var captures: [CaptureWire]
}

struct WebhookEventWire: Codable, Sendable {
    var apiVersion: String
    var id: String
    var created: String
    var merchantId: String
    var type: String
    var payment: PaymentWire?
    var refund: RefundWire?
}

// MARK: - Requests (python domain classes: only the members the emulator reads)

struct CreatePaymentRequestWire: Decodable {
    struct Order: Decodable {
        struct References: Decodable { var merchantReference: String? }
        struct Customer: Decodable {
            struct Address: Decodable { var countryCode: String? }
            var billingAddress: Address?
        }
        var amountOfMoney: AmountOfMoneyWire?
        var references: References?
        var customer: Customer?
    }
    struct CardInput: Decodable {
        struct Card: Decodable {
            var cardNumber: String?
            var expiryDate: String?
            var cvv: String?
            var cardholderName: String?
        }
        struct ThreeDSecure: Decodable {
            struct RedirectionData: Decodable { var returnUrl: String? }
            var redirectionData: RedirectionData?
        }
        var card: Card?
        var paymentProductId: Int?
        var authorizationMode: String?
        var requiresApproval: Bool?
        var returnUrl: String?
        var threeDSecure: ThreeDSecure?
        var tokenize: Bool?
    }
    var encryptedCustomerInput: String?
    var order: Order?
    var cardPaymentMethodSpecificInput: CardInput?
}

struct ApprovePaymentRequestWire: Decodable {
    var amount: Int64?
}

/// `CapturePaymentRequest` (python `capture_payment_request.py`, `capture_payment_order.py`,
/// `capture_payment_order_references.py`).
struct CapturePaymentRequestWire: Decodable {
    struct Order: Decodable {
        struct References: Decodable { var merchantCaptureReference: String? }
        var references: References?
    }
    var amount: Int64?
    var isFinal: Bool?
    var order: Order?
}

struct RefundRequestWire: Decodable {
    struct References: Decodable { var merchantReference: String? }
    var amountOfMoney: AmountOfMoneyWire?
    var refundReferences: References?
}

/// The decrypted `encryptedCustomerInput` (swift `ConnectSDK.preparePaymentRequestJSON`, js
/// `Encryptor.createEncryptedConsumerInput`, android `EncryptDataJsonSerializer`).
struct CustomerInputWire: Decodable {
    struct Value: Decodable {
        var key: String
        var value: String
    }
    var clientSessionId: String
    var nonce: String
    var paymentProductId: Int
    var accountOnFileId: Int?
    var tokenize: Bool?
    var paymentValues: [Value]?
}

extension DecodingError {
    /// The dotted path of the member at fault (`order.amountOfMoney.amount`).
    var propertyPath: String {
        let path: [any CodingKey]
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            path = context.codingPath
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
        @unknown default:
            path = []
        }
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "body" : text
    }
}

enum WorldlineDates {
    /// `statusCodeChangeDateTime`: `YYYYMMDDHH24MISS` (python `order_status_output.py`), in UTC.
    static func statusTime(_ date: Date) -> String {
        format(date, "yyyyMMddHHmmss")
    }

    /// A webhook event's `created`: `yyyy-MM-dd'T'HH:mm:ss.SSSZ` (docs event-structure), in UTC.
    static func eventTime(_ date: Date) -> String {
        format(date, "yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    }

    private static func format(_ date: Date, _ pattern: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.dateFormat = pattern
        return formatter.string(from: date)
    }
}
