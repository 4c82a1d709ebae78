import Foundation

extension PayFortEmulator {
    /// The fields the customer types on the custom merchant page. They are posted beside the signed
    /// hidden fields but are not signed (tokenization-request.json; payfort/payfort-php-sdk
    /// `CCCustomTokenization::getPaymentParameter`).
    static let cardFields: Set<String> = ["card_number", "expiry_date", "card_security_code", "card_holder_name"]

    /// Handles one `POST /FortAPI/paymentPage` form: the custom merchant page's TOKENIZATION
    /// (tokenization-request.json). On success the card is stored under a `token_name` for the
    /// merchant's later PURCHASE or AUTHORIZATION; either way the customer is sent to `return_url`
    /// with the signed result in the query (tokenization-return.json), by `302 Found`. Without a usable
    /// `return_url`, or from an unknown merchant, the result is shown as a page instead.
    func handlePaymentPage(body: [UInt8]) -> PageAnswer {
        guard let text = String(bytes: body, encoding: .utf8), let fields = FormEncoding.decode(text) else {
            return .page(status: 400, html: Self.html(title: "Bad request", body: "<p>The body is not a form.</p>"))
        }
        let request = Parameters(fields)
        var result = echo(Parameters(fields.filter { !Self.cardFields.contains($0.key) }))
        let merchant: PayFortMerchant
        do throws(Rejection) {
            merchant = try identifyMerchant(request)
        } catch {
            // Nothing to sign with, and no reason to trust the return URL.
            Self.setOutcome(&result, status: error.status, code: String(error.responseCode.suffix(3)), message: error.message)
            return .page(status: 400, html: Self.resultPage(title: "Request refused", fields: result))
        }
        let returnURL = request.text("return_url").flatMap { Self.isAbsoluteURL($0) ? $0 : nil }
        if let given = request.text("return_url") { result["return_url"] = given }
        var refused = false
        do throws(Rejection) {
            try tokenize(request, fields: fields, merchant: merchant, into: &result)
        } catch {
            refused = true
            Self.setOutcome(&result, status: error.status, code: String(error.responseCode.suffix(3)), message: error.message)
        }
        result[Signature.signatureKey] = Self.sign(result, merchant: merchant)
        guard let returnURL else {
            return .page(status: refused ? 400 : 200,
                         html: Self.resultPage(title: refused ? "Tokenization failed" : "Card saved", fields: result))
        }
        return .redirect(location: Self.appendingQuery(FormEncoding.encode(result), to: returnURL))
    }

    /// Verifies, validates and stores the card; fills in the success fields.
    private func tokenize(_ request: Parameters, fields: [String: String], merchant: PayFortMerchant,
                          into result: inout [String: String]) throws(Rejection) {
        try verifyPageSignature(fields, merchant: merchant)
        let service = try request.require("service_command")
        guard service == "TOKENIZATION" else { throw Rejection(code: "004", message: "Invalid command: \(service)") }
        try validateCommon(Parameters(fields.filter { !Self.cardFields.contains($0.key) }))
        _ = try Self.validReference(request)
        if request.text("return_url") != nil, !Self.isAbsoluteURL(request.text("return_url") ?? "") {
            throw Rejection.invalid("return_url", "an absolute URL")
        }
        if let remember = request.text("remember_me"), !["YES", "NO"].contains(remember.uppercased()) {
            throw Rejection.invalid("remember_me", "YES or NO")
        }
        let number = try request.require("card_number")
        guard TestCard.isLuhnValid(number) else { throw Rejection(status: "17", code: "016", message: "Invalid card number") }
        let expiry = try request.require("expiry_date")
        guard Self.isExpiryDate(expiry) else { throw Rejection.invalid("expiry_date", "YYMM") }
        let securityCode = try request.require("card_security_code")
        let codeLength = TestCard.paymentOptions(of: number).contains("AMEX") ? 4 : 3
        guard securityCode.count == codeLength, securityCode.allSatisfy(\.isASCIIDigit) else {
            throw Rejection.invalid("card_security_code", "\(codeLength) digits")
        }
        let holder = request.text("card_holder_name")
        if let holder, holder.count > 50 { throw Rejection.tooLong("card_holder_name", 50) }
        let tokenName = request.text("token_name") ?? Self.randomHex(count: 32)
        guard tokenName.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".@-_".unicodeScalars.contains($0)) }) else {
            throw Rejection.invalid("token_name")
        }
        cardTokens[merchant.merchantIdentifier, default: [:]][tokenName] = CardToken(number: number, expiry: expiry, holder: holder)
        result["token_name"] = tokenName
        result["card_number"] = TestCard.mask(number)
        result["card_bin"] = String(number.prefix(6))
        // tokenization-return.json: the expiry date comes back masked.
        result["expiry_date"] = "****"
        if let holder { result["card_holder_name"] = Self.escapeApostrophes(holder) }
        Self.setOutcome(&result, status: "18", code: "000", message: "Success")
        logger.debug("card tokenized", metadata: ["merchant": .string(merchant.merchantIdentifier),
                                                  "card": .string(TestCard.mask(number))])
    }

    /// The merchant page's signature covers the hidden fields, not what the customer typed. The PHP
    /// SDK also signs a `card_holder_name` the merchant passed in its payment data, so that form of
    /// the signature is accepted too.
    private func verifyPageSignature(_ fields: [String: String], merchant: PayFortMerchant) throws(Rejection) {
        guard let signature = fields[Signature.signatureKey], !signature.isEmpty else { throw .missing("signature") }
        let hidden = fields.filter { !Self.cardFields.contains($0.key) }
        var withHolder = hidden
        withHolder["card_holder_name"] = fields["card_holder_name"]
        for candidate in [hidden, withHolder] {
            if Signature.verify(signature, parameters: candidate, phrase: merchant.requestPhrase, algorithm: merchant.algorithm) {
                return
            }
        }
        logger.notice("signature mismatch on the merchant page", metadata: ["merchant": .string(merchant.merchantIdentifier)])
        throw Rejection.signatureMismatch
    }

    /// `url` with `query` added before any fragment, after any query it already has (which comes back
    /// unsigned beside the signed fields, as the PHP SDK's `discriminator` does).
    static func appendingQuery(_ query: String, to url: String) -> String {
        let parts = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(parts[0])
        let fragment = parts.count > 1 ? "#" + parts[1] : ""
        let separator = !base.contains("?") ? "?" : (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&")
        return base + separator + query + fragment
    }

    /// A page listing a result's fields (each value escaped), one `<tr id="{key}">` per field.
    static func resultPage(title: String, fields: [String: String]) -> String {
        let rows = fields.sorted { $0.key < $1.key }
            .map { "<tr id=\"\(escapeHTML($0.key))\"><th>\(escapeHTML($0.key))</th><td>\(escapeHTML($0.value))</td></tr>" }
            .joined(separator: "\n")
        return html(title: title, body: "<table>\n\(rows)\n</table>")
    }

    static func html(title: String, body: String) -> String { SandboxHTML.page(title: title, body: body, emulator: "PayFort") }

    static func escapeHTML(_ text: String) -> String { SandboxHTML.escape(text) }
}
