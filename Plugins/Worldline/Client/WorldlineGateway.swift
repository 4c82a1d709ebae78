import Foundation
import Till

/// Worldline Connect: the **app half**, a ``Checkout``.
public struct WorldlineGateway: Sendable {
    /// The submission kind of the encrypted customer input.
    public static let submissionKind = "encrypted_customer_input"
    /// The submission field carrying the JWE (`encryptedFields` of the vendor SDKs).
    public static let encryptedInputField = "encryptedCustomerInput"
    /// The submission field carrying the app's meta information (Base64 JSON, `encodedClientMetaInfo`).
    public static let clientMetaInfoField = "encodedClientMetaInfo"

    /// What Worldline can do through Till: cards (client-side encrypted), sale and authorise, inquiries
    /// and webhooks.
    public static var capabilities: GatewayCapabilities {
        GatewayCapabilities(methods: [.card], actions: [.sale, .authorize], supportsInquiry: true, supportsNotifications: true)
    }
}
