import Foundation
import Till
import TillOrchestration
import TillGatewayKit

/// Worldline Connect's signature debugger for the command line.
public enum WorldlineSigning {
    /// `till sign worldline --key-id K --secret S --method M --path P [--content-type T] [--date D]
    /// [--header 'X-GCS-Name: value' …]` prints the v1HMAC string to sign, one line each, then the
    /// `Authorization` header value on the last line. `--path` may carry a `?query`, signed as given
    /// (percent-encoded, as the Python SDK signs it); `--date` defaults to now.
    ///
    /// `till verify worldline --secret S --body FILE --signature SIG` checks a webhook's
    /// `X-GCS-Signature` and prints valid, or invalid with the reason and the expected signature.
    public static let debugger = SignatureDebugger(
        signSummary: "Worldline v1HMAC: Base64(HMAC-SHA256(secret, METHOD\\nContent-Type\\nDate\\nx-gcs-* headers\\npath?query\\n)).",
        signOptions: [
            .init("key-id", help: "The API key id (Authorization: GCS v1HMAC:<key-id>:…).", required: true),
            .init("secret", help: "The secret API key, as text.", required: true),
            .init("method", help: "The HTTP method (GET, POST, DELETE…).", required: true),
            .init("path", help: "The path as sent, percent-encoded, with any ?query (/v1/1234/payments).", required: true),
            .init("content-type", help: "The Content-Type header value; omit for a request without a body."),
            .init("date", help: "The Date header value (default: now, as 'Sun, 22 Nov 2026 16:46:03 GMT')."),
            .init("header", help: "Another header as 'Name: value'; X-GCS-* headers are signed.", repeatable: true),
        ],
        verifyOptions: [
            .init("secret", help: "The webhook secret key, as text.", required: true),
            .init("body", help: "The webhook body exactly as received (`-` for standard input).", required: true),
            .init("signature", help: "The X-GCS-Signature header value.", required: true),
        ],
        sign: { arguments in try sign(arguments, now: Date()) },
        verify: { arguments in
            verify(secret: try arguments.required("secret"), body: try arguments.file("body"),
                       signature: arguments.value("signature") ?? "")
        })

    /// `till sign worldline`: the string to sign's lines, then the `Authorization` value.
    /// - Throws: ``CheckoutError`` naming the option at fault (`--path`, `--header`).
    static func sign(_ arguments: DebuggerArguments, now: Date) throws(CheckoutError) -> [String] {
        let keyId = try arguments.required("key-id")
        let secret = try arguments.required("secret")
        let method = try arguments.required("method")
        let target = try arguments.required("path")
        guard target.hasPrefix("/") else {
            throw CheckoutError(.invalidField, field: "--path", message: "the path must start with / (/v1/1234/payments)")
        }
        let (path, query): (String, String?) = target.firstIndex(of: "?").map {
            (String(target[..<$0]), String(target[target.index(after: $0)...]))
        } ?? (target, nil)
        var headers: [(name: String, value: String)] = []
        for line in arguments.values["header"] ?? [] {
            guard let colon = line.firstIndex(of: ":"), !line[..<colon].trimmingCharacters(in: .whitespaces).isEmpty else {
                throw CheckoutError(.invalidField, field: "--header", message: "expected 'Name: value', got \(CheckoutError.printable(line))")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            guard !["content-type", "date"].contains(name.lowercased()) else {
                throw CheckoutError(.invalidField, field: "--header", message: "give \(name) with --\(name.lowercased())")
            }
            headers.append((name, String(line[line.index(after: colon)...])))
        }
        let text = WorldlineV1HMAC.stringToSign(method: method, contentType: arguments.value("content-type"),
                                                date: arguments.value("date") ?? WorldlineV1HMAC.httpDate(now),
                                                headers: headers, path: path, query: query)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines + [try WorldlineV1HMAC.authorization(apiKeyId: keyId, secretApiKey: secret, stringToSign: text)]
    }

    /// `till verify worldline`: whether `signature` is the `X-GCS-Signature` of `body` under `secret`;
    /// when not, why, the expected value, and a hint when an edited copy of the body would match.
    static func verify(secret: String, body: Data, signature: String) -> SignatureDebugger.Verdict {
        let expected = WorldlineWebhookSignature.signature(body: body, secret: secret)
        if !signature.isEmpty, ConstantTime.equals(signature, expected) {
            return .init(valid: true, lines: ["valid: X-GCS-Signature is HMAC-SHA256 of the \(body.count)-byte body"])
        }
        var lines = [signature.isEmpty ? "invalid: the signature is empty"
            : "invalid: the signature does not match the \(body.count)-byte body under this secret"]
        let trimmed = signature.trimmingCharacters(in: .whitespacesAndNewlines)
        let variants: [(String, Data)] = [
            ("the body without its final line break (the file has one the gateway did not send)",
             body.last == 0x0A ? Data(body.dropLast(body.suffix(2) == Data([0x0D, 0x0A]) ? 2 : 1)) : Data()),
            ("the body with CRLF line breaks turned into LF", Data(String(decoding: body, as: UTF8.self)
                .replacingOccurrences(of: "\r\n", with: "\n").utf8)),
            ("the body with LF line breaks turned into CRLF", Data(String(decoding: body, as: UTF8.self)
                .replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n").utf8)),
        ]
        if trimmed != signature, ConstantTime.equals(trimmed, expected) {
            lines.append("hint: it matches once the whitespace around the signature is removed")
        }
        for (label, variant) in variants where !variant.isEmpty && variant != body && !trimmed.isEmpty
            && ConstantTime.equals(trimmed, WorldlineWebhookSignature.signature(body: variant, secret: secret)) {
            lines.append("hint: it matches \(label)")
        }
        lines.append("expected X-GCS-Signature: \(expected)")
        return .init(valid: false, lines: lines)
    }
}
