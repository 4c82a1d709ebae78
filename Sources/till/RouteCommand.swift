import ArgumentParser
import Foundation
import Till
import TillOrchestration
import TillServer

struct RouteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "route",
        abstract: "Explain how a payment would be routed: the candidates in order, and why.")

    @Option(help: "The configuration file (JSON).")
    var config: String

    @Option(help: "The payment: a PaymentIntent as JSON, inline or @FILE.")
    var payment: String

    @Option(help: "Which merchant of the file (default: the first).")
    var merchant: String?

    @Option(help: "Seed for the weighted draw (the same seed gives the same order).")
    var seed: UInt64 = 1

    func run() throws {
        let configuration = try loadConfiguration(config)
        guard let merchantConfig = merchant.map({ configuration.merchant($0) }) ?? configuration.merchants.first else {
            printError("no merchant \"\(merchant ?? "")\" in \(config)")
            throw ExitCode.failure
        }
        let json: Data
        if payment.hasPrefix("@") {
            guard let data = FileManager.default.contents(atPath: String(payment.dropFirst())) else {
                printError("cannot read \(payment.dropFirst())")
                throw ExitCode.failure
            }
            json = data
        } else {
            json = Data(payment.utf8)
        }
        let intent: PaymentIntent
        do {
            intent = try JSONDecoder().decode(PaymentIntent.self, from: json)
        } catch let error as DecodingError {
            let issue = ConfigurationLoader.issue(from: error)
            printError("payment: \(issue.field == "$" ? "" : issue.field + ": ")\(issue.message)")
            throw ExitCode.failure
        }
        let router = try GatewayRouter(merchant: merchantConfig, modules: Gateways.capabilities)
        var generator = SeededGenerator(seed: seed)
        let decision = router.route(intent, using: &generator, explain: true)

        print("payment: \(intent.amount) by \(intent.method)\(intent.country.map { " from \($0)" } ?? "")\(intent.cardIIN.map { ", IIN \($0)" } ?? "")")
        print("merchant: \(merchantConfig.id)")
        for note in decision.notes {
            if case .ruleMatched = note { print("  \(note)") }
            if case .ruleNotMatched = note { print("  \(note)") }
        }
        if decision.matchedRule == nil { print("  no rule matched; the default fallback list applies") }
        print("candidates:")
        if decision.candidates.isEmpty { print("  none — no configured gateway can take this payment") }
        for (position, gateway) in decision.candidates.enumerated() {
            let why = decision.notes(about: gateway).map(\.description).map { $0.replacingOccurrences(of: "\(gateway): ", with: "") }
            print("  \(position + 1). \(gateway) — \(why.joined(separator: "; "))")
        }
        let skipped = decision.notes.filter { if case .skipped = $0 { return true } else { return false } }
        if !skipped.isEmpty {
            print("not eligible:")
            for note in skipped { print("  \(note)") }
        }
    }
}
