import Foundation
import Till

/// Runs attempts against ``FakeGateway``s the way a server and app would together: prepare, then
/// charge (card behaviors) or hand the customer to the wallet (`.walletHandoff`). Latency is taken
/// on the given clock, so a virtual clock makes slow gateways cost no real time.
public struct FakeAttemptRunner: AttemptRunner {
    public let clock: any TillClock
    /// What the customer does in the wallet for an attempt: `.paid`, `.cancelled` or `.failed`.
    public let walletResult: @Sendable (AttemptReference) -> PaymentStatus

    public init(clock: any TillClock = SystemClock(), walletResult: @escaping @Sendable (AttemptReference) -> PaymentStatus = { _ in .paid }) {
        self.clock = clock
        self.walletResult = walletResult
    }

    public func run(_ context: AttemptContext, on gateway: any CheckoutGateway) async -> AttemptOutcome {
        guard let fake = gateway as? FakeGateway else {
            return .error(CheckoutError(.misconfigured, message: "FakeAttemptRunner drives FakeGateway only", gateway: gateway.gateway))
        }
        do {
            _ = try await fake.prepare(context)
            let plan = await fake.ledger.records[context.attempt]?.plan
            if let latency = plan?.latency, latency > .zero { try? await clock.sleep(for: latency) }
            if plan?.behavior == .walletHandoff {
                let result = walletResult(context.attempt)
                let (report, _) = try await fake.customerActs(on: context.attempt, result: result,
                                                              code: result == .failed ? "wallet_declined" : nil)
                if let failure = plan?.afterReturn {
                    return .error(TransportError(failure, "scripted failure after the return").checkoutError(gateway: fake.gateway),
                                  customerAuthenticated: true)
                }
                return .report(report, customerAuthenticated: true)
            }
            return .report(try await fake.charge(context.attempt))
        } catch let error as CheckoutError {
            return .error(error)
        } catch {
            return .error(CheckoutError(.unknownOutcome, message: "unexpected failure", gateway: gateway.gateway))
        }
    }
}
