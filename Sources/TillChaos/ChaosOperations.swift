import Foundation
import Till
import TillOrchestration
import TillService
import TillTesting

/// The chaos run's operations: after the checkouts settle, the merchant captures, voids and refunds through the
/// production ``PaymentService`` (the money rules, the store, the idempotency), with faults at every step — a lost
/// answer, a 5xx with or without the operation done, a request that never left, a decline, a pending answer settled
/// later; notifications late, duplicated or never sent; a merchant that retries with the same key; two refunds at
/// once — and the gateways' own ledgers say afterwards what really moved.
extension ChaosDriver {
    /// One scenario per payment that holds money, drawn from the seed.
    func operateOnPayments() async {
        guard let merchant = state.merchant(id: merchantID) else { return }
        for index in 0..<options.checkouts {
            guard let id = world.paymentID(reference: "chaos-\(index)"),
                  let payment = try? await store.payment(id: id, merchant: merchantID),
                  payment.status == .authorized || payment.status == .paid else { continue }
            world.beginCheckout(index, flow: .card)
            // Half the payments are left as they are (an authorization may stay held; a sale stays paid).
            guard roll(2) == 0 else { continue }
            let total = payment.intent.amount.minorUnits
            let part = total > 1 ? Int64(roll(Int(total - 1))) + 1 : total
            if payment.status == .authorized {
                switch roll(3) {
                case 0:   // captured in two parts, the second final
                    await operate(.capture, payment: id, amount: part, merchant: merchant)
                    await operate(.capture, payment: id, amount: nil, final: true, merchant: merchant)
                case 1:   // voided
                    await operate(.void, payment: id, amount: nil, merchant: merchant)
                default:  // captured in full, then refunded in part
                    await operate(.capture, payment: id, amount: nil, merchant: merchant)
                    await operate(.refund, payment: id, amount: part, merchant: merchant)
                }
            } else {
                switch roll(3) {
                case 0:   // a partial refund, then the rest
                    await operate(.refund, payment: id, amount: part, merchant: merchant)
                    await operate(.refund, payment: id, amount: nil, merchant: merchant)
                case 1 where world.fault():   // two refunds at once that together exceed what was captured: one is refused
                    world.count(.concurrentRefunds)
                    await concurrentRefunds(payment: id, amount: total / 2 + 1, merchant: merchant)
                default:  // refunded in full
                    await operate(.refund, payment: id, amount: nil, merchant: merchant)
                }
            }
            await courier.flushWire()
            if roll(10) == 0 { await courier.drain(includingAfterSettle: false) }
            await deliverEvents()
        }
        // The gateways do what they accepted as pending, and everything held back is delivered.
        for id in ChaosWorld.gatewayIDs {
            for flow in [FakeFlow.card, .submit, .sdk] { try? await world.fakes[id]?[flow]?.completePendingOperations() }
        }
        await courier.drainUntilQuiet()
    }

    /// One operation as the merchant's backend sends it; after an unknown outcome the backend retries it once with the
    /// same key (it must never reach the gateway twice).
    func operate(_ kind: OperationKind, payment id: String, amount: Int64?, final: Bool? = nil, merchant: MerchantRuntime) async {
        let fake = try? await store.payment(id: id, merchant: merchantID)?.attempts.last.flatMap { world.fake(for: $0.reference) }
        await fake?.ledger.enqueueOperations([operationPlan()])

        let command = OperationCommand(amount: amount.map { Money(minorUnits: $0, currency: usd) }, final: final)
        let key = "chaos-\(kind.rawValue)-\(UUID().uuidString)"
        do {
            let answer = try await service.operate(kind, paymentID: id, merchant: merchant, command: command, idempotencyKey: key)
            operationAnswers[answer.operation.status.rawValue, default: 0] += 1
            if answer.operation.status == .unknown {
                world.count(.operationRetried)
                let retried = try await service.operate(kind, paymentID: id, merchant: merchant, command: command, idempotencyKey: key)
                if !retried.replayed { world.recordInternalError(CheckoutError(.invalidField, message: "a retried operation was not replayed")) }
            }
        } catch let error as ServiceError {
            operationAnswers[error.code, default: 0] += 1
            if error.status.code >= 500 { world.recordInternalError(CheckoutError(.invalidField, message: "operation: \(error.message)")) }
        } catch {
            world.recordInternalError(error)
        }
        // A plan the gateway never took (the server refused before sending) is not left for the next operation.
        await fake?.ledger.dropQueuedOperations()
    }

