import Foundation
import Hummingbird
import Logging

/// A loopback HTTP endpoint that plays a merchant's notification URL in tests and demos: it records
/// every request it gets and answers with scripted HTTP statuses.
///
/// ```swift
/// // fails the first two deliveries, then acknowledges
/// let receiver = try await LoopbackReceiver.start(answering: [500, 503], otherwise: 200)
/// let merchant = PayFortMerchant(…, notificationURL: receiver.url)
/// …
/// let posts = await receiver.received()
/// await receiver.stop()
/// ```
public struct LoopbackReceiver: Sendable {
    /// One request the receiver got.
    public struct ReceivedRequest: Sendable, Hashable {
        /// `POST`, `GET`, …
        public var method: String
        /// The path, with any query.
        public var path: String
        /// The `Content-Type` header, if any.
        public var contentType: String?
        /// The raw body.
        public var body: Data
        /// The HTTP status the receiver answered.
        public var answeredStatus: Int

        /// The body decoded as `application/x-www-form-urlencoded` fields (`+` and `%XX` decoded);
        /// `nil` when it is not valid form encoding.
        public var formFields: [String: String]? {
            guard let text = String(data: body, encoding: .utf8) else { return nil }
            return FormEncoding.decode(text)
        }
    }

    /// Where to send requests: `http://host:port/notifications` (any path on the server is accepted).
    public let url: URL
    let server: LoopbackServer
    let recorder: Recorder

    /// Starts a receiver.
    /// - Parameters:
    ///   - statuses: the statuses to answer the first requests with, in order.
    ///   - otherwise: the status for every request after those.
    ///   - host: the address to bind; loopback by default.
    ///   - port: the port; 0 picks a free one.
    ///   - logger: where the HTTP server logs.
    /// - Throws: ``SandboxError/couldNotStart(_:)``.
    public static func start(answering statuses: [Int] = [], otherwise: Int = 200, host: String = "127.0.0.1",
                             port: Int = 0, logger: Logger = Logger(label: "till.sandbox.receiver"))
        async throws(SandboxError) -> LoopbackReceiver {
        let recorder = Recorder(statuses: statuses, otherwise: otherwise)
        let (router, connections) = LoopbackServer.makeRouter()
        let handler: @Sendable (Request, SandboxRequestContext) async throws -> Response = { request, _ in
            let body = (try? await request.body.collect(upTo: Sandbox.maximumBodyBytes)).map { Data($0.readableBytesView) } ?? Data()
            let status = await recorder.record(method: request.method.rawValue, path: request.uri.description,
                                               contentType: request.headers[.contentType], body: body)
            return Sandbox.text(status < 300 ? "OK" : "error", status: .init(code: status))
        }
        for path in ["/", "**"] {
            router.post(RouterPath(stringLiteral: path), use: handler)
            router.get(RouterPath(stringLiteral: path), use: handler)
            router.put(RouterPath(stringLiteral: path), use: handler)
        }
        let server = try await LoopbackServer.start(router: router, connections: connections, host: host, port: port,
                                                    logger: logger)
        return LoopbackReceiver(url: server.baseURL.appendingPathComponent("notifications"), server: server,
                                recorder: recorder)
    }

    /// Everything received so far, oldest first.
    public func received() async -> [ReceivedRequest] {
        await recorder.requests
    }

    /// Stops the server.
    public func stop() async {
        await server.stop()
    }

    actor Recorder {
        private var statuses: [Int]
        private let otherwise: Int
        private(set) var requests: [ReceivedRequest] = []

        init(statuses: [Int], otherwise: Int) {
            self.statuses = statuses
            self.otherwise = otherwise
        }

        func record(method: String, path: String, contentType: String?, body: Data) -> Int {
            let status = statuses.isEmpty ? otherwise : statuses.removeFirst()
            requests.append(ReceivedRequest(method: method, path: path, contentType: contentType, body: body,
                                            answeredStatus: status))
            return status
        }
    }
}
