import Foundation
import Testing
import TillChildProcess

/// `till sandbox` as a person runs it beside `till server`: it prints every secret a configuration needs and
/// posts each fixed-endpoint gateway's notifications to the gateway id the configuration uses.
@Suite("till sandbox, the command")
struct SandboxCommandTests {
    /// Runs `till sandbox` with `arguments` until it has printed its account lines; returns them.
    func output(_ arguments: [String]) throws -> (String, ChildProcess.Termination?) {
        let process = try ChildProcess(ServerProcess.executable, arguments: ["sandbox"] + arguments,
                                       environment: ChildProcess.inheritedEnvironment([:]), stdout: .pipe, stderr: .pipe)
        var text = ""
        while !text.contains("admin/ecommpay") {
            let chunk = process.standardOutput!.availableData
            guard !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        if text.contains("admin/ecommpay") {
            process.terminate()
            _ = process.waitUntilExit()
            return (text, nil)
        }
        return (text + String(decoding: process.standardError!.readDataToEndOfFile(), as: UTF8.self), process.waitUntilExit())
    }

    @Test("every secret the example configuration needs is printed (Worldline's secret API key and webhook secret too), and --gateway-id routes notifications to the configured ids")
    func secretsAndGatewayIDs() throws {
        let (text, ended) = try output(["--notification-url", "http://127.0.0.1:8080/v1/notifications/cards",
                                        "--gateway-id", "worldline=wl-eu", "--gateway-id", "ecommpay=ecp"])
        #expect(ended == nil, "\(text)")
        for secret in ["sandbox-request-phrase", "sandbox-response-phrase", "till-sandbox-citcon-secret", "till-sandbox-worldline-secret",
                       "till-sandbox-webhook-secret", "till-sandbox-ipaynow-md5-key", "till-sandbox-ecommpay-secret"] {
            #expect(text.contains(secret), "\(secret) missing from: \(text)")
        }
        #expect(text.contains("webhooks to http://127.0.0.1:8080/v1/notifications/wl-eu"))
        #expect(text.contains("callbacks to http://127.0.0.1:8080/v1/notifications/ecp"))
    }

    @Test("a --gateway-id that names no module, or an id with other characters, is refused naming the option")
    func badGatewayID() throws {
        for bad in ["worldlin=wl", "worldline=", "worldline=a/b", "citcon=cc"] {
            let (text, ended) = try output(["--gateway-id", bad])
            #expect(ended != nil && ended != .exited(0) && text.contains("--gateway-id expects MODULE=ID"), "\(bad): \(text)")
        }
    }
}

@Suite("till reconcile, the command")
struct ReconcileCommandTests {
    @Test("a pass with nothing due says why in its summary line instead of printing bare zeros")
    func nothingDueSaysWhy() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-reconcile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("till.json")
        try Data("""
            {"server": {"listen": "127.0.0.1:0", "storage": "sqlite:\(folder.appendingPathComponent("till.sqlite").path)"},
             "merchants": [{"id": "r", "apiKey": {"env": "R_API_KEY"},
               "gateways": [{"id": "fake", "module": "fake", "credentials": {"notification_secret": {"env": "R_SECRET"}}}]}]}
            """.utf8).write(to: config)
        let process = try ChildProcess(ServerProcess.executable, arguments: ["reconcile", "--config", config.path],
                                       environment: ChildProcess.inheritedEnvironment(["R_API_KEY": "reconcile-test-api-key-0123", "R_SECRET": "s"]),
                                       stdout: .pipe, stderr: .null)
        let text = String(decoding: process.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.waitUntilExit() == .exited(0))
        let last = try #require(text.split(separator: "\n").last)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        #expect(summary["inquired"] as? Int == 0)
        #expect((summary["note"] as? String)?.contains("600 s old (server.reconciliation.minimumAgeSeconds)") == true, "\(text)")
    }
}
