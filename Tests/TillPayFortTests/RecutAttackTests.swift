import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
@testable import TillPayFort
@testable import TillPayFortServer
import TillTesting

/// PayFort signs `key=value` pairs concatenated with no separator, so a genuine signed message can be
/// cut again at other places and still carry a valid signature. The merchant page echoes the
/// `return_url` the app supplied, and a return URL may hold `=`; these tests re-cut genuine declined
/// feedback with such a URL and check that nothing the re-cut says is ever applied.
@Suite("PayFort: genuine feedback re-cut across keys")
struct RecutAttackTests {
    /// The customer's own attempt (declined) and another customer's pending 9,999.00 SAR attempt.
    static let own = "k3v9q0z8m2x7c4b1n6a5s0d2"
    static let victim = "p8w2e6r4t0y1u3i5o7a9s1d3"

    /// A genuine declined PURCHASE feedback for `own` of 9,999.00 SAR whose echoed `return_url` is `returnURL`.
    static func declined(returnURL: String) -> PayFortParameters {
        signedParameters([
            ("access_code", credentials.accessCode), ("amount", "999900"), ("command", "PURCHASE"), ("currency", "SAR"),
            ("customer_email", "buyer@example.com"), ("customer_ip", "203.0.113.7"), ("eci", "ECOMMERCE"), ("fort_id", "169996200007825545"),
            ("language", "en"), ("merchant_identifier", credentials.merchantIdentifier), ("merchant_reference", own),
            ("payment_option", "VISA"), ("response_code", "13666"), ("response_message", "Transaction declined"),
            ("return_url", returnURL), ("status", "13"), ("token_name", "9759c937251548c8b558991ddc90e664"),
        ])
    }

