import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the customer's phone and browser do with the ecommpay emulator: hand the mobile SDK its signed
/// parameters through the emulator's stand-in (`POST {base}/sandbox-only/sdk/pay`, not an ecommpay API),
/// and play the Payment Page (card form, 3-D Secure page). Used by ``SandboxEcommpayCustomer``; also
/// usable on its own in tests and demos.
public enum EcommpayDevice {
    /// Why the device could not do what it was asked.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// Calls the SDK stand-in and returns the SDK's `PaymentResult`.
    /// - Parameters:
    ///   - baseURL: the emulator's base URL (``RunningSandbox/baseURL(of:)``, `…/ecommpay`).
    ///   - paramsJSON: the signed parameters object as JSON text, exactly as the merchant server signed it.
    ///   - signature: its signature.
    ///   - method: `card` or `apple_pay`.
    ///   - card: what the customer types (card payments).
    ///   - outcome: `pay` or `cancel` (the customer closes the form).
    ///   - mockMode: `disabled`, `success` or `decline` (the SDK's `MockModeType`).
    ///   - waitForCallbacks: answer only once the callbacks this payment causes were acknowledged or ran out of tries.
    /// - Throws: ``Failure`` when `paramsJSON` is not JSON, the stand-in refuses the call, or it is unreachable.
    public static func pay(baseURL: URL, paramsJSON: String, signature: String, method: String = "card",
                           card: EcommpayEmulator.SDKCard? = nil, outcome: String = "pay", mockMode: String? = nil,
                           waitForCallbacks: Bool = false) async throws -> EcommpayEmulator.SDKPaymentResult {
        guard let params = try? JSONValue.parse(paramsJSON) else { throw Failure(description: "params: not JSON") }
        var members: [JSONValue.Member] = [.init(key: "params", value: params), .init(key: "signature", value: .string(signature)),
                                           .init(key: "method", value: .string(method)), .init(key: "outcome", value: .string(outcome))]
        if let card {
            members.append(.init(key: "card", value: .object([
                .init(key: "number", value: .string(card.number)), .init(key: "expiry_month", value: .string(card.expiry_month)),
                .init(key: "expiry_year", value: .string(card.expiry_year)), .init(key: "cvv", value: .string(card.cvv)),
                .init(key: "holder", value: .string(card.holder)),
            ])))
        }
        if let mockMode { members.append(.init(key: "mock_mode", value: .string(mockMode))) }
        if waitForCallbacks { members.append(.init(key: "wait_for_callbacks", value: .bool(true))) }
        var request = URLRequest(url: baseURL.appendingPathComponent(EcommpayEmulator.sdkPath))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(JSONValue.object(members).serializedBytes)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200,
              let result = try? JSONDecoder().decode(EcommpayEmulator.SDKPaymentResult.self, from: data) else {
            let message = (try? JSONValue.parse(Array(data)))?["error"]?.stringValue ?? "HTTP error"
            throw Failure(description: "the ecommpay SDK stand-in refused the call: " + message)
        }
        return result
    }

    /// What the customer does on the Payment Page.
    public enum PageAction: Sendable, Hashable {
        /// Pays with this card; `threeDSecurePasses` answers the 3-D Secure page if one comes.
        case pay(EcommpayEmulator.SDKCard, threeDSecurePasses: Bool)
        /// Closes the page.
        case cancel
    }

    /// Where the page left the customer.
    public struct PageOutcome: Sendable, Hashable {
        /// The HTTP status of the last page.
        public var status: Int
        /// Where the page redirected the customer (the merchant's success or fail URL), if it did.
        public var redirect: URL?
        /// The last page's text (an error or result page), when there was no redirect.
        public var page: String?
    }

    /// Opens a Payment Page URL and plays the customer on it (the card form, then the 3-D Secure page
    /// when the card asks for one), without following the final redirect.
    /// - Throws: ``Failure`` when a page has no form to post.
    public static func playPaymentPage(_ url: URL, _ action: PageAction) async throws -> PageOutcome {
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        var current = try await fetch(URLRequest(url: url), session: session)
        guard current.status == 200, let action1 = formAction(current.text) else {
            return PageOutcome(status: current.status, redirect: nil, page: current.text)
        }
        var fields: [(String, String)]
        var threeDSecure = true
        switch action {
        case .cancel:
            fields = [("outcome", "cancel")]
        case .pay(let card, let passes):
            fields = [("card_number", card.number), ("expiry_month", card.expiry_month), ("expiry_year", card.expiry_year),
                      ("cvv", card.cvv), ("card_holder", card.holder), ("outcome", "pay")]
            threeDSecure = passes
        }
        current = try await post(fields, to: action1, relativeTo: url, session: session)
        if current.status == 200, let next = formAction(current.text), next.contains("/3ds/") {
            current = try await post([("outcome", threeDSecure ? "pass" : "fail")], to: next, relativeTo: url, session: session)
        }
        return PageOutcome(status: current.status, redirect: current.location,
                           page: current.location == nil ? current.text : nil)
    }

    private struct Fetched {
        var status: Int
        var text: String
        var location: URL?
    }

    private static func fetch(_ request: URLRequest, session: URLSession) async throws -> Fetched {
        let (data, response) = try await session.data(for: request)
        let http = response as? HTTPURLResponse
        return Fetched(status: http?.statusCode ?? 0, text: String(decoding: data, as: UTF8.self),
                       location: http?.value(forHTTPHeaderField: "Location").flatMap(URL.init(string:)))
    }

    private static func post(_ fields: [(String, String)], to action: String, relativeTo page: URL, session: URLSession) async throws -> Fetched {
        guard let url = URL(string: action, relativeTo: page)?.absoluteURL else { throw Failure(description: "bad form action \(action)") }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(fields.map { FormEncoding.escape($0.0) + "=" + FormEncoding.escape($0.1) }.joined(separator: "&").utf8)
        return try await fetch(request, session: session)
    }

    /// The `action` of the first `<form method="post" action="…">` of a sandbox page.
    static func formAction(_ html: String) -> String? {
        guard let range = html.range(of: "action=\"") else { return nil }
        let rest = html[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}
