import Foundation
import Metrics
import Till

/// A gateway's transport that times every request it sends: `till_gateway_request_duration{gateway, outcome}`, the
/// outcome being the answer's status class (`2xx`, `4xx`, `5xx`…) or, when no answer came, the transport failure
/// (`not_sent`, `timed_out`, `connection_lost`, `cancelled`, `other`). What `till server` wraps each gateway's transport
/// in when metrics or the console are on; the console's percentiles come from `latencies`.
public struct MeasuredTransport: HTTPTransport {
    let inner: any HTTPTransport
    let gateway: GatewayID
    let metrics: any MetricsFactory
    let latencies: GatewayLatencies?
    let exchanges: GatewayExchanges?

    public init(_ inner: any HTTPTransport, gateway: GatewayID, metrics: any MetricsFactory, latencies: GatewayLatencies? = nil,
                exchanges: GatewayExchanges? = nil) {
        self.inner = inner
        self.gateway = gateway
        self.metrics = metrics
        self.latencies = latencies
        self.exchanges = exchanges
    }

    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let started = ContinuousClock.now
        let startedAt = Date()
        do {
            let response = try await inner.send(request)
            let elapsed = record(since: started, outcome: "\(response.statusCode / 100)xx")
            exchanges?.record(request, gateway: gateway, started: startedAt, milliseconds: elapsed, response: response, failure: nil)
            return response
        } catch {
            let elapsed = record(since: started, outcome: error.kind.rawValue)
            exchanges?.record(request, gateway: gateway, started: startedAt, milliseconds: elapsed, response: nil, failure: error)
            throw error
        }
    }

    /// Times the request; returns its whole milliseconds.
    private func record(since started: ContinuousClock.Instant, outcome: String) -> Int {
        let nanoseconds = (ContinuousClock.now - started).nanosecondsCount
        Timer(label: "till_gateway_request_duration", dimensions: [("gateway", gateway.rawValue), ("outcome", outcome)], factory: metrics)
            .recordNanoseconds(nanoseconds)
        latencies?.record(gateway, milliseconds: Double(nanoseconds) / 1_000_000)
        return Int(nanoseconds / 1_000_000)
    }
}
