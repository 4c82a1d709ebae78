import Foundation
import FuzzSupport
import Till
import TillCitcon
import TillCitconServer
import TillGatewayKit
import TillOrchestration

// Citcon's IPN as the merchant server receives it: CitconServer.verifyNotification (CitconIPNFields.parse of a
// JSON or form body, CitconSignature.verify with the API secret, then the report read from the signed fields only,
// and a refund's operation), plus claimedAttempt and answerChallenge.
//
// Input: `<header lines> NUL <body>` or just the body. Each input is read as it is and re-signed with the test
// secret through the public CitconSignature.sign (the old `sign` replaced), so the fuzzer gets past the signature.
//
// Property: an IPN Till's own CitconSignature signed is never refused for its signature.

private let secret = "braintree"   // the secret of Citcon's official IPN example (Tests/TillCitconTests/Fixtures)
private let server = CitconServer(environment: .uat, credentials: CitconCredentials(apiKey: "fuzz-key", apiSecret: secret),
                                  transport: NoTransport())

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let received = notification(from: input)
    readNotification(server, received)

    guard let fields = try? CitconIPNFields.parse(received.body, mediaType: received.mediaType),
          let sign = try? CitconSignature.sign(fields, secret: secret) else { return 0 }
    _ = try? CitconSignature.stringToSign(fields, secret: secret, nested: .phpArray)
    _ = CitconSignature.listsNestedValue(fields)
    // The body again with `sign` replaced, in the form it came in (read as CitconIPNFields.parse reads it).
    let first = received.body.first { ![UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")].contains($0) }
    let isJSON = received.mediaType == "application/json"
        || (received.mediaType != "application/x-www-form-urlencoded" && first == UInt8(ascii: "{"))
    let body: Data
    if isJSON {
        guard let members = (try? OrderedJSON.parse(received.body))?.objectMembers else { return 0 }
        body = OrderedJSON.object(members.filter { $0.key != "sign" } + [.init(key: "sign", value: .string(sign))]).serialized()
    } else {
        guard let form = try? FormFields.decode(received.body) else { return 0 }
        body = Data(FormFields.encode(form.pairs.filter { $0.name != "sign" }.map { ($0.name, $0.value) } + [("sign", sign)]).utf8)
    }
    var signed = received
    signed.body = body
    // Only when the re-signed body still reads as the same fields is the signature bound to match.
    guard let again = try? CitconIPNFields.parse(body, mediaType: received.mediaType), again.names.filter({ $0 != "sign" }) == fields.names.filter({ $0 != "sign" }) else {
        return 0
    }
    let result = readNotification(server, signed)
    if let error = failedOnSignature(result) {
        require(false, "an IPN signed by CitconSignature was refused for its signature: \(error.message)\n\(lossyText(body))")
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
