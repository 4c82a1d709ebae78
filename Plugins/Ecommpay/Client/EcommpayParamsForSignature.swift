import Foundation
import TillGatewayKit

/// The string ecommpay's mobile SDK asks the merchant server to sign: `PaymentOptions.paramsForSignature`,
/// read and checked before anyone signs it.
///
/// The SDK builds the string inside its closed core (iOS 4.0.8 `PaymentOptions.swift` calls
/// `paymentInfo.getParamsForSignature(SignatureParam.DEFAULT)`). Its header (`MsdkCore.h`) says what it is:
/// the non-null parameters among `projectId`, `paymentId`, `paymentAmount`, `paymentDescription`,
/// `paymentCurrency`, `customerId`, `regionCode`, `token`, `languageCode`, `forcePaymentMethod` and
/// `hideSavedWallets`, as `key:value` pairs sorted by key and joined with `;`, then the 3-D Secure
/// parameters with the prefix `secure_info:`. No vendor source shows the key spellings, so a key is matched
/// without case and underscores (`payment_amount`, `paymentAmount` and `PAYMENTAMOUNT` are one key).
///
/// The merchant server signs the text exactly as the app sent it (the article's steps 4 to 7; the sample
/// apps' `SignatureUtils.swift` sign `paramsToSign` as is), and only after ``check(_:gateway:)`` has matched
/// it to the payment, byte for byte. ecommpay rebuilds the string from the options the SDK sends it, so a string that names
/// another amount, currency or payment than the stored one is never signed, and any text that cannot be
/// read back unambiguously is refused:
/// - a key that is none of the above (a `;` inside a value makes its tail look like a pair, which lands
///   here, among the duplicates, or out of order);
/// - a key that appears twice, in any spelling, a key out of the SDK's sorted order, a parameter after the
///   `secure_info:` pairs;
/// - an empty pair, a pair without `:`, an empty value (the SDK leaves empty parameters out), a control
///   character anywhere.
public struct EcommpayParamsForSignature: Sendable, Hashable {
    /// A parameter of `SignatureParam`, by its header name.
    public enum Key: String, Sendable, Hashable, CaseIterable {
        case projectId, paymentId, paymentAmount, paymentDescription, paymentCurrency, customerId, regionCode, token,
             languageCode, forcePaymentMethod, hideSavedWallets

        /// The key a pair's name stands for: `payment_amount`, `paymentAmount` → ``paymentAmount``. The
        /// Payment Page's `account_token` is read as ``token``.
        init?(name: String) {
            let folded = Self.fold(name)
            if folded == "accounttoken" {
                self = .token
                return
            }
            guard let key = Self.allCases.first(where: { Self.fold($0.rawValue) == folded }) else { return nil }
            self = key
        }

        static func fold(_ name: String) -> String { name.lowercased().replacingOccurrences(of: "_", with: "") }
    }

    /// The field the errors name (the submission's field).
    public static let field = "params_for_signature"
    /// Pairs with the `secure_info:` prefix accepted at most (the 3-D Secure tables have about 60 fields).
    public static let maxSecurePairs = 200

    /// The text, exactly as it arrived: what is signed.
    public let text: String
    /// Each parameter's value, by key.
    public let values: [Key: String]
    /// How many `secure_info:` pairs it carries.
    public let securePairs: Int

