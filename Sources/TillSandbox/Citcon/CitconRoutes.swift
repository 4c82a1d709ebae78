import Foundation
import Hummingbird

/// The Citcon emulator's HTTP routes inside the sandbox server.
enum CitconRoutes: SandboxRoutes {
    static func register(on router: Router<SandboxRequestContext>, emulator: CitconEmulator,
                         address: SandboxAddress, release: HoldRelease) {
        @Sendable func api(_ request: Request, _ context: SandboxRequestContext, _ endpoint: CitconEndpoint) async -> Response {
            let body = await readBody(request)
            let base = await address.baseURL.appendingPathComponent("citcon")
            let answer = await emulator.handleAPI(endpoint, authorization: request.headers[.authorization], body: body,
                                                  citconBaseURL: base)
            switch answer.delivery {
            case .respond:
                return jsonAnswer(answer.body, status: answer.httpStatus)
            case .holdThenGatewayTimeout:
                return await gatewayTimeout(after: emulator.holdDuration, release: release)
            case .dropConnection:
                return dropConnection(context)
            }
        }

        router.post("/citcon/v1/access-tokens") { request, context in await api(request, context, .accessTokens) }
        router.post("/citcon/v1/charges") { request, context in await api(request, context, .charges) }
        router.get("/citcon/v1/transactions/:id") { request, context in
            await api(request, context, .transaction(id: context.parameters.get("id") ?? ""))
        }
        router.post("/citcon/v1/captures") { request, context in await api(request, context, .captures) }
        router.post("/citcon/v1/refunds") { request, context in await api(request, context, .refunds) }
        router.post("/citcon/v1/cancels") { request, context in await api(request, context, .cancels) }

        for kind in ["landing", "qr"] {
            router.get("/citcon/landing/v1/\(kind)/:id") { _, context -> Response in
                let base = await address.baseURL.appendingPathComponent("citcon")
                return response(await emulator.landingPage(kind: kind, id: context.parameters.get("id") ?? "", citconBaseURL: base))
            }
            router.post("/citcon/landing/v1/\(kind)/:id/complete") { request, context -> Response in
                guard let body = await readBody(request) else { return Sandbox.text("body too large", status: .contentTooLarge) }
                return response(await emulator.completeLanding(id: context.parameters.get("id") ?? "", form: body))
            }
        }
        router.post("/citcon/wallet/:wallet/pay") { request, context -> Response in
            guard let body = await readBody(request) else { return Sandbox.json(error("body too large"), status: .contentTooLarge) }
            return response(await emulator.walletPay(wallet: context.parameters.get("wallet") ?? "", body: body))
        }

        SandboxAdmin.mountFaults(CitconEmulator.Fault.self, on: router, path: "/admin/citcon/faults", keyName: "path",
                                 expected: "expected {\"fault\": \"server_error\" | \"timeout\" | \"drop\" | \"expire_tokens\", \"path\": optional}",
                                 echo: CitconEmulator.normalizedAPIPath) { await emulator.inject($0, path: $1) }
        SandboxAdmin.mountList(on: router, path: "/admin/citcon/ledger") { await emulator.ledger }
        SandboxAdmin.mountList(on: router, path: "/admin/citcon/notifications") { await emulator.notifications }
        SandboxAdmin.mountTry(on: router, path: "/admin/citcon/ipn/:id/redeliver", expected: "",
                              input: { parameters, _ in parameters.get("id") ?? "" },
                              send: { await emulator.redeliver(ipnOf: $0) }, notFound: { "no IPN was made for transaction \($0)" })
        router.post("/admin/citcon/ipn/:id/send") { request, context -> Response in
            let expected = "expected {\"transaction_type\": \"chargeback\" | \"vault\" | …, \"status\": \"…\", \"omit\": [\"amount\", …] (optional)}"
            guard let body = await readBody(request), let parsed = try? JSONValue.parse(body),
                  let type = parsed["transaction_type"]?.stringValue, let status = parsed["status"]?.stringValue else {
                return Sandbox.json(error(expected), status: .badRequest)
            }
            var omitting: Set<String> = []
            if case .array(let items)? = parsed["omit"] { omitting = Set(items.compactMap(\.stringValue)) }
            let id = context.parameters.get("id") ?? ""
            guard await emulator.sendIPN(about: id, transactionType: type, status: status, omitting: omitting) else {
                return Sandbox.json(error("no charge \(id) with an IPN URL"), status: .notFound)
            }
            return Sandbox.json(.object([.init(key: "queued", value: .string(type))]))
        }
        router.post("/admin/citcon/tokens/expire") { _, _ -> Response in
            let count = await emulator.expireTokens()
            return Sandbox.json(.object([.init(key: "expired", value: .number(String(count)))]))
        }
    }

    private static func response(_ answer: CitconCustomerAnswer) -> Response {
        switch answer {
        case .page(let status, let html):
            Sandbox.text(html, status: .init(code: status), contentType: "text/html; charset=utf-8")
        case .redirect(let location):
            Response(status: .seeOther, headers: [.location: location])
        case .json(let status, let body):
            Sandbox.json(body, status: .init(code: status))
        case .error(let status, let message):
            Sandbox.json(error(message), status: .init(code: status))
        }
    }
}

extension CitconEmulator: SandboxEmulator {
    /// `citcon`: the API under `/citcon/v1`, landing pages and wallets under `/citcon`, admin under `/admin/citcon`.
    public nonisolated var name: String { "citcon" }

    public nonisolated func mount(_ mount: SandboxMount) {
        CitconRoutes.register(on: mount.router, emulator: self, address: mount.address, release: mount.release)
    }

    /// The module's `base_url` is the API root, `{sandbox}/citcon/v1`.
    public nonisolated func moduleBaseURL(in sandbox: URL) -> URL {
        sandbox.appendingPathComponent("citcon").appendingPathComponent("v1")
    }

    /// One account per merchant, for the `citcon` module.
    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] {
        merchants.map { merchant in
            SandboxAccount(module: "citcon", settings: ["base_url": moduleBaseURL(in: sandbox).absoluteString],
                           credentials: ["api_key": merchant.apiKey, "api_secret": merchant.apiSecret],
                           summary: "api key \"\(merchant.apiKey)\", api secret \"\(merchant.apiSecret)\"; IPNs go to each charge's urls.ipn")
        }
    }
}
