import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillGatewayKit
@testable import TillServer
import TillTesting

/// Per-payment client secrets over the real server: what an app (and whoever unpacks it) can do with
/// the one secret it holds, and what it cannot.
@Suite("Merchant server: per-payment client secrets")
struct ClientSecretTests {
    /// Creates a payment with the merchant key; answers its id and client secret.
    func create(_ h: ServerHarness, _ reference: String = "order-\(UUID().uuidString.prefix(8))",
                idempotencyKey: String? = nil) async throws -> (id: String, secret: String) {
        let created = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON(reference),
                                       headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
        #expect(created.status == 201 || created.status == 200, "\(String(decoding: created.body, as: UTF8.self))")
        let id = try #require(created.json["id"] as? String)
        let secret = try #require(created.json["clientSecret"] as? String)
        return (id, secret)
    }

    @Test("creating a payment answers a client secret for it; with that secret alone the app prepares, submits, reports, reads and inquires",
          arguments: StoreKind.available)
    func ownPayment(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, secret) = try await create(h)
        let parsed = try ClientSecret(secret)
        #expect(parsed.paymentID == id)
        #expect(!parsed.description.contains(String(secret.suffix(43))), "the secret part never prints")

        let read = try await h.send("GET", "v1/payments/\(id)", key: .some(secret))
        #expect(read.status == 200 && read.json["clientSecret"] == nil, "a read never shows the secret again")
        let prepared = try await h.send("POST", "v1/payments/\(id)/attempts", json: #"{"returnURLs":["shop://till/return?till_state=s"]}"#,
                                        key: .some(secret))
        #expect(prepared.status == 201, "\(String(decoding: prepared.body, as: UTF8.self))")
        let attempt = try #require(prepared.json["attempt"] as? String)
        #expect(try await h.send("GET", "v1/attempts/\(attempt)", key: .some(secret)).status == 200)
        #expect(try await h.send("POST", "v1/attempts/\(attempt)/inquire", key: .some(secret)).status == 200)
        #expect(try await h.send("POST", "v1/attempts/\(attempt)/outcome", json: #"{"kind":"cancelled"}"#, key: .some(secret)).status == 202)
        // Submit is reachable (this fake flow has no submit step, so the server answers for the flow, not 401/404).
        let submitted = try await h.send("POST", "v1/attempts/\(attempt)/submit", json: #"{"kind":"card","payload":{}}"#, key: .some(secret))
        #expect(![401, 403, 404].contains(submitted.status), "\(submitted.status) \(String(decoding: submitted.body, as: UTF8.self))")
    }

