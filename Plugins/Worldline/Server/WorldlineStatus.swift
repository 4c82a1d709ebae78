import Foundation
import TillGatewayKit
import TillWorldline

/// What Worldline's payment statuses mean for the money. The statuses and their categories are the
/// Python SDK's (`payment.py` `status`, `order_status_output.py` `status_category`):
///
/// | Worldline status | category | Till |
/// |---|---|---|
/// | CREATED, REDIRECTED, PENDING_PAYMENT, AUTHORIZATION_REQUESTED, PENDING_FRAUD_APPROVAL, PENDING_COMPLETION, ACCOUNT_VERIFIED | CREATED, PENDING_PAYMENT, PENDING_MERCHANT, PENDING_CONNECT_OR_3RD_PARTY, ACCOUNT_VERIFIED | `pending` |
/// | PENDING_APPROVAL, PENDING_CAPTURE, CAPTURE_REQUESTED | PENDING_MERCHANT, PENDING_CONNECT_OR_3RD_PARTY | `authorized` (a requested capture can still be rejected: REJECTED_CAPTURE) |
/// | CAPTURED, PAID, CHARGEBACK_NOTIFICATION | COMPLETED | `paid` |
/// | REFUNDED | REFUNDED | `refunded` or `partially_refunded`, by `amountRefunded` against the amount |
/// | REVERSED, CHARGEBACKED | REVERSED | `refunded` (the money went back to the customer) |
/// | REJECTED, REJECTED_CAPTURE | UNSUCCESSFUL | `failed` |
/// | CANCELLED | UNSUCCESSFUL | `cancelled` |
///
/// Any other status is kept as `worldline.<STATUS>`, a status Till does not know, never applied.
enum WorldlineStatus {
    static func status(_ raw: String?) -> PaymentStatus {
        switch raw {
        case "CREATED", "REDIRECTED", "PENDING_PAYMENT", "AUTHORIZATION_REQUESTED", "PENDING_FRAUD_APPROVAL", "PENDING_COMPLETION",
             "ACCOUNT_VERIFIED":
            .pending
        case "PENDING_APPROVAL", "PENDING_CAPTURE", "CAPTURE_REQUESTED": .authorized
        case "CAPTURED", "PAID", "CHARGEBACK_NOTIFICATION": .paid
        case "REFUNDED", "REVERSED", "CHARGEBACKED": .refunded
        case "REJECTED", "REJECTED_CAPTURE": .failed
        case "CANCELLED": .cancelled
        default: PaymentStatus(rawValue: "worldline.\(raw ?? "none")")
        }
    }

    /// How far a status is along (to pick one of several payments found for one attempt).
    static func rank(_ raw: String?) -> Int {
        switch status(raw) {
        case .refunded, .partiallyRefunded: 5
        case .paid: 4
        case .authorized: 3
        case .pending: 2
        case .failed, .cancelled: 1
        default: 0
        }
    }

    /// An `amountOfMoney` as Till's money (``WorldlineAmount``: Worldline's integer has two decimals whatever
    /// the currency); nil for an unknown currency or an amount Till cannot read exactly.
    static func money(_ amount: WorldlineAmountOfMoney) -> Money? {
        guard let currency = try? Currency(code: amount.currencyCode) else { return nil }
        return try? WorldlineAmount.money(wire: amount.amount, currency: currency)
    }

    /// The report of one payment object (an answer, an inquiry or a webhook's). Every amount in it —
    /// `amountOfMoney`, `amountPaid`, `amountCaptured`, `amountRefunded`, `amountReversed` — is Worldline's
    /// two-decimal integer in the payment's currency (``WorldlineAmount``).
    /// - Throws: ``CheckoutError`` `malformed_body` when a status that moves money comes without the
    ///   payment's amount and currency, or with an amount Till cannot read exactly.
    static func report(_ payment: WorldlinePayment, attempt: AttemptReference, gateway: GatewayID, event: String) throws(CheckoutError) -> StatusReport {
        let raw = payment.status
        var status = status(raw)
        let output = payment.paymentOutput
        let amount = output?.amountOfMoney.flatMap(money)
        if status.moneyMoved || status == .authorized, amount == nil {
            throw CheckoutError(.malformedBody, category: .unknownOutcome, field: "payment.paymentOutput.amountOfMoney",
                                message: "a \(raw ?? "") payment without an amount Till can read", gateway: gateway)
        }
        /// Another of the output's amounts, in the payment's currency.
        func same(_ wire: Int64?, _ name: String) throws(CheckoutError) -> Int64? {
            guard let wire, let currency = amount?.currency else { return nil }
            do { return try WorldlineAmount.money(wire: wire, currency: currency, field: "payment.paymentOutput.\(name)", gateway: gateway).minorUnits } catch {
                throw CheckoutError(.malformedBody, category: .unknownOutcome, field: error.field, message: error.message, gateway: gateway)
            }
        }
        let paid = try same(output?.amountPaid, "amountPaid"), captured = try same(output?.amountCaptured, "amountCaptured")
        let refundedOut = try same(output?.amountRefunded, "amountRefunded"), reversed = try same(output?.amountReversed, "amountReversed")
        var reported = amount
        // A captured or paid payment's money is what was captured (`amountPaid`, else `amountCaptured`),
        // which a partial capture makes less than the authorised `amountOfMoney`.
        if status == .paid, let amount {
            let captured = [paid, captured].compactMap { $0 }.first { $0 > 0 }
            if let captured { reported = Money(minorUnits: captured, currency: amount.currency) }
        }
        var refundedTotal: Money?
        if status == .refunded, let amount {
            let refunded: Int64
            switch raw {
            case "REFUNDED": refunded = refundedOut ?? amount.minorUnits
            default: refunded = reversed ?? amount.minorUnits
            }
            let total = Money(minorUnits: min(refunded, amount.minorUnits), currency: amount.currency)
            if total.minorUnits < amount.minorUnits { status = .partiallyRefunded }
            refundedTotal = total
            reported = total
        } else if status == .paid, let amount, let refunded = refundedOut, refunded > 0 {
            // Still COMPLETED with refunds already made: a partial refund.
            status = .partiallyRefunded
            refundedTotal = Money(minorUnits: min(refunded, amount.minorUnits), currency: amount.currency)
            reported = refundedTotal
        }
        let code = payment.statusOutput?.statusCode.map(String.init)
        let message = GatewayText.safe(payment.statusOutput?.errors?.first?.message)
        return StatusReport(gateway: gateway, attempt: attempt, gatewayReference: payment.id, status: status, amount: reported,
                            refundedTotal: refundedTotal, gatewayStatus: raw, gatewayCode: code, gatewayMessage: message,
                            eventID: "\(payment.id ?? attempt.rawValue):\(event):\(raw ?? ""):\(code ?? ""):\(refundedTotal?.minorUnits ?? 0)")
    }
}
