import Foundation

/// The signature of an event Till posts to a merchant's backend, and its check.
///
/// Till signs each delivery with the merchant's webhook secret and sends the signature in the
/// `Till-Signature` header:
///
///     Till-Signature: t=1700000000,v1=e63cc634cff5bd45c77d5bb92e4e0454addbc043c93f139ebb6d11e31a42775c
///
/// - `t` is the time of signing, in Unix seconds, written in ASCII decimal digits.
/// - Each `v1` is the lowercase hexadecimal HMAC-SHA256 of the *signed payload* under one secret: the
///   key is the UTF-8 bytes of the secret; the message is the ASCII decimal digits of `t`, then the
///   byte `.` (0x2E), then the exact bytes of the request body as received (before any JSON parsing).
/// - While a secret is being rotated, both secrets sign and the header carries one `v1` per secret, the
///   current secret first: `t=<t>,v1=<hex under the current secret>,v1=<hex under the previous one>`.
///
/// A receiver accepts a delivery when any `v1` equals the code computed with any of its secrets
/// (compared in constant time) and `t` is no further than the tolerance (300 seconds unless told)
/// from its own clock, in either direction. The timestamp is signed so that a delivery captured once
/// cannot be replayed later: changing `t` breaks the signature, and an old `t` is refused.
///
/// Header grammar: parts separated by `,`, each `scheme=value` with spaces or tabs around it ignored.
/// Exactly one `t` part whose value is one or more ASCII digits; zero or more `v1` parts; parts with any
/// other scheme (`v0=…`, a future `v2=…`) are ignored.
///
/// Deliveries also carry a `Till-Event-Id: evt_…` header (``eventIDHeaderName``). It is informational
/// and not signed; the signed body carries the same id.
///
/// This file and `SHA256.swift` depend on Foundation only, so a receiver can copy them into its own code.
public struct WebhookSignature: Sendable {
    /// `Till-Signature`: the header that carries the timestamp and the signatures.
    public static let headerName = "Till-Signature"

    /// `Till-Event-Id`: the header that names the delivered event (`evt_…`). Informational: not signed;
    /// the signed body carries the same id.
    public static let eventIDHeaderName = "Till-Event-Id"

    /// The default tolerance of `verify(header:body:secrets:tolerance:now:)`: 300 seconds
    /// between the signed timestamp and the receiver's clock, in either direction.
    public static let defaultTolerance: Int64 = 300

    /// Why a delivery was refused.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The header is not `scheme=value` parts separated by commas, or it has no `t`, more than one `t`,
        /// or a `t` that is not ASCII decimal digits fitting a 64-bit signed integer.
        case malformedHeader
        /// The header is well formed but carries no `v1` signature.
        case noSignature
        /// A signature matches, but the signed timestamp is further from now than the tolerance. The value is
        /// the delivery's age in seconds, `now - t`: positive when it was signed in the past, negative when
        /// it is dated in the future (clamped to the 64-bit range).
        case timestampOutsideTolerance(Int64)
        /// No `v1` signature equals the code computed with any of the secrets: the body or the timestamp was
        /// changed, or it was signed with another secret.
        case noMatchingSignature

