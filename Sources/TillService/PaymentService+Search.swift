import Foundation
import Till
import TillOrchestration

/// Which payments `GET /v1/payments` (and its export, and the console's search) asks for, as its query string gives
/// them: each parameter known, given once, and checked, a mistake naming its parameter.
public struct PaymentSearchRequest: Sendable, Hashable {
    /// The filters and paging parameters, by name (``parameters``).
    public private(set) var values: [String: String] = [:]

    /// Every parameter the search takes.
    public static let parameters = ["status", "gateway", "method", "currency", "amountMin", "amountMax", "merchantReference", "customerEmail",
                                     "createdFrom", "createdTo", "limit", "cursor"]
    /// The largest page.
    public static let maximumLimit = 100
    /// The page when `limit` is absent.
    public static let defaultLimit = 20

    /// A request with no parameter: the merchant's newest ``defaultLimit`` payments.
    public init() {}

    /// The request a query string's pairs make. An unknown name (a misspelt filter would otherwise be ignored, and every
    /// payment listed as if it had been obeyed) or a name given twice is refused by name; `accepting` narrows the names
    /// (the export takes no `limit` or `cursor`).
    public init(_ pairs: some Sequence<(String, String)>, accepting: [String] = PaymentSearchRequest.parameters) throws {
        for (name, value) in pairs {
            if name.isEmpty && value.isEmpty { continue }   // `?` alone, or `&&`
            guard accepting.contains(name) else {
                throw ServiceError(status: .badRequest, code: "invalid_field", message: "not a parameter of this search (\(accepting.joined(separator: ", ")))",
                                   field: CheckoutError.printable(name))
            }
            guard values[name] == nil else { throw ServiceError(status: .badRequest, code: "duplicate_field", message: "given twice", field: name) }
            values[name] = value
        }
    }

    /// Sets one parameter (`nil` removes it).
    public subscript(name: String) -> String? {
        get { values[name] }
        set { values[name] = newValue }
    }

    /// One or more of the known statuses, separated by commas.
    public var status: String? { get { values["status"] } set { values["status"] = newValue } }
    /// A gateway id: a payment matches when any of its attempts went to that gateway.
    public var gateway: String? { get { values["gateway"] } set { values["gateway"] = newValue } }
    /// A payment method, such as `card`.
    public var method: String? { get { values["method"] } set { values["method"] = newValue } }
    /// An ISO 4217 code, in any case.
    public var currency: String? { get { values["currency"] } set { values["currency"] = newValue } }
    /// The smallest amount, in minor units, inclusive.
    public var amountMin: String? { get { values["amountMin"] } set { values["amountMin"] = newValue } }
    /// The largest amount, in minor units, inclusive.
    public var amountMax: String? { get { values["amountMax"] } set { values["amountMax"] = newValue } }
    /// The merchant's reference, exactly.
    public var merchantReference: String? { get { values["merchantReference"] } set { values["merchantReference"] = newValue } }
    /// The customer's e-mail, without regard to case.
    public var customerEmail: String? { get { values["customerEmail"] } set { values["customerEmail"] = newValue } }
    /// The earliest creation time, ISO 8601, inclusive.
    public var createdFrom: String? { get { values["createdFrom"] } set { values["createdFrom"] = newValue } }
    /// The creation time the payments are older than, ISO 8601, exclusive.
    public var createdTo: String? { get { values["createdTo"] } set { values["createdTo"] = newValue } }
    /// The page's size, 1 to ``maximumLimit`` (``defaultLimit`` when absent).
    public var limit: String? { get { values["limit"] } set { values["limit"] = newValue } }
    /// The previous page's `nextCursor`.
    public var cursor: String? { get { values["cursor"] } set { values["cursor"] = newValue } }

