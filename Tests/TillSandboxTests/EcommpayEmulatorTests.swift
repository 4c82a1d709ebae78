import Foundation
import Testing
import Till
@testable import TillSandbox

private typealias Harness = EcommpayHarness

@Suite("ecommpay emulator: SDK stand-in")
struct EcommpaySDKTests {
    @Test("a sale with a good card: PaymentResult 0, success, charged once, one signed callback")
    func sale() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with(callbackURL: receiver.url) { harness async throws in
                let params = Harness.sdkParams()
                let result = try await harness.sdkPay(params)
                #expect(result.status == 0)
                let payment = try #require(result.payment)
                #expect(payment.status == "success")
                #expect(payment.type == "purchase")
                #expect(payment.sum == 1999)
                #expect(payment.currency == "USD")
                #expect(payment.method == "card")
                #expect(payment.account?.number == "400000******0010")
                #expect(result.error == nil)
                let ledger = await harness.emulator.ledger
                #expect(ledger.count == 1)
                #expect(ledger.first?.amount == 1999)
                #expect(ledger.first?.operation == "sale")
                let received = await receiver.received()
                #expect(received.count == 1)
                #expect(received.first?.contentType == "application/json")
                let body = try #require(received.first?.body)
                #expect(EcommpaySignature.checkMessage(Array(body), secret: Harness.project.secretKey) == .valid)
                let callback = try JSONValue.parse(Array(body))
                #expect(callback["project_id"] == .number("1234"))
                #expect(callback["payment"]?["id"] == params["payment_id"])
                #expect(callback["payment"]?["status"] == .string("success"))
                #expect(callback["payment"]?["sum"]?["amount"] == .number("1999"))
                #expect(callback["payment"]?["cascading_with_redirect"] == .bool(false))
                #expect(callback["operation"]?["type"] == .string("sale"))
                #expect(callback["operation"]?["status"] == .string("success"))
                #expect(callback["operation"]?["code"] == .string("0"))
                #expect(callback["operation"]?["sum_initial"]?["amount"] == .number("1999"))
                #expect(callback["account"]?["number"] == .string("400000******0010"))
                #expect(!callback.serialized.contains("null"), "no null leaves (PyPI 1.0.6 could not verify them)")
            }
        }
    }

    @Test("auth holds (awaiting capture, nothing charged); verify is a zero-amount success with a token; tokenize too")
    func actions() async throws {
        try await Harness.with { harness async throws in
            let auth = try await harness.sdkPay(Harness.sdkParams(operationType: "auth"))
            #expect(auth.status == 0)
            #expect(auth.payment?.status == "awaiting capture")
            let verify = try await harness.sdkPay(Harness.sdkParams(amount: 0, operationType: "verify"))
            #expect(verify.status == 0)
            #expect(verify.payment?.status == "success")
            #expect(verify.payment?.sum == 0)
            #expect(verify.payment?.token?.isEmpty == false)
            let tokenize = try await harness.sdkPay(Harness.sdkParams(amount: 0, operationType: "tokenize"))
            #expect(tokenize.status == 0)
            #expect(await harness.emulator.ledger.isEmpty)
            let bad = try await harness.sdkPay(Harness.sdkParams(amount: 100, operationType: "verify"))
            #expect(bad.status == 500)
            #expect(bad.error?.codeString == "ILLEGAL_ARGUMENTS")
            #expect(bad.error?.message.hasPrefix("payment_amount") == true)
        }
    }

    @Test("test cards: decline 100, 3-D Secure pass 0 and fail 100; the customer closing the form 200, nothing recorded")
    func cards() async throws {
        try await Harness.with { harness async throws in
            let declined = try await harness.sdkPay(Harness.sdkParams(), card: .decline)
            #expect(declined.status == 100)
            #expect(declined.payment?.status == "decline")
            let passed = try await harness.sdkPay(Harness.sdkParams(), card: .threeDSecurePass)
            #expect(passed.status == 0)
            let failed = try await harness.sdkPay(Harness.sdkParams(), card: .threeDSecureFail)
            #expect(failed.status == 100)
            let id = Harness.newPaymentId()
            let cancelled = try await harness.sdkPay(Harness.sdkParams(paymentId: id), outcome: "cancel")
            #expect(cancelled.status == 200)
            #expect(cancelled.payment == nil)
            #expect(await harness.emulator.payment(projectId: 1234, paymentId: id) == nil)
            #expect(await harness.emulator.ledger.count == 1)
            let applePay = try await harness.sdkPay(Harness.sdkParams(extra: [("customer_email", .null)]), method: "apple_pay", card: nil)
            #expect(applePay.status == 0)
            #expect(applePay.payment?.method == "apple_pay")
        }
    }

    @Test("the cascade card: first provider declines (callback awaiting retry, cascading_with_redirect true), second succeeds on the same payment")
    func cascade() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with(callbackURL: receiver.url) { harness async throws in
                let params = Harness.sdkParams()
                let result = try await harness.sdkPay(params, card: .cascade)
                #expect(result.status == 0)
                #expect(result.payment?.status == "success")
                let bodies = await Harness.callbackBodies(receiver)
                #expect(bodies.count == 2)
                #expect(bodies.first?["payment"]?["status"] == .string("awaiting retry"))
                #expect(bodies.first?["payment"]?["cascading_with_redirect"] == .bool(true))
                #expect(bodies.first?["operation"]?["status"] == .string("decline"))
                #expect(bodies.last?["payment"]?["status"] == .string("success"))
                #expect(bodies.last?["payment"]?["cascading_with_redirect"] == .bool(false))
                #expect(bodies.last?["operation"]?["provider"]?["id"] == .number("2"))
                #expect(Set(bodies.compactMap { $0["payment"]?["id"] }).count == 1)
                #expect(await harness.emulator.ledger.count == 1)
            }
        }
    }

    @Test("mock modes answer at once and record nothing")
    func mockModes() async throws {
        try await Harness.with { harness async throws in
            let id = Harness.newPaymentId()
            let success = try await harness.sdkPay(Harness.sdkParams(paymentId: id), mockMode: "success")
            #expect(success.status == 0)
            let decline = try await harness.sdkPay(Harness.sdkParams(paymentId: id), mockMode: "decline")
            #expect(decline.status == 100)
            #expect(await harness.emulator.paymentSummaries().isEmpty)
            #expect(await harness.emulator.ledger.isEmpty)
        }
    }

    @Test("the SDK's checks before the form opens: each a 500 with a PaymentError naming the parameter")
    func checks() async throws {
        try await Harness.with { harness async throws in
            func error(_ params: JSONValue, secret: String = Harness.project.secretKey, signature: String? = nil,
                       method: String = "card") async throws -> EcommpayEmulator.SDKPaymentResult.PaymentError? {
                let result = try await harness.sdkPay(params, secret: secret, signature: signature, method: method)
                #expect(result.status == 500)
                return result.error
            }
            #expect(try await error(Harness.sdkParams(), secret: "wrong")?.codeString == "SERVER_UNAUTHORIZED")
            #expect(try await error(Harness.sdkParams(), signature: "")?.message == "signature: required")
            #expect(try await error(Harness.sdkParams(extra: [("project_id", .number("999"))]))?.message == "project_id: unknown project")
            #expect(try await error(Harness.sdkParams(extra: [("project_id", .string("1234"))]))?.message.hasPrefix("project_id") == true)
            #expect(try await error(Harness.sdkParams(extra: [("payment_amount", .string("1999"))]))?.message.hasPrefix("payment_amount") == true)
            #expect(try await error(Harness.sdkParams(extra: [("payment_amount", .number("19.99"))]))?.message.hasPrefix("payment_amount") == true)
            #expect(try await error(Harness.sdkParams(currency: "usd"))?.message.hasPrefix("payment_currency") == true)
            #expect(try await error(Harness.sdkParams(operationType: "refund"))?.codeString == "PAYMENT_REQUEST_TYPE_NOT_EXIST")
            #expect(try await error(Harness.sdkParams(extra: [("language_code", "ru")]))?.message.hasPrefix("language_code") == true)
            #expect(try await error(Harness.sdkParams(extra: [("customer_email", .null)]))?.message.hasPrefix("customer_email or customer_phone") == true)
            #expect(try await error(Harness.sdkParams(extra: [("hide_saved_wallets", "yes")]))?.message.hasPrefix("hide_saved_wallets") == true)
            #expect(try await error(Harness.sdkParams(extra: [("payment_description", "")]))?.message.hasPrefix("payment_description") == true)
            // A signed parameter changed after signing is caught by the signature; so is a signature over the
            // whole object (the server SDKs' string) rather than the SDK's own string.
            let params = Harness.sdkParams()
            let signature = EcommpaySignature.sdkSign(params, secret: Harness.project.secretKey)
            guard case .object(let members) = params else { return }
            let cheaper = members.map { $0.key == "payment_amount" ? JSONValue.Member(key: $0.key, value: .number("1")) : $0 }
            #expect(try await error(.object(cheaper), signature: signature)?.codeString == "SERVER_UNAUTHORIZED")
            #expect(try await error(params, signature: EcommpaySignature.sign(params, secret: Harness.project.secretKey))?.codeString
                == "SERVER_UNAUTHORIZED")
            // Accepted: booleans and the seed's languages.
            let fine = try await harness.sdkPay(Harness.sdkParams(extra: [("hide_saved_wallets", .bool(true)), ("language_code", "de"),
                                                                          ("region_code", "DE"), ("force_payment_method", "card")]))
            #expect(fine.status == 0)
        }
    }

    @Test("a payment_id the project already has is refused (paymentAlreadyExist); another project may use it")
    func duplicate() async throws {
        try await Harness.with { harness async throws in
            let id = Harness.newPaymentId()
            #expect(try await harness.sdkPay(Harness.sdkParams(paymentId: id)).status == 0)
            let again = try await harness.sdkPay(Harness.sdkParams(paymentId: id))
            #expect(again.status == 500)
            #expect(again.error?.codeString == "PAYMENT_ALREADY_EXIST")
            #expect(again.error?.code == 9)
            let other = try await harness.sdkPay(Harness.sdkParams(paymentId: id, project: Harness.otherProject),
                                                 secret: Harness.otherProject.secretKey)
            #expect(other.status == 0)
            #expect(await harness.emulator.ledger.count == 2)
        }
    }

    @Test("bodies not of the stand-in's shape, and cards the SDK's form would not submit, are HTTP 400")
    func badBodies() async throws {
        try await Harness.with { harness async throws in
            let url = harness.base.appendingPathComponent(EcommpayEmulator.sdkPath)
            #expect(try await harness.post(url, body: Data("{".utf8)).status == 400)
            #expect(try await harness.post(url, body: Data(#"{"params": "x", "signature": "s", "method": "card"}"#.utf8)).status == 400)
            #expect(try await harness.post(url, body: Data(#"{"params": {}, "signature": "s", "method": "paypal"}"#.utf8)).status == 400)
            let params = Harness.sdkParams()
            await #expect(throws: EcommpayDevice.Failure.self) {
                _ = try await EcommpayDevice.pay(baseURL: harness.base, paramsJSON: params.serialized,
                                                 signature: EcommpaySignature.sdkSign(params, secret: Harness.project.secretKey),
                                                 card: .init(number: "4000000000000011", expiryMonth: "12", expiryYear: "2030", cvv: "123"))
            }
            await #expect(throws: EcommpayDevice.Failure.self) {
                _ = try await EcommpayDevice.pay(baseURL: harness.base, paramsJSON: params.serialized,
                                                 signature: EcommpaySignature.sdkSign(params, secret: Harness.project.secretKey),
                                                 card: .init(number: EcommpayTestCard.success.rawValue, expiryMonth: "1", expiryYear: "2001", cvv: "123"))
            }
            await #expect(throws: EcommpayDevice.Failure.self) {
                _ = try await EcommpayDevice.pay(baseURL: harness.base, paramsJSON: params.serialized,
                                                 signature: EcommpaySignature.sdkSign(params, secret: Harness.project.secretKey), card: nil)
            }
        }
    }
}

