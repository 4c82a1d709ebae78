import Foundation
import TillGatewayKit

// Typed wire models of Citcon's UPI REST API that both halves read (JSON, snake_case keys). The
// models only the server sends (charge requests, tokens, refunds, cancels) are in
// TillCitconServer. Every field read here is named by a vendor source: see docs/gateways/citcon.md
// and Tests/TillCitconTests/Fixtures/wire/.

/// Citcon's answer envelope: `{"status", "app", "version", "data"}` (`app` is `citcon_upi` in every
/// recorded answer).
struct CitconEnvelope<Payload: Decodable>: Decodable {
    var status: String
    var app: String?
    var version: String?
    var data: Payload
}

/// `data` of a failed answer: `{"code": "4100", "message": "duplicate request"}` (the code is a
/// string in the sandbox's answers; read as text when it is a number).
package struct CitconFailure: Decodable, Sendable {
    /// Citcon's code (`4100`, `4202`).
    package var code: String?
    /// Citcon's message (`duplicate request`).
    package var message: String?

    enum CodingKeys: String, CodingKey { case code, message }

    /// A failure built in code.
    package init(code: String?, message: String?) {
        self.code = code
        self.message = message
    }

    /// Decodes a failure; a code or message sent as a number is read as text.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try? container.decodeLossyString(forKey: .code)
        message = try? container.decodeLossyString(forKey: .message)
    }
}

/// A charge as Citcon answers it: the answer to `POST /v1/charges` and to
/// `GET /v1/transactions/{id}`.
///
/// Decoding is strict about what identifies the charge (`id`) and lenient about the rest: amounts
/// may be numbers, numeric strings, `""` or `null`; a `payment.client[]` entry whose values are not
/// text is kept as an entry with no content (Till cannot use it, and says so), so a created charge
/// can always be named, and cancelled, even when its answer holds nothing an app can open.
public struct CitconCharge: Decodable, Sendable, Hashable {
    /// `charge`.
    public var object: String?
    /// Citcon's transaction id (a 22-digit string in the 2025 sandbox, 32 hex digits in older examples).
    public var id: String
    /// The merchant's reference: the attempt reference Till sent.
    public var reference: String?
    /// Minor units.
    public var amount: Int64?
    /// ISO 4217 code.
    public var currency: String?
    /// ISO 3166 code.
    public var country: String?
    /// Whether the charge captures at once.
    public var autoCapture: Bool?
    /// `initiated` (a new charge), `pending`, `authorized`, `succeeded`, `failed`, `canceled`,
    /// `expired`, … (open).
    public var status: String?
    /// Minor units captured so far.
    public var amountCaptured: Int64?
    /// Minor units refunded so far.
    public var amountRefunded: Int64?
    /// Citcon's charge token (never handed to the app).
    public var chargeToken: String?
    /// The method and what the customer can open.
    public var payment: Payment?

    /// `payment` of a charge.
    public struct Payment: Decodable, Sendable, Hashable {
        /// The method, as Citcon names it (`wechatpay`, `alipay`, `upop`, `paypal`).
        public var method: String?
        /// One entry per client the charge was requested for (`mobile_native`, `mobile_browser`,
        /// `desktop`); absent in an inquiry's answer.
        public var client: [ClientEntry]?

        enum CodingKeys: String, CodingKey { case method, client }

        /// Decodes the payment; a `client` that is not an array is read as none.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            method = try? container.decodeIfPresent(String.self, forKey: .method)
            client = try? container.decodeIfPresent([ClientEntry].self, forKey: .client)
        }

