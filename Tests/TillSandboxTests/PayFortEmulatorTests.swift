import Foundation
import Testing
import Till
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The PayFort emulator over real HTTP on 127.0.0.1: the server-to-server API.
@Suite struct PayFortEmulatorTests {
    // MARK: SDK_TOKEN

    @Test("SDK token: created for the device, echoed and signed with the response phrase", arguments: [false, true])
    func sdkTokenHappyPath(sha512: Bool) async throws {
        try await PayFortHarness.with { harness in
            let merchant = sha512 ? PayFortHarness.sha512Merchant : PayFortHarness.sha256Merchant
            let result = try await harness.call(harness.tokenParams(merchant: merchant), merchant: merchant)
            #expect(result.status == 200)
            #expect(result["status"] == "22")
            #expect(result["response_code"] == "22000")
            #expect(result["response_message"] == "Success")
            let token = try #require(result["sdk_token"])
            #expect(token.count == 32 && token.allSatisfy { $0.isHexDigit && !$0.isLowercase })
            for key in ["service_command", "access_code", "merchant_identifier", "language", "device_id"] {
                #expect(result[key] == harness.tokenParams(merchant: merchant)[key]?.parameterText, "\(key) echoed")
            }
            #expect(result["signature"]?.count == (sha512 ? 128 : 64))
            #expect(result.isSigned(by: merchant))
            // Not with the request phrase.
            var wrong = merchant
            wrong.responsePhrase = merchant.requestPhrase
            #expect(!result.isSigned(by: wrong))
        }
    }

    @Test("a bad signature is refused with 00008, signed, and not processed; the hex may be upper case")
    func badSignature() async throws {
        try await PayFortHarness.with { harness in
            let params = harness.tokenParams()
            let members = params.map { JSONValue.Member(key: $0.key, value: $0.value) }
            let wrongPhrase = PayFortEmulator.Signature.sign(members, phrase: "not the phrase", algorithm: .sha256)
            let result = try await harness.call(params, signature: wrongPhrase)
            #expect(result.status == 200)
            #expect(result["status"] == "00")
            #expect(result["response_code"] == "00008")
            #expect(result["response_message"] == "Signature mismatch")
            #expect(result["sdk_token"] == nil)
            #expect(result.isSigned(by: harness.merchant))

            let upper = PayFortEmulator.Signature.sign(members, phrase: harness.merchant.requestPhrase, algorithm: .sha256).uppercased()
            #expect(try await harness.call(params, signature: upper)["response_code"] == "22000")
        }
    }

