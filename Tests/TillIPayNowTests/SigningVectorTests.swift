import Foundation
import Testing
import TillGatewayKit
@testable import TillIPayNowServer

/// The 16 real server-signed messages of `Fixtures/real-*.json` through ``IPayNowSigning``: each verifies
/// under the rule its own fields name, gives its exact signature, fails under the other rule, and a
/// tampered copy is refused.
@Suite("iPayNow signing: real server-signed messages")
struct SigningVectorTests {
    @Test("all 16 real messages are in the fixtures, each with its source and key")
    func fixturesComplete() throws {
        let vectors = try RealVector.load()
        #expect(vectors.count == 16)
        #expect(Set(vectors.map(\.id)).count == 16)
        for vector in vectors {
            #expect(!vector.app_key.isEmpty, "\(vector.id)")
            #expect(!vector.source.path.isEmpty, "\(vector.id)")
            // Every vector but the 2015 legacy N001 (whose repository is not identified; see the README) names repo@commit.
            if vector.id != "server_N001_notify_legacy_2015" {
                #expect(vector.source.repo != nil && vector.source.commit != nil, "\(vector.id)")
            }
        }
        // 8 under the 1.0.0 rule (7 N001, 1 MQ002), 8 under the legacy rule (2015 N001 and MQ001, 6 refund-family answers).
        #expect(vectors.filter { $0.expectedRule == .versionedMessage }.count == 8)
        #expect(vectors.filter { $0.expectedRule == .legacyMessage }.count == 8)
    }

    @Test("the rule read from the message's own fields is the one that verifies it; the exact signature is recomputed",
          arguments: RealVector.all)
    func verifiesUnderItsOwnRule(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        #expect(IPayNowSigning.rule(of: fields) == vector.expectedRule)
        #expect(IPayNowSigning.canonical(fields, rule: vector.expectedRule) == vector.string_to_sign)
        #expect(IPayNowSigning.sign(fields, rule: vector.expectedRule, appKey: vector.app_key) == vector.expected_signature)
        try IPayNowSigning.verify(fields, rule: vector.expectedRule, appKey: vector.app_key)
        // The test's own signer agrees (appendix B, written apart from the module).
        let excluded = vector.expectedRule == .versionedMessage ? TestSigner.versioned : TestSigner.legacy
        #expect(TestSigner.sign(vector.pairs, excluding: excluded, key: vector.app_key) == vector.expected_signature)
    }

