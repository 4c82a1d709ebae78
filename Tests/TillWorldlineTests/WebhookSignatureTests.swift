import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillWorldlineServer

/// `Fixtures/webhooks.json`: the Python SDK's webhook test resources (a `payment.paid` event, its
/// signature, and the same body re-dated that must fail).
private struct WebhookFixture: Decodable {
    struct PaymentPaid: Decodable {
        var headers: [String: String]
        var secretKey: String
        var validBodyBase64: String
        var validBodyUTF8: String
        var invalidBodyBase64: String

        enum CodingKeys: String, CodingKey {
            case headers, secretKey = "secret_key", validBodyBase64 = "valid_body_base64", validBodyUTF8 = "valid_body_utf8"
            case invalidBodyBase64 = "invalid_body_base64"
        }
    }

    struct Shared: Decodable {
        var id: String
        var source: String
        var secretKey: String
        var keyId: String
        var bodyBase64: String
        var expectedSignature: String

        enum CodingKeys: String, CodingKey {
            case id, source, secretKey = "secret_key", keyId = "key_id", bodyBase64 = "body_base64"
            case expectedSignature = "expected_x_gcs_signature"
        }
    }

    var paymentPaid: PaymentPaid
    var sharedVectors: [Shared]

    enum CodingKeys: String, CodingKey { case paymentPaid = "payment_paid", sharedVectors = "shared_vectors" }

    static func load() throws -> WebhookFixture {
        try JSONDecoder().decode(WebhookFixture.self, from: try worldlineFixture("webhooks.json"))
    }
}

/// The vendor's delivery: body, signature, key id and a verifier holding its secret.
private struct Delivery {
    var body: Data
    var signature: String
    var keyId: String
    var verifier: WorldlineWebhookSignature
    var invalidBody: Data

