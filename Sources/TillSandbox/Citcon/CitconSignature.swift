import Crypto
import Foundation

extension CitconEmulator {
    /// Citcon's IPN signature, as the gateway computes it.
    ///
    /// `sign = hex(SHA-256(k1=v1&k2=v2&…&secret=<API secret>))` over the pairs whose keys are listed
    /// in `fields` plus `fields` itself, sorted by key (byte order), values as sent: no URL-encoding,
    /// JSON numbers as written, a missing value or JSON `null` as the empty string.
    ///
    /// ```swift
    /// let sign = CitconEmulator.IPNSignature.sign(["id": "84571d…", "fields": "id", …], secret: "braintree")
    /// ```
    public enum IPNSignature {
        /// The field listing the signed names.
        public static let fieldsKey = "fields"
        /// The field carrying the signature; never signed.
        public static let signKey = "sign"

        /// The text that is hashed, for an IPN's values as sent.
        public static func stringToSign(_ values: [String: String], secret: String) -> String {
            let names = (values[fieldsKey] ?? "").split(separator: ",", omittingEmptySubsequences: true)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            var keys = Set(names.filter { $0 != signKey })
            keys.insert(fieldsKey)
            let pairs = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                .map { $0 + "=" + (values[$0] ?? "") }
            return pairs.joined(separator: "&") + "&secret=" + secret
        }

        /// The lower-case hex SHA-256 signature of an IPN's values.
        public static func sign(_ values: [String: String], secret: String) -> String {
            SHA256.hash(data: Data(stringToSign(values, secret: secret).utf8))
                .map { String(format: "%02x", $0) }.joined()
        }

        /// Whether `values[sign]` (hex, any case) is right for `secret`. Compares in constant time.
        public static func verify(_ values: [String: String], secret: String) -> Bool {
            guard let given = values[signKey] else { return false }
            return constantTimeEqual(sign(values, secret: secret), given.lowercased())
        }
    }
}
