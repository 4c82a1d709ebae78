import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillSandbox
import TillWorldline
import TillWorldlineServer

/// The server half's operations (capture, void, refund) against the Worldline emulator over real HTTP on 127.0.0.1: the
/// emulator is written from the vendor's sources, so these check that what the plugin sends is what the other party takes,
/// and that it reads each answer, refusal and lost answer as the operation model requires.
@Suite("Worldline operations: the server half against the emulator")
struct WorldlineOperationsTests {
    static let eur = try! Currency(code: "EUR")  // swiftlint:disable:this force_try

    /// Every request the plugin sends, counted before it goes out (to prove a refusal sent nothing).
    final class CountingTransport: HTTPTransport, @unchecked Sendable {
        private let lock = NSLock()
        private var sent: [TransportRequest] = []
        private let inner = URLSessionTransport()

        var requests: [TransportRequest] {
            lock.lock()
            defer { lock.unlock() }
            return sent
        }

        private func record(_ request: TransportRequest) {
            lock.lock()
            sent.append(request)
            lock.unlock()
        }

        func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
            record(request)
            return try await inner.send(request)
        }
    }

    /// An emulator, a sandbox serving it, and the server half pointed at it.
    struct World {
        let emulator: WorldlineEmulator
        let sandbox: RunningSandbox
        let transport: CountingTransport
        let server: WorldlineServer

        /// `authorizationModeForAuthorize` "FINAL_AUTHORIZATION" makes the emulator hold the payment PENDING_CAPTURE (its
        /// choice); "SALE" with `requiresApproval` makes it PENDING_APPROVAL, as the vendor's create-payment resources answer.
        static func start(mode: String = "FINAL_AUTHORIZATION", webhookURL: URL? = nil) async throws -> World {
            let merchant = EmulatorInterop.merchant(webhookURL: webhookURL)
            let emulator = try WorldlineEmulator(merchants: [merchant], webhookRetryInterval: .milliseconds(20), webhookMaxAttempts: 2,
                                                 webhookTimeout: .seconds(5), timeoutHold: .milliseconds(200))
            let sandbox = try await Sandbox.start(emulators: [emulator])
            var components = URLComponents(url: sandbox.baseURL, resolvingAgainstBaseURL: false)
            components?.path = ""
            let endpoint = try #require(components?.url)
            let transport = CountingTransport()
            let server = WorldlineServer(environment: .custom(endpoint), credentials: EmulatorInterop.credentials(merchant),
                                         settings: WorldlineServerSettings(merchantId: merchant.merchantId, authorizationModeForAuthorize: mode),
                                         transport: transport)
            return World(emulator: emulator, sandbox: sandbox, transport: transport, server: server)
        }

        func stop() async { await sandbox.stop() }

        /// An authorised payment made through the plugin's own prepare and submit (the app half's encryption in between).
        func authorize(_ attempt: String, amount: Int64 = 2345, currency: Currency = WorldlineOperationsTests.eur) async throws
            -> (intent: PaymentIntent, attempt: AttemptReference, paymentId: String) {
            let intent = PaymentIntent(merchantReference: "order-\(attempt)", amount: Money(minorUnits: amount, currency: currency),
                                       country: try CountryCode("NL"), method: .card, action: .authorize,
                                       customer: .init(email: "shopper@example.com", locale: "nl_NL"))
            let reference = AttemptReference(rawValue: attempt)
            let preparation = try await server.prepare(AttemptContext(intent: intent, attempt: reference))
            let parameters = try WorldlinePreparation(parameters: preparation.parameters)
            let session = WorldlineClientSession(clientSessionId: parameters.clientSessionId, customerId: parameters.customerId,
                                                 clientApiURL: try #require(URL(string: parameters.clientApiUrl)),
                                                 assetURL: try #require(URL(string: parameters.assetUrl)))
            let key = try await WorldlineClientAPI(session: session, metaInfo: EmulatorInterop.metaInfo, transport: URLSessionTransport()).publicKey()
            let jwe = try WorldlineEncryptor.encrypt(EmulatorInterop.card("4111111111111111", session: session), to: key)
            let result = try await server.submit(Submission(kind: WorldlineGateway.submissionKind, fields: [WorldlineGateway.encryptedInputField: jwe]),
                                                 context: SubmitContext(intent: intent, attempt: reference))
            #expect(result.report?.status == .authorized)
            return (intent, reference, try #require(result.gatewayReference))
        }
    }

    static func request(_ payment: (intent: PaymentIntent, attempt: AttemptReference, paymentId: String), _ kind: OperationKind,
                        _ sequence: Int = 1, amount: Int64, operationId: String? = nil) -> OperationRequest {
        OperationRequest(reference: OperationReference(attempt: payment.attempt, kind: kind, sequence: sequence), intent: payment.intent,
                         gatewayReference: payment.paymentId, amount: Money(minorUnits: amount, currency: payment.intent.amount.currency),
                         operationGatewayReference: operationId)
    }

    /// The vendor's capture and refund statuses (`Tests/TillWorldlineTests/Fixtures/server/operations.json`, from the Python
    /// SDK's `capture.py` and `refund_result.py`; the plugin's tests read the same file).
    static let vendorStatuses: (capture: Set<String>, refund: Set<String>) = {
        struct Facts: Decodable {
            struct Statuses: Decodable { var values: [String: String] }
            var captureStatuses: Statuses
            var refundStatuses: Statuses
        }
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("TillWorldlineTests/Fixtures/server/operations.json")
        guard let data = try? Data(contentsOf: url), let facts = try? JSONDecoder().decode(Facts.self, from: data) else { return ([], []) }
        return (Set(facts.captureStatuses.values.keys), Set(facts.refundStatuses.values.keys))
    }()

    /// The emulator answered a status of the vendor's list for a capture or refund resource.
    static func expectVendorStatus(_ report: OperationReport, sourceLocation: SourceLocation = #_sourceLocation) {
        let statuses = report.kind == .refund ? vendorStatuses.refund : vendorStatuses.capture
        #expect(!statuses.isEmpty, "operations.json could not be read", sourceLocation: sourceLocation)
        #expect(report.gatewayStatus.map(statuses.contains) == true, "\(report.gatewayStatus ?? "none") is not a vendor status",
                sourceLocation: sourceLocation)
    }

    static func withWorld(mode: String = "FINAL_AUTHORIZATION", _ body: (World) async throws -> Void) async throws {
        let world = try await World.start(mode: mode)
        do { try await body(world) } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    @Test("capabilities: capture partial and single (no final flag), void, refund partial and multiple, no windows")
    func capabilities() throws {
        let server = WorldlineServer(environment: .sandbox, credentials: .init(apiKeyId: "k", secretApiKey: "s"),
                                     settings: .init(merchantId: "1"), transport: URLSessionTransport())
        let capabilities = server.operationCapabilities
        #expect(capabilities.capture == .init(partial: true, multiple: false, finalFlag: false))
        #expect(capabilities.void == .init())
        #expect(capabilities.refund == .init(partial: true, multiple: true))
    }

    @Test("a PENDING_CAPTURE payment: a partial capture is POST /capture, final, with Till's reference; inquiries by id and by payment agree")
    func captureOfPendingCapture() async throws {
        try await Self.withWorld { world in
            let payment = try await world.authorize("wl-op-capture-0000000001")
            let capture = Self.request(payment, .capture, amount: 1000)
            let report = try await world.server.perform(capture)
            #expect(report.status == .succeeded)
            #expect(report.reference == capture.reference && report.kind == .capture)
            #expect(report.amount == Money(minorUnits: 1000, currency: Self.eur), "this capture's amount, not the authorised one")
            let captureId = try #require(report.gatewayReference)
            let sent = world.transport.requests.suffix(2)
            #expect(sent.map(\.url.path) == ["/v1/1234/payments/\(payment.paymentId)", "/v1/1234/payments/\(payment.paymentId)/capture"])
            #expect(sent.last?.headers["X-GCS-Idempotence-Key"] == capture.reference.rawValue)
            let body = try #require(try JSONSerialization.jsonObject(with: sent.last?.body ?? Data()) as? [String: Any])
            #expect(body["amount"] as? Int == 1000 && body["isFinal"] as? Bool == true)
            #expect(((body["order"] as? [String: Any])?["references"] as? [String: Any])?["merchantCaptureReference"] as? String
                    == capture.reference.rawValue)

            var byId = capture
            byId.operationGatewayReference = captureId
            let inquired = try await world.server.inquireOperation(byId)
            #expect(inquired.status == .succeeded && inquired.amount == report.amount && inquired.gatewayReference == captureId)
            Self.expectVendorStatus(report)
            Self.expectVendorStatus(inquired)
            let byPayment = try await world.server.inquireOperation(capture)
            #expect(byPayment.status == .succeeded && byPayment.amount == report.amount)
            // The emulator's ledger: the capture, and the rest of the authorisation released by the final capture.
            let ledger = await world.emulator.ledger.filter { $0.paymentId == payment.paymentId }
            #expect(ledger.map(\.operation) == [.authorization, .capture, .cancel])
            #expect(ledger.map(\.amount) == [2345, 1000, 1345])
        }
    }

    @Test("a PENDING_APPROVAL payment: the capture is POST /approve with the amount; a second capture of it is refused by the emulator")
    func captureOfPendingApproval() async throws {
        try await Self.withWorld(mode: "SALE") { world in
            let payment = try await world.authorize("wl-op-approve-0000000001")
            let capture = Self.request(payment, .capture, amount: 2000)
            let report = try await world.server.perform(capture)
            #expect(report.status == .succeeded, "\(report)")
            #expect(report.amount == Money(minorUnits: 2000, currency: Self.eur))
            #expect(report.gatewayReference == nil, "an approval has no id of its own")
            let last = try #require(world.transport.requests.last)
            #expect(last.url.path == "/v1/1234/payments/\(payment.paymentId)/approve")
            #expect(last.headers["X-GCS-Idempotence-Key"] == capture.reference.rawValue)
            #expect(try JSONSerialization.jsonObject(with: last.body ?? Data()) as? [String: Int] == ["amount": 2000])
            let inquired = try await world.server.inquireOperation(capture)
            #expect(inquired.status == .succeeded && inquired.amount == report.amount)

            // The payment is captured now: another capture is refused before anything that moves money is sent.
            let count = world.transport.requests.count
            let again = try await world.server.perform(Self.request(payment, .capture, 2, amount: 100))
            #expect(again.status == .failed && again.gatewayStatus == "CAPTURED")
            #expect(world.transport.requests.count == count + 1, "only the payment was read")
        }
    }

    @Test("refunds: partial and multiple, each REFUND_REQUESTED (pending) with its id and amount, settled REFUNDED; too much is refused")
    func refunds() async throws {
        try await Self.withWorld { world in
            let payment = try await world.authorize("wl-op-refund-00000000001")
            _ = try await world.server.perform(Self.request(payment, .capture, amount: 2345))
            await world.emulator.holdRefunds(true)
            let first = Self.request(payment, .refund, 1, amount: 1000)
            let one = try await world.server.perform(first)
            #expect(one.status == .pending && one.gatewayStatus == "REFUND_REQUESTED")
            #expect(one.amount == Money(minorUnits: 1000, currency: Self.eur))
            let refundId = try #require(one.gatewayReference)
            let sent = try #require(world.transport.requests.last)
            #expect(sent.headers["X-GCS-Idempotence-Key"] == first.reference.rawValue)
            let body = try #require(try JSONSerialization.jsonObject(with: sent.body ?? Data()) as? [String: Any])
            #expect((body["refundReferences"] as? [String: Any])?["merchantReference"] as? String == first.reference.rawValue)
            #expect((body["amountOfMoney"] as? [String: Any])?["amount"] as? Int == 1000)

            var byId = first
            byId.operationGatewayReference = refundId
            #expect(try await world.server.inquireOperation(byId).status == .pending)
            await world.emulator.settleRefund(refundId, refunded: true)
            #expect(try await world.server.inquireOperation(byId).status == .succeeded)
            // Without the id: among the payment's refunds, by merchantReference.
            let found = try await world.server.inquireOperation(first)
            #expect(found.status == .succeeded && found.gatewayReference == refundId && found.amount == one.amount)
            Self.expectVendorStatus(one)
            Self.expectVendorStatus(found)

            await world.emulator.holdRefunds(false)
            let two = try await world.server.perform(Self.request(payment, .refund, 2, amount: 1000))
            #expect(two.status == .pending && two.gatewayReference != refundId)
            #expect(try await world.server.inquireOperation(Self.request(payment, .refund, 2, amount: 1000)).status == .succeeded)

            let tooMuch = try await world.server.perform(Self.request(payment, .refund, 3, amount: 500))
            #expect(tooMuch.status == .failed && tooMuch.gatewayCode == "20000000", "\(tooMuch)")
            let ledger = await world.emulator.ledger.filter { $0.operation == .refund }
            #expect(ledger.map(\.amount) == [1000, 1000])
        }
    }

    @Test("a refund the bank refuses (refundResult in the error body) is failed with its id and code; a rejected one settles failed")
    func refundDeclined() async throws {
        try await Self.withWorld { world in
            let payment = try await world.authorize("wl-op-decline-0000000001")
            _ = try await world.server.perform(Self.request(payment, .capture, amount: 2345))
            await world.emulator.declineNextRefund(of: payment.paymentId)
            let declined = try await world.server.perform(Self.request(payment, .refund, 1, amount: 100))
            #expect(declined.status == .failed && declined.gatewayCode == "430285" && declined.gatewayReference != nil, "\(declined)")

            await world.emulator.holdRefunds(true)
            let refund = Self.request(payment, .refund, 2, amount: 200)
            let pending = try await world.server.perform(refund)
            await world.emulator.settleRefund(try #require(pending.gatewayReference), refunded: false)
            let settled = try await world.server.inquireOperation(refund)
            #expect(settled.status == .failed && settled.gatewayStatus == "REJECTED_CAPTURE")
            Self.expectVendorStatus(settled)
            Self.expectVendorStatus(try await world.server.inquireOperation(Self.request(payment, .refund, 1, amount: 100)))
            #expect(await world.emulator.ledger.filter { $0.operation == .refund }.isEmpty)
        }
    }

    @Test("void: an authorised payment is cancelled; a void after a capture is not (the emulator's 409 is an unknown outcome, the inquiry says failed)")
    func void() async throws {
        try await Self.withWorld { world in
            let payment = try await world.authorize("wl-op-void-0000000000001")
            let void = Self.request(payment, .void, amount: 2345)
            let report = try await world.server.perform(void)
            #expect(report.status == .succeeded && report.gatewayStatus == "CANCELLED")
            #expect(world.transport.requests.last?.body == nil, "cancel has no body")
            #expect(world.transport.requests.last?.headers["X-GCS-Idempotence-Key"] == void.reference.rawValue)
            #expect(try await world.server.inquireOperation(void).status == .succeeded)

            let captured = try await world.authorize("wl-op-void-0000000000002")
            _ = try await world.server.perform(Self.request(captured, .capture, amount: 2345))
            let late = Self.request(captured, .void, amount: 2345)
            let error = await #expect(throws: CheckoutError.self) { _ = try await world.server.perform(late) }
            #expect(error?.category == .unknownOutcome)
            let inquired = try await world.server.inquireOperation(late)
            #expect(inquired.status == .failed && inquired.gatewayStatus == "CAPTURED")
        }
    }

    @Test("the operation reference is the idempotence key: a repeat within 24 hours answers the same refund, one after 24 hours makes another")
    func idempotenceWindow() async throws {
        final class Clock: @unchecked Sendable {
            private let lock = NSLock()
            private var offset: TimeInterval = 0
            func now() -> Date {
                lock.lock()
                defer { lock.unlock() }
                return Date().addingTimeInterval(offset)
            }
            func advance(_ seconds: TimeInterval) {
                lock.lock()
                offset += seconds
                lock.unlock()
            }
        }
        let clock = Clock()
        let merchant = EmulatorInterop.merchant()
        let emulator = try WorldlineEmulator(merchants: [merchant], now: { clock.now() })
        try await EmulatorInterop.withSandbox(emulator) { sandbox in
            var components = URLComponents(url: sandbox.baseURL, resolvingAgainstBaseURL: false)
            components?.path = ""
            let server = WorldlineServer(environment: .custom(try #require(components?.url)), credentials: EmulatorInterop.credentials(merchant),
                                         settings: WorldlineServerSettings(merchantId: merchant.merchantId), transport: URLSessionTransport(),
                                         now: { clock.now() })
            let world = World(emulator: emulator, sandbox: sandbox, transport: CountingTransport(), server: server)
            let payment = try await world.authorize("wl-op-idem-0000000000001")
            _ = try await server.perform(Self.request(payment, .capture, amount: 2345))
            let refund = Self.request(payment, .refund, amount: 100)
            let first = try await server.perform(refund)
            clock.advance(23 * 3600)
            let repeated = try await server.perform(refund)
            #expect(repeated.gatewayReference == first.gatewayReference, "the same key within 24 hours: the first answer")
            clock.advance(2 * 3600)
            let later = try await server.perform(refund)
            #expect(later.gatewayReference != first.gatewayReference, "after 24 hours the key is forgotten: a second refund")
            #expect(await emulator.ledger.filter { $0.operation == .refund }.count == 2)
        }
    }

    @Test("faults: a 500 and a dropped connection are unknown outcomes; the inquiry finds what the emulator did")
    func faults() async throws {
        try await Self.withWorld { world in
            let payment = try await world.authorize("wl-op-faults-00000000001")
            _ = try await world.server.perform(Self.request(payment, .capture, amount: 2345))

            await world.emulator.inject(.serverError, path: "/payments/\(payment.paymentId)/refund")
            let refused = Self.request(payment, .refund, 1, amount: 100)
            let error = await #expect(throws: CheckoutError.self) { _ = try await world.server.perform(refused) }
            #expect(error?.category == .unknownOutcome && error?.gatewayCode == "9999")
            // The 500 was answered before anything was done: the payment has no refund.
            #expect(try await world.server.inquireOperation(refused).status == .failed)

            await world.emulator.inject(.dropConnection, path: "/payments/\(payment.paymentId)/refund")
            let lost = Self.request(payment, .refund, 2, amount: 300)
            let dropped = await #expect(throws: CheckoutError.self) { _ = try await world.server.perform(lost) }
            #expect(dropped?.category == .unknownOutcome)
            let found = try await world.server.inquireOperation(lost)
            #expect(found.status == .succeeded && found.amount == Money(minorUnits: 300, currency: Self.eur), "the lost refund was made")

            // A capture whose payment cannot be read first sent nothing that moves money: unavailable.
            let other = try await world.authorize("wl-op-faults-00000000002")
            await world.emulator.inject(.serverError, path: "/payments/\(other.paymentId)")
            let unread = await #expect(throws: CheckoutError.self) { _ = try await world.server.perform(Self.request(other, .capture, amount: 1)) }
            #expect(unread?.category == .unavailable)
            #expect(await world.emulator.paymentStatus(other.paymentId) == "PENDING_CAPTURE")
        }
    }

    @Test("refused before anything is sent: a currency Worldline's amounts cannot express (unsupported), a payment without its id")
    func refusedBeforeSending() async throws {
        try await Self.withWorld { world in
            let kwd = try Currency(code: "KWD")
            let intent = PaymentIntent(merchantReference: "order-kwd", amount: Money(minorUnits: 1000, currency: kwd), country: try CountryCode("KW"),
                                       method: .card, action: .authorize)
            for kind in OperationKind.allCases {
                let request = OperationRequest(reference: OperationReference(attempt: AttemptReference(rawValue: "wl-op-kwd"), kind: kind, sequence: 1),
                                               intent: intent, gatewayReference: "000000123400000000010000100001",
                                               amount: Money(minorUnits: 1000, currency: kwd))
                let error = await #expect(throws: CheckoutError.self) { _ = try await world.server.perform(request) }
                #expect(error?.category == .unsupported && error?.field == "operations.\(kind.rawValue).currency")
                var unnamed = request
                unnamed.intent.amount = Money(minorUnits: 1000, currency: Self.eur)
                unnamed.amount = Money(minorUnits: 1000, currency: Self.eur)
                unnamed.gatewayReference = nil
                let missing = await #expect(throws: CheckoutError.self) { _ = try await world.server.perform(unnamed) }
                #expect(missing?.field == "operation.gatewayReference")
            }
            #expect(world.transport.requests.isEmpty, "the emulator saw no request")
        }
    }
}
