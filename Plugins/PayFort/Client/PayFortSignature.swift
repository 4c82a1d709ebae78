import Crypto
import Foundation
import TillGatewayKit

/// PayFort's SHA signature: `hex(SHA(phrase + concat(sorted key=value) + phrase))`.
///
/// - Keys are sorted; pairs are concatenated with no separator; `signature` itself is left out, as
///   are top-level null or empty values.
/// - Nested objects render as `key={k=v, k=v}` in insertion order, with their empty values kept;
///   arrays as `[a, b]`.
/// - Requests are signed with the SHA request phrase; responses and notifications are verified with
///   the SHA response phrase, over the URL-decoded values as received.
public struct PayFortSignature: Sendable, Hashable {
    /// The SHA variant the merchant chose in PayFort's back office.
    public enum Algorithm: String, Sendable, Hashable, Codable {
        /// SHA-256 (the default).
        case sha256
        /// SHA-512.
        case sha512
    }

    /// The SHA variant used.
    public var algorithm: Algorithm

    /// A signer with `algorithm`.
    public init(_ algorithm: Algorithm = .sha256) { self.algorithm = algorithm }

    /// The exact string that is hashed: what `till sign payfort` prints when a gateway says "signature mismatch".
    public func stringToSign(_ parameters: PayFortParameters, phrase: String) -> String {
        let body = CanonicalString(pairs: parameters.members.map { ($0.key, $0.value.payFortSigningText) })
            .render(order: .sortedByKey, pairSeparator: "", keyValueSeparator: "=", omitEmptyValues: true, excluding: ["signature"])
        return phrase + body + phrase
    }

    /// The lower-case hex signature of `parameters`.
    public func sign(_ parameters: PayFortParameters, phrase: String) -> String {
        let data = Data(stringToSign(parameters, phrase: phrase).utf8)
        switch algorithm {
        case .sha256: return Hex.encode(SHA256.hash(data: data))
        case .sha512: return Hex.encode(SHA512.hash(data: data))
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
        guard ConstantTime.equals(sign(parameters, phrase: phrase), given.lowercased()) else {
            throw CheckoutError(.signatureMismatch, field: "signature", message: "the signature does not match the parameters",
                                gateway: "payfort", gatewayCode: "00008")
        }
    }
}
