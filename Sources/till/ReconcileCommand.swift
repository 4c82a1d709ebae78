import ArgumentParser
import Foundation
import Logging
import Till
import TillService
import TillServer

struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Run one reconciliation pass: inquire the open attempts nobody settled, as `till server` does periodically.",
        discussion: """
            Uses the configuration's `server.reconciliation` settings (even when `enabled` is false) and \
            resolves every secret (API keys and gateway credentials), like `till server`. Prints one line per attempt looked at \
            ("action attempt gateway before → after: reason") and, last, one JSON line with the counts. \
            Safe while servers run: attempts are claimed, so each is inquired once per round.
            """)

    @Option(help: "The configuration file (JSON) with merchants and a `server` block.")
    var config: String

    @Option(help: "The pass's time, ISO 8601 (2025-01-31T12:00:00Z); default: now.")
    var now: String?

    @Option(help: "Override server.storage (sqlite:PATH or postgres://…).")
    var storage: String?

    func validate() throws {
        if let now, parseISO8601(now) == nil {
            throw ValidationError("--now: expected an ISO 8601 date and time, such as 2025-01-31T12:00:00Z")
        }
    }

    func run() async throws {
        var configuration = try loadConfiguration(config)
        var settings = configuration.server ?? ServerSettings()
        if let storage { settings.storage = storage }
        configuration.server = settings
        let state: ServerState
        do {
            state = try ServerState(configuration: configuration, plugins: Gateways.plugins)
        } catch let error as StartupError {
            printError(error.description)
            throw ExitCode.failure
        }
        let store = try openStore(settings.storage, postgresConnections: settings.postgresConnections)
        let entries: [ReconciliationEntry]
        do {
            try await store.migrate()
            let reconciler = Reconciler(state: state, store: store, settings: settings.reconciliation,
                                        logger: Logger(label: "till.reconciler"))
            entries = try await reconciler.runOnce(now: now.flatMap(parseISO8601) ?? Date())
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
        var summary = Summary()
        for entry in entries {
            print("\(entry.action) \(entry.attempt) \(entry.gateway) \(entry.statusBefore) → \(entry.statusAfter): \(entry.reason)")
            switch ReconciliationAction(rawValue: entry.action) {
            case .settled: summary.inquired += 1; summary.settled += 1
            case .expired: summary.inquired += 1; summary.expired += 1
            case .unchanged: summary.inquired += 1
            case .inquiryFailed: summary.inquired += 1; summary.failed += 1
            case .skipped, .skippedBudget, nil: summary.skipped += 1
            }
        }
        if entries.isEmpty {
            // Zeros say nothing by themselves: say what a pass looks at.
            summary.note = "no attempt was due: a pass inquires attempts still created or pending that are at least "
                + "\(settings.reconciliation.minimumAgeSeconds) s old (server.reconciliation.minimumAgeSeconds) and whose next inquiry "
                + "is due, at most \(settings.reconciliation.maxInquiriesPerGatewayPerPass) per gateway; --now moves the clock"
        }
        try printJSONLine(summary)
    }

    /// The last line: attempts inquired (settled, expired, unchanged or failed), and each outcome's count; with
    /// nothing to do, a note saying what a pass looks at.
    struct Summary: Encodable {
        var inquired = 0
        var settled = 0
        var expired = 0
        var failed = 0
        var skipped = 0
        var note: String?
    }
}

struct QuarantineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quarantine",
        abstract: "List a merchant's quarantined notifications: verified, but for attempts the merchant does not have.",
        discussion: """
            Opens only the store: no secret is read. Prints one line per notification, newest first \
            ("gateway attempt event-id status received-at"), then one JSON line with the count.
            """)

    @Option(help: "The configuration file (JSON) with merchants and a `server` block.")
    var config: String

    @Option(help: "The merchant's id.")
    var merchant: String

    @Option(help: "At most this many, newest first (1 to 1000).")
    var limit: Int = 100

    @Option(help: "Override server.storage (sqlite:PATH or postgres://…).")
    var storage: String?

    func validate() throws {
        if !(1...1_000).contains(limit) { throw ValidationError("--limit: 1 to 1000") }
    }

    func run() async throws {
        let configuration = try loadConfiguration(config)
        guard configuration.merchant(merchant) != nil else {
            printError("no merchant \"\(merchant)\" in \(config)")
            throw ExitCode.failure
        }
        let store = try openStore(storage ?? configuration.server?.storage ?? ServerSettings().storage)
        let notifications: [QuarantinedNotification]
        do {
            try await store.migrate()
            notifications = try await store.quarantined(merchant: merchant, limit: limit)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for notification in notifications {
            print("\(notification.gateway) \(notification.attempt) \(notification.eventID) \(notification.reportedStatus) "
                  + formatter.string(from: notification.receivedAt))
        }
        try printJSONLine(Summary(merchant: merchant, count: notifications.count))
    }

    /// The last line.
    struct Summary: Encodable {
        var merchant: String
        var count: Int
    }
}

/// An ISO 8601 date and time, with or without fractional seconds.
func parseISO8601(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}
