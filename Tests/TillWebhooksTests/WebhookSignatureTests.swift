import Foundation
import Testing
@testable import TillWebhooks

/// One header checked against a body: what `WebhookSignature.verify` must answer. The same cases are run
/// through docs/events.md's Python verifier (``PythonVerifierTests``), which must accept exactly the same ones.
struct EdgeCase: Sendable, CustomTestStringConvertible {
    let name: String
    let header: String
    let body: [UInt8]
    let secrets: [String]
    let now: Int64
    var tolerance: Int64 = WebhookSignature.defaultTolerance
    /// nil: accepted, returning `acceptedTimestamp`.
    let failure: WebhookSignature.Failure?
    var acceptedTimestamp: Int64? = nil

    var testDescription: String { name }

    /// Built on the fixture's first two vectors (one secret; a rotation with two).
    static func all() throws -> [EdgeCase] {
        let vectors = try SignatureVector.load()
        let one = vectors[0], rotation = vectors[1]
        let t = one.timestamp
        let v1 = String(one.header.split(separator: ",")[1])  // "v1=<hex>"
        let hex = String(v1.dropFirst(3))
        let body = one.bodyBytes
        let secret = one.secrets
        func accepted(_ name: String, _ header: String, now: Int64 = t, tolerance: Int64 = 300,
                      body: [UInt8] = body, secrets: [String] = secret) -> EdgeCase {
            EdgeCase(name: name, header: header, body: body, secrets: secrets, now: now, tolerance: tolerance,
                     failure: nil, acceptedTimestamp: t)
        }
        func refused(_ name: String, _ header: String, _ failure: WebhookSignature.Failure, now: Int64 = t,
                     tolerance: Int64 = 300, body: [UInt8] = body, secrets: [String] = secret) -> EdgeCase {
            EdgeCase(name: name, header: header, body: body, secrets: secrets, now: now, tolerance: tolerance, failure: failure)
        }
        let rt = rotation.timestamp
        let rotationCases = [
            EdgeCase(name: "rotation: the new secret alone accepts the two-v1 header", header: rotation.header, body: rotation.bodyBytes,
                     secrets: [rotation.secrets[0]], now: rt, failure: nil, acceptedTimestamp: rt),
            EdgeCase(name: "rotation: the previous secret alone accepts it", header: rotation.header, body: rotation.bodyBytes,
                     secrets: [rotation.secrets[1]], now: rt, failure: nil, acceptedTimestamp: rt),
            EdgeCase(name: "rotation: a receiver with a third secret and the previous one accepts it", header: rotation.header,
                     body: rotation.bodyBytes, secrets: ["whsec_other", rotation.secrets[1]], now: rt, failure: nil, acceptedTimestamp: rt),
            EdgeCase(name: "rotation: neither secret refuses it", header: rotation.header, body: rotation.bodyBytes,
                     secrets: ["whsec_other"], now: rt, failure: .noMatchingSignature),
        ]
        return rotationCases + [
            accepted("the vector as it is", one.header),
            accepted("an unknown scheme before and after v1 is ignored", "t=\(t),v0=deadbeef,\(v1),v2=\(hex)"),
            accepted("a wrong v1 beside the right one", "t=\(t),v1=\(String(repeating: "0", count: 64)),\(v1)"),
            accepted("parts in another order", "\(v1),t=\(t)"),
            accepted("spaces and tabs around the parts", " t=\(t) ,\t\(v1)\t "),
            accepted("exactly the tolerance old", one.header, now: t + 300),
            accepted("exactly the tolerance ahead", one.header, now: t - 300),
            accepted("a tolerance of its own", one.header, now: t + 3600, tolerance: 3600),
            refused("only an unknown scheme: no signature", "t=\(t),v0=\(hex)", .noSignature),
            refused("no v1 at all", "t=\(t)", .noSignature),
            refused("no t", v1, .malformedHeader),
            refused("a t that is not a number", "t=17e8,\(v1)", .malformedHeader),
            refused("a negative t", "t=-\(t),\(v1)", .malformedHeader),
            refused("a t with a plus sign", "t=+\(t),\(v1)", .malformedHeader),
            refused("an empty t", "t=,\(v1)", .malformedHeader),
            refused("two t", "t=\(t),t=\(t),\(v1)", .malformedHeader),
            refused("an empty header", "", .malformedHeader),
            refused("a header of spaces", "   ", .malformedHeader),
            refused("a part without =", "t=\(t),\(hex)", .malformedHeader),
            refused("a trailing comma", "t=\(t),\(v1),", .malformedHeader),
            refused("whitespace inside a part's scheme", "t =\(t),\(v1)", .malformedHeader),
            refused("a changed body", one.header, .noMatchingSignature, body: body + [UInt8(ascii: " ")]),
            refused("a body with one byte changed", one.header, .noMatchingSignature,
                    body: body.enumerated().map { $0.offset == 10 ? $0.element ^ 1 : $0.element }),
            refused("an empty body", one.header, .noMatchingSignature, body: []),
            refused("a changed t", "t=\(t + 1),\(v1)", .noMatchingSignature),
            refused("a wrong secret", one.header, .noMatchingSignature, secrets: ["whsec_wrong"]),
            refused("no secrets", one.header, .noMatchingSignature, secrets: []),
            refused("the hex in uppercase", "t=\(t),v1=\(hex.uppercased())", .noMatchingSignature),
            refused("the hex cut short", "t=\(t),v1=\(hex.dropLast(2))", .noMatchingSignature),
            refused("an old timestamp (301 s)", one.header, .timestampOutsideTolerance(301), now: t + 301),
            refused("a day old", one.header, .timestampOutsideTolerance(86_400), now: t + 86_400),
            refused("a future timestamp beyond the tolerance", one.header, .timestampOutsideTolerance(-301), now: t - 301),
            refused("a negative tolerance", one.header, .timestampOutsideTolerance(0), tolerance: -1),
        ]
    }
}

