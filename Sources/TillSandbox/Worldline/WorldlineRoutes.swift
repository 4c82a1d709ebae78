import Foundation
import Hummingbird

/// The Worldline emulator's HTTP routes inside the sandbox server.
///
/// The Server API is mounted at the sandbox root (`/v1/{merchantId}/…`) because the python SDK takes
/// its endpoint as scheme+host[:port] with no path (`communicator.py`); the Client API at
/// `/client/v1/{customerId}/…` because the client SDKs require `clientApiUrl`'s path to be exactly
/// `/client/v1` (swift `ClientApiCommunicator.fixBaseURL`, js `C2SCommunicatorConfiguration.ts`).
enum WorldlineRoutes: SandboxRoutes {
    static func register(on router: Router<SandboxRequestContext>, emulator: WorldlineEmulator,
                         address: SandboxAddress, release: HoldRelease) {
        @Sendable func deliver(_ answer: WorldlineAnswer, _ context: SandboxRequestContext) async -> Response {
            switch answer.delivery {
            case .respond:
                return response(answer)
            case .holdThenGatewayTimeout:
                let timeout = await gatewayTimeout(after: emulator.holdDuration, release: release)
                await emulator.releaseHeld(answer)
                return timeout
            case .dropConnection:
                return dropConnection(context)
            }
        }

        @Sendable func server(_ request: Request, _ context: SandboxRequestContext) async -> Response {
            let worldlineRequest = await read(request)
            let answer = await emulator.handleServer(worldlineRequest, root: await address.baseURL)
            return await deliver(answer, context)
        }

        @Sendable func client(_ request: Request, _ context: SandboxRequestContext) async -> Response {
            let worldlineRequest = await read(request)
            return response(await emulator.handleClient(worldlineRequest, root: await address.baseURL))
        }

        router.get("/v1/**") { request, context in await server(request, context) }
        router.post("/v1/**") { request, context in await server(request, context) }
        router.get("/client/v1/**") { request, context in await client(request, context) }
        router.post("/client/v1/**") { request, context in await client(request, context) }

        router.get("/worldline/3ds/:token") { _, context -> Response in
            page(await emulator.threeDSPage(token: context.parameters.get("token") ?? ""))
        }
        router.post("/worldline/3ds/:token") { request, context -> Response in
            let body = await readBody(request) ?? []
            let form = FormEncoding.decode(String(decoding: body, as: UTF8.self)) ?? [:]
            return page(await emulator.completeThreeDS(token: context.parameters.get("token") ?? "", outcome: form["outcome"] ?? ""))
        }
        router.get("/worldline/assets/**") { _, _ -> Response in
            // Every logo is the same 1×1 transparent PNG.
            Response(status: .ok, headers: [.contentType: "image/png"],
                     body: .init(byteBuffer: ByteBuffer(bytes: Data(base64Encoded: transparentPNG) ?? Data())))
        }

        registerAdmin(on: router, emulator: emulator)
    }

