import Foundation
import Testing

/// What an app links is `Till` and the app halves of its gateways. This suite keeps the app ring's public surface
/// written down in `docs/app-api.txt` (one declaration per line, with the type it belongs to) and free of the
/// server's rules: any change to what `Till` makes public shows up in review as a change to that file.
///
/// After an intended change, regenerate the file with `TILL_UPDATE_APP_API=1 swift test --filter PublicAPITests`.
@Suite("The app ring's public API")
struct PublicAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let listing = root.appendingPathComponent("docs/app-api.txt")

    @Test("docs/app-api.txt lists exactly what Sources/Till makes public")
    func listed() throws {
        let current = try Self.publicDeclarations(in: Self.root.appendingPathComponent("Sources/Till"))
        let text = "# The public API of Till, the module an app links (kept by Tests/TillTests/PublicAPITests.swift).\n"
            + current.joined(separator: "\n") + "\n"
        if ProcessInfo.processInfo.environment["TILL_UPDATE_APP_API"] == "1" {
            try text.write(to: Self.listing, atomically: true, encoding: .utf8)
        }
        let committed = try String(contentsOf: Self.listing, encoding: .utf8)
        let committedLines = Set(committed.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") })
        let added = current.filter { !committedLines.contains($0) }
        let removed = committedLines.subtracting(current).sorted()
        #expect(added.isEmpty && removed.isEmpty,
                "Till's public API changed; run TILL_UPDATE_APP_API=1 swift test --filter PublicAPITests.\nadded:\n\(added.joined(separator: "\n"))\nremoved:\n\(removed.joined(separator: "\n"))")
    }

    @Test("Till defines no router, health, attempt policy, merchant configuration or store type")
    func noServerRules() throws {
        let current = try Self.publicDeclarations(in: Self.root.appendingPathComponent("Sources/Till"))
        let forbidden = ["Router", "Routing", "Health", "AttemptPolicy", "AttemptFailure", "MerchantConfiguration", "GatewayConfiguration",
                         "CredentialReference", "RetryPolicy", "PaymentStore", "StoredPayment", "GatewayServerHalf", "DecisionTable"]
        for line in current {
            // The type a line belongs to, and the type it declares, if any.
            let owner = line.split(separator: " ").first.map(String.init) ?? ""
            let declared = line.firstMatch(of: /(?:struct|enum|class|protocol|actor|typealias) (\w+)/).map { String($0.1) } ?? ""
            for name in forbidden {
                #expect(!owner.contains(name) && !declared.contains(name), "Till declares \(line)")
            }
        }
        #expect(!current.isEmpty)
    }

    @Test("the reader lists requirements, nested owners, cases on one line and default strings")
    func reader() {
        let source = """
        public protocol Backend: Sendable {
            func status(of id: String) async throws -> Int
            var name: String { get }
        }
        public struct Outer {
            public enum Kind: String { case a = "A", b }
            public init(label: String = "till_state") {}
            public struct Inner {
                public enum Kind { case x
                    case y
                }
            }
        }
        """
        let lines = Self.declarations(in: source)
        #expect(lines.contains("Backend func status(of id: String) async throws -> Int"))
        #expect(lines.contains("Backend var name: String"))
        #expect(lines.contains("Outer.Kind case a = \"A\", b"))
        #expect(lines.contains("Outer init(label: String = \"till_state\")"))
        #expect(lines.contains("Outer.Inner.Kind case x") && lines.contains("Outer.Inner.Kind case y"))
    }

    /// Every public declaration under `directory`, as `Owner declaration` (owner: the dotted path of the types
    /// it is declared in, `-` at the top level), whitespace collapsed, bodies left out, sorted.
    static func publicDeclarations(in directory: URL) throws -> [String] {
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        var out: Set<String> = []
        for file in files {
            out.formUnion(declarations(in: try String(contentsOf: file, encoding: .utf8)))
        }
        return out.sorted()
    }

    /// The public declarations of one file (protocol requirements and the cases of public enums included): a small
    /// reader of Swift's shape, enough for this package's own sources. Structure (braces, parentheses, where a
    /// declaration ends) is read from the text with comments removed and string literals blanked to the same length;
    /// what is recorded is the same span of the text with its strings kept.
    static func declarations(in source: String) -> [String] {
        let structure = strippingCommentsAndStrings(source, keepStrings: false).split(separator: "\n", omittingEmptySubsequences: false)
        let display = strippingCommentsAndStrings(source, keepStrings: true).split(separator: "\n", omittingEmptySubsequences: false)
        var results: [String] = []
        // Containers: (name, kind, brace depth inside it, whether it is public).
        var stack: [(name: String, kind: String, depth: Int, isPublic: Bool)] = []
        var depth = 0
        var pending: (structure: String, display: String)?   // a declaration still being read
        var header: String?    // a type or extension whose `{` is on a later line
        let declarationStart = /^(?:@\w+(?:\([^)]*\))?\s+)*(?:public|open)\s+(.*)$/
        let requirementStart = /^(?:@\w+(?:\([^)]*\))?\s+)*((?:static |mutating |nonisolated )*(?:func|var|init|subscript|associatedtype)\b.*)$/
        let containerPattern = /^(?:(?:public|open|package|private|fileprivate|internal|final|indirect)\s+)*(struct|enum|class|protocol|actor|extension)\s+([A-Za-z_][\w.]*)/

        func owner() -> String { stack.isEmpty ? "-" : stack.map(\.name).joined(separator: ".") }
        func complete(_ declaration: String) -> Bool {
            balanced(declaration) && (declaration.firstMatch(of: containerPattern) == nil || declaration.contains("{"))
        }
        func record(_ structureText: String, _ displayText: String) {
            // Both texts have the same columns: where the declaration ends is read from the structure.
            var cut = structureText.count
            if let brace = topLevelIndex(of: "{", in: structureText) { cut = structureText.distance(from: structureText.startIndex, to: brace) }
            let head = String(structureText.prefix(cut))
            if head.hasPrefix("var ") || head.hasPrefix("let ") || head.hasPrefix("static var ") || head.hasPrefix("static let "),
               let equals = topLevelIndex(of: "=", in: head) {
                cut = head.distance(from: head.startIndex, to: equals)
            }
            results.append("\(owner()) \(displayText.prefix(cut).split(whereSeparator: \.isWhitespace).joined(separator: " "))")
        }
        /// The text of a `case` list that follows a `{` on the same line (`{ case get = "GET", post }`), up to its `}`.
        func sameLineCases(_ structureLine: String, _ displayLine: String) {
            guard let open = structureLine.firstIndex(of: "{") else { return }
            let offset = structureLine.distance(from: structureLine.startIndex, to: open) + 1
            let rest = String(structureLine.dropFirst(offset)).trimmingCharacters(in: .whitespaces)
            guard rest.hasPrefix("case ") else { return }
            let restDisplay = String(displayLine.dropFirst(offset))
            let close = restDisplay.lastIndex(of: "}") ?? restDisplay.endIndex
            results.append("\(owner()) \(restDisplay[..<close].split(whereSeparator: \.isWhitespace).joined(separator: " "))")
        }

        for (index, rawLine) in structure.enumerated() {
            let lead = rawLine.prefix { $0 == " " || $0 == "\t" }.count
            let line = String(rawLine.dropFirst(lead)).trimmingCharacters(in: .whitespaces)
            let shown = String(display[index].dropFirst(lead)).trimmingCharacters(in: .whitespaces)
            let enclosing = stack.last
            let atMemberDepth = enclosing.map { depth == $0.depth } ?? false
            if let (declaration, shownDeclaration) = pending {
                let joined = (declaration + " " + line, shownDeclaration + " " + shown)
                if complete(joined.0) { record(joined.0, joined.1); pending = nil } else { pending = joined }
            } else if let match = line.wholeMatch(of: declarationStart) {
                let start = line.distance(from: line.startIndex, to: match.1.startIndex)
                let declaration = (String(match.1), String(shown.dropFirst(start)))
                if complete(declaration.0) { record(declaration.0, declaration.1) } else { pending = declaration }
            } else if let enclosing, enclosing.kind == "protocol", enclosing.isPublic, atMemberDepth,
                      let match = line.wholeMatch(of: requirementStart) {
                let start = line.distance(from: line.startIndex, to: match.1.startIndex)
                let declaration = (String(match.1), String(shown.dropFirst(start)))
                if complete(declaration.0) { record(declaration.0, declaration.1) } else { pending = declaration }
            } else if let enclosing, enclosing.kind == "enum", enclosing.isPublic, atMemberDepth, line.hasPrefix("case ") {
                record(line, shown)
            }
            let opening = (header.map { $0 + " " } ?? "") + line
            if opening.firstMatch(of: containerPattern) != nil, !opening.contains("{") {
                header = opening
            } else {
                header = nil
                if let container = opening.firstMatch(of: containerPattern), opening.contains("{") {
                    let isPublic = opening.hasPrefix("public ") || opening.hasPrefix("open ") || opening.contains(" public ")
                    stack.append((name: String(container.2), kind: String(container.1), depth: depth + 1, isPublic: isPublic))
                    if container.1 == "enum", isPublic, line.contains("{") { sameLineCases(line, shown) }
                }
            }
            for character in line {
                if character == "{" { depth += 1 }
                if character == "}" {
                    depth -= 1
                    if let last = stack.last, depth < last.depth { stack.removeLast() }
                }
            }
        }
        return results
    }

    static func balanced(_ text: String) -> Bool {
        text.filter { $0 == "(" }.count == text.filter { $0 == ")" }.count
    }

    /// The first `character` outside parentheses, brackets and angle brackets.
    static func topLevelIndex(of character: Character, in text: String) -> String.Index? {
        var nesting = 0
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            if c == "(" || c == "[" { nesting += 1 }
            if c == ")" || c == "]" { nesting -= 1 }
            if c == character && nesting == 0 {
                // `==`, `->`, `>=`, `<=` are not assignments.
                let next = text.index(after: index)
                let previous = index > text.startIndex ? text[text.index(before: index)] : " "
                if character != "=" || ((next == text.endIndex || text[next] != "=") && !"=!<>".contains(previous)) { return index }
            }
            index = text.index(after: index)
        }
        return nil
    }

    /// The source with comments removed (each replaced by nothing, newlines kept). With `keepStrings` false, every
    /// character inside a string literal becomes `x` (newlines kept), so braces in strings do not count and the
    /// two texts keep the same columns on each line once comments are gone.
    static func strippingCommentsAndStrings(_ source: String, keepStrings: Bool) -> String {
        var out = ""
        var chars = Array(source)[...]
        func copy(_ c: Character) { out.append(keepStrings || c == "\n" ? c : "x") }
        while let c = chars.first {
            if c == "/" && chars.dropFirst().first == "/" {
                while let d = chars.first, d != "\n" { chars = chars.dropFirst() }
            } else if c == "/" && chars.dropFirst().first == "*" {
                chars = chars.dropFirst(2)
                while !chars.isEmpty && !(chars.first == "*" && chars.dropFirst().first == "/") {
                    if chars.first == "\n" { out.append("\n") }
                    chars = chars.dropFirst()
                }
                chars = chars.dropFirst(2)
            } else if c == "\"" {
                let quote = chars.starts(with: "\"\"\"") ? "\"\"\"" : "\""
                out += quote
                chars = chars.dropFirst(quote.count)
                while let d = chars.first, !chars.starts(with: quote) {
                    if d == "\\", let escaped = chars.dropFirst().first {
                        copy(d)
                        copy(escaped)
                        chars = chars.dropFirst(2)
                        continue
                    }
                    copy(d)
                    chars = chars.dropFirst()
                }
                out += chars.isEmpty ? "" : quote
                chars = chars.dropFirst(quote.count)
            } else {
                out.append(c)
                chars = chars.dropFirst()
            }
        }
        return out
    }
}
