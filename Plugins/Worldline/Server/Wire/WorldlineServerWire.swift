import Foundation

// The Server API's JSON, as the official Python server SDK (connect-sdk-python3 6.3.0,
// `worldline/connect/sdk/v1/domain/*.py`) reads and writes it: only the members Till sends or reads.
// Decoding ignores members Till does not read (the gateway adds members over time); a member Till
// reads with the wrong type is a decoding error naming its path.

/// `AmountOfMoney` (`amount_of_money.py`): "Amount in cents and always having 2 decimals" and an ISO 4217 code;
/// ``WorldlineAmount`` turns Till's money into the amount and back.
public struct WorldlineAmountOfMoney: Codable, Sendable, Hashable {
    public var amount: Int64
    public var currencyCode: String

    public init(amount: Int64, currencyCode: String) {
        self.amount = amount
        self.currencyCode = currencyCode
    }
}

/// `SessionRequest` (`session_request.py`): Till sends it empty (valid; captured from the Python SDK).
struct WorldlineSessionRequest: Encodable, Sendable {
    struct Filters: Encodable, Sendable {
        struct Filter: Encodable, Sendable { var products: [Int]? }
        var restrictTo: Filter?
        var exclude: Filter?
    }
    var paymentProductFilters: Filters?
}

/// `SessionResponse` (`session_response.py`).
public struct WorldlineSessionResponse: Codable, Sendable, Hashable {
    public var assetUrl: String?
    public var clientApiUrl: String?
    public var clientSessionId: String?
    public var customerId: String?
    public var invalidTokens: [String]?
    public var region: String?
}

/// `CreatePaymentRequest` (`create_payment_request.py`) with the members Till sends.
struct WorldlineCreatePaymentRequest: Encodable, Sendable {
    struct Order: Encodable, Sendable {
        struct References: Encodable, Sendable {
            /// `order_references.py`: at most 30 characters on the GlobalCollect platform, 50 on WL Online
            /// Payment Acceptance. Till's attempt references are 24.
            var merchantReference: String
            var descriptor: String?
        }
        struct Customer: Encodable, Sendable {
            struct ContactDetails: Encodable, Sendable { var emailAddress: String? }
            struct BillingAddress: Encodable, Sendable { var countryCode: String? }
            var billingAddress: BillingAddress?
            var contactDetails: ContactDetails?
            var locale: String?
            var merchantCustomerId: String?
        }
        var amountOfMoney: WorldlineAmountOfMoney
        var references: References
        var customer: Customer?
    }
    struct CardInput: Encodable, Sendable {
        struct ThreeDSecure: Encodable, Sendable {
            struct RedirectionData: Encodable, Sendable { var returnUrl: String }
            var redirectionData: RedirectionData?
        }
        var authorizationMode: String?
        /// `requiresApproval` (`abstract_card_payment_method_specific_input.py`): without it a card payment
        /// waits for the merchant's approval (the Python SDK's `createPayment.json`: PENDING_APPROVAL).
        var requiresApproval: Bool?
        var threeDSecure: ThreeDSecure?
    }
    var encryptedCustomerInput: String
    var order: Order
    var cardPaymentMethodSpecificInput: CardInput?
}

/// `StatusOutput` of a payment or refund (`order_status_output.py`, `payment_status_output.py`).
public struct WorldlineStatusOutput: Codable, Sendable, Hashable {
    public var statusCategory: String?
    public var statusCode: Int?
    public var isAuthorized: Bool?
    public var isRefundable: Bool?
    public var isCancellable: Bool?
    public var isRetriable: Bool?
    public var errors: [WorldlineAPIError.Item]?
}

/// `PaymentReferences` (`payment_references.py`); a capture's carries `merchantCaptureReference`, "your unique reference of
/// the capture".
public struct WorldlinePaymentReferences: Codable, Sendable, Hashable {
    public var merchantReference: String?
    public var merchantCaptureReference: String?
    public var paymentReference: String?
}

/// `PaymentOutput` (`payment_output.py`, extends `OrderOutput`).
public struct WorldlinePaymentOutput: Codable, Sendable, Hashable {
    public var amountOfMoney: WorldlineAmountOfMoney?
    public var references: WorldlinePaymentReferences?
    public var amountPaid: Int64?
    public var amountRefunded: Int64?
    public var amountReversed: Int64?
    public var amountCaptured: Int64?
    /// `amountCaptureRequested` / `amountRefundRequested` (`payment_output.py`).
    public var amountCaptureRequested: Int64?
    public var amountRefundRequested: Int64?
    public var paymentMethod: String?
}

/// `Payment` (`payment.py`).
public struct WorldlinePayment: Codable, Sendable, Hashable {
    public var id: String?
    public var paymentOutput: WorldlinePaymentOutput?
    public var status: String?
    public var statusOutput: WorldlineStatusOutput?
}

/// `MerchantAction` (`merchant_action.py`) with its `RedirectData` (`redirect_data_base.py`).
public struct WorldlineMerchantAction: Codable, Sendable, Hashable {
    public struct RedirectData: Codable, Sendable, Hashable {
        public var redirectURL: String?
        public var RETURNMAC: String?
    }
    public var actionType: String?
    public var redirectData: RedirectData?
}

