import Foundation
import TillGatewayKit

/// iPayNow (现在支付) cross-border: the **app half**, a ``GatewayAppHalf`` built without credentials.
///
/// | step | where | what |
/// |---|---|---|
/// | Prepare | merchant server | builds the order from the stored payment (``IPayNowOrder``), checks it against appendix A, MD5-signs it with the app key and hands the app `payData`; no call to iPayNow |
/// | Present | app | `.launchWallet` (``sdkWallet``) with `payData` and the app's URL scheme, for the app's adapter to pass to `IPNCrossBorderPluginAPi pay:AndScheme:viewController:delegate:` |
/// | Return | app | the delegate's `iPNCrossBorderPluginResult:erroCode:erroInfo:` (``IPayNowCodes/PayResult``, `PE001`–`PE005`), or the customer back on the scheme: informational only |
/// | Confirm | merchant server | the N001 notification (authoritative, MD5-verified) or an MQ001 query |
///
/// The app checks that `payData` is this attempt's (order number, amount, currency, channel) before
/// it launches anything; it cannot check the signature, which needs the app key only the server holds.
public struct IPayNowGateway: GatewayAppHalf {
    /// The gateway's identifier (`"ipaynow"` unless a merchant runs several iPayNow apps).
    public let gateway: GatewayID

    /// The app half: nothing to configure but the id; the plugin talks to iPayNow itself.
    public init(id: GatewayID = "ipaynow") {
        self.gateway = id
    }

    /// Alipay, and WeChat Pay where the merchant enables it (the iOS plugin 1.0.1 opens Alipay only);
    /// sale only; in the appendix C settlement currencies but JPY (``IPayNowCodes/chargeableCurrencies``),
    /// or in CNY (charged in RMB fen with `mhtAmtCurrFlag=0` against the merchant's settlement
    /// currency); MQ001 inquiry and N001 notifications.
    public static let capabilities = GatewayCapabilities(
        methods: [.alipay, .wechatPay],
        currencies: Set((IPayNowCodes.chargeableCurrencies + ["CNY"]).compactMap { Currency.lookup($0) }),
        actions: [.sale], supportsInquiry: true, supportsNotifications: true, notificationURLPerPayment: true)

    /// The same as the type's `capabilities`.
    public var capabilities: GatewayCapabilities { Self.capabilities }

    /// The ``WalletLaunch/wallet`` of iPayNow's cross-border plugin.
    public static let sdkWallet = "ipaynow"
    /// The preparation parameter (and launch parameter) holding the signed `payData`.
    public static let payDataParameter = "payData"
    /// The launch parameter holding the app's URL scheme (`pay:AndScheme:`).
    public static let schemeParameter = "scheme"
    /// The ``SDKResult`` parameter an adapter fills with the delegate's `erroCode`.
    public static let errorCodeParameter = "erroCode"
    /// The ``SDKResult`` parameter an adapter fills with the delegate's `erroInfo`.
    public static let errorInfoParameter = "erroInfo"

    // MARK: Present (app)

    /// **Present**: `.start` → `.launchWallet` with `payData` (exactly as signed) and the scheme of
    /// the preparation's return URL.
    /// - Throws: ``CheckoutError`` naming `preparation.parameters.payData` (or the field inside it)
    ///   when the order is not this attempt's, `returnURL` when the app has no custom scheme to come
    ///   back on, `input` for anything but `.start` (the plugin collects nothing in the app).
    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        guard case .start = input else {
            throw CheckoutError(.unsupportedAction, field: "input", message: "iPayNow's plugin collects nothing in the app", gateway: gateway)
        }
        guard let payData = preparation.parameters[Self.payDataParameter], !payData.isEmpty else {
            throw CheckoutError(.missingField, field: "preparation.parameters.\(Self.payDataParameter)",
                                message: "the server signed no order", gateway: gateway)
        }
        let order = try IPayNowPayData(payData, field: "preparation.parameters.\(Self.payDataParameter)")
        try order.check(belongsTo: preparation, gateway: gateway)
        guard let returnURL = preparation.returnURL, let scheme = returnURL.scheme,
              !["http", "https"].contains(scheme.lowercased()) else {
            throw CheckoutError(.misconfigured, field: "returnURL",
                                message: "iPayNow's plugin returns to the app on a custom URL scheme; register one", gateway: gateway)
        }
        return .launchWallet(WalletLaunch(wallet: Self.sdkWallet, parameters: [Self.payDataParameter: payData, Self.schemeParameter: scheme],
                                          returnScheme: scheme, returnURL: returnURL))
    }

    // MARK: Return (app)

    /// **Return**: the plugin delegate's result (``IPayNowCodes/PayResult`` as the code, `erroCode`
    /// and `erroInfo` as parameters; a bare `PE00x` code is read as a failure with that code), or the
    /// customer back on the app's scheme. Informational: iPayNow's N001 notification decides (iOS
    /// guide 1.1 step 5, "交易状态以商户后台收到的支付结果通知为准").
    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .callback(let code, let parameters):
            return Self.pluginOutcome(code: code, parameters: parameters)
        case .url:
            return ClientOutcome(.pending, message: "the customer came back to the app; iPayNow's notification decides")
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back from iPayNow's plugin")
        }
    }

    /// What the delegate's `iPNCrossBorderPluginResult:erroCode:erroInfo:` means for the app.
    static func pluginOutcome(code: String, parameters: [String: String]) -> ClientOutcome {
        let errorCode = parameters[errorCodeParameter].flatMap { $0.isEmpty ? nil : GatewayText.safe($0) }
        let info = parameters[errorInfoParameter].flatMap { $0.isEmpty ? nil : GatewayText.safe($0) }
        if let plugin = IPayNowCodes.PluginError(rawValue: code) {
            return ClientOutcome(plugin.mayHavePaid ? .unknown : .failed, gatewayCode: plugin.rawValue, message: info)
        }
        guard let result = IPayNowCodes.PayResult(code: code) else {
            return ClientOutcome(.unknown, gatewayCode: errorCode, message: "a plugin result Till does not know")
        }
        switch result {
        case .success:
            return ClientOutcome(.succeeded, gatewayCode: errorCode, message: info)
        case .cancel:
            return ClientOutcome(.cancelled, gatewayCode: errorCode, message: info)
        case .fail:
            // A connection error (PE002) may come after the order reached iPayNow: not a definite failure.
            if let known = errorCode.flatMap(IPayNowCodes.PluginError.init(rawValue:)), known.mayHavePaid {
                return ClientOutcome(.unknown, gatewayCode: known.rawValue, message: info)
            }
            return ClientOutcome(.failed, gatewayCode: errorCode, message: info)
        case .unknown:
            return ClientOutcome(.unknown, gatewayCode: errorCode ?? IPayNowCodes.PluginError.statusUnknown.rawValue, message: info)
        }
    }
}

