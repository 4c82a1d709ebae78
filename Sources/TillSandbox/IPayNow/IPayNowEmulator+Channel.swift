import Foundation
import Till

extension IPayNowEmulator {
    /// The channel page a WP001 order's `tn` points at (`GET {base}/sandbox-only/channel/{id}`): the
    /// order, and three buttons that post `outcome=pay|cancel|fail` to the same URL. It stands for the
    /// Alipay or WeChat Pay page or QR code the real `tn` leads to. *Emulator choice* (not an iPayNow
    /// page).
    func channelPage(id: String) -> PageAnswer {
        guard let key = keysByPage[id], let order = orders[key] else {
            return .page(status: 404, html: Self.html(title: "Unknown order", body: "<p>No order has this page.</p>"))
        }
        let channel = order.fields["payChannelType"] == "80" ? "WeChat Pay" : "Alipay"
        var body = """
            <p>Pay with <b id="channel">\(Self.escapeHTML(channel))</b></p>
            <dl>
              <dt>Order</dt><dd id="mhtOrderNo">\(Self.escapeHTML(order.mhtOrderNo))</dd>
              <dt>Amount</dt><dd id="amount">\(order.amount) (\(Self.escapeHTML(order.fields["mhtCurrencyType"] ?? "")), flag \(Self.escapeHTML(order.fields["mhtAmtCurrFlag"] ?? "")))</dd>
              <dt>The customer pays</dt><dd id="cash">\(order.cashAmont) CNY fen</dd>
              <dt>Status</dt><dd id="tradeStatus">\(Self.escapeHTML(order.tradeStatus))</dd>
            </dl>
            """
        if order.tradeStatus == "A00I" {
            for (outcome, label) in [("pay", "Pay"), ("cancel", "Cancel"), ("fail", "Fail")] {
                body += """

                    <form method="post">
                      <input type="hidden" name="outcome" value="\(outcome)">
                      <button type="submit" id="\(outcome)">\(label)</button>
                    </form>
                    """
            }
        }
        return .page(status: 200, html: Self.html(title: "iPayNow \(channel)", body: body))
    }

    /// Acts on the channel page: `pay` pays the order (`A001`, charged, N001 sent), `fail` fails it
    /// (`A002`), `cancel` leaves it `A00I`. An order past its `mhtOrderTimeOut` or already settled is
    /// not changed. Then, when the order has a `frontNotifyUrl`, the answer is a page that posts the
    /// N002 front notification there (cbphp README 2.3: `funcode` `N002`, `appId`, `mhtOrderNo`,
    /// `nowPayOrderNo`, `mhtCharset`, `tradeStatus`, `mhtReserved` URL-encoded ("UrlEncode 后的值返回"),
    /// `signType`, `signature` over the decoded values excluding `signType` and `signature`); else a
    /// page with the result.
    func completeChannelPage(id: String, form: [UInt8]) -> PageAnswer {
        guard let key = keysByPage[id], let order = orders[key] else {
            return .page(status: 404, html: Self.html(title: "Unknown order", body: "<p>No order has this page.</p>"))
        }
        let outcome = (FormEncoding.decode(String(decoding: form, as: UTF8.self)) ?? [:])["outcome"] ?? ""
        guard ["pay", "cancel", "fail"].contains(outcome) else {
            return .page(status: 400, html: Self.html(title: "Bad request", body: "<p>outcome must be pay, cancel or fail.</p>"))
        }
        if order.tradeStatus == "A00I", !isExpired(order) {
            switch outcome {
            case "pay": pay(key)
            case "fail": orders[key]?.tradeStatus = "A002"
            default: break
            }
        }
        guard let settled = orders[key] else { return .page(status: 404, html: Self.html(title: "Unknown order", body: "")) }
        if let front = settled.fields["frontNotifyUrl"], let url = URL(string: front), !front.isEmpty {
            var fields: [String: String] = [
                "funcode": "N002", "appId": settled.app.appId, "mhtOrderNo": settled.mhtOrderNo,
                "nowPayOrderNo": settled.nowPayOrderNo, "mhtCharset": settled.fields["mhtCharset"] ?? "UTF-8",
                "tradeStatus": settled.tradeStatus,
            ]
            if let reserved = settled.fields["mhtReserved"] { fields["mhtReserved"] = reserved }
            fields = signed(fields, app: settled.app)
            if let reserved = fields["mhtReserved"] { fields["mhtReserved"] = FormEncoding.escape(reserved) }
            let names = ["funcode", "appId", "mhtOrderNo", "nowPayOrderNo", "mhtCharset", "tradeStatus", "mhtReserved", "signType", "signature"]
            let post = FormPost(url: url, fields: names.compactMap { name in fields[name].map { FormPost.Field(name, $0) } })
            return .page(status: 200, html: post.autoSubmittingHTML())
        }
        return .page(status: 200, html: Self.html(title: "Order \(settled.tradeStatus)",
                                                  body: "<p id=\"tradeStatus\">\(Self.escapeHTML(settled.tradeStatus))</p>"))
    }

    static func html(title: String, body: String) -> String { SandboxHTML.page(title: title, body: body, emulator: "iPayNow") }

    static func escapeHTML(_ text: String) -> String { SandboxHTML.escape(text) }
}