    @Test("a request with an empty value is accepted signed either SDK's way (PHP k=, .NET skipped)")
    func emptyValueSignedEitherWay() async throws {
        try await PayFortHarness.with { harness in
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa)["token_name"])
            for rule in PayFortEmulator.Signature.EmptyValues.allCases {
                var params = harness.paymentParams(token: token)
                params["payment_option"] = ""   // as the FORT SDK README's request dictionary sends it
                let members = params.map { JSONValue.Member(key: $0.key, value: $0.value) }
                let signature = PayFortEmulator.Signature.sign(members, phrase: harness.merchant.requestPhrase,
                                                               algorithm: .sha256, emptyValues: rule)
                let result = try await harness.call(params, signature: signature)
                #expect(result["response_code"] == "14000", "\(rule)")
                #expect(result["payment_option"] == "VISA")
            }
        }
    }

    @Test("a missing parameter is named: 00001")
    func missingParameter() async throws {
        try await PayFortHarness.with { harness in
            var params = harness.tokenParams()
            params["device_id"] = nil
            let result = try await harness.call(params)
            #expect(result["status"] == "00")
            #expect(result["response_code"] == "00001")
            #expect(result["response_message"] == "Missing parameter: device_id")
            #expect(result.isSigned(by: harness.merchant))
        }
    }

    @Test("unknown credentials: 00009 / 00010, unsigned")
    func unknownMerchant() async throws {
        try await PayFortHarness.with { harness in
            var params = harness.tokenParams()
            params["access_code"] = "wrong-access-code"
            let wrongAccess = try await harness.call(params)
            #expect(wrongAccess["response_code"] == "00010")
            #expect(wrongAccess["signature"] == nil)
            params["merchant_identifier"] = "nobody"
            #expect(try await harness.call(params)["response_code"] == "00009")
        }
    }

    @Test("malformed JSON: HTTP 400 with 00073", arguments: ["{not json", "[1,2]", "", #"{"a":1,"a":2}"#])
    func malformedJSON(body: String) async throws {
        try await PayFortHarness.with { harness in
            let raw = try await harness.post(harness.apiURL, body: Data(body.utf8), contentType: "application/json")
            #expect(raw.status == 400)
            #expect(raw.text == #"{"status":"00","response_code":"00073","response_message":"Invalid request format"}"#)
        }
    }

    @Test("nested values (00002) and overlong values (00032) are refused, not a crash")
    func nestedAndOverlong() async throws {
        try await PayFortHarness.with { harness in
            var params = harness.tokenParams()
            params["apple_header"] = .object([.init(key: "apple_transactionId", value: "abc")])
            let nested = try await harness.call(params)
            #expect(nested["response_code"] == "00002")
            #expect(nested["response_message"]?.contains("apple_header") == true)
            #expect(nested.isSigned(by: harness.merchant))
            params = harness.tokenParams()
            params["device_id"] = .string(String(repeating: "d", count: 101))
            let long = try await harness.call(params)
            #expect(long["response_code"] == "00032")
            #expect(long["response_message"]?.contains("device_id") == true)
        }
    }

    // MARK: PURCHASE / AUTHORIZATION with a token name

    struct CardCase: Sendable, CustomTestStringConvertible {
        var card: String
        var command: String
        var code: String
        var message: String
        var charged: Bool
        var paymentOption: String
        var acquirer: String?
        var testDescription: String { "\(card) \(command) → \(code)" }
    }

    static let cardCases: [CardCase] = [
        CardCase(card: PayFortEmulator.TestCard.visa, command: "PURCHASE", code: "14000", message: "Success", charged: true, paymentOption: "VISA", acquirer: "00"),
        CardCase(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", code: "02000", message: "Success", charged: true, paymentOption: "VISA", acquirer: "00"),
        CardCase(card: PayFortEmulator.TestCard.mastercard, command: "PURCHASE", code: "14000", message: "Success", charged: true, paymentOption: "MASTERCARD", acquirer: "00"),
        CardCase(card: PayFortEmulator.TestCard.amex, command: "AUTHORIZATION", code: "02000", message: "Success", charged: true, paymentOption: "AMEX", acquirer: "00"),
        CardCase(card: PayFortEmulator.TestCard.mada, command: "PURCHASE", code: "14000", message: "Success", charged: true, paymentOption: "MADA", acquirer: "00"),
        CardCase(card: PayFortEmulator.TestCard.declined, command: "PURCHASE", code: "13666", message: "Transaction declined", charged: false, paymentOption: "VISA", acquirer: "05"),
        CardCase(card: PayFortEmulator.TestCard.declined, command: "AUTHORIZATION", code: "03666", message: "Transaction declined", charged: false, paymentOption: "VISA", acquirer: "05"),
        CardCase(card: PayFortEmulator.TestCard.insufficientFunds, command: "PURCHASE", code: "13029", message: "Insufficient funds", charged: false, paymentOption: "VISA", acquirer: "51"),
        CardCase(card: PayFortEmulator.TestCard.insufficientFunds, command: "AUTHORIZATION", code: "03029", message: "Insufficient funds", charged: false, paymentOption: "VISA", acquirer: "51"),
        CardCase(card: PayFortEmulator.TestCard.uncertain, command: "PURCHASE", code: "15777",
                 message: "The transaction has been processed, but failed to receive confirmation", charged: true, paymentOption: "VISA"),
        CardCase(card: "4111111111111111", command: "PURCHASE", code: "14000", message: "Success", charged: true, paymentOption: "VISA", acquirer: "00"),
    ]

    @Test("test cards", arguments: cardCases)
    func cardOutcome(_ testCase: CardCase) async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let result = try await harness.pay(card: testCase.card, command: testCase.command, reference: reference)
            #expect(result.status == 200)
            #expect(result["status"] == String(testCase.code.prefix(2)))
            #expect(result["response_code"] == testCase.code)
            #expect(result["response_message"] == testCase.message)
            #expect(result.isSigned(by: harness.merchant))
            // Echo: the parameters sent come back, but not the return URL; the card comes from the token.
            for key in ["command", "merchant_reference", "currency", "language", "customer_email", "token_name",
                        "customer_ip", "merchant_extra1", "access_code", "merchant_identifier", "eci", "fort_id",
                        "expiry_date", "card_holder_name"] {
                #expect(result[key] != nil, "\(key) in the answer")
            }
            #expect(result["return_url"] == nil)
            #expect(result["card_security_code"] == nil)
            #expect(result.value("amount") == .number("1000"))
            #expect(result["merchant_reference"] == reference)
            #expect(result["card_number"] == PayFortEmulator.TestCard.mask(testCase.card))
            #expect(!result.raw.text.contains(testCase.card))
            #expect(result["fort_id"]?.count == 18 && result["fort_id"]?.allSatisfy({ $0.isASCII && $0.isNumber }) == true)
            #expect(result["eci"] == "ECOMMERCE")
            #expect(result["payment_option"] == testCase.paymentOption)
            #expect(result["acquirer_response_code"] == testCase.acquirer)
            #expect((result["authorization_code"] != nil) == testCase.code.hasSuffix("000"))
            let ledger = await harness.emulator.ledger
            if testCase.charged {
                let charge = try #require(ledger.first)
                #expect(ledger.count == 1)
                #expect(charge.merchantReference == reference && charge.fortID == result["fort_id"])
                #expect(charge.amountMinor == 1000 && charge.currency == "USD" && charge.command == testCase.command)
                #expect(charge.status == (testCase.command == "PURCHASE" ? "14" : "02"))
            } else {
                #expect(ledger.isEmpty)
            }
        }
    }

    @Test("an unknown token name is 00044; a merchant reference already used is 00066 and charges nothing twice")
    func tokenAndReferenceChecks() async throws {
        try await PayFortHarness.with { harness in
            let unknown = try await harness.call(harness.paymentParams(token: "no-such-token"))
            #expect(unknown["response_code"] == "00044")
            #expect(unknown["response_message"] == "Token name does not exist")
            // Another merchant's token is unknown too.
            let foreign = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa,
                                                                  merchant: PayFortHarness.sha512Merchant)["token_name"])
            #expect(try await harness.call(harness.paymentParams(token: foreign))["response_code"] == "00044")

            let reference = PayFortHarness.newReference()
            #expect(try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)["response_code"] == "14000")
            let again = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
            #expect(again["response_code"] == "00066")
            #expect(again["response_message"] == "Merchant reference already exists")
            #expect(again["fort_id"] == nil)
            #expect(await harness.emulator.ledger.count == 1)
        }
    }

    @Test("invalid fields are named")
    func invalidFields() async throws {
        try await PayFortHarness.with { harness in
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.mada)["token_name"])
            let cases: [(String, JSONValue, String, String)] = [
                ("amount", .number("10.50"), "00005", "amount"), ("amount", "-5", "00005", "amount"),
                ("amount", .number("0"), "00005", "amount"), ("currency", "usd", "00013", "currency"),
                ("currency", "XYZ", "00013", "currency"), ("merchant_reference", "has space", "00002", "merchant_reference"),
                ("merchant_reference", .string(String(repeating: "a", count: 41)), "00032", "merchant_reference"),
                ("customer_email", "not-an-email", "00002", "customer_email"), ("language", "fr", "00002", "language"),
                ("return_url", "javascript:alert(1)", "00002", "return_url"), ("return_url", "/relative", "00002", "return_url"),
                ("eci", "SOMETHING", "00002", "eci"), ("payment_option", "VISA", "00002", "payment_option"),
                ("customer_email", .null, "00001", "customer_email"),
            ]
            for (key, value, code, named) in cases {
                var params = harness.paymentParams(token: token)
                params[key] = value
                let result = try await harness.call(params)
                #expect(result["response_code"] == code, "\(key)=\(value.parameterText)")
                if code != "00005" && code != "00013" {
                    #expect(result["response_message"]?.contains(named) == true, "\(result["response_message"] ?? "")")
                }
            }
            // MADA only for PURCHASE with eci ECOMMERCE (FORT mobile SDK guide §6.7.1).
            var mada = harness.paymentParams(token: token, command: "AUTHORIZATION")
            mada["payment_option"] = "MADA"
            let result = try await harness.call(mada)
            #expect(result["response_code"] == "00002")
            #expect(result["response_message"]?.contains("payment_option") == true)
            #expect(await harness.emulator.ledger.isEmpty)
            // A numeric string amount is accepted; the answer carries it as a number.
            let stringAmount = try await harness.call(harness.paymentParams(token: token, amount: "2500"))
            #expect(stringAmount["response_code"] == "14000")
            #expect(stringAmount.value("amount") == .number("2500"))
            #expect(await harness.emulator.ledger.map(\.amountMinor) == [2500])
        }
    }

    @Test("an expired card is declined with 012 (acquirer 54)")
    func expiredCard() async throws {
        try await PayFortHarness.with { harness in
            for (command, code) in [("PURCHASE", "13012"), ("AUTHORIZATION", "03012")] {
                let raw = try await harness.postPage(harness.tokenizationForm(card: PayFortEmulator.TestCard.visa, expiry: "2001"))
                let fields = PayFortHarness.queryFields(try #require(raw.headers["location"].flatMap(URL.init(string:))))
                #expect(fields["response_code"] == "18000")
                let result = try await harness.call(harness.paymentParams(token: try #require(fields["token_name"]), command: command))
                #expect(result["response_code"] == code)
                #expect(result["response_message"] == "Card expired")
                #expect(result["acquirer_response_code"] == "54")
            }
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("an apostrophe comes back as &#39;, and the signature is over that text")
    func apostrophesAreEscaped() async throws {
        try await PayFortHarness.with { harness in
            let result = try await harness.pay(card: PayFortEmulator.TestCard.visa,
                                               extra: ["order_description": "test' with #'", "customer_name": "test customer's name"])
            #expect(result["order_description"] == "test&#39; with #&#39;")
            #expect(result["customer_name"] == "test customer&#39;s name")
            #expect(result.isSigned(by: harness.merchant))
        }
    }

    // MARK: 3-D Secure

    @Test("3-D Secure: 20064 with a 3ds_url; the customer approves or fails; the return carries the signed final result",
          arguments: [("PURCHASE", true, "14000"), ("AUTHORIZATION", true, "02000"), ("PURCHASE", false, "13030"),
                      ("AUTHORIZATION", false, "03030")])
    func threeDSecure(command: String, approve: Bool, finalCode: String) async throws {
        try await withReceiver { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url) { harness in
                let reference = PayFortHarness.newReference()
                let pending = try await harness.pay(card: PayFortEmulator.TestCard.threeDSecure, command: command, reference: reference)
                #expect(pending["response_code"] == "20064")
                #expect(pending["response_message"] == "3-D Secure check requested")
                #expect(pending["token_name"] == nil)
                #expect(pending["authorization_code"] == nil)
                #expect(pending.isSigned(by: harness.merchant))
                let page = try #require(pending["3ds_url"].flatMap(URL.init(string:)))
                #expect(page.path.hasSuffix("/payfort/secure3dsSimulator"))
                #expect(page.query?.hasPrefix("FORTSESSIONID=") == true)
                #expect(await harness.emulator.ledger.isEmpty)
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().isEmpty, "no feedback while on hold")

                let shown = try await harness.get(page)
                #expect(shown.status == 200 && shown.text.contains("3-D Secure") && shown.text.contains(reference))
                let status = try await harness.checkStatus(reference: reference)
                #expect(status["transaction_code"] == "20064")

                let back = try #require(try await SandboxBrowser.completeThreeDSecure(at: page, approve: approve))
                #expect(back.absoluteString.hasPrefix(PayFortHarness.returnURL + "&"))
                var fields = PayFortHarness.queryFields(back)
                #expect(fields["state"] == "s1")   // the return URL's own query, unsigned
                fields["state"] = nil
                #expect(fields["response_code"] == finalCode)
                #expect(fields["fort_id"] == pending["fort_id"])
                #expect(fields["amount"] == "1000")
                #expect(fields["token_name"] != nil)
                #expect((fields["authorization_code"] != nil) == approve)
                #expect(fields["3ds_url"] == nil && fields["return_url"] == nil)
                let signature = try #require(fields["signature"])
                fields["signature"] = nil
                #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: harness.merchant.responsePhrase,
                                                         algorithm: .sha256))
                #expect(await harness.emulator.ledger.count == (approve ? 1 : 0))
                // Completing again changes nothing and lands on the same result.
                let twice = try #require(try await SandboxBrowser.completeThreeDSecure(at: page, approve: !approve))
                #expect(PayFortHarness.queryFields(twice)["response_code"] == finalCode)
                #expect(try await harness.get(page).status == 409)
                await harness.emulator.waitForNotifications()
                let feedback = await receiver.received().compactMap { $0.formFields?["response_code"] }
                #expect(feedback == [finalCode])
                #expect(try await harness.checkStatus(reference: reference)["transaction_code"] == finalCode)
            }
        }
    }

    @Test("3-D Secure without a return_url ends on a result page; an unknown session is 404")
    func threeDSecureWithoutReturnURL() async throws {
        try await PayFortHarness.with { harness in
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.threeDSecureAlternative)["token_name"])
            var params = harness.paymentParams(token: token)
            params["return_url"] = nil
            let pending = try await harness.call(params)
            let page = try #require(pending["3ds_url"].flatMap(URL.init(string:)))
            let done = try await harness.post(page, body: Data("outcome=approve".utf8), contentType: "application/x-www-form-urlencoded")
            #expect(done.status == 200 && done.text.contains("14000"))
            var unknown = URLComponents(url: page, resolvingAgainstBaseURL: false)
            unknown?.query = "FORTSESSIONID=nope"
            #expect(try await harness.get(try #require(unknown?.url)).status == 404)
            let bad = try await harness.post(page, body: Data("outcome=maybe".utf8), contentType: "application/x-www-form-urlencoded")
            #expect(bad.status == 400)
        }
    }

    // MARK: CHECK_STATUS

    @Test("CHECK_STATUS: 12000 with transaction_* and the amounts, no amount or currency; unknown orders are 12036 (the query worked, the order is not found)")
    func checkStatus() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let paid = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
            let status = try await harness.checkStatus(reference: reference)
            #expect(status["query_command"] == "CHECK_STATUS")
            #expect(status["status"] == "12" && status["response_code"] == "12000")
            #expect(status["transaction_status"] == "14" && status["transaction_code"] == "14000")
            #expect(status["transaction_message"] == "Success")
            #expect(status.value("authorized_amount") == .number("1000"))
            #expect(status.value("captured_amount") == .number("1000"))
            #expect(status.value("refunded_amount") == .number("0"))
            #expect(status["authorization_code"] == paid["authorization_code"])
            #expect(status["amount"] == nil && status["currency"] == nil)
            #expect(status["fort_id"] == paid["fort_id"])
            #expect(status.isSigned(by: harness.merchant))
            let byFortID = try await harness.checkStatus(fortID: paid["fort_id"])
            #expect(byFortID["merchant_reference"] == reference && byFortID["response_code"] == "12000")
            let unknown = try await harness.checkStatus(reference: "never-used")
            #expect(unknown["status"] == "12" && unknown["response_code"] == "12036")
            #expect(unknown["response_message"] == "Order not found")
            #expect(try await harness.checkStatus(reference: reference, fortID: "1")["response_code"] == "12036")
        }
    }

    @Test("the uncertain card answers 15777 but was charged: CHECK_STATUS says 14000")
    func uncertainIsCharged() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            #expect(try await harness.pay(card: PayFortEmulator.TestCard.uncertain, reference: reference)["response_code"] == "15777")
            let status = try await harness.checkStatus(reference: reference)
            #expect(status["transaction_code"] == "14000")
            #expect(status.value("captured_amount") == .number("1000"))
        }
    }

    // MARK: Maintenance

    @Test("capture, refund (partial and full) and void follow the money")
    func captureRefundVoid() async throws {
        try await PayFortHarness.with { harness in
            let authorized = PayFortHarness.newReference()
            #expect(try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: authorized)["status"] == "02")
            #expect(try await harness.maintenance("REFUND", reference: authorized, amount: 100)["response_code"] == "07048")
            let capture = try await harness.maintenance("CAPTURE", reference: authorized, amount: 600)
            #expect(capture["status"] == "04" && capture["response_code"] == "04000")
            #expect(capture["fort_id"] != nil && capture.value("amount") == .number("600"))
            #expect(capture.isSigned(by: harness.merchant))
            #expect(try await harness.maintenance("CAPTURE", reference: authorized, amount: 500)["response_code"] == "05042")
            #expect(try await harness.maintenance("VOID_AUTHORIZATION", reference: authorized, amount: nil)["response_code"] == "09666")
            #expect(try await harness.maintenance("REFUND", reference: authorized, amount: 200)["response_code"] == "06000")
            #expect(try await harness.maintenance("REFUND", reference: authorized, amount: 401)["response_code"] == "07048")
            #expect(try await harness.maintenance("REFUND", reference: authorized, amount: 400)["response_code"] == "06000")
            let status = try await harness.checkStatus(reference: authorized)
            #expect(status["transaction_status"] == "06" && status["transaction_code"] == "06000")
            #expect(status.value("captured_amount") == .number("600"))
            #expect(status.value("refunded_amount") == .number("600"))

            let toVoid = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.amex, command: "AUTHORIZATION", reference: toVoid)
            let void = try await harness.maintenance("VOID_AUTHORIZATION", reference: toVoid, amount: nil)
            #expect(void["response_code"] == "08000" && void["amount"] == nil && void["currency"] == nil)
            #expect(try await harness.maintenance("CAPTURE", reference: toVoid, amount: 100)["response_code"] == "05666")
            let voided = try await harness.checkStatus(reference: toVoid)
            #expect(voided["transaction_status"] == "08")
            #expect(voided.value("authorized_amount") == .number("0"))

            let purchased = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: purchased)
            #expect(try await harness.maintenance("CAPTURE", reference: purchased, amount: 100)["response_code"] == "05666")
            #expect(try await harness.maintenance("REFUND", reference: purchased, amount: 1001)["response_code"] == "07048")
            #expect(try await harness.maintenance("REFUND", reference: purchased, amount: 1000)["response_code"] == "06000")
            #expect(try await harness.maintenance("REFUND", reference: "unknown", amount: 1)["response_code"] == "07036")

            let declined = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.declined, command: "AUTHORIZATION", reference: declined)
            #expect(try await harness.maintenance("CAPTURE", reference: declined, amount: 100)["response_code"] == "05666")

            #expect(await harness.emulator.ledger.count == 3)
            let operations = await harness.emulator.operations
            #expect(operations.map(\.command) == ["CAPTURE", "REFUND", "REFUND", "VOID_AUTHORIZATION", "REFUND"])
            #expect(operations.map(\.status) == ["04", "06", "06", "08", "06"])
            #expect(operations.map(\.amountMinor) == [600, 200, 400, 1000, 1000])
        }
    }

    @Test("a maintenance operation in another currency is refused with 013")
    func maintenanceCurrency() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: reference)
            var params: [String: JSONValue] = ["command": "CAPTURE", "access_code": .string(harness.merchant.accessCode),
                                               "merchant_identifier": .string(harness.merchant.merchantIdentifier),
                                               "language": "en", "merchant_reference": .string(reference),
                                               "amount": .number("100"), "currency": "EUR"]
            #expect(try await harness.call(params)["response_code"] == "05013")
            params["currency"] = "USD"
            #expect(try await harness.call(params)["response_code"] == "04000")
        }
    }

    // MARK: Transaction feedback

    @Test("feedback is retried until acknowledged, form-encoded, signed with the response phrase")
    func notificationRetries() async throws {
        try await withReceiver(answering: [500, 503]) { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url) { harness in
                let reference = PayFortHarness.newReference()
                _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
                await harness.emulator.waitForNotifications()

                let log = await harness.emulator.notificationLog()
                #expect(log.map(\.attempt) == [1, 2, 3])
                #expect(log.map(\.status) == [500, 503, 200])
                #expect(log.map(\.acknowledged) == [false, false, true])
                #expect(log.allSatisfy { $0.url == receiver.url && $0.merchantReference == reference && $0.responseCode == "14000" })

                let posts = await receiver.received()
                #expect(posts.count == 3)
                for post in posts {
                    #expect(post.method == "POST")
                    #expect(post.contentType?.hasPrefix("application/x-www-form-urlencoded") == true)
                    var fields = try #require(post.formFields)
                    #expect(fields["status"] == "14" && fields["command"] == "PURCHASE")
                    #expect(fields["merchant_reference"] == reference)
                    #expect(fields["amount"] == "1000" && fields["currency"] == "USD")
                    #expect(fields["customer_email"] == "customer@domain.com")
                    #expect(fields["merchant_extra1"] == "extra one")
                    #expect(fields["card_security_code"] == nil)
                    #expect(fields["card_number"] == PayFortEmulator.TestCard.mask(PayFortEmulator.TestCard.visa))
                    let signature = try #require(fields["signature"])
                fields["signature"] = nil
                    #expect(PayFortEmulator.Signature.sign(fields, phrase: harness.merchant.responsePhrase, algorithm: .sha256)
                            == signature)
                }
                #expect(await harness.emulator.ledger.count == 1)
            }
        }
    }

    @Test("feedback as JSON when the merchant's channel asks for it: an object of strings")
    func jsonFeedback() async throws {
        try await withReceiver { receiver in
            var merchant = PayFortHarness.sha256Merchant
            merchant.notificationURL = receiver.url
            merchant.feedbackFormat = .json
            let emulator = PayFortEmulator(merchants: [merchant], notificationRetry: (2, .milliseconds(10)))
            let sandbox = try await Sandbox.start(payFort: emulator)
            let harness = PayFortHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
            let reference = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: reference)
            await emulator.waitForNotifications()
            let post = try #require(await receiver.received().first)
            #expect(post.contentType?.hasPrefix("application/json") == true)
            let object = try #require(try JSONValue.parse(Array(post.body)).objectMembers)
            #expect(object.allSatisfy { $0.value.stringValue != nil })
            var fields = Dictionary(object.map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
            #expect(fields["amount"] == "1000" && fields["response_code"] == "02000")
            let signature = try #require(fields["signature"])
                fields["signature"] = nil
            #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: merchant.responsePhrase, algorithm: .sha256))
            await harness.stop()
        }
    }

    @Test("feedback gives up after the configured tries; a 302 counts as acknowledged")
    func notificationGivesUp() async throws {
        try await withReceiver(otherwise: 500) { failing in
            try await PayFortHarness.with(notificationURL: failing.url, notificationRetry: (4, .milliseconds(10))) { harness in
                _ = try await harness.pay(card: PayFortEmulator.TestCard.declined)
                await harness.emulator.waitForNotifications()
                let log = await harness.emulator.notificationLog()
                #expect(log.map(\.attempt) == [1, 2, 3, 4])
                #expect(log.allSatisfy { $0.status == 500 && $0.responseCode == "13666" })
                #expect(await failing.received().count == 4)
            }
        }
        try await withReceiver(otherwise: 302) { redirecting in
            try await PayFortHarness.with(notificationURL: redirecting.url) { second in
                _ = try await second.pay(card: PayFortEmulator.TestCard.visa)
                await second.emulator.waitForNotifications()
                #expect(await second.emulator.notificationLog().map(\.status) == [302])
            }
        }
    }

    @Test("feedback: the uncertain card's says charged; maintenance operations send theirs; refusals of requests send none")
    func notificationContent() async throws {
        try await withReceiver { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url) { harness in
                _ = try await harness.pay(card: PayFortEmulator.TestCard.uncertain)
                let reference = PayFortHarness.newReference()
                _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: reference)
                _ = try await harness.maintenance("CAPTURE", reference: reference, amount: 1000)
                _ = try await harness.call(harness.paymentParams(token: "unknown"))   // 00044: no order, no feedback
                _ = try await harness.checkStatus(reference: reference)               // a query: no feedback
                await harness.emulator.waitForNotifications()
                let codes = await receiver.received().compactMap { $0.formFields?["response_code"] }
                #expect(codes == ["14000", "02000", "04000"])
            }
        }
    }

    // MARK: Faults

    @Test("injected server error: HTTP 503, nothing processed")
    func faultServerError() async throws {
        try await PayFortHarness.with { harness in
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa)["token_name"])
            await harness.emulator.injectFault(.serverError, matching: "PURCHASE")
            let params = harness.paymentParams(token: token)
            let failed = try await harness.post(harness.apiURL, body: Data(signed(params, harness).utf8), contentType: "application/json")
            #expect(failed.status == 503)
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.checkStatus(reference: params["merchant_reference"]?.parameterText)["response_code"] == "12036")
            // The fault was used once.
            #expect(try await harness.call(params)["response_code"] == "14000")
        }
    }

    @Test("a fault waits for a request with its command")
    func faultMatchesCommand() async throws {
        try await PayFortHarness.with { harness in
            await harness.emulator.injectFault(.serverError, matching: "CHECK_STATUS")
            let reference = PayFortHarness.newReference()
            #expect(try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)["response_code"] == "14000")
            var params: [String: JSONValue] = ["query_command": "CHECK_STATUS", "access_code": .string(harness.merchant.accessCode),
                                               "merchant_identifier": .string(harness.merchant.merchantIdentifier),
                                               "language": "en", "merchant_reference": .string(reference)]
            let failed = try await harness.post(harness.apiURL, body: Data(signed(params, harness).utf8), contentType: "application/json")
            #expect(failed.status == 503)
            params["language"] = "ar"
            #expect(try await harness.call(params)["transaction_status"] == "14")
        }
    }

    @Test("injected timeout: processed, no answer for the hold, then HTTP 504; CHECK_STATUS tells")
    func faultTimeout() async throws {
        try await PayFortHarness.with(timeoutHold: .milliseconds(400)) { harness in
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa)["token_name"])
            let admin = try await harness.post(harness.sandbox.baseURL.appendingPathComponent("admin/payfort/faults"),
                                               body: Data(#"{"fault":"timeout","command":"PURCHASE"}"#.utf8),
                                               contentType: "application/json")
            #expect(admin.status == 200)
            let params = harness.paymentParams(token: token)
            let start = ContinuousClock.now
            let answer = try await harness.post(harness.apiURL, body: Data(signed(params, harness).utf8), contentType: "application/json")
            #expect(ContinuousClock.now - start >= .milliseconds(400))
            #expect(answer.status == 504)
            #expect(await harness.emulator.ledger.count == 1)
            let status = try await harness.checkStatus(reference: params["merchant_reference"]?.parameterText)
            #expect(status["transaction_status"] == "14")
        }
    }

    @Test("injected connection drop: processed, no answer")
    func faultDrop() async throws {
        try await PayFortHarness.with { harness in
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa)["token_name"])
            await harness.emulator.injectFault(.dropConnection)
            let params = harness.paymentParams(token: token)
            let fresh = PayFortHarness.makeSession()  // no pooled connection to retry on
            defer { fresh.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) {
                _ = try await harness.post(harness.apiURL, body: Data(signed(params, harness).utf8),
                                           contentType: "application/json", session: fresh)
            }
            #expect(await harness.emulator.ledger.count == 1)
            #expect(try await harness.checkStatus(reference: params["merchant_reference"]?.parameterText)["transaction_status"] == "14")
        }
    }

    @Test("injected technical problem: the next purchase is declined 13006, nothing charged")
    func faultTechnicalProblem() async throws {
        try await PayFortHarness.with { harness in
            await harness.emulator.injectFault(.technicalProblem, matching: "PURCHASE")
            let declined = try await harness.pay(card: PayFortEmulator.TestCard.visa)
            let next = try await harness.pay(card: PayFortEmulator.TestCard.visa)
            #expect(declined["response_code"] == "13006" && next["response_code"] == "14000")
            #expect(await harness.emulator.ledger.count == 1)
        }
    }

    @Test("the timeout card: held, HTTP 504, recorded as a failure and not charged")
    func timeoutCard() async throws {
        try await PayFortHarness.with(timeoutHold: .milliseconds(200)) { harness in
            let reference = PayFortHarness.newReference()
            let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.timeout)["token_name"])
            let params = harness.paymentParams(token: token, reference: reference)
            let answer = try await harness.post(harness.apiURL, body: Data(signed(params, harness).utf8), contentType: "application/json")
            #expect(answer.status == 504)
            let status = try await harness.checkStatus(reference: reference)
            #expect(status["transaction_status"] == "13")
            #expect(status["transaction_code"] == "13006")
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("stop() lets a held request go at once")
    func stopReleasesHeldRequests() async throws {
        let harness = try await PayFortHarness.start(timeoutHold: .seconds(30))
        let token = try #require(try await harness.tokenize(card: PayFortEmulator.TestCard.visa)["token_name"])
        await harness.emulator.injectFault(.timeout)
        let body = Data(signed(harness.paymentParams(token: token), harness).utf8)
        let held = Task { try? await harness.post(harness.apiURL, body: body, contentType: "application/json") }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        await harness.stop()
        #expect(ContinuousClock.now - start < .seconds(10), "a held request (30 s) was let go when the sandbox stopped")
        _ = await held.value
    }

    @Test("admin routes: bad faults refused; ledger as JSON")
    func adminRoutes() async throws {
        try await PayFortHarness.with { harness in
            let faults = harness.sandbox.baseURL.appendingPathComponent("admin/payfort/faults")
            #expect(try await harness.post(faults, body: Data(#"{"fault":"meltdown"}"#.utf8), contentType: "application/json").status == 400)
            #expect(try await harness.post(faults, body: Data("nope".utf8), contentType: "application/json").status == 400)
            let reference = PayFortHarness.newReference()
            let payment = try await harness.pay(card: PayFortEmulator.TestCard.mastercard, reference: reference)
            let ledger = try await harness.get(harness.sandbox.baseURL.appendingPathComponent("admin/payfort/ledger"))
            #expect(ledger.status == 200)
            let entries = try JSONDecoder().decode([PayFortEmulator.Charge].self, from: ledger.body)
            #expect(entries == [PayFortEmulator.Charge(merchantReference: reference, fortID: payment["fort_id"] ?? "",
                                                       amountMinor: 1000, currency: "USD", command: "PURCHASE", status: "14")])
            #expect(ledger.text.contains(#""merchant_reference":"\#(reference)""#))
            #expect(try await harness.get(harness.sandbox.baseURL.appendingPathComponent("healthz")).status == 200)
        }
    }

    /// The JSON body of `params` signed with the harness merchant's request phrase.
    func signed(_ params: [String: JSONValue], _ harness: PayFortHarness) -> String {
        var params = params
        let members = params.map { JSONValue.Member(key: $0.key, value: $0.value) }
        params["signature"] = .string(PayFortEmulator.Signature.sign(members, phrase: harness.merchant.requestPhrase, algorithm: .sha256))
        return JSONValue.sortedObject(params).serialized
    }
}

