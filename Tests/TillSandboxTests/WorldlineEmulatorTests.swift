import Crypto
import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Worldline emulator: v1HMAC against the vendor vectors")
struct WorldlineHMACTests {
    @Test("the python, java and .NET signature vectors")
    func signatureVectors() throws {
        let document = try WorldlineFixtures.load("v1hmac.json")
        guard case .array(let vectors)? = document["signature_vectors"] else { throw WorldlineFixtures.FixtureMissing() }
        #expect(vectors.count == 6)
        for vector in vectors {
            let string = try #require(vector["string_to_sign"]?.stringValue)
            let secret = try #require(vector["secretApiKey"]?.stringValue)
            #expect(WorldlineV1HMAC.signature(of: string, secret: secret) == vector["expected_signature"]?.stringValue)
            let parsed = WorldlineV1HMAC.parse(vector["expected_authorization"]?.stringValue)
            #expect(parsed?.apiKeyId == vector["apiKeyId"]?.stringValue)
        }
    }

    @Test("header values are canonicalised as the SDKs do")
    func canonicalisation() throws {
        let document = try WorldlineFixtures.load("v1hmac.json")
        guard case .array(let cases)? = document["canonicalize_header_value"] else { throw WorldlineFixtures.FixtureMissing() }
        for item in cases {
            #expect(WorldlineV1HMAC.canonicalValue(try #require(item["in"]?.stringValue)) == item["out"]?.stringValue)
        }
    }

