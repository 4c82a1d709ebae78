import Foundation

/// The app's half of a gateway module: **Present** and **Return**.
///
/// | step | runs on | requirement |
/// |---|---|---|
/// | Prepare | merchant server (holds secrets) | ``GatewayServerHalf/prepare(_:)`` |
/// | Present | app | ``present(_:input:)`` says what the app must do next: open a URL, launch a wallet or a vendor SDK, show a form, or submit what the customer entered to the merchant server |
/// | Submit (some gateways) | app → merchant server → gateway | ``GatewayServerHalf/submit(_:context:)`` |
/// | Return | app | ``interpretReturn(_:for:)`` reads a return URL or a vendor SDK's in-process result |
/// | Confirm | merchant server | ``GatewayServerHalf/verifyNotification(_:)`` and ``GatewayServerHalf/inquire(_:)`` |
///
/// The result of Present and Return is never final: the app may show it, but money has moved only
/// when Confirm says so. A gateway module ships this half in the module an app links (`TillPayFort`,
/// `TillCitcon`, …), built from non-secret settings only; the half that holds credentials conforms to
/// ``GatewayServerHalf`` and lives in the module's server target, which an app never links. A conforming
/// type is a value configured explicitly (no shared instances). Requirements throw ``CheckoutError``;
/// anything else that escapes is treated by Till as an unknown outcome.
///
/// See docs/implementing-a-gateway.md.
public protocol GatewayAppHalf: Sendable {
    /// The gateway's identifier, unique among the gateways of a merchant.
    var gateway: GatewayID { get }
    /// What the gateway can do: methods, currencies, countries, actions.
    var capabilities: GatewayCapabilities { get }

    /// **Present** (app): the next step for the app, first with `.start`, then after each form submission.
    func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep

    /// **Return** (app): what a matched return URL or a vendor SDK's in-process result says. Informational only.
    func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome

    /// What only the app knows that the server half needs with an attempt (PayFort: the FORT SDK's
    /// `device_id`), sent with every prepare as ``PrepareRequest/appData``, keyed by the names the module
    /// declares in ``GatewayCapabilities/appDataKeys``. Nothing by default.
    func appData() async throws -> [String: String]
}

extension GatewayAppHalf {
    public func appData() async throws -> [String: String] { [:] }
}
