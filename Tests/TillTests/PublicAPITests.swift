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
            let owner = line.split(separator: " ").first.map(String.init) ?? ""
            for name in forbidden {
                #expect(!owner.contains(name), "Till declares \(line)")
            }
        }
        #expect(!current.isEmpty)
    }

    /// Every public declaration under `directory`, as `Owner declaration` (the top-level ones with owner `-`),
    /// whitespace collapsed, bodies and default values' bodies left out, sorted.
    static func publicDeclarations(in directory: URL) throws -> [String] {
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        var out: Set<String> = []
        for file in files {
            out.formUnion(declarations(in: try String(contentsOf: file, encoding: .utf8)))
        }
        return out.sorted()
    }

    /// The public declarations of one file: a small reader of Swift's shape (braces, comments, strings), enough
    /// for this package's own sources.
    static func declarations(in source: String) -> [String] {
        let text = strippingCommentsAndStrings(source)
        var results: [String] = []
        // Containers: (name, brace depth inside it, whether it is a public enum whose cases are public).
        var stack: [(name: String, depth: Int, publicEnum: Bool)] = []
        var depth = 0
        var pending: String?   // a declaration still being read (its parentheses not yet closed)
        let declarationStart = /^(?:@\w+(?:\([^)]*\))?\s+)*(?:public|open)\s+(.*)$/
        let containerPattern = /^(?:(?:public|open|package|private|fileprivate|internal|final|indirect)\s+)*(struct|enum|class|protocol|actor|extension)\s+([A-Za-z_][\w.]*)/

        func owner() -> String { stack.last?.name ?? "-" }
        func record(_ declaration: String) {
            var cut = declaration
            if let brace = topLevelIndex(of: "{", in: cut) { cut = String(cut[..<brace]) }
            if cut.hasPrefix("var ") || cut.hasPrefix("let ") || cut.hasPrefix("static var ") || cut.hasPrefix("static let ") {
                if let equals = topLevelIndex(of: "=", in: cut) { cut = String(cut[..<equals]) }
            }
            let collapsed = cut.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            results.append("\(owner()) \(collapsed)")
        }

        /// Whether a declaration is read whole: its parentheses closed and, for a type or an extension, its `{` reached.
        func complete(_ declaration: String) -> Bool {
            balanced(declaration) && (declaration.firstMatch(of: containerPattern) == nil || declaration.contains("{"))
        }
        var header: String?    // a type or extension whose `{` is on a later line
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if var declaration = pending {
                declaration += " " + line
                if complete(declaration) { record(declaration); pending = nil } else { pending = declaration }
            } else if let match = line.wholeMatch(of: declarationStart) {
                let declaration = String(match.1)
                if complete(declaration) { record(declaration) } else { pending = declaration }
            } else if let enclosing = stack.last, enclosing.publicEnum, depth == enclosing.depth, line.hasPrefix("case ") {
                record(line)
            }
            let opening = (header.map { $0 + " " } ?? "") + line
            if opening.firstMatch(of: containerPattern) != nil, !opening.contains("{") {
                header = opening
            } else {
                header = nil
                if let container = opening.firstMatch(of: containerPattern), opening.contains("{") {
                    let kind = String(container.1)
                    let isPublic = opening.hasPrefix("public ") || opening.hasPrefix("open ") || opening.contains(" public ")
                    stack.append((name: String(container.2), depth: depth + 1, publicEnum: kind == "enum" && isPublic))
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

    /// The source with comments removed and string literals emptied (so braces in them do not count).
    static func strippingCommentsAndStrings(_ source: String) -> String {
        var out = ""
        var chars = Array(source)[...]
        while let c = chars.first {
            if c == "/" && chars.dropFirst().first == "/" {
                while let d = chars.first, d != "\n" { chars = chars.dropFirst() }
            } else if c == "/" && chars.dropFirst().first == "*" {
                chars = chars.dropFirst(2)
                while !chars.isEmpty && !(chars.first == "*" && chars.dropFirst().first == "/") { chars = chars.dropFirst() }
                chars = chars.dropFirst(2)
            } else if c == "\"" {
                let multiline = chars.starts(with: "\"\"\"")
                let quote = multiline ? "\"\"\"" : "\""
                chars = chars.dropFirst(quote.count)
                out += "\"\""
                while !chars.isEmpty && !chars.starts(with: quote) {
                    if chars.first == "\\" { chars = chars.dropFirst() }
                    if chars.first == "\n" { out.append("\n") }
                    chars = chars.dropFirst()
                }
                chars = chars.dropFirst(quote.count)
            } else {
                out.append(c)
                chars = chars.dropFirst()
            }
        }
        return out
    }
}