    /// Reads `text`, byte by byte as ecommpay compares it: pairs are cut at the byte `;` and split at the
    /// first byte `:` (never at a character that merely contains or resembles one).
    /// - Throws: ``CheckoutError`` naming `params_for_signature` (or `params_for_signature.<key>`) when the
    ///   text is empty, has a control character, an empty pair, a pair without `:`, an unknown or repeated
    ///   key, a key out of order (the SDK sorts them), a parameter after the `secure_info:` pairs (the SDK
    ///   appends those) or an empty value.
    public init(_ text: String, gateway: GatewayID? = "ecommpay") throws(CheckoutError) {
        let field = Self.field
        func refuse(_ at: String, _ message: String, code: CheckoutError.Code = .invalidField) -> CheckoutError {
            CheckoutError(code, field: at, message: message, gateway: gateway)
        }
        guard !text.isEmpty else { throw refuse(field, "the SDK's paramsForSignature is required", code: .missingField) }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw refuse(field, "a control character")
        }
        var values: [Key: String] = [:]
        var secure = 0
        var previous: String?
        for pair in Array(text.utf8).split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false) {
            guard !pair.isEmpty else { throw refuse(field, "an empty pair (';;', or ';' at either end)") }
            guard let colon = pair.firstIndex(of: UInt8(ascii: ":")) else { throw refuse(field, "a pair without ':'") }
            // Cut at ASCII bytes, so both halves are whole UTF-8.
            let name = String(decoding: pair[pair.startIndex..<colon], as: UTF8.self)
            let value = String(decoding: pair[(colon + 1)...], as: UTF8.self)
            let named = Self.isPlainName(name) ? "\(field).\(name)" : field
            guard Self.isPlainName(name) else { throw refuse(field, "a key of letters, digits and '_' only") }
            if Key.fold(name) == "secureinfo" {
                guard !value.isEmpty else { throw refuse(named, "an empty 3-D Secure pair") }
                secure += 1
                guard secure <= Self.maxSecurePairs else { throw refuse(field, "more than \(Self.maxSecurePairs) 3-D Secure pairs") }
                continue
            }
            guard secure == 0 else { throw refuse(named, "after the secure_info pairs (the SDK appends those last)") }
            guard let key = Key(name: name) else {
                throw refuse(named, "not a parameter the SDK signs (a ';' inside a value reads as a pair too)")
            }
            guard values[key] == nil else { throw refuse(named, "appears twice") }
            // The SDK sorts its keys; every spelling of them sorts alike once folded.
            let folded = Key.fold(name)
            if let previous, !previous.utf8.lexicographicallyPrecedes(folded.utf8) {
                throw refuse(named, "out of order (the SDK sorts its keys)")
            }
            previous = folded
            guard !value.isEmpty else { throw refuse(named, "empty (the SDK leaves empty parameters out)") }
            values[key] = value
        }
        self.text = text
        self.values = values
        self.securePairs = secure
    }

    /// What the string must say to be signed: the payment as the merchant server stored it.
    public struct Expectation: Sendable, Hashable {
        public var projectId: Int
        public var paymentId: String
        /// Minor units (zero for a verify).
        public var amount: Int64
        public var currency: String
        /// The customer the payment belongs to, if any: the string may name no other.
        public var customerId: String?
        /// The description the server gave, if any: the string may carry no other.
        public var description: String?
        /// The region the server gave, if any.
        public var regionCode: String?
        /// The methods the string may force (`card` for a card payment).
        public var forcedMethods: Set<String>

        public init(projectId: Int, paymentId: String, amount: Int64, currency: String, customerId: String? = nil,
                    description: String? = nil, regionCode: String? = nil, forcedMethods: Set<String> = []) {
            self.projectId = projectId
            self.paymentId = paymentId
            self.amount = amount
            self.currency = currency
            self.customerId = customerId
            self.description = description
            self.regionCode = regionCode
            self.forcedMethods = forcedMethods
        }

        /// What the options Till built for an attempt say.
        public init(_ options: EcommpayPaymentOptions, forcedMethods: Set<String>) {
            self.init(projectId: options.projectId, paymentId: options.paymentId, amount: options.paymentAmount,
                      currency: options.paymentCurrency, customerId: options.customerId, description: options.paymentDescription,
                      regionCode: options.regionCode, forcedMethods: forcedMethods)
        }
    }

    /// Checks the string against the payment.
    /// - Throws: ``CheckoutError`` naming `params_for_signature.<key>` (by the header's name): the project,
    ///   payment id, amount and currency are required and must be the payment's; a customer id only the
    ///   payment's (it opens the customer's saved cards); a description and region only the server's; a
    ///   language the SDK speaks; no stored-card `token` (Till does not pay with one); a forced method only
    ///   the attempt's; `hideSavedWallets` a boolean.
    public func check(_ expected: Expectation, gateway: GatewayID? = "ecommpay") throws(CheckoutError) {
        func refuse(_ key: Key, _ message: String, code: CheckoutError.Code = .invalidField) -> CheckoutError {
            CheckoutError(code, field: "\(Self.field).\(key.rawValue)", message: message, gateway: gateway)
        }
        for (key, value) in [(Key.projectId, String(expected.projectId)), (.paymentId, expected.paymentId),
                             (.paymentAmount, String(expected.amount)), (.paymentCurrency, expected.currency)] {
            guard let given = values[key] else { throw refuse(key, "required", code: .missingField) }
            guard Self.same(given, value) else { throw refuse(key, "not this payment's") }
        }
        if let given = values[.customerId], !Self.same(given, expected.customerId) {
            throw refuse(.customerId, expected.customerId == nil ? "the payment has no customer" : "not this payment's customer")
        }
        if let given = values[.paymentDescription], !Self.same(given, expected.description) {
            throw refuse(.paymentDescription, "not the description the server gave")
        }
        if let given = values[.regionCode] {
            if let region = expected.regionCode {
                guard Self.same(given, region) else { throw refuse(.regionCode, "not the region the server gave") }
            } else if !Self.isASCIILetters(given, count: 2) || (try? CountryCode(given)) == nil {
                throw refuse(.regionCode, "ISO 3166-1 alpha-2")
            }
        }
        if let given = values[.languageCode],
           !Self.isASCIILetters(given, count: 2) || !EcommpayPaymentOptions.sdkLanguages.contains(given.lowercased()) {
            throw refuse(.languageCode, "the SDK opens only in \(EcommpayPaymentOptions.sdkLanguages.sorted().joined(separator: ", "))")
        }
        if values[.token] != nil { throw refuse(.token, "Till does not pay with a stored card's token") }
        if let given = values[.forcePaymentMethod], !expected.forcedMethods.contains(where: { Self.same(given, $0) }) {
            throw refuse(.forcePaymentMethod, "not this attempt's method")
        }
        if let given = values[.hideSavedWallets], !["0", "1", "true", "false"].contains(given) {
            throw refuse(.hideSavedWallets, "a boolean")
        }
    }

    /// Byte-for-byte equality, as ecommpay compares the rebuilt string (Swift's `==` would take `"SE\u{212A}"`
    /// for `"SEK"`, and a decomposed `é` for a composed one).
    static func same(_ given: String, _ expected: String?) -> Bool {
        guard let expected else { return false }
        return given.utf8.elementsEqual(expected.utf8)
    }

    /// `count` ASCII letters.
    static func isASCIILetters(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// A name that can stand in an error's field: letters, digits and `_`, at most 64.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0)
            || ("0"..."9").contains($0) || $0 == "_" }
    }
}
