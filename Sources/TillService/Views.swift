import Till

extension PaymentView {
    /// The payment as the API shows it; `forMerchant` adds what only the merchant's key may read (the
    /// customer, the description, the metadata), never shown to the app's client secret.
    init(_ payment: StoredPayment, forMerchant: Bool = false) {
        self.init(id: payment.id, merchantReference: payment.intent.merchantReference, amount: payment.intent.amount,
                  method: payment.intent.method, status: payment.status, attempts: payment.attempts.map(AttemptView.init),
                  createdAt: payment.createdAt, updatedAt: payment.updatedAt)
        guard forMerchant else { return }
        let intent = payment.intent
        customer = intent.customer == Customer() ? nil : intent.customer
        description = intent.description
        metadata = intent.metadata.isEmpty ? nil : intent.metadata
        operations = payment.operations.isEmpty ? nil : payment.operations.map(OperationView.init)
        // The attempt that holds the money (at most one): what it captured and what went back.
        if let attempt = payment.attempts.last(where: { $0.status.moneyMoved || $0.status == .authorized }) {
            let totals = MoneyTotals(attempt: attempt, operations: payment.operations, amount: payment.intent.amount)
            let currency = payment.intent.amount.currency
            amountCaptured = Money(minorUnits: totals.captured, currency: currency)
            amountRefunded = Money(minorUnits: totals.refunded, currency: currency)
        }
    }
}

extension AttemptView {
    init(_ attempt: StoredAttempt) {
        self.init(reference: attempt.reference, sequence: attempt.sequence, gateway: attempt.gateway, status: attempt.status,
                  gatewayReference: attempt.gatewayReference, gatewayCode: attempt.gatewayCode, clientOutcome: attempt.clientOutcome,
                  submitted: attempt.submittedAt != nil, handedOff: attempt.handedOff, customerRequested: attempt.customerRequested)
    }
}
