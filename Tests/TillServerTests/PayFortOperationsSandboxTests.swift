import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillPayFort
import TillPayFortServer
import TillSandbox

/// The PayFort server half's capture, void and refund (``PayFortServer/perform(_:)``), their inquiry and their
/// feedback, against the PayFort emulator over real HTTP on 127.0.0.1: the emulator is the other party.
@Suite("PayFort operations against the sandbox over HTTP", .serialized)
struct PayFortOperationsSandboxTests {
    static let account = PayFortMerchant(accessCode: "ACoperations", merchantIdentifier: "MIDoperations",
                                         requestPhrase: "operations-in", responsePhrase: "operations-out")
    static let usd = Currency.lookup("USD")!
    static let returnURL = URL(string: "shop://till/return?till_state=ops")!

    struct Bench {
        let emulator: PayFortEmulator
        let sandbox: RunningSandbox
        let receiver: LoopbackReceiver
        let server: PayFortServer
    }

    /// The server half pointed at `sandbox`, on a session of its own (a request on a fresh connection is never
    /// replayed by the session when its connection drops).
    static func server(_ sandbox: RunningSandbox) -> PayFortServer {
        PayFortServer(environment: .custom(sandbox.payFortBaseURL),
                      credentials: PayFortCredentials(accessCode: account.accessCode, merchantIdentifier: account.merchantIdentifier,
                                                      requestPhrase: account.requestPhrase, responsePhrase: account.responsePhrase),
                      transport: URLSessionTransport())
    }

    /// A sandbox whose feedback goes to a receiver, and the server half pointed at it.
    static func with(_ body: (Bench) async throws -> Void) async throws {
        let receiver = try await LoopbackReceiver.start()
        var merchant = account
        merchant.notificationURL = receiver.url
        let emulator = PayFortEmulator(merchants: [merchant], notificationRetry: (3, .milliseconds(20)), timeoutHold: .milliseconds(300))
        let sandbox = try await Sandbox.start(payFort: emulator)
        let server = Self.server(sandbox)
        let bench = Bench(emulator: emulator, sandbox: sandbox, receiver: receiver, server: server)
        do {
            try await body(bench)
        } catch {
            await emulator.waitForNotifications()
            await sandbox.stop()
            await receiver.stop()
            throw error
        }
        await emulator.waitForNotifications()
        await sandbox.stop()
        await receiver.stop()
    }

    /// An attempt authorized (or paid) at the emulator through the custom merchant page: the server half's
    /// TOKENIZATION form posted with a test card, then its AUTHORIZATION (or PURCHASE).
    struct Payment {
        var attempt: AttemptReference
        var intent: PaymentIntent
        var fortID: String?
    }