    /// The string PayFort signs, cut again at `keys` (in order; `key#n` is the n-th occurrence of
    /// `key=` after the previous cut): each value runs up to the next key. The signature is kept.
    static func recut(_ original: PayFortParameters, at keys: [String]) throws -> PayFortParameters {
        let text = original.members.filter { $0.key != "signature" }.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.payFortText ?? "")" }.joined()
        func split(_ spec: String) -> (String, Int) {
            let parts = spec.split(separator: "#")
            return (String(parts[0]), parts.count > 1 ? Int(parts[1]) ?? 1 : 1)
        }
        var pairs: [(String, String)] = []
        var cursor = text.startIndex
        for (index, spec) in keys.enumerated() {
            let (key, _) = split(spec)
            try #require(text[cursor...].hasPrefix(key + "="), "the text at the cut does not start with \(key)=")
            let start = text.index(cursor, offsetBy: key.count + 1)
            var end = text.endIndex
            if index + 1 < keys.count {
                let (next, occurrence) = split(keys[index + 1])
                var from = start
                for _ in 0..<occurrence {
                    let found = try #require(text.range(of: next + "=", range: from..<text.endIndex), "no \(next)= to cut at")
                    end = found.lowerBound
                    from = found.upperBound
                }
            }
            pairs.append((key, String(text[start..<end])))
            cursor = end
        }
        var forged = PayFortParameters(strings: pairs)
        forged["signature"] = original["signature"]
        return forged
    }

    func notification(_ parameters: PayFortParameters) -> IncomingNotification {
        let form = FormFields.encode(parameters.members.map { ($0.key, $0.value.payFortText ?? "") })
        return IncomingNotification(headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(form.utf8))
    }

    @Test("the genuine feedback reads as the declined payment it is")
    func genuine() throws {
        let report = try server(RecordingTransport()).verifyNotification(notification(Self.declined(returnURL: "https://shop/r?x"))).report
        #expect(report.status == .failed && report.attempt == ref(Self.own) && report.gatewayCode == "13666")
    }

    @Test("status=14 cut out of the return URL, the real status left in a junk key: refused, response_code still says 13")
    func decline2Success() throws {
        // Signed text: …return_url=https://shop/r?xstatus=14status_status=13token_name=…
        let original = Self.declined(returnURL: "https://shop/r?xstatus=14status_")
        let forged = try Self.recut(original, at: ["access_code", "amount", "command", "currency", "customer_email", "customer_ip", "eci",
                                                   "fort_id", "language", "merchant_identifier", "merchant_reference", "payment_option",
                                                   "response_code", "response_message", "return_url", "status", "status_status",
                                                   "token_name"])
        #expect(forged.text("return_url") == "https://shop/r?x" && forged.text("status") == "14" && forged.text("status_status") == "13")
        try PayFortSignature().verify(forged, phrase: credentials.responsePhrase)   // the scheme cannot tell
        let error = #expect(throws: CheckoutError.self) { try server(RecordingTransport()).verifyNotification(notification(forged)) }
        #expect(error?.code == .invalidField && error?.field == "body.status")
    }

    @Test("another customer's 9,999.00 SAR attempt named by a re-cut: refused, whichever key swallows the real reference", arguments: [
        // The key before merchant_reference swallows everything up to the return URL's text (response_code included).
        "merchant_identifier", "language", "fort_id", "eci", "customer_ip",
    ])
    func otherAttempt(swallower: String) throws {
        // Signed text: …return_url=https://shop/r?xmerchant_reference=<victim>status=14status_status=13token_name=…
        let original = Self.declined(returnURL: "https://shop/r?xmerchant_reference=\(Self.victim)status=14status_")
        let before = ["access_code", "amount", "command", "currency", "customer_email", "customer_ip", "eci", "fort_id", "language",
                      "merchant_identifier"]
        let keys = Array(before.prefix(through: try #require(before.firstIndex(of: swallower))))
            + ["merchant_reference#2", "status", "status_status", "token_name"]
        let forged = try Self.recut(original, at: keys)
        #expect(forged.text("merchant_reference") == Self.victim && forged.text("status") == "14" && forged.text("amount") == "999900")
        #expect(forged.text("response_code") == nil)
        try PayFortSignature().verify(forged, phrase: credentials.responsePhrase)   // the scheme cannot tell
        #expect(throws: CheckoutError.self) { try server(RecordingTransport()).verifyNotification(notification(forged)) }
    }

    @Test("everything from the first key on swallowed, a whole success (amount, currency, reference, response_code, status) cut out of the return URL: refused, access_code is not the account's")
    func fromTheFirstKey() throws {
        let injected = "amount=999900currency=SARmerchant_reference=\(Self.victim)response_code=14000status=14status_"
        let original = Self.declined(returnURL: "https://shop/r?x" + injected)
        let forged = try Self.recut(original, at: ["access_code", "amount#2", "currency", "merchant_reference", "response_code", "status",
                                                   "status_status", "token_name"])
        #expect(forged.text("merchant_reference") == Self.victim && forged.text("status") == "14" && forged.text("response_code") == "14000")
        #expect(forged.text("amount") == "999900" && forged.text("currency") == "SAR" && forged.text("merchant_identifier") == nil)
        let rule = try PayFortSignature().verify(forged, phrase: credentials.responsePhrase)   // the scheme cannot tell
        // Every field Till reads is well-formed and agrees: only the account anchors tell.
        let message = try PayFortMessage(forged, rule: rule, field: "body")
        #expect(message.status == "14" && message.merchantReference == Self.victim)
        let error = #expect(throws: CheckoutError.self) { try server(RecordingTransport()).verifyNotification(notification(forged)) }
        #expect(error?.code == .invalidField && error?.field == "body.access_code")
    }

    @Test("a message of another account is refused; one without the account (as the FORT SDK's documented response) waits for CHECK_STATUS, or is refused when feedback is not confirmed")
    func account() async throws {
        let gateway = server(RecordingTransport())
        let pairs = [("merchant_reference", Self.own), ("status", "14"), ("response_code", "14000"), ("amount", "100"), ("currency", "SAR")]
        for (key, value, code) in [("access_code", "otherAccessCode", CheckoutError.Code.invalidField),
                                   ("merchant_identifier", "otherMID", .invalidField)] {
            let error = #expect(throws: CheckoutError.self) {
                try gateway.verifyNotification(notification(signedParameters(pairs + [(key, value)])))
            }
            #expect(error?.code == code && error?.field == "body.\(key)")
        }
        // The SDK's documented response lists no access_code or merchant_identifier: with CHECK_STATUS
        // deciding (the default) such feedback is kept for the inquiry, never applied by itself…
        let withoutAccount = try gateway.verifyNotification(notification(signedParameters(pairs, account: false)))
        #expect(withoutAccount.confirmBeforeApplying)
        // …and without that confirmation it is refused.
        let unconfirmed = PayFortServer(environment: .custom(testBase), credentials: credentials, confirmFeedback: false,
                                        transport: RecordingTransport())
        let missing = #expect(throws: CheckoutError.self) {
            try unconfirmed.verifyNotification(notification(signedParameters(pairs, account: false)))
        }
        #expect(missing?.code == .missingField && missing?.field == "body.access_code")

        // An answer to Till's own CHECK_STATUS (over TLS: it cannot be re-cut) naming another account is not
        // believed; one without the account keeps its own meaning.
        let check = [("query_command", "CHECK_STATUS"), ("merchant_reference", "att1"), ("status", "12"), ("response_code", "12000"),
                     ("transaction_status", "14"), ("transaction_code", "14000")]
        let other = RecordingTransport()
        other.expect(.post, path: api, respond: signedAnswer(check + [("access_code", "otherAccessCode")]))
        let answer = await #expect(throws: CheckoutError.self) { try await server(other).inquire(InquiryQuery(attempt: ref("att1"))) }
        #expect(answer?.field == "answer.access_code" && answer?.category == .unknownOutcome)
        let bare = RecordingTransport()
        bare.expect(.post, path: api, respond: TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"],
                                                                 body: signedParameters(check, account: false).jsonData()))
        #expect(try await server(bare).inquire(InquiryQuery(attempt: ref("att1"))).status == .paid)
    }

    @Test("a status needs a response_code that begins with it, on feedback, returns and answers", arguments: [
        ("14", "13666", "status"), ("13", "14000", "status"), ("14", nil, "response_code"), ("02", "20064", "status"),
    ] as [(String, String?, String)])
    func statusAgreement(status: String, code: String?, field: String) async throws {
        let pairs = [("command", "PURCHASE"), ("merchant_reference", "att1"), ("status", status)] + (code.map { [("response_code", $0)] } ?? [])
        let feedback = #expect(throws: CheckoutError.self) {
            try server(RecordingTransport()).verifyNotification(notification(signedParameters(pairs)))
        }
        #expect(feedback?.field == "body.\(field)" && feedback?.code == (field == "status" ? .invalidField : .missingField))
        // The app reads the same way: what it cannot read is unknown, never a success.
        #expect(app.interpretReturn(.callback(code: "success", parameters: Dictionary(uniqueKeysWithValues: pairs)),
                                    for: Preparation(gateway: "payfort", attempt: ref("att1"), method: .card,
                                                     amount: Money(minorUnits: 100, currency: Currency.lookup("SAR")!),
                                                     parameters: ["integration": "mobile_sdk"])).kind == .unknown)
        // An answer to Till's own CHECK_STATUS that disagrees is not believed either.
        let transport = RecordingTransport()
        transport.expect(.post, path: api, respond: signedAnswer([("query_command", "CHECK_STATUS"), ("merchant_reference", "att1")]
                                                              + pairs.filter { $0.0 != "command" && $0.0 != "merchant_reference" }))
        let answer = await #expect(throws: CheckoutError.self) { try await server(transport).inquire(InquiryQuery(attempt: ref("att1"))) }
        #expect(answer?.field == "answer.\(field)" && answer?.category == .unknownOutcome)
    }

    @Test("the reference itself stretched or cut short by a re-cut fails its own rule or names no attempt of the gateway's shape")
    func referenceStretched() throws {
        let original = Self.declined(returnURL: "https://shop/r?x")
        // merchant_reference swallows payment_option and response_code: refused by its characters.
        let swallowing = try Self.recut(original, at: ["access_code", "amount", "command", "currency", "customer_email", "customer_ip", "eci",
                                                       "fort_id", "language", "merchant_identifier", "merchant_reference", "response_message",
                                                       "return_url", "status", "token_name"])
        try PayFortSignature().verify(swallowing, phrase: credentials.responsePhrase)
        let error = #expect(throws: CheckoutError.self) { try server(RecordingTransport()).verifyNotification(notification(swallowing)) }
        #expect(error?.field == "body.merchant_reference")
    }
}
