// Sources/TillSandbox/Toy/ToyEmulator.swift in a real module: Toy Pay's side, written from its API
// document (ToyFixtures.swift). It shares no code with the module: its own wire types, its own signer.

import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import TillSandbox

/// Toy Pay, emulated: orders, the payment page, signed notifications, inquiry, faults and a ledger.
public actor ToyEmulator: SandboxEmulator {
    /// One merchant account.
    public struct Account: Sendable, Hashable {
        public var keyID: String
        public var secret: String
        /// Where notifications go for orders that name no `notify_url`.
        public var webhookURL: URL?

        public init(keyID: String, secret: String, webhookURL: URL? = nil) {
            self.keyID = keyID
            self.secret = secret
            self.webhookURL = webhookURL
        }
    }

    /// When notifications leave.
    public enum NotificationMode: Sendable {
        /// Before the payment page sends the customer back (delivered and answered first).
        case immediate
        /// Kept until ``releaseNotifications()``.
        case held
    }

    /// What the next order request meets.
    public enum Fault: Sendable {
        /// 503 `unavailable`; nothing is created.
        case unavailable
        /// The order is created, then the connection is closed without an answer.
        case dropAfterCreating
    }

    /// One order, as Toy Pay keeps it.
    public struct Order: Sendable, Hashable {
        public var id: String
        public var keyID: String
        public var reference: String
        public var amount: Int64
        public var currency: String
        public var status: String
        public var returnURL: String
        public var notifyURL: String?
    }

    /// One notification delivery.
    public struct Delivery: Sendable, Hashable {
        public var order: String
        public var status: String
        /// The merchant's HTTP answer, or nil when it could not be reached (or there was nowhere to send).
        public var httpStatus: Int?
    }

    struct Notification: Sendable {
        var order: String
        var status: String
        var url: URL?
        var body: Data
        var signature: String
    }

    public nonisolated let name = "toy"
    private var accounts: [Account]
    private var mode: NotificationMode
    private var faults: [Fault] = []
    private var outbox: [Notification] = []
    public private(set) var orders: [Order] = []
    public private(set) var deliveries: [Delivery] = []
    /// How many `GET /v1/orders/{reference}` were answered.
    public private(set) var inquiries = 0

    public init(accounts: [Account], notifications: NotificationMode = .immediate) {
        self.accounts = accounts
        self.mode = notifications
    }

    /// Orders whose money moved.
    public var ledger: [Order] { orders.filter { $0.status == "paid" } }

    public func setWebhookURL(_ url: URL?, keyID: String) {
        for index in accounts.indices where accounts[index].keyID == keyID { accounts[index].webhookURL = url }
    }

    public func setNotificationMode(_ mode: NotificationMode) { self.mode = mode }

    public func inject(_ fault: Fault) { faults.append(fault) }

    /// Sends the held notifications, in order.
    public func releaseNotifications() async {
        let held = outbox
        outbox.removeAll()
        for notification in held { await deliver(notification) }
    }

    // MARK: SandboxEmulator

    public nonisolated func mount(_ mount: SandboxMount) {
        let router = mount.router
        router.post("/toy/v1/orders") { request, context -> Response in
            let body = await Self.read(request)
            // The page is on this server, at the address the caller used.
            let base = URL(string: "http://\(request.head.authority ?? "127.0.0.1")") ?? URL(fileURLWithPath: "/")
            let (answer, drop) = await self.createOrder(path: request.uri.path, headers: Self.headers(request), body: body,
                                                        sandbox: base)
            if drop { context.closeConnection() }
            return answer
        }
        router.get("/toy/v1/orders/:reference") { request, context -> Response in
            await self.order(reference: context.parameters.get("reference") ?? "", path: request.uri.path, headers: Self.headers(request))
        }
        router.get("/toy/pay/:order") { _, context -> Response in
            await self.page(order: context.parameters.get("order") ?? "")
        }
        router.post("/toy/pay/:order") { request, context -> Response in
            let body = await Self.read(request)
            return await self.complete(order: context.parameters.get("order") ?? "", form: body)
        }
    }

    public func sandboxAccounts(in sandbox: URL) async -> [SandboxAccount] {
        accounts.map { account in
            SandboxAccount(module: "toy", settings: ["base_url": moduleBaseURL(in: sandbox).absoluteString],
                           credentials: ["key_id": account.keyID, "secret_key": account.secret],
                           summary: "key id \"\(account.keyID)\", secret key \"\(account.secret)\"")
        }
    }

    // MARK: API

    private func createOrder(path: String, headers: [String: String], body: Data?, sandbox: URL) async -> (Response, Bool) {
        guard let body else { return (Self.error(400, "invalid_request", "body: too large"), false) }
        let account: Account
        switch authenticate(method: "POST", path: path, headers: headers, body: body) {
        case .success(let found): account = found
        case .failure(let refusal): return (refusal.response, false)
        }
        if let fault = faults.first, fault == .unavailable {
            faults.removeFirst()
            return (Self.error(503, "unavailable", "try again"), false)
        }
        let request: OrderRequest
        do {
            request = try JSONDecoder().decode(OrderRequest.self, from: body)
        } catch DecodingError.typeMismatch(_, let context) {
            return (Self.error(400, "invalid_request", "\(context.codingPath.last?.stringValue ?? "body"): wrong type"), false)
        } catch {
            return (Self.error(400, "invalid_request", "body: not a JSON object"), false)
        }
        guard let reference = request.reference, (1...64).contains(reference.count) else {
            return (Self.error(400, "invalid_request", "reference: 1 to 64 characters"), false)
        }
        guard let amount = request.amount, amount > 0 else {
            return (Self.error(400, "invalid_request", "amount: a positive integer"), false)
        }
        guard let currency = request.currency, currency.count == 3, currency.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            return (Self.error(400, "invalid_request", "currency: an ISO 4217 code"), false)
        }
        guard let returnURL = request.returnURL, URL(string: returnURL)?.scheme != nil else {
            return (Self.error(400, "invalid_request", "return_url: an absolute URL"), false)
        }
        let notifyURL = request.notifyURL
        if let notifyURL, URL(string: notifyURL)?.scheme == nil {
            return (Self.error(400, "invalid_request", "notify_url: an absolute URL"), false)
        }
        guard !orders.contains(where: { $0.keyID == account.keyID && $0.reference == reference }) else {
            return (Self.error(409, "duplicate_reference", "reference: already used"), false)
        }
        let order = Order(id: "ord_\(orders.count + 1)", keyID: account.keyID, reference: reference, amount: amount, currency: currency,
                          status: "open", returnURL: returnURL, notifyURL: notifyURL)
        orders.append(order)
        if let fault = faults.first, fault == .dropAfterCreating {
            faults.removeFirst()
            return (Self.error(500, "dropped", ""), true)
        }
        return (Self.json(Self.view(order, sandbox: sandbox), status: 201), false)
    }

    private func order(reference: String, path: String, headers: [String: String]) async -> Response {
        let account: Account
        switch authenticate(method: "GET", path: path, headers: headers, body: Data()) {
        case .success(let found): account = found
        case .failure(let refusal): return refusal.response
        }
        inquiries += 1
        guard let order = orders.first(where: { $0.keyID == account.keyID && $0.reference == reference }) else {
            return Self.error(404, "not_found", "no order with this reference")
        }
        // The pay URL's host is not needed to answer an inquiry; the path is what Toy Pay shows.
        return Self.json(Self.view(order, sandbox: nil), status: 200)
    }

    /// `POST /v1/orders`, as Toy Pay reads it: every field optional here, checked one by one.
    struct OrderRequest: Decodable {
        var reference: String?
        var amount: Int64?
        var currency: String?
        var returnURL: String?
        var notifyURL: String?

        enum CodingKeys: String, CodingKey {
            case reference, amount, currency
            case returnURL = "return_url"
            case notifyURL = "notify_url"
        }
    }

    struct Refusal: Error {
        let response: Response
    }

    private func authenticate(method: String, path: String, headers: [String: String], body: Data) -> Result<Account, Refusal> {
        guard let key = headers["toy-key"], let account = accounts.first(where: { $0.keyID == key }) else {
            return .failure(Refusal(response: Self.error(401, "unknown_key", "Toy-Key")))
        }
        var message = Data("\(method)\n\(path)\n".utf8)
        message.append(body)
        guard let given = headers["toy-signature"], Self.same(given, Self.signature(secret: account.secret, message: message)) else {
            return .failure(Refusal(response: Self.error(401, "bad_signature", "Toy-Signature")))
        }
        return .success(account)
    }

    // MARK: Payment page

    private func page(order id: String) -> Response {
        guard let order = orders.first(where: { $0.id == id }) else { return Self.text(404, "no such order") }
        let html = """
            <!doctype html><title>Toy Pay</title>
            <p>Pay \(order.amount) (minor units) \(order.currency), order \(order.id).</p>
            <form method="post"><button name="choice" value="pay">Pay</button>
            <button name="choice" value="decline">Decline</button><button name="choice" value="cancel">Cancel</button></form>
            """
        return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    private func complete(order id: String, form: Data?) async -> Response {
        guard let index = orders.firstIndex(where: { $0.id == id }) else { return Self.text(404, "no such order") }
        let fields = String(decoding: form ?? Data(), as: UTF8.self).split(separator: "&")
        let choices = fields.filter { $0.hasPrefix("choice=") }.map { $0.dropFirst("choice=".count) }
        let status: String
        switch choices.count == 1 ? String(choices[0]) : "" {
        case "pay": status = "paid"
        case "decline": status = "declined"
        case "cancel": status = "cancelled"
        default: return Self.text(400, "choose pay, decline or cancel")
        }
        guard orders[index].status == "open" else { return Self.text(409, "the order is \(orders[index].status)") }
        orders[index].status = status
        let order = orders[index]
        let notification = notification(for: order)
        switch mode {
        case .immediate: await deliver(notification)
        case .held: outbox.append(notification)
        }
        guard var back = URLComponents(string: order.returnURL) else { return Self.text(500, "bad return URL") }
        back.queryItems = (back.queryItems ?? []) + [URLQueryItem(name: "toy_order", value: order.id),
                                                     URLQueryItem(name: "toy_result", value: status)]
        return Response(status: .seeOther, headers: [.location: back.url?.absoluteString ?? order.returnURL])
    }

    // MARK: Notifications

    private func notification(for order: Order) -> Notification {
        let object: [String: Any] = ["amount": order.amount, "currency": order.currency, "event": "evt_\(order.id)_\(order.status)",
                                     "order": order.id, "reference": order.reference, "status": order.status]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        let secret = accounts.first { $0.keyID == order.keyID }?.secret ?? ""
        let url = (order.notifyURL.flatMap(URL.init(string:))) ?? accounts.first { $0.keyID == order.keyID }?.webhookURL
        return Notification(order: order.id, status: order.status, url: url, body: body,
                            signature: Self.signature(secret: secret, message: body))
    }

    private func deliver(_ notification: Notification) async {
        guard let url = notification.url else {
            deliveries.append(Delivery(order: notification.order, status: notification.status, httpStatus: nil))
            return
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = notification.body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(notification.signature, forHTTPHeaderField: "Toy-Signature")
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let status = (try? await session.data(for: request)).flatMap { ($0.1 as? HTTPURLResponse)?.statusCode }
        deliveries.append(Delivery(order: notification.order, status: notification.status, httpStatus: status))
    }

    // MARK: Wire

    /// Lower-case hex HMAC-SHA256 of `message` keyed with `secret`.
    static func signature(secret: String, message: Data) -> String {
        HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    /// Compares two signatures without stopping at the first difference.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.lowercased().utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func view(_ order: Order, sandbox: URL?) -> [String: Any] {
        let page = sandbox.map { $0.appendingPathComponent("toy/pay/\(order.id)").absoluteString } ?? "/toy/pay/\(order.id)"
        return ["order": order.id, "reference": order.reference, "amount": order.amount, "currency": order.currency,
                "status": order.status, "pay_url": page]
    }

    private static func json(_ object: [String: Any], status: Int) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Response(status: .init(code: status), headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }

    private static func error(_ status: Int, _ code: String, _ message: String) -> Response {
        json(["error": ["code": code, "message": message]], status: status)
    }

    private static func text(_ status: Int, _ text: String) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    private static func headers(_ request: Request) -> [String: String] {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        return headers
    }

    private static func read(_ request: Request) async -> Data? {
        guard let buffer = try? await request.body.collect(upTo: 64 * 1024) else { return nil }
        return Data(buffer.readableBytesView)
    }
}
