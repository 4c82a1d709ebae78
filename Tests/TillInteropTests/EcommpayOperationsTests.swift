import Foundation
import Testing
import Till
import TillOrchestration
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit
@testable import TillSandbox

/// Till's ecommpay operations (``EcommpayServer/perform(_:)``, ``EcommpayServer/inquireOperation(_:)``, the
/// operation a callback names) against the emulator over real HTTP on 127.0.0.1, and the emulator's Gate
/// operations themselves, both read against `Tests/TillEcommpayTests/Fixtures/operations.json`.
@Suite("ecommpay operations: Till's server half against the emulator")
struct EcommpayOperationsTests {
    static let project = EcommpayEmulator.Project(projectId: 4242, secretKey: "operations-project-secret")

    /// The facts of `Tests/TillEcommpayTests/Fixtures/operations.json` (each names its vendor source).
    static func facts() throws -> JSONValue {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("TillEcommpayTests/Fixtures/operations.json")
        return try JSONValue.parse(Array(try Data(contentsOf: url)))
    }

    /// An emulator in a sandbox, and Till's server half pointed at it.
    struct World {
        let emulator: EcommpayEmulator
        let sandbox: RunningSandbox
        let server: EcommpayServer

        static func with(_ body: (World) async throws -> Void) async throws {
            let emulator = EcommpayEmulator(projects: [project], callbackRetryInterval: .milliseconds(20), callbackMaxAttempts: 2,
                                            callbackTimeout: .seconds(2), timeoutHold: .milliseconds(300))
            let sandbox = try await Sandbox.start(emulators: [emulator])
            let base = sandbox.baseURL(of: emulator)
            let server = EcommpayServer(environment: EcommpayEnvironment(paymentPage: base, gate: base), secret: project.secretKey,
                                        settings: EcommpaySettings(projectId: project.projectId), transport: URLSessionTransport())
            let world = World(emulator: emulator, sandbox: sandbox, server: server)
            do {
                try await body(world)
            } catch {
                await sandbox.stop()
                throw error
            }
            await sandbox.stop()
        }

        /// A card payment made through the SDK stand-in: `auth` holds, `sale` pays.
        func pay(_ attempt: AttemptReference, amount: Int64, action: String, method: String = "card") async throws {
            let params = JSONValue.object([
                .init(key: "project_id", value: .number(String(project.projectId))), .init(key: "payment_id", value: .string(attempt.rawValue)),
                .init(key: "payment_amount", value: .number(String(amount))), .init(key: "payment_currency", value: .string("EUR")),
                .init(key: "customer_id", value: .string("customer-1")), .init(key: "customer_email", value: .string("buyer@example.com")),
                .init(key: "payment_description", value: .string("Green tea")), .init(key: "operation_type", value: .string(action)),
            ])
            let result = try await EcommpayDevice.pay(baseURL: sandbox.baseURL(of: emulator), paramsJSON: params.serialized,
                                                      signature: EcommpaySignature.sdkSign(params, secret: project.secretKey), method: method,
                                                      card: .test(.success))
            #expect(result.status == 0, "\(result)")
        }

        /// The operation request of the `sequence`th `kind` on `attempt`.
        static func request(_ attempt: AttemptReference, _ kind: OperationKind, _ sequence: Int = 1, amount: Int64,
                            method: PaymentMethod = .card, requestId: String? = nil) -> OperationRequest {
            let money = Money(minorUnits: amount, currency: Currency.lookup("EUR")!)
            let intent = PaymentIntent(merchantReference: "order-1", amount: money, method: method, action: .authorize)
            return OperationRequest(reference: OperationReference(attempt: attempt, kind: kind, sequence: sequence), intent: intent,
                                    gatewayReference: attempt.rawValue, amount: money, operationGatewayReference: requestId)
        }

        /// The callback the emulator sends about `attempt` now, signed as it signs it, read by Till.
        func callback(_ attempt: AttemptReference) async throws -> VerifiedNotification {
            let value = try #require(await emulator.lastCallbackValue[EcommpayEmulator.key(project.projectId, attempt.rawValue)])
            let body = EcommpaySignature.signedMessage(value, secret: project.secretKey).serializedBytes
            return try server.verifyNotification(IncomingNotification(headers: ["Content-Type": "application/json"], body: Data(body)))
        }

        func status(_ attempt: AttemptReference) async -> EcommpayEmulator.PaymentSummary? {
            await emulator.payment(projectId: project.projectId, paymentId: attempt.rawValue)
        }
    }

