import Foundation
import FuzzSupport
import Till
import TillGatewayKit
import TillIPayNow
import TillIPayNowServer
import TillOrchestration

// iPayNow's N001 notification as the merchant server receives it: IPayNowServer.verifyNotification (IPayNowMessage:
// the form decoded, names and values holding `&`/`=` refused, the signing rule read from the message's own fields,
// the MD5 signature checked with the app key, the documented fields read; then funcode, the app and the report),
// plus claimedAttempt and answerChallenge.
//
// Input: `<header lines> NUL <body>` or just the body (a form). Each input is read as it is and re-signed with the
// test app key through the public IPayNowSigning (under the rule the message's own fields name), so the fuzzer
// reaches the readers behind the signature.
//
// The re-signed message is mostly read by a server of the app it names (its appId), so that the fuzzer also gets past
// the app check.
//
// Property: a message Till's own IPayNowSigning signed is never refused for its signature.

private let appId = "1445486158399220"   // the 2015 N001 sample's app (Tests/TillIPayNowTests/Fixtures)
private let appKey = "79Y5Nv14E2FC1pvb938fOgk6OkV8UY2t"

private func makeServer(appId: String) -> IPayNowServer {
    IPayNowServer(environment: .test, credentials: IPayNowCredentials(appKey: appKey),
                  settings: IPayNowSettings(appId: appId, settlementCurrency: "USD"), transport: NoTransport(),
                  now: { Date(timeIntervalSince1970: 1_700_000_000) })
}

private let server = makeServer(appId: appId)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let received = notification(from: input)
    readNotification(server, received)
    _ = try? IPayNowMessage(body: received.body, appKey: appKey)

    guard var fields = try? FormFields.decode(received.body) else { return 0 }
    if fields["signature"] == nil, fields["mhtSignature"] == nil { fields.pairs.append(FormPair(name: "signature", value: "0")) }
    guard let rule = IPayNowSigning.rule(of: fields) else { return 0 }
    let signature = IPayNowSigning.sign(fields, rule: rule, appKey: appKey)
    fields.pairs = fields.pairs.map { $0.name == rule.signatureField ? FormPair(name: $0.name, value: signature) : $0 }
    _ = IPayNowSigning.canonical(fields, rule: rule)
    var signed = received
    signed.body = Data(fields.encoded().utf8)
    // Mostly read by the app the message names, so the fuzzer gets past the app check to the report; a third of the
    // inputs by the fixed app, so the check itself is fuzzed too.
    let app = input.bytes.count % 3 == 0 ? server : makeServer(appId: fields["appId"] ?? appId)
    let result = readNotification(app, signed)
    if let error = failedOnSignature(result) {
        require(false, "a message signed by IPayNowSigning was refused for its signature: \(error.message)\n\(fields.encoded())")
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
