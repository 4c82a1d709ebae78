// Plugins/Toy/Client/ToyGateway.swift in a real module: the app half. No credentials.

import Foundation
import TillGatewayKit

/// Toy Pay's app half: opens the order's payment page, and reads where the page sends the customer back.
public struct ToyGateway: GatewayAppHalf {
    /// What Toy Pay can do; the server half and the plugin use the same value.
    public static let capabilities = GatewayCapabilities(methods: [.card], actions: [.sale],
                                                         supportsInquiry: true, supportsNotifications: true)

    public let gateway: GatewayID
    public var capabilities: GatewayCapabilities { Self.capabilities }
    /// Toy Pay's base URL: the payment page must be on its host.
    public let baseURL: URL

    public init(id: GatewayID, baseURL: URL) {
        self.gateway = id
        self.baseURL = baseURL
    }

    /// The preparation parameter carrying the order's payment page.
    public static let payURLParameter = "pay_url"

    // MARK: Present

    public func present(_ preparation: Preparation, input: PresentInput) async throws -> NextStep {
        guard case .start = input else {
            throw CheckoutError(.unsupportedAction, field: "input", message: "Toy Pay has no form", gateway: gateway)
        }
        let field = "preparation.parameters.\(Self.payURLParameter)"
        guard let text = preparation.parameters[Self.payURLParameter] else {
            throw CheckoutError(.missingField, field: field, message: "the preparation has no payment page", gateway: gateway)
        }
        guard let page = URL(string: text), page.scheme == baseURL.scheme, page.host == baseURL.host, page.port == baseURL.port else {
            throw CheckoutError(.invalidField, field: field, message: "the payment page is not on Toy Pay's host", gateway: gateway)
        }
        return .openURL(page, handoff: .webPage)
    }

    // MARK: Return

    public func interpretReturn(_ event: ReturnEvent, for preparation: Preparation) -> ClientOutcome {
        switch event {
        case .url(let url):
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let results = items.filter { $0.name == "toy_result" }
            guard results.count == 1, let result = results[0].value else {
                return ClientOutcome(.unknown, message: "the return carries no result")
            }
            switch result {
            case "paid": return ClientOutcome(.succeeded, gatewayCode: result)
            case "declined": return ClientOutcome(.failed, gatewayCode: result)
            case "cancelled": return ClientOutcome(.cancelled, gatewayCode: result)
            default: return ClientOutcome(.unknown, gatewayCode: GatewayText.safe(result, limit: 32))
            }
        case .callback:
            return ClientOutcome(.unknown, message: "Toy Pay has no SDK")
        case .timedOut, .abandoned:
            return ClientOutcome(.unknown, message: "the customer did not come back")
        }
    }

    // MARK: Statuses

    /// Toy Pay's order status as Till's. Anything unlisted stays an unknown status (never success).
    public static func status(_ raw: String) -> PaymentStatus {
        switch raw {
        case "open": .pending
        case "paid": .paid
        case "declined": .failed
        case "cancelled": .cancelled
        default: PaymentStatus(rawValue: "toy_status_\(raw)")
        }
    }
}
