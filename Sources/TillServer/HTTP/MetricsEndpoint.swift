import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Metrics
import Prometheus
import Till
import TillService

/// What `till server` keeps for `GET /metrics` when `server.metrics.listen` is set: a Prometheus registry of its own
/// (no process-wide metrics system is bootstrapped), the factory every part of the server records into, and the
/// listener that serves it.
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// Pass it as `metrics:` to ``buildApplication(state:store:logger:metrics:onServerRunning:)``, the reconciler, the
    /// event deliverer and ``MeasuredTransport``.
    public let factory: PrometheusMetricsFactory

    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        // Gateways answer in tens of milliseconds to tens of seconds; the prepare timer spans the same range.
        factory.defaultDurationHistogramBuckets = [.milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                                                   .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500),
                                                   .seconds(5), .seconds(10), .seconds(30)]
        self.factory = factory
    }

    /// The text `GET /metrics` answers: each merchant's gateways' health sampled now
    /// (`till_gateway_health_tier{merchant,gateway}`: 0 healthy, 1 degraded, 2 circuit open), then every series.
    public func scrape(_ state: ServerState) -> [UInt8] {
        for merchant in state.merchants {
            for gateway in merchant.gateways.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                Gauge(label: "till_gateway_health_tier", dimensions: [("merchant", merchant.configuration.id), ("gateway", gateway.rawValue)],
                      factory: factory).record(Double(merchant.health.tier(of: gateway).rawValue))
            }
        }
        return registry.emitToBuffer()
    }
}

/// The metrics listener: `GET /metrics` and nothing else, on its own address (never the public API's).
public func buildMetricsApplication(_ metrics: ServerMetrics, state: ServerState, host: String, port: Int,
                                    logger: Logger = Logger(label: "till.metrics"),
                                    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
    let router = Router()
    router.get("/metrics") { _, _ in
        Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: metrics.scrape(state))))
    }
    // A scraper needs a connection or two; a slow or idle one is cut off as on the API's listener.
    return Application(router: router,
                       server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadline(limit: .seconds(10))], idleTimeout: .seconds(30))),
                       configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "till",
                                                               availableConnectionsDelegate: MaximumAvailableConnections(64)),
                       onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) }, logger: logger)
}
