import Foundation

extension IPayNowEmulator {
    /// The path of the iOS plugin stand-in under the emulator's base URL. **Not an iPayNow API**: the
    /// real plugin (`libipaynowCrossBorderPlugin.a`) sends the order to iPayNow 3DES-encrypted over an
    /// undocumented channel and hands the answer's `tn` to AlipaySDK; the stand-in plays the plugin,
    /// iPayNow's server and the wallet in one call.
    public static let pluginPath = "sandbox-only/plugin/pay"

    /// What the customer does once the plugin has handed them to the wallet.
    public enum PluginOutcome: String, Sendable, Hashable, CaseIterable, Codable {
        /// Pays: the order is `A001`, charged, and the N001 is sent; the delegate gets `Success`.
        case pay
        /// Cancels in the wallet: the order stays `A00I` (not processed); the delegate gets `Cancel`.
        case cancel
        /// The channel refuses the payment: the order is `A002`; the delegate gets `Fail` / `PE004`.
        case fail
        /// Pays, but the plugin cannot learn the result: the order is `A001`, charged, N001 sent; the
        /// delegate gets `Unknown` / `PE005`.
        case unknown
        /// The plugin cannot reach iPayNow: nothing is created; the delegate gets `Fail` / `PE002`.
        case networkError = "network_error"
    }

    /// The stand-in's request: what the app hands `[IPNCrossBorderPluginAPi pay:AndScheme:viewController:delegate:]`,
    /// and what the customer does.
    public struct PluginPayment: Sendable, Hashable, Codable {
        /// The `data` argument: the presign string, `&mhtSignType=MD5&mhtSignature=…` appended (seed 第三步).
        public var payData: String
        /// The `scheme` argument: the URL scheme the app registered.
        public var scheme: String
        /// What the customer does in the wallet.
        public var outcome: PluginOutcome
        /// `false`: the app passed no view controller (the plugin refuses with `PE004`). `true` by default.
        public var viewController: Bool?
        /// `true`: answer only once the N001 this payment causes has been acknowledged or has run out
        /// of tries, so the merchant server hears before the app does. `false` by default.
        public var waitForNotification: Bool?

        /// A call of the plugin with `payData` and `scheme`, the customer doing `outcome`.
        public init(payData: String, scheme: String, outcome: PluginOutcome, viewController: Bool? = nil,
                    waitForNotification: Bool? = nil) {
            self.payData = payData
            self.scheme = scheme
            self.outcome = outcome
            self.viewController = viewController
            self.waitForNotification = waitForNotification
        }
    }

    /// The stand-in's answer: what the app's delegate and app delegate receive.
    public struct PluginResult: Sendable, Hashable, Codable {
        /// The delegate's `IPNCrossBorderPayResult`, by its name without the prefix: `Success`, `Fail`,
        /// `Cancel`, `Unknown` (ios `SDK/IPNCrossBorderPluginDelegate.h`).
        public var result: String
        /// The delegate's `erroCode` (`PE001`…`PE005`, seed 附录D), when it gives one.
        public var erroCode: String?
        /// The delegate's `erroInfo`, when it gives one.
        public var erroInfo: String?
        /// The URL the customer comes back to the app on (`<scheme>://…`), or `nil` when they never left it.
        public var returnURL: String?
        /// The order's number, once iPayNow took it.
        public var mhtOrderNo: String?
        /// iPayNow's order number, once it took the order.
        public var nowPayOrderNo: String?
        /// The order's `tradeStatus` after the customer acted.
        public var tradeStatus: String?
        /// What iPayNow's server answered the plugin (`A001`, or `A002` when it refused the order).
        public var serverResponseCode: String?
        /// Why iPayNow's server refused the order (`"<field>: <reason>"`).
        public var serverResponseMsg: String?

