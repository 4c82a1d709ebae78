import Foundation

/// The secret an app uses for one payment, and nothing else.
///
/// The merchant's own backend creates the payment server to server with the merchant API key; the
/// answer carries a client secret (`pay_<id>_secret_<random>`) that it hands to the app for that one
/// payment. With it the app can prepare the payment's attempts, submit, report what it saw, read the
/// payment and ask for an inquiry — for this payment only. It cannot create payments, read another
/// payment, or read the quarantine. The server keeps only a digest of it.
///
/// Its ``description`` never shows the secret part, so it is safe in logs.
public struct ClientSecret: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The whole secret, as the server issued it.
    public let rawValue: String
    /// The payment it is for.
    public let paymentID: String

    /// Reads a client secret.
    /// - Throws: ``CheckoutError`` `invalid_field` naming `clientSecret` when `text` is not one.
    public init(_ text: String) throws(CheckoutError) {
        guard let parts = Self.split(text) else {
            throw CheckoutError(.invalidField, field: "clientSecret",
                                message: "not a client secret (pay_<id>_secret_<random>, as the merchant's backend received it)")
        }
        rawValue = text
        paymentID = parts.paymentID
    }

    /// Splits `pay_<32 hex>_secret_<43 base64url>` into the payment id and the secret part, or nil.
    public static func split(_ text: String) -> (paymentID: String, secret: Substring)? {
        guard text.utf8.count == Self.paymentIDLength + Self.separator.utf8.count + Self.secretLength else { return nil }
        let id = text.prefix(Self.paymentIDLength)
        let rest = text.dropFirst(Self.paymentIDLength)
        guard id.hasPrefix("pay_"), id.dropFirst(4).allSatisfy({ $0.isHexDigit && !$0.isUppercase }),
              rest.hasPrefix(Self.separator) else { return nil }
        let secret = rest.dropFirst(Self.separator.count)
        guard secret.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        return (String(id), secret)
    }

    /// `pay_` and 32 lower-case hex digits.
    public static let paymentIDLength = 36
    /// 32 random bytes in unpadded Base64URL.
    public static let secretLength = 43
    static let separator = "_secret_"

    public var description: String { "\(paymentID)_secret_…" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
