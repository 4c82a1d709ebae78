import Foundation

extension PayFortEmulator {
    /// The customer's bank page at a `3ds_url` (`…/secure3dsSimulator?FORTSESSIONID=…`, the shape of
    /// the APS sandbox's own simulator URL in authorization-response.json): the order's details and two
    /// buttons that post `outcome=approve` or `outcome=fail` back to the same URL.
    func threeDSPage(session: String) -> PageAnswer {
        guard let key = orderKeysBySession[session], let order = orders[key] else {
            return .page(status: 404, html: Self.html(title: "Unknown session", body: "<p>No payment has this FORTSESSIONID.</p>"))
        }
        guard order.threeDSSession == session else {
            return .page(status: 409, html: Self.resultPage(title: "Already completed", fields: order.current))
        }
        let body = """
            <p>Merchant <b>\(Self.escapeHTML(order.merchant.merchantIdentifier))</b> asks you to confirm a payment.</p>
            <dl>
              <dt>Order</dt><dd id="merchant_reference">\(Self.escapeHTML(order.reference))</dd>
              <dt>Amount</dt><dd id="amount">\(order.amountMinor) (minor units) \(Self.escapeHTML(order.currency))</dd>
              <dt>Card</dt><dd id="card_number">\(Self.escapeHTML(TestCard.mask(order.card.number)))</dd>
            </dl>
            <form method="post">
              <input type="hidden" name="outcome" value="approve">
              <button type="submit" id="approve">Approve</button>
            </form>
            <form method="post">
              <input type="hidden" name="outcome" value="fail">
              <button type="submit" id="fail">Fail authentication</button>
            </form>
            """
        return .page(status: 200, html: Self.html(title: "3-D Secure check", body: body))
    }

    /// Completes 3-D Secure from the page's form (`outcome=approve`, or `fail`; `decline` is read as
    /// `fail`): charges or declines the order, sends the feedback, and redirects (`302`) to the order's
    /// `return_url` with the final result and its signature in the query, as APS's GET on return_url
    /// shows (authorization-response.json `after_3ds_return`). Completing again redirects with the
    /// same result and changes nothing.
    func completeThreeDS(session: String, form: [UInt8]) -> PageAnswer {
        guard let key = orderKeysBySession[session], orders[key] != nil else {
            return .page(status: 404, html: Self.html(title: "Unknown session", body: "<p>No payment has this FORTSESSIONID.</p>"))
        }
        let fields = FormEncoding.decode(String(decoding: form, as: UTF8.self)) ?? [:]
        guard let outcome = fields["outcome"], ["approve", "fail", "decline"].contains(outcome) else {
            return .page(status: 400, html: Self.html(title: "Bad request", body: "<p>outcome must be approve or fail.</p>"))
        }
        guard let order = finishThreeDS(orderKey: key, session: session, approve: outcome == "approve") else {
            return .page(status: 404, html: Self.html(title: "Unknown session", body: "<p>No payment has this FORTSESSIONID.</p>"))
        }
        var values = order.current
        values[Signature.signatureKey] = Self.sign(values, merchant: order.merchant)
        guard let returnURL = order.returnURL else {
            let approved = order.charged
            return .page(status: 200, html: Self.resultPage(title: "Payment \(approved ? "approved" : "declined")", fields: values))
        }
        return .redirect(location: Self.appendingQuery(FormEncoding.encode(values), to: returnURL))
    }

    /// Settles an order waiting for 3-D Secure with the customer's answer (once; later calls return
    /// the order as it is): approved → `14000` / `02000` and charged; failed → `13030` / `03030`
    /// "Authentication failed". Sends the feedback.
    func finishThreeDS(orderKey key: String, session: String, approve: Bool) -> Order? {
        guard var order = orders[key] else { return nil }
        guard order.threeDSSession == session else { return order }
        var response = order.current
        let purchase = order.command == "PURCHASE"
        if approve {
            response["authorization_code"] = Self.randomDigits(count: 6)
            Self.setOutcome(&response, status: purchase ? "14" : "02", code: "000", message: "Success")
        } else {
            Self.setOutcome(&response, status: purchase ? "13" : "03", code: "030", message: "Authentication failed")
        }
        order.current = response
        order.threeDSSession = nil
        order.transaction = (response["status"] ?? "", response["response_code"] ?? "", response["response_message"] ?? "")
        if approve { recordCharge(&order) }
        store(order)
        logger.debug("3-D Secure completed", metadata: ["fort_id": .string(order.fortID), "approved": .stringConvertible(approve),
                                                       "response_code": .string(order.transaction.code)])
        notify(order.current, merchant: order.merchant)
        return order
    }
}
