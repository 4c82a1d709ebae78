import Foundation
import Testing
import Till
@testable import TillServer
import TillTesting

/// A client secret holds one payment. Whatever it names beyond that payment, the server does the same work
/// and gives the same answer, so neither the answer nor its timing tells which other ids exist.
@Suite("A client secret cannot probe which payments or attempts exist")
struct ProbeResistanceTests {
    @Test("a client secret naming another payment's attempt and one naming no attempt: the same store reads with the same results, the same 404")
    func attemptProbe() async throws {
        let harness = try await ServerHarness(.sqlite)
        defer { Task { await harness.stop() } }
        let (own, _, _) = try await harness.createAndPrepare()
        let (_, foreign, _) = try await harness.createAndPrepare()
        let recording = ReadRecordingStore(harness.store)
        let service = PaymentService(state: harness.state, store: recording)
        let merchant = try #require(harness.state.merchants.first)
        func reads(probing reference: AttemptReference) async -> ([String], Int?) {
            recording.reset()
            var status: Int?
            do { _ = try await service.authorize(.payment(merchant, paymentID: own), attempt: reference) } catch let error as ServiceError {
                status = error.status.code
            } catch {}
            return (recording.reads, status)
        }
        let (readsForeign, statusForeign) = await reads(probing: foreign)
        let (readsUnknown, statusUnknown) = await reads(probing: AttemptReference.generate())
        #expect(statusForeign == 404 && statusUnknown == 404)
        #expect(!readsForeign.isEmpty && readsForeign == readsUnknown, "\(readsForeign) vs \(readsUnknown)")
    }

    @Test("a client secret with a wrong secret part: the same 401 for an existing payment and an unknown one, the secret's digest compared either way")
    func secretProbe() async throws {
        let harness = try await ServerHarness(.sqlite)
        defer { Task { await harness.stop() } }
        let (payment, _, _) = try await harness.createAndPrepare()
        let wrong = "_secret_" + String(repeating: "A", count: 43)
        let existing = try await harness.send("GET", "v1/payments/\(payment)", key: .some(payment + wrong))
        let unknown = try await harness.send("GET", "v1/payments/pay_\(String(repeating: "0", count: 32))",
                                             key: .some("pay_\(String(repeating: "0", count: 32))" + wrong))
        #expect(existing.status == 401 && unknown.status == 401 && existing.body == unknown.body)
        // The stand-in digest an unknown payment is compared against has a stored digest's shape and matches no secret.
        #expect(PaymentService.absentSecretDigest.count == PaymentService.digest(clientSecret: "x").count)
    }
}

/// Forwards every call to the real store and records each read with whether it found something.
final class ReadRecordingStore: PaymentStore, @unchecked Sendable {
    let inner: any PaymentStore
    private let log = Locked<[String]>([])
    init(_ inner: any PaymentStore) { self.inner = inner }

    var reads: [String] { log.withLock { $0 } }
    func reset() { log.withLock { $0 = [] } }
    private func note(_ name: String, found: Bool) { log.withLock { $0.append("\(name):\(found ? "found" : "none")") } }

    func migrate() async throws { try await inner.migrate() }
    func notificationCount(attempt: AttemptReference) async throws -> Int { try await inner.notificationCount(attempt: attempt) }
    func hasIdempotencyKey(_ key: String, merchant: String) async throws -> Bool { try await inner.hasIdempotencyKey(key, merchant: merchant) }
    func notificationsAwaitingInquiry(attempt: AttemptReference, gateway: GatewayID, limit: Int) async throws -> [RawNotification] {
        try await inner.notificationsAwaitingInquiry(attempt: attempt, gateway: gateway, limit: limit)
    }
    func create(_ intent: PaymentIntent, merchant: String, id: String, idempotencyKey: String?, requestHash: String,
                clientSecretHash: String?) async throws -> CreateOutcome {
        try await inner.create(intent, merchant: merchant, id: id, idempotencyKey: idempotencyKey, requestHash: requestHash,
                               clientSecretHash: clientSecretHash)
    }
    func clientSecretHash(payment id: String) async throws -> (merchantID: String, hash: String)? {
        let found = try await inner.clientSecretHash(payment: id)
        note("clientSecretHash", found: found != nil)
        return found
    }
    func payment(id: String, merchant: String) async throws -> StoredPayment? {
        let found = try await inner.payment(id: id, merchant: merchant)
        note("payment(id:)", found: found != nil)
        return found
    }
    func payment(attempt: AttemptReference) async throws -> StoredPayment? {
        let found = try await inner.payment(attempt: attempt)
        note("payment(attempt:)", found: found != nil)
        return found
    }
    func addAttempt(_ reference: AttemptReference, payment: String, gateway: GatewayID, expected: [StoredAttempt],
                    customerRequested: Bool, intent: PaymentIntent?) async throws {
        try await inner.addAttempt(reference, payment: payment, gateway: gateway, expected: expected, customerRequested: customerRequested,
                                   intent: intent)
    }
    func attemptPrepared(_ reference: AttemptReference, gatewayReference: String?, returnURL: URL?) async throws {
        try await inner.attemptPrepared(reference, gatewayReference: gatewayReference, returnURL: returnURL)
    }
    func replaceIntent(_ intent: PaymentIntent, payment: String, merchant: String, expected: [StoredAttempt]) async throws -> StoredPayment? {
        try await inner.replaceIntent(intent, payment: payment, merchant: merchant, expected: expected)
    }
    func markSubmitted(_ reference: AttemptReference) async throws -> Bool { try await inner.markSubmitted(reference) }
    func recordClientOutcome(_ outcome: ClientOutcome, attempt: AttemptReference) async throws {
        try await inner.recordClientOutcome(outcome, attempt: attempt)
    }
    func markHandedOff(_ reference: AttemptReference) async throws { try await inner.markHandedOff(reference) }
    func ingest(_ notification: RawNotification, report: StatusReport, merchant: String,
                source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await inner.ingest(notification, report: report, merchant: merchant, source: source)
    }
    func apply(_ report: StatusReport, source: AttemptPolicy.ReportSource) async throws -> ApplyOutcome {
        try await inner.apply(report, source: source)
    }
    func quarantined(merchant: String, limit: Int) async throws -> [QuarantinedNotification] {
        try await inner.quarantined(merchant: merchant, limit: limit)
    }
    func dueAttempts(createdBefore: Date, now: Date, limit: Int) async throws -> [DueAttempt] {
        try await inner.dueAttempts(createdBefore: createdBefore, now: now, limit: limit)
    }
    func claimInquiry(_ reference: AttemptReference, expected: Date?, next: Date) async throws -> Bool {
        try await inner.claimInquiry(reference, expected: expected, next: next)
    }
    func logReconciliation(_ entry: ReconciliationEntry) async throws { try await inner.logReconciliation(entry) }
    func reconciliationLog(limit: Int) async throws -> [ReconciliationEntry] { try await inner.reconciliationLog(limit: limit) }
    func close() async throws { try await inner.close() }
    func seedPendingAttempts(count: Int, merchant: String, gateway: GatewayID, amount: Money) async throws -> [AttemptReference] {
        try await inner.seedPendingAttempts(count: count, merchant: merchant, gateway: gateway, amount: amount)
    }
}
