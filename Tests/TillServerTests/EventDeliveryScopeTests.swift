import Foundation
import Testing
import Till
import TillOrchestration
import TillSandbox
import TillService
@testable import TillServer
import TillTesting

/// Instances sharing one store may serve different merchants (a rolling deploy that adds one): each delivers the
/// events of its own merchants and leaves the others' alone, never marking them skipped for want of a webhook it
/// does not know.
@Suite("Events: an instance delivers its own merchants' events only")
struct EventDeliveryScopeTests {
    @Test("a server's delivery service posts its merchant's events and leaves another merchant's pending, unclaimed and untried",
          arguments: StoreKind.everyStore)
    func ownMerchantsOnly(kind: StoreKind) async throws {
        let receiver = try await LoopbackReceiver.start()
        let store = try await kind.open()
        let known = "m-\(UUID().uuidString.prefix(8))", unknown = "m-\(UUID().uuidString.prefix(8))"
        let usd = Money(minorUnits: 1000, currency: Currency.lookup("USD")!)
        for merchant in [known, unknown] {
            _ = try await store.create(PaymentIntent(merchantReference: "o-\(merchant)", amount: usd, method: .card), merchant: merchant,
                                       id: "pay_\(UUID().uuidString.prefix(12))", idempotencyKey: nil, requestHash: "h")
        }
        let merchant = MerchantConfiguration(id: known, apiKey: CredentialReference(env: "KEY"),
                                             gateways: [GatewayConfiguration(id: "g", module: "fake",
                                                                             credentials: ["notification_secret": CredentialReference(env: "G")])],
                                             webhooks: [WebhookEndpoint(url: receiver.url.absoluteString, secret: CredentialReference(env: "HOOK"))])
        let state = try ServerState(configuration: TillConfiguration(merchants: [merchant]), plugins: [FakeGateway.plugin],
                                    environment: ["KEY": "scope-test-api-key-0123", "G": "g", "HOOK": "scope-test-webhook-secret"])
        let before = try #require(try await store.events(merchant: unknown, query: EventQuery()).first)

        let pass = try await EventDeliverer(state: state, store: store).runOnce(now: Date().addingTimeInterval(1))
        #expect(pass.claimed == 1 && pass.delivered == 1, "\(pass)")
        #expect(try await store.events(merchant: known, query: EventQuery()).map(\.state) == [.delivered])
        #expect(await receiver.received().count == 1)
        let after = try #require(try await store.event(id: before.id, merchant: unknown))
        #expect(after.state == .pending && after.attemptCount == 0 && after.nextAttemptAt == before.nextAttemptAt, "\(after)")
        await receiver.stop()
        try await store.close()
    }
}
