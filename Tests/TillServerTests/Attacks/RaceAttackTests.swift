import Foundation
import Testing
import Till
@testable import TillServer
import TillTesting

/// Races an app (or anyone holding its key) can start on purpose. ServerAPITests covers concurrent
/// retries of one identical create and sequential key reuse; these race different requests.
@Suite("Attacks: races on idempotency keys and attempts")
struct RaceAttackTests {
    @Test("24 concurrent creates with one idempotency key and two different bodies: one payment; every other answer replays it (same body) or is 409 (the other body)",
          arguments: StoreKind.available)
    func oneKeyTwoBodies(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let bodies = [ServerHarness.intentJSON("o-race", minor: 100), ServerHarness.intentJSON("o-race", minor: 100_000)]
        let answers = try await withThrowingTaskGroup(of: (Int, Int, String?).self) { group in
            for n in 0..<24 {
                group.addTask {
                    let answer = try await h.send("POST", "v1/payments", json: bodies[n % 2], headers: ["Idempotency-Key": "race-two-bodies"])
                    return (n % 2, answer.status, answer.json["id"] as? String)
                }
            }
            return try await group.reduce(into: [(Int, Int, String?)]()) { $0.append($1) }
        }
        let created = answers.filter { $0.1 == 201 }
        #expect(created.count == 1, "\(answers.map(\.1))")
        let winner = try #require(created.first)
        for (body, status, id) in answers where status != 201 {
            if body == winner.0 {
                #expect(status == 200 && id == winner.2, "same body: HTTP \(status)")
            } else {
                #expect(status == 409 && id == nil, "other body: HTTP \(status)")
            }
        }
        #expect(try await count(h.store, "till_payments", where: "merchant_id = '\(h.merchant)'") == 1)
    }

    @Test("16 concurrent prepares of one payment start one attempt; the rest are 409; the gateway hears of one",
          arguments: StoreKind.available)
    func concurrentPrepares(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("o-prepare-race"))
        let id = try #require(created.json["id"] as? String)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 { group.addTask { try await h.send("POST", "v1/payments/\(id)/attempts", json: "{}").status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 201 }.count == 1, "\(statuses)")
        #expect(statuses.allSatisfy { $0 == 201 || $0 == 409 }, "\(statuses)")
        #expect(try await count(h.store, "till_attempts", where: "payment_id = '\(id)'") == 1)
        #expect(await h.gateway("fake").ledger.records.count == 1)
    }
}
