import Foundation
import Testing
import TillGatewayKit

/// A transport that answers every request from a script, and can echo the request back.
private struct ScriptedTransport: HTTPTransport {
    enum Script: Sendable {
        case fail(TransportError)
        case answer(Int, String)
        /// Answers 200 with the request's method, URL, headers and body, as JSON.
        case echo
    }

    let script: Script

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        switch script {
        case .fail(let error):
            throw error
        case .answer(let status, let body):
            return TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
        case .echo:
            let echo = Echo(method: request.method.rawValue, url: request.url.absoluteString, headers: request.headers,
                            body: String(decoding: request.body ?? Data(), as: UTF8.self))
            return TransportResponse(statusCode: 200, body: (try? JSONEncoder().encode(echo)) ?? Data())
        }
    }
}

private struct Echo: Codable, Equatable {
    var method: String
    var url: String
    var headers: [String: String]
    var body: String
}

private struct Charge: Codable, Equatable {
    struct Transaction: Codable, Equatable {
        var amount: Int
        var currency: String
    }
    var id: String
    var transaction: Transaction
    var items: [Transaction]?
}

@Suite("GatewayHTTPClient")
struct GatewayClientTests {
    let url = URL(string: "https://api.example.test/v1/charges")!

    private func client(_ script: ScriptedTransport.Script) -> GatewayHTTPClient {
        GatewayHTTPClient(gateway: "acme", transport: ScriptedTransport(script: script))
    }

    private var request: TransportRequest { TransportRequest(method: .post, url: url, body: Data("{}".utf8)) }

    @Test("exchange classifies each transport failure by what it means for the money", arguments: [
        (TransportError.Kind.notSent, "neverSent"), (.timedOut, "timedOut"), (.connectionLost, "lost"), (.cancelled, "lost"), (.other, "lost"),
    ])
    func exchangeClassification(_ kind: TransportError.Kind, _ expected: String) async {
        let failure = TransportError(kind, "scripted")
        let exchange = await client(.fail(failure)).exchange(request)
        switch exchange {
        case .neverSent(let error): #expect(expected == "neverSent" && error == failure)
        case .timedOut(let error): #expect(expected == "timedOut" && error == failure)
        case .lost(let error): #expect(expected == "lost" && error == failure)
        case .answered: Issue.record("a failure was reported as an answer")
        }
    }

    @Test("exchange reports any HTTP status as an answer")
    func exchangeAnswered() async {
        guard case .answered(let response) = await client(.answer(503, "busy")).exchange(request) else {
            Issue.record("expected an answer")
            return
        }
        #expect(response.statusCode == 503)
        #expect(response.body == Data("busy".utf8))
    }

