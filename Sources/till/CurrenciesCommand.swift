import ArgumentParser
import Foundation
import Till

struct CurrenciesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "currencies",
        abstract: "List every ISO 4217 currency Till can hold money in.")

    @Flag(help: "One JSON object per line: {\"code\", \"numeric\", \"minorUnits\", \"name\"}.")
    var json = false

    struct Row: Encodable {
        let code: String
        let numeric: Int
        let minorUnits: Int
        let name: String
    }

    func run() throws {
        for currency in Currency.allISO {
            if json {
                try printJSONLine(Row(code: currency.code, numeric: currency.numeric, minorUnits: currency.minorUnits, name: currency.name))
            } else {
                let numeric = String(currency.numeric)
                print("\(currency.code)  \(String(repeating: "0", count: 3 - numeric.count))\(numeric)  \(currency.minorUnits)  \(currency.name)")
            }
        }
    }
}
