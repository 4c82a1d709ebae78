import Foundation
import Testing
import TillGatewayKit
@testable import TillIPayNowServer

/// ``IPayNowMessage``: the real messages read (status, amount), and the form's strictness (duplicates,
/// `+`, percent escapes) on messages signed by the tests' own signer.
@Suite("iPayNow messages")
struct MessageTests {
    @Test("the real messages read: the rule, tradeStatus or transStatus, mhtOrderAmt in CNY (156)", arguments: RealVector.all)
    func readsRealMessage(_ vector: RealVector) throws {
        // The 2015 MQ001 answer's mhtOrderNo (`20151102100843_LAzqDtZklJhwmdBO`) holds an underscore: read.
        let message = try IPayNowMessage(body: vector.body, appKey: vector.app_key, gateway: "ipaynow")
        #expect(message.rule == vector.expectedRule)
        let status = vector.fields_decoded["tradeStatus"] ?? vector.fields_decoded["transStatus"]
        #expect(message.tradeStatus == status)
        #expect(message.tradeStatus != nil)
        if let amount = vector.fields_decoded["mhtOrderAmt"] {
            // Every real message is domestic: mhtCurrencyType is the numeric 156, no mhtAmtCurrFlag.
            #expect(vector.fields_decoded["mhtCurrencyType"] == "156")
            #expect(message.orderAmount == Setup.money(try #require(Int64(amount)), "CNY"))
        } else {
            #expect(message.orderAmount == nil, "the refund family carries amount, not mhtOrderAmt")
        }
        #expect(message.values["appId"] == vector.app_id)
        #expect(message["signature"] == vector.expected_signature)
        // Empty fields read as absent (they are not signed).
        for (name, value) in vector.fields_decoded where value.isEmpty {
            #expect(message[name] == nil, "\(name)")
            #expect(message.values[name] == nil, "\(name)")
        }
    }

    @Test("the real statuses: A001 paid N001s, A004 accepted refunds, A002 failed refunds")
    func realStatuses() throws {
        let byID = Dictionary(uniqueKeysWithValues: RealVector.all.map { ($0.id, $0) })
        func status(_ id: String) throws -> String? {
            let vector = try #require(byID[id])
            return try IPayNowMessage(body: vector.body, appKey: vector.app_key).tradeStatus
        }
        #expect(try status("server_N001_notify_v1_0_0") == "A001")
        #expect(try status("server_N001_notify_legacy_2015") == "A001")
        #expect(try status("server_R001_refund_response") == "A004")
        #expect(try status("R001_response_tradeStatus_A002") == "A002")
        #expect(IPayNowCodes.paymentStatus("A001") == .paid)
        #expect(IPayNowCodes.paymentStatus("A00I") == .pending)
        #expect(IPayNowCodes.paymentStatus("A002") == .failed)
        #expect(IPayNowCodes.paymentStatus("A003") == .pending)
        #expect(IPayNowCodes.paymentStatus("A004") == .pending)
        #expect(IPayNowCodes.paymentStatus("A005") == .failed)
        #expect(IPayNowCodes.paymentStatus("A006") == .cancelled)
        #expect(IPayNowCodes.paymentStatus("A009").rawValue == "ipaynow_status_A009")
        #expect(!IPayNowCodes.paymentStatus("A009").isKnown)
    }