@Suite("WebhookSignature: the header, its vectors and its edge cases")
struct WebhookSignatureTests {
    @Test("the fixture has the vectors docs/events.md promises: one secret, a rotation, non-ASCII with newlines, an empty body")
    func fixtureIsComplete() throws {
        let vectors = try SignatureVector.load()
        #expect(vectors.count >= 4)
        #expect(vectors.contains { $0.secrets.count == 2 })
        #expect(vectors.contains { $0.body.contains("\n") && $0.body.unicodeScalars.contains { !$0.isASCII } })
        #expect(vectors.contains { $0.body.isEmpty })
    }

    @Test("header(timestamp:body:secrets:) gives each vector's header, from [UInt8] and from Data", arguments: try SignatureVector.load())
    func signs(_ vector: SignatureVector) {
        #expect(WebhookSignature.header(timestamp: vector.timestamp, body: vector.bodyBytes, secrets: vector.secrets) == vector.header)
        #expect(WebhookSignature.header(timestamp: vector.timestamp, body: Data(vector.body.utf8), secrets: vector.secrets) == vector.header)
        #expect(WebhookSignature.header(timestamp: vector.timestamp, body: vector.body.utf8, secrets: vector.secrets) == vector.header)
    }

    @Test("verify accepts each vector at t with each of its secrets, and returns t", arguments: try SignatureVector.load())
    func verifies(_ vector: SignatureVector) throws {
        #expect(try WebhookSignature.verify(header: vector.header, body: vector.bodyBytes, secrets: vector.secrets, now: vector.timestamp)
                == vector.timestamp)
        for secret in vector.secrets {
            #expect(try WebhookSignature.verify(header: vector.header, body: Data(vector.body.utf8), secrets: [secret], now: vector.timestamp)
                    == vector.timestamp)
        }
    }

    @Test("docs/events.md shows every vector: each header verbatim, and its json block is the fixture")
    func docsShowTheVectors() throws {
        let page = try Paths.eventsPageText()
        let vectors = try SignatureVector.load()
        for vector in vectors {
            #expect(page.contains(vector.header), "docs/events.md lacks the header of \"\(vector.name)\": \(vector.header)")
        }
        let block = try #require(fencedBlock("json", after: "### Test vectors", in: page), "docs/events.md has no json block under ### Test vectors")
        let shown = try SignatureVector.decode(Data(block.utf8))
        #expect(shown.map(\.header) == vectors.map(\.header))
        #expect(shown.map(\.body) == vectors.map(\.body))
        #expect(shown.map(\.secrets) == vectors.map(\.secrets))
        #expect(shown.map(\.timestamp) == vectors.map(\.timestamp))
    }

    @Test("edge cases", arguments: try EdgeCase.all())
    func edgeCase(_ edge: EdgeCase) {
        do throws(WebhookSignature.Failure) {
            let t = try WebhookSignature.verify(header: edge.header, body: edge.body, secrets: edge.secrets,
                                                tolerance: edge.tolerance, now: edge.now)
            #expect(edge.failure == nil, "accepted; expected \(edge.failure.map(String.init(describing:)) ?? "")")
            #expect(t == edge.acceptedTimestamp)
        } catch {
            #expect(error == edge.failure, "refused: \(error)")
        }
    }

    @Test("a header for two secrets keeps their order, each v1 the one-secret header's")
    func rotationOrder() {
        let body = Array(#"{"id":"evt_1"}"#.utf8)
        let both = WebhookSignature.header(timestamp: 1_700_000_000, body: body, secrets: ["new", "old"])
        let new = WebhookSignature.header(timestamp: 1_700_000_000, body: body, secrets: ["new"])
        let old = WebhookSignature.header(timestamp: 1_700_000_000, body: body, secrets: ["old"])
        #expect(both == new + "," + old.dropFirst("t=1700000000,".count))
        #expect(both.hasPrefix("t=1700000000,v1="))
        #expect(both.split(separator: ",").count == 3)
    }

    @Test("a t beyond 64 bits is malformed; a far-off now never overflows")
    func extremes() throws {
        let body = Array("{}".utf8)
        let header = WebhookSignature.header(timestamp: Int64.max, body: body, secrets: ["s"])
        #expect(try WebhookSignature.verify(header: header, body: body, secrets: ["s"], now: .max) == .max)
        #expect(throws: WebhookSignature.Failure.timestampOutsideTolerance(.min)) {
            try WebhookSignature.verify(header: header, body: body, secrets: ["s"], now: .min)
        }
        #expect(throws: WebhookSignature.Failure.malformedHeader) {
            try WebhookSignature.verify(header: "t=9223372036854775808,v1=00", body: body, secrets: ["s"], now: 0)
        }
    }

    @Test("the Date overload: the clock's whole seconds, this machine's clock by default")
    func dateOverload() throws {
        let body = Array(#"{"id":"evt_2"}"#.utf8)
        let header = WebhookSignature.header(timestamp: 1_700_000_000, body: body, secrets: ["s"])
        #expect(try WebhookSignature.verify(header: header, body: body, secrets: ["s"], now: Date(timeIntervalSince1970: 1_700_000_300.9))
                == 1_700_000_000)
        #expect(throws: WebhookSignature.Failure.timestampOutsideTolerance(301)) {
            try WebhookSignature.verify(header: header, body: body, secrets: ["s"], now: Date(timeIntervalSince1970: 1_700_000_301))
        }
        let current = Int64(Date().timeIntervalSince1970)
        let fresh = WebhookSignature.header(timestamp: current, body: body, secrets: ["s"])
        #expect(try WebhookSignature.verify(header: fresh, body: body, secrets: ["s"]) == current)
        // The default clock, and a header from a day ago.
        let stale = WebhookSignature.header(timestamp: current - 86_400, body: body, secrets: ["s"])
        #expect(throws: WebhookSignature.Failure.self) { try WebhookSignature.verify(header: stale, body: body, secrets: ["s"]) }
    }

    @Test("every failure says what went wrong, each differently")
    func descriptions() {
        let failures: [WebhookSignature.Failure] = [.malformedHeader, .noSignature, .timestampOutsideTolerance(301),
                                                    .timestampOutsideTolerance(-301), .noMatchingSignature]
        let texts = failures.map(\.description)
        #expect(Set(texts).count == failures.count)
        #expect(texts[2].contains("301 s old"))
        #expect(texts[3].contains("301 s in the future"))
    }

    @Test("the header names")
    func headerNames() {
        #expect(WebhookSignature.headerName == "Till-Signature")
        #expect(WebhookSignature.eventIDHeaderName == "Till-Event-Id")
        #expect(WebhookSignature.defaultTolerance == 300)
    }
}
