import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The vendor's wire fixtures (Tests/TillPayFortTests/Fixtures/wire, the same files the PayFort module
/// is tested with), used on the emulator's side: every vendor request is accepted by the running
/// emulator (re-signed with the test phrases where the vendor's signature cannot be recomputed, masked
/// values unmasked), every emulator answer has the keys of the matching vendor response, and every
/// `computed: true` vendor signature verifies under the emulator's signature code.
@Suite("PayFort emulator against the vendor wire fixtures")
struct PayFortWireFixtureTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()          // Tests/TillSandboxTests
        .deletingLastPathComponent()          // Tests
        .appendingPathComponent("TillPayFortTests/Fixtures/wire")

    static func load(_ name: String) throws -> JSONValue {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            Issue.record("wire fixture missing: \(url.path)")
            throw VectorsUnavailable()
        }
        return try JSONValue.parse([UInt8](Data(contentsOf: url)))
    }

    /// The merchants the fixtures come from, with their access codes and identifiers; the phrases are
    /// the vendor's where it published them (`PASS`, the Android sample's `asdflkjh`), test phrases otherwise.
    static let docs = PayFortMerchant(accessCode: "zx0IPmPy5jp1vAz8Kpg7", merchantIdentifier: "CycHZxVj",
                                      requestPhrase: "docs-in", responsePhrase: "docs-out")
    static let androidSample = PayFortMerchant(accessCode: "K4OF6bnIVs36IihWoeuy", merchantIdentifier: "hbfTmAkg",
                                               requestPhrase: "asdflkjh", responsePhrase: "android-out")
    static let dotNetTests = PayFortMerchant(accessCode: "TestAccessCode", merchantIdentifier: "TestMerchantIdentifier",
                                             requestPhrase: "PASS", responsePhrase: "PASS")
    static let sandbox2022 = PayFortMerchant(accessCode: "cbGc5bXdzAumLtMwGGHt", merchantIdentifier: "EgJEYGfq",
                                             requestPhrase: "log2022-in", responsePhrase: "log2022-out")
    static let sandbox2024 = PayFortMerchant(accessCode: "4Q5o0XRX8YGyRnH1mcns", merchantIdentifier: "bYqNmale",
                                             requestPhrase: "log2024-in", responsePhrase: "log2024-out", sha512: true)

    /// Values the vendor's log anonymizer replaced with asterisks, and what the tests send instead.
    static let unmasked: [String: String] = ["customer_email": "customer@example.com", "customer_ip": "192.0.2.10"]

    static func withHarness<T>(notificationURL: URL? = nil, feedbackFormat: PayFortMerchant.FeedbackFormat = .form,
                               _ body: (PayFortHarness) async throws -> T) async throws -> T {
        let merchants = [docs, androidSample, dotNetTests, sandbox2022, sandbox2024].map { merchant in
            var merchant = merchant
            merchant.notificationURL = notificationURL
            merchant.feedbackFormat = feedbackFormat
            return merchant
        }
        let emulator = PayFortEmulator(merchants: merchants, notificationRetry: (2, .milliseconds(10)))
        let sandbox = try await Sandbox.start(payFort: emulator)
        let harness = PayFortHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
        do {
            let result = try await body(harness)
            await harness.stop()
            return result
        } catch {
            await harness.stop()
            throw error
        }
    }

    /// A fixture body as request parameters: the signature dropped (to be re-signed), masked values unmasked.
    static func parameters(_ body: JSONValue?) throws -> [String: JSONValue] {
        let members = try #require(body?.objectMembers)
        var params: [String: JSONValue] = [:]
        for member in members where member.key != "signature" {
            params[member.key] = member.value.stringValue.map { $0.allSatisfy { $0 == "*" } } == true
                ? .string(try #require(unmasked[member.key], "no unmasked value for \(member.key)")) : member.value
        }
        return params
    }

    static func keys(_ value: JSONValue?) -> Set<String> { Set(value?.objectMembers?.map(\.key) ?? []) }

    /// Tokenizes `card` on the merchant page for `merchant` under the fixture's `token_name`.
    static func tokenize(_ harness: PayFortHarness, card: String, merchant: PayFortMerchant, tokenName: String) async throws {
        let fields = try await harness.tokenize(card: card, merchant: merchant, tokenName: tokenName)
        #expect(fields["response_code"] == "18000" && fields["token_name"] == tokenName)
    }

    /// Every `response_code` is a documented status followed by a documented message code, and its
    /// first two digits are the message's `status` (response-codes.json, "structure").
    static func expectDocumented(_ messages: [(status: String?, code: String?)]) throws {
        let table = try load("response-codes.json")
        let statuses = keys(table["statuses"]), codes = keys(table["messages"])
        for message in messages {
            let code = try #require(message.code)
            #expect(code.count == 5 && statuses.contains(String(code.prefix(2))) && codes.contains(String(code.suffix(3))),
                    "\(code) is not in response-codes.json")
            #expect(message.status == String(code.prefix(2)), "status \(message.status ?? "none") with response_code \(code)")
        }
    }

    // MARK: Signatures

    @Test("every computed: true vendor signature verifies under the emulator's signature code")
    func computedSignatures() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter { $0.hasSuffix(".json") }.sorted()
        var checked: [String] = []
        func walk(_ value: JSONValue, file: String) throws {
            switch value {
            case .array(let items):
                for item in items { try walk(item, file: file) }
            case .object(let members):
                for member in members { try walk(member.value, file: file) }
                guard value["signature"]?["computed"] == .bool(true) else { return }
                let fieldsValue = value["body"] ?? value["fields"] ?? value["hidden_fields"]
                let fieldMembers = try #require(fieldsValue?.objectMembers, "\(file): no fields beside a computed signature")
                let phrase = try #require((value["request_phrase"] ?? value["response_phrase"])?.stringValue, "\(file): no phrase")
                let expectedString = try #require(value["string_to_sign"]?.stringValue, "\(file): no string_to_sign")
                let signature = try #require(value["signature"]?["value"]?.stringValue ?? fieldsValue?["signature"]?.stringValue)
                let algorithm = try #require(value["signature"]?["algorithm"]?.stringValue.flatMap(PayFortEmulator.Signature.Algorithm.init))
                // The signed set is what the vendor's string names (refund-response.json: the .NET test
                // never signs maintenance_reference).
                let signed = fieldMembers.filter { $0.key != "signature" && expectedString.contains($0.key + "=") }
                #expect(PayFortEmulator.Signature.stringToSign(signed, phrase: phrase) == expectedString, "\(file)")
                #expect(PayFortEmulator.Signature.sign(signed, phrase: phrase, algorithm: algorithm) == signature, "\(file)")
                #expect(PayFortEmulator.Signature.verify(signature, members: signed, phrase: phrase, algorithm: algorithm), "\(file)")
                #expect(!PayFortEmulator.Signature.verify(signature, members: signed, phrase: phrase + "x", algorithm: algorithm))
                checked.append(file)
            default:
                return
            }
        }
        for name in names { try walk(try Self.load(name), file: name) }
        #expect(Set(checked) == ["sdk-token-request.json", "tokenization-request.json", "tokenization-return.json",
                                 "capture-response.json", "refund-response.json", "void-response.json", "feedback-json.json"],
                "\(checked)")
    }

    @Test("feedback-form.txt: the vendor's form body verifies; the PHP SDK's k= rule gives the other signature")
    func feedbackFormSignature() throws {
        let text = try String(contentsOf: Self.directory.appendingPathComponent("feedback-form.txt"), encoding: .utf8)
        var fields = try #require(FormEncoding.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        let signature = try #require(fields["signature"])
        fields["signature"] = nil
        #expect(fields["app_ver"] == "" && fields["return_url"] == "http://test.com")
        // The .NET rule (empty values skipped) is what the vendor's vector holds; the emulator accepts it.
        #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: "PASS", algorithm: .sha256))
        #expect(PayFortEmulator.Signature.sign(fields, phrase: "PASS", algorithm: .sha256, emptyValues: .skipped) == signature)
        // The emulator signs like the PHP SDK: the fixture's form_variant gives that string and hash.
        let variant = try #require(try Self.load("feedback-json.json")["form_variant"])
        let facts = variant["facts"].flatMap { value -> [String]? in
            guard case .array(let items) = value else { return nil }
            return items.compactMap(\.stringValue)
        } ?? []
        let phpFact = try #require(facts.first { $0.hasPrefix("PHP rule") })
        let phpString = try #require(phpFact.components(separatedBy: "string_to_sign \"").last?.components(separatedBy: "\"").first)
        #expect(PayFortEmulator.Signature.stringToSign(fields, phrase: "PASS") == phpString)
        #expect(phpFact.contains(PayFortEmulator.Signature.sign(fields, phrase: "PASS", algorithm: .sha256)))
    }

    // MARK: SDK_TOKEN

    @Test("sdk-token-request.json is accepted; the answer has the keys of sdk-token-response.json")
    func sdkToken() async throws {
        let request = try Self.load("sdk-token-request.json")
        let response = try Self.load("sdk-token-response.json")
        try await Self.withHarness { harness in
            // The guide's example: its signature is a generic example value, so it is re-signed.
            let answer = try await harness.call(try Self.parameters(request["body"]), merchant: Self.docs)
            #expect(answer["response_code"] == "22000")
            #expect(Set(answer.object.map(\.key)) == Self.keys(response["body"]))
            #expect(answer.isSigned(by: Self.docs))
            // The Android sample: posted as it is, with the vendor's own signature.
            let sample = try #require(request["other_examples"].flatMap { value -> JSONValue? in
                guard case .array(let items) = value else { return nil }
                return items.first
            })
            let raw = try await harness.post(harness.apiURL, body: Data(try #require(sample["body"]).serialized.utf8),
                                             contentType: "application/json")
            let asSent = try APIResult(raw)
            #expect(asSent["response_code"] == "22000")
            #expect(asSent["device_id"] == "68F33432-58FD-47DA-A91B-285DD7D86D20")
            #expect(Set(asSent.object.map(\.key)) == Self.keys(response["body"]))
            #expect(asSent.isSigned(by: Self.androidSample))
            try Self.expectDocumented([(answer["status"], answer["response_code"]), (asSent["status"], asSent["response_code"])])
        }
    }

    // MARK: Merchant page

    @Test("tokenization-request.json: the vendor's signature verifies; with real values the form is accepted, and the return has the keys of tokenization-return.json")
    func tokenization() async throws {
        let request = try Self.load("tokenization-request.json")
        let back = try Self.load("tokenization-return.json")
        let cards = try #require(request["card_fields"].flatMap { value -> [String]? in
            guard case .array(let items) = value else { return nil }
            return items.compactMap(\.stringValue)
        })
        #expect(Set(cards) == PayFortEmulator.cardFields)
        let typed = ["card_number": PayFortEmulator.TestCard.visa, "expiry_date": "3012", "card_security_code": "123",
                     "card_holder_name": "John Smith"]
        try await Self.withHarness { harness in
            // As the .NET test renders it: the signature is accepted (no 00008), but its placeholders
            // (a 22-character merchant_identifier, language "testlanguage", return URL "TestReturnUrl")
            // are not values APS takes (FORT guide §5.4.1: 20 and 2 characters), so the page refuses
            // them (00032) on a page, having no URL to return to.
            let hidden = try #require(request["hidden_fields"]?.objectMembers).map { ($0.key, $0.value.parameterText) }
            let asIs = try await harness.postPage(hidden + cards.map { ($0, typed[$0] ?? "") })
            #expect(asIs.status == 400)
            #expect(!asIs.text.contains("00008") && asIs.text.contains("00032"))

            // The same fields with real values (the docs' merchant, en, a URL), re-signed.
            var fields = Dictionary(hidden.filter { $0.0 != "signature" }, uniquingKeysWith: { $1 })
            fields["access_code"] = Self.docs.accessCode
            fields["merchant_identifier"] = Self.docs.merchantIdentifier
            fields["language"] = "en"
            fields["return_url"] = "https://merchant.example/payfort/return"
            fields["signature"] = PayFortEmulator.Signature.sign(fields, phrase: Self.docs.requestPhrase, algorithm: .sha256)
            let raw = try await harness.postPage(fields.map { ($0.key, $0.value) } + cards.map { ($0, typed[$0] ?? "") })
            #expect(raw.status == 302)
            var returned = PayFortHarness.queryFields(try #require(raw.headers["location"].flatMap(URL.init(string:))))
            #expect(returned["response_code"] == "18000")
            #expect(Set(returned.keys) == Self.keys(back["fields"]))
            #expect(returned["card_bin"] == "400555")
            let signature = try #require(returned["signature"])
            returned["signature"] = nil
            #expect(PayFortEmulator.Signature.verify(signature, parameters: returned, phrase: Self.docs.responsePhrase, algorithm: .sha256))

            // The 2024 sandbox log's hidden fields (bYqNmale), re-signed with a test phrase.
            let logged = try #require(request["other_examples"].flatMap { value -> JSONValue? in
                guard case .array(let items) = value else { return nil }
                return items.first
            })
            var loggedFields = try #require(logged["hidden_fields"]?.objectMembers)
                .reduce(into: [String: String]()) { $0[$1.key] = $1.value.parameterText }
            loggedFields["signature"] = PayFortEmulator.Signature.sign(loggedFields.filter { $0.key != "signature" },
                                                                       phrase: Self.sandbox2024.requestPhrase, algorithm: .sha512)
            let second = try await harness.postPage(loggedFields.map { ($0.key, $0.value) } + cards.map { ($0, typed[$0] ?? "") })
            let location = try #require(second.headers["location"])
            #expect(location.hasPrefix("https://localhost:7137/CustomCheckout/ResponseCustomTokenization?"))
            let loggedReturn = PayFortHarness.queryFields(try #require(URL(string: location)))
            #expect(loggedReturn["response_code"] == "18000")
            #expect(Set(loggedReturn.keys) == Self.keys(logged["fields"] ?? back["fields"]))
            try Self.expectDocumented([(returned["status"], returned["response_code"]), (loggedReturn["status"], loggedReturn["response_code"])])
        }
    }

    // MARK: PURCHASE / AUTHORIZATION

    @Test("purchase-request.json is accepted; the answer has the keys of purchase-response.json")
    func purchase() async throws {
        let request = try Self.load("purchase-request.json")
        let response = try Self.load("purchase-response.json")
        try await Self.withHarness { harness in
            let params = try Self.parameters(request["body"])
            try await Self.tokenize(harness, card: PayFortEmulator.TestCard.visa, merchant: Self.sandbox2022,
                                    tokenName: try #require(params["token_name"]?.stringValue))
            let answer = try await harness.call(params, merchant: Self.sandbox2022)
            #expect(answer["response_code"] == "14000")
            #expect(answer.isSigned(by: Self.sandbox2022))
            // The sandbox filled customer_ip from the customer's browser at tokenization; the emulator
            // only echoes a customer_ip the merchant sends, and this request had none.
            #expect(Set(answer.object.map(\.key)).union(["customer_ip"]) == Self.keys(response["body"]))
            #expect(answer.value("amount") == .number("24300"))
            #expect(answer["order_description"] == "test&#39; with #&#39;")
            #expect(answer["fort_id"]?.allSatisfy(\.isASCIIDigit) == true)
            try Self.expectDocumented([(answer["status"], answer["response_code"])])
        }
    }

    @Test("authorization-request.json: 20064 with the keys of authorization-response.json, then the 3-D Secure return has the keys of after_3ds_return")
    func authorizationWithThreeDSecure() async throws {
        let request = try Self.load("authorization-request.json")
        let response = try Self.load("authorization-response.json")
        try await Self.withHarness { harness in
            let params = try Self.parameters(request["body"])
            try await Self.tokenize(harness, card: PayFortEmulator.TestCard.threeDSecure, merchant: Self.sandbox2024,
                                    tokenName: try #require(params["token_name"]?.stringValue))
            let pending = try await harness.call(params, merchant: Self.sandbox2024)
            #expect(pending["response_code"] == "20064")
            #expect(pending["response_message"] == "3-D Secure check requested")
            #expect(Set(pending.object.map(\.key)) == Self.keys(response["body"]))
            #expect(pending.isSigned(by: Self.sandbox2024))
            let page = try #require(pending["3ds_url"].flatMap(URL.init(string:)))
            let back = try #require(try await SandboxBrowser.completeThreeDSecure(at: page, approve: true))
            #expect(back.absoluteString.hasPrefix("https://localhost:7137/Home/Response?"))
            var fields = PayFortHarness.queryFields(back)
            #expect(fields["response_code"] == "02000" && fields["amount"] == "24300" && fields["fort_id"] == pending["fort_id"])
            #expect(Set(fields.keys) == Self.keys(response["after_3ds_return"]?["fields"]))
            let signature = try #require(fields["signature"])
            fields["signature"] = nil
            #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: Self.sandbox2024.responsePhrase,
                                                     algorithm: .sha512))
            try Self.expectDocumented([(pending["status"], pending["response_code"]), (fields["status"], fields["response_code"])])
        }
    }

    @Test("the 2022 AUTHORIZATION without 3-D Secure (authorization-request.json other_examples) has the keys of its answer")
    func authorizationWithout3DS() async throws {
        let request = try Self.load("authorization-request.json")
        let response = try Self.load("authorization-response.json")
        func first(_ value: JSONValue?) -> JSONValue? {
            guard case .array(let items)? = value else { return nil }
            return items.first
        }
        try await Self.withHarness { harness in
            let params = try Self.parameters(first(request["other_examples"])?["body"])
            try await Self.tokenize(harness, card: PayFortEmulator.TestCard.visa, merchant: Self.sandbox2022,
                                    tokenName: try #require(params["token_name"]?.stringValue))
            let answer = try await harness.call(params, merchant: Self.sandbox2022)
            #expect(answer["response_code"] == "02000")
            #expect(Set(answer.object.map(\.key)) == Self.keys(first(response["other_examples"])?["body"]))
            #expect(answer.isSigned(by: Self.sandbox2022))
        }
    }

    // MARK: CHECK_STATUS and maintenance

    @Test("check-status-request.json is accepted; the answer has only documented keys of check-status-response.json")
    func checkStatus() async throws {
        let request = try Self.load("check-status-request.json")
        let response = try Self.load("check-status-response.json")
        try await Self.withHarness { harness in
            let params = try Self.parameters(request["body"])
            let reference = try #require(params["merchant_reference"]?.stringValue)
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa, merchant: Self.docs)["token_name"])
            #expect(try await harness.call(harness.paymentParams(token: token, reference: reference, merchant: Self.docs),
                                           merchant: Self.docs)["response_code"] == "14000")
            let answer = try await harness.call(params, merchant: Self.docs)
            #expect(answer["response_code"] == "12000" && answer["transaction_code"] == "14000")
            let documented = Set((response["documented_fields"].flatMap { value -> [String]? in
                guard case .array(let items) = value else { return nil }
                return items.compactMap(\.stringValue)
            }) ?? [])
            let keys = Set(answer.object.map(\.key))
            #expect(keys.isSubset(of: documented), "\(keys.subtracting(documented))")
            #expect(keys.isSuperset(of: Self.keys(response["body"])))
            #expect(keys.isSuperset(of: ["authorized_amount", "captured_amount", "refunded_amount"]))
            #expect(!keys.contains("amount") && !keys.contains("currency"))
            #expect(answer.isSigned(by: Self.docs))
        }
    }

    /// The field list of a docs-mirror `other_examples` fact (`"Fields: a, b, c."`).
    static func documentedFields(_ fixture: JSONValue) -> Set<String> {
        guard case .array(let examples)? = fixture["other_examples"] else { return [] }
        for example in examples {
            guard case .array(let facts)? = example["facts"] else { continue }
            for fact in facts.compactMap(\.stringValue) where fact.hasPrefix("Fields: ") {
                let list = fact.dropFirst("Fields: ".count).trimmingCharacters(in: CharacterSet(charactersIn: "."))
                // "status (no amount)": the name is the first word.
                return Set(list.components(separatedBy: ", ").compactMap { $0.components(separatedBy: " ").first })
            }
        }
        return []
    }

    @Test("capture-request.json and refund-request.json are accepted (full capture, then full refund); answers have the keys of the responses")
    func captureAndRefund() async throws {
        let captureRequest = try Self.load("capture-request.json"), captureResponse = try Self.load("capture-response.json")
        let refundRequest = try Self.load("refund-request.json"), refundResponse = try Self.load("refund-response.json")
        try await Self.withHarness { harness in
            let merchant = Self.docs
            let capture = try Self.parameters(captureRequest["body_literals"])
            let reference = try #require(capture["merchant_reference"]?.stringValue)
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa, merchant: merchant)["token_name"])
            var authorization = harness.paymentParams(token: token, command: "AUTHORIZATION", reference: reference,
                                                      amount: try #require(capture["amount"]), merchant: merchant)
            authorization["currency"] = capture["currency"]
            #expect(try await harness.call(authorization, merchant: merchant)["response_code"] == "02000")

            var captureParams = capture
            captureParams["access_code"] = .string(merchant.accessCode)
            captureParams["merchant_identifier"] = .string(merchant.merchantIdentifier)
            let captured = try await harness.call(captureParams, merchant: merchant)
            #expect(captured["response_code"] == "04000")
            let captureKeys = Set(captured.object.map(\.key))
            #expect(captureKeys.isSuperset(of: Self.keys(captureResponse["fields"])))
            #expect(captureKeys.isSubset(of: Self.documentedFields(captureResponse)), "\(captureKeys.subtracting(Self.documentedFields(captureResponse)))")

            var refundParams = try Self.parameters(refundRequest["body_literals"])
            refundParams["access_code"] = .string(merchant.accessCode)
            refundParams["merchant_identifier"] = .string(merchant.merchantIdentifier)
            refundParams["maintenance_reference"] = "refund-1"   // optional (refund-request.json)
            let refunded = try await harness.call(refundParams, merchant: merchant)
            #expect(refunded["response_code"] == "06000")
            let refundKeys = Set(refunded.object.map(\.key))
            #expect(refundKeys.isSuperset(of: Self.keys(refundResponse["fields"])))
            #expect(refundKeys.isSubset(of: Self.documentedFields(refundResponse)), "\(refundKeys.subtracting(Self.documentedFields(refundResponse)))")
            #expect(await harness.emulator.operations.map(\.amountMinor) == [319_700, 319_700])
            try Self.expectDocumented([(captured["status"], captured["response_code"]), (refunded["status"], refunded["response_code"])])
        }
    }

    @Test("void-request.json is accepted without amount and currency; the answer has the keys of void-response.json")
    func void() async throws {
        let voidRequest = try Self.load("void-request.json"), voidResponse = try Self.load("void-response.json")
        try await Self.withHarness { harness in
            let merchant = Self.docs
            var params = try Self.parameters(voidRequest["body_literals"])
            let reference = try #require(params["merchant_reference"]?.stringValue)
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa, merchant: merchant)["token_name"])
            #expect(try await harness.call(harness.paymentParams(token: token, command: "AUTHORIZATION", reference: reference,
                                                                 merchant: merchant), merchant: merchant)["response_code"] == "02000")
            params["access_code"] = .string(merchant.accessCode)
            params["merchant_identifier"] = .string(merchant.merchantIdentifier)
            let voided = try await harness.call(params, merchant: merchant)
            #expect(voided["response_code"] == "08000")
            let keys = Set(voided.object.map(\.key))
            #expect(keys.isSuperset(of: Self.keys(voidResponse["fields"])))
            #expect(keys.isSubset(of: Self.documentedFields(voidResponse)), "\(keys.subtracting(Self.documentedFields(voidResponse)))")
            #expect(!keys.contains("amount") && !keys.contains("currency"))
        }
    }

    // MARK: Transaction feedback

    @Test("JSON feedback has the keys of feedback-json.json; form feedback carries every non-empty key of feedback-form.txt")
    func feedback() async throws {
        let json = try Self.load("feedback-json.json")
        let formText = try String(contentsOf: Self.directory.appendingPathComponent("feedback-form.txt"), encoding: .utf8)
        let formKeys = Set((FormEncoding.decode(formText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? [:])
            .filter { !$0.value.isEmpty }.keys)
        for format in PayFortMerchant.FeedbackFormat.allCases {
            try await withReceiver { receiver in
                try await Self.withHarness(notificationURL: receiver.url, feedbackFormat: format) { harness in
                    let merchant = Self.sandbox2022
                    let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa, merchant: merchant)["token_name"])
                    var params = harness.paymentParams(token: token, command: "AUTHORIZATION", merchant: merchant)
                    params["merchant_extra1"] = nil
                    params["phone_number"] = "+1 (201)-234-6789"
                    params["customer_name"] = "test customer's name"
                    #expect(try await harness.call(params, merchant: merchant)["response_code"] == "02000")
                    await harness.emulator.waitForNotifications()
                    let post = try #require(await receiver.received().first)
                    var fields: [String: String]
                    switch format {
                    case .json:
                        let members = try #require(try JSONValue.parse(Array(post.body)).objectMembers)
                        #expect(members.allSatisfy { $0.value.stringValue != nil }, "every value a string, amount too")
                        fields = Dictionary(members.map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
                        #expect(Set(fields.keys) == Self.keys(json["body"]))
                        #expect(fields["customer_name"] == "test customer&#39;s name")
                    case .form:
                        fields = try #require(post.formFields)
                        // return_url and the app_* fields are not echoed (the sandbox logs never show them).
                        #expect(Set(fields.keys).isSuperset(of: formKeys.subtracting(["return_url"])),
                                "\(formKeys.subtracting(fields.keys))")
                    }
                    let signature = try #require(fields["signature"])
                    fields["signature"] = nil
                    #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: merchant.responsePhrase,
                                                             algorithm: .sha256))
                }
            }
        }
    }
}