    /// Two refunds sent at once, each for more than half of the payment: the money rule, decided under the payment's
    /// lock, lets one through.
    func concurrentRefunds(payment id: String, amount: Int64, merchant: MerchantRuntime) async {
        let (service, usd) = (self.service, self.usd)
        let command = OperationCommand(amount: Money(minorUnits: amount, currency: usd))
        let outcomes = await withTaskGroup(of: String.self) { group in
            for side in 0..<2 {
                group.addTask {
                    do {
                        return try await service.operate(.refund, paymentID: id, merchant: merchant, command: command,
                                                         idempotencyKey: "chaos-concurrent-\(id)-\(side)").operation.status.rawValue
                    } catch let error as ServiceError {
                        return error.code
                    } catch {
                        return "error"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        for outcome in outcomes { operationAnswers[outcome, default: 0] += 1 }
        if outcomes.contains("error") { world.recordInternalError(CheckoutError(.invalidField, message: "a concurrent refund failed")) }
    }

    /// What the gateway does with the next operation, and how its notification travels.
    func operationPlan() -> FakeOperationPlan {
        guard world.fault() else { return FakeOperationPlan(.succeed) }
        let (behavior, fault) = world.draw {
            $0.deal("operation", [(FakeOperationBehavior.lostAnswer, ChaosFault.operationLostAnswer),
                                  (.serverError(done: true), .operationServerErrorDone), (.serverError(done: false), .operationServerErrorNotDone),
                                  (.notSent, .operationNotSent), (.decline(code: "op_declined"), .operationDeclined),
                                  (.pending, .operationPending)])
        }
        world.count(fault)
        let timing: FakeNotificationTiming = world.fault()
            ? world.draw { $0.deal("operation-notification", [FakeNotificationTiming.never, .duplicate(count: 2), .deferred]) }
            : .immediate
        let failing = world.fault() ? world.draw { $0.roll(3) } + 1 : 0
        if failing > 0 { world.count(.operationFailingInquiries) }
        return FakeOperationPlan(behavior, notification: timing, failingInquiries: failing)
    }

    /// Counts every operation against the gateways' ledgers, after the reconciliation.
    func countOperations(into report: inout ChaosRun.Report) async throws {
        report.operationAnswers = operationAnswers
        for index in 0..<options.checkouts {
            guard let id = world.paymentID(reference: "chaos-\(index)"),
                  let payment = try await store.payment(id: id, merchant: merchantID) else { continue }
            report.operations += payment.operations.count
            for attempt in payment.attempts {
                guard let fake = world.fake(for: attempt.reference) else { continue }
                let money = await fake.ledger.moneyOf(attempt.reference)
                let records = await fake.ledger.operations.filter { $0.value.attempt == attempt.reference }
                let authorized = payment.intent.amount.minorUnits
                let mine = payment.operations.filter { $0.attempt == attempt.reference }
                var problems: [String] = []
                // What the gateway captured never exceeds the authorization, and no capture was sent twice.
                let capturesSentTwice = records.values.filter { $0.kind == .capture && $0.requests > 1 }.count
                if money.captured > authorized || capturesSentTwice > 0 {
                    report.doubleCaptures += 1
                    problems.append("the gateway captured \(money.captured) of \(authorized) (\(capturesSentTwice) captures sent twice)")
                }
                // What the gateway refunded never exceeds what it took, and no refund was sent twice.
                let charged = await fake.ledger.isCharged(attempt.reference)
                let taken = money.captured > 0 ? money.captured : charged ? authorized : 0
                let refundsSentTwice = records.values.filter { $0.kind == .refund && $0.requests > 1 }.count
                if money.refunded > taken || refundsSentTwice > 0 {
                    report.overRefunds += 1
                    problems.append("the gateway refunded \(money.refunded) of \(taken) taken (\(refundsSentTwice) refunds sent twice)")
                }
                // Every operation the gateway did is one the store holds as succeeded, and the store's totals are the gateway's.
                for (reference, record) in records where record.status == .succeeded {
                    if mine.first(where: { $0.reference.rawValue == reference })?.status != .succeeded {
                        report.lostOperations += 1
                        problems.append("the gateway did \(reference), the store says \(mine.first { $0.reference.rawValue == reference }?.status.rawValue ?? "nothing")")
                    }
                }
                let totals = MoneyTotals(attempt: attempt, operations: payment.operations, amount: payment.intent.amount)
                if totals.refunded != money.refunded || (money.captured > 0 && totals.capturedByOperations != money.captured) {
                    report.lostOperations += 1
                    problems.append("store: captured \(totals.capturedByOperations) refunded \(totals.refunded); gateway: captured \(money.captured) refunded \(money.refunded)")
                }
                for operation in mine where !operation.status.isFinal {
                    report.stuckOperations += 1
                    problems.append("\(operation.reference) still \(operation.status.rawValue)")
                }
                if !problems.isEmpty { report.violations.append("checkout \(index) (\(payment.intent.amount), \(payment.status)): " + problems.joined(separator: "; ")) }
            }
        }
    }
}
