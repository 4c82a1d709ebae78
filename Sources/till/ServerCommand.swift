import ArgumentParser
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Till
import TillOrchestration
import TillService
import TillServer
import UnixSignals

struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Run the merchant server: the app's API, gateway notifications, and the payment store.",
        discussion: """
            Secrets are read from the environment or files named in the configuration; the server \
            refuses to start when one is missing. The first line on standard output, once listening, is \
            "till server listening on http://HOST:PORT". On SIGHUP it reads the configuration file again and, if it is \
            valid and every secret it names can be read, takes its API keys and rate limits (the rest at the next start); \
            otherwise it keeps what runs and logs why.
            """)

    @Option(help: "The configuration file (JSON) with merchants and a `server` block.")
    var config: String

    @Option(help: "Override server.listen (host:port; port 0 picks a free port).")
    var listen: String?

    @Option(help: "Override server.storage (sqlite:PATH or postgres://…).")
    var storage: String?

    @Option(name: .customLong("log-level"), help: "The lowest level logged: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(name: .customLong("log-format"), help: "text (one readable line each) or json (one JSON object per line: time, level, label, message, metadata).")
    var logFormat: String = "text"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level: one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")) (got \(logLevel))")
        }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format: text or json (got \(logFormat))") }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            if json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = try loadConfiguration(config)
        var settings = configuration.server ?? ServerSettings()
        if let listen { settings.listen = listen }
        if let storage { settings.storage = storage }
        configuration.server = settings
        let overrides = (listen: listen, storage: storage)
        // Metrics are kept only when something serves them (server.metrics.listen), in a registry of the server's own.
        let serverMetrics = settings.metrics.listen != nil ? ServerMetrics() : nil
        let metrics: any MetricsFactory = serverMetrics?.factory ?? NOOPMetricsHandler.instance
        // The console's gateways page shows recent latencies, timed by the same wrapper as the metrics.
        let latencies = settings.console.listen != nil ? GatewayLatencies() : nil
        let exchanges = settings.console.listen != nil ? GatewayExchanges() : nil
        let state: ServerState
        let operators: [ResolvedOperator]
        do {
            state = try ServerState(configuration: configuration, plugins: Gateways.plugins, transport: { id in
                let transport = ServerState.defaultTransport(id)
                guard serverMetrics != nil || latencies != nil else { return transport }
                return MeasuredTransport(transport, gateway: id, metrics: metrics, latencies: latencies, exchanges: exchanges)
            })
            operators = settings.console.listen != nil ? try settings.console.resolveOperators() : []
        } catch let error as StartupError {
            printError(error.description)
            throw ExitCode.failure
        }
        // One server per SQLite file: a second one is refused at once, with the reason, not started beside it.
        var instanceLock: SQLiteInstanceLock?
        if settings.storage.hasPrefix("sqlite:") {
            do {
                instanceLock = try SQLiteInstanceLock(database: String(settings.storage.dropFirst("sqlite:".count)))
            } catch StoreError.unavailable(let why) {
                printError("till server: \(why)")
                throw ExitCode.failure
            }
        }
        defer { withExtendedLifetime(instanceLock) {} }
        let store = try openStore(settings.storage, postgresConnections: settings.postgresConnections)
        // A database that cannot be reached is a failed start, said once, not a silent wait.
        do {
            try await withTimeout(.seconds(30)) { try await store.migrate() }
        } catch {
            printError("till server: cannot prepare the store at \(withoutPassword(settings.storage)): "
                       + (error is TimeoutError ? "no connection within 30 s" : String(describing: type(of: error))))
            throw ExitCode.failure
        }
        // Test-only fault injection for the crash-safety test; release builds ignore it.
        var crashPoint: CrashPoint?
        if let point = ProcessInfo.processInfo.environment["TILL_CRASH_POINT"] {
            #if DEBUG
            crashPoint = CrashPoint(rawValue: point)
            printError("WARNING: TILL_CRASH_POINT=\(point): this server will kill itself while handling a notification (test fault injection)")
            #else
            printError("note: TILL_CRASH_POINT is ignored by release builds")
            #endif
        }
        let host = settings.hostAndPort?.host ?? "127.0.0.1"
        // The API's requests in flight, which the event deliverer yields to while there are many.
        let load = APILoad()
        let app = try buildApplication(state: state, store: store, metrics: metrics, crashPoint: crashPoint, load: load) { port in
            // Unbuffered, so a supervising process sees the line at once.
            FileHandle.standardOutput.write(Data("till server listening on http://\(host):\(port)\n".utf8))
        }
        // The reconciler runs beside the HTTP server, in one service group (graceful shutdown on SIGTERM/SIGINT).
        let reconciler = settings.reconciliation.enabled
            ? Reconciler(state: state, store: store, settings: settings.reconciliation, logger: Logger(label: "till.reconciler"), metrics: metrics)
            : nil
        // So does the delivery of events to the merchants' webhooks (recorded either way, by the store).
        let deliverer = settings.events.enabled
            ? EventDeliverer(state: state, store: store, logger: Logger(label: "till.events"), metrics: metrics, load: load) : nil
        var others: [any Service] = []
        // Routing that learns reads every instance's outcomes from the store, refreshed beside the API.
        let refresher = RoutingScoresRefresher(state: state, store: store)
        if refresher.isNeeded { others.append(refresher) }
        let reloadLogger = Logger(label: "till.reload")
        others.append(ReloadOnHangup { [config] in
            Self.reload(config, overrides: overrides, into: state, logger: reloadLogger)
        })
        if let serverMetrics, let (metricsHost, metricsPort) = settings.metrics.hostAndPort {
            let logger = Logger(label: "till.metrics")
            others.append(buildMetricsApplication(serverMetrics, state: state, host: metricsHost, port: metricsPort, logger: logger) { port in
                logger.notice("metrics on http://\(metricsHost):\(port)/metrics")
            })
        }
        if let (consoleHost, consolePort) = settings.console.hostAndPort {
            let logger = Logger(label: "till.console")
            let dependencies = ConsoleDependencies(state: state, store: store, operators: operators, latencies: latencies, exchanges: exchanges,
                                                  logger: logger)
            others.append(buildConsoleApplication(dependencies, host: consoleHost, port: consolePort) { port in
                logger.notice("console on http://\(consoleHost):\(port)/")
            })
        }
        try await runServer(app, reconciler: reconciler, deliverer: deliverer, others: others)
        try await store.close()
    }
}

