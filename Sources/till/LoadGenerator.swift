import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small closed-loop HTTP/1.1 load generator over keep-alive connections on loopback: each
/// connection sends one request, waits for the whole response, records its latency, and sends the
/// next, for a fixed time. Bounded in time and count; it only ever connects to 127.0.0.1.
struct LoadGenerator {
    struct Result {
        var requests: Int
        var failures: Int
        var seconds: Double
        var latenciesNanos: [Int]
        /// Of the failures, the answers `429` (a rate limit).
        var limited = 0
        /// The connections' threads that run at nice 19 (with ``LoadGenerator/lowPriority``; 0 without, or where
        /// `setpriority` refused).
        var lowPriorityThreads = 0

        var requestsPerSecond: Double { Double(requests) / seconds }

        /// Several runs as one: their requests, failures, refusals, seconds and latencies together (a rate over all
        /// their time, percentiles over all their samples), and the fewest threads any of them ran at nice 19.
        static func pooled(_ results: [Result]) -> Result {
            Result(requests: results.reduce(0) { $0 + $1.requests }, failures: results.reduce(0) { $0 + $1.failures },
                   seconds: results.reduce(0) { $0 + $1.seconds }, latenciesNanos: results.flatMap(\.latenciesNanos),
                   limited: results.reduce(0) { $0 + $1.limited }, lowPriorityThreads: results.map(\.lowPriorityThreads).min() ?? 0)
        }
        var p99Millis: Double { percentileMillis(99) }

        /// The `percent`-th percentile latency in milliseconds.
        func percentileMillis(_ percent: Int) -> Double {
            guard !latenciesNanos.isEmpty else { return 0 }
            let sorted = latenciesNanos.sorted()
            return Double(sorted[min(sorted.count - 1, sorted.count * percent / 100)]) / 1e6
        }
    }

    let port: UInt16
    let connections: Int
    let duration: Duration
    let maxRequests: Int
    /// With it, each connection starts a request at most once per `interval` (a paced client, whose latency is what a
    /// client at that rate sees, counted from when the request was due: a request sent late because the one before
    /// was slow counts its wait too); without it, each sends the next as soon as the last is answered.
    var interval: Duration? = nil
    /// The loopback address the connections come from (`127.0.0.2`: another client, as the server sees it); the
    /// system's choice without it.
    var source: String? = nil
    /// With it, each connection's thread runs at the lowest scheduling priority (nice 19), so it takes only the CPU the
    /// server leaves idle: a client whose CPU is not the server's, as a flooder on a network is.
    var lowPriority = false

    /// Runs `request(i)` for i = 0, 1, 2, … until the time or the request budget is used up. A
    /// non-2xx answer counts as a failure.
    /// What the connections share, under its lock.
    private final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var next = 0
        var latencies: [Int] = []
        var failures = 0
        var limited = 0
        var lowered = 0

        func take() -> Int { lock.lock(); defer { lock.unlock() }; next += 1; return next - 1 }
        func add(_ local: [Int], failures count: Int, limited refused: Int = 0) {
            lock.lock(); latencies += local; failures += count; limited += refused; lock.unlock()
        }
        func addLowered() { lock.lock(); lowered += 1; lock.unlock() }
    }

    /// The connections are threads of their own; the caller awaits them without holding one of Swift
    /// concurrency's few threads (on a 2-core machine the server under test has only two of them).
    func run(_ request: @escaping @Sendable (Int) -> Data) async -> Result {
        let shared = Shared()
        let deadline = ContinuousClock.now + duration
        let start = ContinuousClock.now
        // Each connection's thread signals when it ends; a thread of the caller's priority waits for them all and resumes
        // the caller, so no thread a low-priority connection would start (one inherits its creator's nice value) ever
        // runs anything but the connection.
        let finished = DispatchSemaphore(value: 0)
        for _ in 0..<connections {
            Thread {
                defer { finished.signal() }
                if lowPriority && Self.lowerThisThreadsPriority() { shared.addLowered() }
                guard let socket = Self.connect(port: port, from: source) else {
                    shared.add([], failures: 1)
                    return
                }
                defer { close(socket) }
                var local: [Int] = []
                var localFailures = 0
                var localLimited = 0
                var next = ContinuousClock.now
                while ContinuousClock.now < deadline {
                    var due: ContinuousClock.Instant?
                    if let interval {
                        let wait = next - ContinuousClock.now
                        if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds)) }
                        due = next
                        next += interval
                    }
                    let index = shared.take()
                    if index >= maxRequests { break }
                    let bytes = request(index)
                    let t0 = due.map { min($0, ContinuousClock.now) } ?? ContinuousClock.now
                    guard Self.send(socket, bytes), let status = Self.readResponse(socket) else { localFailures += 1; break }
                    let elapsed = ContinuousClock.now - t0
                    local.append(Int(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000))
                    if !(200..<300).contains(status) {
                        localFailures += 1
                        if status == 429 { localLimited += 1 }
                    }
                }
                shared.add(local, failures: localFailures, limited: localLimited)
            }.start()
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                for _ in 0..<connections { finished.wait() }
                done.resume()
            }.start()
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return shared.lock.withLock {
            Result(requests: shared.latencies.count, failures: shared.failures, seconds: seconds, latenciesNanos: shared.latencies,
                   limited: shared.limited, lowPriorityThreads: shared.lowered)
        }
    }

    /// The calling thread at nice 19; whether it is. On Linux a nice value belongs to a thread, and
    /// `setpriority(PRIO_PROCESS, 0, …)` sets the calling thread's (setpriority(2), "Notes"); nothing elsewhere, where it
    /// would be the whole process's.
    private static func lowerThisThreadsPriority() -> Bool {
        #if os(Linux)
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) == 0
        #else
        return false
        #endif
    }

    /// An HTTP/1.1 request as bytes.
    static func request(_ method: String, _ path: String, headers: [String: String] = [:], body: Data = Data()) -> Data {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return Data((text + "\r\n").utf8) + body
    }

    private static func connect(port: UInt16, from source: String?) -> Int32? {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { close(fd); return nil }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(fd); return nil }
        return fd
    }

    private static func send(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
    }

    /// Reads one response (Content-Length framed); returns its status code.
    private static func readResponse(_ fd: Int32) -> Int? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            if let end = headerEnd, buffer.count >= end + contentLength { break }
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<count])
            if headerEnd == nil, let range = findHeaderEnd(buffer) {
                headerEnd = range
                let head = String(decoding: buffer[0..<range], as: UTF8.self).lowercased()
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
                    contentLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        let statusLine = String(decoding: buffer.prefix(12), as: UTF8.self)
        return Int(statusLine.dropFirst(9).prefix(3))
    }

    private static func findHeaderEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }
}

#if canImport(Glibc)
private let systemConnect = Glibc.connect
#else
private let systemConnect = Darwin.connect
#endif
