import Foundation
import FuzzSupport
import Till

// Money and currency parsing in Till: Money(decimal:currency:) and Money("<decimal> <CODE>") from text,
// Currency(code:) / Currency.lookup / Currency.withNumericCode (ISO 4217), CountryCode (ISO 3166), and Money's
// JSON form ({"value": minor units, "currency": code}) through JSONDecoder.
//
// Properties:
// - an amount that parses formats (decimalString, description) to text that parses to the same amount;
// - Money's JSON encoding decodes to the same amount;
// - Currency(code:) and Currency.lookup agree, and a currency found by code is found by its numeric code.

/// A currency of each number of minor units (0, 2, 3, 4).
private let scales: [Currency] = ["JPY", "USD", "KWD", "CLF"].compactMap { Currency.lookup($0) }

private func checkRoundTrip(_ money: Money) {
    do {
        let again = try Money(decimal: money.decimalString, currency: money.currency)
        require(again == money, "\(money.minorUnits) \(money.currency.code) formats as \(money.decimalString), which parses to \(again.minorUnits)")
        let described = try Money(money.description)
        require(described == money, "\(money.description) parses to \(described.minorUnits) \(described.currency.code)")
    } catch {
        require(false, "\(money.minorUnits) \(money.currency.code) formats as \"\(money.description)\", which does not parse: \(error)")
    }
    _ = try? money.adding(money)
    _ = money.isPositive
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let text = lossyText(input.bytes)

    // Text forms.
    if let money = try? Money(text) { checkRoundTrip(money) }
    for currency in scales {
        if let money = try? Money(decimal: text, currency: currency, field: "amount") { checkRoundTrip(money) }
    }
    let code = text.trimmingCharacters(in: .newlines)
    let found = try? Currency(code: code)
    let looked = Currency.lookup(code)
    require(found == looked, "Currency(code:) and Currency.lookup disagree on \"\(code)\"")
    if let found {
        require(Currency.withNumericCode(found.numeric) == found, "\(found.code) is not found by its numeric code \(found.numeric)")
        _ = found.minorUnitScale
    }
    if let numeric = Int(code) { _ = Currency.withNumericCode(numeric) }
    _ = try? CountryCode(code)

    // JSON forms, as a body field or a configuration value is read.
    let decoder = JSONDecoder()
    if let money = try? decoder.decode(Money.self, from: input.data) {
        do {
            let encoded = try JSONEncoder().encode(money)
            let again = try decoder.decode(Money.self, from: encoded)
            require(again == money && again.minorUnits == money.minorUnits, "Money's JSON does not decode to the same amount")
        } catch {
            require(false, "Money's own JSON does not decode: \(error)")
        }
    }
    _ = try? decoder.decode(Currency.self, from: input.data)
    _ = try? decoder.decode(CountryCode.self, from: input.data)
    _ = try? decoder.decode([Money].self, from: input.data)
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
