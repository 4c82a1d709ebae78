import ArgumentParser
import Foundation
import Till
import TillSandbox

struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Run the local gateway sandbox on loopback and print each gateway's base URL and test account.",
        discussion: "Test cards are listed in docs/sandbox.md. Stop it with Ctrl-C.")

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 0

    @Option(name: .customLong("notification-url"), help: "Where gateways with a fixed notification URL post: PayFort's transaction feedback, e.g. http://127.0.0.1:8080/v1/notifications/payfort; Worldline's webhooks and ecommpay's callbacks go to the same directory, ending in their gateway id (/worldline, /ecommpay unless --gateway-id says otherwise). Citcon and iPayNow post to the URL each payment names.")
    var notificationURL: String?

    @Option(name: .customLong("gateway-id"), help: "MODULE=ID: the gateway id your configuration gives a module (e.g. worldline=wl-eu), so its notifications reach the server's /v1/notifications/ID. Repeatable.")
    var gatewayIDs: [String] = []

    @Option(name: .customLong("retry-interval-ms"), help: "Milliseconds between notification retries (the gateways': 10000).")
    var retryIntervalMillis = 10_000

    func run() async throws {
        var notification: URL?
        if let notificationURL {
            guard let url = URL(string: notificationURL), url.scheme == "http" || url.scheme == "https" else {
                throw ValidationError("--notification-url must be an http(s) URL")
            }
            notification = url
        }
        var ids: [String: String] = [:]
        for pair in gatewayIDs {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            // Citcon and iPayNow post to the URL each payment names: an id for them would do nothing.
            let modules = ["payfort", "worldline", "ecommpay"]
            guard parts.count == 2, modules.contains(parts[0]), !parts[1].isEmpty,
                  parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
                throw ValidationError("--gateway-id expects MODULE=ID with MODULE one of \(modules.joined(separator: ", ")) and ID of A-Z a-z 0-9 - _ . (got \(pair))")
            }
            ids[parts[0]] = parts[1]
        }
        let emulators = try Gateways.sandboxEmulators(retryInterval: .milliseconds(retryIntervalMillis), notificationURL: notification,
                                                      gatewayIDs: ids)
        let sandbox = try await Sandbox.start(emulators: emulators, port: port)
        var lines = ["till sandbox on \(sandbox.baseURL)"]
        for emulator in emulators {
            lines.append("  \(emulator.name): \(sandbox.baseURL(of: emulator))")
            for account in await emulator.sandboxAccounts(in: sandbox.baseURL) { lines.append("    \(account.summary)") }
            lines.append("    admin: \(sandbox.baseURL.appendingPathComponent("admin/\(emulator.name)"))")
        }
        // Unbuffered, so a supervising process sees the URLs at once.
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3_600)) }
    }
}
