import Crypto
import Foundation
import Till
import TillGatewayKit

/// Worldline Connect's server API authentication, `v1HMAC`.
///
/// Read from connect-sdk-python3 6.3.0 (`worldline/connect/sdk/authentication/v1hmac_authenticator.py`,
/// commit e5dfdc8) and its tests, and checked against the Java (9.3.0) and .NET (7.2.0) SDKs' tests:
///
/// ```
/// METHOD\n
/// Content-Type value, or nothing\n
/// Date value\n
/// x-gcs-name:canonical value\n      (each header whose lower-cased name starts with "x-gcs", sorted by that name)
/// /path[?query]\n
/// ```
///
/// `Authorization: GCS v1HMAC:<apiKeyId>:<Base64(HMAC-SHA256(secretApiKey, stringToSign))>`, the
/// secret used as its UTF-8 bytes (not Base64-decoded, as the Java and .NET vectors with a
/// Base64-looking secret show).
///
/// The path and query are signed exactly as sent, percent-encoded, as the Python SDK does
/// (`ParseResult.path` and `.query`; its test expects `?aap=noot&mies=geen%20noot`). The Java SDK
/// (`URI.getQuery()`) and the .NET SDK (`Uri.UnescapeDataString`) sign the *decoded* query
/// (`?mies=no bar`); the API reference example (Java's `FromApiReference2`) signs the encoded one. The
/// two agree whenever the query has no percent-escapes, so a caller that can avoid them should.
public enum WorldlineV1HMAC {
    /// The string the gateway signs.
    ///
    /// - Parameters:
    ///   - method: the HTTP method, upper-cased here.
    ///   - contentType: the `Content-Type` header value as sent, or nil for a request without one.
    ///   - date: the `Date` header value as sent (``httpDate(_:)``).
    ///   - headers: the request's other headers, in the order sent. Only names starting with `X-GCS`
    ///     (any case) are signed; `Content-Type` and `Date` here are ignored (pass them above).
    ///   - path: the path as sent, percent-encoded (`/v1/1234/payments`).
    ///   - query: the query as sent, percent-encoded, without `?`; nil or empty for none.
    public static func stringToSign(method: String, contentType: String?, date: String,
                                    headers: [(name: String, value: String)], path: String, query: String?) -> String {
        var signed: [(name: String, value: String)] = []
        for header in headers {
            let name = header.name.lowercased()
            guard name.hasPrefix("x-gcs") else { continue }
            signed.append((name, canonicalHeaderValue(header.value)))
        }
        // Python's list.sort is stable: two headers of one name keep the order they were sent in.
        let ordered = signed.enumerated().sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }
        var text = method.uppercased() + "\n" + (contentType ?? "") + "\n" + date + "\n"
        for header in ordered { text += header.element.name + ":" + header.element.value + "\n" }
        text += path
        if let query, !query.isEmpty { text += "?" + query }
        return text + "\n"
    }

    /// ``stringToSign(method:contentType:date:headers:path:query:)`` with the headers as a dictionary
    /// (``TransportRequest/headers``), ordered by name.
    public static func stringToSign(method: String, contentType: String?, date: String,
                                    headers: [String: String], path: String, query: String?) -> String {
        let list = headers.sorted { ($0.key.lowercased(), $0.key) < ($1.key.lowercased(), $1.key) }.map { (name: $0.key, value: $0.value) }
        return stringToSign(method: method, contentType: contentType, date: date, headers: list, path: path, query: query)
    }

    /// The path and query of `url` as they go on the wire, percent-encoded, for signing.
    public static func resource(of url: URL) -> (path: String, query: String?) {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath ?? url.path
        return (path.isEmpty ? "/" : path, components?.percentEncodedQuery)
    }

    /// A header value as signed: each line break (`\n` or `\r\n`) and the whitespace after it become
    /// one space, then surrounding whitespace is trimmed.
    ///
    /// This is the Python SDK's `re.sub(r"\r?\n(?:(?![\r\n])\s)*", " ", value).strip()`; "whitespace"
    /// is what Python's `\s` and `str.strip()` mean for text (`str.isspace()`).
    public static func canonicalHeaderValue(_ value: String) -> String {
        let scalars = Array(value.unicodeScalars)
        var out: [Unicode.Scalar] = []
        var index = 0
        while index < scalars.count {
            let isBreak = scalars[index] == "\n" || (scalars[index] == "\r" && index + 1 < scalars.count && scalars[index + 1] == "\n")
            guard isBreak else {
                out.append(scalars[index])
                index += 1
                continue
            }
            index += scalars[index] == "\r" ? 2 : 1
            while index < scalars.count, scalars[index] != "\r", scalars[index] != "\n", pythonWhitespace.contains(scalars[index]) {
                index += 1
            }
            out.append(" ")
        }
        let start = out.firstIndex { !pythonWhitespace.contains($0) } ?? out.endIndex
        let end = (out.lastIndex { !pythonWhitespace.contains($0) }).map { $0 + 1 } ?? start
        var text = String.UnicodeScalarView()
        text.append(contentsOf: out[start..<max(start, end)])
        return String(text)
    }

    /// The characters Python's `str.isspace()` (and so `re`'s `\s` on text and `str.strip()`) counts as
    /// whitespace: Unicode's White_Space characters plus the four separators U+001C–U+001F.
    static let pythonWhitespace: Set<Unicode.Scalar> = Set(
        [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
         0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000].compactMap(Unicode.Scalar.init))

    /// `Base64(HMAC-SHA256(utf8(secretApiKey), utf8(stringToSign)))`.
    public static func signature(secretApiKey: String, stringToSign: String) -> String {
        Base64.encode(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: SymmetricKey(data: Array(secretApiKey.utf8))))
    }

    /// The `Authorization` header value: `GCS v1HMAC:{apiKeyId}:{signature}`.
    /// - Throws: ``CheckoutError`` (configuration) naming `apiKeyId` or `secretApiKey` when blank (the
    ///   Python SDK refuses them too), or `apiKeyId` when it holds a control character or `:`.
    public static func authorization(apiKeyId: String, secretApiKey: String, stringToSign: String) throws(CheckoutError) -> String {
        guard !apiKeyId.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw CheckoutError(.missingSecret, field: "apiKeyId", message: "the API key id is empty")
        }
        guard !apiKeyId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == ":" }) else {
            throw CheckoutError(.misconfigured, field: "apiKeyId", message: "the API key id holds a control character or ':'")
        }
        guard !secretApiKey.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw CheckoutError(.missingSecret, field: "secretApiKey", message: "the secret API key is empty")
        }
        return "GCS v1HMAC:" + apiKeyId + ":" + signature(secretApiKey: secretApiKey, stringToSign: stringToSign)
    }

    /// `date` as the `Date` header carries it: RFC 1123 in GMT with English names, the Python SDK's
    /// `strftime("%a, %d %b %Y %H:%M:%S GMT")` (`communicator.py` `_get_header_date_string`):
    /// `Sun, 22 Nov 2026 16:46:03 GMT`.
    public static func httpDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT") ?? TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { let text = String(value ?? 0); return text.count < 2 ? "0" + text : text }
        let year = String(parts.year ?? 0)
        return "\(days[((parts.weekday ?? 1) - 1) % 7]), \(two(parts.day)) \(months[((parts.month ?? 1) - 1) % 12]) "
            + "\(String(repeating: "0", count: max(0, 4 - year.count)) + year) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }
}
