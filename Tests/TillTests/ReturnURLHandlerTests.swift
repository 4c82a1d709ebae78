import Foundation
import Testing
@testable import Till

@Suite("Return-URL handler")
struct ReturnURLHandlerTests {
    func makeHandler() throws -> ReturnURLHandler {
        try ReturnURLHandler(routes: [.customScheme("myshop"), .universalLink(host: "shop.example.com", path: "/till/return")])
    }

    func replacingState(_ url: URL, with state: String?) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.queryItems = state.map { [URLQueryItem(name: "till_state", value: $0)] }
        return components.url!
    }

    @Test("the expected return resumes its waiter with the URL")
    func resumes() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        #expect(expected.url.absoluteString.hasPrefix("myshop://till/return?till_state="))
        async let result = handler.wait(for: expected, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(20))
        let back = URL(string: expected.url.absoluteString + "&result=success")!
        #expect(handler.handle(back))
        #expect(await result == .returned(back))
        #expect(handler.pendingCount == 0)
    }

    @Test("one attempt, two returns on one URL (a token, then 3-D Secure): only after expectAgain, and only the new URL")
    func expectAgain() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        let token = URL(string: expected.url.absoluteString + "&token_name=t1")!
        #expect(handler.handle(token))
        #expect(await handler.wait(for: expected, timeout: .seconds(1)) == .returned(token))
        #expect(!handler.handle(token))   // consumed: ignored until the app expects another return
        handler.expectAgain(expected)
        let final = URL(string: expected.url.absoluteString + "&response_code=14000")!
        async let second = handler.wait(for: expected, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(20))
        #expect(handler.handle(final))
        #expect(await second == .returned(final))
        handler.expectAgain(expected)
        handler.cancel(expected)
        #expect(handler.pendingCount == 0)
    }

    @Test("a return that arrives before the wait is kept for it")
    func returnBeforeWait() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        #expect(handler.handle(expected.url))
        #expect(await handler.wait(for: expected, timeout: .seconds(1)) == .returned(expected.url))
    }

    @Test("unrelated, malformed, wrong-route and forged URLs are ignored", arguments: [
        "otherapp://till/return?till_state=STATE",          // unrelated scheme
        "myshop://evil/return?till_state=STATE",            // wrong host
        "myshop://till/returned?till_state=STATE",          // wrong path
        "myshop://till/return/?till_state=STATE",           // path with a trailing slash is another path
        "myshop://till/return",                             // missing state
        "myshop://till/return?till_state=",                 // empty state
        "myshop://till/return?till_state=forged",           // forged state
        "myshop://till/return?state=STATE",                 // state under another name
        "myshop://till/return?till_state=STATE&till_state=STATE", // ambiguous
        "https://shop.example.com/till/return?till_state=STATE",  // right state, other route than registered for it
        "https://shop.example.com.evil.com/till/return?till_state=STATE",
        "https://user@shop.example.com/till/return?till_state=STATE",
        "https://shop.example.com:8443/till/return?till_state=STATE",
        "http://shop.example.com/till/return?till_state=STATE",
        "myshop:till/return?till_state=STATE",
        "myshop://till/%72eturn?till_state=STATE",          // percent-encoded path
    ])
    func ignores(template: String) async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()   // on the custom-scheme route
        let url = try #require(URL(string: template.replacingOccurrences(of: "STATE", with: expected.state)))
        #expect(handler.handle(url) == false, "\(url)")
        // The real return still works afterwards: nothing was consumed.
        #expect(handler.handle(expected.url))
    }

    @Test("a replayed return is refused")
    func replay() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        async let result = handler.wait(for: expected, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(10))
        #expect(handler.handle(expected.url))
        _ = await result
        #expect(handler.handle(expected.url) == false)
    }

    @Test("scheme and host match case-insensitively; the universal-link route works")
    func caseAndUniversal() async throws {
        let handler = try makeHandler()
        let route = try ReturnRoute.universalLink(host: "shop.example.com", path: "/till/return")
        let expected = try handler.expectReturn(on: route)
        #expect(expected.url.absoluteString.hasPrefix("https://shop.example.com/till/return?till_state="))
        let upper = URL(string: "HTTPS://Shop.Example.COM/till/return?till_state=\(expected.state)")!
        #expect(handler.handle(upper))
    }

    @Test("of two concurrent attempts, only the right one resumes")
    func twoConcurrent() async throws {
        let handler = try makeHandler()
        let first = try handler.expectReturn()
        let second = try handler.expectReturn()
        #expect(first.state != second.state)
        async let a = handler.wait(for: first, timeout: .milliseconds(400))
        async let b = handler.wait(for: second, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(20))
        #expect(handler.handle(second.url))
        #expect(await b == .returned(second.url))
        #expect(await a == .timedOut)
    }

    @Test("a wait times out exactly once, and a late URL is then ignored")
    func timeout() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        #expect(await handler.wait(for: expected, timeout: .milliseconds(30)) == .timedOut)
        #expect(handler.handle(expected.url) == false)
        #expect(handler.pendingCount == 0)
    }

    @Test("cancel resumes the waiter once, and a later URL is ignored")
    func cancel() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        async let result = handler.wait(for: expected, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(10))
        handler.cancel(expected)
        handler.cancel(expected)
        #expect(await result == .cancelled)
        #expect(handler.handle(expected.url) == false)
    }

    @Test("cancelling the waiting task resumes it with .cancelled")
    func taskCancellation() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        let task = Task { await handler.wait(for: expected, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(10))
        task.cancel()
        #expect(await task.value == .cancelled)
        #expect(handler.handle(expected.url) == false)
    }

    @Test("many concurrent returns each resume exactly their own waiter")
    func stress() async throws {
        let handler = try makeHandler()
        let expectations = try (0..<200).map { _ in try handler.expectReturn() }
        #expect(Set(expectations.map(\.state)).count == 200)
        await withTaskGroup(of: Bool.self) { group in
            for expected in expectations {
                group.addTask { await handler.wait(for: expected, timeout: .seconds(10)) == .returned(expected.url) }
                group.addTask {
                    // Each URL is offered twice, concurrently: exactly one offer may win.
                    async let x = handler.handle(expected.url)
                    async let y = handler.handle(expected.url)
                    let (first, second) = await (x, y)
                    return first != second
                }
            }
            for await ok in group { #expect(ok) }
        }
        #expect(handler.pendingCount == 0)
    }

    @Test("a second wait on the same expectation is answered at once; the first still gets the return")
    func secondWait() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        async let first = handler.wait(for: expected, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(20))
        #expect(await handler.wait(for: expected, timeout: .seconds(5)) == .cancelled)
        #expect(handler.handle(expected.url))
        #expect(await first == .returned(expected.url))
    }

    @Test("an expectation nobody waits for expires; its URL is then ignored")
    func expiry() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn(lifetime: .milliseconds(20))
        try await Task.sleep(for: .milliseconds(40))
        #expect(handler.handle(expected.url) == false)
        _ = try handler.expectReturn()          // creating another prunes the expired one
        #expect(handler.pendingCount == 1)
    }

    @Test("cancel after the URL arrived but before the wait: the wait says cancelled")
    func cancelAfterReturn() async throws {
        let handler = try makeHandler()
        let expected = try handler.expectReturn()
        #expect(handler.handle(expected.url))
        handler.cancel(expected)
        #expect(await handler.wait(for: expected, timeout: .seconds(1)) == .cancelled)
    }

    @Test("routes decoded from JSON are validated like routes built in code")
    func decodedRoutes() throws {
        let good = try JSONDecoder().decode(ReturnRoute.self, from: Data(#"{"scheme":"MyShop","host":"Till","path":"/return"}"#.utf8))
        #expect(good == (try ReturnRoute.customScheme("myshop", host: "till", path: "/return")))
        for bad in [#"{"scheme":"HTTP","host":"shop.example.com","path":"/r"}"#, #"{"scheme":"myshop","host":"till","path":"return"}"#,
                    #"{"scheme":"1x","host":"till","path":"/r"}"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(ReturnRoute.self, from: Data(bad.utf8)) }
        }
    }

    @Test("states are long and unguessable")
    func states() throws {
        let handler = try makeHandler()
        let states = try (0..<1000).map { _ in try handler.expectReturn().state }
        #expect(Set(states).count == 1000)
        #expect(states.allSatisfy { $0.count == 43 })
    }

    @Test("a route's path is written as a URL carries it: a space is refused (the fuzzer's find: such a route never matched the URL built on it); a percent-encoded path round-trips")
    func routePaths() throws {
        let error = #expect(throws: CheckoutError.self) { try ReturnRoute.customScheme("tillpayi", host: "4ill", path: "/ill /rreturn") }
        #expect(error?.field == "returnRoute.path")
        for bad in ["/caf\u{E9}", "/a%2", "/a%zz", "/a\\b", "/a\"b", "/a<b>", "/a\u{0}"] {
            #expect(throws: CheckoutError.self, "\(bad)") { try ReturnRoute.universalLink(host: "shop.example.com", path: bad) }
        }
        for good in ["/caf%C3%A9/return", "/till/return", "/a-b_c.d~e!$&'()*+,;=:@/f"] {
            let handler = try ReturnURLHandler(routes: [.customScheme("tillpay", host: "till", path: good), .universalLink(host: "shop.example.com", path: good)])
            for route in 0..<2 {
                // One return per expectation: the state is spent by the first URL accepted.
                let url = try handler.expectReturnOnAnyRoute().urls[route]
                #expect(handler.handle(url), "\(url)")
            }
        }
    }

    @Test("bad routes are configuration errors naming the field")
    func badRoutes() {
        #expect(throws: CheckoutError.self) { try ReturnRoute.customScheme("https") }
        #expect(throws: CheckoutError.self) { try ReturnRoute.customScheme("1abc") }
        #expect(throws: CheckoutError.self) { try ReturnRoute.customScheme("my shop") }
        let error = #expect(throws: CheckoutError.self) { try ReturnRoute.universalLink(host: "shop.example.com", path: "till") }
        #expect(error?.field == "returnRoute.path")
        #expect(throws: CheckoutError.self) { try ReturnURLHandler(routes: []) }
        #expect(throws: CheckoutError.self) {
            try ReturnURLHandler(routes: [.customScheme("a")]).expectReturn(on: .customScheme("b"))
        }
    }
}
