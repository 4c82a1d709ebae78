import Crypto
import Foundation

/// The Server API's `v1HMAC` authentication, checked as the gateway would (connect-sdk-python3 6.3.0
/// `authentication/v1hmac_authenticator.py`; vectors from the python, java and .NET SDK tests).
///
/// The string to sign is
/// ```
/// METHOD\n Content-Type\n Date\n  x-gcs-name:canonical value\n (each, sorted by lower-cased name)  path[?query]\n
/// ```
/// and `Authorization` is `GCS v1HMAC:{apiKeyId}:{Base64(HMAC-SHA256(utf8(secretApiKey), utf8(string)))}`.
///
/// The SDKs disagree on the query: python signs it as sent (percent-encoded), java and .NET sign it
/// decoded (`mies=no bar`). The emulator accepts either; the path is always signed as sent.
enum WorldlineV1HMAC {
    /// `Authorization`'s parts.
    struct Credentials: Equatable {
        var apiKeyId: String
        var signature: String
    }

    /// Reads `GCS v1HMAC:{apiKeyId}:{signature}`; nil when it is not that shape.
    static func parse(_ authorization: String?) -> Credentials? {
        guard let authorization else { return nil }
        let prefix = "GCS v1HMAC:"
        guard authorization.hasPrefix(prefix) else { return nil }
        let rest = authorization.dropFirst(prefix.count)
        guard let colon = rest.lastIndex(of: ":") else { return nil }
        let keyId = String(rest[..<colon])
        let signature = String(rest[rest.index(after: colon)...])
        guard !keyId.isEmpty, !signature.isEmpty else { return nil }
        return Credentials(apiKeyId: keyId, signature: signature)
    }

    /// A header value as signed: every line break (with the blanks after it) becomes one space, then
    /// the value is trimmed (python `re.sub(r"\r?\n(?:(?![\r\n])\s)*", " ", v).strip()`).
    static func canonicalValue(_ value: String) -> String {
        var output = ""
        var scalars = Array(value.unicodeScalars)[...]
        while let scalar = scalars.first {
            scalars = scalars.dropFirst()
            if scalar == "\r", scalars.first == "\n" {
                continue
            }
            if scalar == "\n" {
                while let next = scalars.first, next != "\r", next != "\n", next.properties.isWhitespace {
                    scalars = scalars.dropFirst()
                }
                output += " "
                continue
            }
            output.unicodeScalars.append(scalar)
        }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The string to sign for a request.
    /// - Parameters:
    ///   - headers: every request header (name, value); only `Content-Type`, `Date` and `X-GCS-*` count.
    ///   - resource: the path and query as they are to be signed.
    static func stringToSign(method: String, headers: [(name: String, value: String)], resource: String) -> String {
        func first(_ name: String) -> String {
            headers.first { $0.name.lowercased() == name }.map(\.value) ?? ""
        }
        var text = method.uppercased() + "\n" + first("content-type") + "\n" + first("date") + "\n"
        let gcs = headers.filter { $0.name.lowercased().hasPrefix("x-gcs") }
            .map { (name: $0.name.lowercased(), value: canonicalValue($0.value)) }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        for header in gcs { text += header.name + ":" + header.value + "\n" }
        return text + resource + "\n"
    }

    /// Base64(HMAC-SHA256(utf8(secret), utf8(string))).
    static func signature(of string: String, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(string.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// The resources a signer may have signed for this raw path and query: as sent, and with the
    /// query percent-decoded (java/.NET).
    static func candidateResources(rawPath: String, rawQuery: String?) -> [String] {
        guard let rawQuery, !rawQuery.isEmpty else { return [rawPath] }
        var candidates = [rawPath + "?" + rawQuery]
        if let decoded = rawQuery.removingPercentEncoding, decoded != rawQuery {
            candidates.append(rawPath + "?" + decoded)
        }
        return candidates
    }

    /// Whether `credentials` sign this request with `secret`, for any candidate resource.
    static func verify(_ credentials: Credentials, secret: String, method: String, headers: [(name: String, value: String)],
                       rawPath: String, rawQuery: String?) -> Bool {
        var matched = false
        for resource in candidateResources(rawPath: rawPath, rawQuery: rawQuery) {
            let expected = signature(of: stringToSign(method: method, headers: headers, resource: resource), secret: secret)
            if constantTimeEqual(expected, credentials.signature) { matched = true }
        }
        return matched
    }
}

/// The webhook signature (docs `documentation/webhooks/event-structure/`; python
/// `webhooks/signature_validator.py`): Base64(HMAC-SHA256(utf8(secretKey), raw body)).
enum WorldlineWebhookSignature {
    static func sign(_ body: [UInt8], secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))
        return Data(mac).base64EncodedString()
    }
}

/// Base64 decoding that takes the standard and the URL-safe alphabets, with or without padding and
/// with line breaks (the client SDKs encode `X-GCS-ClientMetaInfo` differently: swift and js
/// standard, android URL-safe without padding).
enum LenientBase64 {
    static func decode(_ text: String) -> Data? {
        var cleaned = text.filter { !$0.isWhitespace }
        cleaned = cleaned.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while cleaned.hasSuffix("=") { cleaned.removeLast() }
        guard !cleaned.isEmpty, cleaned.count % 4 != 1 else { return nil }
        cleaned += String(repeating: "=", count: (4 - cleaned.count % 4) % 4)
        return Data(base64Encoded: cleaned)
    }

    /// Strict unpadded base64url (JWE segments): only `A–Z a–z 0–9 - _`.
    static func decodeURL(_ text: Substring) -> [UInt8]? {
        guard text.utf8.allSatisfy({ byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }), text.count % 4 != 1 else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}
