import Foundation
import Till

/// A gateway module's description of itself: everything the merchant server, the command-line tool,
/// the demo and the tests need to use it, so that adding a gateway touches none of them.
///
/// The module's **server** target exports one value (`PayFortPlugin.plugin`, `CitconPlugin.plugin`),
/// and the tool lists it once (`Sources/till/Gateways.swift`). An app never links the server target:
/// it builds the module's ``GatewayAppHalf`` half itself, from non-secret settings.
///
/// ```swift
/// public enum AcmePlugin {
///     public static let plugin = GatewayPlugin(
///         module: "acme",
///         capabilities: AcmeGateway.capabilities,
///         makeServerHalf: { context in
///             try AcmeServer(id: context.id, apiKey: context.settings.secret("api_key"),
///                            baseURL: context.settings.url("base_url") ?? AcmeServer.production,
///                            transport: context.transport)
///         },
///         makeAppHalf: { context in AcmeGateway(id: context.id, transport: context.transport) })
/// }
/// ```
public struct GatewayPlugin: Sendable {
    /// The module's name in configuration files (`"module": "payfort"`) and on the command line
    /// (`till sign payfort`).
    public var module: String
    /// What the module can do; the router filters on it and `till config check` validates against it.
    public var capabilities: GatewayCapabilities
    /// Builds the server half of one configured gateway from its settings and resolved credentials.
    /// Throws ``CheckoutError`` naming the setting or credential at fault (`settings.base_url`).
    public var makeServerHalf: @Sendable (GatewayPluginContext) throws -> any GatewayServerHalf
    /// Builds the app half from non-secret settings only (as an app would; used by the demo and tests).
    public var makeAppHalf: @Sendable (GatewayPluginContext) throws -> any GatewayAppHalf
    /// The module's signature debugger for `till sign <module>` and `till verify <module>`, if it signs.
    public var debugger: SignatureDebugger?

    public init(module: String, capabilities: GatewayCapabilities,
                makeServerHalf: @escaping @Sendable (GatewayPluginContext) throws -> any GatewayServerHalf,
                makeAppHalf: @escaping @Sendable (GatewayPluginContext) throws -> any GatewayAppHalf,
                debugger: SignatureDebugger? = nil) {
        self.module = module
        self.capabilities = capabilities
        self.makeServerHalf = makeServerHalf
        self.makeAppHalf = makeAppHalf
        self.debugger = debugger
    }
}

/// What a ``GatewayPlugin`` is given to build one configured gateway.
public struct GatewayPluginContext: Sendable {
    /// The gateway's id in the merchant's configuration (`"payfort-riyadh"`).
    public var id: GatewayID
    /// The gateway's settings and (on the server only) resolved credentials, with path-named errors.
    public var settings: ModuleSettings
    /// How the module sends requests (the server wraps it with logging and redaction).
    public var transport: any HTTPTransport

    public init(id: GatewayID, settings: ModuleSettings, transport: any HTTPTransport) {
        self.id = id
        self.settings = settings
        self.transport = transport
    }
}

/// A module's signature debugger: prints the exact string a gateway signs and checks a signed message,
/// so "signature mismatch" can be diagnosed without reading code. Options are the module's own
/// (`--phrase`, `--secret`, `--params FILE`, `--body FILE`, repeatable `--header`).
public struct SignatureDebugger: Sendable {
    /// One command-line option of the debugger.
    public struct Option: Sendable, Hashable {
        /// The name without dashes (`"phrase"`).
        public var name: String
        public var help: String
        /// A flag takes no value (`--sha512`).
        public var isFlag: Bool
        public var required: Bool
        public var repeatable: Bool

        public init(_ name: String, help: String, isFlag: Bool = false, required: Bool = false, repeatable: Bool = false) {
            self.name = name
            self.help = help
            self.isFlag = isFlag
            self.required = required
            self.repeatable = repeatable
        }
    }

    /// What `verify` found.
    public struct Verdict: Sendable, Hashable {
        public var valid: Bool
        /// Lines to print: on failure the reason, then the expected string to sign and signature.
        public var lines: [String]

        public init(valid: Bool, lines: [String]) {
            self.valid = valid
            self.lines = lines
        }
    }

    /// What `till sign <module>` does, in one line.
    public var signSummary: String
    public var signOptions: [Option]
    public var verifyOptions: [Option]
    /// Lines to print; the last is the signature (or the header that carries it).
    public var sign: @Sendable (DebuggerArguments) throws -> [String]
    public var verify: @Sendable (DebuggerArguments) throws -> Verdict

    public init(signSummary: String, signOptions: [Option], verifyOptions: [Option],
                sign: @escaping @Sendable (DebuggerArguments) throws -> [String],
                verify: @escaping @Sendable (DebuggerArguments) throws -> Verdict) {
        self.signSummary = signSummary
        self.signOptions = signOptions
        self.verifyOptions = verifyOptions
        self.sign = sign
        self.verify = verify
    }
}

/// The options given to a ``SignatureDebugger``, by name without dashes.
public struct DebuggerArguments: Sendable, Hashable {
    public var values: [String: [String]]

    public init(_ values: [String: [String]]) { self.values = values }

    /// The last value of `name`, or nil.
    public func value(_ name: String) -> String? { values[name]?.last }

    /// Whether the flag `name` was given.
    public func flag(_ name: String) -> Bool { values[name] != nil }

    /// The last value of a required option.
    /// - Throws: ``CheckoutError/Code/missingField`` naming `--name`.
    public func required(_ name: String) throws(CheckoutError) -> String {
        guard let value = value(name), !value.isEmpty else {
            throw CheckoutError(.missingField, field: "--\(name)", message: "--\(name) is required")
        }
        return value
    }

    /// The contents of the file a required option names (`-` reads standard input).
    /// - Throws: ``CheckoutError`` naming `--name` when it cannot be read.
    public func file(_ name: String) throws(CheckoutError) -> Data {
        let path = try required(name)
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CheckoutError(.invalidField, field: "--\(name)", message: "cannot read \(path)")
        }
        return data
    }
}