/// The custom merchant page (`POST /FortAPI/paymentPage`, TOKENIZATION) over real HTTP.
@Suite struct PayFortEmulatorMerchantPageTests {
    @Test("tokenization: 302 to the return URL with the signed result; the card fields are not signed")
    func tokenization() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let raw = try await harness.postPage(harness.tokenizationForm(card: PayFortEmulator.TestCard.visa, reference: reference))
            #expect(raw.status == 302)
            let location = try #require(raw.headers["location"].flatMap(URL.init(string:)))
            #expect(location.absoluteString.hasPrefix(PayFortHarness.returnURL + "&"))
            var fields = PayFortHarness.queryFields(location)
            fields["state"] = nil   // the return URL's own query
            #expect(fields["service_command"] == "TOKENIZATION")
            #expect(fields["status"] == "18" && fields["response_code"] == "18000" && fields["response_message"] == "Success")
            #expect(fields["merchant_reference"] == reference)
            #expect(fields["return_url"] == PayFortHarness.returnURL)
            #expect(fields["card_number"] == "400555******0001")
            #expect(fields["card_bin"] == "400555")
            #expect(fields["expiry_date"] == "****")
            #expect(fields["card_holder_name"] == "John Smith")
            #expect(fields["card_security_code"] == nil)
            let token = try #require(fields["token_name"])
            #expect(token.count == 32 && token.allSatisfy(\.isHexDigit))
            #expect(!location.absoluteString.contains(PayFortEmulator.TestCard.visa))
            let signature = try #require(fields["signature"])
                fields["signature"] = nil
            #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: harness.merchant.responsePhrase,
                                                     algorithm: .sha256))
            // The token pays.
            #expect(try await harness.call(harness.paymentParams(token: token))["response_code"] == "14000")
        }
    }

    @Test("the merchant's own token_name, and a card_holder_name signed as the PHP SDK may sign it, are accepted")
    func merchantTokenNameAndSignedHolder() async throws {
        try await PayFortHarness.with { harness in
            let given = try await harness.tokenize(card: PayFortEmulator.TestCard.mastercard, tokenName: "my-token.1")
            #expect(given["token_name"] == "my-token.1" && given["response_code"] == "18000")
            var hidden: [String: String] = ["service_command": "TOKENIZATION", "access_code": harness.merchant.accessCode,
                                            "merchant_identifier": harness.merchant.merchantIdentifier,
                                            "merchant_reference": "ref-holder", "language": "en",
                                            "return_url": PayFortHarness.returnURL, "card_holder_name": "Jane Roe"]
            hidden["signature"] = PayFortEmulator.Signature.sign(hidden, phrase: harness.merchant.requestPhrase, algorithm: .sha256)
            let form = hidden.map { ($0.key, $0.value) } + [("card_number", PayFortEmulator.TestCard.visa), ("expiry_date", "3012"),
                                                             ("card_security_code", "123")]
            let raw = try await harness.postPage(form)
            let fields = PayFortHarness.queryFields(try #require(raw.headers["location"].flatMap(URL.init(string:))))
            #expect(fields["response_code"] == "18000")
            #expect(fields["card_holder_name"] == "Jane Roe")
        }
    }

    @Test("refusals come back signed on the return URL", arguments: [
        ("signature", "00008"), ("card_number", "17016"), ("expiry_date", "00002"), ("card_security_code", "00002"),
        ("language", "00002"), ("merchant_reference", "00001"), ("service_command", "00004"),
    ])
    func refusals(field: String, code: String) async throws {
        try await PayFortHarness.with { harness in
            var form = harness.tokenizationForm(card: PayFortEmulator.TestCard.visa)
            let replacement: String? = switch field {
            case "signature": String(repeating: "0", count: 64)
            case "card_number": "4005550000000002"
            case "expiry_date": "3013"
            case "card_security_code": "12"
            case "merchant_reference": nil
            default: "x"
            }
            if field == "language" || field == "merchant_reference" || field == "service_command" {
                // A hidden field: re-sign what is posted.
                var hidden = Dictionary(form.filter { !PayFortEmulator.cardFields.contains($0.0) && $0.0 != "signature" },
                                        uniquingKeysWith: { $1 })
                hidden[field] = replacement
                if field == "language" { hidden[field] = "fr" }
                hidden["signature"] = PayFortEmulator.Signature.sign(hidden, phrase: harness.merchant.requestPhrase, algorithm: .sha256)
                form = hidden.map { ($0.key, $0.value) } + form.filter { PayFortEmulator.cardFields.contains($0.0) }
            } else {
                form = form.map { $0.0 == field ? ($0.0, replacement ?? "") : $0 }
            }
            let raw = try await harness.postPage(form)
            #expect(raw.status == 302)
            var fields = PayFortHarness.queryFields(try #require(raw.headers["location"].flatMap(URL.init(string:))))
            fields["state"] = nil
            #expect(fields["response_code"] == code, "\(fields["response_message"] ?? "")")
            #expect(fields["token_name"] == nil)
            let signature = try #require(fields["signature"])
                fields["signature"] = nil
            #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: harness.merchant.responsePhrase,
                                                     algorithm: .sha256))
        }
    }

    @Test("without a usable return URL, or from an unknown merchant, the result is a page")
    func pages() async throws {
        try await PayFortHarness.with { harness in
            let saved = try await harness.postPage(harness.tokenizationForm(card: PayFortEmulator.TestCard.visa, returnURL: nil))
            #expect(saved.status == 200 && saved.text.contains("18000"))
            #expect(!saved.text.contains(PayFortEmulator.TestCard.visa))
            var unknown = harness.tokenizationForm(card: PayFortEmulator.TestCard.visa)
            unknown = unknown.map { $0.0 == "access_code" ? ($0.0, "nobody") : $0 }
            let refused = try await harness.postPage(unknown)
            #expect(refused.status == 400 && refused.text.contains("00010") && refused.headers["location"] == nil)
            let garbage = try await harness.post(harness.pageURL, body: Data("a=%2".utf8), contentType: "application/x-www-form-urlencoded")
            #expect(garbage.status == 400)
        }
    }
}

