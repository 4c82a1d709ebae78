import Foundation
import Testing
import TillGatewayKit
@testable import TillIPayNow
@testable import TillIPayNowServer

/// ``IPayNowGateway``, the app half: Present checks that payData is the attempt's and launches the
/// plugin; Return reads the plugin delegate's result, never as success unless the plugin said so.
@Suite("iPayNow gateway (app)")
struct GatewayTests {
    let app = IPayNowGateway()

    /// The handoff facts (`Fixtures/ios-plugin-handoff.json`): the delegate's enum and the appendix D codes.
    struct Handoff: Decodable {
        struct Delegate: Decodable { var enum_IPNCrossBorderPayResult: [String: Int] }
        struct Scheme: Decodable { var url_scheme: String }
        var delegate: Delegate
        var demo_scheme: Scheme
        var error_codes_seed_appendix_D: [String: String]
    }

    static func handoff() throws -> Handoff {
        try JSONDecoder().decode(Handoff.self, from: fixture("ios-plugin-handoff.json"))
    }

    static func preparation(_ intent: PaymentIntent = Setup.intent(), settings: IPayNowSettings = IPayNowSettings(appId: Setup.appId),
                            returnURL: URL? = Setup.appReturn) async throws -> Preparation {
        try await Setup.server(settings: settings).prepare(Setup.context(intent, returnURL: returnURL))
    }

    /// `preparation` with its payData changed by `change`.
    static func with(_ preparation: Preparation, _ change: (String) -> String) -> Preparation {
        var copy = preparation
        copy.parameters["payData"] = change(preparation.parameters["payData"] ?? "")
        return copy
    }

    // MARK: Present

