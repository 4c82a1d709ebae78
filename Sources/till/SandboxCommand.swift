import ArgumentParser
import Foundation
import Till
import TillSandbox

/// The sandbox's built-in test merchant (sandbox values, not secrets).
enum SandboxDefaults {
    static let payFort = PayFortMerchant(accessCode: "TillSandboxAccess1", merchantIdentifier: "TillSandbox1",
                                         requestPhrase: "sandbox-request-phrase", responsePhrase: "sandbox-response-phrase")
    static let citcon = CitconEmulator.Merchant(apiKey: "till-sandbox-citcon-key", apiSecret: "till-sandbox-citcon-secret")
}

struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Run the local gateway sandbox on loopback and print each gateway's base URL.",
        discussion: "Test cards are listed in docs/sandbox.md. Stop it with Ctrl-C.")

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 0

    @Option(name: .customLong("notification-url"), help: "Where PayFort transaction feedback is POSTed (e.g. http://127.0.0.1:8080/v1/notifications/payfort).")
    var notificationURL: String?

    @Option(name: .customLong("retry-interval-ms"), help: "Milliseconds between notification retries (PayFort's and Citcon's: 10000).")
    var retryIntervalMillis = 10_000

    func run() async throws {
        var merchant = SandboxDefaults.payFort
        if let notificationURL {
            guard let url = URL(string: notificationURL), url.scheme == "http" || url.scheme == "https" else {
                throw ValidationError("--notification-url must be an http(s) URL")
            }
            merchant.notificationURL = url
        }
        let emulator = PayFortEmulator(merchants: [merchant], notificationRetry: (10, .milliseconds(retryIntervalMillis)))
        let citcon = CitconEmulator(merchants: [SandboxDefaults.citcon], ipnRetryInterval: .milliseconds(retryIntervalMillis))
        let sandbox = try await Sandbox.start(payFort: emulator, citcon: citcon, port: port)
        // Unbuffered, so a supervising process sees the URLs at once.
        FileHandle.standardOutput.write(Data("""
            till sandbox on \(sandbox.baseURL)
              payfort: \(sandbox.payFortBaseURL)  (access_code \(merchant.accessCode), merchant_identifier \(merchant.merchantIdentifier),
                       request phrase "\(merchant.requestPhrase)", response phrase "\(merchant.responsePhrase)", SHA-256)
              citcon:  \(sandbox.citconBaseURL)  (api key "\(SandboxDefaults.citcon.apiKey)", api secret "\(SandboxDefaults.citcon.apiSecret)";
                       IPNs go to each charge's urls.ipn)
              admin:   \(sandbox.baseURL.appendingPathComponent("admin/payfort/ledger")), \(sandbox.baseURL.appendingPathComponent("admin/citcon/ledger"))

            """.utf8))
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3_600)) }
    }
}
