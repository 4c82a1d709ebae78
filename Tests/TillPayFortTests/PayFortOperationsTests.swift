import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillPayFort
@testable import TillPayFortServer
import TillTesting

/// `Fixtures/wire/maintenance-operations.json`: the capabilities, field rules and outcome codes of CAPTURE, REFUND and
/// VOID_AUTHORIZATION, each with its source. The emulator's tests read the same file.
enum MaintenanceFixture {
    static func load() throws -> OrderedJSON { try WireFixture.load("maintenance-operations.json") }

    struct Outcome: Sendable, CustomTestStringConvertible {
        var command: String
        var status: String
        var responseCode: String
        var outcome: String
        var testDescription: String { "\(command) \(responseCode) → \(outcome)" }
    }

    static func outcomes() throws -> [Outcome] {
        try (load()["outcomes"]?["cases"]?.arrayValue ?? []).map { item in
            Outcome(command: try #require(item["command"]?.stringValue), status: try #require(item["status"]?.stringValue),
                    responseCode: try #require(item["response_code"]?.stringValue), outcome: try #require(item["outcome"]?.stringValue))
        }
    }
}

@Suite("PayFort operations: capture, void and refund through perform, CHECK_STATUS and feedback")
struct PayFortOperationsTests {
    static let usd = Currency.lookup("USD")!
    static let attempt = AttemptReference(rawValue: "a1b2c3d4e5f6a7b8c9d0e1f2")

    static func money(_ minor: Int64) -> Money { Money(minorUnits: minor, currency: usd) }

    static func operation(_ kind: OperationKind, _ sequence: Int = 1, amount: Int64 = 600, isFinal: Bool = false,
                          succeededBefore: Int64? = 0, othersOpen: Bool = false) throws -> OperationRequest {
        OperationRequest(reference: OperationReference(attempt: attempt, kind: kind, sequence: sequence),
                         intent: try intent("10.00", currency: "USD", action: .authorize), gatewayReference: "169996200007825545",
                         amount: money(amount), isFinal: isFinal, succeededBefore: succeededBefore.map(money), othersOpen: othersOpen)
    }

    /// A signed answer to a maintenance request: the request's fields echoed, then `extra`.
    static func echo(_ operation: OperationRequest, _ extra: [(String, String)]) -> TransportResponse {
        let command = PayFortMaintenanceRequest.Command(operation.kind)
        var pairs: [(String, String)] = [("command", command.rawValue), ("merchant_reference", attempt.rawValue)]
        if command != .void { pairs += [("amount", String(operation.amount.minorUnits)), ("currency", "USD")] }
        if command == .refund { pairs.append(("maintenance_reference", operation.reference.rawValue)) }
        pairs += [("language", "en"), ("fort_id", "169996200007825545")]
        return signedAnswer(pairs + extra)
    }

