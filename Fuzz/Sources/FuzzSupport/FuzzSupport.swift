import CLibFuzzer
import Foundation
import Till
import TillOrchestration

// What the fuzz targets share: reading libFuzzer's bytes, splitting them into parts, and failing loudly when a
// property does not hold (libFuzzer reports the crash and keeps the input).

/// One fuzz input.
public struct FuzzInput: Sendable {
    /// The bytes libFuzzer gave.
    public let bytes: [UInt8]

    public init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    }

    /// The bytes as `Data`.
    public var data: Data { Data(bytes) }

    /// The bytes before the first NUL and those after it; `nil` when there is no NUL. Targets that need two
    /// parts (a header and a body) read them this way, so a seed is `<header> NUL <body>`.
    public var splitAtNUL: (head: [UInt8], tail: [UInt8])? {
        guard let index = bytes.firstIndex(of: 0) else { return nil }
        return (Array(bytes[..<index]), Array(bytes[(index + 1)...]))
    }
}

/// The bytes as text, ill-formed UTF-8 replaced (what a server does with a header value it must read as text).
public func lossyText(_ bytes: some Collection<UInt8>) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// Header lines `Name: value` (one per line, `\r\n` or `\n`), the way an HTTP server hands them over; lines
/// without a colon are skipped.
public func headerLines(_ bytes: [UInt8]) -> [(name: String, value: String)] {
    var out: [(name: String, value: String)] = []
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
        var line = line
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
        let name = lossyText(line[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = lossyText(line[(colon + 1)...]).trimmingCharacters(in: .whitespaces)
        out.append((name: name, value: value))
    }
    return out
}

/// Fails the run (libFuzzer keeps the input as a crash) when a property that must hold does not.
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        fatalError("property violated: \(message())", file: file, line: line)
    }
}

/// A transport that never sends anything: the fuzz targets construct gateway server halves only to call their
/// synchronous notification readers, which never touch the network.
public struct NoTransport: HTTPTransport {
    public init() {}
    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        throw TransportError(.notSent, "the fuzz harness sends nothing")
    }
}

// MARK: Notifications


/// A notification from a fuzz input: `<header lines> NUL <body>`, or, without a NUL, the whole input as the body
/// with no headers (so a seed can be a gateway's body as it is).
public func notification(from input: FuzzInput, extraHeaders: [String: String] = [:]) -> IncomingNotification {
    var headers: [String: String] = [:]
    let body: [UInt8]
    if let (head, tail) = input.splitAtNUL {
        for line in headerLines(head) { headers[line.name] = line.value }
        body = tail
    } else {
        body = input.bytes
    }
    // An extra header replaces the input's whatever its case (IncomingNotification lower-cases names, and two
    // spellings of one name would leave which value wins to the dictionary's order).
    for (name, value) in extraHeaders {
        for key in headers.keys where key.lowercased() == name.lowercased() { headers[key] = nil }
        headers[name] = value
    }
    return IncomingNotification(headers: headers, body: Data(body), receivedAt: Date(timeIntervalSince1970: 1_700_000_000))
}

/// Everything the merchant server asks a gateway's server half about a notification it received:
/// `answerChallenge`, `claimedAttempt` and `verifyNotification` (with what it returns read). Returns the verified
/// notification, or the error it was refused with.
@discardableResult
public func readNotification(_ server: some GatewayServerHalf, _ notification: IncomingNotification) -> Result<VerifiedNotification, any Error> {
    _ = server.answerChallenge(notification)
    _ = server.claimedAttempt(in: notification)
    do {
        let verified = try server.verifyNotification(notification)
        let report = verified.report
        _ = (report.attempt, report.status, report.amount, report.eventID, verified.acknowledgement, verified.operation)
        if debugging { debug("verified: \(report.attempt) \(report.status) \(report.amount.map(String.init(describing:)) ?? "no amount")") }
        return .success(verified)
    } catch {
        if let error = error as? CheckoutError {
            _ = (error.code, error.field, error.message)
            if debugging { debug("refused: \(error.code.rawValue) \(error.field ?? "") \(error.message)") }
        } else if debugging {
            debug("refused (not a CheckoutError): \(error)")
        }
        return .failure(error)
    }
}

/// `TILL_FUZZ_DEBUG=1` in the environment: what each input came to is written to standard error (run a target on
/// one file to see why it does not get past a check: `TILL_FUZZ_DEBUG=1 Fuzz/.build/release/payfort seed`).
public let debugging = ProcessInfo.processInfo.environment["TILL_FUZZ_DEBUG"] == "1"

/// Writes a line to standard error.
public func debug(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Whether `result` failed on the signature itself (a mismatch, or no signature found).
public func failedOnSignature(_ result: Result<VerifiedNotification, any Error>) -> CheckoutError? {
    guard case .failure(let error) = result, let error = error as? CheckoutError, error.code == .signatureMismatch else { return nil }
    return error
}

// MARK: Entry point

/// Runs libFuzzer's driver on `test` with the process's arguments (libFuzzer's flags, corpus directories or files to
/// run) and exits with what it returns. Each target's `@main` calls it with its `LLVMFuzzerTestOneInput`.
public func runLibFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
}

/// A pointer to pass for an empty input when libFuzzer passes none (never read: the size is 0).
public var emptyInput: UnsafePointer<UInt8> { UnsafePointer(bitPattern: 1)! }
