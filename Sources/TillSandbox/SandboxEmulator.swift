import Foundation
import Hummingbird

/// A gateway emulator the sandbox hosts. Each emulator is the other party of one gateway module: it
/// is written from the gateway's own documentation and vendor material, shares no code with the
/// module, and lives in its own folder (`Sources/TillSandbox/<Gateway>/`).
///
/// ```swift
/// let sandbox = try await Sandbox.start(emulators: [payFort, citcon, myEmulator])
/// let base = sandbox.baseURL(of: myEmulator)   // the module's `base_url` setting
/// ```
public protocol SandboxEmulator: Sendable {
    /// The path prefix of the emulator's routes (`/<name>/…`, admin routes under `/admin/<name>/…`),
    /// conventionally the name of the gateway module it emulates (`"payfort"`).
    var name: String { get }

    /// Adds the emulator's routes to the sandbox's router.
    func mount(_ mount: SandboxMount)

    /// The gateway module's `base_url` setting for this emulator, in a sandbox at `sandbox`.
    /// `{sandbox}/{name}` by default.
    func moduleBaseURL(in sandbox: URL) -> URL

    /// The emulator's merchant accounts as a merchant server configures them: the gateway module,
    /// the account's settings and credentials (sandbox values, not secrets). Empty by default.
    func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount]
}

extension SandboxEmulator {
    public func moduleBaseURL(in sandbox: URL) -> URL { sandbox.appendingPathComponent(name) }
    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] { [] }
}

/// One merchant account of an emulator, as a merchant server's gateway configuration names it.
public struct SandboxAccount: Sendable, Hashable {
    /// The gateway module that talks to it (`"payfort"`).
    public var module: String
    /// The module's settings, `base_url` included.
    public var settings: [String: String]
    /// The account's credentials by the module's credential names. Sandbox values, not secrets.
    public var credentials: [String: String]
    /// One line for `till sandbox` to print.
    public var summary: String

    public init(module: String, settings: [String: String], credentials: [String: String], summary: String) {
        self.module = module
        self.settings = settings
        self.credentials = credentials
        self.summary = summary
    }
}

/// What an emulator gets to add its routes: the sandbox's router, and a ``SandboxHandle`` its route
/// handlers capture.
public struct SandboxMount {
    /// The sandbox's router; add routes under `/<name>/` and `/admin/<name>/`.
    public let router: Router<SandboxRequestContext>
    /// The sandbox's address and hold, usable from `@Sendable` route handlers.
    public let handle: SandboxHandle

    var address: SandboxAddress { handle.address }
    var release: HoldRelease { handle.release }
}

/// The running sandbox as a route handler sees it: its address once it listens, and a way to hold a
/// request (a gateway that never answers) that lets go when the sandbox stops.
public struct SandboxHandle: Sendable {
    let address: SandboxAddress
    let release: HoldRelease

    /// `http://host:port` of the sandbox, known once it listens (read it inside a handler).
    public func sandboxBaseURL() async -> URL { await address.baseURL }

    /// Waits for `duration`, or until the sandbox stops.
    public func hold(for duration: Duration) async { await release.hold(for: duration) }
}
