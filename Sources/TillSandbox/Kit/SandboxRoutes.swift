import Foundation
import Hummingbird

/// What every emulator's routes share: reading a body, error and JSON answers, and the two ways of
/// not answering an API request (held then 504, or a dropped connection). Each emulator's `…Routes`
/// namespace conforms; the common admin routes are in ``SandboxAdmin``.
protocol SandboxRoutes {}

extension SandboxRoutes {
    // MARK: Requests and answers

    /// The request's body, or `nil` when it is larger than ``Sandbox/maximumBodyBytes`` or unreadable.
    static func readBody(_ request: Request) async -> [UInt8]? {
        guard let buffer = try? await request.body.collect(upTo: Sandbox.maximumBodyBytes) else { return nil }
        return Array(buffer.readableBytesView)
    }

    /// `{"error": message}`.
    static func error(_ message: String) -> JSONValue {
        .object([.init(key: "error", value: .string(message))])
    }

    /// `bytes` (JSON the emulator serialized itself) as `application/json; charset=utf-8` with HTTP `status`.
    static func jsonAnswer(_ bytes: [UInt8], status: Int) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A request held for `duration` (or until the sandbox stops), then answered `504 Gateway Timeout`.
    static func gatewayTimeout(after duration: Duration, release: HoldRelease) async -> Response {
        await release.hold(for: duration)
        return Sandbox.text("Gateway Timeout", status: .gatewayTimeout)
    }

    /// Closes the request's connection without an answer (the response is never sent).
    static func dropConnection(_ context: SandboxRequestContext) -> Response {
        context.closeConnection()
        return Sandbox.text("", status: .internalServerError)
    }
}

/// The admin routes that work the same for every emulator: fault injection, lists, replays, crafted
/// notifications, and the test controls of a ``NotificationDeliverer``. Each emulator mounts them with
/// its own paths and messages.
enum SandboxAdmin: SandboxRoutes {
    /// Mounts `POST path` taking `{"fault": "<raw value>", "<keyName>": optional}` and queueing the
    /// fault with `inject`. Answers `{"queued": "<fault>", "<keyName>": echo(key)}` (the key only when
    /// given); `400` with `expected` when there is no fault, with `unknown fault "…"; ` and
    /// `unknownHint` (`expected` by default) when the fault is not one of `Fault`'s.
    static func mountFaults<Fault: RawRepresentable & Sendable>(
        _ type: Fault.Type, on router: Router<SandboxRequestContext>, path: RouterPath, keyName: String, expected: String,
        unknownHint: String? = nil, echo: @escaping @Sendable (String) -> String = { $0 },
        inject: @escaping @Sendable (Fault, String?) async -> Void
    ) where Fault.RawValue == String {
        router.post(path) { request, _ -> Response in
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let name = parsed["fault"]?.stringValue else {
                return Sandbox.json(error(expected), status: .badRequest)
            }
            guard let fault = Fault(rawValue: name) else {
                return Sandbox.json(error("unknown fault \"\(name)\"; " + (unknownHint ?? expected)), status: .badRequest)
            }
            let key = parsed[keyName]?.stringValue
            await inject(fault, key)
            var members: [JSONValue.Member] = [.init(key: "queued", value: .string(fault.rawValue))]
            if let key { members.append(.init(key: keyName, value: .string(echo(key)))) }
            return Sandbox.json(.object(members))
        }
    }

    /// Mounts `GET path` answering `list()` as JSON (keys sorted): a ledger, the notification tries…
    static func mountList<Value: Encodable & Sendable>(on router: Router<SandboxRequestContext>, path: RouterPath,
                                                       _ list: @escaping @Sendable () async -> Value) {
        router.get(path) { _, _ -> Response in Sandbox.json(encoding: await list()) }
    }

