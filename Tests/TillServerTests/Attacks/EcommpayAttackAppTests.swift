import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit
@testable import TillServer

/// Attacks on ecommpay from the customer's side (who holds the app and every preparation), from a man in
/// the middle of Gate, and with hostile bodies on the callback endpoint.
@Suite("Attacks: ecommpay from the app, Gate's answers and hostile callbacks on the real merchant server", .serialized)
struct EcommpayAttackAppTests {
    typealias World = EcommpayAttackWorld
    typealias Wire = EcommpayWire
    typealias V = EcommpayWire.Value

    func text(_ answer: ServerHarness.Answer) -> String { "HTTP \(answer.status) \(String(decoding: answer.body, as: UTF8.self).prefix(400))" }

    // MARK: The customer holds the app

    /// The SDK's `paramsForSignature` as the customer's app would send it: `SignatureParam`'s parameters of
    /// `params`, `key:value` sorted and joined with `;` (MsdkCore.h; the spellings are the Payment Page's).
    static func sdkString(_ params: V) -> String {
        let keys = ["project_id", "payment_id", "payment_amount", "payment_description", "payment_currency", "customer_id", "region_code",
                    "language_code", "force_payment_method", "hide_saved_wallets"]
        return keys.compactMap { key in (params[key]?.string ?? params[key]?.number).map { "\(key):\($0)" } }.sorted().joined(separator: ";")
    }

    /// The app's submit of an SDK string for `started`'s attempt, with its client secret.
    func submitString(_ w: World, _ started: World.Started, _ string: String, kind: String = EcommpayGateway.signingKind) async throws
        -> ServerHarness.Answer {
        let body = try JSONSerialization.data(withJSONObject: ["kind": kind, "fields": ["params_for_signature": string]])
        return try await w.call("POST", "v1/attempts/\(started.attempt.rawValue)/submit", body: body, bearer: started.secret)
    }

