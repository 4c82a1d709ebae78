import ArgumentParser
import Foundation
import Till
import TillOrchestration
import TillService
import TillServer

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Work with merchant configuration files.",
        subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a configuration file and report every problem with its path, the gateway modules' own checks included.")

        @Argument(help: "The configuration file (JSON).")
        var file: String

        func run() throws {
            switch ConfigurationLoader.load(contentsOf: URL(fileURLWithPath: file), modules: Gateways.capabilities) {
            case .success(let configuration):
                // The gateway modules check their own settings and credential names, as the server will at start.
                let issues = ServerState.moduleIssues(of: configuration, plugins: Gateways.plugins)
                guard issues.isEmpty else {
                    for issue in issues { print("\(file): \(issue)") }
                    print("\(issues.count) problem(s)")
                    throw ExitCode.failure
                }
                let gateways = configuration.merchants.map(\.gateways.count).reduce(0, +)
                let rules = configuration.merchants.map(\.routing.rules.count).reduce(0, +)
                print("\(file): OK — \(configuration.merchants.count) merchant(s), \(gateways) gateway(s), \(rules) rule(s)")
            case .failure(let error):
                for issue in error.issues { print("\(file): \(issue)") }
                print("\(error.issues.count) problem(s)")
                throw ExitCode.failure
            }
        }
    }
}

/// Loads a configuration or exits, printing every problem.
func loadConfiguration(_ file: String) throws -> TillConfiguration {
    switch ConfigurationLoader.load(contentsOf: URL(fileURLWithPath: file), modules: Gateways.capabilities) {
    case .success(let configuration): return configuration
    case .failure(let error):
        for issue in error.issues { printError("\(file): \(issue)") }
        throw ExitCode.failure
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Prints `value` as one line of JSON with sorted keys (the format of every machine-readable line).
func printJSONLine(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
