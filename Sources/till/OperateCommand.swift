import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Till
import TillServer

/// `till operate`: what a merchant's back office does after a payment, against `till server`: capture an
/// authorization (all or part), void it, refund (all or part), read an operation, or ask the gateway about one whose
/// answer was lost.
struct OperateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operate",
        abstract: "Capture, void or refund a payment through till server, or read or inquire one operation.",
        discussion: """
            till operate capture PAYMENT_ID [--amount MINOR] [--final]; till operate void PAYMENT_ID; \
            till operate refund PAYMENT_ID [--amount MINOR]; till operate show OPERATION_ID; till operate inquire OPERATION_ID. \
            Without --amount a capture takes the rest of the authorization and a refund the rest of what was captured. \
            The merchant API key is read from the environment variable --api-key-env names (never from the command line). \
            Every capture, void and refund carries an Idempotency-Key (--idempotency-key, or a new one, printed): run the same \
            command again with the printed key after a lost answer, and the server answers from its store without sending \
            anything to the gateway again. Prints the operation as JSON; exits 1 when the server refused it.
            """)

    @Argument(help: "capture, void, refund, show or inquire.")
    var action: String

    @Argument(help: "The payment's id (capture, void, refund) or the operation's id (show, inquire).")
    var id: String

    @Option(help: "The merchant server's base URL.")
    var server = "http://127.0.0.1:8080"

    @Option(name: .customLong("api-key-env"), help: "The environment variable holding the merchant API key.")
    var apiKeyEnv = "TILL_API_KEY"

    @Option(help: "The amount in minor units of the payment's currency (2500 is 25.00 USD). Absent: the rest.")
    var amount: Int64?

    @Option(help: "The payment's currency, for --amount (ISO 4217).")
    var currency: String?

    @Flag(help: "A capture only: no further capture follows.")
    var final = false

    @Option(name: .customLong("idempotency-key"), help: "The key of this operation; repeat a printed key to retry after a lost answer.")
    var idempotencyKey: String?

    func validate() throws {
        guard ["capture", "void", "refund", "show", "inquire"].contains(action) else {
            throw ValidationError("ACTION: capture, void, refund, show or inquire")
        }
        if amount != nil && (action == "void" || action == "show" || action == "inquire") { throw ValidationError("--amount: only a capture or a refund") }
        if final && action != "capture" { throw ValidationError("--final: only a capture") }
        if let amount, amount <= 0 { throw ValidationError("--amount: more than zero minor units") }
    }

    func run() async throws {
        guard let serverURL = URL(string: server), serverURL.scheme?.hasPrefix("http") == true else { throw ValidationError("--server: an http(s) URL") }
        guard let key = ProcessInfo.processInfo.environment[apiKeyEnv], !key.isEmpty else {
            throw ValidationError("--api-key-env: the environment variable \(apiKeyEnv) holds no API key")
        }
        let client = MerchantAPIClient(baseURL: serverURL, apiKey: key, transport: URLSessionTransport())
        do {
            let operation: OperationView
            switch action {
            case "show":
                operation = try await client.operation(id: id)
            case "inquire":
                operation = try await client.inquireOperation(id: id)
            default:
                let kind = OperationKind(rawValue: action)!
                var command = OperationCommand(final: final ? true : nil)
                if let amount {
                    var code = currency
                    if code == nil { code = try await client.payment(id: id).amount.currency.code }
                    guard let code, let known = Currency.lookup(code) else { throw ValidationError("--currency: not an ISO 4217 code Till knows") }
                    command.amount = Money(minorUnits: amount, currency: known)
                }
                let key = idempotencyKey ?? "till-operate-\(UUID().uuidString.lowercased())"
                FileHandle.standardError.write(Data("Idempotency-Key: \(key)\n".utf8))
                operation = try await client.operate(kind, paymentID: id, command: command, idempotencyKey: key)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(operation), as: UTF8.self))
        } catch let error as CheckoutError {
            let what = error.category == .unknownOutcome ? "outcome not known" : "refused"
            FileHandle.standardError.write(Data("\(what): \(error.code.rawValue)\(error.field.map { " (\($0))" } ?? ""): \(error.message)\n".utf8))
            if error.category == .unknownOutcome || error.category == .unavailable, action != "show", action != "inquire" {
                FileHandle.standardError.write(Data("""
                    Repeat the same command with the Idempotency-Key printed above: the server answers the operation as it now \
                    stands and sends nothing again. Never retry with a new key (that would be a second \(action)).
                    The payment's operations: GET /v1/payments/\(id).

                    """.utf8))
            }
            throw ExitCode.failure
        }
    }
}
