import Foundation
import Testing
import Till
import TillOrchestration
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit

extension EcommpayInteropTests {
    // MARK: 2. Callbacks, both ways

    @Test("the 30 callback bodies of the SDKs' own tests: 1.0.6 and Till give the pinned verdicts (they differ only on the body with a null, which master and Till accept)")
    func officialCallbacks() async throws {
        let cases = try InteropFixtures.decode("ecommpay-callbacks.json", as: EcommpayCallbackCases.self).cases
        try #require(cases.count == 30)
        let verdicts = try await EcommpaySDK.verify(cases.map { .init(secret: $0.secret, body: $0.body) })
        var disagreements: [String] = []
        for (item, sdk) in zip(cases, verdicts) {
            #expect(EcommpayInterop.sdkVerdict(sdk) == item.pypi, "\(item.id): \(sdk)")
            let till = EcommpayInterop.tillVerdict(item.body, secret: item.secret)
            #expect(till == item.master, "\(item.id)")
            if till != EcommpayInterop.sdkVerdict(sdk) { disagreements.append(item.id) }
            if sdk.accepted, let callback = try? EcommpayCallback(Data(item.body.utf8), secret: item.secret) {
                #expect(sdk.paymentId == callback.paymentIdText, "\(item.id)")
                #expect(sdk.paymentStatus == callback.paymentStatus, "\(item.id)")
            }
        }
        #expect(disagreements == ["py_cb_multilevel_lists_null"])
    }

