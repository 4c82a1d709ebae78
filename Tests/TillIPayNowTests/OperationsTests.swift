import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting
@testable import TillIPayNowServer

/// iPayNow cross-border offers no operation Till can send on a trustworthy source (docs/gateways/ipaynow.md,
/// "Operations"): the server half declares none, and every capture, void and refund is refused before anything
/// leaves the process.
@Suite("iPayNow: no capture, void or refund")
struct IPayNowOperationsTests {
    @Test("the server half declares no operations")
    func declaresNone() {
        let capabilities = Setup.server().operationCapabilities
        #expect(capabilities == .none)
        for kind in OperationKind.allCases { #expect(!capabilities.offers(kind)) }
    }

    @Test("perform and inquire refuse every kind as unsupported, naming the capability, and send nothing", arguments: OperationKind.allCases)
    func refuses(kind: OperationKind) async throws {
        let transport = RecordingTransport()
        let server = Setup.server(transport)
        let operation = OperationRequest(reference: OperationReference(attempt: Setup.attempt, kind: kind, sequence: 1), intent: Setup.intent(),
                                         gatewayReference: "300120171108101010101010", amount: Setup.money(1050, "NZD"))
        let performed = await #expect(throws: CheckoutError.self) { try await server.perform(operation) }
        #expect(performed?.category == .unsupported && performed?.field == "operations.\(kind.rawValue)")
        let inquired = await #expect(throws: CheckoutError.self) { try await server.inquireOperation(operation) }
        #expect(inquired?.category == .unsupported)
        #expect(transport.requests.isEmpty)
    }
}