        public var description: String {
            switch self {
            case .malformedHeader:
                "the \(WebhookSignature.headerName) header is malformed (it needs one t=<unix seconds> and v1=<hex> parts)"
            case .noSignature:
                "the \(WebhookSignature.headerName) header carries no v1 signature"
            case .timestampOutsideTolerance(let age) where age < 0:
                "the signed timestamp is \(age.magnitude) s in the future, beyond the tolerance"
            case .timestampOutsideTolerance(let age):
                "the signed timestamp is \(age) s old, beyond the tolerance (an old delivery replayed, or a wrong clock)"
            case .noMatchingSignature:
                "no v1 signature matches the body under any of the secrets"
            }
        }
    }

    /// The `Till-Signature` header value for `body` signed at `timestamp`: `t=<timestamp>` followed by one
    /// `,v1=<hex>` per secret, in the order given (during a rotation: the current secret first).
    ///
    /// Each `<hex>` is the lowercase hexadecimal HMAC-SHA256, keyed with the secret's UTF-8 bytes, of the
    /// ASCII decimal digits of `timestamp`, the byte `.`, and the exact bytes of `body`.
    ///
    /// - Parameters:
    ///   - timestamp: The time of signing in Unix seconds; not negative.
    ///   - body: The exact bytes that will be sent as the request body.
    ///   - secrets: At least one secret.
    public static func header(timestamp: Int64, body: some Collection<UInt8>, secrets: [String]) -> String {
        precondition(!secrets.isEmpty, "a Till-Signature header needs at least one secret")
        precondition(timestamp >= 0, "a Till-Signature timestamp is Unix seconds, not negative")
        return "t=\(timestamp)" + secrets.map { ",v1=" + signature(secret: $0, timestamp: timestamp, body: body) }.joined()
    }

    /// Checks a delivery's `Till-Signature` header against its raw body and returns the signed timestamp.
    ///
    /// The header is parsed as the type's documentation describes (one `t`, any number of `v1`, other schemes
    /// ignored). The delivery is accepted when any `v1` equals, compared in constant time, the lowercase hex
    /// HMAC-SHA256 of `"<t>." + body` under any of `secrets` (keys: their UTF-8 bytes), and `|now - t|` is at
    /// most `tolerance`. The signature is checked before the time, so
    /// ``Failure/timestampOutsideTolerance(_:)`` means a genuine delivery that is too old (or a clock that is
    /// wrong).
    ///
    /// - Parameters:
    ///   - header: The `Till-Signature` header's value.
    ///   - body: The request body exactly as received, before any parsing.
    ///   - secrets: Every secret currently accepted (during a rotation: the new and the old one).
    ///   - tolerance: The largest difference allowed between `t` and `now`, in seconds (300 by default; a
    ///     negative tolerance refuses every delivery).
    ///   - now: The receiver's clock, in Unix seconds.
    /// - Returns: The signed timestamp `t`.
    /// - Throws: ``Failure``: why the delivery must be refused.
    public static func verify(header: String, body: some Collection<UInt8>, secrets: [String],
                              tolerance: Int64 = defaultTolerance, now: Int64) throws(Failure) -> Int64 {
        let parsed = try parse(header)
        guard !parsed.signatures.isEmpty else { throw .noSignature }
        var matched = false
        for secret in secrets {
            let expected = Array(signature(secret: secret, timestamp: parsed.timestamp, body: body).utf8)
            for given in parsed.signatures where constantTimeEqual(expected, given) { matched = true }
        }
        guard matched else { throw .noMatchingSignature }
        let (age, overflow) = now.subtractingReportingOverflow(parsed.timestamp)
        if overflow { throw .timestampOutsideTolerance(now < 0 ? .min : .max) }
        guard tolerance >= 0, age.magnitude <= tolerance.magnitude else { throw .timestampOutsideTolerance(age) }
        return parsed.timestamp
    }

    /// `verify(header:body:secrets:tolerance:now:)` against a `Date`, this machine's clock
    /// unless told (its Unix time rounded down to whole seconds).
    public static func verify(header: String, body: some Collection<UInt8>, secrets: [String],
                              tolerance: Int64 = defaultTolerance, now: Date = Date()) throws(Failure) -> Int64 {
        let seconds = now.timeIntervalSince1970.rounded(.down)
        let clamped = seconds.isNaN ? 0 : Int64(exactly: seconds) ?? (seconds < 0 ? .min : .max)
        return try verify(header: header, body: body, secrets: secrets, tolerance: tolerance, now: clamped)
    }

    // MARK: - The rules, each written once

    /// The signed payload's code under one secret: lowercase hex of HMAC-SHA256(key: the secret's UTF-8
    /// bytes, message: the ASCII decimal digits of `timestamp`, `.`, then `body`). The only place the signed
    /// payload is built; ``header(timestamp:body:secrets:)`` and `verify(header:body:secrets:tolerance:now:)`
    /// both call it.
    static func signature(secret: String, timestamp: Int64, body: some Collection<UInt8>) -> String {
        var mac = HMACSHA256(key: secret.utf8)
        mac.update("\(timestamp).".utf8)
        mac.update(body)
        return hex(mac.finalize())
    }

    /// A header's timestamp and its `v1` values (as UTF-8 bytes), in order.
    struct Parsed: Equatable {
        var timestamp: Int64
        var signatures: [[UInt8]]
    }

    /// Parses a `Till-Signature` value: `,`-separated `scheme=value` parts, spaces and tabs around each
    /// ignored; exactly one `t` of ASCII digits; any number of `v1`; other schemes ignored.
    static func parse(_ header: String) throws(Failure) -> Parsed {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for rawPart in header.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let part = trimmed(rawPart)
            guard let equals = part.firstIndex(of: UInt8(ascii: "=")) else { throw .malformedHeader }
            let scheme = part[..<equals]
            let value = part[part.index(after: equals)...]
            if scheme.elementsEqual("t".utf8) {
                guard timestamp == nil, !value.isEmpty,
                      value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                      let seconds = Int64(String(decoding: value, as: UTF8.self)) else { throw .malformedHeader }
                timestamp = seconds
            } else if scheme.elementsEqual("v1".utf8) {
                signatures.append(Array(value))
            }
        }
        guard let timestamp else { throw .malformedHeader }
        return Parsed(timestamp: timestamp, signatures: signatures)
    }

    /// `bytes` without the spaces and tabs at either end.
    private static func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else {
            return bytes[bytes.endIndex...]
        }
        return bytes[first...last]
    }

    /// Whether `a` and `b` are equal, taking the same time for every pair of inputs of the same lengths.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Lowercase hexadecimal, two digits per byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