    @Test("a client secret reaches nothing but its payment: another payment and its attempts are 'not found', creating payments and the quarantine are forbidden",
          arguments: StoreKind.available)
    func scope(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (_, secret) = try await create(h)
        let (other, attempt, _) = try await h.createAndPrepare()
        for (method, path, body) in [("GET", "v1/payments/\(other)", nil), ("POST", "v1/payments/\(other)/attempts", "{}"),
                                     ("GET", "v1/attempts/\(attempt)", nil), ("POST", "v1/attempts/\(attempt)/inquire", nil),
                                     ("POST", "v1/attempts/\(attempt)/outcome", #"{"kind":"cancelled"}"#),
                                     ("POST", "v1/attempts/\(attempt)/submit", #"{"kind":"card","payload":{}}"#)] as [(String, String, String?)] {
            let answer = try await h.send(method, path, json: body, key: .some(secret))
            #expect(answer.status == 404 && answer.errorCode == "not_found", "\(method) \(path): \(answer.status)")
        }
        let create = try await h.send("POST", "v1/payments", json: ServerHarness.intentJSON("by-app"), key: .some(secret))
        #expect(create.status == 403 && create.errorCode == "forbidden")
        #expect(try await h.send("GET", "v1/quarantine", key: .some(secret)).status == 403)
        // Nothing happened to the other payment.
        #expect(try await h.status(of: other) == "pending")
        #expect(try await count(h.store, "till_payments", where: "merchant_reference = 'by-app'") == 0)
    }

    @Test("a wrong, malformed or re-cut secret is 401; the store keeps only the secret part's SHA-256, never the secret",
          arguments: StoreKind.available)
    func wrongSecrets(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let (id, secret) = try await create(h)
        let (other, otherSecret) = try await create(h)
        let part = String(secret.suffix(ClientSecret.secretLength))
        var flipped = Array(part)
        flipped[0] = flipped[0] == "A" ? "B" : "A"
        let forgeries = [
            "\(id)_secret_\(String(flipped))",                    // right payment, wrong secret
            "\(other)_secret_\(part)",                            // this secret on another payment
            "\(id)_secret_\(otherSecret.suffix(ClientSecret.secretLength))".uppercased(),
            secret + "x", String(secret.dropLast()), id, "", "pay__secret_", "\(id)_secret_\(part)\n",
        ]
        for forged in forgeries {
            let answer = try await h.send("GET", "v1/payments/\(id)", key: .some(forged))
            #expect(answer.status == 401 && answer.errorCode == "unauthorized", "\(forged.debugDescription): \(answer.status)")
        }
        let digest = Hex.encode(SHA256.hash(data: Data(part.utf8)))
        #expect(try await count(h.store, "till_payments", where: "id = '\(id)' AND client_secret_hash = '\(digest)'") == 1)
        #expect(try await count(h.store, "till_payments", where: "client_secret_hash LIKE '%\(part)%'") == 0)
    }

    @Test("a replayed create issues a new secret and the earlier one stops working", arguments: StoreKind.available)
    func rotation(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        let reference = "order-\(UUID().uuidString.prefix(8))"
        let first = try await create(h, reference, idempotencyKey: "k-\(reference)")
        let second = try await create(h, reference, idempotencyKey: "k-\(reference)")
        #expect(first.id == second.id && first.secret != second.secret)
        #expect(try await h.send("GET", "v1/payments/\(first.id)", key: .some(first.secret)).status == 401)
        #expect(try await h.send("GET", "v1/payments/\(first.id)", key: .some(second.secret)).status == 200)
    }

    @Test("the app's client needs no merchant key: an app checks out with one payment's secret, and that secret cannot create or read anything else",
          arguments: StoreKind.available)
    func appWithSecretOnly(kind: StoreKind) async throws {
        let h = try await ServerHarness(kind)
        defer { Task { await h.stop() } }
        // The merchant's backend (server to server, with the key) creates the payment.
        let merchant = MerchantAPIClient(baseURL: h.baseURL, apiKey: h.apiKey, transport: URLSessionTransport())
        let intent = PaymentIntent(merchantReference: "app-\(UUID().uuidString.prefix(8))", amount: ServerHarness.amount, method: .card)
        let created = try await merchant.createPayment(intent)
        let secret = try #require(created.clientSecret)
        // The app: the secret, nothing else.
        let backend = HTTPMerchantBackend(baseURL: h.baseURL, clientSecret: secret, transport: URLSessionTransport())
        let returns = try ReturnURLHandler(routes: [.customScheme("shop")])
        let gateway = h.gateway("fake")
        let app = AppCheckout(backend: backend, gateways: [gateway], returns: returns,
                              presenter: SimulatedCustomer(gateway: gateway, returns: returns),
                              returnTimeout: .seconds(5), confirmationTimeout: .seconds(5), confirmationInterval: .milliseconds(20))
        let result = try await app.pay(intent)
        #expect(result.status == .paid)
        #expect(try await backend.payment().status == .paid)
        // Whoever unpacks the app and takes the secret still cannot reach another payment.
        let (other, _, _) = try await h.createAndPrepare()
        let stolen = HTTPMerchantBackend(baseURL: h.baseURL, clientSecret: secret, transport: URLSessionTransport())
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await stolen.prepare(intent, returnURLs: [URL(string: "shop://till/return")!])   // its own payment is paid: refused
        }
        #expect(error?.category == .invalidInput)
        #expect(try await h.send("GET", "v1/payments/\(other)", key: .some(secret.rawValue)).status == 404)
    }
}