    private static func registerAdmin(on router: Router<SandboxRequestContext>, emulator: WorldlineEmulator) {
        SandboxAdmin.mountFaults(WorldlineEmulator.Fault.self, on: router, path: "/admin/worldline/faults", keyName: "path",
                                 expected: "expected {\"fault\": \"server_error\" | \"timeout\" | \"drop\", \"path\": optional, e.g. \"/payments\"}") {
            await emulator.inject($0, path: $1)
        }
        SandboxAdmin.mountList(on: router, path: "/admin/worldline/ledger") { await emulator.ledger }
        SandboxAdmin.mountList(on: router, path: "/admin/worldline/webhooks") { await emulator.webhookDeliveries }
        SandboxAdmin.mountTry(on: router, path: "/admin/worldline/webhooks/:eventId/redeliver", expected: "",
                              input: { parameters, _ in parameters.get("eventId") ?? "" },
                              send: { await emulator.redeliver(eventId: $0) }, notFound: { "no event \($0), or its merchant has no webhook URL" })
        SandboxAdmin.mountCraftedSend(WorldlineEmulator.CraftedEvent.self, on: router, path: "/admin/worldline/webhooks/send",
                                      expected: "expected a crafted event: {\"merchantId\": …, \"type\"?, \"paymentId\"?, \"status\"?, "
                                          + "\"amount\"?, \"body\"?, \"secret\"?, \"signature\"?, \"keyId\"?, \"omitSignature\"?}",
                                      send: { await emulator.sendCraftedEvent($0) },
                                      notFound: { "no webhook URL for merchant \($0.merchantId), or no such payment" })
        router.post("/admin/worldline/merchants/:merchantId/webhook") { request, context -> Response in
            let id = context.parameters.get("merchantId") ?? ""
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body), let value = parsed["url"] else {
                return Sandbox.json(error("expected {\"url\": \"https://…\" | null}"), status: .badRequest)
            }
            let url: URL?
            switch value {
            case .null: url = nil
            case .string(let text):
                guard let parsedURL = URL(string: text), parsedURL.scheme == "http" || parsedURL.scheme == "https" else {
                    return Sandbox.json(error("not an http(s) URL: \(text)"), status: .badRequest)
                }
                url = parsedURL
            default:
                return Sandbox.json(error("expected {\"url\": \"https://…\" | null}"), status: .badRequest)
            }
            guard await emulator.setWebhookURL(url, for: id) else {
                return Sandbox.json(error("no merchant \(id)"), status: .notFound)
            }
            return Sandbox.json(.object([.init(key: "merchantId", value: .string(id)),
                                         .init(key: "url", value: url.map { .string($0.absoluteString) } ?? .null)]))
        }
        router.post("/admin/worldline/payments/:id/settle") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let outcome = parsed["outcome"]?.stringValue, outcome == "approve" || outcome == "reject" else {
                return Sandbox.json(error("expected {\"outcome\": \"approve\" | \"reject\"}"), status: .badRequest)
            }
            guard let status = await emulator.settlePendingPayment(id, approve: outcome == "approve") else {
                return Sandbox.json(error("no pending payment \(id)"), status: .notFound)
            }
            return Sandbox.json(.object([.init(key: "status", value: .string(status))]))
        }
    }

    private static func read(_ request: Request) async -> WorldlineRequest {
        let body = await readBody(request)
        let headers = request.headers.map { (name: $0.name.rawName, value: $0.value) }
        return WorldlineRequest(method: request.method.rawValue, rawPath: request.uri.path, rawQuery: request.uri.query,
                                headers: headers, body: body)
    }

    private static func response(_ answer: WorldlineAnswer) -> Response {
        var headers: HTTPFields = [.contentType: answer.contentType]
        for (name, value) in answer.headers {
            if let fieldName = HTTPFields.Element.Name(name) { headers.append(HTTPFields.Element(name: fieldName, value: value)) }
        }
        return Response(status: .init(code: answer.status), headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    private static func page(_ answer: PageAnswer) -> Response { answer.response }

    private static let transparentPNG =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
}

/// What the emulator's own pages answer a browser.
extension WorldlineEmulator: SandboxEmulator {
    /// `worldline`: the APIs at the sandbox root (`/v1/…`, `/client/v1/…`), pages under `/worldline`,
    /// admin under `/admin/worldline`.
    public nonisolated var name: String { "worldline" }

    public nonisolated func mount(_ mount: SandboxMount) {
        WorldlineRoutes.register(on: mount.router, emulator: self, address: mount.address, release: mount.release)
    }

    /// The module's `base_url` is the sandbox root: the Server API endpoint is scheme+host[:port]
    /// with no path (python `communicator.py`).
    public nonisolated func moduleBaseURL(in sandbox: URL) -> URL { sandbox }

    /// One account per merchant, for the `worldline` module.
    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] {
        merchants.map { merchant in
            let url = webhookURLs[merchant.merchantId]
            return SandboxAccount(
                module: "worldline",
                settings: ["base_url": moduleBaseURL(in: sandbox).absoluteString, "merchant_id": merchant.merchantId],
                credentials: ["api_key_id": merchant.apiKeyId, "secret_api_key": merchant.secretApiKey,
                              "webhook_key_id": merchant.webhookKeyId, "webhook_secret_key": merchant.webhookSecretKey],
                summary: "merchant \(merchant.merchantId), API key id \"\(merchant.apiKeyId)\", secret API key \"\(merchant.secretApiKey)\", "
                    + "webhook key id \"\(merchant.webhookKeyId)\", webhook secret key \"\(merchant.webhookSecretKey)\"; "
                    + "webhooks to \(url?.absoluteString ?? "nowhere (POST /admin/worldline/merchants/\(merchant.merchantId)/webhook)")")
        }
    }
}