    @Test("the app's params and the SDK's string tampered (amount, currency, payment_id, another attempt's, another customer, a ';' cut, a second string): the app half refuses the params naming the field; the server signs only a string of the stored payment, once per attempt; a success for a tampered amount never pays",
          arguments: StoreKind.available)
    func tamperedParams(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let other = try await w.start(w.a, minor: 5)
            let parameters = s.preparation.parameters
            let paramsText = try #require(parameters[EcommpayGateway.Parameter.params])
            #expect(parameters[EcommpayGateway.Parameter.signature] == nil, "Prepare signs nothing for the SDK")
            let params = try #require(V.parse(Data(paramsText.utf8)))
            #expect(params["payment_id"]?.string == s.attempt.rawValue)
            #expect(params["payment_amount"]?.number == String(World.amount) && params["payment_currency"]?.string == "EUR")
            #expect(params["project_id"]?.number == String(w.a.project.id))

            let gateway = EcommpayGateway()
            func with(_ change: (V) -> V) -> Preparation {
                var preparation = s.preparation
                preparation.parameters[EcommpayGateway.Parameter.params] = String(decoding: change(params).serialized(), as: UTF8.self)
                return preparation
            }
            let field = "preparation.parameters.params"
            let tampered: [(String, Preparation, String)] = [
                ("amount lowered", with { $0.setting(["payment_amount"], .number("1")) }, "\(field).payment_amount"),
                ("amount as text", with { $0.setting(["payment_amount"], .string("1050")) }, "\(field).payment_amount"),
                ("currency changed", with { $0.setting(["payment_currency"], .string("USD")) }, "\(field).payment_currency"),
                ("payment_id of another attempt", with { $0.setting(["payment_id"], .string(other.attempt.rawValue)) }, "\(field).payment_id"),
                ("another attempt's whole params", {
                    var preparation = s.preparation
                    preparation.parameters = other.preparation.parameters
                    return preparation
                }(), "\(field).payment_id"),
                ("params not JSON", {
                    var preparation = s.preparation
                    preparation.parameters[EcommpayGateway.Parameter.params] = "payment_amount:1"
                    return preparation
                }(), field),
            ]
            for (name, preparation, expected) in tampered {
                do {
                    _ = try await gateway.present(preparation, input: .start)
                    Issue.record("\(name): handed to the SDK")
                } catch let error as CheckoutError {
                    #expect(error.field == expected, "\(name): \(error)")
                }
            }
            guard case .prepareSDK(let handOff) = try await gateway.present(s.preparation, input: .start) else {
                Issue.record("not an SDK hand-off")
                return
            }
            #expect(handOff.parameters[EcommpayGateway.Parameter.params] == paramsText)

            // The customer's app sends strings of its own making to the real server, each on a fresh attempt.
            let good = Self.sdkString(params)
            let cheap = good.replacingOccurrences(of: "payment_amount:\(World.amount)", with: "payment_amount:1")
            let strings: [(String, (World.Started) -> String, String)] = [
                ("amount lowered", { _ in cheap }, "params_for_signature.paymentAmount"),
                ("currency changed", { _ in good.replacingOccurrences(of: "payment_currency:EUR", with: "payment_currency:USD") },
                 "params_for_signature.paymentCurrency"),
                ("another attempt's string", { _ in good.replacingOccurrences(of: s.attempt.rawValue, with: other.attempt.rawValue) },
                 "params_for_signature.paymentId"),
                ("another project", { _ in good.replacingOccurrences(of: "project_id:\(w.a.project.id)", with: "project_id:\(w.b.project.id)") },
                 "params_for_signature.projectId"),
                ("another customer's saved cards", { _ in "customer_id:victim-1;" + good }, "params_for_signature.customerId"),
                ("a pair out of the SDK's order (a value's tail)", { _ in good + ";customer_id:victim-1" }, "params_for_signature.customer_id"),
                ("a ';' hidden behind U+0600", { _ in good.replacingOccurrences(of: "payment_amount:\(World.amount)",
                                                                                with: "payment_amount:\(World.amount);secure_info:x\u{0600};payment_amount:1") },
                 "params_for_signature.payment_amount"),
                ("a ';' cut in the description", { _ in good.replacingOccurrences(of: "payment_description:Green tea",
                                                                                  with: "payment_description:Green tea;payment_amount:1") },
                 "params_for_signature.payment_amount"),
                ("the amount in another spelling too", { _ in good + ";paymentAmount:1" }, "params_for_signature.paymentAmount"),
                ("an unsigned parameter slipped in", { _ in good + ";operation_type:verify" }, "params_for_signature.operation_type"),
                ("a stored card's token", { _ in good + ";token:stolen" }, "params_for_signature.token"),
            ]
            for (name, make, expected) in strings {
                let fresh = try await w.start(w.a)
                let string = make(fresh).replacingOccurrences(of: s.attempt.rawValue, with: fresh.attempt.rawValue)
                let answer = try await submitString(w, fresh, string)
                #expect(answer.status == 422, "\(name): \(text(answer))")
                #expect((answer.json["error"] as? [String: Any])?["field"] as? String == expected, "\(name): \(text(answer))")
                let body = String(decoding: answer.body, as: UTF8.self)
                #expect(!body.contains(Wire.mac(string, secret: w.a.project.secret).base64EncodedString()), "\(name): signed")
                #expect(!body.contains(w.a.project.secret))
                // The attempt is closed: the genuine string is not signed for it afterwards either.
                let again = try await submitString(w, fresh, Self.sdkString(params).replacingOccurrences(of: s.attempt.rawValue, with: fresh.attempt.rawValue))
                #expect(again.status == 409, "\(name), then the genuine string: \(text(again))")
                #expect(try await w.attempt(fresh.attempt).status == .failed, "\(name)")
            }
            // The genuine string is signed, exactly, once.
            let signedAnswer = try await submitString(w, s, good)
            #expect(signedAnswer.status == 200, "\(text(signedAnswer))")
            let launch = try #require(((signedAnswer.json["next"] as? [String: Any])?["wallet"] as? [String: Any])?["parameters"] as? [String: String])
            #expect(launch[EcommpayGateway.Parameter.signature] == Wire.mac(good, secret: w.a.project.secret).base64EncodedString())
            #expect(launch[EcommpayGateway.Parameter.params] == paramsText)
            #expect(!String(decoding: signedAnswer.body, as: UTF8.self).contains(w.a.project.secret))
            let second = try await submitString(w, s, cheap)
            #expect(second.status == 409, "\(text(second))")
            #expect(!String(decoding: second.body, as: UTF8.self).contains(Wire.mac(cheap, secret: w.a.project.secret).base64EncodedString()))

            // Had ecommpay charged a tampered amount, its genuine success is for 0.01 EUR: never paid.
            let lower = try await w.notify(w.callback(s, changes: [(["payment", "sum", "amount"], .number("1"))]))
            #expect([200, 400].contains(lower.status), "\(text(lower))")
            await w.settle()
            #expect(try await w.attempt(s.attempt).status == .pending)
        }
    }

    @Test("the Payment Page URL: its signature is ecommpay's over exactly its parameters (the stored payment's), so an amount, currency or payment_id changed in the app no longer matches it; the app half opens only http(s) pages",
          arguments: StoreKind.available)
    func tamperedPaymentPage(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a, method: "alipay")
            let page = try #require(s.preparation.parameters[EcommpayGateway.Parameter.pageURL].flatMap { URL(string: $0) })
            #expect(page.path == "/payment", "\(page)")
            // The query as the page reads a form: '+' is a space, then percent escapes (the PHP SDK builds it with http_build_query).
            let query = try #require(URLComponents(url: page, resolvingAgainstBaseURL: false)?.percentEncodedQuery)
            let items = query.split(separator: "&").map { pair -> URLQueryItem in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
                }
                return URLQueryItem(name: parts[0], value: parts.count > 1 ? parts[1] : "")
            }
            let signature = try #require(items.first { $0.name == "signature" }?.value)
            let fields = items.filter { $0.name != "signature" }
            func signed(_ fields: [URLQueryItem]) -> String {
                Wire.mac(Wire.string(.object(fields.map { ($0.name, V.string($0.value ?? "")) })), secret: w.a.project.secret).base64EncodedString()
            }
            #expect(signed(fields) == signature, "the URL's signature is not over its parameters")
            #expect(fields.first { $0.name == "payment_amount" }?.value == String(World.amount))
            #expect(fields.first { $0.name == "payment_id" }?.value == s.attempt.rawValue)
            for (name, value) in [("payment_amount", "1"), ("payment_currency", "USD"), ("payment_id", "other"), ("project_id", String(w.b.project.id))] {
                let changed = fields.map { $0.name == name ? URLQueryItem(name: name, value: value) : $0 }
                #expect(signed(changed) != signature, "\(name) changed still matches")
            }
            // The app half opens the page it was given and nothing but http(s).
            var preparation = s.preparation
            for bad in ["javascript:alert(1)", "file:///etc/passwd", "shop://till/return", "not a url"] {
                preparation.parameters[EcommpayGateway.Parameter.pageURL] = bad
                await #expect(throws: CheckoutError.self, "\(bad)") { try await EcommpayGateway().present(preparation, input: .start) }
            }
        }
    }

    @Test("no endpoint signs for the app what is not the stored payment: a lower amount posted with the client secret or the merchant key to every route is refused or ignored, no answer carries its signature or the secret, and no prepare signs anything",
          arguments: StoreKind.available)
    func noSigningOracle(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let params = try #require(s.preparation.parameters[EcommpayGateway.Parameter.params].flatMap { V.parse(Data($0.utf8)) })
            let cheap = params.setting(["payment_amount"], .number("1"))
            let string = Wire.string(cheap)
            let sdkString = Self.sdkString(cheap)
            let forbidden = [Wire.mac(string, secret: w.a.project.secret).base64EncodedString(),
                             Wire.mac(sdkString, secret: w.a.project.secret).base64EncodedString(), w.a.project.secret]
            let bodies: [(String, Data)] = [
                ("params as JSON", cheap.serialized()),
                ("a string to sign", try JSONSerialization.data(withJSONObject: ["paramsForSignature": string])),
                ("a prepare with params", try JSONSerialization.data(withJSONObject: ["returnURLs": ["shop://till/return"],
                                                                                       "parameters": ["params": String(decoding: cheap.serialized(), as: UTF8.self)],
                                                                                       "amount": ["value": 1, "currency": "EUR"]])),
                ("a submit of the params", try JSONSerialization.data(withJSONObject: ["kind": "params", "fields": ["params": string]])),
                ("the SDK's string with a lower amount", try JSONSerialization.data(withJSONObject: [
                    "kind": EcommpayGateway.signingKind, "fields": ["params_for_signature": sdkString]])),
            ]
            let routes = ["v1/payments", "v1/payments/\(s.payment)/attempts", "v1/attempts/\(s.attempt.rawValue)/submit",
                          "v1/attempts/\(s.attempt.rawValue)/outcome", "v1/attempts/\(s.attempt.rawValue)/inquire", "v1/notifications/ecommpay",
                          "v1/sign", "v1/ecommpay/sign", "sign", "v1/payments/\(s.payment)/sign", "v1/attempts/\(s.attempt.rawValue)/sign"]
            var answers: [(String, ServerHarness.Answer)] = []
            for route in routes {
                for (name, body) in bodies {
                    for bearer in [s.secret, w.a.key, nil] as [String?] {
                        answers.append(("\(name) to \(route)", try await w.call("POST", route, body: body, bearer: bearer)))
                    }
                }
                for bearer in [s.secret, w.a.key] {
                    answers.append(("GET \(route)", try await w.call("GET", route, bearer: bearer)))
                }
            }
            for (name, answer) in answers {
                let body = String(decoding: answer.body, as: UTF8.self)
                for secret in forbidden {
                    #expect(!body.contains(secret), "\(name) answered a signature of what it sent, or the secret: \(text(answer))")
                }
                if (200..<300).contains(answer.status) {
                    let allowed = name.hasPrefix("GET") || name.hasSuffix("/inquire") || name.hasSuffix("v1/payments/\(s.payment)/attempts")
                    #expect(allowed, "\(name): \(text(answer))")
                }
            }
            let payment = try #require(try await w.store.payment(id: s.payment, merchant: w.a.id))
            #expect(payment.intent.amount.minorUnits == World.amount)
            for answer in answers.map(\.1) where answer.status == 201 {
                let parameters = answer.json["parameters"] as? [String: String] ?? [:]
                let prepared = try #require(parameters["params"].flatMap { V.parse(Data($0.utf8)) })
                #expect(prepared["payment_amount"]?.number == String(World.amount), "\(prepared.text)")
                #expect(parameters["signature"] == nil)
            }
            #expect(try await w.attempt(s.attempt).status != .paid)
        }
    }

    // MARK: A man in the middle of Gate

    @Test("Gate status answers forged in the middle (another payment's signed success, signed with another project's key or a guessed one, a lower amount or another currency, errors, HTTP 500, not JSON, a success with a wrong signature in general): never paid; only Gate's own success pays",
          arguments: StoreKind.available)
    func forgedGateAnswers(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let neighbour = try await w.start(w.a)
            let up = w.upstream
            let genuine = up.answer(s, status: "success")
            let forgeries: [(String, TransportResponse)] = [
                ("the neighbouring payment's signed success", World.Upstream.json(up.answer(neighbour, status: "success"))),
                ("a success signed with merchant B's key", World.Upstream.json(up.answer(s, status: "success", secret: w.b.project.secret))),
                ("a success signed with the outsider's key", World.Upstream.json(up.answer(s, status: "success", secret: w.outsider.secret))),
                ("a success with a guessed signature", World.Upstream.json(genuine.setting(["signature"], .string(Data(count: 64).base64EncodedString())))),
                ("a success with a wrong general.signature", World.Upstream.json(Wire.withoutSignatures(genuine)
                    .setting(["general", "signature"], .string(Data(count: 64).base64EncodedString())))),
                ("a signed success for 1 cent", World.Upstream.json(up.answer(s, status: "success", changes: [(["payment", "sum", "amount"], .number("1"))]))),
                ("a signed success in USD", World.Upstream.json(up.answer(s, status: "success", changes: [(["payment", "sum", "currency"], .string("USD"))]))),
                ("a signed success without its sum", World.Upstream.json(up.answer(s, status: "success", changes: [(["payment", "sum"], nil)]))),
                ("errors only", World.Upstream.json(.object([("errors", .array([.object([("message", .string("Payment not found"))])]))]))),
                ("Gate's signed success under HTTP 500", World.Upstream.json(genuine, statusCode: 500)),
                ("not JSON", TransportResponse(statusCode: 200, body: Data("payment.status=success".utf8))),
                ("bytes that are not UTF-8", TransportResponse(statusCode: 200, body: Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D]))),
                ("a success with its status repeated", TransportResponse(statusCode: 200, body: Data(String(decoding: genuine.serialized(), as: UTF8.self)
                    .replacingOccurrences(of: #""status":"success""#, with: #""status":"success","status":"decline""#).utf8))),
            ]
            for (name, forged) in forgeries {
                up.intercept { _ in forged }
                let answer = try await w.inquire(s)
                #expect(answer.status != 200 || answer.json["status"] as? String != "paid", "\(name): \(text(answer))")
                #expect(try await w.attempt(s.attempt).status == .pending, "after \(name)")
                #expect(try await w.attempt(neighbour.attempt).status == .pending, "after \(name)")
            }
            // The requests were the merchant server's own, signed with its key, and never carried the key.
            for request in up.requests {
                let body = try #require(request.body.flatMap { V.parse($0) })
                #expect(request.url.path == "/v2/payment/status")
                #expect(body["general"]?["payment_id"]?.string == s.attempt.rawValue)
                let signature = body["general"]?["signature"]?.string
                #expect(signature == Wire.signature(body, secret: w.a.project.secret), "\(body.text)")
                #expect(!String(decoding: request.body ?? Data(), as: UTF8.self).contains(w.a.project.secret))
            }

            // An unsigned success: no vendor source shows whether Gate signs its status answers (the WooCommerce plugin
            // never checks one), so the module checks a signature only when there is one.
            up.intercept { _ in World.Upstream.json(Wire.withoutSignatures(genuine)) }
            let unsigned = try await w.inquire(s)
            let afterUnsigned = try await w.attempt(s.attempt).status
            // Was a known issue: an unsigned Gate answer is now believed only over TLS or from a loopback sandbox
            // (this world's Gate is plain http://ecommpay.invalid).
            #expect(afterUnsigned == .pending, "\(text(unsigned))")

            // Gate's own success pays; an old processing answer served later never un-pays.
            up.intercept(nil)
            up.setStatus("success", for: s.attempt)
            let paid = try await w.inquire(s)
            #expect(paid.status == 200 && paid.json["status"] as? String == "paid", "\(text(paid))")
            up.intercept { _ in World.Upstream.json(up.answer(s, status: "processing")) }
            _ = try await w.inquire(s)
            up.intercept { _ in World.Upstream.json(up.answer(s, status: "decline")) }
            _ = try await w.inquire(s)
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.attempt(neighbour.attempt).status == .pending)
        }
    }

    // MARK: Hostile bodies

    @Test("hostile bodies to /v1/notifications/ecommpay (8 MiB, 10,000 levels deep, not JSON, not UTF-8, a top-level list, string or number, thousands of keys, a 60,000-character value, a form body, empty): 4xx with a typed error, nothing stored, the server keeps serving and a genuine callback still pays",
          arguments: StoreKind.available)
    func hostileBodies(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let genuine = w.callback(s)
            let raw = String(decoding: genuine.serialized(), as: UTF8.self)
            let manyKeys = "{" + (0..<5_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
            let manyKeysSigned = Wire.signed(.object((0..<3_000).map { ("k\($0)", V.number(String($0))) }), secret: w.a.project.secret)
            let bodies: [(String, Data, String)] = [
                ("10,000 nested lists", Data((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8), "application/json"),
                ("10,000 nested objects", Data((String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)).utf8),
                 "application/json"),
                ("the genuine callback 100 levels deep", Data((String(repeating: #"{"a":"#, count: 100) + raw + String(repeating: "}", count: 100)).utf8),
                 "application/json"),
                ("not JSON", Data("payment.status=success&signature=x".utf8), "application/json"),
                ("a form body", Data("payment.status=success&signature=x".utf8), "application/x-www-form-urlencoded"),
                ("not UTF-8", Data(raw.utf8) + Data([0xFF]), "application/json"),
                ("a raw 0xFF inside a value", Data(Data(raw.replacingOccurrences(of: "JOHN DOE", with: "JOHN\u{1}").utf8).map { $0 == 0x01 ? 0xFF : $0 }),
                 "application/json"),
                ("a lone surrogate escape", Data(raw.replacingOccurrences(of: "JOHN DOE", with: #"\ud800"#).utf8), "application/json"),
                ("NUL bytes", Data([0x7B, 0x00, 0x7D]), "application/json"),
                ("a top-level list", Data("[\(raw)]".utf8), "application/json"),
                ("a top-level string", Data(#""success""#.utf8), "application/json"),
                ("a top-level number", Data("1".utf8), "application/json"),
                ("null", Data("null".utf8), "application/json"),
                ("trailing text", Data((raw + "x").utf8), "application/json"),
                ("two objects", Data((raw + raw).utf8), "application/json"),
                ("a trailing comma", Data((String(raw.dropLast()) + ",}").utf8), "application/json"),
                ("5,000 keys", Data(manyKeys.utf8), "application/json"),
                ("3,000 keys, signed", manyKeysSigned.serialized(), "application/json"),
                ("a 60,000-character status", Data(raw.replacingOccurrences(of: #""status":"success""#,
                                                                            with: #""status":""# + String(repeating: "s", count: 60_000) + "\"").utf8),
                 "application/json"),
                ("empty", Data(), "application/json"),
                ("whitespace only", Data("   \n".utf8), "application/json"),
                ("a byte order mark", Data([0xEF, 0xBB, 0xBF]) + Data(raw.utf8), "application/json"),
                ("NaN", Data(raw.replacingOccurrences(of: #""amount":1050"#, with: #""amount":NaN"#).utf8), "application/json"),
            ]
            for (name, body, type) in bodies {
                let answer = try await w.notify(body, contentType: type)
                #expect((400..<500).contains(answer.status), "\(name): \(text(answer))")
                #expect(answer.errorCode != nil, "\(name): no typed error in \(text(answer))")
            }
            var request = URLRequest(url: w.serverURL.appendingPathComponent("v1/notifications/ecommpay"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data("{\"a\":\"".utf8) + Data(repeating: 0x41, count: 8 * 1_024 * 1_024) + Data("\"}".utf8)
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 413, "\(String(decoding: data.prefix(200), as: UTF8.self))")
            await w.settle()
            #expect(try await w.call("GET", "healthz", bearer: nil).status == 200)
            #expect(try await w.allNotifications() == 0)
            #expect(try await w.attempt(s.attempt).status == .pending)

            // The genuine callback, with whitespace between its tokens: still itself, and it pays.
            let spaced = raw.replacingOccurrences(of: ",", with: ", ").replacingOccurrences(of: "\":", with: "\" : ")
            let answer = try await w.notify(Data(("\n " + spaced + " \n").utf8))
            #expect(answer.status == 200, "\(text(answer))")
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.notify(genuine).status == 200)
            #expect(try await w.notifications(s.attempt).all == 1)
        }
    }
}
