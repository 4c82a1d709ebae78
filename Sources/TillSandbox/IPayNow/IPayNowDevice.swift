import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the customer's phone does with the iPayNow emulator: hand the iOS cross-border plugin its
/// `payData` and scheme through the emulator's stand-in (`POST {base}/sandbox-only/plugin/pay`, not an
/// iPayNow API), and pay, cancel or fail in the wallet. Used by ``SandboxIPayNowCustomer``; also usable
/// on its own in tests and demos.
public enum IPayNowDevice {
    /// Why the device could not do what it was asked.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// Calls the plugin stand-in and returns what the app's delegate and app delegate receive.
    /// - Parameters:
    ///   - baseURL: the emulator's base URL (``RunningSandbox/baseURL(of:)``, `…/ipaynow`).
    ///   - payment: the `payData`, the scheme and what the customer does.
    /// - Throws: ``Failure`` when the stand-in refuses the call (a body not of its shape) or is unreachable.
    public static func pay(baseURL: URL, _ payment: IPayNowEmulator.PluginPayment) async throws -> IPayNowEmulator.PluginResult {
        var request = URLRequest(url: baseURL.appendingPathComponent(IPayNowEmulator.pluginPath))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(payment)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200,
              let result = try? JSONDecoder().decode(IPayNowEmulator.PluginResult.self, from: data) else {
            let message = (try? JSONValue.parse(Array(data)))?["error"]?.stringValue ?? "HTTP error"
            throw Failure(description: "the iPayNow plugin stand-in refused the call: " + message)
        }
        return result
    }
}
