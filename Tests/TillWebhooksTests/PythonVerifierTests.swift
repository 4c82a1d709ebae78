import Foundation
import Testing
import TillChildProcess
import TillWebhooks

/// docs/events.md's Python verifier, run as the page gives it: its `python` block is written to a file
/// beside a small driver and run with `python3`. It must accept every vector, refuse what the Swift type
/// refuses, and agree with the Swift type on random deliveries signed on either side. Without `python3` on
/// `PATH` these tests fail (CI has it).
@Suite("docs/events.md's Python verifier agrees with WebhookSignature")
struct PythonVerifierTests {
    @Test("every vector is accepted; a changed body, an old timestamp (now - 301) and a wrong secret are refused")
    func vectors() async throws {
        let vectors = try SignatureVector.load()
        var checks: [PythonDriver.Check] = []
        for vector in vectors {
            let t = vector.timestamp
            checks.append(.init(name: "\(vector.name): as it is", header: vector.header, body: vector.bodyBytes, secrets: vector.secrets, now: t))
            for secret in vector.secrets {
                checks.append(.init(name: "\(vector.name): with \(secret) alone", header: vector.header, body: vector.bodyBytes, secrets: [secret], now: t))
            }
            checks.append(.init(name: "\(vector.name): a changed body", header: vector.header, body: vector.bodyBytes + [0x20],
                                secrets: vector.secrets, now: t, accepted: false))
            checks.append(.init(name: "\(vector.name): an old timestamp", header: vector.header, body: vector.bodyBytes,
                                secrets: vector.secrets, now: t + 301, accepted: false))
            checks.append(.init(name: "\(vector.name): a wrong secret", header: vector.header, body: vector.bodyBytes,
                                secrets: ["whsec_wrong"], now: t, accepted: false))
        }
        let answer = try await PythonDriver.run(PythonDriver.Input(verify: checks, sign: []))
        try #require(answer.verify.count == checks.count)
        for (check, result) in zip(checks, answer.verify) {
            #expect(result.accepted == check.accepted, "\(check.name): \(result.error ?? "accepted")")
            if check.accepted { #expect(result.timestamp == check.expectedTimestamp, "\(check.name)") }
        }
    }

    @Test("the Python verifier accepts exactly the edge cases WebhookSignature accepts")
    func edgeCases() async throws {
        let cases = try EdgeCase.all()
        let checks = cases.map {
            PythonDriver.Check(name: $0.name, header: $0.header, body: $0.body, secrets: $0.secrets, now: $0.now,
                               tolerance: $0.tolerance, accepted: $0.failure == nil)
        }
        let answer = try await PythonDriver.run(PythonDriver.Input(verify: checks, sign: []))
        try #require(answer.verify.count == checks.count)
        for (check, result) in zip(checks, answer.verify) {
            #expect(result.accepted == check.accepted, "\(check.name): Python says \(result.error ?? "accepted")")
        }
    }

    @Test("50 random deliveries signed by Python verify in Swift, and 50 signed in Swift verify in Python")
    func randomBothWays() async throws {
        let seed = UInt64.random(in: .min ... .max)
        var random = SeededGenerator(seed: seed)
        let pythonSigns = (0..<50).map { _ in RandomDelivery.make(using: &random) }
        let swiftSigns = (0..<50).map { _ in RandomDelivery.make(using: &random) }
        let checks = swiftSigns.enumerated().map { index, delivery in
            PythonDriver.Check(name: "Swift-signed #\(index)",
                               header: WebhookSignature.header(timestamp: delivery.timestamp, body: delivery.body, secrets: delivery.secrets),
                               body: delivery.body, secrets: [delivery.secrets.last!], now: delivery.timestamp + 299)
        }
        let signings = pythonSigns.map { PythonDriver.Signing(timestamp: $0.timestamp, body: $0.body, secrets: $0.secrets) }
        let answer = try await PythonDriver.run(PythonDriver.Input(verify: checks, sign: signings))
        try #require(answer.verify.count == checks.count && answer.sign.count == signings.count)

        for (check, result) in zip(checks, answer.verify) {
            #expect(result.accepted && result.timestamp == check.now - 299, "seed \(seed), \(check.name): \(result.error ?? "")")
        }
        for (index, (delivery, header)) in zip(pythonSigns, answer.sign).enumerated() {
            // Python's header is byte for byte what Swift would send, and Swift accepts it with either secret.
            #expect(header == WebhookSignature.header(timestamp: delivery.timestamp, body: delivery.body, secrets: delivery.secrets),
                    "seed \(seed), Python-signed #\(index)")
            for secret in delivery.secrets {
                #expect(try WebhookSignature.verify(header: header, body: Data(delivery.body), secrets: [secret],
                                                    now: delivery.timestamp - 300) == delivery.timestamp,
                        "seed \(seed), Python-signed #\(index)")
            }
            #expect(throws: WebhookSignature.Failure.noMatchingSignature, "seed \(seed), Python-signed #\(index)") {
                try WebhookSignature.verify(header: header, body: delivery.body + [0], secrets: delivery.secrets, now: delivery.timestamp)
            }
        }
    }
}

