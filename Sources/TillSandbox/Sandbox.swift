import Foundation
import Hummingbird
import Logging

/// Why the sandbox (or a ``LoopbackReceiver``) could not start.
public enum SandboxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP server did not come up (the address is in use, the host cannot be bound, …).
    case couldNotStart(String)

    /// A sentence for logs and test failures.
    public var description: String {
        switch self {
        case .couldNotStart(let reason): "the sandbox server could not start: \(reason)"
        }
    }
}

/// One loopback HTTP server hosting every gateway emulator (PayFort, and Citcon when given).
///
/// ```swift
/// let payFort = PayFortEmulator(merchants: [merchant])
/// let citcon = CitconEmulator(merchants: [.init(apiKey: "key", apiSecret: "secret")])
/// let sandbox = try await Sandbox.start(payFort: payFort, citcon: citcon)
/// // point the PayFort module at sandbox.payFortBaseURL (…/payfort/FortAPI/paymentApi)
/// // and the Citcon module at sandbox.citconBaseURL (…/citcon/v1)
/// await sandbox.stop()
/// ```
///
/// Routes:
/// - `POST /payfort/FortAPI/paymentApi`: the PayFort JSON API; `POST /payfort/FortAPI/paymentPage`: the
///   custom merchant page's TOKENIZATION form (302 to the `return_url` with the signed result).
/// - `GET /payfort/secure3dsSimulator?FORTSESSIONID=…`: the 3-D Secure page; a `POST` to the same URL
///   with the form field `outcome=approve|fail` finishes it (302 to the order's `return_url`).
/// - `POST /payfort/sandbox-only/fort-sdk/pay`: a stand-in for the FORT mobile SDK (not an APS API).
/// - `POST /admin/payfort/faults` with `{"fault": "timeout"|"server_error"|"drop"|"technical_problem",
///   "command": "PURCHASE"}` (`command` optional): queue a fault for the next matching request.
/// - `GET /admin/payfort/ledger`, `GET /admin/payfort/operations`, `GET /admin/payfort/notifications`:
///   what was charged, the follow-up operations, and the feedback delivery attempts, as JSON arrays.
/// - With a Citcon emulator: the Citcon UPI API `POST /citcon/v1/access-tokens`, `POST /citcon/v1/charges`,
///   `GET /citcon/v1/transactions/{id}`, `POST /citcon/v1/refunds`, `/citcon/v1/cancels` (and
///   `/citcon/v1/captures`, answered not supported).
/// - `GET /citcon/landing/v1/landing/{id}` and `…/v1/qr/{id}`: the pages a charge's `payment.client[]`
///   points at; `POST …/{id}/complete` with the form field `outcome=complete|fail|cancel` settles the
///   charge (303 to its success, fail or cancel URL).
/// - `POST /citcon/wallet/{wallet}/pay` (`wechatpay`, `alipay`, `upop`): the wallet app, given a
///   `mobile_native` entry's content plus `"outcome"` as JSON (303 to the matching URL with `code` added).
/// - `POST /admin/citcon/faults` with `{"fault": "server_error"|"timeout"|"drop"|"expire_tokens", "path": "/v1/charges"}`
///   (`path` optional), `GET /admin/citcon/ledger`, `GET /admin/citcon/notifications`,
///   `POST /admin/citcon/ipn/{id}/redeliver`, `POST /admin/citcon/ipn/{id}/send`, `POST /admin/citcon/tokens/expire`.
/// - With a Worldline emulator: the Server API `/v1/{merchantId}/…` and the Client API `/client/v1/{customerId}/…` at the root, the 3-D Secure page `/worldline/3ds/{token}`, and `/admin/worldline/faults`, `…/ledger`, `…/webhooks`, `…/webhooks/{eventId}/redeliver`, `…/webhooks/send`, `…/merchants/{id}/webhook`, `…/payments/{id}/settle`.
/// - With an iPayNow emulator: `POST /ipaynow/global` (WP001, MQ001), the iOS plugin stand-in `POST /ipaynow/sandbox-only/plugin/pay` (not an iPayNow API), the `tn` page `/ipaynow/sandbox-only/channel/{id}`, and `/admin/ipaynow/faults`, `…/ledger`, `…/orders`, `…/orders/status`, `…/notifications`, `…/notifications/{redeliver,send,hold,release,drop,delay}`.
/// - With an ecommpay emulator: the SDK stand-in `POST /ecommpay/sandbox-only/sdk/pay` (not an ecommpay API), the Payment Page `GET /ecommpay/payment`, Gate `POST /ecommpay/v2/payment/status`, `…/{card|applepay}/{capture|cancel|refund}`, and `/admin/ecommpay/faults`, `…/ledger`, `…/payments`, `…/callbacks`, `…/projects/{id}/callback`, `…/callbacks/{redeliver,send,hold,release,drop}`.
/// - `GET /healthz`.
public struct Sandbox: Sendable {
    /// Only a namespace: start one with ``start(payFort:citcon:host:port:logger:)``.
    private init() {}

