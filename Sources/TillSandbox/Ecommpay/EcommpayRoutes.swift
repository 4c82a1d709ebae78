import Foundation
import Hummingbird

/// The ecommpay emulator's HTTP routes inside the sandbox server.
enum EcommpayRoutes {
    static func register(on router: Router<SandboxRequestContext>, emulator: EcommpayEmulator, release: HoldRelease) {
        router.get("/ecommpay/payment") { request, _ -> Response in
            await emulator.paymentPage(query: request.uri.query ?? "").response
        }
        router.post("/ecommpay/sandbox-only/page/:id") { request, context -> Response in
            let body = await readBody(request) ?? []
            return await emulator.submitPage(id: context.parameters.get("id") ?? "", form: body).response
        }
        router.get("/ecommpay/sandbox-only/3ds/:id") { _, context -> Response in
            await emulator.threeDSecurePageAnswer(id: context.parameters.get("id") ?? "").response
        }
        router.post("/ecommpay/sandbox-only/3ds/:id") { request, context -> Response in
            let body = await readBody(request) ?? []
            return await emulator.completeThreeDSecure(id: context.parameters.get("id") ?? "", form: body).response
        }
        router.post("/ecommpay/\(EcommpayEmulator.sdkPath)") { request, _ -> Response in
            guard let body = await readBody(request) else { return Sandbox.json(error("body too large"), status: .contentTooLarge) }
            let (status, answer) = await emulator.handleSDK(body: body)
            return Response(status: .init(code: status), headers: [.contentType: "application/json; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: answer)))
        }
        for path in EcommpayEmulator.gatePaths {
            router.post(RouterPath(stringLiteral: "/ecommpay/v2/payment/" + path)) { request, context -> Response in
                guard let body = await readBody(request) else { return Sandbox.json(error("body too large"), status: .contentTooLarge) }
                let answer = await emulator.handleGate(path: path, body: body)
                switch answer.delivery {
                case .respond:
                    let json = answer.body.first == UInt8(ascii: "{")
                    return Response(status: .init(code: answer.status),
                                    headers: [.contentType: json ? "application/json; charset=utf-8" : "text/html; charset=utf-8"],
                                    body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
                case .holdThenGatewayTimeout:
                    await release.hold(for: emulator.holdDuration)
                    return Sandbox.text("Gateway Timeout", status: .gatewayTimeout)
                case .dropConnection:
                    context.closeConnection()
                    return Sandbox.text("", status: .internalServerError)
                }
            }
        }
        registerAdmin(on: router, emulator: emulator)
    }

    private static func registerAdmin(on router: Router<SandboxRequestContext>, emulator: EcommpayEmulator) {
        router.post("/admin/ecommpay/faults") { request, _ -> Response in
            let expected = "expected {\"fault\": \"server_error\" | \"timeout\" | \"drop\" | \"garbage\" | \"bad_signature\", "
                + "\"path\": optional, \"status\" | \"card/capture\" | \"card/cancel\"}"
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body), let name = parsed["fault"]?.stringValue else {
                return Sandbox.json(error(expected), status: .badRequest)
            }
            guard let fault = EcommpayEmulator.Fault(rawValue: name) else {
                return Sandbox.json(error("unknown fault \"\(name)\"; " + expected), status: .badRequest)
            }
            let path = parsed["path"]?.stringValue
            await emulator.inject(fault, path: path)
            var members: [JSONValue.Member] = [.init(key: "queued", value: .string(fault.rawValue))]
            if let path { members.append(.init(key: "path", value: .string(path))) }
            return Sandbox.json(.object(members))
        }
        router.get("/admin/ecommpay/ledger") { _, _ -> Response in Sandbox.json(encoding: await emulator.ledger) }
        router.get("/admin/ecommpay/payments") { _, _ -> Response in Sandbox.json(encoding: await emulator.paymentSummaries()) }
        router.get("/admin/ecommpay/callbacks") { _, _ -> Response in Sandbox.json(encoding: await emulator.callbacks) }
        router.post("/admin/ecommpay/projects/:id/callback") { request, context -> Response in
            guard let id = context.parameters.get("id").flatMap(Int.init), let body = await readBody(request),
                  let parsed = try? JSONValue.parse(body), let value = parsed["url"] else {
                return Sandbox.json(error("expected {\"url\": \"https://…\" | null}"), status: .badRequest)
            }
            let url: URL? = value == .null ? nil : value.stringValue.flatMap(URL.init(string:))
            guard value == .null || url != nil else { return Sandbox.json(error("url: a URL or null"), status: .badRequest) }
            guard await emulator.setCallbackURL(url, for: id) else { return Sandbox.json(error("no project \(id)"), status: .notFound) }
            return Sandbox.json(.object([.init(key: "project_id", value: .number(String(id))),
                                         .init(key: "url", value: url.map { .string($0.absoluteString) } ?? .null)]))
        }
        router.post("/admin/ecommpay/callbacks/redeliver") { request, _ -> Response in
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let paymentId = parsed["payment_id"]?.stringValue else {
                return Sandbox.json(error("expected {\"payment_id\": \"…\", \"project_id\": optional}"), status: .badRequest)
            }
            let projectId = parsed["project_id"].flatMap { Int($0.parameterText) }
            guard let attempt = await emulator.redeliver(projectId: projectId, paymentId: paymentId) else {
                return Sandbox.json(error("no callback was sent for payment \(paymentId)"), status: .notFound)
            }
            return Sandbox.json(encoding: attempt)
        }
        router.post("/admin/ecommpay/callbacks/send") { request, _ -> Response in
            guard let body = await readBody(request),
                  let crafted = try? JSONDecoder().decode(EcommpayEmulator.CraftedCallback.self, from: Data(body)) else {
                return Sandbox.json(error("expected {\"paymentId\": \"…\", \"projectId\"?, \"paymentStatus\"?, \"operationStatus\"?, "
                                          + "\"set\"?: {\"a.b\": \"<json>\"}, \"tamper\"?: {…}, \"secretKey\"?, \"signature\"?, \"unsigned\"?, \"url\"?}"),
                                    status: .badRequest)
            }
            guard let attempt = await emulator.sendCrafted(crafted) else {
                return Sandbox.json(error("no payment \(crafted.paymentId), no URL to send to, or a value that is not JSON"), status: .notFound)
            }
            return Sandbox.json(encoding: attempt)
        }
        router.post("/admin/ecommpay/callbacks/hold") { _, _ -> Response in
            await emulator.holdCallbacks()
            return Sandbox.json(.object([.init(key: "held", value: .bool(true))]))
        }
        router.post("/admin/ecommpay/callbacks/release") { _, _ -> Response in
            await emulator.releaseCallbacks()
            return Sandbox.json(.object([.init(key: "held", value: .bool(false))]))
        }
        router.post("/admin/ecommpay/callbacks/drop") { request, _ -> Response in
            let body = await readBody(request) ?? []
            let parsed = body.isEmpty ? nil : try? JSONValue.parse(body)
            let count = parsed?["count"].flatMap { Int($0.parameterText) } ?? 1
            await emulator.dropCallbacks(count)
            return Sandbox.json(.object([.init(key: "dropping", value: .number(String(count)))]))
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

extension EcommpayEmulator: SandboxEmulator {
    /// `ecommpay`: the Payment Page, the Gate and the stand-ins under `/ecommpay`, admin under `/admin/ecommpay`.
    public nonisolated var name: String { "ecommpay" }

    public nonisolated func mount(_ mount: SandboxMount) {
        EcommpayRoutes.register(on: mount.router, emulator: self, release: mount.release)
    }

    /// The module's `base_url`: `{sandbox}/ecommpay`. The Payment Page is `{base_url}/payment` (production
    /// `https://paymentpage.ecommpay.com/payment`) and the Gate `{base_url}/v2/payment/…` (production
    /// `https://api.ecommpay.com/v2/payment/…`).
    public nonisolated func moduleBaseURL(in sandbox: URL) -> URL { sandbox.appendingPathComponent(name) }

    /// One account per project, for the `ecommpay` module: settings `base_url`, `project_id`; credential `secret_key`.
    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] {
        projects.map { project in
            SandboxAccount(module: "ecommpay",
                           settings: ["base_url": moduleBaseURL(in: sandbox).absoluteString, "project_id": String(project.projectId)],
                           credentials: ["secret_key": project.secretKey],
                           summary: "project \(project.projectId), secret key \"\(project.secretKey)\"; callbacks to "
                               + (callbackURLs[project.projectId]?.absoluteString ?? "(none set)"))
        }
    }
}
