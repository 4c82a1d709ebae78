import Foundation
import TillGatewayKit

/// A charge's status as the app sees it through its client token. Informational: the server's
/// confirmation (IPN or inquiry) is what counts.
public struct CitconTransactionStatus: Sendable, Hashable {
    /// Citcon's transaction id.
    public var id: String
    /// The attempt reference the charge was created with.
    public var reference: String?
    /// Citcon's raw status (`initiated`, `pending`, `succeeded`, …).
    public var rawStatus: String
    /// The raw status in Till's terms (see ``CitconGateway/status(_:)``).
    public var status: PaymentStatus
    /// The charge's amount, when Citcon gave it with a known currency.
    public var amount: Money?
}

/// What ``CitconGateway/statusUpdates(for:interval:timeout:)`` reports: the SDK's two NotificationCenter
/// observers as one stream.
public enum CitconStatusUpdate: Sendable, Hashable {
    /// A new status seen by checking the charge (the SDK's `NTFY_ASYNC`).
    case checked(CitconTransactionStatus)
    /// The charge reached a final status or was authorised (the SDK's `ORDER_CONFIRMED`); the stream ends.
    case confirmed(CitconTransactionStatus)
    /// Checking failed for good (token refused, unknown charge); the stream ends.
    case failed(CheckoutError)
}

extension CitconGateway {
    /// Follows the charge of `preparation` from the app, with the client token the server handed
    /// over: a `.checked` update whenever the status changes, then `.confirmed` once it is final or
    /// authorised, or `.failed`. The stream ends after `timeout`, when the consumer stops iterating, or
    /// after `.confirmed` / `.failed`. Transient errors (timeouts, 5xx) are retried at the next tick.
    ///
    /// ```swift
    /// for await update in citcon.statusUpdates(for: result.preparation) {
    ///     if case .confirmed(let status) = update { showBadge(status.status) }
    /// }
    /// ```
    public func statusUpdates(for preparation: Preparation, interval: Duration = .seconds(2),
                              timeout: Duration = .seconds(120)) -> AsyncStream<CitconStatusUpdate> {
        let (stream, continuation) = AsyncStream<CitconStatusUpdate>.makeStream(bufferingPolicy: .unbounded)
        let gateway = self
        let task = Task {
            let deadline = ContinuousClock.now + timeout
            var last: String?
            while !Task.isCancelled {
                do {
                    let charge = try await gateway.clientTransaction(preparation)
                    if let raw = charge.status, raw != last {
                        last = raw
                        let status = CitconTransactionStatus(
                            id: charge.id, reference: charge.reference, rawStatus: raw, status: Self.status(raw),
                            amount: charge.currency.flatMap(Currency.lookup).flatMap { currency in
                                charge.amount.map { Money(minorUnits: $0, currency: currency) }
                            })
                        if status.status.isFinal || status.status == .authorized {
                            continuation.yield(.confirmed(status))
                            break
                        }
                        continuation.yield(.checked(status))
                    }
                } catch let error as CheckoutError where error.category == .configuration || error.category == .invalidInput {
                    continuation.yield(.failed(error))
                    break
                } catch {
                    // Transient: try again at the next tick.
                }
                if ContinuousClock.now + interval > deadline { break }
                try? await Task.sleep(for: interval)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