        /// A result; everything but `result` is optional.
        public init(result: String, erroCode: String? = nil, erroInfo: String? = nil, returnURL: String? = nil,
                    mhtOrderNo: String? = nil, nowPayOrderNo: String? = nil, tradeStatus: String? = nil,
                    serverResponseCode: String? = nil, serverResponseMsg: String? = nil) {
            self.result = result
            self.erroCode = erroCode
            self.erroInfo = erroInfo
            self.returnURL = returnURL
            self.mhtOrderNo = mhtOrderNo
            self.nowPayOrderNo = nowPayOrderNo
            self.tradeStatus = tradeStatus
            self.serverResponseCode = serverResponseCode
            self.serverResponseMsg = serverResponseMsg
        }
    }

    /// Handles `POST {base}/sandbox-only/plugin/pay`: a JSON ``PluginPayment``; answers 200 with a
    /// ``PluginResult``, or 400 `{"error": …}` when the body is not of that shape.
    func handlePlugin(body: [UInt8]) async -> (status: Int, body: [UInt8]) {
        let payment: PluginPayment
        do {
            payment = try JSONDecoder().decode(PluginPayment.self, from: Data(body))
        } catch {
            let expected = "expected {\"payData\": \"…\", \"scheme\": \"…\", \"outcome\": \"pay\" | \"cancel\" | \"fail\" | \"unknown\" "
                + "| \"network_error\", \"viewController\": true, \"waitForNotification\": false}"
            let problem: String
            switch error {
            case DecodingError.keyNotFound(let key, _): problem = "\(key.stringValue): required; "
            case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
                 DecodingError.valueNotFound(_, let context):
                problem = context.codingPath.map(\.stringValue).joined(separator: ".") + ": invalid; "
            default: problem = ""
            }
            return (400, JSONValue.object([.init(key: "error", value: .string(problem + expected))]).serializedBytes)
        }
        let result = await pluginPay(payment)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (200, Array((try? encoder.encode(result)) ?? Data("{}".utf8)))
    }

