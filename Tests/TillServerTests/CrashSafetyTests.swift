import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillChildProcess
import TillTesting

/// Runs the real `till server` in its own process.
final class ServerProcess: Sendable {
    let process: ChildProcess
    let baseURL: URL

    /// The `till` executable built next to this test bundle.
    static var executable: URL {
        let beside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("till")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/till")
    }

    init(config: URL, environment: [String: String]) throws {
        process = try ChildProcess(Self.executable, arguments: ["server", "--config", config.path],
                                   environment: ChildProcess.inheritedEnvironment(environment), stdout: .pipe)
        // The first line says where it listens.
        let output = process.standardOutput!
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "http://") else {
            process.send(SIGKILL)
            process.waitUntilExit()
            throw CheckoutError(.misconfigured, message: "the server did not start: \(text)")
        }
        baseURL = URL(string: String(text[range.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines))!
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

@Suite("Crash safety", .serialized)
struct CrashSafetyTests {
    static let apiKey = "crash-test-api-key-0123456789"
    static let secret = "crash-test-notification-secret"

    func send(_ base: URL, _ method: String, _ path: String, body: Data?, headers: [String: String]) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: base.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    /// The environment the configuration of ``sqliteServerFiles(_:)`` names its secrets in.
    static let environment = ["CRASH_API_KEY": apiKey, "CRASH_SECRET": secret]

    /// A fresh folder with a configuration for one merchant with the fake gateway on a SQLite file in it.
    static func sqliteServerFiles(_ prefix: String) throws -> (folder: URL, database: String, config: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let database = folder.appendingPathComponent("till.sqlite").path
        let config = folder.appendingPathComponent("till.json")
        try Data("""
            {"server": {"listen": "127.0.0.1:0", "storage": "sqlite:\(database)"},
             "merchants": [{"id": "crash", "apiKey": {"env": "CRASH_API_KEY"},
               "gateways": [{"id": "fake", "module": "fake", "credentials": {"notification_secret": {"env": "CRASH_SECRET"}}}]}]}
            """.utf8).write(to: config)
        return (folder, database, config)
    }

    @Test("one server per SQLite file: a second on the same file is refused at once with the reason; once the first is killed, a new one starts")
    func oneInstancePerSQLiteFile() async throws {
        let (folder, database, config) = try Self.sqliteServerFiles("till-lock")
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try ServerProcess(config: config, environment: Self.environment)
        let second = try ChildProcess(ServerProcess.executable, arguments: ["server", "--config", config.path],
                                      environment: ChildProcess.inheritedEnvironment(Self.environment),
                                      stdout: .pipe, stderr: .pipe)
        let said = String(decoding: second.standardError!.readDataToEndOfFile(), as: UTF8.self)
        #expect(second.waitUntilExit() == .exited(1))
        #expect(said.contains("another till server is already using \(database)"), "\(said)")
        first.process.send(SIGKILL)
        #expect(first.process.waitUntilExit() == .signalled(SIGKILL))
        let third = try ServerProcess(config: config, environment: Self.environment)
        third.stop()
    }

    @Test("killed before acknowledging a notification, the server applies the gateway's retry exactly once",
          arguments: ["after-store", "before-store"])
    func crashAndRetry(point: String) async throws {
        let (folder, database, config) = try Self.sqliteServerFiles("till-crash")
        defer { try? FileManager.default.removeItem(at: folder) }
        let environment = Self.environment
        let auth = ["Authorization": "Bearer \(Self.apiKey)", "Content-Type": "application/json"]

        // 1. A server that will die at the crash point while handling a notification.
        let doomed = try ServerProcess(config: config, environment: environment.merging(["TILL_CRASH_POINT": point]) { _, new in new })
        let (created, payment) = try await send(doomed.baseURL, "POST", "v1/payments",
            body: Data(#"{"merchantReference":"crash-1","amount":{"value":4200,"currency":"USD"},"method":"card"}"#.utf8), headers: auth)
        #expect(created == 201)
        let paymentID = try #require(payment["id"] as? String)
        let (prepared, preparation) = try await send(doomed.baseURL, "POST", "v1/payments/\(paymentID)/attempts", body: Data("{}".utf8), headers: auth)
        #expect(prepared == 201)
        let attempt = AttemptReference(rawValue: try #require(preparation["attempt"] as? String))

        // The gateway's notification, signed with the shared secret.
        let gateway = FakeGateway(id: "fake", secret: Self.secret)
        let notification = gateway.signedNotification(for: StatusReport(
            gateway: "fake", attempt: attempt, status: .paid, amount: Money(minorUnits: 4200, currency: Currency.lookup("USD")!),
            eventID: "evt-crash-1"))
        let headers = notification.headers.merging(["Content-Type": "application/json"]) { _, new in new }
        await #expect(throws: (any Error).self) {
            _ = try await send(doomed.baseURL, "POST", "v1/notifications/fake", body: notification.body, headers: headers)
        }
        let ended = doomed.process.waitUntilExit()
        #expect(ended == .signalled(SIGKILL), "\(ended)")

        // 2. Restarted on the same database, the gateway retries the same notification.
        let server = try ServerProcess(config: config, environment: environment)
        defer { server.stop() }
        let (retried, _) = try await send(server.baseURL, "POST", "v1/notifications/fake", body: notification.body, headers: headers)
        #expect(retried == 200)
        let (again, _) = try await send(server.baseURL, "POST", "v1/notifications/fake", body: notification.body, headers: headers)
        #expect(again == 200)

        // 3. Exactly once: one stored notification, the payment paid, nothing lost.
        let (_, after) = try await send(server.baseURL, "GET", "v1/payments/\(paymentID)", body: nil, headers: auth)
        #expect(after["status"] as? String == "paid")
        server.stop()
        let store = try SQLiteInspection(path: database)
        #expect(try await store.count("till_notifications") == 1)
        #expect(try await store.count("till_payments") == 1)
    }
}