    @Test("a cancelled task sends nothing and says so")
    func cancelledBeforeSending() async {
        let client = client(.echo)
        let request = request
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await client.exchange(request)
        }
        guard case .neverSent(let error) = await task.value else {
            Issue.record("expected neverSent")
            return
        }
        #expect(error.kind == .notSent)
    }

    @Test("send: never sent is unavailable; anything after sending is an unknown outcome", arguments: [
        (TransportError.Kind.notSent, CheckoutError.Category.unavailable, CheckoutError.Code.gatewayUnreachable),
        (.timedOut, .unknownOutcome, .timeout),
        (.connectionLost, .unknownOutcome, .unknownOutcome),
        (.cancelled, .unknownOutcome, .unknownOutcome),
        (.other, .unknownOutcome, .unknownOutcome),
    ])
    func sendFailures(_ kind: TransportError.Kind, _ category: CheckoutError.Category, _ code: CheckoutError.Code) async {
        let failure = TransportError(kind, "scripted")
        let error = await #expect(throws: CheckoutError.self) { try await client(.fail(failure)).send(request) }
        #expect(error == failure.checkoutError(gateway: "acme"))
        #expect(error?.category == category)
        #expect(error?.code == code)
        #expect(error?.gateway == "acme")
    }

    @Test("send returns a response of any status")
    func sendAnyStatus() async throws {
        #expect(try await client(.answer(500, "oops")).send(request).statusCode == 500)
    }

    @Test("json decodes a 200 answer")
    func jsonDecodes() async throws {
        let body = #"{"id":"ch_1","transaction":{"amount":1000,"currency":"SAR"},"extra":true}"#
        let charge = try await client(.answer(200, body)).json(request, as: Charge.self)
        #expect(charge == Charge(id: "ch_1", transaction: .init(amount: 1000, currency: "SAR")))
    }

    @Test("json uses the decoder given")
    func jsonDecoder() async throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        struct Token: Decodable { var accessToken: String }
        let token = try await client(.answer(200, #"{"access_token":"t"}"#)).json(request, as: Token.self, decoder: decoder)
        #expect(token.accessToken == "t")
    }

    @Test("a status outside accept is a gateway error with an unknown outcome, the status as its code", arguments: [500, 502, 404, 400, 302, 201])
    func unacceptedStatus(_ status: Int) async {
        let error = await #expect(throws: CheckoutError.self) {
            try await client(.answer(status, #"{"id":"x"}"#)).json(request, as: Charge.self, accept: [200])
        }
        #expect(error?.code == .gatewayError)
        #expect(error?.category == .unknownOutcome)
        #expect(error?.gatewayCode == String(status))
        #expect(error?.gateway == "acme")
    }

    @Test("a definite failure says the gateway did nothing")
    func definiteFailure() async {
        let client = client(.answer(401, #"{"error":"token"}"#))
        let error = await #expect(throws: CheckoutError.self) {
            try await client.json(request, as: Charge.self, definiteFailures: [401, 403])
        }
        #expect(error?.code == .gatewayError)
        #expect(error?.category == .unavailable)
        #expect(error?.gatewayCode == "401")
        #expect(error?.gateway == "acme")
    }

    @Test("an accepted status wins over a definite failure")
    func acceptWins() async throws {
        let body = #"{"id":"ch_1","transaction":{"amount":1,"currency":"SAR"}}"#
        let charge = try await client(.answer(202, body)).json(request, as: Charge.self, accept: [202], definiteFailures: [202])
        #expect(charge.id == "ch_1")
    }

    @Test("an undecodable answer is malformed with an unknown outcome, naming the path", arguments: [
        ("not json", "body"),
        ("", "body"),
        (#"{"id":"ch_1"}"#, "body.transaction"),
        (#"{"id":"ch_1","transaction":{"amount":"1000","currency":"SAR"}}"#, "body.transaction.amount"),
        (#"{"id":null,"transaction":{"amount":1,"currency":"SAR"}}"#, "body.id"),
        (#"{"id":"x","transaction":{"amount":1,"currency":"SAR"},"items":[{"amount":1,"currency":"SAR"},{"amount":1}]}"#, "body.items[1].currency"),
    ])
    func undecodable(_ body: String, _ field: String) async {
        let error = await #expect(throws: CheckoutError.self) { try await client(.answer(200, body)).json(request, as: Charge.self) }
        #expect(error?.code == .malformedBody)
        #expect(error?.category == .unknownOutcome)
        #expect(error?.field == field)
        #expect(error?.gateway == "acme")
    }

    @Test("a transport failure in json is classified like send")
    func jsonTransportFailure() async {
        let error = await #expect(throws: CheckoutError.self) {
            try await client(.fail(TransportError(.notSent, "refused"))).json(request, as: Charge.self)
        }
        #expect(error?.category == .unavailable)
    }

    @Test("jsonRequest encodes with sorted keys and JSON headers")
    func jsonRequest() throws {
        let charge = Charge(id: "a/b", transaction: .init(amount: 5, currency: "SAR"))
        let request = try GatewayHTTPClient.jsonRequest(.post, url, body: charge, headers: ["Authorization": "Bearer t"], timeout: .seconds(5))
        #expect(request.method == .post)
        #expect(request.url == url)
        #expect(request.timeout == .seconds(5))
        #expect(request.headers == ["Authorization": "Bearer t", "Content-Type": "application/json", "Accept": "application/json"])
        #expect(String(decoding: request.body ?? Data(), as: UTF8.self) == #"{"id":"a/b","transaction":{"amount":5,"currency":"SAR"}}"#)
    }

    @Test("jsonRequest keeps the caller's content type, whatever its case")
    func jsonRequestHeaders() throws {
        let request = try GatewayHTTPClient.jsonRequest(.put, url, body: ["a": 1], headers: ["content-type": "application/vnd.acme+json"])
        #expect(request.headers == ["content-type": "application/vnd.acme+json", "Accept": "application/json"])
        #expect(request.timeout == .seconds(30))
    }

    @Test("jsonRequest refuses a value JSON cannot carry, naming it")
    func jsonRequestEncodingError() {
        struct Quote: Encodable { var rate: Double }
        let error = #expect(throws: CheckoutError.self) {
            try GatewayHTTPClient.jsonRequest(.post, url, body: ["quotes": [Quote(rate: 1), Quote(rate: .nan)]], gateway: "acme")
        }
        #expect(error?.code == .invalidField)
        #expect(error?.category == .invalidInput)
        #expect(error?.field == "body.quotes[1].rate")
        #expect(error?.gateway == "acme")
    }

    @Test("a built request goes through the transport as built")
    func roundTrip() async throws {
        let built = try GatewayHTTPClient.jsonRequest(.post, url, body: ["b": 2, "a": 1])
        let echo = try await client(.echo).json(built, as: Echo.self)
        #expect(echo.method == "POST")
        #expect(echo.url == url.absoluteString)
        #expect(echo.body == #"{"a":1,"b":2}"#)
        #expect(echo.headers["Content-Type"] == "application/json")
    }
}
