import Foundation
import FuzzSupport
import TillWebhooks

// TillWebhooks' Till-Signature check, as a merchant's backend runs it on each event Till posts:
// WebhookSignature.verify(header:body:secrets:tolerance:now:) (the header parsed: `,`-separated `scheme=value`
// parts, one `t`, any number of `v1`; each `v1` compared with the HMAC-SHA256 of "<t>." + body under each secret;
// then the timestamp against the tolerance).
//
// Input: `<header value> NUL <body>`; without a NUL, the whole input is the header and the body is empty. The
// receiver's clock and tolerance are taken from the body's length so that both the signature and the time checks
// are reached.
//
// Properties:
// - a header WebhookSignature.header(timestamp:body:secrets:) wrote verifies, at its own timestamp, under each of
//   its secrets, and returns that timestamp;
// - a header that verifies carries the timestamp verify returns, within the tolerance of `now`.

// The secrets of docs/events.md's vectors (Tests/TillWebhooksTests/Fixtures/vectors.json), so the seeds verify.
private let secrets = ["whsec_new_Xq3Lr9TzY6mNc2Hb", "whsec_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let header: String
    let body: [UInt8]
    if let (head, tail) = input.splitAtNUL {
        header = lossyText(head)
        body = tail
    } else {
        header = lossyText(input.bytes)
        body = []
    }
    let now: Int64 = 1_700_000_000 + Int64(body.count % 600) - 300
    let tolerance: Int64 = [300, 0, -1, .max][body.count % 4]
    do {
        let timestamp = try WebhookSignature.verify(header: header, body: body, secrets: secrets, tolerance: tolerance, now: now)
        let (age, overflow) = now.subtractingReportingOverflow(timestamp)
        require(!overflow && tolerance >= 0 && age.magnitude <= tolerance.magnitude,
                "verify accepted t=\(timestamp) at now=\(now) with tolerance \(tolerance)")
    } catch {
        _ = error.description
    }
    _ = try? WebhookSignature.verify(header: header, body: body, secrets: secrets, now: Date(timeIntervalSince1970: 1_700_000_000))

    // What Till writes always verifies.
    let timestamp = Int64(body.reduce(0) { ($0 &* 31 &+ Int($1)) & 0x3FFF_FFFF })
    for chosen in [[secrets[0]], secrets] {
        let written = WebhookSignature.header(timestamp: timestamp, body: body, secrets: chosen)
        for secret in chosen {
            do {
                let verified = try WebhookSignature.verify(header: written, body: body, secrets: [secret], now: timestamp)
                require(verified == timestamp, "verify returned \(verified) for a header signed at \(timestamp)")
            } catch {
                require(false, "a header WebhookSignature wrote does not verify: \(error) (\(written))")
            }
        }
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
