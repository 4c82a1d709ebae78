extension PayFortEmulator {
    /// The card numbers the PayFort emulator gives special meaning, and the card rules it applies.
    ///
    /// | card number        | outcome |
    /// |--------------------|---------|
    /// | `4005550000000001` | success (VISA) |
    /// | `5123450000000008` | success (MASTERCARD) |
    /// | `345678000000007`  | success (AMEX) |
    /// | `5297412542005689` | success (MADA) |
    /// | `4000000000000002` | declined: `13071` / `03071` "Transaction declined" |
    /// | `4000000000009995` | insufficient funds: `13064` / `03064` |
    /// | `4000000000000010` | uncertain: `15006` "Technical problem", but charged (CHECK_STATUS shows `14`/`02`) |
    /// | `4000000000003220` | 3-D Secure: `20064` with `3ds_url`; charged only when the customer approves |
    /// | `4000000000000051` | gateway timeout: held, then HTTP 504; recorded as failed `13006` / `03006`, not charged |
    /// | any other          | Luhn-valid → success; otherwise `00016` "Invalid card number" |
    ///
    /// A past `expiry_date` declines any card with `13012` / `03012` "Card expired".
    public enum TestCard {
        /// Approved.
        public static let visa = "4005550000000001"
        /// Approved.
        public static let mastercard = "5123450000000008"
        /// Approved (15 digits).
        public static let amex = "345678000000007"
        /// Approved; a MADA (Saudi debit) card.
        public static let mada = "5297412542005689"
        /// Declined by the issuer (`071`).
        public static let declined = "4000000000000002"
        /// Declined for insufficient funds (`064`).
        public static let insufficientFunds = "4000000000009995"
        /// Answered as uncertain (`15006`) although the gateway charged it.
        public static let uncertain = "4000000000000010"
        /// Asks for 3-D Secure (`20064`).
        public static let threeDSecure = "4000000000003220"
        /// Never answered in time: held, then HTTP 504.
        public static let timeout = "4000000000000051"

        /// What the emulator does with a card number.
        enum Behaviour: Sendable, Equatable {
            case approve
            case decline
            case insufficientFunds
            case uncertain
            case threeDSecure
            case timeout
            case invalidNumber
        }

        static func behaviour(of number: String) -> Behaviour {
            switch number {
            case visa, mastercard, amex, mada: .approve
            case declined: .decline
            case insufficientFunds: .insufficientFunds
            case uncertain: .uncertain
            case threeDSecure: .threeDSecure
            case timeout: .timeout
            default: isLuhnValid(number) ? .approve : .invalidNumber
            }
        }

        /// Whether `number` is 12 to 19 digits with a valid Luhn check digit.
        static func isLuhnValid(_ number: String) -> Bool {
            let digits = number.utf8.map { Int($0) - 48 }
            guard (12...19).contains(digits.count), digits.allSatisfy({ (0...9).contains($0) }) else { return false }
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

        /// BIN prefixes the emulator treats as MADA (Saudi) and MEEZA (Egyptian) domestic schemes.
        static let madaPrefixes = ["529741", "588845", "440647", "446404", "457865", "968208", "636120"]
        static let meezaPrefixes = ["507803", "507808", "507809", "507810"]

        /// The payment options a card can be presented as (a MADA card is also VISA or MASTERCARD).
        static func paymentOptions(of number: String) -> [String] {
            var options: [String] = []
            if madaPrefixes.contains(where: number.hasPrefix) { options.append("MADA") }
            if meezaPrefixes.contains(where: number.hasPrefix) { options.append("MEEZA") }
            if number.hasPrefix("34") || number.hasPrefix("37") {
                options.append("AMEX")
            } else if number.hasPrefix("4") {
                options.append("VISA")
            } else if let two = Int(number.prefix(2)), (51...55).contains(two) {
                options.append("MASTERCARD")
            } else if let four = Int(number.prefix(4)), (2221...2720).contains(four) {
                options.append("MASTERCARD")
            }
            return options
        }

        /// First six and last four digits, the rest as `*` (`400555******0001`); short numbers fully masked.
        static func mask(_ number: String) -> String {
            guard number.count >= 12 else { return String(repeating: "*", count: number.count) }
            return String(number.prefix(6)) + String(repeating: "*", count: number.count - 10) + String(number.suffix(4))
        }
    }
}