extension ServerCommand {
    /// SIGHUP: reads `file` again, with the command line's overrides, builds the whole server state from it (every
    /// secret read, every gateway module built: the checks a start makes) and, only if that succeeds, has `state` take
    /// its keys and rate limits (``ServerState/adopt(_:)``). A file that fails leaves everything as it runs.
    static func reload(_ file: String, overrides: (listen: String?, storage: String?), into state: ServerState, logger: Logger) {
        logger.notice("SIGHUP: reading \(file) again")
        switch ConfigurationLoader.load(contentsOf: URL(fileURLWithPath: file), modules: Gateways.capabilities) {
        case .failure(let error):
            logger.error("reload refused, the running configuration stays: \(error.issues.map(\.description).joined(separator: "; "))")
        case .success(var configuration):
            var settings = configuration.server ?? ServerSettings()
            if let listen = overrides.listen { settings.listen = listen }
            if let storage = overrides.storage { settings.storage = storage }
            configuration.server = settings
            do {
                let new = try ServerState(configuration: configuration, plugins: Gateways.plugins)
                for note in state.adopt(new) { logger.notice("reloaded: \(note)") }
            } catch let error as StartupError {
                logger.error("reload refused, the running configuration stays: \(error.problems.joined(separator: "; "))")
            } catch {
                logger.error("reload refused, the running configuration stays: \(type(of: error))")
            }
        }
    }
}

/// Calls `reload` on every SIGHUP until the server stops.
struct ReloadOnHangup: Service {
    let reload: @Sendable () -> Void

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() { reload() }
    }
}

/// `body` did not finish within the time given.
struct TimeoutError: Error {}

/// Runs `body`, or throws ``TimeoutError`` once `limit` passes (the body is cancelled).
func withTimeout<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimeoutError()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// A storage URL fit to print: a password in it is replaced by `***`.
func withoutPassword(_ storage: String) -> String {
    guard var components = URLComponents(string: storage), components.password != nil else { return storage }
    components.password = "***"
    return components.string ?? "(storage URL)"
}
