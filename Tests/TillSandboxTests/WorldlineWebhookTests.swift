import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Worldline emulator: webhooks")
struct WorldlineWebhookTests {
    @Test("the signature rule reproduces the python SDK's vector, and the emulator signs the same way")
    func vendorVector() throws {
        let vector = try WorldlineFixtures.load("webhook-payment-paid.json")
        let bodyText = try #require(vector["valid_body_base64"]?.stringValue)
        let body = try #require(Data(base64Encoded: bodyText))
        let secret = try #require(vector["secret_key"]?.stringValue)
        let expected = try #require(vector["headers"]?["X-GCS-Signature"]?.stringValue)
        #expect(TestSigner.webhookSignature(body, secret: secret) == expected)
        #expect(WorldlineWebhookSignature.sign(Array(body), secret: secret) == expected)
        let invalidText = try #require(vector["invalid_body_base64"]?.stringValue)
        let invalid = try #require(Data(base64Encoded: invalidText))
        #expect(TestSigner.webhookSignature(invalid, secret: secret) != expected)
    }

    @Test("endpoint verification first, then signed events the receiver can verify", .timeLimit(.minutes(1)))
    func verificationThenEvents() async throws {
        let structure = try WorldlineFixtures.load("webhook-event-structure.docs.json")
        let endpoint = WebhookEndpoint()
        let (url, server) = try await WebhookEndpoint.start(endpoint)
        defer { Task { await server.stop() } }
        try await WorldlineHarness.with(webhookURL: url) { harness in
            let result = try await harness.pay(extra: #", "cardPaymentMethodSpecificInput": {"authorizationMode": "SALE", "requiresApproval": false}"#)
            let id = try #require(result.string("payment.id"))
            await harness.emulator.waitForWebhooks()
            let received = await endpoint.received
            let first = try #require(received.first)
            #expect(first.method == "GET")
            let challenge = try #require(first.headers["x-gcs-webhooks-endpoint-verification"]?.first)
            #expect(!challenge.isEmpty)

            let events = await endpoint.events
            #expect(events.count == 1)
            let event = try #require(events.first)
            #expect(event.headers["content-type"]?.first?.hasPrefix("application/json") == true)
            #expect(event.headers["x-gcs-keyid"] == ["dummy-key-id"])
            #expect(event.headers["x-gcs-signature"] == [TestSigner.webhookSignature(event.body, secret: "hello+world")])
            let json = try JSONValue.parse(Array(event.body))
            let metadata = Set(structure["metadata_example"]?.keys ?? [])
            #expect(metadata.isSubset(of: Set(json.keys)))
            #expect(json["apiVersion"] == .string("v1"))
            #expect(json["merchantId"] == .string("1234"))
            #expect(json["type"] == .string("payment.captured"))
            #expect(json["payment"]?["id"] == .string(id))
            #expect(json["payment"]?["status"] == .string("CAPTURED"))
            let created = try #require(json["created"]?.stringValue)
            #expect(created.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}$"#, options: .regularExpression) != nil)

            // The next event does not verify again.
            let refund = #"{"amountOfMoney": {"amount": 2345, "currencyCode": "EUR"}}"#
            #expect(try await harness.server("POST", "/v1/1234/payments/\(id)/refund", json: refund).status == 201)
            await harness.emulator.waitForWebhooks()
            let types = await endpoint.events.compactMap { try? JSONValue.parse(Array($0.body))["type"]?.stringValue }
            // Each event is delivered on its own, so their order is not guaranteed (receivers must not rely on it).
            #expect(types.first == "payment.captured")
            #expect(types.sorted() == ["payment.captured", "payment.refunded", "refund.refund_requested", "refund.refunded"])
            #expect(await endpoint.received.filter { $0.method == "GET" }.count == 1)
        }
    }

    @Test("an endpoint that does not echo the verification value gets no events")
    func failedVerification() async throws {
        let endpoint = WebhookEndpoint(echo: false)
        let (url, server) = try await WebhookEndpoint.start(endpoint)
        defer { Task { await server.stop() } }
        try await WorldlineHarness.with(webhookURL: url, attempts: 3) { harness in
            _ = try await harness.pay()
            await harness.emulator.waitForWebhooks()
            #expect(await endpoint.events.isEmpty)
            let deliveries = await harness.emulator.webhookDeliveries
            #expect(deliveries.count == 3)
            #expect(deliveries.allSatisfy { $0.kind == .verification && !$0.accepted })
        }
    }

    @Test("non-2xx answers are retried with backoff until acknowledged; replays and the admin list")
    func retries() async throws {
        let endpoint = WebhookEndpoint(statuses: [500, 503])
        let (url, server) = try await WebhookEndpoint.start(endpoint)
        defer { Task { await server.stop() } }
        try await WorldlineHarness.with(webhookURL: url, attempts: 4) { harness in
            _ = try await harness.pay()
            await harness.emulator.waitForWebhooks()
            let events = await harness.emulator.webhookDeliveries.filter { $0.kind == .event }
            #expect(events.map(\.status) == [500, 503, 200])
            #expect(events.map(\.attempt) == [1, 2, 3])
            #expect(Set(events.map(\.body)).count == 1)

            let eventID = try #require(events.first?.eventId)
            let replay = try await harness.admin("webhooks/\(eventID)/redeliver", json: "{}")
            #expect(replay.status == 200)
            let posts = await endpoint.events
            #expect(posts.count == 4)
            #expect(posts.last?.body == posts.first?.body)
            #expect(posts.last?.headers["x-gcs-signature"] == posts.first?.headers["x-gcs-signature"])

            let list = try await harness.admin("webhooks")
            let parsed = try JSONValue.parse(Array(list.body))
            if case .array(let items) = parsed { #expect(items.count == 5) } else { Issue.record("not a list: \(list.text)") }
        }
    }

    @Test("crafted events for attack tests: another secret, no signature, a forged status")
    func crafted() async throws {
        let endpoint = WebhookEndpoint()
        let (url, server) = try await WebhookEndpoint.start(endpoint)
        defer { Task { await server.stop() } }
        try await WorldlineHarness.with(webhookURL: url) { harness in
            let payment = try await harness.pay()
            let id = try #require(payment.string("payment.id"))
            await harness.emulator.waitForWebhooks()
            let before = await endpoint.events.count

            let forged = try await harness.admin("webhooks/send", json: #"{"merchantId": "1234", "type": "payment.captured", "paymentId": "\#(id)", "status": "CAPTURED", "amount": 1, "secret": "guessed"}"#)
            #expect(forged.status == 200, "\(forged.text)")
            let unsigned = await harness.emulator.sendCraftedEvent(.init(merchantId: "1234", body: "{\"apiVersion\":\"v1\"}", omitSignature: true))
            #expect(unsigned?.crafted == true)

            let events = Array(await endpoint.events.dropFirst(before))
            #expect(events.count == 2)
            let first = try #require(events.first)
            #expect(first.headers["x-gcs-signature"]?.first != TestSigner.webhookSignature(first.body, secret: "hello+world"))
            #expect(first.headers["x-gcs-signature"]?.first == TestSigner.webhookSignature(first.body, secret: "guessed"))
            let json = try JSONValue.parse(Array(first.body))
            #expect(json["payment"]?["status"] == .string("CAPTURED"))
            #expect(json["payment"]?["paymentOutput"]?["amountOfMoney"]?["amount"] == .number("1"))
            #expect(events.last?.headers["x-gcs-signature"] == nil)
            // Nothing moved: the payment is still waiting for approval.
            #expect(await harness.emulator.paymentStatus(id) == "PENDING_APPROVAL")
        }
    }

    @Test("the webhook URL is the merchant's configuration: set later through the admin route, verified again")
    func setLater() async throws {
        let endpoint = WebhookEndpoint()
        let (url, server) = try await WebhookEndpoint.start(endpoint)
        defer { Task { await server.stop() } }
        try await WorldlineHarness.with { harness in
            _ = try await harness.pay()
            await harness.emulator.waitForWebhooks()
            #expect(await harness.emulator.webhookDeliveries.isEmpty)
            let set = try await harness.admin("merchants/1234/webhook", json: #"{"url": "\#(url.absoluteString)"}"#)
            #expect(set.status == 200)
            #expect(try await harness.admin("merchants/9999/webhook", json: #"{"url": null}"#).status == 404)
            _ = try await harness.pay()
            await harness.emulator.waitForWebhooks()
            #expect(await endpoint.received.map(\.method) == ["GET", "POST"])
            let accounts = await harness.sandbox.accounts()
            let account = try #require(accounts.first { $0.settings["merchant_id"] == "1234" })
            #expect(account.module == "worldline")
            #expect(account.settings["base_url"] == harness.root.absoluteString)
            #expect(account.credentials["webhook_secret_key"] == "hello+world")
            #expect(account.summary.contains(url.absoluteString))
        }
    }
}
