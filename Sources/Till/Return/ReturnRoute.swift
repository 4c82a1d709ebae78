import Foundation

/// A place the customer comes back to: a custom URL scheme or a universal link.
///
/// Matching is strict: the scheme, host and path must equal the route's (scheme and host
/// case-insensitively, path exactly), the URL must carry no user, password or port the route does
/// not have, and the query must carry the per-attempt state exactly once.
public struct ReturnRoute: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Lower-cased scheme (`"myapp"`, `"https"`).
    public let scheme: String
    /// Lower-cased host (`"till"` for a custom scheme, `"shop.example.com"` for a universal link).
    public let host: String
    /// The exact path, starting with `/`.
    public let path: String

    /// A custom-scheme route: `scheme://host/path`.
    ///
    /// - Throws: ``CheckoutError`` (``CheckoutError/Code/misconfigured``) for a scheme that is not a
    ///   valid RFC 3986 scheme, for `http`/`https` (use ``universalLink(host:path:)``), or a path
    ///   that does not start with `/`.
    public static func customScheme(_ scheme: String, host: String = "till", path: String = "/return") throws(CheckoutError) -> ReturnRoute {
        let lower = scheme.lowercased()
        guard let first = lower.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII,
              lower.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)) })
        else {
            throw CheckoutError(.misconfigured, field: "returnRoute.scheme", message: "\"\(CheckoutError.printable(scheme))\" is not a valid URL scheme")
        }
        guard lower != "http", lower != "https" else {
            throw CheckoutError(.misconfigured, field: "returnRoute.scheme", message: "use a universal-link route for http(s) returns")
        }
        return try ReturnRoute(scheme: lower, host: host, path: path)
    }

    /// A universal-link route: `https://host/path`.
    public static func universalLink(host: String, path: String) throws(CheckoutError) -> ReturnRoute {
        try ReturnRoute(scheme: "https", host: host, path: path)
    }

    private init(scheme: String, host: String, path: String) throws(CheckoutError) {
        let host = host.lowercased()
        guard !host.isEmpty, host.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".") }) else {
            throw CheckoutError(.misconfigured, field: "returnRoute.host", message: "\"\(CheckoutError.printable(host))\" is not a valid host")
        }
        guard path.hasPrefix("/"), !path.contains("?"), !path.contains("#") else {
            throw CheckoutError(.misconfigured, field: "returnRoute.path", message: "path must start with '/' and hold no query or fragment")
        }
        // The path is written as a URL carries it (RFC 3986 path characters, anything else percent-encoded), since that
        // is what a returning URL is compared with: a route with a space in it would never match the URL built on it.
        guard Self.isPercentEncodedPath(path) else {
            throw CheckoutError(.misconfigured, field: "returnRoute.path",
                                message: "path must be written as in a URL: letters, digits, -._~!$&'()*+,;=:@/ and %XX (a space is %20)")
        }
        self.scheme = scheme
        self.host = host
        self.path = path
    }

    public var description: String { "\(scheme)://\(host)\(path)" }

    /// True for an `https` universal link, false for a custom scheme.
    public var isUniversalLink: Bool { scheme == "https" }

    private enum CodingKeys: String, CodingKey { case scheme, host, path }

    /// Decodes through the same validation as ``customScheme(_:host:path:)`` and
    /// ``universalLink(host:path:)``: a route from a file is as strict as one built in code.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let scheme = try c.decode(String.self, forKey: .scheme)
        let host = try c.decode(String.self, forKey: .host)
        let path = try c.decode(String.self, forKey: .path)
        do {
            self = scheme.lowercased() == "https"
                ? try .universalLink(host: host, path: path)
                : try .customScheme(scheme, host: host, path: path)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message, underlyingError: error))
        }
    }

    /// The return URL for one attempt: the route plus the state query parameter.
    func url(state: String, parameter: String) throws(CheckoutError) -> URL {
        var components = URLComponents()
        components.scheme = scheme
        components.host = host
        components.percentEncodedPath = path
        components.queryItems = [URLQueryItem(name: parameter, value: state)]
        guard let url = components.url else {
            throw CheckoutError(.misconfigured, field: "returnRoute", message: "cannot build a URL on \(self)")
        }
        return url
    }

    /// Whether `path` holds only RFC 3986 path characters and well-formed `%XX` escapes.
    static func isPercentEncodedPath(_ path: String) -> Bool {
        let scalars = Array(path.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let c = scalars[index]
            if c == "%" {
                guard index + 2 < scalars.count, scalars[index + 1].properties.isASCIIHexDigit, scalars[index + 2].properties.isASCIIHexDigit else {
                    return false
                }
                index += 3
                continue
            }
            guard c.isASCII, c.properties.isAlphabetic || ("0"..."9").contains(c) || "-._~!$&'()*+,;=:@/".unicodeScalars.contains(c) else {
                return false
            }
            index += 1
        }
        return true
    }

    /// Whether `components` are on this route (ignoring the query).
    func matches(_ components: URLComponents) -> Bool {
        guard let scheme = components.scheme?.lowercased(), scheme == self.scheme,
              let host = components.host?.lowercased(), host == self.host,
              components.user == nil, components.password == nil, components.port == nil
        else { return false }
        return components.percentEncodedPath == self.path
    }
}