    @Test("generated callbacks Till signs with EcommpaySigner.signed (top-level signature, or general.signature when there is a general block): the SDK accepts each and reads the same payment; changed after signing, the SDK and Till refuse them")
    func tillSignedCallbacks() async throws {
        var random = EcommpayGenerator(seed: 0x5EED_CA11)
        let secret = "project-secret-\(random.alphanumeric(16))"
        var bodies: [OrderedJSON] = []
        for index in 0..<60 {
            let status = random.pick(["success", "decline", "awaiting capture", "processing", "error", "refunded", "partially refunded", "cancelled"])
            let object = random.callback(projectId: 4242, paymentId: "EP-\(index)-\(random.alphanumeric(8))", status: status,
                                         amount: Int64(random.int(1...9_000_000)), currency: random.pick(["USD", "EUR", "JPY", "KWD"]),
                                         withGeneral: index % 2 == 1)
            bodies.append(EcommpaySigner.signed(object, secret: secret))
        }
        #expect(bodies.enumerated().allSatisfy { index, body in
            index % 2 == 1 ? body["general"]?["signature"] != nil && body["signature"] == nil : body["signature"] != nil
        })
        let texts = bodies.map { String(decoding: $0.serialized(), as: UTF8.self) }
        let verdicts = try await EcommpaySDK.verify(texts.map { .init(secret: secret, body: $0) })
        for (text, sdk) in zip(texts, verdicts) {
            #expect(sdk.accepted, "the SDK refused Till's callback \(text): \(sdk.error ?? "")")
            let callback = try EcommpayCallback(Data(text.utf8), secret: secret)
            #expect(sdk.paymentId == callback.paymentId)
            #expect(sdk.paymentStatus == callback.paymentStatus)
            #expect(sdk.amount == callback.paymentSum.map { String($0.minorUnits) })
        }

        // Changed after signing: the amount, the status, a member added, one removed, and another key.
        var tampered: [(name: String, body: String, secret: String)] = []
        for (index, body) in bodies.prefix(12).enumerated() {
            let changed: OrderedJSON = switch index % 4 {
            case 0: EcommpayInterop.setting(body, ["payment", "sum", "amount"], .number("1"))
            case 1: EcommpayInterop.setting(body, ["payment", "status"], .string(body["payment"]?["status"]?.stringValue == "success" ? "decline" : "success"))
            case 2: EcommpayInterop.setting(body, ["payment", "extra"], .string("x"))
            default: EcommpayInterop.removing(body, ["operation", "code"])
            }
            tampered.append(("tampered \(index)", String(decoding: changed.serialized(), as: UTF8.self), secret))
        }
        for body in texts.prefix(4) { tampered.append(("another key", body, "not-the-project-secret")) }
        let refusals = try await EcommpaySDK.verify(tampered.map { .init(secret: $0.secret, body: $0.body) })
        for (item, sdk) in zip(tampered, refusals) {
            #expect(!sdk.accepted && sdk.errorType == "ProcessException" && sdk.error?.hasSuffix(" is invalid") == true, "\(item.name): \(sdk)")
            #expect(EcommpayInterop.tillVerdict(item.body, secret: item.secret) == "invalid", "\(item.name)")
        }
    }

    @Test("generated callbacks the SDK signs (SignatureHandler.sign, at signature or general.signature, json.dumps ASCII or UTF-8, compact or indented): Till's EcommpayCallback and EcommpayServer accept them; changed after signing, both refuse")
    func sdkSignedCallbacks() async throws {
        var random = EcommpayGenerator(seed: 0xB0D1E5)
        let secret = "qwerty-\(random.alphanumeric(10))"
        var items: [EcommpaySDK.BuildItem] = []
        var expected: [(attempt: String, status: String, amount: Int64, currency: String)] = []
        for index in 0..<48 {
            let status = random.pick(["success", "decline", "awaiting capture", "processing", "refunded", "cancelled"])
            let attempt = "EP-\(index)-\(random.alphanumeric(6))"
            let amount = Int64(random.int(1...9_000_000)), currency = random.pick(["USD", "EUR", "GBP"])
            let object = random.callback(projectId: 777, paymentId: attempt, status: status, amount: amount, currency: currency,
                                         withGeneral: index % 3 == 0)
            items.append(.init(secret: secret, json: String(decoding: object.serialized(), as: UTF8.self),
                               place: index % 2 == 0 ? "general" : "signature", ensureAscii: index % 4 < 2, indent: index % 5 == 0 ? 2 : nil))
            expected.append((attempt, status, amount, currency))
        }
        let built = try await EcommpaySDK.build(items)
        let server = EcommpayServer(secret: secret, settings: EcommpaySettings(projectId: 777), transport: NoCallTransport())
        for (index, sdk) in built.enumerated() {
            let body = Data(sdk.body.utf8)
            let callback = try EcommpayCallback(body, secret: secret)
            #expect(callback.paymentId == expected[index].attempt)
            let place = index % 2 == 0 ? callback.body["general"]?["signature"] : callback.body["signature"]
            #expect(place?.stringValue == sdk.signature)
            let verified = try server.verifyNotification(IncomingNotification(headers: ["content-type": "application/json"], body: body))
            #expect(verified.report.attempt.rawValue == expected[index].attempt)
            #expect(verified.report.status == EcommpayServer.paymentStatus(expected[index].status,
                                                                           cascading: callback.cascadingWithRedirect))
            // A refunded payment's `payment.sum` is its balance, reported as what remains (the operation here is the sale).
            let money = expected[index].status == "refunded" ? verified.report.remaining : verified.report.amount
            #expect(money?.minorUnits == expected[index].amount)
            #expect(money?.currency.code == expected[index].currency)
        }
        #expect(built.contains { $0.body.contains("\\u") } && built.contains { $0.body.contains("\n  ") })

        // Changed by the SDK's side after it signed: both refuse.
        let tamperings: [[String]] = [["payment.sum.amount", "0"], ["payment.status", "\"chargeback\""], ["project_id", "778"],
                                      ["operation.type", "\"refund\""], ["payment.id", "\"EP-other\""], ["operation.message", "\"ok\""]]
        var changed = items.prefix(tamperings.count).enumerated().map { offset, item in
            var copy = item
            copy.tamper = [tamperings[offset]]
            return copy
        }
        // The status set to what it already was changes nothing: the control.
        var control = items[1]
        control.tamper = [["payment.status", "\"\(expected[1].status)\""]]
        changed.append(control)
        let forged = try await EcommpaySDK.build(changed)
        let sdkVerdicts = try await EcommpaySDK.verify(forged.map { .init(secret: secret, body: $0.body) })
        for (offset, item) in forged.enumerated() {
            let isControl = offset == forged.count - 1
            #expect(sdkVerdicts[offset].accepted == isControl, "\(changed[offset].tamper)")
            #expect(EcommpayInterop.tillVerdict(item.body, secret: secret) == (isControl ? "valid" : "invalid"), "\(changed[offset].tamper)")
        }
    }

    @Test("where the signature is read: top-level first, then general.signature, every signature member removed; a wrong one in either place refuses; an empty or missing one refuses; one inside a list is signed; the SDK and Till agree")
    func signatureLookup() async throws {
        let secret = "lookup-secret"
        let unsigned = OrderedJSON.object([
            .init(key: "general", value: .object([.init(key: "project_id", value: .number("5")), .init(key: "payment_id", value: .string("EP-1"))])),
            .init(key: "payment", value: .object([.init(key: "id", value: .string("EP-1")), .init(key: "status", value: .string("success")),
                                                  .init(key: "sum", value: .object([.init(key: "amount", value: .number("100")),
                                                                                     .init(key: "currency", value: .string("EUR"))]))])),
            .init(key: "items", value: .array([.object([.init(key: "signature", value: .string("kept"))])])),
        ])
        let right = EcommpaySigner.sign(unsigned, secret: secret)
        func with(top: String?, general: String?) -> String {
            var object = unsigned
            if let general { object = EcommpayInterop.setting(object, ["general", "signature"], .string(general)) }
            if let top { object = EcommpayInterop.setting(object, ["signature"], .string(top)) }
            return String(decoding: object.serialized(), as: UTF8.self)
        }
        let wrong = String(right.reversed())
        let cases: [(name: String, body: String, verdict: String)] = [
            ("top only", with(top: right, general: nil), "valid"),
            ("general only", with(top: nil, general: right), "valid"),
            ("both right", with(top: right, general: right), "valid"),
            ("top right, general wrong", with(top: right, general: wrong), "valid"),
            ("top wrong, general right", with(top: wrong, general: right), "invalid"),
            ("top wrong", with(top: wrong, general: nil), "invalid"),
            ("none", with(top: nil, general: nil), "undefined"),
        ]
        let verdicts = try await EcommpaySDK.verify(cases.map { .init(secret: secret, body: $0.body) })
        for (item, sdk) in zip(cases, verdicts) {
            #expect(EcommpayInterop.sdkVerdict(sdk) == item.verdict, "\(item.name): \(sdk)")
            #expect(EcommpayInterop.tillVerdict(item.body, secret: secret) == item.verdict, "\(item.name)")
        }
        // The list's own "signature" member is part of what is signed, in both.
        let withoutListSignature = EcommpaySigner.sign(EcommpayInterop.setting(unsigned, ["items"], .array([])), secret: secret)
        #expect(withoutListSignature != right)
    }

    @Test("bodies only one side takes: an empty signature, a numeric signature, a repeated key (the SDK's json.loads keeps the last copy, Till refuses the body)")
    func hostileBodies() async throws {
        let secret = "hostile-secret"
        let success = OrderedJSON.object([.init(key: "payment", value: .object([.init(key: "id", value: .string("EP-9")),
                                                                                   .init(key: "status", value: .string("success"))]))])
        let signature = EcommpaySigner.sign(success, secret: secret)
        // A signed success with a "decline" copy of status before it: json.loads keeps the last copy, the
        // signed one, and the SDK accepts; Till refuses any repeated key.
        let repeated = "{\"payment\":{\"id\":\"EP-9\",\"status\":\"decline\",\"status\":\"success\"},\"signature\":\"\(signature)\"}"
        let empty = "{\"payment\":{\"id\":\"EP-9\",\"status\":\"success\"},\"signature\":\"\"}"
        let numeric = "{\"payment\":{\"id\":\"EP-9\",\"status\":\"success\"},\"signature\":12345}"
        let verdicts = try await EcommpaySDK.verify([repeated, empty, numeric].map { .init(secret: secret, body: $0) })
        #expect(verdicts[0].accepted && verdicts[0].paymentStatus == "success", "\(verdicts[0])")
        #expect(!verdicts[1].accepted && verdicts[1].errorType == "ProcessException", "\(verdicts[1])")
        // 'Signature ' + 12345 raises a TypeError in the SDK: refused, though not with its own exception.
        #expect(!verdicts[2].accepted && verdicts[2].errorType == "TypeError", "\(verdicts[2])")
        #expect(EcommpayInterop.refusal(repeated, secret: secret)?.code == .duplicateField)
        #expect(EcommpayInterop.refusal(empty, secret: secret)?.code == .missingField)
        #expect(EcommpayInterop.refusal(numeric, secret: secret)?.code == .missingField)
    }
}