extension WorldlineEmulator {
    // MARK: 3-D Secure page

    /// The emulator's 3-D Secure page, where `merchantAction.redirectData.redirectURL` points.
    func threeDSPage(token: String) -> PageAnswer {
        guard let id = threeDSTokens[token], let payment = payments[id], payment.status == .redirected else {
            return .page(status: 404, html: SandboxHTML.page(title: "Unknown or finished authentication", body: "", emulator: "worldline"))
        }
        let amount = SandboxHTML.escape("\(payment.amount) \(payment.currency) (minor units)")
        let action = SandboxHTML.escape("/worldline/3ds/" + token)
        let body = """
        <p>Card \(SandboxHTML.escape(payment.card.maskedNumber)), amount \(amount).</p>
        <form method="post" action="\(action)"><input type="hidden" name="outcome" value="approve">
        <button type="submit">Authenticate</button></form>
        <form method="post" action="\(action)"><input type="hidden" name="outcome" value="fail">
        <button type="submit">Fail authentication</button></form>
        """
        return .page(status: 200, html: SandboxHTML.page(title: "3-D Secure", body: body, emulator: "worldline"))
    }

    /// Finishes the 3-D Secure page: `approve` authorizes the payment, `fail` rejects it; either way
    /// the browser goes to the return URL with `RETURNMAC` appended.
    ///
    /// Which parameters Connect appends to a payment's return URL: the python docstrings say only "we
    /// will also append some additional key value pairs" (`card_payment_method_specific_input.py`
    /// `return_url`, `redirection_data.py`) and, for hosted checkouts, that `RETURNMAC` is appended to the
    /// query string (`create_hosted_checkout_response.py`). No source names the others (`REF`,
    /// `paymentId`), so the emulator appends `RETURNMAC` only.
    func completeThreeDS(token: String, outcome: String) -> PageAnswer {
        guard let id = threeDSTokens[token], let payment = payments[id], payment.status == .redirected,
              let returnURL = payment.returnURL, let mac = payment.returnMAC else {
            return .page(status: 404, html: SandboxHTML.page(title: "Unknown or finished authentication", body: "", emulator: "worldline"))
        }
        switch outcome {
        case "approve": authorize(id)
        case "fail":
            reject(id, error: WorldlineAPIError(code: "430330", message: "Not authorised"))
        default:
            return .page(status: 400, html: SandboxHTML.page(title: "Choose an outcome", body: "", emulator: "worldline"))
        }
        threeDSTokens[token] = nil
        return .redirect(location: Self.appending(query: "RETURNMAC=" + FormEncoding.escape(mac), to: returnURL))
    }

    /// `url` with `query` added to its query (before any fragment).
    static func appending(query: String, to url: String) -> String {
        var base = url
        var fragment = ""
        if let hash = url.firstIndex(of: "#") {
            base = String(url[..<hash])
            fragment = String(url[hash...])
        }
        let separator = base.contains("?") ? (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&") : "?"
        return base + separator + query + fragment
    }
}
