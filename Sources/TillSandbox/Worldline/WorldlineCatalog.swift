import Foundation

/// The emulator's payment products, IIN ranges and test cards.
///
/// Product data (ids, labels, logos, display orders, `maxAmount`, `mobileIntegrationLevel`, field
/// definitions, the Apple Pay networks and the iDEAL directory) is copied from the client SDKs' test
/// resources (connect-sdk-client-swift 7.0.0 `WorldlineConnectKitTests/Resources/paymentProducts.json`,
/// `paymentProduct.json`, `paymentProductGroup.json` and `ClientApiTestCase.swift` stubs; js
/// `__fixtures__/payment-product-directory-json.ts`). **Which product is offered where** (countries,
/// currencies, minimum amounts) is the emulator's own table: it exists so that a client sees products
/// come and go with the context, not to mirror any merchant's real configuration.
enum WorldlineCatalog {
    /// A payment product and where it is offered.
    struct Product: Sendable {
        var id: Int
        var label: String
        var displayOrder: Int
        var paymentMethod: String
        var group: String?
        var allowsRecurring: Bool
        var allowsTokenization: Bool
        /// nil: every country.
        var countries: Set<String>?
        /// nil: every currency.
        var currencies: Set<String>?
        var minAmount: Int64?
        var maxAmount: Int64?
        var usesRedirection: Bool

        var logo: String { "/templates/master/global/css/img/ppimages/pp_logo_\(id)_v1.png" }

        func isOffered(country: String?, currency: String?, amount: Int64?) -> Bool {
            if let countries, let country, !countries.contains(country) { return false }
            if let currencies, let currency, !currencies.contains(currency) { return false }
            if let amount, let minAmount, amount < minAmount { return false }
            if let amount, let maxAmount, amount > maxAmount { return false }
            return true
        }
    }

    static let products: [Product] = [
        Product(id: 1, label: "Visa", displayOrder: 20, paymentMethod: "card", group: "cards", allowsRecurring: true,
                allowsTokenization: true, maxAmount: 1_000_000, usesRedirection: false),
        Product(id: 2, label: "American Express", displayOrder: 19, paymentMethod: "card", group: "cards",
                allowsRecurring: true, allowsTokenization: true, maxAmount: 1_000_000, usesRedirection: false),
        Product(id: 3, label: "MasterCard", displayOrder: 18, paymentMethod: "card", group: "cards", allowsRecurring: true,
                allowsTokenization: true, maxAmount: 1_000_000, usesRedirection: false),
        Product(id: 125, label: "JCB", displayOrder: 70, paymentMethod: "card", group: "cards", allowsRecurring: true,
                allowsTokenization: true, countries: ["JP"], currencies: ["JPY"], usesRedirection: false),
        Product(id: 130, label: "Carte Bancaire", displayOrder: 92, paymentMethod: "card", group: "cards",
                allowsRecurring: true, allowsTokenization: true, countries: ["FR"], currencies: ["EUR"], usesRedirection: false),
        Product(id: 302, label: "Apple Pay", displayOrder: 10, paymentMethod: "mobile", group: nil, allowsRecurring: false,
                allowsTokenization: false, usesRedirection: false),
        Product(id: 809, label: "iDEAL", displayOrder: 30, paymentMethod: "redirect", group: nil, allowsRecurring: false,
                allowsTokenization: false, countries: ["NL"], currencies: ["EUR"], minAmount: 1, usesRedirection: true),
        Product(id: 840, label: "PayPal", displayOrder: 56, paymentMethod: "redirect", group: nil, allowsRecurring: true,
                allowsTokenization: true, minAmount: 100, maxAmount: 500_000, usesRedirection: true),
    ]

    static func product(_ id: Int) -> Product? {
        products.first { $0.id == id }
    }

    /// An IIN range: what `getIINdetails` answers for a BIN that starts with one of `prefixes`.
    struct IINRange: Sendable {
        var prefixes: [String]
        var productId: Int
        var countryCode: String
        /// Other brands on the same card (the `coBrands` list also names the primary one, as the
        /// android test resources `normalIINResponse*.json` do).
        var coBrands: [Int]
    }

    /// Longest prefix wins.
    static let iinRanges: [IINRange] = [
        IINRange(prefixes: ["403550"], productId: 130, countryCode: "FR", coBrands: [130, 1]),
        IINRange(prefixes: ["4"], productId: 1, countryCode: "US", coBrands: []),
        IINRange(prefixes: ["51", "52", "53", "54", "55", "2221", "2720"], productId: 3, countryCode: "US", coBrands: []),
        IINRange(prefixes: ["34", "37"], productId: 2, countryCode: "US", coBrands: []),
        IINRange(prefixes: ["3528", "3589"], productId: 125, countryCode: "JP", coBrands: []),
    ]

    static func iinRange(for digits: String) -> IINRange? {
        var best: (range: IINRange, length: Int)?
        for range in iinRanges {
            for prefix in range.prefixes where digits.hasPrefix(prefix) {
                if prefix.count > best?.length ?? 0 { best = (range, prefix.count) }
            }
        }
        return best?.range
    }

    /// What a test card does (see ``WorldlineEmulator``'s table).
    enum CardBehaviour: Sendable {
        case approve
        case decline
        case threeDSecure
        case pending
    }

    static func behaviour(of cardNumber: String) -> CardBehaviour {
        switch cardNumber {
        case "4000000000000002": .decline
        case "4000000000003220": .threeDSecure
        case "4000000000000259": .pending
        default: .approve
        }
    }

