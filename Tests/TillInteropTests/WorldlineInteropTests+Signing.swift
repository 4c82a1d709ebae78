import Crypto
import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting
import TillWorldline
import TillWorldlineServer

extension WorldlineInteropTests {
    // MARK: d. The SDK's authenticator agrees with Till's signing

    @Test("the SDK's V1HMACAuthenticator computes the same Authorization for every request the server half sends")
    func sdkAuthenticatorAgreesWithTillSigning() async throws {
        let python = try await PythonEnvironment.shared.value
        let responses = try ServerAnswers()
        let transport = RecordingTransport()
        let merchantId = "1234"
        let paymentId = try #require(responses.paymentId)
        transport.expect(.post, path: "/v1/\(merchantId)/sessions", respond: responses.session)
        transport.expect(.post, path: "/v1/\(merchantId)/payments", respond: responses.createPayment)
        transport.expect(.get, path: "/v1/\(merchantId)/payments/\(paymentId)", respond: responses.payment)
        let attempt = AttemptReference(rawValue: "att-interop-0001")
        transport.expect(.get, path: "/v1/\(merchantId)/payments", respond: try responses.found(merchantReference: attempt.rawValue))
        transport.expect(.post, path: "/v1/\(merchantId)/payments/\(paymentId)/capture", respond: ServerAnswers.empty)
        transport.expect(.post, path: "/v1/\(merchantId)/payments/\(paymentId)/refund", respond: ServerAnswers.empty)
        // An id that needs percent-encoding in the path: both sides must sign the path as sent.
        transport.expect(.post, path: "/v1/\(merchantId)/payments/pay ment/ü/cancel", respond: ServerAnswers.empty)

        let credentials = WorldlineCredentials(apiKeyId: "5e45c937b9db33ae", secretApiKey: "I42Zf4pVnRdroHfuHnRiJjJ2B6+22h0yQt/R3nZR8Xg=")
        let server = WorldlineServer(environment: .custom(try #require(URL(string: "http://127.0.0.1:8089"))),
                                     credentials: credentials, settings: WorldlineServerSettings(merchantId: merchantId),
                                     transport: transport)
        let intent = PaymentIntent(merchantReference: "order-77", amount: Money(minorUnits: 2345, currency: try Currency(code: "EUR")),
                                   country: try CountryCode("NL"), method: .card,
                                   customer: .init(email: "shopper@example.com", locale: "nl_NL"))
        _ = try await server.prepare(AttemptContext(intent: intent, attempt: attempt,
                                                    returnURL: URL(string: "https://shop.example.com/return?x=1")))
        let meta = WorldlineClientMetaInfo(platformIdentifier: "iOS/18.2", screenSize: "11702532", deviceType: "iPhone15,2",
                                           appIdentifier: "com.example.shop")
        let submission = Submission(kind: WorldlineGateway.submissionKind, fields: [
            WorldlineGateway.encryptedInputField: "eyJhbGciOiJSU0EtT0FFUCJ9.a2V5.aXY.Y2lwaGVy.dGFn",
            WorldlineGateway.clientMetaInfoField: meta.encoded,
        ])
        _ = try await server.submit(submission, context: SubmitContext(intent: intent, attempt: attempt,
                                                                       returnURL: URL(string: "https://shop.example.com/return")))
        _ = try await server.inquire(InquiryQuery(attempt: attempt, gatewayReference: paymentId))
        _ = try await server.inquire(InquiryQuery(attempt: attempt))
        _ = try await server.capture(paymentId: paymentId, amount: Money(minorUnits: 1000, currency: try Currency(code: "EUR")), isFinal: false,
                                     idempotenceKey: "capture-1")
        _ = try await server.refund(paymentId: paymentId, amount: Money(minorUnits: 500, currency: try Currency(code: "EUR")),
                                    attempt: attempt, sequence: 1)
        _ = try await server.cancel(paymentId: "pay ment/ü")
        try transport.verify()

        let requests = transport.requests
        try #require(requests.count == 7)
        let verdicts = try await SDKSigner.sign(requests, credentials: credentials, python: python)
        for (request, verdict) in zip(requests, verdicts) {
            let authorization = request.headers.first { $0.key.lowercased() == "authorization" }?.value
            #expect(authorization == verdict.authorization,
                    "\(request.method.rawValue) \(request.url.absoluteString): the SDK signs\n\(verdict.dataToSign)")
        }
        // The requests carry what the signature is meant to cover.
        #expect(requests[1].headers["X-GCS-Idempotence-Key"] == attempt.rawValue)
        #expect(requests[1].headers["X-GCS-ClientMetaInfo"] == meta.json.base64EncodedString())
        #expect(requests[3].url.query?.contains("merchantReference=\(attempt.rawValue)") == true)
        #expect(requests[6].url.absoluteString.contains("/payments/pay%20ment%2F%C3%BC/cancel"))
    }

    // MARK: e. Till verifies what the SDK's world signs

