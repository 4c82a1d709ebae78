import Foundation
import Testing
@testable import Till

@Suite("Money and currencies")
struct MoneyTests {
    static let usd = Currency.lookup("USD")!

    @Test("every ISO 4217 currency round-trips through format and parse", arguments: Currency.allISO)
    func roundTrip(currency: Currency) throws {
        for minor: Int64 in [0, 1, 7, 10, 99, 100, 1050, 123_456_789, -5, -100_001, Int64.max, Int64.min + 1] {
            let money = Money(minorUnits: minor, currency: currency)
            let parsed = try Money(decimal: money.decimalString, currency: currency)
            #expect(parsed == money, "\(currency.code) \(minor) → \(money.decimalString)")
            #expect(try Money(money.description) == money)
        }
        // A string with exactly the currency's number of fraction digits parses to the expected minor units.
        let text = currency.minorUnits == 0 ? "42" : "42." + String(repeating: "5", count: currency.minorUnits)
        let expected = Int64(text.replacingOccurrences(of: ".", with: ""))!
        #expect(try Money(decimal: text, currency: currency).minorUnits == expected)
    }

    @Test("exact parsing", arguments: [
        ("10.5", "USD", Int64(1050)), ("10", "USD", 1000), ("0.01", "USD", 1), ("00.10", "USD", 10),
        ("-0.05", "USD", -5), ("1000", "JPY", 1000), ("1.005", "KWD", 1005), ("1.5", "BHD", 1500),
        ("0.0001", "CLF", 1), ("92233720368547758.07", "USD", Int64.max),
    ])
    func parses(text: String, code: String, minor: Int64) throws {
        #expect(try Money(decimal: text, currency: Currency(code: code)).minorUnits == minor)
    }