    @Test("orderAmount: flag 1 in mhtCurrencyType's minor units, flag 0 in RMB fen, 156 is CNY, an unknown currency says nothing")
    func orderAmount() throws {
        func amount(_ pairs: [(String, String)]) throws -> Money? {
            try IPayNowMessage(body: TestSigner.message(pairs, key: Setup.appKey), appKey: Setup.appKey).orderAmount
        }
        #expect(try amount(Setup.crossBorderN001()) == Setup.money(1050, "NZD"))
        #expect(try amount(Setup.crossBorderN001(amount: "500", currency: "JPY")) == Setup.money(500, "JPY"))
        // Flag 0: what the customer paid in CNY (cashAmont), the README labelling mhtOrderAmt "外币金额".
        #expect(try amount(Setup.crossBorderN001(amount: "10000", currency: "USD", flag: "0")) == Setup.money(4860, "CNY"))
        #expect(try amount([("funcode", "N001"), ("mhtOrderAmt", "1"), ("mhtCurrencyType", "156"), ("tradeStatus", "A001")])
            == Setup.money(1, "CNY"))
        #expect(try amount([("funcode", "N001"), ("mhtOrderAmt", "1"), ("mhtCurrencyType", "NZD")]) == Setup.money(1, "NZD"))
        #expect(try amount(Setup.crossBorderN001(currency: "XYZ")) == nil)
        #expect(try amount(Setup.crossBorderN001(flag: "2")) == nil)
        #expect(try amount([("funcode", "N001"), ("mhtCurrencyType", "NZD")]) == nil)
    }

    @Test("a field given twice is refused, naming it, before anything is verified")
    func duplicates() throws {
        let vector = try #require(RealVector.all.first { $0.id == "server_N001_notify_v1_0_0" })
        for (suffix, name) in [("&appId=150753082825470", "appId"), ("&transStatus=A002", "transStatus"),
                               ("&signature=579ada44a4a2e0dc074854837c995e45", "signature"), ("&mhtSubMchId=", "mhtSubMchId")] {
            let body = Data((vector.raw_body + suffix).utf8)
            let error = #expect(throws: CheckoutError.self) { _ = try IPayNowMessage(body: body, appKey: vector.app_key) }
            #expect(error?.code == .duplicateField, "\(name)")
            #expect(error?.field == "body.\(name)")
        }
        let named = #expect(throws: CheckoutError.self) {
            _ = try IPayNowMessage(body: Data((vector.raw_body + "&funcode=N001").utf8), appKey: vector.app_key, field: "notification")
        }
        #expect(named?.field == "notification.funcode")
    }

    @Test("+ is a space (as the Python and Java SDKs decode it), %2B a plus; the signature is over the decoded values")
    func plusIsSpace() throws {
        var pairs = Setup.crossBorderN001()
        pairs[3] = ("mhtOrderName", "Green tea+milk")
        pairs.append(("signType", "MD5"))
        let signature = TestSigner.sign(pairs, excluding: TestSigner.legacy, key: Setup.appKey)
        // Written by hand: the space as `+`, the plus as `%2B`.
        let body = TestForm.encode(pairs).replacingOccurrences(of: "Green%20tea%2Bmilk", with: "Green+tea%2Bmilk") + "&signature=\(signature)"
        #expect(body.contains("mhtOrderName=Green+tea%2Bmilk"))
        let message = try IPayNowMessage(body: Data(body.utf8), appKey: Setup.appKey)
        #expect(message["mhtOrderName"] == "Green tea+milk")
        // Read as a literal `+`, the same bytes would be another name: the signature would not match.
        let literal = body.replacingOccurrences(of: "Green+tea%2Bmilk", with: "Green%2Btea%2Bmilk")
        let error = #expect(throws: CheckoutError.self) { _ = try IPayNowMessage(body: Data(literal.utf8), appKey: Setup.appKey) }
        #expect(error?.code == .signatureMismatch)
    }

    @Test("a bad percent escape, bytes that are not UTF-8, a nameless field: malformed_body naming the body")
    func badEscapes() throws {
        let vector = try #require(RealVector.all.first { $0.id == "server_N001_notify_legacy_2015" })
        for bad in ["%ZZ", "%G0", "%E6%B8", "%C0%AF", "%FF"] {
            let body = vector.raw_body.replacingOccurrences(of: "mhtOrderName=1863", with: "mhtOrderName=\(bad)1863")
            let error = #expect(throws: CheckoutError.self, "\(bad)") {
                _ = try IPayNowMessage(body: Data(body.utf8), appKey: vector.app_key, field: "body")
            }
            #expect(error?.code == .malformedBody, "\(bad)")
            #expect(error?.field == "body", "\(bad)")
        }
        for tail in ["%", "%4"] {
            let error = #expect(throws: CheckoutError.self, "\(tail)") {
                _ = try IPayNowMessage(body: Data((vector.raw_body + tail).utf8), appKey: vector.app_key)
            }
            #expect(error?.code == .malformedBody, "\(tail)")
        }
        let nameless = #expect(throws: CheckoutError.self) {
            _ = try IPayNowMessage(body: Data((vector.raw_body + "&=1").utf8), appKey: vector.app_key)
        }
        #expect(nameless?.code == .malformedBody)
    }

    @Test("a message that is not iPayNow's (mhtSignature, or no signature): missing_field body.signature")
    func notSignedByIPayNow() {
        let request = Data("funcode=MQ001&appId=1&mhtOrderNo=a&mhtCharset=UTF-8&mhtSignType=MD5&mhtSignature=0123".utf8)
        let error = #expect(throws: CheckoutError.self) { _ = try IPayNowMessage(body: request, appKey: Setup.appKey) }
        #expect(error?.code == .missingField)
        #expect(error?.field == "body.signature")
        let bare = #expect(throws: CheckoutError.self) { _ = try IPayNowMessage(body: Data("appId=1".utf8), appKey: Setup.appKey) }
        #expect(bare?.field == "body.signature")
        let empty = #expect(throws: CheckoutError.self) { _ = try IPayNowMessage(body: Data(), appKey: Setup.appKey) }
        #expect(empty?.field == "body.signature")
    }

    @Test("documented fields are read within their rules, after the signature: the field at fault is named")
    func documentedFieldRules() throws {
        for (name, value, code) in [("mhtOrderNo", "order&42", CheckoutError.Code.invalidField), ("tradeStatus", "A0011", .fieldTooLong),
                                    ("mhtOrderAmt", "10.50", .invalidField), ("appId", "1480321334800229=", .invalidField),
                                    ("funcode", "N01", .invalidField), ("payChannelType", "9O", .invalidField)] {
            let pairs = Setup.crossBorderN001().map { ($0.0, $0.0 == name ? value : $0.1) }
            let error = #expect(throws: CheckoutError.self, "\(name)") {
                _ = try IPayNowMessage(body: TestSigner.message(pairs, key: Setup.appKey), appKey: Setup.appKey)
            }
            #expect(error?.code == code, "\(name)")
            #expect(error?.field == "body.\(name)")
        }
        // Both status names, disagreeing.
        let both = Setup.crossBorderN001() + [("transStatus", "A002")]
        let error = #expect(throws: CheckoutError.self) {
            _ = try IPayNowMessage(body: TestSigner.message(both, key: Setup.appKey), appKey: Setup.appKey)
        }
        #expect(error?.field == "body.transStatus")
        // Both, agreeing: read.
        let agreeing = Setup.crossBorderN001() + [("transStatus", "A001")]
        #expect(try IPayNowMessage(body: TestSigner.message(agreeing, key: Setup.appKey), appKey: Setup.appKey).tradeStatus == "A001")
        // An undocumented field is kept, never checked.
        let extra = Setup.crossBorderN001() + [("mhtReserved", "a1-b2 备注 100%")]
        let message = try IPayNowMessage(body: TestSigner.message(extra, key: Setup.appKey), appKey: Setup.appKey)
        #expect(message["mhtReserved"] == "a1-b2 备注 100%")
        #expect(message.values["mhtReserved"] == nil)
        // But no name or value may hold '&' or '=' once decoded, even a signed one: the signed string could be re-cut.
        for (name, value) in [("mhtReserved", "a=1&b=2"), ("mhtNote", "tea&milk")] {
            let pairs = Setup.crossBorderN001() + [(name, value)]
            let refused = #expect(throws: CheckoutError.self) {
                _ = try IPayNowMessage(body: TestSigner.message(pairs, key: Setup.appKey), appKey: Setup.appKey)
            }
            #expect(refused?.code == .invalidField)
            #expect(refused?.field == "body.\(name)")
        }
    }

    @Test("a 1.0.0 message signed by the tests' signer (signType signed) reads under the versioned rule")
    func versionedMessage() throws {
        let pairs = Setup.crossBorderN001().map { $0.0 == "tradeStatus" ? ("transStatus", $0.1) : $0 } + [("version", "1.0.0")]
        let message = try IPayNowMessage(body: TestSigner.message(pairs, key: Setup.appKey, versioned: true), appKey: Setup.appKey)
        #expect(message.rule == .versionedMessage)
        #expect(message.tradeStatus == "A001")
        // Signed as legacy (signType left out) but carrying version: refused.
        let error = #expect(throws: CheckoutError.self) {
            _ = try IPayNowMessage(body: TestSigner.message(pairs, key: Setup.appKey, versioned: false), appKey: Setup.appKey)
        }
        #expect(error?.code == .signatureMismatch)
    }
}
