import ArgumentParser

@main
struct TillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "till",
        abstract: "Till: one checkout API over many payment gateways.",
        subcommands: [CurrenciesCommand.self, DemoCommand.self]
    )
}
