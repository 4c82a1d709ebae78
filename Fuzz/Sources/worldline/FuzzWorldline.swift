import Foundation
import FuzzSupport
import Till
import TillGatewayKit
import TillOrchestration
import TillWorldline
import TillWorldlineServer

// Worldline Connect's webhooks as the merchant server receives them: WorldlineServer.verifyNotification
// (WorldlineWebhookSignature over the raw body with the key X-GCS-KeyId names, then the event decoded and read:
// payment and refund events, unattributed events), answerChallenge (the endpoint-verification echo) and
// claimedAttempt; and WorldlineWebhookSignature.verify(body:headers:) over the raw header list.
//
// Input: `<header lines> NUL <body>` or just the body. Each input is read as it is, and again with X-GCS-Signature
// set to the body's signature under the test key (WorldlineWebhookSignature.signature, public), so the fuzzer
// reaches the event reader.
//
// Property: a body signed by WorldlineWebhookSignature.signature under a configured key is never refused for its
// signature.

private let keyId = "dummy-key-id"   // the key of connect-sdk-python3's webhook test (Tests/TillWorldlineTests/Fixtures)
private let secret = "hello+world"
private let server = WorldlineServer(
    environment: .sandbox,
    credentials: WorldlineCredentials(apiKeyId: "fuzz", secretApiKey: "fuzz", webhookKeys: [keyId: secret]),
    settings: WorldlineServerSettings(merchantId: "20000"), transport: NoTransport())

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let received = notification(from: input)
    readNotification(server, received)
    if let (head, tail) = input.splitAtNUL {
        _ = try? WorldlineWebhookSignature(secrets: [keyId: secret]).verify(body: Data(tail), headers: headerLines(head))
    }

    let signature = WorldlineWebhookSignature.signature(body: received.body, secret: secret)
    let signed = notification(from: input, extraHeaders: [
        WorldlineWebhookSignature.signatureHeader: signature, WorldlineWebhookSignature.keyIdHeader: keyId,
    ])
    let result = readNotification(server, signed)
    if let error = failedOnSignature(result) {
        require(false, "a webhook signed by WorldlineWebhookSignature was refused for its signature: \(error.message)")
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
