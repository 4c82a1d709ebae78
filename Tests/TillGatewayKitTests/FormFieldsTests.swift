import Foundation
import Testing
import TillGatewayKit

@Suite("FormFields")
struct FormFieldsTests {
    private func decode(_ text: String, field: String = "body") throws -> FormFields {
        try FormFields.decode(Data(text.utf8), field: field)
    }

    @Test("order is kept and values are read by name")
    func order() throws {
        let fields = try decode("z=1&a=2&m=3")
        #expect(fields.names == ["z", "a", "m"])
        #expect(fields["a"] == "2")
        #expect(fields["missing"] == nil)
        #expect(fields.map(\.value) == ["1", "2", "3"])
        #expect(fields.pairs.first == FormPair(name: "z", value: "1"))
    }

    @Test("plus, percent escapes and UTF-8 text decode", arguments: [
        ("a+b", "a b"), ("a%2Bb", "a+b"), ("100%25", "100%"), ("%26%3D", "&="), ("%e2%82%ac", "€"),
        ("%D9%85%D8%B1%D8%AD%D8%A8%D8%A7", "مرحبا"), ("%E6%94%AF%E4%BB%98%E5%AE%9D", "支付宝"),
        ("مرحبا+بكم", "مرحبا بكم"), ("支付宝", "支付宝"), ("a=b", "a=b"),
    ])
    func values(_ raw: String, _ expected: String) throws {
        #expect(try decode("k=\(raw)")["k"] == expected)
    }

    @Test("empty values, keys without '=' and empty segments")
    func emptyParts() throws {
        let fields = try decode("&a=&b&&c=3&")
        #expect(fields.names == ["a", "b", "c"])
        #expect(fields["a"] == "")
        #expect(fields["b"] == "")
        #expect(fields["c"] == "3")
        #expect(try decode("").pairs.isEmpty)
        #expect(try decode("&&").pairs.isEmpty)
    }

    @Test("names are decoded too")
    func names() throws {
        let fields = try decode("card%5Bholder%5D=A+B&first+name=x")
        #expect(fields.names == ["card[holder]", "first name"])
    }

    @Test("a repeated name is refused, naming the field", arguments: [
        ("amount=1&amount=2", "body.amount"), ("a=1&b=2&a=1", "body.a"), ("amount=1&am%6Funt=2", "body.amount"), ("x&x=", "body.x"),
    ])
    func duplicate(_ text: String, _ field: String) {
        let error = #expect(throws: CheckoutError.self) { try decode(text) }
        #expect(error?.code == .duplicateField)
        #expect(error?.field == field)
        #expect(error?.category == .invalidInput)
    }

    @Test("the field name given prefixes the path")
    func fieldName() {
        let error = #expect(throws: CheckoutError.self) { try decode("a=1&a=1", field: "notification.body") }
        #expect(error?.field == "notification.body.a")
    }

    @Test("bad escapes, invalid UTF-8 and nameless fields are malformed, naming the body", arguments: [
        "a=%", "a=%2", "a=%zz", "a=%G1", "a%=1", "a=100%", "a=%C3", "a=%FF", "a=%ED%A0%80", "a=%C0%AF", "=1",
    ])
    func malformed(_ text: String) {
        let error = #expect(throws: CheckoutError.self) { try decode(text, field: "ipn") }
        #expect(error?.code == .malformedBody)
        #expect(error?.field == "ipn")
    }

    @Test("raw bytes that are not UTF-8 are malformed")
    func rawInvalidUTF8() {
        #expect(throws: CheckoutError.self) { try FormFields.decode(Data([0x61, 0x3D, 0xFF])) }
    }

    @Test("encoding keeps ALPHA DIGIT *-._, writes spaces as + and the rest as upper-case escapes")
    func encoding() {
        #expect(FormFields.encode([("a b", "x*y-z._~!"), ("e", "é&=+/")]) == "a+b=x*y-z._%7E%21&e=%C3%A9%26%3D%2B%2F")
        #expect(FormFields.encode([("city", "الرياض")]) == "city=%D8%A7%D9%84%D8%B1%D9%8A%D8%A7%D8%B6")
        #expect(FormFields.encode([]) == "")
        #expect(FormFields([("k", "")]).encoded() == "k=")
    }

    @Test("encode then decode gives the same fields", arguments: [
        [("merchant_reference", "ORD-1"), ("amount", "1000"), ("note", "a+b c&d=e%f")],
        [("name", "محمد الأحمد"), ("city", "北京"), ("emoji", "💳"), ("empty", "")],
        [("line", "a\nb\r\tc"), ("*-._", "~`!@#$^()[]{}|\\;:'\",<>?")],
    ])
    func roundTrip(_ pairs: [(String, String)]) throws {
        let fields = FormFields(pairs)
        let decoded = try FormFields.decode(Data(fields.encoded().utf8))
        #expect(decoded == fields)
        #expect(FormFields.encode(pairs) == fields.encoded())
    }
}
