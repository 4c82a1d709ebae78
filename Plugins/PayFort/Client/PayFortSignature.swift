import Crypto
import Foundation
import Till

/// PayFort's SHA signature: `hex(SHA(phrase + concat(sorted key=value) + phrase))`.
///
/// - Keys are sorted; pairs are concatenated with no separator; `signature` itself is left out, as
///   are top-level null or empty values.
/// - Nested objects render as `key={k=v, k=v}` in insertion order, with their empty values kept;
///   arrays as `[a, b]`.
/// - Requests are signed with the SHA request phrase; responses and notifications are verified with
///   the SHA response phrase, over the URL-decoded values as received.
public struct PayFortSignature: Sendable, Hashable {
    public enum Algorithm: String, Sendable, Hashable, Codable { case sha256, sha512 }

    public var algorithm: Algorithm
    public init(_ algorithm: Algorithm = .sha256) { self.algorithm = algorithm }

    /// The exact string that is hashed: what `till sign payfort` prints when a gateway says "signature mismatch".
    public func stringToSign(_ parameters: PayFortParameters, phrase: String) -> String {
        let body = parameters.pairs
            .filter { $0.0 != "signature" && !$0.1.isEmpty }
            .sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1.signingText)" }
            .joined()
        return phrase + body + phrase
    }

    /// The lower-case hex signature of `parameters`.
    public func sign(_ parameters: PayFortParameters, phrase: String) -> String {
        let data = Data(stringToSign(parameters, phrase: phrase).utf8)
        switch algorithm {
        case .sha256: return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        case .sha512: return SHA512.hash(data: data).map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Checks the `signature` parameter (hex, either case) in constant time.
    /// - Throws: ``CheckoutError/Code/signatureMismatch`` (category `verification`) naming `signature`,
    ///   or ``CheckoutError/Code/missingField`` when there is none.
    public func verify(_ parameters: PayFortParameters, phrase: String) throws(CheckoutError) {
        guard let given = parameters.text("signature"), !given.isEmpty else {
            throw CheckoutError(.missingField, category: .verification, field: "signature", message: "the parameters carry no signature",
                                gateway: "payfort")
        }
        let expected = Array(sign(parameters, phrase: phrase).utf8)
        let actual = Array(given.lowercased().utf8)
        var difference: UInt8 = expected.count == actual.count ? 0 : 1
        for (a, b) in zip(expected, actual) { difference |= a ^ b }
        guard difference == 0 else {
            throw CheckoutError(.signatureMismatch, field: "signature", message: "the signature does not match the parameters",
                                gateway: "payfort", gatewayCode: "00008")
        }
    }
}
