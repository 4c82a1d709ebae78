import Foundation
import TillGatewayKit

// Typed wire models of Citcon's UPI REST API that both halves read (JSON, snake_case keys). The
// models only the server sends (charge requests, tokens, captures, refunds, cancels) are in
// TillCitconServer. See docs/gateways/citcon.md.

/// Citcon's answer envelope: `{"status", "app", "version", "data"}`.
struct CitconEnvelope<Payload: Decodable>: Decodable {
    var status: String
    var app: String?
    var version: String?
    var data: Payload
}

/// `data` of a failed answer.
struct CitconFailure: Decodable, Sendable {
    var code: String?
    var message: String?

    enum CodingKeys: String, CodingKey { case code, message }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decodeLossyString(forKey: .code)
        message = try container.decodeLossyString(forKey: .message)
    }
}

/// A charge as Citcon answers it (create and inquiry).
public struct CitconCharge: Decodable, Sendable, Hashable {
    /// `charge`.
    public var object: String?
    /// Citcon's transaction id.
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
    /// `pending`, `succeeded`, `authorized`, `failed`, `canceled`, `expired`, … (open).
    public var status: String?
    /// Minor units captured so far.
    public var amountCaptured: Int64?
    /// Minor units refunded so far.
    public var amountRefunded: Int64?
    /// Citcon's charge token (never handed to the app).
    public var chargeToken: String?
    /// The method and what the app opens.
    public var payment: Payment?

    /// `payment` of a charge.
    public struct Payment: Decodable, Sendable, Hashable {
        /// The method, lower case (`wechatpay`).
        public var method: String?
        /// What the app may open: wallet SDK parameters and pages.
        public var client: [ClientEntry]?
    }

    /// One `payment.client[]` entry: a wallet SDK's parameters (`native`) or a page (`url`).
    public struct ClientEntry: Decodable, Sendable, Hashable {
        /// `native` or `url`.
        public var type: String
        /// The entry's content, every scalar as text (numbers as written, `null` as empty).
        public var content: [String: String]

        enum CodingKeys: String, CodingKey { case type, content }

        /// Decodes an entry, reading its content's scalars as text.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try container.decode(String.self, forKey: .type)
            let raw = try container.decodeIfPresent([String: CitconScalar].self, forKey: .content) ?? [:]
            content = raw.mapValues(\.text)
        }
    }

    enum CodingKeys: String, CodingKey {
        case object, id, reference, amount, currency, country, autoCapture = "auto_capture", status
        case amountCaptured = "amount_captured", amountRefunded = "amount_refunded", chargeToken = "charge_token", payment
    }

    /// Decodes a charge; amounts may come as numbers, numeric strings, `""` or `null`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        object = try container.decodeIfPresent(String.self, forKey: .object)
        id = try container.decode(String.self, forKey: .id)
        reference = try container.decodeIfPresent(String.self, forKey: .reference)
        amount = try container.decodeLossyInt(forKey: .amount)
        currency = try container.decodeIfPresent(String.self, forKey: .currency)
        country = try container.decodeIfPresent(String.self, forKey: .country)
        autoCapture = try? container.decodeIfPresent(Bool.self, forKey: .autoCapture)
        status = try container.decodeIfPresent(String.self, forKey: .status)
        amountCaptured = try container.decodeLossyInt(forKey: .amountCaptured)
        amountRefunded = try container.decodeLossyInt(forKey: .amountRefunded)
        chargeToken = try container.decodeIfPresent(String.self, forKey: .chargeToken)
        payment = try container.decodeIfPresent(Payment.self, forKey: .payment)
    }
}

/// A JSON scalar read as text: strings verbatim, numbers and booleans as written, null as "".
struct CitconScalar: Decodable, Sendable {
    var text: String
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { text = ""; return }
        if let string = try? container.decode(String.self) { text = string; return }
        if let bool = try? container.decode(Bool.self) { text = bool ? "true" : "false"; return }
        if let int = try? container.decode(Int64.self) { text = String(int); return }
        if let double = try? container.decode(Double.self) { text = String(double); return }
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a string, number, boolean or null")
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

    /// A string sent as a string or a number.
    func decodeLossyString(forKey key: Key) throws -> String? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let text = try? decode(String.self, forKey: key) { return text }
        return String(try decode(Int64.self, forKey: key))
    }
}
