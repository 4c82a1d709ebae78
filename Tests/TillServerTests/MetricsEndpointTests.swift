import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
@testable import TillServer
import TillTesting

/// `GET /metrics` on its own listener and `GET /readyz` on the API's, as `till server` runs them.
@Suite("Metrics and readiness")
struct MetricsEndpointTests {
    /// The metrics listener of `metrics` for `h`'s merchants, on a free port.
    static func metricsListener(_ metrics: ServerMetrics, state: ServerState) async throws -> (URL, Task<Void, any Error>) {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = buildMetricsApplication(metrics, state: state, host: "127.0.0.1", port: 0) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var ports = stream.makeAsyncIterator()
        let port = try #require(await ports.next())
        return (URL(string: "http://127.0.0.1:\(port)/metrics")!, task)
    }

    static func get(_ url: URL) async throws -> (status: Int, contentType: String?, text: String) {
        let (data, response) = try await URLSession.shared.data(from: url)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http.value(forHTTPHeaderField: "Content-Type"), String(decoding: data, as: UTF8.self))
    }

    @Test("a payment, a paid notification and the gateways' health show in Prometheus's text on the metrics listener, not on the API's",
          arguments: StoreKind.available)
    func scrape(kind: StoreKind) async throws {
        let metrics = ServerMetrics()
        let h = try await ServerHarness(kind, metrics: metrics.factory)
        defer { Task { await h.stop() } }
        let (url, task) = try await Self.metricsListener(metrics, state: h.state)
        defer { task.cancel() }
        let (_, attempt, gateway) = try await h.createAndPrepare()
        let paid = h.gateway(gateway).signedNotification(for: StatusReport(gateway: gateway, attempt: attempt, status: .paid,
                                                                          amount: ServerHarness.amount, eventID: "evt-metrics"))
        #expect(try await h.notify(paid, gateway: gateway).status == 200)
        let scraped = try await Self.get(url)
        #expect(scraped.status == 200)
        #expect(scraped.contentType?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(scraped.text.contains(#"till_payments_created_total{merchant="\#(h.merchant)"} 1"#), "\(scraped.text)")
        #expect(scraped.text.contains(#"till_notifications_total{gateway="fake",result="verified"} 1"#))
        #expect(scraped.text.contains(#"till_prepare_duration_count{gateway="fake"} 1"#))
        #expect(scraped.text.contains(#"till_gateway_health_tier{merchant="\#(h.merchant)",gateway="fake"} 0"#))
        // Never on the public API's listener.
        #expect(try await h.send("GET", "metrics", key: .some(nil)).status == 404)
    }

    @Test("each request a gateway's transport sends is timed by gateway and outcome: a status class, or why no answer came")
    func gatewayLatency() async throws {
        let metrics = ServerMetrics()
        let answering = MeasuredTransport(ScriptedTransport { _ in TransportResponse(statusCode: 502, headers: [:], body: Data()) },
                                          gateway: "payfort", metrics: metrics.factory)
        let refusing = MeasuredTransport(ScriptedTransport { _ throws(TransportError) in throw TransportError(.notSent, "refused") }, gateway: "citcon",
                                         metrics: metrics.factory)
        let request = TransportRequest(method: .post, url: URL(string: "https://gateway.example/pay")!, headers: [:], body: Data(),
                                       timeout: .seconds(5))
        _ = try await answering.send(request)
        _ = try await answering.send(request)
        await #expect(throws: TransportError.self) { try await refusing.send(request) }
        let text = String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self)
        #expect(text.contains(#"till_gateway_request_duration_count{gateway="payfort",outcome="5xx"} 2"#), "\(text)")
        #expect(text.contains(#"till_gateway_request_duration_count{gateway="citcon",outcome="not_sent"} 1"#))
        #expect(text.contains(#"till_gateway_request_duration_bucket{gateway="payfort",outcome="5xx",le="0.01"}"#))
    }

    @Test("readiness: 200 while the store answers, 503 once it cannot; liveness stays 200", arguments: StoreKind.available)
    func readiness(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        let ready = try await h.send("GET", "readyz", key: .some(nil))
        #expect(ready.status == 200)
        #expect(ready.json["status"] as? String == "ready")
        try await h.store.close()
        let gone = try await h.send("GET", "readyz", key: .some(nil))
        #expect(gone.status == 503)
        #expect(gone.json["status"] as? String == "unavailable")
        #expect(try await h.send("GET", "healthz", key: .some(nil)).status == 200)
        await h.stop()
    }

    @Test("readiness never waits past its limit for a read that hangs, and probes meanwhile share the one read in flight")
    func hangingStore() async throws {
        let probe = ReadinessProbe()
        let reads = Locked(0)
        let started = ContinuousClock.now
        let answers = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    await probe.check(within: .milliseconds(300)) {
                        reads.withLock { $0 += 1 }
                        try await Task.sleep(for: .seconds(30))   // a query on a connection the network lost
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == [false, false, false, false, false])
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(reads.withLock { $0 } == 1)
        #expect(await probe.check(within: .seconds(1)) {} == false, "the hung read is still the one in flight")
    }

    @Test("server.metrics.listen: off by default, host:port, never the API's own address, unknown keys named")
    func configuration() throws {
        #expect(ServerSettings().metrics.listen == nil)
        let good = try JSONDecoder().decode(ServerSettings.self, from: Data(#"{"metrics":{"listen":"127.0.0.1:9464"}}"#.utf8))
        #expect(good.metrics.hostAndPort?.port == 9464)
        #expect(good.validate(path: "server").isEmpty)
        var same = ServerSettings(listen: "127.0.0.1:8080")
        same.metrics = MetricsSettings(listen: "127.0.0.1:8080")
        #expect(same.validate(path: "server").map(\.field) == ["server.metrics.listen"])
        same.metrics = MetricsSettings(listen: "9464")
        #expect(same.validate(path: "server").map(\.field) == ["server.metrics.listen"])
        same.metrics = MetricsSettings(listen: "0.0.0.0:8080")   // all hosts, the API's port
        #expect(same.validate(path: "server").map(\.field) == ["server.metrics.listen"])
        same.metrics = MetricsSettings(listen: "127.0.0.1:9464")
        #expect(same.validate(path: "server").isEmpty)
        let collector = IssueCollector()
        let decoder = JSONDecoder()
        decoder.userInfo[.tillIssueCollector] = collector
        _ = try decoder.decode(ServerSettings.self, from: Data(#"{"metrics":{"listen":"127.0.0.1:9464","port":1}}"#.utf8))
        #expect(collector.issues.map(\.field).contains { $0.hasSuffix("port") })
    }
}

/// A transport that answers by a closure (no network).
struct ScriptedTransport: HTTPTransport {
    let answer: @Sendable (TransportRequest) async throws(TransportError) -> TransportResponse
    init(_ answer: @escaping @Sendable (TransportRequest) async throws(TransportError) -> TransportResponse) { self.answer = answer }
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse { try await answer(request) }
}
