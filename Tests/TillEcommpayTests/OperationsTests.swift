import Foundation
import Testing
import TillGatewayKit
import TillTesting
@testable import TillEcommpayServer
import TillOrchestration

/// ``EcommpayServer``'s operations with a ``RecordingTransport``, read against `Fixtures/operations.json`.
@Suite("ecommpay operations")
struct OperationsTests {
    static func facts() throws -> OrderedJSON { try jsonFixture("operations.json") }

    static func request(_ kind: OperationKind, _ sequence: Int = 1, amount: Int64 = 1500, method: PaymentMethod = .card,
                        requestId: String? = nil, notificationURL: URL? = Setup.notificationURL) -> OperationRequest {
        OperationRequest(reference: OperationReference(attempt: Setup.attempt, kind: kind, sequence: sequence),
                         intent: Setup.intent(method: method, action: .authorize), gatewayReference: Setup.attempt.rawValue,
                         amount: Setup.money(amount, "EUR"), notificationURL: notificationURL, operationGatewayReference: requestId)
    }

    static func accepted(_ requestId: String = "req-1") -> TransportResponse {
        Setup.json(J.object(("status", .string("success")), ("request_id", .string(requestId)), ("project_id", J.int(Int64(Setup.projectId))),
                            ("payment_id", .string(Setup.attempt.rawValue))))
    }

