import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillChildProcess
import TillService
import TillWebhooks
@testable import TillServer

/// A merchant's receiver written from docs/events.md alone: the page's Python `verify`, word for word, inside a
/// small standard-library HTTP server that answers 200 to a delivery that verifies and 400 to one that does not. The
/// production ``EventDeliverer`` delivers a payment's whole life to it; then forged, replayed and wrongly signed
/// deliveries are refused. Without `python3` on `PATH` this test fails (CI has it).
@Suite("Events: a receiver written from docs/events.md")
struct EventPythonReceiverTests {
    static let secret = "whsec_python_receiver_5WbX5kEWLlfz"

    @Test("the page's Python verifier accepts every delivery of a payment's life; a changed body, a replay after 301 s and a wrong secret are refused")
    func receiverFromTheDocs() async throws {
        let receiver = try await PythonReceiver.start(secrets: [Self.secret])
        defer { receiver.stop() }
        let rig = try await Rig(.sqlite)
        let payment = try await rig.payment()
        let webhook = ResolvedWebhook(url: receiver.url, secrets: [Self.secret])
        let deliverer = EventDeliverer(store: rig.store, settings: Rig.settings(), endpoints: { [merchant = rig.merchant] in
            $0 == merchant ? [webhook] : []
        }, jitter: { 1 }, merchant: rig.merchant)
        try await rig.drain(deliverer)

        // Every event of the payment was delivered once, and the page's verify accepted each.
        let events = try await rig.events(payment: payment)
        #expect(events.count == 10 && events.allSatisfy { $0.state == .delivered && $0.attemptCount == 1 })
        let verdicts = try receiver.verdicts()
        #expect(verdicts.map(\.eventId) == events.map(\.id))
        #expect(verdicts.allSatisfy { $0.accepted }, "\(verdicts.compactMap(\.error))")
        #expect(verdicts.map(\.body) == events.map(\.body))

        // A captured delivery, posted again: unchanged (within the tolerance) it verifies; changed, it does not.
        let captured = try #require(verdicts.first)
        let forgedBody = Data(String(decoding: captured.body, as: UTF8.self).replacingOccurrences(of: payment, with: "pay_forged000000").utf8)
        #expect(forgedBody != captured.body)
        #expect(try await receiver.post(header: captured.header, body: forgedBody) == 400)
        #expect(try await receiver.post(header: captured.header, body: captured.body) == 200)
        // Signed with a secret the receiver does not know.
        let now = Int64(Date().timeIntervalSince1970)
        let wrong = WebhookSignature.header(timestamp: now, body: captured.body, secrets: ["whsec_not_the_merchants_secret"])
        #expect(try await receiver.post(header: wrong, body: captured.body) == 400)
        let refusals = try receiver.verdicts().dropFirst(verdicts.count)
        #expect(refusals.map(\.accepted) == [false, true, false])
        #expect(refusals.first?.error?.contains("no v1 signature matches") == true, "\(refusals.map(\.error))")
        #expect(refusals.last?.error?.contains("no v1 signature matches") == true, "\(refusals.map(\.error))")

        // The same delivery replayed later: the page's verify, with the receiver's clock at t + 301, refuses it (at
        // t + 300 it still accepts).
        let t = try #require(captured.timestamp)
        let replays = try await PythonReceiver.verify(folder: receiver.folder, checks: [
            .init(header: captured.header, body: captured.body, secrets: [Self.secret], now: t + 300),
            .init(header: captured.header, body: captured.body, secrets: [Self.secret], now: t + 301),
        ])
        #expect(replays.map(\.accepted) == [true, false])
        #expect(replays.last?.error?.contains("beyond the tolerance") == true, "\(replays.map(\.error))")
        try await rig.close()
    }
}

/// docs/events.md's Python block as `events_verifier.py`, beside a receiver script that imports it, run with `python3`.
final class PythonReceiver: Sendable {
    /// One line of the receiver's log: what it concluded about one request.
    struct Verdict: Decodable {
        var accepted: Bool
        var timestamp: Int64?
        var error: String?
        var eventId: String?
        var header: String
        var bodyBase64: String
        var body: Data { Data(base64Encoded: bodyBase64) ?? Data() }
    }

    /// A check for `verify` with the receiver's clock given.
    struct Check: Encodable {
        var header: String
        var body: Data
        var secrets: [String]
        var now: Int64
    }

    struct Answer: Decodable {
        var accepted: Bool
        var error: String?
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The receiver: written from the page's words (the header's name, the raw body, 2xx for a delivery accepted),
    /// nothing of Till's code.
    static let receiverScript = #"""
        import base64
        import json
        import os
        import sys
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from events_verifier import verify

        SECRETS = json.loads(sys.argv[1])
        LOG = sys.argv[2]
        PORT_FILE = sys.argv[3]


        class Receiver(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                header = self.headers.get("Till-Signature", "")
                try:
                    verdict = {"accepted": True, "timestamp": verify(header, body, SECRETS)}
                except ValueError as error:
                    verdict = {"accepted": False, "error": str(error)}
                verdict["eventId"] = self.headers.get("Till-Event-Id")
                verdict["header"] = header
                verdict["bodyBase64"] = base64.b64encode(body).decode("ascii")
                with open(LOG, "a") as log:
                    log.write(json.dumps(verdict) + "\n")
                answer = b"ok" if verdict["accepted"] else b"refused"
                self.send_response(200 if verdict["accepted"] else 400)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format, *args):
                pass


