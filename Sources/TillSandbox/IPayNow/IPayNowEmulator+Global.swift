import Foundation

/// What `POST {base}/global` answers.
struct IPayNowAnswer: Sendable {
    /// How the answer is delivered.
    enum Delivery: Sendable {
        case respond
        /// Hold the request for the emulator's `timeoutHold`, then answer 504.
        case holdThenGatewayTimeout
        /// Close the connection without an answer.
        case dropConnection
    }

    var status: Int
    var contentType: String
    var body: [UInt8]
    var delivery: Delivery = .respond
}

extension IPayNowEmulator {
    /// The `Content-Type` of `/global` answers. *Emulator choice*: cbphp reads the body whole
    /// (`HttpUtil::send_post`, then `urldecode`) and no source shows the header.
    static let answerContentType = "application/x-www-form-urlencoded; charset=utf-8"

    /// README 2.1 同步返回, in the table's order.
    static let wp001AnswerOrder = ["funcode", "appId", "mhtOrderNo", "nowPayOrderNo", "tn", "signType", "responseTime",
                                   "responseCode", "responseMsg", "signature"]

    /// README 2.4 返回数据, in the table's order (no `funcode`: the table has none, nor has the real 2015 MQ001).
    static let mq001AnswerOrder = ["appId", "mhtOrderNo", "mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt",
                                   "cashCurrencyType", "cashAmont", "mhtAmtCurrFlag", "mhtOrderTimeOut", "mhtOrderStartTime",
                                   "mhtCharset", "deviceType", "payChannelType", "tradeStatus", "nowPayOrderNo",
                                   "channelOrderNo", "responseTime", "responseCode", "responseMsg", "signType", "signature"]

    /// Handles `POST {base}/global`: a form body dispatched by `funcode` (cbphp posts WP001, MQ001,
    /// R001 and Q001 to the same URL). WP001 and MQ001 are emulated; anything else is refused.
    /// - Parameter base: the emulator's base URL (`{sandbox}/ipaynow`), for the `tn` pages.
    func handleGlobal(body: [UInt8], base: URL) -> IPayNowAnswer {
        let parsed = IPayNowForm.parse(String(decoding: body, as: UTF8.self))
        let funcode = (try? parsed.get())?["funcode"]
        let fault = takeFault(for: funcode)
        if fault == .serverError {
            return IPayNowAnswer(status: 500, contentType: "text/plain; charset=utf-8", body: Array("Internal Server Error".utf8))
        }
        var reply: [String: String]
        var order: [String]
        switch parsed {
        case .failure(let malformed):
            (reply, order) = (refusal(malformed.message, request: [:], app: nil, funcode: nil), Self.wp001AnswerOrder)
        case .success(let fields):
            switch fields["funcode"] ?? "" {
            case "WP001":
                (reply, order) = (placeOrder(fields, base: base), Self.wp001AnswerOrder)
            case "MQ001":
                (reply, order) = (query(fields), Self.mq001AnswerOrder)
            case "":
                (reply, order) = (refusal("funcode: required", request: fields, app: app(fields["appId"]), funcode: nil),
                                  Self.wp001AnswerOrder)
            case let other:
                (reply, order) = (refusal("funcode: \(other) is not emulated (WP001, MQ001)", request: fields,
                                          app: app(fields["appId"]), funcode: other), Self.wp001AnswerOrder)
            }
        }
        switch fault {
        case .timeout?:
            return IPayNowAnswer(status: 504, contentType: "text/plain; charset=utf-8", body: [], delivery: .holdThenGatewayTimeout)
        case .dropConnection?:
            return IPayNowAnswer(status: 500, contentType: "text/plain; charset=utf-8", body: [], delivery: .dropConnection)
        case .garbage?:
            // Not UTF-8, a bad %-escape, no `=`: no parser takes it for a message.
            return IPayNowAnswer(status: 200, contentType: "text/html", body: [0xFF, 0xFE] + Array("<html>%ZZ</html>".utf8))
        case .badSignature?:
            if let signature = reply["signature"], let last = signature.last {
                reply["signature"] = String(signature.dropLast()) + (last == "0" ? "1" : "0")
            }
        case .serverError?, nil:
            break
        }
        return IPayNowAnswer(status: 200, contentType: Self.answerContentType, body: Array(IPayNowForm.encode(reply, order: order).utf8))
    }

