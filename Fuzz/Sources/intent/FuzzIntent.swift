import Foundation
import FuzzSupport
import Till
import TillGatewayKit
import TillOrchestration

// The API request bodies the merchant server decodes, read the way the server reads them (TillServer's
// `Application.decode`, which is internal, is reproduced here from its public parts): the strict OrderedJSON
// reader first, then JSONDecoder, a failure turned into an issue by ConfigurationLoader.issue(from:). Each input
// is read as every body type: PaymentIntent (POST /v1/payments), PaymentUpdate (PATCH), PrepareRequest (attempts),
// Submission (submit), OperationCommand (capture/void/refund), ClientOutcome (outcome). What decodes is then put
// through what the server does next with it: PaymentIntent.validate, the merchant's ReturnURLRule,
// PaymentUpdate.applied(to:), GatewayCapabilities.ineligibility(for:).
//
// Property: a PaymentIntent (and a PaymentUpdate, Submission, OperationCommand, ClientOutcome) that decodes encodes
// (JSONEncoder) to JSON that decodes to an equal value.

private let rule = ReturnURLRule(customSchemes: ["tillshop"], allowsLoopbackHTTP: true)

private let capabilities = GatewayCapabilities(methods: [.card, .wechatPay, .alipay], actions: [.sale, .authorize])

private let sample: PaymentIntent = {
    let usd = Currency.lookup("USD")!
    return PaymentIntent(merchantReference: "order-1", amount: Money(minorUnits: 1050, currency: usd), method: .card)
}()

/// Decodes `type` as the server does, or nil (the failure read as the server reads it).
private func serverDecode<T: Decodable>(_ type: T.Type, _ data: Data) -> T? {
    do {
        _ = try OrderedJSON.parse(data, field: "body")
    } catch {
        _ = error.message
        return nil
    }
    do {
        return try JSONDecoder().decode(type, from: data)
    } catch let error as DecodingError {
        let issue = ConfigurationLoader.issue(from: error)
        _ = issue.field == "$" ? "body" : "body.\(issue.field)"
        return nil
    } catch {
        return nil
    }
}

private func checkRoundTrip<T: Codable & Equatable>(_ value: T, _ name: String) {
    do {
        let encoded = try JSONEncoder().encode(value)
        let again = try JSONDecoder().decode(T.self, from: encoded)
        require(again == value, "a decoded \(name) encodes to JSON that decodes to another \(name): \(lossyText(encoded))")
    } catch {
        require(false, "a decoded \(name) encodes to JSON that does not decode: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = FuzzInput(data, size).data

    if let intent = serverDecode(PaymentIntent.self, body) {
        checkRoundTrip(intent, "PaymentIntent")
        for issue in intent.validate(path: "body") { _ = issue.error }
        _ = try? intent.validated(path: "body")
        _ = capabilities.ineligibility(for: intent)
    }
    if let update = serverDecode(PaymentUpdate.self, body) {
        checkRoundTrip(update, "PaymentUpdate")
        _ = update.applied(to: sample).validate(path: "body")
    }
    if let prepare = serverDecode(PrepareRequest.self, body) {
        _ = try? rule.check(prepare, path: "body")
        for url in prepare.offeredReturnURLs { _ = rule.problem(with: url) }
    }
    if let submission = serverDecode(Submission.self, body) {
        checkRoundTrip(submission, "Submission")
        _ = submission.description
    }
    if let command = serverDecode(OperationCommand.self, body) {
        checkRoundTrip(command, "OperationCommand")
    }
    if let outcome = serverDecode(ClientOutcome.self, body) {
        checkRoundTrip(outcome, "ClientOutcome")
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
