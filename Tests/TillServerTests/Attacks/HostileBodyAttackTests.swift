import Crypto
import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillServer
import TillTesting

/// Bodies no honest client sends, on every endpoint that reads one (ServerAPITests covers the create
/// endpoint's malformed and oversized bodies; these cover the rest, and nesting).
@Suite("Attacks: malformed, deeply nested and oversized bodies on every endpoint")
struct HostileBodyAttackTests {
    static func nestedArrays(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
    static func nestedObjects(_ depth: Int) -> String { String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth) }

    /// Bodies that are not one readable JSON object of the expected shape.
    static let hostile: [(String, Data)] = [
        ("4,000 nested arrays", Data(nestedArrays(4_000).utf8)),
        ("2,000 nested objects in metadata", Data((#"{"merchantReference":"o-deep","amount":{"value":100,"currency":"USD"},"method":"card","metadata":"#
            + nestedObjects(2_000) + "}").utf8)),
        ("12,000 unclosed brackets", Data(String(repeating: "[", count: 12_000).utf8)),
        ("truncated", Data(#"{"kind":"succeeded","message":"#.utf8)),
        ("not UTF-8", Data([0x7B, 0x22, 0x6B, 0x69, 0x6E, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D])),
        ("NUL bytes", Data([0x7B, 0x00, 0x00, 0x7D])),
        ("a number 10,000 digits long", Data((#"{"kind":"succeeded","gatewayCode":"# + String(repeating: "9", count: 10_000) + "}").utf8)),
    ]

    @Test("malformed and deeply nested JSON on create, prepare, submit and outcome, and signed with the gateway's own secret to the notification endpoint: 4xx, nothing stored, the server keeps serving",
          arguments: StoreKind.available)
    func nestedAndMalformed(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (payment, attempt, gateway) = try await h.createAndPrepare()
        let paths = ["v1/payments", "v1/payments/\(payment)/attempts", "v1/attempts/\(attempt.rawValue)/submit",
                     "v1/attempts/\(attempt.rawValue)/outcome"]
        for (name, body) in Self.hostile {
            for path in paths {
                let answer = try await h.send("POST", path, body: body)
                #expect(answer.status == 400, "\(name) to \(path): HTTP \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            }
            // The gateway's own signature over the hostile body: verified, then unreadable.
            let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(ServerHarness.secret.utf8)))
            let signed = IncomingNotification(headers: ["x-fake-signature": Hex.encode(mac)], body: body)
            let answer = try await h.notify(signed, gateway: gateway)
            #expect((400..<500).contains(answer.status), "\(name) signed to the notification endpoint: HTTP \(answer.status)")
        }
        #expect(try await h.send("GET", "healthz", key: .some(nil)).status == 200)
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 1)
        #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)'") == 0)
        let read = try await h.send("GET", "v1/payments/\(payment)")
        #expect(read.json["status"] as? String == "pending")
        let attempts = try #require(read.json["attempts"] as? [[String: Any]])
        #expect(attempts.count == 1 && attempts.first?["clientOutcome"] == nil && attempts.first?["submittedAt"] == nil)
    }

    @Test("an oversized body on prepare, submit, outcome and the notification endpoint is 413 body_too_large; nothing stored, the attempt still open",
          arguments: StoreKind.available)
    func oversized(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind, maxBodyBytes: 2_048)
        defer { Task { await h.stop() } }
        let (payment, attempt, gateway) = try await h.createAndPrepare()
        let padding = String(repeating: "x", count: 3_000)
        let cases: [(String, String?, Data)] = [
            ("v1/payments/\(payment)/attempts", "", Data(#"{"returnURLs":["https://shop.example/\#(padding)"]}"#.utf8)),
            ("v1/attempts/\(attempt.rawValue)/submit", "", Data(#"{"kind":"sealed_card","fields":{"sealed":"\#(padding)"}}"#.utf8)),
            ("v1/attempts/\(attempt.rawValue)/outcome", "", Data(#"{"kind":"succeeded","message":"\#(padding)"}"#.utf8)),
            ("v1/notifications/\(gateway.rawValue)", nil, Data(#"{"attempt":"\#(attempt.rawValue)","status":"paid","eventId":"\#(padding)"}"#.utf8)),
            ("v1/notifications/\(gateway.rawValue)", nil, Data(repeating: 0x41, count: 8 * 1_024 * 1_024)),
        ]
        for (path, authorized, body) in cases {
            let answer = try await h.send("POST", path, body: body, key: authorized == nil ? .some(nil) : .none)
            #expect(answer.status == 413 && answer.errorCode == "body_too_large", "\(path) (\(body.count) bytes): HTTP \(answer.status)")
        }
        #expect(try await h.send("GET", "healthz", key: .some(nil)).status == 200)
        #expect(try await count(h.store, "till_notifications", where: "attempt_reference = '\(attempt.rawValue)'") == 0)
        let read = try await h.send("GET", "v1/payments/\(payment)")
        #expect(read.json["status"] as? String == "pending")
        #expect((read.json["attempts"] as? [[String: Any]])?.count == 1)
        #expect(await h.gateway(gateway).ledger.charges.isEmpty)
    }
}
