import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillCitconServer
import TillCitcon
import TillOrchestration

/// ``CitconServer``'s operations with a ``RecordingTransport``: refunds only, read against the recorded wire
/// fixtures (`Fixtures/wire/refund-*.json`, `capture-request.json`, `cancel-request.json`).
@Suite("Citcon operations")
struct CitconOperationsTests {
    static let attempt = AttemptReference(rawValue: "attemptref0000000000000001")
    static let usd = Currency.lookup("USD")!

    static func request(_ kind: OperationKind, _ sequence: Int = 1, amount: Int64 = 500, charge: String? = "ch0001",
                        succeededBefore: Int64? = nil, othersOpen: Bool = false) -> OperationRequest {
        OperationRequest(reference: OperationReference(attempt: attempt, kind: kind, sequence: sequence), intent: Fixtures.intent(method: .paypal),
                         gatewayReference: charge, amount: Money(minorUnits: amount, currency: usd),
                         succeededBefore: succeededBefore.map { Money(minorUnits: $0, currency: usd) }, othersOpen: othersOpen)
    }

    /// The recorded refund answer (`refund-response.json`), naming `reference` instead of the recorder's.
    static func recordedRefund(reference: String) throws -> TransportResponse {
        var fixture = try Wire.load("refund-response.json")
        var body = try #require(fixture["body"] as? [String: Any])
        var data = try #require(body["data"] as? [String: Any])
        data["reference"] = reference
        body["data"] = data
        fixture["body"] = body
        return try Wire.response(fixture)
    }

    @Test("refunds only, partial and several; capture and void are refused before anything is sent, with the evidence in the message")
    func capabilities() async throws {
        let transport = RecordingTransport()
        let server = Fixtures.server(transport)
        #expect(server.operationCapabilities == OperationCapabilities(refund: .init(partial: true, multiple: true)))
        for kind in [OperationKind.capture, .void] {
            let error = await #expect(throws: CheckoutError.self) { _ = try await server.perform(Self.request(kind)) }
            #expect(error?.category == .unsupported && error?.field == "operations.\(kind.rawValue)")
        }
        #expect(transport.requests.isEmpty)
        // The capture fixture records that no source shows a capture request.
        let capture = try Wire.load("capture-request.json")
        #expect(capture["body"] is NSNull && (capture["source"] as? String)?.hasPrefix("no source") == true)
    }

