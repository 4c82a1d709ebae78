import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Till
import TillOrchestration
import TillGatewayKit
import TillPayFort
import TillSandbox

/// `till pay`: the app and its customer, in a terminal, against `till sandbox`. What a merchant's backend
/// does stays with the merchant (curl: create the payment, read its status); what only an app can do —
/// prepare with the client secret, type a card into PayFort's page or Worldline's form, approve 3-D Secure,
/// pay in a wallet or the gateway's SDK, come back on the return URL — this command does, with the same
/// `AppCheckout` an iOS app embeds and the sandbox's customers.
struct PayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pay",
        abstract: "Pay a payment as its app and customer would, against till sandbox, and print the confirmed status.",
        discussion: """
            Give it the answer of POST /v1/payments (--payment FILE, as curl -o saved it) or the client secret. It prepares an \
            attempt with the client secret (the server's router picks the gateway), plays what that gateway asks of the app and \
            the customer — PayFort's card page and 3-D Secure or its SDK, Citcon's wallets and pages, Worldline's card form, \
            iPayNow's plugin, ecommpay's SDK and Payment Page — in the sandbox, comes back on the return URL, and asks the server \
            for the confirmed status. Only for the sandbox: it never talks to a real gateway. See docs/quickstart.md.
            """)

    @Option(help: "The merchant server's base URL.")
    var server = "http://127.0.0.1:8080"

    @Option(help: "The sandbox's base URL (till sandbox --port).")
    var sandbox = "http://127.0.0.1:8081"

    @Option(help: "A file holding the answer of POST /v1/payments (its id and clientSecret).")
    var payment: String?

    @Option(name: .customLong("client-secret"), help: "The payment's client secret, instead of --payment.")
    var clientSecret: String?

    @Option(help: "The card the customer types into PayFort's page or Worldline's form (SAR and EUR in the quick start): 4557010000000008 asks for 3-D Secure, 4000000000000002 is declined (docs/sandbox.md). ecommpay's SDK and the wallets take --choice instead.")
    var card = PayFortEmulator.TestCard.visa

    @Option(name: .customLong("three-ds"), help: "What the customer does on a 3-D Secure page: approve or fail. Only a card that asks for 3-D Secure shows one (--card 4557010000000008).")
    var threeDS = "approve"

    @Option(help: "What the customer does in a wallet, ecommpay's SDK or a payment page: complete, fail (declined) or cancel.")
    var choice = "complete"

    @Flag(help: "The customer chose to try again after a decline they were handed off for, or a cancel: the only way the server starts another attempt after one (\"customerRequested\": true).")
    var again = false

    @Option(name: .customLong("gateway-id"), help: "MODULE=ID: the gateway id your configuration gives a module, when it is not the module's name. Repeatable.")
    var gatewayIDs: [String] = []

    @Option(name: .customLong("return-scheme"), help: "The app's URL scheme; the merchant's returnURLSchemes must list it.")
    var returnScheme = "tillpay"

    @Option(name: .customLong("universal-link"), help: "The app's universal link (https), for wallets that return only through one (WeChat Pay).")
    var universalLink = "https://shop.example/till/return"

    func run() async throws {
        guard threeDS == "approve" || threeDS == "fail" else { throw ValidationError("--three-ds: approve or fail") }
        guard ["complete", "fail", "cancel"].contains(choice) else { throw ValidationError("--choice: complete, fail or cancel") }
        guard let serverURL = URL(string: server), serverURL.scheme?.hasPrefix("http") == true else { throw ValidationError("--server: an http(s) URL") }
        guard let sandboxURL = URL(string: sandbox), sandboxURL.scheme?.hasPrefix("http") == true else { throw ValidationError("--sandbox: an http(s) URL") }
        let secret = try ClientSecret(try readSecret())
        let say: @Sendable (String) -> Void = { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        let transport = URLSessionTransport()

        // What the app knows of the payment: what its client secret may read.
        let backend = HTTPMerchantBackend(baseURL: serverURL, clientSecret: secret, transport: transport)
        let view = try await backend.payment()
        say("app      pays \(view.id): \(view.amount) by \(view.method)")

        // The app's gateway halves, from the sandbox accounts' non-secret settings, as an app builds them.
        var ids: [String: GatewayID] = [:]
        for pair in gatewayIDs {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[1].isEmpty else { throw ValidationError("--gateway-id expects MODULE=ID (got \(pair))") }
            ids[parts[0]] = GatewayID(rawValue: parts[1])
        }
        var halves: [any GatewayAppHalf] = []
        for emulator in try Gateways.sandboxEmulators(retryInterval: .seconds(10), notificationURL: nil) {
            for account in await emulator.sandboxAccounts(in: sandboxURL) {
                guard let plugin = Gateways.plugin(account.module) else { continue }
                let id = ids[account.module] ?? GatewayID(rawValue: account.module)
                var half = try plugin.makeAppHalf(GatewayPluginContext(
                    id: id, settings: ModuleSettings(module: account.module, settings: account.settings, credentials: [:]), transport: transport))
                // The FORT SDK knows its device's id: the app sends it with each attempt.
                if let payFort = half as? PayFortGateway {
                    half = PayFortGateway(id: id, environment: payFort.environment, language: payFort.language,
                                          deviceID: SandboxPayFortCustomer.defaultDeviceID)
                }
                halves.append(half)
            }
        }
        guard let link = URL(string: universalLink), link.scheme == "https", let linkHost = link.host else {
            throw ValidationError("--universal-link: an https URL")
        }
        let returns = try ReturnURLHandler(routes: [.customScheme(returnScheme), .universalLink(host: linkHost, path: link.path.isEmpty ? "/" : link.path)])
        let customer = SandboxApp(sandbox: sandboxURL, method: view.method, returns: returns, card: card, approves: threeDS == "approve",
                                  choice: choice, trace: say)
        let checkout = AppCheckout(backend: backend,
                                   gateways: halves, returns: returns, presenter: customer, returnTimeout: .seconds(60),
                                   confirmationTimeout: .seconds(30), confirmationInterval: .milliseconds(200))
        let intent = PaymentIntent(merchantReference: view.merchantReference, amount: view.amount, method: view.method)
        let result = again ? try await checkout.retry(intent) : try await checkout.pay(intent)
        say("app      the customer saw: \(result.clientOutcome.kind.rawValue)")
        say("server   confirmed: \(result.status)" + (result.confirmed?.gatewayCode.map { " (gateway code \($0))" } ?? "")
            + " through \(result.preparation.gateway), attempt \(result.preparation.attempt)")
    }

    private func readSecret() throws -> String {
        if let clientSecret { return clientSecret }
        guard let payment else { throw ValidationError("give --payment FILE (the answer of POST /v1/payments) or --client-secret") }
        guard let data = FileManager.default.contents(atPath: payment) else {
            throw PayError(description: "\(payment): no such file. Did the curl that creates the payment reach the server (curl -sS shows why not)?")
        }
        struct Created: Decodable { var clientSecret: String? }
        guard let secret = (try? JSONDecoder().decode(Created.self, from: data))?.clientSecret else {
            throw PayError(description: "\(payment) holds no clientSecret: save there the answer of a POST /v1/payments that succeeded (curl -o \(payment))")
        }
        return secret
    }
}