/// Runs docs/events.md's `python` block with a driver: JSON in on standard input (bodies in base64), JSON out.
enum PythonDriver {
    /// A header for Python's `verify`, and whether it must accept it.
    struct Check: Encodable {
        var name: String
        var header: String
        var body: [UInt8]
        var secrets: [String]
        var now: Int64
        var tolerance: Int64 = WebhookSignature.defaultTolerance
        var accepted = true

        /// A check that accepts returns the header's `t`.
        var expectedTimestamp: Int64? {
            header.split(separator: ",").lazy.map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("t=") }.flatMap { Int64($0.dropFirst(2)) }
        }

        enum CodingKeys: String, CodingKey { case header, body, secrets, now, tolerance }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(header, forKey: .header)
            try container.encode(Data(body).base64EncodedString(), forKey: .body)
            try container.encode(secrets, forKey: .secrets)
            try container.encode(now, forKey: .now)
            try container.encode(tolerance, forKey: .tolerance)
        }
    }

    /// A delivery for the driver to sign as Till would.
    struct Signing: Encodable {
        var timestamp: Int64
        var body: [UInt8]
        var secrets: [String]

        enum CodingKeys: String, CodingKey { case timestamp, body, secrets }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(timestamp, forKey: .timestamp)
            try container.encode(Data(body).base64EncodedString(), forKey: .body)
            try container.encode(secrets, forKey: .secrets)
        }
    }

    struct Input: Encodable {
        var verify: [Check]
        var sign: [Signing]
    }

    struct Verdict: Decodable {
        var accepted: Bool
        var timestamp: Int64?
        var error: String?
    }

    struct Output: Decodable {
        var verify: [Verdict]
        var sign: [String]
    }

    /// The driver. Its signing is written here, independently of the page: the same rule, in Python's terms.
    static let driver = #"""
        import base64
        import hashlib
        import hmac
        import json
        import sys

        from events_verifier import verify

        request = json.load(sys.stdin)
        verdicts = []
        for check in request["verify"]:
            try:
                t = verify(check["header"], base64.b64decode(check["body"]), check["secrets"],
                           tolerance=check["tolerance"], now=check["now"])
                verdicts.append({"accepted": True, "timestamp": t})
            except ValueError as error:
                verdicts.append({"accepted": False, "error": str(error)})
        headers = []
        for signing in request["sign"]:
            payload = str(signing["timestamp"]).encode("ascii") + b"." + base64.b64decode(signing["body"])
            codes = [hmac.new(s.encode("utf-8"), payload, hashlib.sha256).hexdigest() for s in signing["secrets"]]
            headers.append("t=%d" % signing["timestamp"] + "".join(",v1=" + code for code in codes))
        json.dump({"verify": verdicts, "sign": headers}, sys.stdout)
        """#

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `python3` on `PATH`, or nil.
    static let python: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").lazy.map { URL(fileURLWithPath: String($0)).appendingPathComponent("python3") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Writes the page's block and the driver to a fresh folder, runs them on `input` and decodes the answer.
    static func run(_ input: Input, timeout: Duration = .seconds(60)) async throws -> Output {
        guard let python else {
            throw Failure(description: "python3 not found on PATH: docs/events.md's Python verifier cannot be checked (CI has python3)")
        }
        let page = try Paths.eventsPageText()
        guard let verifier = fencedBlock("python", after: "### Python (standard library only)", in: page) else {
            throw Failure(description: "docs/events.md has no python block under ### Python (standard library only)")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-webhooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try verifier.write(to: folder.appendingPathComponent("events_verifier.py"), atomically: true, encoding: .utf8)
        try driver.write(to: folder.appendingPathComponent("driver.py"), atomically: true, encoding: .utf8)
        let files = ["input.json", "output.json", "errors.txt"].map { folder.appendingPathComponent($0) }
        try JSONEncoder().encode(input).write(to: files[0])

        let child = try ChildProcess(python, arguments: [folder.appendingPathComponent("driver.py").path],
                                     environment: ChildProcess.inheritedEnvironment(["PYTHONDONTWRITEBYTECODE": "1"]),
                                     stdin: .file(files[0]), stdout: .file(files[1]), stderr: .file(files[2]))
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            child.terminate()
        }
        let ended = await child.exit()
        watchdog.cancel()
        let errors = String(decoding: (try? Data(contentsOf: files[2])) ?? Data(), as: UTF8.self)
        guard ended == .exited(0) else {
            throw Failure(description: "python3 driver.py \(ended) (time limit \(timeout)):\n\(errors)")
        }
        do {
            return try JSONDecoder().decode(Output.self, from: Data(contentsOf: files[1]))
        } catch {
            throw Failure(description: "the Python driver printed no readable answer (\(error)):\n\(errors)")
        }
    }
}