@Suite("ecommpay emulator: Payment Page")
struct EcommpayPaymentPageTests {
    @Test("the Payment Page URLs of the vendor SDK tests are accepted (python True, go's true signed as 1, java's signature in the middle)")
    func sdkURLs() async throws {
        let cases = try EcommpayFixtures.pageURLs()
        #expect(cases.count == 4)
        var projects: [EcommpayEmulator.Project] = []
        for item in cases {
            let id = try #require(Int(item.fields["project_id"] ?? ""))
            if !projects.contains(where: { $0.projectId == id }) { projects.append(.init(projectId: id, secretKey: item.secret)) }
        }
        try await Harness.with(projects: projects) { harness async throws in
            for item in cases {
                let url = try #require(URL(string: harness.base.appendingPathComponent("payment").absoluteString + "?" + item.query))
                let page = try await harness.get(url)
                #expect(page.status == 200, "\(item.id) (\(item.source)): \(page.text)")
                #expect(page.text.contains("/ecommpay/sandbox-only/page/"))
                // The same URL with a changed value is refused.
                let tampered = try #require(URL(string: url.absoluteString.replacingOccurrences(of: "payment_id=", with: "payment_id=x")))
                #expect(try await harness.get(tampered).status == 400, "\(item.id)")
            }
        }
    }

