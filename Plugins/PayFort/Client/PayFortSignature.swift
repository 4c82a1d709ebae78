import Crypto
import Foundation
import TillGatewayKit

/// PayFort's SHA signature: `hex(SHA(phrase + concat(sorted key=value) + phrase))`.
///
/// - Keys are sorted; pairs are concatenated with no separator; `signature` itself is left out.
/// - Nested objects render as `key={k=v, k=v}` in insertion order, with their empty values kept;
///   arrays as `[a, b]`.
/// - Requests are signed with the SHA request phrase; responses and notifications are verified with
///   the SHA response phrase, over the URL-decoded values as received.
///
/// The vendor's official SDKs disagree on a top-level key whose value is empty: the .NET SDK skips it
/// (payfort/payfort-dotnet-sdk `SignatureProvider`, whose notification vector reproduces only that
/// way), the PHP SDK signs it as `key=` (payfort/payfort-php-sdk `APSSignature::implodeParamsToString`).
/// Till signs its own requests with no empty values at all, so both rules give the same string; a
/// received message verifies when it verifies under either rule (``EmptyValues``). Whoever reads a
/// verified message must treat an empty value as absent (``PayFortParameters/signedText(_:)``): under
/// the .NET rule it was not signed.
public struct PayFortSignature: Sendable, Hashable {
    /// The SHA variant the merchant chose in PayFort's back office.
    public enum Algorithm: String, Sendable, Hashable, Codable {
        /// SHA-256 (the default).
        case sha256
        /// SHA-512.
        case sha512
    }

    /// How a top-level key with an empty (or `null`) value enters the string to sign.
    public enum EmptyValues: String, Sendable, Hashable, CaseIterable {
        /// Left out, as the .NET SDK does (and as Till signs its requests).
        case skipped
        /// Signed as `key=`, as the PHP SDK does.
        case signed
    }

    /// The SHA variant used.
    public var algorithm: Algorithm

    /// A signer with `algorithm`.
    public init(_ algorithm: Algorithm = .sha256) { self.algorithm = algorithm }

    /// The exact string that is hashed: what `till sign payfort` prints when a gateway says "signature mismatch".
    public func stringToSign(_ parameters: PayFortParameters, phrase: String, emptyValues: EmptyValues = .skipped) -> String {
        let body = CanonicalString(pairs: parameters.members.map { ($0.key, $0.value.payFortSigningText) })
            .render(order: .sortedByKey, pairSeparator: "", keyValueSeparator: "=", omitEmptyValues: emptyValues == .skipped,
                    excluding: ["signature"])
        return phrase + body + phrase
    }

    /// The lower-case hex signature of `parameters`.
    public func sign(_ parameters: PayFortParameters, phrase: String, emptyValues: EmptyValues = .skipped) -> String {
        let data = Data(stringToSign(parameters, phrase: phrase, emptyValues: emptyValues).utf8)
        switch algorithm {
        case .sha256: return Hex.encode(SHA256.hash(data: data))
        case .sha512: return Hex.encode(SHA512.hash(data: data))
        }
    }

    /// Checks the `signature` parameter (hex, either case) in constant time, under each empty-value rule
    /// in turn, and returns the rule it verified under.
    /// - Throws: ``CheckoutError/Code/signatureMismatch`` (category `verification`) naming `signature`,
    ///   or ``CheckoutError/Code/missingField`` when there is none.
    @discardableResult
    public func verify(_ parameters: PayFortParameters, phrase: String) throws(CheckoutError) -> EmptyValues {
        guard let given = parameters.text("signature"), !given.isEmpty else {
            throw CheckoutError(.missingField, category: .verification, field: "signature", message: "the parameters carry no signature",
                                gateway: "payfort")
        }
        let lowered = given.lowercased()
        var matched: EmptyValues?
        // Both comparisons always run, so the time taken does not say which rule was tried.
        for rule in EmptyValues.allCases where ConstantTime.equals(sign(parameters, phrase: phrase, emptyValues: rule), lowered) {
            matched = matched ?? rule
        }
        guard let matched else {
            throw CheckoutError(.signatureMismatch, field: "signature", message: "the signature does not match the parameters",
                                gateway: "payfort", gatewayCode: "00008")
        }
        return matched
    }
}
