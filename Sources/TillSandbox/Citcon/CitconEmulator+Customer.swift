import Crypto
import Foundation
import Till

/// What the customer-facing routes (landing and QR pages, wallet simulator) answer.
enum CitconCustomerAnswer: Sendable, Equatable {
    /// An HTML page.
    case page(status: Int, html: String)
    /// HTTP 303 to `location`.
    case redirect(location: String)
    /// A JSON object (the wallet simulator's answer when it has no URL to return to).
    case json(status: Int, body: JSONValue)
    /// A JSON error (the wallet simulator's refusals).
    case error(status: Int, message: String)
}

extension CitconEmulator {
    /// What the customer did on the landing page or in the wallet app.
    enum CustomerOutcome: String, Sendable, CaseIterable {
        case complete, fail, cancel
    }

    /// Where a settled charge sends the customer back.
    enum ReturnKind: Sendable {
        case success, fail, cancel
    }

    /// The wallets whose SDKs take a `mobile_native` entry's content, with the keys the Android SDK
    /// reads (APIManager.requestOrder): WeChat Pay, Alipay and UnionPay (`upop`).
    static let nativeWallets: Set<String> = ["wechatpay", "alipay", "upop"]

    /// The wallet simulator's name for a route segment: the Citcon method (`wechatpay`, `alipay`,
    /// `upop`) or the wallet SDK's name (`wechat`, `unionpay`).
    static func walletMethod(_ name: String) -> String? {
        switch name.lowercased() {
        case "wechatpay", "wechat", "weixin": "wechatpay"
        case "alipay": "alipay"
        case "upop", "unionpay", "uppay": "upop"
        default: nil
        }
    }

    // MARK: Native launch content

    /// The wallet SDK parameters of a `mobile_native` entry for the charge's method, registered so the
    /// wallet simulator can find the charge again; `nil` for methods without a native wallet.
    ///
    /// Keys as the Android SDK reads them: WeChat Pay `appid`, `partnerid`, `package`, `noncestr`,
    /// `timestamp`, `prepayid`, `sign`; Alipay `orderSpec`, `signedString`; UnionPay `tn` (the SDK
    /// picks the UnionPay mode itself). The values are this emulator's own.
    func nativeContent(for charge: Charge, currency: Currency) -> [String: String]? {
        switch charge.method {
        case "wechatpay":
            var prepayID = "wx" + Self.randomHex(count: 34)
            while chargeIDsByPrepayID[prepayID] != nil { prepayID = "wx" + Self.randomHex(count: 34) }
            var content = [
                "appid": charge.merchant.wechatAppID, "partnerid": charge.merchant.wechatPartnerID,
                "package": "Sign=WXPay", "noncestr": Self.randomAlphanumeric(count: 32),
                "timestamp": String(charge.created / 1000), "prepayid": prepayID,
            ]
            content["sign"] = wechatSign(content)
            chargeIDsByPrepayID[prepayID] = charge.id
            return content
        case "alipay":
            let total = Self.majorUnits(charge.amount, currency: currency)
            let orderSpec = [
                ("partner", Self.alipayPartner), ("seller_id", Self.alipayPartner), ("out_trade_no", charge.id),
                ("subject", "Till sandbox payment"), ("total_fee", total), ("currency", charge.currency),
                ("product_code", "NEW_WAP_OVERSEAS_SELLER"), ("service", "mobile.securitypay.pay"),
                ("payment_type", "1"), ("_input_charset", "utf-8"),
            ].map { "\($0.0)=\"\($0.1)\"" }.joined(separator: "&")
            return ["orderSpec": orderSpec, "signedString": alipaySign(orderSpec)]
        case "upop":
            var tn = Self.randomDigits(count: 21)
            while chargeIDsByTN[tn] != nil { tn = Self.randomDigits(count: 21) }
            chargeIDsByTN[tn] = charge.id
            return ["tn": tn]
        default:
            return nil
        }
    }

