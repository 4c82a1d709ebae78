import ArgumentParser
import Till

@main
struct TillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "till",
        abstract: "Till: one checkout API over many payment gateways.",
        version: "till \(TillVersion.current)",
        subcommands: [CurrenciesCommand.self, DemoCommand.self, ConfigCommand.self, RouteCommand.self,
                      BenchCommand.self, ChaosCommand.self, ServerCommand.self, SignCommand.self, VerifyCommand.self,
                      SandboxCommand.self, PayCommand.self, OperateCommand.self, EventsCommand.self, ReconcileCommand.self, QuarantineCommand.self,
                      SimulateCommand.self]
    )
}
