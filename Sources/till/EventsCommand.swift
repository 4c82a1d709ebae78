import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Till
import TillServer

/// `till events`: what a merchant's back office reads about the events `till server` records and delivers to its
/// webhooks: list them, show one with every try at delivering it, and ask for one to be delivered again.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "List the merchant's events, show one with its delivery tries, or deliver one again, through till server.",
        discussion: """
            till events list [--type TYPE] [--payment PAYMENT_ID] [--state STATE] [--cursor NEXT] [--limit N] [--json]; \
            till events show EVENT_ID [--json]; till events redeliver EVENT_ID. \
            The merchant API key is read from the environment variable --api-key-env names (never from the command line). \
            Exits 1 when the server refused the request or did not answer.
            """,
        subcommands: [List.self, Show.self, Redeliver.self])

    /// The server and the key, as every `till events` command takes them.
    struct Connection: ParsableArguments {
        @Option(help: "The merchant server's base URL.")
        var server = "http://127.0.0.1:8080"

        @Option(name: .customLong("api-key-env"), help: "The environment variable holding the merchant API key.")
        var apiKeyEnv = "TILL_API_KEY"

        func client() throws -> MerchantAPIClient {
            guard let serverURL = URL(string: server), serverURL.scheme?.hasPrefix("http") == true else { throw ValidationError("--server: an http(s) URL") }
            guard let key = ProcessInfo.processInfo.environment[apiKeyEnv], !key.isEmpty else {
                throw ValidationError("--api-key-env: the environment variable \(apiKeyEnv) holds no API key")
            }
            return MerchantAPIClient(baseURL: serverURL, apiKey: key, transport: URLSessionTransport())
        }

        /// Runs a call, turning the server's refusal (or its silence) into one line on standard error and exit status 1.
        func run<T>(_ body: (MerchantAPIClient) async throws -> T) async throws -> T {
            let client = try client()
            do {
                return try await body(client)
            } catch let error as CheckoutError {
                // The server's refusal, or no answer at all (not running, unreachable, timed out).
                let what = error.category == .unavailable || error.category == .unknownOutcome ? "failed" : "refused"
                FileHandle.standardError.write(Data("\(what): \(error.code.rawValue)\(error.field.map { " (\($0))" } ?? ""): \(error.message)\n".utf8))
                throw ExitCode.failure
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The merchant's events, oldest first: one line each (id, sequence, type, payment, state, tries).",
            discussion: """
                Prints at most --limit events (the server's default is 50); when the page is full, standard error says how \
                to ask for the next one (--cursor). --json prints the page as the server answered it.
                """)

        @OptionGroup var connection: Connection

        @Option(help: "Only events of this type (payment.paid, refund.succeeded, …).")
        var type: String?

        @Option(help: "Only this payment's events, in their sequence order.")
        var payment: String?

        @Option(help: "Only events in this delivery state: pending, delivered, failed or skipped.")
        var state: String?

        @Option(help: "The next page: the cursor the previous page printed.")
        var cursor: String?

        @Option(help: "At most this many events (1 to 200).")
        var limit: Int?

        @Flag(help: "Print the page as JSON.")
        var json = false

        func validate() throws {
            if let state, EventDeliveryState(rawValue: state) == nil {
                throw ValidationError("--state: one of \(EventDeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        func run() async throws {
            let page = try await connection.run { client in
                try await client.events(type: type.map(EventType.init(rawValue:)), payment: payment, state: state.flatMap(EventDeliveryState.init(rawValue:)),
                                        cursor: cursor, limit: limit)
            }
            if json {
                print(try EventsCommand.json(page))
                return
            }
            for view in page.events { print(EventsCommand.line(view)) }
            if let next = page.next {
                FileHandle.standardError.write(Data("more: till events list --cursor \(next)\n".utf8))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One event: its delivery state and every try at delivering it (time, endpoint, status or error, latency).")

        @OptionGroup var connection: Connection

        @Argument(help: "The event's id (evt_…).")
        var id: String

        @Flag(help: "Print the event as JSON, its body and tries included.")
        var json = false

        func run() async throws {
            let view = try await connection.run { client in try await client.event(id) }
            print(json ? try EventsCommand.json(view) : EventsCommand.details(view))
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an event pending again and due now, whatever its state; the server delivers it on its next pass.",
            discussion: """
                A payment's events are delivered in order: the event goes after any earlier event of its payment that is \
                still pending. Prints the event as it now stands; `till events show` tells when it was delivered.
                """)

        @OptionGroup var connection: Connection

        @Argument(help: "The event's id (evt_…).")
        var id: String

        func run() async throws {
            let view = try await connection.run { client in try await client.redeliver(id) }
            print(EventsCommand.line(view))
        }
    }

    // MARK: Output

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// One event on one line: `evt_…  #3  payment.paid  pay_…  delivered  1 try`.
    static func line(_ view: EventView) -> String {
        let tries = view.attemptCount == 1 ? "1 try" : "\(view.attemptCount) tries"
        return [view.event.id, "#\(view.event.sequence)", view.event.type.rawValue, view.event.paymentId, view.state.rawValue, tries]
            .joined(separator: "  ")
    }

    /// An event and its tries, for a person.
    static func details(_ view: EventView) -> String {
        let event = view.event
        var lines = [
            "event     \(event.id)",
            "type      \(event.type.rawValue) (version \(event.version))",
            "payment   \(event.paymentId), sequence \(event.sequence)",
        ]
        if let attempt = event.attempt { lines.append("attempt   \(attempt.rawValue)") }
        if let operation = event.operation { lines.append("operation \(operation)") }
        lines.append("created   \(time(event.createdAt))")
        var state = view.state.rawValue
        if let next = view.nextAttemptAt { state += ", next try \(time(next))" }
        if let delivered = view.deliveredAt { state += ", delivered \(time(delivered))" }
        lines.append("state     \(state)")
        let attempts = view.attempts ?? []
        lines.append("tries     \(view.attemptCount)" + (attempts.isEmpty ? "" : ":"))
        for attempt in attempts {
            var outcome = attempt.statusCode.map { "status \($0)" } ?? attempt.error ?? "no answer"
            if let code = attempt.statusCode, let error = attempt.error, error != "status \(code)" { outcome += " (\(error))" }
            var line = "  \(time(attempt.at))  \(attempt.endpoint)  \(outcome)  \(attempt.latencyMillis) ms"
            if let excerpt = attempt.excerpt, !excerpt.isEmpty { line += "  \"\(excerpt)\"" }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
