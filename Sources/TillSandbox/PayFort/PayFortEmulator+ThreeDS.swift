import Foundation

/// What the 3-D Secure routes answer.
enum ThreeDSAnswer: Sendable, Equatable {
    /// An HTML page.
    case page(status: Int, html: String)
    /// HTTP 302 to `location`.
    case redirect(location: String)
}

extension PayFortEmulator {
    /// The issuer's authentication page for an order waiting for 3-D Secure: the order's details
    /// and two buttons that post `outcome=approve` or `outcome=decline` to `…/3ds/{fort_id}/complete`.
    func threeDSPage(fortID: String, payFortBaseURL: URL) -> ThreeDSAnswer {
        guard let order = orderForThreeDS(fortID) else {
            return .page(status: 404, html: Self.html(title: "Unknown order", body: "<p>No order has this fort_id.</p>"))
        }
        guard order.awaitingThreeDS else {
            let state = Self.escapeHTML(order.responseCode + " " + order.responseMessage)
            return .page(status: 409, html: Self.html(title: "Already completed",
                                                     body: "<p>This order is no longer waiting for 3-D Secure (\(state)).</p>"))
        }
        let action = payFortBaseURL.appendingPathComponent("3ds").appendingPathComponent(fortID)
            .appendingPathComponent("complete").absoluteString
        let body = """
            <p>Merchant <b>\(Self.escapeHTML(order.merchant.merchantIdentifier))</b> asks you to confirm a payment.</p>
            <dl>
              <dt>Order</dt><dd id="merchant_reference">\(Self.escapeHTML(order.reference))</dd>
              <dt>Amount</dt><dd id="amount">\(order.amountMinor) (minor units) \(Self.escapeHTML(order.currency))</dd>
              <dt>Card</dt><dd id="card_number">\(Self.escapeHTML(order.current["card_number"]?.parameterText ?? ""))</dd>
            </dl>
            <form method="post" action="\(Self.escapeHTML(action))">
              <input type="hidden" name="outcome" value="approve">
              <button type="submit" id="approve">Approve</button>
            </form>
            <form method="post" action="\(Self.escapeHTML(action))">
              <input type="hidden" name="outcome" value="decline">
              <button type="submit" id="decline">Decline</button>
            </form>
            """
        return .page(status: 200, html: Self.html(title: "3-D Secure check", body: body))
    }

    /// Completes 3-D Secure: charges (approve) or declines the order, sends the feedback, and
    /// redirects to the order's `return_url` with every response parameter and the signature in
    /// the query. Completing again redirects with the same result and changes nothing.
    func completeThreeDS(fortID: String, form: [UInt8]) -> ThreeDSAnswer {
        guard var order = orderForThreeDS(fortID) else {
            return .page(status: 404, html: Self.html(title: "Unknown order", body: "<p>No order has this fort_id.</p>"))
        }
        let fields = FormEncoding.decode(String(decoding: form, as: UTF8.self)) ?? [:]
        guard let outcome = fields["outcome"], outcome == "approve" || outcome == "decline" else {
            return .page(status: 400, html: Self.html(title: "Bad request", body: "<p>outcome must be approve or decline.</p>"))
        }
        if order.awaitingThreeDS {
            var response = order.current
            response["3ds_url"] = nil
            let purchase = order.command == "PURCHASE"
            if outcome == "approve" {
                response["authorization_code"] = .string(Self.randomDigits(count: 6))
                setOutcome(&response, status: purchase ? "14" : "02", code: "000", message: "Success")
            } else {
                setOutcome(&response, status: purchase ? "13" : "03", code: "071", message: "Transaction declined")
            }
            order.current = response
            order.awaitingThreeDS = false
            order.threeDSCompleted = true
            if outcome == "approve" { recordCharge(&order) }
            store(order)
            logger.debug("3-D Secure completed", metadata: ["fort_id": .string(fortID), "outcome": .string(outcome),
                                                           "response_code": .string(order.responseCode)])
            notify(order.current, merchant: order.merchant)
        } else if !order.threeDSCompleted {
            return .page(status: 409, html: Self.html(title: "Not a 3-D Secure order",
                                                     body: "<p>This order never waited for 3-D Secure.</p>"))
        }
        var values = order.current.mapValues(\.parameterText)
        values[Signature.signatureKey] = Signature.sign(values, phrase: order.merchant.responsePhrase,
                                                        algorithm: order.merchant.algorithm)
        guard let returnURL = order.returnURL else {
            let rows = values.sorted { $0.key < $1.key }
                .map { "<tr><th>\(Self.escapeHTML($0.key))</th><td>\(Self.escapeHTML($0.value))</td></tr>" }.joined()
            return .page(status: 200, html: Self.html(title: "Payment \(outcome == "approve" ? "approved" : "declined")",
                                                      body: "<table>\(rows)</table>"))
        }
        return .redirect(location: Self.appendingQuery(FormEncoding.encode(values), to: returnURL))
    }

    private func orderForThreeDS(_ fortID: String) -> Order? {
        orderKeysByFortID[fortID].flatMap { orders[$0] }
    }

    /// `url` with `query` added before any fragment, after any query it already has.
    static func appendingQuery(_ query: String, to url: String) -> String {
        let parts = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(parts[0])
        let fragment = parts.count > 1 ? "#" + parts[1] : ""
        let separator = !base.contains("?") ? "?" : (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&")
        return base + separator + query + fragment
    }

    static func html(title: String, body: String) -> String { SandboxHTML.page(title: title, body: body, emulator: "PayFort") }

    static func escapeHTML(_ text: String) -> String { SandboxHTML.escape(text) }
}
