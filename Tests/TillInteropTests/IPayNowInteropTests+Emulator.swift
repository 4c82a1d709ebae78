import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillIPayNowServer
import TillSandbox

extension IPayNowInteropTests {
    // MARK: 4. The SDK accepts the emulator's N001s

    @Test("payments through the plugin stand-in: an endpoint built on the SDK verifies each N001 the emulator posts (legacy shape, verify with exclude_sign_type=True) and acknowledges it; Till accepts the same bytes; the SDK also verifies the emulator's MQ001 answer")
    func sdkAcceptsEmulatorNotifications() async throws {
        let python = try await PythonEnvironment.ipaynow.value
        let app = IPayNowInterop.app
        let receiver = try python.start("ipaynow_receiver.py", [app.id, app.key])
        let receiverURL: URL
        do {
            receiverURL = try #require(URL(string: try await receiver.firstLine()))
        } catch {
            receiver.cancel()
            throw error
        }
        let emulator = IPayNowEmulator(apps: [.init(appId: app.id, appKey: app.key)], notifyRetryInterval: .milliseconds(50),
                                       notifyMaxAttempts: 2, notifyTimeout: .seconds(5))
        let capture = CapturingTransport(URLSessionTransport())
        let payments: [(attempt: String, intent: PaymentIntent, expected: Money)] = [
            ("emu1nzd", try IPayNowInterop.intent(1050, "NZD", .alipay, "绿茶 green tea + 100%"), try IPayNowInterop.money(1050, "NZD")),
            ("emu2cny", try IPayNowInterop.intent(8800, "CNY", .alipay, "测试商品!@#"), try IPayNowInterop.money(8800, "CNY")),
            ("emu3gbp", try IPayNowInterop.intent(500, "GBP", .alipay, nil), try IPayNowInterop.money(500, "GBP")),
        ]
        var server: IPayNowServer?
        var queryAnswer: Data?
        do {
            let sandbox = try await Sandbox.start(emulators: [emulator])
            do {
                let base = sandbox.baseURL(of: emulator)
                let till = IPayNowServer(environment: IPayNowEnvironment(baseURL: base), credentials: IPayNowCredentials(appKey: app.key),
                                         settings: IPayNowSettings(appId: app.id, settlementCurrency: "HKD"), transport: capture)
                server = till
                for payment in payments {
                    let context = AttemptContext(intent: payment.intent, attempt: AttemptReference(rawValue: payment.attempt),
                                                 returnURL: URL(string: "tillshop://ipaynow"), notificationURL: receiverURL)
                    let payData = try #require(try await till.prepare(context).parameters[IPayNowGateway.payDataParameter])
                    let result = try await IPayNowDevice.pay(baseURL: base, .init(payData: payData, scheme: "tillshop", outcome: .pay,
                                                                                   waitForNotification: true))
                    #expect(result.result == "Success", "\(payment.attempt): \(result)")
                }
                // Emulator-signed N001s built by hand: another status, then a tampered and a forged one.
                _ = await emulator.sendCrafted(.init(mhtOrderNo: "emu1nzd", tradeStatus: "A002"))
                _ = await emulator.sendCrafted(.init(mhtOrderNo: "emu1nzd", tamper: ["mhtOrderAmt": "1"]))
                _ = await emulator.sendCrafted(.init(mhtOrderNo: "emu1nzd", appKey: "not-the-app-key-of-this-app-0000"))
                await emulator.waitForNotifications()

                // Till's MQ001 to the emulator; its answer goes to the SDK below.
                let report = try await till.inquire(InquiryQuery(attempt: AttemptReference(rawValue: "emu1nzd")))
                #expect(report.status == .paid && report.amount == payments[0].expected)
                queryAnswer = capture.responses.last?.body
            } catch {
                await sandbox.stop()
                throw error
            }
            await sandbox.stop()
        } catch {
            receiver.cancel()
            throw error
        }
        let captured = try JSONDecoder().decode(IPayNowReceived.self, from: Data(try await receiver.finish().utf8)).requests
        let till = try #require(server)
        let sent = await emulator.notifications
        let ledger = await emulator.ledger
        try #require(captured.count == 6, "expected 3 payments' N001s and 3 crafted ones, got \(captured.count)")
        #expect(sent.map(\.body) == captured.map { String(decoding: $0.body, as: UTF8.self) }, "the receiver got the bytes the emulator sent")
        #expect(ledger.count == 3)

        // The three payments' N001s: the SDK verifies them as the legacy shape and acknowledges; its
        // payment entry point refuses them (it signs signType), its refund one takes them.
        for (index, payment) in payments.enumerated() {
            let request = captured[index]
            let text = String(decoding: request.body, as: UTF8.self)
            #expect(request.legacyShape && request.verify, "the SDK refused the emulator's N001: \(text)")
            #expect(request.ack == "success=Y" && sent[index].acknowledged)
            #expect(request.payment.accepted == false && request.payment.error == "E0012", "\(payment.attempt)")
            #expect(request.refund.accepted == true && request.refund.isSuccess == true, "\(payment.attempt)")
            #expect(request.contentType?.hasPrefix("application/x-www-form-urlencoded") == true)
            let verified = try till.verifyNotification(IncomingNotification(headers: ["content-type": request.contentType ?? ""],
                                                                            body: request.body))
            #expect(verified.report.attempt.rawValue == payment.attempt)
            #expect(verified.report.status == .paid)
            #expect(verified.report.amount == payment.expected, "\(payment.attempt)")
            #expect(verified.report.gatewayReference == ledger.first { $0.mhtOrderNo == payment.attempt }?.nowPayOrderNo)
        }
        // The crafted ones: another status, signed by the emulator, taken by both; tampered and forged
        // ones refused by both, and the SDK's endpoint answers success=N.
        let failed = captured[3]
        #expect(failed.verify && failed.ack == "success=Y")
        #expect(try till.verifyNotification(IncomingNotification(body: failed.body)).report.status == .failed)
        for (request, name) in [(captured[4], "tampered"), (captured[5], "forged")] {
            #expect(!request.verify && request.ack == "success=N", "the SDK accepted the \(name) N001")
            let refused = IPayNowInterop.refusal(till, body: String(decoding: request.body, as: UTF8.self))
            #expect(refused?.code == .signatureMismatch, "\(name): \(String(describing: refused))")
        }
        #expect(!sent[4].acknowledged && !sent[5].acknowledged)

        // The emulator's MQ001 answer: the legacy rule, in the SDK too.
        let answer = String(decoding: try #require(queryAnswer), as: UTF8.self)
        let verdicts = try await IPayNowSDK.verify([.init(body: answer, excludeSignType: true), .init(body: answer, excludeSignType: false)],
                                                   appId: app.id, appKey: app.key)
        #expect(verdicts[0].ok, "the SDK refused the emulator's MQ001 answer: \(answer)")
        #expect(!verdicts[1].ok)
        #expect(verdicts[0].fields["tradeStatus"] == "A001")
    }
}

extension IPayNowInterop {
    static func money(_ minor: Int64, _ code: String) throws -> Money {
        Money(minorUnits: minor, currency: try #require(Currency.lookup(code)))
    }

    static func intent(_ minor: Int64, _ code: String, _ method: PaymentMethod, _ description: String?) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "order-\(code)-\(minor)", amount: try money(minor, code), method: method, description: description)
    }
}