    static func load() throws -> Delivery {
        let paid = try WebhookFixture.load().paymentPaid
        let body = Data(try #require(Base64.decode(paid.validBodyBase64)))
        #expect(body == Data(paid.validBodyUTF8.utf8))
        let keyId = try #require(paid.headers["X-GCS-KeyId"])
        return Delivery(body: body, signature: try #require(paid.headers["X-GCS-Signature"]), keyId: keyId,
                        verifier: WorldlineWebhookSignature(secrets: [keyId: paid.secretKey]),
                        invalidBody: Data(try #require(Base64.decode(paid.invalidBodyBase64))))
    }

    var headers: [(name: String, value: String)] {
        [("Content-Type", "application/json"), ("X-GCS-Signature", signature), ("X-GCS-KeyId", keyId)]
    }
}

private func expectFailure(_ code: CheckoutError.Code, field: String, category: CheckoutError.Category = .verification,
                           _ body: () throws -> Void) {
    let error = #expect(throws: CheckoutError.self) { try body() }
    #expect(error?.code == code)
    #expect(error?.field == field)
    #expect(error?.category == category)
}

@Suite("Worldline webhook signatures")
struct WebhookSignatureTests {
    @Test("the Python SDK's payment.paid delivery verifies, and its key id is returned")
    func vendorDelivery() throws {
        let delivery = try Delivery.load()
        #expect(try delivery.verifier.verify(body: delivery.body, headers: delivery.headers) == delivery.keyId)
        #expect(WorldlineWebhookSignature.signature(body: delivery.body, secret: "hello+world") == delivery.signature)
        let notification = IncomingNotification(headers: Dictionary(uniqueKeysWithValues: delivery.headers.map { ($0.name, $0.value) }),
                                                body: delivery.body)
        #expect(try delivery.verifier.verify(notification) == delivery.keyId)
    }

    @Test("the shared vector's body and signature agree")
    func sharedVector() throws {
        for vector in try WebhookFixture.load().sharedVectors {
            let body = Data(try #require(Base64.decode(vector.bodyBase64)))
            #expect(WorldlineWebhookSignature.signature(body: body, secret: vector.secretKey) == vector.expectedSignature)
            let verifier = WorldlineWebhookSignature(secrets: [vector.keyId: vector.secretKey])
            #expect(try verifier.verify(body: body, signature: vector.expectedSignature, keyId: vector.keyId) == vector.keyId)
        }
    }

    @Test("the Python SDK's failures: the re-dated body, another secret, a prefixed signature")
    func vendorFailures() throws {
        let delivery = try Delivery.load()
        let field = "headers.X-GCS-Signature"
        expectFailure(.signatureMismatch, field: field) { try delivery.verifier.verify(body: delivery.invalidBody, headers: delivery.headers) }
        let otherSecret = WorldlineWebhookSignature(secrets: [delivery.keyId: "1hello+world"])
        expectFailure(.signatureMismatch, field: field) { try otherSecret.verify(body: delivery.body, headers: delivery.headers) }
        expectFailure(.signatureMismatch, field: field) {
            try delivery.verifier.verify(body: delivery.body, signature: "1" + delivery.signature, keyId: delivery.keyId)
        }
    }

    @Test("a body re-cut by one byte fails", arguments: ["drop last", "drop first", "append newline", "append space", "flip", "CRLF"])
    func recutBody(how: String) throws {
        let delivery = try Delivery.load()
        var body = delivery.body
        switch how {
        case "drop last": body.removeLast()
        case "drop first": body.removeFirst()
        case "append newline": body.append(0x0A)
        case "append space": body.append(0x20)
        case "flip": body[body.count / 2] ^= 0x01
        default: body = Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
        }
        #expect(body != delivery.body)
        expectFailure(.signatureMismatch, field: "headers.X-GCS-Signature") {
            try delivery.verifier.verify(body: body, headers: delivery.headers)
        }
    }

    @Test("a signature made with one key is refused under another key id; each key verifies its own")
    func signatureForAnotherKeyId() throws {
        let delivery = try Delivery.load()
        let verifier = WorldlineWebhookSignature(secrets: ["old-key": "old secret", "new-key": "new secret"])
        let underNew = WorldlineWebhookSignature.signature(body: delivery.body, secret: "new secret")
        #expect(try verifier.verify(body: delivery.body, signature: underNew, keyId: "new-key") == "new-key")
        expectFailure(.signatureMismatch, field: "headers.X-GCS-Signature") {
            try verifier.verify(body: delivery.body, headers: [("X-GCS-Signature", underNew), ("X-GCS-KeyId", "old-key")])
        }
        expectFailure(WorldlineWebhookSignature.unknownKeyId, field: "headers.X-GCS-KeyId") {
            try verifier.verify(body: delivery.body, headers: [("X-GCS-Signature", underNew), ("X-GCS-KeyId", "New-Key")])
        }
    }

    @Test("header names are matched in any case")
    func headerCase() throws {
        let delivery = try Delivery.load()
        for (signatureName, keyIdName) in [("x-gcs-signature", "x-gcs-keyid"), ("X-GCS-SIGNATURE", "X-GCS-KEYID"), ("x-Gcs-Signature", "X-gcs-KeyID")] {
            #expect(try delivery.verifier.verify(body: delivery.body, headers: [(signatureName, delivery.signature),
                                                                                 (keyIdName, delivery.keyId)]) == delivery.keyId)
        }
    }

    @Test("missing, repeated and empty headers, and unknown key ids, are distinct verification errors")
    func headerFailures() throws {
        let delivery = try Delivery.load()
        let (body, signature, keyId, verifier) = (delivery.body, delivery.signature, delivery.keyId, delivery.verifier)
        expectFailure(.missingField, field: "headers.X-GCS-Signature") { try verifier.verify(body: body, headers: [("X-GCS-KeyId", keyId)]) }
        expectFailure(.missingField, field: "headers.X-GCS-KeyId") { try verifier.verify(body: body, headers: [("X-GCS-Signature", signature)]) }
        expectFailure(.missingField, field: "headers.X-GCS-Signature") { try verifier.verify(body: body, headers: []) }
        expectFailure(.duplicateField, field: "headers.X-GCS-Signature") {
            try verifier.verify(body: body, headers: [("X-GCS-Signature", signature), ("X-GCS-KeyId", keyId), ("x-gcs-signature", signature)])
        }
        expectFailure(.duplicateField, field: "headers.X-GCS-KeyId") {
            try verifier.verify(body: body, headers: [("X-GCS-Signature", signature), ("X-GCS-KeyId", keyId), ("X-GCS-KEYID", "other")])
        }
        expectFailure(.signatureMismatch, field: "headers.X-GCS-Signature") {
            try verifier.verify(body: body, headers: [("X-GCS-Signature", ""), ("X-GCS-KeyId", keyId)])
        }
        expectFailure(.signatureMismatch, field: "headers.X-GCS-Signature") {
            try verifier.verify(body: body, headers: [("X-GCS-Signature", " " + signature), ("X-GCS-KeyId", keyId)])
        }
        expectFailure(WorldlineWebhookSignature.unknownKeyId, field: "headers.X-GCS-KeyId") {
            try verifier.verify(body: body, headers: [("X-GCS-Signature", signature), ("X-GCS-KeyId", "someone-else")])
        }
        expectFailure(WorldlineWebhookSignature.unknownKeyId, field: "headers.X-GCS-KeyId") {
            try WorldlineWebhookSignature(secrets: [:]).verify(body: body, headers: delivery.headers)
        }
        expectFailure(.missingSecret, field: "webhookSecrets.\(keyId)", category: .configuration) {
            try WorldlineWebhookSignature(secrets: [keyId: ""]).verify(body: body, headers: delivery.headers)
        }
        // A notification whose headers were merged into one comma-joined value does not verify.
        let merged = IncomingNotification(headers: ["X-GCS-Signature": "\(signature), \(signature)", "X-GCS-KeyId": keyId], body: body)
        expectFailure(.signatureMismatch, field: "headers.X-GCS-Signature") { try verifier.verify(merged) }
    }

    @Test("till verify worldline: valid, or invalid with the reason, hints and the expected signature")
    func debuggerVerify() throws {
        let delivery = try Delivery.load()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("worldline-webhook-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try delivery.body.write(to: file)
        let arguments: [String: [String]] = ["secret": ["hello+world"], "body": [file.path], "signature": [delivery.signature]]
        let valid = try WorldlineSigning.debugger.verify(DebuggerArguments(arguments))
        #expect(valid.valid)
        #expect(valid.lines.first?.hasPrefix("valid") == true)

        let wrong = try WorldlineSigning.debugger.verify(DebuggerArguments(arguments.merging(["secret": ["1hello+world"]]) { $1 }))
        #expect(!wrong.valid)
        #expect(wrong.lines.first?.hasPrefix("invalid: the signature does not match") == true)
        #expect(wrong.lines.last == "expected X-GCS-Signature: \(WorldlineWebhookSignature.signature(body: delivery.body, secret: "1hello+world"))")

        // The body saved with a final line break: the hint says so.
        let saved = WorldlineSigning.verify(secret: "hello+world", body: delivery.body + Data("\n".utf8), signature: delivery.signature)
        #expect(!saved.valid)
        #expect(saved.lines.contains { $0.contains("without its final line break") })

        let empty = WorldlineSigning.verify(secret: "hello+world", body: delivery.body, signature: "")
        #expect(empty.lines.first == "invalid: the signature is empty")
        #expect(empty.lines.last == "expected X-GCS-Signature: \(delivery.signature)")

        let missing = #expect(throws: CheckoutError.self) {
            try WorldlineSigning.debugger.verify(DebuggerArguments(["body": [file.path], "signature": ["x"]]))
        }
        #expect(missing?.field == "--secret")
    }
}
