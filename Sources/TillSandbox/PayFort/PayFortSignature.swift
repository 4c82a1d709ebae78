import Crypto
import Foundation

extension PayFortEmulator {
    /// PayFort (Amazon Payment Services) message signatures, as the gateway computes them.
    ///
    /// `signature = hex(SHA-256 or SHA-512 of phrase + k1=v1 + k2=v2 + … + phrase)`, where the pairs
    /// are the message's parameters sorted by key (byte order), with no separator between pairs. The
    /// `signature` parameter itself, and top-level parameters whose value is empty or null, are left out.
    /// Requests are signed with the merchant's SHA *request* phrase; the gateway signs its responses,
    /// redirects and notifications with the SHA *response* phrase. Notification and redirect signatures
    /// are computed over the decoded (not URL-encoded) values.
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

        /// The parameter that carries the signature; never part of the signed text.
        public static let signatureKey = "signature"

        /// The text that is hashed: `phrase + sorted(k=v…) + phrase`, skipping `signature` and empty values.
        public static func stringToSign(_ parameters: [String: String], phrase: String) -> String {
            let pairs = parameters
                .filter { $0.key != signatureKey && !$0.value.isEmpty }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { $0.key + "=" + $0.value }
            return phrase + pairs.joined() + phrase
        }

        /// The lower-case hex signature of flat parameters.
        public static func sign(_ parameters: [String: String], phrase: String, algorithm: Algorithm) -> String {
            digest(stringToSign(parameters, phrase: phrase), algorithm: algorithm)
        }

        /// Whether `signature` (hex, any case) is the signature of `parameters`. Compares in constant time.
        public static func verify(_ signature: String, parameters: [String: String], phrase: String,
                                  algorithm: Algorithm) -> Bool {
            constantTimeEqual(signature.lowercased(), sign(parameters, phrase: phrase, algorithm: algorithm))
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

        /// The signed text of a JSON object's members. Top-level null and empty-string values are
        /// skipped; nested objects render as `key={k=v, k=v}` in their written order, arrays as
        /// `[a, b]`, and inside them empty and null values are kept (`k=`). Numbers render as written.
        static func stringToSign(_ members: [JSONValue.Member], phrase: String) -> String {
            let pairs = members
                .filter { member in
                    guard member.key != signatureKey else { return false }
                    switch member.value {
                    case .null: return false
                    case .string(let text): return !text.isEmpty
                    default: return true
                    }
                }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { $0.key + "=" + $0.value.parameterText }
            return phrase + pairs.joined() + phrase
        }

        /// The signature of a JSON object's members.
        static func sign(_ members: [JSONValue.Member], phrase: String, algorithm: Algorithm) -> String {
            digest(stringToSign(members, phrase: phrase), algorithm: algorithm)
        }

        /// Whether `signature` signs `members` (hex compared case-insensitively, in constant time).
        static func verify(_ signature: String, members: [JSONValue.Member], phrase: String, algorithm: Algorithm) -> Bool {
            constantTimeEqual(signature.lowercased(), sign(members, phrase: phrase, algorithm: algorithm))
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

        private static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
            let left = Array(lhs.utf8), right = Array(rhs.utf8)
            guard left.count == right.count else { return false }
            var difference: UInt8 = 0
            for index in left.indices { difference |= left[index] ^ right[index] }
            return difference == 0
        }
    }
}
