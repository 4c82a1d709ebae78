import Foundation

extension IPayNowEmulator {
    /// The `Content-Type` of N001 posts. *Emulator choice*: README 2.2 says only that the message is a
    /// string in the body of an HTTP POST ("报文数据以字符串流的形式放在报文体中").
    static let notificationContentType = "application/x-www-form-urlencoded;charset=UTF-8"

    /// The merchant's acknowledgement: `success=Y` (iPaynow-app-java `MchNotifyServlet`,
    /// iPaynow-wap-java `MchBackNotifyServlet`, PyPI `ipaynow-python-sdk` 1.0.0 `NotifyAck.success()`).
    static let acknowledgement = "success=Y"

    /// The N001 fields of cbphp README 2.2 for `order` (the legacy shape: `tradeStatus`, no `version`):
    /// `funcode` `N001`, the order's fields as iPayNow took them (`mhtReserved` decoded, "原样返回";
    /// `mhtOrderTimeOut` only when the merchant sent it), `cashCurrencyType` `CNY` and `cashAmont`,
    /// `deviceType` (`01` for the plugin, the WP001's otherwise), `nowPayOrderNo`, `channelOrderNo`,
    /// `tradeStatus`. Not signed yet.
    func n001Fields(_ order: Order, tradeStatus: String) -> [String: String] {
        var fields: [String: String] = [:]
        for key in ["appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt", "mhtAmtCurrFlag",
                    "mhtOrderTimeOut", "mhtOrderStartTime", "mhtCharset", "deviceType", "payChannelType", "mhtReserved"] {
            if let value = order.fields[key] { fields[key] = value }
        }
        fields["funcode"] = "N001"
        fields["appId"] = order.app.appId
        fields["cashCurrencyType"] = Self.cashCurrency
        fields["cashAmont"] = String(order.cashAmont)
        fields["nowPayOrderNo"] = order.nowPayOrderNo
        fields["channelOrderNo"] = order.channelOrderNo
        fields["tradeStatus"] = tradeStatus
        return fields
    }

    /// Signs the order's N001 (excluding `signType` and `signature`, README 2.2) and queues it to the
    /// order's `notifyUrl`. The body is `k=v&…`, keys sorted as the real 2015 N001 arrived, each value
    /// percent-encoded once.
    func queueNotification(for key: String) {
        guard let order = orders[key], let url = URL(string: order.fields["notifyUrl"] ?? "") else { return }
        let fields = signed(n001Fields(order, tradeStatus: order.tradeStatus), app: order.app)
        let notification = Notification(url: url, body: Array(IPayNowForm.encode(fields).utf8), appId: order.app.appId,
                                        mhtOrderNo: order.mhtOrderNo)
        deliverer.queue(notification)
    }

    /// Waits for the deliveries under way for order `key`.
    func waitForNotifications(of key: String) async {
        await deliverer.waitForDeliveries(of: key)
    }

    /// POSTs the last N001 of order `mhtOrderNo` again, byte for byte, once (a replay, for tests of
    /// idempotent receivers). `nil` when no N001 was ever made for it.
    @discardableResult
    public func redeliver(appId: String? = nil, mhtOrderNo: String) async -> NotificationAttempt? {
        guard let key = orderKey(appId: appId, mhtOrderNo: mhtOrderNo) else { return nil }
        return await deliverer.redeliver(key: key)
    }

    /// Sends an N001 built as `crafted` says, once, and returns the try. Moves no money and changes no
    /// order. `nil` when there is no such order, or no URL to send to.
    @discardableResult
    public func sendCrafted(_ crafted: CraftedNotification) async -> NotificationAttempt? {
        guard let key = orderKey(appId: crafted.appId, mhtOrderNo: crafted.mhtOrderNo), let order = orders[key],
              let url = URL(string: crafted.url ?? order.fields["notifyUrl"] ?? "") else { return nil }
        var fields = n001Fields(order, tradeStatus: crafted.tradeStatus ?? order.tradeStatus)
        for (name, value) in crafted.set ?? [:] { fields[name] = value }
        let omitted = Set(crafted.omit ?? [])
        for name in omitted { fields[name] = nil }
        fields["signType"] = "MD5"
        fields["signature"] = crafted.signature
            ?? Signature.sign(fields, appKey: crafted.appKey ?? order.app.appKey, excluding: Signature.responseExcluded)
        for (name, value) in crafted.tamper ?? [:] { fields[name] = value }
        for name in omitted where name == "signType" || name == "signature" { fields[name] = nil }
        let notification = Notification(url: url, body: Array(IPayNowForm.encode(fields).utf8), appId: order.app.appId,
                                        mhtOrderNo: order.mhtOrderNo)
        return await deliverer.send(notification, kind: .crafted)
    }
}
