import Foundation
import Testing
import TillGatewayKit
@testable import TillEcommpayServer

/// ``EcommpaySignatureString`` and ``EcommpaySigner`` on the 27 official vectors of the five SDKs' tests,
/// and on the computed inputs where the SDKs disagree (Till follows the Python SDK's GitHub master).
@Suite("ecommpay signature vectors")
struct SignatureVectorTests {
    @Test("the fixtures hold the 27 official vectors, 25 of them signed, each naming its source")
    func counts() {
        #expect(SignatureVector.all.count == 27)
        #expect(SignatureVector.signed.count == 25)
        #expect(Set(SignatureVector.all.map(\.id)).count == 27)
        for vector in SignatureVector.all {
            #expect(vector.source.hasPrefix("ITECOMMPAY/paymentpage-sdk-"), "\(vector.id)")
            #expect(vector.source.contains("@"), "\(vector.id)")
        }
        #expect(DivergenceCase.all.count == 14)
    }

    @Test("the string to sign of every official vector", arguments: SignatureVector.all)
    func string(_ vector: SignatureVector) {
        #expect(EcommpaySignatureString.string(of: vector.params) == vector.expectedString)
        // The tests' own signer agrees, so the expected values below do not depend on the module.
        #expect(TestSigner.string(vector.params) == vector.expectedString)
    }

    @Test("the signature of every signed official vector", arguments: SignatureVector.signed)
    func signature(_ vector: SignatureVector) throws {
        let secret = try #require(vector.secret)
        let expected = try #require(vector.expectedSignature)
        #expect(EcommpaySigner.sign(vector.params, secret: secret) == expected)
        #expect(EcommpaySigner.sign(string: vector.expectedString, secret: secret) == expected)
        #expect(EcommpaySigner.isValid(expected, of: vector.params, secret: secret))
        #expect(!EcommpaySigner.isValid(expected, of: vector.params, secret: secret + "x"))
        #expect(TestSigner.hmac(vector.expectedString, secret: secret) == expected)
    }

    @Test("a callback vector's parameters sign to the signature its body carries: every signature removed first",
          arguments: SignatureVector.all.filter { $0.kind == "callback" })
    func callbackVector(_ vector: SignatureVector) throws {
        let secret = try #require(vector.secret)
        let signature = try #require(vector.expectedSignature)
        // Put the signature back where the PHP format samples carry it and let the signer take it out again.
        guard case .object(var members) = vector.params else { Issue.record("not an object"); return }
        let index = try #require(members.firstIndex { $0.key == "general" })
        var general = try #require(members[index].value.objectMembers)
        general.insert(.init(key: "signature", value: .string(signature)), at: 0)
        members[index] = .init(key: "general", value: .object(general))
        let body = OrderedJSON.object(members)
        #expect(EcommpaySigner.removingSignatures(body) == vector.params)
        #expect(EcommpaySigner.isValid(signature, of: EcommpaySigner.removingSignatures(body), secret: secret))
        #expect(try EcommpayCallback(body.serialized(), secret: secret).body == body)
    }

    /// PyPI's `ecommpay-sdk` 1.0.6 renders `null` as `None` and does not double `:` in keys; GitHub master (35ed5ec)
    /// renders `null` empty and doubles `:`. Till follows master: it passes the official vector PyPI 1.0.6 fails.
    @Test("where PyPI 1.0.6 differs from master on an official vector, Till gives master's value")
    func pypiDiffers() throws {
        let differing = SignatureVector.all.filter { $0.pypi106 == false }
        #expect(differing.map(\.id) == ["py_multilevel_lists_null"])
        for vector in differing {
            #expect(vector.pythonMaster == true)
            let secret = try #require(vector.secret)
            #expect(EcommpaySigner.sign(vector.params, secret: secret) == vector.expectedSignature)
            #expect(EcommpaySignatureString.string(of: vector.params).contains("errors:1:description:;"))
            #expect(!EcommpaySignatureString.string(of: vector.params).contains("None"))
            // What PyPI 1.0.6 signs instead is another signature.
            let pypiString = vector.expectedString.replacingOccurrences(of: "errors:1:description:;", with: "errors:1:description:None;")
            #expect(EcommpaySigner.sign(string: pypiString, secret: secret) != vector.expectedSignature)
        }
        // Every vector that carries a null leaf: null is empty.
        for vector in SignatureVector.all where vector.expectedString.contains(":;") || vector.expectedString.hasSuffix(":") {
            #expect(EcommpaySignatureString.string(of: vector.params) == vector.expectedString, "\(vector.id)")
        }
    }

    @Test("the computed divergence inputs give master's string and signature", arguments: DivergenceCase.all)
    func divergence(_ item: DivergenceCase) {
        #expect(EcommpaySignatureString.string(of: item.input) == item.expectedString)
        #expect(EcommpaySigner.sign(item.input, secret: item.secret) == item.expectedSignature)
        #expect(TestSigner.string(item.input) == item.expectedString)
    }

