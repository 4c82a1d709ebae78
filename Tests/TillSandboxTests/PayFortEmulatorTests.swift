import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The PayFort emulator over real HTTP on 127.0.0.1.
@Suite struct PayFortEmulatorTests {
    // MARK: SDK_TOKEN

    @Test("SDK token: created, echoed and signed with the response phrase", arguments: [false, true])
    func sdkTokenHappyPath(sha512: Bool) async throws {
        try await PayFortHarness.with { harness in
            let merchant = sha512 ? PayFortHarness.sha512Merchant : PayFortHarness.sha256Merchant
            let result = try await harness.call(harness.tokenParams(merchant: merchant), merchant: merchant)
            #expect(result.status == 200)
            #expect(result["status"] == "22")
            #expect(result["response_code"] == "22000")
            #expect(result["response_message"] == "Success")
            let token = try #require(result["sdk_token"])
            #expect((1...100).contains(token.count) && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
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

    @Test("a bad signature is refused with 00008, signed, and not processed")
    func sdkTokenBadSignature() async throws {
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

            // The request phrase's signature is accepted in upper case too.
            let upper = PayFortEmulator.Signature.sign(members, phrase: harness.merchant.requestPhrase, algorithm: .sha256).uppercased()
            #expect(try await harness.call(params, signature: upper)["response_code"] == "22000")
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

    @Test("unknown credentials: 00002, unsigned")
    func unknownMerchant() async throws {
        try await PayFortHarness.with { harness in
            var params = harness.tokenParams()
            params["access_code"] = "wrong-access-code"
            let wrongAccess = try await harness.call(params)
            #expect(wrongAccess["response_code"] == "00002")
            #expect(wrongAccess["response_message"]?.contains("access_code") == true)
            #expect(wrongAccess["signature"] == nil)
            params["merchant_identifier"] = "nobody"
            let unknown = try await harness.call(params)
            #expect(unknown["response_code"] == "00002")
            #expect(unknown["response_message"]?.contains("merchant_identifier") == true)
        }
    }

    @Test("malformed JSON: HTTP 400 with 00002", arguments: ["{not json", "[1,2]", "", #"{"a":1,"a":2}"#])
    func malformedJSON(body: String) async throws {
        try await PayFortHarness.with { harness in
            let raw = try await harness.post(harness.apiURL, body: Data(body.utf8), contentType: "application/json")
            #expect(raw.status == 400)
            #expect(raw.text == #"{"status":"00","response_code":"00002","response_message":"Invalid parameter format"}"#)
        }
    }

    @Test("nested values are refused with 00002 (not a crash)")
    func nestedValue() async throws {
        try await PayFortHarness.with { harness in
            var params = harness.tokenParams()
            params["apple_header"] = .object([.init(key: "apple_transactionId", value: "abc")])
            let result = try await harness.call(params)
            #expect(result["response_code"] == "00002")
            #expect(result["response_message"]?.contains("apple_header") == true)
            #expect(result.isSigned(by: harness.merchant))
        }
    }

    // MARK: Test cards

    struct CardCase: Sendable, CustomTestStringConvertible {
        var card: String
        var command: String
        var status: String
        var code: String
        var message: String
        var charged: Bool
        var paymentOption: String?
        var testDescription: String { "\(card) \(command) → \(code)" }
    }

    static let cardCases: [CardCase] = [
        CardCase(card: PayFortEmulator.TestCard.visa, command: "PURCHASE", status: "14", code: "14000", message: "Success", charged: true, paymentOption: "VISA"),
        CardCase(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", status: "02", code: "02000", message: "Success", charged: true, paymentOption: "VISA"),
        CardCase(card: PayFortEmulator.TestCard.mastercard, command: "PURCHASE", status: "14", code: "14000", message: "Success", charged: true, paymentOption: "MASTERCARD"),
        CardCase(card: PayFortEmulator.TestCard.amex, command: "AUTHORIZATION", status: "02", code: "02000", message: "Success", charged: true, paymentOption: "AMEX"),
        CardCase(card: PayFortEmulator.TestCard.mada, command: "PURCHASE", status: "14", code: "14000", message: "Success", charged: true, paymentOption: "MADA"),
        CardCase(card: PayFortEmulator.TestCard.declined, command: "PURCHASE", status: "13", code: "13071", message: "Transaction declined", charged: false),
        CardCase(card: PayFortEmulator.TestCard.declined, command: "AUTHORIZATION", status: "03", code: "03071", message: "Transaction declined", charged: false),
        CardCase(card: PayFortEmulator.TestCard.insufficientFunds, command: "PURCHASE", status: "13", code: "13064", message: "Insufficient funds", charged: false),
        CardCase(card: PayFortEmulator.TestCard.insufficientFunds, command: "AUTHORIZATION", status: "03", code: "03064", message: "Insufficient funds", charged: false),
        CardCase(card: PayFortEmulator.TestCard.uncertain, command: "PURCHASE", status: "15", code: "15006", message: "Technical problem", charged: true),
        CardCase(card: "4111111111111111", command: "PURCHASE", status: "14", code: "14000", message: "Success", charged: true, paymentOption: "VISA"),
        CardCase(card: "4000000000000003", command: "PURCHASE", status: "00", code: "00016", message: "Invalid card number", charged: false),
    ]

    @Test("test cards", arguments: cardCases)
    func cardOutcome(_ testCase: CardCase) async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let result = try await harness.pay(card: testCase.card, command: testCase.command, reference: reference)
            #expect(result.status == 200)
            #expect(result["status"] == testCase.status)
            #expect(result["response_code"] == testCase.code)
            #expect(result["response_message"] == testCase.message)
            #expect(result.isSigned(by: harness.merchant))
            // Echo: every parameter sent comes back, the card masked and the security code never.
            for key in ["command", "merchant_reference", "currency", "language", "customer_email", "sdk_token", "expiry_date",
                        "card_holder_name", "customer_ip", "merchant_extra1", "access_code", "merchant_identifier"] {
                #expect(result[key] != nil, "\(key) echoed")
            }
            #expect(result.value("amount") == .number("1000"))
            #expect(result["merchant_reference"] == reference)
            #expect(result["card_security_code"] == nil)
            #expect(result["card_number"] == PayFortEmulator.TestCard.mask(testCase.card))
            #expect(result["card_number"]?.hasPrefix(String(testCase.card.prefix(6))) == true)
            #expect(result["card_number"]?.contains("*") == true)
            #expect(!result.raw.text.contains(testCase.card))
            if testCase.status != "00" {
                let fortID = try #require(result["fort_id"])
                #expect(!fortID.isEmpty && fortID.allSatisfy(\.isASCIIDigit))
                #expect(result["eci"] == "ECOMMERCE")
            }
            if let option = testCase.paymentOption { #expect(result["payment_option"] == option) }
            #expect((result["authorization_code"] != nil) == (testCase.code.hasSuffix("000")))
            let ledger = await harness.emulator.ledger
            if testCase.charged {
                #expect(ledger.count == 1)
                let charge = try #require(ledger.first)
                #expect(charge.merchantReference == reference)
                #expect(charge.amountMinor == 1000 && charge.currency == "USD" && charge.command == testCase.command)
                #expect(charge.status == (testCase.command == "PURCHASE" ? "14" : "02"))
                #expect(charge.fortID == result["fort_id"])
            } else {
                #expect(ledger.isEmpty)
            }
        }
    }

    @Test("the masked card number of the documentation's example card")
    func maskedCardNumber() {
        #expect(PayFortEmulator.TestCard.mask("4005550000000001") == "400555******0001")
        #expect(PayFortEmulator.TestCard.mask("345678000000007") == "345678*****0007")
    }

    @Test("an expired card is declined with 012")
    func expiredCard() async throws {
        try await PayFortHarness.with { harness in
            for (command, code) in [("PURCHASE", "13012"), ("AUTHORIZATION", "03012")] {
                let token = try await harness.sdkToken()
                let params = harness.paymentParams(card: PayFortEmulator.TestCard.visa, command: command, token: token, expiry: "2001")
                let result = try await harness.call(params)
                #expect(result["response_code"] == code)
                #expect(result["response_message"] == "Card expired")
            }
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("invalid fields are named: amount, currency, merchant_reference, MADA on AUTHORIZATION")
    func invalidFields() async throws {
        try await PayFortHarness.with { harness in
            let cases: [(String, JSONValue, String)] = [
                ("amount", .number("10.50"), "amount"), ("amount", "-5", "amount"), ("amount", .number("0"), "amount"),
                ("currency", "usd", "currency"), ("currency", "XYZ", "currency"),
                ("merchant_reference", "has space", "merchant_reference"),
                ("merchant_reference", .string(String(repeating: "a", count: 41)), "merchant_reference"),
                ("customer_email", "not-an-email", "customer_email"), ("language", "fr", "language"),
                ("expiry_date", "3013", "expiry_date"), ("card_security_code", "12", "card_security_code"),
                ("return_url", "javascript:alert(1)", "return_url"), ("return_url", "/relative", "return_url"),
                ("eci", "SOMETHING", "eci"),
            ]
            for (key, value, named) in cases {
                let token = try await harness.sdkToken()
                var params = harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token)
                params[key] = value
                let result = try await harness.call(params)
                #expect(result["response_code"] == "00002", "\(key)=\(value.parameterText)")
                #expect(result["response_message"]?.contains(named) == true, "\(result["response_message"] ?? "")")
            }
            let token = try await harness.sdkToken()
            var mada = harness.paymentParams(card: PayFortEmulator.TestCard.mada, command: "AUTHORIZATION", token: token)
            mada["payment_option"] = "MADA"
            let result = try await harness.call(mada)
            #expect(result["response_code"] == "00002")
            #expect(result["response_message"]?.contains("payment_option") == true)
            #expect(await harness.emulator.ledger.isEmpty)
            // The amount may also come as a numeric string, and is echoed as a string then.
            let stringAmount = try await harness.call(harness.paymentParams(card: PayFortEmulator.TestCard.visa,
                                                                             token: try await harness.sdkToken(), amount: "2500"))
            #expect(stringAmount["response_code"] == "14000")
            #expect(stringAmount.value("amount") == .string("2500"))
            #expect(await harness.emulator.ledger.map(\.amountMinor) == [2500])
        }
    }

    // MARK: SDK tokens

    @Test("an SDK token is single-use and expires after its lifetime")
    func tokenLifetime() async throws {
        let clock = TestClock()
        try await PayFortHarness.with(now: { clock.now }) { harness in
            let token = try await harness.sdkToken()
            let first = try await harness.call(harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token))
            #expect(first["response_code"] == "14000")
            let reused = try await harness.call(harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token))
            #expect(reused["response_code"] == "00002")
            #expect(reused["response_message"]?.contains("sdk_token") == true)

            let late = try await harness.sdkToken()
            clock.advance(by: 3601)
            let expired = try await harness.call(harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: late))
            #expect(expired["response_code"] == "00002")
            #expect(expired["response_message"]?.contains("expired") == true)

            let other = try await harness.sdkToken(merchant: PayFortHarness.sha512Merchant)
            let foreign = try await harness.call(harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: other))
            #expect(foreign["response_code"] == "00002")
            #expect(await harness.emulator.ledger.count == 1)
        }
    }

    @Test("a reused merchant_reference replays the first response and charges once")
    func duplicateReference() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let first = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
            let second = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
            #expect(first["response_code"] == "14000")
            #expect(second.raw.text == first.raw.text)
            #expect(await harness.emulator.ledger.count == 1)
        }
    }