/// The FORT mobile SDK stand-in (`POST /sandbox-only/fort-sdk/pay`, not an APS API).
@Suite struct PayFortEmulatorMobileSDKTests {
    /// The request dictionary an app hands the FORT SDK (FORT mobile SDK guide v3.4 §6.7.1).
    static func request(token: String, command: String = "PURCHASE", reference: String = PayFortHarness.newReference(),
                        extra: [String: String] = [:]) -> [String: String] {
        ["command": command, "merchant_reference": reference, "amount": "1000", "currency": "USD", "language": "en",
         "customer_email": "customer@domain.com", "sdk_token": token, "merchant_extra": "kept"].merging(extra) { $1 }
    }

    @Test("success: the operation is performed for the token's device, charged, notified, and the token is used up")
    func success() async throws {
        try await withReceiver { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url) { harness in
                let token = try await harness.sdkToken()
                let reference = PayFortHarness.newReference()
                let callback = try await PayFortDevice.payInSDK(
                    payFortBaseURL: harness.sandbox.payFortBaseURL, request: Self.request(token: token, reference: reference),
                    deviceID: PayFortHarness.deviceID, card: PayFortDevice.Card(number: PayFortEmulator.TestCard.visa))
                #expect(callback.code == "success")
                let response = callback.response
                #expect(response["response_code"] == "14000" && response["status"] == "14")
                #expect(response["merchant_reference"] == reference && response["amount"] == "1000")
                #expect(response["sdk_token"] == token && response["merchant_extra"] == "kept")
                #expect(response["card_number"] == "400555******0001" && response["expiry_date"] == "3012")
                #expect(response["fort_id"] != nil && response["authorization_code"] != nil && response["eci"] == "ECOMMERCE")
                #expect(response["payment_option"] == "VISA")
                #expect(response["card_security_code"] == nil && response["signature"] == nil && response["token_name"] == nil)
                #expect(await harness.emulator.ledger.map(\.merchantReference) == [reference])
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().compactMap { $0.formFields?["response_code"] } == ["14000"])
                // Single use.
                let again = try await PayFortDevice.payInSDK(
                    payFortBaseURL: harness.sandbox.payFortBaseURL, request: Self.request(token: token),
                    deviceID: PayFortHarness.deviceID, card: PayFortDevice.Card(number: PayFortEmulator.TestCard.visa))
                #expect(again.code == "failure" && again.response["response_code"] == "00002")
                #expect(again.response["response_message"]?.contains("sdk_token") == true)
            }
        }
    }

    @Test("an SDK token used from another device: failure 00070 device_id mismatch, nothing charged, the token kept")
    func deviceMismatch() async throws {
        try await PayFortHarness.with { harness in
            let token = try await harness.sdkToken(device: "device-A")
            let request = Self.request(token: token)
            let card = PayFortDevice.Card(number: PayFortEmulator.TestCard.visa)
            let other = try await PayFortDevice.payInSDK(payFortBaseURL: harness.sandbox.payFortBaseURL, request: request,
                                                         deviceID: "device-B", card: card)
            #expect(other.code == "failure")
            #expect(other.response["response_code"] == "00070" && other.response["response_message"] == "device_id mismatch")
            #expect(await harness.emulator.ledger.isEmpty)
            let same = try await PayFortDevice.payInSDK(payFortBaseURL: harness.sandbox.payFortBaseURL, request: request,
                                                        deviceID: "device-A", card: card)
            #expect(same.code == "success")
        }
    }

    @Test("cancel: 00072, nothing processed")
    func cancel() async throws {
        try await PayFortHarness.with { harness in
            let token = try await harness.sdkToken()
            let cancelled = try await PayFortDevice.payInSDK(
                payFortBaseURL: harness.sandbox.payFortBaseURL, request: Self.request(token: token),
                deviceID: PayFortHarness.deviceID, card: nil, cancel: true)
            #expect(cancelled.code == "cancel")
            #expect(cancelled.response["response_code"] == "00072" && cancelled.response["status"] == "00")
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("declines, 3-D Secure in the SDK, amounts and expiry", arguments: [
        (PayFortEmulator.TestCard.declined, true, "1000", "failure", "13666"),
        (PayFortEmulator.TestCard.threeDSecure, true, "1000", "success", "14000"),
        (PayFortEmulator.TestCard.threeDSecure, false, "1000", "failure", "13030"),
        (PayFortEmulator.TestCard.visa, true, "10.00", "failure", "00005"),
        (PayFortEmulator.TestCard.visa, true, "-1", "failure", "00005"),
        ("4005550000000002", true, "1000", "failure", "00016"),
    ])
    func outcomes(card: String, approve: Bool, amount: String, code: String, responseCode: String) async throws {
        try await PayFortHarness.with { harness in
            let token = try await harness.sdkToken()
            let callback = try await PayFortDevice.payInSDK(
                payFortBaseURL: harness.sandbox.payFortBaseURL, request: Self.request(token: token, extra: ["amount": amount]),
                deviceID: PayFortHarness.deviceID, card: PayFortDevice.Card(number: card), approveThreeDSecure: approve)
            #expect(callback.code == code)
            #expect(callback.response["response_code"] == responseCode)
            #expect(await harness.emulator.ledger.count == (code == "success" ? 1 : 0))
        }
    }

    @Test("an expired SDK token fails; remember_me YES returns a token_name that pays with a saved card")
    func tokenLifetimeAndSavedCard() async throws {
        let clock = TestClock()
        try await PayFortHarness.with(now: { clock.now }) { harness in
            let late = try await harness.sdkToken()
            clock.advance(by: 3601)
            let expired = try await PayFortDevice.payInSDK(
                payFortBaseURL: harness.sandbox.payFortBaseURL, request: Self.request(token: late),
                deviceID: PayFortHarness.deviceID, card: PayFortDevice.Card(number: PayFortEmulator.TestCard.visa))
            #expect(expired.response["response_code"] == "00002")
            #expect(expired.response["response_message"]?.contains("expired") == true)

            let first = try await PayFortDevice.payInSDK(
                payFortBaseURL: harness.sandbox.payFortBaseURL,
                request: Self.request(token: try await harness.sdkToken(), command: "AUTHORIZATION", extra: ["remember_me": "YES"]),
                deviceID: PayFortHarness.deviceID, card: PayFortDevice.Card(number: PayFortEmulator.TestCard.mastercard))
            #expect(first.code == "success" && first.response["response_code"] == "02000")
            let saved = try #require(first.response["token_name"])
            let second = try await PayFortDevice.payInSDK(
                payFortBaseURL: harness.sandbox.payFortBaseURL,
                request: Self.request(token: try await harness.sdkToken(), extra: ["token_name": saved]),
                deviceID: PayFortHarness.deviceID, card: nil)
            #expect(second.code == "success" && second.response["card_number"] == "512345******0008")
        }
    }

    @Test("a body of the wrong shape is 400 with the field named", arguments: [
        ("nope", "JSON object"), (#"{"request":{}}"#, "device_id"), (#"{"device_id":"d"}"#, "request"),
        (#"{"device_id":"d","request":{"amount":1000}}"#, "request.amount"),
        (#"{"device_id":"d","request":{},"action":"dance"}"#, "action"),
    ])
    func malformed(body: String, named: String) async throws {
        try await PayFortHarness.with { harness in
            let url = harness.sandbox.payFortBaseURL.appendingPathComponent(PayFortEmulator.mobileSDKPath)
            let raw = try await harness.post(url, body: Data(body.utf8), contentType: "application/json")
            #expect(raw.status == 400)
            #expect(raw.text.contains(named))
        }
    }
}

/// ``SandboxPayFortCustomer``: the customer's side, as an app's presenter sees it.
@Suite struct PayFortEmulatorCustomerTests {
    @Test("launch plays the FORT SDK and returns its callback in-process")
    func launch() async throws {
        try await PayFortHarness.with { harness in
            let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
            let token = try await harness.sdkToken(device: SandboxPayFortCustomer.defaultDeviceID)
            let customer = SandboxPayFortCustomer(payFortBaseURL: harness.sandbox.payFortBaseURL, returns: returns)
            let result = try #require(try await customer.launch(WalletLaunch(wallet: "payfort",
                                                                             parameters: PayFortEmulatorMobileSDKTests.request(token: token))))
            #expect(result.code == "success" && result.parameters["response_code"] == "14000")
            #expect(try await customer.launch(WalletLaunch(wallet: "wechat", parameters: [:])) == nil)
            var cancelling = customer
            cancelling.cancelsInSDK = true
            let cancelled = try await cancelling.launch(WalletLaunch(wallet: "payfort",
                                                                     parameters: PayFortEmulatorMobileSDKTests.request(token: token)))
            #expect(cancelled?.code == "canceled")   // the SDK's callback name (fort-ios-sdk)
        }
    }

    @Test("post sends the merchant page's form and hands the redirect to the return handler; open plays 3-D Secure")
    func postAndThreeDSecure() async throws {
        try await PayFortHarness.with { harness in
            let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
            let customer = SandboxPayFortCustomer(payFortBaseURL: harness.sandbox.payFortBaseURL, returns: returns,
                                                  card: PayFortDevice.Card(number: PayFortEmulator.TestCard.threeDSecure))
            let expected = try returns.expectReturn()
            let form = harness.tokenizationForm(card: PayFortEmulator.TestCard.threeDSecure, returnURL: expected.url.absoluteString)
            try await customer.post(FormPost(url: harness.pageURL, fields: form.map { FormPost.Field($0.0, $0.1) }))
            guard case .returned(let back) = await returns.wait(for: expected, timeout: .seconds(5)) else {
                Issue.record("the customer never came back")
                return
            }
            let token = try #require(PayFortHarness.queryFields(back)["token_name"])
            let second = try returns.expectReturn()
            var params = harness.paymentParams(token: token)
            params["return_url"] = .string(second.url.absoluteString)
            let pending = try await harness.call(params)
            try await customer.open(try #require(pending["3ds_url"].flatMap(URL.init(string:))), handoff: .threeDSecure)
            guard case .returned(let final) = await returns.wait(for: second, timeout: .seconds(5)) else {
                Issue.record("the customer never came back from 3-D Secure")
                return
            }
            #expect(PayFortHarness.queryFields(final)["response_code"] == "14000")
            // A page that does not redirect is an error, not a hang.
            await #expect(throws: CheckoutError.self) {
                try await customer.post(FormPost(url: harness.pageURL, fields: [FormPost.Field("a", "b")]))
            }
        }
    }

    @Test("collect fills a card form by field kind")
    func collect() async throws {
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let customer = SandboxPayFortCustomer(payFortBaseURL: URL(string: "http://127.0.0.1:1/payfort")!, returns: returns,
                                              card: PayFortDevice.Card(number: PayFortEmulator.TestCard.visa, expiry: "3012"))
        let form = FormSpec(fields: [
            FormField(id: "number", labelKey: "n", kind: .cardNumber, required: true),
            FormField(id: "expiry", labelKey: "e", kind: .expiryDate, required: true, maxLength: 5),
            FormField(id: "cvv", labelKey: "c", kind: .securityCode, required: true),
            FormField(id: "card_holder_name", labelKey: "h", kind: .text, required: false),
        ])
        let values = try #require(try await customer.collect(form))
        #expect(values["number"] == PayFortEmulator.TestCard.visa && values["expiry"] == "12/30")
        #expect(values["cvv"] == "123" && values["card_holder_name"] == "Sandbox Customer")
    }
}
