import Foundation
import TillGatewayKit

/// Where the merchant server reaches iPayNow's cross-border gateway: every function (WP001, MQ001)
/// posts to `{base}/global`, the kind named by `funcode` (PHP SDK `TradeService`, `OrderQueryService`).
public struct IPayNowEnvironment: Sendable, Hashable {
    /// The base URL; requests go to `{base}/global`.
    public let baseURL: URL

    public init(baseURL: URL) { self.baseURL = baseURL }

    /// `https://gapi.ipaynow.cn` (PHP SDK; the iOS plugin's binary names the same host).
    public static let production = IPayNowEnvironment(baseURL: URL(string: "https://gapi.ipaynow.cn")!)
    /// `http://dby.ipaynow.cn` (PHP SDK and the iOS plugin's test host; plain HTTP, as published).
    public static let test = IPayNowEnvironment(baseURL: URL(string: "http://dby.ipaynow.cn")!)

    /// `{base}/global`.
    public var gatewayURL: URL { baseURL.appendingPathComponent("global") }
}

/// The merchant's iPayNow credentials. The app key signs everything; it never leaves the server.
public struct IPayNowCredentials: Sendable {
    /// The MD5 key of the app (`appKey`, "一个应用对应一个MD5密钥": one key per app, appendix B).
    public let appKey: String

    public init(appKey: String) { self.appKey = appKey }
}

/// What a merchant sets for its iPayNow app.
public struct IPayNowSettings: Sendable, Hashable {
    /// The app's id (`appId`), issued by iPayNow; not a secret (it is in every presign).
    public var appId: String
    /// The settlement currency of a payment taken in CNY (`mhtAmtCurrFlag=0`, amount in RMB fen);
    /// `nil`: CNY payments are refused.
    public var settlementCurrency: String?
    /// `mhtOrderTimeOut`, 60–3600 seconds.
    public var orderTimeout: Int
    /// The UTC offset `mhtOrderStartTime` is written at (iPayNow states none; China time by default).
    public var utcOffsetSeconds: Int

    public init(appId: String, settlementCurrency: String? = nil, orderTimeout: Int = 3600, utcOffsetSeconds: Int = 8 * 3600) {
        self.appId = appId
        self.settlementCurrency = settlementCurrency
        self.orderTimeout = orderTimeout
        self.utcOffsetSeconds = utcOffsetSeconds
    }
}