    static func pay(_ bench: Bench, action: PaymentAction = .authorize, amount: String = "10.00") async throws -> Payment {
        let attempt = AttemptReference.generate()
        let intent = PaymentIntent(merchantReference: "ops-\(UUID().uuidString.prefix(8))", amount: try Money(decimal: amount, currency: usd),
                                   method: .card, action: action, customer: Customer(email: "buyer@example.com", ipAddress: "192.168.1.10"))
        let preparation = try await bench.server.prepare(AttemptContext(intent: intent, attempt: attempt, returnURL: returnURL))
        var fields = try PayFortTokenizationForm.fieldNames.map { FormPost.Field($0, try #require(preparation.parameters[$0])) }
        fields += [FormPost.Field("card_number", PayFortEmulator.TestCard.visa), FormPost.Field("expiry_date", "3012"),
                   FormPost.Field("card_security_code", "123")]
        let location = try await FormPostBrowser.post(FormPost(url: PayFortEnvironment.custom(bench.sandbox.payFortBaseURL).paymentPage,
                                                               fields: fields))
        let query = URLComponents(url: location, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let returned = Dictionary(query.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let result = try await bench.server.submit(Submission(kind: PayFortGateway.tokenizationSubmission, fields: returned),
                                                   context: SubmitContext(intent: intent, attempt: attempt, returnURL: returnURL,
                                                                          customerIP: "192.168.1.10"))
        #expect(result.report?.status == (action == .authorize ? .authorized : .paid))
        return Payment(attempt: attempt, intent: intent, fortID: result.gatewayReference)
    }

    static func request(_ payment: Payment, _ kind: OperationKind, _ sequence: Int = 1, amount: Int64 = 1000, isFinal: Bool = false,
                        succeededBefore: Int64 = 0, othersOpen: Bool = false) -> OperationRequest {
        OperationRequest(reference: OperationReference(attempt: payment.attempt, kind: kind, sequence: sequence), intent: payment.intent,
                         gatewayReference: payment.fortID, amount: Money(minorUnits: amount, currency: usd), isFinal: isFinal,
                         succeededBefore: Money(minorUnits: succeededBefore, currency: usd), othersOpen: othersOpen)
    }

    /// The feedback the receiver got about `command`, verified by the server half.
    static func feedback(_ bench: Bench, command: String) async throws -> [VerifiedNotification] {
        await bench.emulator.waitForNotifications()
        return try await bench.receiver.received().filter { $0.formFields?["command"] == command }.map { received in
            try bench.server.verifyNotification(IncomingNotification(headers: ["Content-Type": received.contentType ?? ""], body: received.body))
        }
    }

    @Test("two partial captures, then two partial refunds: each succeeded with its own amount; over the rest, PayFort's 042 and 048 as failed operations")
    func partialAndMultiple() async throws {
        try await Self.with { bench in
            let payment = try await Self.pay(bench)
            let first = try await bench.server.perform(Self.request(payment, .capture, 1, amount: 300))
            #expect(first.status == .succeeded && first.amount == Money(minorUnits: 300, currency: Self.usd) && first.gatewayCode == "04000")
            let second = try await bench.server.perform(Self.request(payment, .capture, 2, amount: 500, succeededBefore: 300))
            #expect(second.status == .succeeded && second.amount?.minorUnits == 500)
            let over = try await bench.server.perform(Self.request(payment, .capture, 3, amount: 201, succeededBefore: 800))
            #expect(over.status == .failed && over.gatewayCode == "05042")

            let refund = try await bench.server.perform(Self.request(payment, .refund, 1, amount: 100))
            #expect(refund.status == .succeeded && refund.amount?.minorUnits == 100 && refund.reference?.rawValue == "\(payment.attempt.rawValue)-r1")
            let overRefund = try await bench.server.perform(Self.request(payment, .refund, 2, amount: 701, succeededBefore: 100))
            #expect(overRefund.status == .failed && overRefund.gatewayCode == "07048")
            let rest = try await bench.server.perform(Self.request(payment, .refund, 3, amount: 700, succeededBefore: 100))
            #expect(rest.status == .succeeded)

            let moved = await bench.emulator.operations
            #expect(moved.map(\.command) == ["CAPTURE", "CAPTURE", "REFUND", "REFUND"])
            #expect(moved.map(\.amountMinor) == [300, 500, 100, 700])
            #expect(moved.map(\.maintenanceReference) == [nil, nil, "\(payment.attempt.rawValue)-r1", "\(payment.attempt.rawValue)-r3"])
        }
    }

    @Test("a refund of a purchase, and a void of an authorization; a void after a capture is failed with the emulator's code")
    func voidAndPurchaseRefund() async throws {
        try await Self.with { bench in
            let purchase = try await Self.pay(bench, action: .sale)
            #expect(try await bench.server.perform(Self.request(purchase, .refund, amount: 400)).status == .succeeded)

            let held = try await Self.pay(bench)
            let void = try await bench.server.perform(Self.request(held, .void))
            #expect(void.status == .succeeded && void.gatewayCode == "08000" && void.amount?.minorUnits == 1000)
            #expect(try await bench.server.perform(Self.request(held, .capture, amount: 100)).status == .failed)

            let captured = try await Self.pay(bench)
            _ = try await bench.server.perform(Self.request(captured, .capture, amount: 100))
            let late = try await bench.server.perform(Self.request(captured, .void))
            #expect(late.status == .failed && late.gatewayStatus == "09")
        }
    }

    @Test("a final capture is refused before anything reaches the emulator")
    func refusedBeforeSending() async throws {
        try await Self.with { bench in
            let payment = try await Self.pay(bench)
            let before = await bench.emulator.operations.count
            let error = await #expect(throws: CheckoutError.self) {
                try await bench.server.perform(Self.request(payment, .capture, isFinal: true))
            }
            #expect(error?.category == .unsupported && error?.field == "operations.capture.finalFlag")
            #expect(await bench.emulator.operations.count == before)
            // The order is untouched: CHECK_STATUS still shows the authorization last.
            #expect(try await bench.server.inquireOperation(Self.request(payment, .capture)).status == .failed)
        }
    }

    @Test("lost answers: a timeout or a dropped connection is an unknown outcome, settled by CHECK_STATUS's totals; a 503 is an unknown outcome that CHECK_STATUS settles failed",
          arguments: [PayFortEmulator.Fault.timeout, .dropConnection, .serverError])
    func lostAnswers(fault: PayFortEmulator.Fault) async throws {
        try await Self.with { bench in
            let payment = try await Self.pay(bench)
            let capture = Self.request(payment, .capture, amount: 600)
            await bench.emulator.injectFault(fault, matching: "CAPTURE")
            let error = await #expect(throws: CheckoutError.self) { try await Self.server(bench.sandbox).perform(capture) }
            #expect(error?.category == .unknownOutcome)
            let settled = try await bench.server.inquireOperation(capture)
            #expect(settled.status == (fault == .serverError ? .failed : .succeeded))

            let refund = Self.request(payment, .refund, amount: 200, succeededBefore: 0)
            let captureBefore = fault == .serverError ? Self.request(payment, .capture, 2, amount: 600) : nil
            if let captureBefore { #expect(try await bench.server.perform(captureBefore).status == .succeeded) }
            await bench.emulator.injectFault(fault, matching: "REFUND")
            await #expect(throws: CheckoutError.self) { try await Self.server(bench.sandbox).perform(refund) }
            let refundSettled = try await bench.server.inquireOperation(refund)
            #expect(refundSettled.status == (fault == .serverError ? .failed : .succeeded))
            // Another refund of the same amount still open: the total cannot tell which one happened.
            var ambiguous = refund
            ambiguous.othersOpen = true
            if fault != .serverError { #expect(try await bench.server.inquireOperation(ambiguous).status == .unknown) }
        }
    }

    @Test("a technical problem (xx006) is an unknown outcome; CHECK_STATUS settles it failed (nothing moved)")
    func technicalProblem() async throws {
        try await Self.with { bench in
            let payment = try await Self.pay(bench)
            let void = Self.request(payment, .void)
            await bench.emulator.injectFault(.technicalProblem, matching: "VOID_AUTHORIZATION")
            let error = await #expect(throws: CheckoutError.self) { try await bench.server.perform(void) }
            #expect(error?.category == .unknownOutcome && error?.gatewayCode == "09006")
            #expect(try await bench.server.inquireOperation(void).status == .failed)
            #expect(try await bench.server.perform(Self.request(payment, .void, 2)).status == .succeeded)
            #expect(try await bench.server.inquireOperation(Self.request(payment, .void, 2)).status == .succeeded)
        }
    }

    @Test("the emulator's feedback of each operation verifies and names it: the refund by its reference, each with its own amount")
    func feedback() async throws {
        try await Self.with { bench in
            let payment = try await Self.pay(bench)
            _ = try await bench.server.perform(Self.request(payment, .capture, amount: 700))
            _ = try await bench.server.perform(Self.request(payment, .refund, 2, amount: 250))
            let held = try await Self.pay(bench)
            _ = try await bench.server.perform(Self.request(held, .void))

            let captures = try await Self.feedback(bench, command: "CAPTURE")
            #expect(captures.map(\.operation?.status) == [.succeeded])
            #expect(captures.first?.operation?.amount == Money(minorUnits: 700, currency: Self.usd) && captures.first?.operation?.reference == nil)
            let refunds = try await Self.feedback(bench, command: "REFUND")
            #expect(refunds.first?.operation?.reference == OperationReference(attempt: payment.attempt, kind: .refund, sequence: 2))
            #expect(refunds.first?.operation?.amount?.minorUnits == 250 && refunds.first?.operation?.status == .succeeded)
            let voids = try await Self.feedback(bench, command: "VOID_AUTHORIZATION")
            #expect(voids.first?.operation?.kind == .void && voids.first?.operation?.status == .succeeded)
            #expect(voids.first?.report.attempt == held.attempt)
        }
    }
}
