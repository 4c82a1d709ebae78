import Foundation
import TillGatewayKit

/// The result of an IIN lookup (the Swift client SDK's `IINStatus`, `Models/IINDetails/IINStatus.swift`).
public enum WorldlineIINStatus: String, Sendable, Hashable, Codable {
    /// Fewer than 6 digits: no request was made.
    case notEnoughDigits = "NOT_ENOUGH_DIGITS"
    /// Another lookup is under way; this one was not sent (Swift SDK `ClientApi.iinDetails`).
    case pending = "PENDING"
    /// The gateway knows no product for these digits (its answer names none; a 404 is one).
    case unknown = "UNKNOWN"
    /// The card's product exists but cannot be used in this payment context.
    case existingButNotAllowed = "EXISTING_BUT_NOT_ALLOWED"
    /// The card's product can be used; see ``WorldlineIINDetails/paymentProductId`` and the co-brands.
    case supported = "SUPPORTED"
}

/// How to read an IIN answer that names a product but has no `isAllowedInContext`.
///
/// The vendor SDKs disagree (docs/gateways/worldline.md): the Swift SDK defaults the flag to `false`
/// (EXISTING_BUT_NOT_ALLOWED), the Android SDK treats the answer as SUPPORTED, and the JavaScript SDK
/// (`getPaymentProductIdByCreditCardNumber`) fetches the product for the payment context: SUPPORTED
/// when that works, UNKNOWN when it fails.
public enum WorldlineIINAbsentAllowedRule: String, Sendable, Hashable, CaseIterable {
    /// The JavaScript SDK's reading, the default here: the gateway answers `GET /products/{id}` for a
    /// context only with a product available in it, which is exactly what `isAllowedInContext` says.
    /// Neither reading without a request blocks or admits a card on a guess.
    case confirmWithProduct
    /// The Swift SDK's reading: not allowed.
    case notAllowed
    /// The Android SDK's reading: allowed.
    case allowed
}

/// An IIN lookup's answer, read.
public struct WorldlineIINDetails: Sendable, Hashable {
    public var status: WorldlineIINStatus
    /// The digits sent as `bin` (6 or 8); `nil` when no request was made.
    public var bin: String?
    /// The card's product (the first one allowed in the context); `nil` unless SUPPORTED or
    /// EXISTING_BUT_NOT_ALLOWED.
    public var paymentProductId: Int?
    /// The card's issuing country, as the gateway gave it.
    public var countryCode: String?
    /// Every brand of a co-branded card, the top-level one included; empty for one brand.
    public var coBrands: [WorldlineIINCoBrand]
    /// The answer as sent, if one was.
    public var response: WorldlineIINDetailsResponse?

    /// Details from their parts.
    public init(status: WorldlineIINStatus, bin: String? = nil, paymentProductId: Int? = nil, countryCode: String? = nil,
                coBrands: [WorldlineIINCoBrand] = [], response: WorldlineIINDetailsResponse? = nil) {
        self.status = status
        self.bin = bin
        self.paymentProductId = paymentProductId
        self.countryCode = countryCode
        self.coBrands = coBrands
        self.response = response
    }

    /// The co-brands the customer may choose between: those allowed in the context (an absent flag
    /// reads as `false`, as the Swift SDK's `IINDetail` does). Empty unless SUPPORTED.
    public var allowedCoBrands: [WorldlineIINCoBrand] {
        guard status == .supported else { return [] }
        return coBrands.filter { $0.isAllowedInContext == true }
    }

