import Foundation
import Till

/// The `server.metrics` block: where `till server` serves `GET /metrics` in Prometheus's text format. Off unless
/// `listen` is set; never on the public API's listener (it tells anyone who can reach it how much money moves).
public struct MetricsSettings: Sendable, Hashable, Codable {
    /// `host:port` of the metrics listener (`127.0.0.1:9464`); absent, no metrics are kept or served.
    public var listen: String?

    public init(listen: String? = nil) {
        self.listen = listen
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case listen }

    public init(from decoder: any Decoder) throws {
        try decoder.reportUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        listen = try c.decodeIfPresent(String.self, forKey: .listen)
    }

    /// The listen address split into host and port.
    public var hostAndPort: (host: String, port: Int)? { listen.flatMap(ServerSettings.hostAndPort) }

    /// Problems with the block; `apiListen` is `server.listen`, which the metrics may not share: the same port on the
    /// same host, or on any host when either side listens on all of them.
    public func validate(path: String, apiListen: String) -> [ValidationIssue] {
        guard let listen else { return [] }
        guard hostAndPort != nil else {
            return [.init(field: "\(path).listen", code: .invalidField, message: "expected host:port, such as 127.0.0.1:9464")]
        }
        if ServerSettings.samePort(listen, apiListen) {
            return [.init(field: "\(path).listen", code: .invalidField, message: "must differ from server.listen: metrics are never served on the public API")]
        }
        return []
    }
}