        server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        with open(PORT_FILE + ".tmp", "w") as port:
            port.write(str(server.server_address[1]))
        os.rename(PORT_FILE + ".tmp", PORT_FILE)
        server.serve_forever()
        """#

    /// Runs the page's `verify` on checks given on standard input, each with its own `now`.
    static let checkScript = #"""
        import base64
        import json
        import sys

        from events_verifier import verify

        answers = []
        for check in json.load(sys.stdin):
            try:
                verify(check["header"], base64.b64decode(check["body"]), check["secrets"], now=check["now"])
                answers.append({"accepted": True})
            except ValueError as error:
                answers.append({"accepted": False, "error": str(error)})
        json.dump(answers, sys.stdout)
        """#

    let folder: URL
    let url: URL
    let child: ChildProcess
    var log: URL { folder.appendingPathComponent("verdicts.jsonl") }

    private init(folder: URL, url: URL, child: ChildProcess) {
        self.folder = folder
        self.url = url
        self.child = child
    }

    /// `python3` on `PATH`.
    static func python() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        guard let found = path.split(separator: ":").lazy.map({ URL(fileURLWithPath: String($0)).appendingPathComponent("python3") })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw Failure(description: "python3 not found on PATH: the receiver written from docs/events.md cannot run (CI has python3)")
        }
        return found
    }

    /// The page's Python block (under `### Python (standard library only)`).
    static func verifierFromThePage() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/events.md"), encoding: .utf8)
        var lines = page.split(separator: "\n", omittingEmptySubsequences: false)[...]
        guard let heading = lines.firstIndex(where: { $0 == "### Python (standard library only)" }) else {
            throw Failure(description: "docs/events.md has no ### Python (standard library only) section")
        }
        lines = lines[(heading + 1)...]
        guard let open = lines.firstIndex(where: { $0 == "```python" }) else { throw Failure(description: "no python block in its section") }
        lines = lines[(open + 1)...]
        guard let close = lines.firstIndex(where: { $0 == "```" }) else { throw Failure(description: "the python block is not closed") }
        return lines[..<close].joined(separator: "\n") + "\n"
    }

    /// Writes the page's block and the scripts to a fresh folder, starts the receiver and waits until it listens.
    static func start(secrets: [String], timeout: Duration = .seconds(30)) async throws -> PythonReceiver {
        let python = try python()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-python-receiver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try verifierFromThePage().write(to: folder.appendingPathComponent("events_verifier.py"), atomically: true, encoding: .utf8)
        try receiverScript.write(to: folder.appendingPathComponent("receiver.py"), atomically: true, encoding: .utf8)
        try checkScript.write(to: folder.appendingPathComponent("check.py"), atomically: true, encoding: .utf8)
        let portFile = folder.appendingPathComponent("port")
        let errors = folder.appendingPathComponent("errors.txt")
        let secretsJSON = String(decoding: try JSONEncoder().encode(secrets), as: UTF8.self)
        let child = try ChildProcess(python, arguments: [folder.appendingPathComponent("receiver.py").path, secretsJSON,
                                                         folder.appendingPathComponent("verdicts.jsonl").path, portFile.path],
                                     environment: ChildProcess.inheritedEnvironment(["PYTHONDONTWRITEBYTECODE": "1"]),
                                     stderr: .file(errors))
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let port = Int(text), let url = URL(string: "http://127.0.0.1:\(port)/till/events") {
                return PythonReceiver(folder: folder, url: url, child: child)
            }
            if !child.isRunning || clock.now >= deadline {
                child.terminate()
                let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
                throw Failure(description: "the Python receiver did not start (\(child.termination.map { "\($0)" } ?? "no port after \(timeout)")):\n\(stderr)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Every verdict so far, oldest first.
    func verdicts() throws -> [Verdict] {
        guard let data = try? Data(contentsOf: log) else { return [] }
        return try data.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(Verdict.self, from: Data($0)) }
    }

    /// Posts `body` with a `Till-Signature` header, as a forger would; the receiver's status.
    func post(header: String, body: Data) async throws -> Int {
        let request = TransportRequest(method: .post, url: url, headers: ["Content-Type": "application/json", "Till-Signature": header],
                                       body: body, timeout: .seconds(30))
        return try await URLSessionTransport().send(request).statusCode
    }

    /// The page's `verify` on `checks`, in a second Python process.
    static func verify(folder: URL, checks: [Check]) async throws -> [Answer] {
        let files = ["checks.json", "answers.json", "check-errors.txt"].map { folder.appendingPathComponent($0) }
        let encoder = JSONEncoder()
        encoder.dataEncodingStrategy = .base64
        try encoder.encode(checks).write(to: files[0])
        let child = try ChildProcess(try python(), arguments: [folder.appendingPathComponent("check.py").path],
                                     environment: ChildProcess.inheritedEnvironment(["PYTHONDONTWRITEBYTECODE": "1"]),
                                     stdin: .file(files[0]), stdout: .file(files[1]), stderr: .file(files[2]))
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            child.terminate()
        }
        let ended = await child.exit()
        watchdog.cancel()
        guard ended == .exited(0) else {
            throw Failure(description: "python3 check.py \(ended):\n\((try? String(contentsOf: files[2], encoding: .utf8)) ?? "")")
        }
        return try JSONDecoder().decode([Answer].self, from: Data(contentsOf: files[1]))
    }

    /// Ends the receiver and removes its folder.
    func stop() {
        child.terminate()
        _ = child.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }
}
