import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillChildProcess
import TillTesting
@testable import TillServer

/// The durability proof for the write path as production runs it: the real `till server` process,
/// under concurrent creates and notifications, killed with SIGKILL (no shutdown, no flush), then
/// restarted on the same store.
@Suite("Crash under load", .serialized)
struct CrashUnderLoadTests {
    static let apiKey = "crash-load-api-key-0123456789"
    static let secret = "crash-load-notification-secret"
    static let usd = Currency.lookup("USD")!

    /// What one request saw: answered (with the payment id for a create), or cut off by the kill.
    enum Seen: Sendable, Hashable {
        case acknowledged(String)
        case cutOff
    }

    /// One HTTP request; `nil` when the connection failed (the server died under it).
    static func send(_ session: URLSession, _ base: URL, _ method: String, _ path: String, body: Data?,
                     headers: [String: String]) async -> (Int, [String: Any])? {
        var request = URLRequest(url: base.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = 10
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        guard let (data, response) = try? await session.data(for: request), let http = response as? HTTPURLResponse else { return nil }
        return (http.statusCode, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    @Test("killed with SIGKILL under load: every acknowledged create and notification is in the store after restart; every cut-off one, retried, is applied once",
          arguments: StoreKind.available)
    func killUnderLoad(kind: StoreKind) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-crash-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = kind == .sqlite ? "sqlite:\(folder.appendingPathComponent("till.sqlite").path)" : try #require(StoreKind.postgresURL)
        let merchant = "crash-load-\(UUID().uuidString.prefix(8).lowercased())"
        let config = folder.appendingPathComponent("till.json")
        try Data("""
            {"server": {"listen": "127.0.0.1:0", "storage": "\(storage)"},
             "merchants": [{"id": "\(merchant)", "apiKey": {"env": "CRASH_API_KEY"},
               "gateways": [{"id": "fake", "module": "fake", "credentials": {"notification_secret": {"env": "CRASH_SECRET"}}}]}]}
            """.utf8).write(to: config)
        let environment = ["CRASH_API_KEY": Self.apiKey, "CRASH_SECRET": Self.secret]
        let auth = ["Authorization": "Bearer \(Self.apiKey)", "Content-Type": "application/json"]
        let session = URLSession(configuration: .ephemeral)
        let run = UUID().uuidString.prefix(6).lowercased()
        func createBody(_ n: Int) -> Data {
            Data(#"{"merchantReference":"load-\#(run)-\#(n)","amount":{"value":\#(1000 + n),"currency":"USD"},"method":"card"}"#.utf8)
        }

        let doomed = try ServerProcess(config: config, environment: environment)
        // Payments with a prepared attempt each, for the notifications of the load.
        var attempts: [(payment: String, attempt: AttemptReference)] = []
        for n in 0..<80 {
            let (status, created) = try #require(await Self.send(session, doomed.baseURL, "POST", "v1/payments",
                                                                  body: Data(#"{"merchantReference":"seed-\#(run)-\#(n)","amount":{"value":500,"currency":"USD"},"method":"card"}"#.utf8),
                                                                  headers: auth))
            #expect(status == 201)
            let id = try #require(created["id"] as? String)
            let (prepared, preparation) = try #require(await Self.send(session, doomed.baseURL, "POST", "v1/payments/\(id)/attempts",
                                                                        body: Data("{}".utf8), headers: auth))
            #expect(prepared == 201)
            attempts.append((id, AttemptReference(rawValue: try #require(preparation["attempt"] as? String))))
        }
        let gateway = FakeGateway(id: "fake", secret: Self.secret)
        let notifications = attempts.map { entry in
            gateway.signedNotification(for: StatusReport(gateway: "fake", attempt: entry.attempt, status: .paid,
                                                         amount: Money(minorUnits: 500, currency: Self.usd), eventID: "evt-\(entry.attempt)"))
        }

        // The load: 4 creators and 4 notifiers, until the process is killed.
        let creates = Locked<[Int: Seen]>([:])
        let notified = Locked<[Int: Seen]>([:])
        let next = Locked((create: 0, notification: 0))
        let base = doomed.baseURL
        let doomedProcess = doomed.process
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    while true {
                        let n = next.withLock { $0.create += 1; return $0.create - 1 }
                        guard let (status, body) = await Self.send(session, base, "POST", "v1/payments", body: createBody(n),
                                                                   headers: auth.merging(["Idempotency-Key": "load-\(run)-\(n)"]) { _, new in new }) else {
                            creates.withLock { $0[n] = .cutOff }
                            return
                        }
                        #expect(status == 201, "create \(n): \(status) \(body)")
                        creates.withLock { $0[n] = .acknowledged(body["id"] as? String ?? "") }
                    }
                }
                group.addTask {
                    while true {
                        let i = next.withLock { $0.notification += 1; return $0.notification - 1 }
                        guard i < notifications.count else { return }
                        let notification = notifications[i]
                        guard let (status, _) = await Self.send(session, base, "POST", "v1/notifications/fake", body: notification.body,
                                                                headers: notification.headers.merging(["Content-Type": "application/json"]) { _, new in new }) else {
                            notified.withLock { $0[i] = .cutOff }
                            return
                        }
                        #expect(status == 200, "notification \(i): \(status)")
                        notified.withLock { $0[i] = .acknowledged("") }
                    }
                }
            }
            // Kill once the load is well under way: creates answered and notifications half done.
            group.addTask {
                let deadline = Date().addingTimeInterval(20)
                while Date() < deadline {
                    let (answered, settled) = (creates.withLock { $0.count }, notified.withLock { $0.count })
                    if answered >= 80 && settled >= notifications.count / 2 { break }
                    try await Task.sleep(for: .milliseconds(5))
                }
                doomedProcess.send(SIGKILL)
            }
            try await group.waitForAll()
        }
        session.invalidateAndCancel()
        let ended = await doomed.process.exit()
        #expect(ended == .signalled(SIGKILL), "\(ended)")
        let acknowledged = creates.withLock { $0 }.compactMapValues { if case .acknowledged(let id) = $0 { id } else { nil } }
        let cutOff = creates.withLock { $0 }.filter { $0.value == .cutOff }.map(\.key)
        #expect(acknowledged.count >= 80)

        // Restarted on the same store.
        let server = try ServerProcess(config: config, environment: environment)
        let restarted = URLSession(configuration: .ephemeral)
        defer { restarted.invalidateAndCancel() }
        defer { server.stop() }
        // Every acknowledged create is there, and its key replays to the same payment.
        for (n, id) in acknowledged {
            let (read, _) = try #require(await Self.send(restarted, server.baseURL, "GET", "v1/payments/\(id)", body: nil, headers: auth))
            #expect(read == 200, "acknowledged create \(n) (\(id)) lost")
            let (replay, again) = try #require(await Self.send(restarted, server.baseURL, "POST", "v1/payments", body: createBody(n),
                                                                headers: auth.merging(["Idempotency-Key": "load-\(run)-\(n)"]) { _, new in new }))
            #expect(replay == 200 && again["id"] as? String == id, "create \(n) replayed as \(replay) \(again)")
        }
        // Every cut-off create, retried twice with its key, is one payment.
        for n in cutOff {
            let headers = auth.merging(["Idempotency-Key": "load-\(run)-\(n)"]) { _, new in new }
            let (first, created) = try #require(await Self.send(restarted, server.baseURL, "POST", "v1/payments", body: createBody(n), headers: headers))
            let (second, replayed) = try #require(await Self.send(restarted, server.baseURL, "POST", "v1/payments", body: createBody(n), headers: headers))
            #expect([200, 201].contains(first) && second == 200, "cut-off create \(n): \(first), \(second)")
            #expect(created["id"] as? String == replayed["id"] as? String)
        }
        // Every acknowledged notification is applied; every cut-off one is applied once its retry is answered.
        let seen = notified.withLock { $0 }
        for (i, entry) in attempts.enumerated() {
            let (_, before) = try #require(await Self.send(restarted, server.baseURL, "GET", "v1/payments/\(entry.payment)", body: nil, headers: auth))
            if seen[i] == .acknowledged("") { #expect(before["status"] as? String == "paid", "acknowledged notification \(i) lost") }
            let notification = notifications[i]
            let (retried, _) = try #require(await Self.send(restarted, server.baseURL, "POST", "v1/notifications/fake", body: notification.body,
                                                            headers: notification.headers.merging(["Content-Type": "application/json"]) { _, new in new }))
            #expect(retried == 200)
            let (_, after) = try #require(await Self.send(restarted, server.baseURL, "GET", "v1/payments/\(entry.payment)", body: nil, headers: auth))
            #expect(after["status"] as? String == "paid")
        }
        server.stop()
        let store = try openStore(storage)
        for entry in attempts {
            #expect(try await store.notificationCount(attempt: entry.attempt) == 1, "notification for \(entry.attempt) stored twice or not at all")
        }
        try await store.close()
    }
}
