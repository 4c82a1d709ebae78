import ArgumentParser
import Foundation
import Till
import TillOrchestration
import TillServer
import TillService

struct RouteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "route",
        abstract: "Explain how a payment would be routed: the candidates in order, and why.")

    @Option(help: "The configuration file (JSON).")
    var config: String

    @Option(help: "The payment: a PaymentIntent as JSON, inline or @FILE.")
    var payment: String

    @Option(help: "Which merchant of the file (default: the first).")
    var merchant: String?

    @Option(help: "Seed for the weighted draw and the learning rules' exploration (the same seed gives the same order; the server seeds each payment's from its id).")
    var seed: UInt64 = 1

    @Option(help: "The server's store (sqlite:PATH or postgres://…): rules that learn (successRate) are scored from its recent outcomes, as the server scores them. Without it they keep their listed order.")
    var storage: String?

    func run() async throws {
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
        var scores: SuccessRateScores?
        if let storage, merchantConfig.routing.rules.contains(where: { $0.successRate != nil }) {
            if storage.hasPrefix("sqlite:"), !FileManager.default.fileExists(atPath: String(storage.dropFirst("sqlite:".count))) {
                printError("--storage \(withoutPassword(storage)): no such file (the server's SQLite store)")
                throw ExitCode.failure
            }
            let store = try openStore(storage)
            let learning = SuccessRateScores(rules: merchantConfig.routing.rules)
            let now = Date()
            let window = learning.rules.values.map(\.window).max() ?? .zero
            let rows: [RoutingOutcomeCount]
            do {
                rows = try await store.routingOutcomes(merchant: merchantConfig.id, since: now.addingTimeInterval(-Double(window.components.seconds)))
            } catch {
                try? await store.close()
                printError("--storage \(withoutPassword(storage)): cannot read its attempts (is it a store `till server` has run on?): "
                           + (String(describing: error).split(separator: "\n").first.map(String.init) ?? ""))
                throw ExitCode.failure
            }
            learning.replace(with: RoutingScoresRefresher.counts(rows, now: now))
            try await store.close()
            scores = learning
        }
        var generator = SeededGenerator(seed: seed)
        let decision = router.route(intent, scores: scores, using: &generator, explain: true)

        print("payment: \(intent.amount) by \(intent.method)\(intent.country.map { " from \($0)" } ?? "")\(intent.cardIIN.map { ", IIN \($0)" } ?? "")")
        print("merchant: \(merchantConfig.id)")
        for note in decision.notes {
            if case .ruleMatched = note { print("  \(note)") }
            if case .ruleNotMatched = note { print("  \(note)") }
        }
        if decision.matchedRule == nil { print("  no rule matched; the default fallback list applies") }
        if let number = decision.matchedRule, merchantConfig.routing.rules[number - 1].successRate != nil, scores == nil {
            print("  the rule learns (successRate); without --storage its gateways keep their listed order")
        }
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