    // MARK: WP001

    /// A server order (cbphp README 2.1, `TradeService::trade()`): checks the fields against README
    /// 2.1's table, the signature (the six-field exclusion), and that the app has no order of that
    /// number yet; records it (`A00I`) and answers `responseCode` `A001` with `nowPayOrderNo` and `tn`.
    ///
    /// `tn` ("短链接", short link) is the URL of the emulator's channel page for the order
    /// (`{base}/sandbox-only/channel/{id}`): *emulator choice* (the README's example shows a WeChat
    /// `weixin://wxpay/bizpayurl?pr=…` link, percent-encoded twice; the emulator encodes it once, as
    /// every value).
    func placeOrder(_ fields: [String: String], base: URL) -> [String: String] {
        guard let app = app(fields["appId"]) else {
            return refusal(fields["appId"].map { _ in "appId: unknown app" } ?? "appId: required", request: fields, app: nil,
                           funcode: "WP001")
        }
        if let violation = IPayNowFieldRules(table: .serverWP001).violation(in: fields) {
            return refusal(violation + " (README 2.1)", request: fields, app: app, funcode: "WP001")
        }
        if let problem = signatureProblem(fields, app: app, excluding: Signature.requestExcluded,
                                          rule: "funcode, deviceType, mhtSignType, mhtSignature, detail, version not signed") {
            return refusal(problem, request: fields, app: app, funcode: "WP001")
        }
        let mhtOrderNo = fields["mhtOrderNo"] ?? ""
        guard orders[Self.key(app.appId, mhtOrderNo)] == nil else {
            return refusal("mhtOrderNo: duplicate, this app already has order \(mhtOrderNo)", request: fields, app: app, funcode: "WP001")
        }
        let order = record(fields, app: app, via: .wp001)
        let page = base.appendingPathComponent("sandbox-only").appendingPathComponent("channel")
            .appendingPathComponent(order.pageID ?? "")
        return signed([
            "funcode": "WP001", "appId": app.appId, "mhtOrderNo": mhtOrderNo, "nowPayOrderNo": order.nowPayOrderNo,
            "tn": page.absoluteString, "responseTime": IPayNowTime.stamp(now()), "responseCode": "A001",
        ], app: app)
    }

    /// `nil` when `mhtSignType` is `MD5` and `mhtSignature` is right under `excluding`; else the
    /// refusal naming the field and the string that was expected to be signed (without the key).
    func signatureProblem(_ fields: [String: String], app: App, excluding: Set<String>, rule: String) -> String? {
        guard let type = fields["mhtSignType"], !type.isEmpty else { return "mhtSignType: required" }
        guard type == "MD5" else { return "mhtSignType: must be MD5" }
        guard !(fields["mhtSignature"] ?? "").isEmpty else { return "mhtSignature: required" }
        guard !Signature.verify(fields, appKey: app.appKey, signatureField: "mhtSignature", excluding: excluding) else { return nil }
        return "mhtSignature: does not match; expected the MD5 of \"\(Signature.canonical(fields, excluding: excluding))&\" + md5(appKey) "
            + "(keys sorted, empty values left out; \(rule))"
    }

    // MARK: MQ001

