import Foundation
import FuzzSupport
import Till
import TillOrchestration

// Return-URL matching: Till's ReturnURLHandler.handle(_:) (the URL an app is opened with, matched against its
// custom-scheme and universal-link routes and the per-attempt state), the merchant server's ReturnURLRule, and
// ReturnRoute's own validation (customScheme / universalLink / decoding a route from JSON).
//
// Input: the URL text. The handler's state is random per attempt, so `{state}` in the input is replaced with the
// state the handler expects: the fuzzer can then reach a URL that is accepted, and everything around it.
//
// Properties:
// - a URL the handler accepts is on one of its routes (scheme, host, no user/password/port) and carries the state;
// - the same URL is never accepted twice (a replayed return is refused);
// - a URL the handler built itself for an expected return is accepted.

private let routes: [ReturnRoute] = [
    try! .customScheme("tillshop"),
    try! .universalLink(host: "shop.example.com", path: "/till/return"),
]

private let rule = ReturnURLRule(customSchemes: ["tillshop"], allowsLoopbackHTTP: true)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let text = lossyText(input.bytes)
    guard let handler = try? ReturnURLHandler(routes: routes),
          let expected = try? handler.expectReturnOnAnyRoute() else {
        require(false, "a handler with valid routes cannot expect a return")
        return 0
    }
    let candidate = text.replacingOccurrences(of: "{state}", with: expected.state)
    if let url = URL(string: candidate) {
        _ = rule.problem(with: url)
        let accepted = handler.handle(url)
        if accepted {
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            let scheme = components?.scheme?.lowercased()
            require(scheme == "tillshop" || scheme == "https", "accepted a URL on scheme \(scheme ?? "nil"): \(url)")
            require(components?.user == nil && components?.password == nil && components?.port == nil,
                    "accepted a URL with a user, password or port: \(url)")
            let states = (components?.queryItems ?? []).filter { $0.name == handler.stateParameter }
            require(states.count == 1 && states[0].value == expected.state, "accepted a URL without exactly the expected state: \(url)")
            require(!handler.handle(url), "the same return URL was accepted twice: \(url)")
        } else {
            // Not this URL: the handler's own URLs still work.
            for own in expected.urls { _ = rule.problem(with: own) }
            let own = expected.urls[Int(input.bytes.count % expected.urls.count)]
            require(handler.handle(own), "the handler refused a URL it built itself: \(own)")
        }
        _ = try? handler.restrict(expected, to: url)
    }
    handler.cancel(expected)

    // Routes from text: "scheme host path" (space-separated), as code or a configuration file would give them.
    let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
    if parts.count == 3 {
        if let route = try? ReturnRoute.customScheme(parts[0], host: parts[1], path: parts[2]) {
            _ = route.description
            if let handler = try? ReturnURLHandler(routes: [route]), let expected = try? handler.expectReturn() {
                require(handler.handle(expected.url), "a handler refused the URL it built on route \(route): \(expected.url)")
            }
        }
        if let route = try? ReturnRoute.universalLink(host: parts[1], path: parts[2]) {
            if let handler = try? ReturnURLHandler(routes: [route]), let expected = try? handler.expectReturn() {
                require(handler.handle(expected.url), "a handler refused the URL it built on route \(route): \(expected.url)")
            }
        }
        _ = ReturnURLRule.schemeProblem(parts[0])
    }
    _ = try? JSONDecoder().decode(ReturnRoute.self, from: input.data)
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
