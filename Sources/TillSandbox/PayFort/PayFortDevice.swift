import Foundation
import Till
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the customer's device does with the PayFort emulator: post the custom merchant page's form as
/// a browser would, and play the FORT mobile SDK through the emulator's stand-in. Used by
/// ``SandboxPayFortCustomer``; also usable on its own in tests.
public enum PayFortDevice {
    /// The card a sandbox customer types.
    public struct Card: Sendable, Hashable, CustomStringConvertible {
        /// The card number, digits only.
        public var number: String
        /// The expiry date as APS takes it: `YYMM`.
        public var expiry: String
        /// The security code.
        public var securityCode: String
        /// The name on the card.
        public var holderName: String

        /// A card; the defaults are a future expiry, a three-digit code and a holder name.
        public init(number: String, expiry: String = "3012", securityCode: String = "123", holderName: String = "Sandbox Customer") {
            self.number = number
            self.expiry = expiry
            self.securityCode = securityCode
            self.holderName = holderName
        }

        /// The card masked (first 6 / last 4); never the number or the security code.
        public var description: String { "Card(\(PayFortEmulator.TestCard.mask(number)))" }
    }

    /// What the FORT mobile SDK reported, as the stand-in answered it.
    public struct SDKCallback: Sendable, Hashable {
        /// `success`, `failure` or `cancel`: which of the SDK's callbacks ran.
        public var code: String
        /// The SDK's response dictionary.
        public var response: [String: String]
    }

    /// Why the device could not do what it was asked.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong, without card data.
        public var description: String
    }

    /// Posts `form` (`application/x-www-form-urlencoded`) as a browser posts an HTML form, without
    /// following the answer's redirect, and returns its `Location`: where the page sends the
    /// customer. `nil` when the page answered without a redirect (it shows an error).
    public static func post(_ form: FormPost) async throws -> URL? {
        var request = URLRequest(url: form.url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = form.encodedBody
        return try await location(of: request)
    }

    /// Hands the SDK its request dictionary and the customer's card (or nothing, for a saved card's
    /// `token_name` or a cancel) through the emulator's stand-in, `POST {payFortBaseURL}/sandbox-only/fort-sdk/pay`.
    /// - Parameters:
    ///   - payFortBaseURL: ``RunningSandbox/payFortBaseURL``.
    ///   - request: the SDK's request dictionary, as the app gives it.
    ///   - deviceID: the device's id (the one the merchant's SDK_TOKEN request carried).
    ///   - card: what the customer types; `nil` to pay with `request`'s `token_name`.
    ///   - cancel: the customer closes the SDK's screen instead of paying.
    ///   - approveThreeDSecure: what the customer does on the bank page, if the card asks for one.
    public static func payInSDK(payFortBaseURL: URL, request: [String: String], deviceID: String, card: Card?,
                                cancel: Bool = false, approveThreeDSecure: Bool = true) async throws -> SDKCallback {
        var body: [String: JSONValue] = [
            "device_id": .string(deviceID),
            "request": .sortedObject(request.mapValues(JSONValue.string)),
            "action": .string(cancel ? "cancel" : "pay"),
            "three_ds": .string(approveThreeDSecure ? "approve" : "fail"),
        ]
        if let card {
            body["card"] = .sortedObject([
                "card_number": .string(card.number), "expiry_date": .string(card.expiry),
                "card_security_code": .string(card.securityCode), "card_holder_name": .string(card.holderName),
            ])
        }
        var urlRequest = URLRequest(url: payFortBaseURL.appendingPathComponent(PayFortEmulator.mobileSDKPath))
        urlRequest.httpMethod = "POST"
        urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        urlRequest.httpBody = Data(JSONValue.sortedObject(body).serializedBytes)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: urlRequest)
        let parsed = try? JSONValue.parse(Array(data))
        guard (response as? HTTPURLResponse)?.statusCode == 200, let code = parsed?["code"]?.stringValue,
              let members = parsed?["response"]?.objectMembers else {
            throw Failure(description: "the SDK stand-in refused the call: " + (parsed?["error"]?.stringValue ?? "HTTP error"))
        }
        let fields = Dictionary(members.map { ($0.key, $0.value.parameterText) }, uniquingKeysWith: { $1 })
        return SDKCallback(code: code, response: fields)
    }

    /// Sends `request` without following redirects and returns the answer's `Location`, if any.
    static func location(of request: URLRequest) async throws -> URL? {
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse, (300..<400).contains(http.statusCode) else { return nil }
        return http.value(forHTTPHeaderField: "Location").flatMap(URL.init(string:))
    }
}
