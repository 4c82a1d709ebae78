import Till

/// iPayNow's cross-border codes and fixed values, each with the vendor source it comes from.
///
/// Sources (commits in `Tests/TillIPayNowTests/Fixtures/README.md`): the cross-border iOS guide
/// (`跨境支付接入指南`, appendices A–D), the cross-border PHP server SDK and its README
/// (`ipaynowORG/ipaynow_cross_border_pay_php`), and the iOS plugin's headers (`iPaynow/iPaynow-crossborder-iOS`).
public enum IPayNowCodes {
    /// The settlement currencies of the iOS guide's appendix C (`mhtCurrencyType`). The PHP SDK's README
    /// (§3.4) lists these fifteen and four more (KRW, THB, TWD, IDR); Till follows the app guide.
    /// `CNY` is never a settlement currency ("不能为 CNY", PHP README 2.1).
    public static let settlementCurrencies: [String] = [
        "GBP", "HKD", "USD", "CHF", "SGD", "SEK", "DKK", "NOK", "JPY", "CAD", "AUD", "EUR", "NZD", "RUB", "MOP",
    ]

    /// The settlement currencies Till charges in (with `mhtAmtCurrFlag=1`): appendix C without JPY. Every
    /// source gives `mhtOrderAmt` in "分" (hundredths) and none says what it means for a currency without
    /// a minor unit, so a yen amount could be read as a hundredth of what was meant. JPY stays usable as
    /// the settlement currency of CNY payments (flag `0`, the amount in RMB fen).
    public static let chargeableCurrencies: [String] = settlementCurrencies.filter { $0 != "JPY" }

    /// The four currencies only the PHP SDK's README lists (appendix 3.4), for reference.
    public static let phpReadmeOnlyCurrencies: [String] = ["KRW", "THB", "TWD", "IDR"]

    /// `mhtOrderType`: `01`, an ordinary purchase (appendix A; PHP `TradeService::trade`).
    public static let orderTypePurchase = "01"
    /// `mhtCharset`: fixed `UTF-8` (appendix A).
    public static let charset = "UTF-8"
    /// `mhtSignType` / `signType`: `MD5`, the only cross-border sign type (appendix A, PHP README).
    public static let signTypeMD5 = "MD5"

    /// `payChannelType`: which wallet the plugin opens.
    public enum Channel: String, Sendable, Hashable, CaseIterable {
        /// `90`: Alipay (appendix A; PHP README "90:支付宝").
        case alipay = "90"
        /// `80`: WeChat Pay (PHP README "80:微信"; `TradeService` passes `80` for its server-side WeChat
        /// products). The iOS plugin 1.0.1 opens Alipay only (its README "目前只支持支付宝渠道", its podspec
        /// links AlipaySDK alone), so Till sends `80` only when the merchant enables it (`wechat_pay`).
        case wechatPay = "80"

        /// The channel of a Till payment method, or `nil` when iPayNow cross-border has none.
        public init?(method: PaymentMethod) {
            switch method {
            case .alipay: self = .alipay
            case .wechatPay: self = .wechatPay
            default: return nil
            }
        }

        /// The Till payment method of the channel.
        public var method: PaymentMethod { self == .alipay ? .alipay : .wechatPay }
    }

    /// `mhtAmtCurrFlag`: which currency `mhtOrderAmt` is in (appendix A; PHP README 2.1).
    public enum AmountCurrency: String, Sendable, Hashable, CaseIterable {
        /// `0`: the amount is in RMB fen; `mhtCurrencyType` still names the settlement currency.
        case renminbi = "0"
        /// `1`: the amount is in the settlement currency (`mhtCurrencyType`), in its minor units.
        case settlement = "1"
    }

