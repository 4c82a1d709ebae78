import Foundation

extension PayFortEmulator {
    /// The path of the FORT mobile SDK stand-in under the emulator's base URL. **Not an APS API**: the
    /// real SDK is a native library that talks to APS's own, unpublished mobile endpoints.
    public static let mobileSDKPath = "sandbox-only/fort-sdk/pay"

    /// Plays the FORT mobile SDK for the sandbox (`POST {base}/sandbox-only/fort-sdk/pay`): takes what
    /// the app hands the SDK (the operation's request dictionary) and what the customer types, performs
    /// the operation as APS would, and answers with the callback the SDK would make.
    ///
    /// Body (JSON):
    /// ```json
    /// {"device_id": "…the device's id (PayFortController.getUDID())…",
    ///  "request": {"command": "PURCHASE", "merchant_reference": "…", "amount": "1000", "currency": "USD",
    ///              "language": "en", "customer_email": "…", "sdk_token": "…", …},
    ///  "card": {"card_number": "…", "expiry_date": "YYMM", "card_security_code": "123", "card_holder_name": "…"},
    ///  "action": "pay" | "cancel",
    ///  "three_ds": "approve" | "fail"}
    /// ```
    /// `card` may be left out when `request` names a saved card's `token_name`; `action` defaults to
    /// `pay`, `three_ds` (the customer on the bank page the SDK shows, for cards that ask for it) to
    /// `approve`. The request dictionary's values are strings, as the SDK's `[String: String]` is.
    ///
    /// Answer: `200 {"code": "success" | "failure" | "cancel", "response": {…}}`, where `response` is the
    /// SDK's response dictionary (FORT mobile SDK guide v3.4 §6.4, §6.7.2): every request parameter but
    /// the card security code, plus `fort_id`, `card_number` (masked), `expiry_date`, `payment_option`,
    /// `eci`, `authorization_code`, `status`, `response_code`, `response_message`, and `token_name` when
    /// one was used or `remember_me` is `YES`; no `signature` (the guide's table lists none). `success`
    /// is a PURCHASE at `14` or an AUTHORIZATION at `02`; anything else that reached the SDK is
    /// `failure`; `cancel` is the customer closing the SDK's screen (`00072`, nothing processed). A body
    /// that is not of this shape is `400 {"error": "…"}`.
    ///
    /// The SDK token is checked as APS checks it: it must exist, be unused and less than
    /// ``tokenLifetime`` old, and have been created for this `device_id` (else `00070` "device_id
    /// mismatch"). A processed operation uses it up, is in the ledger when charged, and sends the
    /// merchant its transaction feedback.
    func handleMobileSDK(body: [UInt8], payFortBaseURL: URL) -> PaymentAPIAnswer {
        guard let parsed = try? JSONValue.parse(body), parsed.objectMembers != nil else {
            return Self.standInError("the body must be a JSON object")
        }
        guard let device = parsed["device_id"]?.stringValue, !device.isEmpty else {
            return Self.standInError("device_id: required, a string")
        }
        guard let requestMembers = parsed["request"]?.objectMembers else {
            return Self.standInError("request: required, an object of strings")
        }
        if let bad = requestMembers.first(where: { $0.value.stringValue == nil }) {
            return Self.standInError("request.\(bad.key): must be a string")
        }
        let action = parsed["action"]?.stringValue ?? "pay"
        guard action == "pay" || action == "cancel" else { return Self.standInError("action: pay or cancel") }
        let threeDS = parsed["three_ds"]?.stringValue ?? "approve"
        guard threeDS == "approve" || threeDS == "fail" else { return Self.standInError("three_ds: approve or fail") }
        var card: [String: String]?
        if let cardValue = parsed["card"] {
            guard let members = cardValue.objectMembers, members.allSatisfy({ $0.value.stringValue != nil }) else {
                return Self.standInError("card: an object of strings")
            }
            card = Dictionary(members.map { ($0.key, $0.value.stringValue ?? "") }, uniquingKeysWith: { $1 })
        }

        let request = Parameters(members: requestMembers)
        var response = echo(request)
        if action == "cancel" {
            Self.setOutcome(&response, status: "00", code: "072", message: "Transaction has been cancelled by the consumer")
            return Self.standInAnswer(code: "cancel", response: response)
        }
        do throws(Rejection) {
            let merchant = try useSDKToken(request, device: device)
            try validateCommon(request)
            let command = try request.require("command")
            guard command == "PURCHASE" || command == "AUTHORIZATION" else {
                throw Rejection(code: "004", message: "Invalid command: \(command)")
            }
            for field in ["merchant_reference", "amount", "currency", "customer_email"] { _ = try request.require(field) }
            let cardToken = try sdkCard(card, request: request, merchant: merchant)
            let payment = try validatePayment(request, command: command, card: cardToken, merchant: merchant)
            try consumeSDKToken(request)
            if request.text("token_name") == nil, request.text("remember_me")?.uppercased() == "YES" {
                let tokenName = Self.randomHex(count: 32)
                cardTokens[merchant.merchantIdentifier, default: [:]][tokenName] = cardToken
                response["token_name"] = tokenName
            }
            let (order, answer, _) = process(payment, echoed: &response, merchant: merchant, payFortBaseURL: payFortBaseURL)
            var final = answer
            if let session = order.threeDSSession,
               let settled = finishThreeDS(orderKey: Self.orderKey(merchant.merchantIdentifier, order.reference),
                                           session: session, approve: threeDS == "approve") {
                final = settled.current
            }
            let success = final["status"] == (command == "PURCHASE" ? "14" : "02")
            return Self.standInAnswer(code: success ? "success" : "failure", response: final)
        } catch {
            Self.setOutcome(&response, status: error.status, code: String(error.responseCode.suffix(3)), message: error.message)
            return Self.standInAnswer(code: "failure", response: response)
        }
    }