    @Test("bad amounts are errors naming the field, never roundings", arguments: [
        ("10.005", "USD"), ("1,000", "USD"), ("", "USD"), ("-", "USD"), (".5", "USD"), ("5.", "USD"),
        ("1e3", "USD"), (" 1", "USD"), ("1 ", "USD"), ("+1", "USD"), ("1.2.3", "USD"), ("１０", "USD"),
        ("92233720368547758.08", "USD"), ("99999999999999999999", "JPY"), ("10.5", "JPY"), ("1.0001", "KWD"),
        ("1.000", "USD"), ("--1", "USD"), ("0x10", "USD"), ("NaN", "USD"), ("١٠", "USD"),
    ])
    func rejects(text: String, code: String) throws {
        let error = #expect(throws: CheckoutError.self) {
            try Money(decimal: text, currency: Currency(code: code), field: "order.total")
        }
        #expect(error?.code == .invalidAmount)
        #expect(error?.category == .invalidInput)
        #expect(error?.field == "order.total")
    }

    @Test("formatting uses exactly the currency's minor units")
    func formats() throws {
        #expect(Money(minorUnits: 1050, currency: try Currency(code: "USD")).decimalString == "10.50")
        #expect(Money(minorUnits: 5, currency: try Currency(code: "USD")).decimalString == "0.05")
        #expect(Money(minorUnits: -5, currency: try Currency(code: "USD")).decimalString == "-0.05")
        #expect(Money(minorUnits: 1000, currency: try Currency(code: "JPY")).decimalString == "1000")
        #expect(Money(minorUnits: 1, currency: try Currency(code: "KWD")).decimalString == "0.001")
        #expect(Money(minorUnits: Int64.min, currency: try Currency(code: "USD")).decimalString == "-92233720368547758.08")
        #expect(Money(minorUnits: 1050, currency: try Currency(code: "USD")).description == "10.50 USD")
    }

    @Test("\"10.50 USD\" form")
    func currencyForm() throws {
        #expect(try Money("10.50 USD") == Money(minorUnits: 1050, currency: Self.usd))
        #expect(throws: CheckoutError.self) { try Money("10.005 USD") }
        #expect(throws: CheckoutError.self) { try Money("10.50USD") }
        #expect(throws: CheckoutError.self) { try Money("10.50  USD") }
        let unknown = #expect(throws: CheckoutError.self) { try Money("10 USX") }
        #expect(unknown?.code == .invalidCurrency)
    }

    @Test("ISO 4217 minor units", arguments: [
        ("JPY", 0), ("KRW", 0), ("CLP", 0), ("ISK", 0), ("VND", 0), ("XOF", 0), ("USD", 2), ("EUR", 2), ("CNY", 2),
        ("SAR", 2), ("AED", 2), ("JOD", 3), ("KWD", 3), ("BHD", 3), ("OMR", 3), ("TND", 3), ("LYD", 3), ("IQD", 3),
        ("CLF", 4), ("UYW", 4),
    ])
    func minorUnits(code: String, units: Int) throws {
        #expect(try Currency(code: code).minorUnits == units)
    }

    @Test("the table is complete and consistent")
    func table() {
        #expect(Currency.allISO.count >= 160)
        #expect(Set(Currency.allISO.map(\.code)).count == Currency.allISO.count)
        #expect(Set(Currency.allISO.map(\.numeric)).count == Currency.allISO.count)
        for currency in Currency.allISO {
            #expect(currency.code.count == 3 && currency.code.allSatisfy { $0.isASCII && $0.isUppercase })
            #expect((0...4).contains(currency.minorUnits))
            #expect((1...999).contains(currency.numeric))
        }
        #expect(Currency.withNumericCode(840)?.code == "USD")
        #expect(Currency.withNumericCode(414)?.code == "KWD")
    }

    @Test("unknown, lower-case and unit-less currencies are typed errors", arguments: ["USX", "usd", "US", "USDD", "", "XAU", "XXX", "HRK"])
    func badCurrency(code: String) {
        let error = #expect(throws: CheckoutError.self) { try Currency(code: code, field: "merchants[0].currency") }
        #expect(error?.code == .invalidCurrency)
        #expect(error?.field == "merchants[0].currency")
    }

    @Test("JSON: money is {value, currency}; an unknown currency fails decoding with its path")
    func codable() throws {
        let money = Money(minorUnits: 1050, currency: Self.usd)
        let data = try JSONEncoder().encode(money)
        #expect(try JSONDecoder().decode(Money.self, from: data) == money)
        let bad = Data(#"{"amount":{"value":1,"currency":"USX"}}"#.utf8)
        struct Wrapper: Decodable { let amount: Money }
        do {
            _ = try JSONDecoder().decode(Wrapper.self, from: bad)
            Issue.record("decoded an unknown currency")
        } catch let DecodingError.dataCorrupted(context) {
            let underlying = try #require(context.underlyingError as? CheckoutError)
            #expect(underlying.field == "amount.currency")
            #expect(underlying.code == .invalidCurrency)
        }
        let fractional = Data(#"{"value":10.5,"currency":"USD"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Money.self, from: fractional) }
    }

    @Test("adding checks currency and overflow")
    func adding() throws {
        let a = Money(minorUnits: 5, currency: Self.usd)
        #expect(try a.adding(a).minorUnits == 10)
        #expect(throws: CheckoutError.self) { try a.adding(Money(minorUnits: 1, currency: Currency(code: "EUR"))) }
        #expect(throws: CheckoutError.self) { try Money(minorUnits: .max, currency: Self.usd).adding(a) }
    }

    @Test("countries: ISO 3166-1 alpha-2 only", arguments: ["US", "AE", "SA", "CN", "JP", "GB", "EG", "JO"])
    func countries(code: String) throws {
        #expect(try CountryCode(code).code == code)
    }

    @Test("bad countries are typed errors naming the field", arguments: ["XX", "us", "USA", "U", "", "UK", "ZZ"])
    func badCountries(code: String) {
        let error = #expect(throws: CheckoutError.self) { try CountryCode(code, field: "intent.country") }
        #expect(error?.code == .invalidCountry)
        #expect(error?.field == "intent.country")
        #expect(CountryCode.allISOCodes.count == 249)
    }
}