    @Test("the partial data-to-sign case: python keeps the query encoded, and both forms are accepted")
    func dataToSign() throws {
        let document = try WorldlineFixtures.load("v1hmac.json")
        let partial = try #require(document["data_to_sign_partial"])
        guard case .array(let pairs)? = partial["headers_in_order"] else { throw WorldlineFixtures.FixtureMissing() }
        let headers = pairs.compactMap { pair -> (name: String, value: String)? in
            guard case .array(let items) = pair, items.count == 2, let name = items[0].stringValue,
                  let value = items[1].stringValue else { return nil }
            return (name, value)
        }
        let urlText = try #require(partial["url_py"]?.stringValue)
        let url = try #require(URLComponents(string: urlText))
        let text = WorldlineV1HMAC.stringToSign(method: "POST", headers: headers,
                                                resource: url.percentEncodedPath + "?" + (url.percentEncodedQuery ?? ""))
        #expect(text.hasPrefix(try #require(partial["expected_prefix"]?.stringValue)))
        #expect(text.hasSuffix(try #require(partial["expected_suffix_py"]?.stringValue)))
        // Java/.NET sign the decoded query: the emulator tries that form too.
        #expect(WorldlineV1HMAC.candidateResources(rawPath: "/v1/consumer/ANDR%C3%89E/", rawQuery: "q=na%20me")
            == ["/v1/consumer/ANDR%C3%89E/?q=na%20me", "/v1/consumer/ANDR%C3%89E/?q=na me"])
    }

    @Test("requests captured from the python SDK 6.3.0 are accepted as they were sent")
    func capturedPythonRequests() async throws {
        let capture = try WorldlineFixtures.load("server-requests.captured-python-sdk-6.3.0.json")
        guard case .array(let requests)? = capture["requests"] else { throw WorldlineFixtures.FixtureMissing() }
        try await WorldlineHarness.with { harness in
            var statuses: [Int] = []
            for captured in requests {
                let path = try #require(captured["path"]?.stringValue)
                var request = URLRequest(url: try #require(URL(string: harness.root.absoluteString + path)))
                request.httpMethod = try #require(captured["method"]?.stringValue)
                guard case .array(let headers)? = captured["headers"] else { continue }
                for header in headers {
                    guard case .array(let pair) = header, let name = pair.first?.stringValue, let value = pair.last?.stringValue,
                          !["host", "content-length", "connection", "accept-encoding"].contains(name.lowercased()) else { continue }
                    request.setValue(value, forHTTPHeaderField: name)
                }
                let body = captured["body"]?.stringValue ?? ""
                if !body.isEmpty { request.httpBody = Data(body.utf8) }
                let result = try WLResult(try await exchange(request, on: harness.session))
                statuses.append(result.status)
                // Authentication passed (never 401/403); what follows is the request's own fate.
                #expect(result.status != 401 && result.status != 403, "\(path): \(result.raw.text)")
            }
            // Session created; the captured JWE placeholder is refused as a bad JWE; the payment id is unknown here.
            #expect(statuses == [201, 400, 404])
        }
    }

    @Test("bad, missing or misused authorization is refused in the vendor shape")
    func badAuthorization() async throws {
        let fixture = try WorldlineFixtures.load("server-error-invalid-authorization.json")
        try await WorldlineHarness.with { harness in
            let good = try await harness.server("GET", "/v1/1234/services/testconnection")
            #expect(good.status == 200)
            #expect(good.json == (try WorldlineFixtures.load("server-test-connection.json"))["body"])

            let forged = try await harness.server("GET", "/v1/1234/services/testconnection",
                                                  authorization: "GCS v1HMAC:apiKeyId:VfnXpPBQQoHZivTcAg0JvOWkhnzlPnaCPKpTQn/uMJM=")
            #expect(forged.status == 401)
            #expect(forged.json.keys == ["errorId", "errors"])
            #expect(forged.string("errors.0.code") == fixture["body"]?["errors"].flatMap { items -> String? in
                if case .array(let list) = items { return list.first?["code"]?.stringValue }
                return nil
            })
            #expect(forged.string("errors.0.message") == "MISSING_OR_INVALID_AUTHORIZATION")

            let wrongSecret = WorldlineEmulator.Merchant(merchantId: "1234", apiKeyId: "apiKeyId", secretApiKey: "guess",
                                                         webhookKeyId: "", webhookSecretKey: "")
            #expect(try await harness.server("GET", "/v1/1234/services/testconnection", merchant: wrongSecret).status == 401)
            #expect(try await harness.server("GET", "/v1/1234/services/testconnection", date: nil).status == 401)
            #expect(try await harness.server("GET", "/v1/1234/services/testconnection",
                                             authorization: "Bearer apiKeyId").status == 401)
            // Signed over another path than the one requested.
            #expect(try await harness.server("GET", "/v1/1234/services/testconnection",
                                             signedResource: "/v1/1234/sessions").status == 401)
            // A valid key on another merchant's path.
            #expect(try await harness.server("GET", "/v1/5678/services/testconnection").status == 403)
            // The other merchant with its own key is fine.
            #expect(try await harness.server("GET", "/v1/5678/services/testconnection",
                                             merchant: WorldlineHarness.otherMerchant).status == 200)
        }
    }

    @Test("a query is accepted signed encoded (python) or decoded (java/.NET)")
    func queryEncodings() async throws {
        try await WorldlineHarness.with { harness in
            let path = "/v1/1234/payments?merchantReference=order%2042"
            let python = try await harness.server("GET", path)
            #expect(python.status == 200, "\(python.raw.text)")
            let java = try await harness.server("GET", path, signedResource: "/v1/1234/payments?merchantReference=order 42")
            #expect(java.status == 200, "\(java.raw.text)")
        }
    }
}

@Suite("Worldline emulator: sessions, encrypted payments and follow-ups")
struct WorldlinePaymentTests {
    @Test("a session answers the vendor shape, with the client API at /client/v1")
    func session() async throws {
        try await WorldlineHarness.with { harness in
            let result = try await harness.server("POST", "/v1/1234/sessions", json: "{}")
            #expect(result.status == 201)
            #expect(result.json.keys == ["assetUrl", "clientApiUrl", "clientSessionId", "customerId", "invalidTokens", "region"])
            #expect(result.string("clientApiUrl") == harness.root.absoluteString + "/client/v1")
            #expect(result.at("invalidTokens") == .array([]))
            #expect(["EU", "US", "AMS", "PAR"].contains(result.string("region") ?? ""))
        }
    }

