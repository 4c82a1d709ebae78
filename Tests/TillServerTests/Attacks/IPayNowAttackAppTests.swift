import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillGatewayKit
import TillIPayNow
import TillIPayNowServer
@testable import TillServer

/// Attacks on iPayNow from the customer's side (they hold the app, its client secret and every `payData`
/// the server signed for them), from a man in the middle of the server's MQ001 queries, and with bodies
/// no gateway sends, against the real merchant server with the iPayNow module.
@Suite("Attacks: iPayNow payData in the app, no signing for the app, MQ001 answers in the middle, hostile bodies", .serialized)
struct IPayNowAttackAppTests {
    typealias World = IPayNowAttackWorld
    typealias Wire = IPayNowWire

    func text(_ answer: ServerHarness.Answer) -> String { "HTTP \(answer.status) \(String(decoding: answer.body, as: UTF8.self))" }

    // MARK: The customer holds the app

    /// `payData` with the field `name` set to `value` (or removed), written as the plugin reads it.
    static func tamper(_ payData: String, _ name: String, _ value: String?) -> String {
        var segments = payData.split(separator: "&").map(String.init)
        if let index = segments.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            if let value { segments[index] = "\(name)=\(value)" } else { segments.remove(at: index) }
        } else if let value {
            segments.append("\(name)=\(value)")
        }
        return segments.joined(separator: "&")
    }

    @Test("payData tampered in the app (amount lowered, another attempt's order number or whole payData, channel, currency or amount flag changed, a field repeated, the signature cut): the app half refuses it before launching the plugin, naming the field; the untouched payData launches as signed",
          arguments: StoreKind.available)
    func tamperedPayData(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let other = try await w.start(w.a, minor: 1)
            let payData = try #require(s.preparation.parameters["payData"])
            // What the server signed is the order of the stored payment, under the order rule (the tests' own signer).
            let signed = payData.split(separator: "&").map { part -> (String, String) in
                let pieces = part.split(separator: "=", maxSplits: 1)
                return (String(pieces[0]), pieces.count > 1 ? String(pieces[1]) : "")
            }
            let orderExcluded: Set<String> = ["funcode", "deviceType", "mhtSignType", "mhtSignature", "detail", "version"]
            #expect(Wire.signature(signed, key: w.a.app.appKey, excluded: orderExcluded) == s.order["mhtSignature"])
            #expect(s.order["mhtOrderAmt"] == "1050" && s.order["mhtCurrencyType"] == "NZD" && s.order["mhtOrderNo"] == s.attempt.rawValue)

            let gateway = IPayNowGateway(id: World.gateway)
            let field = "preparation.parameters.payData"
            let cases: [(String, String, String)] = [
                ("the amount lowered", Self.tamper(payData, "mhtOrderAmt", "1"), "\(field).mhtOrderAmt"),
                ("the amount with a leading zero", Self.tamper(payData, "mhtOrderAmt", "01050"), "\(field).mhtOrderAmt"),
                ("another attempt's order number", Self.tamper(payData, "mhtOrderNo", other.attempt.rawValue), "\(field).mhtOrderNo"),
                ("another attempt's whole signed payData", try #require(other.preparation.parameters["payData"]), "\(field).mhtOrderNo"),
                ("WeChat Pay instead of Alipay", Self.tamper(payData, "payChannelType", "80"), "\(field).payChannelType"),
                ("a channel iPayNow does not have", Self.tamper(payData, "payChannelType", "13"), "\(field).payChannelType"),
                ("the currency changed", Self.tamper(payData, "mhtCurrencyType", "HKD"), "\(field).mhtCurrencyType"),
                ("the amount said to be RMB fen", Self.tamper(payData, "mhtAmtCurrFlag", "0"), "\(field).mhtAmtCurrFlag"),
                ("mhtOrderAmt=1 repeated after the genuine one", payData + "&mhtOrderAmt=1", "\(field).mhtOrderAmt"),
                ("the sign type changed", Self.tamper(payData, "mhtSignType", "RSA"), "\(field).mhtSignType"),
                ("the signature cut", Self.tamper(payData, "mhtSignature", "abc"), "\(field).mhtSignature"),
                ("the signature removed", Self.tamper(payData, "mhtSignature", nil), "\(field).mhtSignature"),
                ("the amount removed", Self.tamper(payData, "mhtOrderAmt", nil), "\(field).mhtOrderAmt"),
                ("a bare segment", payData + "&junk", field),
            ]
            for (name, tampered, expected) in cases {
                var preparation = s.preparation
                preparation.parameters["payData"] = tampered
                do {
                    let next = try await gateway.present(preparation, input: .start)
                    Issue.record("\(name): launched \(next)")
                } catch let error as CheckoutError {
                    #expect(error.field == expected, "\(name): \(error.field ?? "-") \(error.message)")
                }
            }
            // The untouched payData launches the plugin with exactly what the server signed, and the app's scheme.
            let next = try await gateway.present(s.preparation, input: .start)
            guard case .launchWallet(let launch) = next else {
                Issue.record("expected launchWallet, got \(next)")
                return
            }
            #expect(launch.wallet == IPayNowGateway.sdkWallet)
            #expect(launch.parameters["payData"] == payData && launch.parameters["scheme"] == "shop")
            // The server's view is unchanged by anything the app did.
            #expect(try await w.attempt(s.attempt).status == .pending)
        }
    }

    @Test("no endpoint signs for the app: a presign string (or a payData with a lower amount) posted with the client secret or the merchant key to every route is refused or ignored, no answer carries its MD5, and the payData prepare returns is always the stored payment's order",
          arguments: StoreKind.available)
    func noSigningOracle(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let key = w.a.app.appKey
            // What the vendor's demo app posts to its merchant server to be signed (iOS guide 第二步): a presign with the amount the customer chose.
            var cheap = s.order.filter { !["mhtSignType", "mhtSignature"].contains($0.key) }
            cheap["mhtOrderAmt"] = "1"
            let presign = cheap.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
            let forbidden = [Wire.md5Hex(presign + "&" + Wire.md5Hex(key)), Wire.md5Hex(key), key]
            let bodies: [(String, Data, String)] = [
                ("a presign as text", Data(presign.utf8), "text/plain"),
                ("a presign as a form", Data(presign.utf8), "application/x-www-form-urlencoded"),
                ("a presign in JSON", try JSONSerialization.data(withJSONObject: ["presign": presign]), "application/json"),
                ("a payData in JSON", try JSONSerialization.data(withJSONObject: ["payData": presign, "returnURLs": ["shop://till/return"]]),
                 "application/json"),
                ("a prepare with parameters", try JSONSerialization.data(withJSONObject: ["returnURLs": ["shop://till/return"], "parameters": ["mhtOrderAmt": "1"]]),
                 "application/json"),
                ("a submit of the presign", try JSONSerialization.data(withJSONObject: ["kind": "presign", "fields": ["presign": presign]]), "application/json"),
            ]
            let routes = ["v1/payments", "v1/payments/\(s.payment)/attempts", "v1/attempts/\(s.attempt.rawValue)/submit",
                          "v1/attempts/\(s.attempt.rawValue)/outcome", "v1/attempts/\(s.attempt.rawValue)/inquire", "v1/notifications/ipaynow",
                          "v1/sign", "v1/ipaynow/sign", "v1/presign", "sign", "v1/payments/\(s.payment)/sign", "v1/attempts/\(s.attempt.rawValue)/sign"]
            var answers: [(String, ServerHarness.Answer)] = []
            for route in routes {
                for (name, body, type) in bodies {
                    for bearer in [s.secret, w.a.key, nil] as [String?] {
                        let answer = try await w.call("POST", route, body: body, contentType: type, bearer: bearer)
                        answers.append(("\(name) to \(route)", answer))
                    }
                }
                for bearer in [s.secret, w.a.key] {
                    answers.append(("GET \(route)", try await w.call("GET", route, bearer: bearer)))
                }
            }
            for (name, answer) in answers {
                let body = String(decoding: answer.body, as: UTF8.self)
                for secret in forbidden {
                    #expect(!body.contains(secret), "\(name) answered a signature of what it sent, or the key: \(text(answer))")
                }
                // Only reads, inquiries and the one new attempt a prepare may make succeed; nothing that takes a presign.
                if (200..<300).contains(answer.status) {
                    let allowed = name.hasPrefix("GET") || name.hasSuffix("/inquire") || name.hasSuffix("v1/payments/\(s.payment)/attempts")
                    #expect(allowed, "\(name): \(text(answer))")
                }
            }
            // Every payData the server handed out is an order of a stored payment: the amount never moved.
            let payment = try #require(try await w.store.payment(id: s.payment, merchant: w.a.id))
            #expect(payment.intent.amount.minorUnits == World.amount)
            for answer in answers.map(\.1) where answer.status == 201 {
                let parameters = answer.json["parameters"] as? [String: String] ?? [:]
                let order = try #require(parameters["payData"].flatMap(Wire.payDataFields))
                #expect(order["mhtOrderAmt"] == "1050", "\(order)")
                #expect(order["mhtSignature"] != forbidden[0])
            }
            #expect(try await w.attempt(s.attempt).status != .paid)
        }
    }

    // MARK: A man in the middle of MQ001

    @Test("MQ001 answers forged in the middle (unsigned A001, another order's signed A001, another app's, our key over another appId, a lower amount, a failed query, an N001 instead of an answer, HTTP 500, an old A00I after A001): never paid; only iPayNow's own A001 pays",
          arguments: StoreKind.available)
    func forgedInquiryAnswers(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let neighbour = try await w.start(w.a)
            let genuine = w.mq001Answer(s, status: "A001")
            let forgeries: [(String, TransportResponse)] = [
                ("an unsigned A001", World.Upstream.form(Wire.replacing(Wire.replacing(genuine, "signature", with: nil), "signType", with: nil))),
                ("an A001 with an empty signature", World.Upstream.form(Wire.replacing(genuine, "signature", with: ""))),
                ("an A001 with a made-up signature", World.Upstream.form(Wire.replacing(genuine, "signature", with: String(repeating: "a", count: 32)))),
                ("the neighbouring order's signed A001", World.Upstream.form(w.mq001Answer(neighbour, status: "A001"))),
                ("an A001 signed with the outsider app's key", World.Upstream.form(w.mq001Answer(s, status: "A001", signer: w.outsider))),
                ("the outsider app's own A001 (its appId)", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["appId": w.outsider.appId],
                                                                                                signer: w.outsider))),
                ("merchant B's app's A001 (its appId and key)", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["appId": w.b.app.appId],
                                                                                                  signer: w.b.app))),
                ("our key over another appId", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["appId": w.b.app.appId]))),
                ("a signed A001 for 1 cent", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["mhtOrderAmt": "1"]))),
                ("a signed A001 in RMB fen", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["mhtAmtCurrFlag": "0"]))),
                ("a signed A001 without amount", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["mhtOrderAmt": nil]))),
                ("a failed query carrying tradeStatus A001", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["responseCode": "A002"]))),
                ("an answer without responseCode", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["responseCode": nil]))),
                ("an N001 instead of an answer", World.Upstream.form(w.n001(s))),
                ("iPayNow's signed A001 under HTTP 500", World.Upstream.form(genuine, statusCode: 500)),
                ("iPayNow's signed A001 with its tradeStatus repeated", World.Upstream.form(genuine + [("tradeStatus", "A001")])),
                ("tradeStatus A001 but transStatus A002", World.Upstream.form(w.mq001Answer(s, status: "A001", changes: ["transStatus": "A002"]))),
                ("an unknown status", World.Upstream.form(w.mq001Answer(s, status: "A009"))),
                ("not a form at all", TransportResponse(statusCode: 200, body: Data(#"{"responseCode":"A001","tradeStatus":"A001"}"#.utf8))),
                ("bytes that are not UTF-8", TransportResponse(statusCode: 200, body: Data([0x74, 0x72, 0x61, 0x64, 0x65, 0x3D, 0xFF, 0xFE]))),
            ]
            for (name, forged) in forgeries {
                w.upstream.intercept { _ in forged }
                let answer = try await w.inquire(s)
                #expect(answer.status == 502 || (answer.status == 200 && answer.json["status"] as? String == "pending"), "\(name): \(text(answer))")
                #expect(try await w.attempt(s.attempt).status == .pending, "after \(name)")
                #expect(try await w.attempt(neighbour.attempt).status == .pending, "after \(name)")
            }
            // The queries were the server's own, signed, and never carried the key. Sources disagree on what an
            // MQ001 signs (PHP SDK OrderQueryService: appId, mhtOrderNo, mhtCharset; its README 2.4: every field
            // but the signature): either is the merchant's own signature.
            let queries = w.upstream.queries
            #expect(queries.count >= forgeries.count)
            for query in queries {
                let fields = Wire.decode(query.body ?? Data()) ?? [:]
                #expect(fields["funcode"] == "MQ001" && fields["mhtOrderNo"] == s.attempt.rawValue && fields["appId"] == w.a.app.appId)
                let three = fields.filter { ["appId", "mhtOrderNo", "mhtCharset"].contains($0.key) }.map { ($0.key, $0.value) }
                let all = fields.map { ($0.key, $0.value) }
                #expect([Wire.signature(three, key: w.a.app.appKey, excluded: []),
                         Wire.signature(all, key: w.a.app.appKey, excluded: ["mhtSignature"])].contains(fields["mhtSignature"] ?? ""))
                #expect(!String(decoding: query.body ?? Data(), as: UTF8.self).contains(w.a.app.appKey))
            }

            // iPayNow's own answer pays; an old A00I served later by the man in the middle never un-pays.
            w.upstream.intercept(nil)
            w.upstream.setStatus("A001", for: s.attempt)
            let paid = try await w.inquire(s)
            #expect(paid.status == 200 && paid.json["status"] as? String == "paid", "\(text(paid))")
            let old = w.mq001Answer(s, status: "A00I")
            w.upstream.intercept { _ in World.Upstream.form(old) }
            _ = try await w.inquire(s)
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.attempt(neighbour.attempt).status == .pending)
        }
    }

    // MARK: Hostile bodies

    @Test("hostile bodies to /v1/notifications/ipaynow (8 MiB, not UTF-8, bad percent escapes, NUL bytes, thousands of fields, nameless fields, JSON, empty): 4xx with a typed error, nothing stored, the server keeps serving and a genuine N001 still pays",
          arguments: StoreKind.available)
    func hostileBodies(kind: StoreKind) async throws {
        try await World.with(kind) { w in
            let s = try await w.start(w.a)
            let genuine = w.n001(s)
            let genuineBody = String(decoding: Wire.encode(genuine), as: UTF8.self)
            let manyFields = (0..<6_000).map { "f\($0)=" }.joined(separator: "&")
            let padded = "6,000 empty fields and the genuine signature"
            let manyValues = (0..<4_000).map { "f\($0)=v" }.joined(separator: "&")
            let bodies: [(String, Data)] = [
                ("a raw 0xFF byte in a value", Data(genuineBody.utf8) + Data([0x26, 0x78, 0x3D, 0xFF])),
                ("%FF in a value", Data((genuineBody + "&x=%FF").utf8)),
                ("an overlong UTF-8 slash", Data((genuineBody + "&x=%C0%AF").utf8)),
                ("an encoded surrogate", Data((genuineBody + "&x=%ED%A0%80").utf8)),
                ("a lone %", Data((genuineBody + "&x=%").utf8)),
                ("%G1", Data((genuineBody + "&x=%G1").utf8)),
                ("a truncated escape", Data((genuineBody + "&x=%4").utf8)),
                ("NUL bytes", Data([0x61, 0x3D, 0x00, 0x00, 0x26, 0x00, 0x3D, 0x62])),
                ("a nameless field", Data((genuineBody + "&=A001").utf8)),
                ("6,000 empty fields", Data(manyFields.utf8)),
                ("6,000 empty fields and the genuine signature", Data((manyFields + "&" + genuineBody).utf8)),
                ("4,000 unknown fields with values and the genuine signature", Data((manyValues + "&" + genuineBody).utf8)),
                ("one field 60,000 characters long", Data(("tradeStatus=" + String(repeating: "A", count: 60_000)).utf8)),
                ("the same field 5,000 times", Data(String(repeating: "tradeStatus=A001&", count: 5_000).utf8)),
                ("JSON", try JSONSerialization.data(withJSONObject: Dictionary(genuine, uniquingKeysWith: { a, _ in a }))),
                ("empty", Data()),
                ("only separators", Data(String(repeating: "&", count: 10_000).utf8)),
                ("only equals signs", Data(String(repeating: "=", count: 10_000).utf8)),
            ]
            for (name, body) in bodies where name != padded {
                let answer = try await w.notify(body)
                let code = (answer.json["error"] as? [String: Any])?["code"] as? String
                #expect((400..<500).contains(answer.status), "\(name): \(text(answer))")
                #expect(code != nil, "\(name): no typed error in \(text(answer))")
            }
            var request = URLRequest(url: w.serverURL.appendingPathComponent("v1/notifications/ipaynow"))
            request.httpMethod = "POST"
            request.httpBody = Data(repeating: 0x41, count: 8 * 1_024 * 1_024)
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 413, "\(String(decoding: data.prefix(200), as: UTF8.self))")
            await w.settle()
            #expect(try await w.call("GET", "healthz", bearer: nil).status == 200)
            #expect(try await w.allNotifications() == 0)
            #expect(try await w.attempt(s.attempt).status == .pending)

            // The genuine message padded with thousands of empty fields is still the genuine message (appendix B
            // leaves empty values out of the string to sign): stored once, applied once.
            let answer = try await w.notify(try #require(bodies.first { $0.0 == padded }?.1))
            #expect(answer.status == 200, "\(text(answer))")
            #expect(try await w.attempt(s.attempt).status == .paid)
            #expect(try await w.notify(genuine).status == 200)
            #expect(try await w.notifications(s.attempt).all == 1)
        }
    }
}
