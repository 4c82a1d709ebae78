import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillSandbox
import TillServer

/// The error `body` throws, if it is a ``CheckoutError``.
func checkoutError(_ body: () async throws -> Void) async -> CheckoutError? {
    do {
        try await body()
        return nil
    } catch let error as CheckoutError {
        return error
    } catch {
        return nil
    }
}

@Suite("Toy gateway module: vectors, plugin, debugger, failure classes")
struct ToyModuleTests {

    static func context(settings: [String: String] = [:], credentials: [String: String] = [:]) -> GatewayPluginContext {
        GatewayPluginContext(id: "toy", settings: ModuleSettings(module: "toy", settings: settings, credentials: credentials),
                             transport: URLSessionTransport())
    }

    static let credentials = ["key_id": "toy_key", "secret_key": "toy_secret"]

    // MARK: Vendor vectors, on both sides

    @Test("the module's signer and the emulator's signer both give Toy Pay's published signatures")
    func vectors() {
        let request = ToySignature.requestMessage(method: ToyVectors.requestMethod, path: ToyVectors.requestPath,
                                                  body: Data(ToyVectors.requestBody.utf8))
        #expect(String(decoding: request, as: UTF8.self) == ToyVectors.requestStringToSign)
        let signer = ToySignature(secret: ToyVectors.secret)
        #expect(signer.sign(request) == ToyVectors.requestSignature)
        #expect(signer.sign(Data(ToyVectors.notificationBody.utf8)) == ToyVectors.notificationSignature)
        #expect(signer.isValid(ToyVectors.notificationSignature.uppercased(), for: Data(ToyVectors.notificationBody.utf8)))
        #expect(!signer.isValid(ToyVectors.requestSignature, for: Data(ToyVectors.notificationBody.utf8)))

        #expect(ToyEmulator.signature(secret: ToyVectors.secret, message: Data(ToyVectors.requestStringToSign.utf8)) == ToyVectors.requestSignature)
        #expect(ToyEmulator.signature(secret: ToyVectors.secret, message: Data(ToyVectors.notificationBody.utf8)) == ToyVectors.notificationSignature)
    }

    @Test("a notification from the vector verifies, maps to a report, and is refused once altered or with a repeated key")
    func notificationVector() throws {
        let server = try ToyPlugin.server(Self.context(credentials: ["key_id": "k", "secret_key": ToyVectors.secret]))
        let body = Data(ToyVectors.notificationBody.utf8)
        let verified = try server.verifyNotification(IncomingNotification(headers: ["Toy-Signature": ToyVectors.notificationSignature], body: body))
        #expect(verified.report.attempt.rawValue == "ref-0001")
        #expect(verified.report.status == .paid)
        #expect(verified.report.amount == Money(minorUnits: 2500, currency: try Currency(code: "USD")))
        #expect(verified.report.eventID == "evt_ord_1_paid")
        #expect(server.claimedAttempt(in: IncomingNotification(body: body))?.rawValue == "ref-0001")

        let altered = Data(ToyVectors.notificationBody.replacingOccurrences(of: "2500", with: "25").utf8)
        #expect(throws: CheckoutError.self) {
            try server.verifyNotification(IncomingNotification(headers: ["toy-signature": ToyVectors.notificationSignature], body: altered))
        }
        let repeated = Data(#"{"status":"paid","status":"declined"}"#.utf8)
        do {
            _ = try server.verifyNotification(IncomingNotification(
                headers: ["toy-signature": ToySignature(secret: ToyVectors.secret).sign(repeated)], body: repeated))
            Issue.record("a repeated key was accepted")
        } catch let error as CheckoutError {
            #expect(error.code == .duplicateField)
        }
        #expect(ToyGateway.status("refunding") == PaymentStatus(rawValue: "toy_status_refunding"))
        #expect(!ToyGateway.status("refunding").isKnown)
    }

    // MARK: Plugin

