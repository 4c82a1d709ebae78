import Foundation
import Testing
import TillGatewayKit

@Suite("OrderedJSON")
struct OrderedJSONTests {
    private func parse(_ text: String, field: String = "body", maxDepth: Int = 64) throws -> OrderedJSON {
        try OrderedJSON.parse(Data(text.utf8), field: field, maxDepth: maxDepth)
    }

    /// The error parsing `text` throws; a test issue at the caller when it throws none.
    private func parseError(_ text: String, field: String = "body", maxDepth: Int = 64,
                            sourceLocation: SourceLocation = #_sourceLocation) -> CheckoutError? {
        #expect(throws: CheckoutError.self, sourceLocation: sourceLocation) { try parse(text, field: field, maxDepth: maxDepth) }
    }

    @Test("object member order is kept at every level")
    func order() throws {
        let value = try parse(#"{"z":1,"a":{"y":true,"b":null,"x":"s"},"m":[3,2,1]}"#)
        #expect(value.objectMembers?.map(\.key) == ["z", "a", "m"])
        #expect(value["a"]?.objectMembers?.map(\.key) == ["y", "b", "x"])
        #expect(value["a"]?["y"]?.boolValue == true)
        #expect(value["a"]?["b"]?.isNull == true)
        #expect(value["a"]?["x"]?.stringValue == "s")
        #expect(value["m"]?.arrayValue?.compactMap(\.numberText) == ["3", "2", "1"])
        #expect(value["missing"] == nil)
        #expect(value["m"]?["x"] == nil)
        #expect(String(decoding: value.serialized(), as: UTF8.self) == #"{"z":1,"a":{"y":true,"b":null,"x":"s"},"m":[3,2,1]}"#)
    }

    @Test("numbers keep their exact text", arguments: ["0", "-0", "1.50", "1e2", "1E+2", "-12.340e-05", "100", "0.000", "123456789012345678901234567890"])
    func numberText(_ text: String) throws {
        let value = try parse(#"{"n":\#(text)}"#)
        #expect(value["n"] == .number(text))
        #expect(value["n"]?.numberText == text)
        #expect(String(decoding: value.serialized(), as: UTF8.self) == #"{"n":\#(text)}"#)
    }

    @Test("accessors answer nil for the wrong kind")
    func accessors() throws {
        let string = OrderedJSON.string("1")
        #expect(string.numberText == nil && string.boolValue == nil && string.objectMembers == nil && string.arrayValue == nil)
        #expect(!string.isNull)
        #expect(OrderedJSON.number("1").stringValue == nil)
        #expect(OrderedJSON.null.isNull)
    }

    @Test("a duplicate key is refused, naming its path", arguments: [
        (#"{"amount":1,"amount":2}"#, "body.amount"),
        (#"{"payment":{"amount":"1.00","currency":"SAR","amount":"100.00"}}"#, "body.payment.amount"),
        (#"{"items":[{},{},{"sku":"a","sku":"b"}]}"#, "body.items[2].sku"),
        (#"[[{"a":1}],[{"k":1,"k":1}]]"#, "body[1][0].k"),
        (#"{"a":{"b":{"c":{"d":1,"d":1}}}}"#, "body.a.b.c.d"),
    ])
    func duplicateKeys(_ text: String, _ path: String) {
        let error = parseError(text)
        #expect(error?.code == .duplicateField)
        #expect(error?.field == path)
    }

    @Test("the field name roots the path")
    func fieldName() {
        #expect(parseError(#"{"a":1,"a":1}"#, field: "ipn")?.field == "ipn.a")
        #expect(parseError(#"{"a":1,}"#, field: "ipn")?.field == "ipn")
    }

    @Test("RFC 8259 violations are malformed", arguments: [
        #"{"a":1,}"#, "[1,2,]", "[,1]", #"{"a":01}"#, "-01", "00", "{'a':1}", #"{"a":'x'}"#, "NaN", "[Infinity]", "-Infinity",
        "[\"a\u{1}b\"]", "[\"tab\there\"]", "[\"line\nbreak\"]", #"["\ud800"]"#, #"["\udc00"]"#, #"["\ud800\u0041"]"#, #"["\ud800\ud800"]"#,
        #"{"a":1} x"#, "[1] [2]", "{} {}", "1 2", "", " ", "{", "[1", #"{"a""#, #"{"a":}"#, #"{a:1}"#, "tru", "nul", "True",
        ".5", "5.", "1e", "1e+", "+1", "0x10", "1.5.2", #"["\x"]"#, #"["\u12G4"]"#, #"["\u12"]"#, "\"unterminated",
        "[1 2]", #"{"a" 1}"#, #"{"a":1 "b":2}"#, "// c\n1", "/* c */ 1", "\u{FEFF}{}", "[\"\u{7F}\"]x",
    ])
    func rejects(_ text: String) {
        let error = parseError(text)
        #expect(error?.code == .malformedBody)
        #expect(error?.field == "body")
    }

    @Test("text that is not UTF-8 is malformed", arguments: [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0xFF]])
    func invalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: CheckoutError.self) { try OrderedJSON.parse(Data(bytes)) }
    }

    @Test("escapes decode, surrogate pairs included")
    func escapes() throws {
        let value = try parse(#"["\ud83d\udcb3", "\u00e9\u4E2D", "\"\\\/\b\f\n\r\t", "\u0000", "é中💳"]"#)
        #expect(value.arrayValue?.compactMap(\.stringValue) == ["💳", "é中", "\"\\/\u{8}\u{C}\n\r\t", "\u{0}", "é中💳"])
    }

    @Test("whitespace around tokens and top-level scalars are accepted")
    func whitespaceAndScalars() throws {
        #expect(try parse(" \t\r\n{ \"a\" : [ 1 , true ] }\n") == .object([.init(key: "a", value: .array([.number("1"), .bool(true)]))]))
        #expect(try parse("\"x\"") == .string("x"))
        #expect(try parse("null") == .null)
        #expect(try parse("-1.5e3") == .number("-1.5e3"))
        #expect(try parse("{}") == .object([]))
        #expect(try parse("[]") == .array([]))
    }

    @Test("nesting deeper than the limit is malformed")
    func depth() throws {
        let deep = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try parse(deep).arrayValue != nil)
        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(parseError(tooDeep)?.code == .malformedBody)
        #expect(parseError(#"{"a":{"b":{}}}"#, maxDepth: 2)?.code == .malformedBody)
        #expect(try parse(#"{"a":{"b":1}}"#, maxDepth: 2)["a"]?["b"] == .number("1"))
        // Far deeper than any stack allows is refused, not a crash.
        #expect(parseError(String(repeating: "[", count: 100_000))?.code == .malformedBody)
    }

    @Test("serialization escapes minimally")
    func serialization() {
        let value = OrderedJSON.object([
            .init(key: "q\"b\\", value: .string("a/b \u{1}\u{1F}\u{8}\u{C}\n\r\t é 中 💳 \u{7F}")),
            .init(key: "n", value: .number("1.50")),
            .init(key: "l", value: .array([.bool(false), .null])),
        ])
        let text = String(decoding: value.serialized(), as: UTF8.self)
        #expect(text == #"{"q\"b\\":"a/b \u0001\u001f\b\f\n\r\t é 中 💳 \#u{7F}","n":1.50,"l":[false,null]}"#)
    }

    @Test("parse(serialized(x)) == x", arguments: [
        OrderedJSON.object([.init(key: "z", value: .number("1.50")), .init(key: "a", value: .string("مرحبا \"world\"\n\u{0}")),
                            .init(key: "nested", value: .object([.init(key: "b", value: .array([.null, .bool(true), .number("-0e0")]))]))]),
        .array([]), .object([]), .string(""), .number("1e2"), .bool(false), .null,
        .array([.string("💳"), .string("\u{2028}\u{FEFF}"), .object([.init(key: "", value: .string("empty key"))])]),
    ])
    func roundTrip(_ value: OrderedJSON) throws {
        #expect(try OrderedJSON.parse(value.serialized()) == value)
    }

    @Test("parsed documents serialize to the same value")
    func parsedRoundTrip() throws {
        let text = #"{ "apple_header": {"transactionId":"x", "ephemeralPublicKey":"y/z", "publicKeyHash":"h"}, "amount": 1000, "pi": 3.140 }"#
        let value = try parse(text)
        #expect(try OrderedJSON.parse(value.serialized()) == value)
        #expect(String(decoding: value.serialized(), as: UTF8.self)
            == #"{"apple_header":{"transactionId":"x","ephemeralPublicKey":"y/z","publicKeyHash":"h"},"amount":1000,"pi":3.140}"#)
    }
}