    /// The store's query, or an error naming the parameter at fault.
    public func query() throws -> PaymentSearchQuery {
        func invalid(_ field: String, _ message: String) -> ServiceError {
            ServiceError(status: .badRequest, code: "invalid_field", message: message, field: field)
        }
        var query = PaymentSearchQuery()
        if let status = values["status"] {
            let names = status.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            let known = Set(PaymentStatus.known.map(\.rawValue))
            guard !names.isEmpty, names.count <= known.count, names.allSatisfy(known.contains) else {
                throw invalid("status", "one or more of \(PaymentStatus.known.map(\.rawValue).joined(separator: ", ")), separated by commas")
            }
            query.statuses = Array(Set(names.map { PaymentStatus(rawValue: $0) })).sorted { $0.rawValue < $1.rawValue }
        }
        if let gateway = values["gateway"] {
            guard (1...64).contains(gateway.utf8.count), gateway.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw invalid("gateway", "a gateway id")
            }
            query.gateway = GatewayID(rawValue: gateway)
        }
        if let method = values["method"] {
            guard (1...64).contains(method.utf8.count), method.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                throw invalid("method", "a payment method such as card")
            }
            query.method = method
        }
        if let currency = values["currency"] {
            guard let known = Currency.lookup(currency.uppercased()), currency.count == 3 else { throw invalid("currency", "an ISO 4217 code such as USD") }
            query.currency = known.code
        }
        for name in ["amountMin", "amountMax"] {
            guard let text = values[name] else { continue }
            guard let amount = Int64(text), amount >= 0, text.allSatisfy(\.isNumber) else {
                throw invalid(name, "an amount in minor units (2500 is 25.00 USD), 0 or more")
            }
            if name == "amountMin" { query.amountMin = amount } else { query.amountMax = amount }
        }
        if let minimum = query.amountMin, let maximum = query.amountMax, minimum > maximum {
            throw invalid("amountMax", "at least amountMin")
        }
        if let reference = values["merchantReference"] {
            // Characters as the document's maxLength counts them: Unicode scalars (as every limit on a body counts).
            guard (1...128).contains(reference.unicodeScalars.count) else { throw invalid("merchantReference", "1 to 128 characters") }
            query.merchantReference = reference
        }
        if let email = values["customerEmail"] {
            guard (3...254).contains(email.unicodeScalars.count), email.contains("@") else { throw invalid("customerEmail", "an e-mail address") }
            query.customerEmail = email.lowercased()
        }
        for name in ["createdFrom", "createdTo"] {
            guard let text = values[name] else { continue }
            guard let date = Self.date(text) else { throw invalid(name, "a time in ISO 8601, such as 2026-01-31T12:00:00Z") }
            if name == "createdFrom" { query.createdFrom = date } else { query.createdTo = date }
        }
        if let limit = values["limit"] {
            guard let parsed = Int(limit), (1...Self.maximumLimit).contains(parsed) else { throw invalid("limit", "1 to \(Self.maximumLimit)") }
            query.limit = parsed
        }
        if let cursor = values["cursor"] {
            guard let after = PaymentSearchQuery.Position(cursor: cursor) else { throw invalid("cursor", "the nextCursor of a previous page") }
            query.after = after
        }
        return query
    }

    /// An ISO 8601 time, with or without fractions of a second.
    static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        return RFC3339.date(text)
    }
}

/// A search of one merchant's payments, as the stores run it: every filter given must match (AND); newest first,
/// by (creation time, id), from after `after`.
public struct PaymentSearchQuery: Sendable, Hashable {
    /// Where a page ended: the last payment's creation time (milliseconds) and id.
    public struct Position: Sendable, Hashable {
        /// The payment's creation time, in milliseconds since 1970.
        public var createdMillis: Int64
        /// The payment's id.
        public var id: String

        /// The position just after the payment created at `createdMillis` with `id`.
        public init(createdMillis: Int64, id: String) {
            self.createdMillis = createdMillis
            self.id = id
        }

        /// The opaque cursor a page hands out.
        public var cursor: String { "p\(createdMillis).\(id)" }

        init?(cursor: String) {
            guard cursor.utf8.count <= 160, cursor.hasPrefix("p"), let dot = cursor.firstIndex(of: ".") else { return nil }
            let millis = cursor[cursor.index(after: cursor.startIndex)..<dot]
            let id = cursor[cursor.index(after: dot)...]
            guard let parsed = Int64(millis), parsed >= 0, !id.isEmpty,
                  id.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
            createdMillis = parsed
            self.id = String(id)
        }
    }

    /// Any of these statuses; empty: any.
    public var statuses: [PaymentStatus] = []
    /// A payment any of whose attempts went to this gateway.
    public var gateway: GatewayID?
    /// The intent's payment method (its raw value, such as `card`).
    public var method: String?
    /// An ISO 4217 code, upper-cased.
    public var currency: String?
    /// The smallest amount, minor units, inclusive.
    public var amountMin: Int64?
    /// The largest amount, minor units, inclusive.
    public var amountMax: Int64?
    /// The merchant's reference, exactly.
    public var merchantReference: String?
    /// Lower-cased; matched against the customer's e-mail lower-cased.
    public var customerEmail: String?
    /// Inclusive.
    public var createdFrom: Date?
    /// Exclusive.
    public var createdTo: Date?
    /// The most payments a page holds.
    public var limit = PaymentSearchRequest.defaultLimit
    /// Only payments older than this position (the previous page's last), by (creation time, id).
    public var after: Position?

    /// A query with no filter: the merchant's newest ``PaymentSearchRequest/defaultLimit`` payments.
    public init() {}

