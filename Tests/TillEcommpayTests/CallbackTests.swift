import Foundation
import Testing
import TillGatewayKit
@testable import TillEcommpayServer

/// ``EcommpayCallback`` on the 30 callback bodies of the SDKs' tests: accepted or refused exactly as each test
/// expects (signature at `signature` or `general.signature`, every `signature` member removed before signing,
/// undefined when neither is there); changed copies refused.
@Suite("ecommpay callbacks")
struct CallbackTests {
    /// What the verifier made of `body`.
    static func outcome(_ body: Data, secret: String) -> (CallbackCase.Outcome?, CheckoutError?) {
        do {
            _ = try EcommpayCallback(body, secret: secret)
            return (.valid, nil)
        } catch {
            switch (error.code, error.field) {
            case (.signatureMismatch, "body.signature"): return (.invalid, error)
            case (.missingField, "body.signature"): return (.undefined, error)
            default: return (nil, error)
            }
        }
    }

    @Test("the fixture holds the 30 bodies: python 6, php 9, go 5, java 8, js 2")
    func counts() {
        let all = CallbackCase.all
        #expect(all.count == 30)
        for (prefix, count) in [("py_", 6), ("php_", 9), ("go_", 5), ("java_", 8), ("js_", 2)] {
            #expect(all.filter { $0.id.hasPrefix(prefix) }.count == count, "\(prefix)")
        }
        #expect(all.filter { $0.expected == .valid }.count == 21)
        #expect(all.filter { $0.expected == .undefined }.count == 6)
        #expect(all.filter { $0.expected == .invalid }.count == 3)
    }

