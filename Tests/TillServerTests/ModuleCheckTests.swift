import Foundation
import Testing
import Till
import TillOrchestration
import TillService
import TillCitconServer
import TillEcommpayServer
import TillPayFortServer
@testable import TillServer

/// `till config check` asks the gateway modules too: one typo in each kind of place is named, without a secret read.
@Suite("Configuration checked by the gateway modules")
struct ModuleCheckTests {
    static let plugins = [PayFortPlugin.plugin, CitconPlugin.plugin, EcommpayPlugin.plugin]

    @Test("a misspelt setting, a missing credential, an unknown credential and a bad value are each named by path; no secret is read")
    func typos() throws {
        let json = #"""
            {"server": {"publicURL": "https://pay.example.com"}, "merchants": [{"id": "m", "apiKey": {"env": "NEVER_SET_K"},
              "gateways": [
                {"id": "pf", "module": "payfort", "settings": {"base_ur": "http://127.0.0.1:9"},
                 "credentials": {"access_code": {"env": "NEVER_SET_A"}, "merchant_identifier": {"env": "NEVER_SET_B"},
                                 "request_phrase": {"env": "NEVER_SET_C"}, "response_phrase": {"env": "NEVER_SET_D"}}},
                {"id": "cc", "module": "citcon", "settings": {"environment": "uat"}, "credentials": {"api_key": {"env": "NEVER_SET_E"}}},
                {"id": "ec", "module": "ecommpay", "settings": {"project_id": "12"},
                 "credentials": {"secret_key": {"env": "NEVER_SET_F"}, "secret": {"env": "NEVER_SET_G"}}},
                {"id": "pf2", "module": "payfort", "settings": {"integration": "sdk"},
                 "credentials": {"access_code": {"env": "NEVER_SET_A"}, "merchant_identifier": {"env": "NEVER_SET_B"},
                                 "request_phrase": {"env": "NEVER_SET_C"}, "response_phrase": {"env": "NEVER_SET_D"}}}
              ]}]}
            """#
        let configuration = try ConfigurationLoader.load(Data(json.utf8), modules: Dictionary(uniqueKeysWithValues: Self.plugins.map { ($0.module, $0.capabilities) })).get()
        let issues = ServerState.moduleIssues(of: configuration, plugins: Self.plugins)
        #expect(issues.map(\.field) == ["merchants[0].gateways[0].settings.base_ur", "merchants[0].gateways[1].credentials.api_secret",
                                        "merchants[0].gateways[2].credentials.secret", "merchants[0].gateways[3].settings.integration"],
                "\(issues)")
        // The environment variables the references name were never read: the check passes on a machine without them.
        #expect(!issues.contains { $0.message.contains("NEVER_SET") })
    }

    @Test("the documented examples pass the modules' checks")
    func examplesPass() throws {
        let configuration = try ConfigurationLoader.load(Data("""
            {"server": {"publicURL": "https://pay.example.com"}, "merchants": [{"id": "m", "gateways": [
              {"id": "pf", "module": "payfort", "settings": {"environment": "production", "integration": "mobile_sdk"},
               "credentials": {"access_code": {"env": "A"}, "merchant_identifier": {"env": "B"}, "request_phrase": {"env": "C"}, "response_phrase": {"env": "D"}}},
              {"id": "cc", "module": "citcon", "settings": {"environment": "uat", "unionpay_mode": "00"},
               "credentials": {"api_key": {"env": "E"}, "api_secret": {"env": "F"}}}]}]}
            """.utf8), modules: Dictionary(uniqueKeysWithValues: Self.plugins.map { ($0.module, $0.capabilities) })).get()
        #expect(ServerState.moduleIssues(of: configuration, plugins: Self.plugins).isEmpty)
    }
}