    /// Whether a payment matches every filter (the in-memory store's search, and the rule the SQL is tested against).
    public func matches(_ payment: StoredPayment) -> Bool {
        if !statuses.isEmpty, !statuses.contains(payment.status) { return false }
        if let gateway, !payment.attempts.contains(where: { $0.gateway == gateway }) { return false }
        if let method, payment.intent.method.rawValue != method { return false }
        if let currency, payment.intent.amount.currency.code != currency { return false }
        if let amountMin, payment.intent.amount.minorUnits < amountMin { return false }
        if let amountMax, payment.intent.amount.minorUnits > amountMax { return false }
        if let merchantReference, payment.intent.merchantReference != merchantReference { return false }
        if let customerEmail, payment.intent.customer.email?.lowercased() != customerEmail { return false }
        let created = payment.createdAt.storedMillis
        if let createdFrom, created < createdFrom.storedMillis { return false }
        if let createdTo, created >= createdTo.storedMillis { return false }
        if let after, !(created < after.createdMillis || (created == after.createdMillis && payment.id < after.id)) { return false }
        return true
    }
}

/// A page of payments, newest first, with the cursor of the next page when there may be one.
public struct PaymentSearchPage: Sendable, Codable, Hashable {
    /// The page's payments, newest first, as the merchant's key sees each.
    public var payments: [PaymentView]
    /// The next page's `cursor` when this page is full; absent on the last page.
    public var nextCursor: String?

    /// A page of `payments`, followed by the page at `nextCursor` if any.
    public init(payments: [PaymentView], nextCursor: String?) {
        self.payments = payments
        self.nextCursor = nextCursor
    }
}

extension PaymentService {
    /// A page of the merchant's payments matching `request`, as the merchant's key sees each.
    public func searchPayments(merchant: MerchantRuntime, request: PaymentSearchRequest) async throws -> PaymentSearchPage {
        let query = try request.query()
        let found = try await store.searchPayments(merchant: merchant.configuration.id, query: query)
        let next = found.count == query.limit ? found.last.map { PaymentSearchQuery.Position(createdMillis: $0.createdAt.storedMillis, id: $0.id).cursor } : nil
        return PaymentSearchPage(payments: found.map { PaymentView($0, forMerchant: true) }, nextCursor: next)
    }

    /// Every payment matching `request` (its `limit` and `cursor` ignored), page by page from the store, newest first:
    /// `body` gets each page as it is read, so an export holds one page at a time.
    public func eachPayment(merchant: MerchantRuntime, request: PaymentSearchRequest,
                            _ body: ([PaymentView]) async throws -> Void) async throws {
        var query = try request.query()
        query.limit = 500
        query.after = nil
        while true {
            let found = try await store.searchPayments(merchant: merchant.configuration.id, query: query)
            try await body(found.map { PaymentView($0, forMerchant: true) })
            guard found.count == query.limit, let last = found.last else { return }
            query.after = PaymentSearchQuery.Position(createdMillis: last.createdAt.storedMillis, id: last.id)
        }
    }
}

/// The export's two formats: CSV with a fixed column list, and NDJSON (one payment per line, as the search answers it).
public enum PaymentExport {
    /// The CSV's columns, in order. Amounts are in minor units of `currency`; times are ISO 8601 in UTC; `gateway` is the
    /// last attempt's.
    public static let columns = ["id", "merchantReference", "status", "amount", "currency", "method", "gateway", "customerEmail",
                                 "createdAt", "updatedAt", "amountCaptured", "amountRefunded"]

    /// The CSV's first line.
    public static var csvHeader: String { columns.joined(separator: ",") + "\r\n" }

    /// One payment as a CSV record (RFC 4180: CRLF, fields with a comma, quote or line break quoted, quotes doubled). A
    /// field a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a
    /// leading `'`, so opening an export never runs what a customer typed.
    public static func csvRow(_ payment: PaymentView) -> String {
        let time = Date.ISO8601FormatStyle()
        let fields: [String] = [
            payment.id, payment.merchantReference, payment.status.rawValue, String(payment.amount.minorUnits), payment.amount.currency.code,
            payment.method.rawValue, payment.attempts.last?.gateway.rawValue ?? "", payment.customer?.email ?? "",
            payment.createdAt.formatted(time), payment.updatedAt.formatted(time),
            payment.amountCaptured.map { String($0.minorUnits) } ?? "", payment.amountRefunded.map { String($0.minorUnits) } ?? "",
        ]
        return fields.map(csvField).joined(separator: ",") + "\r\n"
    }

    package static func csvField(_ value: String) -> String {
        var value = value
        if let first = value.unicodeScalars.first, ["=", "+", "-", "@", "\t", "\r"].contains(first) { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