/// iPayNow cross-border: the **server half**.
///
/// - **Prepare** builds the order from the stored payment, never from the app: `mhtOrderNo` is the
///   attempt, the amount and currency are the payment's, `notifyUrl` is the server's. It checks it
///   against appendix A (errors name the iPayNow field), signs it (``IPayNowSigning/Rule/order``) and
///   hands the app `payData`. No call to iPayNow: the app's plugin creates the order.
/// - **Confirm**: the N001 notification, verified under the rule its own fields name (legacy: `signType`
///   not signed; `version` present: signed), for this app only, acknowledged with `success=Y` once
///   stored; or an MQ001 query (``inquire(_:)``).
public struct IPayNowServer: CheckoutServer {
    public let gateway: GatewayID
    public let environment: IPayNowEnvironment
    public let settings: IPayNowSettings
    let credentials: IPayNowCredentials
    let client: GatewayClient
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - now: the clock `mhtOrderStartTime` is read from (tests fix it).
    public init(id: GatewayID = "ipaynow", environment: IPayNowEnvironment, credentials: IPayNowCredentials, settings: IPayNowSettings,
                transport: any HTTPTransport, now: @escaping @Sendable () -> Date = { Date() }) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.settings = settings
        self.client = GatewayClient(gateway: id, transport: transport)
        self.now = now
    }

    public var capabilities: GatewayCapabilities { IPayNowGateway.capabilities }

    /// The acknowledgement iPayNow expects once a notification is taken: the body `success=Y`
    /// (`ipaynow-python-sdk` `NotifyAck.success()`; the official notification servlets).
    public static let acknowledgement = NotificationAcknowledgement(statusCode: 200, contentType: "text/plain", body: Data("success=Y".utf8))

    // MARK: Prepare

    /// **Prepare**: the signed order for the app's plugin, in `parameters["payData"]`.
    /// - Throws: ``CheckoutError`` `unsupported_method` naming `intent.method`, `unsupported_currency`
    ///   naming `intent.amount.currency`, `misconfigured` naming `notificationURL` or
    ///   `settings.settlement_currency`, or appendix A's problem naming the iPayNow field
    ///   (`mhtOrderName` when the payment's description is too long for it).
    public func prepare(_ context: AttemptContext) async throws -> Preparation {
        let order = try order(for: context)
        let signature = IPayNowSigning.sign(canonical: IPayNowSigning.canonical(order.fields, rule: .order), appKey: credentials.appKey)
        let started = now()
        return Preparation(gateway: gateway, attempt: context.attempt, method: context.intent.method, amount: context.intent.amount,
                           parameters: [IPayNowGateway.payDataParameter: order.payData(signature: signature)],
                           returnURL: context.returnURL, expiresAt: started.addingTimeInterval(TimeInterval(settings.orderTimeout)))
    }

    /// The order of an attempt, checked.
    public func order(for context: AttemptContext) throws(CheckoutError) -> IPayNowOrder {
        let intent = context.intent
        guard let channel = IPayNowCodes.Channel(method: intent.method) else {
            throw CheckoutError(.unsupportedMethod, field: "intent.method",
                                message: "iPayNow cross-border takes alipay (90) and wechatpay (80)", gateway: gateway)
        }
        let code = intent.amount.currency.code
        let (currency, flag): (String, IPayNowCodes.AmountCurrency)
        if code == "CNY" {
            guard let settlement = settings.settlementCurrency else {
                throw CheckoutError(.misconfigured, field: "settings.settlement_currency",
                                    message: "a payment in CNY is sent in RMB fen against the app's settlement currency; set it", gateway: gateway)
            }
            (currency, flag) = (settlement, .renminbi)
        } else {
            guard IPayNowCodes.settlementCurrencies.contains(code) else {
                throw CheckoutError(.unsupportedCurrency, field: "intent.amount.currency",
                                    message: "\(code) is not an iPayNow settlement currency (appendix C)", gateway: gateway)
            }
            (currency, flag) = (code, .settlement)
        }
        guard let notifyURL = context.notificationURL else {
            throw CheckoutError(.misconfigured, field: "notificationURL", message: "iPayNow posts its N001 notification to notifyUrl; none is set",
                                gateway: gateway)
        }
        let label = intent.description.flatMap { $0.isEmpty ? nil : $0 } ?? intent.merchantReference
        let order = IPayNowOrder(appId: settings.appId, mhtOrderNo: context.attempt.rawValue, mhtOrderName: label,
                                 mhtCurrencyType: currency, mhtOrderAmt: intent.amount.minorUnits, mhtAmtCurrFlag: flag,
                                 mhtOrderDetail: label, mhtOrderTimeOut: settings.orderTimeout,
                                 mhtOrderStartTime: IPayNowOrder.startTime(now(), utcOffsetSeconds: settings.utcOffsetSeconds),
                                 notifyUrl: notifyURL.absoluteString, payChannelType: channel)
        if let issue = order.validate().first {
            let source = ["mhtOrderName", "mhtOrderDetail"].contains(issue.field) ? " (from the payment's description or reference)" : ""
            throw CheckoutError(issue.code, field: issue.field, message: issue.message + source, gateway: gateway)
        }
        return order
    }

    /// The plugin comes back to the app on its custom URL scheme (`pay:AndScheme:`): the first offered
    /// return URL whose scheme is not `http`/`https`.
    /// - Throws: ``CheckoutError`` naming `returnURLs` when the app offered no custom scheme.
    public func returnURL(from offered: [URL], for intent: PaymentIntent) throws -> URL? {
        guard let url = offered.first(where: { ($0.scheme?.lowercased()).map { !["http", "https"].contains($0) } ?? false }) else {
            throw CheckoutError(.invalidField, field: "returnURLs",
                                message: "iPayNow's plugin returns to the app on a custom URL scheme; offer one", gateway: gateway)
        }
        return url
    }

    // MARK: Confirm

    /// **Confirm**: an N001 notification. Verified under the rule its own fields name, for this app
    /// only; the report carries the order's amount; acknowledged with `success=Y`.
    /// - Throws: ``CheckoutError``: `signature_mismatch` (category verification), `invalid_field`
    ///   naming `body.appId` for another app's message or `body.funcode` for anything but N001.
    public func verifyNotification(_ notification: IncomingNotification) throws -> VerifiedNotification {
        let message = try IPayNowMessage(body: notification.body, appKey: credentials.appKey, field: "body", gateway: gateway)
        guard message.values["funcode"] == "N001" else {
            throw CheckoutError(.invalidField, field: "body.funcode", message: "not an N001 payment notification", gateway: gateway)
        }
        try checkApp(message, field: "body")
        return VerifiedNotification(report: try report(message, field: "body", event: "N001"), acknowledgement: Self.acknowledgement)
    }

    /// The `mhtOrderNo` a notification claims, read without verifying it.
    public func claimedAttempt(in notification: IncomingNotification) -> AttemptReference? {
        (try? FormFields.decode(notification.body))?["mhtOrderNo"].flatMap { $0.isEmpty ? nil : AttemptReference(rawValue: $0) }
    }

    /// **Confirm**: MQ001 for the attempt (signed over `appId`, `mhtOrderNo`, `mhtCharset`); the answer
    /// verified (its rule from its own fields) and read as a notification is.
    /// - Throws: ``CheckoutError`` `gateway_error` (unknown outcome) with iPayNow's `responseCode` and
    ///   `responseMsg` when the query itself failed; `signature_mismatch` when the answer's signature
    ///   does not match; the transport's classified error when it was not answered.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        var fields = FormFields([("funcode", "MQ001"), ("appId", settings.appId), ("mhtOrderNo", query.attempt.rawValue),
                                 ("mhtCharset", IPayNowCodes.charset), ("mhtSignType", IPayNowCodes.signTypeMD5)])
        fields.pairs.append(FormPair(name: "mhtSignature", value: IPayNowSigning.sign(fields, rule: .query, appKey: credentials.appKey)))
        let request = TransportRequest(method: .post, url: environment.gatewayURL,
                                       headers: ["Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"],
                                       body: Data(fields.encoded().utf8))
        let response = try await client.send(request)
        guard response.statusCode == 200 else {
            throw CheckoutError(.gatewayError, category: .unknownOutcome, field: "MQ001",
                                message: "iPayNow answered HTTP \(response.statusCode)", gateway: gateway)
        }
        // An answer that is not a success may be unsigned: it is read for its code only, never trusted further.
        let unverified = try? FormFields.decode(response.body, field: "MQ001")
        if let code = unverified?["responseCode"], code != IPayNowCodes.ResponseCode.success.rawValue {
            throw CheckoutError(.gatewayError, category: .unknownOutcome, field: "MQ001.responseCode",
                                message: "iPayNow could not answer the query", gateway: gateway,
                                gatewayCode: GatewayText.safe(code), gatewayMessage: unverified?["responseMsg"].flatMap { GatewayText.safe($0) })
        }
        let message = try IPayNowMessage(body: response.body, appKey: credentials.appKey, field: "MQ001", gateway: gateway)
        guard message.values["responseCode"] == IPayNowCodes.ResponseCode.success.rawValue else {
            throw CheckoutError(.missingField, category: .unknownOutcome, field: "MQ001.responseCode", message: "the answer has no A001",
                                gateway: gateway)
        }
        try checkApp(message, field: "MQ001")
        let report = try report(message, field: "MQ001", event: "MQ001")
        guard report.attempt == query.attempt else {
            throw CheckoutError(.invalidField, category: .unknownOutcome, field: "MQ001.mhtOrderNo", message: "the answer is about another order",
                                gateway: gateway)
        }
        return report
    }

    // MARK: Reading

    func checkApp(_ message: IPayNowMessage, field: String) throws(CheckoutError) {
        guard message.values["appId"] == settings.appId else {
            throw CheckoutError(.invalidField, category: .verification, field: "\(field).appId", message: "the message is for another app",
                                gateway: gateway)
        }
    }

    /// How long after an order's own timeout an unprocessed order (`A00I`) is taken as expired.
    public static let expiryGrace: TimeInterval = 600

    /// When an order that is still `A00I` counts as expired: its `mhtOrderStartTime` (read at the
    /// configured UTC offset) plus its `mhtOrderTimeOut` (3600 when absent, iPayNow's default) plus
    /// ``expiryGrace``. iPayNow documents no state for an order that timed out unpaid; Till's choice.
    func deadline(of message: IPayNowMessage) -> Date? {
        guard let start = message.values["mhtOrderStartTime"], IPayNowOrder.isStartTime(start) else { return nil }
        let digits = start.utf8.map { Int($0) - 48 }
        func number(_ range: Range<Int>) -> Int { digits[range].reduce(0) { $0 * 10 + $1 } }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: settings.utcOffsetSeconds) ?? .gmt
        let components = DateComponents(year: number(0..<4), month: number(4..<6), day: number(6..<8), hour: number(8..<10),
                                        minute: number(10..<12), second: number(12..<14))
        guard let started = calendar.date(from: components) else { return nil }
        let timeout = message.values["mhtOrderTimeOut"].flatMap(Int.init) ?? 3600
        return started.addingTimeInterval(TimeInterval(timeout) + Self.expiryGrace)
    }

    /// The report of a verified message: its order, its status, and for a payment the order's amount.
    func report(_ message: IPayNowMessage, field: String, event: String) throws(CheckoutError) -> StatusReport {
        guard let order = message.values["mhtOrderNo"] else {
            throw CheckoutError(.missingField, field: "\(field).mhtOrderNo", message: "the message names no order", gateway: gateway)
        }
        guard let raw = message.tradeStatus else {
            throw CheckoutError(.missingField, field: "\(field).tradeStatus", message: "the message carries no tradeStatus or transStatus",
                                gateway: gateway)
        }
        var status = IPayNowCodes.paymentStatus(raw)
        if event == "MQ001", raw == IPayNowCodes.TradeStatus.notProcessed.rawValue, let deadline = deadline(of: message), now() > deadline {
            status = .expired
        }
        let amount = message.orderAmount
        if status == .paid, amount == nil {
            throw CheckoutError(.missingField, field: "\(field).mhtOrderAmt", message: "a payment without its amount and currency", gateway: gateway)
        }
        let reference = message.values["nowPayOrderNo"]
        return StatusReport(gateway: gateway, attempt: AttemptReference(rawValue: order), gatewayReference: reference, status: status,
                            amount: amount, gatewayStatus: raw, gatewayCode: message.values["responseCode"],
                            gatewayMessage: message["responseMsg"].flatMap { GatewayText.safe($0) },
                            eventID: "\(reference ?? order):\(raw)" + (status == .expired ? ":expired" : ""))
    }
}