    /// An order query (cbphp README 2.4, `OrderQueryService::orederQuery`): the signature over
    /// `appId`, `mhtOrderNo`, `mhtCharset` (the code's reading; also README 2.4's "every other field"
    /// reading with ``QuerySignatureRule/codeOrReadme``), then README 2.4's answer, `responseCode`
    /// `A001` and `tradeStatus` the order's state, signed excluding `signType` and `signature`.
    ///
    /// `responseCode` `A001` with `responseMsg` `查询交易成功` for every answered query, whatever the
    /// order's state: the only real MQ001 answer (iPaynow/iPaynow-Python@239fa0d8a5fb2704d4a5935561816fbde367542d
    /// `ipaynowPythonSdk/ipaynow/unpackMsg.py`) carries these; the state is in `tradeStatus`.
    func query(_ fields: [String: String]) -> [String: String] {
        guard let app = app(fields["appId"]) else {
            return refusal(fields["appId"].map { _ in "appId: unknown app" } ?? "appId: required", request: fields, app: nil, funcode: nil)
        }
        for key in ["mhtOrderNo", "mhtCharset"] where (fields[key] ?? "").isEmpty {
            return refusal("\(key): required (README 2.4)", request: fields, app: app, funcode: nil)
        }
        guard fields["mhtCharset"] == "UTF-8" else { return refusal("mhtCharset: must be UTF-8", request: fields, app: app, funcode: nil) }
        guard let type = fields["mhtSignType"], !type.isEmpty else { return refusal("mhtSignType: required", request: fields, app: app, funcode: nil) }
        guard type == "MD5" else { return refusal("mhtSignType: must be MD5", request: fields, app: app, funcode: nil) }
        guard !(fields["mhtSignature"] ?? "").isEmpty else { return refusal("mhtSignature: required", request: fields, app: app, funcode: nil) }
        let byCode = Signature.verify(fields, appKey: app.appKey, signatureField: "mhtSignature", excluding: Signature.queryExcluded)
        let byReadme = queryRule == .codeOrReadme
            && Signature.verify(fields, appKey: app.appKey, signatureField: "mhtSignature", excluding: Signature.queryReadmeExcluded)
        guard byCode || byReadme else {
            var message = "mhtSignature: does not match; expected the MD5 of \"\(Signature.canonical(fields, excluding: Signature.queryExcluded))&\" "
                + "+ md5(appKey) (OrderQueryService.php: funcode, mhtSignType, mhtSignature not signed)"
            if queryRule == .codeOrReadme {
                message += " or of \"\(Signature.canonical(fields, excluding: Signature.queryReadmeExcluded))&\" + md5(appKey) (README 2.4)"
            }
            return refusal(message, request: fields, app: app, funcode: nil)
        }
        guard let order = orders[Self.key(app.appId, fields["mhtOrderNo"] ?? "")] else {
            return refusal("mhtOrderNo: no such order", request: fields, app: app, funcode: nil)
        }
        var reply: [String: String] = [:]
        for key in ["mhtOrderName", "mhtOrderType", "mhtCurrencyType", "mhtOrderAmt", "mhtAmtCurrFlag", "mhtOrderTimeOut",
                    "mhtOrderStartTime", "mhtCharset", "deviceType", "payChannelType"] {
            if let value = order.fields[key] { reply[key] = value }
        }
        reply["appId"] = app.appId
        reply["mhtOrderNo"] = order.mhtOrderNo
        reply["cashCurrencyType"] = Self.cashCurrency
        reply["cashAmont"] = String(order.cashAmont)
        reply["tradeStatus"] = order.tradeStatus
        reply["nowPayOrderNo"] = order.nowPayOrderNo
        reply["channelOrderNo"] = order.channelOrderNo
        reply["responseTime"] = IPayNowTime.stamp(now())
        reply["responseCode"] = "A001"
        reply["responseMsg"] = "查询交易成功"
        return signed(reply, app: app)
    }

    // MARK: Answers

    /// `fields` plus `signType` `MD5` and `signature` (excluding those two).
    func signed(_ fields: [String: String], app: App) -> [String: String] {
        var fields = fields
        fields["signType"] = "MD5"
        fields["signature"] = Signature.sign(fields, appKey: app.appKey, excluding: Signature.responseExcluded)
        return fields
    }

    /// A refusal: `responseCode` `A002` (README 3.2) with `responseMsg` naming the field at fault,
    /// `"<field>: <reason>"` (*emulator choice*: no source gives iPayNow's error texts), plus `funcode`
    /// (WP001 answers carry it), `appId` and `mhtOrderNo` as sent and `responseTime`; signed when the
    /// app is known (*emulator choice*: with no app there is no key to sign with, so no `signType`
    /// or `signature`).
    func refusal(_ message: String, request: [String: String], app: App?, funcode: String?) -> [String: String] {
        var fields: [String: String] = ["responseCode": "A002", "responseMsg": message, "responseTime": IPayNowTime.stamp(now())]
        if let funcode, !funcode.isEmpty { fields["funcode"] = funcode }
        if let appId = request["appId"] { fields["appId"] = appId }
        if let number = request["mhtOrderNo"] { fields["mhtOrderNo"] = number }
        logger.debug("request refused", metadata: ["reason": .string(message)])
        guard let app else { return fields }
        return signed(fields, app: app)
    }
}
