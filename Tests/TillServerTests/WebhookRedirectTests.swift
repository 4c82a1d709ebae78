import Foundation
import Testing
import Till
import TillChildProcess
import TillService
@testable import TillServer

/// A webhook URL that answers a redirect has not taken the event: the delivery service's own transport must not
/// follow it (URLSession would turn a `302` into a `GET` of the other page and report that page's `200`).
@Suite("Events: a redirecting webhook is a failed try, never followed", .serialized)
struct WebhookRedirectTests {
    /// A receiver on loopback: `POST` answers `status` with `Location: /login`; `GET` answers 200 with a page. Every
    /// request is written to its standard output as `METHOD path`.
    static let receiver = #"""
        import http.server, sys
        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def do_POST(self):
                self.rfile.read(int(self.headers.get('Content-Length', 0)))
                print('POST', self.path, flush=True)
                self.send_response(int(sys.argv[1])); self.send_header('Location', '/login'); self.send_header('Content-Length', '0'); self.end_headers()
            def do_GET(self):
                print('GET', self.path, flush=True)
                page = b'<html>sign in</html>'
                self.send_response(200); self.send_header('Content-Length', str(len(page))); self.end_headers(); self.wfile.write(page)
        server = http.server.HTTPServer(('127.0.0.1', 0), H)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    @Test("a 302 or a 307 from the webhook leaves the event pending with the redirect recorded; nothing else is requested",
          arguments: [(StoreKind.sqlite, 302), (.memory, 302), (.sqlite, 307), (.memory, 301)])
    func redirectIsAFailedTry(kind: StoreKind, status: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-redirect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("receiver.py"), log = folder.appendingPathComponent("requests.log")
        try Data(Self.receiver.utf8).write(to: script)
        let python = try ChildProcess(URL(fileURLWithPath: "/usr/bin/python3"), arguments: [script.path, "\(status)"],
                                      environment: ChildProcess.inheritedEnvironment(), stdout: .file(log))
        defer { python.terminate(); _ = python.waitUntilExit() }
        var port: Int?
        for _ in 0..<200 where port == nil {
            port = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").first.flatMap { Int($0) }
            if port == nil { try await Task.sleep(for: .milliseconds(25)) }
        }
        let url = URL(string: "http://127.0.0.1:\(try #require(port))/hook")!

        // The store holds this merchant's events alone (its own SQLite file, or memory): the pass delivers only them.
        let store = try await kind.open()
        defer { Task { try? await store.close() } }
        let merchant = "m-\(UUID().uuidString.prefix(8))"
        let usd = Money(minorUnits: 1000, currency: Currency.lookup("USD")!)
        _ = try await store.create(PaymentIntent(merchantReference: "o-redirect", amount: usd, method: .card), merchant: merchant,
                                   id: "pay_\(UUID().uuidString.prefix(12))", idempotencyKey: nil, requestHash: "h")
        let deliverer = EventDeliverer(store: store, settings: EventDeliverySettings(timeoutSeconds: 5),
                                       endpoints: { _ in [ResolvedWebhook(url: url, secrets: ["a-webhook-secret-0123456789"])] })
        let pass = try await deliverer.runOnce(now: Date().addingTimeInterval(1))
        #expect(pass.claimed == 1 && pass.delivered == 0 && pass.retried == 1, "\(pass)")
        let event = try #require(try await store.events(merchant: merchant, query: EventQuery()).first)
        #expect(event.state == .pending && event.deliveredAt == nil)
        let tries = try await store.deliveryAttempts(event: event.id)
        #expect(tries.map(\.statusCode) == [status] && tries.map(\.error) == ["status \(status)"], "\(tries)")
        let requests = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst()
        #expect(requests == ["POST /hook"], "the receiver saw \(Array(requests))")
    }
}
