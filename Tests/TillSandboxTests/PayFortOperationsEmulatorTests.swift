import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The emulator's CAPTURE, REFUND and VOID_AUTHORIZATION against `maintenance-operations.json` (the fixture the
/// PayFort module is tested with): partial and several operations, the documented limit codes, the refund's own
/// reference echoed and notified, the 7-day hold, and faults on maintenance calls.
@Suite("PayFort emulator: capture, refund and void", .serialized)
struct PayFortOperationsEmulatorTests {
    static func fixture() throws -> JSONValue { try PayFortWireFixtureTests.load("maintenance-operations.json") }

    /// The documented response code of `command` with `meaning` (the fixture's outcome cases).
    static func code(_ command: String, _ meaning: String) throws -> String {
        guard case .array(let cases) = try fixture()["outcomes"]?["cases"] else { throw VectorsUnavailable() }
        let found = cases.first { $0["command"]?.stringValue == command && $0["meaning"]?.stringValue == meaning }
        return try #require(found?["response_code"]?.stringValue, "\(command) \(meaning)")
    }

    func refund(_ harness: PayFortHarness, reference: String, amount: Int64, maintenance: String?) async throws -> APIResult {
        var params: [String: JSONValue] = ["command": "REFUND", "access_code": .string(harness.merchant.accessCode),
                                           "merchant_identifier": .string(harness.merchant.merchantIdentifier), "language": "en",
                                           "merchant_reference": .string(reference), "amount": .number(String(amount)), "currency": "USD"]
        if let maintenance { params["maintenance_reference"] = .string(maintenance) }
        return try await harness.call(params)
    }

    @Test("partial and several captures up to the authorization (042 beyond), partial and several refunds up to the captures (048 beyond), each answer this operation's amount")
    func partialAndMultiple() async throws {
        let overCapture = try Self.code("CAPTURE", "Operation amount exceeds the authorized amount")
        let overRefund = try Self.code("REFUND", "Operation amount exceeds captured amount")
        try await PayFortHarness.with { harness in
            let order = PayFortHarness.newReference()
            #expect(try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: order)["response_code"] == "02000")
            let first = try await harness.maintenance("CAPTURE", reference: order, amount: 300)
            #expect(first["response_code"] == "04000" && first.value("amount") == .number("300"))
            let second = try await harness.maintenance("CAPTURE", reference: order, amount: 500)
            #expect(second["response_code"] == "04000" && second.value("amount") == .number("500"))
            #expect(try await harness.maintenance("CAPTURE", reference: order, amount: 201)["response_code"] == overCapture)
            let refunded = try await refund(harness, reference: order, amount: 100, maintenance: "\(order)-r1")
            #expect(refunded["response_code"] == "06000" && refunded["maintenance_reference"] == "\(order)-r1")
            #expect(refunded.value("amount") == .number("100") && refunded.isSigned(by: harness.merchant))
            #expect(try await refund(harness, reference: order, amount: 701, maintenance: "\(order)-r2")["response_code"] == overRefund)
            #expect(try await refund(harness, reference: order, amount: 700, maintenance: "\(order)-r2")["response_code"] == "06000")
            let status = try await harness.checkStatus(reference: order)
            #expect(status.value("captured_amount") == .number("800") && status.value("refunded_amount") == .number("800"))
            let operations = await harness.emulator.operations
            #expect(operations.map(\.amountMinor) == [300, 500, 100, 700])
            #expect(operations.map(\.maintenanceReference) == [nil, nil, "\(order)-r1", "\(order)-r2"])
        }
    }