    /// The order of a native content's members.
    static func nativeKeyOrder(_ method: String) -> [String] {
        switch method {
        case "wechatpay": ["appid", "partnerid", "package", "noncestr", "timestamp", "prepayid", "sign"]
        case "alipay": ["orderSpec", "signedString"]
        case "upop": ["tn"]
        default: []
        }
    }

    static let alipayPartner = "2088000000000001"

    /// The emulator's WeChat `sign`: upper-case hex HMAC-SHA256 of the sorted `k=v&…` (without
    /// `sign`), keyed with this instance's key, so nobody else can make launch content.
    func wechatSign(_ content: [String: String]) -> String {
        let text = content.filter { $0.key != "sign" }
            .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        return HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: instanceKey)
            .map { String(format: "%02X", $0) }.joined()
    }

    /// The emulator's Alipay `signedString` of an `orderSpec`: base64 HMAC-SHA256 keyed with this
    /// instance's key.
    func alipaySign(_ orderSpec: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data(orderSpec.utf8), using: instanceKey)).base64EncodedString()
    }

    /// `1999` USD → `"19.99"`.
    static func majorUnits(_ minor: Int64, currency: Currency) -> String {
        guard currency.minorUnits > 0 else { return String(minor) }
        let scale = currency.minorUnitScale
        let fraction = String(minor % scale)
        return String(minor / scale) + "." + String(repeating: "0", count: currency.minorUnits - fraction.count) + fraction
    }

    // MARK: Settling

    /// Settles an `initiated` charge as the customer chose: `complete` pays it (`succeeded`), or
    /// authorizes it (`authorized`) for PayPal, Venmo and card without `auto_capture`; `fail` fails it;
    /// `cancel` cancels it. A charge that is no longer `initiated` (settled, cancelled through the
    /// API, or expired) is left as it is. Sends the charge IPN.
    func settle(_ id: String, outcome: CustomerOutcome) -> Charge? {
        guard var charge = charges[id], let method = charge.method else { return nil }
        guard status(of: charge) == State.initiated.rawValue else { return charge }
        let time = Self.unixMillis(now())
        charge.completed = time
        let ipnStatus: String
        switch outcome {
        case .complete:
            if Self.authorizingMethods.contains(method) && !charge.autoCapture {
                charge.state = .authorized
                ipnStatus = "authorized"
            } else {
                charge.state = .succeeded
                if Self.authorizingMethods.contains(method) {
                    charge.amountCaptured = charge.amount
                    charge.timeCaptured = time
                }
                ipnStatus = "success"
            }
            record(.charge, charge: charge, id: charge.id, amount: charge.amount, status: charge.state.rawValue)
        case .fail:
            charge.state = .failed
            ipnStatus = "fail"
        case .cancel:
            charge.state = .canceled
            charge.timeCanceled = time
            ipnStatus = "cancelled"
        }
        charges[id] = charge
        logger.debug("charge settled by the customer", metadata: ["id": .string(id), "status": .string(charge.state.rawValue)])
        notify(charge, status: ipnStatus, time: time)
        return charge
    }

    /// Where the charge's current state sends the customer.
    func returnKind(of charge: Charge) -> ReturnKind {
        switch status(of: charge) {
        case State.succeeded.rawValue, State.authorized.rawValue: .success
        case State.canceled.rawValue: .cancel
        default: .fail
        }
    }

    /// The charge's URL for `kind`, verbatim; a cancel goes to `urls.fail` when the charge has no
    /// `urls.cancel` (the recorded charges often have none). `nil` when the charge gave no such URL.
    func returnURL(_ kind: ReturnKind, of charge: Charge) -> String? {
        switch kind {
        case .success: charge.urls.success
        case .fail: charge.urls.fail
        case .cancel: charge.urls.cancel ?? charge.urls.fail
        }
    }

    // MARK: Landing and QR pages

    /// The landing page (`kind` `landing`) or QR page (`qr`) of a `payment.client[]` entry: the
    /// charge's method and amount, and three buttons that post `outcome=complete|fail|cancel` to
    /// `…/{id}/complete`. The QR page stands for the code a desktop customer scans with the wallet.
    func landingPage(kind: String, id: String, citconBaseURL: URL) -> CitconCustomerAnswer {
        guard let chargeID = landings[id], let charge = charges[chargeID] else {
            return .page(status: 404, html: Self.html(title: "Unknown payment", body: "<p>No charge has this page.</p>"))
        }
        let action = citconBaseURL.appendingPathComponent("landing").appendingPathComponent("v1").appendingPathComponent(kind)
            .appendingPathComponent(id).appendingPathComponent("complete").absoluteString
        let amount = Currency.lookup(charge.currency).map { Self.majorUnits(charge.amount, currency: $0) } ?? String(charge.amount)
        let status = status(of: charge)
        var body = kind == "qr" ? "<p id=\"qr\">Scan this code with the wallet app to pay.</p>\n" : ""
        body += """
            <p>Pay with <b id="method">\(Self.escapeHTML(Self.displayName(charge.method ?? "")))</b></p>
            <dl>
              <dt>Amount</dt><dd id="amount">\(Self.escapeHTML(amount)) \(Self.escapeHTML(charge.currency)) (\(charge.amount) minor units)</dd>
              <dt>Reference</dt><dd id="reference">\(Self.escapeHTML(charge.reference))</dd>
              <dt>Status</dt><dd id="status">\(Self.escapeHTML(status))</dd>
            </dl>
            """
        let outcomes: [(CustomerOutcome, String)] = status == State.initiated.rawValue
            ? [(.complete, "Pay"), (.fail, "Fail"), (.cancel, "Cancel")]
            : [(.complete, "Return to the merchant")]
        for (outcome, label) in outcomes {
            body += """

                <form method="post" action="\(Self.escapeHTML(action))">
                  <input type="hidden" name="outcome" value="\(outcome.rawValue)">
                  <button type="submit" id="\(outcome.rawValue)">\(label)</button>
                </form>
                """
        }
        return .page(status: 200, html: Self.html(title: "Citcon checkout", body: body))
    }

    /// Settles the charge of a landing or QR page as its form says and redirects (303) to the charge's
    /// success, fail or cancel URL, verbatim. A settled charge is not changed; the redirect goes to the
    /// URL of its actual state. Without such a URL the page shows the result instead.
    func completeLanding(id: String, form: [UInt8]) -> CitconCustomerAnswer {
        guard let chargeID = landings[id], charges[chargeID] != nil else {
            return .page(status: 404, html: Self.html(title: "Unknown payment", body: "<p>No charge has this page.</p>"))
        }
        let fields = FormEncoding.decode(String(decoding: form, as: UTF8.self)) ?? [:]
        guard let outcome = fields["outcome"].flatMap(CustomerOutcome.init(rawValue:)) else {
            return .page(status: 400, html: Self.html(title: "Bad request",
                                                     body: "<p>outcome must be complete, fail or cancel.</p>"))
        }
        guard let charge = settle(chargeID, outcome: outcome) else {
            return .page(status: 404, html: Self.html(title: "Unknown payment", body: "<p>No charge has this page.</p>"))
        }
        guard let location = returnURL(returnKind(of: charge), of: charge) else {
            return .page(status: 200, html: Self.html(title: "Payment \(status(of: charge))",
                                                     body: "<p id=\"status\">\(Self.escapeHTML(status(of: charge)))</p>"))
        }
        return .redirect(location: location)
    }

    // MARK: Wallet app simulator

    /// Plays the wallet app. `body` is a JSON object: the `mobile_native` entry's content as the app
    /// parsed it (or `"content"`: the entry's content string as received) plus `"outcome"`. Finds the
    /// charge from the content (refusing content that matches none, e.g. a tampered `sign` or
    /// `signedString`), settles it like the landing page, and redirects (303) to the charge's URL for
    /// the result with the SDK's result `code` added: `0` paid, `-1` failed, `6001` (Alipay) or `-2`
    /// cancelled (the iOS guide's "Codes returned to Client end"). Without such a URL it answers
    /// `{"code": …}` with 200.
    func walletPay(wallet: String, body: [UInt8]) -> CitconCustomerAnswer {
        guard let method = Self.walletMethod(wallet) else {
            return .error(status: 404, message: "no wallet app \(wallet); expected wechatpay, alipay or upop")
        }
        guard let parsed = try? JSONValue.parse(body), let members = parsed.objectMembers else {
            return .error(status: 400, message: "expected a JSON object: the native content plus \"outcome\"")
        }
        var content: [String: String] = [:]
        for member in members where member.value.isScalar { content[member.key] = member.value.parameterText }
        if let embedded = content["content"], let inner = try? JSONValue.parse(embedded), let innerMembers = inner.objectMembers {
            for member in innerMembers where member.value.isScalar { content[member.key] = member.value.parameterText }
            content["content"] = nil
        }
        guard let outcome = content["outcome"].flatMap(CustomerOutcome.init(rawValue:)) else {
            return .error(status: 400, message: "outcome must be complete, fail or cancel")
        }
        content["outcome"] = nil
        guard let id = chargeID(method: method, content: content), let charge = settle(id, outcome: outcome) else {
            logger.notice("wallet content matches no charge", metadata: ["method": .string(method)])
            return .error(status: 400, message: "the content does not match a \(method) charge")
        }
        let kind = returnKind(of: charge)
        let code = switch kind {
        case .success: "0"
        case .fail: "-1"
        case .cancel: method == "alipay" ? "6001" : "-2"
        }
        guard let url = returnURL(kind, of: charge) else {
            return .json(status: 200, body: .object([.init(key: "code", value: .string(code))]))
        }
        return .redirect(location: Self.appendingQuery("code=" + code, to: url))
    }

    /// The charge the wallet content was issued for, if it is intact.
    private func chargeID(method: String, content: [String: String]) -> String? {
        let id: String?
        switch method {
        case "wechatpay":
            guard let prepayID = content["prepayid"], let sign = content["sign"] else { return nil }
            let signed = content.filter { Self.nativeKeyOrder(method).contains($0.key) }
            guard sign.uppercased() == wechatSign(signed) else { return nil }
            id = chargeIDsByPrepayID[prepayID]
        case "alipay":
            guard let orderSpec = content["orderSpec"], let signedString = content["signedString"],
                  signedString == alipaySign(orderSpec) else { return nil }
            id = Self.quotedValue(of: "out_trade_no", in: orderSpec)
        case "upop":
            guard let tn = content["tn"] else { return nil }
            id = chargeIDsByTN[tn]
        default:
            return nil
        }
        // Every value handed out must come back unchanged.
        guard let id, let charge = charges[id], charge.method == method, let native = charge.native,
              native.allSatisfy({ content[$0.key] == $0.value }) else { return nil }
        return id
    }

    /// `value` of `key="value"` in an Alipay order string.
    static func quotedValue(of key: String, in orderSpec: String) -> String? {
        for pair in orderSpec.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == key else { continue }
            return String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return nil
    }

    // MARK: HTML and URLs

    static func displayName(_ method: String) -> String {
        switch method {
        case "wechatpay": "WeChat Pay"
        case "alipay": "Alipay"
        case "alipay_hk": "AlipayHK"
        case "upop": "UnionPay"
        case "paypal": "PayPal"
        case "venmo": "Venmo"
        case "card": "Card"
        case "toss": "Toss"
        case "gcash": "GCash"
        case "dana": "DANA"
        case "kakaopay": "KakaoPay"
        default: method
        }
    }

    /// `url` with `query` added before any fragment, after any query it already has.
    static func appendingQuery(_ query: String, to url: String) -> String {
        let parts = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(parts[0])
        let fragment = parts.count > 1 ? "#" + parts[1] : ""
        let separator = !base.contains("?") ? "?" : (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&")
        return base + separator + query + fragment
    }

    static func html(title: String, body: String) -> String { SandboxHTML.page(title: title, body: body, emulator: "Citcon") }

    static func escapeHTML(_ text: String) -> String { SandboxHTML.escape(text) }
}