/// A signed `payData` read back by the app: the fields of the order, for checking that it is the
/// attempt's before the plugin is launched. Nothing here is trusted beyond that check.
public struct IPayNowPayData: Sendable, Hashable {
    /// The fields by name (`mhtReserved` URL-decoded once, as it was encoded after signing).
    public let fields: [String: String]

    /// Reads `k=v&…` as the plugin splits it (on `&`, then on the first `=`).
    /// - Throws: ``CheckoutError`` naming `<field>` for an empty segment or a nameless one,
    ///   `<field>.<name>` for a name given twice or a required field missing.
    public init(_ text: String, field: String) throws(CheckoutError) {
        var fields: [String: String] = [:]
        for segment in text.split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = segment.firstIndex(of: "="), equals != segment.startIndex else {
                throw CheckoutError(.invalidField, field: field, message: "every part of payData is name=value")
            }
            let name = String(segment[..<equals])
            var value = String(segment[segment.index(after: equals)...])
            if name == "mhtReserved" {
                guard let decoded = value.removingPercentEncoding else {
                    throw CheckoutError(.invalidField, field: "\(field).mhtReserved", message: "a bad percent escape")
                }
                value = decoded
            }
            guard fields.updateValue(value, forKey: name) == nil else {
                throw CheckoutError(.duplicateField, field: "\(field).\(name)", message: "appears twice")
            }
        }
        for required in ["appId", "mhtOrderNo", "mhtOrderAmt", "mhtCurrencyType", "mhtAmtCurrFlag", "payChannelType",
                         "mhtSignType", "mhtSignature"] where (fields[required] ?? "").isEmpty {
            throw CheckoutError(.missingField, field: "\(field).\(required)", message: "is required")
        }
        self.fields = fields
        self.field = field
    }

    private let field: String

    /// Checks that the order is `preparation`'s: its order number, amount, currency, channel and
    /// sign type; the signature's shape (32 hex digits), not its value.
    public func check(belongsTo preparation: Preparation, gateway: GatewayID) throws(CheckoutError) {
        func fail(_ name: String, _ message: String) -> CheckoutError {
            CheckoutError(.invalidField, field: "\(field).\(name)", message: message, gateway: gateway)
        }
        guard fields["mhtOrderNo"] == preparation.attempt.rawValue else { throw fail("mhtOrderNo", "the order is not this attempt's") }
        guard fields["mhtOrderAmt"] == String(preparation.amount.minorUnits) else { throw fail("mhtOrderAmt", "not this attempt's amount") }
        switch fields["mhtAmtCurrFlag"] {
        case IPayNowCodes.AmountCurrency.settlement.rawValue:
            guard fields["mhtCurrencyType"] == preparation.amount.currency.code else { throw fail("mhtCurrencyType", "not this attempt's currency") }
        case IPayNowCodes.AmountCurrency.renminbi.rawValue:
            guard preparation.amount.currency.code == "CNY" else { throw fail("mhtAmtCurrFlag", "0 (RMB fen) for an attempt not in CNY") }
        default:
            throw fail("mhtAmtCurrFlag", "0 or 1")
        }
        guard let channel = fields["payChannelType"].flatMap(IPayNowCodes.Channel.init(rawValue:)), channel.method == preparation.method else {
            throw fail("payChannelType", "not this attempt's payment method")
        }
        guard fields["mhtSignType"] == IPayNowCodes.signTypeMD5 else { throw fail("mhtSignType", "must be MD5") }
        guard let signature = fields["mhtSignature"], signature.utf8.count == 32, Hex.decode(signature) != nil else {
            throw fail("mhtSignature", "32 hexadecimal digits")
        }
    }
}