    @Test("maintenance_reference: up to 200 of letters, digits and - _ . (the docs), refused beyond or with other characters")
    func maintenanceReferenceRule() async throws {
        let maxText = try Self.fixture()["fields"]?["maintenance_reference"]?["max"]?.parameterText
        let max = try #require(maxText.flatMap { Int($0) })
        try await PayFortHarness.with { harness in
            let order = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: order)
            #expect(try await refund(harness, reference: order, amount: 1, maintenance: String(repeating: "r", count: max))["response_code"] == "06000")
            #expect(try await refund(harness, reference: order, amount: 1, maintenance: String(repeating: "r", count: max + 1))["response_code"] == "00032")
            #expect(try await refund(harness, reference: order, amount: 1, maintenance: "r 1")["response_code"] == "00002")
        }
    }

    @Test("the feedback of each operation carries this operation's amount and the refund's maintenance_reference")
    func feedback() async throws {
        try await withReceiver { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url) { harness in
                let order = PayFortHarness.newReference()
                _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: order)
                _ = try await harness.maintenance("CAPTURE", reference: order, amount: 400)
                _ = try await refund(harness, reference: order, amount: 150, maintenance: "\(order)-r1")
                let voidable = PayFortHarness.newReference()
                _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: voidable)
                _ = try await harness.maintenance("VOID_AUTHORIZATION", reference: voidable, amount: nil)
                await harness.emulator.waitForNotifications()
                let posts = await receiver.received().compactMap(\.formFields)
                // Feedback is delivered concurrently: read it in the order of the commands, not of arrival.
                let commands = ["CAPTURE", "REFUND", "VOID_AUTHORIZATION"]
                let operations = posts.filter { commands.contains($0["command"] ?? "") }
                    .sorted { commands.firstIndex(of: $0["command"] ?? "")! < commands.firstIndex(of: $1["command"] ?? "")! }
                #expect(operations.map { $0["response_code"] } == ["04000", "06000", "08000"])
                #expect(operations.map { $0["amount"] } == ["400", "150", nil])
                #expect(operations.map { $0["maintenance_reference"] } == [nil, "\(order)-r1", nil])
                #expect(operations.map { $0["fort_id"] }.allSatisfy { $0 != nil })
            }
        }
    }

    @Test("an authorization is held 7 days: after that it can be neither captured nor voided, while what was captured can still be refunded")
    func holdWindow() async throws {
        let daysText = try Self.fixture()["capabilities"]?["capture"]?["window_days"]?.parameterText
        let days = try #require(daysText.flatMap { Double($0) })
        let clock = TestClock()
        try await PayFortHarness.with(now: { clock.now }) { harness in
            let order = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: order)
            #expect(try await harness.maintenance("CAPTURE", reference: order, amount: 100)["response_code"] == "04000")
            clock.advance(by: days * 86_400 + 60)
            #expect(try await harness.maintenance("CAPTURE", reference: order, amount: 100)["response_code"] == "05666")
            #expect(try await harness.maintenance("VOID_AUTHORIZATION", reference: order, amount: nil)["response_code"] == "09666")
            #expect(try await refund(harness, reference: order, amount: 100, maintenance: nil)["response_code"] == "06000")

            let late = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: late)
            clock.advance(by: days * 86_400 - 60)
            #expect(try await harness.maintenance("VOID_AUTHORIZATION", reference: late, amount: nil)["response_code"] == "08000")
        }
    }

    @Test("faults on maintenance calls: 503 moves nothing; a timeout or a dropped connection moves the money and CHECK_STATUS tells; a technical problem answers xx006 and moves nothing",
          arguments: ["CAPTURE", "REFUND", "VOID_AUTHORIZATION"])
    func faults(command: String) async throws {
        try await PayFortHarness.with(timeoutHold: .milliseconds(200)) { harness in
            func order() async throws -> String {
                let reference = PayFortHarness.newReference()
                _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: reference)
                if command == "REFUND" { _ = try await harness.maintenance("CAPTURE", reference: reference, amount: 1000) }
                return reference
            }
            let amount: Int64? = command == "VOID_AUTHORIZATION" ? nil : 400
            func raw(_ reference: String) -> Data {
                var params: [String: JSONValue] = ["command": .string(command), "access_code": .string(harness.merchant.accessCode),
                                                   "merchant_identifier": .string(harness.merchant.merchantIdentifier), "language": "en",
                                                   "merchant_reference": .string(reference)]
                if let amount { params["amount"] = .number(String(amount)); params["currency"] = "USD" }
                let members = params.map { JSONValue.Member(key: $0.key, value: $0.value) }
                params["signature"] = .string(PayFortEmulator.Signature.sign(members, phrase: harness.merchant.requestPhrase,
                                                                              algorithm: harness.merchant.algorithm))
                return Data(JSONValue.sortedObject(params).serialized.utf8)
            }
            let success = command == "CAPTURE" ? "04" : command == "REFUND" ? "06" : "08"
            let failure = command == "CAPTURE" ? "05" : command == "REFUND" ? "07" : "09"
            func moved() async -> Int { await harness.emulator.operations.filter { $0.command == command }.count }

            let unavailable = try await order()
            await harness.emulator.injectFault(.serverError, matching: command)
            #expect(try await harness.post(harness.apiURL, body: raw(unavailable), contentType: "application/json").status == 503)
            #expect(await moved() == 0)

            let held = try await order()
            await harness.emulator.injectFault(.timeout, matching: command)
            #expect(try await harness.post(harness.apiURL, body: raw(held), contentType: "application/json").status == 504)
            #expect(await moved() == 1)
            #expect(try await harness.checkStatus(reference: held)["transaction_status"] == success)

            let dropped = try await order()
            await harness.emulator.injectFault(.dropConnection, matching: command)
            let fresh = PayFortHarness.makeSession()
            defer { fresh.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) {
                _ = try await harness.post(harness.apiURL, body: raw(dropped), contentType: "application/json", session: fresh)
            }
            #expect(await moved() == 2)

            let troubled = try await order()
            await harness.emulator.injectFault(.technicalProblem, matching: command)
            let answer = try APIResult(try await harness.post(harness.apiURL, body: raw(troubled), contentType: "application/json"))
            #expect(answer["response_code"] == failure + "006" && answer.isSigned(by: harness.merchant))
            #expect(await moved() == 2)
            #expect(try await harness.checkStatus(reference: troubled)["transaction_status"] != success)
        }
    }
}