/// `CreatePaymentResult` (`create_payment_result.py`); also the `paymentResult` of a declined payment
/// (`payment_error_response.py`).
public struct WorldlineCreatePaymentResult: Codable, Sendable, Hashable {
    public var merchantAction: WorldlineMerchantAction?
    public var payment: WorldlinePayment?
}

/// `FindPaymentsResponse` (`find_payments_response.py`).
struct WorldlineFindPaymentsResponse: Decodable, Sendable {
    var payments: [WorldlinePayment]?
    var totalCount: Int?
}

/// `CapturePaymentRequest` (`capture_payment_request.py`) with `order.references.merchantCaptureReference`
/// (`capture_payment_order.py`, `capture_payment_order_references.py`).
struct WorldlineCaptureRequest: Encodable, Sendable {
    struct Order: Encodable, Sendable {
        struct References: Encodable, Sendable { var merchantCaptureReference: String? }
        var references: References?
    }
    var amount: Int64?
    var isFinal: Bool?
    var order: Order?
}

/// `ApprovePaymentRequest` (`approve_payment_request.py`): `amount` "in case you want to approve the capture of a different
/// lower amount" (two-decimal cents, like every amount).
struct WorldlineApproveRequest: Encodable, Sendable {
    var amount: Int64?
}

/// `PaymentApprovalResponse` (`payment_approval_response.py`): the payment after the approval.
public struct WorldlinePaymentApprovalResponse: Codable, Sendable, Hashable {
    public var payment: WorldlinePayment?
}

/// `CaptureOutput` (`capture_output.py`, extends `OrderOutput`): this capture's own amount and references.
public struct WorldlineCaptureOutput: Codable, Sendable, Hashable {
    public var amountOfMoney: WorldlineAmountOfMoney?
    public var references: WorldlinePaymentReferences?
    public var amountPaid: Int64?
    public var amountReversed: Int64?
}

/// `CaptureStatusOutput` (`capture_status_output.py`): no category, no errors.
public struct WorldlineCaptureStatusOutput: Codable, Sendable, Hashable {
    public var isFinal: Bool?
    public var isRefundable: Bool?
    public var isRetriable: Bool?
    public var statusCode: Int?
}

/// `Capture` / `CaptureResponse` (`capture.py`).
public struct WorldlineCapture: Codable, Sendable, Hashable {
    public var id: String?
    public var captureOutput: WorldlineCaptureOutput?
    public var status: String?
    public var statusOutput: WorldlineCaptureStatusOutput?
}

/// `CapturesResponse` (`captures_response.py`): a payment's captures.
struct WorldlineCapturesResponse: Decodable, Sendable {
    var captures: [WorldlineCapture]?
}

/// `RefundsResponse` (`refunds_response.py`): a payment's refunds.
struct WorldlineRefundsResponse: Decodable, Sendable {
    var refunds: [WorldlineRefund]?
}

/// `RefundRequest` (`refund_request.py`) with `RefundReferences` (`refund_references.py`).
struct WorldlineRefundRequest: Encodable, Sendable {
    struct References: Encodable, Sendable { var merchantReference: String? }
    var amountOfMoney: WorldlineAmountOfMoney
    var refundReferences: References?
}

/// `RefundOutput` (`refund_output.py`, extends `OrderOutput`).
public struct WorldlineRefundOutput: Codable, Sendable, Hashable {
    public var amountOfMoney: WorldlineAmountOfMoney?
    public var references: WorldlinePaymentReferences?
    public var amountPaid: Int64?
}

/// `RefundResult` / `RefundResponse` (`refund_result.py`).
public struct WorldlineRefund: Codable, Sendable, Hashable {
    public var id: String?
    public var refundOutput: WorldlineRefundOutput?
    public var status: String?
    public var statusOutput: WorldlineStatusOutput?
}

/// `CancelPaymentResponse` (`cancel_payment_response.py`).
public struct WorldlineCancelResponse: Codable, Sendable, Hashable {
    public var payment: WorldlinePayment?
}

/// The error body of every failed call (`error_response.py`, `payment_error_response.py`,
/// `api_error.py`); a declined payment adds `paymentResult`.
public struct WorldlineAPIError: Codable, Sendable, Hashable {
    public struct Item: Codable, Sendable, Hashable {
        public var code: String?
        public var id: String?
        public var category: String?
        public var httpStatusCode: Int?
        public var message: String?
        public var propertyName: String?
        public var requestId: String?
    }
    public var errorId: String?
    public var errors: [Item]?
    public var paymentResult: WorldlineCreatePaymentResult?
    /// A declined refund's result (`refund_error_response.py`).
    public var refundResult: WorldlineRefund?
}

/// `WebhooksEvent` (`webhooks_event.py`; docs `webhooks/event-structure`).
public struct WorldlineWebhookEvent: Codable, Sendable, Hashable {
    public var apiVersion: String?
    public var id: String?
    public var created: String?
    public var merchantId: String?
    public var type: String?
    public var payment: WorldlinePayment?
    public var refund: WorldlineRefund?
    /// A `capture.*` event's capture (`webhooks_event.py` `capture`: `CaptureResponse`).
    public var capture: WorldlineCapture?
}
