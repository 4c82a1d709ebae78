import Foundation
import Logging

/// Wraps a transport and logs every exchange through swift-log, redacted by a ``Redactor``.
///
/// At `.info`: method, URL without query, status and duration. At `.debug`: headers and bodies,
/// redacted (secrets removed, card numbers masked to first 6 / last 4, CVVs never shown). The URL's
/// query string is logged only redacted too, since some gateways put signatures in it.
public struct LoggingTransport<Base: HTTPTransport>: HTTPTransport {
    public let base: Base
    public let logger: Logger
    public let redactor: Redactor

    public init(_ base: Base, logger: Logger, redactor: Redactor = Redactor()) {
        self.base = base
        self.logger = logger
        self.redactor = redactor
    }

    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let start = ContinuousClock.now
        let target = Self.loggableURL(request.url, redactor: redactor)
        logger.debug("gateway request", metadata: [
            "method": .string(request.method.rawValue), "url": .string(target),
            "headers": .string(redactor.redact(headers: request.headers).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")),
            "body": .string(request.body.map { redactor.redact(body: $0) } ?? ""),
        ])
        do {
            let response = try await base.send(request)
            let elapsed = ContinuousClock.now - start
            logger.info("gateway response", metadata: [
                "method": .string(request.method.rawValue), "url": .string(target),
                "status": .stringConvertible(response.statusCode), "ms": .stringConvertible(elapsed.milliseconds),
            ])
            logger.debug("gateway response body", metadata: ["body": .string(redactor.redact(body: response.body))])
            return response
        } catch {
            logger.warning("gateway transport failure", metadata: [
                "method": .string(request.method.rawValue), "url": .string(target),
                "kind": .string(error.kind.rawValue), "ms": .stringConvertible((ContinuousClock.now - start).milliseconds),
            ])
            throw error
        }
    }

    package static func loggableURL(_ url: URL, redactor: Redactor) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "<unparsable url>" }
        components.user = nil
        components.password = nil
        if let items = components.queryItems {
            components.queryItems = items.map { item in
                URLQueryItem(name: item.name, value: item.value.map { redactor.redactValue($0, key: item.name) })
            }
        }
        return components.string ?? "<unparsable url>"
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let c = components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }
}