    /// Largest request body accepted.
    static let maximumBodyBytes = 64 * 1024

    /// Starts the sandbox server and returns once it listens.
    /// - Parameters:
    ///   - payFort: the PayFort emulator to host under `/payfort`.
    ///   - citcon: the Citcon emulator to host under `/citcon`, if any.
    ///   - host: the address to bind; loopback by default.
    ///   - port: the port; 0 picks a free one (read it from ``RunningSandbox/baseURL``).
    ///   - logger: where the HTTP server logs.
    /// - Throws: ``SandboxError/couldNotStart(_:)`` when the server cannot listen.
    public static func start(payFort: PayFortEmulator, citcon: CitconEmulator? = nil, host: String = "127.0.0.1", port: Int = 0,
                             logger: Logger = Logger(label: "till.sandbox")) async throws(SandboxError) -> RunningSandbox {
        try await start(emulators: [payFort] + (citcon.map { [$0] } ?? []), host: host, port: port, logger: logger)
    }

    /// Starts the sandbox server hosting `emulators`, each under its own ``SandboxEmulator/name``, and
    /// returns once it listens.
    /// - Throws: ``SandboxError/couldNotStart(_:)`` when the server cannot listen or two emulators
    ///   share a name.
    public static func start(emulators: [any SandboxEmulator], host: String = "127.0.0.1", port: Int = 0,
                             logger: Logger = Logger(label: "till.sandbox")) async throws(SandboxError) -> RunningSandbox {
        let names = emulators.map(\.name)
        guard Set(names).count == names.count else { throw .couldNotStart("two emulators share a name: \(names)") }
        let address = SandboxAddress()
        let release = HoldRelease()
        let (router, connections) = LoopbackServer.makeRouter()
        router.get("/healthz") { _, _ in Self.json(.object([.init(key: "status", value: .string("ok"))])) }
        let mount = SandboxMount(router: router, handle: SandboxHandle(address: address, release: release))
        for emulator in emulators { emulator.mount(mount) }
        let server = try await LoopbackServer.start(router: router, connections: connections, host: host, port: port,
                                                    logger: logger)
        await address.set(server.baseURL)
        return RunningSandbox(baseURL: server.baseURL, server: server, release: release, emulators: emulators)
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: value.serializedBytes)))
    }

    static func json<T: Encodable>(encoding value: T) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else {
            return Response(status: .internalServerError)
        }
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }

    static func text(_ text: String, status: HTTPResponse.Status, contentType: String = "text/plain; charset=utf-8") -> Response {
        Response(status: status, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A running ``Sandbox``. Stop it when done; it is not stopped by going out of scope.
public struct RunningSandbox: Sendable {
    /// `http://host:port` of the server.
    public let baseURL: URL
    let server: LoopbackServer
    let release: HoldRelease
    /// The emulators it hosts.
    public let emulators: [any SandboxEmulator]

    /// The gateway module's `base_url` for `emulator` in this sandbox.
    public func baseURL(of emulator: any SandboxEmulator) -> URL { emulator.moduleBaseURL(in: baseURL) }

    /// Every hosted emulator's accounts, as a merchant server would configure them.
    public func accounts() async -> [SandboxAccount] {
        var all: [SandboxAccount] = []
        for emulator in emulators { all += await emulator.sandboxAccounts(in: baseURL) }
        return all
    }

    /// Where the PayFort emulator lives (`{baseURL}/payfort`); its API is
    /// `{payFortBaseURL}/FortAPI/paymentApi`, its merchant page `{payFortBaseURL}/FortAPI/paymentPage`.
    public var payFortBaseURL: URL { baseURL.appendingPathComponent("payfort") }

    /// The Citcon UPI API base (`{baseURL}/citcon/v1`): the API's paths (`access-tokens`, `charges`,
    /// `transactions/{id}`, …) go after it. The landing pages and the wallet simulator are under
    /// `{baseURL}/citcon`. Only served when the sandbox was started with a Citcon emulator.
    public var citconBaseURL: URL { baseURL.appendingPathComponent("citcon").appendingPathComponent("v1") }

    /// Stops the server. Requests being held (timeouts) are let go first, so this returns promptly.
    public func stop() async {
        await release.releaseAll()
        await server.stop()
    }
}

/// The request context of the sandbox's routes: Hummingbird's basics plus a handle on the connection.
public struct SandboxRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    let connection: Connection

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        let channel = source.channel
        connection = Connection(
            id: ObjectIdentifier(channel),
            close: { channel.close(promise: nil) },
            whenClosed: { callback in channel.closeFuture.whenComplete { _ in callback() } })
    }

    /// Closes the request's connection without an answer (a gateway that drops the connection).
    public func closeConnection() {
        connection.close()
    }
}