    /// Luhn, as a gateway checks a card number: digits only, 12 to 19 of them.
    static func passesLuhn(_ number: String) -> Bool {
        let digits = number.compactMap(\.wholeNumberValue)
        guard digits.count == number.count, (12...19).contains(digits.count) else { return false }
        var sum = 0
        for (index, digit) in digits.reversed().enumerated() {
            if index % 2 == 1 {
                let doubled = digit * 2
                sum += doubled > 9 ? doubled - 9 : doubled
            } else {
                sum += digit
            }
        }
        return sum % 10 == 0
    }

    /// `MMYY` not before this month (UTC).
    static func expiryIsValid(_ value: String, now: Date) -> Bool {
        guard value.count == 4, value.allSatisfy(\.isASCII), let month = Int(value.prefix(2)), let year = Int(value.suffix(2)),
              (1...12).contains(month) else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month], from: now)
        let thisYear = (parts.year ?? 2000) % 100
        let thisMonth = parts.month ?? 1
        return (year, month) >= (thisYear, thisMonth)
    }

    // MARK: Fields (copied from the swift SDK's paymentProduct.json test resource)

    static var cardFields: JSONValue {
        .array([
            field(id: "cardNumber", type: "numericstring", order: 10, label: "Card number:",
                  placeholder: "**** **** **** ****", mask: "{{9999}} {{9999}} {{9999}} {{9999}} {{999}}",
                  validators: [.init(key: "length", value: .object([.init(key: "maxLength", value: .number("19")),
                                                                      .init(key: "minLength", value: .number("12"))])),
                               .init(key: "luhn", value: .object([]))], required: true),
            field(id: "expiryDate", type: "expirydate", order: 20, label: "Expiry date:", placeholder: "MM/YY",
                  mask: "{{99}}/{{99}}",
                  validators: [.init(key: "expirationDate", value: .object([])),
                               .init(key: "length", value: .object([.init(key: "maxLength", value: .number("4")),
                                                                      .init(key: "minLength", value: .number("4"))])),
                               .init(key: "regularExpression", value: .object([
                                   .init(key: "regularExpression", value: .string("(?:0[1-9]|1[0-2])[0-9]{2}"))]))],
                  required: true),
            field(id: "cvv", type: "numericstring", order: 24, label: "CVV:", placeholder: "123", mask: "{{9999}}",
                  validators: [.init(key: "length", value: .object([.init(key: "maxLength", value: .number("4")),
                                                                      .init(key: "minLength", value: .number("3"))])),
                               .init(key: "regularExpression", value: .object([
                                   .init(key: "regularExpression", value: .string("^[0-9]{3}[0-9]?$"))]))],
                  required: false),
        ])
    }

    private static func field(id: String, type: String, order: Int, label: String, placeholder: String, mask: String?,
                              validators: [JSONValue.Member], required: Bool) -> JSONValue {
        var hints: [JSONValue.Member] = [
            .init(key: "alwaysShow", value: .bool(true)),
            .init(key: "displayOrder", value: .number(String(order))),
            .init(key: "formElement", value: .object([.init(key: "type", value: .string("text"))])),
            .init(key: "label", value: .string(label)),
        ]
        if let mask { hints.append(.init(key: "mask", value: .string(mask))) }
        hints += [
            .init(key: "obfuscate", value: .bool(false)),
            .init(key: "placeholderLabel", value: .string(placeholder)),
            .init(key: "preferredInputType", value: .string("IntegerKeyboard")),
        ]
        return .object([
            .init(key: "dataRestrictions", value: .object([
                .init(key: "isRequired", value: .bool(required)),
                .init(key: "validators", value: .object(validators)),
            ])),
            .init(key: "displayHints", value: .object(hints)),
            .init(key: "id", value: .string(id)),
            .init(key: "type", value: .string(type)),
        ])
    }

    /// The iDEAL directory (js `payment-product-directory-json.ts`).
    static let idealDirectory: [(issuerId: String, issuerName: String)] = [
        ("INGBNL2A", "ING"), ("RABONL2U", "RABONL2U - eWL Issuer Simulation"), ("BANKNL3Y", "TEST iDEAL issuer"),
        ("BANKNL2Y", "eWL Issuer Simulation"),
    ]

    // MARK: Currency conversion (the emulator's own fixed rates)

    /// Units of each currency per euro. **Not vendor data**: fixed rates so that `convert/amount` answers
    /// something stable. The amounts themselves are Worldline's: "in cents with each amount having 2 decimals,
    /// regardless of the actual decimal places the currency has. So JPY has no decimals in it currency, but you
    /// will need to add two zeros as cents" (the Connect API reference, `services/convertAmount`), so every
    /// currency converts with two decimals, JPY included.
    static let rates: [String: Double] = [
        "EUR": 1.0, "USD": 1.08, "GBP": 0.85, "CAD": 1.47, "CHF": 0.95, "JPY": 160.0, "AUD": 1.63, "SEK": 11.5,
    ]

    static func convert(_ amount: Int64, from source: String, to target: String) -> Int64? {
        guard let from = rates[source], let to = rates[target] else { return nil }
        if source == target { return amount }
        var converted = Double(amount) / from * to
        // A currency without decimals is converted to a whole number of it (its two "cents" digits zero).
        if target == "JPY" { converted = (converted / 100).rounded() * 100 }
        return Int64(converted.rounded())
    }
}