    @Test("pay, decline, 3-D Secure pass and fail, cascade and cancel on the page; redirects to the success or fail URL")
    func flows() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with(callbackURL: receiver.url) { harness async throws in
                let success = "https://merchant.example/ok?order=1"
                let fail = "https://merchant.example/fail?order=1"
                let cases: [(EcommpayDevice.PageAction, String, String)] = [
                    (.pay(.test(.success), threeDSecurePasses: true), success, "success"),
                    (.pay(.test(.decline), threeDSecurePasses: true), fail, "decline"),
                    (.pay(.test(.threeDSecurePass), threeDSecurePasses: true), success, "success"),
                    (.pay(.test(.threeDSecurePass), threeDSecurePasses: false), fail, "decline"),
                    (.pay(.test(.cascade), threeDSecurePasses: true), success, "success"),
                ]
                for (action, target, status) in cases {
                    let id = Harness.newPaymentId()
                    let outcome = try await EcommpayDevice.playPaymentPage(harness.pageURL(Harness.pageFields(paymentId: id)), action)
                    #expect(outcome.status == 302)
                    #expect(outcome.redirect?.absoluteString == target)
                    #expect(await harness.emulator.payment(projectId: 1234, paymentId: id)?.status == status)
                    #expect(await harness.emulator.payment(projectId: 1234, paymentId: id)?.via == "payment_page")
                }
                let id = Harness.newPaymentId()
                let cancelled = try await EcommpayDevice.playPaymentPage(harness.pageURL(Harness.pageFields(paymentId: id)), .cancel)
                #expect(cancelled.redirect?.absoluteString == fail)
                #expect(await harness.emulator.payment(projectId: 1234, paymentId: id) == nil)
                #expect(await harness.emulator.ledger.count == 3)
                await harness.emulator.waitForCallbacks()
                #expect(await receiver.received().count == 6, "one per payment, two for the cascade")
            }
        }
    }

    @Test("auth on the page holds; merchant_success_url is used without redirect_success_url; no URL gives a result page")
    func authAndMerchantURLs() async throws {
        try await Harness.with { harness async throws in
            let id = Harness.newPaymentId()
            var fields = Harness.pageFields(paymentId: id, operationType: "auth").filter { !$0.0.hasPrefix("redirect_") }
            fields.append(("merchant_success_url", "https://merchant.example/merchant-ok"))
            let outcome = try await EcommpayDevice.playPaymentPage(harness.pageURL(fields), .pay(.test(.success), threeDSecurePasses: true))
            #expect(outcome.redirect?.absoluteString == "https://merchant.example/merchant-ok")
            #expect(await harness.emulator.payment(projectId: 1234, paymentId: id)?.status == "awaiting capture")
            #expect(await harness.emulator.ledger.isEmpty)
            let bare = Harness.pageFields().filter { !$0.0.hasPrefix("redirect_") }
            let result = try await EcommpayDevice.playPaymentPage(harness.pageURL(bare), .pay(.test(.decline), threeDSecurePasses: true))
            #expect(result.status == 200)
            #expect(result.redirect == nil)
            #expect(result.page?.contains("Payment declined") == true)
        }
    }

    @Test("a page's signed merchant_callback_url takes its callbacks instead of the project's URL; one that is not http(s) is refused")
    func pageCallbackURL() async throws {
        try await withReceiver { projectReceiver async throws in
            try await withReceiver { pageReceiver async throws in
                try await Harness.with(callbackURL: projectReceiver.url) { harness async throws in
                    let id = Harness.newPaymentId()
                    var fields = Harness.pageFields(paymentId: id)
                    fields.append(("merchant_callback_url", .string(pageReceiver.url.absoluteString)))
                    _ = try await EcommpayDevice.playPaymentPage(harness.pageURL(fields), .pay(.test(.success), threeDSecurePasses: true))
                    await harness.emulator.waitForCallbacks()
                    #expect(await Harness.callbackBodies(pageReceiver).last?["payment"]?["id"] == .string(id))
                    #expect(await Harness.callbackBodies(projectReceiver).isEmpty)
                    var bad = Harness.pageFields()
                    bad.append(("merchant_callback_url", "javascript:alert(1)"))
                    #expect(try await harness.get(harness.pageURL(bad)).status == 400)
                }
            }
        }
    }

    @Test("booleans: signed 1/0, written True/true/1 in the query, all accepted; a string 'true' signed as text too")
    func booleans() async throws {
        try await Harness.with { harness async throws in
            let fields = Harness.pageFields(extra: [("redirect", .bool(true)), ("close_on_missclick", .bool(false))])
            #expect(try await harness.get(harness.pageURL(fields)).status == 200)
            let asText = Harness.pageFields(extra: [("custom_flag", "true")])
            #expect(try await harness.get(harness.pageURL(asText)).status == 200)
        }
    }

    @Test("refused pages: unknown project, no or bad signature, expired best_before, a payment_id already used, bad amount")
    func refusals() async throws {
        let clock = TestClock()
        try await Harness.with(now: { clock.now }) { harness async throws in
            #expect(try await harness.get(harness.pageURL(Harness.pageFields(), secret: "wrong")).status == 400)
            let unknown = [("project_id", JSONValue.number("999"))] + Harness.pageFields().dropFirst()
            #expect(try await harness.get(harness.pageURL(Array(unknown))).status == 400)
            let noSignature = URL(string: harness.pageURL(Harness.pageFields()).absoluteString.components(separatedBy: "&signature=")[0])!
            #expect(try await harness.get(noSignature).status == 400)
            #expect(try await harness.get(harness.pageURL(Harness.pageFields(extra: [("best_before", "2001-01-01T00:00:00+00:00")]))).status == 400)
            #expect(try await harness.get(harness.pageURL(Harness.pageFields(extra: [("best_before", "2099-01-01T00:00:00")]))).status == 200)
            #expect(try await harness.get(harness.pageURL(Harness.pageFields(extra: [("best_before", "soon")]))).status == 400)
            var badAmount = Harness.pageFields()
            badAmount[2].1 = "19.99"
            #expect(try await harness.get(harness.pageURL(badAmount)).status == 400)
            let id = Harness.newPaymentId()
            _ = try await harness.sdkPay(Harness.sdkParams(paymentId: id))
            #expect(try await harness.get(harness.pageURL(Harness.pageFields(paymentId: id))).status == 400)
            // A page opened twice: the second payment attempt is refused once the first is recorded.
            let twice = harness.pageURL(Harness.pageFields())
            let first = try await EcommpayDevice.playPaymentPage(twice, .pay(.test(.success), threeDSecurePasses: true))
            #expect(first.status == 302)
            #expect(try await harness.get(twice).status == 400)
            // A card the form refuses: the form again, with the problem.
            let badCard = try await EcommpayDevice.playPaymentPage(harness.pageURL(Harness.pageFields()),
                                                                   .pay(.init(number: "1234", expiryMonth: "12", expiryYear: "2030", cvv: "123"),
                                                                        threeDSecurePasses: true))
            #expect(badCard.status == 400)
            #expect(badCard.page?.contains("number") == true)
        }
    }
}

