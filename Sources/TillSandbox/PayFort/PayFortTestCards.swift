extension PayFortEmulator {
    /// The card numbers the PayFort emulator gives special meaning, and the card rules it applies.
    ///
    /// Amazon Payment Services publishes no test-card table in any source this emulator is written
    /// from. `4005550000000001` is the card the vendor's own .NET test application sends to the APS
    /// sandbox (payfort/payfort-dotnet-sdk `TrustedChannelsController.cs`; its BIN `400555` came back
    /// approved without 3-D Secure in the sandbox log), and the 3-D Secure card carries BIN `455701`,
    /// which the sandbox answered with `20064` in the 2024 sandbox log. **Every other outcome below is a
    /// sandbox choice**, not APS behaviour.
    ///
    /// | card number        | PURCHASE / AUTHORIZATION |
    /// |--------------------|--------------------------|
    /// | `4005550000000001` | `14000` / `02000` (VISA) |
    /// | `5123450000000008` | `14000` / `02000` (MASTERCARD) |
    /// | `345678000000007`  | `14000` / `02000` (AMEX) |
    /// | `5297412542005689` | `14000` / `02000` (MADA) |
    /// | `4557010000000008` | `20064` with a `3ds_url`; the customer approves (`14000` / `02000`) or fails (`13030` / `03030`) |
    /// | `4000000000003220` | the same as `4557010000000008` |
    /// | `4000000000000002` | `13666` / `03666` transaction declined (acquirer `05`) |
    /// | `4000000000009995` | `13029` / `03029` insufficient funds (acquirer `51`) |
    /// | `4000000000000010` | `15777` uncertain in the answer, but charged: CHECK_STATUS and the feedback say `14000` / `02000` |
    /// | `4000000000000051` | held, then HTTP 504; recorded as `13006` / `03006`, not charged |
    /// | any other          | Luhn-valid → approved; otherwise refused when the card is entered |
    ///
    /// An `expiry_date` (YYMM) in the past declines any card with `13012` / `03012` "Card expired".
    public enum TestCard {
        /// Approved (the vendor's own sandbox test card).
        public static let visa = "4005550000000001"
        /// Approved.
        public static let mastercard = "5123450000000008"
        /// Approved (15 digits).
        public static let amex = "345678000000007"
        /// Approved; a MADA (Saudi debit) card.
        public static let mada = "5297412542005689"
        /// Asks for 3-D Secure (`20064`).
        public static let threeDSecure = "4557010000000008"
        /// Asks for 3-D Secure too (kept for older tests and demos).
        public static let threeDSecureAlternative = "4000000000003220"
        /// Declined by the issuer (`666`).
        public static let declined = "4000000000000002"
        /// Declined for insufficient funds (`029`).
        public static let insufficientFunds = "4000000000009995"
        /// Answered as uncertain (`15777`) although the gateway charged it.
        public static let uncertain = "4000000000000010"
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
            case threeDSecure, threeDSecureAlternative: .threeDSecure
            case declined: .decline
            case insufficientFunds: .insufficientFunds
            case uncertain: .uncertain
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

        /// The payment option a card is presented as (`VISA`, `MASTERCARD`, `AMEX`, `MADA`, `MEEZA`),
        /// the domestic scheme first; the second element is the international brand, if any.
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

        /// First six and last four digits, the rest as `*` (`400555******0001`), as the FORT mobile SDK
        /// guide's `card_number` example masks it; short numbers fully masked.
        static func mask(_ number: String) -> String {
            guard number.count >= 12 else { return String(repeating: "*", count: number.count) }
            return String(number.prefix(6)) + String(repeating: "*", count: number.count - 10) + String(number.suffix(4))
        }
    }
}
