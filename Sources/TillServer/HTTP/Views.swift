import Till

extension PaymentView {
    init(_ payment: StoredPayment) {
        self.init(id: payment.id, merchantReference: payment.intent.merchantReference, amount: payment.intent.amount,
                  method: payment.intent.method, status: payment.status, attempts: payment.attempts.map(AttemptView.init),
                  createdAt: payment.createdAt, updatedAt: payment.updatedAt)
    }
}

extension AttemptView {
    init(_ attempt: StoredAttempt) {
        self.init(reference: attempt.reference, sequence: attempt.sequence, gateway: attempt.gateway, status: attempt.status,
                  gatewayReference: attempt.gatewayReference, gatewayCode: attempt.gatewayCode, clientOutcome: attempt.clientOutcome,
                  submitted: attempt.submittedAt != nil, handedOff: attempt.handedOff, customerRequested: attempt.customerRequested)
    }
}
