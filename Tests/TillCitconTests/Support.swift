import Foundation
import TillGatewayKit
import TillTesting
@testable import TillCitcon
@testable import TillCitconServer

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

    static func token(_ value: String, type: String = "server", expiresIn: TimeInterval = 3_600) -> TransportResponse {
        json(#"{"status":"success","app":"upi","version":"v1","data":{"access_token":"\#(value)","token_type":"\#(type)","permissions":["charge","inquire"],"expiry":\#(Int(Date().timeIntervalSince1970 + expiresIn))}}"#)
    }

    static func charge(id: String = "ch0001", reference: String, status: String = "pending", method: String = "wechatpay",
                       client: String = #"[{"type":"native","content":{"appid":"wx1","partnerid":"p1","package":"Sign=WXPay","noncestr":"n","timestamp":1767225600,"prepayid":"wxp1","sign":"S"}},{"type":"url","content":{"url":"https://citcon.test/h5/ch0001"}}]"#) -> TransportResponse {
        json(#"{"status":"success","app":"upi","version":"v1","data":{"object":"charge","id":"\#(id)","reference":"\#(reference)","amount":1999,"currency":"USD","country":"US","auto_capture":true,"status":"\#(status)","time_created":1767225600000,"charge_token":"ct1","amount_captured":null,"amount_refunded":"","payment":{"method":"\#(method)","client":\#(client)}}}"#)
    }

    static func failure(code: String, message: String, status: Int) -> TransportResponse {
        json(#"{"status":"fail","app":"upi","version":"v1","data":{"code":"\#(code)","message":"\#(message)"}}"#, status: status)
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
