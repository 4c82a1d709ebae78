import Foundation
import FuzzSupport
import Till
import TillGatewayKit
import TillOrchestration
import TillPayFort
import TillPayFortServer

// PayFort's transaction feedback as the merchant server receives it: PayFortServer.verifyNotification (the body
// parsed as JSON or a form by its media type, the SHA-256 signature checked with the response phrase, the message
// read against PayFort's documented fields, the account checked, the report and the operation built), plus
// claimedAttempt and answerChallenge.
//
// Input: `<header lines> NUL <body>` or just the body. Each input is read twice: as it is (almost always refused at
// the signature), and re-signed with the test response phrase through the public PayFortSignature, so the fuzzer
// reaches everything after the signature check.
//
// The re-signed body is mostly read by a server of the account it names (its access_code and merchant_identifier),
// so that the fuzzer also gets past the account check.
//
// Property: a body Till's own PayFortSignature signed is never refused for its signature.

private let phrase = "PASS"   // the response phrase of the vendor's .NET SDK tests (Tests/TillPayFortTests/Fixtures)

private func makeServer(accessCode: String, merchantIdentifier: String) -> PayFortServer {
    PayFortServer(environment: .sandbox,
                  credentials: PayFortCredentials(accessCode: accessCode, merchantIdentifier: merchantIdentifier,
                                                  requestPhrase: "REQUEST", responsePhrase: phrase),
                  transport: NoTransport())
}

private let server = makeServer(accessCode: "access_code", merchantIdentifier: "merchant_identifier")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let received = notification(from: input)
    readNotification(server, received)

    // Re-signed: parsed as the server would (JSON when it says so or starts with `{`), signed, written back.
    let isJSON = received.mediaType == "application/json" || (received.mediaType == nil && received.body.first == UInt8(ascii: "{"))
    guard var parameters = try? (isJSON ? PayFortParameters.json(received.body) : PayFortParameters.form(received.body)) else { return 0 }
    let rule: PayFortSignature.EmptyValues = input.bytes.count % 2 == 0 ? .skipped : .signed
    parameters["signature"] = nil
    parameters["signature"] = .string(PayFortSignature(.sha256).sign(parameters, phrase: phrase, emptyValues: rule))
    let body: Data
    if isJSON {
        body = parameters.object.serialized()
    } else {
        let pairs = parameters.members.compactMap { member in member.value.stringValue.map { (member.key, $0) } }
        guard pairs.count == parameters.members.count else { return 0 }
        body = Data(FormFields.encode(pairs).utf8)
    }
    var signed = received
    signed.body = body
    // Mostly read by the account the message names, so the fuzzer gets past the account check to the report; a third
    // of the inputs by the fixed account, so the check itself is fuzzed too.
    let account = input.bytes.count % 3 == 0 ? server
        : makeServer(accessCode: parameters.text("access_code") ?? "access_code",
                     merchantIdentifier: parameters.text("merchant_identifier") ?? "merchant_identifier")
    let result = readNotification(account, signed)
    if let error = failedOnSignature(result) {
        require(false, "a body signed by PayFortSignature was refused for its signature: \(error.message)\n\(lossyText(body))")
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
