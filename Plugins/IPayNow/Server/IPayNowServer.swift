import Foundation
import TillGatewayKit
import TillOrchestration

/// Where the merchant server reaches iPayNow's cross-border gateway: every function (WP001, MQ001)
/// posts to `{base}/global`, the kind named by `funcode` (PHP SDK `TradeService`, `OrderQueryService`).
public struct IPayNowEnvironment: Sendable, Hashable {
    /// The base URL; requests go to `{base}/global`.
    public let baseURL: URL

    public init(baseURL: URL) { self.baseURL = baseURL }

    /// `https://gapi.ipaynow.cn` (PHP SDK). The iOS plugin 1.0.1 sends every order there: its binary
    /// names `http://dby.ipaynow.cn/global/` too, but its `setEnvironment:` does nothing and is not in
    /// the public header, so an app's orders are always production's.
    public static let production = IPayNowEnvironment(baseURL: URL(string: "https://gapi.ipaynow.cn")!)
    /// `https://dby.ipaynow.cn`: the test host of the PHP SDK (which names it over plain `http`; the
    /// domestic Java SDK reaches the same host over `https`). For server-side tests only: orders the
    /// iOS plugin creates are never there.
    public static let test = IPayNowEnvironment(baseURL: URL(string: "https://dby.ipaynow.cn")!)

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
    /// Whether WeChat Pay orders (`payChannelType=80`) are signed. Off by default: the iOS plugin 1.0.1
    /// opens Alipay only.
    public var wechatPay: Bool

