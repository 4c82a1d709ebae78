import Foundation
import Testing
import TillGatewayKit
@testable import TillEcommpay
@testable import TillEcommpayServer

/// ``EcommpayGateway``, the app half: Present hands the options to the SDK adapter and its string to the
/// server for signing (or opens the Payment Page) after checking they are this attempt's; Return reads the SDK's `PaymentResult`, informational only.
@Suite("ecommpay gateway (app)")
struct GatewayTests {
    let app = EcommpayGateway()

    static func preparation(_ intent: PaymentIntent = Setup.intent(), returnURL: URL? = Setup.appReturn) async throws -> Preparation {
        try await Setup.server().prepare(Setup.context(intent, returnURL: returnURL))
    }

    /// `preparation` with its params changed by `change` (the signature kept).
    static func with(_ preparation: Preparation, _ change: (inout [OrderedJSON.Member]) -> Void) throws -> Preparation {
        let text = try #require(preparation.parameters[EcommpayGateway.Parameter.params])
        var members = try #require(try OrderedJSON.parse(Data(text.utf8)).objectMembers)
        change(&members)
        var copy = preparation
        copy.parameters[EcommpayGateway.Parameter.params] = String(decoding: OrderedJSON.object(members).serialized(), as: UTF8.self)
        return copy
    }

    static func replacing(_ key: String, with value: OrderedJSON) -> (inout [OrderedJSON.Member]) -> Void {
        { members in
            if let index = members.firstIndex(where: { $0.key == key }) { members[index] = .init(key: key, value: value) }
        }
    }

    // MARK: Present

