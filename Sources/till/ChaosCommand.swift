import ArgumentParser
import Foundation
import TillChaos

struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Drive checkouts through the merchant server's own logic on a real store, against faulty fake gateways and a faulty webhook receiver, and count double charges, lost and stuck payments, double captures, over-refunds, lost and stuck operations, lost and out-of-order events.",
        discussion: """
            The app's checkout loop runs against the server's payment service in-process, on SQLite (a temporary \
            file) or PostgreSQL; fake gateways inject faults and keep a ledger of what they charged. At the end the \
            gateways settle what they hold, the production reconciler runs, and every payment is counted against \
            the ledgers. The server's delivery service posts the merchant's events, between the checkouts and until \
            none is pending, to an in-process receiver that fails as real ones do (500, 503, never reached, processed \
            but the answer lost); every event is then checked against what the receiver accepted. The last line is a \
            JSON object starting with checkouts, the figures that must be 0 (doubleCharges, lostPayments, \
            stuckPayments, doubleCaptures, overRefunds, lostOperations, stuckOperations, lostEvents, \
            outOfOrderEvents, staleFinalViews), store and seconds. The command exits non-zero when one of them is not \
            0 (or a payment was marked paid without a charge, or an event was left undelivered).
            """)

    @Option(help: "Number of checkouts.")
    var checkouts = 1_000

    @Option(help: "Seed: the same seed replays the same run.")
    var seed: UInt64 = 1

    @Option(name: .customLong("fault-rate"), help: "Probability (0...1) of a fault at each step.")
    var faultRate = 0.3

    @Option(help: "sqlite (a temporary file), sqlite:PATH (kept), a postgres:// URL, or memory (the in-memory store).")
    var store = "sqlite"

    @Option(name: .customLong("webhook-fault-rate"), help: "Probability (0...1) that the webhook receiver fails a post (default: the fault rate).")
    var webhookFaultRate: Double?

    @Flag(help: "Route cards by a rule that learns (successRate) instead of the 60/40 split.")
    var learning = false

    func validate() throws {
        guard checkouts > 0 else { throw ValidationError("--checkouts must be positive") }
        guard (0...1).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 1") }
        if let webhookFaultRate, !(0...1).contains(webhookFaultRate) {
            throw ValidationError("--webhook-fault-rate must be between 0 and 1")
        }
        guard store == "sqlite" || store == "memory" || store.hasPrefix("sqlite:") || store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") else {
            throw ValidationError("--store must be sqlite, sqlite:PATH, a postgres:// URL or memory")
        }
    }

    func run() async throws {
        let report = try await ChaosRun.run(.init(checkouts: checkouts, seed: seed, faultRate: faultRate, store: store,
                                                  webhookFaultRate: webhookFaultRate, learning: learning))
        print("chaos: \(report.checkouts) checkouts on \(report.store), seed \(seed), fault rate \(faultRate), \(String(format: "%.1f", report.seconds)) s")
        print("  payments: \(report.paid) paid, \(report.failed) failed; \(report.attempts) attempts, \(report.charges) charged")
        print("  notifications: \(report.notificationsApplied) applied, \(report.notificationsDuplicate) duplicate, "
              + "\(report.notificationsStale) stale, \(report.notificationsNeedingInquiry) needing an inquiry, "
              + "\(report.notificationsQuarantined) quarantined, \(report.notificationsRejected) rejected")
        print("  reconciliation: \(report.reconciled) settled or expired in \(report.reconciliationPasses) pass(es) "
              + "(\(report.reconciliationActions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))")
        print("  operations: \(report.operations) stored; answered " + report.operationAnswers.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        print("  events: \(report.events) written, \(report.eventPosts) posts in \(report.deliveryPasses) delivery passes "
              + "(receiver fault rate \(report.webhookFaultRate)), \(report.duplicateDeliveries) duplicate deliveries")
        print("  faults: " + report.faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if !report.appErrors.isEmpty {
            print("  the app ended with: " + report.appErrors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        for error in report.internalErrors.prefix(20) { print("  INTERNAL ERROR \(error)") }
        print("  double charges \(report.doubleCharges), lost payments \(report.lostPayments), stuck payments \(report.stuckPayments), "
              + "paid without a charge \(report.unchargedPaid), double captures \(report.doubleCaptures), over-refunds \(report.overRefunds), "
              + "lost operations \(report.lostOperations), stuck operations \(report.stuckOperations), lost events \(report.lostEvents), "
              + "out-of-order events \(report.outOfOrderEvents), stale final views \(report.staleFinalViews), "
              + "undelivered events \(report.undeliveredEvents)")
        for violation in report.violations { print("  VIOLATION \(violation)") }
        print(report.jsonLine)
        if !report.isClean { throw ExitCode.failure }
    }
}
