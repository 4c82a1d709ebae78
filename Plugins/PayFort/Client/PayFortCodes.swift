import Foundation
import TillGatewayKit

/// PayFort's codes: `response_code` is the two-digit `status` followed by a three-digit message code
/// (docs `transactioncodes.md`, as copied in bhaskarndas/payfortdoc@4536f9f; the same values in an
/// independent ActiveMerchant-style copy). `064` is "3-D Secure check requested", `029` "Insufficient
/// funds", `666` "Transaction declined", `071` "Failed to initiate connection" (not a decline).
public enum PayFortCodes {
    /// The two-digit statuses and what they mean.
    public static let statuses: [String: String] = [
        "00": "Invalid Request", "01": "Order Stored", "02": "Authorization Success", "03": "Authorization Failed",
        "04": "Capture Success", "05": "Capture failed", "06": "Refund Success", "07": "Refund Failed",
        "08": "Authorization Voided Successfully", "09": "Authorization Void Failed", "10": "Incomplete",
        "11": "Check status Failed", "12": "Check status success", "13": "Purchase Failure", "14": "Purchase Success",
        "15": "Uncertain Transaction", "17": "Tokenization failed", "18": "Tokenization success", "19": "Transaction pending",
        "20": "On hold", "21": "SDK Token creation failure", "22": "SDK Token creation success", "44": "3ds success",
        "45": "3ds failed",
    ]

    /// The three-digit message codes Till acts on, and what they mean.
    public static let messages: [String: String] = [
        "000": "Success", "001": "Missing parameter", "002": "Invalid parameter format", "004": "Invalid command",
        "005": "Invalid amount", "006": "Technical problem", "007": "Duplicate order number", "008": "Signature mismatch",
        "009": "Invalid merchant identifier", "010": "Invalid access code", "012": "Card expired", "013": "Invalid currency",
        "016": "Invalid card number", "029": "Insufficient funds", "030": "Authentication failed", "032": "Invalid parameter length",
        "036": "Order not found", "042": "Operation amount exceeds the authorized amount", "044": "Token name does not exist",
        "048": "Operation amount exceeds captured amount", "064": "3-D Secure check requested",
        "065": "Transaction waiting for customer's action", "066": "Merchant reference already exists",
        "068": "SDK service is inactive", "070": "device_id mismatch", "071": "Failed to initiate connection",
        "072": "Transaction has been cancelled by the consumer", "073": "Invalid request format", "074": "Transaction failed",
        "666": "Transaction declined", "773": "Transaction closed",
        "777": "The transaction has been processed, but failed to receive confirmation", "778": "Session timed-out",
        "785": "Transaction blocked by fraud check",
    ]

    /// Codes PayFort's own WooCommerce plugin treats as on hold, not failed (`APS_ONHOLD_RESPONSE_CODES`,
    /// payfort/woocommerce-payfort@941fe9d `lib/class-aps-constants.php`; `13006` is commented out there,
    /// so a purchase's technical problem is a failure).
    public static let onHold: Set<String> = [
        "15777", "15778", "15779", "15780", "15781", "00006", "01006", "02006", "03006", "04006", "05006", "06006", "07006",
        "08006", "09006", "11006", "17006",
    ]

    /// Success codes per command (payfort/woocommerce-payfort `lib/class-aps-constants.php`; sandbox logs).
    public static let purchaseSuccess = "14000", authorizationSuccess = "02000", captureSuccess = "04000",
                      refundSuccess = "06000", voidSuccess = "08000", checkStatusSuccess = "12000",
                      tokenizationSuccess = "18000", sdkTokenSuccess = "22000", threeDSecureRequested = "20064"

    /// The three-digit message code of a five-digit response code.
    public static func message(of responseCode: String?) -> String? {
        guard let responseCode, responseCode.count == 5 else { return nil }
        return String(responseCode.suffix(3))
    }

    /// Till's status for a payment answer: PayFort's `status` read with its `response_code`. An on-hold
    /// code is pending whatever its status; anything unlisted stays an unknown status, never applied
    /// and never success.
    public static func paymentStatus(_ status: String, responseCode: String? = nil) -> PaymentStatus {
        if let responseCode, onHold.contains(responseCode) { return .pending }
        switch status {
        case "14", "04": return .paid                 // purchase success, capture success
        case "02": return .authorized
        case "13", "03", "00": return .failed          // purchase / authorization failure, invalid request
        case "15", "19", "20": return .pending         // uncertain, pending, on hold: resolve with CHECK_STATUS
        case "06": return .refunded
        case "08": return .cancelled                   // authorization voided
        default: return PaymentStatus(rawValue: "payfort_status_\(status)")
        }
    }

    /// The error for an answer that says a payment (or a tokenization) did not go through, classified by
    /// what is known about the money:
    ///
    /// | code | category |
    /// |---|---|
    /// | on hold (``onHold``), `777` processed but unconfirmed, status `15`/`19`/`20` | `unknownOutcome` (inquire; never cascade) |
    /// | `029` insufficient funds | `declinedSoft` (`insufficient_funds`) |
    /// | `072` cancelled by the consumer | `cancelled` |
    /// | status `00` with `008` signature mismatch, `009`, `010` | `configuration` (the request was refused unprocessed) |
    /// | status `00` otherwise | `invalidInput` (refused unprocessed) |
    /// | anything else (`666` declined, `006` technical problem of a purchase, `071`, `012`, `016`, `030`, `785`, …) | `declinedHard` |
    public static func failure(status: String, responseCode: String?, message: String?, gateway: GatewayID,
                               field: String? = nil) -> CheckoutError {
        let text = GatewayText.safe(message)
        let code = responseCode ?? status
        func error(_ code: CheckoutError.Code, _ category: CheckoutError.Category? = nil, _ why: String) -> CheckoutError {
            CheckoutError(code, category: category, field: field, message: why, gateway: gateway, gatewayCode: responseCode ?? status,
                          gatewayMessage: text)
        }
        let messageCode = Self.message(of: responseCode)
        if onHold.contains(code) || messageCode == "777" || ["15", "19", "20"].contains(status) {
            return error(.unknownOutcome, nil, "PayFort holds the transaction (\(code)); its outcome is not known yet")
        }
        switch (status, messageCode) {
        case (_, "029"): return error(.insufficientFunds, nil, "insufficient funds")
        case (_, "072"): return error(.cancelledByCustomer, nil, "the customer cancelled")
        case ("00", "008"): return error(.signatureMismatch, .configuration, "PayFort says the request's signature does not match (check the request phrase)")
        case ("00", "009"), ("00", "010"): return error(.misconfigured, .configuration, "PayFort refused the merchant identifier or access code")
        case ("00", _): return error(.invalidField, nil, "PayFort refused the request as invalid (\(code))")
        default: return error(.declined, nil, "PayFort declined (\(code))")
        }
    }
}