    /// The merchant an SDK token belongs to, once the token is known, fresh, unused and this device's.
    private func useSDKToken(_ request: Parameters, device: String) throws(Rejection) -> PayFortMerchant {
        let value = try request.require("sdk_token")
        guard let token = sdkTokens[value] else { throw Rejection.invalid("sdk_token", "unknown token") }
        guard token.deviceID == device else { throw Rejection(code: "070", message: "device_id mismatch") }
        guard !token.used else { throw Rejection.invalid("sdk_token", "already used") }
        guard now() < token.created.addingTimeInterval(tokenLifetime.timeInterval) else {
            throw Rejection.invalid("sdk_token", "expired")
        }
        guard let merchant = merchant(identifier: token.merchantIdentifier, accessCode: token.accessCode) else {
            throw Rejection(code: "009", message: "Invalid merchant identifier")
        }
        return merchant
    }

    private func consumeSDKToken(_ request: Parameters) throws(Rejection) {
        let value = try request.require("sdk_token")
        sdkTokens[value]?.used = true
    }

    /// The card the customer typed into the SDK, or the saved card its `token_name` names.
    private func sdkCard(_ card: [String: String]?, request: Parameters, merchant: PayFortMerchant) throws(Rejection) -> CardToken {
        guard let card else {
            guard let tokenName = request.text("token_name") else { throw .missing("card_number") }
            guard let saved = cardTokens[merchant.merchantIdentifier]?[tokenName] else {
                throw Rejection(code: "044", message: "Token name does not exist")
            }
            return saved
        }
        guard let number = card["card_number"], !number.isEmpty else { throw .missing("card_number") }
        guard TestCard.isLuhnValid(number) else { throw Rejection(code: "016", message: "Invalid card number") }
        guard let expiry = card["expiry_date"], Self.isExpiryDate(expiry) else { throw .invalid("expiry_date", "YYMM") }
        let codeLength = TestCard.paymentOptions(of: number).contains("AMEX") ? 4 : 3
        guard let code = card["card_security_code"], code.count == codeLength, code.allSatisfy(\.isASCIIDigit) else {
            throw .invalid("card_security_code", "\(codeLength) digits")
        }
        let holder = card["card_holder_name"].flatMap { $0.isEmpty ? nil : $0 }
        return CardToken(number: number, expiry: expiry, holder: holder)
    }

    private static func standInAnswer(code: String, response: [String: String]) -> PaymentAPIAnswer {
        .json(.object([.init(key: "code", value: .string(code)),
                       .init(key: "response", value: .sortedObject(response.mapValues(JSONValue.string)))]))
    }

    private static func standInError(_ message: String) -> PaymentAPIAnswer {
        .json(.object([.init(key: "error", value: .string(message))]), status: 400)
    }
}
