import Foundation
import Testing
import Till
import TillOrchestration

@Suite("Return URL rule")
struct ReturnURLRuleTests {
    static let rule = ReturnURLRule(customSchemes: ["TillShop", "com.example.pay"])

    @Test("accepted: https with a host, the merchant's own schemes (any case), whatever their query", arguments: [
        "https://shop.example.com/till/return?till_state=abc",
        "HTTPS://Shop.Example.com/till/return",
        "https://shop.example.com:8443/r",
        "tillshop://till/return?till_state=abc",
        "TILLSHOP://till/return",
        "tillshop:return",
        "com.example.pay://till/return",
    ])
    func accepted(url: String) throws {
        #expect(Self.rule.problem(with: try #require(URL(string: url))) == nil)
    }

    @Test("refused: http, script and data schemes, other schemes, relative URLs, https without a host, user info", arguments: [
        "javascript:alert(1)",
        "JavaScript://till/%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "http://shop.example.com/till/return",
        "http://127.0.0.1:8080/return",
        "otherapp://till/return",
        "shop://till/return",
        "/till/return?till_state=abc",
        "till/return",
        "//shop.example.com/till/return",
        "https:///till/return",
        "https:shop.example.com",
        "https://user@shop.example.com/till/return",
        "https://user:pass@shop.example.com/till/return",
        "tillshop://someone@till/return",
    ])
    func refused(url: String) throws {
        let parsed = try #require(URL(string: url))
        #expect(Self.rule.problem(with: parsed) != nil)
        let error = #expect(throws: CheckoutError.self) { try Self.rule.check(parsed, field: "returnURL") }
        #expect(error?.code == .invalidReturnURL)
        #expect(error?.category == .invalidInput)
        #expect(error?.field == "returnURL")
    }

    @Test("a scheme the merchant configured is still refused if it is one that can never be a return scheme")
    func reservedNeverConfigured() throws {
        let careless = ReturnURLRule(customSchemes: ["javascript", "data", "http", "blob", "about", "view-source"])
        for url in ["javascript:alert(1)", "data:text/html,x", "http://shop.example.com/", "blob:https://shop.example.com/1",
                    "about:blank", "view-source:https://shop.example.com/"] {
            #expect(careless.problem(with: try #require(URL(string: url))) != nil, "\(url)")
        }
        for scheme in ["blob", "about", "view-source", "filesystem"] { #expect(ReturnURLRule.schemeProblem(scheme) != nil, "\(scheme)") }
    }

    @Test("a return URL of up to 2,048 characters passes; one more is refused, whatever its scheme")
    func length() throws {
        let rule = ReturnURLRule(customSchemes: ["shop"])
        for prefix in ["https://shop.example.com/r?s=", "shop://till/return?s="] {
            let longest = prefix + String(repeating: "a", count: ReturnURLRule.maxLength - prefix.count)
            #expect(rule.problem(with: try #require(URL(string: longest))) == nil)
            let error = #expect(throws: CheckoutError.self) { try rule.check(try #require(URL(string: longest + "a")), field: "returnURL") }
            #expect(error?.code == .invalidReturnURL && error?.field == "returnURL")
        }
    }

    @Test("plain http only to 127.0.0.1 or localhost, and only when the merchant allows it")
    func loopbackHTTP() throws {
        let loopback = ReturnURLRule(customSchemes: [], allowsLoopbackHTTP: true)
        for url in ["http://127.0.0.1:8080/return?till_state=s", "http://localhost/return", "http://LOCALHOST:9/r"] {
            #expect(loopback.problem(with: try #require(URL(string: url))) == nil, "\(url)")
            #expect(ReturnURLRule().problem(with: try #require(URL(string: url))) != nil, "\(url)")
        }
        for url in ["http://shop.example.com/", "http://127.0.0.2/", "http://localhost.example.com/", "http://user@127.0.0.1/", "http:///r"] {
            #expect(loopback.problem(with: try #require(URL(string: url))) != nil, "\(url)")
        }
    }

    @Test("a URL with a base is judged by itself, never resolved")
    func relativeWithBase() throws {
        let relative = try #require(URL(string: "till/return", relativeTo: URL(string: "https://shop.example.com/")))
        #expect(Self.rule.problem(with: relative) != nil)
    }

    @Test("a prepare request: the first refused URL is named by its JSON path")
    func prepareRequest() throws {
        let good = URL(string: "tillshop://till/return?till_state=s")!
        let bad = URL(string: "javascript:alert(1)")!
        try Self.rule.check(PrepareRequest(returnURLs: [good, URL(string: "https://shop.example.com/r")!]))
        try Self.rule.check(PrepareRequest())
        try Self.rule.check(PrepareRequest(returnURLs: []))
        let many = #expect(throws: CheckoutError.self) { try Self.rule.check(PrepareRequest(returnURLs: [good, bad, bad])) }
        #expect(many?.field == "body.returnURLs[1]")
        let single = #expect(throws: CheckoutError.self) { try Self.rule.check(PrepareRequest(returnURL: bad), path: "request") }
        #expect(single?.field == "request.returnURL")
    }

    @Test("configured schemes: RFC 3986 syntax, never a reserved one", arguments: [
        ("tillshop", true), ("com.example.app", true), ("a+b-c.d9", true), ("TillShop", true),
        ("", false), ("1shop", false), ("+shop", false), ("my shop", false), ("shop:", false), ("shöp", false),
        ("http", false), ("HTTPS", false), ("javascript", false), ("data", false), ("file", false), ("vbscript", false),
    ])
    func schemes(scheme: String, valid: Bool) {
        #expect((ReturnURLRule.schemeProblem(scheme) == nil) == valid)
    }

    @Test("a merchant's rule comes from its configuration; schemes are lower-cased")
    func fromConfiguration() {
        let merchant = MerchantConfiguration(id: "m", gateways: [], returnURLSchemes: ["TillShop"], allowLoopbackHTTPReturnURLs: true)
        #expect(merchant.returnURLSchemes == ["tillshop"])
        #expect(merchant.returnURLRule == ReturnURLRule(customSchemes: ["tillshop"], allowsLoopbackHTTP: true))
        #expect(MerchantConfiguration(id: "m", gateways: []).returnURLRule == ReturnURLRule())
    }
}
