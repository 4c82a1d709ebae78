import Foundation
import Till

/// The currencies whose amounts Till sends to PayFort (Amazon Payment Services).
///
/// APS's documents say an amount is multiplied "by a factor that matches the ISO 4217 specification for that
/// currency" (paymentservices.amazon.com "Handling currencies in operations": 100 JOD is `100000`), and publish no
/// table. The vendor's own code disagrees with itself wherever the ISO exponent is neither 2 nor 3:
/// - payfort/payfort-php-sdk@f8d2366 `PaymentDTO::getCurrencyDecimalPoints` and payfort/woocommerce-payfort@941fe9d
///   `APS_Helper::get_currency_decimal_points` follow ISO for JPY, KRW, CLP … (0) but leave out XOF and XPF (ISO 0),
///   UYI (0) and UYW (4), which they send with 2 decimals;
/// - payfort/magento2-payfort@708923f `getCurrencyDecimalPoint`, payfort/opencart3-payfort@ba4c924 and
///   payfort/prestashop-payfort@7aabf85 know only the seven 3-decimal currencies and send every other currency with
///   2 decimals (JPY too); payfort/payfort-java-sdk@a1dee6a knows nine currencies, all 2 or 3;
/// - payfort/aps-sfcc@d47e564 uses the platform's ISO exponent.
///
/// All of them agree for ISO's 2-decimal currencies and for the seven 3-decimal ones (BHD, IQD, JOD, KWD, LYD, OMR,
/// TND). For a 0- or 4-decimal currency one of PayFort's own integrations would charge 100 times another's, so Till
/// refuses it by name rather than guess.
public enum PayFortCurrencies {
    /// Whether every vendor source agrees on the currency's exponent (ISO 4217's 2 or 3).
    public static func supports(_ currency: Currency) -> Bool { currency.minorUnits == 2 || currency.minorUnits == 3 }

    /// The ISO 4217 currencies PayFort amounts are sent in: the gateway's capability.
    public static let all: Set<Currency> = Set(Currency.allISO.filter(supports))

    /// Refuses a currency the sources disagree on.
    /// - Throws: ``CheckoutError`` `unsupported_currency` naming `field`.
    public static func check(_ money: Money, field: String, gateway: GatewayID) throws(CheckoutError) {
        guard supports(money.currency) else {
            throw CheckoutError(.unsupportedCurrency, field: field,
                                message: "PayFort's own integrations disagree on how many decimals \(money.currency.code) has "
                                    + "(ISO 4217: \(money.currency.minorUnits)); Till does not guess", gateway: gateway)
        }
    }
}