    /// `responseCode` of WP001 and MQ001 answers (PHP README 3.2 "交易响应码表", which labels them
    /// 支付成功/支付失败/未知状态). In an MQ001 answer `A001` says the query succeeded: the real 2015 answer
    /// carries `responseCode=A001` with `responseMsg=查询交易成功` ("query succeeded"); the order's own state
    /// is `tradeStatus`/`transStatus`.
    public enum ResponseCode: String, Sendable, Hashable, CaseIterable {
        /// `A001`: the request succeeded.
        case success = "A001"
        /// `A002`: the request failed.
        case failure = "A002"
        /// `A003`: unknown.
        case unknown = "A003"
    }

    /// `tradeStatus` / `transStatus` (PHP README 3.3; `A006` closed from the domestic Java SDK's `ResultScan05`).
    public enum TradeStatus: String, Sendable, Hashable, CaseIterable {
        /// `A00I`: the order has not been processed (订单未处理).
        case notProcessed = "A00I"
        /// `A001`: paid (订单支付成功).
        case paid = "A001"
        /// `A002`: payment failed (订单支付失败).
        case failed = "A002"
        /// `A003`: the result is unknown (支付结果未知).
        case unknown = "A003"
        /// `A004`: accepted (订单受理成功).
        case accepted = "A004"
        /// `A005`: acceptance failed (订单受理失败).
        case acceptanceFailed = "A005"
        /// `A006`: closed (交易关闭; domestic Java SDK only).
        case closed = "A006"

        /// The Till status of a payment in this state. Unknown codes never reach here (they map to
        /// `ipaynow_status_<raw>`, see ``paymentStatus(_:)``).
        public var paymentStatus: PaymentStatus {
            switch self {
            case .paid: .paid
            case .failed, .acceptanceFailed: .failed
            case .closed: .cancelled
            case .notProcessed, .unknown, .accepted: .pending
            }
        }
    }

    /// The Till status of a raw `tradeStatus`/`transStatus`: a known code's, or `ipaynow_status_<raw>`,
    /// which is never success and never a known status.
    public static func paymentStatus(_ raw: String) -> PaymentStatus {
        TradeStatus(rawValue: raw)?.paymentStatus ?? PaymentStatus(rawValue: "ipaynow_status_\(raw)")
    }

    /// The plugin's error codes (appendix D of the iOS guide; the strings in the plugin's binary are
    /// `CODE#message`).
    public enum PluginError: String, Sendable, Hashable, CaseIterable {
        /// `PE001`: the plugin does not support this channel (appendix D only).
        case channelNotSupported = "PE001"
        /// `PE002`: network connection error or timeout.
        case network = "PE002"
        /// `PE003`: the channel module (Alipay) failed to load.
        case channelModule = "PE003"
        /// `PE004`: order data, scheme or view controller empty, or the transaction failed.
        case transactionFailed = "PE004"
        /// `PE005`: the transaction's status is unknown.
        case statusUnknown = "PE005"

        /// Whether the customer may have paid despite the error: only `PE005` says nothing either way,
        /// and `PE002` (a connection error or timeout) may have come after the order reached iPayNow.
        public var mayHavePaid: Bool { self == .statusUnknown || self == .network }
    }

    /// `IPNCrossBorderPayResult` (`IPNCrossBorderPluginDelegate.h`): the in-process result the delegate
    /// `iPNCrossBorderPluginResult:erroCode:erroInfo:` receives. The raw values are what an app adapter
    /// reports as ``SDKResult/code``; the enum's numbers (`0`–`3`) are accepted as well.
    public enum PayResult: String, Sendable, Hashable, CaseIterable {
        /// `IPNCrossBorderPayResultFail` (0).
        case fail
        /// `IPNCrossBorderPayResultSuccess` (1).
        case success
        /// `IPNCrossBorderPayResultCancel` (2).
        case cancel
        /// `IPNCrossBorderPayResultUnknown` (3).
        case unknown

        /// The result an adapter reported: a name (any case) or the enum's number.
        public init?(code: String) {
            switch code.lowercased() {
            case "fail", "0": self = .fail
            case "success", "1": self = .success
            case "cancel", "2": self = .cancel
            case "unknown", "3": self = .unknown
            default: return nil
            }
        }
    }
}
