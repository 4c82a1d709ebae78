import Foundation
import Hummingbird

/// The iPayNow emulator's HTTP routes inside the sandbox server.
enum IPayNowRoutes {
    static func register(on router: Router<SandboxRequestContext>, emulator: IPayNowEmulator, address: SandboxAddress,
                         release: HoldRelease) {
        @Sendable func base() async -> URL { emulator.moduleBaseURL(in: await address.baseURL) }

        router.post("/ipaynow/global") { request, context -> Response in
            guard let body = await readBody(request) else { return Sandbox.text("body too large", status: .contentTooLarge) }
            let answer = await emulator.handleGlobal(body: body, base: await base())
            switch answer.delivery {
            case .respond:
                return Response(status: .init(code: answer.status), headers: [.contentType: answer.contentType],
                                body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
            case .holdThenGatewayTimeout:
                await release.hold(for: emulator.holdDuration)
                return Sandbox.text("Gateway Timeout", status: .gatewayTimeout)
            case .dropConnection:
                context.closeConnection()
                return Sandbox.text("", status: .internalServerError)
            }
        }
        router.post("/ipaynow/\(IPayNowEmulator.pluginPath)") { request, _ -> Response in
            guard let body = await readBody(request) else { return Sandbox.json(error("body too large"), status: .contentTooLarge) }
            let (status, answer) = await emulator.handlePlugin(body: body)
            return Response(status: .init(code: status), headers: [.contentType: "application/json; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: answer)))
        }
        router.get("/ipaynow/sandbox-only/channel/:id") { _, context -> Response in
            await emulator.channelPage(id: context.parameters.get("id") ?? "").response
        }
        router.post("/ipaynow/sandbox-only/channel/:id") { request, context -> Response in
            let body = await readBody(request) ?? []
            return await emulator.completeChannelPage(id: context.parameters.get("id") ?? "", form: body).response
        }
        registerAdmin(on: router, emulator: emulator)
    }

    private static func registerAdmin(on router: Router<SandboxRequestContext>, emulator: IPayNowEmulator) {
        router.post("/admin/ipaynow/faults") { request, _ -> Response in
            let expected = "expected {\"fault\": \"server_error\" | \"timeout\" | \"drop\" | \"garbage\" | \"bad_signature\", "
                + "\"funcode\": optional, e.g. \"MQ001\"}"
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body), let name = parsed["fault"]?.stringValue else {
                return Sandbox.json(error(expected), status: .badRequest)
            }
            guard let fault = IPayNowEmulator.Fault(rawValue: name) else {
                return Sandbox.json(error("unknown fault \"\(name)\"; " + expected), status: .badRequest)
            }
            let funcode = parsed["funcode"]?.stringValue
            await emulator.inject(fault, funcode: funcode)
            var members: [JSONValue.Member] = [.init(key: "queued", value: .string(fault.rawValue))]
            if let funcode { members.append(.init(key: "funcode", value: .string(funcode))) }
            return Sandbox.json(.object(members))
        }
        router.get("/admin/ipaynow/ledger") { _, _ -> Response in Sandbox.json(encoding: await emulator.ledger) }
        router.get("/admin/ipaynow/orders") { _, _ -> Response in Sandbox.json(encoding: await emulator.orderSummaries()) }
        router.get("/admin/ipaynow/notifications") { _, _ -> Response in Sandbox.json(encoding: await emulator.notifications) }
        router.post("/admin/ipaynow/orders/status") { request, _ -> Response in
            let expected = "expected {\"mhtOrderNo\": \"…\", \"tradeStatus\": \"A001\" | \"A002\" | …, \"appId\": optional, \"notify\": true}"
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let number = parsed["mhtOrderNo"]?.stringValue, let status = parsed["tradeStatus"]?.stringValue,
                  ["A00I", "A001", "A002", "A003", "A004", "A005"].contains(status) else {
                return Sandbox.json(error(expected), status: .badRequest)
            }
            let notify = parsed["notify"].map { $0 == .bool(true) } ?? true
            guard let order = await emulator.setTradeStatus(status, appId: parsed["appId"]?.stringValue, mhtOrderNo: number,
                                                            notify: notify) else {
                return Sandbox.json(error("no order \(number) (give appId when two apps have one)"), status: .notFound)
            }
            return Sandbox.json(encoding: order)
        }
        router.post("/admin/ipaynow/notifications/redeliver") { request, _ -> Response in
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let number = parsed["mhtOrderNo"]?.stringValue else {
                return Sandbox.json(error("expected {\"mhtOrderNo\": \"…\", \"appId\": optional}"), status: .badRequest)
            }
            guard let attempt = await emulator.redeliver(appId: parsed["appId"]?.stringValue, mhtOrderNo: number) else {
                return Sandbox.json(error("no N001 was made for order \(number)"), status: .notFound)
            }
            return Sandbox.json(encoding: attempt)
        }
        router.post("/admin/ipaynow/notifications/send") { request, _ -> Response in
            guard let body = await readBody(request),
                  let crafted = try? JSONDecoder().decode(IPayNowEmulator.CraftedNotification.self, from: Data(body)) else {
                return Sandbox.json(error("expected {\"mhtOrderNo\": \"…\", \"appId\"?, \"tradeStatus\"?, \"set\"?: {…}, \"omit\"?: […], "
                                          + "\"tamper\"?: {…}, \"appKey\"?, \"signature\"?, \"url\"?}"), status: .badRequest)
            }
            guard let attempt = await emulator.sendCrafted(crafted) else {
                return Sandbox.json(error("no order \(crafted.mhtOrderNo), or no URL to send to"), status: .notFound)
            }
            return Sandbox.json(encoding: attempt)
        }
        router.post("/admin/ipaynow/notifications/hold") { _, _ -> Response in
            await emulator.holdNotifications()
            return Sandbox.json(.object([.init(key: "held", value: .bool(true))]))
        }
        router.post("/admin/ipaynow/notifications/release") { _, _ -> Response in
            await emulator.releaseNotifications()
            return Sandbox.json(.object([.init(key: "held", value: .bool(false))]))
        }
        router.post("/admin/ipaynow/notifications/drop") { request, _ -> Response in
            let body = await readBody(request) ?? []
            let parsed = body.isEmpty ? nil : try? JSONValue.parse(body)
            let count = parsed?["count"].flatMap { Int($0.parameterText) } ?? 1
            await emulator.dropNotifications(count)
            return Sandbox.json(.object([.init(key: "dropping", value: .number(String(count)))]))
        }
        router.post("/admin/ipaynow/notifications/delay") { request, _ -> Response in
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let milliseconds = parsed["milliseconds"].flatMap({ Int($0.parameterText) }), milliseconds >= 0 else {
                return Sandbox.json(error("expected {\"milliseconds\": 0 or more}"), status: .badRequest)
            }
            await emulator.setNotificationDelay(.milliseconds(milliseconds))
            return Sandbox.json(.object([.init(key: "milliseconds", value: .number(String(milliseconds)))]))
        }
    }

    private static func readBody(_ request: Request) async -> [UInt8]? {
        guard let buffer = try? await request.body.collect(upTo: Sandbox.maximumBodyBytes) else { return nil }
        return Array(buffer.readableBytesView)
    }

    private static func error(_ message: String) -> JSONValue {
        .object([.init(key: "error", value: .string(message))])
    }
}

extension IPayNowEmulator: SandboxEmulator {
    /// `ipaynow`: `/ipaynow/global`, the stand-ins under `/ipaynow/sandbox-only`, admin under `/admin/ipaynow`.
    public nonisolated var name: String { "ipaynow" }

    public nonisolated func mount(_ mount: SandboxMount) {
        IPayNowRoutes.register(on: mount.router, emulator: self, address: mount.address, release: mount.release)
    }

    /// The module's `base_url`: `{sandbox}/ipaynow` (it posts to `{base_url}/global`, as production is
    /// `https://gapi.ipaynow.cn/global`).
    public nonisolated func moduleBaseURL(in sandbox: URL) -> URL { sandbox.appendingPathComponent(name) }

    /// One account per app, for the `ipaynow` module: settings `base_url`, `app_id`; credential `app_key`.
    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] {
        apps.map { app in
            SandboxAccount(module: "ipaynow", settings: ["base_url": moduleBaseURL(in: sandbox).absoluteString, "app_id": app.appId],
                           credentials: ["app_key": app.appKey],
                           summary: "app id \"\(app.appId)\", app key \"\(app.appKey)\"; N001s go to each order's notifyUrl")
        }
    }
}
