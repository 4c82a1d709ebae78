import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP request as gateway modules build it.
public struct TransportRequest: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable { case get = "GET", post = "POST", put = "PUT", delete = "DELETE", patch = "PATCH" }

    public var method: Method
    public var url: URL
    /// Header fields; names compare case-insensitively on the wire.
    public var headers: [String: String]
    public var body: Data?
    /// The whole request's time limit. Defaults to 30 s.
    public var timeout: Duration

    public init(method: Method = .get, url: URL, headers: [String: String] = [:], body: Data? = nil,
                timeout: Duration = .seconds(30)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// An HTTP response.
public struct TransportResponse: Sendable, Hashable {
    public var statusCode: Int
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: Data

    public init(statusCode: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.statusCode = statusCode
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
    }
}

/// A transport failure, classified by what it means for the money: did the request possibly arrive?
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The request provably never reached the gateway (refused connection, unknown host, no network).
        case notSent = "not_sent"
        /// No answer in time. The gateway may have processed the request.
        case timedOut = "timed_out"
        /// The connection broke after the request was (maybe) sent.
        case connectionLost = "connection_lost"
        /// The caller cancelled.
        case cancelled
        /// Anything else (TLS failure, malformed response).
        case other
    }
    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// False only when the request provably never arrived.
    public var requestMayHaveArrived: Bool { kind != .notSent }

    public var description: String { "\(kind.rawValue): \(message)" }

    /// The checkout error this failure becomes for `gateway`: unavailable when not sent, unknown
    /// outcome otherwise.
    public func checkoutError(gateway: GatewayID) -> CheckoutError {
        switch kind {
        case .notSent:
            CheckoutError(.gatewayUnreachable, message: "the request never reached the gateway: \(message)", gateway: gateway)
        case .timedOut:
            CheckoutError(.timeout, message: "the gateway did not answer in time; the outcome is unknown", gateway: gateway)
        case .connectionLost, .cancelled, .other:
            CheckoutError(.unknownOutcome, message: "the request may have reached the gateway: \(message)", gateway: gateway)
        }
    }
}

/// Sends HTTP requests. Gateway modules depend on this protocol, never on URLSession directly, so
/// tests can script the gateway (see `RecordingTransport` in TillTesting) and servers can plug in
/// their own client.
public protocol HTTPTransport: Sendable {
    /// Sends `request`. Any HTTP status is a response; only transport failures throw
    /// ``TransportError``.
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse
}

/// ``HTTPTransport`` over `URLSession` (FoundationNetworking on Linux).
public struct URLSessionTransport: HTTPTransport {
    private let session: URLSession

    /// - Parameter session: defaults to an ephemeral session (no cookies or cache on disk).
    public init(session: URLSession = URLSession(configuration: .ephemeral)) {
        self.session = session
    }

    /// An ephemeral session that answers a redirect (`3xx` with a `Location`) as it came, never following it: for a
    /// post whose receiver must be the URL itself, such as a webhook delivery. URLSession would otherwise follow a
    /// `302` with a `GET` of the other page, whose `200` says nothing about the post, or post the body again to
    /// wherever a `307` points.
    public static func notFollowingRedirects() -> URLSessionTransport {
        URLSessionTransport(session: URLSession(configuration: .ephemeral, delegate: RedirectRefusal(), delegateQueue: nil))
    }

    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.httpBody = request.body
        let components = request.timeout.components
        urlRequest.timeoutInterval = TimeInterval(components.seconds) + TimeInterval(components.attoseconds) / 1e18
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else {
                throw TransportError(.other, "not an HTTP response")
            }
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key] = value }
            }
            return TransportResponse(statusCode: http.statusCode, headers: headers, body: data)
        } catch let error as TransportError {
            throw error
        } catch let error as URLError {
            throw Self.classify(error)
        } catch is CancellationError {
            throw TransportError(.cancelled, "cancelled")
        } catch {
            throw TransportError(.other, String(describing: type(of: error)))
        }
    }

    /// Maps a URLError to what it means for the request's fate.
    static func classify(_ error: URLError) -> TransportError {
        switch error.code {
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet,
             .badURL, .unsupportedURL, .appTransportSecurityRequiresSecureConnection:
            TransportError(.notSent, "\(error.code.rawValue) connection not established")
        case .timedOut:
            TransportError(.timedOut, "timed out")
        case .networkConnectionLost:
            TransportError(.connectionLost, "connection lost")
        case .cancelled:
            TransportError(.cancelled, "cancelled")
        default:
            TransportError(.other, "URLError \(error.code.rawValue)")
        }
    }
}

/// Declines every redirect, so the `3xx` itself is the answer (``URLSessionTransport/notFollowingRedirects()``).
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