    /// Mounts `POST path` that makes one notification try (a replay, a crafted notification) and
    /// answers its record as JSON. `input` reads what to send from the path's parameters and the
    /// body (`nil`: `400` with `expected`); `send` makes the try (`nil`: `404` with `notFound`).
    static func mountTry<Input: Sendable, Record: Encodable & Sendable>(
        on router: Router<SandboxRequestContext>, path: RouterPath, expected: String,
        input: @escaping @Sendable (_ parameters: Hummingbird.Parameters, _ body: [UInt8]?) -> Input?,
        send: @escaping @Sendable (Input) async -> Record?, notFound: @escaping @Sendable (Input) -> String
    ) {
        router.post(path) { request, context -> Response in
            guard let input = input(context.parameters, await readBody(request)) else {
                return Sandbox.json(error(expected), status: .badRequest)
            }
            guard let record = await send(input) else { return Sandbox.json(error(notFound(input)), status: .notFound) }
            return Sandbox.json(encoding: record)
        }
    }

    /// Mounts `POST path` taking a JSON `Crafted` and sending it once with `send` (see ``mountTry(on:path:expected:input:send:notFound:)``).
    static func mountCraftedSend<Crafted: Decodable & Sendable, Record: Encodable & Sendable>(
        _ type: Crafted.Type, on router: Router<SandboxRequestContext>, path: RouterPath, expected: String,
        send: @escaping @Sendable (Crafted) async -> Record?, notFound: @escaping @Sendable (Crafted) -> String
    ) {
        SandboxAdmin.mountTry(on: router, path: path, expected: expected,
                              input: { _, body in body.flatMap { try? JSONDecoder().decode(Crafted.self, from: Data($0)) } },
                              send: send, notFound: notFound)
    }

    /// Mounts the chosen test controls of `deliverer` under `prefix`:
    /// - `POST {prefix}/hold` → `{"held": true}`; `POST {prefix}/release` → `{"held": false}`;
    /// - `POST {prefix}/drop` with `{"count": n}` (1 without a body) → `{"dropping": n}`;
    /// - `POST {prefix}/delay` with `{"milliseconds": n}` (0 or more) → `{"milliseconds": n}`.
    static func mountDeliveryControls<Message>(_ controls: Set<DeliveryControl>, on router: Router<SandboxRequestContext>,
                                               under prefix: String, deliverer: NotificationDeliverer<Message>) {
        if controls.contains(.hold) {
            router.post(RouterPath(stringLiteral: prefix + "/hold")) { _, _ -> Response in
                deliverer.hold()
                return Sandbox.json(.object([.init(key: "held", value: .bool(true))]))
            }
        }
        if controls.contains(.release) {
            router.post(RouterPath(stringLiteral: prefix + "/release")) { _, _ -> Response in
                deliverer.release()
                return Sandbox.json(.object([.init(key: "held", value: .bool(false))]))
            }
        }
        if controls.contains(.drop) {
            router.post(RouterPath(stringLiteral: prefix + "/drop")) { request, _ -> Response in
                let body = await readBody(request) ?? []
                let parsed = body.isEmpty ? nil : try? JSONValue.parse(body)
                let count = parsed?["count"].flatMap { Int($0.parameterText) } ?? 1
                deliverer.drop(count)
                return Sandbox.json(.object([.init(key: "dropping", value: .number(String(count)))]))
            }
        }
        if controls.contains(.delay) {
            router.post(RouterPath(stringLiteral: prefix + "/delay")) { request, _ -> Response in
                guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                      let milliseconds = parsed["milliseconds"].flatMap({ Int($0.parameterText) }), milliseconds >= 0 else {
                    return Sandbox.json(error("expected {\"milliseconds\": 0 or more}"), status: .badRequest)
                }
                deliverer.setDelay(.milliseconds(milliseconds))
                return Sandbox.json(.object([.init(key: "milliseconds", value: .number(String(milliseconds)))]))
            }
        }
    }
}

/// A test control of a ``NotificationDeliverer`` that an admin route can offer.
enum DeliveryControl: String, Sendable, Hashable, CaseIterable {
    /// Hold new notifications.
    case hold
    /// Send the held ones, and the next ones at once again.
    case release
    /// Drop the next ones.
    case drop
    /// Delay the first try of the next ones.
    case delay
}
