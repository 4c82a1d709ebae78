import Foundation
import Testing
import Till
import TillOrchestration
import TillService
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
        let recording = ReadRecorder()
        let service = PaymentService(state: harness.state, store: recording.observing(harness.store))
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

/// Records each read the server makes of the store (through TillTesting's ``ObservedPaymentStore``) with whether it
/// found something.
final class ReadRecorder: Sendable {
    private let log = Locked<[String]>([])
    var reads: [String] { log.withLock { $0 } }
    func reset() { log.withLock { $0 = [] } }

    func observing(_ inner: any PaymentStore) -> ObservedPaymentStore {
        ObservedPaymentStore(inner) { [log] event in
            if case .read(let operation, let found) = event { log.withLock { $0.append("\(operation):\(found ? "found" : "none")") } }
        }
    }
}
