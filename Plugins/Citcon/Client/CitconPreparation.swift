import Foundation
import Till

/// What Citcon's server half hands its app half for one attempt, carried in ``Preparation/parameters``: the one
/// contract between the two halves, its keys written here only. On the wire: `charge_id`, `access_token`,
/// `access_token_expiry` (Unix seconds), `environment`, `method`, `launch` (`wallet` or `page`), then `wallet` and
/// one `wallet.<key>` per parameter of the wallet SDK, or `page_url`.
///
/// Reading is lenient (a field that is absent reads as `nil`); what the app may do with it is decided by
/// ``CitconGateway/present(_:input:)``, which refuses a preparation from another environment or with nothing to open.
public struct CitconPreparation: Sendable, Hashable {
    /// What the app does with the charge.
    public enum Launch: Sendable, Hashable {
        /// Launch the wallet's SDK with the `mobile_native` entry's parameters.
        case wallet(String, parameters: [String: String])
        /// Open the `mobile_browser` page (the URL as Citcon gave it).
        case page(String)
    }

    public var chargeID: String?
    /// The client token for the app's status reads, never the server's.
    public var accessToken: String?
    /// When the client token expires, in Unix seconds.
    public var accessTokenExpiry: Int64?
    /// The Citcon environment the charge was made in (``CitconEnvironment/name``).
    public var environment: String?
    /// Citcon's payment method (`wechatpay`, `alipay`, `upop`, …).
    public var method: String?
    public var launch: Launch?

    public init(chargeID: String?, accessToken: String?, accessTokenExpiry: Int64?, environment: String?, method: String?, launch: Launch?) {
        self.chargeID = chargeID
        self.accessToken = accessToken
        self.accessTokenExpiry = accessTokenExpiry
        self.environment = environment
        self.method = method
        self.launch = launch
    }

    private static let walletPrefix = "wallet."

    /// Reads a preparation's parameters.
    public init(parameters: [String: String]) {
        chargeID = parameters["charge_id"]
        accessToken = parameters["access_token"]
        accessTokenExpiry = parameters["access_token_expiry"].flatMap { Int64($0) }
        environment = parameters["environment"]
        method = parameters["method"]
        switch parameters["launch"] {
        case "wallet":
            var content: [String: String] = [:]
            for (key, value) in parameters where key.hasPrefix(Self.walletPrefix) {
                content[String(key.dropFirst(Self.walletPrefix.count))] = value
            }
            launch = .wallet(parameters["wallet"] ?? "", parameters: content)
        case "page":
            launch = .page(parameters["page_url"] ?? "")
        default:
            launch = nil
        }
    }

    /// The preparation's parameters.
    public var parameters: [String: String] {
        var out: [String: String] = [:]
        out["charge_id"] = chargeID
        out["access_token"] = accessToken
        out["access_token_expiry"] = accessTokenExpiry.map(String.init)
        out["environment"] = environment
        out["method"] = method
        switch launch {
        case .wallet(let wallet, let content):
            out["launch"] = "wallet"
            out["wallet"] = wallet
            for (key, value) in content { out[Self.walletPrefix + key] = value }
        case .page(let url):
            out["launch"] = "page"
            out["page_url"] = url
        case nil:
            break
        }
        return out
    }
}
