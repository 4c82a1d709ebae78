import Foundation
import Till

/// What the merchant server's Prepare hands the app for a Worldline attempt: the client session
/// (`POST /v1/{merchantId}/sessions` answer) and the payment context the Client API is asked with.
/// Nothing in it is secret: a client session can read payment products and encrypt for the gateway,
/// never create or read a payment.
public struct WorldlinePreparation: Sendable, Hashable {
    public var clientSessionId: String
    public var customerId: String
    public var clientApiUrl: String
    public var assetUrl: String
    /// ISO 3166-1 alpha-2: the products on offer depend on it.
    public var countryCode: String
    /// The locale labels are asked in (`en_GB`), when the customer's is known.
    public var locale: String?
    public var isRecurring: Bool

    public init(clientSessionId: String, customerId: String, clientApiUrl: String, assetUrl: String, countryCode: String,
                locale: String? = nil, isRecurring: Bool = false) {
        self.clientSessionId = clientSessionId
        self.customerId = customerId
        self.clientApiUrl = clientApiUrl
        self.assetUrl = assetUrl
        self.countryCode = countryCode
        self.locale = locale
        self.isRecurring = isRecurring
    }

    enum Key {
        static let clientSessionId = "clientSessionId"
        static let customerId = "customerId"
        static let clientApiUrl = "clientApiUrl"
        static let assetUrl = "assetUrl"
        static let countryCode = "countryCode"
        static let locale = "locale"
        static let isRecurring = "isRecurring"
    }

    /// As ``Preparation/parameters``.
    public var parameters: [String: String] {
        var parameters = [Key.clientSessionId: clientSessionId, Key.customerId: customerId, Key.clientApiUrl: clientApiUrl,
                          Key.assetUrl: assetUrl, Key.countryCode: countryCode, Key.isRecurring: isRecurring ? "true" : "false"]
        if let locale { parameters[Key.locale] = locale }
        return parameters
    }

    /// Reads a preparation's parameters.
    /// - Throws: ``CheckoutError`` `missing_field` naming `preparation.parameters.<key>`.
    public init(parameters: [String: String], gateway: GatewayID? = nil) throws(CheckoutError) {
        func value(_ key: String) throws(CheckoutError) -> String {
            guard let value = parameters[key], !value.isEmpty else {
                throw CheckoutError(.missingField, field: "preparation.parameters.\(key)", message: "the preparation lacks \(key)", gateway: gateway)
            }
            return value
        }
        self.init(clientSessionId: try value(Key.clientSessionId), customerId: try value(Key.customerId),
                  clientApiUrl: try value(Key.clientApiUrl), assetUrl: try value(Key.assetUrl), countryCode: try value(Key.countryCode),
                  locale: parameters[Key.locale], isRecurring: parameters[Key.isRecurring] == "true")
    }
}
