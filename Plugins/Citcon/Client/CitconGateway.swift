import Foundation
import TillGatewayKit

/// Citcon UPI (WeChat Pay, Alipay, UnionPay, PayPal, Venmo, card, Toss, …): the **app half**,
/// a ``GatewayAppHalf``.
///
/// | step | Citcon |
/// |---|---|
/// | Prepare (server) | a server access token creates the charge (`POST /v1/charges`) with the attempt reference as `transaction.reference`; a client token (charge and inquiry only) goes to the app |
/// | Present (app) | a wallet SDK launch with the `mobile_native` content (WeChat Pay, Alipay, UnionPay), or the `mobile_browser` page |
/// | Return (app) | the return URL (custom scheme or universal link) with `citcon_result` and the SDK code (`0`, `-1`, `-2`, `6001`), or the SDK's in-process result with the same codes |
/// | Confirm (server) | the IPN, checked with the API secret (SHA-256 `sign`), or `GET /v1/transactions/{id}` |
///
/// It holds no credentials: an app builds it from the environment alone. The server half, which
/// holds the merchant's API key and secret and does Prepare and Confirm, is `CitconServer` in the
/// `TillCitconServer` module (registered as `CitconPlugin.plugin`), which an app never links.
public struct CitconGateway: GatewayAppHalf {
    /// The gateway id in the merchant's configuration.
    public let gateway: GatewayID
    /// Where the API is; the same as the server's.
    public let environment: CitconEnvironment
    private let api: CitconAPI

    /// - Parameters:
    ///   - id: the gateway id in the merchant's configuration.
    ///   - environment: where the API is; the app must use the same one as the server.
    ///   - transport: how the app follows its charge (``statusUpdates(for:interval:timeout:)``).
    public init(id: GatewayID = "citcon", environment: CitconEnvironment, transport: any HTTPTransport) {
        self.gateway = id
        self.environment = environment
        self.api = CitconAPI(gateway: id, environment: environment, transport: transport)
    }

    /// What Citcon can do through Till, the same for both halves: ``CitconMethods/all``, sale and
    /// authorise, inquiries and notifications.
    public static var capabilities: GatewayCapabilities {
        GatewayCapabilities(methods: CitconMethods.all, actions: [.sale, .authorize], supportsInquiry: true, supportsNotifications: true,
                            notificationURLPerPayment: true)
    }

    /// The same as the type's `capabilities`.
    public var capabilities: GatewayCapabilities { Self.capabilities }

    // MARK: Present (app)

    /// What the server chose from the charge's `payment.client[]`: a wallet launch with the
    /// `mobile_native` entry's parameters (`launch=wallet`), or the `mobile_browser` page in a web
    /// view (`launch=page`).
    /// - Throws: ``CheckoutError`` naming `environment` when the preparation was made in another
    ///   environment than this app's, `payment.client` when there is nothing the app can open, or
    ///   `input` for a form submission (Citcon collects nothing in the app).
    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        guard case .start = input else {
            throw CheckoutError(.invalidField, field: "input", message: "Citcon collects nothing in the app", gateway: gateway)
        }
        let prepared = CitconPreparation(parameters: preparation.parameters)
        guard prepared.environment == environment.name else {
            throw CheckoutError(.misconfigured, field: "environment",
                                message: "the preparation was made in \(prepared.environment ?? "no environment"), this app uses \(environment.name); tokens belong to one environment",
                                gateway: gateway)
        }
        switch prepared.launch {
        case .wallet(let wallet, let content)? where !wallet.isEmpty:
            let scheme = preparation.returnURL?.scheme.flatMap { ["http", "https"].contains($0.lowercased()) ? nil : $0 }
            return .launchWallet(WalletLaunch(wallet: wallet, parameters: content, returnScheme: scheme, returnURL: preparation.returnURL))
        case .page(let text)?:
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                  scheme == "https" || (scheme == "http" && environment.allowsPlainHTTP) else { break }
            return .openURL(url, handoff: .webPage)
        default:
            break
        }
        throw CheckoutError(.gatewayError, category: .unknownOutcome, field: "payment.client",
                            message: "Citcon gave nothing the app can open for \(preparation.method)", gateway: gateway)
    }

    // MARK: Return (app)

    /// What the return says, informationally: the SDK's code (`code`, from the URL or the SDK's
    /// in-process result), else the page's `citcon_result`.
    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url(let url):
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            func value(_ name: String) -> String? { items.last { $0.name == name }?.value }
            if let code = value("code") { return Self.outcome(sdkCode: code, message: value("message")) }
            switch value("citcon_result") {
            case "success": return ClientOutcome(.succeeded, gatewayCode: "0")
            case "fail": return ClientOutcome(.failed, message: "the payment page reported a failure")
            case "cancel": return ClientOutcome(.cancelled)
            default: return ClientOutcome(.unknown, message: "the return carried no result")
            }
        case .callback(let code, let parameters):
            return Self.outcome(sdkCode: code, message: parameters["message"])
        case .timedOut:
            return ClientOutcome(.unknown, message: "the customer did not come back from the wallet or page")
        case .abandoned:
            return ClientOutcome(.unknown, message: "the checkout stopped waiting for the customer")
        }
    }

    /// The SDK's result codes: `0` success, `-1` error, `-2` and `6001` cancelled, others errors. The
    /// SDK's message is kept made safe (``GatewayText/safe(_:limit:)``).
    public static func outcome(sdkCode code: String, message: String? = nil) -> ClientOutcome {
        let safe = GatewayText.safe(message)
        switch code {
        case "0": return ClientOutcome(.succeeded, gatewayCode: code)
        case "-2", "6001": return ClientOutcome(.cancelled, gatewayCode: code, message: safe)
        default: return ClientOutcome(.failed, gatewayCode: code, message: safe)
        }
    }

    /// Maps both of Citcon's vocabularies (the REST answers' and SDK guide's `initiated`, `succeeded`,
    /// `canceled`, … and the IPN document's `success`, `captured`, `cancelled`, `fail`) to Till's.
    /// Anything unlisted is an unknown status: never applied, never success.
    public static func status(_ raw: String) -> PaymentStatus {
        switch raw.lowercased() {
        case "succeeded", "success", "captured": .paid
        case "authorized": .authorized
        case "failed", "fail": .failed
        case "canceled", "cancelled": .cancelled
        case "expired": .expired
        case "initiated", "pending": .pending
        default: PaymentStatus(rawValue: "citcon_status_\(raw)")
        }
    }

    // MARK: Client-side status (app)

    /// The charge of `preparation` as the app may see it, with the client token the server handed over.
    func clientTransaction(_ preparation: Preparation) async throws -> CitconCharge {
        let prepared = CitconPreparation(parameters: preparation.parameters)
        guard let id = prepared.chargeID, let token = prepared.accessToken else {
            throw CheckoutError(.missingField, field: "preparation.parameters", message: "no charge id or client token", gateway: gateway)
        }
        guard prepared.environment == environment.name else {
            throw CheckoutError(.misconfigured, field: "environment", message: "the preparation was made in another environment", gateway: gateway)
        }
        return try await api.send(.get, "transactions/\(id)", as: CitconCharge.self, bearer: token)
    }
}
