import Foundation
import Till
import TillOrchestration
import TillService

/// The chaos run's events: the production ``EventDeliverer`` delivers the merchant's events to the run's faulty
/// ``WebhookReceiver`` in passes between the checkouts and the operations, then pass after pass until nothing is
/// pending; then every event the store wrote is counted against what the receiver took in.
extension ChaosDriver {
    /// One delivery pass, past every retry's backoff (``ChaosRun/deliveryLookahead``). Returns how many events it claimed.
    @discardableResult
    func deliverEvents() async -> Int {
        deliveryPasses += 1
        do {
            return try await deliverer.runOnce(now: Date().addingTimeInterval(ChaosRun.deliveryLookahead)).claimed
        } catch {
            world.recordInternalError(error)
            return 0
        }
    }

    /// Passes until the merchant has no pending event (at most 10,000: each pass moves every payment's earliest
    /// pending event one try on, and a receiver fails an event at most ``WebhookReceiver/maxFailuresPerEvent`` times).
    func deliverEveryEvent() async throws {
        for _ in 0..<10_000 {
            if await deliverEvents() == 0,
               try await store.events(merchant: merchantID, query: EventQuery(state: .pending, limit: 1)).isEmpty { return }
        }
    }

    /// Counts every event the store wrote for the merchant (paging through ``PaymentStore/events(merchant:query:)``)
    /// against the receiver: lost (never accepted), not delivered in the store; and every payment's final view
    /// (``PaymentService/payment(id:merchant:forMerchant:)``, what `GET /v1/payments/{id}` shows the merchant) against
    /// the data of the last event the receiver accepted for it.
    func countEvents(into report: inout ChaosRun.Report) async throws {
        var after: Int64 = 0
        while true {
            let page = try await store.events(merchant: merchantID, query: EventQuery(after: after, limit: 500))
            guard let last = page.last else { break }
            after = last.position
            for event in page {
                report.events += 1
                if !receiver.accepted(event.id) {
                    report.lostEvents += 1
                    report.violations.append("event \(event.id) (\(event.type), sequence \(event.sequence) of payment \(event.paymentID)) "
                                             + "was never accepted by the receiver; the store says \(event.state.rawValue) after \(event.attemptCount) tries")
                }
                if event.state != .delivered {
                    report.undeliveredEvents += 1
                    report.violations.append("event \(event.id) (\(event.type), sequence \(event.sequence) of payment \(event.paymentID)) "
                                             + "is \(event.state.rawValue) in the store after the last delivery pass")
                }
            }
        }
        guard let merchant = state.merchant(id: merchantID) else { return }
        for index in 0..<options.checkouts {
            guard let id = world.paymentID(reference: "chaos-\(index)") else { continue }
            let view = try await service.payment(id: id, merchant: merchant, forMerchant: true)
            let received = receiver.received(payment: id)
            guard let data = received?.last else {
                report.staleFinalViews += 1
                report.violations.append("checkout \(index): payment \(id) is \(view.status), the receiver has no event of it")
                continue
            }
            if data.status != view.status || data.amountCaptured != view.amountCaptured || data.amountRefunded != view.amountRefunded {
                report.staleFinalViews += 1
                func describe(_ view: PaymentView) -> String {
                    "\(view.status), captured \(view.amountCaptured.map { "\($0)" } ?? "-"), refunded \(view.amountRefunded.map { "\($0)" } ?? "-")"
                }
                report.violations.append("checkout \(index): payment \(id) is \(describe(view)); the last event the receiver accepted "
                                         + "(of sequences \(received?.sequences ?? [])) says \(describe(data))")
            }
        }
        let counts = receiver.counts
        report.eventPosts = counts.posts
        report.duplicateDeliveries = counts.duplicates
        report.outOfOrderEvents = counts.outOfOrder
        report.deliveryPasses = deliveryPasses
        report.violations += receiver.outOfOrderStories
        // A delivery the receiver had to refuse is a finding: the deliverer never sends one.
        report.internalErrors += receiver.refusals
    }
}
