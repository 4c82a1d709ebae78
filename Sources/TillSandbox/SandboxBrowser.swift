import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plays the customer's browser on the sandbox's own pages, for demos and tests.
public enum SandboxBrowser {
    /// Completes a PayFort 3-D Secure page of this sandbox (the `3ds_url`,
    /// `…/payfort/secure3dsSimulator?FORTSESSIONID=…`: the customer approves or fails authentication)
    /// and returns where the bank page sends the customer, without following it: the transaction's
    /// `return_url` with the signed result, or nil when the transaction had no return URL.
    public static func completeThreeDSecure(at page: URL, approve: Bool = true) async throws -> URL? {
        var request = URLRequest(url: page)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("outcome=\(approve ? "approve" : "fail")".utf8)
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)   // the app opens the app's URL
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location").flatMap(URL.init(string:))
    }

    /// Acts on a Citcon landing or QR page of this sandbox (`…/citcon/landing/v1/landing/{id}` or
    /// `…/v1/qr/{id}`: the `content` of a charge's `redirect` or `qr` client entry) and returns where
    /// the page sends the customer, without following it: the charge's success, fail or cancel URL
    /// (a cancel without a cancel URL goes to the fail URL), or nil when the page answered without
    /// a redirect (unknown page, bad outcome, no such URL on the charge).
    /// - Parameter outcome: `complete`, `fail` or `cancel`.
    public static func completeCitconPage(at page: URL, outcome: String) async throws -> URL? {
        var request = URLRequest(url: page.appendingPathComponent("complete"))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(("outcome=" + FormEncoding.escape(outcome)).utf8)
        return try await location(of: request)
    }

    /// Plays the wallet app on a Citcon charge's `mobile_native` launch content and returns where the
    /// wallet sends the customer back, without following it: the charge's URL for the result with the
    /// SDK's `code` (`0`, `-1`, `-2`, or `6001` for a cancelled Alipay payment), or nil when the wallet
    /// refused the content (it matches no charge, e.g. it was tampered with) or the charge has no URL.
    /// - Parameters:
    ///   - baseURL: the sandbox's ``RunningSandbox/baseURL``.
    ///   - method: the wallet: `wechatpay` (or `wechat`), `alipay`, `upop` (or `unionpay`).
    ///   - content: the `mobile_native` entry's `content` JSON string, parsed into its members.
    ///   - outcome: `complete`, `fail` or `cancel`.
    public static func payInCitconWallet(sandbox baseURL: URL, method: String, content: [String: String],
                                         outcome: String) async throws -> URL? {
        var fields = content.mapValues(JSONValue.string)
        fields["outcome"] = .string(outcome)
        var request = URLRequest(url: baseURL.appendingPathComponent("citcon").appendingPathComponent("wallet")
            .appendingPathComponent(method).appendingPathComponent("pay"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(JSONValue.sortedObject(fields).serializedBytes)
        return try await location(of: request)
    }

    /// Sends `request` without following redirects and returns the answer's `Location`, if any.
    private static func location(of request: URLRequest) async throws -> URL? {
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location").flatMap(URL.init(string:))
    }
}