@Suite("ecommpay emulator: Gate")
struct EcommpayGateTests {
    @Test("status of a paid payment: 200, signed, payment, account and operations; of an unknown payment: the not-found error")
    func status() async throws {
        try await Harness.with { harness async throws in
            let id = Harness.newPaymentId()
            _ = try await harness.sdkPay(Harness.sdkParams(paymentId: id))
            let answer = try await harness.gate("status", paymentId: id)
            #expect(answer.status == 200)
            let body = try #require(answer.body)
            #expect(EcommpaySignature.checkMessage(body, secret: Harness.project.secretKey) == .valid)
            #expect(body["payment"]?["status"] == .string("success"))
            #expect(body["payment"]?["sum"]?["amount"] == .number("1999"))
            guard case .array(let operations) = body["operations"] else { Issue.record("no operations"); return }
            #expect(operations.count == 1)
            #expect(operations.first?["type"] == .string("sale"))
            let missing = try await harness.gate("status", paymentId: "never-registered")
            #expect(missing.status == 200)
            #expect(missing.body?["status"] == .string("error"))
            #expect(missing.body?["message"] == .string("Payment not found"))
            #expect(missing.body?["payment"] == nil)
        }
    }

    @Test("Gate requests must be signed by the project: unsigned, wrong secret, unknown project, no payment_id are 400")
    func signatures() async throws {
        try await Harness.with { harness async throws in
            #expect(try await harness.gate("status", paymentId: "p", signed: false).status == 400)
            let wrong = try await harness.gate("status", paymentId: "p", secret: "wrong")
            #expect(wrong.status == 400)
            #expect(wrong.body?["message"]?.stringValue?.hasPrefix("general.signature: does not match") == true)
            #expect(try await harness.gate("status", paymentId: "p", project: .init(projectId: 42, secretKey: "x")).status == 400)
            #expect(try await harness.gate("status", paymentId: "").status == 400)
            #expect(try await harness.post(harness.base.appendingPathComponent("v2/payment/status"), body: Data("[]".utf8)).status == 400)
        }
    }

