import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting
import TillWorldline
@testable import TillWorldlineServer

/// The server half against the vendor's own Server API answers (`Fixtures/server/`, from the Python SDK's
/// test resources; the emulator's tests read the same bodies), over a scripted transport.
@Suite("Worldline server half: requests it sends, vendor answers it reads")
struct WorldlineServerTests {
    static let date = Date(timeIntervalSince1970: 1_795_000_000)
    static let attempt = AttemptReference(rawValue: "abcdefghijklmnopqrstuvwx")

    struct Answer: Decodable {
        let status: Int
        let body: JSONAny
    }

    /// Any JSON, re-encoded as received.
    struct JSONAny: Decodable {
        let data: Data
        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer().decode(AnyCodable.self)
            data = try JSONSerialization.data(withJSONObject: value.value, options: [.fragmentsAllowed])
        }
    }

    struct AnyCodable: Decodable {
        let value: Any
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() { value = NSNull() } else if let b = try? c.decode(Bool.self) { value = b } else if let i = try? c.decode(Int64.self) {
                value = i
            } else if let d = try? c.decode(Double.self) { value = d } else if let s = try? c.decode(String.self) { value = s } else if let a = try? c.decode([AnyCodable].self) {
                value = a.map(\.value)
            } else { value = try c.decode([String: AnyCodable].self).mapValues(\.value) }
        }
    }

    static func answer(_ name: String) throws -> TransportResponse {
        let fixture = try JSONDecoder().decode(Answer.self, from: try worldlineFixture("server/\(name)"))
        return TransportResponse(statusCode: fixture.status, headers: ["Content-Type": "application/json"], body: fixture.body.data)
    }

    static func server(_ transport: RecordingTransport) -> WorldlineServer {
        WorldlineServer(environment: .custom(URL(string: "https://worldline.test")!),
                        credentials: WorldlineCredentials(apiKeyId: "key-id", secretApiKey: "secret", webhookKeys: ["hook": "hook-secret"]),
                        settings: WorldlineServerSettings(merchantId: "1234"), transport: transport, now: { Self.date })
    }

    static func context(action: PaymentAction = .sale) throws -> SubmitContext {
        let intent = PaymentIntent(merchantReference: "order-1", amount: Money(minorUnits: 2345, currency: try Currency(code: "CAD")),
                                   country: try CountryCode("CA"), method: .card, action: action,
                                   customer: Customer(email: "a@example.com", locale: "en_CA"))
        return SubmitContext(intent: intent, attempt: attempt, returnURL: URL(string: "shop://till/return?till_state=x"))
    }

    static let jwe = "eyJhbGciOiJSU0EtT0FFUCJ9.a2V5.aXY.Y2lwaGVy.dGFn"
    static let meta = Data(#"{"platformIdentifier":"iOS/18.2","sdkIdentifier":"TillWorldline/v1"}"#.utf8).base64EncodedString()

    static func submission(_ fields: [String: String]? = nil) -> Submission {
        Submission(kind: WorldlineGateway.submissionKind,
                   fields: fields ?? [WorldlineGateway.encryptedInputField: jwe, WorldlineGateway.clientMetaInfoField: meta])
    }

    @Test("create payment: the request's members, headers and signature; the vendor's 201 (PENDING_APPROVAL) is authorized with its amount")
    func createPayment() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments", respond: try Self.answer("server-create-payment-pending-approval-201.json"))
        let result = try await Self.server(transport).submit(Self.submission(), context: try Self.context())
        try transport.verify()
        let request = try #require(transport.requests.first)
        let body = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])
        #expect(body["encryptedCustomerInput"] as? String == Self.jwe)
        let order = try #require(body["order"] as? [String: Any])
        #expect((order["amountOfMoney"] as? [String: Any])?["amount"] as? Int == 2345)
        #expect((order["references"] as? [String: Any])?["merchantReference"] as? String == Self.attempt.rawValue)
        let card = try #require(body["cardPaymentMethodSpecificInput"] as? [String: Any])
        #expect(card["authorizationMode"] as? String == "SALE")
        #expect(card["requiresApproval"] as? Bool == false, "a sale is captured without the merchant's approval")
        #expect(((card["threeDSecure"] as? [String: Any])?["redirectionData"] as? [String: Any])?["returnUrl"] as? String
                == "shop://till/return?till_state=x")
        #expect(request.headers["X-GCS-Idempotence-Key"] == Self.attempt.rawValue)
        #expect(request.headers["Date"] == "Wed, 18 Nov 2026 11:06:40 GMT")
        #expect(request.headers["X-GCS-ClientMetaInfo"].flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) }
                == #"{"platformIdentifier":"iOS/18.2","sdkIdentifier":"TillWorldline/v1"}"#)
        // The signature is recomputed here from the headers sent, with the rule the vendor vectors check.
        let text = WorldlineV1HMAC.stringToSign(method: "POST", contentType: "application/json", date: request.headers["Date"] ?? "",
                                                headers: request.headers, path: "/v1/1234/payments", query: nil)
        #expect(request.headers["Authorization"] == "GCS v1HMAC:key-id:" + WorldlineV1HMAC.signature(secretApiKey: "secret", stringToSign: text))
        #expect(result.gatewayReference == "000002000020142549460000100001")
        #expect(result.report?.status == .authorized)
        #expect(result.report?.amount == Money(minorUnits: 2345, currency: try Currency(code: "CAD")))
        guard case .completed(let outcome) = result.next else { Issue.record("expected completed, got \(result.next)"); return }
        #expect(outcome.kind == .succeeded)
    }

    @Test("an authorisation asks for the merchant's approval (requiresApproval true, FINAL_AUTHORIZATION)")
    func authorization() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments", respond: try Self.answer("server-create-payment-201.json"))
        _ = try await Self.server(transport).submit(Self.submission(), context: try Self.context(action: .authorize))
        let body = try #require(try JSONSerialization.jsonObject(with: transport.requests.first?.body ?? Data()) as? [String: Any])
        let card = try #require(body["cardPaymentMethodSpecificInput"] as? [String: Any])
        #expect(card["authorizationMode"] as? String == "FINAL_AUTHORIZATION")
        #expect(card["requiresApproval"] as? Bool == true)
    }

    @Test("declined bodies (paymentResult, with HTTP 402 or 400 as the vendor's two resources have it) are declines with Worldline's code",
          arguments: ["server-create-payment-declined-402.json", "server-create-payment-declined-400.json"])
    func declined(fixture: String) async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments", respond: try Self.answer(fixture))
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Self.server(transport).submit(Self.submission(), context: try Self.context())
        }
        #expect(error?.code == .declined)
        #expect(error?.category == .declinedHard)
        #expect(error?.gatewayCode == (fixture.contains("402") ? "430330" : "21000020"), "the first error of the resource")
    }

    @Test("failures by status: 400 invalid input, 401 credentials, 409 (idempotence conflict) and 500 unknown outcome",
          arguments: [("server-error-invalid-card-400.json", CheckoutError.Category.invalidInput),
                      ("server-error-invalid-authorization.json", .configuration),
                      ("server-error-duplicate-request-409.json", .unknownOutcome),
                      ("server-error-unknown-500.json", .unknownOutcome)])
    func failures(fixture: String, category: CheckoutError.Category) async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments", respond: try Self.answer(fixture))
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Self.server(transport).submit(Self.submission(), context: try Self.context())
        }
        #expect(error?.category == category)
    }

    @Test("a submission that is not a JWE, carries meta information that is not a JSON object, or has other fields is refused before anything is sent",
          arguments: [
            ([WorldlineGateway.encryptedInputField: "not-a-jwe"], "submission.fields.encryptedCustomerInput"),
            ([WorldlineGateway.encryptedInputField: "a.b.c.d.e=="], "submission.fields.encryptedCustomerInput"),
            ([:], "submission.fields.encryptedCustomerInput"),
            ([WorldlineGateway.encryptedInputField: jwe, WorldlineGateway.clientMetaInfoField: "bm90IGpzb24="], "submission.fields.encodedClientMetaInfo"),
            ([WorldlineGateway.encryptedInputField: jwe, WorldlineGateway.clientMetaInfoField: Data("[1]".utf8).base64EncodedString()],
             "submission.fields.encodedClientMetaInfo"),
            ([WorldlineGateway.encryptedInputField: jwe, "cardNumber": "4111111111111111"], "submission.fields.cardNumber"),
          ])
    func refusedSubmission(fields: [String: String], field: String) async throws {
        let transport = RecordingTransport()
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await Self.server(transport).submit(Self.submission(fields), context: try Self.context())
        }
        #expect(error?.field == field)
        #expect(transport.requests.isEmpty)
    }

    @Test("inquiry: by payment id, else by merchantReference; a payment naming another order is refused")
    func inquiry() async throws {
        let paid = #"{"id":"P1","paymentOutput":{"amountOfMoney":{"amount":2345,"currencyCode":"CAD"},"amountPaid":2345,"references":{"merchantReference":"abcdefghijklmnopqrstuvwx"}},"status":"PAID","statusOutput":{"statusCode":1000,"statusCategory":"COMPLETED"}}"#
        let transport = RecordingTransport()
        transport.expect(.get, path: "/v1/1234/payments/P1", respond: TransportResponse(statusCode: 200, body: Data(paid.utf8)))
        transport.expect(.get, path: "/v1/1234/payments", respond: TransportResponse(statusCode: 200, body: Data(#"{"payments":[\#(paid)],"totalCount":1}"#.utf8)))
        let server = Self.server(transport)
        let byID = try await server.inquire(InquiryQuery(attempt: Self.attempt, gatewayReference: "P1"))
        #expect(byID.status == .paid && byID.amount?.minorUnits == 2345 && byID.gatewayCode == "1000")
        let byReference = try await server.inquire(InquiryQuery(attempt: Self.attempt))
        #expect(byReference.status == .paid && byReference.gatewayReference == "P1")
        #expect(transport.requests.last?.url.query == "merchantReference=\(Self.attempt.rawValue)&limit=10")

        let other = RecordingTransport()
        other.expect(.get, path: "/v1/1234/payments/P1",
                     respond: TransportResponse(statusCode: 200, body: Data(paid.replacingOccurrences(of: "abcdefghijklmnopqrstuvwx", with: "zzzzzzzzzzzzzzzzzzzzzzzz").utf8)))
        await #expect(throws: CheckoutError.self) { _ = try await Self.server(other).inquire(InquiryQuery(attempt: Self.attempt, gatewayReference: "P1")) }
    }

    @Test("statuses and amounts: a partial capture reports what was captured; refunds report the running total")
    func statuses() throws {
        let cad = try Currency(code: "CAD")
        func payment(_ status: String, paid: Int64? = nil, refunded: Int64? = nil) -> WorldlinePayment {
            WorldlinePayment(id: "P1", paymentOutput: WorldlinePaymentOutput(amountOfMoney: .init(amount: 1000, currencyCode: "CAD"),
                                                                             references: nil, amountPaid: paid, amountRefunded: refunded),
                             status: status, statusOutput: nil)
        }
        let captured = try WorldlineStatus.report(payment("CAPTURED", paid: 600), attempt: Self.attempt, gateway: "worldline", event: "t")
        #expect(captured.status == .paid && captured.amount == Money(minorUnits: 600, currency: cad))
        let full = try WorldlineStatus.report(payment("CAPTURED"), attempt: Self.attempt, gateway: "worldline", event: "t")
        #expect(full.amount == Money(minorUnits: 1000, currency: cad))
        let partly = try WorldlineStatus.report(payment("REFUNDED", refunded: 300), attempt: Self.attempt, gateway: "worldline", event: "t")
        #expect(partly.status == .partiallyRefunded && partly.refundedTotal == Money(minorUnits: 300, currency: cad))
        let whole = try WorldlineStatus.report(payment("REFUNDED", refunded: 1000), attempt: Self.attempt, gateway: "worldline", event: "t")
        #expect(whole.status == .refunded)
        #expect(WorldlineStatus.status("PENDING_APPROVAL") == .authorized)
        #expect(WorldlineStatus.status("CAPTURE_REQUESTED") == .authorized)
        #expect(WorldlineStatus.status("REDIRECTED") == .pending)
        #expect(WorldlineStatus.status("REJECTED") == .failed)
        #expect(WorldlineStatus.status("CANCELLED") == .cancelled)
        #expect(!WorldlineStatus.status("SOMETHING_NEW").isKnown)
        #expect(throws: CheckoutError.self) {
            _ = try WorldlineStatus.report(WorldlinePayment(id: "P1", paymentOutput: nil, status: "CAPTURED", statusOutput: nil),
                                           attempt: Self.attempt, gateway: "worldline", event: "t")
        }
    }

    @Test("refunds: their own reference <attempt>-<n>, an idempotence key, a refused refund is a decline; refund webhooks name the attempt")
    func refunds() async throws {
        let transport = RecordingTransport()
        transport.expect(.post, path: "/v1/1234/payments/P1/refund",
                         respond: TransportResponse(statusCode: 201, body: Data(#"{"id":"P1-R1","status":"REFUND_REQUESTED"}"#.utf8)))
        transport.expect(.post, path: "/v1/1234/payments/P1/refund",
                         respond: TransportResponse(statusCode: 400, body: Data(#"{"errorId":"e","errors":[{"code":"300450","message":"refused"}],"refundResult":{"id":"P1-R2","status":"REJECTED"}}"#.utf8)))
        let server = Self.server(transport)
        let money = Money(minorUnits: 500, currency: try Currency(code: "CAD"))
        _ = try await server.refund(paymentId: "P1", amount: money, attempt: Self.attempt, sequence: 1)
        let request = try #require(transport.requests.first)
        #expect(request.headers["X-GCS-Idempotence-Key"] == "refund-\(Self.attempt.rawValue)-1")
        let body = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])
        #expect((body["refundReferences"] as? [String: Any])?["merchantReference"] as? String == "\(Self.attempt.rawValue)-1")
        let refused = await #expect(throws: CheckoutError.self) {
            _ = try await server.refund(paymentId: "P1", amount: money, attempt: Self.attempt, sequence: 2)
        }
        #expect(refused?.code == .declined)
        #expect(WorldlineServer.attempt(ofRefundReference: "\(Self.attempt.rawValue)-12") == Self.attempt)
        #expect(WorldlineServer.attempt(ofRefundReference: "no-sequence-x") == nil)
        #expect(WorldlineServer.attempt(ofRefundReference: "-1") == nil)
    }

    @Test("webhooks: the vendor's payment.paid is verified and read; refund events are confirmed by inquiry; other events are kept, never applied")
    func webhooks() throws {
        let body = Data(#"{"apiVersion":"v1","id":"ev-1","created":"2026-11-22T10:00:00.000+0100","merchantId":"1234","type":"refund.refund_requested","refund":{"id":"R1","refundOutput":{"amountOfMoney":{"amount":500,"currencyCode":"CAD"},"references":{"merchantReference":"abcdefghijklmnopqrstuvwx-1"}},"status":"REFUND_REQUESTED"}}"#.utf8)
        let server = Self.server(RecordingTransport())
        func signed(_ body: Data) -> IncomingNotification {
            IncomingNotification(headers: ["X-GCS-KeyId": "hook", "X-GCS-Signature": WorldlineWebhookSignature.signature(body: body, secret: "hook-secret"),
                                           "Content-Type": "application/json"], body: body)
        }
        let refund = try server.verifyNotification(signed(body))
        #expect(refund.confirmBeforeApplying)
        #expect(refund.report.attempt == Self.attempt)
        #expect(refund.report.eventID == "event:ev-1")

        let token = Data(#"{"apiVersion":"v1","id":"ev-2","created":"2026-11-22T10:00:00.000+0100","merchantId":"1234","type":"token.created"}"#.utf8)
        let kept = try server.verifyNotification(signed(token))
        #expect(!kept.report.status.isKnown)

        let otherAccount = Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: #""merchantId":"1234""#, with: #""merchantId":"9999""#).utf8)
        #expect(throws: CheckoutError.self) { _ = try server.verifyNotification(signed(otherAccount)) }
        let v2 = Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: #""apiVersion":"v1""#, with: #""apiVersion":"v2""#).utf8)
        #expect(throws: CheckoutError.self) { _ = try server.verifyNotification(signed(v2)) }
        #expect(server.answerChallenge(IncomingNotification(headers: ["X-GCS-Webhooks-Endpoint-Verification": "abc"], body: Data()))?.body == Data("abc".utf8))
        #expect(server.answerChallenge(IncomingNotification(headers: [:], body: Data())) == nil)
    }

    @Test("plugin settings: merchant_id required, preprod by default, base_url scheme+host+port only, webhook key pairs complete")
    func plugin() throws {
        func make(_ settings: [String: String], _ credentials: [String: String] = ["api_key_id": "k", "secret_api_key": "s"]) throws -> WorldlineServer {
            try WorldlinePlugin.server(GatewayPluginContext(id: "worldline", settings: ModuleSettings(module: "worldline", settings: settings, credentials: credentials),
                                                            transport: RecordingTransport()))
        }
        #expect(try make(["merchant_id": "1234"]).environment == .preproduction)
        #expect(try make(["merchant_id": "1234", "environment": "production"]).environment == .production)
        #expect(throws: CheckoutError.self) { _ = try make([:]) }
        #expect(throws: CheckoutError.self) { _ = try make(["merchant_id": "12/34"]) }
        #expect(throws: CheckoutError.self) { _ = try make(["merchant_id": "1234", "base_url": "http://127.0.0.1:8080/v1"]) }
        #expect(throws: CheckoutError.self) { _ = try make(["merchant_id": "1234"], ["api_key_id": "k", "secret_api_key": "s", "webhook_key_id": "w"]) }
        #expect(try make(["merchant_id": "1234", "base_url": "http://127.0.0.1:8080"]).environment == .custom(URL(string: "http://127.0.0.1:8080")!))
    }
}

@Suite("Worldline: what it needs of a payment, checked before anything is stored or sent")
struct WorldlineRequirementTests {
    @Test("the country, and a currency its two-decimal amounts can express; no call")
    func requirements() throws {
        let transport = RecordingTransport()
        let worldline = WorldlineServerTests.server(transport)
        let good = try WorldlineServerTests.context().intent
        #expect(worldline.requirementIssues(for: good).isEmpty)
        var noCountry = good
        noCountry.country = nil
        #expect(worldline.requirementIssues(for: noCountry).map(\.field) == ["intent.country"])
        var kuwaiti = good
        kuwaiti.amount = Money(minorUnits: 1000, currency: try Currency(code: "KWD"))
        #expect(worldline.requirementIssues(for: kuwaiti).map(\.field) == ["intent.amount.currency"])
        #expect(transport.requests.isEmpty)
    }
}
