import Foundation

/// What the gateway supports, declared by the module and used by the router's eligibility filter.
public struct GatewayCapabilities: Hashable, Sendable, Codable {
    public var methods: Set<PaymentMethod>
    /// The accepted currencies; `nil` means any ISO 4217 currency.
    public var currencies: Set<Currency>?
    /// The accepted customer countries; `nil` means any.
    public var countries: Set<CountryCode>?
    public var actions: Set<PaymentAction>
    /// Whether ``GatewayAppHalf/inquire(_:)`` works. Without it an unknown outcome stays unknown.
    public var supportsInquiry: Bool
    /// Whether the gateway sends server-to-server notifications.
    public var supportsNotifications: Bool
    /// The gateway's documented lifetime of an attempt, in seconds: past it, an attempt the gateway says
    /// it never saw can never be charged, and the reconciler expires it. `nil`: never expired that way.
    public var attemptLifetimeSeconds: Int?
    /// What only the app knows that this gateway needs with an attempt (``PrepareRequest/appData``): the keys
    /// its app half sends when it prepares (PayFort's FORT SDK: `device_id`). The server refuses a key no
    /// gateway module declares.
    public var appDataKeys: Set<String>
    /// How long, by the gateway's sources, a customer can take to finish what an attempt handed them (a 3-D
    /// Secure page, the gateway's SDK), counted from the attempt's submit (or its start, without one): past it,
    /// an attempt the gateway still reports waiting for the customer (``waitingForCustomerCodes``) can no longer
    /// be finished, and the reconciler closes it as expired so the customer may pay again. A later verified
    /// success still wins (an expired payment may become paid, never the reverse). `nil`: a pending attempt
    /// stays pending until the gateway says otherwise.
    public var abandonedAttemptSeconds: Int?
    /// The gateway codes that say an attempt waits for the customer (PayFort: `20064`, 3-D Secure requested): only
    /// an attempt the gateway reports pending with one of these is ever closed after ``abandonedAttemptSeconds``.
    /// Any other pending answer (uncertain, on hold, no status) stays open until the gateway says more.
    public var waitingForCustomerCodes: Set<String>
    /// The gateway is told with each payment where to post its notification (Citcon's `urls.ipn`, iPayNow's
    /// `notifyUrl`), so the server's `publicURL` must be set wherever it is configured; gateways whose endpoint is
    /// set once in their back office (PayFort, Worldline, ecommpay) do not need it.
    public var notificationURLPerPayment: Bool

    public init(methods: Set<PaymentMethod>, currencies: Set<Currency>? = nil, countries: Set<CountryCode>? = nil,
                actions: Set<PaymentAction> = [.sale], supportsInquiry: Bool = true, supportsNotifications: Bool = true,
                attemptLifetimeSeconds: Int? = nil, appDataKeys: Set<String> = [], abandonedAttemptSeconds: Int? = nil,
                waitingForCustomerCodes: Set<String> = [], notificationURLPerPayment: Bool = false) {
        self.notificationURLPerPayment = notificationURLPerPayment
        self.attemptLifetimeSeconds = attemptLifetimeSeconds
        self.abandonedAttemptSeconds = abandonedAttemptSeconds
        self.waitingForCustomerCodes = waitingForCustomerCodes
        self.appDataKeys = appDataKeys
        self.methods = methods
        self.currencies = currencies
        self.countries = countries
        self.actions = actions
        self.supportsInquiry = supportsInquiry
        self.supportsNotifications = supportsNotifications
    }

    /// Why this gateway cannot take `intent`, or an empty list when it can.
    public func ineligibility(for intent: PaymentIntent) -> [String] {
        var reasons: [String] = []
        if !methods.contains(intent.method) { reasons.append("method \(intent.method) not supported") }
        if let currencies, !currencies.contains(intent.amount.currency) {
            reasons.append("currency \(intent.amount.currency.code) not supported")
        }
        if let countries {
            if let country = intent.country {
                if !countries.contains(country) { reasons.append("country \(country.code) not supported") }
            } else {
                reasons.append("country required but not given")
            }
        }
        if !actions.contains(intent.action) { reasons.append("action \(intent.action.rawValue) not supported") }
        return reasons
    }
}
