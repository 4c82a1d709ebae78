import Foundation
import Logging

extension PayFortEmulator {
    /// Transaction feedback ready to send: what APS POSTs to the merchant's notification URL.
    struct Feedback: MerchantNotification {
        var url: URL
        var contentType: String
        var body: [UInt8]
        var merchantReference: String
        var fortID: String
        var responseCode: String

        var key: String { fortID }
        var headers: [(name: String, value: String)] { [("Content-Type", contentType)] }
        var logMetadata: Logger.Metadata { ["merchant_reference": .string(merchantReference)] }

        /// APS counts 2xx or 302 as an acknowledgement.
        func isAcknowledged(by response: DeliveryResponse) -> Bool { response.isSuccess || response.status == 302 }

        func record(_ delivery: DeliveryTry) -> NotificationAttempt {
            NotificationAttempt(url: url, status: delivery.status, attempt: delivery.attempt, merchantReference: merchantReference,
                                fortID: fortID, responseCode: responseCode)
        }
    }

    /// Sends transaction feedback for `values` to the merchant's notification URL, if it has one:
    /// every value as text, signed with the response phrase over the unencoded values, as a form post
    /// (feedback-form.txt) or a JSON object of strings (feedback-json.json) per
    /// ``PayFortMerchant/feedbackFormat``, retried until the merchant answers 2xx or 302 or the tries
    /// run out (FORT mobile SDK guide §6.8.3: 10 tries, 10 seconds apart). Returns at once; delivery
    /// runs on its own.
    func notify(_ values: [String: String], merchant: PayFortMerchant) {
        guard let url = merchant.notificationURL else { return }
        var fields = values
        fields[Signature.signatureKey] = Self.sign(fields, merchant: merchant)
        let contentType: String
        let body: [UInt8]
        switch merchant.feedbackFormat {
        case .form:
            contentType = "application/x-www-form-urlencoded; charset=utf-8"
            body = Array(FormEncoding.encode(fields).utf8)
        case .json:
            contentType = "application/json; charset=utf-8"
            body = JSONValue.sortedObject(fields.mapValues(JSONValue.string)).serializedBytes
        }
        deliverer.queue(Feedback(url: url, contentType: contentType, body: body, merchantReference: fields["merchant_reference"] ?? "",
                                 fortID: fields["fort_id"] ?? "", responseCode: fields["response_code"] ?? ""))
    }
}