    @Test("a Swift-made JWE pays; the answer has the vendor's create-payment shape; get, approve and refunds follow",
          .timeLimit(.minutes(1)))
    func swiftPayment() async throws {
        let vendor = try WorldlineFixtures.load("server-create-payment-201.json")
        try await WorldlineHarness.with { harness in
            let result = try await harness.pay(reference: "order-1")
            #expect(result.status == 201, "\(result.raw.text)")
            #expect(result.json.keys == vendor["body"]?.keys)
            #expect(result.at("payment")?.keys == vendor["body"]?["payment"]?.keys)
            #expect(result.string("payment.status") == "PENDING_APPROVAL")
            #expect(result.string("payment.statusOutput.statusCategory") == "PENDING_MERCHANT")
            #expect(result.string("payment.statusOutput.statusCode") == "600")
            #expect(result.string("payment.statusOutput.isAuthorized") == "true")
            #expect(result.string("payment.paymentOutput.cardPaymentMethodSpecificOutput.card.cardNumber") == "************1111")
            #expect(result.string("payment.paymentOutput.references.merchantReference") == "order-1")
            let id = try #require(result.string("payment.id"))
            #expect(id.count == 30)
            #expect(result.raw.headers["location"] == harness.root.absoluteString + "/v1/1234/payments/" + id)

            let fetched = try await harness.server("GET", "/v1/1234/payments/" + id)
            #expect(fetched.status == 200)
            #expect(fetched.json == result["payment"])
            // Another merchant cannot see it.
            #expect(try await harness.server("GET", "/v1/5678/payments/" + id, merchant: WorldlineHarness.otherMerchant).status == 404)

            let approved = try await harness.server("POST", "/v1/1234/payments/\(id)/approve", json: "{}")
            #expect(approved.status == 200, "\(approved.raw.text)")
            #expect(approved.string("payment.status") == "CAPTURED")
            #expect(approved.string("payment.statusOutput.statusCategory") == "COMPLETED")

            let refund = #"{"amountOfMoney": {"amount": 1000, "currencyCode": "EUR"}, "refundReferences": {"merchantReference": "r-1"}}"#
            let first = try await harness.server("POST", "/v1/1234/payments/\(id)/refund", json: refund)
            #expect(first.status == 201, "\(first.raw.text)")
            #expect(first.json.keys == ["id", "refundOutput", "status", "statusOutput"])
            #expect(first.string("refundOutput.references.merchantReference") == "r-1")
            let refundID = try #require(first.string("id"))
            #expect(try await harness.server("GET", "/v1/1234/refunds/" + refundID).string("status") == "REFUNDED")

            // Refunds add up and never exceed the captured amount.
            let tooMuch = #"{"amountOfMoney": {"amount": 1346, "currencyCode": "EUR"}}"#
            let refused = try await harness.server("POST", "/v1/1234/payments/\(id)/refund", json: tooMuch)
            #expect(refused.status == 400)
            #expect(refused.string("errors.0.propertyName") == "amountOfMoney.amount")
            let otherCurrency = #"{"amountOfMoney": {"amount": 10, "currencyCode": "USD"}}"#
            #expect(try await harness.server("POST", "/v1/1234/payments/\(id)/refund", json: otherCurrency).status == 400)
            let rest = #"{"amountOfMoney": {"amount": 1345, "currencyCode": "EUR"}}"#
            #expect(try await harness.server("POST", "/v1/1234/payments/\(id)/refund", json: rest).status == 201)
            let after = try await harness.server("GET", "/v1/1234/payments/" + id)
            #expect(after.string("status") == "REFUNDED")
            #expect(after.string("paymentOutput.amountRefunded") == "2345")
            #expect(try await harness.server("POST", "/v1/1234/payments/\(id)/refund",
                                             json: #"{"amountOfMoney": {"amount": 1, "currencyCode": "EUR"}}"#).status == 409)
            let list = try await harness.server("GET", "/v1/1234/payments/\(id)/refunds")
            if case .array(let refunds)? = list["refunds"] { #expect(refunds.count == 2) } else { Issue.record("no refunds") }

            let ledger = await harness.emulator.ledger
            #expect(ledger.map(\.operation) == [.authorization, .capture, .refund, .refund])
            #expect(ledger.filter { $0.operation == .refund }.reduce(0) { $0 + $1.amount } == 2345)
        }
    }

    @Test("the js and android plaintexts, and a compact header, pay too", arguments: ["js", "android"])
    func otherDialects(dialect: String) async throws {
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let input = try harness.encryptedInput(card: "5555555555554444", productId: 3, session: session, dialect: dialect)
            let result = try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: input))
            #expect(result.status == 201, "\(result.raw.text)")
            #expect(result.string("payment.paymentOutput.cardPaymentMethodSpecificOutput.paymentProductId") == "3")
        }
    }

    @Test("a tampered, wrongly keyed or wrongly labelled JWE is a 400 naming encryptedCustomerInput")
    func badJWE() async throws {
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let good = try harness.encryptedInput(card: "4111111111111111", session: session)
            var parts = good.split(separator: ".").map(String.init)
            var candidates: [String] = []
            for index in parts.indices {
                var copy = parts
                var segment = Array(copy[index])
                let position = segment.count / 2
                segment[position] = segment[position] == "A" ? "B" : "A"
                copy[index] = String(segment)
                candidates.append(copy.joined(separator: "."))
            }
            let key = try WorldlineHarness.key
            let plaintext = TestJWE.swiftPlaintext(session: session.id, productId: 1,
                                                   values: [("cardNumber", "4111111111111111"), ("expiryDate", WorldlineHarness.futureExpiry)])
            candidates.append(try TestJWE.encrypt(plaintext, publicKeyDER: key.publicKeyDER, header: TestJWE.header(keyId: "old-key", spaced: true)))
            candidates.append(try TestJWE.encrypt(plaintext, publicKeyDER: key.publicKeyDER,
                                                  header: TestJWE.header(keyId: key.keyId, spaced: true, alg: "RSA1_5")))
            // The header re-serialised compact while the tag was made over the spaced one.
            parts[0] = TestJWE.base64URL(Array(TestJWE.header(keyId: key.keyId, spaced: false).utf8))
            candidates.append(parts.joined(separator: "."))
            candidates.append("not.a.jwe")
            for candidate in candidates {
                let result = try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: candidate))
                #expect(result.status == 400, "\(result.raw.text)")
                #expect(result.string("errors.0.propertyName") == "encryptedCustomerInput")
            }
            // The untouched one still works (a refused attempt does not use it up).
            #expect(try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: good)).status == 201)
            #expect(await harness.emulator.ledger.count == 1)
        }
    }

    @Test("an encrypted customer input is usable once")
    func replayedJWE() async throws {
        try await WorldlineHarness.with { harness in
            let session = try await harness.createSession()
            let input = try harness.encryptedInput(card: "4111111111111111", session: session)
            let body = WorldlineHarness.createBody(input: input)
            #expect(try await harness.server("POST", "/v1/1234/payments", json: body).status == 201)
            let replay = try await harness.server("POST", "/v1/1234/payments", json: body)
            #expect(replay.status == 400)
            #expect(replay.string("errors.0.message")?.contains("already used") == true)
        }
    }

    @Test("the plaintext's clientSessionId must be a live session of this merchant")
    func wrongSession() async throws {
        let clock = TestClock()
        try await WorldlineHarness.with(now: { clock.now }) { harness in
            // A session of the other merchant.
            let other = try await harness.server("POST", "/v1/5678/sessions", json: "{}", merchant: WorldlineHarness.otherMerchant)
            let foreign = ClientSessionInfo(id: try #require(other.string("clientSessionId")), customerId: "", clientApiUrl: "")
            let input = try harness.encryptedInput(card: "4111111111111111", session: foreign)
            let result = try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: input))
            #expect(result.status == 400)
            #expect(result.string("errors.0.propertyName") == "encryptedCustomerInput")
            // An unknown one.
            let unknown = ClientSessionInfo(id: "0123456789abcdef", customerId: "", clientApiUrl: "")
            #expect(try await harness.server("POST", "/v1/1234/payments",
                                             json: WorldlineHarness.createBody(input: try harness.encryptedInput(card: "4111111111111111", session: unknown))).status == 400)
            // An expired one.
            let session = try await harness.createSession()
            let late = try harness.encryptedInput(card: "4111111111111111", session: session)
            clock.advance(by: 7201)
            #expect(try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: late)).status == 400)
        }
    }

    @Test("a repeated idempotence key answers the first answer with its timestamp; in progress it is 409 / 1409")
    func idempotence() async throws {
        let duplicate = try WorldlineFixtures.load("server-error-duplicate-request-409.json")
        try await WorldlineHarness.with(timeoutHold: .seconds(3)) { harness in
            let session = try await harness.createSession()
            let body = WorldlineHarness.createBody(input: try harness.encryptedInput(card: "4111111111111111", session: session))
            let first = try await harness.server("POST", "/v1/1234/payments", json: body, idempotenceKey: "k-1")
            #expect(first.status == 201)
            #expect(first.raw.headers["x-gcs-idempotence-request-timestamp"] == nil)
            let second = try await harness.server("POST", "/v1/1234/payments", json: body, idempotenceKey: "k-1")
            #expect(second.status == 201)
            #expect(second.string("payment.id") == first.string("payment.id"))
            let stamp = try #require(second.raw.headers["x-gcs-idempotence-request-timestamp"])
            #expect(Int64(stamp) != nil)
            #expect(await harness.emulator.ledger.count == 1)

            // The first try of k-2 is held (a timeout); a retry meanwhile is a duplicate in progress.
            await harness.emulator.inject(.timeout, path: "/payments")
            let heldBody = WorldlineHarness.createBody(input: try harness.encryptedInput(card: "4111111111111111", session: session))
            let held = Task { try await harness.server("POST", "/v1/1234/payments", json: heldBody, idempotenceKey: "k-2") }
            // Wait until the held request is in progress at the emulator (a fixed sleep was too short on a
            // loaded machine), then retry while it is held.
            for _ in 0..<200 {
                if case .inProgress? = await harness.emulator.idempotence["1234\u{0}k-2"] { break }
                try await Task.sleep(for: .milliseconds(25))
            }
            let during = try await harness.server("POST", "/v1/1234/payments", json: heldBody, idempotenceKey: "k-2")
            #expect(during.status == 409)
            #expect(during.string("errors.0.code") == duplicate["body"]?["errors"].flatMap { value -> String? in
                if case .array(let items) = value { return items.first?["code"]?.stringValue }
                return nil
            })
            #expect(during.raw.headers["x-gcs-idempotence-request-timestamp"] != nil)
            #expect(try await held.value.status == 504)
            // After the hold the stored answer is given.
            let after = try await harness.server("POST", "/v1/1234/payments", json: heldBody, idempotenceKey: "k-2")
            #expect(after.status == 201)
            #expect(await harness.emulator.ledger.count == 2)
        }
    }

    @Test("a declined card answers 402 with paymentResult, as the vendor fixture")
    func declined() async throws {
        let vendor = try WorldlineFixtures.load("server-create-payment-declined-402.json")
        try await WorldlineHarness.with { harness in
            let result = try await harness.pay(card: "4000000000000002")
            #expect(result.status == 402)
            #expect(result.json.keys == vendor["body"]?.keys)
            #expect(result.at("paymentResult.payment")?.keys == vendor["body"]?["paymentResult"]?["payment"]?.keys)
            let vendorStatusKeys = Set(vendor["body"]?["paymentResult"]?["payment"]?["statusOutput"]?.keys ?? [])
            #expect(vendorStatusKeys.isSubset(of: Set(result.at("paymentResult.payment.statusOutput")?.keys ?? [])))
            #expect(result.string("errors.0.code") == "430330")
            #expect(result.string("paymentResult.payment.status") == "REJECTED")
            #expect(result.string("paymentResult.payment.statusOutput.statusCategory") == "UNSUCCESSFUL")
            #expect(result.string("paymentResult.payment.statusOutput.statusCode") == "100")
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("card validity is checked as the gateway would, naming the field")
    func cardValidity() async throws {
        let luhn = try WorldlineFixtures.load("server-error-invalid-card-400.json")
        let expiry = try WorldlineFixtures.load("server-error-invalid-request-400.json")
        try await WorldlineHarness.with { harness in
            let bad = try await harness.pay(card: "4111111111111112")
            #expect(bad.status == 400)
            #expect(bad.string("errors.0.message") == luhn["body"]?["errors"].flatMap { value -> String? in
                if case .array(let items) = value { return items.first?["message"]?.stringValue }
                return nil
            })
            let session = try await harness.createSession()
            let old = try harness.encryptedInput(card: "4111111111111111", session: session, expiry: "1210")
            let past = try await harness.server("POST", "/v1/1234/payments", json: WorldlineHarness.createBody(input: old))
            #expect(past.status == 400)
            #expect(past.string("errors.0.code") == "21000120")
            #expect(past.string("errors.0.propertyName") == expiry["body"]?["errors"].flatMap { value -> String? in
                if case .array(let items) = value { return items.first?["propertyName"]?.stringValue }
                return nil
            })
            let noAmount = try await harness.server("POST", "/v1/1234/payments", json: #"{"order": {}}"#)
            #expect(noAmount.status == 400)
            #expect(noAmount.string("errors.0.propertyName") == "order.amountOfMoney.amount")
            let badType = try await harness.server("POST", "/v1/1234/payments",
                                                   json: #"{"order": {"amountOfMoney": {"amount": "ten", "currencyCode": "EUR"}}}"#)
            #expect(badType.status == 400)
            #expect(badType.string("errors.0.propertyName") == "order.amountOfMoney.amount")
        }
    }

    @Test("authorization modes: SALE with requiresApproval false captures; SALE alone waits for approval; FINAL_AUTHORIZATION waits for a capture; partial captures add up; cancel")
    func modes() async throws {
        try await WorldlineHarness.with { harness in
            let sale = try await harness.pay(extra: #", "cardPaymentMethodSpecificInput": {"authorizationMode": "SALE", "requiresApproval": false}"#)
            #expect(sale.string("payment.status") == "CAPTURED")
            let waiting = try await harness.pay(extra: #", "cardPaymentMethodSpecificInput": {"authorizationMode": "SALE"}"#)
            #expect(waiting.string("payment.status") == "PENDING_APPROVAL")

            let auth = try await harness.pay(extra: #", "cardPaymentMethodSpecificInput": {"authorizationMode": "FINAL_AUTHORIZATION"}"#)
            #expect(auth.string("payment.status") == "PENDING_CAPTURE")
            let id = try #require(auth.string("payment.id"))
            let part = try await harness.server("POST", "/v1/1234/payments/\(id)/capture", json: #"{"amount": 1000}"#)
            #expect(part.status == 200, "\(part.raw.text)")
            #expect(part.json.keys == ["captureOutput", "id", "status", "statusOutput"])
            #expect(try await harness.server("POST", "/v1/1234/payments/\(id)/capture", json: #"{"amount": 2000}"#).status == 400)
            let rest = try await harness.server("POST", "/v1/1234/payments/\(id)/capture", json: #"{"amount": 1345, "isFinal": true}"#)
            #expect(rest.status == 200)
            #expect(try await harness.server("GET", "/v1/1234/payments/" + id).string("status") == "CAPTURED")
            let captures = try await harness.server("GET", "/v1/1234/payments/\(id)/captures")
            if case .array(let items)? = captures["captures"] { #expect(items.count == 2) } else { Issue.record("no captures") }

            let toCancel = try await harness.pay()
            let cancelID = try #require(toCancel.string("payment.id"))
            let cancelled = try await harness.server("POST", "/v1/1234/payments/\(cancelID)/cancel", json: "{}")
            #expect(cancelled.string("payment.status") == "CANCELLED")
            #expect(try await harness.server("POST", "/v1/1234/payments/\(cancelID)/cancel", json: "{}").status == 409)
            #expect(try await harness.server("POST", "/v1/1234/payments/\(cancelID)/refund",
                                             json: #"{"amountOfMoney": {"amount": 1, "currencyCode": "EUR"}}"#).status == 409)

            let bad = try await harness.pay(extra: #", "cardPaymentMethodSpecificInput": {"authorizationMode": "LATER"}"#)
            #expect(bad.string("errors.0.propertyName") == "cardPaymentMethodSpecificInput.authorizationMode")
        }
    }

    @Test("find payments by merchantReference")
    func find() async throws {
        try await WorldlineHarness.with { harness in
            _ = try await harness.pay(reference: "order-7")
            _ = try await harness.pay(reference: "order-8")
            let found = try await harness.server("GET", "/v1/1234/payments?merchantReference=order-7")
            #expect(found.json.keys == ["limit", "offset", "payments", "totalCount"])
            #expect(found.string("totalCount") == "1")
            #expect(found.string("payments.0.paymentOutput.references.merchantReference") == "order-7")
        }
    }

    @Test("3-D Secure: REDIRECTED to the emulator's page; approving it redirects to the return URL with RETURNMAC")
    func threeDSecure() async throws {
        try await WorldlineHarness.with { harness in
            let returnURL = "https://shop.example/return?order=9"
            let extra = #", "cardPaymentMethodSpecificInput": {"threeDSecure": {"redirectionData": {"returnUrl": "\#(returnURL)"}}}"#
            let result = try await harness.pay(card: "4000000000003220", extra: extra)
            #expect(result.status == 201, "\(result.raw.text)")
            #expect(result.string("payment.status") == "REDIRECTED")
            #expect(result.string("payment.statusOutput.statusCategory") == "PENDING_PAYMENT")
            #expect(result.string("merchantAction.actionType") == "REDIRECT")
            let mac = try #require(result.string("merchantAction.redirectData.RETURNMAC"))
            let page = try #require(result.string("merchantAction.redirectData.redirectURL").flatMap(URL.init(string:)))
            #expect(page.path.hasPrefix("/worldline/3ds/"))
            let html = try await exchange(URLRequest(url: page), on: harness.session)
            #expect(html.status == 200)
            var post = URLRequest(url: page)
            post.httpMethod = "POST"
            post.httpBody = Data("outcome=approve".utf8)
            post.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            let done = try await exchange(post, on: harness.session)
            #expect(done.status == 302)
            #expect(done.headers["location"] == returnURL + "&RETURNMAC=" + mac)
            let id = try #require(result.string("payment.id"))
            #expect(try await harness.server("GET", "/v1/1234/payments/" + id).string("status") == "PENDING_APPROVAL")
            // The page is single-use.
            #expect(try await exchange(post, on: harness.session).status == 404)

            // Without a return URL the request is refused.
            let none = try await harness.pay(card: "4000000000003220")
            #expect(none.status == 400)
        }
    }

    @Test("a pending card stays AUTHORIZATION_REQUESTED until settled")
    func pending() async throws {
        try await WorldlineHarness.with { harness in
            let result = try await harness.pay(card: "4000000000000259")
            #expect(result.string("payment.status") == "AUTHORIZATION_REQUESTED")
            #expect(result.string("payment.statusOutput.statusCategory") == "PENDING_CONNECT_OR_3RD_PARTY")
            let id = try #require(result.string("payment.id"))
            let settled = try await harness.admin("payments/\(id)/settle", json: #"{"outcome": "approve"}"#)
            #expect(settled.status == 200)
            #expect(try await harness.server("GET", "/v1/1234/payments/" + id).string("status") == "PENDING_APPROVAL")
        }
    }

    @Test("faults: server_error answers the vendor's 500 body, drop closes the connection after processing")
    func faults() async throws {
        let vendor = try WorldlineFixtures.load("server-error-unknown-500.json")
        try await WorldlineHarness.with { harness in
            let queued = try await harness.admin("faults", json: #"{"fault": "server_error", "path": "/payments"}"#)
            #expect(queued.status == 200)
            let failed = try await harness.pay()
            #expect(failed.status == 500)
            #expect(failed.json.keys == vendor["body"]?.keys)
            #expect(failed.string("errors.0.code") == "9999")

            await harness.emulator.inject(.dropConnection, path: "/payments")
            let session = try await harness.createSession()
            let body = WorldlineHarness.createBody(input: try harness.encryptedInput(card: "4111111111111111", session: session))
            let fresh = PayFortHarness.makeSession()
            defer { fresh.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) {
                _ = try await harness.server("POST", "/v1/1234/payments", json: body, idempotenceKey: "drop-1", on: fresh)
            }
            // It was processed: the retry with the same key gets the stored answer.
            let retry = try await harness.server("POST", "/v1/1234/payments", json: body, idempotenceKey: "drop-1")
            #expect(retry.status == 201)
            #expect(retry.raw.headers["x-gcs-idempotence-request-timestamp"] != nil)
            let ledger = try await harness.admin("ledger")
            #expect(ledger.status == 200)
            #expect(ledger.text.contains("authorization"))
        }
    }
}