    @Test("the plugin refuses a missing credential, naming credentials.<name>; the server names its path")
    func missingCredential() async throws {
        let error = await checkoutError { _ = try ToyPlugin.plugin.makeServerHalf(Self.context(credentials: ["key_id": "toy_key"])) }
        #expect(error?.code == .missingSecret)
        #expect(error?.field == "credentials.secret_key")
        #expect(error?.message.contains("toy_key") == false)

        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "shop", apiKey: CredentialReference(env: "API_KEY"),
                gateways: [GatewayConfiguration(id: "toy", module: "toy", credentials: ["key_id": CredentialReference(env: "TOY_KEY")])],
                routing: RoutingConfiguration(fallback: ["toy"]))])
        do {
            _ = try ServerState(configuration: configuration, plugins: [ToyPlugin.plugin],
                                environment: ["API_KEY": "toy-test-api-key-0123", "TOY_KEY": "toy_key"])
            Issue.record("the server started without secret_key")
        } catch let error as StartupError {
            #expect(error.problems.contains { $0.hasPrefix("merchants[0].gateways[0].credentials.secret_key:") }, "\(error.problems)")
        }
    }

    @Test("the plugin refuses a bad settings.base_url and an unknown setting", arguments: ["not a url", "ftp://toy.example/toy", "https://"])
    func badBaseURL(value: String) async {
        let server = await checkoutError {
            _ = try ToyPlugin.plugin.makeServerHalf(Self.context(settings: ["base_url": value], credentials: Self.credentials))
        }
        #expect(server?.code == .misconfigured)
        #expect(server?.field == "settings.base_url")
        let client = await checkoutError { _ = try ToyPlugin.plugin.makeAppHalf(Self.context(settings: ["base_url": value])) }
        #expect(client?.field == "settings.base_url")
        let misspelt = await checkoutError {
            _ = try ToyPlugin.plugin.makeServerHalf(Self.context(settings: ["base_uri": "https://toy.example"], credentials: Self.credentials))
        }
        #expect(misspelt?.field == "settings.base_uri")
    }

    // MARK: Signature debugger

    @Test("till sign toy / till verify toy: a round trip through the plugin's debugger")
    func debugger() throws {
        let debugger = try #require(ToyPlugin.plugin.debugger)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("toy-body-\(UUID().uuidString).json")
        try Data(ToyVectors.requestBody.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let request = ["secret": [ToyVectors.secret], "body": [file.path], "method": ["POST"], "path": [ToyVectors.requestPath]]

        let lines = try debugger.sign(DebuggerArguments(request))
        #expect(lines.first == ToyVectors.requestStringToSign)
        #expect(lines.last == ToyVectors.requestSignature)

        var verify = request
        verify["signature"] = [try #require(lines.last)]
        #expect(try debugger.verify(DebuggerArguments(verify)).valid)

        verify["signature"] = [String(repeating: "0", count: 64)]
        let verdict = try debugger.verify(DebuggerArguments(verify))
        #expect(!verdict.valid)
        #expect(verdict.lines.contains("expected signature: \(ToyVectors.requestSignature)"))

        // Without --method and --path: a notification's signature, over the body alone.
        try Data(ToyVectors.notificationBody.utf8).write(to: file)
        #expect(try debugger.sign(DebuggerArguments(["secret": [ToyVectors.secret], "body": [file.path]])).last == ToyVectors.notificationSignature)

        #expect(throws: CheckoutError(.missingField, field: "--secret", message: "--secret is required")) {
            try debugger.sign(DebuggerArguments(["body": [file.path]]))
        }
        #expect(throws: CheckoutError.self) {
            try debugger.sign(DebuggerArguments(["secret": ["s"], "body": [file.path], "path": ["/toy/v1/orders"]]))
        }
    }

    // MARK: Failure classes, against the emulator

    @Test("prepare failures say what is known: 503 never sent, a refused order declined, a dropped answer unknown, a bad key configuration")
    func failureClasses() async throws {
        let emulator = ToyEmulator(accounts: [.init(keyID: "toy_key", secret: "toy_secret")])
        let sandbox = try await Sandbox.start(emulators: [emulator])
        defer { Task { await sandbox.stop() } }
        let base = sandbox.baseURL(of: emulator).absoluteString
        let server = try ToyPlugin.server(Self.context(settings: ["base_url": base], credentials: Self.credentials))
        func context(_ minor: Int64 = 2500) throws -> AttemptContext {
            AttemptContext(intent: try toyIntent("toy-\(UUID().uuidString.prefix(8))", minor: minor), attempt: .generate(),
                           returnURL: URL(string: "shop://till/return?till_state=s"))
        }

        await emulator.inject(.unavailable)
        let unavailable = try #require(await checkoutError { _ = try await server.prepare(try context()) })
        #expect(unavailable.category == .unavailable)
        #expect(AttemptFailure(unavailable) == .neverSent)
        #expect(await emulator.orders.isEmpty)

        let refused = try #require(await checkoutError { _ = try await server.prepare(try context(0)) })
        #expect(AttemptFailure(refused) == .declined(code: "invalid_request"))
        #expect(await emulator.orders.isEmpty)

        await emulator.inject(.dropAfterCreating)
        let dropped = try context()
        // A fresh transport: no pooled connection for the client to retry on.
        let fresh = try ToyPlugin.server(Self.context(settings: ["base_url": base], credentials: Self.credentials))
        let lost = try #require(await checkoutError { _ = try await fresh.prepare(dropped) })
        #expect(lost.category == .unknownOutcome)
        #expect(AttemptFailure(lost) == .unknown)
        // The order exists: an inquiry finds it, still open.
        #expect(try await server.inquire(InquiryQuery(attempt: dropped.attempt)).status == .pending)

        let stranger = try ToyPlugin.server(Self.context(settings: ["base_url": base],
                                                         credentials: ["key_id": "toy_key", "secret_key": "wrong"]))
        let badKey = try #require(await checkoutError { _ = try await stranger.prepare(try context()) })
        #expect(badKey.category == .configuration)
        #expect(AttemptFailure(badKey) == .neverSent)

        #expect(throws: CheckoutError.self) { _ = try server.returnURL(from: [], for: try toyIntent("toy-none")) }
    }
}
