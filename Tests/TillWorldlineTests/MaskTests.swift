import Foundation
import Testing
import TillWorldline

/// `Fixtures/masks.json`: every display-mask vector of the vendor SDKs' unit tests (Swift, JavaScript,
/// Android), each naming its source; `till_expected` marks where the asserting SDK reads masks
/// differently from the Swift SDK that Till follows.
struct MaskVectors: Decodable {
    struct Format: Decodable {
        var mask: String?
        var input: String
        var expected: String
        var source: String
        var cursor: Int?
        var till_cursor: Int?
        var till_expected: String?
        var till_reason: String?
        /// Till's value: the vendor's unless the fixture records a disagreement.
        var till: String { till_expected ?? expected }
    }

    struct Unformat: Decodable {
        var mask: String?
        var input: String
        var expected: String
        var source: String
    }

    struct Relax: Decodable {
        var mask: String
        var expected: String
        var source: String
    }

    struct Edit: Decodable {
        var mask: String
        var previous: String
        var value: String
        var start: Int
        var count: Int
        var after: Int
        var expected: String
        var expected_cursor: Int
        var source: String
    }

    var format: [Format]
    var unformat: [Unformat]
    var relax: [Relax]
    var edit: [Edit]

    static func load() throws -> MaskVectors {
        try JSONDecoder().decode(MaskVectors.self, from: try worldlineFixture("masks.json"))
    }
}

@Suite("Worldline masks")
struct MaskTests {
    @Test("the fixture holds every vendor mask vector, each with its source")
    func fixtureIsComplete() throws {
        let vectors = try MaskVectors.load()
        // 38 format (Swift 5, JS 30, Android 4 + 3 deprecated, deduplicated), 32 unformat, 1 relax, 65 edits.
        #expect(vectors.format.count == 38)
        #expect(vectors.unformat.count == 32)
        #expect(vectors.relax.count == 1)
        #expect(vectors.edit.count == 65)
        let sources = vectors.format.map(\.source) + vectors.unformat.map(\.source) + vectors.relax.map(\.source)
            + vectors.edit.map(\.source)
        #expect(sources.allSatisfy { $0.contains("Worldline-Global-Collect/connect-sdk-client-") && $0.contains("@") })
        // Disagreements are recorded with a reason, never silently.
        #expect(vectors.format.filter { $0.till_expected != nil }.allSatisfy { $0.till_reason != nil })
    }

    @Test("format: every vendor vector, Swift SDK semantics where the SDKs disagree")
    func formatVectors() throws {
        let vectors = try MaskVectors.load()
        var run = 0
        for vector in vectors.format {
            // A field without a mask shows its value unchanged (the JS SDK's `applyMask(undefined, v)`).
            let mask = vector.mask.map(WorldlineMask.init)
            let formatted = mask?.format(vector.input) ?? vector.input
            #expect(formatted == vector.till, "\(vector.mask ?? "no mask") \(vector.input) — \(vector.source)")
            if let mask, let cursor = vector.cursor {
                let result = mask.format(vector.input, cursor: cursor)
                #expect(result.value == vector.till)
                #expect(result.cursor == vector.till_cursor, "cursor — \(vector.source)")
            }
            run += 1
        }
        #expect(run == vectors.format.count)
    }

