import Foundation
import Testing
import Till
import TillGatewayKit

@Suite("DocumentedFields: a verified flat message read by its documented fields only")
struct DocumentedFieldsTests {
    let documented = DocumentedFields([
        "status": FieldRule(2, .digits, minLength: 2),
        "merchant_reference": FieldRule(40, .alphanumeric, special: "-_."),
        "customer_name": FieldRule(40, .text, special: "' -."),
        "message": FieldRule(150, .printable),
    ])

    @Test("rules: length, fixed length, character classes, special characters and letters of any script", arguments: [
        (FieldRule(2, .digits, minLength: 2), "14", nil),
        (FieldRule(2, .digits, minLength: 2), "1", CheckoutError.Code.invalidField),
        (FieldRule(2, .digits, minLength: 2), "140", .fieldTooLong),
        (FieldRule(2, .digits), "1a", .invalidField),
        (FieldRule(2, .digits), "١٤", .invalidField),                 // Arabic-Indic digits are not 0-9
        (FieldRule(10, .letters), "VISA", nil),
        (FieldRule(10, .letters), "VISA1", .invalidField),
        (FieldRule(40, .alphanumeric, special: "-_."), "order-42_a.b", nil),
        (FieldRule(40, .alphanumeric, special: "-_."), "att1status=14", .invalidField),
        (FieldRule(40, .text, special: "' "), "محمد O'Neil", nil),
        (FieldRule(40, .text, special: "' "), "Bob=1", .invalidField),
        (FieldRule(150, .printable), "Transaction waiting for customer’s action.", nil),
        (FieldRule(150, .printable), "line\nbreak", .invalidField),
    ] as [(FieldRule, String, CheckoutError.Code?)])
    func rules(rule: FieldRule, value: String, code: CheckoutError.Code?) {
        let issue = rule.issue(for: value, field: "body.x")
        #expect(issue?.code == code)
        if let issue {
            #expect(issue.field == "body.x")
            if value.count > 3 { #expect(!issue.message.contains(value)) }   // never echoes the value
        }
    }

    @Test("only documented fields are read; empty values read as absent; the rest is named, never read")
    func readsDocumentedOnly() throws {
        let values = try documented.read([("status", "14"), ("merchant_reference", "att1"), ("status_status", "13"), ("message", ""),
                                          ("return_url", "https://shop/r?x")].map { (name: $0.0, value: Optional($0.1)) },
                                         prefix: "body", gateway: "acme")
        #expect(values.values == ["status": "14", "merchant_reference": "att1"])
        #expect(values["status_status"] == nil && values["return_url"] == nil && values["message"] == nil)
        #expect(values.ignored == ["status_status", "return_url"])
    }

    @Test("a documented value outside its rule is refused naming <prefix>.<key>, typed and attributed", arguments: [
        ("status", "1a", CheckoutError.Code.invalidField), ("status", "140", .fieldTooLong),
        ("merchant_reference", "att1response_code=13666", .invalidField), ("customer_name", String(repeating: "a", count: 41), .fieldTooLong),
    ])
    func refuses(key: String, value: String, code: CheckoutError.Code) {
        let error = #expect(throws: CheckoutError.self) {
            try documented.read(FormFields([("message", "ok"), (key, value)]), prefix: "body", gateway: "acme")
        }
        #expect(error?.code == code && error?.field == "body.\(key)" && error?.gateway == "acme")
    }

    @Test("a name given twice is refused, even when the message was built in code")
    func duplicates() {
        let error = #expect(throws: CheckoutError.self) {
            try documented.read(FormFields([("status", "13"), ("status", "14")]), prefix: "body")
        }
        #expect(error?.code == .duplicateField && error?.field == "body.status")
        // Undocumented names too: a second copy is never "the other one".
        #expect(throws: CheckoutError.self) { try documented.read(FormFields([("x", "1"), ("x", "2")]), prefix: "body") }
    }

    @Test("JSON members: numbers by their text, booleans as true/false, null as absent; a nested documented value is refused")
    func json() throws {
        let object = try OrderedJSON.parse(Data(#"{"status":14,"merchant_reference":"att1","message":null,"extra":{"a":1},"flag":true}"#.utf8))
        let members = try #require(object.objectMembers)
        let values = try documented.read(members, prefix: "answer")
        #expect(values.values == ["status": "14", "merchant_reference": "att1"])
        #expect(values.ignored == ["extra", "flag"])
        let nested = try #require(try OrderedJSON.parse(Data(#"{"status":{"a":"14"}}"#.utf8)).objectMembers)
        let error = #expect(throws: CheckoutError.self) { try documented.read(nested, prefix: "answer") }
        #expect(error?.code == .invalidField && error?.field == "answer.status")
    }

    @Test("check and restricted serve a plugin's own table: requests are checked with the same rules")
    func checkAndRestrict() {
        #expect(documented.check("status", "14", field: "payfort.status") == nil)
        #expect(documented.check("status", "x", field: "payfort.status")?.field == "payfort.status")
        #expect(documented.check("undocumented", "anything=at all", field: "payfort.undocumented") == nil)
        let subset = documented.restricted(to: ["status", "nonexistent"])
        #expect(Set(subset.rules.keys) == ["status"] && subset["status"] == FieldRule(2, .digits, minLength: 2))
        #expect(FieldRule(40, .alphanumeric, special: "-_ ").allowedDescription == "ASCII letters and digits and - _ space")
    }
}