/// Helpers shared by the ecommpay interop tests.
enum EcommpayInterop {
    /// `valid`, `invalid` (a mismatch) or `undefined` (no signature): the SDK's verdict.
    static func sdkVerdict(_ verdict: EcommpaySDK.Verdict) -> String {
        if verdict.accepted { return "valid" }
        if verdict.error == "Signature undefined" { return "undefined" }
        if verdict.error?.hasSuffix(" is invalid") == true { return "invalid" }
        return "error: \(verdict.errorType ?? "") \(verdict.error ?? "")"
    }

    /// Till's verdict on a body, in the same words.
    static func tillVerdict(_ body: String, secret: String) -> String {
        guard let error = refusal(body, secret: secret) else { return "valid" }
        switch error.code {
        case .signatureMismatch: return "invalid"
        case .missingField: return "undefined"
        default: return "error: \(error.code.rawValue) \(error.field ?? "")"
        }
    }

    /// Till's refusal of a body, or nil when it verifies.
    static func refusal(_ body: String, secret: String) -> CheckoutError? {
        do {
            _ = try EcommpayCallback(Data(body.utf8), secret: secret)
            return nil
        } catch {
            return error
        }
    }

    /// `object` with the member at `path` set (added at the end when missing; objects made on the way).
    static func setting(_ object: OrderedJSON, _ path: [String], _ value: OrderedJSON) -> OrderedJSON {
        guard let first = path.first else { return value }
        var members = object.objectMembers ?? []
        if let index = members.firstIndex(where: { $0.key == first }) {
            members[index].value = setting(members[index].value, Array(path.dropFirst()), value)
        } else {
            members.append(.init(key: first, value: setting(.object([]), Array(path.dropFirst()), value)))
        }
        return .object(members)
    }

    /// `object` without the member at `path`.
    static func removing(_ object: OrderedJSON, _ path: [String]) -> OrderedJSON {
        guard let first = path.first, var members = object.objectMembers else { return object }
        if path.count == 1 {
            members.removeAll { $0.key == first }
        } else if let index = members.firstIndex(where: { $0.key == first }) {
            members[index].value = removing(members[index].value, Array(path.dropFirst()))
        }
        return .object(members)
    }
}

extension EcommpayCallback {
    /// `payment.id` as the SDK's getter gives it: a string as is, a number as its text.
    var paymentIdText: String? { body["payment"]?["id"]?.stringValue ?? body["payment"]?["id"]?.numberText }
}
