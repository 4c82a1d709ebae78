import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting
import TillWorldline
@testable import TillWorldlineServer

/// The server half's operations over a scripted transport: the requests it sends, how it reads each vendor status and
/// refusal, and the operation a webhook carries. The statuses and request members are the vendor's
/// (`Fixtures/server/operations.json`, read here and by the emulator's tests).
@Suite("Worldline server half: capture, void and refund")
struct WorldlineOperationTests {
    static let cad = try! Currency(code: "CAD")  // swiftlint:disable:this force_try
    static let attempt = WorldlineServerTests.attempt

    struct Facts: Decodable {
        struct Statuses: Decodable {
            var source: String
            var values: [String: String]
        }
        struct Idempotence: Decodable {
            struct InProgress: Decodable {
                var status: Int
                var code: String
            }
            var inProgress: InProgress
        }
        var captureStatuses: Statuses
        var refundStatuses: Statuses
        var idempotence: Idempotence
    }

    static func facts() throws -> Facts {
        try JSONDecoder().decode(Facts.self, from: try worldlineFixture("server/operations.json"))
    }

    static func json(_ status: Int, _ text: String) -> TransportResponse {
        TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: Data(text.utf8))
    }

    static func payment(_ status: String, captured: Int64 = 0) -> TransportResponse {
        json(200, #"{"id":"P1","paymentOutput":{"amountOfMoney":{"amount":2345,"currencyCode":"CAD"},"references":{"merchantReference":"\#(Self.attempt.rawValue)"},"amountCaptured":\#(captured)},"status":"\#(status)","statusOutput":{"statusCode":600}}"#)
    }

    static func operation(_ kind: OperationKind, _ sequence: Int = 1, amount: Int64, currency: Currency = cad, id: String? = nil) throws -> OperationRequest {
        let intent = try WorldlineServerTests.context(action: .authorize).intent
        return OperationRequest(reference: OperationReference(attempt: attempt, kind: kind, sequence: sequence), intent: intent, gatewayReference: "P1",
                                amount: Money(minorUnits: amount, currency: currency), operationGatewayReference: id)
    }

    static func body(_ request: TransportRequest?) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: request?.body ?? Data()) as? [String: Any])
    }

    @Test("every capture and refund status of the vendor's lists reads as the fixture says")
    func statuses() throws {
        let facts = try Self.facts()
        for (raw, expected) in facts.captureStatuses.values {
            #expect(WorldlineServer.captureStatus(raw).rawValue == expected, "capture \(raw)")
        }
        for (raw, expected) in facts.refundStatuses.values {
            #expect(WorldlineServer.refundStatus(raw).rawValue == expected, "refund \(raw)")
        }
        #expect(WorldlineServer.refundStatus("SOMETHING_NEW") == .unknown)
        #expect(WorldlineServer.captureStatus(nil) == .unknown)
    }

    @Test("capture of a PENDING_APPROVAL payment: the payment is read, then POST /approve {amount} with the operation's key")
    func approve() async throws {
        let transport = RecordingTransport()
        transport.expect(.get, path: "/v1/1234/payments/P1", respond: Self.payment("PENDING_APPROVAL"))
        transport.expect(.post, path: "/v1/1234/payments/P1/approve",
                         respond: Self.json(200, #"{"payment":{"id":"P1","paymentOutput":{"amountOfMoney":{"amount":2345,"currencyCode":"CAD"},"amountCaptureRequested":1000},"status":"CAPTURE_REQUESTED"}}"#))
        let capture = try Self.operation(.capture, amount: 1000)
        let report = try await WorldlineServerTests.server(transport).perform(capture)
        try transport.verify()
        #expect(report.status == .pending, "CAPTURE_REQUESTED: REJECTED_CAPTURE may still follow")
        #expect(report.amount == Money(minorUnits: 1000, currency: Self.cad) && report.reference == capture.reference)
        let approve = transport.requests.last
        #expect(approve?.headers["X-GCS-Idempotence-Key"] == capture.reference.rawValue)
        #expect(try Self.body(approve) as? [String: Int] == ["amount": 1000])
    }

    @Test("capture of a PENDING_CAPTURE payment: POST /capture, final, merchantCaptureReference; the capture's own amount and id")
    func capture() async throws {
        let transport = RecordingTransport()
        transport.expect(.get, path: "/v1/1234/payments/P1", respond: Self.payment("PENDING_CAPTURE"))
        transport.expect(.post, path: "/v1/1234/payments/P1/capture",
                         respond: Self.json(200, #"{"id":"C1","captureOutput":{"amountOfMoney":{"amount":700,"currencyCode":"CAD"},"references":{"merchantCaptureReference":"\#(Self.attempt.rawValue)-c1"}},"status":"CAPTURED","statusOutput":{"isFinal":true}}"#))
        let report = try await WorldlineServerTests.server(transport).perform(try Self.operation(.capture, amount: 700))
        #expect(report.status == .succeeded && report.gatewayReference == "C1" && report.amount == Money(minorUnits: 700, currency: Self.cad))
        let body = try Self.body(transport.requests.last)
        #expect(body["amount"] as? Int == 700 && body["isFinal"] as? Bool == true)
        #expect(((body["order"] as? [String: Any])?["references"] as? [String: Any])?["merchantCaptureReference"] as? String == "\(Self.attempt.rawValue)-c1")
    }

    @Test("capture of a payment in another status: failed, and only the payment was read")
    func captureWrongStatus() async throws {
        let transport = RecordingTransport()
        transport.expect(.get, path: "/v1/1234/payments/P1", respond: Self.payment("CANCELLED"))
        let report = try await WorldlineServerTests.server(transport).perform(try Self.operation(.capture, amount: 700))
        #expect(report.status == .failed && report.gatewayStatus == "CANCELLED")
        #expect(transport.requests.count == 1)
    }

    @Test("refund: the operation's reference as refundReferences.merchantReference and idempotence key; REFUND_REQUESTED is pending with the refund's id")
    func refund() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments/P1/refund",
                         respond: Self.json(201, #"{"id":"R1","refundOutput":{"amountOfMoney":{"amount":500,"currencyCode":"CAD"},"references":{"merchantReference":"\#(Self.attempt.rawValue)-r2"}},"status":"REFUND_REQUESTED"}"#))
        let refund = try Self.operation(.refund, 2, amount: 500)
        let report = try await WorldlineServerTests.server(transport).perform(refund)
        #expect(report.status == .pending && report.gatewayReference == "R1" && report.amount == Money(minorUnits: 500, currency: Self.cad))
        let sent = transport.requests.first
        #expect(sent?.headers["X-GCS-Idempotence-Key"] == refund.reference.rawValue)
        let body = try Self.body(sent)
        #expect((body["refundReferences"] as? [String: Any])?["merchantReference"] as? String == refund.reference.rawValue)
        #expect((body["amountOfMoney"] as? [String: Any])?["amount"] as? Int == 500)
    }

    @Test("a declined refund (refundResult) is failed with the refund's id and the first error's code")
    func refundDeclined() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments/P1/refund",
                         respond: Self.json(402, #"{"errorId":"e","errors":[{"code":"430285","message":"refused"}],"refundResult":{"id":"R9","status":"REJECTED"}}"#))
        let report = try await WorldlineServerTests.server(transport).perform(try Self.operation(.refund, amount: 500))
        #expect(report.status == .failed && report.gatewayReference == "R9" && report.gatewayCode == "430285")
    }

    @Test("refusals by status: 400/404/405 failed with Worldline's code; the vendor's 409 1409 and a 500 are unknown outcomes",
          arguments: [(400, "failed"), (404, "failed"), (405, "failed"), (409, "unknown_outcome"), (500, "unknown_outcome")])
    func refusals(status: Int, expected: String) async throws {
        let transport = RecordingTransport()
        let answer: TransportResponse = status == 409
            ? try WorldlineServerTests.answer("server-error-duplicate-request-409.json")
            : Self.json(status, #"{"errorId":"e","errors":[{"code":"X\#(status)","message":"no"}]}"#)
        transport.expect(.post, path: "/v1/1234/payments/P1/cancel", respond: answer)
        let server = WorldlineServerTests.server(transport)
        if expected == "failed" {
            let report = try await server.perform(try Self.operation(.void, amount: 2345))
            #expect(report.status == .failed && report.gatewayCode == "X\(status)")
        } else {
            let error = await #expect(throws: CheckoutError.self) { _ = try await server.perform(try Self.operation(.void, amount: 2345)) }
            #expect(error?.category == .unknownOutcome)
            if status == 409 { #expect(error?.gatewayCode == (try Self.facts()).idempotence.inProgress.code) }
        }
    }

    @Test("a connection refused before the capture request: unavailable; lost after sending a refund: unknown outcome")
    func transportFailures() async throws {
        let transport = RecordingTransport()
        transport.expect(.get, path: "/v1/1234/payments/P1", fail: TransportError(.notSent, "refused"))
        transport.expect(.post, path: "/v1/1234/payments/P1/refund", fail: TransportError(.connectionLost, "lost"))
        let server = WorldlineServerTests.server(transport)
        let unread = await #expect(throws: CheckoutError.self) { _ = try await server.perform(try Self.operation(.capture, amount: 1)) }
        #expect(unread?.category == .unavailable)
        let lost = await #expect(throws: CheckoutError.self) { _ = try await server.perform(try Self.operation(.refund, amount: 1)) }
        #expect(lost?.category == .unknownOutcome)
    }

    @Test("refused before anything is sent: an unsupported currency, another currency than the payment's, no payment id")
    func refusedBeforeSending() async throws {
        let transport = RecordingTransport()
        let server = WorldlineServerTests.server(transport)
        let kwd = await #expect(throws: CheckoutError.self) {
            _ = try await server.perform(try Self.operation(.refund, amount: 1000, currency: try Currency(code: "KWD")))
        }
        #expect(kwd?.category == .unsupported && kwd?.field == "operations.refund.currency")
        let other = await #expect(throws: CheckoutError.self) {
            _ = try await server.perform(try Self.operation(.refund, amount: 1000, currency: try Currency(code: "EUR")))
        }
        #expect(other?.field == "operation.amount.currency")
        var unnamed = try Self.operation(.void, amount: 1)
        unnamed.gatewayReference = nil
        let missing = await #expect(throws: CheckoutError.self) { _ = try await server.perform(unnamed) }
        #expect(missing?.field == "operation.gatewayReference")
        #expect(transport.requests.isEmpty)
    }

    @Test("inquiry: a refund by id, by merchantReference among the payment's refunds, none (failed), others only (unknown); a void by the payment")
    func inquiries() async throws {
        let transport = RecordingTransport()
        let mine = #"{"id":"R1","refundOutput":{"amountOfMoney":{"amount":500,"currencyCode":"CAD"},"references":{"merchantReference":"\#(Self.attempt.rawValue)-r1"}},"status":"REFUNDED"}"#
        transport.expect(.get, path: "/v1/1234/refunds/R1", respond: Self.json(200, mine))
        transport.expect(.get, path: "/v1/1234/payments/P1/refunds", respond: Self.json(200, #"{"refunds":[\#(mine)]}"#))
        transport.expect(.get, path: "/v1/1234/payments/P1/refunds", respond: Self.json(200, #"{"refunds":[]}"#))
        transport.expect(.get, path: "/v1/1234/payments/P1/refunds", respond: Self.json(200, #"{"refunds":[{"id":"R7","status":"REFUNDED"}]}"#))
        transport.expect(.get, path: "/v1/1234/payments/P1", respond: Self.payment("CANCELLED"))
        transport.expect(.get, path: "/v1/1234/payments/P1", respond: Self.payment("CAPTURED", captured: 2345))
        let server = WorldlineServerTests.server(transport)
        let byId = try await server.inquireOperation(try Self.operation(.refund, amount: 500, id: "R1"))
        #expect(byId.status == .succeeded && byId.gatewayReference == "R1")
        let byReference = try await server.inquireOperation(try Self.operation(.refund, amount: 500))
        #expect(byReference.status == .succeeded && byReference.gatewayReference == "R1")
        #expect(try await server.inquireOperation(try Self.operation(.refund, amount: 500)).status == .failed)
        #expect(try await server.inquireOperation(try Self.operation(.refund, amount: 500)).status == .unknown)
        #expect(try await server.inquireOperation(try Self.operation(.void, amount: 2345)).status == .succeeded)
        let captured = try await server.inquireOperation(try Self.operation(.capture, amount: 2345))
        #expect(captured.status == .succeeded && captured.amount == Money(minorUnits: 2345, currency: Self.cad))
        try transport.verify()
    }

    @Test("webhooks: a refund event names Till's operation (reference, refund id, amount); a payment event names none; the old refund references still name the attempt")
    func webhooks() throws {
        let server = WorldlineServerTests.server(RecordingTransport())
        func signed(_ text: String) -> IncomingNotification {
            let body = Data(text.utf8)
            return IncomingNotification(headers: ["X-GCS-KeyId": "hook", "X-GCS-Signature": WorldlineWebhookSignature.signature(body: body, secret: "hook-secret")],
                                        body: body)
        }
        let refunded = try server.verifyNotification(signed(#"{"apiVersion":"v1","id":"ev-1","merchantId":"1234","type":"refund.refunded","refund":{"id":"R1","refundOutput":{"amountOfMoney":{"amount":500,"currencyCode":"CAD"},"references":{"merchantReference":"\#(Self.attempt.rawValue)-r1"}},"status":"REFUNDED"}}"#))
        #expect(refunded.report.attempt == Self.attempt)
        let operation = try #require(refunded.operation)
        #expect(operation.reference == OperationReference(attempt: Self.attempt, kind: .refund, sequence: 1))
        #expect(operation.kind == .refund && operation.status == .succeeded && operation.gatewayReference == "R1")
        #expect(operation.amount == Money(minorUnits: 500, currency: Self.cad))

        let cancelled = try server.verifyNotification(signed(#"{"apiVersion":"v1","id":"ev-2","merchantId":"1234","type":"payment.cancelled","payment":{"id":"P1","paymentOutput":{"amountOfMoney":{"amount":2345,"currencyCode":"CAD"},"references":{"merchantReference":"\#(Self.attempt.rawValue)"}},"status":"CANCELLED"}}"#))
        #expect(cancelled.operation == nil, "a payment event may be another payment's with the same merchantReference: no operation is read from it")
        let pending = try server.verifyNotification(signed(#"{"apiVersion":"v1","id":"ev-3","merchantId":"1234","type":"payment.pending_approval","payment":{"id":"P1","paymentOutput":{"amountOfMoney":{"amount":2345,"currencyCode":"CAD"},"references":{"merchantReference":"\#(Self.attempt.rawValue)"}},"status":"PENDING_APPROVAL"}}"#))
        #expect(pending.operation == nil)

        let capture = try server.verifyNotification(signed(#"{"apiVersion":"v1","id":"ev-4","merchantId":"1234","type":"capture.captured","capture":{"id":"C1","captureOutput":{"amountOfMoney":{"amount":700,"currencyCode":"CAD"},"references":{"merchantCaptureReference":"\#(Self.attempt.rawValue)-c1"}},"status":"CAPTURED"}}"#))
        #expect(capture.report.attempt == Self.attempt && capture.confirmBeforeApplying)
        #expect(capture.operation?.kind == .capture && capture.operation?.gatewayReference == "C1" && capture.operation?.status == .succeeded)
        #expect(capture.operation?.amount == Money(minorUnits: 700, currency: Self.cad))

        #expect(WorldlineServer.attempt(ofRefundReference: "\(Self.attempt.rawValue)-r3") == Self.attempt)
        #expect(WorldlineServer.attempt(ofRefundReference: "\(Self.attempt.rawValue)-") == nil)
    }
}