    @Test("each body is accepted or refused as its SDK test expects", arguments: CallbackCase.all)
    func sdkExpectation(_ item: CallbackCase) {
        let (outcome, error) = Self.outcome(Data(item.body.utf8), secret: item.secret)
        #expect(outcome == item.expected, "SDK test expects: \(item.expectedBySDKTest); got \(error.map(String.init(describing:)) ?? "valid")")
        if item.expected == .undefined { #expect(error?.category == .invalidInput) }
        if item.expected == .invalid { #expect(error?.category == .verification) }
    }

    /// The one body the Python SDK's master and PyPI 1.0.6 disagree on (a JSON `null`): Till accepts it, as master does.
    @Test("the null-carrying body PyPI 1.0.6 rejects is valid (master's reading)")
    func nullBody() throws {
        let item = try #require(CallbackCase.all.first { $0.id == "py_cb_multilevel_lists_null" })
        #expect(item.pypi106 == "invalid")
        #expect(item.pythonMaster == "valid")
        #expect(Self.outcome(Data(item.body.utf8), secret: item.secret).0 == .valid)
        let others = CallbackCase.all.filter { $0.pypi106 != $0.pythonMaster }.map(\.id)
        #expect(others == ["py_cb_multilevel_lists_null"])
    }

    @Test("a valid body under another secret is refused", arguments: CallbackCase.all.filter { $0.expected == .valid })
    func wrongSecret(_ item: CallbackCase) {
        #expect(Self.outcome(Data(item.body.utf8), secret: item.secret + "1").0 == .invalid)
    }

    /// The first leaf (depth first, in order) that is not a signature, changed.
    static func tamperFirstLeaf(_ value: OrderedJSON, done: inout Bool) -> OrderedJSON {
        switch value {
        case .object(let members):
            return .object(members.map { member in
                guard !done, member.key != "signature" else { return member }
                return .init(key: member.key, value: tamperFirstLeaf(member.value, done: &done))
            })
        case .array(let items):
            return .array(items.map { done ? $0 : tamperFirstLeaf($0, done: &done) })
        case .string(let text):
            done = true
            return .string(text + "1")
        case .number(let text):
            done = true
            return .number(text == "0" ? "1" : text + "0")
        case .bool(let flag):
            done = true
            return .bool(!flag)
        case .null:
            done = true
            return .string("x")
        }
    }

    @Test("a valid body changed anywhere is refused: a leaf changed, a member added, the signature changed or removed",
          arguments: CallbackCase.all.filter { $0.expected == .valid })
    func tampered(_ item: CallbackCase) throws {
        let body = try OrderedJSON.parse(Data(item.body.utf8))
        var done = false
        let changed = Self.tamperFirstLeaf(body, done: &done)
        #expect(done)
        #expect(Self.outcome(changed.serialized(), secret: item.secret).0 == .invalid)

        guard case .object(let members) = body else { Issue.record("not an object"); return }
        let added = OrderedJSON.object(members + [.init(key: "amount", value: .number("1"))])
        #expect(Self.outcome(added.serialized(), secret: item.secret).0 == .invalid)

        // The signature itself, one character changed.
        let signature = try #require(body["signature"]?.stringValue ?? body["general"]?["signature"]?.stringValue)
        let flipped = String(signature.prefix(10)) + (signature.dropFirst(10).first == "A" ? "B" : "A") + signature.dropFirst(11)
        let reSigned = item.body.replacingOccurrences(of: signature.replacingOccurrences(of: "/", with: "\\/"), with: flipped)
            .replacingOccurrences(of: signature, with: flipped)
        #expect(reSigned != item.body)
        #expect(Self.outcome(Data(reSigned.utf8), secret: item.secret).0 == .invalid)

        // Without any signature: undefined.
        #expect(Self.outcome(EcommpaySigner.removingSignatures(body).serialized(), secret: item.secret).0 == .undefined)
    }

    @Test("the signature is read from `signature`, else `general.signature`; nested elsewhere it is undefined")
    func whereSignatureIs() {
        let members = J.members(("payment", J.object(("id", .string("p-1")), ("status", .string("success")))))
        let top = TestSigner.signedBody(members, secret: "k")
        let general = TestSigner.signedBody(members + J.members(("general", J.object(("project_id", J.int(7))))), secret: "k", atGeneral: true)
        #expect(Self.outcome(top, secret: "k").0 == .valid)
        #expect(Self.outcome(general, secret: "k").0 == .valid)
        let signature = TestSigner.sign(.object(members), secret: "k")
        let nested = J.object(("payment", J.object(("id", .string("p-1")), ("status", .string("success")), ("signature", .string(signature)))))
        #expect(Self.outcome(nested.serialized(), secret: "k").0 == .undefined)
        // Both: the top-level one is used, both are removed before signing.
        let both = J.object(("payment", members[0].value), ("general", J.object(("signature", .string("anything")))), ("signature", .string(signature)))
        #expect(Self.outcome(both.serialized(), secret: "k").0 == .valid)
        // A signature that is not a string, or an empty one, is no signature.
        for value in [OrderedJSON.number("1"), .null, .string(""), .bool(true)] {
            let odd = J.object(("payment", members[0].value), ("signature", value))
            #expect(Self.outcome(odd.serialized(), secret: "k").0 == .undefined)
        }
    }

    @Test("a nested signature member is removed before signing (the signer never sees it)")
    func nestedSignatureRemoved() {
        let inner = J.members(("payment", J.object(("id", .string("p-1")), ("signature", .string("provider's own")))))
        let signature = TestSigner.sign(TestSigner.unsigned(.object(inner)), secret: "k")
        let body = OrderedJSON.object(inner + J.members(("signature", .string(signature))))
        #expect(Self.outcome(body.serialized(), secret: "k").0 == .valid)
        // Signed with the nested member kept, it does not verify.
        let kept = OrderedJSON.object(inner + J.members(("signature", .string(TestSigner.sign(.object(inner), secret: "k")))))
        #expect(Self.outcome(kept.serialized(), secret: "k").0 == .invalid)
    }

    @Test("not a JSON object, not JSON, a duplicate key: refused before any signature is checked")
    func malformed() {
        for (text, code, field) in [("[1]", CheckoutError.Code.malformedBody, "body"), ("nope", .malformedBody, "body"),
                                    ("\"s\"", .malformedBody, "body"),
                                    (#"{"payment":{"id":"a","id":"b"},"signature":"x"}"#, .duplicateField, "body.payment.id")] {
            let (outcome, error) = Self.outcome(Data(text.utf8), secret: "k")
            #expect(outcome == nil, "\(text)")
            #expect(error?.code == code, "\(text)")
            #expect(error?.field == field, "\(text)")
        }
    }

    @Test("the accessors read project, payment, status, operation, cascading and sum")
    func accessors() throws {
        let members = J.members(
            ("project_id", J.int(12345)),
            ("payment", J.object(("id", .string("att-1")), ("status", .string("decline")), ("cascading_with_redirect", .bool(true)),
                                 ("sum", J.object(("amount", J.int(1999)), ("currency", .string("EUR")))))),
            ("operation", J.object(("id", J.int(17)), ("type", .string("sale")), ("status", .string("decline")), ("code", .string("20100")),
                                   ("message", .string("Insufficient funds")))))
        let callback = try EcommpayCallback(TestSigner.signedBody(members, secret: "k"), secret: "k")
        #expect(callback.projectId == "12345")
        #expect(callback.paymentId == "att-1")
        #expect(callback.paymentStatus == "decline")
        #expect(callback.cascadingWithRedirect)
        #expect(callback.paymentSum == Setup.money(1999, "EUR"))
        #expect(callback.operationType == "sale")
        #expect(callback.operationStatus == "decline")
        #expect(callback.operationCode == "20100")
        #expect(callback.operationMessage == "Insufficient funds")
        #expect(callback.operationId == "17")
        let general = try EcommpayCallback(TestSigner.signedBody(J.members(("general", J.object(("project_id", .string("9")), ("payment_id", .string("g-1"))))),
                                                                 secret: "k", atGeneral: true), secret: "k")
        #expect(general.projectId == "9")
        #expect(general.paymentId == "g-1")
        #expect(!general.cascadingWithRedirect)
        #expect(general.paymentSum == nil)
    }
}
