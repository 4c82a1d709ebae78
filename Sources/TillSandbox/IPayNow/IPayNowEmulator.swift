import Foundation
import Logging

/// A local stand-in for iPayNow's (现在支付) cross-border gateway: the other party of Till's `ipaynow`
/// module.
///
/// It is written from vendor material only, never from Till's own notes: the cross-border server SDK
/// and its README (ipaynowORG/ipaynow_cross_border_pay_php@279d28fbe7f5387f906c2923f246fa940889e356),
/// the iOS cross-border plugin, its headers, demo and guide
/// (iPaynow/iPaynow-crossborder-iOS@74447529d92ead890a1128433a767bcf7d64fd62, and the guide's text
/// `ipaynow-crossborder-ios-sdk.txt`, "the seed"), the official merchant demos that answer
/// notifications (iPaynow/iPaynow-app-java, iPaynow/iPaynow-wap-java) and the real server-signed
/// messages kept in `Tests/TillSandboxTests/Fixtures/ipaynow`.
///
/// It answers `POST {base}/global` (`WP001` orders and `MQ001` queries, dispatched by `funcode`), plays
/// the iOS plugin and the wallet behind it through a clearly named stand-in
/// (`POST {base}/sandbox-only/plugin/pay`, not an iPayNow API: the real plugin talks to iPayNow over an
/// undocumented 3DES-encrypted channel), serves a sandbox page for a WP001 order's `tn`, sends signed
/// `N001` notifications with retries until the merchant answers `success=Y`, and keeps a ``ledger`` of
/// what was charged. Host it with ``Sandbox/start(emulators:host:port:logger:)``; the module's
/// `base_url` is `{sandbox}/ipaynow`.
///
/// ```swift
/// let ipaynow = IPayNowEmulator(apps: [.init(appId: "1480000000000001", appKey: "sandbox-md5-key")])
/// let sandbox = try await Sandbox.start(emulators: [payFort, ipaynow])
/// let base = sandbox.baseURL(of: ipaynow)   // …/ipaynow; the module posts to {base}/global
/// ```
///
/// Where the sources are silent the choices are listed in `docs/sandbox.md` (iPayNow).
public actor IPayNowEmulator {
    /// One merchant app: its id and its MD5 key (`appKey`, one per app — seed 附录B PS).
    ///
    /// ``description`` leaves the key out, so a failing test can print it.
    public struct App: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// `appId`, issued by iPayNow (`String(1,40)`).
        public var appId: String
        /// The app's MD5 key.
        public var appKey: String

        /// Creates an app account.
        public init(appId: String, appKey: String) {
            self.appId = appId
            self.appKey = appKey
        }

        /// The app id only.
        public var description: String { "IPayNowEmulator.App(\(appId))" }
        /// Same as ``description``: the key is never printed.
        public var debugDescription: String { description }
    }

    /// Which MQ001 request signatures are taken (disagreements: cbphp's code and its README differ).
    public enum QuerySignatureRule: String, Sendable, Hashable, CaseIterable {
        /// Only cbphp's `OrderQueryService::orederQuery` reading: `funcode`, `mhtSignType` and
        /// `mhtSignature` are not signed (so `appId`, `mhtOrderNo`, `mhtCharset` are). The default.
        case code
        /// Also README 2.4's reading ("其它字段都参与 MD5 签"): everything but `mhtSignature` signed.
        case codeOrReadme = "code_or_readme"
    }

    /// A failure to inject into the next matching `POST {base}/global` request.
    public enum Fault: String, Sendable, Hashable, CaseIterable, Codable {
        /// HTTP 500 at once; the request is not processed.
        case serverError = "server_error"
        /// The request is processed (an order is recorded), but no answer comes for `timeoutHold`; then HTTP 504.
        case timeout
        /// The request is processed, then the connection is closed without an answer.
        case dropConnection = "drop"
        /// The request is processed, and the answer is HTTP 200 with a body that is no form message.
        case garbage
        /// The request is processed, and the answer's `signature` is wrong (one hex digit changed).
        case badSignature = "bad_signature"
    }

    /// Something that really moved money: an order the customer paid.
    public struct LedgerEntry: Sendable, Hashable, Codable {
        /// The app the order belongs to.
        public var appId: String
        /// The merchant's order number.
        public var mhtOrderNo: String
        /// iPayNow's order number.
        public var nowPayOrderNo: String
        /// The channel's (Alipay's or WeChat Pay's) transaction number.
        public var channelOrderNo: String
        /// `90` Alipay, `80` WeChat.
        public var payChannelType: String
        /// The order's currency, as sent.
        public var mhtCurrencyType: String
        /// The order's amount as sent: minor units of `mhtCurrencyType` (flag `1`) or CNY fen (flag `0`).
        public var mhtOrderAmt: Int64
        /// `0` or `1`, as sent.
        public var mhtAmtCurrFlag: String
        /// What the customer paid in: `CNY`.
        public var cashCurrencyType: String
        /// What the customer paid, in fen.
        public var cashAmont: Int64
        /// When, `yyyyMMddHHmmss` China time.
        public var time: String
    }

    /// One order as the admin route lists it.
    public struct OrderSummary: Sendable, Hashable, Codable {
        /// The app the order belongs to.
        public var appId: String
        /// The merchant's order number.
        public var mhtOrderNo: String
        /// iPayNow's order number.
        public var nowPayOrderNo: String
        /// `A00I` not processed, `A001` paid, `A002` failed, or what an admin set (`A003`…`A005`).
        public var tradeStatus: String
        /// `plugin` (the iOS plugin stand-in, `deviceType` `01`) or `WP001` (the server order).
        public var via: String
        /// `90` Alipay, `80` WeChat.
        public var payChannelType: String
        /// The order's currency, as sent.
        public var mhtCurrencyType: String
        /// The order's amount as sent.
        public var mhtOrderAmt: Int64
        /// `0` (the amount is CNY fen) or `1` (minor units of `mhtCurrencyType`).
        public var mhtAmtCurrFlag: String
        /// What the customer pays, in CNY fen.
        public var cashAmont: Int64
        /// Where the order's N001 goes.
        public var notifyUrl: String
    }

    /// One try at delivering an N001 notification.
    public struct NotificationAttempt: Sendable, Hashable, Codable {
        /// Where it was POSTed.
        public var url: String
        /// The body exactly as sent.
        public var body: String
        /// The HTTP status the merchant answered, or `nil` (no answer, or dropped).
        public var status: Int?
        /// The merchant's answer body (at most 200 characters), or `nil`.
        public var answer: String?
        /// 1 for the first try of a delivery (and for a replay or a crafted one); 0 when dropped.
        public var attempt: Int
        /// The app of the order it is about.
        public var appId: String
        /// The order it is about.
        public var mhtOrderNo: String
        /// A replay made with ``IPayNowEmulator/redeliver(appId:mhtOrderNo:)``.
        public var replay: Bool
        /// A crafted one made with ``IPayNowEmulator/sendCrafted(_:)``.
        public var crafted: Bool
        /// Dropped by ``IPayNowEmulator/dropNotifications(_:)``: never sent.
        public var dropped: Bool
        /// Whether the merchant acknowledged it: a 2xx whose body, trimmed, is `success=Y`.
        public var acknowledged: Bool
    }

    /// An N001 built by hand, for receivers' tests: from an order's current state, changed as asked.
    /// Sent once, without retries; moves no money.
    public struct CraftedNotification: Sendable, Hashable, Codable {
        /// The order's app; may be left out when only one app has an order `mhtOrderNo`.
        public var appId: String?
        /// The order the notification is about.
        public var mhtOrderNo: String
        /// The `tradeStatus` to announce (the order's own by default).
        public var tradeStatus: String?
        /// Fields set (or added) before signing.
        public var set: [String: String]?
        /// Fields left out before signing.
        public var omit: [String]?
        /// Fields changed after signing (a tampered message).
        public var tamper: [String: String]?
        /// Sign with this key instead of the app's (a forgery).
        public var appKey: String?
        /// Send this `signature` as it is.
        public var signature: String?
        /// Send it here instead of the order's `notifyUrl`.
        public var url: String?

        /// A crafted N001 about order `mhtOrderNo`; everything else is optional.
        public init(appId: String? = nil, mhtOrderNo: String, tradeStatus: String? = nil, set: [String: String]? = nil,
                    omit: [String]? = nil, tamper: [String: String]? = nil, appKey: String? = nil, signature: String? = nil,
                    url: String? = nil) {
            self.appId = appId
            self.mhtOrderNo = mhtOrderNo
            self.tradeStatus = tradeStatus
            self.set = set
            self.omit = omit
            self.tamper = tamper
            self.appKey = appKey
            self.signature = signature
            self.url = url
        }
    }

    /// The sandbox's exchange rates, CNY per one unit of each 附录C / README 3.4 currency. *Emulator
    /// choice*: round, fixed, clearly not market rates; iPayNow's rates are not published.
    public static let sandboxExchangeRates: [String: Decimal] = [
        "USD": rate(7), "EUR": rate(8), "GBP": rate(9), "CHF": rate(8), "HKD": rate(9, -1), "SGD": rate(5), "SEK": rate(7, -1),
        "DKK": rate(1), "NOK": rate(7, -1), "JPY": rate(5, -2), "CAD": rate(5), "AUD": rate(5), "NZD": rate(4),
        "RUB": rate(8, -2), "MOP": rate(9, -1), "KRW": rate(5, -3), "THB": rate(2, -1), "TWD": rate(2, -1), "IDR": rate(5, -4),
    ]

    /// `significand` × 10^`exponent` CNY.
    private static func rate(_ significand: UInt64, _ exponent: Int = 0) -> Decimal {
        Decimal(sign: .plus, exponent: exponent, significand: Decimal(significand))
    }

    // MARK: Configuration

    let apps: [App]
    let timeoutHold: Duration
    let queryRule: QuerySignatureRule
    let exchangeRates: [String: Decimal]
    let now: @Sendable () -> Date
    let logger: Logger
    /// Sends the N001s, retried every `notifyRetryInterval` up to `notifyMaxAttempts` times (*emulator
    /// choice*: no source gives iPayNow's schedule), and records the tries.
    let deliverer: NotificationDeliverer<Notification>

    // MARK: State

    /// Where an order came from.
    enum Via: String {
        case plugin, wp001 = "WP001"
    }

    struct Order {
        var app: App
        /// The fields as iPayNow took them (decoded; `mhtReserved` decoded once more for the plugin).
        var fields: [String: String]
        var via: Via
        var nowPayOrderNo: String
        /// cbphp README 3.3: `A00I` not processed, `A001` paid, `A002` failed, `A003` unknown,
        /// `A004` accepted, `A005` acceptance failed.
        var tradeStatus = "A00I"
        var channelOrderNo = ""
        var cashAmont: Int64
        var created: Date
        /// The `tn` page id (WP001 orders).
        var pageID: String?

        var mhtOrderNo: String { fields["mhtOrderNo"] ?? "" }
        var amount: Int64 { Int64(fields["mhtOrderAmt"] ?? "") ?? 0 }
        var timeout: TimeInterval { TimeInterval(Int(fields["mhtOrderTimeOut"] ?? "") ?? 3600) }
    }

    /// An N001 ready to send, kept for replays.
    struct Notification: MerchantNotification {
        var url: URL
        var body: [UInt8]
        var appId: String
        var mhtOrderNo: String

        var key: String { IPayNowEmulator.key(appId, mhtOrderNo) }
        var headers: [(name: String, value: String)] { [("Content-Type", IPayNowEmulator.notificationContentType)] }
        var logMetadata: Logger.Metadata { ["mhtOrderNo": .string(mhtOrderNo)] }

        /// A 2xx whose body, trimmed, is `success=Y` (*emulator choice* for the status; `success=N` or
        /// anything else is a failure).
        func isAcknowledged(by response: DeliveryResponse) -> Bool {
            response.isSuccess
                && response.answerPrefix?.trimmingCharacters(in: .whitespacesAndNewlines) == IPayNowEmulator.acknowledgement
        }

        func record(_ delivery: DeliveryTry) -> NotificationAttempt {
            NotificationAttempt(url: url.absoluteString, body: String(decoding: body, as: UTF8.self), status: delivery.status,
                                answer: delivery.response?.answerPrefix, attempt: delivery.attempt, appId: appId,
                                mhtOrderNo: mhtOrderNo, replay: delivery.kind == .replay, crafted: delivery.kind == .crafted,
                                dropped: delivery.kind == .dropped, acknowledged: delivery.acknowledged)
        }
    }

    /// `appId \0 mhtOrderNo` → order.
    var orders: [String: Order] = [:]
    /// Order keys in creation order.
    var orderKeys: [String] = []
    var keysByNowPayOrderNo: [String: String] = [:]
    var keysByPage: [String: String] = [:]
    /// Faults by funcode.
    var faults = FaultQueue<Fault>()

    /// What really moved money, oldest first: orders the customer paid (never twice for one order).
    public internal(set) var ledger: [LedgerEntry] = []

    /// Every N001 delivery try so far (replays, crafted and dropped ones included), oldest first.
    public var notifications: [NotificationAttempt] { deliverer.attempts }

    /// Creates an emulator for some merchant apps.
    /// - Parameters:
    ///   - apps: the apps requests may come from (the first wins when two share an `appId`).
    ///   - notifyRetryInterval: the wait between N001 tries (*emulator choice*: no source gives
    ///     iPayNow's schedule); tests compress it to milliseconds.
    ///   - notifyMaxAttempts: how many times an N001 is tried before giving up (at least 1).
    ///   - notifyTimeout: how long one N001 POST may take before it counts as unanswered.
    ///   - timeoutHold: how long a request hit by ``Fault/timeout`` is held before HTTP 504.
    ///   - queryRule: which MQ001 signatures are taken (cbphp's code only, by default).
    ///   - exchangeRates: CNY per unit of each currency, for `cashAmont` when `mhtAmtCurrFlag` is `1`.
    ///   - now: the wall clock (`responseTime`, order timeouts).
    ///   - logger: where the emulator logs (never keys).
    public init(apps: [App],
                notifyRetryInterval: Duration = .seconds(10),
                notifyMaxAttempts: Int = 10,
                notifyTimeout: Duration = .seconds(10),
                timeoutHold: Duration = .seconds(30),
                queryRule: QuerySignatureRule = .code,
                exchangeRates: [String: Decimal] = IPayNowEmulator.sandboxExchangeRates,
                now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "till.sandbox.ipaynow")) {
        self.apps = apps
        self.timeoutHold = timeoutHold
        self.queryRule = queryRule
        self.exchangeRates = exchangeRates
        self.now = now
        self.logger = logger
        self.deliverer = NotificationDeliverer(schedule: RetrySchedule(attempts: notifyMaxAttempts, interval: notifyRetryInterval),
                                               timeout: notifyTimeout, noun: "N001", logger: logger)
    }

    // MARK: Test controls

    /// Makes the next `POST {base}/global` request whose `funcode` is `funcode` (any, when `nil`) fail
    /// as `fault`. Faults queue up and are used in order.
    public func inject(_ fault: Fault, funcode: String? = nil) {
        faults.append(fault, key: funcode)
    }

    /// Delays the first try of every N001 queued from now on (zero by default).
    public func setNotificationDelay(_ delay: Duration) {
        deliverer.setDelay(delay)
    }

    /// Keeps N001s queued instead of sending them, until ``releaseNotifications()``.
    public func holdNotifications() {
        deliverer.hold()
    }

    /// Sends the N001s queued since ``holdNotifications()``, and the next ones at once again.
    public func releaseNotifications() {
        deliverer.release()
    }

    /// Drops the next `count` N001s: they are recorded (``NotificationAttempt/dropped``) but never
    /// sent, so only a query can tell the merchant.
    public func dropNotifications(_ count: Int = 1) {
        deliverer.drop(count)
    }

    /// Waits until every N001 under way has been acknowledged or has run out of tries (held ones are
    /// not waited for).
    public func waitForNotifications() async {
        await deliverer.waitForAll()
    }

    /// Every order, oldest first.
    public func orderSummaries() -> [OrderSummary] {
        orderKeys.compactMap { orders[$0] }.map(summary)
    }

    /// Sets an order's `tradeStatus` as an admin would, e.g. to pay a WP001 order without its page, or
    /// to make a query answer `A003` (unknown). Setting `A001` charges it (once) and, with `notify`,
    /// sends the N001; other statuses move no money and send nothing.
    /// - Returns: the order, or `nil` when there is no such order (or `appId` is needed to tell two apart).
    @discardableResult
    public func setTradeStatus(_ status: String, appId: String? = nil, mhtOrderNo: String, notify: Bool = true) -> OrderSummary? {
        guard let key = orderKey(appId: appId, mhtOrderNo: mhtOrderNo), let order = orders[key] else { return nil }
        if status == "A001" {
            pay(key, notify: notify)
        } else {
            orders[key]?.tradeStatus = status
        }
        return orders[key].map(summary) ?? summary(order)
    }

    // MARK: Helpers

    func app(_ appId: String?) -> App? {
        guard let appId else { return nil }
        return apps.first { $0.appId == appId }
    }

    static func key(_ appId: String, _ mhtOrderNo: String) -> String { appId + "\u{0}" + mhtOrderNo }

    /// The key of order `mhtOrderNo` of `appId`, or of the only app that has one when `appId` is `nil`.
    func orderKey(appId: String?, mhtOrderNo: String) -> String? {
        if let appId { return orders[Self.key(appId, mhtOrderNo)] == nil ? nil : Self.key(appId, mhtOrderNo) }
        let matches = orderKeys.filter { orders[$0]?.mhtOrderNo == mhtOrderNo }
        return matches.count == 1 ? matches[0] : nil
    }

    func summary(_ order: Order) -> OrderSummary {
        OrderSummary(appId: order.app.appId, mhtOrderNo: order.mhtOrderNo, nowPayOrderNo: order.nowPayOrderNo,
                     tradeStatus: order.tradeStatus, via: order.via.rawValue, payChannelType: order.fields["payChannelType"] ?? "",
                     mhtCurrencyType: order.fields["mhtCurrencyType"] ?? "", mhtOrderAmt: order.amount,
                     mhtAmtCurrFlag: order.fields["mhtAmtCurrFlag"] ?? "", cashAmont: order.cashAmont,
                     notifyUrl: order.fields["notifyUrl"] ?? "")
    }

    /// Records a new order (state `A00I`). The caller has checked that the number is new.
    func record(_ fields: [String: String], app: App, via: Via) -> Order {
        var nowPayOrderNo = Self.newNowPayOrderNo(now())
        while keysByNowPayOrderNo[nowPayOrderNo] != nil { nowPayOrderNo = Self.newNowPayOrderNo(now()) }
        let cash = IPayNowExchange.cashAmount(Int64(fields["mhtOrderAmt"] ?? "") ?? 0, currency: fields["mhtCurrencyType"] ?? "",
                                              flag: fields["mhtAmtCurrFlag"] ?? "", rates: exchangeRates)
        var order = Order(app: app, fields: fields, via: via, nowPayOrderNo: nowPayOrderNo, cashAmont: cash, created: now())
        if via == .wp001 { order.pageID = Self.randomHex(count: 32) }
        let key = Self.key(app.appId, order.mhtOrderNo)
        orders[key] = order
        orderKeys.append(key)
        keysByNowPayOrderNo[nowPayOrderNo] = key
        if let page = order.pageID { keysByPage[page] = key }
        logger.debug("order recorded", metadata: ["mhtOrderNo": .string(order.mhtOrderNo), "via": .string(via.rawValue)])
        return order
    }

    /// Pays order `key` (`A001`), once: the ledger gets it and, with `notify`, the N001 is queued. An
    /// order already paid is left as it is (no double charge).
    func pay(_ key: String, notify: Bool = true) {
        guard var order = orders[key], order.tradeStatus != "A001" else { return }
        order.tradeStatus = "A001"
        order.channelOrderNo = Self.randomDigits(count: 18)
        orders[key] = order
        ledger.append(LedgerEntry(appId: order.app.appId, mhtOrderNo: order.mhtOrderNo, nowPayOrderNo: order.nowPayOrderNo,
                                  channelOrderNo: order.channelOrderNo, payChannelType: order.fields["payChannelType"] ?? "",
                                  mhtCurrencyType: order.fields["mhtCurrencyType"] ?? "", mhtOrderAmt: order.amount,
                                  mhtAmtCurrFlag: order.fields["mhtAmtCurrFlag"] ?? "", cashCurrencyType: Self.cashCurrency,
                                  cashAmont: order.cashAmont, time: IPayNowTime.stamp(now())))
        logger.debug("order paid", metadata: ["mhtOrderNo": .string(order.mhtOrderNo)])
        if notify { queueNotification(for: key) }
    }

    /// Whether an unpaid order is past its `mhtOrderTimeOut` (counted from when the emulator got it).
    func isExpired(_ order: Order) -> Bool {
        now().timeIntervalSince(order.created) > order.timeout
    }

    /// `cashCurrencyType`: the customer pays in CNY (*emulator choice* of the code: `CNY`, not `156`).
    static let cashCurrency = "CNY"

    /// iPayNow order numbers: 27 digits like the real ones (`200301201710171055080804734`): `3001`,
    /// the time, then 9 random digits. *Emulator choice* of the pattern.
    static func newNowPayOrderNo(_ date: Date) -> String {
        "3001" + IPayNowTime.stamp(date) + randomDigits(count: 9)
    }

    /// Takes the first queued fault for `funcode`.
    func takeFault(for funcode: String?) -> Fault? {
        faults.take(for: funcode)
    }

    /// How long held requests wait.
    nonisolated var holdDuration: Duration { timeoutHold }
}