        /// A payment part built in code.
        public init(method: String?, client: [ClientEntry]?) {
            self.method = method
            self.client = client
        }
    }

    /// One `payment.client[]` entry: `{"client", "format", "method", "content"}`.
    ///
    /// `client` echoes a requested client; `format` is `redirect` or `qr` in the recorded answers;
    /// `method` is the HTTP method to open it with (`GET`); `content` is a string: a URL for
    /// `redirect` and `qr`, and for `mobile_native` a JSON text holding the wallet SDK's parameters
    /// (WeChat Pay `appid, partnerid, package, noncestr, timestamp, prepayid, sign`; Alipay
    /// `orderSpec, signedString`; UnionPay `tn`), as Citcon's Android SDK reads it.
    public struct ClientEntry: Decodable, Sendable, Hashable {
        /// The client the entry is for.
        public var client: String?
        /// `redirect`, `qr`, … (open).
        public var format: String?
        /// The HTTP method to open the content with.
        public var method: String?
        /// The content, verbatim; `nil` when it was not a string.
        public var content: String?

        enum CodingKeys: String, CodingKey { case client, format, method, content }

        /// Decodes an entry; a value that is not a string is read as absent.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            client = try? container.decodeIfPresent(String.self, forKey: .client)
            format = try? container.decodeIfPresent(String.self, forKey: .format)
            method = try? container.decodeIfPresent(String.self, forKey: .method)
            content = try? container.decodeIfPresent(String.self, forKey: .content)
        }

        /// An entry built in code.
        public init(client: String?, format: String?, method: String? = "GET", content: String?) {
            self.client = client
            self.format = format
            self.method = method
            self.content = content
        }
    }

    enum CodingKeys: String, CodingKey {
        case object, id, reference, amount, currency, country, autoCapture = "auto_capture", status
        case amountCaptured = "amount_captured", amountRefunded = "amount_refunded", chargeToken = "charge_token", payment
    }

    /// Decodes a charge. Only `id` is required; amounts may come as numbers, numeric strings, `""` or
    /// `null`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let id = try container.decodeLossyString(forKey: .id), !id.isEmpty else {
            throw DecodingError.keyNotFound(CodingKeys.id, .init(codingPath: container.codingPath, debugDescription: "no charge id"))
        }
        self.id = id
        object = try? container.decodeIfPresent(String.self, forKey: .object)
        reference = try container.decodeLossyString(forKey: .reference)
        amount = try container.decodeLossyInt(forKey: .amount)
        currency = try? container.decodeIfPresent(String.self, forKey: .currency)
        country = try? container.decodeIfPresent(String.self, forKey: .country)
        autoCapture = try? container.decodeIfPresent(Bool.self, forKey: .autoCapture)
        status = try? container.decodeIfPresent(String.self, forKey: .status)
        amountCaptured = try container.decodeLossyInt(forKey: .amountCaptured)
        amountRefunded = try container.decodeLossyInt(forKey: .amountRefunded)
        chargeToken = try? container.decodeIfPresent(String.self, forKey: .chargeToken)
        payment = try? container.decodeIfPresent(Payment.self, forKey: .payment)
    }

    /// What an app does with this charge, chosen from `payment.client[]`: the `mobile_native`
    /// entry when there is one (its content is the wallet SDK's parameters), else the
    /// `mobile_browser` `redirect` entry (a page to open). `nil` when the answer holds neither in a
    /// form Till can use.
    /// - Parameter allowPlainHTTP: whether an `http` page is acceptable (a local sandbox).
    public func launch(allowPlainHTTP: Bool = false) -> CitconLaunch? {
        let entries = payment?.client ?? []
        if let native = entries.first(where: { $0.client == "mobile_native" }), let content = native.content, !content.isEmpty {
            guard let method = payment?.method, !method.isEmpty else { return nil }
            return .wallet(method: method, parameters: CitconLaunch.walletParameters(content))
        }
        for entry in entries where entry.client == "mobile_browser" && entry.format == "redirect" {
            guard entry.method == nil || entry.method?.uppercased() == "GET", let text = entry.content,
                  let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host != nil,
                  scheme == "https" || (scheme == "http" && allowPlainHTTP) else { continue }
            return .page(url)
        }
        return nil
    }
}

/// What the app is handed for a charge (see ``CitconCharge/launch(allowPlainHTTP:)``).
public enum CitconLaunch: Sendable, Hashable {
    /// Launch the wallet SDK of `method` (Citcon's name: `wechatpay`, `alipay`, `upop`) with these
    /// parameters.
    case wallet(method: String, parameters: [String: String])
    /// Open this page (the `mobile_browser` redirect).
    case page(URL)

    /// A `mobile_native` entry's content as wallet parameters: a JSON object's members as text
    /// (strings verbatim, numbers as written, booleans as `true`/`false`, `null` as empty, nested
    /// values as compact JSON), or `["content": <the text>]` when the content is not a JSON object.
    public static func walletParameters(_ content: String) -> [String: String] {
        guard let json = try? OrderedJSON.parse(Data(content.utf8), field: "content"), let members = json.objectMembers else {
            return ["content": content]
        }
        var parameters: [String: String] = [:]
        for member in members {
            switch member.value {
            case .string(let text): parameters[member.key] = text
            case .number(let text): parameters[member.key] = text
            case .bool(let flag): parameters[member.key] = flag ? "true" : "false"
            case .null: parameters[member.key] = ""
            case .object, .array: parameters[member.key] = String(decoding: member.value.serialized(), as: UTF8.self)
            }
        }
        return parameters
    }
}

extension KeyedDecodingContainer {
    /// An integer sent as a number, a numeric string, `""` or `null` (Citcon uses all four).
    package func decodeLossyInt(forKey key: Key) throws -> Int64? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let value = try? decode(Int64.self, forKey: key) { return value }
        let text = try decode(String.self, forKey: key)
        if text.isEmpty { return nil }
        guard let value = Int64(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an integer")
        }
        return value
    }

    /// A string sent as a string or an integer.
    package func decodeLossyString(forKey key: Key) throws -> String? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let text = try? decode(String.self, forKey: key) { return text }
        return String(try decode(Int64.self, forKey: key))
    }
}