/// A problem `till pay` met after its options were read (printed without the usage).
private struct PayError: Error, CustomStringConvertible {
    var description: String
}

/// The app's presenter in `till pay`: hands each step to the sandbox customer of the gateway it belongs to (a
/// wallet by its name, a page by the emulator it lives on, a card form by its fields).
private struct SandboxApp: CheckoutPresenter {
    let payFort: SandboxPayFortCustomer
    let citcon: SandboxCitconCustomer
    let worldline: SandboxWorldlineCustomer
    let ipaynow: SandboxIPayNowCustomer
    let ecommpay: SandboxEcommpayCustomer
    let sandbox: URL

    init(sandbox: URL, method: PaymentMethod, returns: ReturnURLHandler, card: String, approves: Bool, choice: String,
         trace: @escaping @Sendable (String) -> Void) {
        self.sandbox = sandbox
        payFort = SandboxPayFortCustomer(payFortBaseURL: sandbox.appendingPathComponent("payfort"), returns: returns,
                                         card: PayFortDevice.Card(number: card), cancelsInSDK: choice == "cancel",
                                         approvesThreeDSecure: approves, trace: trace)
        citcon = SandboxCitconCustomer(sandbox: sandbox, method: method, returns: returns,
                                       choice: SandboxCitconCustomer.Choice(rawValue: choice) ?? .complete, trace: trace)
        worldline = SandboxWorldlineCustomer(cardNumber: card, approvesThreeDSecure: approves, returns: returns, trace: trace)
        ipaynow = SandboxIPayNowCustomer(baseURL: sandbox.appendingPathComponent("ipaynow"), returns: returns,
                                         choice: choice == "cancel" ? .cancel : choice == "fail" ? (SandboxIPayNowCustomer.Choice(rawValue: "fail") ?? .cancel) : .complete,
                                         trace: trace)
        ecommpay = SandboxEcommpayCustomer(baseURL: sandbox.appendingPathComponent("ecommpay"), returns: returns,
                                           choice: choice == "cancel" ? .cancel : choice == "fail" ? .decline : .complete, trace: trace)
    }

    /// The emulator a page of the sandbox belongs to (`/payfort/…`, `/citcon/…`).
    private func owner(of url: URL) -> String? {
        guard url.host == sandbox.host, url.port == sandbox.port else { return nil }
        return url.pathComponents.dropFirst().first
    }

    func open(_ url: URL, handoff: Handoff) async throws {
        switch owner(of: url) {
        case "payfort": try await payFort.open(url, handoff: handoff)
        case "worldline": try await worldline.open(url, handoff: handoff)
        case "ipaynow": try await ipaynow.open(url, handoff: handoff)
        case "ecommpay": try await ecommpay.open(url, handoff: handoff)
        default: try await citcon.open(url, handoff: handoff)
        }
    }

    func launch(_ wallet: WalletLaunch) async throws -> SDKResult? {
        switch wallet.wallet {
        case "payfort": try await payFort.launch(wallet)
        case "ipaynow": try await ipaynow.launch(wallet)
        case "ecommpay": try await ecommpay.launch(wallet)
        default: try await citcon.launch(wallet)
        }
    }

    func prepareSDK(_ wallet: WalletLaunch) async throws -> [String: String] { try await ecommpay.prepareSDK(wallet) }

    func collect(_ form: FormSpec) async throws -> FormValues? {
        let ids = Set(form.fieldsInDisplayOrder.map(\.id))
        return ids.contains("cardNumber") ? try await worldline.collect(form) : try await payFort.collect(form)
    }

    func post(_ form: FormPost) async throws { try await payFort.post(form) }
}
