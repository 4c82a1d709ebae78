import Foundation
import Testing
import TillChildProcess

/// The real `till server` refuses a Citcon gateway whose settings are wrong, naming each one, before
/// it listens.
@Suite("till server: Citcon module settings")
struct ModuleSettingsTests {
    /// Starts `till server` with `settings` and waits (without holding a thread) for it to refuse them.
    func start(settings: String) async throws -> (status: Int32, errors: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("server.json")
        try Data("""
            { "server": { "listen": "127.0.0.1:0", "storage": "sqlite:\(folder.path)/till.sqlite", "publicURL": "https://pay.example.com" },
              "merchants": [ { "id": "shop", "apiKey": { "env": "SHOP_KEY" },
                "gateways": [ { "id": "citcon", "module": "citcon",
                                "credentials": { "api_key": { "env": "CITCON_KEY" }, "api_secret": { "env": "CITCON_SECRET" } },
                                "settings": \(settings) } ],
                "routing": { "fallback": ["citcon"] } } ] }
            """.utf8).write(to: config)
        let errorsFile = folder.appendingPathComponent("errors.txt")
        let process = try ChildProcess(ServerProcess.executable, arguments: ["server", "--config", config.path],
                                       environment: ChildProcess.inheritedEnvironment(
                                           ["SHOP_KEY": "shop-key-0123456789abcdef", "CITCON_KEY": "k", "CITCON_SECRET": "s"]),
                                       stderr: .file(errorsFile))
        let watchdog = Task { try await Task.sleep(for: .seconds(20)); process.terminate() }
        let ended = await process.exit()
        watchdog.cancel()
        let text = (try? String(contentsOf: errorsFile, encoding: .utf8)) ?? ""
        guard case .exited(let status) = ended else { return (-1, text + "\n(\(ended))") }
        return (status, text)
    }

    @Test("bad settings are refused with the setting's name", arguments: [
        (#"{ "environment": "staging" }"#, "settings.environment"),
        (#"{ "environment": "dev" }"#, "settings.base_url"),
        (#"{ "base_url": "ftp://citcon.example" }"#, "settings.base_url"),
        (#"{ "unionpay_mode": "02" }"#, "settings.unionpay_mode"),
        (#"{ "request_3ds": "yes" }"#, "settings.request_3ds"),
        (#"{ "charge_lifetime_seconds": "5" }"#, "settings.charge_lifetime_seconds"),
    ])
    func badSettings(settings: String, field: String) async throws {
        let (status, errors) = try await start(settings: settings)
        #expect(status != 0)
        #expect(errors.contains(field), "\(errors)")
    }
}
