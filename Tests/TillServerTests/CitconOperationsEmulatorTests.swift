import Foundation
import Testing
import Till
import TillOrchestration
import TillCitconServer
import TillGatewayKit
@testable import TillSandbox

/// ``CitconServer``'s operations against the Citcon emulator over real HTTP on 127.0.0.1: refunds (partial,
/// several, over the charge, faults), the refund IPN the emulator sends, and capture and void refused before
/// anything reaches it. (In this target because it is the one that builds both the plugin and the sandbox.)
@Suite("Citcon operations against the emulator")
struct CitconOperationsEmulatorTests {
    static let apiKey = "citcon-ops-key"
    static let apiSecret = "citcon-ops-secret"
    static let usd = Currency.lookup("USD")!

    struct World {
        let emulator: CitconEmulator
        let sandbox: RunningSandbox
        let server: CitconServer

        static func with(_ body: (World) async throws -> Void) async throws {
            let emulator = CitconEmulator(merchants: [.init(apiKey: apiKey, apiSecret: apiSecret)], ipnRetryInterval: .milliseconds(10),
                                          ipnMaxAttempts: 1, ipnTimeout: .milliseconds(500), timeoutHold: .milliseconds(200))
            let sandbox = try await Sandbox.start(emulators: [emulator])
            let server = CitconServer(environment: .custom(sandbox.baseURL(of: emulator)),
                                      credentials: CitconCredentials(apiKey: apiKey, apiSecret: apiSecret), transport: URLSessionTransport())
            let world = World(emulator: emulator, sandbox: sandbox, server: server)
            do {
                try await body(world)
            } catch {
                await sandbox.stop()
                throw error
            }
            await emulator.waitForNotifications()
            await sandbox.stop()
        }

        /// A PayPal charge created by Till's Prepare and paid by the customer; its id.
        func paidCharge(_ attempt: AttemptReference, amount: Int64 = 1999) async throws -> String {
            let intent = PaymentIntent(merchantReference: "order-ops", amount: Money(minorUnits: amount, currency: usd), country: try CountryCode("US"),
                                       method: .paypal, customer: Customer(reference: "cust-ops", email: "ada@example.com"), description: "ops")
            let preparation = try await server.prepare(AttemptContext(intent: intent, attempt: attempt, returnURL: URL(string: "shop://return"),
                                                                      notificationURL: URL(string: "http://127.0.0.1:9/ipn")))
            let id = try #require(preparation.gatewayReference)
            #expect(await emulator.settle(id, outcome: .complete)?.state == .succeeded)
            return id
        }

        static func request(_ attempt: AttemptReference, charge: String?, _ sequence: Int = 1, kind: OperationKind = .refund, amount: Int64,
                            succeededBefore: Int64? = nil) -> OperationRequest {
            OperationRequest(reference: OperationReference(attempt: attempt, kind: kind, sequence: sequence),
                             intent: PaymentIntent(merchantReference: "order-ops", amount: Money(minorUnits: 1999, currency: usd), method: .paypal),
                             gatewayReference: charge, amount: Money(minorUnits: amount, currency: usd),
                             succeededBefore: succeededBefore.map { Money(minorUnits: $0, currency: usd) })
        }

        /// The last refund IPN the emulator sent, read by Till.
        func lastRefundIPN() async throws -> VerifiedNotification {
            await emulator.waitForNotifications()
            let sent = try #require(await emulator.notifications.last { $0.body.contains("transaction_type=refund") || $0.body.contains("\"transaction_type\":\"refund\"") })
            return try server.verifyNotification(IncomingNotification(headers: ["Content-Type": sent.contentType], body: Data(sent.body.utf8)))
        }
    }

    @Test("two partial refunds: each succeeded with the refund's own id and amount; the inquiry confirms each from the running total; the emulator's refund IPN settles nothing by amount")
    func partialRefunds() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opscitcon000000000000001")
            let charge = try await world.paidCharge(attempt)
            let first = try await world.server.perform(World.request(attempt, charge: charge, 1, amount: 500))
            #expect(first.status == .succeeded && first.amount == Money(minorUnits: 500, currency: Self.usd))
            #expect(first.gatewayReference != nil && first.gatewayReference != charge)
            let second = try await world.server.perform(World.request(attempt, charge: charge, 2, amount: 700))
            #expect(second.status == .succeeded && second.amount == Money(minorUnits: 700, currency: Self.usd))
            let inquired = try await world.server.inquireOperation(World.request(attempt, charge: charge, 2, amount: 700, succeededBefore: 500))
            #expect(inquired.status == .succeeded)
            let ipn = try await world.lastRefundIPN()
            let operation = try #require(ipn.operation)
            #expect(operation.kind == .refund && operation.status == .succeeded && operation.amount == nil)
            #expect(ipn.report.attempt == attempt && ipn.confirmBeforeApplying)
        }
    }

    @Test("over the charge: 4202 failed and nothing refunded; a lost answer is an unknown outcome the inquiry settles as succeeded; HTTP 500 one it settles as failed")
    func limitsAndFaults() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opscitcon000000000000002")
            let charge = try await world.paidCharge(attempt, amount: 1000)
            let over = try await world.server.perform(World.request(attempt, charge: charge, 1, amount: 1001))
            #expect(over.status == .failed && over.gatewayCode == "4202")

            await world.emulator.inject(.dropConnection, path: "refunds")
            let lost = await #expect(throws: CheckoutError.self) {
                _ = try await world.server.perform(World.request(attempt, charge: charge, 2, amount: 400))
            }
            #expect(lost?.category == .unknownOutcome)
            #expect(try await world.server.inquireOperation(World.request(attempt, charge: charge, 2, amount: 400)).status == .succeeded)

            await world.emulator.inject(.serverError, path: "refunds")
            let down = await #expect(throws: CheckoutError.self) {
                _ = try await world.server.perform(World.request(attempt, charge: charge, 3, amount: 100))
            }
            #expect(down?.category == .unknownOutcome)
            let settled = try await world.server.inquireOperation(World.request(attempt, charge: charge, 3, amount: 100, succeededBefore: 400))
            #expect(settled.status == .failed)
        }
    }

    @Test("capture and void are refused before anything reaches the emulator")
    func refusedBeforeSending() async throws {
        try await World.with { world in
            let attempt = AttemptReference(rawValue: "opscitcon000000000000003")
            for kind in [OperationKind.capture, .void] {
                let error = await #expect(throws: CheckoutError.self) {
                    _ = try await world.server.perform(World.request(attempt, charge: "2000470537621948100613", kind: kind, amount: 100))
                }
                #expect(error?.category == .unsupported)
            }
            #expect(await world.emulator.ledger.isEmpty)
            #expect(await world.emulator.notifications.isEmpty)
        }
    }
}