    public init(appId: String, settlementCurrency: String? = nil, orderTimeout: Int = 3600, utcOffsetSeconds: Int = 8 * 3600,
                wechatPay: Bool = false) {
        self.appId = appId
        self.settlementCurrency = settlementCurrency
        self.orderTimeout = orderTimeout
        self.utcOffsetSeconds = utcOffsetSeconds
        self.wechatPay = wechatPay
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
public struct IPayNowServer: GatewayServerHalf {
    public let gateway: GatewayID
    public let environment: IPayNowEnvironment
    public let settings: IPayNowSettings
    let credentials: IPayNowCredentials
    let client: GatewayHTTPClient
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - now: the clock `mhtOrderStartTime` is read from (tests fix it).
    public init(id: GatewayID = "ipaynow", environment: IPayNowEnvironment, credentials: IPayNowCredentials, settings: IPayNowSettings,
                transport: any HTTPTransport, now: @escaping @Sendable () -> Date = { Date() }) {
        self.gateway = id
        self.environment = environment
        self.credentials = credentials
        self.settings = settings
        self.client = GatewayHTTPClient(gateway: id, transport: transport)
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
        guard channel != .wechatPay || settings.wechatPay else {
            throw CheckoutError(.unsupportedMethod, field: "intent.method",
                                message: "the iOS plugin opens Alipay only; set wechat_pay to send WeChat Pay orders (80)", gateway: gateway)
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
            guard IPayNowCodes.chargeableCurrencies.contains(code) else {
                let why = code == "JPY" ? "no iPayNow source says whether a JPY mhtOrderAmt is in yen or in hundredths"
                    : "\(code) is not an iPayNow settlement currency (appendix C)"
                throw CheckoutError(.unsupportedCurrency, field: "intent.amount.currency", message: why, gateway: gateway)
            }
            (currency, flag) = (code, .settlement)
        }
        guard let notifyURL = context.notificationURL else {
            throw CheckoutError(.misconfigured, field: "notificationURL", message: "iPayNow posts its N001 notification to notifyUrl; none is set",
                                gateway: gateway)
        }
        // The plugin removes every space from the order before sending it (IPayNowOrder.validate): the
        // signed name is the one iPayNow receives.
        let label = (intent.description.flatMap { $0.isEmpty ? nil : $0 } ?? intent.merchantReference).replacingOccurrences(of: " ", with: "")
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

    /// **Confirm**: MQ001 for the attempt (signed over `appId`, `mhtOrderNo`, `mhtCharset`, as the PHP
    /// SDK's code does; asked once more signed over every field but `mhtSignature` when iPayNow refuses
    /// the first); the answer verified (its rule from its own fields), for this app, this order and a
    /// query (`funcode` absent or `MQ001`), and read as a notification is.
    /// - Throws: ``CheckoutError`` `gateway_error` (unknown outcome) with iPayNow's `responseCode` and
    ///   `responseMsg` when the query itself failed; `signature_mismatch` when the answer's signature
    ///   does not match; the transport's classified error when it was not answered.
    public func inquire(_ query: InquiryQuery) async throws -> StatusReport {
        var answer = try await exchangeQuery(query.attempt, rule: .query)
        if answer.refused != nil {
            // Sources disagree on what an MQ001 signs (the PHP code: appId, mhtOrderNo, mhtCharset; its
            // README and the app demo: every field but the signature). Asked again once under the other
            // reading; only our own request changes, nothing in the answer is trusted more.
            let second = try await exchangeQuery(query.attempt, rule: .queryAllFields)
            if second.refused == nil { answer = second }
        }
        if let refused = answer.refused { throw refused }
        let message = try IPayNowMessage(body: answer.body, appKey: credentials.appKey, field: "MQ001", gateway: gateway)
        guard message.values["responseCode"] == IPayNowCodes.ResponseCode.success.rawValue else {
            throw CheckoutError(.missingField, category: .unknownOutcome, field: "MQ001.responseCode", message: "the answer has no A001",
                                gateway: gateway)
        }
        guard message.values["funcode"] == nil || message.values["funcode"] == "MQ001" else {
            throw CheckoutError(.invalidField, category: .unknownOutcome, field: "MQ001.funcode", message: "not an answer to a query",
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

    /// One MQ001 exchange: the answer's body, or why iPayNow could not answer (read from an answer that
    /// may be unsigned, for its code only).
    private func exchangeQuery(_ attempt: AttemptReference, rule: IPayNowSigning.Rule) async throws -> (body: Data, refused: CheckoutError?) {
        var fields = FormFields([("funcode", "MQ001"), ("appId", settings.appId), ("mhtOrderNo", attempt.rawValue),
                                 ("mhtCharset", IPayNowCodes.charset), ("mhtSignType", IPayNowCodes.signTypeMD5)])
        fields.pairs.append(FormPair(name: "mhtSignature", value: IPayNowSigning.sign(fields, rule: rule, appKey: credentials.appKey)))
        let request = TransportRequest(method: .post, url: environment.gatewayURL,
                                       headers: ["Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"],
                                       body: Data(fields.encoded().utf8))
        let response = try await client.send(request)
        guard response.statusCode == 200 else {
            throw CheckoutError(.gatewayError, category: .unknownOutcome, field: "MQ001",
                                message: "iPayNow answered HTTP \(response.statusCode)", gateway: gateway)
        }
        let unverified = try? FormFields.decode(response.body, field: "MQ001")
        if let code = unverified?["responseCode"], code != IPayNowCodes.ResponseCode.success.rawValue {
            return (response.body, CheckoutError(.gatewayError, category: .unknownOutcome, field: "MQ001.responseCode",
                                                 message: "iPayNow could not answer the query", gateway: gateway,
                                                 gatewayCode: GatewayText.safe(code),
                                                 gatewayMessage: unverified?["responseMsg"].flatMap { GatewayText.safe($0) }))
        }
        return (response.body, nil)
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

    /// When an order that is still `A00I` counts as expired: its `mhtOrderStartTime` plus its
    /// `mhtOrderTimeOut` (3600 when absent, iPayNow's default) plus ``expiryGrace``, compared with the
    /// answer's own signed `responseTime` (so an old answer replayed later never expires an order).
    /// iPayNow documents no state for an order that timed out unpaid; Till's choice.
    func deadline(of message: IPayNowMessage) -> Date? {
        guard let started = message.values["mhtOrderStartTime"].flatMap(time) else { return nil }
        let timeout = message.values["mhtOrderTimeOut"].flatMap(Int.init) ?? 3600
        return started.addingTimeInterval(TimeInterval(timeout) + Self.expiryGrace)
    }

    /// `yyyyMMddHHmmss` at the configured UTC offset.
    func time(_ text: String) -> Date? {
        IPayNowOrder.date(fromStartTime: text, utcOffsetSeconds: settings.utcOffsetSeconds)
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
        if event == "MQ001", raw == IPayNowCodes.TradeStatus.notProcessed.rawValue, let deadline = deadline(of: message),
           let answered = message.values["responseTime"].flatMap(time), answered > deadline {
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
