import Foundation
import Hummingbird

/// The iPayNow emulator's HTTP routes inside the sandbox server.
enum IPayNowRoutes: SandboxRoutes {
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
                return await gatewayTimeout(after: emulator.holdDuration, release: release)
            case .dropConnection:
                return dropConnection(context)
            }
        }
        router.post("/ipaynow/\(IPayNowEmulator.pluginPath)") { request, _ -> Response in
            guard let body = await readBody(request) else { return Sandbox.json(error("body too large"), status: .contentTooLarge) }
            let (status, answer) = await emulator.handlePlugin(body: body)
            return jsonAnswer(answer, status: status)
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
        SandboxAdmin.mountFaults(IPayNowEmulator.Fault.self, on: router, path: "/admin/ipaynow/faults", keyName: "funcode",
                                 expected: "expected {\"fault\": \"server_error\" | \"timeout\" | \"drop\" | \"garbage\" | \"bad_signature\", "
                                     + "\"funcode\": optional, e.g. \"MQ001\"}") { await emulator.inject($0, funcode: $1) }
        SandboxAdmin.mountList(on: router, path: "/admin/ipaynow/ledger") { await emulator.ledger }
        SandboxAdmin.mountList(on: router, path: "/admin/ipaynow/orders") { await emulator.orderSummaries() }
        SandboxAdmin.mountList(on: router, path: "/admin/ipaynow/notifications") { await emulator.notifications }
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
        SandboxAdmin.mountTry(on: router, path: "/admin/ipaynow/notifications/redeliver", expected: "expected {\"mhtOrderNo\": \"…\", \"appId\": optional}",
                              input: { _, body -> (appId: String?, mhtOrderNo: String)? in
                                  guard let body, let parsed = try? JSONValue.parse(body), let number = parsed["mhtOrderNo"]?.stringValue else { return nil }
                                  return (appId: parsed["appId"]?.stringValue, mhtOrderNo: number)
                              },
                              send: { await emulator.redeliver(appId: $0.appId, mhtOrderNo: $0.mhtOrderNo) },
                              notFound: { "no N001 was made for order \($0.mhtOrderNo)" })
        SandboxAdmin.mountCraftedSend(IPayNowEmulator.CraftedNotification.self, on: router, path: "/admin/ipaynow/notifications/send",
                                      expected: "expected {\"mhtOrderNo\": \"…\", \"appId\"?, \"tradeStatus\"?, \"set\"?: {…}, \"omit\"?: […], "
                                          + "\"tamper\"?: {…}, \"appKey\"?, \"signature\"?, \"url\"?}",
                                      send: { await emulator.sendCrafted($0) }, notFound: { "no order \($0.mhtOrderNo), or no URL to send to" })
        SandboxAdmin.mountDeliveryControls([.hold, .release, .drop, .delay], on: router, under: "/admin/ipaynow/notifications",
                                           deliverer: emulator.deliverer)
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
