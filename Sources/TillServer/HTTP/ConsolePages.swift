import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Till
import TillOrchestration
import TillService

/// The console's pages. Every value is interpolated into ``HTML``, which escapes it; no page has a script.
enum ConsolePages {
    static func respond(_ html: HTML, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html.text)))
    }

    static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true)
            .timeSeparator(.colon).dateTimeSeparator(.space)) + " UTC"
    }

    static func layout(_ title: String, session: ConsoleSessions.Session?, _ body: HTML) -> HTML {
        let header: HTML = if let session {
            """
            <header><a class="brand" href="/payments">Till console</a><nav>\
            <a href="/payments">Payments</a><a href="/gateways">Gateways</a><a href="/reconciliation">Reconciliation</a>\
            <a href="/quarantine">Quarantine</a><a href="/audit">Audit</a></nav>\
            <form method="post" action="/logout" class="signout"><input type="hidden" name="csrf" value="\(session.csrf)">\
            <span class="who">\(session.operatorName)</span><button type="submit">Sign out</button></form></header>
            """
        } else {
            "<header><span class=\"brand\">Till console</span></header>"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · Till console</title><link rel="stylesheet" href="/console.css"></head>
            <body>\(header)<main><h1>\(title)</h1>
            \(body)
            </main></body></html>
            """
    }

    static func plain(status: HTTPResponse.Status, title: String, message: String, session: ConsoleSessions.Session? = nil) -> Response {
        respond(layout(title, session: session, "<p class=\"message\">\(message)</p><p><a href=\"/payments\">Back to payments</a></p>"), status: status)
    }

    static func login(failed: Bool) -> Response {
        let notice: HTML = failed ? "<p class=\"message\">That token is not an operator's.</p>" : .empty
        return respond(layout("Sign in", session: nil, """
            \(notice)<form method="post" action="/login" class="login">
            <label>Operator token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
            <button type="submit">Sign in</button></form>
            """))
    }

    static func badge(_ word: String) -> HTML {
        "<span class=\"badge b-\(word.replacingOccurrences(of: " ", with: "_"))\">\(word)</span>"
    }

    static func merchantPicker(_ merchants: [String], selected: String) -> HTML {
        let options: [HTML] = merchants.map { id in
            "<option value=\"\(id)\"\(id == selected ? HTML(stringLiteral: " selected") : .empty)>\(id)</option>"
        }
        return "<label>Merchant <select name=\"merchant\">\(options)</select></label>"
    }

    // MARK: Payments

    static func payments(merchants: [String], merchant: MerchantRuntime, filters: [String: String], page: PaymentSearchPage?, problem: String?,
                         session: ConsoleSessions.Session) -> Response {
        let merchantID = merchant.configuration.id
        func text(_ name: String, _ label: String, _ hint: String = "") -> HTML {
            "<label>\(label) <input name=\"\(name)\" value=\"\(filters[name] ?? "")\" placeholder=\"\(hint)\"></label>"
        }
        func choice(_ name: String, _ label: String, _ options: [String]) -> HTML {
            let items: [HTML] = ([""] + options).map { option in
                "<option value=\"\(option)\"\(filters[name] == option ? HTML(stringLiteral: " selected") : .empty)>\(option.isEmpty ? "any" : option)</option>"
            }
            return "<label>\(label) <select name=\"\(name)\">\(items)</select></label>"
        }
        let notice: HTML = problem.map { "<p class=\"message\">\($0)</p>" } ?? .empty
        let rows: [HTML] = (page?.payments ?? []).map { payment in
            """
            <tr><td>\(time(payment.createdAt))</td><td><a class="payment mono" href="\(href: "/payments/\(payment.id)", [("merchant", merchantID)])">\(payment.id)</a></td>\
            <td class="mono">\(payment.merchantReference)</td><td>\(badge(payment.status.rawValue))</td><td>\(payment.amount.description)</td>\
            <td>\(payment.method.rawValue)</td><td>\(payment.attempts.last?.gateway.rawValue ?? "—")</td><td>\(payment.customer?.email ?? "")</td></tr>
            """
        }
        let next: HTML = page?.nextCursor.map { cursor in
            let query = [("merchant", Optional(merchantID))] + filters.sorted { $0.key < $1.key }.map { ($0.key, Optional($0.value)) } + [("cursor", cursor)]
            return "<p class=\"pages\"><a href=\"\(href: "/payments", query)\">Next page →</a></p>"
        } ?? .empty
        let results: HTML = page.map { page in
            page.payments.isEmpty ? "<p class=\"note\">No payment matches.</p>" : """
                <table class="results"><thead><tr><th>Created</th><th>Payment</th><th>Merchant reference</th><th>Status</th><th>Amount</th>\
                <th>Method</th><th>Gateway</th><th>Customer</th></tr></thead><tbody>\(rows)</tbody></table>\(next)
                """
        } ?? .empty
        return respond(layout("Payments", session: session, """
            \(notice)<form method="get" action="/payments" class="filters">\(merchantPicker(merchants, selected: merchantID))
            \(choice("status", "Status", PaymentStatus.known.map(\.rawValue)))\
            \(choice("gateway", "Gateway", merchant.gateways.keys.map(\.rawValue).sorted()))\
            \(text("method", "Method", "card"))\(text("currency", "Currency", "USD"))\
            \(text("amountMin", "Amount from (minor units)"))\(text("amountMax", "Amount to (minor units)"))\
            \(text("merchantReference", "Merchant reference"))\(text("customerEmail", "Customer e-mail"))\
            \(text("createdFrom", "Created from", "2026-01-31T00:00:00Z"))\(text("createdTo", "Created before", "2026-02-01T00:00:00Z"))\
            <button type="submit">Search</button></form>
            <form method="get" action="/payments" class="filters"><input type="hidden" name="merchant" value="\(merchantID)">\
            <label>Payment id <input name="id" required></label><button type="submit">Open</button></form>
            \(results)
            """))
    }

    static func money(_ money: Money?) -> String { money.map(\.description) ?? "—" }

    static func payment(_ history: PaymentHistory, merchant: MerchantRuntime, session: ConsoleSessions.Session) -> Response {
        let view = history.view
        let payment = history.payment
        let merchantID = merchant.configuration.id
        func confirm(_ action: String, target: String? = nil) -> String {
            HTML.url("/confirm", [("merchant", merchantID), ("payment", view.id), ("action", action), ("target", target)])
        }
        let holds = payment.attempts.contains { $0.status == .authorized || $0.status.moneyMoved }
        let attempts: [HTML] = payment.attempts.map { attempt in
            let inquire: HTML = !attempt.status.isFinal || attempt.status.isNegative
                ? "<a class=\"action\" href=\"\(confirm("inquire", target: attempt.reference.rawValue))\">Inquire now</a>" : .empty
            return """
                <tr><td>\(attempt.sequence)</td><td>\(attempt.gateway.rawValue)</td><td class="mono">\(attempt.reference.rawValue)</td>\
                <td>\(badge(attempt.status.rawValue))</td><td>\(attempt.gatewayCode ?? "")</td><td class="mono">\(attempt.gatewayReference ?? "")</td>\
                <td>\(time(attempt.createdAt))</td><td>\(attempt.inquiryCount)</td><td>\(inquire)</td></tr>
                """
        }
        let operations: [HTML] = payment.operations.map { operation in
            """
            <tr><td>\(operation.reference.kind.rawValue)</td><td class="mono">\(operation.reference.rawValue)</td><td>\(operation.amount.description)</td>\
            <td>\(badge(operation.status.rawValue))</td><td>\(operation.gatewayCode ?? "")</td><td>\(time(operation.createdAt))</td></tr>
            """
        }
        let events: [HTML] = history.events.map { event in
            """
            <tr><td>\(event.sequence)</td><td>\(event.type.rawValue)</td><td class="mono">\(event.id)</td><td>\(badge(event.state.rawValue))</td>\
            <td>\(event.attemptCount)</td><td>\(time(event.createdAt))</td>\
            <td><a class="action" href="\(confirm("redeliver", target: event.id))">Redeliver</a></td></tr>
            """
        }
        let timeline: [HTML] = history.timeline.map { entry in
            let verdict: HTML = entry.verdict.map { badge($0) } ?? .empty
            let more: HTML = entry.more.map { "<details><summary>Bodies (redacted)</summary><pre>\($0)</pre></details>" } ?? .empty
            return """
                <li class="k-\(entry.kind.rawValue)"><time>\(time(entry.at))</time><span class="kind">\(entry.kind.rawValue)</span>\
                <span class="title">\(entry.title)</span> \(verdict)<div class="detail">\(entry.detail)</div>\(more)</li>
                """
        }
        var actions: [HTML] = []
        if history.leftToCapture > 0 { actions.append("<a class=\"action\" href=\"\(confirm("capture"))\">Capture</a>") }
        if history.voidable { actions.append("<a class=\"action\" href=\"\(confirm("void"))\">Void</a>") }
        if history.leftToRefund > 0 { actions.append("<a class=\"action\" href=\"\(confirm("refund"))\">Refund</a>") }
        let customer = view.customer
        return respond(layout("Payment \(view.id)", session: session, """
            <section class="summary"><dl>
            <dt>Status</dt><dd>\(badge(view.status.rawValue))</dd>
            <dt>Amount</dt><dd>\(view.amount.description)</dd>
            <dt>Merchant</dt><dd>\(merchantID)</dd>
            <dt>Merchant reference</dt><dd class="mono">\(view.merchantReference)</dd>
            <dt>Method</dt><dd>\(view.method.rawValue)</dd>
            <dt>Customer</dt><dd>\(customer?.email ?? "—")</dd>
            <dt>Description</dt><dd>\(view.description ?? "—")</dd>
            \((view.metadata ?? [:]).sorted { $0.key < $1.key }.map { key, value in HTML("<dt>Metadata \(key)</dt><dd>\(value)</dd>") })
            <dt>Created</dt><dd>\(time(view.createdAt))</dd>
            </dl>
            <dl class="totals"><dt>Authorized</dt><dd>\(holds ? view.amount.description : "—")</dd>
            <dt>Captured</dt><dd>\(money(view.amountCaptured))</dd><dt>Refunded</dt><dd>\(money(view.amountRefunded))</dd></dl>
            <p class="actions">\(actions)</p></section>
            <h2>Attempts</h2>
            <table><thead><tr><th>#</th><th>Gateway</th><th>Reference</th><th>Status</th><th>Gateway code</th><th>Gateway reference</th>\
            <th>Created</th><th>Inquiries</th><th></th></tr></thead><tbody>\(attempts)</tbody></table>
            \(operations.isEmpty ? HTML.empty : """
            <h2>Operations</h2><table><thead><tr><th>Kind</th><th>Reference</th><th>Amount</th><th>Status</th><th>Gateway code</th><th>Created</th>\
            </tr></thead><tbody>\(operations)</tbody></table>
            """)
            <h2 id="timeline">Timeline</h2><ol class="timeline">\(timeline)</ol>
            <h2>Events</h2>
            <table><thead><tr><th>#</th><th>Type</th><th>Id</th><th>Delivery</th><th>Tries</th><th>Created</th><th></th></tr></thead>\
            <tbody>\(events)</tbody></table>
            """))
    }

    static func confirm(_ action: Console.ActionRequest, history: PaymentHistory, key: String, session: ConsoleSessions.Session) -> Response {
        let view = history.view
        let what: HTML
        var amount: HTML = .empty
        switch action.action {
        case .inquire: what = "Ask the gateway now for the status of attempt <span class=\"mono\">\(action.target)</span> and apply its answer."
        case .redeliver: what = "Make event <span class=\"mono\">\(action.target)</span> pending again: the delivery service posts it on its next pass."
        case .capture, .void, .refund:
            let verb = action.action.rawValue
            what = "\(verb.capitalized) payment \(view.id) of \(view.amount.description) at its gateway. This moves money; a second click of the same form does it once."
            if action.action != .void {
                let left = action.action == .capture ? history.leftToCapture : history.leftToRefund
                let suggested = Money(minorUnits: left, currency: view.amount.currency).decimalString
                amount = "<label>Amount (\(view.amount.currency.code)) <input name=\"amount\" value=\"\(suggested)\" inputmode=\"decimal\"></label>"
            }
        }
        return respond(layout("Confirm: \(action.action.rawValue)", session: session, """
            <p>\(what)</p>
            <form method="post" action="/actions" class="confirm">
            <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="action" value="\(action.action.rawValue)">
            <input type="hidden" name="merchant" value="\(action.merchant.configuration.id)"><input type="hidden" name="payment" value="\(view.id)">
            <input type="hidden" name="target" value="\(action.target)"><input type="hidden" name="key" value="\(key)">
            \(amount)<button type="submit" class="danger">Confirm \(action.action.rawValue)</button>
            <a href="\(href: "/payments/\(view.id)", [("merchant", action.merchant.configuration.id)])">Cancel</a></form>
            """))
    }

    // MARK: Gateways

    struct Window {
        var name: String
        var counts: [AttemptCount]

        var approved: Int { counts.filter { $0.status == .authorized || $0.status.moneyMoved }.reduce(0) { $0 + $1.count } }
        var declined: Int { counts.filter { $0.status.isNegative }.reduce(0) { $0 + $1.count } }
        var open: Int { counts.reduce(0) { $0 + $1.count } - approved - declined }
        /// Approved among the attempts that ended; nil before any ended.
        var rate: Double? { approved + declined == 0 ? nil : Double(approved) / Double(approved + declined) }
    }

    struct GatewayRow {
        var merchant: String
        var gateway: GatewayID
        var tier: HealthTier
        var health: String
        var windows: [Window]
        var latency: GatewayLatencies.Summary?
        var outcomes: [AttemptCount]
    }

    static func percent(_ rate: Double?) -> String { rate.map { "\(Int(($0 * 100).rounded())) %" } ?? "—" }

    static func gateways(_ rows: [GatewayRow], session: ConsoleSessions.Session) -> Response {
        let tiers: [HealthTier: String] = [.healthy: "healthy", .degraded: "degraded", .open: "circuit open"]
        let body: [HTML] = rows.map { row in
            let windows: [HTML] = row.windows.map { window in
                "<td>\(percent(window.rate))<div class=\"detail\">\(window.approved) approved, \(window.declined) not, \(window.open) open</div></td>"
            }
            let latency: HTML = row.latency.map { l in
                "<td>\(String(format: "%.0f", l.p50)) / \(String(format: "%.0f", l.p90)) / \(String(format: "%.0f", l.p99)) ms<div class=\"detail\">last \(l.count) requests</div></td>"
            } ?? "<td>—</td>"
            return """
                <tr><td>\(row.merchant)</td><td>\(row.gateway.rawValue)</td><td>\(badge(tiers[row.tier] ?? "healthy"))<div class="detail">\(row.health)</div></td>\
                \(windows)\(latency)</tr>
                """
        }
        let outcomes: [HTML] = rows.flatMap { row in
            row.outcomes.prefix(12).map { count in
                "<tr><td>\(row.merchant)</td><td>\(row.gateway.rawValue)</td><td>\(badge(count.status.rawValue))</td><td>\(count.gatewayCode ?? "—")</td><td>\(count.count)</td></tr>"
            }
        }
        return respond(layout("Gateways", session: session, """
            <p class="note">Success rates are attempts approved (authorized or paid) among those that ended, from the store (every instance's \
            attempts); health, the circuit and latencies are this instance's.</p>
            \(chart(rows))
            <table><thead><tr><th>Merchant</th><th>Gateway</th><th>Health</th><th>15 min</th><th>1 h</th><th>24 h</th><th>Latency p50 / p90 / p99</th>\
            </tr></thead><tbody>\(body)</tbody></table>
            <h2>Outcomes, last 24 h</h2>
            <table><thead><tr><th>Merchant</th><th>Gateway</th><th>Status</th><th>Gateway code</th><th>Attempts</th></tr></thead><tbody>\(outcomes)</tbody></table>
            """))
    }

    /// The last hour's success rate of each gateway as a bar (inline SVG: no script, no style attribute).
    static func chart(_ rows: [GatewayRow]) -> HTML {
        guard !rows.isEmpty else { return .empty }
        let height = 28 * rows.count + 10
        let bars: [HTML] = rows.enumerated().map { index, row in
            let rate = row.windows.count > 1 ? row.windows[1].rate : nil
            let width = Int(((rate ?? 0) * 400).rounded())
            let y = 5 + index * 28
            return """
                <text x="0" y="\(y + 17)" font-size="13">\(row.merchant) · \(row.gateway.rawValue)</text>\
                <rect x="220" y="\(y)" width="400" height="22" fill="#eef1f4"></rect>\
                <rect x="220" y="\(y)" width="\(width)" height="22" fill="\(rate.map { $0 >= 0.8 ? "#2e7d32" : "#c62828" } ?? "#9e9e9e")"></rect>\
                <text x="630" y="\(y + 17)" font-size="13">\(percent(rate))</text>
                """
        }
        return "<figure><svg class=\"chart\" width=\"700\" height=\"\(height)\" role=\"img\" aria-label=\"Success rate in the last hour\">\(bars)</svg><figcaption>Success rate, last hour</figcaption></figure>"
    }

    // MARK: Logs

    static func reconciliation(_ entries: [ReconciliationEntry], session: ConsoleSessions.Session) -> Response {
        let rows: [HTML] = entries.map { entry in
            """
            <tr><td>\(time(entry.at))</td><td>\(entry.merchantID)</td><td>\(entry.gateway.rawValue)</td>\
            <td><a class="mono" href="\(href: "/attempts/\(entry.attempt.rawValue)", [("merchant", entry.merchantID)])">\(entry.attempt.rawValue)</a></td>\
            <td>\(badge(entry.action))</td><td>\(entry.statusBefore.rawValue) → \(entry.statusAfter.rawValue)</td><td>\(entry.reason)</td></tr>
            """
        }
        return respond(layout("Reconciliation", session: session, """
            <p class="note">The last 200 inquiries: the reconciler's, and those asked for by the API, the app or an operator.</p>
            <table><thead><tr><th>At</th><th>Merchant</th><th>Gateway</th><th>Attempt</th><th>Action</th><th>Status</th><th>Reason</th></tr></thead>\
            <tbody>\(rows)</tbody></table>
            """))
    }

    static func quarantine(_ entries: [(String, QuarantinedNotification)], session: ConsoleSessions.Session) -> Response {
        let rows: [HTML] = entries.map { merchant, entry in
            """
            <tr><td>\(time(entry.receivedAt))</td><td>\(merchant)</td><td>\(entry.gateway.rawValue)</td><td class="mono">\(entry.attempt.rawValue)</td>\
            <td class="mono">\(entry.eventID)</td><td>\(entry.reportedStatus.rawValue)</td><td>\(entry.body.count) bytes</td></tr>
            """
        }
        return respond(layout("Quarantine", session: session, """
            <p class="note">Verified notifications about attempts their merchant does not have: acknowledged, applied to nothing, kept here. \
            Bodies stay in the store.</p>
            <table><thead><tr><th>Received</th><th>Merchant</th><th>Gateway</th><th>Attempt</th><th>Event</th><th>Reported</th><th>Body</th></tr></thead>\
            <tbody>\(rows)</tbody></table>
            """))
    }

    static func audit(_ entries: [AuditEntry], session: ConsoleSessions.Session) -> Response {
        let rows: [HTML] = entries.map { entry in
            let payment: HTML = entry.paymentID.map { id in
                "<a class=\"mono\" href=\"\(href: "/payments/\(id)", [("merchant", entry.merchantID)])\">\(id)</a>"
            } ?? .empty
            return """
                <tr><td>\(time(entry.at))</td><td>\(entry.operatorName)</td><td>\(entry.action)</td><td>\(entry.merchantID)</td><td>\(payment)</td>\
                <td class="mono">\(entry.target)</td><td>\(badge(entry.outcome))</td><td>\(entry.detail)</td></tr>
                """
        }
        return respond(layout("Audit", session: session, """
            <p class="note">Every action taken in the console, by whom, and what came of it (the last 200).</p>
            <table><thead><tr><th>At</th><th>Operator</th><th>Action</th><th>Merchant</th><th>Payment</th><th>Target</th><th>Outcome</th>\
            <th>Detail</th></tr></thead><tbody>\(rows)</tbody></table>
            """))
    }

    static let stylesheet = """
        *{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d2329;background:#f6f7f9}
        header{display:flex;align-items:center;gap:24px;padding:10px 24px;background:#1d2329;color:#fff}
        header a{color:#dfe6ee;text-decoration:none;margin-right:16px}header a:hover{color:#fff}.brand{font-weight:600;color:#fff}
        header nav{flex:1}.signout{display:flex;gap:10px;align-items:center}.who{color:#aab4bf}
        main{padding:16px 24px;max-width:1280px}h1{font-size:20px;margin:8px 0 16px}h2{font-size:16px;margin:24px 0 8px}
        table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde2e7}
        th,td{padding:6px 8px;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}th{background:#f0f2f5;font-weight:600}
        .mono{font-family:"DejaVu Sans Mono",ui-monospace,monospace;font-size:12px}.detail{color:#5b6670;font-size:12px}
        .note{color:#5b6670}.message{padding:10px 12px;background:#fff4e5;border:1px solid #f0c27b}
        .badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;background:#e3e7eb}
        .b-paid,.b-applied,.b-answered,.b-delivered,.b-settled,.b-succeeded,.b-ok,.b-healthy,.b-authorized{background:#d7f0da;color:#1b5e20}
        .b-failed,.b-stale,.b-retry,.b-circuit_open,.b-inquiry_failed,.b-cancelled,.b-expired{background:#fbe0e0;color:#8e1c1c}
        .b-pending,.b-needs_inquiry,.b-duplicate,.b-unchanged,.b-degraded,.b-unknown{background:#fff1cc;color:#6d4c00}
        .summary{display:flex;gap:32px;flex-wrap:wrap;background:#fff;border:1px solid #dde2e7;padding:12px 16px}
        dl{display:grid;grid-template-columns:max-content auto;gap:4px 16px;margin:0}dt{color:#5b6670}dd{margin:0}
        .actions{flex-basis:100%;margin:4px 0 0}a.action{display:inline-block;margin-right:8px;padding:3px 10px;border:1px solid #4a6fa5;border-radius:4px;color:#274b7a;text-decoration:none;background:#fff}
        ol.timeline{list-style:none;padding:0;margin:0;border-left:3px solid #c9d1d9}
        ol.timeline li{position:relative;margin:0 0 8px 0;padding:6px 12px;background:#fff;border:1px solid #e3e7eb;margin-left:12px}
        ol.timeline time{color:#5b6670;font-size:12px;margin-right:10px}.kind{display:inline-block;min-width:84px;font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:#4a6fa5}
        .k-notification .kind{color:#6a1b9a}.k-exchange .kind{color:#37474f}details{margin-top:4px}pre{white-space:pre-wrap;word-break:break-all;font-size:12px;background:#f6f7f9;padding:6px;margin:4px 0 0}.k-inquiry .kind{color:#00695c}.k-delivery .kind,.k-event .kind{color:#795548}.k-audit .kind{color:#c62828}
        form.filters,form.login,form.confirm{display:flex;gap:12px;align-items:end;flex-wrap:wrap;background:#fff;border:1px solid #dde2e7;padding:12px 16px;margin-bottom:16px}
        label{display:flex;flex-direction:column;font-size:12px;color:#5b6670;gap:3px}input,select{font:inherit;padding:4px 6px;border:1px solid #c3cbd3;border-radius:3px}
        button{font:inherit;padding:5px 14px;border:1px solid #274b7a;background:#274b7a;color:#fff;border-radius:4px;cursor:pointer}
        button.danger{background:#b23b3b;border-color:#b23b3b}.signout button{background:transparent;border-color:#7f8b96}
        .chart{background:#fff;border:1px solid #dde2e7}figure{margin:0 0 16px}figcaption{color:#5b6670;font-size:12px}
        .pages{margin:12px 0}.pages a{margin-right:12px}
        """
}
