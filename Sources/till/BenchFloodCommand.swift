import ArgumentParser
import Foundation
import Logging
import Till
import TillOrchestration
import TillService
import TillServer

/// `till bench flood`: one client secret (or thousands of made-up ones) flooding the real server with its default rate
/// limits, while a paced client reads other payments with their own secrets; the other payments' latency during the
/// flood over the same client's latency before it, and the process's memory.
struct FloodBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flood",
        abstract: "Floods of /healthz, one client secret and made-up ones against the default rate limits: others' latency, CPU and memory.",
        discussion: """
            One JSON object per line. Phase "quiet": a paced client (--paced-connections connections, each a request every \
            --interval-ms, cycling over --others payments, each with its own client secret) for --seconds. Phase \
            "floor": the same paced client while --connections connections from 127.0.0.2 (another client address) send \
            --flood requests of GET /healthz, spread evenly over --seconds (as fast as they can if the server is slower): \
            what that many requests cost by themselves, the cheapest answer the server gives, no limit involved. Phase \
            "flood": the same flood with one payment's client secret on GET /v1/payments/{id}. Phase "distinctSecrets": the \
            same, with a made-up client secret per request. The flood's threads run at the lowest scheduling priority \
            (--flood-priority low, the default: a flooder's CPU is not the server's, as on a network) or at the server's \
            (--flood-priority same: the flooder's own work on the server's cores). The four phases run --rounds times, in order. \
            Each phase line (per round, then "pooled": the phase's rounds together against the quiet rounds together, a p99 \
            over rounds × the paced client's samples): the paced client's p50 and p99 and their ratio to that round's quiet \
            phase (the yardstick, measured in the same run), its failures (none expected), the flood's requests, answers 429 and \
            rate, how many of its threads ran at nice 19 (pooled: the fewest in any round), the process's CPU time over the phase (server, paced client and \
            flooder together) and, over the quiet phase's, per flood request (microseconds), and the process's resident \
            memory (MiB) when the line is printed. The paced client's \
            latency counts from when each request was due, so a request sent late behind a slow one counts its wait. SQLite in a temporary folder.
            """)

    @Option(help: "Seconds per phase.")
    var seconds = 10
    @Option(help: "Requests the flood sends (at most; it stops after --seconds).")
    var flood = 50_000
    @Option(help: "The flood's connections.")
    var connections = 8
    @Option(help: "The other payments the paced client reads.")
    var others = 80
    @Option(name: .customLong("paced-connections"), help: "The paced client's connections.")
    var pacedConnections = 4
    @Option(name: .customLong("interval-ms"), help: "Each paced connection's interval between requests, in milliseconds.")
    var intervalMs = 20
    @Option(help: "Rounds: the quiet phase and the three floods, in that order, this many times; then each phase over all its rounds (\"pooled\").")
    var rounds = 3
    @Option(name: .customLong("flood-priority"), help: "The flood's threads: low (nice 19, CPU the server leaves idle) or same.")
    var floodPriority: FloodPriority = .low

    enum FloodPriority: String, ExpressibleByArgument { case low, same }

    struct Line: Encodable {
        let phase: String
        /// "1", "2", …: one round; "pooled": the phase's rounds together, against the quiet rounds together.
        let round: String
        let othersRequests: Int
        let othersFailures: Int
        let othersP50Millis: Double
        let othersP99Millis: Double
        let p50RatioToQuiet: Double
        let p99RatioToQuiet: Double
        let floodRequests: Int
        let floodLimited: Int
        let floodPerSecond: Double
        let floodThreadsAtLowPriority: Int
        /// The process's CPU time (user and system) over the phase: the server, the paced client and the flooder.
        let cpuSeconds: Double
        /// The phase's CPU time over the quiet phase's, per request of the flood: what one flood request costs the
        /// machine, its sending and reading included (0 in the quiet phase).
        let cpuMicrosPerFloodRequest: Double
        let residentMiB: Double
    }

    func validate() throws {
        guard rounds >= 1 else { throw ValidationError("--rounds must be 1 or more") }
    }

    func run() async throws {
        var logger = Logger(label: "till.bench")
        logger.logLevel = .critical
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-flood-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let yardstick = try ServerBench.parse([])
        // The defaults a merchant gets: 500/s per key, 5/s with bursts of 30 per client secret, 10/s with bursts of 100
        // failed authentications per address.
        let server = try await yardstick.startServer(url: "sqlite:\(folder.appendingPathComponent("flood.sqlite").path)", pool: nil,
                                                     recordsEvents: true, logger: logger, rateLimits: MerchantRateLimits())
        defer { Task { try? await server.stop() } }
        let client = MerchantAPIClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, apiKey: server.apiKey, transport: URLSessionTransport())
        var payments: [(id: String, secret: String)] = []
        for n in 0...others {
            let created = try await client.createPayment(PaymentIntent(merchantReference: "flood-\(n)",
                                                                       amount: Money(minorUnits: 1000, currency: Currency.lookup("USD")!), method: .card))
            payments.append((created.id, created.clientSecret?.rawValue ?? ""))
        }
        let target = payments.removeFirst()
        let paced = payments
        func pacedClient() async -> LoadGenerator.Result {
            await LoadGenerator(port: server.port, connections: pacedConnections, duration: .seconds(seconds), maxRequests: .max,
                                interval: .milliseconds(intervalMs)).run { i in
                let payment = paced[i % paced.count]
                return LoadGenerator.request("GET", "/v1/payments/\(payment.id)", headers: ["Authorization": "Bearer \(payment.secret)"])
            }
        }
        enum Flood { case healthz, oneSecret, madeUpSecrets }
        func floodClient(_ kind: Flood) async -> LoadGenerator.Result {
            // From 127.0.0.2: the flooder is another client than the paced one, as it would be on a network.
            // Paced to spread the --flood requests over the whole phase, so all of the paced client's window is under it.
            await LoadGenerator(port: server.port, connections: connections, duration: .seconds(seconds), maxRequests: flood,
                                interval: .nanoseconds(Int64(seconds) * 1_000_000_000 * Int64(connections) / Int64(max(flood, 1))),
                                source: "127.0.0.2", lowPriority: floodPriority == .low).run { i in
                switch kind {
                case .healthz: return LoadGenerator.request("GET", "/healthz")
                case .oneSecret:
                    return LoadGenerator.request("GET", "/v1/payments/\(target.id)", headers: ["Authorization": "Bearer \(target.secret)"])
                case .madeUpSecrets:
                    return LoadGenerator.request("GET", "/v1/payments/\(target.id)",
                                                 headers: ["Authorization": "Bearer \(target.id)_secret_made-up-\(i)"])
                }
            }
        }
        let floods: [(phase: String, kind: Flood)] = [("floor", .healthz), ("flood", .oneSecret), ("distinctSecrets", .madeUpSecrets)]
        // Every phase's rounds: the paced client's samples, the flood's counts, the CPU time.
        struct Rounds { var others: [LoadGenerator.Result] = [], floods: [LoadGenerator.Result] = [], cpu = 0.0 }
        var quietRounds = Rounds()
        var measured: [String: Rounds] = [:]
        for round in 1...rounds {
            var started = Self.cpuSeconds()
            let quiet = await pacedClient()
            let quietCPU = Self.cpuSeconds() - started
            quietRounds.others.append(quiet)
            quietRounds.cpu += quietCPU
            try printJSONLine(line("quiet", "\(round)", quiet, quiet: quiet, flood: nil, cpu: quietCPU, quietCPU: quietCPU))
            for (phase, kind) in floods {
                started = Self.cpuSeconds()
                async let others = pacedClient()
                let flooding = await floodClient(kind)
                let answered = await others
                let cpu = Self.cpuSeconds() - started
                // The flood's counts only: its latencies (50,000 a round) kept for nothing would show in the memory figure.
                var counts = flooding
                counts.latenciesNanos = []
                measured[phase, default: Rounds()].others.append(answered)
                measured[phase, default: Rounds()].floods.append(counts)
                measured[phase, default: Rounds()].cpu += cpu
                try printJSONLine(line(phase, "\(round)", answered, quiet: quiet, flood: flooding, cpu: cpu, quietCPU: quietCPU))
                // A pause between phases, for the server to settle. Each phase empties buckets of its own (the one secret's
                // payment's; the made-up secrets' address's failed authentication), refilled by the next round's.
                try await Task.sleep(for: .seconds(2))
            }
        }
        // Each phase over all its rounds against the quiet rounds together: a p99 of rounds × the paced client's samples,
        // which one pause of the machine in one round does not decide alone.
        let pooledQuiet = LoadGenerator.Result.pooled(quietRounds.others)
        try printJSONLine(line("quiet", "pooled", pooledQuiet, quiet: pooledQuiet, flood: nil, cpu: quietRounds.cpu, quietCPU: quietRounds.cpu))
        for (phase, _) in floods {
            let phaseRounds = measured[phase, default: Rounds()]
            try printJSONLine(line(phase, "pooled", LoadGenerator.Result.pooled(phaseRounds.others), quiet: pooledQuiet,
                                   flood: LoadGenerator.Result.pooled(phaseRounds.floods), cpu: phaseRounds.cpu, quietCPU: quietRounds.cpu))
        }
    }

    /// One phase's line: one round's (`round` "1", "2", …) or all its rounds' ("pooled": the results and CPU times summed).
    func line(_ phase: String, _ round: String, _ others: LoadGenerator.Result, quiet: LoadGenerator.Result, flood: LoadGenerator.Result?,
              cpu: Double, quietCPU: Double) -> Line {
        let (p50, p99) = (others.percentileMillis(50), others.percentileMillis(99))
        return Line(phase: phase, round: round, othersRequests: others.requests, othersFailures: others.failures, othersP50Millis: p50, othersP99Millis: p99,
                    p50RatioToQuiet: p50 / max(quiet.percentileMillis(50), 0.001), p99RatioToQuiet: p99 / max(quiet.percentileMillis(99), 0.001),
                    floodRequests: flood?.requests ?? 0, floodLimited: flood?.limited ?? 0, floodPerSecond: flood?.requestsPerSecond ?? 0,
                    floodThreadsAtLowPriority: flood?.lowPriorityThreads ?? 0, cpuSeconds: cpu,
                    cpuMicrosPerFloodRequest: flood.map { $0.requests > 0 ? (cpu - quietCPU) / Double($0.requests) * 1_000_000 : 0 } ?? 0,
                    residentMiB: Self.residentMiB())
    }

    /// This process's CPU time so far, user and system, in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }

    /// This process's resident memory, from /proc/self/statm (0 where there is none).
    static func residentMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}
