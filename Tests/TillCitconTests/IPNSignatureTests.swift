import Foundation
import Testing
import Till
@testable import TillCitcon
import TillCitconServer

/// Citcon's official IPN example, read from the fixture beside this file.
enum CitconVector {
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/citcon-vectors.json")

    struct Vector {
        var secret: String
        /// The IPN exactly as the vector lists it (a JSON object).
        var ipnJSON: Data
        var expectedString: String
        var expectedSign: String
    }

    /// The official vector; a missing file is a failure, never a skip.
    static func load() throws -> Vector {
        let root = try JSONSerialization.jsonObject(with: try Data(contentsOf: url)) as? [String: Any]
        let vector = try #require((root?["official_vectors"] as? [[String: Any]])?.first)
        let ipn = try #require(vector["ipn_post"])
        return Vector(secret: try #require(vector["secret"] as? String),
                      ipnJSON: try JSONSerialization.data(withJSONObject: ipn),
                      expectedString: try #require(vector["expected_string"] as? String),
                      expectedSign: try #require(vector["expected_sign"] as? String))
    }

    /// The vector's IPN as a form-encoded body, in the vector's field order.
    static func formBody(_ vector: Vector, replacing: [String: String] = [:], dropping: Set<String> = []) throws -> Data {
        let fields = try CitconIPNFields.parse(vector.ipnJSON, mediaType: "application/json")
        let order = (fields["fields"] ?? "").split(separator: ",").map(String.init) + ["fields", "sign"]
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let pairs = order.filter { !dropping.contains($0) }.map { name -> String in
            let value = replacing[name] ?? fields[name] ?? ""
            return "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
        }
        return Data(pairs.joined(separator: "&").utf8)
    }
}

@Suite("Citcon IPN signature")
struct IPNSignatureTests {
    @Test("the official example: the string to sign and the sign, from JSON")
    func officialVectorJSON() throws {
        let vector = try CitconVector.load()
        let fields = try CitconIPNFields.parse(vector.ipnJSON, mediaType: "application/json")
        #expect(try CitconSignature.stringToSign(fields, secret: vector.secret) == vector.expectedString)
        #expect(try CitconSignature.sign(fields, secret: vector.secret) == vector.expectedSign)
        #expect(try CitconSignature.verify(fields, secret: vector.secret).contains("status"))
    }

    @Test("the official example delivered form-encoded verifies too")
    func officialVectorForm() throws {
        let vector = try CitconVector.load()
        let fields = try CitconIPNFields.parse(try CitconVector.formBody(vector), mediaType: "application/x-www-form-urlencoded")
        #expect(try CitconSignature.stringToSign(fields, secret: vector.secret) == vector.expectedString)
        try CitconSignature.verify(fields, secret: vector.secret)
    }

    @Test("reordering the body's fields changes nothing: Citcon sorts by name")
    func reorderedBody() throws {
        let vector = try CitconVector.load()
        let text = String(decoding: try CitconVector.formBody(vector), as: UTF8.self)
        let reversed = text.split(separator: "&").reversed().joined(separator: "&")
        try CitconSignature.verify(try CitconIPNFields.parse(Data(reversed.utf8)), secret: vector.secret)
    }

    @Test("a tampered value is refused", arguments: ["status", "amount", "reference", "currency", "id", "time_completed"])
    func tamperedValue(field: String) throws {
        let vector = try CitconVector.load()
        let body = try CitconVector.formBody(vector, replacing: [field: field == "amount" ? "1" : "x"])
        let error = try #require(throws: CheckoutError.self) {
            try CitconSignature.verify(try CitconIPNFields.parse(body), secret: vector.secret)
        }
        #expect(error.code == .signatureMismatch)
        #expect(error.category == .verification)
    }

    @Test("a reordered fields list is a different signed string, so it is refused")
    func reorderedFieldsList() throws {
        let vector = try CitconVector.load()
        let fields = try CitconIPNFields.parse(vector.ipnJSON)
        let list = (fields["fields"] ?? "").split(separator: ",").reversed().joined(separator: ",")
        let body = try CitconVector.formBody(vector, replacing: ["fields": list])
        #expect(throws: CheckoutError.self) { try CitconSignature.verify(try CitconIPNFields.parse(body), secret: vector.secret) }
    }