    @Test("the JavaScript SDK's trailing-literal disagreement is exactly the appended literal")
    func trailingLiteralDisagreement() throws {
        let disagreements = try MaskVectors.load().format.filter { $0.till_expected != nil }
        #expect(disagreements.count == 5)
        for vector in disagreements {
            let till = try #require(vector.till_expected)
            #expect(vector.source.contains("connect-sdk-client-js"))
            #expect(till.hasPrefix(vector.expected) && till.count == vector.expected.count + 1)
            // Unmasking makes both readings the same value.
            let mask = WorldlineMask(try #require(vector.mask))
            #expect(mask.unformat(till) == mask.unformat(vector.expected))
        }
    }

    @Test("unformat: every vendor vector")
    func unformatVectors() throws {
        let vectors = try MaskVectors.load()
        for vector in vectors.unformat {
            let unformatted = vector.mask.map { WorldlineMask($0).unformat(vector.input) } ?? vector.input
            #expect(unformatted == vector.expected, "\(vector.mask ?? "no mask") \(vector.input) — \(vector.source)")
        }
    }

    @Test("relaxed: placeholders become *")
    func relaxVectors() throws {
        for vector in try MaskVectors.load().relax {
            #expect(WorldlineMask(vector.mask).relaxed.pattern == vector.expected, "\(vector.source)")
        }
    }

    @Test("edits: all 65 Android TextWatcher vectors, value and cursor")
    func editVectors() throws {
        let vectors = try MaskVectors.load()
        var run = 0
        for vector in vectors.edit {
            let result = WorldlineMask(vector.mask).apply(edit: vector.value, previous: vector.previous,
                                                          start: vector.start, count: vector.count, after: vector.after)
            #expect(result.value == vector.expected,
                    "\(vector.previous) → \(vector.value) (\(vector.start), \(vector.count), \(vector.after))")
            #expect(result.cursor == vector.expected_cursor,
                    "cursor of \(vector.previous) → \(vector.value) (\(vector.start), \(vector.count), \(vector.after))")
            run += 1
        }
        #expect(run == 65)
    }

    @Test("edits by range: a text field's replace callback gives the TextWatcher results")
    func editByRange() throws {
        let vectors = try MaskVectors.load()
        for vector in vectors.edit {
            // Only vectors whose new value really is the previous one with the range replaced.
            let old = Array(vector.previous)
            guard vector.start + vector.count <= old.count else { continue }
            let prefix = String(old[..<vector.start])
            let suffix = String(old[(vector.start + vector.count)...])
            guard vector.value.hasPrefix(prefix), vector.value.hasSuffix(suffix),
                  vector.value.count == prefix.count + vector.after + suffix.count else { continue }
            let inserted = String(Array(vector.value)[vector.start..<(vector.start + vector.after)])
            let result = WorldlineMask(vector.mask).apply(replacing: vector.start..<(vector.start + vector.count),
                                                          with: inserted, in: vector.previous)
            #expect(result.value == vector.expected)
            #expect(result.cursor == vector.expected_cursor)
        }
    }

    @Test("cursor: moved right by the literals inserted at or before it, never past the value")
    func cursor() {
        let card = WorldlineMask("{{9999}} {{9999}} {{9999}} {{9999}}")
        // Self-made, from the Swift SDK's StringFormatter: two spaces are inserted before input index 8.
        #expect(card.format("12345678", cursor: 8) == ("1234 5678 ", 10))
        #expect(card.format("12345678", cursor: 2) == ("1234 5678 ", 2))
        #expect(card.format("1234", cursor: 4) == ("1234 ", 5))
        // Dropped characters leave the cursor where it was, clamped into the value.
        #expect(card.format("1a", cursor: 2) == ("1", 1))
        #expect(card.format("", cursor: 0) == ("", 0))
    }

    @Test("placeholders: 9 digits, a lower-case, A upper-case, * anything; other input is dropped")
    func placeholders() {
        #expect(WorldlineMask("{{aaa}}-{{AAA}}").format("aB1cdEFG") == "acd-EFG")
        #expect(WorldlineMask("{{99}}/{{99}}").format("1/2/34") == "12/34")
        #expect(WorldlineMask("{{99}}/{{99}}").unformat("12/34") == "1234")
        #expect(WorldlineMask("{{***}}").format("a b") == "a b")
        // Non-ASCII digits are not digits for a `9`.
        #expect(WorldlineMask("{{99}}").format("١٢") == "")
        // A literal typed where the mask has it is taken over, not doubled.
        #expect(WorldlineMask("+{{99}} {{99}}").format("+12 34") == "+12 34")
        #expect(WorldlineMask("+{{99}} {{99}}").format("1234") == "+12 34")
        #expect(WorldlineMask("{{9999}}").relaxed.pattern == "{{****}}")
    }
}