    @Test("under the other message rule the signature does not match", arguments: RealVector.all)
    func failsUnderTheOtherRule(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        let error = #expect(throws: CheckoutError.self) {
            try IPayNowSigning.verify(fields, rule: vector.otherRule, appKey: vector.app_key)
        }
        #expect(error?.code == .signatureMismatch)
        #expect(error?.field == "body.signature")
        #expect(error?.category == .verification)
    }

    @Test("the wrong key, an upper-case signature, a missing one", arguments: RealVector.all)
    func keyAndSignatureShape(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        let wrongKey = #expect(throws: CheckoutError.self) {
            try IPayNowSigning.verify(fields, rule: vector.expectedRule, appKey: vector.app_key + "x")
        }
        #expect(wrongKey?.code == .signatureMismatch)

        // The Python SDK lower-cases the signature it receives; upper-case hex is the same signature.
        let upper = FormFields(fields.pairs.map { ($0.name, $0.name == "signature" ? $0.value.uppercased() : $0.value) })
        try IPayNowSigning.verify(upper, rule: vector.expectedRule, appKey: vector.app_key)

        let unsigned = FormFields(fields.pairs.filter { $0.name != "signature" }.map { ($0.name, $0.value) })
        #expect(IPayNowSigning.rule(of: unsigned) == nil, "neither signature nor mhtSignature: no rule")
        let missing = #expect(throws: CheckoutError.self) {
            try IPayNowSigning.verify(unsigned, rule: vector.expectedRule, appKey: vector.app_key)
        }
        #expect(missing?.code == .missingField)
        #expect(missing?.field == "body.signature")
    }

    @Test("one signed value changed, or dropped: signature_mismatch", arguments: RealVector.all)
    func valueChangedOrDropped(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        let signed = fields.pairs.filter { !$0.value.isEmpty && !vector.expectedRule.excluded.contains($0.name) }
        #expect(signed.count >= 6)
        // A changed signType is refused before the signature is checked (signTypeTampering).
        for target in signed where target.name != "signType" {
            let changed = FormFields(fields.pairs.map { ($0.name, $0.name == target.name ? $0.value + "0" : $0.value) })
            let dropped = FormFields(fields.pairs.filter { $0.name != target.name }.map { ($0.name, $0.value) })
            for (label, tampered) in [("changed", changed), ("dropped", dropped)] {
                // Dropping `version` changes the rule as well; the rule is always read from the tampered copy.
                let rule = try #require(IPayNowSigning.rule(of: tampered))
                let error = #expect(throws: CheckoutError.self, "\(target.name) \(label)") {
                    try IPayNowSigning.verify(tampered, rule: rule, appKey: vector.app_key)
                }
                #expect(error?.code == .signatureMismatch, "\(target.name) \(label)")
            }
        }
    }

    @Test("a field added (anywhere in the order): signature_mismatch; an empty one is not signed", arguments: RealVector.all)
    func fieldAdded(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        for extra in [("aaa", "1"), ("mhtReserved", "x"), ("zzz", "1"), ("cashAmont", "1")] where fields[extra.0] == nil {
            let added = FormFields(fields.pairs.map { ($0.name, $0.value) } + [extra])
            #expect(IPayNowSigning.rule(of: added) == vector.expectedRule)
            let error = #expect(throws: CheckoutError.self, "\(extra.0) added") {
                try IPayNowSigning.verify(added, rule: vector.expectedRule, appKey: vector.app_key)
            }
            #expect(error?.code == .signatureMismatch, "\(extra.0) added")
        }
        // Appendix B drops empty values from the string to sign: an added empty field changes nothing.
        let empty = FormFields(fields.pairs.map { ($0.name, $0.value) } + [("extra", "")])
        try IPayNowSigning.verify(empty, rule: vector.expectedRule, appKey: vector.app_key)
    }

    @Test("version added to a legacy message, or removed from a 1.0.0 one: the rule changes and the signature no longer matches",
          arguments: RealVector.all)
    func versionFlipped(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        let flipped: FormFields
        if vector.expectedRule == .legacyMessage {
            flipped = FormFields(fields.pairs.map { ($0.name, $0.value) } + [("version", "1.0.0")])
        } else {
            flipped = FormFields(fields.pairs.filter { $0.name != "version" }.map { ($0.name, $0.value) })
        }
        #expect(IPayNowSigning.rule(of: flipped) == vector.otherRule)
        let error = #expect(throws: CheckoutError.self) {
            try IPayNowSigning.verify(flipped, rule: vector.otherRule, appKey: vector.app_key)
        }
        #expect(error?.code == .signatureMismatch)
    }

    @Test("signType: removed or added breaks a 1.0.0 message; the legacy rule does not sign it; anything but MD5 is refused",
          arguments: RealVector.all)
    func signTypeTampering(_ vector: RealVector) throws {
        let fields = try FormFields.decode(vector.body)
        #expect(fields["signType"] == "MD5")
        let removed = FormFields(fields.pairs.filter { $0.name != "signType" }.map { ($0.name, $0.value) })
        if vector.expectedRule == .versionedMessage {
            let error = #expect(throws: CheckoutError.self) {
                try IPayNowSigning.verify(removed, rule: .versionedMessage, appKey: vector.app_key)
            }
            #expect(error?.code == .signatureMismatch)
        } else {
            // PHP README 2.2/2.4 and the official servlets leave signType out of the legacy string to sign:
            // its presence cannot be checked by the signature. Adding it back is the original message.
            try IPayNowSigning.verify(removed, rule: .legacyMessage, appKey: vector.app_key)
        }
        // signType added to the 1.0.0 copy that lacks it: back to the signed original.
        let readded = FormFields(removed.pairs.map { ($0.name, $0.value) } + [("signType", "MD5")])
        try IPayNowSigning.verify(readded, rule: vector.expectedRule, appKey: vector.app_key)
        // A second signType, or another sign type: refused whatever the rule.
        let doubled = Data((vector.raw_body + "&signType=MD5").utf8)
        let duplicate = #expect(throws: CheckoutError.self) { _ = try FormFields.decode(doubled) }
        #expect(duplicate?.code == .duplicateField)
        #expect(duplicate?.field == "body.signType")
        let rsa = FormFields(fields.pairs.map { ($0.name, $0.name == "signType" ? "RSA" : $0.value) })
        let other = #expect(throws: CheckoutError.self) {
            try IPayNowSigning.verify(rsa, rule: vector.expectedRule, appKey: vector.app_key)
        }
        #expect(other?.code == .invalidField)
        #expect(other?.field == "body.signType")
    }

    @Test("rule(of:): mhtSignature is a merchant's request (MQ001 by funcode, else an order); signature is iPayNow's; both or neither: none")
    func ruleOfFields() {
        #expect(IPayNowSigning.rule(of: FormFields([("funcode", "MQ001"), ("mhtSignature", "x")])) == .query)
        #expect(IPayNowSigning.rule(of: FormFields([("funcode", "WP001"), ("mhtSignature", "x")])) == .order)
        #expect(IPayNowSigning.rule(of: FormFields([("appId", "1"), ("mhtSignature", "x")])) == .order)
        #expect(IPayNowSigning.rule(of: FormFields([("signature", "x")])) == .legacyMessage)
        #expect(IPayNowSigning.rule(of: FormFields([("signature", "x"), ("version", "")])) == .legacyMessage)
        #expect(IPayNowSigning.rule(of: FormFields([("signature", "x"), ("version", "1.0.0")])) == .versionedMessage)
        #expect(IPayNowSigning.rule(of: FormFields([("signature", "x"), ("mhtSignature", "y")])) == nil)
        #expect(IPayNowSigning.rule(of: FormFields([("appId", "1")])) == nil)
    }

    /// `Fixtures/signing-rules.json`: the exclusions of each cross-border message, as that table gives them, each with its vendor sources.
    @Test("each rule leaves out what the vendor sources say (signing-rules.json)")
    func rulesMatchTheTable() throws {
        struct Table: Decodable {
            struct Message: Decodable { var kind: String; var excluded: [String] }
            var messages: [Message]
        }
        let table = try JSONDecoder().decode(Table.self, from: fixture("signing-rules.json"))
        func excluded(_ kind: String) throws -> Set<String> {
            Set(try #require(table.messages.first { $0.kind.hasPrefix(kind) }).excluded)
        }
        #expect(try excluded("cross-border WP001 request") == IPayNowSigning.Rule.order.excluded)
        #expect(try excluded("cross-border MQ001 request") == IPayNowSigning.Rule.query.excluded)
        #expect(try excluded("cross-border MQ001 response / N001 / N002") == IPayNowSigning.Rule.legacyMessage.excluded)
        #expect(try excluded("N001 notification, legacy") == IPayNowSigning.Rule.legacyMessage.excluded)
        #expect(try excluded("N001 notification, 1.0.0") == IPayNowSigning.Rule.versionedMessage.excluded)
        #expect(try excluded("refund family responses") == IPayNowSigning.Rule.legacyMessage.excluded)
        // The presign's two (appendix A) are a subset of the order rule: the other four never appear in a presign.
        #expect(try excluded("cross-border iOS plugin presign").isSubset(of: IPayNowSigning.Rule.order.excluded))
    }
}