/// One client connection to a sandbox server.
struct Connection: Sendable {
    var id: ObjectIdentifier
    /// Closes it.
    var close: @Sendable () -> Void
    /// Runs the callback once it is closed (by either side).
    var whenClosed: @Sendable (@escaping @Sendable () -> Void) -> Void
}

/// The open connections of a server, so stopping it can close idle keep-alive connections
/// instead of cancelling the server (which makes it log errors while it winds down).
final class ConnectionRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var open: [ObjectIdentifier: Connection] = [:]
    private var stopping = false

    func track(_ connection: Connection) {
        enum Action { case close, watch, nothing }
        let action: Action = lock.withLock {
            if stopping { return .close }
            guard open[connection.id] == nil else { return .nothing }
            open[connection.id] = connection
            return .watch
        }
        switch action {
        case .close: connection.close()
        case .watch: connection.whenClosed { [weak self] in self?.forget(connection.id) }
        case .nothing: break
        }
    }

    private func forget(_ id: ObjectIdentifier) {
        _ = lock.withLock { open.removeValue(forKey: id) }
    }

    /// Closes every open connection, and any that makes a request from now on.
    func closeAll() {
        let connections = lock.withLock {
            stopping = true
            defer { open.removeAll() }
            return Array(open.values)
        }
        for connection in connections { connection.close() }
    }
}

/// Registers every request's connection with the server's ``ConnectionRegistry``.
struct ConnectionTracking: RouterMiddleware {
    typealias Context = SandboxRequestContext
    let registry: ConnectionRegistry

    func handle(_ request: Request, context: SandboxRequestContext,
                next: (Request, SandboxRequestContext) async throws -> Response) async throws -> Response {
        registry.track(context.connection)
        return try await next(request, context)
    }
}

/// The sandbox's address, known once the server listens.
actor SandboxAddress {
    private(set) var baseURL = URL(fileURLWithPath: "/")
    func set(_ url: URL) { baseURL = url }
}

/// Lets held requests go when the sandbox stops.
actor HoldRelease {
    private(set) var released = false
    func releaseAll() { released = true }

    /// Waits for `duration`, or until ``releaseAll()``, or until the task is cancelled.
    nonisolated func hold(for duration: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now + duration
        while clock.now < deadline, !Task.isCancelled, !(await released) {
            let remaining = deadline - clock.now
            try? await Task.sleep(for: min(remaining, .milliseconds(20)))
        }
    }
}

/// A Hummingbird application on a loopback port, run in a task.
struct LoopbackServer: Sendable {
    let baseURL: URL
    let task: Task<Void, any Error>
    let listener: ListenerBox
    let connections: ConnectionRegistry

    /// A router whose requests' connections are tracked in `connections`; add routes to it, then
    /// pass both to ``start(router:connections:host:port:logger:)``.
    static func makeRouter() -> (Router<SandboxRequestContext>, ConnectionRegistry) {
        let connections = ConnectionRegistry()
        let router = Router(context: SandboxRequestContext.self)
        router.add(middleware: ConnectionTracking(registry: connections))
        return (router, connections)
    }

    /// Starts serving `router` and returns once it listens.
    static func start(router: Router<SandboxRequestContext>, connections: ConnectionRegistry, host: String, port: Int,
                      logger: Logger) async throws(SandboxError) -> LoopbackServer {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let listener = ListenerBox()
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "till-sandbox"),
            onServerRunning: { channel in
                listener.set { try? await channel.close().get() }
                continuation.yield(channel.localAddress?.port ?? port)
            },
            logger: logger)
        let task = Task {
            defer { continuation.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            let reason: String
            switch await task.result {
            case .failure(let error): reason = String(describing: error)
            case .success: reason = "the server stopped before listening"
            }
            throw .couldNotStart(reason)
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        guard let url = URL(string: "http://\(hostPart):\(bound)") else {
            task.cancel()
            throw .couldNotStart("no URL for \(host):\(bound)")
        }
        return LoopbackServer(baseURL: url, task: task, listener: listener, connections: connections)
    }

    /// Stops listening, closes the connections, and waits for the server to wind down (cancelling
    /// it if a request is still running after a second).
    func stop() async {
        await listener.close()
        connections.closeAll()
        let task = self.task
        let watchdog = Task {
            try await Task.sleep(for: .seconds(1))
            task.cancel()
        }
        _ = await task.result
        watchdog.cancel()
    }
}

/// Holds the way to close a server's listening socket, known once it listens.
final class ListenerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var closer: (@Sendable () async -> Void)?

    func set(_ closer: @escaping @Sendable () async -> Void) {
        lock.withLock { self.closer = closer }
    }

    func close() async {
        let closer = lock.withLock { self.closer }
        await closer?()
    }
}
