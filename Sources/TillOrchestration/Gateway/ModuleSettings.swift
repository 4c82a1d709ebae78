import Foundation
import Till

/// A gateway module's settings and credentials, read with errors that name the entry at fault.
///
/// ```swift
/// let config = ModuleSettings(module: "payfort", settings: gateway.settings, credentials: credentials,
///                             path: "merchants[0].gateways[1].")
/// try config.rejectUnknown(settings: ["environment", "base_url", "sha"], credentials: ["access_code", "request_phrase"])
/// let accessCode = try config.secret("access_code")
/// let sha = try config.choice("sha", ["sha256", "sha512"], default: "sha256")
/// ```
///
/// Error fields are `"<path>settings.<name>"` and `"<path>credentials.<name>"`. Messages never hold a
/// credential's value.
public struct ModuleSettings: Sendable {
    /// The module's name, as messages cite it.
    public let module: String
    /// The settings (non-secret options).
    public let settings: [String: String]
    /// The credentials (secrets).
    public let credentials: [String: String]
    /// The prefix of every error's field: empty, or ending in `.`.
    public let path: String

    /// Settings of `module`.
    /// - Parameter path: where this module's configuration sits (`"merchants[0].gateways[1]."`); a
    ///   `.` is added when it does not end in one.
    public init(module: String, settings: [String: String], credentials: [String: String], path: String = "") {
        self.module = module
        self.settings = settings
        self.credentials = credentials
        self.path = path.isEmpty || path.hasSuffix(".") ? path : path + "."
    }

    // MARK: Credentials

    /// The credential `name`.
    /// - Throws: ``CheckoutError`` `missing_secret` naming `"<path>credentials.<name>"` when it is
    ///   missing or empty.
    public func secret(_ name: String) throws(CheckoutError) -> String {
        guard let value = optionalSecret(name) else {
            throw CheckoutError(.missingSecret, field: credentialField(name), message: "the \(module) module needs \(name)")
        }
        return value
    }

    /// The credential `name`, or nil when it is missing or empty.
    public func optionalSecret(_ name: String) -> String? {
        guard let value = credentials[name], !value.isEmpty else { return nil }
        return value
    }

    // MARK: Settings

    /// The setting `name` as given, or nil.
    public func string(_ name: String) -> String? {
        settings[name]
    }

    /// The setting `name`, which must be one of `allowed`; `default` when it is not set.
    /// - Throws: ``CheckoutError`` `misconfigured` naming `"<path>settings.<name>"`, its message listing
    ///   the allowed values.
    public func choice(_ name: String, _ allowed: [String], default: String? = nil) throws(CheckoutError) -> String? {
        guard let value = settings[name] else { return `default` }
        guard allowed.contains(value) else {
            throw misconfigured(name, "\(CheckoutError.printable(value)) is not one of: \(allowed.joined(separator: ", "))")
        }
        return value
    }

    /// The setting `name`, `true` or `false` exactly; `default` when it is not set.
    /// - Throws: ``CheckoutError`` `misconfigured` naming `"<path>settings.<name>"` for anything else.
    public func bool(_ name: String, default: Bool) throws(CheckoutError) -> Bool {
        switch settings[name] {
        case nil: return `default`
        case "true": return true
        case "false": return false
        case let value?: throw misconfigured(name, "\(CheckoutError.printable(value)) is not true or false")
        }
    }

    /// The setting `name`, a decimal integer within `range`; `default` when it is not set.
    /// - Throws: ``CheckoutError`` `misconfigured` naming `"<path>settings.<name>"` for anything else.
    public func integer(_ name: String, in range: ClosedRange<Int>, default: Int? = nil) throws(CheckoutError) -> Int? {
        guard let text = settings[name] else { return `default` }
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int(text), range.contains(value) else {
            throw misconfigured(name, "\(CheckoutError.printable(text)) is not an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// The setting `name`, an absolute URL with one of `schemes` (and a host, for http and https);
    /// nil when it is not set.
    /// - Throws: ``CheckoutError`` `misconfigured` naming `"<path>settings.<name>"` for anything else.
    public func url(_ name: String, schemes: Set<String> = ["https", "http"]) throws(CheckoutError) -> URL? {
        guard let text = settings[name] else { return nil }
        let wanted = schemes.sorted().joined(separator: " or ")
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), schemes.contains(scheme) else {
            throw misconfigured(name, "not an absolute \(wanted) URL")
        }
        if scheme == "http" || scheme == "https", (url.host ?? "").isEmpty {
            throw misconfigured(name, "a \(scheme) URL needs a host")
        }
        return url
    }

    // MARK: Checks

    /// Refuses settings and credentials the module does not know (a misspelt name would otherwise be
    /// ignored silently).
    /// - Throws: ``CheckoutError`` `misconfigured` naming the first unknown entry (settings before
    ///   credentials, each in name order).
    public func rejectUnknown(settings known: Set<String>, credentials knownCredentials: Set<String>) throws(CheckoutError) {
        for name in settings.keys.sorted() where !known.contains(name) {
            throw misconfigured(name, "the \(module) module has no such setting (known: \(known.sorted().joined(separator: ", ")))")
        }
        for name in credentials.keys.sorted() where !knownCredentials.contains(name) {
            throw CheckoutError(.misconfigured, field: credentialField(name),
                                message: "the \(module) module has no such credential (known: \(knownCredentials.sorted().joined(separator: ", ")))")
        }
    }

    // MARK: Plumbing

    private func credentialField(_ name: String) -> String { "\(path)credentials.\(name)" }

    private func misconfigured(_ name: String, _ message: String) -> CheckoutError {
        CheckoutError(.misconfigured, field: "\(path)settings.\(name)", message: message)
    }
}