    /// Reads `answer` for `bin`: no `paymentProductId` → UNKNOWN; `isAllowedInContext` `true` →
    /// SUPPORTED, `false` → EXISTING_BUT_NOT_ALLOWED, absent → as `rule` says (`confirm` fetches the
    /// product and throws only a transport failure; a refusal means UNKNOWN).
    static func read(_ answer: WorldlineIINDetailsResponse, bin: String, rule: WorldlineIINAbsentAllowedRule,
                     confirm: (Int) async throws(CheckoutError) -> Void) async throws(CheckoutError) -> WorldlineIINDetails {
        guard let id = answer.paymentProductId else {
            return WorldlineIINDetails(status: .unknown, bin: bin, countryCode: answer.countryCode, response: answer)
        }
        var status: WorldlineIINStatus
        switch answer.isAllowedInContext {
        case true?: status = .supported
        case false?: status = .existingButNotAllowed
        case nil:
            switch rule {
            case .notAllowed: status = .existingButNotAllowed
            case .allowed: status = .supported
            case .confirmWithProduct:
                switch await confirmed(id, confirm) {
                case .success(true): status = .supported
                case .success(false): return WorldlineIINDetails(status: .unknown, bin: bin, countryCode: answer.countryCode, response: answer)
                case .failure(let failure): throw failure
                }
            }
        }
        return WorldlineIINDetails(status: status, bin: bin, paymentProductId: id, countryCode: answer.countryCode,
                                   coBrands: answer.coBrands ?? [], response: answer)
    }

    /// Whether fetching product `id` worked: `false` when the gateway refused it, a failure when the
    /// request could not be made or answered.
    private static func confirmed(_ id: Int, _ confirm: (Int) async throws(CheckoutError) -> Void) async -> Result<Bool, CheckoutError> {
        do {
            try await confirm(id)
            return .success(true)
        } catch {
            return error.code == .gatewayError || error.code == .malformedBody ? .success(false) : .failure(error)
        }
    }
}

/// The IIN lookup of one checkout: statuses as the Swift client SDK's `ClientApi.iinDetails` gives
/// them, with a cache.
///
/// - Fewer than 6 digits: NOT_ENOUGH_DIGITS, no request.
/// - A BIN already answered: the cached answer, no request (the cache is keyed by the `bin` sent, 6 or
///   8 digits; only answers are cached, never failures).
/// - While a lookup is in flight, another one answers PENDING at once and sends nothing (the Swift
///   SDK's `iinLookupPending`); the caller looks up again when the first one is done if the number
///   changed meanwhile (``WorldlineForm`` does).
/// - Otherwise one `POST /services/getIINdetails`, read with ``absentAllowed``.
public actor WorldlineIINLookup {
    private let api: WorldlineClientAPI
    private let context: WorldlinePaymentContext
    /// How an answer without `isAllowedInContext` is read.
    public nonisolated let absentAllowed: WorldlineIINAbsentAllowedRule
    private var cache: [String: WorldlineIINDetails] = [:]
    private var inFlight = false
    /// How many requests this lookup has sent (for tests and diagnostics).
    public private(set) var requestsSent = 0

    /// A lookup for `context` through `api`.
    public init(api: WorldlineClientAPI, context: WorldlinePaymentContext,
                absentAllowed: WorldlineIINAbsentAllowedRule = .confirmWithProduct) {
        self.api = api
        self.context = context
        self.absentAllowed = absentAllowed
    }

    /// Looks up the product of the card starting with `partialCardNumber` (unmasked digits; spaces
    /// are dropped).
    /// - Throws: ``CheckoutError`` naming `partialCardNumber` for a non-digit, or the transport's or
    ///   gateway's failure (the in-flight state is cleared either way).
    public func lookup(_ partialCardNumber: String) async throws(CheckoutError) -> WorldlineIINDetails {
        let digits = try WorldlineClientAPI.iinDigits(partialCardNumber, gateway: api.gateway)
        guard let bin = WorldlineClientAPI.bin(of: digits) else { return WorldlineIINDetails(status: .notEnoughDigits) }
        if let cached = cache[bin] { return cached }
        if inFlight { return WorldlineIINDetails(status: .pending, bin: bin) }
        inFlight = true
        defer { inFlight = false }
        requestsSent += 1
        let details = try await api.iinDetails(partialCardNumber: bin, for: context, absentAllowed: absentAllowed)
        cache[bin] = details
        return details
    }

    /// The cached answer for `bin`, if any.
    public func cached(bin: String) -> WorldlineIINDetails? { cache[bin] }
}
