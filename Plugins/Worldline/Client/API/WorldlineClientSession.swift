import Foundation
import TillGatewayKit

/// What the merchant server's `POST /v1/{merchantId}/sessions` returns for the app: the client
/// session, the customer, and where the Client API and the assets are
/// (connect-sdk-python3 6.3.0 `v1/domain/session_response.py`).
public struct WorldlineClientSession: Sendable, Hashable, Codable {
    /// Authorizes the app's Client API calls (`Authorization: GCS v1Client:{clientSessionId}`).
    public var clientSessionId: String
    /// The path segment after the base URL of every Client API call.
    public var customerId: String
    /// The Client API's base URL as the session gave it (`https://…/client/v1`); see
    /// ``normalizedClientApiURL(_:)`` for what the client accepts.
    public var clientApiURL: URL
    /// The base of logo and tooltip image paths.
    public var assetURL: URL

    /// A session from its parts.
    public init(clientSessionId: String, customerId: String, clientApiURL: URL, assetURL: URL) {
        self.clientSessionId = clientSessionId
        self.customerId = customerId
        self.clientApiURL = clientApiURL
        self.assetURL = assetURL
    }

    private enum CodingKeys: String, CodingKey {
        case clientSessionId, customerId, clientApiURL = "clientApiUrl", assetURL = "assetUrl"
    }

    /// The Client API version this client speaks (the Swift SDK's `kApiVersion`, `Constants/SDKConstants.swift`).
    public static let apiVersionPath = ["client", "v1"]

    /// `url` as the Client API's base: the path is split on `/` (empty parts dropped) and must be
    /// empty (→ `/client/v1`), `client` (→ `/client/v1`) or `client/v1`; the trailing slash goes.
    /// Scheme, host and port are kept.
    ///
    /// This is the Swift client SDK's `fixBaseURL` (`API communication/ClientApiCommunicator.swift`),
    /// which stops the app with `fatalError` on any other path; the JavaScript SDK throws likewise, the
    /// Android SDK appends `client/v1/` to whatever it is given. Here a wrong path is an error.
    /// Beyond the SDKs: the scheme must be `https` or `http` (the local emulator), and a query,
    /// fragment or user name is refused, since paths are appended to the base.
    /// - Throws: ``CheckoutError`` `invalid_field` naming `clientApiUrl`.
    public static func normalizedClientApiURL(_ url: URL) throws(CheckoutError) -> URL {
        func refuse(_ why: String) -> CheckoutError {
            CheckoutError(.invalidField, category: .configuration, field: "clientApiUrl",
                          message: "the session's Client API URL \(why): \(CheckoutError.printable(url.absoluteString))")
        }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = components.host, !host.isEmpty else {
            throw refuse("is not an http(s) URL with a host")
        }
        guard components.query == nil, components.fragment == nil, components.user == nil, components.password == nil else {
            throw refuse("has a query, fragment or user name")
        }
        let parts = components.path.split(separator: "/").map(String.init)
        let version = apiVersionPath
        switch parts.count {
        case 0: break
        case 1 where parts[0] == version[0]: break
        case 2 where parts == version: break
        default: throw refuse("must have the path /\(version.joined(separator: "/")), /\(version[0]) or none")
        }
        components.path = "/" + version.joined(separator: "/")
        guard let fixed = components.url else { throw refuse("cannot be rebuilt") }
        return fixed
    }
}

/// The `X-GCS-ClientMetaInfo` header: a description of the device and SDK, as JSON, standard Base64
/// with padding. Keys and defaults are the Swift client SDK's (`Utils/Util.swift`): `appIdentifier` is
/// `UNKNOWN` when not given, and `ipAddress` is left out when empty.
public struct WorldlineClientMetaInfo: Sendable, Hashable, Codable {
    /// `"<system name>/<version>"` (`"iOS/18.2"`).
    public var platformIdentifier: String
    /// Who made the SDK.
    public var sdkCreator: String
    /// The screen in pixels; the Swift SDK writes width and height with no separator (`"11702532"`).
    public var screenSize: String
    /// `"Apple"` on an Apple device.
    public var deviceBrand: String
    /// The hardware model (`"iPhone15,2"`).
    public var deviceType: String
    /// The app's bundle id, or `UNKNOWN`.
    public var appIdentifier: String
    /// The device's IP address, if the app knows it.
    public var ipAddress: String?
    /// The SDK and its version.
    public var sdkIdentifier: String

    /// Meta info from its parts.
    ///
    /// `sdkCreator` and `sdkIdentifier` default to this library's names; the vendor sources give no
    /// rule the gateway applies to them (the Swift SDK sends `"Wordline Connect"` and
    /// `"SwiftClientSDK/v7.0.0"`, the Android SDK `"Worldline Global Collect"`).
    public init(platformIdentifier: String, screenSize: String, deviceType: String, appIdentifier: String? = nil,
                ipAddress: String? = nil, deviceBrand: String = "Apple", sdkCreator: String = "Till",
                sdkIdentifier: String = "TillWorldline/v1") {
        self.platformIdentifier = platformIdentifier
        self.sdkCreator = sdkCreator
        self.screenSize = screenSize
        self.deviceBrand = deviceBrand
        self.deviceType = deviceType
        if let appIdentifier, !appIdentifier.isEmpty { self.appIdentifier = appIdentifier } else { self.appIdentifier = "UNKNOWN" }
        if let ipAddress, !ipAddress.isEmpty { self.ipAddress = ipAddress } else { self.ipAddress = nil }
        self.sdkIdentifier = sdkIdentifier
    }

    /// The JSON (keys sorted, so the same info always gives the same bytes; the Swift SDK's
    /// `JSONSerialization` leaves the order unspecified).
    public var json: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Only strings: encoding cannot fail.
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// The header's value: standard Base64, with padding, of ``json``. The merchant server forwards the
    /// same string with the encrypted input.
    public var encoded: String { json.base64EncodedString() }
}

/// What a Client API call is about: the amount, where, and how the customer pays.
public struct WorldlinePaymentContext: Sendable, Hashable, Codable {
    /// The amount in minor units.
    public var amount: Int
    /// ISO 4217 (`"EUR"`).
    public var currencyCode: String
    /// ISO 3166-1 alpha-2 (`"NL"`).
    public var countryCode: String
    public var isRecurring: Bool
    public var isInstallments: Bool
    /// `"nl_NL"`; the labels come back in it. Product groups and networks need it (the Swift SDK
    /// refuses those calls without one).
    public var locale: String?

    /// A context from its parts.
    public init(amount: Int, currencyCode: String, countryCode: String, isRecurring: Bool = false,
                isInstallments: Bool = false, locale: String? = nil) {
        self.amount = amount
        self.currencyCode = currencyCode
        self.countryCode = countryCode
        self.isRecurring = isRecurring
        self.isInstallments = isInstallments
        self.locale = locale
    }
}