    @Test("the official webhook vectors: Till's WorldlineWebhookSignature and the SDK's helper agree")
    func officialWebhookVectors() async throws {
        let python = try await PythonEnvironment.shared.value
        let vectors = try InteropFixtures.decode("webhooks.json", as: WebhookVectors.self).vectors
        try #require(vectors.count == 2)
        var deliveries: [WebhookHelper.Delivery] = []
        for vector in vectors {
            let body = vector.body
            #expect(SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined() == vector.bodySHA256, "\(vector.id)")
            let headers = [(name: "X-GCS-Signature", value: vector.signature), (name: "X-GCS-KeyId", value: vector.keyId)]
            let verifier = WorldlineWebhookSignature(secrets: [vector.keyId: vector.secretKey])
            if vector.expect == "valid" {
                #expect(throws: Never.self, "\(vector.id)") { try verifier.verify(body: body, headers: headers) }
                #expect(WorldlineWebhookSignature.signature(body: body, secret: vector.secretKey) == vector.signature)
            } else {
                #expect(throws: CheckoutError.self, "\(vector.id)") { try verifier.verify(body: body, headers: headers) }
            }
            deliveries.append(.init(body: body, headers: headers))
        }
        let secrets = Dictionary(vectors.map { ($0.keyId, $0.secretKey) }, uniquingKeysWith: { first, _ in first })
        let verdicts = try await WebhookHelper.unmarshal(deliveries, secrets: secrets, python: python)
        for (vector, verdict) in zip(vectors, verdicts) {
            #expect(verdict.ok == (vector.expect == "valid"), "\(vector.id): \(verdict.error ?? "accepted")")
        }
        #expect(verdicts[0].type == "payment.paid")
        #expect(verdicts[0].error == nil)
        #expect(verdicts[1].error?.hasPrefix("SignatureValidationException") == true)
    }
}

/// The canned Server API answers of `Fixtures/server-responses.json`.
struct ServerAnswers {
    let session: TransportResponse
    let createPayment: TransportResponse
    let payment: TransportResponse
    let paymentObject: [String: Any]
    let paymentId: String?

    static let empty = TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: Data("{}".utf8))

    init() throws {
        func answer(_ key: String) throws -> (status: Int, body: [String: Any]) {
            let entry = try InteropFixtures.member(key, of: "server-responses.json") as? [String: Any]
            guard let status = entry?["status"] as? Int, let body = entry?["body"] as? [String: Any] else {
                throw InteropError("server-responses.json: \(key) has no status and body")
            }
            return (status, body)
        }
        func response(_ status: Int, _ body: Any) throws -> TransportResponse {
            TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"],
                              body: try JSONSerialization.data(withJSONObject: body))
        }
        let session = try answer("session")
        let created = try answer("createPayment")
        self.session = try response(session.status, session.body)
        self.createPayment = try response(created.status, created.body)
        let payment = created.body["payment"] as? [String: Any] ?? [:]
        self.paymentObject = payment
        self.payment = try response(200, payment)
        self.paymentId = payment["id"] as? String
    }

    /// `GET /payments?merchantReference=…`: the fixture's payment, naming `merchantReference`.
    func found(merchantReference: String) throws -> TransportResponse {
        var payment = paymentObject
        var output = payment["paymentOutput"] as? [String: Any] ?? [:]
        var references = output["references"] as? [String: Any] ?? [:]
        references["merchantReference"] = merchantReference
        output["references"] = references
        payment["paymentOutput"] = output
        return TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"],
                                 body: try JSONSerialization.data(withJSONObject: ["payments": [payment], "limit": 10, "offset": 0,
                                                                                   "totalCount": 1]))
    }
}

/// The SDK's `V1HMACAuthenticator` (`Python/sign.py`).
enum SDKSigner {
    struct Verdict: Decodable {
        var authorization: String
        var dataToSign: String
    }

    /// The SDK's `Authorization` for each request, computed from its method, URL and headers.
    static func sign(_ requests: [TransportRequest], credentials: WorldlineCredentials,
                     python: PythonEnvironment) async throws -> [Verdict] {
        struct Item: Encodable {
            var method: String
            var url: String
            var headers: [[String]]
        }
        struct Request: Encodable {
            var apiKeyId: String
            var secretApiKey: String
            var requests: [Item]
        }
        struct Answer: Decodable { var results: [Verdict] }
        let items = requests.map { request in
            Item(method: request.method.rawValue, url: request.url.absoluteString,
                 headers: request.headers.sorted { $0.key < $1.key }.map { [$0.key, $0.value] })
        }
        let results = try await python.run("sign.py", input: Request(apiKeyId: credentials.apiKeyId, secretApiKey: credentials.secretApiKey,
                                                                      requests: items), as: Answer.self).results
        guard results.count == requests.count else {
            throw InteropError("sign.py answered \(results.count) signatures for \(requests.count) requests")
        }
        return results
    }
}
