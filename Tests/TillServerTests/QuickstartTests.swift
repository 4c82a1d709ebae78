import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TillChildProcess
import TillServer

/// docs/quickstart.md, followed command by command: every `sh` block of the page, in order, through bash, with
/// the `till` this test run built. The sandbox and the server run in the background as their terminals would;
/// everything else runs in one shell, as a person types it. The only changes: the ports (two free ones for 8080
/// and 8081, in the commands and in a copy of the page's configuration) and `swift run till` → the built binary.
@Suite("Quick start: docs/quickstart.md works from a terminal", .serialized)
struct QuickstartTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The page's `sh` blocks, in order.
    static func blocks(of page: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```sh" {
                current = []
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("a card payment with 3-D Secure, a wallet payment, the other three gateways, and a capture and refund, as the page says")
    func followThePage() async throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/quickstart.md"), encoding: .utf8)
        let blocks = Self.blocks(of: page)
        #expect(blocks.count >= 6, "the page's sh blocks: \(blocks.count)")
        guard let server = LoopbackPort.reserve(), let sandbox = LoopbackPort.reserve(), let metrics = LoopbackPort.reserve(),
              let console = LoopbackPort.reserve() else {
            Issue.record("no free loopback ports")
            return
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-quickstart-\(UUID().uuidString)")
        let examples = folder.appendingPathComponent("docs/examples")
        try FileManager.default.createDirectory(at: examples, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let till = ServerProcess.executable.path
        func adapt(_ text: String) -> String {
            text.replacingOccurrences(of: "swift run till pay", with: "\(till) pay --server http://127.0.0.1:\(server) --sandbox http://127.0.0.1:\(sandbox)")
                .replacingOccurrences(of: "swift run till", with: till)
                .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(server)")
                .replacingOccurrences(of: "127.0.0.1:8081", with: "127.0.0.1:\(sandbox)")
                .replacingOccurrences(of: "--port 8081", with: "--port \(sandbox)")
                .replacingOccurrences(of: "127.0.0.1:9464", with: "127.0.0.1:\(metrics)")
                .replacingOccurrences(of: "127.0.0.1:9465", with: "127.0.0.1:\(console)")
        }
        for name in ["quickstart.json", "quickstart.env"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent("docs/examples/\(name)"), encoding: .utf8)
            try adapt(text).write(to: examples.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }

        var background: [ChildProcess] = []
        defer { for process in background { process.terminate(); _ = process.waitUntilExit() } }
        var foreground: [String] = []
        for block in blocks {
            if block.contains("swift build") { continue }   // this test run built it
            if block.contains("till sandbox") || block.contains("till server") {
                // Its own terminal: the last line is the long-running command.
                var lines = adapt(block).split(separator: "\n").map(String.init)
                lines[lines.count - 1] = "exec " + lines[lines.count - 1]
                let log = folder.appendingPathComponent(block.contains("till sandbox") ? "sandbox.log" : "server.log")
                let script = "cd '\(folder.path)'\n" + lines.joined(separator: "\n")
                background.append(try ChildProcess(URL(fileURLWithPath: "/bin/bash"), arguments: ["-c", script],
                                                   environment: ChildProcess.inheritedEnvironment(), stdout: .file(log), stderr: .file(log)))
                let ready = block.contains("till sandbox") ? "http://127.0.0.1:\(sandbox)/admin/payfort/ledger" : "http://127.0.0.1:\(server)/healthz"
                try await Self.waitUntilAnswering(ready, log: log)
            } else {
                foreground.append(adapt(block))
            }
        }
        let output = folder.appendingPathComponent("terminal-3.log")
        let shell = try ChildProcess(URL(fileURLWithPath: "/bin/bash"), arguments: ["-c", "set -e\ncd '\(folder.path)'\n" + foreground.joined(separator: "\n")],
                                     environment: ChildProcess.inheritedEnvironment(), stdout: .file(output), stderr: .file(output))
        let ended = await Self.wait(for: shell, seconds: 240)
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(ended == .exited(0), "terminal 3 \(ended.map(\.description) ?? "did not finish"):\n\(text.suffix(3_000))")
        let confirmed = text.components(separatedBy: "server   confirmed: paid").count - 1
        #expect(confirmed == 5, "five payments confirmed paid (card with 3-D Secure, wallet, Worldline, iPayNow, ecommpay):\n\(text.suffix(3_000))")
        #expect(text.contains("confirmed: paid (gateway code 14000) through payfort"))
        #expect(text.contains("through citcon"))
        #expect(text.contains("opens the three_d_secure page"), "the card went through 3-D Secure")
        // Section 7: an authorization captured in two parts and refunded in two, through till operate.
        #expect(text.contains("confirmed: authorized"), "the authorization:\n\(text.suffix(3_000))")
        #expect(text.components(separatedBy: #""status" : "succeeded""#).count - 1 == 4, "two captures and two refunds succeeded:\n\(text.suffix(3_000))")
        #expect(text.contains(#""status":"refunded","updatedAt""#), "the payment ends refunded:\n\(text.suffix(3_000))")
        // The payment's own status (its keys are sorted: `status` then `updatedAt`; an attempt's status comes before `submitted`).
        #expect(text.components(separatedBy: #""status":"paid","updatedAt""#).count - 1 == 2, "the backend's two reads say paid:\n\(text.suffix(3_000))")
        // The metrics the page reads at the end: payments, notifications, and the gateways' request times.
        #expect(text.contains(#"till_payments_created_total{merchant="quickstart-shop"}"#), "metrics:\n\(text.suffix(3_000))")
        #expect(text.contains(#"till_notifications_total{gateway="payfort",result="verified"}"#))
        #expect(text.contains(#"till_gateway_request_duration_count{gateway="payfort",outcome="2xx"}"#))
        // Section 8: the console answers its sign-in page; then a browser uses it.
        #expect(text.contains("console: 200"), "the console's sign-in page:\n\(text.suffix(1_000))")
        try await Self.browse(console: console, server: server, folder: folder)
    }

    /// Section 8: the operator console of the same server, in a real headless Chromium (Tests/Browser/console_test.py):
    /// sign in, search, the card payment's timeline, an action confirmed and audited, markup shown as text, a forged
    /// form refused, sign out. Its screenshots go to $TILL_CONSOLE_SCREENSHOTS when set (docs/console/ holds the
    /// committed ones).
    static func browse(console: Int, server: Int, folder: URL) async throws {
        let python = ProcessInfo.processInfo.environment["TILL_BROWSER_PYTHON"] ?? root.appendingPathComponent(".build/browser-venv/bin/python").path
        let chromium = ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium"
        guard FileManager.default.isExecutableFile(atPath: python), FileManager.default.isExecutableFile(atPath: chromium) else {
            let required = ProcessInfo.processInfo.environment["TILL_TEST_REQUIRE_BROWSER"] == "1"
            if required { Issue.record("no browser: \(python) with selenium and \(chromium) are needed (.ci/run installs them)") }
            return
        }
        let env = try String(contentsOf: root.appendingPathComponent("docs/examples/quickstart.env"), encoding: .utf8)
        func exported(_ name: String) throws -> String {
            let line = try #require(env.split(separator: "\n").first { $0.hasPrefix("export \(name)=") })
            return String(line.dropFirst("export \(name)=".count).prefix { $0 != " " })
        }
        let log = folder.appendingPathComponent("browser.log")
        let process = try ChildProcess(URL(fileURLWithPath: python), arguments: [root.appendingPathComponent("Tests/Browser/console_test.py").path],
                                       environment: ChildProcess.inheritedEnvironment([
                                           "CONSOLE_URL": "http://127.0.0.1:\(console)", "CONSOLE_TOKEN": try exported("TILL_CONSOLE_TOKEN"),
                                           "API_URL": "http://127.0.0.1:\(server)", "API_KEY": try exported("TILL_API_KEY"),
                                           "MERCHANT": "quickstart-shop", "CHROMIUM": chromium]),
                                       stdout: .file(log), stderr: .file(log))
        let ended = await wait(for: process, seconds: 180)
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(ended == .exited(0), "the browser test \(ended.map(\.description) ?? "did not finish"):\n\(text.suffix(4_000))")
        #expect(text.contains(#""checks_failed": 0"#), "\(text.suffix(4_000))")
    }

    static func waitUntilAnswering(_ url: String, log: URL) async throws {
        for _ in 0..<300 {
            if let (_, response) = try? await URLSession.shared.data(from: URL(string: url)!), (response as? HTTPURLResponse)?.statusCode == 200 {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw QuickstartError(description: "\(url) never answered; its log:\n\(text.suffix(2_000))")
    }

    /// The process's end, or `nil` (and the process killed) after `seconds`.
    static func wait(for process: ChildProcess, seconds: Int) async -> ChildProcess.Termination? {
        for _ in 0..<(seconds * 10) {
            if let ended = process.termination { return ended }
            try? await Task.sleep(for: .milliseconds(100))
        }
        process.send(SIGKILL)
        _ = process.waitUntilExit()
        return nil
    }
}

struct QuickstartError: Error, CustomStringConvertible {
    var description: String
}