    @Test("capture: only of awaiting capture, amount ≤ authorised, same currency; partial capture charges what was asked, once; callback with operation.type capture")
    func capture() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with { harness async throws in
                let id = Harness.newPaymentId()
                _ = try await harness.sdkPay(Harness.sdkParams(paymentId: id, operationType: "auth"))
                #expect(try await harness.gate("card/capture", paymentId: id, payment: (5000, "USD")).status == 400)
                #expect(try await harness.gate("card/capture", paymentId: id, payment: (1000, "EUR")).status == 400)
                let captured = try await harness.gate("card/capture", paymentId: id, callbackURL: receiver.url.absoluteString,
                                                      payment: (1500, "USD"))
                #expect(captured.status == 200)
                #expect(captured.body?["status"] == .string("success"))
                #expect(captured.body?["payment_id"] == .string(id))
                #expect(captured.body?["request_id"]?.stringValue?.isEmpty == false)
                #expect(await harness.emulator.payment(projectId: 1234, paymentId: id)?.status == "success")
                #expect(try await harness.gate("card/capture", paymentId: id, payment: (1500, "USD")).status == 400)
                let ledger = await harness.emulator.ledger
                #expect(ledger.count == 1)
                #expect(ledger.first?.operation == "capture")
                #expect(ledger.first?.amount == 1500)
                await harness.emulator.waitForCallbacks()
                let callback = try #require(await Harness.callbackBodies(receiver).last)
                #expect(callback["operation"]?["type"] == .string("capture"))
                #expect(callback["operation"]?["sum_initial"]?["amount"] == .number("1500"))
                #expect(callback["operation"]?["request_id"] == captured.body?["request_id"])
                #expect(callback["payment"]?["status"] == .string("success"))
                // A sale cannot be captured; an unknown payment neither.
                let sale = Harness.newPaymentId()
                _ = try await harness.sdkPay(Harness.sdkParams(paymentId: sale))
                #expect(try await harness.gate("card/capture", paymentId: sale).status == 400)
                #expect(try await harness.gate("card/capture", paymentId: "nope").status == 400)
            }
        }
    }

    @Test("cancel of a hold: cancelled, nothing charged, callback with operation.type cancel; full capture without a payment object")
    func cancelAndFullCapture() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with(callbackURL: receiver.url) { harness async throws in
                let held = Harness.newPaymentId()
                _ = try await harness.sdkPay(Harness.sdkParams(paymentId: held, operationType: "auth"))
                #expect(try await harness.gate("card/cancel", paymentId: held).status == 200)
                #expect(await harness.emulator.payment(projectId: 1234, paymentId: held)?.status == "cancelled")
                #expect(await harness.emulator.ledger.isEmpty)
                await harness.emulator.waitForCallbacks()
                #expect(await Harness.callbackBodies(receiver).last?["operation"]?["type"] == .string("cancel"))
                let full = Harness.newPaymentId()
                _ = try await harness.sdkPay(Harness.sdkParams(paymentId: full, operationType: "auth"))
                #expect(try await harness.gate("card/capture", paymentId: full).status == 200)
                #expect(await harness.emulator.ledger.first?.amount == 1999)
            }
        }
    }
}

