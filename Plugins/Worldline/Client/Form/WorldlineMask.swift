import Foundation

/// A Worldline display mask (`{{9999}} {{9999}} {{9999}} {{9999}}`): inside `{{ }}`, `9` takes a digit,
/// `a` a lower-case letter, `A` an upper-case letter and `*` any character; everything else is a literal
/// the mask inserts.
///
/// Formatting follows the vendor's Swift SDK (`connect-sdk-client-swift` 7.0.0,
/// `WorldlineConnectKit/Formatters/StringFormatter.swift`, commit 68672461): input that a placeholder does
/// not accept is dropped, literals are inserted (or taken over when the customer typed them), and the
/// literal run that follows a completed group is appended once (`"12"` with `{{99}}-{{99}}` is `"12-"`;
/// the SDK's `PaymentRequestTestCase` asserts `"1111 2222 3333 4444 "`). The JavaScript SDK never appends
/// that trailing literal; unmasking makes both forms equal.
///
/// All indices (cursors, edit positions) count `Character`s.
public struct WorldlineMask: Sendable, Hashable {
    /// The mask as the gateway sent it.
    public let pattern: String

    /// A mask from the gateway's `displayHints.mask`.
    public init(_ pattern: String) { self.pattern = pattern }

    /// `input` formatted with the mask, and where the cursor goes: `cursor` is an index into `input`
    /// (in characters), moved right by every literal the mask inserts at or before it. The result is
    /// clamped to `0...value.count` (the Swift SDK leaves a cursor past dropped characters beyond the end).
    public func format(_ input: String, cursor: Int) -> (value: String, cursor: Int) {
        let characters = Array(input)
        var output = ""
        var cursor = cursor
        var inputIndex = 0
        // The Swift SDK completes one part of the mask after the input runs out (its `appendRestOfMask`):
        // a literal run is appended whole, a group adds nothing; nothing is added after that.
        var restPending = true
        for part in parts {
            guard case .run(let run, let inGroup) = part else { continue }
            var runIndex = 0
            while inputIndex < characters.count && runIndex < run.count {
                let typed = characters[inputIndex]
                let slot = run[runIndex]
                if inGroup {
                    if Self.placeholder(slot, accepts: typed) {
                        output.append(typed)
                        runIndex += 1
                    }
                    inputIndex += 1
                } else {
                    output.append(slot)
                    if typed == slot {
                        inputIndex += 1
                    } else if cursor >= inputIndex {
                        cursor += 1
                    }
                    runIndex += 1
                }
            }
            if restPending && runIndex < run.count {
                if !inGroup {
                    output.append(contentsOf: run[runIndex...])
                    if cursor >= inputIndex { cursor += run.count - runIndex }
                }
                restPending = false
            }
        }
        return (output, min(max(cursor, 0), output.count))
    }

    /// `input` formatted with the mask.
    public func format(_ input: String) -> String { format(input, cursor: 0).value }

    /// The characters the customer typed: `value` formatted, then only the characters in `{{ }}` positions.
    public func unformat(_ value: String) -> String {
        let formatted = Array(format(value))
        var result = ""
        var index = 0
        for part in parts {
            guard case .run(let run, let inGroup) = part else { continue }
            let length = min(formatted.count - index, run.count)
            if inGroup { result.append(contentsOf: formatted[index..<(index + length)]) }
            index += length
        }
        return result
    }

    /// The same mask with every placeholder turned into `*` (accepts any character in those positions).
    public var relaxed: WorldlineMask {
        var relaxed = ""
        for part in parts {
            switch part {
            case .open: relaxed += "{{"
            case .close: relaxed += "}}"
            case .run(let run, let inGroup): relaxed += inGroup ? String(repeating: "*", count: run.count) : String(run)
            }
        }
        return WorldlineMask(relaxed)
    }

    // MARK: - Parsing

    /// One piece of the mask: `{{`, `}}`, or a run of characters between them (placeholders when inside
    /// a group, literals outside).
    enum Part: Equatable {
        case open
        case close
        case run([Character], inGroup: Bool)
    }

    /// The mask split the way the Swift SDK splits it (its regex `\{\{|\}\}|([^\{\}]|\{(?!\{)|\}(?!\}))*`):
    /// `{{` and `}}` are delimiters; a single brace is an ordinary character of a run.
    var parts: [Part] {
        let characters = Array(pattern)
        var parts: [Part] = []
        var inGroup = false
        var run: [Character] = []
        var index = 0
        func flush() {
            if !run.isEmpty { parts.append(.run(run, inGroup: inGroup)) }
            run = []
        }
        while index < characters.count {
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            if characters[index] == "{" && next == "{" {
                flush()
                parts.append(.open)
                inGroup = true
                index += 2
            } else if characters[index] == "}" && next == "}" {
                flush()
                parts.append(.close)
                inGroup = false
                index += 2
            } else {
                run.append(characters[index])
                index += 1
            }
        }
        flush()
        return parts
    }

    /// Every position of the mask in order: a placeholder (inside `{{ }}`) or a literal.
    var slots: [Slot] {
        parts.flatMap { part -> [Slot] in
            guard case .run(let run, let inGroup) = part else { return [] }
            return run.map { inGroup ? .placeholder($0) : .literal($0) }
        }
    }

    /// One position of the mask.
    enum Slot: Equatable {
        case placeholder(Character)
        case literal(Character)
    }

    /// Whether a placeholder takes a typed character: `9` an ASCII digit, `a` an ASCII lower-case letter,
    /// `A` an ASCII upper-case letter, `*` anything. Any other character inside `{{ }}` takes nothing
    /// (the Swift SDK's behaviour: such a group swallows the rest of the input).
    static func placeholder(_ placeholder: Character, accepts typed: Character) -> Bool {
        switch placeholder {
        case "9": return typed.isASCII && typed.isNumber
        case "a": return typed.isASCII && typed.isLowercase
        case "A": return typed.isASCII && typed.isUppercase
        case "*": return true
        default: return false
        }
    }
}