    @Test("capabilities as the sources give them: partial and several captures within 7 days, no final flag; a void within 7 days; partial and several refunds without a window")
    func capabilities() throws {
        let declared = server(RecordingTransport()).operationCapabilities
        let fixture = try MaintenanceFixture.load()["capabilities"]
        let days = { (kind: String) in fixture?[kind]?["window_days"]?.numberText.flatMap { Int64($0) }.map { Duration.seconds($0 * 86_400) } }
        #expect(declared.capture == .init(partial: fixture?["capture"]?["partial"]?.boolValue == true,
                                          multiple: fixture?["capture"]?["multiple"]?.boolValue == true,
                                          finalFlag: fixture?["capture"]?["final_flag"]?.boolValue == true, window: days("capture")))
        #expect(declared.void == .init(window: days("void")))
        #expect(declared.refund == .init(partial: fixture?["refund"]?["partial"]?.boolValue == true,
                                         multiple: fixture?["refund"]?["multiple"]?.boolValue == true, window: days("refund")))
        #expect(declared.capture?.window == .seconds(7 * 86_400) && declared.refund?.window == nil)
    }

    @Test("perform sends the order's merchant_reference and fort_id; a capture and a refund their own amount, a refund its reference as maintenance_reference, a void no amount")
    func requests() async throws {
        let transport = RecordingTransport()
        let capture = try Self.operation(.capture, amount: 600)
        let refund = try Self.operation(.refund, 2, amount: 250)
        let void = try Self.operation(.void, amount: 1000)
        transport.expect(.post, path: api, respond: Self.echo(capture, [("status", "04"), ("response_code", "04000")]))
        transport.expect(.post, path: api, respond: Self.echo(refund, [("status", "06"), ("response_code", "06000")]))
        transport.expect(.post, path: api, respond: Self.echo(void, [("status", "08"), ("response_code", "08000")]))
        let gateway = server(transport)
        let captured = try await gateway.perform(capture)
        #expect(captured == OperationReport(reference: capture.reference, kind: .capture, status: .succeeded, amount: Self.money(600),
                                            gatewayStatus: "04", gatewayCode: "04000"))
        let refunded = try await gateway.perform(refund)
        #expect(refunded.status == .succeeded && refunded.amount == Self.money(250) && refunded.reference == refund.reference)
        let voided = try await gateway.perform(void)
        // A void's answer has no amount: the request's.
        #expect(voided.status == .succeeded && voided.amount == Self.money(1000) && voided.gatewayReference == nil)

        let bodies = try transport.requests.map(body)
        #expect(bodies.map { $0.text("merchant_reference") } == Array(repeating: Self.attempt.rawValue, count: 3))
        #expect(bodies.map { $0.text("fort_id") } == Array(repeating: "169996200007825545", count: 3))
        #expect(bodies[0].text("command") == "CAPTURE" && bodies[0].text("amount") == "600" && bodies[0].text("currency") == "USD")
        #expect(bodies[0]["maintenance_reference"] == nil)
        #expect(bodies[1].text("command") == "REFUND" && bodies[1].text("amount") == "250")
        #expect(bodies[1].text("maintenance_reference") == "\(Self.attempt.rawValue)-r2")
        #expect(bodies[2].text("command") == "VOID_AUTHORIZATION" && bodies[2]["amount"] == nil && bodies[2]["currency"] == nil)
        for sent in bodies { try PayFortSignature().verify(sent, phrase: credentials.requestPhrase) }
    }

    @Test("each documented outcome code: success → succeeded, the command's failure → failed with the code, on hold (xx006) → unknown outcome thrown",
          arguments: try MaintenanceFixture.outcomes())
    func outcomes(_ case_: MaintenanceFixture.Outcome) async throws {
        let kind = PayFortMaintenanceRequest.Command(rawValue: case_.command)!.kind
        let operation = try Self.operation(kind)
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: Self.echo(operation, [("status", case_.status), ("response_code", case_.responseCode),
                                                                         ("response_message", "as documented")]))
        let gateway = server(transport)
        switch case_.outcome {
        case "unknown":
            let error = await #expect(throws: CheckoutError.self) { try await gateway.perform(operation) }
            #expect(error?.category == .unknownOutcome && error?.gatewayCode == case_.responseCode)
        default:
            let report = try await gateway.perform(operation)
            #expect(report.status.rawValue == case_.outcome)
            #expect(report.gatewayCode == case_.responseCode && report.gatewayStatus == case_.status)
            #expect(report.gatewayMessage == "as documented")
        }
        // The same rule reads the operation's feedback.
        #expect(PayFortMaintenanceRequest.Command(rawValue: case_.command)!.outcome(status: case_.status, responseCode: case_.responseCode).rawValue
                == case_.outcome)
    }

    @Test("refused before anything is sent: a final capture (no final flag), another currency, a zero amount, an amount over 10 digits")
    func refusals() async throws {
        let final = try Self.operation(.capture, isFinal: true)
        var otherCurrency = try Self.operation(.refund)
        otherCurrency.amount = Money(minorUnits: 100, currency: Currency.lookup("EUR")!)
        let zero = try Self.operation(.capture, amount: 0)
        let huge = try Self.operation(.refund, amount: 12_345_678_901)
        let cases: [(OperationRequest, CheckoutError.Category, String)] = [
            (final, .unsupported, "operations.capture.finalFlag"), (otherCurrency, .invalidInput, "amount.currency"),
            (zero, .invalidInput, "amount"), (huge, .invalidInput, "amount"),
        ]
        for (operation, category, field) in cases {
            let transport = RecordingTransport()
            let error = await #expect(throws: CheckoutError.self) { try await server(transport).perform(operation) }
            #expect(error?.category == category && error?.field == field, "\(field)")
            #expect(transport.requests.isEmpty)
        }
    }

    @Test("lost or untrustworthy answers are unknown outcomes; a request that never left is unavailable")
    func faults() async throws {
        let refund = try Self.operation(.refund)
        func perform(_ prepare: (RecordingTransport) -> Void) async -> CheckoutError? {
            let transport = RecordingTransport()
            prepare(transport)
            return await #expect(throws: CheckoutError.self) { try await server(transport).perform(refund) }
        }
        let timeout = await perform { $0.expect(.post, path: api, fail: TransportError(.timedOut, "slow")) }
        #expect(timeout?.category == .unknownOutcome)
        let lost = await perform { $0.expect(.post, path: api, fail: TransportError(.connectionLost, "reset")) }
        #expect(lost?.category == .unknownOutcome)
        let notSent = await perform { $0.expect(.post, path: api, fail: TransportError(.notSent, "refused")) }
        #expect(notSent?.category == .unavailable)
        let unavailable = await perform {
            $0.expect(.post, path: api, respond: TransportResponse(statusCode: 503, headers: [:], body: Data("Service Unavailable".utf8)))
        }
        #expect(unavailable?.category == .unknownOutcome && unavailable?.gatewayCode == "503")
        let unreadable = await perform {
            $0.expect(.post, path: api, respond: TransportResponse(statusCode: 200, headers: [:], body: Data("<html>".utf8)))
        }
        #expect(unreadable?.category == .unknownOutcome)
        // Signed with another phrase: cannot be trusted, and the request was sent.
        let forged = await perform {
            var answer = PayFortParameters(strings: [("command", "REFUND"), ("merchant_reference", Self.attempt.rawValue),
                                                     ("status", "06"), ("response_code", "06000")])
            answer["signature"] = .string(PayFortSignature().sign(answer, phrase: "not the response phrase"))
            $0.expect(.post, path: api, respond: TransportResponse(statusCode: 200, headers: [:], body: answer.jsonData()))
        }
        #expect(forged?.category == .unknownOutcome && forged?.field == "answer.signature")
        // An answer about another refund of the order, or another order.
        let otherRefund = await perform {
            $0.expect(.post, path: api, respond: signedAnswer([("command", "REFUND"), ("merchant_reference", Self.attempt.rawValue),
                                                             ("maintenance_reference", "\(Self.attempt.rawValue)-r9"),
                                                             ("status", "06"), ("response_code", "06000")]))
        }
        #expect(otherRefund?.category == .unknownOutcome && otherRefund?.field == "answer.maintenance_reference")
        let otherAmount = await perform {
            $0.expect(.post, path: api, respond: signedAnswer([("command", "REFUND"), ("merchant_reference", Self.attempt.rawValue),
                                                             ("amount", "601"), ("currency", "USD"), ("status", "06"), ("response_code", "06000")]))
        }
        #expect(otherAmount?.category == .unknownOutcome && otherAmount?.field == "answer.amount")
        let otherCommand = await perform {
            $0.expect(.post, path: api, respond: signedAnswer([("command", "CAPTURE"), ("merchant_reference", Self.attempt.rawValue),
                                                             ("status", "04"), ("response_code", "04000")]))
        }
        #expect(otherCommand?.category == .unknownOutcome && otherCommand?.field == "answer.command")
    }

    // MARK: Inquiry

    /// A CHECK_STATUS answer of the attempt's order.
    static func checkStatus(last: String?, captured: Int64? = nil, refunded: Int64? = nil) -> TransportResponse {
        var pairs: [(String, String)] = [("query_command", "CHECK_STATUS"), ("merchant_reference", attempt.rawValue), ("language", "en"),
                                         ("fort_id", "169996200007825545"), ("status", "12"), ("response_code", "12000")]
        if let last { pairs += [("transaction_status", last), ("transaction_code", last + "000"), ("transaction_message", "Success")] }
        if let captured { pairs += [("authorized_amount", "1000"), ("captured_amount", String(captured))] }
        if let refunded { pairs.append(("refunded_amount", String(refunded))) }
        return signedAnswer(pairs)
    }

    struct InquiryCase: Sendable, CustomTestStringConvertible {
        var kind: OperationKind
        var amount: Int64
        var before: Int64?
        var othersOpen: Bool
        var last: String?
        var captured: Int64?
        var refunded: Int64?
        var expected: OperationStatus
        var why: String
        var testDescription: String { "\(kind) \(amount): \(why) → \(expected)" }
    }

    static let inquiryCases: [InquiryCase] = [
        .init(kind: .capture, amount: 600, before: 0, othersOpen: false, last: "04", captured: 600, expected: .succeeded, why: "the total grew by this capture"),
        .init(kind: .capture, amount: 400, before: 600, othersOpen: false, last: "04", captured: 1000, expected: .succeeded, why: "a second capture"),
        .init(kind: .capture, amount: 400, before: 600, othersOpen: false, last: "04", captured: 600, expected: .failed, why: "the total is what Till counted"),
        .init(kind: .capture, amount: 400, before: 200, othersOpen: true, last: "04", captured: 600, expected: .unknown, why: "another open capture may be the one"),
        .init(kind: .capture, amount: 400, before: 200, othersOpen: true, last: "04", captured: 200, expected: .failed, why: "nothing open happened"),
        .init(kind: .capture, amount: 400, before: 0, othersOpen: false, last: "04", captured: 300, expected: .unknown, why: "a total Till cannot explain"),
        .init(kind: .capture, amount: 400, before: nil, othersOpen: false, last: "04", captured: 400, expected: .unknown, why: "Till passed no count"),
        .init(kind: .capture, amount: 400, before: 0, othersOpen: false, last: "04", captured: nil, expected: .unknown, why: "no totals, a capture last"),
        .init(kind: .capture, amount: 400, before: 0, othersOpen: false, last: "02", captured: nil, expected: .failed, why: "no totals, the authorization still last"),
        .init(kind: .refund, amount: 250, before: 0, othersOpen: false, last: "06", captured: 1000, refunded: 250, expected: .succeeded, why: "the total grew by this refund"),
        .init(kind: .refund, amount: 250, before: 250, othersOpen: false, last: "06", captured: 1000, refunded: 250, expected: .failed, why: "the total is what Till counted"),
        .init(kind: .refund, amount: 250, before: 0, othersOpen: true, last: "06", captured: 1000, refunded: 250, expected: .unknown, why: "two open refunds of one amount"),
        .init(kind: .refund, amount: 250, before: 0, othersOpen: false, last: "14", captured: nil, expected: .failed, why: "no totals, the purchase still last"),
        .init(kind: .refund, amount: 250, before: 0, othersOpen: false, last: "07", captured: nil, expected: .unknown, why: "no totals, a failed refund last"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: "08", expected: .succeeded, why: "voided"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: "09", expected: .failed, why: "the void failed"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: "02", expected: .failed, why: "the authorization still last"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: "04", captured: 600, expected: .failed, why: "captured"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: "05", expected: .unknown, why: "a failed capture last"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: "20", expected: .unknown, why: "on hold"),
        .init(kind: .void, amount: 1000, before: nil, othersOpen: false, last: nil, expected: .unknown, why: "no last operation"),
    ]

    @Test("CHECK_STATUS decides an operation only when its totals or the order's last status can: otherwise unknown", arguments: inquiryCases)
    func inquiry(_ case_: InquiryCase) async throws {
        let operation = try Self.operation(case_.kind, amount: case_.amount, succeededBefore: case_.before, othersOpen: case_.othersOpen)
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: Self.checkStatus(last: case_.last, captured: case_.captured, refunded: case_.refunded))
        let report = try await server(transport).inquireOperation(operation)
        #expect(report.status == case_.expected)
        #expect(report.reference == operation.reference && report.kind == case_.kind)
        #expect(report.amount == (case_.expected == .succeeded ? operation.amount : nil))
        let sent = try body(transport.requests.first)
        #expect(sent.text("query_command") == "CHECK_STATUS" && sent.text("merchant_reference") == Self.attempt.rawValue)
        #expect(sent.text("fort_id") == "169996200007825545")
    }

    @Test("an order PayFort does not have had no operation: failed; an answer about another order is an unknown outcome")
    func inquiryEdges() async throws {
        let operation = try Self.operation(.refund)
        let missing = RecordingTransport()
        missing.expect(.post, path: api, respond: signedAnswer([("query_command", "CHECK_STATUS"), ("status", "12"), ("response_code", "12036"),
                                                                ("response_message", "Order not found")]))
        let report = try await server(missing).inquireOperation(operation)
        #expect(report.status == .failed && report.gatewayCode == "12036")
        let other = RecordingTransport()
        other.expect(.post, path: api, respond: signedAnswer([("query_command", "CHECK_STATUS"), ("merchant_reference", "someoneelse"),
                                                              ("status", "12"), ("response_code", "12000"), ("transaction_status", "06"),
                                                              ("transaction_code", "06000")]))
        let error = await #expect(throws: CheckoutError.self) { try await server(other).inquireOperation(operation) }
        #expect(error?.category == .unknownOutcome)
    }

    // MARK: Feedback

    static func feedback(_ pairs: [(String, String)]) -> IncomingNotification {
        IncomingNotification(headers: ["Content-Type": "application/json"], body: signedParameters(pairs).jsonData())
    }

    @Test("the feedback of a CAPTURE, REFUND or VOID_AUTHORIZATION names its operation: Till's refund by maintenance_reference, its amount, its outcome; the attempt-level report as before")
    func feedback() throws {
        let gateway = server(RecordingTransport())
        let a = Self.attempt.rawValue
        let refund = try gateway.verifyNotification(Self.feedback([
            ("command", "REFUND"), ("merchant_reference", a), ("amount", "250"), ("currency", "USD"), ("maintenance_reference", "\(a)-r2"),
            ("fort_id", "169996200007825545"), ("status", "06"), ("response_code", "06000"), ("response_message", "Success")]))
        #expect(refund.operation == OperationReport(reference: OperationReference(attempt: Self.attempt, kind: .refund, sequence: 2), kind: .refund,
                                                    status: .succeeded, amount: Self.money(250), gatewayStatus: "06", gatewayCode: "06000",
                                                    gatewayMessage: "Success"))
        #expect(refund.report.status == .partiallyRefunded && refund.report.amount == Self.money(250))

        let capture = try gateway.verifyNotification(Self.feedback([
            ("command", "CAPTURE"), ("merchant_reference", a), ("amount", "600"), ("currency", "USD"), ("status", "05"), ("response_code", "05042")]))
        #expect(capture.operation?.kind == .capture && capture.operation?.status == .failed && capture.operation?.reference == nil)
        #expect(capture.operation?.amount == Self.money(600) && capture.operation?.gatewayCode == "05042")

        let void = try gateway.verifyNotification(Self.feedback([
            ("command", "VOID_AUTHORIZATION"), ("merchant_reference", a), ("status", "08"), ("response_code", "08000")]))
        #expect(void.operation?.kind == .void && void.operation?.status == .succeeded && void.operation?.amount == nil)
        #expect(void.report.status == .cancelled)

        let onHold = try gateway.verifyNotification(Self.feedback([
            ("command", "REFUND"), ("merchant_reference", a), ("amount", "250"), ("currency", "USD"), ("status", "07"), ("response_code", "07006")]))
        #expect(onHold.operation?.status == .unknown)

        // A back-office refund: its own reference is not Till's (or names another attempt, or another kind).
        for foreign in ["BO-REFUND-17", "otherattempt-r1", "\(a)-c1"] {
            let backOffice = try gateway.verifyNotification(Self.feedback([
                ("command", "REFUND"), ("merchant_reference", a), ("amount", "100"), ("currency", "USD"), ("maintenance_reference", foreign),
                ("status", "06"), ("response_code", "06000")]))
            #expect(backOffice.operation?.reference == nil && backOffice.operation?.amount == Self.money(100), "\(foreign)")
        }

        // The payment's own feedback is about no operation.
        let purchase = try gateway.verifyNotification(Self.feedback([
            ("command", "PURCHASE"), ("merchant_reference", a), ("amount", "1000"), ("currency", "USD"), ("status", "14"), ("response_code", "14000")]))
        #expect(purchase.operation == nil)
    }

    @Test("maintenance_reference takes up to 200 of letters, digits and - _ . (docs), not 40")
    func maintenanceReferenceRule() throws {
        let rule = try #require(MaintenanceFixture.load()["fields"]?["maintenance_reference"])
        let max = try #require(rule["max"]?.numberText.flatMap { Int($0) })
        #expect(PayFortFields.check("maintenance_reference", String(repeating: "r", count: max), prefix: "").isEmpty)
        #expect(PayFortFields.check("maintenance_reference", String(repeating: "r", count: max + 1), prefix: "").first?.code == .fieldTooLong)
        #expect(PayFortFields.check("maintenance_reference", "a-b_c.d", prefix: "").isEmpty)
        #expect(PayFortFields.check("maintenance_reference", "a b", prefix: "").first?.code == .invalidField)
    }
}
