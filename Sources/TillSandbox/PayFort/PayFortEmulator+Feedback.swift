import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension PayFortEmulator {
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
        var request = URLRequest(url: url, timeoutInterval: Self.seconds(notificationTimeout))
        request.httpMethod = "POST"
        switch merchant.feedbackFormat {
        case .form:
            request.setValue("application/x-www-form-urlencoded; charset=utf-8", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(FormEncoding.encode(fields).utf8)
        case .json:
            request.setValue("application/json; charset=utf-8", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(JSONValue.sortedObject(fields.mapValues(JSONValue.string)).serializedBytes)
        }
        let id = nextDeliveryID
        nextDeliveryID += 1
        let summary = (reference: fields["merchant_reference"] ?? "", fortID: fields["fort_id"] ?? "",
                       code: fields["response_code"] ?? "")
        deliveries[id] = Task {
            await self.deliver(request, url: url, summary: summary)
            self.deliveries[id] = nil
        }
    }

    private func deliver(_ request: URLRequest, url: URL,
                         summary: (reference: String, fortID: String, code: String)) async {
        for attempt in 1...notificationTries {
            if attempt > 1 {
                do { try await Task.sleep(for: notificationInterval) } catch { return }
            }
            var status: Int?
            do {
                let (_, response) = try await session.data(for: request)
                status = (response as? HTTPURLResponse)?.statusCode
            } catch {
                status = nil
            }
            let record = NotificationAttempt(url: url, status: status, attempt: attempt, merchantReference: summary.reference,
                                             fortID: summary.fortID, responseCode: summary.code)
            attempts.append(record)
            logger.debug("feedback delivery", metadata: [
                "merchant_reference": .string(summary.reference), "attempt": .stringConvertible(attempt),
                "status": .string(status.map(String.init) ?? "no answer"),
            ])
            if record.acknowledged { return }
        }
        logger.warning("feedback not acknowledged; giving up", metadata: ["merchant_reference": .string(summary.reference)])
    }
}
