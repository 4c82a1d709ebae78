import Foundation
import Till
import TillGatewayKit

/// Worldline Connect: the **app half**, a ``GatewayAppHalf``. It holds no secret: it reads products and
/// fields through the Client API with the client session the merchant server prepared, and encrypts
/// what the customer entered so that only Worldline can read it; the merchant server then creates the
/// payment with that payload (``WorldlineGateway/submissionKind``).
///
/// | input | next step |
/// |---|---|
/// | `.start` | `.collect`: the fields of the first card product on offer for the context (`GET /products`, `GET /products/{id}`), masks and validators included |
/// | `.submit(values)` | the IIN lookup picks the product (`POST /services/getIINdetails`), the values are checked against that product's fields, encrypted to the gateway's key (`GET /crypto/publickey`), and `.submit` carries the JWE and the meta information to the merchant server |
///
/// An app with its own card form gives a ``FormPresenter``: at `.start` the gateway builds a
/// ``WorldlineForm`` for the product and hands it over; the app's UI binds to it (masks with the cursor,
/// errors per field, the product switch on the IIN and the co-brand choice) and returns when the
/// customer taps pay (or closes the form); the gateway then encrypts the form's values and submits them.
public struct WorldlineGateway: GatewayAppHalf {
    /// The submission kind of the encrypted customer input.
    public static let submissionKind = "encrypted_customer_input"
    /// The submission field carrying the JWE (`encryptedFields` of the vendor SDKs).
    public static let encryptedInputField = "encryptedCustomerInput"
    /// The submission field carrying the app's meta information (Base64 JSON, `encodedClientMetaInfo`).
    public static let clientMetaInfoField = "encodedClientMetaInfo"

    /// What Worldline can do through Till: cards (client-side encrypted), sale and authorise, inquiries
    /// and webhooks.
    public static var capabilities: GatewayCapabilities {
        // Only currencies Worldline's two-decimal amounts express exactly (``WorldlineAmount``): the router never
        // offers Worldline a KWD payment.
        GatewayCapabilities(methods: [.card], currencies: WorldlineAmount.currencies, actions: [.sale, .authorize], supportsInquiry: true,
                            supportsNotifications: true)
    }

    public let gateway: GatewayID
    public var capabilities: GatewayCapabilities { Self.capabilities }
    /// The device description sent to the Client API and forwarded with the payment.
    public let metaInfo: WorldlineClientMetaInfo
    /// Shows a ``WorldlineForm`` in the app's own UI and returns `true` when the customer taps pay, `false`
    /// when they close it. The form is valid when it returns `true` (the gateway checks again).
    public typealias FormPresenter = @Sendable (WorldlineForm) async throws -> Bool
    /// The app's own form UI; `nil`: the generic ``FormSpec`` through the presenter's `collect`.
    public let formPresenter: FormPresenter?
    private let transport: any HTTPTransport
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - id: the gateway id in the merchant's configuration.
    ///   - metaInfo: the device description (`X-GCS-ClientMetaInfo`).
    ///   - transport: how the app reaches the Client API.
    ///   - now: the date card expiry dates are checked against.
    ///   - formPresenter: the app's own form UI, bound to a ``WorldlineForm``.
    public init(id: GatewayID = "worldline", metaInfo: WorldlineClientMetaInfo = .init(platformIdentifier: "Till", screenSize: "0", deviceType: "unknown"),
                transport: any HTTPTransport, now: @escaping @Sendable () -> Date = { Date() }, formPresenter: FormPresenter? = nil) {
        self.gateway = id
        self.metaInfo = metaInfo
        self.formPresenter = formPresenter
        self.transport = transport
        self.now = now
    }

