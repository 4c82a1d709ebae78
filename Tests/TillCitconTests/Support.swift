import Foundation
import TillGatewayKit
import TillTesting
@testable import TillCitcon
@testable import TillCitconServer
import TillOrchestration

enum Fixtures {
    static let secret = "api-secret-for-tests"
    static let credentials = CitconCredentials(apiKey: "merchant-key", apiSecret: secret)
    static let base = URL(string: "https://citcon.test/v1/")!

    /// The server half, with the test credentials.
    static func server(_ transport: RecordingTransport, settings: CitconSettings = CitconSettings(),
                       orderDetails: (@Sendable (AttemptContext) -> CitconOrderDetails?)? = nil) -> CitconServer {
        CitconServer(environment: .custom(base), credentials: credentials, settings: settings, transport: transport, orderDetails: orderDetails)
    }

    /// The app half: no credentials.
    static func app(_ transport: RecordingTransport = RecordingTransport(), environment: CitconEnvironment = .custom(base)) -> CitconGateway {
        CitconGateway(environment: environment, transport: transport)
    }

    static func json(_ text: String, status: Int = 200) -> TransportResponse {
        TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: Data(text.utf8))
    }

    /// A token answer in the 2025 sandbox's shape (`permission`, `expiry` in epoch seconds).
    static func token(_ value: String, type: String = "server", expiresIn: TimeInterval = 3_600) -> TransportResponse {
        json(#"{"status":"success","app":"citcon_upi","version":"v1.0.0","data":{"access_token":"\#(value)","token_type":"\#(type)","expiry":\#(Int(Date().timeIntervalSince1970 + expiresIn)),"permission":["inquiry","charge","vault"]}}"#)
    }

    /// WeChat Pay's native content, as the Android SDK reads it (a JSON text inside `content`).
    static let wechatContent = #"{"appid":"wx1","partnerid":"p1","package":"Sign=WXPay","noncestr":"n","timestamp":1767225600,"prepayid":"wxp1","sign":"S"}"#

    /// A `payment.client[]` entry.
    static func entry(_ client: String, format: String = "redirect", content: String) -> [String: Any] {
        ["client": client, "format": format, "method": "GET", "content": content]
    }

    /// A charge answer in the sandbox's shape; by default a WeChat Pay `mobile_native` entry.
    static func charge(id: String = "2000470537621948100613", reference: String, status: String = "initiated", method: String = "wechatpay",
                       client: [[String: Any]]? = nil, amount: Int = 1999, amountRefunded: Any = NSNull()) -> TransportResponse {
        let entries = client ?? [entry("mobile_native", format: "app", content: wechatContent)]
        let data: [String: Any] = [
            "object": "charge", "charge_token": "ac1c93d0bc8d11f0bf8161153c3aca95", "id": id, "reference": reference, "amount": amount,
            "currency": "USD", "time_created": 1762597711, "time_captured": NSNull(), "auto_capture": true, "status": status,
            "country": "US", "amount_refunded": amountRefunded, "payment": ["method": method, "client": entries],
        ]
        let body = try! JSONSerialization.data(withJSONObject: ["status": "success", "app": "citcon_upi", "version": "v1.0.0", "data": data],
                                               options: [.sortedKeys])
        return TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A cancel answer in the sandbox's shape.
    static func cancelled(id: String = "2000470537621948100613", reference: String) -> TransportResponse {
        json(#"{"status":"success","app":"citcon_upi","version":"v1.0.0","data":{"id":"\#(id)","object":"cancel","reference":"\#(reference)","amount":1999,"currency":"USD","time_created":1762597705,"country":"US","payment":{"method":"wechatpay","type":"","data":{"pan":""}},"status":"canceled"}}"#)
    }

    static func failure(code: String, message: String, status: Int) -> TransportResponse {
        json(#"{"status":"fail","app":"citcon_upi","version":"v1.0.0","data":{"code":"\#(code)","message":"\#(message)"}}"#, status: status)
    }

    static func intent(method: PaymentMethod = .wechatPay, action: PaymentAction = .sale) -> PaymentIntent {
        PaymentIntent(merchantReference: "order-42", amount: Money(minorUnits: 1999, currency: try! Currency(code: "USD")),
                      country: try! CountryCode("US"),
                      method: method, action: action,
                      customer: Customer(reference: "cust-9", email: "ada@example.com", firstName: "Ada", lastName: "Lovelace"),
                      description: "order 42")
    }

    static let universalReturn = URL(string: "https://shop.example.com/till/return?till_state=abc")!
    static let schemeReturn = URL(string: "myshop://till/return?till_state=abc")!
    static let notificationURL = URL(string: "https://merchant.example/v1/notifications/citcon")!

    static func context(_ intent: PaymentIntent, returnURL: URL? = universalReturn) -> AttemptContext {
        AttemptContext(intent: intent, attempt: AttemptReference(rawValue: "attemptref0000000000000001"), returnURL: returnURL,
                       notificationURL: notificationURL)
    }
}
