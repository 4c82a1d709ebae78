import Foundation
import Testing
import Till
@testable import TillWorldline

/// Holds requests until opened.
actor WorldlineTestGate {
    private var open = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private(set) var arrivals = 0

    func wait() async {
        arrivals += 1
        if open { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        open = true
        waiting.forEach { $0.resume() }
        waiting = []
    }
}

@Suite("Worldline IIN lookup")
struct IINLookupTests {
    private func iinBody(_ index: Int) throws -> Data {
        let cases = try #require(try clientFixture("iin-responses.json")["cases"] as? [[String: Any]])
        let body = try #require(cases[index]["body"])
        return try JSONSerialization.data(withJSONObject: body)
    }

    private func lookup(answer: Data, status: Int = 200, rule: WorldlineIINAbsentAllowedRule = .confirmWithProduct,
                        product: Result<TransportResponse, TransportError>? = nil) throws -> (WorldlineIINLookup, WorldlineStubTransport) {
        let transport = WorldlineStubTransport { request in
            if request.url.path.hasSuffix("/services/getIINdetails") {
                return .success(TransportResponse(statusCode: status, body: answer))
            }
            return product ?? .success(TransportResponse(statusCode: 404, body: Data()))
        }
        return (WorldlineIINLookup(api: try vendorTestAPI(transport), context: vendorTestContext, absentAllowed: rule), transport)
    }

    @Test("iin_rules vectors: fewer than 6 digits make no request; 6, 7 and 8+ digits send the Swift SDK's bin")
    func vectors() async throws {
        let cases = try #require(try clientFixture("iin-rules.json")["cases"] as? [[String: String]])
        var passed = 0
        for vector in cases {
            let (iin, transport) = try lookup(answer: Data(#"{"paymentProductId":1,"isAllowedInContext":true}"#.utf8))
            let details = try await iin.lookup(try #require(vector["input"]))
            if let bin = vector["bin_sent"] {
                #expect(details.bin == bin)
                #expect(details.status == .supported)
                let body = try #require(try JSONSerialization.jsonObject(with: transport.requests[0].body ?? Data()) as? [String: Any])
                #expect(body["bin"] as? String == bin)
            } else {
                #expect(details.status == .notEnoughDigits)
                #expect(transport.requests.isEmpty)
            }
            passed += 1
        }
        #expect(passed == cases.count)
    }

    @Test("status rules: no product → UNKNOWN, allowed → SUPPORTED with co-brands, not allowed → EXISTING_BUT_NOT_ALLOWED, 404 → UNKNOWN")
    func statuses() async throws {
        #expect(try await lookup(answer: Data(#"{"countryCode":"NL"}"#.utf8)).0.lookup("123456").status == .unknown)
        #expect(try await lookup(answer: Data(#"{"errorId":"x","errors":[]}"#.utf8), status: 404).0.lookup("123456").status == .unknown)
        let visa = try await lookup(answer: try iinBody(5)).0.lookup("41111111")   // normalIINResponseVisa
        #expect(visa.status == .supported)
        #expect(visa.paymentProductId == 1)
        #expect(visa.countryCode == "99")
        #expect(visa.allowedCoBrands.map(\.paymentProductId) == [1, 122])
        let single = try await lookup(answer: try iinBody(6)).0.lookup("411111")   // no co-brand
        #expect(single.status == .supported)
        #expect(single.coBrands.isEmpty)
        let refused = try await lookup(answer: Data(#"{"paymentProductId":3,"isAllowedInContext":false,"coBrands":[{"paymentProductId":3,"isAllowedInContext":false}]}"#.utf8))
            .0.lookup("555555")
        #expect(refused.status == .existingButNotAllowed)
        #expect(refused.paymentProductId == 3)
        #expect(refused.allowedCoBrands.isEmpty)
        // A 500 is the gateway's failure, not a status.
        await #expect(throws: CheckoutError.self) { try await lookup(answer: Data(), status: 500).0.lookup("123456") }
    }

    @Test("an answer without isAllowedInContext: the Swift, Android and JavaScript readings")
    func absentAllowed() async throws {
        let swiftStub = try iinBody(0)   // paymentProductId 3, RU, no isAllowedInContext
        #expect(try await lookup(answer: swiftStub, rule: .notAllowed).0.lookup("666666").status == .existingButNotAllowed)
        #expect(try await lookup(answer: swiftStub, rule: .allowed).0.lookup("666666").status == .supported)

        let product = try clientFixtureBody("product-detail.swift-resource.json")
        let (confirmed, transport) = try lookup(answer: swiftStub, product: .success(TransportResponse(statusCode: 200, body: product)))
        let details = try await confirmed.lookup("666666")
        #expect(details.status == .supported)
        #expect(details.paymentProductId == 3)
        #expect(details.allowedCoBrands.map(\.paymentProductId) == [1])
        #expect(transport.requests.map(\.url.path) == ["/client/v1/customer-id/services/getIINdetails", "/client/v1/customer-id/products/3"])

        let misc = try clientFixture("misc.js-fixtures.json")
        let notFound = try JSONSerialization.data(withJSONObject: misc["sdkSyntheticUnknownProductError"]!)
        #expect(try await lookup(answer: swiftStub, product: .success(TransportResponse(statusCode: 404, body: notFound))).0.lookup("666666").status == .unknown)
        await #expect(throws: CheckoutError.self) {
            try await lookup(answer: swiftStub, product: .failure(TransportError(.timedOut, "slow"))).0.lookup("666666")
        }
    }

    @Test("a second lookup while one is in flight is PENDING and sends nothing, as in the Swift SDK")
    func pending() async throws {
        let gate = WorldlineTestGate()
        let transport = WorldlineStubTransport { _ in
            await gate.wait()
            return .success(TransportResponse(statusCode: 200, body: Data(#"{"paymentProductId":1,"isAllowedInContext":true}"#.utf8)))
        }
        let iin = WorldlineIINLookup(api: try vendorTestAPI(transport), context: vendorTestContext)
        let first = Task { try await iin.lookup("411111") }
        while await gate.arrivals == 0 { await Task.yield() }
        let second = try await iin.lookup("522222")
        #expect(second.status == .pending)
        #expect(second.bin == "522222")
        await gate.release()
        #expect(try await first.value.status == .supported)
        #expect(transport.requests.count == 1)
        // Done: the next lookup goes out.
        #expect(try await iin.lookup("522222").status == .supported)
        #expect(transport.requests.count == 2)
    }

    @Test("answers are cached per bin sent; failures are not")
    func cache() async throws {
        let failNext = LockedFlag(true)
        let transport = WorldlineStubTransport { _ in
            if failNext.take() { return .failure(TransportError(.notSent, "offline")) }
            return .success(TransportResponse(statusCode: 200, body: Data(#"{"paymentProductId":1,"isAllowedInContext":true}"#.utf8)))
        }
        let iin = WorldlineIINLookup(api: try vendorTestAPI(transport), context: vendorTestContext)
        await #expect(throws: CheckoutError.self) { try await iin.lookup("411111") }
        #expect(try await iin.lookup("411111").status == .supported)
        #expect(try await iin.lookup("4111 11").status == .supported)       // same bin
        #expect(try await iin.lookup("4111111").status == .supported)       // 7 digits: bin 411111
        #expect(try await iin.lookup("41111111").status == .supported)      // 8 digits: a new bin
        #expect(try await iin.lookup("4111111111111111").status == .supported)  // bin 41111111 again
        #expect(transport.requests.count == 3)
        #expect(await iin.requestsSent == 3)
        #expect(await iin.cached(bin: "41111111")?.status == .supported)
    }
}

/// A flag read once.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Bool
    init(_ value: Bool) { self.value = value }
    func take() -> Bool { lock.withLock { defer { value = false }; return value } }
}
