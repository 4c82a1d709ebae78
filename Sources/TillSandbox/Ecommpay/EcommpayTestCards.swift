import Foundation

/// The ecommpay emulator's test cards. *Emulator choice*: the vendor's test card list for test
/// projects is not in any source here, so these numbers are the sandbox's own (Luhn-valid). Every
/// other Luhn-valid card number succeeds without 3-D Secure.
public enum EcommpayTestCard: String, Sendable, Hashable, CaseIterable {
    /// Succeeds without 3-D Secure.
    case success = "4000000000000010"
    /// Declined by the provider.
    case decline = "4000000000000028"
    /// Asks for a 3-D Secure challenge; through the SDK stand-in the customer passes it. On the
    /// Payment Page the 3-D Secure page asks, and the customer's answer decides.
    case threeDSecurePass = "4000000000000036"
    /// Asks for a 3-D Secure challenge; through the SDK stand-in the customer fails it (declined).
    /// On the Payment Page the 3-D Secure page asks, and the customer's answer decides.
    case threeDSecureFail = "4000000000000044"
    /// ecommpay's cascade (seed "Cascade payment processing"): the first provider declines (callback
    /// with `payment.cascading_with_redirect` true, `payment.status` `awaiting retry`), a second
    /// provider succeeds on the same payment (callback with the final status).
    case cascade = "4000000000000051"

    /// What a card number does.
    enum Behaviour: Equatable {
        case success, decline, threeDSecure(pass: Bool), cascade
    }

    static func behaviour(of number: String) -> Behaviour {
        switch EcommpayTestCard(rawValue: number) {
        case .decline: .decline
        case .threeDSecurePass: .threeDSecure(pass: true)
        case .threeDSecureFail: .threeDSecure(pass: false)
        case .cascade: .cascade
        case .success, .none: .success
        }
    }

    /// Whether `number` is 12–19 digits with a valid Luhn check digit.
    static func isLuhnValid(_ number: String) -> Bool {
        let digits = number.compactMap(\.wholeNumberValue)
        guard digits.count == number.count, (12...19).contains(digits.count) else { return false }
        var sum = 0
        for (position, digit) in digits.reversed().enumerated() {
            if position % 2 == 1 {
                let doubled = digit * 2
                sum += doubled > 9 ? doubled - 9 : doubled
            } else {
                sum += digit
            }
        }
        return sum % 10 == 0
    }

    /// `400000******0010`: the first six and last four digits, as in the js callback sample
    /// (`account.number: '400002******1488'`, `__tests__/data/callbackFormats.js`).
    static func mask(_ number: String) -> String {
        guard number.count > 10 else { return number }
        return String(number.prefix(6)) + String(repeating: "*", count: number.count - 10) + String(number.suffix(4))
    }

    /// `visa` for 4…, `mastercard` for 51–55 and 2221–2720, else `card` (the js sample's `account.type`
    /// is `visa`; the other names are an *emulator choice*).
    static func brand(_ number: String) -> String {
        if number.hasPrefix("4") { return "visa" }
        let two = Int(number.prefix(2)) ?? 0
        let four = Int(number.prefix(4)) ?? 0
        if (51...55).contains(two) || (2221...2720).contains(four) { return "mastercard" }
        return "card"
    }
}

/// The card the customer typed, as the SDK's card form or the Payment Page's form takes it.
struct EcommpayCardInput: Sendable, Hashable {
    var number: String
    var expiryMonth: String
    var expiryYear: String
    var cvv: String
    var holder: String

    /// Why the card cannot be submitted (`"card.number: …"`), or `nil`. The forms check these before
    /// sending (*emulator choice* of the exact rules: 12–19 digits with a Luhn check digit, month 1–12,
    /// a 2- or 4-digit year, not expired, CVV 3–4 digits).
    func problem(now: Date, prefix: String = "card.") -> String? {
        guard EcommpayTestCard.isLuhnValid(number) else { return prefix + "number: not a card number (12–19 digits, Luhn)" }
        guard let month = Int(expiryMonth), (1...12).contains(month), expiryMonth.allSatisfy(\.isNumber) else {
            return prefix + "expiry_month: 1–12"
        }
        guard expiryYear.count == 2 || expiryYear.count == 4, expiryYear.allSatisfy(\.isNumber), var year = Int(expiryYear) else {
            return prefix + "expiry_year: 2 or 4 digits"
        }
        if year < 100 { year += 2000 }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let today = calendar.dateComponents([.year, .month], from: now)
        if year < today.year ?? 0 || (year == today.year && month < today.month ?? 0) { return prefix + "expiry: the card has expired" }
        guard (3...4).contains(cvv.count), cvv.allSatisfy(\.isNumber) else { return prefix + "cvv: 3 or 4 digits" }
        return nil
    }

    var details: EcommpayEmulator.CardDetails {
        EcommpayEmulator.CardDetails(masked: EcommpayTestCard.mask(number), holder: holder,
                                     expiryMonth: expiryMonth.count == 1 ? "0" + expiryMonth : expiryMonth,
                                     expiryYear: expiryYear.count == 2 ? "20" + expiryYear : expiryYear,
                                     brand: EcommpayTestCard.brand(number))
    }
}
