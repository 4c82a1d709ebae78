import Foundation
import TillWebhooks

/// The signature vectors of docs/events.md, read from `Fixtures/vectors.json` beside this file.
struct SignatureVector: Decodable, Sendable, CustomStringConvertible {
    let name: String
    let secrets: [String]
    let timestamp: Int64
    /// The body's text; the body is its UTF-8 bytes.
    let body: String
    let header: String

    var bodyBytes: [UInt8] { Array(body.utf8) }
    var description: String { name }

    private struct File: Decodable {
        let vectors: [SignatureVector]
    }

    static let fixture = Paths.target.appendingPathComponent("Fixtures/vectors.json")

    /// Every vector of the fixture; a missing or unreadable file is an error, never an empty list.
    static func load() throws -> [SignatureVector] {
        try decode(Data(contentsOf: fixture))
    }

    /// The vectors of a `{"vectors": [...]}` document.
    static func decode(_ data: Data) throws -> [SignatureVector] {
        try JSONDecoder().decode(File.self, from: data).vectors
    }
}

/// Where this test target and the package's docs are.
enum Paths {
    static let target = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let package = target.deletingLastPathComponent().deletingLastPathComponent()
    static let eventsPage = package.appendingPathComponent("docs/events.md")

    /// docs/events.md's text.
    static func eventsPageText() throws -> String {
        try String(contentsOf: eventsPage, encoding: .utf8)
    }
}

/// The body of the first fenced block with `language` after the line `heading` in `page`, or nil.
func fencedBlock(_ language: String, after heading: String, in page: String) -> String? {
    var lines = page.split(separator: "\n", omittingEmptySubsequences: false)[...]
    guard let start = lines.firstIndex(where: { $0 == heading }) else { return nil }
    lines = lines[(start + 1)...]
    guard let open = lines.firstIndex(where: { $0 == "```\(language)" }) else { return nil }
    lines = lines[(open + 1)...]
    guard let close = lines.firstIndex(where: { $0 == "```" }) else { return nil }
    return lines[..<close].joined(separator: "\n") + "\n"
}

/// SplitMix64: a small seeded generator, so a failing random case can be reproduced from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One random delivery to sign on one side and verify on the other.
struct RandomDelivery: Sendable {
    let secrets: [String]
    let timestamp: Int64
    let body: [UInt8]

    /// Bodies of 0–3000 bytes: arbitrary bytes (not UTF-8), or JSON-like text with non-ASCII characters and
    /// newlines; one or two secrets (a rotation), some non-ASCII.
    static func make(using random: inout SeededGenerator) -> RandomDelivery {
        let secretAlphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-é東🔑")
        let secrets = (0..<Int.random(in: 1...2, using: &random)).map { _ in
            "whsec_" + String((0..<Int.random(in: 0...40, using: &random)).map { _ in secretAlphabet.randomElement(using: &random)! })
        }
        let length = Int.random(in: 0...3000, using: &random)
        let body: [UInt8]
        if Bool.random(using: &random) {
            body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
        } else {
            let pieces = ["{", "}", "\"id\":", "\"evt_", "\n", "\r\n", " ", ",", "Crème", "東京", "🍵", "\\u00e9", "0", "42", "\t"]
            var text = ""
            while text.utf8.count < length { text += pieces.randomElement(using: &random)! }
            body = Array(text.utf8)
        }
        return RandomDelivery(secrets: secrets, timestamp: Int64.random(in: 1_000_000_000...4_000_000_000, using: &random), body: body)
    }
}