    static func euros(_ minor: Int64) -> Money { Money(minorUnits: minor, currency: Currency.lookup("EUR")!) }

    @Test("the capabilities are the fixture's: capture partial once, cancel, refund partial and several")
    func capabilities() throws {
        let facts = try Self.facts()["capabilities"]
        let server = EcommpayServer(secret: "x", settings: EcommpaySettings(projectId: 1), transport: URLSessionTransport())
        let declared = server.operationCapabilities
        #expect(declared.capture?.partial == (facts?["capture"]?["partial"] == .bool(true)))
        #expect(declared.capture?.multiple == (facts?["capture"]?["multiple"] == .bool(true)))
        #expect(declared.capture?.finalFlag == (facts?["capture"]?["final_flag"] == .bool(true)))
        #expect(declared.offers(.void) == (facts?["void"]?["offered"] == .bool(true)))
        #expect(declared.refund?.partial == (facts?["refund"]?["partial"] == .bool(true)))
        #expect(declared.refund?.multiple == (facts?["refund"]?["multiple"] == .bool(true)))
    }

    @Test("partial capture: pending with Gate's request_id; the capture callback names it with sum_initial as its amount and settles it; a second capture is refused by Gate (failed with its code)")
    func partialCapture() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opscapture00000000000001")
            try await world.pay(attempt, amount: 5000, action: "auth")
            let sent = try await world.server.perform(World.request(attempt, .capture, amount: 3000))
            #expect(sent.status == .pending && sent.amount == Self.euros(3000) && sent.kind == .capture)
            let requestId = try #require(sent.gatewayReference)
            let notification = try await world.callback(attempt)
            let operation = try #require(notification.operation)
            #expect(operation.kind == .capture && operation.status == .succeeded && operation.amount == Self.euros(3000))
            #expect(operation.gatewayReference == requestId && operation.reference == nil)
            #expect(await world.status(attempt)?.status == "success")
            let inquired = try await world.server.inquireOperation(World.request(attempt, .capture, amount: 3000, requestId: requestId))
            #expect(inquired.status == .succeeded && inquired.amount == Self.euros(3000) && inquired.reference?.kind == .capture)
            // Gate refuses a second capture (the hold is gone): failed with the emulator's code, nothing moved.
            let again = try await world.server.perform(World.request(attempt, .capture, 2, amount: 1000))
            #expect(again.status == .failed && again.gatewayCode == "400")
            #expect(await world.emulator.ledger.filter { $0.paymentId == attempt.rawValue }.map(\.amount) == [3000])
        }
    }

    @Test("void: Gate cancel of a hold, the cancel callback settles it; a cancel after a capture is refused")
    func void() async throws {
        try await World.with { world in
            let held = AttemptReference(rawValue: "opsvoid00000000000000001")
            try await world.pay(held, amount: 2500, action: "auth")
            let sent = try await world.server.perform(World.request(held, .void, amount: 2500))
            #expect(sent.status == .pending && sent.gatewayReference != nil)
            let operation = try #require(try await world.callback(held).operation)
            #expect(operation.kind == .void && operation.status == .succeeded && operation.gatewayReference == sent.gatewayReference)
            #expect(await world.status(held)?.status == "cancelled")

            let captured = AttemptReference(rawValue: "opsvoid00000000000000002")
            try await world.pay(captured, amount: 2500, action: "auth")
            _ = try await world.server.perform(World.request(captured, .capture, amount: 2500))
            let late = try await world.server.perform(World.request(captured, .void, amount: 2500))
            #expect(late.status == .failed && late.gatewayMessage?.contains("awaiting capture") == true)
        }
    }

    @Test("partial and several refunds: each callback's sum_initial is that refund and payment.sum the balance; over the balance is refused; the status answer lists each refund by request_id")
    func refunds() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opsrefund000000000000001")
            try await world.pay(attempt, amount: 10_000, action: "sale")
            let first = try await world.server.perform(World.request(attempt, .refund, 1, amount: 2500))
            let firstCallback = try await world.callback(attempt)
            #expect(firstCallback.operation?.amount == Self.euros(2500) && firstCallback.operation?.gatewayReference == first.gatewayReference)
            #expect(firstCallback.report.remaining == Self.euros(7500) && firstCallback.report.status == .partiallyRefunded)
            let second = try await world.server.perform(World.request(attempt, .refund, 2, amount: 7000))
            let secondCallback = try await world.callback(attempt)
            #expect(secondCallback.operation?.amount == Self.euros(7000) && secondCallback.operation?.status == .succeeded)
            #expect(secondCallback.report.remaining == Self.euros(500))
            // More than the balance of 5.00: Gate refuses, nothing is refunded.
            let over = try await world.server.perform(World.request(attempt, .refund, 3, amount: 501))
            #expect(over.status == .failed && over.gatewayCode == "400" && over.gatewayMessage?.contains("balance") == true)
            #expect(await world.status(attempt)?.amount == 500)
            // The inquiry finds each refund by its request_id, with its own amount.
            for (sent, amount) in [(first, Int64(2500)), (second, 7000)] {
                let inquired = try await world.server.inquireOperation(
                    World.request(attempt, .refund, amount: amount, requestId: sent.gatewayReference))
                #expect(inquired.status == .succeeded && inquired.amount == Self.euros(amount))
            }
            // A request Gate never registered is unknown.
            let unknown = try await world.server.inquireOperation(World.request(attempt, .refund, 3, amount: 501, requestId: "nope"))
            #expect(unknown.status == .unknown)
        }
    }

    @Test("a refund Gate accepts and then declines: pending, then the callback says failed with its code; the balance is unchanged")
    func declinedByCallback() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opsdecline00000000000001")
            try await world.pay(attempt, amount: 4000, action: "sale")
            await world.emulator.inject(.decline, path: "refund")
            let sent = try await world.server.perform(World.request(attempt, .refund, amount: 1000))
            #expect(sent.status == .pending)
            let notification = try await world.callback(attempt)
            let operation = try #require(notification.operation)
            #expect(operation.status == .failed && operation.gatewayCode == EcommpayEmulator.declineCode && operation.amount == Self.euros(1000))
            #expect(notification.report.status == .paid && notification.report.amount == Self.euros(4000))
            #expect(await world.status(attempt)?.amount == 4000)
        }
    }

    @Test("faults: HTTP 500 and a dropped answer are unknown outcomes; a dropped answer's refund happened and the inquiry cannot match it without a request_id")
    func faults() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opsfault0000000000000001")
            try await world.pay(attempt, amount: 4000, action: "sale")
            await world.emulator.inject(.serverError, path: "refund")
            let failed = await #expect(throws: CheckoutError.self) {
                _ = try await world.server.perform(World.request(attempt, .refund, 1, amount: 1000))
            }
            #expect(failed?.category == .unknownOutcome)
            #expect(await world.status(attempt)?.amount == 4000)
            await world.emulator.inject(.dropConnection, path: "refund")
            let lost = await #expect(throws: CheckoutError.self) {
                _ = try await world.server.perform(World.request(attempt, .refund, 2, amount: 1000))
            }
            #expect(lost?.category == .unknownOutcome)
            #expect(await world.status(attempt)?.amount == 3000)
            let inquired = try await world.server.inquireOperation(World.request(attempt, .refund, 2, amount: 1000))
            #expect(inquired.status == .unknown)
            // The callback still names the refund by Gate's request id, with its amount.
            let operation = try #require(try await world.callback(attempt).operation)
            #expect(operation.status == .succeeded && operation.amount == Self.euros(1000) && operation.gatewayReference != nil)
        }
    }

    @Test("refused before anything is sent: a capture or cancel of a PayPal payment, a refund of an Alipay payment (no path in any source)")
    func refusedBeforeSending() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opsrefused00000000000001")
            for (kind, method) in [(OperationKind.capture, PaymentMethod.paypal), (.void, .paypal), (.refund, .alipay)] {
                let error = await #expect(throws: CheckoutError.self) {
                    _ = try await world.server.perform(World.request(attempt, kind, amount: 100, method: method))
                }
                #expect(error?.category == .unsupported && error?.field == OperationCapabilities.capabilityName(kind, "method"))
            }
            #expect(await world.emulator.paymentSummaries().isEmpty)
            #expect(await world.emulator.callbacks.isEmpty)
        }
    }

    @Test("the emulator's Gate operation paths are the fixture's, and its refusals keep Gate's refusal shape")
    func emulatorPaths() throws {
        let facts = try Self.facts()
        guard case .array(let items)? = facts["emulated_paths"] else {
            Issue.record("operations.json has no emulated_paths")
            return
        }
        let paths = items.compactMap(\.stringValue)
        #expect(Set(EcommpayEmulator.gatePaths) == Set(paths))
        for method in ["card", "applepay"] {
            for operation in ["capture", "cancel", "refund"] {
                #expect(EcommpayEmulator.gatePaths.contains(method + "/" + operation))
            }
        }
    }
}