    @Test("present a card: prepareSDK ecommpay with the params and method as prepared, unsigned, and the return URL")
    func presentCard() async throws {
        let preparation = try await Self.preparation()
        let step = try await app.present(preparation, input: .start)
        let parameters = preparation.parameters
        #expect(parameters[EcommpayGateway.Parameter.signature] == nil)
        #expect(step == .prepareSDK(WalletLaunch(wallet: "ecommpay", parameters: [
            "params": try #require(parameters["params"]), "method": "card",
        ], returnURL: Setup.appReturn)))
        #expect(EcommpayGateway.sdkWallet == "ecommpay")
    }

    @Test("present Apple Pay and a verify (amount 0) hand off to the SDK too; the mock mode goes with them")
    func presentApplePayAndVerify() async throws {
        let apple = try await Self.preparation(Setup.intent(method: .applePay))
        guard case .prepareSDK(let launch) = try await app.present(apple, input: .start) else { Issue.record("not an SDK hand-off"); return }
        #expect(launch.parameters["method"] == "apple_pay")
        let verify = try await Self.preparation(Setup.intent(0, action: .verify))
        guard case .prepareSDK(let verifyLaunch) = try await app.present(verify, input: .start) else { Issue.record("not an SDK hand-off"); return }
        #expect(verifyLaunch.parameters["params"] == verify.parameters["params"])
        let mock = try await Setup.server(mock: .success).prepare(Setup.context())
        guard case .prepareSDK(let mockLaunch) = try await app.present(mock, input: .start) else { Issue.record("not an SDK hand-off"); return }
        #expect(mockLaunch.parameters["mock_mode"] == "success")
    }

    /// The SDK's string for ``Setup``'s card sale, as a snake-case core would write it.
    static func sdkString(amount: String = "1999", paymentId: String = Setup.attempt.rawValue, extra: String = "") -> String {
        "customer_id:cust-7;language_code:de;payment_amount:\(amount);payment_currency:EUR;payment_description:Green tea;"
            + "payment_id:\(paymentId);project_id:\(Setup.projectId);region_code:DE" + extra
    }

    @Test("the SDK's string comes back: a submit of it, exactly as the SDK wrote it, for the server to sign")
    func presentSDKPrepared() async throws {
        let preparation = try await Self.preparation()
        let text = Self.sdkString()
        let step = try await app.present(preparation, input: .sdkPrepared(["params_for_signature": text]))
        #expect(step == .submit(Submission(kind: EcommpayGateway.signingKind, fields: ["params_for_signature": text])))
        // Another attempt's or amount's string is refused in the app already, naming the key.
        for (bad, key) in [(Self.sdkString(amount: "1"), "paymentAmount"), (Self.sdkString(paymentId: "other"), "paymentId"),
                           (Self.sdkString().replacingOccurrences(of: "EUR", with: "USD"), "paymentCurrency")] {
            let error = await #expect(throws: CheckoutError.self) {
                _ = try await app.present(preparation, input: .sdkPrepared(["params_for_signature": bad]))
            }
            #expect(error?.field == "params_for_signature.\(key)")
        }
        let missing = await #expect(throws: CheckoutError.self) { _ = try await app.present(preparation, input: .sdkPrepared([:])) }
        #expect(missing?.field == "params_for_signature")
        #expect(missing?.code == .missingField)
        // A Payment Page preparation has no SDK to prepare.
        let page = try await Self.preparation(Setup.intent(method: .paypal), returnURL: Setup.webReturn)
        let wrong = await #expect(throws: CheckoutError.self) {
            _ = try await app.present(page, input: .sdkPrepared(["params_for_signature": text]))
        }
        #expect(wrong?.field == "input")
    }

    @Test("present a Payment Page method: openURL of the signed page")
    func presentPaymentPage() async throws {
        let preparation = try await Self.preparation(Setup.intent(method: .paypal), returnURL: Setup.webReturn)
        let url = try #require(preparation.parameters[EcommpayGateway.Parameter.pageURL].flatMap(URL.init(string:)))
        #expect(try await app.present(preparation, input: .start) == .openURL(url, handoff: .webPage))
    }

    @Test("params of another attempt, amount or currency: the error names preparation.parameters.params.<key>",
          arguments: [
            ("payment_id", OrderedJSON.string("att0000000000000000000002")), ("payment_id", J.int(1)),
            ("payment_amount", J.int(1)), ("payment_amount", .string("1999")), ("payment_amount", J.int(0)),
            ("payment_currency", .string("USD")), ("payment_currency", .string("eur")),
          ] as [(String, OrderedJSON)])
    func presentRefusesAnother(_ key: String, _ value: OrderedJSON) async throws {
        let preparation = try Self.with(try await Self.preparation(), Self.replacing(key, with: value))
        let error = await #expect(throws: CheckoutError.self) { _ = try await app.present(preparation, input: .start) }
        #expect(error?.field == "preparation.parameters.params.\(key)")
        #expect(error?.code == .invalidField)
        #expect(error?.gateway == "ecommpay")
    }

    @Test("params missing a key, no params, not JSON, other input: refused by name")
    func presentRefusesBroken() async throws {
        let preparation = try await Self.preparation()
        for key in ["payment_id", "payment_amount", "payment_currency"] {
            let removed = try Self.with(preparation) { $0.removeAll { $0.key == key } }
            let error = await #expect(throws: CheckoutError.self) { _ = try await app.present(removed, input: .start) }
            #expect(error?.field == "preparation.parameters.params.\(key)")
        }
        var copy = preparation
        copy.parameters["params"] = nil
        let error = await #expect(throws: CheckoutError.self) { _ = try await app.present(copy, input: .start) }
        #expect(error?.field == "preparation.parameters.params")
        #expect(error?.code == .missingField)
        var garbled = preparation
        garbled.parameters["params"] = "{not json"
        let parse = await #expect(throws: CheckoutError.self) { _ = try await app.present(garbled, input: .start) }
        #expect(parse?.field == "preparation.parameters.params")
        let input = await #expect(throws: CheckoutError.self) { _ = try await app.present(preparation, input: .submit(FormValues([:]))) }
        #expect(input?.field == "input")
        #expect(input?.code == .unsupportedAction)
        var page = try await Self.preparation(Setup.intent(method: .alipay), returnURL: Setup.webReturn)
        page.parameters[EcommpayGateway.Parameter.pageURL] = "javascript:alert(1)"
        let scheme = await #expect(throws: CheckoutError.self) { _ = try await app.present(page, input: .start) }
        #expect(scheme?.field == "preparation.parameters.payment_page_url")
    }

    /// The SDK path refuses params of another attempt (above); the Payment Page URL is opened whatever payment it names.
    @Test("a Payment Page URL of another attempt is refused")
    func presentRefusesAnotherPage() async throws {
        let mine = try await Self.preparation(Setup.intent(method: .alipay), returnURL: Setup.webReturn)
        var other = mine
        other.attempt = AttemptReference(rawValue: "att0000000000000000000002")
        await #expect(throws: CheckoutError.self) { _ = try await app.present(other, input: .start) }
    }

    // MARK: Return

    @Test("the SDK's codes: 0 success, 100 decline, 200 cancelled, 500 error (failed only when the SDK stopped before sending)", arguments: [
        ("0", [:], ClientOutcome.Kind.succeeded),
        ("0", ["status": "success", "id": "att-1"], .succeeded),
        ("0", ["status": "awaiting capture"], .succeeded),
        ("0", ["status": "processing"], .pending),
        ("0", ["status": "awaiting 3ds result"], .pending),
        ("100", [:], .failed),
        ("100", ["status": "decline", "id": "att-1"], .failed),
        ("200", [:], .cancelled),
        ("500", [:], .unknown),
        ("500", ["error_code_string": "ILLEGAL_ARGUMENTS"], .failed),
        ("500", ["error_code_string": "SERVER_UNAUTHORIZED"], .failed),
        ("500", ["error_code": "paymentAlreadyExist"], .failed),
        ("500", ["error_code": "5"], .failed),
        ("500", ["error_code_string": "NETWORK_TIMEOUT"], .unknown),
        ("500", ["error_code": "networkError"], .unknown),
        ("500", ["error_code": "6"], .unknown),
        ("500", ["error_code": "99"], .unknown),
        ("500", ["error_code_string": "SERVER_UNAUTHORIZED", "id": "att-1", "status": "processing"], .unknown),
        ("500", ["id": "att-1", "status": "processing"], .unknown),
    ] as [(String, [String: String], ClientOutcome.Kind)])
    func sdkResult(_ code: String, _ parameters: [String: String], _ kind: ClientOutcome.Kind) async throws {
        let preparation = try await Self.preparation()
        let outcome = app.interpretReturn(.callback(code: code, parameters: parameters), for: preparation)
        #expect(outcome.kind == kind)
        #expect(outcome.gatewayCode == parameters["error_code"] ?? code)
        #expect(EcommpayGateway.ResultCode(rawValue: code) != nil)
    }

    @Test("an error's code and message are reported; an unknown code is unknown, never success")
    func sdkDetails() async throws {
        let preparation = try await Self.preparation()
        let error = app.interpretReturn(.callback(code: "500", parameters: ["error_code": "0", "error_message": "Invalid signature"]), for: preparation)
        #expect(error == ClientOutcome(.failed, gatewayCode: "0", message: "Invalid signature"))
        let decline = app.interpretReturn(.callback(code: "100", parameters: ["status": "decline"]), for: preparation)
        #expect(decline.message == "decline")
        for code in ["1", "-1", "300", "success", ""] {
            let outcome = app.interpretReturn(.callback(code: code, parameters: [:]), for: preparation)
            #expect(outcome.kind == .unknown, "\(code)")
        }
        #expect(EcommpayGateway.ResultCode.allCases.map(\.rawValue) == ["0", "100", "200", "500"])
    }

    @Test("back from the Payment Page: pending until the callback; timed out or abandoned: unknown")
    func otherReturns() async throws {
        let preparation = try await Self.preparation(Setup.intent(method: .alipay), returnURL: Setup.webReturn)
        #expect(app.interpretReturn(.url(Setup.webReturn), for: preparation).kind == .pending)
        #expect(app.interpretReturn(.timedOut, for: preparation).kind == .unknown)
        #expect(app.interpretReturn(.abandoned, for: preparation).kind == .unknown)
    }

    @Test("capabilities: card, Apple Pay and the Payment Page's methods; sale, authorize, verify; inquiry and notifications")
    func capabilities() {
        let capabilities = EcommpayGateway.capabilities
        #expect(capabilities.methods == [.card, .applePay, .alipay, .wechatPay, .paypal])
        #expect(capabilities.actions == [.sale, .authorize, .verify])
        #expect(capabilities.supportsInquiry)
        #expect(capabilities.supportsNotifications)
        #expect(EcommpayGateway().gateway == "ecommpay")
        #expect(EcommpayGateway(id: "ecommpay-eu").gateway == "ecommpay-eu")
    }
}
