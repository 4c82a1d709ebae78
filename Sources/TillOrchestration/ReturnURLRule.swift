import Foundation
import Till

/// Which return URLs a merchant accepts from its apps: an absolute `https` URL with a host, or a URL on
/// one of the custom schemes the merchant configured (``MerchantConfiguration/returnURLSchemes``).
/// Plain `http` only to `127.0.0.1` or `localhost`, and only when the merchant asked for it
/// (``MerchantConfiguration/allowLoopbackHTTPReturnURLs``, for sandbox and test use). A URL carrying a
/// user name or password, or longer than ``maxLength``, is refused whatever its scheme.
///
/// A return URL is where a gateway sends the customer's browser or wallet after paying: a URL the app
/// could choose freely would let anyone who can call the API make a gateway's page redirect to
/// `javascript:`, `data:` or a plain-HTTP page. The merchant server checks every offered URL with this
/// rule before anything is stored or sent to a gateway; an app can run the same check first.
///
/// ```swift
/// let rule = ReturnURLRule(customSchemes: ["tillshop"])
/// try rule.check(URL(string: "tillshop://till/return?till_state=…")!, field: "returnURL")   // fine
/// try rule.check(URL(string: "javascript:alert(1)")!, field: "returnURL")                   // throws
/// ```
public struct ReturnURLRule: Sendable, Hashable {
    /// Schemes that can never be a merchant's custom return scheme: the web's own (use an `https`
    /// URL) and those that run code or read local files.
    public static let reservedSchemes: Set<String> = ["http", "https", "javascript", "data", "file", "vbscript",
                                                      "blob", "about", "view-source", "filesystem"]

    /// The most characters a return URL may have: browsers and gateways truncate or refuse longer ones
    /// (a gateway module may allow fewer: PayFort's `return_url` holds 400).
    public static let maxLength = 2_048

    /// Hosts plain `http` may name when ``allowsLoopbackHTTP`` is on.
    public static let loopbackHosts: Set<String> = ["127.0.0.1", "localhost"]

    /// The merchant's custom schemes, lower-cased.
    public let customSchemes: Set<String>
    /// Whether `http://127.0.0.1…` and `http://localhost…` are accepted (sandbox and test use only).
    public let allowsLoopbackHTTP: Bool

    /// - Parameters:
    ///   - customSchemes: the custom URL schemes the merchant's apps registered (compared case-insensitively).
    ///   - allowsLoopbackHTTP: accept plain `http` to `127.0.0.1` or `localhost`.
    public init(customSchemes: some Sequence<String> = [String](), allowsLoopbackHTTP: Bool = false) {
        self.customSchemes = Set(customSchemes.map { $0.lowercased() })
        self.allowsLoopbackHTTP = allowsLoopbackHTTP
    }

    /// Why `scheme` cannot be configured as a custom return scheme, or `nil` when it can: an RFC 3986
    /// scheme (a letter, then letters, digits, `+`, `-` or `.`) that is not one of ``reservedSchemes``.
    public static func schemeProblem(_ scheme: String) -> String? {
        func letter(_ s: Unicode.Scalar) -> Bool { ("a"..."z").contains(s) || ("A"..."Z").contains(s) }
        let scalars = scheme.unicodeScalars
        guard let first = scalars.first, letter(first),
              scalars.allSatisfy({ letter($0) || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == "." })
        else { return "\"\(CheckoutError.printable(scheme))\" is not a URL scheme (a letter, then letters, digits, '+', '-' or '.')" }
        guard !reservedSchemes.contains(scheme.lowercased()) else {
            return "\"\(scheme.lowercased())\" cannot be a custom return scheme (https return URLs need no configuration; "
                + "\(reservedSchemes.subtracting(["https"]).sorted().joined(separator: ", ")) are never accepted)"
        }
        return nil
    }

    /// Why `url` is refused as a return URL, or `nil` when it is accepted. Looks at `url` alone,
    /// never resolving it against a base URL.
    public func problem(with url: URL) -> String? {
        guard url.absoluteString.utf8.count <= Self.maxLength else {
            return "longer than \(Self.maxLength) characters"
        }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let rawScheme = components.scheme, !rawScheme.isEmpty
        else { return "must be an absolute URL" }
        let scheme = rawScheme.lowercased()
        guard components.user == nil, components.password == nil else {
            return "must not carry a user name or password"
        }
        let host = components.host?.lowercased() ?? ""
        switch scheme {
        case "https":
            return host.isEmpty ? "an https return URL needs a host" : nil
        case "http":
            guard allowsLoopbackHTTP else { return "plain http is not accepted; use https or one of this merchant's returnURLSchemes" }
            return Self.loopbackHosts.contains(host) ? nil : "plain http is accepted only to 127.0.0.1 or localhost"
        default:
            if !Self.reservedSchemes.contains(scheme), customSchemes.contains(scheme) { return nil }
            let configured = customSchemes.isEmpty ? "none configured" : customSchemes.sorted().joined(separator: ", ")
            return "scheme \"\(CheckoutError.printable(scheme))\" is not accepted; use https or one of this merchant's returnURLSchemes (\(configured))"
        }
    }

    /// Refuses `url` unless the rule accepts it.
    /// - Throws: ``CheckoutError/Code/invalidReturnURL`` naming `field`.
    public func check(_ url: URL, field: String) throws(CheckoutError) {
        if let problem = problem(with: url) { throw CheckoutError(.invalidReturnURL, field: field, message: problem) }
    }

    /// Refuses a prepare request unless every return URL it offers is accepted: the first one refused is
    /// named by its JSON path under `path` (`body.returnURLs[1]`, or `body.returnURL` for a request
    /// that carries the single field).
    /// - Throws: ``CheckoutError/Code/invalidReturnURL``.
    public func check(_ request: PrepareRequest, path: String = "body") throws(CheckoutError) {
        if let urls = request.returnURLs {
            for (index, url) in urls.enumerated() { try check(url, field: "\(path).returnURLs[\(index)]") }
        } else if let url = request.returnURL {
            try check(url, field: "\(path).returnURL")
        }
    }
}

extension MerchantConfiguration {
    /// The rule this merchant's offered return URLs must pass.
    public var returnURLRule: ReturnURLRule {
        ReturnURLRule(customSchemes: returnURLSchemes, allowsLoopbackHTTP: allowLoopbackHTTPReturnURLs)
    }
}
