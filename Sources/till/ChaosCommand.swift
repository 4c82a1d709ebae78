import ArgumentParser
import Foundation
import Till
import TillTesting

struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Drive checkouts through the router against faulty fake gateways and count double charges and lost payments.",
        discussion: "The last line is a JSON object. doubleCharges and lostPayments must be 0; the command exits non-zero otherwise.")

    @Option(help: "Number of checkouts.")
    var checkouts = 1_000

    @Option(help: "Seed: the same seed replays the same run.")
    var seed: UInt64 = 1

    @Option(name: .customLong("fault-rate"), help: "Probability (0...1) of each injected fault.")
    var faultRate = 0.2

    func validate() throws {
        guard checkouts > 0 else { throw ValidationError("--checkouts must be positive") }
        guard (0...1).contains(faultRate) else { throw ValidationError("--fault-rate must be between 0 and 1") }
    }

    func run() async throws {
        let start = ContinuousClock.now
        let report = try await ChaosRun.run(.init(checkouts: checkouts, seed: seed, faultRate: faultRate))
        let elapsed = ContinuousClock.now - start
        print("chaos: \(report.checkouts) checkouts, \(report.attempts) attempts, seed \(seed), fault rate \(faultRate), \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .abbreviated)))")
        print("  paid \(report.succeeded), failed \(report.failed) (\(report.askedCustomer) handed back to the customer), unresolved \(report.unresolved)")
        print("  settled after the cascade by notifications or inquiry: \(report.settledByReconciliation)")
        print("  notifications: \(report.notificationsApplied) applied, \(report.notificationsDuplicate) duplicates ignored, \(report.notificationsStale) stale ignored")
        for violation in report.violations { print("  VIOLATION \(violation)") }
        struct Line: Encodable { let checkouts, succeeded, failed, unresolved, doubleCharges, lostPayments, attempts: Int }
        try printJSONLine(Line(
            checkouts: report.checkouts, succeeded: report.succeeded, failed: report.failed, unresolved: report.unresolved,
            doubleCharges: report.doubleCharges, lostPayments: report.lostPayments, attempts: report.attempts))
        if report.doubleCharges > 0 || report.lostPayments > 0 || report.falseSuccesses > 0 { throw ExitCode.failure }
    }
}
