import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillService
import TillGatewayKit
import TillIPayNowServer
import TillSandbox
@testable import TillServer

/// The production path end to end: the app's checkout → the merchant server (Prepare signs the order)
/// → the app hands `payData` to the plugin (the sandbox's stand-in) → Alipay or WeChat Pay → the
/// delegate's result and the scheme return → the N001 notification and the MQ001 query settle it.
@Suite("iPayNow end to end: server-signed order → plugin → wallet → scheme return, N001 → server", .serialized)
struct IPayNowEndToEndTests {
    static let appId = "1400000000000042"
    static let appKey = "ipaynow-e2e-md5-key"

    struct World {
        let emulator: IPayNowEmulator
        let sandbox: RunningSandbox
        let server: Task<Void, any Error>
        let store: any PaymentStore
        let returns: ReturnURLHandler
        let backend: ClientSecretBackend
        /// The merchant's backend on the server's API.
        let merchant: MerchantHTTP
        /// What the server sent iPayNow.
        let sent: SentRequests

        func checkout(_ customer: SandboxIPayNowCustomer) -> AppCheckout {
            AppCheckout(backend: backend, gateways: [IPayNowGateway()], returns: returns, presenter: customer,
                        returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(25))
        }

        func customer(_ choice: SandboxIPayNowCustomer.Choice = .complete, comesBack: SandboxIPayNowCustomer.Return = .atOnce)
            -> SandboxIPayNowCustomer {
            SandboxIPayNowCustomer(baseURL: sandbox.baseURL(of: emulator), returns: returns, choice: choice, comesBack: comesBack)
        }

        func stop() async {
            await emulator.releaseNotifications()
            await emulator.waitForNotifications()
            await sandbox.stop()
            server.cancel()
            _ = await server.result
            try? await store.close()
        }
    }

    func withWorld(_ body: (World) async throws -> Void) async throws {
        let emulator = IPayNowEmulator(apps: [.init(appId: Self.appId, appKey: Self.appKey)], notifyRetryInterval: .milliseconds(50))
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let port = try #require(LoopbackPort.reserve())
        let serverURL = URL(string: "http://127.0.0.1:\(port)")!
        let configuration = TillConfiguration(
            merchants: [MerchantConfiguration(
                id: "e2e", apiKey: CredentialReference(env: "KEY"),
                gateways: [GatewayConfiguration(id: "ipaynow", module: "ipaynow", credentials: ["app_key": CredentialReference(env: "IPN_KEY")],
                                                settings: ["base_url": sandbox.baseURL(of: emulator).absoluteString, "app_id": Self.appId,
                                                           "settlement_currency": "HKD", "wechat_pay": "true"])],
                routing: RoutingConfiguration(fallback: ["ipaynow"]), returnURLSchemes: ["shopipn"])],
            server: ServerSettings(listen: "127.0.0.1:\(port)", storage: "sqlite:unused", publicURL: serverURL.absoluteString))
        let sent = SentRequests()
        let state = try ServerState(configuration: configuration, plugins: [IPayNowPlugin.plugin],
                                    environment: ["KEY": "e2e-app-key-0123456789", "IPN_KEY": Self.appKey], transport: { sent.transport($0) })
        let store = try await StoreKind.sqlite.open()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try buildApplication(state: state, store: store) { continuation.yield($0) }
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        #expect(await iterator.next() == port)
        // A universal link first: the gateway must pick the custom scheme, the only way the plugin comes back.
        let returns = try ReturnURLHandler(routes: [.universalLink(host: "shop.example.com", path: "/till/return"), .customScheme("shopipn")])
        let world = World(emulator: emulator, sandbox: sandbox, server: task, store: store, returns: returns,
                          backend: ClientSecretBackend(merchant: MerchantAPIClient(baseURL: serverURL, apiKey: "e2e-app-key-0123456789",
                                                                                   transport: URLSessionTransport()),
                                                       transport: URLSessionTransport()),
                          merchant: MerchantHTTP(baseURL: serverURL, apiKey: "e2e-app-key-0123456789"), sent: sent)
        do {
            try await body(world)
        } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    func intent(_ method: PaymentMethod, _ amount: String = "25.80", currency: String = "NZD") throws -> PaymentIntent {
        PaymentIntent(merchantReference: "ipn-\(UUID().uuidString.prefix(8).lowercased())",
                      amount: try Money(decimal: amount, currency: Currency(code: currency)), method: method,
                      customer: Customer(email: "buyer@example.com"), description: "e2e \(method)")
    }

    @Test("Alipay: the delegate says success, the N001 and MQ001 agree: paid once, for the order's amount")
    func alipayPaid() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer()).pay(try intent(.alipay))
            #expect(result.preparation.returnURL?.scheme == "shopipn")
            #expect(result.clientOutcome.kind == .succeeded)
            #expect(result.status == .paid)
            await w.emulator.waitForNotifications()
            let charged = await w.emulator.ledger.filter { $0.mhtOrderNo == result.preparation.attempt.rawValue }
            #expect(charged.count == 1)
            #expect(try await w.store.notificationCount(attempt: result.preparation.attempt) >= 1)
            let payment = try await w.backend.status(of: result.preparation.attempt)
            #expect(payment?.amount == result.preparation.amount)
        }
    }

    @Test("WeChat Pay: the customer cancels in the wallet; nothing is charged and the payment is never paid")
    func wechatCancel() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(.cancel)).pay(try intent(.wechatPay))
            #expect(result.clientOutcome.kind == .cancelled)
            #expect(result.status != .paid)
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("the channel refuses: the delegate's PE004 is a failure, the query says A002, the payment fails")
    func channelFailure() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(.fail)).pay(try intent(.alipay))
            #expect(result.clientOutcome.kind == .failed)
            #expect(result.clientOutcome.gatewayCode == "PE004")
            #expect(result.status == .failed)
            #expect(await w.emulator.ledger.isEmpty)
        }
    }

    @Test("the notification arrives before the customer is back: the server is paid before the app asks")
    func notificationFirst() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer(comesBack: .afterNotification)).pay(try intent(.alipay, "8.00"))
            #expect(result.status == .paid)
            let acknowledged = await w.emulator.notifications.filter { $0.mhtOrderNo == result.preparation.attempt.rawValue }
            #expect(acknowledged.contains { $0.acknowledged })
        }
    }

    @Test("a CNY payment goes in RMB fen against the settlement currency (mhtAmtCurrFlag 0) and settles in CNY")
    func renminbi() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer()).pay(try intent(.alipay, "66.60", currency: "CNY"))
            #expect(result.preparation.parameters["payData"]?.contains("mhtAmtCurrFlag=0") == true)
            #expect(result.preparation.parameters["payData"]?.contains("mhtCurrencyType=HKD") == true)
            #expect(result.status == .paid)
        }
    }

    @Test("a replayed N001 is stored once and changes nothing")
    func replay() async throws {
        try await withWorld { w in
            let result = try await w.checkout(w.customer()).pay(try intent(.wechatPay))
            #expect(result.status == .paid)
            await w.emulator.waitForNotifications()
            let before = try await w.store.notificationCount(attempt: result.preparation.attempt)
            _ = await w.emulator.redeliver(mhtOrderNo: result.preparation.attempt.rawValue)
            await w.emulator.waitForNotifications()
            #expect(try await w.store.notificationCount(attempt: result.preparation.attempt) == before)
            #expect(try await w.backend.status(of: result.preparation.attempt)?.status == .paid)
        }
    }
}
