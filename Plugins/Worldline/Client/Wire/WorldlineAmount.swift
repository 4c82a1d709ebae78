import Foundation
import Till

/// Worldline Connect's amounts: "in cents with each amount having 2 decimals, regardless of the actual decimal
/// places the currency has. So JPY has no decimals in it currency, but you will need to add two zeros as cents"
/// (the Connect API reference, `services/convertAmount` in both the Server and the Client API; connect-sdk-python3
/// `amount_of_money.py`: "Amount in cents and always having 2 decimals"; `capture_payment_request.py`: "single
/// digit currencies are presumed to have 2 digits"; Worldline's Magento 2 and Salesforce Connect plugins multiply
/// every currency by 100).
///
/// So the wire integer is the amount in units of 1/100 of the currency's major unit. Till's ``Money`` is in the
/// currency's ISO 4217 minor units, and the two differ wherever the exponent is not 2:
/// - exponent 2 (EUR, USD, …): the same number;
/// - exponent 0 (JPY, KRW, …): the wire integer is 100 × Till's (¥1000 is `100000`), and a wire integer that is not
///   a whole number of yen is refused;
/// - exponent 3 or 4 (KWD, BHD, JOD, OMR, TND, IQD, LYD; CLF, UYW): **refused**. The rule leaves no place for a third
///   decimal, and no vendor source shows what Connect does with one or how it reports such amounts.
///
/// Every amount Till sends to Worldline or reads from it passes through here, on the app's side and the server's.
public enum WorldlineAmount {
    /// Whether Worldline amounts can express the currency exactly (its ISO exponent is 0 or 2).
    public static func supports(_ currency: Currency) -> Bool { currency.minorUnits == 0 || currency.minorUnits == 2 }

    /// The ISO 4217 currencies Worldline amounts can express: the gateway's capability.
    public static let currencies: Set<Currency> = Set(Currency.allISO.filter(supports))

    /// The wire integer for `money`.
    /// - Throws: ``CheckoutError`` `unsupported_currency` naming `field`'s currency for a currency whose exponent is
    ///   neither 0 nor 2; `invalid_amount` naming `field` when the integer would overflow.
    public static func wire(_ money: Money, field: String = "amount", gateway: GatewayID = "worldline") throws(CheckoutError) -> Int64 {
        let currency = money.currency
        guard supports(currency) else { throw unsupported(currency, field: field, gateway: gateway) }
        guard currency.minorUnits == 0 else { return money.minorUnits }
        let (scaled, overflow) = money.minorUnits.multipliedReportingOverflow(by: 100)
        guard !overflow else { throw CheckoutError(.invalidAmount, field: field, message: "\(money) is too large for Worldline", gateway: gateway) }
        return scaled
    }

    /// The money a wire integer in `currency` stands for.
    /// - Throws: ``CheckoutError`` `unsupported_currency` for a currency whose exponent is neither 0 nor 2;
    ///   `invalid_amount` naming `field` for a zero-decimal amount that is not a whole number of the currency.
    public static func money(wire amount: Int64, currency: Currency, field: String = "amount", gateway: GatewayID = "worldline") throws(CheckoutError) -> Money {
        guard supports(currency) else { throw unsupported(currency, field: field, gateway: gateway) }
        guard currency.minorUnits == 0 else { return Money(minorUnits: amount, currency: currency) }
        guard amount % 100 == 0 else {
            throw CheckoutError(.invalidAmount, field: field,
                                message: "\(amount) hundredths of \(currency.code), which has no decimals, is not a whole amount", gateway: gateway)
        }
        return Money(minorUnits: amount / 100, currency: currency)
    }

    static func unsupported(_ currency: Currency, field: String, gateway: GatewayID) -> CheckoutError {
        CheckoutError(.unsupportedCurrency, field: field,
                      message: "Worldline Connect amounts have two decimals whatever the currency; \(currency.code) has \(currency.minorUnits), "
                        + "and no vendor source says how Connect takes them, so Till does not send them", gateway: gateway)
    }
}
