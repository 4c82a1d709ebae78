import Foundation
import FuzzSupport
import Till
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit
import TillOrchestration

// ecommpay's callback as the merchant server receives it: EcommpayServer.verifyNotification (EcommpayCallback: the
// strict JSON reader, the signature from `signature` or `general.signature`, every `signature` member removed and
// the rest signed with HMAC-SHA512 (EcommpaySignatureString); then the project, the report and the operation),
// plus claimedAttempt and answerChallenge.
//
// Input: `<header lines> NUL <body>` or just the body (JSON). Each input is read as it is and re-signed with the
// test secret through the public EcommpaySigner.signed, so the fuzzer reaches the readers behind the signature.
//
// The re-signed callback is mostly read by a server of the project it names, so that the fuzzer also gets past the
// project check.
//
// Property: a callback Till's own EcommpaySigner signed is never refused for its signature.

private let secret = "qwerty"   // the secret of most of the vendor SDKs' callback tests (Tests/TillEcommpayTests/Fixtures)

private func makeServer(projectId: Int) -> EcommpayServer {
    EcommpayServer(environment: .production, secret: secret, settings: EcommpaySettings(projectId: projectId), transport: NoTransport())
}

private let server = makeServer(projectId: 123)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let received = notification(from: input)
    readNotification(server, received)
    if let callback = try? EcommpayCallback(received.body, secret: secret) {
        _ = (callback.projectId, callback.paymentId, callback.paymentStatus, callback.operationType, callback.operationStatus,
             callback.operationCode, callback.operationMessage, callback.operationId, callback.cascadingWithRedirect,
             callback.isUnambiguous, callback.paymentSum)
    }

    guard let object = try? OrderedJSON.parse(received.body), let members = object.objectMembers else { return 0 }
    // Mostly read by the project the callback names (a callback naming none gets `project_id` 123 added), so the
    // fuzzer gets past the project check to the report; a third of the inputs by the fixed project, so the check
    // itself is fuzzed too.
    var project = server
    var unsigned = object
    if input.bytes.count % 3 != 0 {
        let named = object["project_id"] ?? object["general"]?["project_id"]
        if let named {
            if let id = (named.numberText ?? named.stringValue).flatMap({ Int($0) }) { project = makeServer(projectId: id) }
        } else {
            unsigned = .object(members + [.init(key: "project_id", value: .number("123"))])
        }
    }
    var signed = received
    signed.body = EcommpaySigner.signed(unsigned, secret: secret).serialized()
    let result = readNotification(project, signed)
    if let error = failedOnSignature(result) {
        require(false, "a callback signed by EcommpaySigner was refused for its signature: \(error.message)\n\(lossyText(signed.body))")
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
