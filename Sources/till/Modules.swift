import Till
import TillServer
import TillTesting

/// The gateway modules this build of the tool knows, by module name. Gateway modules add themselves
/// here as they land.
enum Modules {
    /// The `fake` module: ``FakeGateway`` with an HMAC-SHA256 notification secret read from the
    /// `notification_secret` credential.
    static let fake = GatewayModule(name: "fake", capabilities: FakeGateway().capabilities) { gateway, credentials in
        guard let secret = credentials["notification_secret"] else {
            throw CheckoutError(.missingSecret, field: "credentials.notification_secret",
                                message: "the fake module needs a notification_secret credential")
        }
        return FakeGateway(id: gateway.id, secret: secret)
    }

    static let all: [GatewayModule] = [fake]

    static var capabilities: [String: GatewayCapabilities] {
        Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0.capabilities) })
    }
}
