import Foundation
import Testing
import TillGatewayKit
import TillOrchestration

@Suite("ModuleSettings")
struct ModuleSettingsTests {
    let config = ModuleSettings(
        module: "acme",
        settings: ["environment": "sandbox", "sha": "md5", "request_3ds": "yes", "enabled": "true", "lifetime": "30",
                   "big": "99999999999999999999", "base_url": "https://sandbox.example.test/api", "bad_url": "ftp://example.test",
                   "no_host": "https:///path", "relative": "/v1/charges", "empty": "", "plus": "+60"],
        credentials: ["api_key": "k", "api_secret": ""],
        path: "merchants[0].gateways[1].")

    /// The error `body` throws; a test issue at the caller when it throws none.
    private func error(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> CheckoutError? {
        #expect(throws: CheckoutError.self, sourceLocation: sourceLocation) { try body() }
    }

    @Test("secrets: present, missing and empty")
    func secrets() throws {
        #expect(try config.secret("api_key") == "k")
        #expect(config.optionalSecret("api_key") == "k")
        #expect(config.optionalSecret("api_secret") == nil)
        #expect(config.optionalSecret("nope") == nil)
        for name in ["api_secret", "nope"] {
            let failure = error { _ = try config.secret(name) }
            #expect(failure?.code == .missingSecret)
            #expect(failure?.category == .configuration)
            #expect(failure?.field == "merchants[0].gateways[1].credentials.\(name)")
            #expect(failure?.message.contains("acme") == true)
        }
    }

    @Test("strings are read as given")
    func strings() {
        #expect(config.string("environment") == "sandbox")
        #expect(config.string("empty") == "")
        #expect(config.string("nope") == nil)
    }

    @Test("choices")
    func choices() throws {
        #expect(try config.choice("environment", ["sandbox", "production"]) == "sandbox")
        #expect(try config.choice("language", ["en", "ar"], default: "en") == "en")
        #expect(try config.choice("language", ["en", "ar"]) == nil)
        let failure = error { _ = try config.choice("sha", ["sha256", "sha512"], default: "sha256") }
        #expect(failure?.code == .misconfigured)
        #expect(failure?.category == .configuration)
        #expect(failure?.field == "merchants[0].gateways[1].settings.sha")
        #expect(failure?.message.contains("sha256, sha512") == true)
    }

    @Test("booleans are true or false exactly")
    func booleans() throws {
        #expect(try config.bool("enabled", default: false))
        #expect(try config.bool("nope", default: true))
        for name in ["request_3ds", "empty"] {
            let failure = error { _ = try config.bool(name, default: false) }
            #expect(failure?.code == .misconfigured)
            #expect(failure?.field == "merchants[0].gateways[1].settings.\(name)")
        }
    }

    @Test("integers must be decimal and in range")
    func integers() throws {
        #expect(try config.integer("lifetime", in: 1...60) == 30)
        #expect(try config.integer("nope", in: 1...60, default: 10) == 10)
        #expect(try config.integer("nope", in: 1...60) == nil)
        for (name, range) in [("lifetime", 60...86_400), ("big", 0...Int.max), ("environment", 0...10), ("plus", 0...100), ("empty", 0...1)] {
            let failure = error { _ = try config.integer(name, in: range) }
            #expect(failure?.code == .misconfigured)
            #expect(failure?.field == "merchants[0].gateways[1].settings.\(name)")
        }
    }

    @Test("URLs must be absolute, with an allowed scheme and a host")
    func urls() throws {
        #expect(try config.url("base_url") == URL(string: "https://sandbox.example.test/api"))
        #expect(try config.url("nope") == nil)
        #expect(try config.url("bad_url", schemes: ["ftp"]) == URL(string: "ftp://example.test"))
        for (name, schemes) in [("bad_url", Set(["https", "http"])), ("base_url", ["http"]), ("no_host", ["https"]), ("relative", ["https"]),
                                ("environment", ["https", "http"])] {
            let failure = error { _ = try config.url(name, schemes: schemes) }
            #expect(failure?.code == .misconfigured)
            #expect(failure?.field == "merchants[0].gateways[1].settings.\(name)")
        }
    }

    @Test("unknown settings and credentials are named")
    func unknown() throws {
        let small = ModuleSettings(module: "acme", settings: ["environment": "sandbox", "enviroment": "x"],
                                   credentials: ["api_key": "k", "apikey": "k"])
        let setting = error { try small.rejectUnknown(settings: ["environment"], credentials: ["api_key"]) }
        #expect(setting?.code == .misconfigured)
        #expect(setting?.field == "settings.enviroment")
        let credential = error { try small.rejectUnknown(settings: ["environment", "enviroment"], credentials: ["api_key"]) }
        #expect(credential?.code == .misconfigured)
        #expect(credential?.field == "credentials.apikey")
        try small.rejectUnknown(settings: ["environment", "enviroment", "extra"], credentials: ["api_key", "apikey"])
    }

    @Test("the path prefixes every field, with a dot added when missing", arguments: ["gateways[2]", "gateways[2]."])
    func path(_ path: String) {
        let settings = ModuleSettings(module: "acme", settings: ["x": "1"], credentials: [:], path: path)
        #expect(error { _ = try settings.secret("key") }?.field == "gateways[2].credentials.key")
        #expect(error { _ = try settings.bool("x", default: false) }?.field == "gateways[2].settings.x")
    }

    @Test("no path gives bare fields")
    func noPath() {
        let settings = ModuleSettings(module: "acme", settings: ["x": "1"], credentials: [:])
        #expect(error { _ = try settings.secret("key") }?.field == "credentials.key")
        #expect(error { _ = try settings.choice("x", ["2"]) }?.field == "settings.x")
    }
}
