import Foundation
import Hummingbird

/// The ecommpay emulator's HTTP routes inside the sandbox server.
enum EcommpayRoutes: SandboxRoutes {
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
            return jsonAnswer(answer, status: status)
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
                    return await gatewayTimeout(after: emulator.holdDuration, release: release)
                case .dropConnection:
                    return dropConnection(context)
                }
            }
        }
        registerAdmin(on: router, emulator: emulator)
    }

    private static func registerAdmin(on router: Router<SandboxRequestContext>, emulator: EcommpayEmulator) {
        SandboxAdmin.mountFaults(EcommpayEmulator.Fault.self, on: router, path: "/admin/ecommpay/faults", keyName: "path",
                                 expected: "expected {\"fault\": \"server_error\" | \"timeout\" | \"drop\" | \"garbage\" | \"bad_signature\" | \"decline\", "
                                     + "\"path\": optional, \"status\" | \"card/capture\" | \"card/cancel\" | \"card/refund\" | …}") { await emulator.inject($0, path: $1) }
        SandboxAdmin.mountList(on: router, path: "/admin/ecommpay/ledger") { await emulator.ledger }
        SandboxAdmin.mountList(on: router, path: "/admin/ecommpay/payments") { await emulator.paymentSummaries() }
        SandboxAdmin.mountList(on: router, path: "/admin/ecommpay/callbacks") { await emulator.callbacks }
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
        SandboxAdmin.mountTry(on: router, path: "/admin/ecommpay/callbacks/redeliver", expected: "expected {\"payment_id\": \"…\", \"project_id\": optional}",
                              input: { _, body -> (projectId: Int?, paymentId: String)? in
                                  guard let body, let parsed = try? JSONValue.parse(body), let paymentId = parsed["payment_id"]?.stringValue else { return nil }
                                  return (projectId: parsed["project_id"].flatMap { Int($0.parameterText) }, paymentId: paymentId)
                              },
                              send: { await emulator.redeliver(projectId: $0.projectId, paymentId: $0.paymentId) },
                              notFound: { "no callback was sent for payment \($0.paymentId)" })
        SandboxAdmin.mountCraftedSend(EcommpayEmulator.CraftedCallback.self, on: router, path: "/admin/ecommpay/callbacks/send",
                                      expected: "expected {\"paymentId\": \"…\", \"projectId\"?, \"paymentStatus\"?, \"operationStatus\"?, "
                                          + "\"set\"?: {\"a.b\": \"<json>\"}, \"tamper\"?: {…}, \"secretKey\"?, \"signature\"?, \"unsigned\"?, \"url\"?}",
                                      send: { await emulator.sendCrafted($0) },
                                      notFound: { "no payment \($0.paymentId), no URL to send to, or a value that is not JSON" })
        SandboxAdmin.mountDeliveryControls([.hold, .release, .drop], on: router, under: "/admin/ecommpay/callbacks", deliverer: emulator.deliverer)
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