    // MARK: CHECK_STATUS

    @Test("CHECK_STATUS shows that the uncertain card was charged")
    func uncertainThenCheckStatus() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let payment = try await harness.pay(card: PayFortEmulator.TestCard.uncertain, reference: reference)
            #expect(payment["response_code"] == "15006")
            let fortID = try #require(payment["fort_id"])

            let status = try await harness.checkStatus(reference: reference)
            #expect(status["status"] == "12")
            #expect(status["response_code"] == "12000")
            #expect(status["transaction_status"] == "14")
            #expect(status["transaction_code"] == "14000")
            #expect(status["transaction_message"] == "Success")
            #expect(status["fort_id"] == fortID)
            #expect(status["merchant_reference"] == reference)
            #expect(status["amount"] == "1000")
            #expect(status["currency"] == "USD")
            #expect(status["captured_amount"] == "1000")
            #expect(status.isSigned(by: harness.merchant))

            let byFortID = try await harness.checkStatus(fortID: fortID)
            #expect(byFortID["transaction_status"] == "14")
            #expect(byFortID["merchant_reference"] == reference)

            #expect(await harness.emulator.ledger.map(\.merchantReference) == [reference])
        }
    }

    @Test("CHECK_STATUS of an unknown order: 00002")
    func checkStatusUnknown() async throws {
        try await PayFortHarness.with { harness in
            let result = try await harness.checkStatus(reference: "never-sent")
            #expect(result["status"] == "00")
            #expect(result["response_code"] == "00002")
            #expect(result["response_message"] == "Invalid merchant reference: no such order")
            #expect(result.isSigned(by: harness.merchant))
            let missing = try await harness.checkStatus()
            #expect(missing["response_code"] == "00001")
        }
    }

    @Test("CHECK_STATUS of a declined order shows the decline")
    func checkStatusDeclined() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.declined, reference: reference)
            let status = try await harness.checkStatus(reference: reference)
            #expect(status["transaction_status"] == "13")
            #expect(status["transaction_code"] == "13071")
            #expect(status["captured_amount"] == "0")
        }
    }

    // MARK: 3-D Secure

    @Test("3-D Secure: page, approval, redirect to return_url with a valid signature, one charge")
    func threeDSecureApprove() async throws {
        try await PayFortHarness.with { harness in
            let reference = PayFortHarness.newReference()
            let returnURL = "https://merchant.example/payfort/return?state=s3cr3t"
            let pending = try await harness.pay(card: PayFortEmulator.TestCard.threeDSecure, reference: reference,
                                                extra: ["return_url": .string(returnURL)])
            #expect(pending["status"] == "20")
            #expect(pending["response_code"] == "20064")
            #expect(pending["response_message"] == "3-D Secure check requested")
            #expect(pending["return_url"] == returnURL)
            #expect(pending.isSigned(by: harness.merchant))
            let fortID = try #require(pending["fort_id"])
            let pageURL = try #require(pending["3ds_url"].flatMap(URL.init(string:)))
            #expect(pageURL == harness.sandbox.payFortBaseURL.appendingPathComponent("3ds").appendingPathComponent(fortID))
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.checkStatus(reference: reference)["transaction_status"] == "20")

            let page = try await harness.get(pageURL)
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.text.contains(#"name="outcome" value="approve""#))
            #expect(page.text.contains(#"name="outcome" value="decline""#))
            #expect(page.text.contains(pageURL.appendingPathComponent("complete").absoluteString))
            #expect(page.text.contains(reference))

            let completion = try await harness.post(pageURL.appendingPathComponent("complete"), body: Data("outcome=approve".utf8),
                                                    contentType: "application/x-www-form-urlencoded")
            #expect(completion.status == 302)
            let location = try #require(completion.headers["location"])
            #expect(location.hasPrefix(returnURL + "&"))
            let components = try #require(URLComponents(string: location))
            var query: [String: String] = [:]
            for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
            #expect(query["state"] == "s3cr3t")
            #expect(query["status"] == "14")
            #expect(query["response_code"] == "14000")
            #expect(query["merchant_reference"] == reference)
            #expect(query["fort_id"] == fortID)
            #expect(query["3ds_url"] == nil)
            #expect(query["authorization_code"] != nil)
            #expect(query["return_url"] == returnURL)
            let signature = try #require(query["signature"])
            query["signature"] = nil
            query["state"] = nil  // the merchant's own parameter, not the gateway's
            #expect(PayFortEmulator.Signature.verify(signature, parameters: query, phrase: harness.merchant.responsePhrase, algorithm: .sha256))

            let ledger = await harness.emulator.ledger
            #expect(ledger.count == 1)
            #expect(ledger.first?.fortID == fortID)
            #expect(try await harness.checkStatus(reference: reference)["transaction_status"] == "14")

            // Completing again changes nothing.
            let again = try await harness.post(pageURL.appendingPathComponent("complete"), body: Data("outcome=decline".utf8),
                                               contentType: "application/x-www-form-urlencoded")
            #expect(again.status == 302)
            #expect(again.headers["location"]?.contains("response_code=14000") == true)
            #expect(await harness.emulator.ledger.count == 1)
            #expect(try await harness.get(pageURL).status == 409)
        }
    }

    @Test("3-D Secure declined: 13071 in the redirect, nothing charged")
    func threeDSecureDecline() async throws {
        try await PayFortHarness.with { harness in
            let pending = try await harness.pay(card: PayFortEmulator.TestCard.threeDSecure, command: "AUTHORIZATION",
                                                extra: ["return_url": "https://merchant.example/back"])
            let pageURL = try #require(pending["3ds_url"].flatMap(URL.init(string:)))
            let bad = try await harness.post(pageURL.appendingPathComponent("complete"), body: Data("outcome=maybe".utf8),
                                             contentType: "application/x-www-form-urlencoded")
            #expect(bad.status == 400)
            let completion = try await harness.post(pageURL.appendingPathComponent("complete"), body: Data("outcome=decline".utf8),
                                                    contentType: "application/x-www-form-urlencoded")
            #expect(completion.status == 302)
            let location = try #require(completion.headers["location"])
            #expect(location.hasPrefix("https://merchant.example/back?"))
            #expect(location.contains("response_code=03071"))
            #expect(location.contains("status=03"))
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.get(harness.sandbox.payFortBaseURL.appendingPathComponent("3ds/123")).status == 404)
        }
    }

    // MARK: Notifications

    @Test("feedback is retried until acknowledged; one charge; signed form fields")
    func notificationRetries() async throws {
        try await withReceiver(answering: [500, 503], otherwise: 200) { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url, notificationRetry: (5, .milliseconds(30))) { harness in
                let reference = PayFortHarness.newReference()
                let payment = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: reference)
                #expect(payment["response_code"] == "14000")
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
                    #expect(fields["status"] == "14")
                    #expect(fields["merchant_reference"] == reference)
                    #expect(fields["customer_email"] == "customer@domain.com")
                    #expect(fields["merchant_extra1"] == "extra one")
                    #expect(fields["card_security_code"] == nil)
                    let signature = try #require(fields["signature"])
                    fields["signature"] = nil
                    #expect(PayFortEmulator.Signature.verify(signature, parameters: fields, phrase: harness.merchant.responsePhrase,
                                                    algorithm: .sha256))
                }
                #expect(await harness.emulator.ledger.count == 1)
            }
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
                #expect(log.allSatisfy { $0.status == 500 && $0.responseCode == "13071" })
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

    @Test("3-D Secure sends feedback only once it is final; the uncertain card's feedback says charged")
    func notificationTiming() async throws {
        try await withReceiver { receiver in
            try await PayFortHarness.with(notificationURL: receiver.url) { harness in
                let pending = try await harness.pay(card: PayFortEmulator.TestCard.threeDSecure)
                await harness.emulator.waitForNotifications()
                #expect(await receiver.received().isEmpty)
                let pageURL = try #require(pending["3ds_url"].flatMap(URL.init(string:)))
                let page = try await harness.post(pageURL.appendingPathComponent("complete"), body: Data("outcome=approve".utf8),
                                                  contentType: "application/x-www-form-urlencoded")
                #expect(page.status == 200)  // no return_url: a result page
                _ = try await harness.pay(card: PayFortEmulator.TestCard.uncertain)
                await harness.emulator.waitForNotifications()
                let codes = await receiver.received().compactMap { $0.formFields?["response_code"] }
                #expect(codes == ["14000", "14000"])
            }
        }
    }

    // MARK: Faults

    @Test("injected server error: HTTP 503, nothing processed")
    func faultServerError() async throws {
        try await PayFortHarness.with { harness in
            let token = try await harness.sdkToken()
            await harness.emulator.injectFault(.serverError, matching: "PURCHASE")
            let params = harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token)
            let failed = try await harness.post(harness.apiURL, body: Data(signed(params, harness).utf8), contentType: "application/json")
            #expect(failed.status == 503)
            #expect(await harness.emulator.ledger.isEmpty)
            #expect(try await harness.checkStatus(reference: params["merchant_reference"]?.parameterText)["response_code"] == "00002")
            // The token was not used up, and the fault was used once.
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
            let token = try await harness.sdkToken()
            // Through the admin route this time.
            let admin = try await harness.post(harness.sandbox.baseURL.appendingPathComponent("admin/payfort/faults"),
                                               body: Data(#"{"fault":"timeout","command":"PURCHASE"}"#.utf8),
                                               contentType: "application/json")
            #expect(admin.status == 200)
            let params = harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token)
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
            let token = try await harness.sdkToken()
            await harness.emulator.injectFault(.dropConnection)
            let params = harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token)
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

    @Test("the timeout card: held, HTTP 504, recorded as a failure and not charged")
    func timeoutCard() async throws {
        try await PayFortHarness.with(timeoutHold: .milliseconds(200)) { harness in
            let reference = PayFortHarness.newReference()
            let token = try await harness.sdkToken()
            let params = harness.paymentParams(card: PayFortEmulator.TestCard.timeout, reference: reference, token: token)
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
        let token = try await harness.sdkToken()
        await harness.emulator.injectFault(.timeout)
        let params = harness.paymentParams(card: PayFortEmulator.TestCard.visa, token: token)
        let body = Data(signed(params, harness).utf8)
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

    // MARK: Maintenance

    @Test("capture, refund and void follow the money")
    func captureRefundVoid() async throws {
        try await PayFortHarness.with { harness in
            let authorized = PayFortHarness.newReference()
            #expect(try await harness.pay(card: PayFortEmulator.TestCard.visa, command: "AUTHORIZATION", reference: authorized)["status"] == "02")
            #expect(try await harness.maintenance("REFUND", reference: authorized, amount: 100)["response_code"] == "07071")
            let capture = try await harness.maintenance("CAPTURE", reference: authorized, amount: 600)
            #expect(capture["status"] == "04")
            #expect(capture["response_code"] == "04000")
            #expect(capture.isSigned(by: harness.merchant))
            #expect(try await harness.maintenance("CAPTURE", reference: authorized, amount: 500)["response_code"] == "05071")
            #expect(try await harness.maintenance("VOID_AUTHORIZATION", reference: authorized, amount: nil)["response_code"] == "09071")
            #expect(try await harness.maintenance("REFUND", reference: authorized, amount: 600)["response_code"] == "06000")
            let status = try await harness.checkStatus(reference: authorized)
            #expect(status["transaction_status"] == "06")
            #expect(status["captured_amount"] == "600")
            #expect(status["refunded_amount"] == "600")

            let toVoid = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.amex, command: "AUTHORIZATION", reference: toVoid)
            #expect(try await harness.maintenance("VOID_AUTHORIZATION", reference: toVoid, amount: nil)["response_code"] == "08000")
            #expect(try await harness.maintenance("CAPTURE", reference: toVoid, amount: 100)["response_code"] == "05071")
            let voided = try await harness.checkStatus(reference: toVoid)
            #expect(voided["transaction_status"] == "08")
            #expect(voided["authorized_amount"] == "0")

            let purchased = PayFortHarness.newReference()
            _ = try await harness.pay(card: PayFortEmulator.TestCard.visa, reference: purchased)
            #expect(try await harness.maintenance("CAPTURE", reference: purchased, amount: 100)["response_code"] == "05071")
            #expect(try await harness.maintenance("REFUND", reference: purchased, amount: 1001)["response_code"] == "07071")
            #expect(try await harness.maintenance("REFUND", reference: purchased, amount: 1000)["response_code"] == "06000")
            #expect(try await harness.maintenance("REFUND", reference: "unknown", amount: 1)["response_code"] == "00002")

            #expect(await harness.emulator.ledger.count == 3)
            let operations = await harness.emulator.operations
            #expect(operations.map(\.command) == ["CAPTURE", "REFUND", "VOID_AUTHORIZATION", "REFUND"])
            #expect(operations.map(\.status) == ["04", "06", "08", "06"])
            #expect(operations.map(\.amountMinor) == [600, 600, 1000, 1000])
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
