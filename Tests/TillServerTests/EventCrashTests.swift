import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillChildProcess
import TillSandbox
import TillService
import TillTesting
@testable import TillServer

/// The outbox's durability as production runs it: the real `till server` process delivering events to a receiver that
/// fails its first deliveries, killed with SIGKILL while it creates, pays and delivers, then restarted on the same
/// store. Every event of every committed change reaches the receiver afterwards; none is lost.
@Suite("Events: a crash while delivering", .serialized)
struct EventCrashTests {
    static let apiKey = "event-crash-api-key-0123456789"
    static let secret = "event-crash-notification-secret"
    static let webhookSecret = "event-crash-webhook-secret-0123"

    @Test("killed with SIGKILL while it delivers: after a restart every committed change's events reach the receiver, in order per payment",
          arguments: StoreKind.available)
    func killWhileDelivering(kind: StoreKind) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-event-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = kind == .sqlite ? "sqlite:\(folder.appendingPathComponent("till.sqlite").path)" : try #require(StoreKind.postgresURL)
        let merchant = "event-crash-\(UUID().uuidString.prefix(8).lowercased())"
        // The merchant's backend fails its first 25 deliveries, then accepts everything.
        let receiver = try await LoopbackReceiver.start(answering: Array(repeating: 500, count: 25), otherwise: 200)
        defer { Task { await receiver.stop() } }
        let config = folder.appendingPathComponent("till.json")
        try Data("""
            {"server": {"listen": "127.0.0.1:0", "storage": "\(storage)",
                        "reconciliation": {"enabled": false},
                        "events": {"pollIntervalSeconds": 0.05, "retryBaseSeconds": 0.2, "retryMaxSeconds": 1, "timeoutSeconds": 1,
                                   "batch": 8, "concurrency": 4}},
             "merchants": [{"id": "\(merchant)", "apiKey": {"env": "CRASH_API_KEY"},
               "gateways": [{"id": "fake", "module": "fake", "credentials": {"notification_secret": {"env": "CRASH_SECRET"}}}],
               "webhooks": [{"url": "\(receiver.url.absoluteString)", "secret": {"env": "CRASH_WEBHOOK_SECRET"}}]}]}
            """.utf8).write(to: config)
        let environment = ["CRASH_API_KEY": Self.apiKey, "CRASH_SECRET": Self.secret, "CRASH_WEBHOOK_SECRET": Self.webhookSecret]
        let auth = ["Authorization": "Bearer \(Self.apiKey)", "Content-Type": "application/json"]
        let run = UUID().uuidString.prefix(6).lowercased()
        let gateway = FakeGateway(id: "fake", secret: Self.secret)
        let usd = Currency.lookup("USD")!

        // The load: payments created, prepared and paid by the gateway's notification, until the process is killed.
        let doomed = try ServerProcess(config: config, environment: environment)
        let session = URLSession(configuration: .ephemeral)
        let base = doomed.baseURL
        let next = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    while true {
                        let n = next.withLock { $0 += 1; return $0 }
                        guard n <= 150 else { return }
                        let body = Data(#"{"merchantReference":"ev-\#(run)-\#(n)","amount":{"value":700,"currency":"USD"},"method":"card"}"#.utf8)
                        guard let (created, payment) = await CrashUnderLoadTests.send(session, base, "POST", "v1/payments", body: body, headers: auth),
                              created == 201, let id = payment["id"] as? String,
                              let (_, prepared) = await CrashUnderLoadTests.send(session, base, "POST", "v1/payments/\(id)/attempts",
                                                                                 body: Data("{}".utf8), headers: auth),
                              let attempt = prepared["attempt"] as? String else { return }
                        let notification = gateway.signedNotification(for: StatusReport(
                            gateway: "fake", attempt: AttemptReference(rawValue: attempt), status: .paid, amount: Money(minorUnits: 700, currency: usd),
                            eventID: "evt-\(attempt)"))
                        guard await CrashUnderLoadTests.send(session, base, "POST", "v1/notifications/fake", body: notification.body,
                                                             headers: notification.headers.merging(["Content-Type": "application/json"]) { _, new in new })
                            != nil else { return }
                    }
                }
            }
            // Kill once the receiver has seen deliveries fail and succeed: the server holds claims and has events to post.
            group.addTask {
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline, await receiver.received().filter({ $0.answeredStatus == 200 }).count < 20 {
                    try await Task.sleep(for: .milliseconds(10))
                }
                doomed.process.send(SIGKILL)
            }
            try await group.waitForAll()
        }
        session.invalidateAndCancel()
        #expect(await doomed.process.exit() == .signalled(SIGKILL))
        let deliveredBeforeRestart = await receiver.received().filter { $0.answeredStatus == 200 }.count

        // Restarted on the same store: it delivers what the dead one had not, including what it had claimed.
        let server = try ServerProcess(config: config, environment: environment)
        defer { server.stop() }
        let store = try openStore(storage)
        defer { Task { try? await store.close() } }
        var stored: [StoredEvent] = []
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            stored = try await Self.allEvents(store, merchant: merchant)
            if !stored.isEmpty, stored.allSatisfy({ $0.state == .delivered }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(!stored.isEmpty)
        #expect(stored.allSatisfy { $0.state == .delivered }, "\(stored.filter { $0.state != .delivered }.count) events not delivered")

        // Every stored event reached the receiver and was accepted; each payment's numbers have no gap and arrived in order.
        let accepted = await receiver.received().filter { $0.answeredStatus == 200 }
            .compactMap { try? JSONDecoder.iso8601.decode(WebhookEvent.self, from: $0.body) }
        let acceptedIDs = Set(accepted.map(\.id))
        let lost = stored.filter { !acceptedIDs.contains($0.id) }
        #expect(lost.isEmpty, "lost events: \(lost.map { "\($0.paymentID)#\($0.sequence) \($0.type)" })")
        for (payment, events) in Dictionary(grouping: stored, by: \.paymentID) {
            #expect(events.map(\.sequence).sorted() == Array(1...events.count), "payment \(payment) has a gap")
            var firstArrival: [Int] = []
            for event in accepted where event.paymentId == payment && !firstArrival.contains(event.sequence) { firstArrival.append(event.sequence) }
            #expect(firstArrival == firstArrival.sorted(), "payment \(payment) delivered out of order: \(firstArrival)")
        }
        let duplicates = accepted.count - acceptedIDs.count
        print("event crash (\(kind)): \(stored.count) events, \(deliveredBeforeRestart) accepted before the kill, \(duplicates) delivered twice")
    }

    static func allEvents(_ store: any PaymentStore, merchant: String) async throws -> [StoredEvent] {
        var all: [StoredEvent] = []
        while true {
            let page = try await store.events(merchant: merchant, query: EventQuery(after: all.last?.position ?? 0, limit: 500))
            all += page
            if page.count < 500 { return all }
        }
    }
}

extension JSONDecoder {
    /// Decodes the API's dates (ISO 8601).
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
