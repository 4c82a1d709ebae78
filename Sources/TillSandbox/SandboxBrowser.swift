import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plays the customer's browser on the sandbox's own pages, for demos and tests.
public enum SandboxBrowser {
    /// Completes a PayFort 3-D Secure page of this sandbox (`…/payfort/3ds/{fort_id}`) and returns
    /// where the bank page sends the customer: the transaction's `return_url` with the signed result
    /// (the app's URL scheme), or nil when the transaction had no return URL.
    public static func completeThreeDSecure(at page: URL, approve: Bool = true) async throws -> URL? {
        var request = URLRequest(url: page.appendingPathComponent("complete"))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("outcome=\(approve ? "approve" : "decline")".utf8)
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)   // the app opens the app's URL
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location").flatMap(URL.init(string:))
    }
}
