import Till
import TillTesting

/// The gateway modules this build of the tool knows, by module name, with their declared
/// capabilities. Gateway modules add themselves here as they land.
enum Modules {
    static var capabilities: [String: GatewayCapabilities] {
        ["fake": FakeGateway().capabilities]
    }
}