    /// The Client API for a prepared attempt, and the payment context of its amount and country.
    public func clientAPI(for preparation: Preparation) throws(CheckoutError) -> (api: WorldlineClientAPI, context: WorldlinePaymentContext, prepared: WorldlinePreparation) {
        let prepared = try WorldlinePreparation(parameters: preparation.parameters, gateway: gateway)
        guard let apiURL = URL(string: prepared.clientApiUrl), let assetURL = URL(string: prepared.assetUrl) else {
            throw CheckoutError(.invalidField, field: "preparation.parameters.clientApiUrl", message: "not a URL", gateway: gateway)
        }
        let session = WorldlineClientSession(clientSessionId: prepared.clientSessionId, customerId: prepared.customerId,
                                             clientApiURL: apiURL, assetURL: assetURL)
        let api = try WorldlineClientAPI(session: session, metaInfo: metaInfo, transport: transport, gateway: gateway)
        let wire = try WorldlineAmount.wire(preparation.amount, field: "preparation.amount", gateway: gateway)
        let context = WorldlinePaymentContext(amount: Int(wire), currencyCode: preparation.amount.currency.code,
                                              countryCode: prepared.countryCode, isRecurring: prepared.isRecurring, locale: prepared.locale)
        return (api, context, prepared)
    }

    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        let (api, context, prepared) = try clientAPI(for: preparation)
        switch input {
        case .start:
            let product = try await api.paymentProduct(id: try await firstCardProduct(api, context), for: context)
            guard let formPresenter else { return .collect(product.formSpec()) }
            let form = WorldlineForm(api: api, context: context, item: .product(product), now: now)
            guard try await formPresenter(form) else { return .completed(ClientOutcome(.cancelled, message: "the customer closed the form")) }
            await form.settle()
            if let error = await form.errors().first {
                throw CheckoutError(.invalidField, category: .invalidInput, field: "values.\(error.fieldId)", message: error.messageId,
                                    gateway: gateway)
            }
            let input = try await form.customerInput(clientSessionId: prepared.clientSessionId)
            return .submit(try await encrypted(input, api: api))
        case .submit(let values):
            let cardNumber = values[Self.cardNumberField] ?? ""
            let productId = try await productId(forCard: cardNumber, api: api, context: context)
            let product = try await api.paymentProduct(id: productId, for: context)
            return .submit(try await submission(for: api, product: product, values: values.values, clientSessionId: prepared.clientSessionId))
        case .returned, .sdkPrepared:
            throw CheckoutError(.unsupportedAction, field: "input", message: "Worldline's card flow returns only from 3-D Secure", gateway: gateway)
        }
    }

    /// The card-number field of Worldline's card products.
    static let cardNumberField = "cardNumber"

    /// The first product of method `card` on offer, by display order.
    func firstCardProduct(_ api: WorldlineClientAPI, _ context: WorldlinePaymentContext) async throws(CheckoutError) -> Int {
        let products = try await api.paymentProducts(for: context).paymentProducts
        let cards = products.filter { $0.paymentMethod == "card" }
            .sorted { ($0.displayHints.displayOrder ?? Int.max, $0.id) < ($1.displayHints.displayOrder ?? Int.max, $1.id) }
        guard let first = cards.first else {
            throw CheckoutError(.unsupportedMethod, field: "intent.method", message: "Worldline offers no card product for this payment", gateway: gateway)
        }
        return first.id
    }

    /// The product the card number's IIN belongs to, when Worldline supports it in this context.
    /// - Throws: ``CheckoutError`` naming `values.cardNumber` for too few digits, an unknown card or one
    ///   not allowed for this payment.
    func productId(forCard number: String, api: WorldlineClientAPI, context: WorldlinePaymentContext) async throws(CheckoutError) -> Int {
        let digits = number.filter { $0.isASCII && $0.isNumber }
        let details = try await api.iinDetails(partialCardNumber: digits, for: context)
        switch details.status {
        case .supported:
            guard let id = details.paymentProductId else { break }
            return id
        case .existingButNotAllowed:
            throw CheckoutError(.invalidField, category: .invalidInput, field: "values.cardNumber",
                                message: "this card cannot be used for this payment", gateway: gateway)
        default:
            break
        }
        throw CheckoutError(.invalidField, category: .invalidInput, field: "values.cardNumber", message: "the card is not recognised", gateway: gateway)
    }

    /// The submission for values entered against `product`: checked with the product's validators
    /// (unmasked), encrypted to the gateway's current key.
    /// - Throws: ``CheckoutError`` `invalid_field` naming `values.<fieldId>` with the validator's message
    ///   id when a value fails.
    public func submission(for api: WorldlineClientAPI, product: WorldlinePaymentProduct, values: [String: String],
                           clientSessionId: String, accountOnFileId: Int? = nil, tokenize: Bool = false) async throws(CheckoutError) -> Submission {
        var unmasked: [String: String] = [:]
        for field in product.fields {
            guard let value = values[field.id] else { continue }
            unmasked[field.id] = field.mask.map { $0.unformat(value) } ?? value
        }
        let date = now()
        for field in product.fieldsInDisplayOrder {
            let errors = field.dataRestrictions.errors(fieldId: field.id, value: unmasked[field.id] ?? "", values: unmasked, now: date)
            if let error = errors.first {
                throw CheckoutError(.invalidField, category: .invalidInput, field: "values.\(field.id)", message: error.messageId, gateway: gateway)
            }
        }
        let input = WorldlineCustomerInput(
            clientSessionId: clientSessionId, paymentProductId: product.id, accountOnFileId: accountOnFileId, tokenize: tokenize,
            values: product.fieldsInDisplayOrder.compactMap { field in
                unmasked[field.id].flatMap { $0.isEmpty ? nil : WorldlineCustomerInput.KeyValue(key: field.id, value: $0) }
            })
        return try await encrypted(input, api: api)
    }

    /// The submission of `input`: encrypted to the gateway's current key, with the meta information.
    func encrypted(_ input: WorldlineCustomerInput, api: WorldlineClientAPI) async throws(CheckoutError) -> Submission {
        let key = try await api.publicKey()
        let jwe = try WorldlineEncryptor.encrypt(input, to: key)
        return Submission(kind: Self.submissionKind, fields: [Self.encryptedInputField: jwe, Self.clientMetaInfoField: api.metaInfo.encoded])
    }

    /// What the customer's return from 3-D Secure says: nothing final. Worldline appends its own
    /// parameters (`RETURNMAC`, `REF`) to the return URL; the webhook or an inquiry decides.
    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url: ClientOutcome(.pending, message: "back from 3-D Secure; awaiting Worldline's result")
        case .callback(let code, _): ClientOutcome(.unknown, gatewayCode: code)
        case .timedOut: ClientOutcome(.unknown, message: "the customer did not come back")
        case .abandoned: ClientOutcome(.cancelled)
        }
    }
}