@Suite("ecommpay emulator: callbacks and faults")
struct EcommpayCallbackTests {
    @Test("callbacks are retried until HTTP 200; a 400 (bad signature at the merchant) is retried too")
    func retries() async throws {
        try await withReceiver(answering: [500, 400]) { receiver async throws in
            try await Harness.with(callbackURL: receiver.url) { harness async throws in
                _ = try await harness.sdkPay(Harness.sdkParams())
                let attempts = await harness.emulator.callbacks
                #expect(attempts.map(\.status) == [500, 400, 200])
                #expect(attempts.map(\.attempt) == [1, 2, 3])
                #expect(attempts.last?.acknowledged == true)
                let bodies = Set(await receiver.received().map(\.body))
                #expect(bodies.count == 1, "every try sends the same bytes")
            }
        }
    }

    @Test("a callback never acknowledged stops after the configured tries")
    func givesUp() async throws {
        try await withReceiver(otherwise: 503) { receiver async throws in
            try await Harness.with(callbackURL: receiver.url, attempts: 2) { harness async throws in
                _ = try await harness.sdkPay(Harness.sdkParams())
                #expect(await harness.emulator.callbacks.count == 2)
                #expect(await harness.emulator.callbacks.allSatisfy { !$0.acknowledged })
            }
        }
    }