    /// Plays the plugin, iPayNow's server and the wallet for one `pay:AndScheme:…` call.
    ///
    /// 1. The plugin's own checks, in 附录D's order: empty data (`PE004` `订单数据为空`), empty scheme
    ///    (`PE004` `scheme为空`), no view controller (`PE004` `viewController为空`): texts from the
    ///    binary's strings (`IPNCrossBorderPlugin.o`), code from the seed's 附录D.
    /// 2. What the plugin sends: `payData` split on `&`, each pair on its first `=`, the values as the
    ///    app wrote them, and `deviceType=01` appended (`IPNCrossBorderAlixPayClass.o`: `&deviceType=01`).
    ///    `mhtReserved` is decoded once more, because the app URL-encodes it after signing (seed 第一步 note;
    ///    ios demo `payByType:`) and it was signed raw. Every space and newline is removed from the values
    ///    (`translateToJson:` strips them from the JSON it sends).
    /// 3. A `payChannelType` other than `90` (Alipay) or `80` (WeChat): `PE001` `插件不支持该渠道交易` (附录D).
    /// 4. iPayNow's server checks: the app, 附录A's field rules, the signature (every field but
    ///    `mhtSignType`/`mhtSignature`, and `deviceType`, which the plugin added), a new `mhtOrderNo` for
    ///    the app. A refusal reaches the delegate as `Fail` / `PE004` with the server's `responseMsg` as
    ///    `erroInfo` (*emulator choice*: the binary's generic text is `交易处理失败`).
    /// 5. The customer in the wallet (``PluginOutcome``); the customer comes back on
    ///    `<scheme>://safepay/` (Alipay: the plugin hands URLs whose host is `safepay` to AlipaySDK,
    ///    `IPNCrossBorderPlugin.o`) or `<scheme>://pay/` (WeChat), without a query (*emulator choice*:
    ///    no source gives the query).
    func pluginPay(_ payment: PluginPayment) async -> PluginResult {
        if payment.payData.isEmpty { return PluginResult(result: "Fail", erroCode: "PE004", erroInfo: "订单数据为空") }
        if payment.scheme.isEmpty { return PluginResult(result: "Fail", erroCode: "PE004", erroInfo: "scheme为空") }
        if payment.viewController == false { return PluginResult(result: "Fail", erroCode: "PE004", erroInfo: "viewController为空") }
        if payment.outcome == .networkError { return PluginResult(result: "Fail", erroCode: "PE002", erroInfo: "网络连接异常") }

        func refused(_ message: String) -> PluginResult {
            logger.debug("plugin order refused", metadata: ["reason": .string(message)])
            return PluginResult(result: "Fail", erroCode: "PE004", erroInfo: message, serverResponseCode: "A002",
                                serverResponseMsg: message)
        }
        var fields: [String: String] = [:]
        for pair in payData(pairsOf: payment.payData) {
            guard let equals = pair.firstIndex(of: "=") else { return refused("payData: \"\(pair)\" is not key=value") }
            let key = String(pair[..<equals])
            guard !key.isEmpty else { return refused("payData: a pair without a key") }
            guard fields[key] == nil else { return refused("\(key): given twice") }
            fields[key] = String(pair[pair.index(after: equals)...])
        }
        fields["deviceType"] = "01"
        if let reserved = fields["mhtReserved"] {
            guard let decoded = FormEncoding.unescape(reserved) else { return refused("mhtReserved: bad %-escape (URL-encode it once, after signing)") }
            fields["mhtReserved"] = decoded
        }
        // The plugin sends the order as JSON with every space and newline removed: its
        // `-[IPNCrossBorderPayClass translateToJson:]` (libipaynowCrossBorderPlugin.a, arm64) decodes
        // mhtReserved, serialises the fields, then replaces "\n" and " " with "" in the whole text. iPayNow's
        // server therefore checks the signature over values without spaces.
        for (name, value) in fields where value.contains(" ") || value.contains("\n") {
            fields[name] = value.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "\n", with: "")
        }
        if let channel = fields["payChannelType"], !channel.isEmpty, channel != "90", channel != "80" {
            return PluginResult(result: "Fail", erroCode: "PE001", erroInfo: "插件不支持该渠道交易")
        }
        guard let app = app(fields["appId"]) else { return refused(fields["appId"] == nil ? "appId: required" : "appId: unknown app") }
        if let violation = IPayNowFieldRules(table: .pluginPresign).violation(in: fields) { return refused(violation + " (附录A)") }
        if let problem = signatureProblem(fields, app: app, excluding: Signature.requestExcluded,
                                          rule: "mhtSignType, mhtSignature and the plugin's deviceType not signed") {
            return refused(problem)
        }
        let key = Self.key(app.appId, fields["mhtOrderNo"] ?? "")
        guard orders[key] == nil else { return refused("mhtOrderNo: duplicate, this app already has order \(fields["mhtOrderNo"] ?? "")") }
        let order = record(fields, app: app, via: .plugin)

        // The delegate's texts are the binary's (`IPNCrossBorderAlixPayClass.o`: `PE005#交易状态未知`,
        // `PE004#交易处理失败`, `支付被取消`); the demo's delegate shows Cancel without a code.
        var result: PluginResult
        switch payment.outcome {
        case .pay:
            pay(key)
            result = PluginResult(result: "Success")
        case .unknown:
            pay(key)
            result = PluginResult(result: "Unknown", erroCode: "PE005", erroInfo: "交易状态未知")
        case .cancel:
            result = PluginResult(result: "Cancel", erroInfo: "支付被取消")
        case .fail, .networkError:
            orders[key]?.tradeStatus = "A002"
            result = PluginResult(result: "Fail", erroCode: "PE004", erroInfo: "交易处理失败")
        }
        let host = fields["payChannelType"] == "80" ? "pay" : "safepay"
        result.returnURL = URL(string: payment.scheme + "://" + host + "/")?.absoluteString
        result.mhtOrderNo = order.mhtOrderNo
        result.nowPayOrderNo = order.nowPayOrderNo
        result.tradeStatus = orders[key]?.tradeStatus
        result.serverResponseCode = "A001"
        if payment.waitForNotification == true { await waitForNotifications(of: key) }
        return result
    }

    /// The `&`-separated pieces of `payData`, empty ones skipped.
    private func payData(pairsOf text: String) -> [Substring] {
        text.split(separator: "&", omittingEmptySubsequences: true)
    }
}
