import Foundation
import Testing
@testable import TillSandbox
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A sandbox with an ecommpay emulator, and a client that talks to it over real HTTP.
struct EcommpayHarness {
    static let project = EcommpayEmulator.Project(projectId: 1234, secretKey: "sandbox-secret-1234")
    static let otherProject = EcommpayEmulator.Project(projectId: 5678, secretKey: "another project's secret")

    let emulator: EcommpayEmulator
    let sandbox: RunningSandbox
    let session: URLSession

    var base: URL { sandbox.baseURL(of: emulator) }
    var admin: URL { sandbox.baseURL.appendingPathComponent("admin").appendingPathComponent("ecommpay") }

    static func with<T>(projects: [EcommpayEmulator.Project] = [project, otherProject], callbackURL: URL? = nil,
                        retryInterval: Duration = .milliseconds(20), attempts: Int = 3, timeoutHold: Duration = .milliseconds(300),
                        now: @escaping @Sendable () -> Date = { Date() },
                        _ body: (EcommpayHarness) async throws -> T) async throws -> T {
        let emulator = EcommpayEmulator(projects: projects, callbackRetryInterval: retryInterval, callbackMaxAttempts: attempts,
                                        callbackTimeout: .seconds(2), timeoutHold: timeoutHold, now: now)
        if let callbackURL { await emulator.setCallbackURL(callbackURL, for: project.projectId) }
        let sandbox = try await Sandbox.start(emulators: [emulator])
        let harness = EcommpayHarness(emulator: emulator, sandbox: sandbox, session: PayFortHarness.makeSession())
        do {
            let result = try await body(harness)
            await harness.stop()
            return result
        } catch {
            await harness.stop()
            throw error
        }
    }

    func stop() async {
        await emulator.waitForCallbacks()
        await sandbox.stop()
        session.finishTasksAndInvalidate()
    }

    static func newPaymentId() -> String { "EP-" + UUID().uuidString.prefix(12).lowercased() }

    /// The SDK parameters the module signs (Payment Page names, typed values), in this order.
    static func sdkParams(paymentId: String = newPaymentId(), amount: Int64 = 1999, currency: String = "USD",
                          operationType: String? = "sale", project: EcommpayEmulator.Project = project,
                          extra: [(String, JSONValue)] = []) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "project_id", value: .number(String(project.projectId))), .init(key: "payment_id", value: .string(paymentId)),
            .init(key: "payment_amount", value: .number(String(amount))), .init(key: "payment_currency", value: .string(currency)),
            .init(key: "customer_id", value: .string("customer-1")), .init(key: "customer_email", value: .string("buyer@example.com")),
            .init(key: "payment_description", value: .string("T-shirt with dog print")),
        ]
        if let operationType { members.append(.init(key: "operation_type", value: .string(operationType))) }
        for (key, value) in extra {
            if let index = members.firstIndex(where: { $0.key == key }) {
                members[index].value = value
            } else {
                members.append(.init(key: key, value: value))
            }
        }
        // A `null` in `extra` removes the parameter.
        return .object(members.filter { member in !extra.contains { $0.0 == member.key && $0.1 == .null } })
    }

    /// Calls the SDK stand-in with the SDK's string of `params` signed by `secret` (the project's by default).
    func sdkPay(_ params: JSONValue, secret: String = project.secretKey, signature: String? = nil, method: String = "card",
                card: EcommpayTestCard? = .success, outcome: String = "pay", mockMode: String? = nil,
                waitForCallbacks: Bool = true) async throws -> EcommpayEmulator.SDKPaymentResult {
        try await EcommpayDevice.pay(baseURL: base, paramsJSON: params.serialized,
                                     signature: signature ?? EcommpaySignature.sdkSign(params, secret: secret), method: method,
                                     card: card.map { .test($0) }, outcome: outcome, mockMode: mockMode, waitForCallbacks: waitForCallbacks)
    }

    /// A signed Gate request to `{base}/v2/payment/{path}` shaped as the WooCommerce plugin builds it.
    func gate(_ path: String, paymentId: String, project: EcommpayEmulator.Project = project, secret: String? = nil,
              callbackURL: String? = nil, payment: (amount: Int64, currency: String)? = nil,
              signed: Bool = true, session: URLSession? = nil) async throws -> (status: Int, body: JSONValue?, raw: RawResponse) {
        var general: [JSONValue.Member] = [.init(key: "project_id", value: .number(String(project.projectId))),
                                           .init(key: "payment_id", value: .string(paymentId))]
        if let callbackURL { general.append(.init(key: "merchant_callback_url", value: .string(callbackURL))) }
        var members: [JSONValue.Member] = [.init(key: "general", value: .object(general)),
                                           .init(key: "interface_type", value: .object([.init(key: "id", value: .number("18"))]))]
        if let payment {
            members.append(.init(key: "payment", value: .object([.init(key: "amount", value: .number(String(payment.amount))),
                                                                 .init(key: "currency", value: .string(payment.currency))])))
        }
        var value = JSONValue.object(members)
        if signed { value = EcommpaySignature.signedMessage(value, secret: secret ?? project.secretKey) }
        let raw = try await post(base.appendingPathComponent("v2/payment/" + path), body: Data(value.serializedBytes), session: session)
        return (raw.status, try? JSONValue.parse(Array(raw.body)), raw)
    }

    func post(_ url: URL, body: Data, contentType: String = "application/json", session: URLSession? = nil) async throws -> RawResponse {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        return try await exchange(request, on: session ?? self.session)
    }

    func get(_ url: URL) async throws -> RawResponse {
        try await exchange(URLRequest(url: url), on: session)
    }

    /// A Payment Page URL on this emulator for `fields` (in order), signed over typed values as the
    /// python SDK does (`redirect` and other booleans signed `1`/`0`, written `True`/`False`).
    func pageURL(_ fields: [(String, JSONValue)], secret: String = project.secretKey, signature: String? = nil) -> URL {
        let object = JSONValue.object(fields.map { .init(key: $0.0, value: $0.1) })
        let sig = signature ?? EcommpaySignature.sign(object, secret: secret)
        let text: (JSONValue) -> String = { value in
            if case .bool(let flag) = value { return flag ? "True" : "False" }
            return value.parameterText
        }
        let query = fields.map { FormEncoding.escape($0.0) + "=" + FormEncoding.escape(text($0.1)) }.joined(separator: "&")
            + "&signature=" + FormEncoding.escape(sig)
        return URL(string: base.appendingPathComponent("payment").absoluteString + "?" + query)!
    }

    static func pageFields(paymentId: String = newPaymentId(), amount: Int64 = 1999, operationType: String? = nil,
                           extra: [(String, JSONValue)] = []) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("project_id", .number(String(project.projectId))), ("payment_id", .string(paymentId)),
                                             ("payment_amount", .number(String(amount))), ("payment_currency", "USD"),
                                             ("customer_id", "customer-1"),
                                             ("redirect_success_url", "https://merchant.example/ok?order=1"),
                                             ("redirect_fail_url", "https://merchant.example/fail?order=1")]
        if let operationType { fields.append(("operation_type", .string(operationType))) }
        return fields + extra
    }

    /// The callbacks `receiver` got, parsed.
    static func callbackBodies(_ receiver: LoopbackReceiver) async -> [JSONValue] {
        await receiver.received().compactMap { try? JSONValue.parse(Array($0.body)) }
    }
}
