import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The vendor wire fixtures (`Tests/TillCitconTests/Fixtures/wire`, each naming its source) used on the
/// emulator's side: every recorded or published request is posted to the running emulator and must be
/// accepted, and every emulator answer must have the shape (members, JSON types, nesting) of the
/// matching recorded answer. IPNs must verify under the IPN document's rule, whose worked example
/// verifies here too.
@Suite("Citcon emulator: the vendor wire fixtures")
struct CitconWireFixtureTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("TillCitconTests/Fixtures/wire")

    /// Every fixture this suite uses; a fixture added to the folder fails ``everyFixtureIsUsed()`` until
    /// a test here uses it.
    static let used: Set<String> = [
        "access-token-request.json", "access-token-response.json", "cancel-request.json", "cancel-response.json",
        "capture-request.json", "capture-response.json", "charge-request-alipay.json", "charge-request-card.json",
        "charge-request-paypal.json", "charge-request-upop.json", "charge-request-wechatpay.json",
        "charge-response-alipay.json", "charge-response-paypal.json", "charge-response-upop.json",
        "charge-response-wechatpay.json", "error-response.json", "inquire-response.json", "ipn-charge.json",
        "ipn-kinds.json", "refund-request.json", "refund-response.json",
    ]

    static func fixture(_ name: String) throws -> JSONValue {
        try JSONValue.parse([UInt8](Data(contentsOf: directory.appendingPathComponent(name))))
    }

    // MARK: Shapes

    static func kind(_ value: JSONValue) -> String {
        switch value {
        case .string: "string"
        case .number: "number"
        case .bool: "boolean"
        case .null: "null"
        case .array: "array"
        case .object: "object"
        }
    }

    /// How `actual` differs in shape from `expected`: the same members (order aside), each of the same
    /// JSON type, nested alike. A `null` in the fixture is a nullable member and takes any scalar; an
    /// array's items are compared with the fixture's first item (an empty fixture array takes any items).
    static func shapeMismatches(_ actual: JSONValue, _ expected: JSONValue, path: String = "") -> [String] {
        let here = path.isEmpty ? "(root)" : path
        switch (actual, expected) {
        case (.object(let members), .object(let wanted)):
            var problems: [String] = []
            let keys = Set(members.map(\.key)), wantedKeys = Set(wanted.map(\.key))
            for key in wanted.map(\.key) where !keys.contains(key) { problems.append("\(path.isEmpty ? "" : path + ".")\(key): missing") }
            for key in members.map(\.key) where !wantedKeys.contains(key) {
                problems.append("\(path.isEmpty ? "" : path + ".")\(key): not in the fixture")
            }
            for member in wanted {
                guard let value = actual[member.key] else { continue }
                problems += shapeMismatches(value, member.value, path: path.isEmpty ? member.key : path + "." + member.key)
            }
            return problems
        case (.array(let items), .array(let wanted)):
            guard let first = wanted.first else { return [] }
            return items.enumerated().flatMap { shapeMismatches($0.element, first, path: "\(path)[\($0.offset)]") }
        case (_, .null):
            return actual.isScalar ? [] : ["\(here): \(kind(actual)) where the fixture has null"]
        default:
            return kind(actual) == kind(expected) ? [] : ["\(here): \(kind(actual)), the fixture has \(kind(expected))"]
        }
    }

    /// Members of `partial` (a source's truncated example) missing from `actual` or of another type.
    static func subsetMismatches(_ actual: JSONValue, _ partial: JSONValue, path: String = "") -> [String] {
        guard case .object(let wanted) = partial else { return shapeMismatches(actual, partial, path: path) }
        guard case .object = actual else { return ["\(path): \(kind(actual)), the example has object"] }
        return wanted.flatMap { member -> [String] in
            let inner = path.isEmpty ? member.key : path + "." + member.key
            guard let value = actual[member.key] else { return ["\(inner): missing"] }
            return subsetMismatches(value, member.value, path: inner)
        }
    }

    /// `(client, format, method)` of each `payment.client[]` entry.
    static func triples(_ data: JSONValue?) -> [String] {
        guard case .array(let entries)? = data?["payment"]?["client"] else { return [] }
        return entries.map { "\($0["client"]?.stringValue ?? "?") \($0["format"]?.stringValue ?? "?") \($0["method"]?.stringValue ?? "?")" }
    }

    // MARK: Sending fixtures

    /// Posts a fixture's request to the emulator: its method, its URL's path under `/v1/`, its headers
    /// (`<ACCESS_TOKEN>` replaced by `bearer`) and `body`.
    static func send(_ fixture: JSONValue, body: JSONValue?, headers: JSONValue? = nil, bearer: String,
                     to harness: CitconHarness, rawBody: String? = nil) async throws -> CitconResult {
        let url = fixture["http"]?["url"]?.stringValue ?? fixture["http"]?["path"]?.stringValue ?? ""
        let path = try #require(url.range(of: "/v1/").map { String(url[$0.upperBound...]) })
        var request = URLRequest(url: harness.url(path))
        request.httpMethod = fixture["http"]?["method"]?.stringValue ?? "POST"
        for member in (headers ?? fixture["headers"])?.objectMembers ?? [] {
            request.setValue(member.value.parameterText.replacingOccurrences(of: "<ACCESS_TOKEN>", with: bearer),
                             forHTTPHeaderField: member.key)
        }
        if let rawBody {
            request.httpBody = Data(rawBody.utf8)
        } else if let body {
            request.httpBody = Data(body.serialized.utf8)
        }
        return try CitconResult(try await harness.send(request))
    }

    // MARK: Tests

    @Test("every fixture in the folder is used by this suite")
    func everyFixtureIsUsed() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter { $0.hasSuffix(".json") }
        #expect(!names.isEmpty, "no fixtures at \(Self.directory.path)")
        #expect(Set(names) == Self.used)
        for name in names {
            let document = try Self.fixture(name)
            #expect(document["source"]?.stringValue?.isEmpty == false, "\(name) names no source")
        }
    }

    @Test("access tokens: the demo servers' and the sandbox client's requests; answers shaped as the 2022 manual (ms) and the 2025 sandbox (s)",
          arguments: CitconEmulator.TimeUnit.allCases)
    func accessTokens(unit: CitconEmulator.TimeUnit) async throws {
        let request = try Self.fixture("access-token-request.json")
        let response = try Self.fixture("access-token-response.json")
        try await CitconHarness.with(timeUnit: unit) { harness in
            // The Java and PHP demos: `Authorization: Bearer braintree`, the merchant key.
            let demo = try await Self.send(request, body: request["body"], bearer: "braintree", to: harness)
            #expect(demo.status == 200, "\(demo.raw.text)")
            // The Java demo sends the body as literal text with a newline and a tab.
            let literal = try await Self.send(request, body: nil, bearer: "braintree", to: harness, rawBody: "{\n\t\"token_type\": \"client\"}")
            #expect(literal.status == 200)
            guard case .array(let others)? = request["other_examples"] else { throw CitconVectorsUnavailable() }
            for other in others {
                // The sandbox client's recording (the recorder hid the merchant key as <ACCESS_TOKEN>), and the
                // PHP demo. The WooCommerce plugin's key without `Bearer ` is third-party code, not evidence.
                guard other["headers"]?["Authorization"]?.stringValue?.hasPrefix("Bearer ") == true else { continue }
                let result = try await Self.send(request, body: other["body"], headers: other["headers"], bearer: "braintree", to: harness)
                #expect(result.status == 200, "\(other["source"]?.stringValue ?? "")")
                #expect(result.data?["token_type"] == other["body"]?["token_type"])
            }
            let expected: JSONValue
            switch unit {
            case .milliseconds: expected = try #require(response["body"])
            case .seconds:
                guard case .array(let examples)? = response["other_examples"], let recorded = examples.first?["body"] else {
                    throw CitconVectorsUnavailable()
                }
                expected = recorded
            }
            #expect(Self.shapeMismatches(demo.envelope, expected) == [])
            #expect(demo.envelope["app"] == expected["app"])
            #expect(demo.envelope["version"] == expected["version"])
            let expiry = try #require(demo.data?["expiry"]?.integer)
            #expect((expiry > 100_000_000_000) == (unit == .milliseconds), "ms above 10^11, s below")
            #expect(demo.data?["permission"] != nil && demo.data?["permissions"] == nil)
        }
    }

    @Test("charges: each recorded request is accepted; the answer is shaped as the recording, with its client[] entries",
          arguments: ["wechatpay", "alipay", "upop", "paypal"])
    func charges(method: String) async throws {
        let request = try Self.fixture("charge-request-\(method).json")
        let response = try Self.fixture("charge-response-\(method).json")
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let body = try #require(request["body"])
            let result = try await Self.send(request, body: body, bearer: token, to: harness)
            #expect(result.status == 200, "\(result.raw.text)")
            let expected = try #require(response["body"])
            #expect(Self.shapeMismatches(result.envelope, expected) == [])
            #expect(result.envelope["status"] == "success" && result.envelope["app"] == expected["app"])
            let data = result.data
            for key in ["object", "reference", "amount", "currency", "status", "country", "auto_capture"] {
                #expect(data?[key] == expected["data"]?[key], "data.\(key)")
            }
            #expect(data?["payment"]?["method"] == expected["data"]?["payment"]?["method"])
            #expect(Self.triples(data) == Self.triples(expected["data"]))

            // The other full bodies (the Android SDK's mobile_native payloads) are accepted too; their
            // client[0] content is the JSON text the SDK parses.
            guard case .array(let others)? = request["other_examples"] else { return }
            for other in others {
                guard let otherBody = other["body"] else { continue }
                let answer = try await Self.send(request, body: otherBody, bearer: token, to: harness)
                #expect(answer.status == 200, "\(other["source"]?.stringValue ?? ""): \(answer.raw.text)")
                #expect(Self.shapeMismatches(answer.envelope, expected) == [])
                guard case .array(let entries)? = answer.data?["payment"]?["client"], let first = entries.first else {
                    Issue.record("no client[0]")
                    continue
                }
                #expect(first["client"] == "mobile_native")
                let content = try JSONValue.parse(try #require(first["content"]?.stringValue))
                let keys = Set(content.objectMembers?.map(\.key) ?? [])
                switch method {
                case "wechatpay": #expect(keys == ["appid", "partnerid", "package", "noncestr", "timestamp", "prepayid", "sign"])
                case "alipay": #expect(keys == ["orderSpec", "signedString"])
                case "upop": #expect(keys == ["tn"])
                default: break
                }
            }
        }
    }

    @Test("charges: the demos' pending charges (no payment object; the PHP demo's *_url keys inside transaction) and the card body's known members are accepted")
    func pendingAndCardCharges() async throws {
        let paypal = try Self.fixture("charge-request-paypal.json")
        let card = try Self.fixture("charge-request-card.json")
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            func derived(_ literals: JSONValue?, reference: String) -> JSONValue {
                var body = literals ?? .object([])
                for (path, value) in [("transaction.reference", JSONValue.string(reference)), ("transaction.amount", .number("500")),
                                      ("transaction.currency", "USD"), ("transaction.country", "US")] {
                    body = body.setting(path, to: value)
                }
                return body
            }
            guard case .array(let examples)? = paypal["other_examples"] else { throw CitconVectorsUnavailable() }
            var pending = 0
            for (index, example) in examples.enumerated() {
                // POST /charges/{chargeToken} (a Braintree nonce) is not emulated: Till does not use it.
                guard example["http"]?["path"]?.stringValue == "/charges" || example["body_literals"]?["transaction"]?["urls"] != nil,
                      let literals = example["body_literals"] else { continue }
                let result = try await harness.call("charges", bearer: token, json: derived(literals, reference: "pending-\(index)"))
                #expect(result.status == 200, "\(example["source"]?.stringValue ?? ""): \(result.raw.text)")
                #expect(result.data?["status"] == "initiated")
                #expect(result.data?["charge_token"]?.stringValue?.count == 32)
                pending += 1
            }
            #expect(pending == 2)
            // Card: no REST body was ever recorded (body null); the WooCommerce plugin's literals with the
            // members it derives from the order are accepted.
            #expect(card["body"] == .null)
            guard case .array(let cardExamples)? = card["other_examples"], let literals = cardExamples.first?["body_literals"] else {
                throw CitconVectorsUnavailable()
            }
            let body = derived(literals, reference: "card-1")
                .setting("payment.method", to: "card").setting("payment.client", to: ["mobile_browser"])
                .setting("payment.billing_address", to: .object([
                    .init(key: "street", value: "1 Main St"), .init(key: "street2", value: ""), .init(key: "city", value: "Chicago"),
                    .init(key: "state", value: "IL"), .init(key: "zip", value: "60607"), .init(key: "country", value: "US"),
                ]))
                .setting("consumer.reference", to: "order-1")
                .setting("urls", to: .object([.init(key: "ipn", value: "https://shop.example/ipn"),
                                              .init(key: "success", value: "https://shop.example/ok"),
                                              .init(key: "fail", value: "https://shop.example/ko")]))
                .setting("goods.shipping", to: .object([.init(key: "city", value: "Chicago"), .init(key: "zip", value: "60607"),
                                                        .init(key: "country", value: "US")]))
            let result = try await harness.call("charges", bearer: token, json: body)
            #expect(result.status == 200, "\(result.raw.text)")
            #expect(result.data?["auto_capture"] == .bool(true))
            #expect(Self.triples(result.data) == ["mobile_browser redirect GET"])
        }
    }

    @Test("errors: a repeated reference is the recorded 400 / 4100 duplicate request, shaped as recorded")
    func duplicate() async throws {
        let request = try Self.fixture("charge-request-alipay.json")
        let error = try Self.fixture("error-response.json")
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            _ = try await Self.send(request, body: request["body"], bearer: token, to: harness)
            let again = try await Self.send(request, body: request["body"], bearer: token, to: harness)
            let expected = try #require(error["body"])
            #expect(again.status == error["http"]?["status"]?.integer.map(Int.init))
            #expect(Self.shapeMismatches(again.envelope, expected) == [])
            #expect(again.code == expected["data"]?["code"]?.stringValue)
            #expect(again.message == expected["data"]?["message"]?.stringValue)
        }
    }

    @Test("inquiry: GET /v1/transactions/{id} answers the iOS guide's shape (and the shorter examples' members)")
    func inquiry() async throws {
        let fixture = try Self.fixture("inquire-response.json")
        let charge = try Self.fixture("charge-request-paypal.json")
        try await CitconHarness.with { harness in
            let token = try await harness.token("client")
            #expect(fixture["http"]?["path"] == "/v1/transactions/{id}")
            let created = try await Self.send(charge, body: charge["body"], bearer: token, to: harness)
            let id = try #require(created.data?["id"]?.stringValue)
            let expected = try #require(fixture["body"])
            let before = try await harness.inquire(id, token: token)
            #expect(before.status == 200)
            #expect(Self.shapeMismatches(before.envelope, expected) == [])
            let createdData = try #require(created.data)
            _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(createdData)), outcome: "complete")
            let after = try await harness.inquire(id, token: token)
            #expect(Self.shapeMismatches(after.envelope, expected) == [])
            #expect(after.data?["status"] == "authorized")
            guard case .array(let others)? = fixture["other_examples"] else { throw CitconVectorsUnavailable() }
            for other in others {
                guard let body = other["body"] else { continue }
                #expect(Self.subsetMismatches(after.envelope, body) == [], "\(other["source"]?.stringValue ?? "")")
            }
        }
    }

    @Test("refunds: the recorded request (id, reference, amount 100.0, note) is accepted and answered as recorded; an unpaid charge is the recorded 406 / 4202")
    func refunds() async throws {
        let request = try Self.fixture("refund-request.json")
        let response = try Self.fixture("refund-response.json")
        let charge = try Self.fixture("charge-request-wechatpay.json")
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let paid = try await Self.send(charge, body: charge["body"], bearer: token, to: harness)
            let paidData = try #require(paid.data)
            _ = try await SandboxBrowser.completeCitconPage(at: try #require(CitconHarness.pageURL(paidData)), outcome: "complete")
            let body = try #require(request["body"]).setting("id", to: paidData["id"])
            #expect(body.serialized.contains("\"amount\":100.0"), "the recorded float is sent as written")
            let result = try await Self.send(request, body: body, bearer: token, to: harness)
            #expect(result.status == 200, "\(result.raw.text)")
            #expect(Self.shapeMismatches(result.envelope, try #require(response["body"])) == [])
            #expect(result.data?["amount"] == .number("100"))
            #expect(result.data?["reference"] == body["reference"])
            #expect(result.data?["status"] == "succeeded")

            guard case .array(let examples)? = request["other_examples"], let refused = examples.first?["body"],
                  case .array(let answers)? = response["other_examples"], let answer = answers.first else {
                throw CitconVectorsUnavailable()
            }
            let unpaid = try await harness.charge(method: "paypal", token: token)
            let refusal = try await Self.send(request, body: refused.setting("id", to: unpaid["id"]), bearer: token, to: harness)
            #expect(refusal.status == answer["http"]?["status"]?.integer.map(Int.init))
            #expect(Self.shapeMismatches(refusal.envelope, try #require(answer["body"])) == [])
            #expect(refusal.data == answer["body"]?["data"])
        }
    }

    @Test("cancels: the recorded requests (with and without transaction_reference) cancel an initiated charge, answered as recorded")
    func cancels() async throws {
        let request = try Self.fixture("cancel-request.json")
        let response = try Self.fixture("cancel-response.json")
        let charge = try Self.fixture("charge-request-alipay.json")
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            var bodies = [try #require(request["body"])]
            if case .array(let others)? = request["other_examples"] { bodies += others.compactMap { $0["body"] } }
            #expect(bodies.count == 2)
            for (index, template) in bodies.enumerated() {
                let created = try await Self.send(charge, body: try #require(charge["body"]).setting("transaction.reference",
                                                                                                    to: .string("cancel-\(index)")),
                                                  bearer: token, to: harness)
                let id = try #require(created.data?["id"])
                let result = try await Self.send(request, body: template.setting("id", to: id), bearer: token, to: harness)
                #expect(result.status == 200, "\(result.raw.text)")
                #expect(Self.shapeMismatches(result.envelope, try #require(response["body"])) == [])
                #expect(result.data?["id"] == id)
                #expect(result.data?["reference"] == template["reference"])
                #expect(result.data?["status"] == "canceled")
            }
        }
    }

    @Test("captures: no source shows a capture body or answer; the emulator answers not supported (501 / 5200)")
    func captures() async throws {
        let request = try Self.fixture("capture-request.json")
        let response = try Self.fixture("capture-response.json")
        #expect(request["body"] == .null)
        #expect(response["body"] == .null)
        try await CitconHarness.with { harness in
            let token = try await harness.token()
            let result = try await Self.send(request, body: .object([]), headers: .object([]), bearer: token, to: harness)
            #expect(result.status == 401, "no token, no capture")
            var raw = URLRequest(url: harness.url("captures"))
            raw.httpMethod = "POST"
            raw.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            raw.httpBody = Data("{}".utf8)
            let answer = try CitconResult(try await harness.send(raw))
            #expect(answer.status == 501)
            #expect(answer.code == "5200")
            #expect(Self.shapeMismatches(answer.envelope, try #require(try Self.fixture("error-response.json")["body"])) == [])
        }
    }

    @Test("IPN: the document's worked example verifies under the emulator's rule")
    func ipnWorkedExample() throws {
        let fixture = try Self.fixture("ipn-charge.json")
        let values = try #require(fixture["body"]).flatValues
        let secret = try #require(fixture["secret"]?.stringValue)
        #expect(CitconEmulator.IPNSignature.stringToSign(values, secret: secret) == fixture["string_to_sign"]?.stringValue)
        #expect(CitconEmulator.IPNSignature.sign(values, secret: secret) == fixture["signature"]?["value"]?.stringValue)
        #expect(CitconEmulator.IPNSignature.verify(values, secret: secret))
        var tampered = values
        tampered["status"] = "captured"
        #expect(!CitconEmulator.IPNSignature.verify(tampered, secret: secret))
    }

    @Test("IPN: the emulator's charge IPN has the example's members and types and verifies with the merchant's secret",
          arguments: CitconEmulator.Merchant.IPNFormat.allCases)
    func ipnCharge(format: CitconEmulator.Merchant.IPNFormat) async throws {
        let fixture = try Self.fixture("ipn-charge.json")
        let expected = try #require(fixture["body"])
        let secret = try #require(fixture["secret"]?.stringValue)
        try await withReceiver { receiver in
            let merchant = CitconEmulator.Merchant(apiKey: "braintree", apiSecret: secret, ipnFormat: format)
            let emulator = CitconEmulator(merchants: [merchant], ipnRetryInterval: .milliseconds(20))
            let sandbox = try await Sandbox.start(payFort: PayFortEmulator(merchants: []), citcon: emulator)
            let harness = CitconHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
            do {
                let token = try await harness.token(merchant: merchant)
                // The example: a PayPal charge, authorized.
                let charge = try await harness.charge(method: "paypal", ipn: receiver.url, token: token)
                _ = try await harness.payOnPage(charge)
                await emulator.waitForNotifications()
                let post = try #require(await receiver.received().first)
                let values: [String: String]
                switch format {
                case .json:
                    let json = try JSONValue.parse(Array(post.body))
                    #expect(Self.shapeMismatches(json, expected) == [])
                    values = json.flatValues
                case .form:
                    values = try #require(post.formFields)
                    #expect(Set(values.keys) == Set(expected.objectMembers?.map(\.key) ?? []))
                }
                #expect(values["status"] == expected["status"]?.stringValue)
                #expect(values["fields"] == expected["fields"]?.stringValue)
                #expect(CitconEmulator.IPNSignature.verify(values, secret: secret))
                await harness.stop()
            } catch {
                await harness.stop()
                throw error
            }
        }
    }

    @Test("IPN kinds: the statuses sent are the document's words; chargeback statuses with spaces and a vault IPN verify")
    func ipnKinds() async throws {
        let kinds = try #require(try Self.fixture("ipn-kinds.json")["kinds"])
        func words(_ kind: String) -> Set<String> {
            guard case .array(let values)? = kinds[kind]?["status_values"] else { return [] }
            return Set(values.compactMap(\.stringValue))
        }
        try await withReceiver { receiver in
            try await CitconHarness.with { harness in
                let token = try await harness.token()
                let paid = try await harness.charge(method: "paypal", autoCapture: true, ipn: receiver.url, token: token)
                let paidID = try #require(paid["id"]?.stringValue)
                _ = try await harness.payOnPage(paid)
                let authorized = try await harness.charge(method: "card", ipn: receiver.url, token: token)
                _ = try await harness.payOnPage(authorized)
                let failed = try await harness.charge(method: "upop", ipn: receiver.url, token: token)
                _ = try await harness.pay(failed, wallet: "upop", outcome: "fail")
                let cancelled = try await harness.charge(method: "wechatpay", ipn: receiver.url, token: token)
                _ = try await harness.pay(cancelled, wallet: "wechatpay", outcome: "cancel")
                #expect(try await harness.call("POST", "refunds", bearer: token,
                                               body: #"{"id":"\#(paidID)","reference":"kind-refund","amount":100}"#).status == 200)
                for status in words("chargeback").sorted() {
                    #expect(await harness.emulator.sendIPN(about: paidID, transactionType: "chargeback", status: status))
                }
                // No vault status and no IPN without amount is documented: a vault IPN leaving amount out is
                // offered for receivers' tests, signed like any other.
                #expect(await harness.emulator.sendIPN(about: paidID, transactionType: "vault", status: "success", omitting: ["amount"]))
                await harness.emulator.waitForNotifications()
                let posts = try await receiver.received().map { try JSONValue.parse(Array($0.body)).flatValues }
                for post in posts {
                    #expect(CitconEmulator.IPNSignature.verify(post, secret: CitconHarness.jsonMerchant.apiSecret), "\(post)")
                    let type = post["transaction_type"] ?? ""
                    #expect(kinds[type] != nil, "\(type) is a documented transaction_type")
                    if type != "vault" { #expect(words(type).contains(post["status"] ?? ""), "\(type) \(post["status"] ?? "")") }
                }
                let charges = Set(posts.filter { $0["transaction_type"] == "charge" }.compactMap { $0["status"] })
                #expect(charges == ["success", "authorized", "fail", "cancelled"])
                #expect(posts.filter { $0["transaction_type"] == "refund" }.map { $0["status"] } == ["success"])
                #expect(Set(posts.filter { $0["transaction_type"] == "chargeback" }.compactMap { $0["status"] }) == words("chargeback"))
                let vault = try #require(posts.first { $0["transaction_type"] == "vault" })
                #expect(vault["amount"] == nil)
                #expect(vault["fields"]?.split(separator: ",").contains("amount") == false)
            }
        }
    }
}