    @Test("held callbacks wait for release; dropped ones are never sent; a replay is byte for byte; a crafted one is as asked")
    func controls() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with(callbackURL: receiver.url) { harness async throws in
                let client = harness
                func admin(_ path: String, _ body: String = "{}") async throws -> RawResponse {
                    try await client.post(client.admin.appendingPathComponent(path), body: Data(body.utf8))
                }
                #expect(try await admin("callbacks/hold").status == 200)
                let held = Harness.newPaymentId()
                _ = try await harness.sdkPay(Harness.sdkParams(paymentId: held), waitForCallbacks: false)
                #expect(await receiver.received().isEmpty)
                #expect(try await admin("callbacks/release").status == 200)
                await harness.emulator.waitForCallbacks()
                #expect(await receiver.received().count == 1)

                #expect(try await admin("callbacks/drop", #"{"count": 1}"#).status == 200)
                let dropped = Harness.newPaymentId()
                _ = try await harness.sdkPay(Harness.sdkParams(paymentId: dropped))
                #expect(await receiver.received().count == 1)
                #expect(await harness.emulator.callbacks.last?.dropped == true)

                let replay = try await admin("callbacks/redeliver", "{\"payment_id\": \"\(held)\"}")
                #expect(replay.status == 200)
                let received = await receiver.received()
                #expect(received.count == 2)
                #expect(received[0].body == received[1].body)

                let crafted = try await admin("callbacks/send", "{\"paymentId\": \"\(held)\", \"paymentStatus\": \"decline\", "
                                              + "\"tamper\": {\"payment.sum.amount\": \"1\"}}")
                #expect(crafted.status == 200)
                let tampered = try #require(await receiver.received().last?.body)
                #expect(EcommpaySignature.checkMessage(Array(tampered), secret: Harness.project.secretKey) == .invalid)
                let forged = try #require(await harness.emulator.sendCrafted(.init(paymentId: held, secretKey: "forger")))
                #expect(EcommpaySignature.checkMessage(Array(forged.body.utf8), secret: Harness.project.secretKey) == .invalid)
                let unsigned = try #require(await harness.emulator.sendCrafted(.init(paymentId: held, unsigned: true)))
                #expect(EcommpaySignature.checkMessage(Array(unsigned.body.utf8), secret: Harness.project.secretKey) == .undefined)
                #expect(await harness.emulator.ledger.count == 2, "replays and crafted callbacks move no money")
                #expect(try await admin("callbacks/redeliver", #"{"payment_id": "nope"}"#).status == 404)
            }
        }
    }

    @Test("the callback URL can be set after start (admin route too); without one nothing is sent")
    func callbackURL() async throws {
        try await withReceiver { receiver async throws in
            try await Harness.with { harness async throws in
                _ = try await harness.sdkPay(Harness.sdkParams())
                #expect(await harness.emulator.callbacks.isEmpty)
                let set = try await harness.post(harness.admin.appendingPathComponent("projects/1234/callback"),
                                                 body: Data("{\"url\": \"\(receiver.url.absoluteString)\"}".utf8))
                #expect(set.status == 200)
                _ = try await harness.sdkPay(Harness.sdkParams())
                #expect(await receiver.received().count == 1)
                #expect(try await harness.post(harness.admin.appendingPathComponent("projects/999/callback"),
                                               body: Data(#"{"url": null}"#.utf8)).status == 404)
                let accounts = await harness.sandbox.accounts()
                let account = try #require(accounts.first { $0.settings["project_id"] == "1234" })
                #expect(account.module == "ecommpay")
                #expect(account.settings["base_url"] == harness.base.absoluteString)
                #expect(account.credentials == ["secret_key": Harness.project.secretKey])
            }
        }
    }

    @Test("Gate faults: server_error 500, garbage 200 not JSON, bad_signature, timeout 504 after the hold, drop closes the connection")
    func faults() async throws {
        try await Harness.with { harness async throws in
            let id = Harness.newPaymentId()
            _ = try await harness.sdkPay(Harness.sdkParams(paymentId: id))
            let fault = try await harness.post(harness.admin.appendingPathComponent("faults"), body: Data(#"{"fault": "server_error"}"#.utf8))
            #expect(fault.status == 200)
            #expect(try await harness.gate("status", paymentId: id).status == 500)
            await harness.emulator.inject(.garbage, path: "status")
            let garbage = try await harness.gate("status", paymentId: id)
            #expect(garbage.status == 200)
            #expect(garbage.body == nil)
            await harness.emulator.inject(.badSignature)
            let bad = try #require(try await harness.gate("status", paymentId: id).body)
            #expect(EcommpaySignature.checkMessage(bad, secret: Harness.project.secretKey) == .invalid)
            await harness.emulator.inject(.timeout)
            #expect(try await harness.gate("status", paymentId: id).status == 504)
            await harness.emulator.inject(.dropConnection)
            let fresh = PayFortHarness.makeSession()
            defer { fresh.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) { _ = try await harness.gate("status", paymentId: id, session: fresh) }
            // A fault for another path waits for its own.
            await harness.emulator.inject(.serverError, path: "card/capture")
            #expect(try await harness.gate("status", paymentId: id).status == 200)
            #expect(try await harness.post(harness.admin.appendingPathComponent("faults"), body: Data(#"{"fault": "nope"}"#.utf8)).status == 400)
            #expect(try await harness.get(harness.admin.appendingPathComponent("ledger")).status == 200)
            #expect(try await harness.get(harness.admin.appendingPathComponent("payments")).text.contains(id))
        }
    }
}

@Suite("ecommpay emulator: sandbox customer")
struct EcommpayCustomerTests {
    @Test("launch of an ecommpay WalletLaunch: SDKResult codes 0, 100, 200, 500 with the payment's fields flattened")
    func launch() async throws {
        try await Harness.with { harness async throws in
            let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
            func launch(_ choice: SandboxEcommpayCustomer.Choice, params: JSONValue = Harness.sdkParams(),
                        secret: String = Harness.project.secretKey) async throws -> SDKResult? {
                let customer = SandboxEcommpayCustomer(baseURL: harness.base, returns: returns, choice: choice, callbacksFirst: true)
                return try await customer.launch(WalletLaunch(wallet: "ecommpay", parameters: [
                    "params": params.serialized, "signature": EcommpaySignature.sdkSign(params, secret: secret), "method": "card"]))
            }
            let paid = try #require(try await launch(.complete))
            #expect(paid.code == "0")
            #expect(paid.parameters["status"] == "success")
            #expect(paid.parameters["sum"] == "1999")
            #expect(paid.parameters["currency"] == "USD")
            #expect(paid.parameters["type"] == "purchase")
            #expect(paid.parameters["method"] == "card")
            #expect(paid.parameters["account_number"] == "400000******0010")
            #expect(try await launch(.decline)?.code == "100")
            #expect(try await launch(.threeDSecureFail)?.code == "100")
            #expect(try await launch(.threeDSecurePass)?.code == "0")
            #expect(try await launch(.cascade)?.code == "0")
            #expect(try await launch(.cancel)?.code == "200")
            let error = try #require(try await launch(.complete, secret: "wrong"))
            #expect(error.code == "500")
            #expect(error.parameters["error_code_string"] == "SERVER_UNAUTHORIZED")
            #expect(error.parameters["error_code"] == "0")
            #expect(error.parameters["error_message"]?.hasPrefix("signature") == true)
            let customer = SandboxEcommpayCustomer(baseURL: harness.base, returns: returns)
            #expect(try await customer.launch(WalletLaunch(wallet: "alipay", parameters: [:])) == nil)
            // The SDK's string for the hand-off, as the stand-in's SDK builds it.
            let params = Harness.sdkParams(paymentId: "p-9")
            let prepared = try await customer.prepareSDK(WalletLaunch(wallet: "ecommpay", parameters: ["params": params.serialized]))
            #expect(prepared == ["params_for_signature": "customer_id:customer-1;payment_amount:1999;payment_currency:USD;"
                + "payment_description:T-shirt with dog print;payment_id:p-9;project_id:1234"])
            await #expect(throws: EcommpayDevice.Failure.self) {
                try await customer.prepareSDK(WalletLaunch(wallet: "ecommpay", parameters: ["params": "[1]"]))
            }
        }
    }

    @Test("open of a Payment Page URL: the customer pays or cancels, and the final redirect reaches the ReturnURLHandler")
    func open() async throws {
        try await Harness.with { harness async throws in
            let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
            for (choice, status) in [(SandboxEcommpayCustomer.Choice.complete, "success"), (.threeDSecureFail, "decline"), (.cancel, nil)] {
                let expected = try returns.expectReturn()
                let id = Harness.newPaymentId()
                let fields = Harness.pageFields(paymentId: id).filter { !$0.0.hasPrefix("redirect_") }
                    + [("redirect_success_url", .string(expected.url.absoluteString)), ("redirect_fail_url", .string(expected.url.absoluteString))]
                let customer = SandboxEcommpayCustomer(baseURL: harness.base, returns: returns, choice: choice)
                try await customer.open(harness.pageURL(fields), handoff: .webPage)
                let result = await returns.wait(for: expected, timeout: .seconds(5))
                guard case .returned(let url) = result else {
                    Issue.record("\(choice): no return (\(result))")
                    continue
                }
                #expect(url.absoluteString == expected.url.absoluteString)
                #expect(await harness.emulator.payment(projectId: 1234, paymentId: id)?.status == status)
            }
        }
    }
}
