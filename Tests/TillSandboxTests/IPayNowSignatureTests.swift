import Foundation
import Testing
@testable import TillSandbox

/// The emulator's signer against the real server-signed messages and the computed cross-border
/// presign vectors (`Fixtures/ipaynow`, each naming its vendor source).
@Suite("iPayNow emulator: signatures")
struct IPayNowSignatureTests {
    typealias Signature = IPayNowEmulator.Signature

    static func excluded(_ rule: String) -> Set<String> {
        rule == "signType_EXCLUDED" ? Signature.responseExcluded : Signature.domestic100Excluded
    }

    @Test("all 16 real server-signed messages verify under their rule, and only under it")
    func realMessagesVerify() throws {
        let messages = try IPayNowFixtures.realMessages()
        #expect(messages.count == 16)
        for (file, message) in messages {
            #expect(!message.source.isEmpty, "\(file) \(message.id) names no source")
            #expect(!message.app_key_source.isEmpty)
            let fields = try IPayNowForm.parse(message.raw_body).get()
            let rule = Self.excluded(message.rule)
            #expect(Signature.canonical(fields, excluding: rule) == message.string_to_sign, "\(file) \(message.id)")
            #expect(Signature.sign(fields, appKey: message.app_key, excluding: rule) == message.expected_signature, "\(file) \(message.id)")
            #expect(Signature.verify(fields, appKey: message.app_key, signatureField: "signature", excluding: rule), "\(file) \(message.id)")
            let other = message.rule == "signType_EXCLUDED" ? Signature.domestic100Excluded : Signature.responseExcluded
            #expect(!Signature.verify(fields, appKey: message.app_key, signatureField: "signature", excluding: other), "\(file) \(message.id)")
            #expect(!Signature.verify(fields, appKey: message.app_key + "x", signatureField: "signature", excluding: rule))
        }
    }

    @Test("every real message is refused once tampered: each signed value changed, or the signature changed")
    func realMessagesTampered() throws {
        for (file, message) in try IPayNowFixtures.realMessages() {
            let fields = try IPayNowForm.parse(message.raw_body).get()
            let rule = Self.excluded(message.rule)
            let signed = fields.keys.filter { !rule.contains($0) && !(fields[$0] ?? "").isEmpty }
            #expect(!signed.isEmpty)
            for key in signed {
                var tampered = fields
                tampered[key] = (fields[key] ?? "") + "1"
                #expect(!Signature.verify(tampered, appKey: message.app_key, signatureField: "signature", excluding: rule),
                        "\(file) \(message.id): \(key) changed")
            }
            var added = fields
            added["extraField"] = "1"
            #expect(!Signature.verify(added, appKey: message.app_key, signatureField: "signature", excluding: rule))
            var badSignature = fields
            let signature = message.expected_signature
            badSignature["signature"] = String(signature.dropLast()) + (signature.last == "0" ? "1" : "0")
            #expect(!Signature.verify(badSignature, appKey: message.app_key, signatureField: "signature", excluding: rule))
            var upper = fields
            upper["signature"] = signature.uppercased()
            #expect(Signature.verify(upper, appKey: message.app_key, signatureField: "signature", excluding: rule))
        }
    }

    @Test("the cross-border presign vectors: string to sign, signature, payData as the iOS demo builds it")
    func presignVectors() throws {
        let vectors = try IPayNowFixtures.presign()
        #expect(!vectors.source.isEmpty)
        #expect(Set(vectors.excluded_from_signature) == Signature.requestExcluded)
        #expect(vectors.cases.count == 4)
        for vector in vectors.cases {
            #expect(Signature.md5Hex(vectors.app_key) == vector.md5_appKey)
            #expect(Signature.canonical(vector.fields, excluding: Signature.requestExcluded) == vector.presign_string, "\(vector.id)")
            #expect(Signature.sign(vector.fields, appKey: vectors.app_key, excluding: Signature.requestExcluded) == vector.mhtSignature)
            // The plugin adds deviceType and the signature fields: none of them changes the signature.
            var sent = vector.fields
            sent["deviceType"] = "01"
            sent["mhtSignType"] = "MD5"
            sent["mhtSignature"] = vector.mhtSignature
            #expect(Signature.verify(sent, appKey: vectors.app_key, signatureField: "mhtSignature", excluding: Signature.requestExcluded))
            #expect(IPayNowHarness.payData(vector.fields, app: .init(appId: vector.fields["appId"] ?? "", appKey: vectors.app_key))
                    == vector.payData, "\(vector.id)")
            if let encoded = vector.mhtReserved_encoded_after_signing {
                #expect(FormEncoding.escape(vector.fields["mhtReserved"] ?? "") == encoded)
            }
        }
    }

    @Test("the plugin stand-in takes each vector's payData as the app hands it over, and refuses it tampered",
          .timeLimit(.minutes(1)))
    func presignVectorsThroughTheStandIn() async throws {
        let vectors = try IPayNowFixtures.presign()
        for vector in vectors.cases {
            // The vectors share one order number: a fresh emulator each.
            try await IPayNowHarness.with { harness in
                let result = try await harness.plugin(vector.payData, outcome: .cancel)
                #expect(result.result == "Cancel", "\(vector.id): \(result.serverResponseMsg ?? "")")
                #expect(result.serverResponseCode == "A001")
                let orders = await harness.emulator.orderSummaries()
                #expect(orders.first?.mhtOrderNo == vector.fields["mhtOrderNo"])
                if vector.fields["mhtReserved"] != nil {
                    // Decoded once more: the value iPayNow keeps (and returns) is the one that was signed.
                    let key = IPayNowEmulator.key(vector.fields["appId"] ?? "", vector.fields["mhtOrderNo"] ?? "")
                    #expect(await harness.emulator.orders[key]?.fields["mhtReserved"] == vector.fields["mhtReserved"])
                }
            }
            try await IPayNowHarness.with { harness in
                let tampered = vector.payData.replacingOccurrences(of: "mhtOrderAmt=\(vector.fields["mhtOrderAmt"] ?? "")&",
                                                                   with: "mhtOrderAmt=1&")
                #expect(tampered != vector.payData)
                let result = try await harness.plugin(tampered)
                #expect(result.result == "Fail")
                #expect(result.erroCode == "PE004")
                #expect(result.erroInfo?.hasPrefix("mhtSignature: does not match") == true)
                #expect(result.erroInfo?.contains("mhtOrderAmt=1&") == true)
                #expect(await harness.emulator.orderSummaries().isEmpty)
            }
        }
    }

    @Test("mhtReserved not URL-encoded after signing breaks the signature, as the guide warns")
    func reservedNotEncoded() async throws {
        try await IPayNowHarness.with { harness in
            var fields = IPayNowHarness.presignFields()
            fields["mhtReserved"] = "a=1&b=2*"
            let signature = Signature.sign(fields, appKey: IPayNowHarness.demoApp.appKey, excluding: Signature.requestExcluded)
            let raw = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
                + "&mhtSignType=MD5&mhtSignature=" + signature
            let result = try await harness.plugin(raw)
            #expect(result.result == "Fail")
            #expect(result.erroInfo?.hasPrefix("mhtSignature:") == true)
        }
    }
}