    @Test("a refund: POST /v1/refunds with the charge id, the operation's reference and the amount; the recorded answer is succeeded with the refund's own id and amount (never amount_refunded)")
    func refund() async throws {
        let reference = Self.request(.refund).reference
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        transport.expect(.post, path: "/v1/refunds", respond: try Self.recordedRefund(reference: reference.rawValue))
        let report = try await Fixtures.server(transport).perform(Self.request(.refund, amount: 100))
        try transport.verify()
        let recorded = try #require((try Wire.load("refund-response.json")["body"] as? [String: Any])?["data"] as? [String: Any])
        let recordedAmount = try #require(recorded["amount"] as? Int)
        #expect(report == OperationReport(reference: reference, kind: .refund, status: .succeeded,
                                          amount: Money(minorUnits: Int64(recordedAmount), currency: Self.usd),
                                          gatewayReference: recorded["id"] as? String, gatewayStatus: "succeeded"))
        let body = try #require(JSONSerialization.jsonObject(with: transport.requests[1].body ?? Data()) as? [String: Any])
        let recordedRequest = try #require(try Wire.load("refund-request.json")["body"] as? [String: Any])
        #expect(Set(body.keys) == Set(recordedRequest.keys))
        #expect(body["id"] as? String == "ch0001" && body["reference"] as? String == reference.rawValue && body["amount"] as? Int == 100)

        // A second, partial refund: this refund's amount (300), not the running total (800).
        let second = RecordingTransport()
        second.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        second.expect(.post, path: "/v1/refunds", respond: Fixtures.json(#"{"status":"success","app":"citcon_upi","version":"v1.0.0","data":{"id":"2000470575137023123462","object":"refund","reference":"\#(Self.request(.refund, 2).reference)","amount":300,"amount_refunded":800,"currency":"USD","status":"succeeded"}}"#))
        let partial = try await Fixtures.server(second).perform(Self.request(.refund, 2, amount: 300))
        #expect(partial.amount == Money(minorUnits: 300, currency: Self.usd) && partial.status == .succeeded)
    }

    @Test("4202 (HTTP 406) is failed with its code; a repeated reference (4100), a 5xx, a lost answer and an answer naming another refund are unknown outcomes; no charge id is refused by name")
    func refusals() async throws {
        let refused = RecordingTransport()
        refused.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        let recorded = try #require(Wire.examples(try Wire.load("refund-response.json")).first { ($0["http"] as? [String: Any])?["status"] as? Int == 406 })
        refused.expect(.post, path: "/v1/refunds", respond: try Wire.response(recorded))
        let failed = try await Fixtures.server(refused).perform(Self.request(.refund))
        #expect(failed.status == .failed && failed.gatewayCode == "4202" && failed.gatewayMessage == "refund failed")

        let answers: [TransportResponse] = [
            Fixtures.failure(code: "4100", message: "duplicate request", status: 400),
            Fixtures.failure(code: "5100", message: "internal server error", status: 500),
            try Self.recordedRefund(reference: "\(Self.attempt.rawValue)-r9"),
        ]
        for answer in answers {
            let transport = RecordingTransport()
            transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
            transport.expect(.post, path: "/v1/refunds", respond: answer)
            let error = await #expect(throws: CheckoutError.self) { _ = try await Fixtures.server(transport).perform(Self.request(.refund)) }
            #expect(error?.category == .unknownOutcome, "HTTP \(answer.statusCode)")
        }
        let lost = RecordingTransport()
        lost.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        lost.expect(.post, path: "/v1/refunds", fail: TransportError(.timedOut, "no answer"))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Fixtures.server(lost).perform(Self.request(.refund)) }
        #expect(error?.category == .unknownOutcome)

        let none = RecordingTransport()
        let missing = await #expect(throws: CheckoutError.self) { _ = try await Fixtures.server(none).perform(Self.request(.refund, charge: nil)) }
        #expect(missing?.field == "gatewayReference" && none.requests.isEmpty)
    }

    @Test("inquireOperation reads the charge's running amount_refunded against what Till counts: this refund's amount more is succeeded, nothing more failed, anything else (or another refund open) unknown")
    func inquiry() async throws {
        let cases: [(refunded: Any, before: Int64?, open: Bool, expected: OperationStatus)] = [
            (500, nil, false, .succeeded), (800, 300, false, .succeeded), (300, 300, false, .failed), (NSNull(), nil, false, .failed),
            (700, 300, false, .unknown), (800, 300, true, .unknown),
        ]
        for item in cases {
            let transport = RecordingTransport()
            transport.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
            transport.expect(.get, path: "/v1/transactions/ch0001",
                             respond: Fixtures.charge(id: "ch0001", reference: Self.attempt.rawValue, status: "succeeded", method: "paypal",
                                                      amountRefunded: item.refunded))
            let report = try await Fixtures.server(transport).inquireOperation(Self.request(.refund, succeededBefore: item.before, othersOpen: item.open))
            #expect(report.status == item.expected, "\(item)")
            #expect(report.reference == Self.request(.refund).reference)
            if item.expected == .succeeded { #expect(report.amount == Money(minorUnits: 500, currency: Self.usd)) }
        }
        // Another order's charge is an unknown outcome.
        let other = RecordingTransport()
        other.expect(.post, path: "/v1/access-tokens", respond: Fixtures.token("server-token"))
        other.expect(.get, path: "/v1/transactions/ch0001", respond: Fixtures.charge(id: "ch0001", reference: "someone-else", status: "succeeded"))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Fixtures.server(other).inquireOperation(Self.request(.refund)) }
        #expect(error?.category == .unknownOutcome)
    }

    /// A signed refund IPN naming `reference`.
    static func refundIPN(reference: String, status: String = "success", id: String = "2000470575137023123461") throws -> IncomingNotification {
        let signed = [("id", id), ("transaction_type", "refund"), ("reference", reference), ("amount", "500"), ("currency", "USD"),
                      ("status", status), ("amount_refunded", "500")]
        let names = signed.map(\.0).joined(separator: ",")
        let fields = CitconIPNFields(signed + [("fields", names)])
        let sign = try CitconSignature.sign(fields, secret: Fixtures.secret)
        let pairs = signed + [("fields", names), ("sign", sign)]
        return IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                    body: Data(pairs.map { "\($0.0)=\($0.1)" }.joined(separator: "&").utf8))
    }

    @Test("a refund IPN names the refund: Till's reference when it carries one, its id, success succeeded and fail failed, no amount of its own; a charge IPN names none")
    func refundIPN() throws {
        let server = Fixtures.server(RecordingTransport())
        let reference = Self.request(.refund, 2).reference
        let own = try server.verifyNotification(try Self.refundIPN(reference: reference.rawValue))
        #expect(own.operation == OperationReport(reference: reference, kind: .refund, status: .succeeded,
                                                 gatewayReference: "2000470575137023123461", gatewayStatus: "success"))
        #expect(own.report.attempt == Self.attempt)
        let charge = try server.verifyNotification(try Self.refundIPN(reference: Self.attempt.rawValue))
        #expect(charge.operation?.reference == nil && charge.operation?.status == .succeeded && charge.operation?.amount == nil)
        let failed = try server.verifyNotification(try Self.refundIPN(reference: reference.rawValue, status: "fail"))
        #expect(failed.operation?.status == .failed)
        #expect(CitconServer.refundReference(for: Self.attempt, sequence: 3) == OperationReference(attempt: Self.attempt, kind: .refund, sequence: 3).rawValue)
    }
}