    @Test("present .start: launchWallet with payData as signed and the return URL's scheme (the demo's)")
    func presentLaunches() async throws {
        let handoff = try Self.handoff()
        #expect(Setup.appReturn.scheme == handoff.demo_scheme.url_scheme)
        let preparation = try await Self.preparation()
        let step = try await app.present(preparation, input: .start)
        let payData = try #require(preparation.parameters["payData"])
        #expect(step == .launchWallet(WalletLaunch(wallet: "ipaynow", parameters: ["payData": payData, "scheme": handoff.demo_scheme.url_scheme],
                                                    returnScheme: handoff.demo_scheme.url_scheme, returnURL: Setup.appReturn)))
        #expect(step.customerMayAuthenticate)
    }

    @Test("present accepts every computed presign vector's payData for its own attempt", arguments: PresignVectors.all)
    func presentVector(_ vector: PresignVectors.Case) async throws {
        let payData = try #require(vector.payData)
        let fields = vector.fields
        let amountText = try #require(fields["mhtOrderAmt"])
        let amount = try #require(Int64(amountText))
        let currency = fields["mhtAmtCurrFlag"] == "0" ? "CNY" : try #require(fields["mhtCurrencyType"])
        let method: PaymentMethod = fields["payChannelType"] == "80" ? .wechatPay : .alipay
        let order = try #require(fields["mhtOrderNo"])
        let preparation = Preparation(gateway: "ipaynow", attempt: AttemptReference(rawValue: order),
                                      method: method, amount: Setup.money(amount, currency), parameters: ["payData": payData],
                                      returnURL: Setup.appReturn)
        let step = try await app.present(preparation, input: .start)
        guard case .launchWallet(let launch) = step else { Issue.record("not a wallet launch: \(step)"); return }
        #expect(launch.parameters["payData"] == payData)
    }

    @Test("payData not this attempt's: the error names preparation.parameters.payData.<field>")
    func presentRefusesAnotherOrder() async throws {
        let preparation = try await Self.preparation()
        let attempt = Setup.attempt.rawValue
        let cases: [(String, (String) -> String)] = [
            ("mhtOrderNo", { $0.replacingOccurrences(of: "mhtOrderNo=\(attempt)", with: "mhtOrderNo=att0000000000000000000002") }),
            ("mhtOrderAmt", { $0.replacingOccurrences(of: "mhtOrderAmt=1050", with: "mhtOrderAmt=105") }),
            ("mhtCurrencyType", { $0.replacingOccurrences(of: "mhtCurrencyType=NZD", with: "mhtCurrencyType=AUD") }),
            ("payChannelType", { $0.replacingOccurrences(of: "payChannelType=90", with: "payChannelType=80") }),
            ("payChannelType", { $0.replacingOccurrences(of: "payChannelType=90", with: "payChannelType=13") }),
            ("mhtAmtCurrFlag", { $0.replacingOccurrences(of: "mhtAmtCurrFlag=1", with: "mhtAmtCurrFlag=0") }),
            ("mhtAmtCurrFlag", { $0.replacingOccurrences(of: "mhtAmtCurrFlag=1", with: "mhtAmtCurrFlag=2") }),
            ("mhtSignType", { $0.replacingOccurrences(of: "mhtSignType=MD5", with: "mhtSignType=RSA") }),
            ("mhtSignature", { String($0.dropLast()) }),
            ("mhtSignature", { $0 + "0" }),
            ("mhtSignature", { String($0.dropLast()) + "g" }),
            ("mhtSignature", { String($0.dropLast(32)) + String(repeating: "Z", count: 32) }),
        ]
        for (field, change) in cases {
            let error = await #expect(throws: CheckoutError.self, "\(field)") { _ = try await app.present(Self.with(preparation, change), input: .start) }
            #expect(error?.field == "preparation.parameters.payData.\(field)", "\(field)")
            #expect(error?.gateway == "ipaynow")
        }
    }

    @Test("payData unreadable: missing, a part without =, a field twice, a required field missing")
    func presentRefusesBadPayData() async throws {
        let preparation = try await Self.preparation()
        var none = preparation
        none.parameters = [:]
        let missing = await #expect(throws: CheckoutError.self) { _ = try await app.present(none, input: .start) }
        #expect(missing?.code == .missingField)
        #expect(missing?.field == "preparation.parameters.payData")
        let cases: [(String, CheckoutError.Code, (String) -> String)] = [
            ("preparation.parameters.payData", .invalidField, { $0 + "&garbage" }),
            ("preparation.parameters.payData", .invalidField, { $0 + "&" }),
            ("preparation.parameters.payData", .invalidField, { "=x&" + $0 }),
            ("preparation.parameters.payData.mhtOrderAmt", .duplicateField, { $0 + "&mhtOrderAmt=1050" }),
            ("preparation.parameters.payData.appId", .missingField, { $0.replacingOccurrences(of: "appId=\(Setup.appId)&", with: "") }),
            ("preparation.parameters.payData.mhtSignature", .missingField, { $0.components(separatedBy: "&mhtSignature=")[0] }),
            ("preparation.parameters.payData.mhtReserved", .invalidField, { $0 + "&mhtReserved=%ZZ" }),
        ]
        for (field, code, change) in cases {
            let error = await #expect(throws: CheckoutError.self, "\(field)") { _ = try await app.present(Self.with(preparation, change), input: .start) }
            #expect(error?.field == field)
            #expect(error?.code == code, "\(field)")
        }
    }

    @Test("CNY: flag 0 is accepted for a CNY attempt whatever the settlement currency; flag 0 for a NZD attempt is refused")
    func presentCNY() async throws {
        let cny = try await Self.preparation(Setup.intent(8800, "CNY"), settings: IPayNowSettings(appId: Setup.appId, settlementCurrency: "USD"))
        _ = try await app.present(cny, input: .start)
        var wrong = cny
        wrong.amount = Setup.money(8800, "USD")
        let error = await #expect(throws: CheckoutError.self) { _ = try await app.present(wrong, input: .start) }
        #expect(error?.field == "preparation.parameters.payData.mhtAmtCurrFlag")
    }

    @Test("the return URL: https only (or none) is refused naming returnURL; another input than .start naming input")
    func presentReturnURLAndInput() async throws {
        for url in [Setup.webReturn, URL(string: "http://shop.example.com/r")!, nil] as [URL?] {
            let preparation = try await Self.preparation(returnURL: url)
            let error = await #expect(throws: CheckoutError.self) { _ = try await app.present(preparation, input: .start) }
            #expect(error?.field == "returnURL")
            #expect(error?.code == .misconfigured)
        }
        let preparation = try await Self.preparation()
        for input in [PresentInput.submit(FormValues(["x": "y"])), .returned(Setup.appReturn)] {
            let error = await #expect(throws: CheckoutError.self) { _ = try await app.present(preparation, input: input) }
            #expect(error?.field == "input")
            #expect(error?.code == .unsupportedAction)
        }
    }

    // MARK: Return

    @Test("interpretReturn: every IPNCrossBorderPayResult, by name (any case) and by number")
    func payResults() async throws {
        let preparation = try await Self.preparation()
        let numbers = try Self.handoff().delegate.enum_IPNCrossBorderPayResult
        #expect(numbers == ["IPNCrossBorderPayResultFail": 0, "IPNCrossBorderPayResultSuccess": 1, "IPNCrossBorderPayResultCancel": 2,
                            "IPNCrossBorderPayResultUnknown": 3])
        let expected: [String: ClientOutcome.Kind] = ["Fail": .failed, "Success": .succeeded, "Cancel": .cancelled, "Unknown": .unknown]
        for (name, number) in numbers {
            let short = String(name.dropFirst("IPNCrossBorderPayResult".count))
            let kind = try #require(expected[short])
            for code in [short.lowercased(), short, short.uppercased(), String(number)] {
                #expect(app.interpretReturn(.callback(code: code, parameters: [:]), for: preparation).kind == kind, "\(code)")
            }
            #expect(IPayNowCodes.PayResult(code: String(number))?.rawValue == short.lowercased())
        }
        let unknown = app.interpretReturn(.callback(code: "3", parameters: ["erroInfo": "交易状态未知"]), for: preparation)
        #expect(unknown.gatewayCode == "PE005")
        #expect(unknown.message == "交易状态未知")
        let failed = app.interpretReturn(.callback(code: "fail", parameters: ["erroCode": "PE004", "erroInfo": "交易处理失败"]), for: preparation)
        #expect(failed == ClientOutcome(.failed, gatewayCode: "PE004", message: "交易处理失败"))
        let cancelled = app.interpretReturn(.callback(code: "cancel", parameters: ["erroInfo": "支付被取消"]), for: preparation)
        #expect(cancelled.kind == .cancelled)
        #expect(cancelled.message == "支付被取消")
    }

    @Test("interpretReturn: PE001–PE005 as the code or as a fail's erroCode; PE002 and PE005 may have paid")
    func pluginErrors() async throws {
        let preparation = try await Self.preparation()
        let codes = try Self.handoff().error_codes_seed_appendix_D
        #expect(Set(codes.keys) == Set(IPayNowCodes.PluginError.allCases.map(\.rawValue)))
        let expected: [String: ClientOutcome.Kind] = ["PE001": .failed, "PE002": .unknown, "PE003": .failed, "PE004": .failed, "PE005": .unknown]
        for (code, kind) in expected {
            let direct = app.interpretReturn(.callback(code: code, parameters: ["erroInfo": "x"]), for: preparation)
            #expect(direct.kind == kind, "\(code)")
            #expect(direct.gatewayCode == code)
            let viaFail = app.interpretReturn(.callback(code: "0", parameters: ["erroCode": code]), for: preparation)
            // A fail with PE005 says "status unknown" in the code: the outcome is not a definite failure either.
            #expect(viaFail.kind == kind, "fail + \(code)")
            #expect(viaFail.gatewayCode == code)
        }
    }

    @Test("interpretReturn: unknown codes, the URL, a timeout or abandonment: never success")
    func neverSuccess() async throws {
        let preparation = try await Self.preparation()
        for code in ["", "9000", "SUCCESS ", "succeeded", "ok", "4", "-1", "PE006", "pe002", "A001", "success=Y", "1.0"] {
            let outcome = app.interpretReturn(.callback(code: code, parameters: ["erroCode": "A001"]), for: preparation)
            #expect(outcome.kind == .unknown, "\(code)")
        }
        let url = app.interpretReturn(.url(URL(string: "iPaynowCrossBorderSDKDemo://safepay/?resultStatus=9000")!), for: preparation)
        #expect(url.kind == .pending)
        #expect(app.interpretReturn(.timedOut, for: preparation).kind == .unknown)
        #expect(app.interpretReturn(.abandoned, for: preparation).kind == .unknown)
        // Only a success result is ever .succeeded.
        var successes = 0
        for code in ["success", "1", "fail", "0", "cancel", "2", "unknown", "3", "PE001", "PE002", "PE003", "PE004", "PE005", "x"] {
            for parameters in [[:], ["erroCode": "PE002"], ["erroCode": "A001", "erroInfo": "ok"]] as [[String: String]] {
                if app.interpretReturn(.callback(code: code, parameters: parameters), for: preparation).kind == .succeeded {
                    successes += 1
                    #expect(["success", "1"].contains(code), "\(code)")
                }
            }
        }
        #expect(successes == 6)
    }

    @Test("the plugin's text is made safe before it is shown")
    func unsafeText() async throws {
        let preparation = try await Self.preparation()
        let outcome = app.interpretReturn(.callback(code: "fail", parameters: ["erroCode": "PE004\u{0}", "erroInfo": "bad\u{1B}[31m"]), for: preparation)
        #expect(outcome.kind == .failed)
        #expect(!(outcome.gatewayCode ?? "").contains("\u{0}"))
        #expect(!(outcome.message ?? "").contains("\u{1B}"))
    }

    @Test("capabilities: Alipay and WeChat Pay, sale, appendix C's currencies but JPY, and CNY, inquiry and notifications")
    func capabilities() {
        let capabilities = IPayNowGateway.capabilities
        #expect(capabilities.methods == [.alipay, .wechatPay])
        #expect(capabilities.actions == [.sale])
        #expect(capabilities.currencies?.count == 15)
        #expect(capabilities.currencies?.contains(Currency.lookup("JPY")!) == false)
        #expect(capabilities.currencies?.contains(Currency.lookup("CNY")!) == true)
        #expect(capabilities.currencies?.contains(Currency.lookup("KRW")!) == false)
        #expect(capabilities.supportsInquiry && capabilities.supportsNotifications)
        #expect(app.capabilities == capabilities)
        #expect(IPayNowGateway(id: "ipaynow-hk").gateway == "ipaynow-hk")
    }
}