    @Test("the wrong secret is refused")
    func wrongSecret() throws {
        let vector = try CitconVector.load()
        let error = try #require(throws: CheckoutError.self) {
            try CitconSignature.verify(try CitconIPNFields.parse(vector.ipnJSON), secret: "not-braintree")
        }
        #expect(error.field == "sign")
    }

    @Test("a listed field missing from the body is named")
    func missingListedField() throws {
        let vector = try CitconVector.load()
        let body = try CitconVector.formBody(vector, dropping: ["time_created"])
        let error = try #require(throws: CheckoutError.self) {
            try CitconSignature.verify(try CitconIPNFields.parse(body), secret: vector.secret)
        }
        #expect(error.field == "time_created")
        #expect(error.code == .missingField)
    }

    @Test("no sign, no fields, or a fields list that leaves out what Till reads: refused, naming the field",
          arguments: [("sign", "sign"), ("fields", "fields")])
    func missingSignOrFields(dropped: String, expectedField: String) throws {
        let vector = try CitconVector.load()
        let body = try CitconVector.formBody(vector, dropping: [dropped])
        let error = try #require(throws: CheckoutError.self) {
            try CitconSignature.verify(try CitconIPNFields.parse(body), secret: vector.secret)
        }
        #expect(error.field == expectedField)
        #expect(error.category == .verification)
    }

    @Test("an unsigned status cannot ride along: fields must cover id, transaction_type, reference, status, amount and currency")
    func unsignedStatusRefused() throws {
        // Correctly signed over everything except status, which is then added unsigned.
        let secret = "s3cret"
        var fields = CitconIPNFields([("id", "abc"), ("transaction_type", "charge"), ("reference", "ref1"), ("amount", "100"), ("currency", "USD"),
                                      ("fields", "id,transaction_type,reference,amount,currency")])
        let sign = try CitconSignature.sign(fields, secret: secret)
        fields = CitconIPNFields([("id", "abc"), ("transaction_type", "charge"), ("reference", "ref1"), ("amount", "100"), ("currency", "USD"),
                                  ("fields", "id,transaction_type,reference,amount,currency"), ("status", "success"), ("sign", sign)])
        let error = try #require(throws: CheckoutError.self) { try CitconSignature.verify(fields, secret: secret) }
        #expect(error.field == "fields")
        #expect(error.message.contains("status"))
    }

    @Test("a fields list naming a field twice, or naming sign, is refused")
    func badFieldsLists() throws {
        for list in ["id,reference,status,amount,currency,id", "id,reference,status,amount,currency,sign", "id,,reference"] {
            let fields = CitconIPNFields([("id", "a"), ("transaction_type", "charge"), ("reference", "r"), ("status", "success"), ("amount", "1"), ("currency", "USD"),
                                          ("fields", list), ("sign", "00")])
            let error = try #require(throws: CheckoutError.self) { try CitconSignature.verify(fields, secret: "k") }
            #expect(error.field == "fields", "\(list)")
        }
    }

    @Test("malformed bodies are typed errors naming the body",
          arguments: [("", nil), ("{", nil), ("[1,2]", "application/json"), ("%zz=1", nil), ("a=1", "application/json")] as [(String, String?)])
    func malformedBodies(body: String, mediaType: String?) throws {
        let error = try #require(throws: CheckoutError.self) { try CitconIPNFields.parse(Data(body.utf8), mediaType: mediaType) }
        #expect(error.field == "body" || error.code == .malformedBody)
    }

    @Test("a form field sent twice is refused rather than guessed")
    func duplicateFormField() throws {
        let error = try #require(throws: CheckoutError.self) {
            try CitconIPNFields.parse(Data("status=fail&status=success".utf8))
        }
        #expect(error.field == "status")
    }

    @Test("JSON numbers sign as written; null signs as empty")
    func jsonScalars() throws {
        let body = Data(#"{"id":"a","reference":"r","status":"success","amount":1999,"currency":"JPY","amount_refunded":null,"fields":"id,reference,status,amount,currency,amount_refunded"}"#.utf8)
        let fields = try CitconIPNFields.parse(body)
        #expect(try CitconSignature.stringToSign(fields, secret: "k")
                == "amount=1999&amount_refunded=&currency=JPY&fields=id,reference,status,amount,currency,amount_refunded&id=a&reference=r&status=success&secret=k")
    }
}
