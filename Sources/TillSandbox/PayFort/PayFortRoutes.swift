import Foundation
import Hummingbird

/// The PayFort emulator's HTTP routes inside the sandbox server.
enum PayFortRoutes: SandboxRoutes {
    static func register(on router: Router<SandboxRequestContext>, emulator: PayFortEmulator,
                         address: SandboxAddress, release: HoldRelease) {
        router.post("/payfort/FortAPI/paymentApi") { request, context -> Response in
            guard let body = await readBody(request) else {
                return response(PayFortEmulator.malformedBody)
            }
            let base = await address.baseURL.appendingPathComponent("payfort")
            let answer = await emulator.handlePaymentAPI(body: body, payFortBaseURL: base)
            switch answer.delivery {
            case .respond:
                return response(answer)
            case .serviceUnavailable:
                return Sandbox.text("Service Unavailable", status: .serviceUnavailable)
            case .holdThenGatewayTimeout:
                return await gatewayTimeout(after: emulator.holdDuration, release: release)
            case .dropConnection:
                return dropConnection(context)
            }
        }

        router.post("/payfort/FortAPI/paymentPage") { request, _ -> Response in
            guard let body = await readBody(request) else {
                return Sandbox.text("body too large", status: .contentTooLarge)
            }
            return response(await emulator.handlePaymentPage(body: body))
        }

        router.get("/payfort/secure3dsSimulator") { request, _ -> Response in
            response(await emulator.threeDSPage(session: session(of: request)))
        }

        router.post("/payfort/secure3dsSimulator") { request, _ -> Response in
            guard let body = await readBody(request) else {
                return Sandbox.text("body too large", status: .contentTooLarge)
            }
            return response(await emulator.completeThreeDS(session: session(of: request), form: body))
        }

        router.post(RouterPath(stringLiteral: "/payfort/" + PayFortEmulator.mobileSDKPath)) { request, _ -> Response in
            guard let body = await readBody(request) else {
                return Sandbox.text("body too large", status: .contentTooLarge)
            }
            let base = await address.baseURL.appendingPathComponent("payfort")
            return response(await emulator.handleMobileSDK(body: body, payFortBaseURL: base))
        }

        SandboxAdmin.mountFaults(PayFortEmulator.Fault.self, on: router, path: "/admin/payfort/faults", keyName: "command",
                                 expected: "expected {\"fault\": \"timeout\" | \"server_error\" | \"drop\" | \"technical_problem\"}",
                                 unknownHint: "expected timeout, server_error, drop or technical_problem") {
            await emulator.injectFault($0, matching: $1)
        }
        SandboxAdmin.mountList(on: router, path: "/admin/payfort/ledger") { await emulator.ledger }
        SandboxAdmin.mountList(on: router, path: "/admin/payfort/operations") { await emulator.operations }
        SandboxAdmin.mountList(on: router, path: "/admin/payfort/notifications") { await emulator.notificationLog() }
    }

    /// The `FORTSESSIONID` of a 3-D Secure page request (empty when absent).
    private static func session(of request: Request) -> String {
        request.uri.query.flatMap { FormEncoding.decode($0)?["FORTSESSIONID"] } ?? ""
    }

    private static func response(_ answer: PaymentAPIAnswer) -> Response {
        jsonAnswer(answer.body, status: answer.httpStatus)
    }

    private static func response(_ answer: PageAnswer) -> Response { answer.response }
}

extension PayFortEmulator: SandboxEmulator {
    /// `payfort`: the API at `/payfort/FortAPI/paymentApi`, the merchant page at
    /// `/payfort/FortAPI/paymentPage`, admin routes under `/admin/payfort`.
    public nonisolated var name: String { "payfort" }

    public nonisolated func mount(_ mount: SandboxMount) {
        PayFortRoutes.register(on: mount.router, emulator: self, address: mount.address, release: mount.release)
    }

    /// One account per merchant, for the `payfort` module.
    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] {
        merchants.map { merchant in
            SandboxAccount(
                module: "payfort",
                settings: ["base_url": moduleBaseURL(in: sandbox).absoluteString, "sha": merchant.sha512 ? "sha512" : "sha256"],
                credentials: ["access_code": merchant.accessCode, "merchant_identifier": merchant.merchantIdentifier,
                              "request_phrase": merchant.requestPhrase, "response_phrase": merchant.responsePhrase],
                summary: "access_code \(merchant.accessCode), merchant_identifier \(merchant.merchantIdentifier), "
                    + "request phrase \"\(merchant.requestPhrase)\", response phrase \"\(merchant.responsePhrase)\", "
                    + (merchant.sha512 ? "SHA-512" : "SHA-256"))
        }
    }
}