    @Test("each kind goes to the fixture's path for its method, with general (the callback URL included) and the fixture's payment fields; Gate's acceptance is pending with its request_id")
    func requestBodies() async throws {
        let facts = try Self.facts()
        for (kind, operation) in [(OperationKind.capture, "capture"), (.void, "cancel"), (.refund, "refund")] {
            for method in [PaymentMethod.card, .applePay] {
                let segment = try #require(facts["method_paths"]?[method == .card ? "card" : "applepay"]?[operation]?.stringValue)
                let path = "/v2/payment/\(segment)/\(operation)"
                let transport = RecordingTransport()
                transport.expect(.post, path: path, respond: Self.accepted("req-\(operation)"))
                let report = try await Setup.server(transport).perform(Self.request(kind, method: method))
                try transport.verify()
                #expect(report == OperationReport(reference: Self.request(kind).reference, kind: kind, status: .pending,
                                                  amount: Setup.money(1500, "EUR"), gatewayReference: "req-\(operation)", gatewayStatus: "success"))
                let body = try ServerTests.signedRequest(try #require(transport.requests.first))
                #expect(body["general"]?["payment_id"]?.stringValue == Setup.attempt.rawValue)
                #expect(body["general"]?["merchant_callback_url"]?.stringValue == Setup.notificationURL.absoluteString)
                let expected = facts["request_bodies"]?[operation]?["payment"]?.arrayValue?.compactMap(\.stringValue)
                #expect(body["payment"]?.objectMembers?.map(\.key) == expected, "\(kind) \(method)")
                if kind != .void {
                    #expect(body["payment"]?["amount"] == J.int(1500) && body["payment"]?["currency"]?.stringValue == "EUR")
                }
                if kind == .refund {
                    #expect(body["payment"]?["merchant_refund_id"]?.stringValue == "\(Setup.attempt.rawValue)-r1")
                }
            }
        }
        // A PayPal refund goes to wallet/paypal.
        let paypal = RecordingTransport()
        paypal.expect(.post, path: "/v2/payment/wallet/paypal/refund", respond: Self.accepted())
        _ = try await Setup.server(paypal).perform(Self.request(.refund, method: .paypal))
        try paypal.verify()
    }

    @Test("refused before anything is sent: a method without a path for the kind names operations.<kind>.method")
    func unsupportedMethods() async throws {
        for (kind, method) in [(OperationKind.capture, PaymentMethod.paypal), (.void, .alipay), (.refund, .wechatPay), (.refund, .alipay)] {
            let transport = RecordingTransport()
            let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).perform(Self.request(kind, method: method)) }
            #expect(error?.category == .unsupported && error?.field == "operations.\(kind.rawValue).method")
            #expect(transport.requests.isEmpty)
        }
    }

    @Test("Gate's refusal (status error or decline, HTTP 200 or 4xx) is failed with its code and message; a 4xx that is not Gate's refusal, a 5xx, a lost answer and an acceptance without request_id are unknown outcomes")
    func refusalsAndUnknowns() async throws {
        let refusal = J.object(("status", .string("error")), ("code", J.int(3061)), ("message", .string("Transaction not found")))
        for status in [200, 400, 422] {
            let transport = RecordingTransport()
            transport.expect(.post, path: "/v2/payment/card/refund",
                             respond: TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: refusal.serialized()))
            let report = try await Setup.server(transport).perform(Self.request(.refund))
            #expect(report.status == .failed && report.gatewayCode == "3061" && report.gatewayMessage == "Transaction not found", "HTTP \(status)")
        }
        let unknowns: [TransportResponse] = [
            TransportResponse(statusCode: 400, body: Data("<html>bad request</html>".utf8)),
            TransportResponse(statusCode: 404, headers: ["Content-Type": "application/json"], body: J.object(("status", .string("success"))).serialized()),
            TransportResponse(statusCode: 502, body: Data()),
            Setup.json(J.object(("status", .string("success")))),
        ]
        for response in unknowns {
            let transport = RecordingTransport()
            transport.expect(.post, path: "/v2/payment/card/capture", respond: response)
            let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(transport).perform(Self.request(.capture)) }
            #expect(error?.category == .unknownOutcome, "HTTP \(response.statusCode)")
        }
        let lost = RecordingTransport()
        lost.expect(.post, path: "/v2/payment/card/cancel", fail: TransportError(.timedOut, "no answer"))
        let error = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(lost).perform(Self.request(.void)) }
        #expect(error?.category == .unknownOutcome)
        let refused = RecordingTransport()
        refused.expect(.post, path: "/v2/payment/card/cancel", fail: TransportError(.notSent, "connection refused"))
        let down = await #expect(throws: CheckoutError.self) { _ = try await Setup.server(refused).perform(Self.request(.void)) }
        #expect(down?.category == .unavailable)
    }

    /// A callback about an operation: `payment` in `paymentStatus` with `payment.sum` the balance, `operation` as given.
    static func operationCallback(type: String, status: String, sumInitial: Int64?, paymentStatus: String, balance: Int64,
                                  requestId: String = "req-9") -> IncomingNotification {
        var operation: [(String, OrderedJSON)] = [("id", J.int(77)), ("type", .string(type)), ("status", .string(status)),
                                                  ("request_id", .string(requestId)), ("code", .string(status == "success" ? "0" : "20000")),
                                                  ("message", .string(status == "success" ? "Success" : "General decline"))]
        if let sumInitial { operation.append(("sum_initial", J.object(("amount", J.int(sumInitial)), ("currency", .string("EUR"))))) }
        let members = J.members(
            ("project_id", J.int(Int64(Setup.projectId))),
            ("payment", J.object(("id", .string(Setup.attempt.rawValue)), ("type", .string("purchase")), ("status", .string(paymentStatus)),
                                 ("sum", J.object(("amount", J.int(balance)), ("currency", .string("EUR")))))),
            ("operation", .object(operation.map { .init(key: $0.0, value: $0.1) })))
        return ServerTests.notification(members)
    }

    @Test("a callback names its operation: the fixture's types and statuses, sum_initial as its amount (never payment.sum), request_id as Gate's reference, no Till reference")
    func callbackOperations() throws {
        let facts = try Self.facts()
        let types = try #require(facts["callback_operation"]?["types"]?.objectMembers)
        for member in types {
            let kind = try #require(member.value.stringValue.flatMap(OperationKind.init(rawValue:)))
            let paymentStatus = kind == .refund ? "partially refunded" : (kind == .void ? "cancelled" : "success")
            let verified = try Setup.server().verifyNotification(
                Self.operationCallback(type: member.key, status: "success", sumInitial: 600, paymentStatus: paymentStatus, balance: 1399))
            #expect(verified.operation == OperationReport(reference: nil, kind: kind, status: .succeeded, amount: Setup.money(600, "EUR"),
                                                          gatewayReference: "req-9", gatewayStatus: "success", gatewayCode: "0",
                                                          gatewayMessage: "Success"), "\(member.key)")
        }
        let statuses = try #require(facts["operation_status"])
        for (name, expected) in [("succeeded", OperationStatus.succeeded), ("failed", .failed), ("pending", .pending)] {
            for raw in statuses[name]?.arrayValue?.compactMap(\.stringValue) ?? [] {
                #expect(EcommpayServer.operationStatus(raw) == expected, "\(raw)")
            }
        }
        #expect(EcommpayServer.operationStatus("something new") == .pending)
        // A declined refund: failed, with its code; the payment report keeps the payment as it was.
        let declined = try Setup.server().verifyNotification(
            Self.operationCallback(type: "refund", status: "decline", sumInitial: 600, paymentStatus: "success", balance: 1999))
        #expect(declined.operation?.status == .failed && declined.operation?.gatewayCode == "20000" && declined.operation?.amount == Setup.money(600, "EUR"))
        #expect(declined.report.status == .paid && declined.report.amount == Setup.money(1999, "EUR"))
        // A sale's callback names no operation.
        let sale = try Setup.server().verifyNotification(ServerTests.notification(ServerTests.callbackMembers(status: "success")))
        #expect(sale.operation == nil)
    }

    @Test("inquireOperation: Gate's status answer, the operation whose request_id Till kept; none listed or no request_id is unknown; another kind under that id is an unknown outcome")
    func inquiry() async throws {
        var members = ServerTests.statusAnswer(status: "partially refunded")
        members = members.map { member in
            member.key != "operations" ? member : .init(key: "operations", value: .array([
                J.object(("id", J.int(5)), ("type", .string("sale")), ("status", .string("success")), ("request_id", .string("req-sale"))),
                J.object(("id", J.int(6)), ("type", .string("refund")), ("status", .string("success")), ("request_id", .string("req-r1")),
                         ("sum_initial", J.object(("amount", J.int(400)), ("currency", .string("EUR"))))),
                J.object(("id", J.int(7)), ("type", .string("refund")), ("status", .string("processing")), ("request_id", .string("req-r2")),
                         ("sum_initial", J.object(("amount", J.int(300)), ("currency", .string("EUR"))))),
            ]))
        }
        let answer = Setup.json(.object(members))
        for (requestId, status, amount) in [("req-r1", OperationStatus.succeeded, Int64(400)), ("req-r2", .pending, 300)] {
            let transport = RecordingTransport()
            transport.expect(.post, path: "/v2/payment/status", respond: answer)
            let report = try await Setup.server(transport).inquireOperation(Self.request(.refund, amount: amount, requestId: requestId))
            #expect(report.status == status && report.amount == Setup.money(amount, "EUR") && report.reference == Self.request(.refund).reference)
            #expect(report.gatewayReference == requestId)
        }
        let missing = RecordingTransport()
        missing.expect(.post, path: "/v2/payment/status", respond: answer)
        #expect(try await Setup.server(missing).inquireOperation(Self.request(.refund, requestId: "req-other")).status == .unknown)
        let none = RecordingTransport()
        #expect(try await Setup.server(none).inquireOperation(Self.request(.refund)).status == .unknown)
        #expect(none.requests.isEmpty)
        let other = RecordingTransport()
        other.expect(.post, path: "/v2/payment/status", respond: answer)
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Setup.server(other).inquireOperation(Self.request(.capture, requestId: "req-sale"))
        }
        #expect(error?.category == .unknownOutcome)
    }
}
