import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillService

/// The merchant's backend calling a running merchant server's HTTP API with its API key, as the end-to-end tests'
/// worlds start one: every exchange is held to docs/openapi.yaml, as ``ServerHarness/send(_:_:json:body:key:headers:)``
/// holds those of the fake-gateway tests.
struct MerchantHTTP: Sendable {
    let baseURL: URL
    let apiKey: String

    func send(_ method: String, _ path: String, json: String? = nil, headers: [String: String] = [:]) async throws -> ServerHarness.Answer {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = json.map { Data($0.utf8) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[(name as! String).lowercased()] = value as? String }
        let contract = try OpenAPIContract.repository.get()
        let violations = contract.violations(method: method, path: "/" + path, status: http.statusCode, contentType: fields["content-type"],
                                             body: data, requestBody: request.httpBody)
        #expect(violations.isEmpty, "docs/openapi.yaml disagrees with the server:\n\(violations.joined(separator: "\n"))")
        return ServerHarness.Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// A capture, void or refund (`route`: `captures`, `voids`, `refunds`) of payment `id`: of `minor` units of
    /// `currency`, or, without `minor`, of the rest.
    func operate(_ id: String, _ route: String, minor: Int? = nil, currency: String, key: String = UUID().uuidString) async throws
        -> ServerHarness.Answer {
        let body = minor.map { #"{"amount":{"value":\#($0),"currency":"\#(currency)"}}"# } ?? "{}"
        return try await send("POST", "v1/payments/\(id)/\(route)", json: body, headers: ["Idempotency-Key": key])
    }

    /// The payment an attempt belongs to, as the merchant sees it.
    func payment(attempt: AttemptReference) async throws -> ServerHarness.Answer {
        try await send("GET", "v1/attempts/\(attempt.rawValue)")
    }

    func payment(_ id: String) async throws -> ServerHarness.Answer { try await send("GET", "v1/payments/\(id)") }

    /// Reads operation `id` until its status is no longer `pending` (the gateway's notification settles it), or
    /// about five seconds have passed; returns its last view.
    func settled(operation id: String) async throws -> ServerHarness.Answer {
        var answer = try await send("GET", "v1/operations/\(id)")
        for _ in 0..<250 where answer.json["status"] as? String == "pending" {
            try await Task.sleep(for: .milliseconds(20))
            answer = try await send("GET", "v1/operations/\(id)")
        }
        return answer
    }
}

extension ServerHarness.Answer {
    /// `amountCaptured` / `amountRefunded` and the like: the value of a money member, in minor units.
    func minor(_ member: String) -> Int? { (json[member] as? [String: Any])?["value"] as? Int }
    /// The operation an error answer (402, 502) carries.
    var operation: [String: Any]? { json["operation"] as? [String: Any] }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Every request the merchant server's gateway halves sent, in order: what reached (or was meant to reach) the
/// gateway, whatever the emulator makes of it.
final class SentRequests: @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [TransportRequest] = []

    /// The transport for `ServerState(transport:)`: the server's own, recording each request before it goes.
    func transport(_ id: GatewayID) -> any HTTPTransport { Recording(base: ServerState.defaultTransport(id), log: self) }

    /// `METHOD path` of every request so far.
    var all: [String] { lock.withLock { sent.map { "\($0.method.rawValue) \($0.url.path)" } } }
    var count: Int { lock.withLock { sent.count } }

    /// How many requests so far have `text` in their method, path or body (`"CAPTURE"` for PayFort's captures,
    /// `/refund` for ecommpay's refunds).
    func count(_ text: String) -> Int {
        lock.withLock {
            sent.filter { "\($0.method.rawValue) \($0.url.path)\n\(String(decoding: $0.body ?? Data(), as: UTF8.self))".contains(text) }.count
        }
    }

    func add(_ request: TransportRequest) { lock.withLock { sent.append(request) } }

    struct Recording: HTTPTransport {
        let base: any HTTPTransport
        let log: SentRequests
        func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
            log.add(request)
            return try await base.send(request)
        }
    }
}
