// Plugins/Toy/Client/ToyWire.swift in a real module: Toy Pay's requests and answers, with its field names.

import Foundation

/// `POST {base}/v1/orders`.
public struct ToyOrderRequest: Codable, Sendable, Hashable {
    public var reference: String
    public var amount: Int64
    public var currency: String
    public var returnURL: String
    public var notifyURL: String?

    public init(reference: String, amount: Int64, currency: String, returnURL: String, notifyURL: String?) {
        self.reference = reference
        self.amount = amount
        self.currency = currency
        self.returnURL = returnURL
        self.notifyURL = notifyURL
    }

    enum CodingKeys: String, CodingKey {
        case reference, amount, currency
        case returnURL = "return_url"
        case notifyURL = "notify_url"
    }
}

/// An order, as `POST {base}/v1/orders` and `GET {base}/v1/orders/{reference}` answer it.
public struct ToyOrder: Codable, Sendable, Hashable {
    public var order: String
    public var reference: String
    public var amount: Int64
    public var currency: String
    public var status: String
    public var payURL: String

    enum CodingKeys: String, CodingKey {
        case order, reference, amount, currency, status
        case payURL = "pay_url"
    }
}

/// Toy Pay's error answer: `{"error": {"code": "...", "message": "..."}}`.
public struct ToyErrorAnswer: Codable, Sendable, Hashable {
    public struct Detail: Codable, Sendable, Hashable {
        public var code: String
        public var message: String?
    }
    public var error: Detail
}
