import Crypto
import Foundation

extension PayFortEmulator {
    /// Amazon Payment Services (PayFort FORT) message signatures, as the vendor's SDKs compute them.
    ///
    /// `signature = hex(SHA-256 or SHA-512 of phrase + k1=v1 + k2=v2 + … + phrase)`: the message's
    /// parameters sorted by key (byte order), no separator between pairs, the `signature` parameter left
    /// out. Requests are signed with the merchant's SHA *request* phrase; the gateway signs its answers,
    /// redirects and transaction feedback with the SHA *response* phrase, over the decoded (not
    /// URL-encoded) values. Nested values render as `key={k=v, k=v}` in their written order, arrays as
    /// `[a, b]` (payfort/payfort-php-sdk `APSSignature.php`, payfort/payfort-dotnet-sdk `SignatureProvider.cs`).
    ///
    /// The two official SDKs disagree on top-level parameters with an empty value: the PHP SDK signs
    /// every parameter it has (`k=`), the .NET SDK skips empty and null ones (and trims values). The
    /// emulator **signs** the way the PHP SDK does (``EmptyValues/signed``, the APS reference
    /// implementation) and **verifies** what a merchant sends under either rule.
    ///
    /// ```swift
    /// let signature = PayFortEmulator.Signature.sign(["command": "PURCHASE", "amount": "1000"],
    ///                                                phrase: "request-phrase", algorithm: .sha256)
    /// ```
    public enum Signature {
        /// The hash a merchant account is configured with.
        public enum Algorithm: String, Sendable, Hashable, CaseIterable {
            /// SHA-256: 64 hex digits.
            case sha256
            /// SHA-512: 128 hex digits.
            case sha512
        }

        /// How a top-level parameter whose value is empty (or JSON `null`) enters the signed text.
        public enum EmptyValues: Sendable, Hashable, CaseIterable {
            /// As `key=` (payfort/payfort-php-sdk `APSSignature::implodeParamsToString`): how the emulator signs.
            case signed
            /// Left out, other values trimmed (payfort/payfort-dotnet-sdk `SignatureProvider.PrepareSignature`).
            case skipped
        }

        /// The parameter that carries the signature; never part of the signed text.
        public static let signatureKey = "signature"

        /// The text that is hashed: `phrase + sorted(k=v…) + phrase`, without `signature`.
        public static func stringToSign(_ parameters: [String: String], phrase: String,
                                        emptyValues: EmptyValues = .signed) -> String {
            stringToSign(parameters.map { JSONValue.Member(key: $0.key, value: .string($0.value)) }, phrase: phrase,
                         emptyValues: emptyValues)
        }

        /// The lower-case hex signature of flat parameters.
        public static func sign(_ parameters: [String: String], phrase: String, algorithm: Algorithm,
                                emptyValues: EmptyValues = .signed) -> String {
            digest(stringToSign(parameters, phrase: phrase, emptyValues: emptyValues), algorithm: algorithm)
        }

        /// Whether `signature` (hex, any case) signs `parameters` under either vendor rule for empty
        /// values. Compares in constant time.
        public static func verify(_ signature: String, parameters: [String: String], phrase: String,
                                  algorithm: Algorithm) -> Bool {
            verify(signature, members: parameters.map { JSONValue.Member(key: $0.key, value: .string($0.value)) },
                   phrase: phrase, algorithm: algorithm)
        }

        /// The lower-case hex digest of `text` (UTF-8).
        public static func digest(_ text: String, algorithm: Algorithm) -> String {
            let bytes = Data(text.utf8)
            switch algorithm {
            case .sha256: return hex(SHA256.hash(data: bytes))
            case .sha512: return hex(SHA512.hash(data: bytes))
            }
        }

        // MARK: Structured values (internal)

        /// The signed text of a JSON object's members. Numbers render as written; nested objects as
        /// `key={k=v, k=v}` in their written order, arrays as `[a, b]`, keeping empty and null values
        /// inside them as `k=` (both SDKs do).
        static func stringToSign(_ members: [JSONValue.Member], phrase: String, emptyValues: EmptyValues = .signed) -> String {
            var pairs: [(key: String, text: String)] = []
            for member in members where member.key != signatureKey {
                var text = member.value.parameterText
                if emptyValues == .skipped {
                    text = text.trimmingCharacters(in: .whitespaces)
                    if member.value == .null || text.isEmpty { continue }
                }
                pairs.append((member.key, text))
            }
            pairs.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            return phrase + pairs.map { $0.key + "=" + $0.text }.joined() + phrase
        }

        /// The signature of a JSON object's members.
        static func sign(_ members: [JSONValue.Member], phrase: String, algorithm: Algorithm,
                         emptyValues: EmptyValues = .signed) -> String {
            digest(stringToSign(members, phrase: phrase, emptyValues: emptyValues), algorithm: algorithm)
        }

        /// Whether `signature` signs `members` under either rule for empty values (hex compared
        /// case-insensitively: the Java SDK upper-cases it; in constant time).
        static func verify(_ signature: String, members: [JSONValue.Member], phrase: String, algorithm: Algorithm) -> Bool {
            let given = signature.lowercased()
            var matched = false
            for rule in EmptyValues.allCases {
                // Both rules are always computed, so the time taken does not tell which one matched.
                matched = constantTimeEqual(given, sign(members, phrase: phrase, algorithm: algorithm, emptyValues: rule)) || matched
            }
            return matched
        }

        private static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
            let digits = Array("0123456789abcdef".utf8)
            var output: [UInt8] = []
            for byte in digest {
                output.append(digits[Int(byte >> 4)])
                output.append(digits[Int(byte & 0x0F)])
            }
            return String(decoding: output, as: UTF8.self)
        }
    }
}