    @Test("PyPI 1.0.6 differs on null leaves and ':' in keys only; Till gives master's value for both")
    func pypiDivergences() {
        let differing = DivergenceCase.all.filter { $0.pypi106Same == false }.map(\.id).sorted()
        #expect(differing == ["div_colon_key_nested", "div_colon_key_top", "div_null_leaf"])
        #expect(EcommpaySignatureString.string(of: J.object(("k:x", .string("v")))) == "k::x:v")
        #expect(EcommpaySignatureString.string(of: J.object(("o", J.object(("k:x", .string("v")))))) == "o:k::x:v")
        #expect(EcommpaySignatureString.string(of: J.object(("a", .null), ("b", .string("x")))) == "a:;b:x")
        // Escaping keeps {"a:b": 1} and {"a": {"b": 1}} apart.
        #expect(EcommpaySignatureString.string(of: J.object(("a:b", J.int(1))))
            != EcommpaySignatureString.string(of: J.object(("a", J.object(("b", J.int(1)))))))
    }

    @Test("each rule on its own: null, '::', frame_mode at every level, lists by index, bools, empty containers, code-point order")
    func rules() {
        let cases: [(OrderedJSON, String)] = [
            (J.object(("a", .null)), "a:"),
            (J.object(("a:b", J.object(("c:d", .string("v"))))), "a::b:c::d:v"),
            (J.object(("frame_mode", .string("popup")),
                      ("o", J.object(("frame_mode", .string("x")), ("l", .array([J.object(("frame_mode", .string("y")), ("z", J.int(1)))]))))),
             "o:l:0:z:1"),
            (J.object(("l", .array([.string("a"), .array([.string("b"), .string("c")])]))), "l:0:a;l:1:0:b;l:1:1:c"),
            (J.object(("t", .bool(true)), ("f", .bool(false))), "f:0;t:1"),
            (J.object(("e", .object([])), ("l", .array([])), ("n", .array([.object([]), .array([])])), ("s", .string(""))), "s:"),
            (J.object(("items", .array((0...10).map { J.int(Int64($0)) }))),
             "items:0:0;items:1:1;items:10:10;items:2:2;items:3:3;items:4:4;items:5:5;items:6:6;items:7:7;items:8:8;items:9:9"),
            (J.object(("b", J.int(2)), ("B", J.int(1)), ("_", J.int(3)), ("é", J.int(4)), ("z", J.int(5))), "B:1;_:3;b:2;z:5;é:4"),
            (J.object(("a", J.object(("x", J.int(1)))), ("a-b", J.int(2))), "a-b:2;a:x:1"),
            (J.object(("\u{FF61}", J.int(1)), ("\u{1F600}", J.int(2))), "\u{FF61}:1;\u{1F600}:2"),
            (J.object(("a", .string("x;y:z")), ("b", .string("w"))), "a:x;y:z;b:w"),
            (J.object(("n", .number("12345678901234567890"))), "n:12345678901234567890"),
        ]
        for (input, expected) in cases {
            #expect(EcommpaySignatureString.string(of: input) == expected)
            #expect(TestSigner.string(input) == expected)
        }
        #expect(EcommpaySignatureString.ignoredKeys == ["frame_mode"])
    }

    @Test("the signature is standard Base64 with padding of the 64-byte HMAC-SHA512")
    func base64Shape() throws {
        let signature = EcommpaySigner.sign(string: "a:1", secret: "secret")
        #expect(signature.count == 88)
        #expect(signature.hasSuffix("=="))
        #expect(Data(base64Encoded: signature)?.count == 64)
        #expect(signature == TestSigner.hmac("a:1", secret: "secret"))
        // Non-ASCII secrets and strings are UTF-8.
        #expect(EcommpaySigner.sign(string: "d:café", secret: "ключ") == TestSigner.hmac("d:café", secret: "ключ"))
    }

    @Test("signed(_:): general.signature when there is a general object, else a top-level signature; an old signature replaced")
    func signedPlacement() throws {
        let gate = J.object(("general", J.object(("project_id", J.int(1)), ("payment_id", .string("p")))), ("payment", J.object(("amount", J.int(5)))))
        let signed = EcommpaySigner.signed(gate, secret: "s")
        #expect(signed["general"]?["signature"]?.stringValue == TestSigner.sign(gate, secret: "s"))
        #expect(signed["signature"] == nil)
        let flat = J.object(("payment_id", .string("p")), ("signature", .string("old")))
        let signedFlat = EcommpaySigner.signed(flat, secret: "s")
        #expect(signedFlat["signature"]?.stringValue == TestSigner.sign(J.object(("payment_id", .string("p"))), secret: "s"))
        #expect(signedFlat.objectMembers?.filter { $0.key == "signature" }.count == 1)
    }

    @Test("removingSignatures: every object level, lists not entered (master's __remove_param)")
    func removing() {
        let body = J.object(("signature", .string("a")), ("general", J.object(("signature", .string("b")), ("x", J.int(1)))),
                            ("list", .array([J.object(("signature", .string("c")))])))
        let expected = J.object(("general", J.object(("x", J.int(1)))), ("list", .array([J.object(("signature", .string("c")))])))
        #expect(EcommpaySigner.removingSignatures(body) == expected)
        #expect(TestSigner.unsigned(body) == expected)
    }
}