/// What `Python/ipaynow_receiver.py` printed: each POST and the SDK's verdicts on it.
struct IPayNowReceived: Decodable {
    struct EntryPoint: Decodable {
        var accepted: Bool
        var isSuccess: Bool?
        var error: String?
    }

    struct Request: Decodable {
        var method: String
        var path: String
        var contentType: String?
        var bodyBase64: String
        /// No `version`: checked with `exclude_sign_type=True`.
        var legacyShape: Bool
        /// `signer.verify` under that flag.
        var verify: Bool
        /// `NotifyParser.parse_payment`.
        var payment: EntryPoint
        /// `NotifyParser.parse_refund`.
        var refund: EntryPoint
        /// What the endpoint answered (`success=Y` / `success=N`).
        var ack: String

        var body: Data { Data(base64Encoded: bodyBase64) ?? Data() }
    }

    var requests: [Request]
}

/// A transport that passes requests on and keeps every answer.
final class CapturingTransport: HTTPTransport, @unchecked Sendable {
    // The lock guards `kept`; the wrapped transport is Sendable.
    private let wrapped: any HTTPTransport
    private let lock = NSLock()
    private var kept: [TransportResponse] = []

    init(_ wrapped: any HTTPTransport) {
        self.wrapped = wrapped
    }

    var responses: [TransportResponse] { lock.withLock { kept } }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let response = try await wrapped.send(request)
        lock.withLock { kept.append(response) }
        return response
    }
}
